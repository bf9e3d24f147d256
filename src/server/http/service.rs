//! The service: one HTTP request through the head checks, the capped body read, the codec,
//! the mirrored-header check and the dispatch, to a JSON or SSE response (steps 1–10 of the
//! module docs).

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::FutureExt as _;
use hyper::body::Body;
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use tracing::Instrument as _;

use crate::codec;
use crate::core::{Caller, CancelToken};
use crate::server::outbox::Outbox;
use crate::wire::errors::Cause;
use crate::wire::headers::{self, Mirrored, ParamHeader};
use crate::wire::jsonrpc::{Message, Request as RpcRequest};

use super::body::{drain, read_capped};
use super::cors;
use super::guards::{forbidden, Forbidden, HyperHeaders, PROTOCOL_VERSION_NAME};
use super::response::{
    internal_error_line, json_response, plain, refusal, rejected, BodyKind, CancelGuard, EndGuard,
    First, Head, NoReply, Shared, SseBody,
};
use super::*;

/// The Streamable HTTP endpoint as a service; cheap to clone.
pub struct McpHttp<D> {
    pub(super) inner: Arc<Inner<D>>,
}

pub(super) struct Inner<D> {
    dispatch: D,
    config: HttpConfig,
    /// The caller of requests without a `Caller` extension; immutable, so one is shared.
    anonymous: Caller,
    /// One permit per open `subscriptions/listen` stream ([`HttpConfig::max_listen_streams`]).
    listen_slots: Arc<tokio::sync::Semaphore>,
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
        for origin in config.cors_conflicts() {
            tracing::warn!(
                target: "strict_mcp::http",
                origin = %origin.escape_debug(),
                "HttpConfig::cors_origins lists an origin HttpConfig::origins refuses: browsers \
                 there get 403; allow it in HttpConfig::origins too"
            );
        }
        McpHttp {
            inner: Arc::new(Inner {
                listen_slots: Arc::new(tokio::sync::Semaphore::new(
                    config
                        .max_listen_streams
                        .min(tokio::sync::Semaphore::MAX_PERMITS),
                )),
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
    pub(super) async fn handle<B>(self: Arc<Self>, request: Request<B>) -> Response<HttpBody>
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let cors = cors::served_origin(&self.config, request.headers());
        let mut response = self.handle_guarded(request).await;
        if let Some(origin) = cors {
            cors::expose(&mut response, origin);
        }
        response
    }

    /// [`Inner::handle`] without the CORS headers.
    async fn handle_guarded<B>(self: Arc<Self>, request: Request<B>) -> Response<HttpBody>
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
            let check = if host.is_none() {
                Forbidden::HostMissing
            } else {
                Forbidden::Host
            };
            return Some(forbidden(check, host));
        }
        if check_origin(&config.origins, &head.headers).is_err() {
            let origin = head
                .headers
                .get(header::ORIGIN)
                .and_then(|o| o.to_str().ok());
            return Some(forbidden(Forbidden::Origin, origin));
        }
        if head.method == Method::OPTIONS {
            #[cfg(feature = "legacy")]
            let legacy_methods = self.dispatch.legacy_server().is_some();
            #[cfg(not(feature = "legacy"))]
            let legacy_methods = false;
            if let Some(answer) = cors::preflight(config, &head.headers, legacy_methods) {
                return Some(answer);
            }
        }
        #[cfg(feature = "legacy")]
        if head.method != Method::POST {
            if let Some(answer) = legacy::other_method(self.dispatch.legacy_server(), head, config)
            {
                return Some(answer);
            }
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

    /// Steps 1–10 of the module docs for one request: the head checks, the capped body read,
    /// the codec, then the dispatch (which checks the mirrored headers on its own read of the
    /// params) and the response.
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
        // Only the headers and the caller are needed from here on. The method and the URI
        // are slices of hyper's read buffer: dropped now, so that a long-lived request (a
        // listen stream) holds none of that buffer once the header check has run.
        let hyper::http::request::Parts {
            headers,
            mut extensions,
            ..
        } = { parts };
        let caller = extensions
            .remove::<Caller>()
            .unwrap_or_else(|| self.anonymous.clone());
        drop(extensions);
        let limits = self.dispatch.ingress_limits();
        let body = match self.read_body(&headers, body, &limits).await {
            Ok(bytes) => bytes,
            Err(refused) => return refused,
        };
        fault(fault_points::HTTP_BODY);
        let message = match codec::decode(&body, &limits) {
            Ok(message) => message,
            Err(rejection) => {
                // A legacy session's answer to a request the server sent it (the codec's one
                // exception, on the legacy path only).
                #[cfg(feature = "legacy")]
                if let Some(answer) = legacy::client_response(
                    self.dispatch.legacy_server(),
                    &headers,
                    &caller,
                    &body,
                    &rejection,
                    &limits,
                ) {
                    return answer;
                }
                return rejected(&rejection);
            }
        };
        drop(body);
        // Legacy Streamable HTTP (feature `legacy`): a session's message is answered or
        // served here; everything else continues on the modern path unchanged.
        #[cfg(feature = "legacy")]
        let message = match legacy::post(self.dispatch.legacy_server(), &headers, &caller, message)
        {
            legacy::Post::Modern(message) => message,
            legacy::Post::Answer(answer) => return legacy::response(answer),
            legacy::Post::Serve(request, call) => {
                // The initialise era has no mirrored headers to check (B23); the interaction
                // loop serves the request on the legacy session's server.
                let span = request_span(&request);
                let Some(server) = self.dispatch.legacy_server().cloned() else {
                    return refusal(Cause::Internal, Some(request.id), "Internal error");
                };
                let id = request.id.clone();
                return self
                    .clone()
                    .respond(id, span, None, move |_, outbox, cancel| {
                        Box::pin(call.run(server, caller, request, outbox, cancel))
                    })
                    .await;
            }
        };
        let request = match self.accept_message(message, &caller).await {
            Ok(request) => request,
            Err(answered) => return answered,
        };
        let slot = match self.listen_slot(&request) {
            Ok(slot) => slot,
            Err(ListenStreamsFull) => return listen_refusal(&request),
        };
        let span = request_span(&request);
        fault(fault_points::HTTP_HEADERS);
        let check = header_check(headers, span.clone());
        self.clone()
            .respond(
                request.id.clone(),
                span,
                slot,
                move |this, outbox, cancel| {
                    this.dispatch
                        .dispatch_request(caller, request, check, outbox, cancel)
                },
            )
            .await
    }

    /// A `subscriptions/listen` request takes one of [`HttpConfig::max_listen_streams`]
    /// permits, held until its dispatch ends (the stream closed by either side); with none
    /// left it is refused ([`listen_refusal`]). Other requests take none.
    fn listen_slot(
        &self,
        request: &RpcRequest,
    ) -> Result<Option<tokio::sync::OwnedSemaphorePermit>, ListenStreamsFull> {
        if request.method != crate::wire::methods::LISTEN {
            return Ok(None);
        }
        match self.listen_slots.clone().try_acquire_owned() {
            Ok(permit) => Ok(Some(permit)),
            Err(_) => {
                tracing::warn!(
                    limit = self.config.max_listen_streams,
                    "listen stream refused: at the limit"
                );
                Err(ListenStreamsFull)
            }
        }
    }

    /// The body, read within the frame cap and the read time-out; `Err` is the refusal
    /// (413, 408, 400).
    async fn read_body<B>(
        &self,
        headers: &HeaderMap,
        body: Pin<&mut B>,
        limits: &codec::IngressLimits,
    ) -> Result<hyper::body::Bytes, Response<HttpBody>>
    where
        B: Body,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let read = read_capped(
            headers,
            body,
            limits.max_frame_bytes,
            self.config.body_read_timeout,
        )
        .await;
        read.map_err(|cause| {
            let message = match cause {
                Cause::BodyTooLarge => format!(
                    "request body exceeds the {}-byte limit",
                    limits.max_frame_bytes
                ),
                Cause::BodyTimeout => "request body not received in time".to_owned(),
                _ => "request body could not be read".to_owned(),
            };
            refusal(cause, None, &message)
        })
    }

