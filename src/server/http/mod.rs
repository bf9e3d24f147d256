//! Stateless Streamable HTTP host (revision 2026-07-28) on hyper.
//!
//! One endpoint, POST only, no sessions. [`McpHttp`] is both a `tower::Service` and a hyper
//! `Service`, so an application mounts it behind its own router, authentication, TLS and
//! listener; [`serve`] is a small accept loop for the common loopback case.
//!
//! # What happens to one request, in order
//!
//! 1. `Host` / authority against the allow-list ([`HttpConfig::hosts`], DNS rebinding) → 403
//!    with a one-line `text/plain` body saying the host is not served (or that none was
//!    named), and an `info` event (target `strict_mcp::http`, `reason` `host_not_allowed` or
//!    `host_missing`, the refused value) so the operator sees which allow-list to extend.
//! 2. `Origin`, when present, against the allow-list ([`HttpConfig::origins`]) → 403 with a
//!    one-line body and an `info` event (`reason="origin_not_allowed"`). A request **without**
//!    `Origin` is allowed: browsers always send it on cross-origin POSTs, so its absence means a
//!    non-browser client, which the application's authentication must cover.
//!    With [`HttpConfig::cors_origins`] set, an `OPTIONS` preflight from a listed origin the
//!    Origin check admits is answered here (204, [`cors`]), and every later answer to such an
//!    origin carries `Access-Control-Allow-Origin`.
//! 3. Method: anything but POST → 405 with `Allow: POST`. `Mcp-Session-Id` and
//!    `Last-Event-ID` are ignored; no session id is ever minted and SSE events carry no ids.
//! 4. `Accept` must list both `application/json` and `text/event-stream` by name (wildcards
//!    do not count; `q=0` removes an entry) → 406 with a JSON-RPC error.
//! 5. `Content-Type` must be `application/json` → 415 with a JSON-RPC error.
//! 6. Protocol headers (every header whose name starts with `mcp-`; the size counts name bytes
//!    plus value bytes) together at most 8 KiB → 400 / -32020 with `"id": null`, before the
//!    body is read.
//! 7. The body is capped while it is read (2 MiB by default, `ServerOptions::max_request_bytes`): a larger `Content-Length` or a longer
//!    stream → 413 with a JSON-RPC error; nothing beyond the cap is buffered. A body that
//!    pauses longer than [`HttpConfig::body_read_timeout`] → 408 with a JSON-RPC error. The
//!    rest of a refused body is read and discarded (up to [`MAX_DRAIN_BYTES`] within
//!    [`MAX_DRAIN_TIME`]), so a client that writes its whole body before reading sees the
//!    answer instead of a reset; the refusals of steps 1–6 drain the same way.
//! 8. The codec decodes the body; a rejection is answered with its JSON-RPC error and the status
//!    from [`Cause`](crate::wire::errors::Cause) (never `text/plain`).
//! 9. A notification is handed to the dispatcher and answered 202 with an empty body. The
//!    revision defines no header rules for notification POSTs, so none are enforced.
//! 10. A request has its mirrored headers checked against the body (rules in
//!     [`crate::wire::headers`], a tool's `x-mcp-header` annotations as parsed when it was
//!     registered) → 400 / -32020 with the request id. A method this revision removed that
//!     arrives without `MCP-Protocol-Version` (an initialise-era `initialize`) skips the check
//!     and reaches the dispatcher's -32601 with the supported versions. Then it is
//!     dispatched with the caller taken from the request's
//!     extensions (absent → anonymous). Nothing is carried from one request to the next on a
//!     connection.
//!
//! # Response kind
//!
//! The first thing the request's [`Outbox`] receives decides: the final reply → one JSON body
//! with the reply's status; a notification → an SSE stream (`text/event-stream`,
//! `Cache-Control: no-cache`, `X-Accel-Buffering: no`) that carries the notifications and ends
//! with the final response. A call that stays silent for
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
//! browser origins ([`OriginPolicy::Allow`]) and put authentication in front.
//! hyper itself answers malformed HTTP (bad request line, oversized header block) before this
//! service runs; those answers are hyper's, not JSON-RPC.
//!
//! # One endpoint path
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
//! connections (one more is answered 503 and closed, after reading away what its client sends
//! for [`ServeConfig::refusal_linger`]). The body read time-out is the service's
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
//! the request's [`CancelToken`] fires and nothing further is sent; a later `notify`
//! returns `false`. A stream whose client does not read fast enough to keep the queue under
//! [`HttpConfig::max_queued_notifications`] is ended the same way (without a final response,
//! so the client knows it missed something) rather than dropping notifications silently.

mod accept;
mod body;
pub mod cors;
mod guards;
#[cfg(feature = "legacy")]
mod legacy;
mod response;
mod service;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use crate::codec::IngressLimits;
use crate::core::{Caller, CancelToken, Registry};
use crate::server::outbox::Outbox;
use crate::wire::headers::{Mirrored, ParamHeader};
use crate::wire::jsonrpc::{Message, Request as RpcRequest};

