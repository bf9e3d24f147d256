//! Stateless Streamable HTTP host (revision 2026-07-28) on hyper.
//!
//! One endpoint, POST only, no sessions. [`McpHttp`] is both a `tower::Service` and a hyper
//! `Service`, so an application mounts it behind its own router, authentication, TLS and
//! listener (O2, O9); [`serve`] is a small accept loop for the common loopback case.
//!
//! # What happens to one request, in order
//!
//! 1. `Host` / authority against the allow-list (D35, DNS rebinding) → 403, no body.
//! 2. `Origin`, when present, against the allow-list (D34) → 403, no body. A request **without**
//!    `Origin` is allowed: browsers always send it on cross-origin POSTs, so its absence means a
//!    non-browser client, which the application's authentication must cover (D35 policy).
//! 3. Method: anything but POST → 405 with `Allow: POST` (D37, D38). `Mcp-Session-Id` and
//!    `Last-Event-ID` are ignored; no session id is ever minted and SSE events carry no ids.
//! 4. `Accept` must list both `application/json` and `text/event-stream` by name (wildcards
//!    do not count; `q=0` removes an entry) → 406 with a JSON-RPC error (D3).
//! 5. `Content-Type` must be `application/json` → 415 with a JSON-RPC error.
//! 6. Protocol headers (every header whose name starts with `mcp-`; the size counts name bytes
//!    plus value bytes) together at most 8 KiB (O38) → 400 / -32020 with `"id": null`, before the
//!    body is read.
//! 7. The body is capped while it is read (2 MiB, O36): a larger `Content-Length` or a longer
//!    stream → 413 with a JSON-RPC error; nothing beyond the cap is buffered.
//! 8. The codec decodes the body; a rejection is answered with its JSON-RPC error and the status
//!    from [`Cause`] (never `text/plain`).
//! 9. A notification is handed to the dispatcher and answered 202 with an empty body (D6). The
//!    revision defines no header rules for notification POSTs (D7), so none are enforced.
//! 10. A request has its mirrored headers checked against the body (D15–D30) → 400 / -32020
//!     with the request id, then it is dispatched with the caller taken from the request's
//!     extensions (absent → anonymous). Nothing is carried from one request to the next on a
//!     connection (D36).
//!
//! # Response kind
//!
//! The first thing the request's [`Outbox`] receives decides: the final reply → one JSON body
//! with the reply's status; a notification → an SSE stream (`text/event-stream`,
//! `Cache-Control: no-cache`, `X-Accel-Buffering: no`) that carries the notifications and ends
//! with the final response (D4, D8, D9, D10). A call that stays silent for
//! [`HttpConfig::stream_after`] is switched to SSE as well, so keep-alive comments (`:`) can
//! flow on long calls; once streaming, the HTTP status is 200 and a late error travels as a
//! JSON-RPC error event. `subscriptions/listen` is a request like any other: its
//! acknowledgement makes it an SSE stream that stays open until the server finishes it.
//!
//! # Defaults and deployment
//!
//! [`HttpConfig::default`] accepts only loopback `Host` values and loopback browser origins, so
//! a server bound to `127.0.0.1` is protected against DNS rebinding without configuration. A
//! deployment on any other interface must name its host names ([`HostPolicy::Allow`]) and
//! browser origins ([`OriginPolicy::Allow`]) and put authentication in front (O9, D36).
//! hyper itself answers malformed HTTP (bad request line, oversized header block) before this
//! service runs; those answers are hyper's, not JSON-RPC.
//!
//! # Cancellation
//!
//! If the client closes the connection or drops the response stream before the final reply,
//! the request's [`CancelToken`] fires and nothing further is sent (D12); a later `notify`
//! returns `false`. A stream whose client does not read fast enough to keep the queue under
//! [`HttpConfig::max_queued_notifications`] is ended the same way (without a final response,
//! so the client knows it missed something) rather than dropping notifications silently.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use base64::Engine as _;
use hyper::body::{Body, Buf, Bytes, Frame, SizeHint};
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use tracing::Instrument as _;

use crate::codec::{self, EgressLimits, IngressLimits, Rejection, ReplyTo};
use crate::core::{Caller, CancelToken, Registry};
use crate::server::outbox::{Outbox, Reply};
use crate::wire::errors::Cause;
use crate::wire::jsonrpc::{Message, Request as RpcRequest, RequestId};
use crate::wire::limits;

/// The `MCP-Protocol-Version` header (D15).
pub const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";
/// The `Mcp-Method` header (D16).
pub const METHOD_HEADER: &str = "mcp-method";
/// The `Mcp-Name` header (D17).
pub const NAME_HEADER: &str = "mcp-name";
/// Prefix of the `Mcp-Param-{name}` headers (D19).
pub const PARAM_HEADER_PREFIX: &str = "mcp-param-";
/// Prefix that marks a header as a protocol header for the 8 KiB bound (O38).
pub const PROTOCOL_HEADER_PREFIX: &str = "mcp-";
/// Opening marker of a base64-encoded header value (D18, D21); case-sensitive.
pub const BASE64_OPEN: &str = "=?base64?";
/// Closing marker of a base64-encoded header value (D18, D21).
pub const BASE64_CLOSE: &str = "?=";

// Pre-parsed names, so a lookup only hashes (a `&str` key is validated on every call).
static PROTOCOL_VERSION_NAME: HeaderName = HeaderName::from_static(PROTOCOL_VERSION_HEADER);
static METHOD_NAME: HeaderName = HeaderName::from_static(METHOD_HEADER);
static NAME_NAME: HeaderName = HeaderName::from_static(NAME_HEADER);

/// What the HTTP host needs from the protocol server. [`crate::server::Server`] implements it;
/// tests and proxies may supply their own.
pub trait Dispatch: Send + Sync + 'static {
    /// Handles one decoded message; everything it produces leaves through `outbox`.
    fn dispatch(
        &self,
        caller: Caller,
        message: Message,
        outbox: Arc<dyn Outbox>,
        cancel: CancelToken,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'static>>;
    /// The bounds for request bodies (the body cap comes from `max_frame_bytes`).
    fn ingress_limits(&self) -> IngressLimits;
    /// The registry as of now.
    fn registry(&self) -> Arc<Registry>;
    /// The definition of the tool a `tools/call` names, as the caller sees it in `tools/list`,
    /// whose `x-mcp-header` annotations the host enforces (D28). `None` when no such tool is
    /// published (unknown, hidden, or published only behind a wrapper such as compact mode's
    /// `call_tool`, whose own schema carries no annotations).
    fn published_tool(&self, caller: &Caller, name: &str) -> Option<crate::core::descriptor::Tool> {
        self.registry().tool(caller, name).ok()
    }
}