    /// A decoded message: a request goes on; a notification is dispatched here and answered
    /// 202. `Err` is the response already decided.
    async fn accept_message(
        &self,
        message: Message,
        caller: &Caller,
    ) -> Result<RpcRequest, Response<HttpBody>> {
        match message {
            Message::Request(request) => Ok(request),
            Message::Notification(notification) => {
                let outbox: Arc<dyn Outbox> = Arc::new(NoReply);
                self.dispatch
                    .dispatch(
                        caller.clone(),
                        Message::Notification(notification),
                        outbox,
                        CancelToken::new(),
                    )
                    .await;
                Err(plain(StatusCode::ACCEPTED))
            }
            // The server-role codec refuses responses; kept total for safety.
            Message::Response(_) => {
                Err(refusal(Cause::InvalidRequest, None, "unexpected response"))
            }
        }
    }

    /// Dispatches the request as its own task and answers with its first output: the reply as
    /// JSON, or an SSE stream once a notification (or `stream_after`'s silence) comes first.
    async fn respond(
        self: Arc<Self>,
        id: crate::wire::jsonrpc::RequestId,
        span: tracing::Span,
        listen_slot: Option<tokio::sync::OwnedSemaphorePermit>,
        work: impl FnOnce(
            &Self,
            Arc<dyn Outbox>,
            CancelToken,
        ) -> Pin<Box<dyn Future<Output = ()> + Send + 'static>>,
    ) -> Response<HttpBody> {
        let config = &self.config;
        let cancel = CancelToken::new();
        let shared = Arc::new(Shared::new(
            cancel.clone(),
            config.max_queued_notifications.max(1),
        ));
        let mut guard = CancelGuard {
            shared: shared.clone(),
            armed: true,
        };
        let outbox: Arc<dyn Outbox> = shared.clone();
        let work = work(&self, outbox, cancel);
        spawn_dispatch(work, EndGuard(shared.clone()), listen_slot, span);
        let head = Head {
            shared: &shared,
            stream_after: config.stream_after,
            deadline: None,
        };
        match head.await {
            First::Orphaned => {
                guard.armed = false;
                tracing::error!("dispatch ended without a final reply");
                json_response(Cause::Internal.http_status(), internal_error_line(&id))
            }
            First::Reply(reply) => {
                guard.armed = false;
                json_response(reply.status, reply.line)
            }
            First::Stream => sse_response(SseBody {
                shared,
                guard,
                orphan_line: internal_error_line(&id),
                keep_alive: tokio::time::interval_at(
                    tokio::time::Instant::now() + config.keep_alive,
                    config.keep_alive,
                ),
                done: false,
            }),
        }
    }
}

