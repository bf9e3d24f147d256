//! The client's Streamable HTTP transport (stateless revision): one POST per message.
//!
//! Every request or notification is its own `POST` to the base URL over pooled HTTP/1.1
//! keep-alive connections, with `Accept: application/json, text/event-stream` and the
//! protocol headers of [`crate::wire::headers::required_headers`]. The answer is one
//! JSON body or a request-scoped SSE stream; a notification is acknowledged `202`.
//!
//! - Response bodies are bounded: a JSON body and each SSE event by
//!   [`MAX_CLIENT_INGRESS_FRAME_BYTES`]; an SSE line by [`MAX_SSE_LINE_BYTES`].
//! - Cancellation closes the request's response stream: the core's
//!   `notifications/cancelled` is turned into closing that stream and is never posted; a broken
//!   stream is never resumed.
//! - A [`Decorator`] adds auth or trace headers but can never set the protocol headers,
//!   `Host`, the content headers or anything the transport owns.
//! - Dialing is SSRF-safe ([`dial`]): every new connection resolves the host, checks each
//!   address against the [`AddressPolicy`] fixed from the base URL, and only then connects.
//! - Redirects are not followed by default: a `3xx` answer is [`HttpError::Redirect`].
//!   [`HttpTransport::follow_redirects`] opts into `307`/`308` to the same origin only (the
//!   method and body are kept), at most [`MAX_REDIRECT_HOPS`] hops.
//! - `https://` through rustls ([`tls`], feature `https`).
//! - Diagnostics never carry header values (no `Authorization` or `Cookie`), URL credentials
//!   (a URL with userinfo is refused) nor bodies.
//! - The `x-mcp-header` annotations are read by this transport from the
//!   `tools/list` results it carries, since the core hands the transport messages only.
#![forbid(unsafe_code)]

pub use crate::client::http_error::{
    valid_dpop_nonce, HttpError, MAX_DPOP_NONCE_BYTES, MAX_WWW_AUTHENTICATE_BYTES,
};

mod decorate;
/// The SSRF-safe dial policy, which lives below both roles in [`crate::net::dial`].
pub use crate::net::dial;
mod sse;
/// The rustls setup, shared with [`crate::net::fetch`] in [`crate::net::tls`].
#[cfg(feature = "https")]
pub use crate::net::tls;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE, LOCATION, WWW_AUTHENTICATE};
use hyper::{Method as HttpMethod, Request as HttpRequest, StatusCode, Uri};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;
use tokio::sync::{mpsc, watch};

use crate::client::transport::{BoxFuture, Inbound, Refusal, Transport, TransportError};
use crate::codec::{self, EgressLimits, IngressError, IngressLimits, Rejection, ReplyTo};
use crate::wire::headers::{self, ParamHeader};
use crate::wire::jsonrpc::{Message, Request, RequestId, Response};
use crate::wire::limits::MAX_CLIENT_INGRESS_FRAME_BYTES;
use crate::wire::methods;

pub use decorate::{Decorations, Decorator, DecoratorError, RESERVED_HEADERS};
pub use dial::{
    AddressClass, AddressPolicy, Connect, DialError, Resolve, SystemResolver, TcpConnect,
    DIAL_TIMEOUT, MAX_DIAL_ADDRESSES,
};
pub use sse::{SseParser, MAX_SSE_LINE_BYTES};

use dial::{DialSettings, Dialer};

/// Decoded messages waiting for the client core's reader before the streams pause.
///
/// Threat: a server flooding notifications faster than the core routes them; the streams
/// wait (backpressure) instead of buffering without bound.
pub const INBOUND_QUEUE_MESSAGES: usize = 256;

/// Most `307`/`308` hops one message may follow when redirects are enabled.
///
/// Threat: a redirect loop (or a long chain) holding a request and its connection forever.
pub const MAX_REDIRECT_HOPS: usize = 5;

#[cfg(feature = "https")]
impl From<tls::TlsError> for HttpError {
    fn from(e: tls::TlsError) -> Self {
        HttpError::Dial(DialError::Tls(e))
    }
}

type Inner = Result<Inbound, TransportError>;