impl Dispatch for crate::server::Server {
    fn dispatch(
        &self,
        caller: Caller,
        message: Message,
        outbox: Arc<dyn Outbox>,
        cancel: CancelToken,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'static>> {
        let server = self.clone();
        Box::pin(async move { server.serve(caller, message, outbox, cancel).await })
    }

    fn ingress_limits(&self) -> IngressLimits {
        crate::server::Server::ingress_limits(self)
    }

    fn registry(&self) -> Arc<Registry> {
        crate::server::Server::registry(self)
    }

    fn published_tool(&self, caller: &Caller, name: &str) -> Option<crate::core::descriptor::Tool> {
        match self.mode() {
            crate::server::PublishMode::Direct => self.registry().tool(caller, name).ok(),
            // Compact mode lists only its three discovery tools; none is annotated.
            crate::server::PublishMode::Compact => None,
        }
    }
}

/// Which `Host` values are accepted (D35).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HostPolicy {
    /// Only `localhost`, `127.0.0.1` and `[::1]` (any port). The default.
    Loopback,
    /// These host names (compared case-insensitively, port ignored), e.g. `mcp.example.com`.
    Allow(Vec<String>),
    /// Any host: only for deployments where a proxy in front already pins the authority.
    Any,
}

/// Which present `Origin` values are accepted (D34). Requests without `Origin` are allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum OriginPolicy {
    /// `http`/`https` origins on `localhost`, `127.0.0.1` or `[::1]` (any port). The default.
    Loopback,
    /// Exactly these serialized origins (`scheme://host[:port]`, compared case-insensitively).
    Allow(Vec<String>),
    /// No browser origin at all: any present `Origin` is refused.
    None,
}

/// Settings of the HTTP host.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// The endpoint path to answer on (other paths get 404, no body). `None` answers on every
    /// path, for mounting behind a router. Default `None`.
    pub path: Option<String>,
    /// `Host` allow-list. Default [`HostPolicy::Loopback`].
    pub hosts: HostPolicy,
    /// `Origin` allow-list. Default [`OriginPolicy::Loopback`].
    pub origins: OriginPolicy,
    /// Interval of SSE keep-alive comments. Default 15 s.
    pub keep_alive: Duration,
    /// Silence after which a request is answered as SSE so keep-alives can flow; `None` waits
    /// for the first message however long it takes. Default 15 s.
    pub stream_after: Option<Duration>,
    /// Notifications queued for a slow client before its stream is ended. Default 256.
    pub max_queued_notifications: usize,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            path: None,
            hosts: HostPolicy::Loopback,
            origins: OriginPolicy::Loopback,
            keep_alive: Duration::from_secs(15),
            stream_after: Some(Duration::from_secs(15)),
            max_queued_notifications: 256,
        }
    }
}

/// The Streamable HTTP endpoint as a service; cheap to clone.
pub struct McpHttp<D> {
    inner: Arc<Inner<D>>,
}

struct Inner<D> {
    dispatch: D,
    config: HttpConfig,
    /// The caller of requests without a `Caller` extension; immutable, so one is shared.
    anonymous: Caller,
}

impl<D> Clone for McpHttp<D> {
    fn clone(&self) -> Self {
        McpHttp {
            inner: self.inner.clone(),
        }
    }
}

impl<D> fmt::Debug for McpHttp<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpHttp")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl<D: Dispatch> McpHttp<D> {
    /// A service over `dispatch` with the given settings.
    pub fn new(dispatch: D, config: HttpConfig) -> Self {
        McpHttp {
            inner: Arc::new(Inner {
                dispatch,
                config,
                anonymous: Caller::anonymous(),
            }),
        }
    }

    /// The settings.
    pub fn config(&self) -> &HttpConfig {
        &self.inner.config
    }

    /// Answers one HTTP request. Never fails: every refusal is an HTTP response.
    pub async fn handle<B>(&self, request: Request<B>) -> Response<HttpBody>
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let inner = self.inner.clone();
        inner.handle(request).await
    }
}

impl<D: Dispatch, B> tower::Service<Request<B>> for McpHttp<D>
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response<HttpBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<HttpBody>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let inner = self.inner.clone();
        Box::pin(async move { Ok(inner.handle(request).await) })
    }
}

impl<D: Dispatch, B> hyper::service::Service<Request<B>> for McpHttp<D>
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response<HttpBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<HttpBody>, Infallible>> + Send>>;

    fn call(&self, request: Request<B>) -> Self::Future {
        let inner = self.inner.clone();
        Box::pin(async move { Ok(inner.handle(request).await) })
    }
}

