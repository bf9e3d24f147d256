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
//!    stream → 413 with a JSON-RPC error; nothing beyond the cap is buffered. A body that
//!    pauses longer than [`HttpConfig::body_read_timeout`] → 408 with a JSON-RPC error. The
//!    rest of a refused body is read and discarded (up to [`MAX_DRAIN_BYTES`] within
//!    [`MAX_DRAIN_TIME`]), so a client that writes its whole body before reading sees the
//!    answer instead of a reset; the refusals of steps 1–6 drain the same way.
//! 8. The codec decodes the body; a rejection is answered with its JSON-RPC error and the status
//!    from [`Cause`] (never `text/plain`).
//! 9. A notification is handed to the dispatcher and answered 202 with an empty body (D6). The
//!    revision defines no header rules for notification POSTs (D7), so none are enforced.
//! 10. A request has its mirrored headers checked against the body (D15–D30, rules in
//!     [`crate::wire::headers`], a tool's `x-mcp-header` annotations as parsed when it was
//!     registered) → 400 / -32020 with the request id. A method this revision removed that
//!     arrives without `MCP-Protocol-Version` (an initialise-era `initialize`) skips the check
//!     and reaches the dispatcher's -32601 with the supported versions (B22). Then it is
//!     dispatched with the caller taken from the request's
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
//! # One endpoint path (D1)
//!
//! [`serve`] answers one path: [`HttpConfig::path`], or [`DEFAULT_PATH`] (`/mcp`) when that is
//! `None`; every other path gets a plain 404. [`McpHttp`] mounted as a service answers every
//! path when `path` is `None`, so routers that strip their prefix (axum's `nest_service`) work
//! unchanged; the router decides which path reaches it.
//!
//! # Slow and idle clients
//!
//! [`serve_with`] bounds what a connection may hold ([`ServeConfig`]): the time to send
//! complete headers, the time a connection may sit with no request in flight, and the number of
//! connections (one more is answered 503 and closed). The body read time-out is the service's
//! own ([`HttpConfig::body_read_timeout`]), so it holds wherever the service is mounted.
//!
//! An application that mounts [`McpHttp`] behind its own server must configure the rest there:
//! a header read time-out (hyper: `http1::Builder::header_read_timeout` with a timer such as
//! `hyper_util::rt::TokioTimer`), an idle keep-alive time-out, a connection limit (e.g. a
//! semaphore around accept, or tower's `ConcurrencyLimit` for requests), and HTTP/2 stream
//! limits and keep-alive pings if it serves HTTP/2. Without them one client can hold sockets
//! open indefinitely.
//!
//! # Panics
//!
//! A panic in the host's own code (header checks, body reading, the service call) is answered
//! with exactly one `-32603` "Internal error" (status 500, `"id": null`, the cause only logged)
//! and the connection serves the next request. Panics inside the dispatcher are the protocol
//! server's to catch; a dispatch task that ends without a reply is answered the same way.

//! # Cancellation
//!
//! If the client closes the connection or drops the response stream before the final reply,
//! the request's [`CancelToken`] fires and nothing further is sent (D12); a later `notify`
//! returns `false`. A stream whose client does not read fast enough to keep the queue under
//! [`HttpConfig::max_queued_notifications`] is ended the same way (without a final response,
//! so the client knows it missed something) rather than dropping notifications silently.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use futures_util::FutureExt as _;
use hyper::body::{Body, Buf, Bytes, Frame, SizeHint};
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use tracing::Instrument as _;

use crate::codec::{self, EgressLimits, IngressLimits, Rejection, ReplyTo};
use crate::core::{Caller, CancelToken, Registry};
use crate::server::outbox::{Outbox, Reply};
use crate::wire::errors::Cause;
use crate::wire::headers::{self, HeaderKey, HeaderLookup, Lookup, Mirrored, ParamHeader};
use crate::wire::jsonrpc::{Message, Request as RpcRequest, RequestId};
#[cfg(test)]
use crate::wire::limits;