/// Runs the dispatch in the request's span: its first poll inline, in the response future, and
/// only a dispatch still pending after it (a handler that waits, a listen stream) as a task of
/// its own. A `tools/call` whose handler answers at once (the common case) so costs no task,
/// no scheduling and no wake-up of the connection task (issue #23: −4.4 k instructions per
/// call on the product host, `bench/README.md`, session 11). A panic in the first poll ends
/// the dispatch like a panic in its task: `ended` is dropped without a reply, so the client
/// gets the host's internal error.
fn spawn_dispatch(
    work: Pin<Box<dyn Future<Output = ()> + Send + 'static>>,
    ended: EndGuard,
    listen_slot: Option<tokio::sync::OwnedSemaphorePermit>,
    span: tracing::Span,
) {
    let mut work = work.instrument(span);
    let waker = std::task::Waker::noop();
    let first = std::panic::catch_unwind(AssertUnwindSafe(|| {
        Pin::new(&mut work).poll(&mut Context::from_waker(waker))
    }));
    match first {
        Ok(Poll::Pending) => {
            tokio::spawn(async move {
                let _ended = ended;
                let _listen_slot = listen_slot;
                work.await;
            });
        }
        Ok(Poll::Ready(())) => {}
        Err(_) => tracing::error!("dispatch panicked on its first poll"),
    }
}

