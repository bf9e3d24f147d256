//! The client's Streamable HTTP transport (stateless revision): one POST per message.
//!
//! Every request or notification is its own `POST` to the base URL over pooled HTTP/1.1
//! keep-alive connections (D2), with `Accept: application/json, text/event-stream` (D3) and the
//! protocol headers of [`crate::wire::headers::required_headers`] (D15–D21). The answer is one
//! JSON body or a request-scoped SSE stream (D5, D11); a notification is acknowledged `202`.
//!
//! - Response bodies are bounded: a JSON body and each SSE event by
//!   [`MAX_CLIENT_INGRESS_FRAME_BYTES`] (D47, O39); an SSE line by [`MAX_SSE_LINE_BYTES`].
//! - Cancellation closes the request's response stream (D13): the core's
//!   `notifications/cancelled` is turned into closing that stream and is never posted; a broken
//!   stream is never resumed (D14).
//! - A [`Decorator`] adds auth or trace headers but can never set the protocol headers,
//!   `Host`, the content headers or anything the transport owns (D46).
//! - Redirects are not followed by default (D47): a `3xx` answer is [`HttpError::Redirect`].
//!   [`HttpTransport::follow_redirects`] opts into `307`/`308` to the same origin only (the
//!   method and body are kept), at most [`MAX_REDIRECT_HOPS`] hops.
//! - Diagnostics never carry header values (no `Authorization` or `Cookie`), nor bodies.
//! - The `x-mcp-header` annotations (D19, D22) are read by this transport from the
//!   `tools/list` results it carries, since the core hands the transport messages only.
#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE, LOCATION};
use hyper::{Method as HttpMethod, Request as HttpRequest, StatusCode, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;
use tokio::sync::{mpsc, watch};

use crate::client::transport::{BoxFuture, Inbound, Transport, TransportError};
use crate::codec::{self, EgressLimits, IngressError, IngressLimits, Rejection, ReplyTo};
use crate::wire::headers::{self, ParamHeader};
use crate::wire::jsonrpc::{Message, Request, RequestId, Response};
use crate::wire::limits::MAX_CLIENT_INGRESS_FRAME_BYTES;
use crate::wire::methods;

/// Longest single SSE line kept while assembling an event: one `data:` line may carry a whole
/// message, so the frame bound plus room for the field name.
///
/// Threat: a server streaming one endless line to exhaust client memory.
pub const MAX_SSE_LINE_BYTES: usize = MAX_CLIENT_INGRESS_FRAME_BYTES + 16;

/// Decoded messages waiting for the client core's reader before the streams pause.
///
/// Threat: a server flooding notifications faster than the core routes them; the streams
/// wait (backpressure) instead of buffering without bound.
pub const INBOUND_QUEUE_MESSAGES: usize = 256;

/// Most `307`/`308` hops one message may follow when redirects are enabled.
///
/// Threat: a redirect loop (or a long chain) holding a request and its connection forever.
pub const MAX_REDIRECT_HOPS: usize = 5;

/// Header names a [`Decorator`] may never set (D46), besides every `mcp-*` name: the
/// transport owns the target, the body's framing and what it accepts.
pub const RESERVED_HEADERS: &[&str] = &[
    "host",
    "accept",
    "content-type",
    "content-length",
    "content-encoding",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
    "expect",
    "last-event-id",
];

/// Why the HTTP transport could not carry a message or read its answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// The base URL is not an absolute `http://` URL with a host.
    #[error("the endpoint must be an absolute http:// URL")]
    BadUrl,
    /// The message could not be encoded within the client's egress bounds.
    #[error("the message could not be encoded: {0}")]
    Encode(String),
    /// The protocol headers could not be computed from the message.
    #[error("the protocol headers could not be computed: {0}")]
    Headers(#[from] headers::RequiredHeaderError),
    /// The request decorator refused or failed.
    #[error(transparent)]
    Decorator(#[from] DecoratorError),
    /// Connecting or exchanging the request failed.
    #[error("the HTTP exchange failed: {0}")]
    Exchange(String),
    /// The server answered a redirect; none is followed.
    #[error("the server answered a redirect ({status}), which is not followed")]
    Redirect {
        /// The `3xx` status.
        status: u16,
    },
    /// A redirect to another origin (scheme, host or port) or to an unreadable location.
    #[error("the server redirected to another origin, which is not followed")]
    CrossOriginRedirect,
    /// More redirects than the transport follows.
    #[error("more than {limit} redirects")]
    TooManyRedirects {
        /// The hops followed before giving up.
        limit: usize,
    },
    /// The server answered a status with no JSON-RPC body to explain it.
    #[error("the server answered HTTP {status} without a JSON-RPC body")]
    Status {
        /// The HTTP status.
        status: u16,
    },
    /// The answer's `Content-Type` is neither `application/json` nor `text/event-stream`.
    #[error("the server answered with an unexpected content type")]
    ContentType,
    /// The body or one SSE event is longer than the bound.
    #[error("the response exceeds the {limit}-byte limit")]
    TooLarge {
        /// The bound that was exceeded.
        limit: usize,
    },
    /// The body could not be decoded as one JSON-RPC message.
    #[error("the response is not a valid JSON-RPC message: {0}")]
    Decode(IngressError),
    /// The body ended before the whole answer arrived.
    #[error("the response ended before it was complete")]
    Truncated,
    /// A JSON answer to a request is a message other than its response.
    #[error("the JSON response does not answer the request")]
    NotTheResponse,
}

/// Why a decorator's header was refused (D46).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecoratorError {
    /// The name belongs to the transport or the protocol and cannot be set.
    #[error("header {0} is set by the transport and cannot be decorated")]
    Reserved(String),
    /// The name is not a valid HTTP header name.
    #[error("invalid header name")]
    InvalidName,
    /// The value is not a valid HTTP header value (the value is not repeated here).
    #[error("invalid value for header {0}")]
    InvalidValue(String),
    /// The decorator's own failure (say, no token available).
    #[error("the request decorator failed: {0}")]
    Failed(String),
}

/// The headers a [`Decorator`] adds to one POST; protocol and transport names are refused.
#[derive(Debug, Default)]
pub struct Decorations {
    added: Vec<(HeaderName, HeaderValue)>,
}

impl Decorations {
    /// Adds one header. `Authorization`, `Cookie` and `Proxy-Authorization` are marked
    /// sensitive so they never appear in debug output.
    ///
    /// # Errors
    /// [`DecoratorError::Reserved`] for `mcp-*` and [`RESERVED_HEADERS`] names;
    /// [`DecoratorError::InvalidName`] / [`DecoratorError::InvalidValue`] for bad syntax.
    pub fn insert(&mut self, name: &str, value: &str) -> Result<(), DecoratorError> {
        let name =
            HeaderName::from_bytes(name.as_bytes()).map_err(|_| DecoratorError::InvalidName)?;
        let lower = name.as_str();
        if lower.starts_with(headers::PROTOCOL_HEADER_PREFIX) || RESERVED_HEADERS.contains(&lower) {
            return Err(DecoratorError::Reserved(lower.to_owned()));
        }
        let mut value = HeaderValue::from_str(value)
            .map_err(|_| DecoratorError::InvalidValue(lower.to_owned()))?;
        if matches!(lower, "authorization" | "cookie" | "proxy-authorization") {
            value.set_sensitive(true);
        }
        self.added.push((name, value));
        Ok(())
    }

    /// The headers added so far, in order.
    #[must_use]
    pub fn headers(&self) -> &[(HeaderName, HeaderValue)] {
        &self.added
    }
}

/// Adds auth or trace headers to each POST; called with the JSON-RPC method of the message.
pub type Decorator =
    Arc<dyn Fn(&str, &mut Decorations) -> Result<(), DecoratorError> + Send + Sync + 'static>;

type Inner = Result<Inbound, TransportError>;

/// The Streamable HTTP transport of the strict client.
pub struct HttpTransport {
    client: HyperClient<HttpConnector, Full<Bytes>>,
    url: Uri,
    decorator: Option<Decorator>,
    /// Same-origin `307`/`308` hops followed per message (0: none).
    max_redirects: usize,
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
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl HttpTransport {
    /// A transport posting to `url` (absolute `http://`). Needs a Tokio runtime when used.
    ///
    /// # Errors
    /// [`HttpError::BadUrl`] when `url` is not an absolute `http://` URL.
    pub fn new(url: &str, decorator: Option<Decorator>) -> Result<HttpTransport, HttpError> {
        let url: Uri = url.parse().map_err(|_| HttpError::BadUrl)?;
        if url.scheme_str() != Some("http") || url.host().is_none() {
            return Err(HttpError::BadUrl);
        }
        let client = HyperClient::builder(TokioExecutor::new()).build(HttpConnector::new());
        let (tx, rx) = mpsc::channel(INBOUND_QUEUE_MESSAGES);
        Ok(HttpTransport {
            client,
            url,
            decorator,
            max_redirects: 0,
            tx,
            rx: tokio::sync::Mutex::new(rx),
            closed: watch::channel(false).0,
            streams: Arc::new(Mutex::new(HashMap::new())),
            annotations: Arc::new(Mutex::new(HashMap::new())),
        })
    }

    /// Follows up to `hops` (at most [`MAX_REDIRECT_HOPS`]) `307`/`308` redirects that stay on
    /// the base URL's origin; other redirects stay errors.
    #[must_use]
    pub fn follow_redirects(mut self, hops: usize) -> HttpTransport {
        self.max_redirects = hops.min(MAX_REDIRECT_HOPS);
        self
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
        let body = codec::encode(message, &EgressLimits::CLIENT)
            .map_err(|e| HttpError::Encode(e.to_string()))?;
        let (method, params) = match message {
            Message::Request(r) => (r.method.as_str(), r.params.as_deref()),
            Message::Notification(n) => (n.method.as_str(), n.params.as_deref()),
            Message::Response(_) => {
                return Err(HttpError::Encode("a client sends no responses".into()))
            }
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
            .map_err(|e| HttpError::Exchange(e.to_string()))?;
        let map = request.headers_mut();
        for (name, value) in decorations.added {
            map.append(name, value);
        }
        map.insert(
            ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        map.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        for (name, value) in required {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| HttpError::Exchange(e.to_string()))?;
            // `required_headers` encodes unsafe text with the base64 sentinel (D18, D21).
            let value =
                HeaderValue::from_str(&value).map_err(|e| HttpError::Exchange(e.to_string()))?;
            map.insert(name, value);
        }
        Ok(request)
    }

    /// Posts `message` and reads its answer; JSON answers are read here, SSE answers by a
    /// spawned stream reader registered under the request's id.
    async fn exchange(&self, message: &Message) -> Result<(), HttpError> {
        let mut url = self.url.clone();
        let mut hops = 0;
        let (response, status) = loop {
            let request = self.build(message, &url)?;
            let response = self
                .client
                .request(request)
                .await
                .map_err(|e| HttpError::Exchange(exchange_text(&e)))?;
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
        let Message::Request(sent) = message else {
            // A notification: 202 with no body is the only success (D7).
            if status == StatusCode::ACCEPTED {
                return Ok(());
            }
            return Err(HttpError::Status {
                status: status.as_u16(),
            });
        };
        match kind {
            Some(Kind::Json) => {
                let body = read_bounded(response.into_body()).await?;
                let decoded = codec::decode(&body, &IngressLimits::CLIENT);
                match decoded {
                    Ok(Message::Response(r)) if r.id().is_none_or(|id| id == &sent.id) => {
                        let r = attribute(r, &sent.id);
                        observe(&self.annotations, &sent.method, &r);
                        // A JSON-RPC error with any status is the core's to judge.
                        self.deliver(Ok(Inbound::Message(Message::Response(r))))
                            .await;
                        Ok(())
                    }
                    Ok(_) if !status.is_success() => Err(HttpError::Status {
                        status: status.as_u16(),
                    }),
                    Ok(_) => Err(HttpError::NotTheResponse),
                    Err(_) if !status.is_success() => Err(HttpError::Status {
                        status: status.as_u16(),
                    }),
                    Err(rejection) => Err(HttpError::Decode(rejection.error)),
                }
            }
            Some(Kind::Sse) if status == StatusCode::OK => {
                self.spawn_stream(sent, response.into_body());
                Ok(())
            }
            _ if !status.is_success() => Err(HttpError::Status {
                status: status.as_u16(),
            }),
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

    /// Closes the response stream of the request `id` names (D13).
    fn cancel_stream(&self, id: &RequestId) {
        if let Some(task) = lock(&self.streams).remove(id.token()) {
            task.abort();
        }
    }
}

/// Where a redirect from `from` to `location` leads, when it stays on the same origin
/// (scheme, host, port; D47): an absolute-path reference or an absolute URL of that origin.
fn same_origin(from: &Uri, location: Option<&HeaderValue>) -> Result<Uri, HttpError> {
    let location = location
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<Uri>().ok())
        .ok_or(HttpError::CrossOriginRedirect)?;
    let port = |u: &Uri| u.port_u16().unwrap_or(80);
    let same = match (location.scheme_str(), location.host()) {
        (None, None) => location.path().starts_with('/'),
        (Some(scheme), Some(host)) => {
            scheme == "http"
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
        .scheme("http")
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

/// The kind of an exchange failure without any request detail (no headers, no URL userinfo).
fn exchange_text(e: &hyper_util::client::legacy::Error) -> String {
    if e.is_connect() {
        "could not connect".to_owned()
    } else {
        "the connection failed before the response headers".to_owned()
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

/// Keeps the `x-mcp-header` annotations of a `tools/list` result (D19, D22); a tool whose
/// annotations are invalid keeps none (the core drops it from what the app sees, D23).
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

/// Reads one request-scoped SSE stream (D5, D11): `data:` lines of an event are joined with
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
                    let _ = tx.send(Ok(Inbound::Message(other))).await;
                }
                Err(rejection) => {
                    let _ = tx.send(Ok(Inbound::Rejected(rejection))).await;
                }
            }
        }
    }
}

/// An incremental SSE parser with bounded line and event buffers.
#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
    /// Bytes consumed so far.
    pub seen: usize,
    skip_lf: bool,
}

impl SseParser {
    /// Feeds bytes; returns the data of every event they complete.
    ///
    /// # Errors
    /// The bound exceeded: a line over [`MAX_SSE_LINE_BYTES`] or an event's data over
    /// [`MAX_CLIENT_INGRESS_FRAME_BYTES`].
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<Vec<u8>>, usize> {
        let mut events = Vec::new();
        for &b in bytes {
            self.seen += 1;
            if self.skip_lf {
                self.skip_lf = false;
                if b == b'\n' {
                    continue;
                }
            }
            if b == b'\r' || b == b'\n' {
                self.skip_lf = b == b'\r';
                if let Some(event) = self.end_line()? {
                    events.push(event);
                }
                continue;
            }
            if self.line.len() >= MAX_SSE_LINE_BYTES {
                return Err(MAX_SSE_LINE_BYTES);
            }
            self.line.push(b);
        }
        Ok(events)
    }

    fn end_line(&mut self) -> Result<Option<Vec<u8>>, usize> {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            if !self.has_data {
                return Ok(None);
            }
            self.has_data = false;
            return Ok(Some(std::mem::take(&mut self.data)));
        }
        if line[0] == b':' {
            return Ok(None);
        }
        let (field, value) = match line.iter().position(|&c| c == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (&line[..], &[][..]),
        };
        if field == b"data" {
            let extra = usize::from(self.has_data);
            if self.data.len() + extra + value.len() > MAX_CLIENT_INGRESS_FRAME_BYTES {
                return Err(MAX_CLIENT_INGRESS_FRAME_BYTES);
            }
            if self.has_data {
                self.data.push(b'\n');
            }
            self.data.extend_from_slice(value);
            self.has_data = true;
        }
        Ok(None)
    }
}

impl Transport for HttpTransport {
    fn send<'a>(&'a self, message: &'a Message) -> BoxFuture<'a, Result<(), TransportError>> {
        Box::pin(async move {
            if *self.closed.borrow() {
                return Err(TransportError::Closed);
            }
            if let Message::Notification(n) = message {
                if n.method == methods::CANCELLED {
                    // HTTP cancels by closing the request's stream, never by posting (D13).
                    if let Some(id) = crate::wire::progress::cancelled_request(n.params.as_deref())
                    {
                        self.cancel_stream(&id);
                    }
                    return Ok(());
                }
            }
            self.exchange(message)
                .await
                .map_err(|e| TransportError::Refused(e.to_string()))
        })
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
    fn d11_sse_comments_skipped_data_lines_joined_crlf_and_lf() {
        let mut p = SseParser::default();
        let events = p
            .push(b": keep-alive\n\nevent: message\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n")
            .expect("parse");
        assert_eq!(events, vec![b"{\"a\":\n1}".to_vec()]);
        // Split across chunks, including between CR and LF.
        let mut p = SseParser::default();
        assert!(p.push(b"data: x\r").expect("a").is_empty());
        assert!(p.push(b"\n").expect("b").is_empty());
        assert_eq!(p.push(b"\r\n").expect("c"), vec![b"x".to_vec()]);
    }

    #[test]
    fn d47_sse_line_bound_at_and_one_past() {
        let mut p = SseParser::default();
        let line = vec![b'a'; MAX_SSE_LINE_BYTES];
        assert!(p.push(&line).is_ok());
        assert_eq!(p.push(b"a"), Err(MAX_SSE_LINE_BYTES));
    }

    #[test]
    fn d47_sse_event_bound_at_and_one_past() {
        let mut p = SseParser::default();
        let mut at = b"data: ".to_vec();
        at.extend(std::iter::repeat_n(b'x', MAX_CLIENT_INGRESS_FRAME_BYTES));
        at.extend_from_slice(b"\n\n");
        let events = p.push(&at).expect("at the bound");
        assert_eq!(events[0].len(), MAX_CLIENT_INGRESS_FRAME_BYTES);
        let mut p = SseParser::default();
        let mut past = b"data: ".to_vec();
        past.extend(std::iter::repeat_n(
            b'x',
            MAX_CLIENT_INGRESS_FRAME_BYTES + 1,
        ));
        past.extend_from_slice(b"\n");
        assert_eq!(p.push(&past), Err(MAX_CLIENT_INGRESS_FRAME_BYTES));
    }

    #[test]
    fn d46_decorator_cannot_set_protocol_or_transport_headers() {
        let mut d = Decorations::default();
        for name in [
            "Mcp-Method",
            "mcp-name",
            "MCP-Protocol-Version",
            "Mcp-Param-Region",
            "Host",
        ] {
            assert_eq!(
                d.insert(name, "x"),
                Err(DecoratorError::Reserved(name.to_ascii_lowercase()))
            );
        }
        for name in RESERVED_HEADERS {
            assert!(matches!(
                d.insert(name, "x"),
                Err(DecoratorError::Reserved(_))
            ));
        }
        assert_eq!(
            d.insert("authorization", "Bearer s3cret\n"),
            Err(DecoratorError::InvalidValue("authorization".into()))
        );
        assert!(!DecoratorError::InvalidValue("authorization".into())
            .to_string()
            .contains("s3cret"));
        d.insert("Authorization", "Bearer s3cret").expect("auth");
        d.insert("traceparent", "00-abc-def-01").expect("trace");
        assert_eq!(d.headers().len(), 2);
        assert!(d.headers()[0].1.is_sensitive());
        assert!(!format!("{d:?}").contains("s3cret"));
    }

    #[test]
    fn d47_only_absolute_http_urls() {
        assert!(HttpTransport::new("http://127.0.0.1:1/mcp", None).is_ok());
        for bad in ["https://127.0.0.1/mcp", "/mcp", "ftp://x/", "not a url"] {
            assert_eq!(HttpTransport::new(bad, None).err(), Some(HttpError::BadUrl));
        }
    }
}