impl<D: Dispatch> Inner<D> {
    async fn handle<B>(self: Arc<Self>, request: Request<B>) -> Response<HttpBody>
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let config = &self.config;
        if let Some(path) = &config.path {
            if request.uri().path() != path {
                return plain(StatusCode::NOT_FOUND);
            }
        }
        // Both the Host header and an absolute-form / HTTP/2 authority must pass when present.
        let uri_authority = request.uri().authority().map(|a| a.as_str());
        if !host_allowed(&config.hosts, authority_of(&request))
            || uri_authority.is_some_and(|a| !host_allowed(&config.hosts, Some(a)))
        {
            return refusal(Cause::HostRejected, None, "host not allowed");
        }
        if let Err(cause) = check_origin(&config.origins, request.headers()) {
            return refusal(cause, None, "origin not allowed");
        }
        if request.method() != Method::POST {
            return refusal(Cause::MethodNotAllowed, None, "only POST is allowed");
        }
        if !accepts_json_and_sse(request.headers()) {
            return refusal(
                Cause::NotAcceptable,
                None,
                "Accept must list application/json and text/event-stream",
            );
        }
        if !is_json_content_type(request.headers()) {
            return refusal(
                Cause::UnsupportedMediaType,
                None,
                "Content-Type must be application/json",
            );
        }
        if let Err(e) = check_protocol_header_size(request.headers()) {
            return refusal(Cause::HeaderMismatch, None, &e.to_string());
        }
        let limits = self.dispatch.ingress_limits();
        let (parts, body) = request.into_parts();
        let body = match read_capped(&parts.headers, body, limits.max_frame_bytes).await {
            Ok(bytes) => bytes,
            Err(cause) => {
                let message = match cause {
                    Cause::BodyTooLarge => format!(
                        "request body exceeds the {}-byte limit",
                        limits.max_frame_bytes
                    ),
                    _ => "request body could not be read".to_owned(),
                };
                return refusal(cause, None, &message);
            }
        };
        let caller = parts
            .extensions
            .get::<Caller>()
            .cloned()
            .unwrap_or_else(|| self.anonymous.clone());
        let message = match codec::decode(&body, &limits) {
            Ok(message) => message,
            Err(rejection) => return rejected(&rejection),
        };
        drop(body);
        let request = match message {
            Message::Request(request) => request,
            Message::Notification(notification) => {
                let outbox: Arc<dyn Outbox> = Arc::new(NoReply);
                self.dispatch
                    .dispatch(
                        caller,
                        Message::Notification(notification),
                        outbox,
                        CancelToken::new(),
                    )
                    .await;
                return plain(StatusCode::ACCEPTED);
            }
            Message::Response(_) => {
                // The server-role codec refuses responses; kept total for safety.
                return refusal(Cause::InvalidRequest, None, "unexpected response");
            }
        };
        let probe = Probe::of(&request);
        let span = request_span(&request, &probe);
        if let Err(e) = check_request_headers(&parts.headers, &request, &probe, |name| {
            self.dispatch.published_tool(&caller, name)
        }) {
            span.in_scope(|| tracing::debug!(error = %e, "header check failed"));
            return refusal(
                Cause::HeaderMismatch,
                Some(request.id.clone()),
                &e.to_string(),
            );
        }
        drop(probe);
        self.clone().respond(caller, request, span).await
    }

    async fn respond(
        self: Arc<Self>,
        caller: Caller,
        request: RpcRequest,
        span: tracing::Span,
    ) -> Response<HttpBody> {
        let config = &self.config;
        let cancel = CancelToken::new();
        let shared = Arc::new(Shared::new(
            cancel.clone(),
            config.max_queued_notifications.max(1),
        ));
        let guard = CancelGuard {
            shared: shared.clone(),
            armed: true,
        };
        let id = request.id.clone();
        let outbox: Arc<dyn Outbox> = shared.clone();
        let work = self
            .dispatch
            .dispatch(caller, Message::Request(request), outbox, cancel);
        // The dispatch runs as its own task. Polling it inside this response future instead
        // saves the spawn and its wake-ups (-7% instructions, far fewer futex calls) but costs
        // more CPU per request under concurrent load (bench/load, interleaved A/B on 2 cores):
        // the spawn spreads the work over the runtime's workers.
        let ended = EndGuard(shared.clone());
        tokio::spawn(
            async move {
                let _ended = ended;
                work.await;
            }
            .instrument(span),
        );
        let head = Head {
            shared: &shared,
            stream_after: config.stream_after,
            deadline: None,
        };
        match head.await {
            First::Orphaned => {
                let mut guard = guard;
                guard.armed = false;
                tracing::error!("dispatch ended without a final reply");
                json_response(Cause::Internal.http_status(), internal_error_line(&id))
            }
            First::Reply(reply) => {
                let mut guard = guard;
                guard.armed = false;
                json_response(reply.status, reply.line)
            }
            First::Stream => {
                let body = SseBody {
                    shared,
                    guard,
                    orphan_line: internal_error_line(&id),
                    keep_alive: tokio::time::interval_at(
                        tokio::time::Instant::now() + config.keep_alive,
                        config.keep_alive,
                    ),
                    done: false,
                };
                let mut response = Response::new(HttpBody(BodyKind::Sse(Box::new(body))));
                let h = response.headers_mut();
                h.insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/event-stream"),
                );
                h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
                h.insert(
                    HeaderName::from_static("x-accel-buffering"),
                    HeaderValue::from_static("no"),
                );
                response
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Outbox, response-kind decision and the SSE body

/// Everything one request's outbox, response future and SSE body share: one allocation.
struct Shared {
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
    waker: Option<Waker>,
}

impl Shared {
    fn new(cancel: CancelToken, capacity: usize) -> Self {
        Shared {
            state: Mutex::new(State::default()),
            cancel,
            capacity,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
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
}

/// The outbox of a notification: nothing is ever sent back (D6).
struct NoReply;

impl Outbox for NoReply {
    fn notify(&self, _line: String) -> bool {
        false
    }
    fn finish(&self, _reply: Reply) {}
}

/// Fires the request's cancellation when the response is abandoned before its final reply.
struct CancelGuard {
    shared: Arc<Shared>,
    armed: bool,
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

enum First {
    Reply(Reply),
    Stream,
    /// The dispatch task ended without a reply or notification.
    Orphaned,
}

/// Marks the dispatch task as ended when dropped (completion, panic or runtime shutdown).
struct EndGuard(Arc<Shared>);

impl Drop for EndGuard {
    fn drop(&mut self) {
        let mut s = self.0.lock();
        s.ended = true;
        s.wake();
    }
}

/// The error the host sends when the dispatcher broke its contract; the cause stays private.
fn internal_error_line(id: &RequestId) -> String {
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

/// Waits for the first thing the outbox receives (or the `stream_after` deadline).
struct Head<'a> {
    shared: &'a Shared,
    stream_after: Option<Duration>,
    /// Armed at the first poll that finds nothing, so a reply already there never touches
    /// the timer.
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
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
                return Poll::Ready(First::Orphaned);
            }
            if !s.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                s.waker = Some(cx.waker().clone());
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

struct SseBody {
    shared: Arc<Shared>,
    guard: CancelGuard,
    /// Sent as the final event if the dispatch task ends without a reply.
    orphan_line: String,
    keep_alive: tokio::time::Interval,
    done: bool,
}

/// One SSE event carrying one JSON-RPC message (the line never contains a newline).
fn sse_event(line: &str) -> Bytes {
    let mut out = Vec::with_capacity(line.len() + 8);
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(line.as_bytes());
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

/// The keep-alive comment (D10, K14).
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
pub struct HttpBody(BodyKind);

enum BodyKind {
    Full(Option<Bytes>),
    Sse(Box<SseBody>),
}

impl HttpBody {
    fn empty() -> Self {
        HttpBody(BodyKind::Full(None))
    }
    fn full(bytes: impl Into<Bytes>) -> Self {
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

fn plain(status: StatusCode) -> Response<HttpBody> {
    let mut r = Response::new(HttpBody::empty());
    *r.status_mut() = status;
    r
}

fn json_response(status: u16, line: String) -> Response<HttpBody> {
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
fn refusal(cause: Cause, id: Option<RequestId>, message: &str) -> Response<HttpBody> {
    let reply =
        crate::codec::encode_error(id.as_ref(), cause, message, None, &EgressLimits::SERVER);
    encoded_refusal(cause, reply)
}

fn encoded_refusal(cause: Cause, reply: crate::codec::ErrorReply) -> Response<HttpBody> {
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
/// notification gets an id-less error too, since HTTP needs a status either way, D6).
fn rejected(rejection: &Rejection) -> Response<HttpBody> {
    let id = match &rejection.reply_to {
        ReplyTo::Id(id) => Some(id.clone()),
        ReplyTo::NullId | ReplyTo::Nobody => None,
    };
    refusal(rejection.cause(), id, &rejection.error.to_string())
}

async fn read_capped<B>(headers: &HeaderMap, body: B, limit: usize) -> Result<Bytes, Cause>
where
    B: Body,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    if let Some(len) = headers.get(header::CONTENT_LENGTH) {
        let declared = len
            .to_str()
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .ok_or(Cause::InvalidRequest)?;
        if declared > limit as u64 {
            return Err(Cause::BodyTooLarge);
        }
    }
    // The usual body arrives as one frame and is kept as is; only a split body is copied.
    let mut body = std::pin::pin!(body);
    let mut first: Option<Bytes> = None;
    let mut joined: Option<Vec<u8>> = None;
    let mut total = 0usize;
    while let Some(frame) = std::future::poll_fn(|cx| body.as_mut().poll_frame(cx)).await {
        let frame = frame.map_err(|_| Cause::InvalidRequest)?;
        let Ok(mut data) = frame.into_data() else {
            continue; // trailers carry nothing for us
        };
        total = total.saturating_add(data.remaining());
        if total > limit {
            return Err(Cause::BodyTooLarge);
        }
        let chunk = data.copy_to_bytes(data.remaining());
        match (&mut joined, first.take()) {
            (Some(all), _) => all.extend_from_slice(&chunk),
            (None, None) => first = Some(chunk),
            (None, Some(head)) => {
                let mut all = Vec::with_capacity(head.len() + chunk.len());
                all.extend_from_slice(&head);
                all.extend_from_slice(&chunk);
                joined = Some(all);
            }
        }
    }
    Ok(match joined {
        Some(all) => Bytes::from(all),
        None => first.unwrap_or_default(),
    })
}

// ---------------------------------------------------------------------------------------------
// Host, Origin, Accept, Content-Type

fn authority_of<B>(request: &Request<B>) -> Option<&str> {
    request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| request.uri().authority().map(|a| a.as_str()))
}

/// The host part of an authority (`host[:port]`, `[v6][:port]`), as written (compare it
/// case-insensitively).
fn host_part(authority: &str) -> Option<&str> {
    let authority = authority.trim();
    let host = if let Some(rest) = authority.strip_prefix('[') {
        let end = rest.find(']')?;
        let after = &rest[end + 1..];
        if !(after.is_empty() || after.starts_with(':')) {
            return None;
        }
        &authority[..end + 2]
    } else {
        match authority.rsplit_once(':') {
            Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
            Some(_) => return None,
            None => authority,
        }
    };
    if host.is_empty() {
        return None;
    }
    Some(host)
}

fn is_loopback_host(host: &str) -> bool {
    ["localhost", "127.0.0.1", "[::1]"]
        .iter()
        .any(|l| l.eq_ignore_ascii_case(host))
}

/// Whether the request's authority passes the policy (D35). A missing authority passes only
/// [`HostPolicy::Any`].
pub fn host_allowed(policy: &HostPolicy, authority: Option<&str>) -> bool {
    if *policy == HostPolicy::Any {
        return true;
    }
    let Some(host) = authority.and_then(host_part) else {
        return false;
    };
    match policy {
        HostPolicy::Loopback => is_loopback_host(host),
        HostPolicy::Allow(list) => list.iter().any(|h| h.eq_ignore_ascii_case(host)),
        HostPolicy::Any => true,
    }
}

/// Checks a present `Origin` against the policy (D34); an absent one is allowed.
pub fn check_origin(policy: &OriginPolicy, headers: &HeaderMap) -> Result<(), Cause> {
    let mut values = headers.get_all(header::ORIGIN).iter();
    let Some(first) = values.next() else {
        return Ok(());
    };
    if values.next().is_some() {
        return Err(Cause::OriginRejected);
    }
    let origin = first.to_str().map_err(|_| Cause::OriginRejected)?;
    if origin_allowed(policy, origin) {
        Ok(())
    } else {
        Err(Cause::OriginRejected)
    }
}

fn origin_allowed(policy: &OriginPolicy, origin: &str) -> bool {
    match policy {
        OriginPolicy::None => false,
        OriginPolicy::Allow(list) => list.iter().any(|o| o.eq_ignore_ascii_case(origin)),
        OriginPolicy::Loopback => {
            let rest = origin
                .strip_prefix("http://")
                .or_else(|| origin.strip_prefix("https://"));
            match rest {
                Some(authority) if !authority.contains('/') && !authority.contains('@') => {
                    host_part(authority).is_some_and(is_loopback_host)
                }
                _ => false,
            }
        }
    }
}

/// `Accept` values that list both types with no parameters.
const COMMON_ACCEPT: [&[u8]; 2] = [
    b"application/json, text/event-stream",
    b"text/event-stream, application/json",
];

/// Whether `Accept` lists both `application/json` and `text/event-stream` (D3).
pub fn accepts_json_and_sse(headers: &HeaderMap) -> bool {
    let values = headers.get_all(header::ACCEPT);
    let mut iter = values.iter();
    if let (Some(only), None) = (iter.next(), iter.next()) {
        // What conforming clients send, byte for byte: no need to parse it.
        if COMMON_ACCEPT.contains(&only.as_bytes()) {
            return true;
        }
    }
    let (mut json, mut sse) = (false, false);
    for value in values.iter() {
        let Ok(value) = value.to_str() else {
            continue;
        };
        for range in value.split(',') {
            let mut parts = range.split(';');
            let media = parts.next().unwrap_or("").trim();
            let refused = parts.any(|p| {
                let p = p.trim();
                p.strip_prefix("q=")
                    .or_else(|| p.strip_prefix("Q="))
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    == Some(0.0)
            });
            if refused {
                continue;
            }
            if media.eq_ignore_ascii_case("application/json") {
                json = true;
            } else if media.eq_ignore_ascii_case("text/event-stream") {
                sse = true;
            }
        }
    }
    json && sse
}

/// Whether the body is declared as `application/json` (parameters such as charset allowed).
pub fn is_json_content_type(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return false;
    };
    // The usual exact value needs no parsing.
    value.as_bytes() == b"application/json"
        || value
            .to_str()
            .ok()
            .map(|v| v.split(';').next().unwrap_or("").trim())
            .is_some_and(|m| m.eq_ignore_ascii_case("application/json"))
}

// ---------------------------------------------------------------------------------------------
// Protocol headers (D15–D30, O38)

/// Why the protocol headers of a request were refused (-32020, HTTP 400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderError {
    /// A required header is absent (D26, D33).
    #[error("Header mismatch: required header {0} is missing")]
    Missing(String),
    /// A header appears more than once.
    #[error("Header mismatch: header {0} appears more than once")]
    Repeated(String),
    /// A header value has characters outside visible ASCII, space and tab, or a malformed
    /// base64 sentinel (D26, D30).
    #[error("Header mismatch: header {0} contains invalid characters")]
    InvalidCharacters(String),
    /// A header value disagrees with the body (D15–D17, D27, D28).
    #[error("Header mismatch: header {0} does not match the request body")]
    Mismatch(String),
    /// The body carries an annotated value but its `Mcp-Param-*` header is absent (D28).
    #[error("Header mismatch: header {0} is missing but the body carries its value")]
    MissingParam(String),
    /// The protocol headers together exceed the bound (O38).
    #[error("Header mismatch: protocol headers total {actual} bytes, over the {limit}-byte limit")]
    TooLarge {
        /// The bound.
        limit: usize,
        /// The measured size.
        actual: usize,
    },
}

/// The protocol header bytes of a request: name plus value of every `mcp-*` header (O38).
pub fn protocol_header_bytes(headers: &HeaderMap) -> usize {
    headers
        .iter()
        .filter(|(name, _)| name.as_str().starts_with(PROTOCOL_HEADER_PREFIX))
        .map(|(name, value)| name.as_str().len() + value.len())
        .sum()
}

/// Checks the 8 KiB bound on protocol headers (O38).
pub fn check_protocol_header_size(headers: &HeaderMap) -> Result<(), HeaderError> {
    let actual = protocol_header_bytes(headers);
    if actual > limits::MAX_PROTOCOL_HEADER_BYTES {
        return Err(HeaderError::TooLarge {
            limit: limits::MAX_PROTOCOL_HEADER_BYTES,
            actual,
        });
    }
    Ok(())
}

/// Whether a header value uses only visible ASCII, space and tab (RFC 9110 field values,
/// without obsolete text).
fn plain_ascii(value: &HeaderValue) -> bool {
    value
        .as_bytes()
        .iter()
        .all(|&b| b == b'\t' || (0x20..=0x7e).contains(&b))
}

/// The single value of header `key` (spelled `name`), checked for invalid characters.
fn single<'h>(
    headers: &'h HeaderMap,
    key: &HeaderName,
    name: &str,
) -> Result<Option<&'h str>, HeaderError> {
    let mut values = headers.get_all(key).iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(HeaderError::Repeated(display_name(name)));
    }
    if !plain_ascii(first) {
        return Err(HeaderError::InvalidCharacters(display_name(name)));
    }
    first
        .to_str()
        .map(Some)
        .map_err(|_| HeaderError::InvalidCharacters(display_name(name)))
}

/// The canonical spelling of a protocol header name, for messages.
fn display_name(name: &str) -> String {
    match name {
        PROTOCOL_VERSION_HEADER => "MCP-Protocol-Version".to_owned(),
        METHOD_HEADER => "Mcp-Method".to_owned(),
        NAME_HEADER => "Mcp-Name".to_owned(),
        other => match other.strip_prefix(PARAM_HEADER_PREFIX) {
            Some(rest) => format!("Mcp-Param-{rest}"),
            None => other.to_owned(),
        },
    }
}

/// Decodes a `Mcp-Name` / `Mcp-Param-*` value: `=?base64?…?=` → its UTF-8 text; anything
/// else is taken literally (D18, D21, D27). `None` for a malformed sentinel.
pub fn decode_header_value(value: &str) -> Option<String> {
    decode_header_text(value).map(Cow::into_owned)
}

/// [`decode_header_value`] without a copy for a literal value.
fn decode_header_text(value: &str) -> Option<Cow<'_, str>> {
    if value.len() >= BASE64_OPEN.len() + BASE64_CLOSE.len()
        && value.starts_with(BASE64_OPEN)
        && value.ends_with(BASE64_CLOSE)
    {
        let inner = &value[BASE64_OPEN.len()..value.len() - BASE64_CLOSE.len()];
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(inner)
            .ok()?;
        return String::from_utf8(bytes).ok().map(Cow::Owned);
    }
    Some(Cow::Borrowed(value))
}

/// The parts of `params` the header checks and the span read, borrowed from the body and read
/// in one pass; malformed shapes are left to the server, which answers them with -32602.
#[derive(Default, Deserialize)]
struct Probe<'a> {
    #[serde(default, borrow)]
    name: Text<'a>,
    #[serde(default, borrow)]
    uri: Text<'a>,
    #[serde(default, borrow)]
    arguments: Option<&'a RawValue>,
    #[serde(default, borrow, rename = "_meta")]
    meta: MetaProbe<'a>,
}

#[derive(Default, Deserialize)]
struct MetaFields<'a> {
    #[serde(default, borrow, rename = "io.modelcontextprotocol/protocolVersion")]
    protocol_version: Text<'a>,
    #[serde(default, borrow)]
    traceparent: Text<'a>,
    #[serde(default, borrow)]
    tracestate: Text<'a>,
}