/// The Streamable HTTP transport of the strict client.
///
/// # Network edge
///
/// - **Dialing** goes through a [`Resolve`] and a [`Connect`] (the system resolver and plain
///   TCP by default; replace them with [`HttpTransport::with_resolver`] and
///   [`HttpTransport::with_connector`]); every address is checked first (see [`dial`] for the
///   rule: special addresses only when the base URL names them).
/// - **HTTPS** (feature `https`) uses rustls with the ring provider and the bundled Mozilla
///   roots; add a private CA with [`HttpTransport::add_root_certificate`] (see [`tls`]).
/// - **Proxy environment variables are refused on purpose.** `HTTP_PROXY`, `HTTPS_PROXY`,
///   `ALL_PROXY`, `NO_PROXY` (any case) are never read: a proxy taken from the environment
///   would move the dial — and the address check above — to a host this transport cannot see,
///   and a variable set for other programs would silently reroute MCP traffic (and its
///   `Authorization` header). To use a proxy, inject a [`Connect`] that tunnels through it;
///   it only ever receives addresses the check allowed.
pub struct HttpTransport {
    client: HyperClient<Dialer, Full<Bytes>>,
    url: Uri,
    decorator: Option<Decorator>,
    /// Same-origin `307`/`308` hops followed per message (0: none).
    max_redirects: usize,
    /// What each new connection is dialed with (the client above holds a copy).
    settings: DialSettings,
    #[cfg(feature = "https")]
    roots: tls::Roots,
    tx: mpsc::Sender<Inner>,
    rx: tokio::sync::Mutex<mpsc::Receiver<Inner>>,
    closed: watch::Sender<bool>,
    /// Open SSE response streams by the exact id token of their request.
    streams: Arc<Mutex<HashMap<String, tokio::task::AbortHandle>>>,
    /// `x-mcp-header` annotations by tool name, from the `tools/list` results carried.
    annotations: Arc<Mutex<HashMap<String, Vec<ParamHeader>>>>,
}

impl std::fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpTransport")
            .field("url", &self.url)
            .field("policy", &self.settings.policy)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The schemes this build dials.
fn scheme_supported(scheme: Option<&str>) -> bool {
    scheme == Some("http") || (cfg!(feature = "https") && scheme == Some("https"))
}

impl HttpTransport {
    /// A transport posting to `url` (absolute `http://`, or `https://` with feature `https`;
    /// no userinfo — credentials go through the decorator). Needs a Tokio runtime when used.
    ///
    /// # Errors
    /// [`HttpError::BadUrl`] when `url` is not such a URL.
    pub fn new(url: &str, decorator: Option<Decorator>) -> Result<HttpTransport, HttpError> {
        let url: Uri = url.parse().map_err(|_| HttpError::BadUrl)?;
        let authority = url.authority().ok_or(HttpError::BadUrl)?;
        if !scheme_supported(url.scheme_str())
            || url.host().is_none_or(str::is_empty)
            || authority.as_str().contains('@')
        {
            return Err(HttpError::BadUrl);
        }
        let policy = AddressPolicy::for_host(url.host().unwrap_or_default());
        #[cfg(feature = "https")]
        let roots = tls::Roots::default();
        let settings = DialSettings {
            policy: policy.clone(),
            resolver: Arc::new(SystemResolver),
            connector: Arc::new(TcpConnect),
            timeout: DIAL_TIMEOUT,
            #[cfg(feature = "https")]
            tls: tls::config(&roots)?,
        };
        let (tx, rx) = mpsc::channel(INBOUND_QUEUE_MESSAGES);
        Ok(HttpTransport {
            client: HyperClient::builder(TokioExecutor::new())
                .build(Dialer(Arc::new(settings.clone()))),
            url,
            decorator,
            max_redirects: 0,
            settings,
            #[cfg(feature = "https")]
            roots,
            tx,
            rx: tokio::sync::Mutex::new(rx),
            closed: watch::channel(false).0,
            streams: Arc::new(Mutex::new(HashMap::new())),
            annotations: Arc::new(Mutex::new(HashMap::new())),
        })
    }

