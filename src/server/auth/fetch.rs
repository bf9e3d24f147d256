//! The outbound HTTP the verifiers need (JWKS documents, RFC 7662 introspection), behind a
//! trait so tests and deployments choose how to dial.
//!
//! [`HttpFetcher`] is the bundled implementation on hyper: every response body is read under a
//! cap (nothing past it is buffered), the whole exchange runs under a time-out, and redirects
//! are never followed (a 3xx is an error: a key set that moved must be reconfigured, not chased
//! to wherever a compromised endpoint points). Without a TLS connector it speaks plain HTTP to
//! loopback addresses only; give it a TLS connector ([`HttpFetcher::with_connector`]) for
//! `https` endpoints.

use std::fmt;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::time::Duration;

use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Bytes;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Uri};

/// A boxed, sendable future: what the object-safe traits of this module return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Default time a whole fetch (connect, request, complete body) may take: a key set or an
/// introspection answer is small, and every protected request waits behind it.
pub const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// One outbound request. Its `Debug` never shows the body (an introspection body carries the
/// token) nor header values (they may carry client credentials).
#[derive(Clone)]
pub struct FetchRequest {
    /// `GET` (key sets) or `POST` (introspection).
    pub method: Method,
    /// Absolute URL.
    pub url: String,
    /// Extra request headers.
    pub headers: Vec<(header::HeaderName, HeaderValue)>,
    /// Request body, if any.
    pub body: Option<Bytes>,
    /// Largest response body accepted; a longer one is [`FetchError::BodyTooLarge`].
    pub max_body: usize,
    /// Time the whole exchange may take; past it [`FetchError::Timeout`].
    pub timeout: Duration,
}

impl fmt::Debug for FetchRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("FetchRequest")
            .field("method", &self.method)
            .field("url", &self.url)
            .field("headers", &names)
            .field("body_bytes", &self.body.as_ref().map_or(0, Bytes::len))
            .field("max_body", &self.max_body)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// A complete response (status 2xx or not; redirects are errors before this).
#[derive(Clone)]
pub struct FetchResponse {
    /// HTTP status.
    pub status: u16,
    /// `Content-Type`, if present and readable.
    pub content_type: Option<String>,
    /// The whole body, at most the request's `max_body` bytes.
    pub body: Bytes,
}

impl fmt::Debug for FetchResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FetchResponse")
            .field("status", &self.status)
            .field("content_type", &self.content_type)
            .field("body_bytes", &self.body.len())
            .finish()
    }
}

/// Why a fetch failed. Never carries a body, a header value or a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    /// The exchange did not finish within its time-out.
    #[error("the fetch timed out")]
    Timeout,
    /// The response body exceeded the limit.
    #[error("the response body exceeds the {limit}-byte limit")]
    BodyTooLarge {
        /// The limit that was exceeded.
        limit: usize,
    },
    /// The server answered with a redirect, which is never followed.
    #[error("the server answered with a redirect ({0}), which is not followed")]
    Redirect(u16),
    /// The server answered with a non-success status.
    #[error("the server answered with status {0}")]
    Status(u16),
    /// The URL is not absolute, or not one this fetcher may dial (plain `http` is allowed to
    /// loopback addresses only).
    #[error("the URL is not allowed: {0}")]
    UrlNotAllowed(&'static str),
    /// Connecting or exchanging failed.
    #[error("the fetch failed: {0}")]
    Transport(String),
    /// The response body is not what was expected (e.g. not JSON).
    #[error("the response is malformed: {0}")]
    Malformed(&'static str),
}

/// Outbound HTTP for the verifiers. Implementations must honour `max_body` while reading (not
/// after buffering everything), must not follow redirects, and should honour `timeout`; the
/// verifiers also bound the call with `timeout` and re-check the body length, so a careless
/// implementation can waste memory but cannot hang a request or smuggle an oversized document.
pub trait Fetcher: Send + Sync + 'static {
    /// Performs one exchange.
    fn fetch(&self, request: FetchRequest) -> BoxFuture<'_, Result<FetchResponse, FetchError>>;
}

/// The fetcher for real deployments: every request through [`crate::net::fetch::SafeFetcher`]
/// (the SSRF-safe dial policy fixed from the configured endpoint's URL, checked at every dial;
/// HTTPS through rustls; bounded body; no redirects followed), each under its request's
/// time-out.
#[derive(Debug, Clone)]
pub struct DialingFetcher {
    inner: crate::net::fetch::SafeFetcher,
}

impl DialingFetcher {
    /// A fetcher for the JWKS or introspection endpoint at `endpoint_url`: loopback (or
    /// another special address) is reachable only when that URL names it.
    ///
    /// # Errors
    /// [`FetchError::UrlNotAllowed`] when it is not an absolute `http(s)` URL.
    pub fn for_endpoint(endpoint_url: &str) -> Result<DialingFetcher, FetchError> {
        let inner = crate::net::fetch::SafeFetcher::for_base(endpoint_url)
            .map_err(|_| FetchError::UrlNotAllowed("not an absolute http(s) URL"))?;
        Ok(DialingFetcher { inner })
    }