pub use crate::wire::headers::{
    decode_header_value, param_matches, HeaderError, BASE64_CLOSE, BASE64_OPEN, METHOD_HEADER,
    NAME_HEADER, PARAM_HEADER_PREFIX, PROTOCOL_HEADER_PREFIX, PROTOCOL_VERSION_HEADER,
};

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
    /// The `x-mcp-header` annotations of the tool a `tools/call` names, as the caller sees it
    /// in `tools/list`, which the host enforces (D28); parsed once when the tool was
    /// registered. `None` when no such tool is published (unknown, hidden, or published only
    /// behind a wrapper such as compact mode's `call_tool`, whose own schema carries none).
    fn published_param_headers(&self, caller: &Caller, name: &str) -> Option<Arc<[ParamHeader]>> {
        self.registry().param_headers(caller, name).ok()
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

    fn published_param_headers(&self, caller: &Caller, name: &str) -> Option<Arc<[ParamHeader]>> {
        match self.mode() {
            crate::server::PublishMode::Direct => self.registry().param_headers(caller, name).ok(),
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
    /// path when mounted behind a router, and [`DEFAULT_PATH`] under [`serve`]. Default `None`.
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
    /// Longest pause between two frames of a request body (also before the first) before the
    /// request is answered 408 (-32600) and the connection closed, so a client that sends
    /// headers and then stalls cannot hold a request open. Default 10 s
    /// ([`DEFAULT_BODY_READ_TIMEOUT`]).
    pub body_read_timeout: Duration,
}

/// Default of [`HttpConfig::body_read_timeout`]: generous for a 2 MiB body on a slow link,
/// short enough that stalled uploads do not pile up.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(10);

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            path: None,
            hosts: HostPolicy::Loopback,
            origins: OriginPolicy::Loopback,
            keep_alive: Duration::from_secs(15),
            stream_after: Some(Duration::from_secs(15)),
            max_queued_notifications: 256,
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
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
    /// Answers one request, panic-safe: a panic in the host's own code (header checks, body
    /// reading, decoding) becomes exactly one -32603 reply with status 500, and hyper keeps
    /// the connection for the next request. The private cause is only logged.
    async fn handle<B>(self: Arc<Self>, request: Request<B>) -> Response<HttpBody>
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        match AssertUnwindSafe(self.handle_unguarded(request))
            .catch_unwind()
            .await
        {
            Ok(response) => response,
            Err(panic) => {
                let cause = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                tracing::error!(panic = %cause, "HTTP host panicked while handling a request");
                refusal(Cause::Internal, None, "Internal error")
            }
        }
    }

    /// The checks before the body is read (steps 1–6 of the module docs); `Some` is the
    /// refusal.
    fn check_head(&self, head: &hyper::http::request::Parts) -> Option<Response<HttpBody>> {
        let config = &self.config;
        if let Some(path) = &config.path {
            if head.uri.path() != path {
                return Some(plain(StatusCode::NOT_FOUND));
            }
        }
        // Both the Host header and an absolute-form / HTTP/2 authority must pass when present.
        let uri_authority = head.uri.authority().map(|a| a.as_str());
        let host = head
            .headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .or(uri_authority);
        if !host_allowed(&config.hosts, host)
            || uri_authority.is_some_and(|a| !host_allowed(&config.hosts, Some(a)))
        {
            return Some(refusal(Cause::HostRejected, None, "host not allowed"));
        }
        if let Err(cause) = check_origin(&config.origins, &head.headers) {
            return Some(refusal(cause, None, "origin not allowed"));
        }
        if head.method != Method::POST {
            return Some(refusal(
                Cause::MethodNotAllowed,
                None,
                "only POST is allowed",
            ));
        }
        if !accepts_json_and_sse(&head.headers) {
            return Some(refusal(
                Cause::NotAcceptable,
                None,
                "Accept must list application/json and text/event-stream",
            ));
        }
        if !is_json_content_type(&head.headers) {
            return Some(refusal(
                Cause::UnsupportedMediaType,
                None,
                "Content-Type must be application/json",
            ));
        }
        if let Err(e) = check_protocol_header_size(&head.headers) {
            return Some(refusal(Cause::HeaderMismatch, None, &e.to_string()));
        }
        None
    }

    async fn handle_unguarded<B>(self: Arc<Self>, request: Request<B>) -> Response<HttpBody>
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        fault(fault_points::HTTP_CALL);
        let (parts, body) = request.into_parts();
        let mut body = std::pin::pin!(body);
        if let Some(refused) = self.check_head(&parts) {
            // Read what the client is still sending, so the refusal reaches it (below).
            drain(body.as_mut(), 0, self.config.body_read_timeout).await;
            return refused;
        }
        let limits = self.dispatch.ingress_limits();
        let read = read_capped(
            &parts.headers,
            body.as_mut(),
            limits.max_frame_bytes,
            self.config.body_read_timeout,
        )
        .await;
        let body = match read {
            Ok(bytes) => bytes,
            Err(cause) => {
                let message = match cause {
                    Cause::BodyTooLarge => format!(
                        "request body exceeds the {}-byte limit",
                        limits.max_frame_bytes
                    ),
                    Cause::BodyTimeout => "request body not received in time".to_owned(),
                    _ => "request body could not be read".to_owned(),
                };
                return refusal(cause, None, &message);
            }
        };
        fault(fault_points::HTTP_BODY);
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
        let mirrored = Mirrored::of(request.params.as_deref());
        let span = request_span(&request, &mirrored);
        fault(fault_points::HTTP_HEADERS);
        if let Err(e) = self.check_headers(&parts.headers, &caller, &request, &mirrored) {
            span.in_scope(|| tracing::debug!(error = %e, "header check failed"));
            return refusal(
                Cause::HeaderMismatch,
                Some(request.id.clone()),
                &e.to_string(),
            );
        }
        drop(mirrored);
        self.clone().respond(caller, request, span).await
    }

    /// The mirrored headers against the body (D15–D30). A method this revision removed that
    /// arrives without `MCP-Protocol-Version` (an initialise-era client's `initialize`) is not
    /// checked: the dispatcher answers it -32601 with the supported versions, as on stdio
    /// (B22), which tells such a client what to speak instead of a header complaint.
    fn check_headers(
        &self,
        headers: &HeaderMap,
        caller: &Caller,
        request: &RpcRequest,
        mirrored: &Mirrored<'_>,
    ) -> Result<(), HeaderError> {
        let method = request.method.as_str();
        if crate::wire::methods::is_removed(method) && !headers.contains_key(&PROTOCOL_VERSION_NAME)
        {
            return Ok(());
        }
        let params = match (method, mirrored.name()) {
            ("tools/call", Some(name)) => self.dispatch.published_param_headers(caller, name),
            _ => None,
        };
        headers::check_request_headers(&HyperHeaders(headers), method, mirrored, params.as_deref())
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

/// Most bytes of a refused body read and discarded before the refusal is sent: a client that
/// writes its whole body before reading (most do) would otherwise see the connection reset
/// under its write instead of the 413. Beyond this the host stops reading and closes.
pub const MAX_DRAIN_BYTES: u64 = 8 * 1024 * 1024;

/// Longest time spent discarding a refused body (see [`MAX_DRAIN_BYTES`]), so a slow sender
/// cannot keep a refused request open.
pub const MAX_DRAIN_TIME: Duration = Duration::from_secs(2);

/// The next frame of `body`: `Err(BodyTimeout)` when none arrives within `idle`, `Err
/// (InvalidRequest)` when the body fails (its error is dropped here, so it never lives across
/// an await).
async fn next_frame<B>(
    body: &mut Pin<&mut B>,
    idle: Duration,
) -> Result<Option<Frame<B::Data>>, Cause>
where
    B: Body,
{
    let mut poll = |cx: &mut Context<'_>| {
        body.as_mut()
            .poll_frame(cx)
            .map(|frame| frame.map(|f| f.map_err(|_| ())))
    };
    // The usual body is already buffered with the headers: take it without arming a timer.
    let ready = std::future::poll_fn(|cx| Poll::Ready(poll(cx))).await;
    let next = match ready {
        Poll::Ready(next) => next,
        Poll::Pending => tokio::time::timeout(idle, std::future::poll_fn(&mut poll))
            .await
            .map_err(|_| Cause::BodyTimeout)?,
    };
    match next {
        None => Ok(None),
        Some(Ok(frame)) => Ok(Some(frame)),
        Some(Err(())) => Err(Cause::InvalidRequest),
    }
}