    /// Rebuilds the pooled client after a dial setting changed (the builder methods run
    /// before any connection exists, so nothing is lost).
    fn rebuild(&mut self) {
        self.client = HyperClient::builder(TokioExecutor::new())
            .build(Dialer(Arc::new(self.settings.clone())));
    }

    /// Follows up to `hops` (at most [`MAX_REDIRECT_HOPS`]) `307`/`308` redirects that stay on
    /// the base URL's origin; other redirects stay errors.
    #[must_use]
    pub fn follow_redirects(mut self, hops: usize) -> HttpTransport {
        self.max_redirects = hops.min(MAX_REDIRECT_HOPS);
        self
    }

    /// Resolves host names through `resolver` instead of the system's.
    #[must_use]
    pub fn with_resolver(mut self, resolver: Arc<dyn Resolve>) -> HttpTransport {
        self.settings.resolver = resolver;
        self.rebuild();
        self
    }

    /// Opens TCP connections through `connector` (say, a tunnel through a proxy you choose);
    /// it receives only addresses the [`AddressPolicy`] allowed.
    #[must_use]
    pub fn with_connector(mut self, connector: Arc<dyn Connect>) -> HttpTransport {
        self.settings.connector = connector;
        self.rebuild();
        self
    }

    /// Bounds each new connection's resolve, connect and TLS handshake by `limit` instead of
    /// [`DIAL_TIMEOUT`]; an exceeded limit is [`DialError::Timeout`].
    #[must_use]
    pub fn dial_timeout(mut self, limit: Duration) -> HttpTransport {
        self.settings.timeout = limit;
        self.rebuild();
        self
    }

    /// Allows private (RFC 1918, `fc00::/7`) and CGNAT addresses for a named host, for
    /// servers on an intranet (see [`AddressPolicy::allow_private_networks`]).
    #[must_use]
    pub fn allow_private_networks(mut self) -> HttpTransport {
        self.settings.policy = self.settings.policy.clone().allow_private_networks();
        self.rebuild();
        self
    }

    /// The address policy every dial is checked against.
    #[must_use]
    pub fn address_policy(&self) -> &AddressPolicy {
        &self.settings.policy
    }

    /// Also trusts the DER-encoded CA certificate `der` for `https://` (a private CA).
    ///
    /// # Errors
    /// [`tls::TlsError::BadRootCertificate`] (as [`HttpError::Dial`]) when `der` is not a
    /// usable X.509 trust anchor.
    #[cfg(feature = "https")]
    pub fn add_root_certificate(mut self, der: &[u8]) -> Result<HttpTransport, HttpError> {
        let mut roots = self.roots.clone();
        roots
            .custom
            .push(tokio_rustls::rustls::pki_types::CertificateDer::from(
                der.to_vec(),
            ));
        self.settings.tls = tls::config(&roots)?;
        self.roots = roots;
        self.rebuild();
        Ok(self)
    }

    /// Trusts only the certificates added with [`HttpTransport::add_root_certificate`], not
    /// the bundled Mozilla roots (a deployment that pins its own CA).
    ///
    /// # Errors
    /// As [`HttpTransport::add_root_certificate`].
    #[cfg(feature = "https")]
    pub fn only_custom_roots(mut self) -> Result<HttpTransport, HttpError> {
        let mut roots = self.roots.clone();
        roots.only_custom = true;
        self.settings.tls = tls::config(&roots)?;
        self.roots = roots;
        self.rebuild();
        Ok(self)
    }

    /// The `x-mcp-header` annotations this transport mirrors for `tool` (from `tools/list`).
    #[must_use]
    pub fn annotations(&self, tool: &str) -> Vec<ParamHeader> {
        lock(&self.annotations)
            .get(tool)
            .cloned()
            .unwrap_or_default()
    }