    /// A fetcher over a configured [`crate::net::fetch::SafeFetcher`].
    pub fn with(inner: crate::net::fetch::SafeFetcher) -> DialingFetcher {
        DialingFetcher { inner }
    }
}

impl Fetcher for DialingFetcher {
    fn fetch(&self, request: FetchRequest) -> BoxFuture<'_, Result<FetchResponse, FetchError>> {
        use crate::net::fetch::SafeFetchError;
        Box::pin(async move {
            let headers: Vec<(String, String)> = request
                .headers
                .iter()
                .filter_map(|(n, v)| Some((n.as_str().to_owned(), v.to_str().ok()?.to_owned())))
                .collect();
            let fetcher = self.inner.clone().timeout(request.timeout);
            match fetcher
                .fetch(
                    request.method.clone(),
                    &request.url,
                    &headers,
                    request.body.clone(),
                    request.max_body,
                )
                .await
            {
                Ok(response) if (300..400).contains(&response.status) => {
                    Err(FetchError::Redirect(response.status))
                }
                Ok(response) => Ok(FetchResponse {
                    status: response.status,
                    content_type: response
                        .headers
                        .iter()
                        .find(|(n, _)| n == "content-type")
                        .map(|(_, v)| v.clone()),
                    body: response.body,
                }),
                Err(SafeFetchError::BadUrl) => {
                    Err(FetchError::UrlNotAllowed("not an absolute http(s) URL"))
                }
                Err(SafeFetchError::BodyTooLarge { limit }) => {
                    Err(FetchError::BodyTooLarge { limit })
                }
                Err(SafeFetchError::Timeout { .. }) => Err(FetchError::Timeout),
                Err(other) => Err(FetchError::Transport(other.to_string())),
            }
        })
    }
}

/// Runs `request` on `fetcher` under its time-out and body bound, and refuses non-2xx answers.
pub(crate) async fn fetch_checked(
    fetcher: &dyn Fetcher,
    request: FetchRequest,
) -> Result<FetchResponse, FetchError> {
    let timeout = request.timeout;
    let max_body = request.max_body;
    let response = tokio::time::timeout(timeout, fetcher.fetch(request))
        .await
        .map_err(|_| FetchError::Timeout)??;
    if (300..400).contains(&response.status) {
        return Err(FetchError::Redirect(response.status));
    }
    if !(200..300).contains(&response.status) {
        return Err(FetchError::Status(response.status));
    }
    if response.body.len() > max_body {
        return Err(FetchError::BodyTooLarge { limit: max_body });
    }
    Ok(response)
}

type DefaultConnector = hyper_util::client::legacy::connect::HttpConnector;

/// The bundled [`Fetcher`] on hyper (HTTP/1.1), with a pluggable connector.
///
/// With [`HttpFetcher::new`] (hyper's plain TCP connector) only `http://` URLs whose host is a
/// loopback IP literal or `localhost` are dialled; anything else is
/// [`FetchError::UrlNotAllowed`] before any socket opens. [`HttpFetcher::with_connector`] takes
/// a TLS-capable connector (e.g. `hyper-rustls`'s) and then also dials `https://` URLs; plain
/// `http://` stays loopback-only.
pub struct HttpFetcher<C = DefaultConnector> {
    client: hyper_util::client::legacy::Client<C, Full<Bytes>>,
    https: bool,
}

impl<C> fmt::Debug for HttpFetcher<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpFetcher")
            .field("https", &self.https)
            .finish_non_exhaustive()
    }
}

impl HttpFetcher<DefaultConnector> {
    /// A loopback-only plain-HTTP fetcher (tests, sidecars on the same host).
    #[must_use]
    pub fn new() -> Self {
        let mut connector = DefaultConnector::new();
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(DEFAULT_FETCH_TIMEOUT));
        HttpFetcher {
            client: hyper_util::client::legacy::Client::builder(
                hyper_util::rt::TokioExecutor::new(),
            )
            .build(connector),
            https: false,
        }
    }
}

impl Default for HttpFetcher<DefaultConnector> {
    fn default() -> Self {
        HttpFetcher::new()
    }
}