pub use crate::wire::headers::{
    decode_header_value, param_matches, HeaderError, BASE64_CLOSE, BASE64_OPEN, METHOD_HEADER,
    NAME_HEADER, PARAM_HEADER_PREFIX, PROTOCOL_HEADER_PREFIX, PROTOCOL_VERSION_HEADER,
};
pub use accept::{
    serve, serve_with, Endpoint, OnPaths, ServeConfig, DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_HTTP2,
    DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_REQUESTS_IN_FLIGHT, DEFAULT_PATH,
    MAX_LINGERING_REFUSALS, MAX_REFUSAL_LINGER, REFUSAL_LINGER,
};
pub use body::{MAX_DRAIN_BYTES, MAX_DRAIN_TIME};
pub use cors::{CORS_ALLOWED_HEADERS, CORS_EXPOSED_HEADERS, CORS_MAX_AGE_SECONDS};
pub use guards::{
    accepts_json_and_sse, check_origin, check_protocol_header_size, host_allowed,
    is_json_content_type, protocol_header_bytes,
};
pub use response::{HttpBody, SSE_KEEP_ALIVE};
pub use service::{span_name, McpHttp};

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
    /// in `tools/list`, which the host enforces; parsed once when the tool was
    /// registered. `None` when no such tool is published (unknown, hidden, or published only
    /// behind a wrapper such as compact mode's `call_tool`, whose own schema carries none).
    fn published_param_headers(&self, caller: &Caller, name: &str) -> Option<Arc<[ParamHeader]>> {
        self.registry().param_headers(caller, name).ok()
    }
    /// The server whose legacy sessions this host serves (feature `legacy`), `None` without
    /// the switch: then nothing of the initialise era reaches this host.
    #[cfg(feature = "legacy")]
    fn legacy_server(&self) -> Option<&crate::server::Server> {
        None
    }
    /// Handles one decoded request whose mirrored headers `check` must accept first;
    /// a refusal is the request's one reply (400, -32600). The default reads the
    /// params for the check and asks [`Dispatch::published_param_headers`] before
    /// [`Dispatch::dispatch`]; [`crate::server::Server`] runs the check on its own one parse
    /// of the params, with the policy asked once per request.
    fn dispatch_request(
        &self,
        caller: Caller,
        request: RpcRequest,
        check: HeaderCheck,
        outbox: Arc<dyn Outbox>,
        cancel: CancelToken,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'static>> {
        let mirrored = Mirrored::of(request.params.as_deref());
        let annotations = match (request.method.as_str(), mirrored.name()) {
            ("tools/call", Some(name)) => self.published_param_headers(&caller, name),
            _ => None,
        };
        if let Err(e) = (check.0)(&request, &mirrored, annotations.as_deref()) {
            outbox.finish(crate::server::encode::error_reply(
                &request.id,
                crate::server::Cause::HeaderMismatch,
                &e.to_string(),
                None,
            ));
            return Box::pin(async {});
        }
        drop(mirrored);
        outbox.admitted();
        self.dispatch(caller, Message::Request(request), outbox, cancel)
    }
}

/// The HTTP host's check of one request's mirrored headers against its params,
/// handed to [`Dispatch::dispatch_request`] so the check runs on the dispatcher's own read
/// of the params. Built by the host only.
pub struct HeaderCheck(crate::server::context::HostCheck);

impl std::fmt::Debug for HeaderCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeaderCheck").finish_non_exhaustive()
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

    fn dispatch_request(
        &self,
        caller: Caller,
        request: RpcRequest,
        check: HeaderCheck,
        outbox: Arc<dyn Outbox>,
        cancel: CancelToken,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'static>> {
        let server = self.clone();
        Box::pin(async move {
            server
                .serve_checked(caller, request, outbox, cancel, check.0)
                .await;
        })
    }

    fn ingress_limits(&self) -> IngressLimits {
        crate::server::Server::ingress_limits(self)
    }

    fn registry(&self) -> Arc<Registry> {
        crate::server::Server::registry(self)
    }

    fn published_param_headers(&self, caller: &Caller, name: &str) -> Option<Arc<[ParamHeader]>> {
        crate::server::Server::published_param_headers(self, caller, name)
    }

    #[cfg(feature = "legacy")]
    fn legacy_server(&self) -> Option<&crate::server::Server> {
        self.legacy_era().then_some(self)
    }
}

/// Which `Host` values are accepted.
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

/// Which present `Origin` values are accepted. Requests without `Origin` are allowed.
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
    /// Most `subscriptions/listen` streams this host holds open at once. One more is answered
    /// `503` with `Retry-After: 1` and a JSON-RPC error carrying its id (`-32603`, "Server
    /// busy: too many listen streams") before it reaches the dispatcher, so the open streams
    /// and every other request are unaffected. Default [`DEFAULT_MAX_LISTEN_STREAMS`].
    pub max_listen_streams: usize,
    /// Browser origins (`scheme://host[:port]`, compared case-insensitively) answered with CORS
    /// headers and preflights, for browser-based MCP hosts on another origin. Empty (the
    /// default) sends no CORS header. Each must also pass [`HttpConfig::origins`]; see the
    /// `cors` module docs and [`HttpConfig::cors_conflicts`].
    pub cors_origins: Vec<String>,
}