    /// Builds the POST for `message`: body, protocol headers, then the decorations.
    fn build(&self, message: &Message, url: &Uri) -> Result<HttpRequest<Full<Bytes>>, HttpError> {
        let body = codec::encode(message, &EgressLimits::CLIENT)?;
        let (method, params) = match message {
            Message::Request(r) => (r.method.as_str(), r.params.as_deref()),
            Message::Notification(n) => (n.method.as_str(), n.params.as_deref()),
            Message::Response(_) => return Err(HttpError::NotPostable),
        };
        let annotations = if method == methods::TOOLS_CALL {
            headers::Mirrored::of(params)
                .name()
                .map(|name| self.annotations(name))
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        let required = headers::required_headers(method, params, &annotations)?;
        let mut decorations = Decorations::default();
        if let Some(decorate) = &self.decorator {
            decorate(method, &mut decorations)?;
        }
        let mut request = HttpRequest::builder()
            .method(HttpMethod::POST)
            .uri(url.clone())
            .body(Full::new(Bytes::from(body)))
            .map_err(|_| HttpError::BadUrl)?;
        let map = request.headers_mut();
        for (name, value) in decorations.into_headers() {
            map.append(name, value);
        }
        map.insert(
            ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        map.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        for (name, value) in required {
            let invalid = || HttpError::InvalidProtocolHeader { name: name.clone() };
            let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| invalid())?;
            // `required_headers` encodes unsafe text with the base64 sentinel (D18, D21).
            let value = HeaderValue::from_str(&value).map_err(|_| invalid())?;
            let name = header;
            map.insert(name, value);
        }
        Ok(request)
    }

    /// Posts `message` and reads its answer; a JSON answer is read here and returned, SSE
    /// answers by a spawned stream reader registered under the request's id.
    async fn exchange(&self, message: &Message) -> Result<Option<Inbound>, HttpError> {
        let mut url = self.url.clone();
        let mut hops = 0;
        let (response, status) = loop {
            let request = self.build(message, &url)?;
            let response = self
                .client
                .request(request)
                .await
                .map_err(|e| exchange_error(&e))?;
            let status = response.status();
            if !status.is_redirection() {
                break (response, status);
            }
            let keeps_method = matches!(
                status,
                StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT
            );
            if self.max_redirects == 0 || !keeps_method {
                return Err(HttpError::Redirect {
                    status: status.as_u16(),
                });
            }
            if hops == self.max_redirects {
                return Err(HttpError::TooManyRedirects { limit: hops });
            }
            url = same_origin(&url, response.headers().get(LOCATION))?;
            hops += 1;
        };
        let kind = media_kind(response.headers());
        // 401/403 keep their status and challenges (the OAuth client acts on them).
        let auth = challenge_of(status, response.headers());
        let challenged = matches!(
            &auth,
            Some(HttpError::Unauthorized { www_authenticate, dropped, .. })
                if !www_authenticate.is_empty() || *dropped > 0
        );
        let refused = || {
            auth.clone().unwrap_or(HttpError::Status {
                status: status.as_u16(),
            })
        };
        let Message::Request(sent) = message else {
            // A notification: 202 with no body is the only success (D7).
            if status == StatusCode::ACCEPTED {
                return Ok(None);
            }
            return Err(refused());
        };
        match kind {
            Some(Kind::Json) => {
                let body = read_bounded(response.into_body()).await?;
                let decoded = codec::decode(&body, &IngressLimits::CLIENT);
                match decoded {
                    // A challenge outranks the body: it is what the caller can act on.
                    Ok(Message::Response(_)) if challenged => Err(refused()),
                    Ok(Message::Response(r)) if r.id().is_none_or(|id| id == &sent.id) => {
                        let r = attribute(r, &sent.id);
                        observe(&self.annotations, &sent.method, &r);
                        // A JSON-RPC error with any status is the core's to judge.
                        Ok(Some(Inbound::Message(Message::Response(r))))
                    }
                    Ok(_) | Err(_) if !status.is_success() => Err(refused()),
                    Ok(_) => Err(HttpError::NotTheResponse),
                    Err(rejection) => Err(HttpError::Decode(rejection.error)),
                }
            }
            Some(Kind::Sse) if status == StatusCode::OK => {
                self.spawn_stream(sent, response.into_body());
                Ok(None)
            }
            _ if !status.is_success() => Err(refused()),
            _ => Err(HttpError::ContentType),
        }
    }

    async fn deliver(&self, item: Inner) {
        let _ = self.tx.send(item).await;
    }

    fn spawn_stream(&self, sent: &Request, body: Incoming) {
        let tx = self.tx.clone();
        let token = sent.id.token().to_owned();
        let id = sent.id.clone();
        let method = sent.method.clone();
        let annotations = Arc::clone(&self.annotations);
        let streams = Arc::clone(&self.streams);
        let mut streams_guard = lock(&self.streams);
        let done_token = token.clone();
        let task = tokio::spawn(async move {
            read_sse(body, &id, &method, &annotations, &tx).await;
            lock(&streams).remove(&done_token);
        });
        if let Some(old) = streams_guard.insert(token, task.abort_handle()) {
            old.abort();
        }
    }

    /// Closes the response stream of the request `id` names.
    fn cancel_stream(&self, id: &RequestId) {
        if let Some(task) = lock(&self.streams).remove(id.token()) {
            task.abort();
        }
    }
}

/// Where a redirect from `from` to `location` leads, when it stays on the same origin
/// (scheme, host, port): an absolute-path reference or an absolute URL of that origin.
fn same_origin(from: &Uri, location: Option<&HeaderValue>) -> Result<Uri, HttpError> {
    let location = location
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<Uri>().ok())
        .ok_or(HttpError::CrossOriginRedirect)?;
    let port = |u: &Uri| {
        u.port_u16().unwrap_or(if u.scheme_str() == Some("https") {
            443
        } else {
            80
        })
    };
    let same = match (location.scheme_str(), location.host()) {
        (None, None) => location.path().starts_with('/'),
        (Some(scheme), Some(host)) => {
            Some(scheme) == from.scheme_str()
                && location
                    .authority()
                    .is_some_and(|a| !a.as_str().contains('@'))
                && from.host().is_some_and(|h| h.eq_ignore_ascii_case(host))
                && port(from) == port(&location)
        }
        _ => false,
    };
    if !same {
        return Err(HttpError::CrossOriginRedirect);
    }
    let path = location
        .path_and_query()
        .map_or("/", hyper::http::uri::PathAndQuery::as_str);
    let authority = from.authority().ok_or(HttpError::CrossOriginRedirect)?;
    Uri::builder()
        .scheme(from.scheme_str().unwrap_or("http"))
        .authority(authority.as_str())
        .path_and_query(path)
        .build()
        .map_err(|_| HttpError::CrossOriginRedirect)
}