/// Reads and discards the rest of a refused body, at most [`MAX_DRAIN_BYTES`] in all (counting
/// `already` bytes read) and for at most [`MAX_DRAIN_TIME`]; gives up early on a read error or
/// a pause longer than `idle`. A body that ends in time leaves the connection reusable.
async fn drain<B: Body>(mut body: Pin<&mut B>, already: u64, idle: Duration) {
    if body.is_end_stream() {
        return;
    }
    let declared = body.size_hint().exact();
    if declared.is_some_and(|len| already.saturating_add(len) > MAX_DRAIN_BYTES) {
        return; // the declared length alone is past the bound: close at once
    }
    let _ = tokio::time::timeout(MAX_DRAIN_TIME, async {
        let mut total = already;
        while let Ok(Some(frame)) = next_frame(&mut body, idle).await {
            if let Some(data) = frame.data_ref() {
                total = total.saturating_add(data.remaining() as u64);
                if total > MAX_DRAIN_BYTES {
                    return;
                }
            }
        }
    })
    .await;
}

/// Reads the body up to `limit` bytes, each frame within `idle` of the previous one. Over
/// the limit (declared or streamed) the rest is drained (see [`drain`]) and `BodyTooLarge`
/// returned; a stalled body is `BodyTimeout`.
async fn read_capped<B>(
    headers: &HeaderMap,
    mut body: Pin<&mut B>,
    limit: usize,
    idle: Duration,
) -> Result<Bytes, Cause>
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
            drain(body, 0, idle).await;
            return Err(Cause::BodyTooLarge);
        }
    }
    // The usual body arrives as one frame and is kept as is; only a split body is copied.
    let mut first: Option<Bytes> = None;
    let mut joined: Option<Vec<u8>> = None;
    let mut total = 0usize;
    while let Some(frame) = next_frame(&mut body, idle).await? {
        let Ok(mut data) = frame.into_data() else {
            continue; // trailers carry nothing for us
        };
        total = total.saturating_add(data.remaining());
        if total > limit {
            drain(body, total as u64, idle).await;
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
// Protocol headers (D15–D30, O38): the rules live in `wire::headers`

/// hyper's header map as the header checks read it; the standard names stay pre-parsed.
struct HyperHeaders<'h>(&'h HeaderMap);

impl HeaderLookup for HyperHeaders<'_> {
    fn lookup(&self, key: HeaderKey<'_>) -> Lookup<'_> {
        let mut values = match key {
            HeaderKey::ProtocolVersion => self.0.get_all(&PROTOCOL_VERSION_NAME),
            HeaderKey::Method => self.0.get_all(&METHOD_NAME),
            HeaderKey::Name => self.0.get_all(&NAME_NAME),
            HeaderKey::Other(name) => self.0.get_all(name),
        }
        .iter();
        match (values.next(), values.next()) {
            (None, _) => Lookup::Absent,
            (Some(v), None) => Lookup::One(v.as_bytes()),
            (Some(_), Some(_)) => Lookup::Repeated,
        }
    }
}

/// The protocol header bytes of a request: name plus value of every `mcp-*` header (O38).
pub fn protocol_header_bytes(headers: &HeaderMap) -> usize {
    headers::protocol_header_bytes(headers.iter().map(|(n, v)| (n.as_str(), v.as_bytes())))
}

/// Checks the 8 KiB bound on protocol headers (O38).
///
/// # Errors
/// [`HeaderError::TooLarge`] past the bound.
pub fn check_protocol_header_size(headers: &HeaderMap) -> Result<(), HeaderError> {
    headers::check_protocol_header_size(headers.iter().map(|(n, v)| (n.as_str(), v.as_bytes())))
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

fn request_span(request: &RpcRequest, probe: &Mirrored<'_>) -> tracing::Span {
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
    if let Some(v) = probe.traceparent() {
        span.record("traceparent", v);
    }
    if let Some(v) = probe.tracestate() {
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

/// The path [`serve`] answers when [`HttpConfig::path`] is `None` (D1; the conformance suite,
/// the examples and most clients use `/mcp`).
pub const DEFAULT_PATH: &str = "/mcp";

/// Default of [`ServeConfig::header_read_timeout`]: ample for any client on a real network,
/// short enough that connections which never finish their headers do not pile up.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Default of [`ServeConfig::idle_timeout`]: long enough for a client to reuse a connection
/// between bursts of calls, short enough that abandoned connections are reclaimed.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// Default of [`ServeConfig::max_connections`]: far above what one MCP deployment behind
/// [`serve`] needs, far below the file-descriptor limits of common systems.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

/// Most refused connections kept open at once while their 503 is written and the client's
/// request is read away (see [`REFUSAL_LINGER`]); past this a refused connection is closed
/// at once, so a connection flood costs no more than this many sockets beyond the limit.
pub const MAX_LINGERING_REFUSALS: usize = 64;

/// How long a refused connection is kept to write its 503 and read what the client sends, so
/// the client sees the refusal rather than a reset.
pub const REFUSAL_LINGER: Duration = Duration::from_secs(1);

/// Most bytes read and discarded from a refused connection (see [`REFUSAL_LINGER`]).
const MAX_REFUSAL_DISCARD: usize = 64 * 1024;

/// Settings of the accept loop ([`serve_with`]). A user who mounts [`McpHttp`] behind their
/// own server configures the equivalents there (see the module docs).
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// Time a connection may take to send a request's complete headers, from the moment the
    /// host starts waiting for them; past it the connection is closed without an answer (slow
    /// header senders, connections that never speak). HTTP/1.1 only: hyper also runs this
    /// timer while a kept-alive connection waits for its next request, so an idle HTTP/1.1
    /// connection closes after the shorter of this and [`ServeConfig::idle_timeout`].
    /// Default [`DEFAULT_HEADER_READ_TIMEOUT`].
    pub header_read_timeout: Duration,
    /// Time a connection may stay open with no request in flight (HTTP/1.1 keep-alive, HTTP/2)
    /// before it is closed gracefully. Default [`DEFAULT_IDLE_TIMEOUT`].
    pub idle_timeout: Duration,
    /// Most connections served at once. One more is answered `503 Service Unavailable` with a
    /// JSON-RPC error body (`-32603`, `"id": null`) and `Connection: close`, written as
    /// HTTP/1.1, and closed: the client can read why, and the served connections are not
    /// slowed. Default [`DEFAULT_MAX_CONNECTIONS`].
    pub max_connections: usize,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

/// Serves `service` on `listener` with [`ServeConfig::default`] until `shutdown` resolves; see
/// [`serve_with`].
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
/// let service = McpHttp::new(server.clone(), HttpConfig::default()); // answers on /mcp
/// let stop = async {
///     let _ = tokio::signal::ctrl_c().await;
///     // End listen streams and cancel calls first, then let connections drain.
///     server.shutdown(Duration::from_secs(5)).await;
/// };
/// serve(listener, service, stop).await?;
/// # Ok(())
/// # }
/// ```
///
/// # Errors
/// None today; the `Result` leaves room for listener failures that end the loop.
pub async fn serve<D: Dispatch>(
    listener: tokio::net::TcpListener,
    service: McpHttp<D>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    serve_with(listener, service, ServeConfig::default(), shutdown).await
}

/// Serves `service` on `listener` until `shutdown` resolves: one endpoint path
/// ([`HttpConfig::path`], or [`DEFAULT_PATH`] when that is `None`; every other path gets a
/// plain 404, D1), TCP_NODELAY on every accepted socket, HTTP/1.1 and HTTP/2, the time-outs
/// and connection limit of `config`, then a graceful close (no new connections or requests;
/// in-flight responses finish, so shut the protocol server down first to end listen streams).
///
/// # Errors
/// None today; the `Result` leaves room for listener failures that end the loop.
pub async fn serve_with<D: Dispatch>(
    listener: tokio::net::TcpListener,
    service: McpHttp<D>,
    config: ServeConfig,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
    use hyper_util::server::conn::auto::Builder;

    let path: Arc<str> = service
        .config()
        .path
        .as_deref()
        .unwrap_or(DEFAULT_PATH)
        .into();
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut connections = tokio::task::JoinSet::new();
    let mut refusals = tokio::task::JoinSet::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
            Some(_) = refusals.join_next(), if !refusals.is_empty() => continue,
        };
        let (stream, peer): (tokio::net::TcpStream, SocketAddr) = match accepted {
            Ok(pair) => pair,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        while connections.try_join_next().is_some() {}
        if connections.len() >= config.max_connections {
            tracing::warn!(%peer, limit = config.max_connections, "connection refused: at the limit");
            while refusals.try_join_next().is_some() {}
            if refusals.len() < MAX_LINGERING_REFUSALS {
                refusals.spawn(refuse_connection(stream));
            }
            continue;
        }
        if let Err(e) = prepare_accepted(&stream) {
            tracing::debug!(error = %e, %peer, "TCP_NODELAY not set");
        }
        let activity = Arc::new(Activity::new());
        let conn_service = ConnService {
            inner: service.inner.clone(),
            path: path.clone(),
            activity: activity.clone(),
        };
        let mut stop = stop_rx.clone();
        let (header_read_timeout, idle_timeout) = (config.header_read_timeout, config.idle_timeout);
        connections.spawn(async move {
            let mut builder = Builder::new(TokioExecutor::new());
            builder
                .http1()
                .timer(TokioTimer::new())
                .header_read_timeout(header_read_timeout);
            builder.http2().timer(TokioTimer::new());
            let connection = builder.serve_connection(TokioIo::new(stream), conn_service);
            let mut connection = std::pin::pin!(connection);
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(e) = result {
                        tracing::debug!(error = %e, %peer, "connection ended with an error");
                    }
                    return;
                }
                _ = stop.wait_for(|s| *s) => {}
                () = activity.idle_expired(idle_timeout) => {
                    tracing::debug!(%peer, "idle connection closed");
                }
            }
            connection.as_mut().graceful_shutdown();
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, %peer, "connection ended with an error");
            }
        });
    }
    drop(listener);
    refusals.abort_all();
    let _ = stop_tx.send(true);
    while connections.join_next().await.is_some() {}
    Ok(())
}

