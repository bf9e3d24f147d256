//! The response side: the request's outbox, the response-kind decision (JSON or SSE), the SSE
//! body with keep-alives, and the host's own refusals.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use hyper::body::{Body, Bytes, Frame, SizeHint};
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};

use crate::codec::{EgressLimits, Rejection, ReplyTo};
use crate::core::CancelToken;
use crate::server::outbox::{Outbox, Reply};
use crate::wire::errors::Cause;
use crate::wire::jsonrpc::RequestId;

// ---------------------------------------------------------------------------------------------
// Outbox, response-kind decision and the SSE body

/// Everything one request's outbox, response future and SSE body share: one allocation.
pub(super) struct Shared {
    state: Mutex<State>,
    cancel: CancelToken,
    /// Notifications queued for a slow client before its stream is ended.
    capacity: usize,
}

#[derive(Default)]
struct State {
    queue: VecDeque<String>,
    reply: Option<Reply>,
    /// `finish` was called.
    finished: bool,
    /// The consumer is gone (client closed, or the queue overflowed): accept nothing more.
    gone: bool,
    /// The queue overflowed: end the stream once the queue is drained.
    overflowed: bool,
    /// The dispatch task ended (normally or by panic); if `finish` was never called, the host
    /// answers an internal error itself so no client waits forever.
    ended: bool,
    /// The dispatcher decided every refusal ([`Outbox::admitted`]); only then may silence
    /// (`stream_after`) turn the response into a stream.
    admitted: bool,
    waker: Option<Waker>,
}

impl Shared {
    pub(super) fn new(cancel: CancelToken, capacity: usize) -> Self {
        Shared {
            state: Mutex::new(State::default()),
            cancel,
            capacity,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Ends a stream that has no reply (a legacy session's standalone stream when the session
    /// ends): nothing more is accepted, the body ends once the queue is drained.
    #[cfg(feature = "legacy")]
    pub(super) fn close(&self) {
        let mut s = self.lock();
        s.gone = true;
        s.wake();
    }

    /// Whether the consumer is gone (closed, dropped or overflowed).
    #[cfg(feature = "legacy")]
    pub(super) fn is_gone(&self) -> bool {
        self.lock().gone
    }
}

impl State {
    fn wake(&mut self) {
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }
}

/// The outbox of one HTTP request.
impl Outbox for Shared {
    fn notify(&self, line: String) -> bool {
        let mut s = self.lock();
        if s.gone || s.finished {
            return false;
        }
        if s.queue.len() >= self.capacity {
            s.gone = true;
            s.overflowed = true;
            s.wake();
            drop(s);
            self.cancel.cancel();
            return false;
        }
        s.queue.push_back(line);
        s.wake();
        true
    }

    fn finish(&self, reply: Reply) {
        let mut s = self.lock();
        if s.gone || s.finished {
            return;
        }
        s.finished = true;
        s.reply = Some(reply);
        s.wake();
    }

    fn admitted(&self) {
        let mut s = self.lock();
        s.admitted = true;
        s.wake();
    }
}

/// The outbox of a notification: nothing is ever sent back.
pub(super) struct NoReply;

impl Outbox for NoReply {
    fn notify(&self, _line: String) -> bool {
        false
    }
    fn finish(&self, _reply: Reply) {}
}

/// Fires the request's cancellation when the response is abandoned before its final reply.
pub(super) struct CancelGuard {
    pub(super) shared: Arc<Shared>,
    pub(super) armed: bool,
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        if self.armed {
            let mut s = self.shared.lock();
            s.gone = true;
            s.queue.clear();
            s.reply = None;
            drop(s);
            self.shared.cancel.cancel();
        }
    }
}

pub(super) enum First {
    Reply(Reply),
    Stream,
    /// The dispatch task ended without a reply or notification.
    Orphaned,
}

/// Marks the dispatch task as ended when dropped (completion, panic or runtime shutdown).
pub(super) struct EndGuard(pub(super) Arc<Shared>);

impl Drop for EndGuard {
    fn drop(&mut self) {
        let mut s = self.0.lock();
        s.ended = true;
        s.wake();
    }
}

/// The error the host sends when the dispatcher broke its contract; the cause stays private.
pub(super) fn internal_error_line(id: &RequestId) -> String {
    crate::codec::encode_error(
        Some(id),
        Cause::Internal,
        "Internal error",
        None,
        &EgressLimits::SERVER,
    )
    .body
    .unwrap_or_default()
}

/// Waits for the first thing the outbox receives (or the `stream_after` deadline, armed only
/// once the request is admitted, so a refusal is never upgraded to a stream).
pub(super) struct Head<'a> {
    pub(super) shared: &'a Shared,
    pub(super) stream_after: Option<Duration>,
    /// Armed at the first poll that finds nothing, so a reply already there never touches
    /// the timer.
    pub(super) deadline: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Future for Head<'_> {
    type Output = First;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<First> {
        {
            let mut s = self.shared.lock();
            if !s.queue.is_empty() || s.overflowed {
                return Poll::Ready(First::Stream);
            }
            if let Some(reply) = s.reply.take() {
                return Poll::Ready(First::Reply(reply));
            }
            if s.ended {
                // A request cancelled by its client ends without a reply (2025 cancellation
                // on a legacy session): an empty stream, not an error.
                if self.shared.cancel.is_cancelled() {
                    return Poll::Ready(First::Stream);
                }
                return Poll::Ready(First::Orphaned);
            }
            if !s.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                s.waker = Some(cx.waker().clone());
            }
            if !s.admitted {
                // A refusal may still come: its status must not be hidden in a 200 stream.
                return Poll::Pending;
            }
        }
        if self.deadline.is_none() {
            self.deadline = self.stream_after.map(|d| Box::pin(tokio::time::sleep(d)));
        }
        if let Some(deadline) = self.deadline.as_mut() {
            if deadline.as_mut().poll(cx).is_ready() {
                return Poll::Ready(First::Stream);
            }
        }
        Poll::Pending
    }
}