/// The message of the refusal of a listen stream over [`HttpConfig::max_listen_streams`].
const LISTEN_STREAMS_BUSY: &str = "Server busy: too many listen streams";

/// Every listen-stream permit is taken.
struct ListenStreamsFull;

/// The refusal of a listen stream over the cap: 503 / -32603 with its id and `Retry-After: 1`.
fn listen_refusal(request: &RpcRequest) -> Response<HttpBody> {
    let mut refused = refusal(
        Cause::Overloaded,
        Some(request.id.clone()),
        LISTEN_STREAMS_BUSY,
    );
    refused
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    refused
}

/// The response of a request answered as an event stream.
pub(super) fn sse_response(body: SseBody) -> Response<HttpBody> {
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

/// The span name per the OpenTelemetry MCP conventions: `{method} {target}` when the request
/// names a tool or prompt, else the method.
pub fn span_name(method: &str, target: Option<&str>) -> String {
    match target {
        Some(t) => format!("{method} {t}"),
        None => method.to_owned(),
    }
}

/// The request's span, opened before dispatch; what the params say is recorded by
/// [`record_params`] when the header check reads them.
fn request_span(request: &RpcRequest) -> tracing::Span {
    tracing::info_span!(
        "mcp.server.request",
        otel.name = tracing::field::Empty,
        otel.kind = "server",
        mcp.method.name = %request.method,
        mcp.request.id = %request.id.token(),
        mcp.protocol.version = tracing::field::Empty,
        gen_ai.tool.name = tracing::field::Empty,
        gen_ai.prompt.name = tracing::field::Empty,
        traceparent = tracing::field::Empty,
        tracestate = tracing::field::Empty,
    )
}

/// Records the span fields the params carry (name, protocol version, trace context). Nothing
/// to do when no subscriber takes the span: the span name is not even formatted (it was, on
/// every request: ≈ 1 k instructions of `format!` per `tools/call`, issue #23).
fn record_params(span: &tracing::Span, request: &RpcRequest, probe: &Mirrored<'_>) {
    if span.is_disabled() {
        return;
    }
    let target = match request.method.as_str() {
        "tools/call" | "prompts/get" => probe.name(),
        _ => None,
    };
    span.record("otel.name", span_name(&request.method, target).as_str());
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
}

/// The header check the dispatcher runs on its own read of the params: records the span's
/// fields, then checks the mirrored headers against the body.
fn header_check(headers: HeaderMap, span: tracing::Span) -> HeaderCheck {
    HeaderCheck(Box::new(move |request, mirrored, annotations| {
        record_params(&span, request, mirrored);
        let checked = check_headers(&headers, request, mirrored, annotations);
        if let Err(e) = &checked {
            span.in_scope(|| tracing::debug!(error = %e, "header check failed"));
        }
        checked
    }))
}

/// The mirrored headers against the body. A method this revision removed that
/// arrives without `MCP-Protocol-Version` (an initialise-era client's `initialize`) is not
/// checked: the dispatcher answers it -32601 with the supported versions, as on stdio,
/// which tells such a client what to speak instead of a header complaint.
fn check_headers(
    headers: &HeaderMap,
    request: &RpcRequest,
    mirrored: &Mirrored<'_>,
    annotations: Option<&[ParamHeader]>,
) -> Result<(), HeaderError> {
    let method = request.method.as_str();
    if crate::wire::methods::is_removed(method) && !headers.contains_key(&PROTOCOL_VERSION_NAME) {
        return Ok(());
    }
    headers::check_request_headers(&HyperHeaders(headers), method, mirrored, annotations)
}

// ---------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;

    /// Operability: every accepted socket gets TCP_NODELAY (the accept loop calls this).
    #[test]
    fn span_names_follow_otel_mcp_conventions() {
        assert_eq!(
            span_name("tools/call", Some("get_weather")),
            "tools/call get_weather"
        );
        assert_eq!(span_name("tools/list", None), "tools/list");
    }
}