/// A `"id": null` error on a request's own exchange answers that request: HTTP pairs the
/// answer with the POST, and the core would otherwise drop it and wait for the deadline.
fn attribute(r: Response, id: &RequestId) -> Response {
    match r {
        Response::Error(mut e) if e.id.is_none() => {
            e.id = Some(id.clone());
            Response::Error(e)
        }
        other => other,
    }
}

/// The typed refusal of a `401`/`403` answer: its status and its `WWW-Authenticate` values in
/// order, whole values only, at most [`MAX_WWW_AUTHENTICATE_BYTES`] in all (a value that
/// would pass the bound, and every later one, is counted in `dropped`). `None` for any other
/// status.
fn challenge_of(status: StatusCode, headers: &hyper::HeaderMap) -> Option<HttpError> {
    if status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN {
        return None;
    }
    let mut kept = Vec::new();
    let mut bytes = 0;
    let mut dropped = 0;
    for value in headers.get_all(WWW_AUTHENTICATE) {
        let value = value.as_bytes();
        if dropped == 0 && bytes + value.len() <= MAX_WWW_AUTHENTICATE_BYTES {
            bytes += value.len();
            kept.push(String::from_utf8_lossy(value).into_owned());
        } else {
            dropped += 1;
        }
    }
    let dpop_nonce = headers
        .get("dpop-nonce")
        .and_then(|v| v.to_str().ok())
        .filter(|v| valid_dpop_nonce(v))
        .map(str::to_owned);
    Some(HttpError::Unauthorized {
        status: status.as_u16(),
        www_authenticate: kept,
        dropped,
        dpop_nonce,
    })
}

/// Which response kind a `Content-Type` names.
enum Kind {
    Json,
    Sse,
}