/// A member that counts only when it is a string (borrowed unless it has escapes); any other
/// JSON value reads as absent, as the server judges shapes.
#[derive(Default)]
struct Text<'a>(Option<Cow<'a, str>>);

impl Text<'_> {
    fn get(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

/// `_meta` when it is an object; any other JSON value reads as an empty one.
#[derive(Default)]
struct MetaProbe<'a>(MetaFields<'a>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Text<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Text<'a>, E> {
                Ok(Text(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E>(self, v: &str) -> Result<Text<'a>, E> {
                Ok(Text(Some(Cow::Owned(v.to_owned()))))
            }
            fn visit_string<E>(self, v: String) -> Result<Text<'a>, E> {
                Ok(Text(Some(Cow::Owned(v))))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Text<'a>, E> {
                Ok(Text(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Text<'a>, E> {
                Ok(Text(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Text<'a>, E> {
                Ok(Text(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Text<'a>, E> {
                Ok(Text(None))
            }
            fn visit_unit<E>(self) -> Result<Text<'a>, E> {
                Ok(Text(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Text<'a>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Text(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Text<'a>, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Text(None))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for MetaProbe<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = MetaProbe<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<MetaProbe<'a>, A::Error> {
                let d = serde::de::value::MapAccessDeserializer::new(map);
                MetaFields::deserialize(d).map(MetaProbe)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<MetaProbe<'a>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(MetaProbe::default())
            }
            fn visit_str<E>(self, _: &str) -> Result<MetaProbe<'a>, E> {
                Ok(MetaProbe::default())
            }
            fn visit_bool<E>(self, _: bool) -> Result<MetaProbe<'a>, E> {
                Ok(MetaProbe::default())
            }
            fn visit_i64<E>(self, _: i64) -> Result<MetaProbe<'a>, E> {
                Ok(MetaProbe::default())
            }
            fn visit_u64<E>(self, _: u64) -> Result<MetaProbe<'a>, E> {
                Ok(MetaProbe::default())
            }
            fn visit_f64<E>(self, _: f64) -> Result<MetaProbe<'a>, E> {
                Ok(MetaProbe::default())
            }
            fn visit_unit<E>(self) -> Result<MetaProbe<'a>, E> {
                Ok(MetaProbe::default())
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

impl<'a> Probe<'a> {
    fn of(request: &'a RpcRequest) -> Probe<'a> {
        request
            .params
            .as_deref()
            .and_then(|params| serde_json::from_str::<Probe<'a>>(params.get()).ok())
            .unwrap_or_default()
    }

    fn name(&self) -> Option<&str> {
        self.name.get()
    }

    fn protocol_version(&self) -> Option<&str> {
        self.meta.0.protocol_version.get()
    }
}

/// The body value a method mirrors into `Mcp-Name` (D17).
fn name_source<'p>(method: &str, probe: &'p Probe<'_>) -> Option<Option<&'p str>> {
    match method {
        "tools/call" | "prompts/get" => Some(probe.name()),
        "resources/read" => Some(probe.uri.get()),
        _ => None,
    }
}

/// Checks the mirrored headers of one request against its body (D15–D30).
fn check_request_headers(
    headers: &HeaderMap,
    request: &RpcRequest,
    probe: &Probe<'_>,
    published_tool: impl FnOnce(&str) -> Option<crate::core::descriptor::Tool>,
) -> Result<(), HeaderError> {
    let version = single(headers, &PROTOCOL_VERSION_NAME, PROTOCOL_VERSION_HEADER)?
        .ok_or_else(|| HeaderError::Missing(display_name(PROTOCOL_VERSION_HEADER)))?;
    // A body without a readable protocolVersion is the server's -32602 (missing meta).
    if let Some(body_version) = probe.protocol_version() {
        if version != body_version {
            return Err(HeaderError::Mismatch(display_name(PROTOCOL_VERSION_HEADER)));
        }
    }
    let method = single(headers, &METHOD_NAME, METHOD_HEADER)?
        .ok_or_else(|| HeaderError::Missing(display_name(METHOD_HEADER)))?;
    if method != request.method {
        return Err(HeaderError::Mismatch(display_name(METHOD_HEADER)));
    }
    if let Some(source) = name_source(&request.method, probe) {
        let header = single(headers, &NAME_NAME, NAME_HEADER)?;
        match (header, source) {
            (None, Some(_)) => return Err(HeaderError::Missing(display_name(NAME_HEADER))),
            (Some(h), Some(body)) => {
                let decoded = decode_header_text(h)
                    .ok_or_else(|| HeaderError::InvalidCharacters(display_name(NAME_HEADER)))?;
                if decoded != body {
                    return Err(HeaderError::Mismatch(display_name(NAME_HEADER)));
                }
            }
            // The body lacks the field: the server answers -32602.
            (_, None) => {}
        }
    }
    if request.method == "tools/call" {
        if let Some(name) = probe.name() {
            if let Some(tool) = published_tool(name) {
                check_param_headers(headers, probe, &tool)?;
            }
        }
    }
    Ok(())
}

/// The `x-mcp-header` annotations of a visible tool: (property path, header name).
fn annotated_params(tool: &crate::core::descriptor::Tool) -> Vec<(Vec<String>, String)> {
    if !tool.input_schema.get().contains("x-mcp-header") {
        return Vec::new();
    }
    let Ok(schema) = serde_json::from_str::<Value>(tool.input_schema.get()) else {
        return Vec::new();
    };
    let Ok(found) = crate::core::schema::check_mcp_headers(&schema) else {
        return Vec::new();
    };
    found
        .into_iter()
        .map(|(pointer, name)| (property_path(&pointer), name))
        .collect()
}

/// `/properties/a/properties/b~1c` → `["a", "b/c"]`.
fn property_path(pointer: &str) -> Vec<String> {
    pointer
        .split('/')
        .skip(1)
        .collect::<Vec<_>>()
        .chunks(2)
        .filter_map(|pair| pair.get(1))
        .map(|seg| seg.replace("~1", "/").replace("~0", "~"))
        .collect()
}

fn check_param_headers(
    headers: &HeaderMap,
    probe: &Probe<'_>,
    tool: &crate::core::descriptor::Tool,
) -> Result<(), HeaderError> {
    let annotated = annotated_params(tool);
    if annotated.is_empty() {
        return Ok(());
    }
    let arguments: Option<Value> = probe
        .arguments
        .and_then(|a| serde_json::from_str(a.get()).ok());
    for (path, name) in annotated {
        let header_name = format!("{PARAM_HEADER_PREFIX}{}", name.to_ascii_lowercase());
        let shown = format!("Mcp-Param-{name}");
        let body = arguments
            .as_ref()
            .and_then(|args| path.iter().try_fold(args, |v, key| v.get(key)))
            .filter(|v| !v.is_null());
        let mut values = headers.get_all(header_name.as_str()).iter();
        let header = values.next();
        if values.next().is_some() {
            return Err(HeaderError::Repeated(shown));
        }
        match (header, body) {
            (None, None) => {}
            (None, Some(_)) => return Err(HeaderError::MissingParam(shown)),
            (Some(_), None) => return Err(HeaderError::Mismatch(shown)),
            (Some(h), Some(body)) => {
                if !plain_ascii(h) {
                    return Err(HeaderError::InvalidCharacters(shown));
                }
                let text = h
                    .to_str()
                    .ok()
                    .and_then(decode_header_value)
                    .ok_or_else(|| HeaderError::InvalidCharacters(shown.clone()))?;
                if !param_matches(&text, body) {
                    return Err(HeaderError::Mismatch(shown));
                }
            }
        }
    }
    Ok(())
}

/// Compares a decoded header value with the body value (D20, D27, D29): strings exactly,
/// booleans as `true`/`false`, numbers numerically (`42` equals `42.0`).
pub fn param_matches(header: &str, body: &Value) -> bool {
    match body {
        Value::String(s) => header == s,
        Value::Bool(b) => header == if *b { "true" } else { "false" },
        Value::Number(n) => {
            if header.trim() != header || header.is_empty() {
                return false;
            }
            let Ok(h) = serde_json::from_str::<serde_json::Number>(header) else {
                return false;
            };
            match (h.as_i64(), n.as_i64()) {
                (Some(a), Some(b)) => a == b,
                _ => match (h.as_f64(), n.as_f64()) {
                    (Some(a), Some(b)) => a == b,
                    _ => false,
                },
            }
        }
        _ => false,
    }
}

// ---------------------------------------------------------------------------------------------
// Tracing

/// The span name per the OpenTelemetry MCP conventions: `{method} {target}` when the request
/// names a tool or prompt, else the method.
pub fn span_name(method: &str, target: Option<&str>) -> String {
    match target {
        Some(t) => format!("{method} {t}"),
        None => method.to_owned(),
    }
}

fn request_span(request: &RpcRequest, probe: &Probe<'_>) -> tracing::Span {
    let target = match request.method.as_str() {
        "tools/call" | "prompts/get" => probe.name(),
        _ => None,
    };
    let span = tracing::info_span!(
        "mcp.server.request",
        otel.name = %span_name(&request.method, target),
        otel.kind = "server",
        mcp.method.name = %request.method,
        mcp.request.id = %request.id.token(),
        mcp.protocol.version = tracing::field::Empty,
        gen_ai.tool.name = tracing::field::Empty,
        gen_ai.prompt.name = tracing::field::Empty,
        traceparent = tracing::field::Empty,
        tracestate = tracing::field::Empty,
    );
    if let Some(v) = probe.protocol_version() {
        span.record("mcp.protocol.version", v);
    }
    match (request.method.as_str(), target) {
        ("tools/call", Some(t)) => {
            span.record("gen_ai.tool.name", t);
        }
        ("prompts/get", Some(t)) => {
            span.record("gen_ai.prompt.name", t);
        }
        _ => {}
    }
    if let Some(v) = probe.meta.0.traceparent.get() {
        span.record("traceparent", v);
    }
    if let Some(v) = probe.meta.0.tracestate.get() {
        span.record("tracestate", v);
    }
    span
}

// ---------------------------------------------------------------------------------------------
// Accept loop

/// Socket options for every accepted connection: TCP_NODELAY, so small JSON-RPC replies and SSE
/// events are not held back by Nagle's algorithm (users' top latency complaint).
fn prepare_accepted(stream: &tokio::net::TcpStream) -> std::io::Result<()> {
    stream.set_nodelay(true)
}

/// Serves `service` on `listener` until `shutdown` resolves: TCP_NODELAY on every accepted
/// socket, HTTP/1.1 and HTTP/2, then a graceful close (no new connections or requests;
/// in-flight responses finish, so shut the protocol server down first to end listen streams).
///
/// Bind to `127.0.0.1` unless a security design for other interfaces exists (D35, O9).
///
/// ```no_run
/// use std::time::Duration;
/// use strict_mcp::core::RegistryBuilder;
/// use strict_mcp::server::http::{serve, HttpConfig, McpHttp};
/// use strict_mcp::server::{Server, ServerOptions};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let server = Server::new(RegistryBuilder::new().build()?, ServerOptions::new())?;
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8123").await?;
/// let config = HttpConfig { path: Some("/mcp".into()), ..HttpConfig::default() };
/// let service = McpHttp::new(server.clone(), config);
/// let stop = async {
///     let _ = tokio::signal::ctrl_c().await;
///     // End listen streams and cancel calls first, then let connections drain.
///     server.shutdown(Duration::from_secs(5)).await;
/// };
/// serve(listener, service, stop).await?;
/// # Ok(())
/// # }
/// ```
pub async fn serve<D: Dispatch>(
    listener: tokio::net::TcpListener,
    service: McpHttp<D>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use hyper_util::server::conn::auto::Builder;

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut connections = tokio::task::JoinSet::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        let (stream, peer): (tokio::net::TcpStream, SocketAddr) = match accepted {
            Ok(pair) => pair,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        if let Err(e) = prepare_accepted(&stream) {
            tracing::debug!(error = %e, %peer, "TCP_NODELAY not set");
        }
        let service = service.clone();
        let mut stop = stop_rx.clone();
        connections.spawn(async move {
            let builder = Builder::new(TokioExecutor::new());
            let connection = builder.serve_connection(TokioIo::new(stream), service);
            let mut connection = std::pin::pin!(connection);
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(e) = result {
                        tracing::debug!(error = %e, %peer, "connection ended with an error");
                    }
                    return;
                }
                _ = stop.wait_for(|s| *s) => {}
            }
            connection.as_mut().graceful_shutdown();
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, %peer, "connection ended with an error");
            }
        });
    }
    drop(listener);
    let _ = stop_tx.send(true);
    while connections.join_next().await.is_some() {}
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    /// Operability: every accepted socket gets TCP_NODELAY (the accept loop calls this).
    #[test]
    fn accepted_sockets_get_tcp_nodelay() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let _client = tokio::net::TcpStream::connect(addr).await.unwrap();
            let (stream, _) = listener.accept().await.unwrap();
            assert!(
                !stream.nodelay().unwrap(),
                "off before, so the test can fail"
            );
            prepare_accepted(&stream).unwrap();
            assert!(stream.nodelay().unwrap());
        });
    }

    #[test]
    fn d3_accept_needs_both_types_by_name() {
        assert!(accepts_json_and_sse(&headers(&[(
            "accept",
            "application/json, text/event-stream"
        )])));
        assert!(accepts_json_and_sse(&headers(&[
            ("accept", "Application/JSON;q=0.9"),
            ("accept", "text/event-stream")
        ])));
        assert!(!accepts_json_and_sse(&headers(&[(
            "accept",
            "application/json"
        )])));
        assert!(!accepts_json_and_sse(&headers(&[("accept", "*/*")])));
        assert!(!accepts_json_and_sse(&headers(&[(
            "accept",
            "application/json, text/event-stream;q=0"
        )])));
        assert!(!accepts_json_and_sse(&HeaderMap::new()));
        // The common exact values, and a repeated header that is not one of them.
        assert!(accepts_json_and_sse(&headers(&[(
            "accept",
            "text/event-stream, application/json"
        )])));
        assert!(!accepts_json_and_sse(&headers(&[
            ("accept", "application/json, text/event-stream;q=0"),
            ("accept", "application/json")
        ])));
    }

    #[test]
    fn d35_host_policy() {
        let l = HostPolicy::Loopback;
        assert!(host_allowed(&l, Some("127.0.0.1:8080")));
        assert!(host_allowed(&l, Some("LOCALHOST")));
        assert!(host_allowed(&l, Some("[::1]:3000")));
        assert!(!host_allowed(&l, Some("evil.example:8080")));
        assert!(!host_allowed(&l, Some("127.0.0.1.evil.example")));
        assert!(!host_allowed(&l, Some("localhost:abc")));
        assert!(!host_allowed(&l, None));
        let a = HostPolicy::Allow(vec!["mcp.example.com".into()]);
        assert!(host_allowed(&a, Some("MCP.example.com:443")));
        assert!(!host_allowed(&a, Some("127.0.0.1")));
        assert!(host_allowed(&HostPolicy::Any, None));
    }

    #[test]
    fn d34_origin_policy() {
        let l = OriginPolicy::Loopback;
        assert_eq!(check_origin(&l, &HeaderMap::new()), Ok(()));
        assert_eq!(
            check_origin(&l, &headers(&[("origin", "http://localhost:5173")])),
            Ok(())
        );
        assert_eq!(
            check_origin(&l, &headers(&[("origin", "https://127.0.0.1")])),
            Ok(())
        );
        for bad in [
            "https://evil.example",
            "null",
            "http://localhost.evil.example",
            "file://localhost",
            "http://user@localhost",
        ] {
            assert_eq!(
                check_origin(&l, &headers(&[("origin", bad)])),
                Err(Cause::OriginRejected),
                "{bad}"
            );
        }
        let a = OriginPolicy::Allow(vec!["https://app.example".into()]);
        assert_eq!(
            check_origin(&a, &headers(&[("origin", "https://app.example")])),
            Ok(())
        );
        assert_eq!(
            check_origin(&a, &headers(&[("origin", "http://localhost")])),
            Err(Cause::OriginRejected)
        );
        assert_eq!(
            check_origin(
                &OriginPolicy::None,
                &headers(&[("origin", "http://localhost")])
            ),
            Err(Cause::OriginRejected)
        );
    }

    #[test]
    fn d18_d27_base64_sentinel() {
        assert_eq!(
            decode_header_value("=?base64?SGVsbG8sIOS4lueVjA==?=").as_deref(),
            Some("Hello, 世界")
        );
        assert_eq!(decode_header_value("us-west1").as_deref(), Some("us-west1"));
        assert_eq!(
            decode_header_value("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=").as_deref(),
            Some("=?base64?literal?=")
        );
        assert_eq!(decode_header_value("=?base64?***?="), None);
        // Markers are case-sensitive: an upper-case marker is a literal value.
        assert_eq!(
            decode_header_value("=?BASE64?SGk=?=").as_deref(),
            Some("=?BASE64?SGk=?=")
        );
    }

    fn probe_of(
        params: &str,
    ) -> (
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
    ) {
        let line = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params}}}"#);
        let Ok(Message::Request(request)) = codec::decode(line.as_bytes(), &IngressLimits::SERVER)
        else {
            panic!("not a request: {line}");
        };
        let p = Probe::of(&request);
        (
            p.name().map(str::to_owned),
            p.uri.get().map(str::to_owned),
            p.arguments.map(|a| a.get().to_owned()),
            p.protocol_version().map(str::to_owned),
        )
    }

    /// The header checks (D15, D17, D28) read the body leniently: a member of the wrong shape
    /// reads as absent without hiding the others, and escaped strings are unescaped.
    #[test]
    fn d15_d17_probe_reads_members_leniently_in_one_pass() {
        assert_eq!(
            probe_of(r#"{"name":"a\u0062","uri":[1,{"x":2}],"arguments":{"k":[1]},"_meta":5}"#),
            (Some("ab".into()), None, Some(r#"{"k":[1]}"#.into()), None)
        );
        assert_eq!(
            probe_of(
                r#"{"name":7,"_meta":{"x":{"y":[]},"io.modelcontextprotocol/protocolVersion":"2026-07-28","traceparent":1}}"#
            ),
            (None, None, None, Some("2026-07-28".into()))
        );
        assert_eq!(
            probe_of(
                r#"{"uri":"file:///a","_meta":{"io.modelcontextprotocol/protocolVersion":true}}"#
            ),
            (None, Some("file:///a".into()), None, None)
        );
        assert_eq!(probe_of("{}"), (None, None, None, None));
    }

    #[test]
    fn d29_numeric_comparison() {
        assert!(param_matches("42", &serde_json::json!(42)));
        assert!(param_matches("42.0", &serde_json::json!(42)));
        assert!(param_matches("-7", &serde_json::json!(-7)));
        assert!(!param_matches("43", &serde_json::json!(42)));
        assert!(!param_matches("0x2A", &serde_json::json!(42)));
        assert!(!param_matches(" 42", &serde_json::json!(42)));
        assert!(param_matches("true", &serde_json::json!(true)));
        assert!(!param_matches("True", &serde_json::json!(true)));
        assert!(param_matches("Us-West", &serde_json::json!("Us-West")));
        assert!(!param_matches("us-west", &serde_json::json!("Us-West")));
        assert!(!param_matches("{}", &serde_json::json!({})));
    }

    #[test]
    fn property_paths_follow_properties_chains() {
        assert_eq!(property_path("/properties/a"), ["a"]);
        assert_eq!(
            property_path("/properties/a/properties/b~1c~0d"),
            ["a", "b/c~d"]
        );
    }

    #[test]
    fn o38_protocol_header_size_counts_mcp_headers_only() {
        let h = headers(&[
            ("mcp-method", "tools/list"),
            ("authorization", "Bearer xyz"),
        ]);
        assert_eq!(protocol_header_bytes(&h), 20);
        let big = "a".repeat(limits::MAX_PROTOCOL_HEADER_BYTES - "mcp-param-x".len());
        let ok = headers(&[("mcp-param-x", &big)]);
        assert_eq!(check_protocol_header_size(&ok), Ok(()));
        let over = headers(&[("mcp-param-x", &format!("{big}a"))]);
        assert_eq!(
            check_protocol_header_size(&over),
            Err(HeaderError::TooLarge {
                limit: 8192,
                actual: 8193
            })
        );
    }

    #[test]
    fn span_names_follow_otel_mcp_conventions() {
        assert_eq!(
            span_name("tools/call", Some("get_weather")),
            "tools/call get_weather"
        );
        assert_eq!(span_name("tools/list", None), "tools/list");
    }
}