/// Answers a connection over the limit: a 503 with a JSON-RPC error (`"id": null`), then the
/// write side closed and what the client sends read away for [`REFUSAL_LINGER`], so its
/// pending request does not turn the close into a reset that hides the answer.
async fn refuse_connection(mut stream: tokio::net::TcpStream) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    let reply = codec::encode_error(
        None,
        Cause::Overloaded,
        "Server busy: too many connections",
        None,
        &EgressLimits::SERVER,
    );
    let body = reply.body.unwrap_or_default();
    let head = format!(
        "HTTP/1.1 {} Service Unavailable\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n",
        reply.status,
        body.len()
    );
    let _ = tokio::time::timeout(REFUSAL_LINGER, async {
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body.as_bytes()).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 4096];
        let mut discarded = 0;
        while discarded < MAX_REFUSAL_DISCARD {
            match stream.read(&mut sink).await? {
                0 => break,
                n => discarded += n,
            }
        }
        Ok::<_, std::io::Error>(())
    })
    .await;
}

/// Requests in flight on one connection and since when it has had none, for the idle
/// time-out. Nothing is signalled per request: the watchdog rechecks when its deadline comes.
struct Activity {
    state: Mutex<(usize, tokio::time::Instant)>,
}

impl Activity {
    fn new() -> Self {
        Activity {
            state: Mutex::new((0, tokio::time::Instant::now())),
        }
    }