fn media_kind(map: &hyper::HeaderMap) -> Option<Kind> {
    let value = map.get(CONTENT_TYPE)?.to_str().ok()?;
    let media = value.split(';').next().unwrap_or("").trim();
    if media.eq_ignore_ascii_case("application/json") {
        Some(Kind::Json)
    } else if media.eq_ignore_ascii_case("text/event-stream") {
        Some(Kind::Sse)
    } else {
        None
    }
}

/// The typed cause of an exchange failure: the dial's own error when the dial failed, never
/// any request detail (no headers, no URL).
fn exchange_error(e: &hyper_util::client::legacy::Error) -> HttpError {
    match dial::dial_error(e) {
        Some(d) => HttpError::Dial(d),
        None if e.is_connect() => HttpError::Dial(DialError::Connect {
            kind: std::io::ErrorKind::Other,
        }),
        None => HttpError::Connection,
    }
}

/// Reads a whole body, refusing it past [`MAX_CLIENT_INGRESS_FRAME_BYTES`].
async fn read_bounded(mut body: Incoming) -> Result<Vec<u8>, HttpError> {
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|_| HttpError::Truncated)?;
        if let Ok(data) = frame.into_data() {
            if out.len() + data.len() > MAX_CLIENT_INGRESS_FRAME_BYTES {
                return Err(HttpError::TooLarge {
                    limit: MAX_CLIENT_INGRESS_FRAME_BYTES,
                });
            }
            out.extend_from_slice(&data);
        }
    }
    Ok(out)
}

/// Keeps the `x-mcp-header` annotations of a `tools/list` result; a tool whose
/// annotations are invalid keeps none (the core drops it from what the app sees).
fn observe(annotations: &Mutex<HashMap<String, Vec<ParamHeader>>>, method: &str, r: &Response) {
    let Response::Success(success) = r else {
        return;
    };
    if method != methods::TOOLS_LIST {
        return;
    }
    let Ok(result) = serde_json::from_str::<Value>(success.result.get()) else {
        return;
    };
    let Some(tools) = result.get("tools").and_then(Value::as_array) else {
        return;
    };
    let mut map = lock(annotations);
    for tool in tools {
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            continue;
        };
        let params = tool
            .get("inputSchema")
            .and_then(|s| headers::param_headers(s).ok())
            .unwrap_or_default();
        map.insert(name.to_owned(), params);
    }
}

/// Reads one request-scoped SSE stream: `data:` lines of an event are joined with
/// `\n`, comments and other fields are skipped, each event is one JSON-RPC message. The stream
/// ends with the request's response; a stream that breaks before it fails that request.
async fn read_sse(
    mut body: Incoming,
    id: &RequestId,
    method: &str,
    annotations: &Mutex<HashMap<String, Vec<ParamHeader>>>,
    tx: &mpsc::Sender<Inner>,
) {
    let fail = |error: IngressError| {
        Ok(Inbound::Rejected(Rejection::new(
            error,
            ReplyTo::Id(id.clone()),
        )))
    };
    let mut parser = SseParser::default();
    loop {
        let chunk = match body.frame().await {
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => data,
                Err(_) => continue,
            },
            Some(Err(_)) | None => {
                // Ended or broken before the response: never resumed (D14).
                let _ = tx
                    .send(fail(IngressError::Syntax {
                        offset: parser.seen,
                    }))
                    .await;
                return;
            }
        };
        let events = match parser.push(&chunk) {
            Ok(events) => events,
            Err(limit) => {
                let _ = tx
                    .send(fail(IngressError::FrameTooLarge {
                        limit,
                        actual: None,
                    }))
                    .await;
                return;
            }
        };
        for data in events {
            match codec::decode(&data, &IngressLimits::CLIENT) {
                Ok(Message::Response(r)) => {
                    let answers = r.id().is_none_or(|rid| rid == id);
                    let r = if answers { attribute(r, id) } else { r };
                    if answers {
                        observe(annotations, method, &r);
                    }
                    let _ = tx.send(Ok(Inbound::Message(Message::Response(r)))).await;
                    if answers {
                        return;
                    }
                }
                Ok(other) => {
                    // D8: what shares the request's stream belongs to that request.
                    let _ = tx
                        .send(Ok(Inbound::OnStream {
                            request: id.clone(),
                            message: other,
                        }))
                        .await;
                }
                Err(rejection) => {
                    let _ = tx.send(Ok(Inbound::Rejected(rejection))).await;
                }
            }
        }
    }
}