/// Default of [`HttpConfig::max_listen_streams`]: one stream per client is the usual shape,
/// so as many as the accept loop's default connection cap ([`DEFAULT_MAX_CONNECTIONS`]);
/// a quarter of [`DEFAULT_MAX_REQUESTS_IN_FLIGHT`], so long-lived streams, which count as
/// requests in flight until they end, can never take every slot from ordinary calls. Each
/// stream holds a task, an SSE body and up to [`HttpConfig::max_queued_notifications`]
/// queued events, so the cap also bounds that memory.
pub const DEFAULT_MAX_LISTEN_STREAMS: usize = 1024;

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
            max_listen_streams: DEFAULT_MAX_LISTEN_STREAMS,
            cors_origins: Vec::new(),
        }
    }
}

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

    /// #23: the host's check (D26–D28's header rules) is dropped once it has run, not kept
    /// for the request's life. An HTTP host's check holds the request's header map, whose values are slices of hyper's
    /// read buffer; `Server`'s dispatch kept it while it served the request, so a long call
    /// or an idle listen stream kept it (≈ 0.8 KB and five blocks of
    /// heap per stream under dhat, 1,000 streams).
    #[tokio::test]
    async fn issue23_the_host_check_is_dropped_once_it_has_run() {
        #[derive(serde::Deserialize, schemars::JsonSchema)]
        struct Nothing {}
        #[derive(serde::Serialize, schemars::JsonSchema)]
        struct Done {
            done: bool,
        }
        #[derive(Default)]
        struct Replies(std::sync::Mutex<Vec<crate::server::Reply>>);
        impl Outbox for Replies {
            fn notify(&self, _line: String) -> bool {
                true
            }
            fn finish(&self, reply: crate::server::Reply) {
                self.0.lock().unwrap().push(reply);
            }
        }
        type Gate = std::sync::Mutex<Option<tokio::sync::oneshot::Sender<()>>>;
        type Wait = std::sync::Mutex<Option<tokio::sync::oneshot::Receiver<()>>>;
        let (started_tx, started_rx) = tokio::sync::oneshot::channel();
        let (release_tx, release_rx) = tokio::sync::oneshot::channel();
        let started: Arc<Gate> = Arc::new(std::sync::Mutex::new(Some(started_tx)));
        let release: Arc<Wait> = Arc::new(std::sync::Mutex::new(Some(release_rx)));
        let registry = crate::core::RegistryBuilder::new()
            .tool(crate::core::ToolDef::typed(
                "hold",
                move |_inv: crate::core::Invocation, _args: Nothing| {
                    let started = started.lock().unwrap().take();
                    let release = release.lock().unwrap().take();
                    async move {
                        if let Some(started) = started {
                            let _ = started.send(());
                        }
                        if let Some(release) = release {
                            let _ = release.await;
                        }
                        Ok(Done { done: true })
                    }
                },
            ))
            .build()
            .unwrap();
        let server = crate::server::Server::new(
            registry,
            crate::server::ServerOptions::new().mode("direct"),
        )
        .unwrap();
        let line = concat!(
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"hold","#,
            r#""arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","#,
            r#""io.modelcontextprotocol/clientCapabilities":{}}}}"#
        );
        let crate::wire::jsonrpc::Message::Request(request) =
            crate::codec::decode(line.as_bytes(), &server.ingress_limits()).unwrap()
        else {
            panic!("a request");
        };
        let probe = Arc::new(());
        let held = Arc::clone(&probe);
        let check: crate::server::context::HostCheck = Box::new(move |_, _, _| {
            let _ = &held;
            Ok(())
        });
        let replies = Arc::new(Replies::default());
        let outbox: Arc<dyn Outbox> = replies.clone();
        let served = server.dispatch_request(
            Caller::new("c"),
            request,
            HeaderCheck(check),
            outbox,
            CancelToken::new(),
        );
        let watch = async {
            started_rx.await.unwrap();
            // The tool runs: the check has run and must be gone.
            let count = Arc::strong_count(&probe);
            release_tx.send(()).unwrap();
            count
        };
        let ((), count_while_running) =
            tokio::time::timeout(std::time::Duration::from_secs(10), async {
                tokio::join!(served, watch)
            })
            .await
            .unwrap_or_else(|_| panic!("no progress: {:?}", replies.0.lock().unwrap()));
        assert_eq!(count_while_running, 1, "the check outlived its run");
        let replies = replies.0.lock().unwrap();
        assert_eq!(replies.len(), 1);
        assert!(
            replies[0]
                .line
                .contains(r#""structuredContent":{"value":{"done":true}}"#),
            "{}",
            replies[0].line
        );
    }
}