pub(super) struct SseBody {
    pub(super) shared: Arc<Shared>,
    pub(super) guard: CancelGuard,
    /// Sent as the final event if the dispatch task ends without a reply.
    pub(super) orphan_line: String,
    pub(super) keep_alive: tokio::time::Interval,
    pub(super) done: bool,
}

/// One SSE event carrying one JSON-RPC message (the line never contains a newline).
fn sse_event(line: &str) -> Bytes {
    let mut out = Vec::with_capacity(line.len() + 8);
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(line.as_bytes());
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

/// The keep-alive comment.
pub const SSE_KEEP_ALIVE: &[u8] = b": keep-alive\n\n";

impl SseBody {
    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        if self.done {
            return Poll::Ready(None);
        }
        {
            let mut s = self.shared.lock();
            if let Some(line) = s.queue.pop_front() {
                return Poll::Ready(Some(sse_event(&line)));
            }
            if let Some(reply) = s.reply.take() {
                drop(s);
                self.done = true;
                self.guard.armed = false;
                return Poll::Ready(Some(sse_event(&reply.line)));
            }
            if s.ended && !s.finished && !s.gone && self.shared.cancel.is_cancelled() {
                drop(s);
                self.done = true;
                self.guard.armed = false;
                return Poll::Ready(None);
            }
            if s.ended && !s.finished && !s.gone {
                drop(s);
                self.done = true;
                self.guard.armed = false;
                tracing::error!("dispatch ended without a final reply");
                return Poll::Ready(Some(sse_event(&self.orphan_line)));
            }
            if s.overflowed || (s.gone && !s.finished) {
                drop(s);
                self.done = true;
                return Poll::Ready(None);
            }
            s.waker = Some(cx.waker().clone());
        }
        match self.keep_alive.poll_tick(cx) {
            Poll::Ready(_) => Poll::Ready(Some(Bytes::from_static(SSE_KEEP_ALIVE))),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// The response body of the host: empty, one JSON document, or an SSE stream.
pub struct HttpBody(pub(super) BodyKind);

pub(super) enum BodyKind {
    Full(Option<Bytes>),
    Sse(Box<SseBody>),
}

impl HttpBody {
    fn empty() -> Self {
        HttpBody(BodyKind::Full(None))
    }
    pub(super) fn full(bytes: impl Into<Bytes>) -> Self {
        HttpBody(BodyKind::Full(Some(bytes.into())))
    }
}

impl fmt::Debug for HttpBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            BodyKind::Full(b) => write!(
                f,
                "HttpBody::Full({} bytes)",
                b.as_ref().map_or(0, Bytes::len)
            ),
            BodyKind::Sse(_) => f.write_str("HttpBody::Sse"),
        }
    }
}

impl Body for HttpBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match &mut self.get_mut().0 {
            BodyKind::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            BodyKind::Sse(sse) => sse.poll_next(cx).map(|o| o.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.0 {
            BodyKind::Full(b) => b.is_none(),
            BodyKind::Sse(sse) => sse.done,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.0 {
            BodyKind::Full(b) => SizeHint::with_exact(b.as_ref().map_or(0, |b| b.len() as u64)),
            BodyKind::Sse(_) => SizeHint::default(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Responses

pub(super) fn plain(status: StatusCode) -> Response<HttpBody> {
    let mut r = Response::new(HttpBody::empty());
    *r.status_mut() = status;
    r
}

pub(super) fn json_response(status: u16, line: String) -> Response<HttpBody> {
    let mut r = Response::new(HttpBody::full(line));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// A refusal by the host itself: the status of `cause`, a JSON-RPC error body when the cause
/// has a code (`"id": null` unless the id was read), no body otherwise.
pub(super) fn refusal(cause: Cause, id: Option<RequestId>, message: &str) -> Response<HttpBody> {
    let reply =
        crate::codec::encode_error(id.as_ref(), cause, message, None, &EgressLimits::SERVER);
    encoded_refusal(cause, reply)
}

pub(super) fn encoded_refusal(cause: Cause, reply: crate::codec::ErrorReply) -> Response<HttpBody> {
    let mut response = match reply.body {
        Some(line) => json_response(reply.status, line),
        None => plain(StatusCode::from_u16(reply.status).unwrap_or(StatusCode::FORBIDDEN)),
    };
    if cause == Cause::MethodNotAllowed {
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST"));
    }
    response
}

/// The answer to a frame the codec refused: its error with the id it could read (or null; a
/// notification gets an id-less error too, since HTTP needs a status either way).
pub(super) fn rejected(rejection: &Rejection) -> Response<HttpBody> {
    let id = match &rejection.reply_to {
        ReplyTo::Id(id) => Some(id.clone()),
        ReplyTo::NullId | ReplyTo::Nobody => None,
    };
    refusal(rejection.cause(), id, &rejection.error.to_string())
}