    fn lock(&self) -> MutexGuard<'_, (usize, tokio::time::Instant)> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn begin(self: &Arc<Self>) -> Busy {
        self.lock().0 += 1;
        Busy(self.clone())
    }

    /// Resolves once the connection has had no request in flight for `idle`. While requests
    /// run it wakes once per `idle` to look again.
    async fn idle_expired(&self, idle: Duration) {
        let mut deadline = tokio::time::Instant::now() + idle;
        loop {
            tokio::time::sleep_until(deadline).await;
            let (in_flight, since) = *self.lock();
            if in_flight > 0 {
                deadline = tokio::time::Instant::now() + idle;
            } else if since + idle <= tokio::time::Instant::now() {
                return;
            } else {
                deadline = since + idle;
            }
        }
    }
}

/// One request in flight, from the service call until its response body is done or dropped.
struct Busy(Arc<Activity>);

impl Drop for Busy {
    fn drop(&mut self) {
        let mut s = self.0.lock();
        s.0 = s.0.saturating_sub(1);
        if s.0 == 0 {
            s.1 = tokio::time::Instant::now();
        }
    }
}

/// The per-connection service of [`serve_with`]: the path check and activity tracking around
/// the host.
struct ConnService<D> {
    inner: Arc<Inner<D>>,
    path: Arc<str>,
    activity: Arc<Activity>,
}