impl<C> HttpFetcher<C>
where
    C: hyper_util::client::legacy::connect::Connect + Clone + Send + Sync + 'static,
{
    /// A fetcher over `connector`, which must speak TLS for `https://` URLs; those are then
    /// allowed to any host (the connector's resolver decides where they go).
    pub fn with_connector(connector: C) -> Self {
        HttpFetcher {
            client: hyper_util::client::legacy::Client::builder(
                hyper_util::rt::TokioExecutor::new(),
            )
            .build(connector),
            https: true,
        }
    }

    /// Whether this fetcher may dial `uri` (see the type docs).
    fn allowed(&self, uri: &Uri) -> Result<(), FetchError> {
        let host = uri
            .host()
            .ok_or(FetchError::UrlNotAllowed("the URL has no host"))?;
        match uri.scheme_str() {
            Some("https") if self.https => Ok(()),
            Some("https") => Err(FetchError::UrlNotAllowed(
                "https needs a TLS connector (HttpFetcher::with_connector)",
            )),
            Some("http") if is_loopback_host(host) => Ok(()),
            Some("http") => Err(FetchError::UrlNotAllowed(
                "plain http is allowed to loopback hosts only",
            )),
            _ => Err(FetchError::UrlNotAllowed(
                "the scheme must be http or https",
            )),
        }
    }
}

/// Whether `host` (as in a URI, IPv6 in brackets) names this machine without a DNS look-up
/// beyond `localhost`.
pub(crate) fn is_loopback_host(host: &str) -> bool {
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

impl<C> Fetcher for HttpFetcher<C>
where
    C: hyper_util::client::legacy::connect::Connect + Clone + Send + Sync + 'static,
{
    fn fetch(&self, request: FetchRequest) -> BoxFuture<'_, Result<FetchResponse, FetchError>> {
        Box::pin(async move {
            let uri: Uri = request
                .url
                .parse()
                .map_err(|_| FetchError::UrlNotAllowed("the URL does not parse"))?;
            self.allowed(&uri)?;
            let mut builder = Request::builder().method(request.method).uri(uri);
            for (name, value) in &request.headers {
                builder = builder.header(name, value);
            }
            let outgoing = builder
                .body(Full::new(request.body.unwrap_or_default()))
                .map_err(|_| FetchError::UrlNotAllowed("the request does not build"))?;
            let max_body = request.max_body;
            let exchange = async {
                let response = self
                    .client
                    .request(outgoing)
                    .await
                    .map_err(|e| FetchError::Transport(transport_reason(&e)))?;
                let status = response.status().as_u16();
                if (300..400).contains(&status) {
                    // Not followed, and the body is not read.
                    return Err(FetchError::Redirect(status));
                }
                let content_type = response
                    .headers()
                    .get(header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                if let Some(length) = response
                    .headers()
                    .get(header::CONTENT_LENGTH)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.parse::<u64>().ok())
                {
                    if length > max_body as u64 {
                        return Err(FetchError::BodyTooLarge { limit: max_body });
                    }
                }
                let body = Limited::new(response.into_body(), max_body)
                    .collect()
                    .await
                    .map_err(|e| {
                        if e.is::<http_body_util::LengthLimitError>() {
                            FetchError::BodyTooLarge { limit: max_body }
                        } else {
                            FetchError::Transport("the response body could not be read".into())
                        }
                    })?
                    .to_bytes();
                Ok(FetchResponse {
                    status,
                    content_type,
                    body,
                })
            };
            tokio::time::timeout(request.timeout, exchange)
                .await
                .map_err(|_| FetchError::Timeout)?
        })
    }
}

/// A short reason for a client error: its kind, never the URL's query or any header.
fn transport_reason(e: &hyper_util::client::legacy::Error) -> String {
    if e.is_connect() {
        "could not connect".to_owned()
    } else {
        "the exchange failed".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_are_recognised() {
        for host in ["localhost", "127.0.0.1", "127.9.9.9", "[::1]", "LOCALHOST"] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "example.com",
            "10.0.0.1",
            "[::2]",
            "localhost.example.com",
            "0.0.0.0",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }

    #[test]
    fn plain_http_elsewhere_is_refused_before_dialling() {
        let fetcher = HttpFetcher::new();
        for (url, ok) in [
            ("http://127.0.0.1:1/jwks", true),
            ("http://[::1]:1/jwks", true),
            ("http://auth.example.com/jwks", false),
            ("https://auth.example.com/jwks", false),
            ("ftp://127.0.0.1/jwks", false),
        ] {
            let uri: Uri = url.parse().expect("uri");
            assert_eq!(fetcher.allowed(&uri).is_ok(), ok, "{url}");
        }
    }

    #[test]
    fn debug_hides_bodies_and_header_values() {
        let request = FetchRequest {
            method: Method::POST,
            url: "http://127.0.0.1/introspect".into(),
            headers: vec![(
                header::AUTHORIZATION,
                HeaderValue::from_static("Basic c2VjcmV0LWNsaWVudA=="),
            )],
            body: Some(Bytes::from_static(b"token=very-secret-token")),
            max_body: 10,
            timeout: Duration::from_secs(1),
        };
        let shown = format!("{request:?}");
        assert!(!shown.contains("very-secret-token"), "{shown}");
        assert!(!shown.contains("c2VjcmV0"), "{shown}");
        assert!(shown.contains("authorization"), "{shown}");
    }
}