impl HttpTransport {
    /// `send` and `send_request`: the answer read in this task, if any.
    async fn carry(&self, message: &Message) -> Result<Option<Inbound>, TransportError> {
        if *self.closed.borrow() {
            return Err(TransportError::Closed);
        }
        if let Message::Notification(n) = message {
            if n.method == methods::CANCELLED {
                // HTTP cancels by closing the request's stream, never by posting (D13).
                if let Some(id) = crate::wire::progress::cancelled_request(n.params.as_deref()) {
                    self.cancel_stream(&id);
                }
                return Ok(None);
            }
        }
        self.exchange(message)
            .await
            .map_err(|e| TransportError::Refused(Refusal::Http(e)))
    }
}

impl Transport for HttpTransport {
    fn send<'a>(&'a self, message: &'a Message) -> BoxFuture<'a, Result<(), TransportError>> {
        Box::pin(async move {
            if let Some(answer) = self.carry(message).await? {
                self.deliver(Ok(answer)).await;
            }
            Ok(())
        })
    }

    /// A JSON answer comes back from here, read in the caller's task (no queue hop).
    fn send_request<'a>(
        &'a self,
        message: &'a Message,
    ) -> BoxFuture<'a, Result<Option<Inbound>, TransportError>> {
        Box::pin(self.carry(message))
    }

    fn recv(&self) -> BoxFuture<'_, Result<Inbound, TransportError>> {
        Box::pin(async move {
            let mut closed = self.closed.subscribe();
            if *closed.borrow_and_update() {
                return Err(TransportError::Closed);
            }
            let mut rx = self.rx.lock().await;
            tokio::select! {
                item = rx.recv() => item.unwrap_or(Err(TransportError::Closed)),
                _ = closed.changed() => Err(TransportError::Closed),
            }
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.closed.send_replace(true);
            for (_, task) in lock(&self.streams).drain() {
                task.abort();
            }
        })
    }

    /// The core's cancellation notice is turned into closing the stream (see `send`).
    fn announces_cancellation(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn d47_only_absolute_http_urls_without_credentials() {
        assert!(HttpTransport::new("http://127.0.0.1:1/mcp", None).is_ok());
        assert_eq!(
            HttpTransport::new("https://127.0.0.1/mcp", None).is_ok(),
            cfg!(feature = "https")
        );
        for bad in [
            "/mcp",
            "ftp://x/",
            "not a url",
            "http:///mcp",
            "http://user:s3cret@127.0.0.1/mcp",
            "https://token@127.0.0.1/mcp",
        ] {
            assert_eq!(
                HttpTransport::new(bad, None).err(),
                Some(HttpError::BadUrl),
                "{bad}"
            );
        }
    }

    #[test]
    fn d47_redirect_locations_stay_on_the_origin_and_scheme() {
        let from: Uri = "https://mcp.example:8443/mcp".parse().expect("uri");
        let loc = |v: &'static str| HeaderValue::from_static(v);
        assert_eq!(
            same_origin(&from, Some(&loc("/next?x=1"))).expect("path"),
            "https://mcp.example:8443/next?x=1"
        );
        assert_eq!(
            same_origin(&from, Some(&loc("https://MCP.example:8443/b"))).expect("same"),
            "https://mcp.example:8443/b"
        );
        for other in [
            "http://mcp.example:8443/b",
            "https://mcp.example/b",
            "https://evil.test:8443/b",
            "https://u@mcp.example:8443/b",
            "relative",
        ] {
            assert_eq!(
                same_origin(&from, Some(&HeaderValue::from_static(other))),
                Err(HttpError::CrossOriginRedirect),
                "{other}"
            );
        }
        let default_port: Uri = "https://mcp.example/mcp".parse().expect("uri");
        assert!(same_origin(&default_port, Some(&loc("https://mcp.example:443/b"))).is_ok());
        assert_eq!(
            same_origin(&from, None),
            Err(HttpError::CrossOriginRedirect)
        );
    }
}