/// A response body that keeps its request counted as in flight until it is done.
struct TrackedBody {
    body: HttpBody,
    _busy: Busy,
}

impl Body for TrackedBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

impl<D: Dispatch> hyper::service::Service<Request<hyper::body::Incoming>> for ConnService<D> {
    type Response = Response<TrackedBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<TrackedBody>, Infallible>> + Send>>;

    fn call(&self, request: Request<hyper::body::Incoming>) -> Self::Future {
        let busy = self.activity.begin();
        if request.uri().path() != &*self.path {
            let response = plain(StatusCode::NOT_FOUND);
            return Box::pin(std::future::ready(Ok(
                response.map(|body| TrackedBody { body, _busy: busy })
            )));
        }
        let inner = self.inner.clone();
        Box::pin(async move {
            let response = inner.handle(request).await;
            Ok(response.map(|body| TrackedBody { body, _busy: busy }))
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Fault points (tests only; see `crate::server::fault`)

/// Where the HTTP host itself can be made to panic (names a test arms with
/// `server::fault::arm`).
pub mod fault_points {
    /// At the service entry, before anything of the request is read.
    pub const HTTP_CALL: &str = "http-call";
    /// After the body was read, before it is decoded.
    pub const HTTP_BODY: &str = "http-body";
    /// Before the mirrored headers are checked against the body.
    pub const HTTP_HEADERS: &str = "http-headers";
}

/// The host's fault hook: panics when a test armed `point` (nothing outside test builds).
#[inline(always)]
fn fault(point: &'static str) {
    crate::server::fault::point(point);
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
