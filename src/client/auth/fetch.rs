//! Every outbound request of the OAuth client (metadata documents, the token endpoint, the
//! headless authorization step) goes through one [`Fetcher`], so a deployment chooses how to
//! dial (TLS, proxies, resolvers) and a test sees every request.
//!
//! [`DialingFetcher`] is the one for deployments (the SSRF-safe dialer below both roles, with
//! HTTPS); [`LoopbackFetcher`] is the minimal one for tests: plain HTTP/1.1 to loopback addresses
//! only (`127.0.0.0/8`, `::1`, and `localhost`, which it maps to `127.0.0.1` itself without a
//! resolver), bodies read under a cap, the whole exchange under a time-out, and redirects never
//! followed (a `3xx` is returned as is, `Location` included, for the caller to judge).

use std::fmt;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::time::Duration;

use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Bytes;
use hyper::{Request, Uri};

/// A boxed, sendable future: what the object-safe traits of this module return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Time a whole fetch may take by default: metadata and token answers are small, and the user's
/// request waits behind them.
pub const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// Request method of a fetch: the OAuth client only reads documents and posts forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchMethod {
    /// `GET` (metadata documents, the headless authorization step).
    Get,
    /// `POST` (token and registration endpoints).
    Post,
}

/// One outbound request. Its `Debug` shows neither header values (client credentials) nor the
/// body (codes, verifiers, refresh tokens).
#[derive(Clone)]
pub struct FetchRequest {
    /// `GET` or `POST`.
    pub method: FetchMethod,
    /// Absolute URL.
    pub url: String,
    /// Extra request headers (name, value).
    pub headers: Vec<(String, String)>,
    /// Request body, if any.
    pub body: Option<Vec<u8>>,
    /// Largest response body accepted; a longer one is [`FetchError::BodyTooLarge`].
    pub max_body: usize,
}

impl FetchRequest {
    /// A `GET` of `url` accepting at most `max_body` bytes.
    pub fn get(url: impl Into<String>, max_body: usize) -> Self {
        FetchRequest {
            method: FetchMethod::Get,
            url: url.into(),
            headers: vec![("accept".into(), "application/json".into())],
            body: None,
            max_body,
        }
    }

    /// A `POST` of an `application/x-www-form-urlencoded` body.
    pub fn post_form(url: impl Into<String>, body: String, max_body: usize) -> Self {
        FetchRequest {
            method: FetchMethod::Post,
            url: url.into(),
            headers: vec![
                ("accept".into(), "application/json".into()),
                (
                    "content-type".into(),
                    "application/x-www-form-urlencoded".into(),
                ),
            ],
            body: Some(body.into_bytes()),
            max_body,
        }
    }
}

impl fmt::Debug for FetchRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("FetchRequest")
            .field("method", &self.method)
            .field("url", &self.url)
            .field("headers", &names)
            .field("body_bytes", &self.body.as_ref().map_or(0, Vec::len))
            .field("max_body", &self.max_body)
            .finish()
    }
}

/// A complete response, whatever its status.
#[derive(Clone)]
pub struct FetchResponse {
    /// HTTP status.
    pub status: u16,
    /// Response headers with lower-case names, in order; unreadable values are left out.
    pub headers: Vec<(String, String)>,
    /// The whole body, at most the request's `max_body` bytes.
    pub body: Vec<u8>,
}

impl FetchResponse {
    /// The first value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

impl fmt::Debug for FetchResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("FetchResponse")
            .field("status", &self.status)
            .field("headers", &names)
            .field("body_bytes", &self.body.len())
            .finish()
    }
}

/// Why a fetch produced no response.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    /// The URL is not an absolute `http(s)://` URL with a host.
    #[error("not an absolute http(s) URL")]
    BadUrl,
    /// This fetcher does not dial that destination (scheme or host).
    #[error("this fetcher does not dial {0}")]
    Refused(String),
    /// Connecting or exchanging failed.
    #[error("the exchange failed: {0}")]
    Exchange(String),
    /// The exchange took longer than the fetcher's time-out.
    #[error("the exchange timed out")]
    Timeout,
    /// The body was longer than the request's `max_body`.
    #[error("the response exceeds the {limit}-byte limit")]
    BodyTooLarge {
        /// The bound that was exceeded.
        limit: usize,
    },
}

/// How the OAuth client dials. Implementations must not follow redirects.
pub trait Fetcher: Send + Sync + 'static {
    /// Performs one exchange.
    fn fetch(&self, request: FetchRequest) -> BoxFuture<'_, Result<FetchResponse, FetchError>>;
}

/// Plain HTTP to loopback only; see the module documentation.
#[derive(Debug, Clone)]
pub struct LoopbackFetcher {
    timeout: Duration,
}

impl Default for LoopbackFetcher {
    fn default() -> Self {
        LoopbackFetcher {
            timeout: DEFAULT_FETCH_TIMEOUT,
        }
    }
}

impl LoopbackFetcher {
    /// A fetcher whose exchanges each take at most `timeout`.
    pub fn with_timeout(timeout: Duration) -> Self {
        LoopbackFetcher { timeout }
    }
}

/// The fetcher for real deployments: every request through [`crate::net::fetch::SafeFetcher`]
/// (the SSRF-safe dial policy fixed from the MCP server's URL, checked at every dial; HTTPS
/// through rustls; bounded body and time; no redirects followed). A refused destination is
/// [`FetchError::Refused`] and never dialled.
#[derive(Debug, Clone)]
pub struct DialingFetcher {
    inner: crate::net::fetch::SafeFetcher,
}

impl DialingFetcher {
    /// A fetcher for the OAuth side of the MCP server at `server_url`: loopback (or another
    /// special address) is reachable only when that URL names it.
    ///
    /// # Errors
    /// [`FetchError::BadUrl`] when `server_url` is not an absolute `http(s)` URL.
    pub fn for_server(server_url: &str) -> Result<DialingFetcher, FetchError> {
        let inner =
            crate::net::fetch::SafeFetcher::for_base(server_url).map_err(|_| FetchError::BadUrl)?;
        Ok(DialingFetcher { inner })
    }

    /// A fetcher over a configured [`crate::net::fetch::SafeFetcher`] (own resolver,
    /// connector, roots or time-out).
    pub fn with(inner: crate::net::fetch::SafeFetcher) -> DialingFetcher {
        DialingFetcher { inner }
    }
}

impl Fetcher for DialingFetcher {
    fn fetch(&self, request: FetchRequest) -> BoxFuture<'_, Result<FetchResponse, FetchError>> {
        use crate::net::fetch::SafeFetchError;
        Box::pin(async move {
            let method = match request.method {
                FetchMethod::Get => hyper::Method::GET,
                FetchMethod::Post => hyper::Method::POST,
            };
            let body = request.body.map(Bytes::from);
            match self
                .inner
                .fetch(
                    method,
                    &request.url,
                    &request.headers,
                    body,
                    request.max_body,
                )
                .await
            {
                Ok(response) => Ok(FetchResponse {
                    status: response.status,
                    headers: response.headers,
                    body: response.body.to_vec(),
                }),
                Err(SafeFetchError::BadUrl) => Err(FetchError::BadUrl),
                Err(SafeFetchError::Dial(e @ crate::net::dial::DialError::Blocked { .. })) => {
                    Err(FetchError::Refused(e.to_string()))
                }
                Err(SafeFetchError::Dial(e)) => Err(FetchError::Exchange(e.to_string())),
                Err(SafeFetchError::Exchange(e)) => Err(FetchError::Exchange(e)),
                Err(SafeFetchError::BodyTooLarge { limit }) => {
                    Err(FetchError::BodyTooLarge { limit })
                }
                Err(SafeFetchError::Timeout { .. }) => Err(FetchError::Timeout),
            }
        })
    }
}

/// The loopback socket address `uri` names, or why it is not dialled.
fn loopback_target(uri: &Uri) -> Result<SocketAddr, FetchError> {
    if uri.scheme_str() != Some("http") {
        return Err(FetchError::Refused(format!(
            "scheme {}",
            uri.scheme_str().unwrap_or("(none)")
        )));
    }
    let host = uri.host().ok_or(FetchError::BadUrl)?;
    let port = uri.port_u16().unwrap_or(80);
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let ip = if bare.eq_ignore_ascii_case("localhost") {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    } else {
        bare.parse::<IpAddr>()
            .map_err(|_| FetchError::Refused(format!("host {host}")))?
    };
    if !ip.is_loopback() {
        return Err(FetchError::Refused(format!("host {host}")));
    }
    Ok(SocketAddr::new(ip, port))
}

impl Fetcher for LoopbackFetcher {
    fn fetch(&self, request: FetchRequest) -> BoxFuture<'_, Result<FetchResponse, FetchError>> {
        Box::pin(async move {
            let uri: Uri = request.url.parse().map_err(|_| FetchError::BadUrl)?;
            let addr = loopback_target(&uri)?;
            match tokio::time::timeout(self.timeout, exchange(addr, uri, request)).await {
                Ok(result) => result,
                Err(_) => Err(FetchError::Timeout),
            }
        })
    }
}

async fn exchange(
    addr: SocketAddr,
    uri: Uri,
    request: FetchRequest,
) -> Result<FetchResponse, FetchError> {
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| FetchError::Exchange(e.kind().to_string()))?;
    let io = hyper_util::rt::TokioIo::new(stream);
    let (mut sender, conn) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| FetchError::Exchange(e.to_string()))?;
    let driver = tokio::spawn(async move {
        let _ = conn.await;
    });
    let authority = uri
        .authority()
        .map(|a| a.as_str().to_owned())
        .ok_or(FetchError::BadUrl)?;
    let path = uri
        .path_and_query()
        .map_or("/".to_owned(), |p| p.as_str().to_owned());
    let method = match request.method {
        FetchMethod::Get => hyper::Method::GET,
        FetchMethod::Post => hyper::Method::POST,
    };
    let mut builder = Request::builder()
        .method(method)
        .uri(path)
        .header(hyper::header::HOST, authority);
    for (name, value) in &request.headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    let body = Full::new(Bytes::from(request.body.unwrap_or_default()));
    let http_request = builder
        .body(body)
        .map_err(|_| FetchError::Exchange("the request could not be built".into()))?;
    let response = sender
        .send_request(http_request)
        .await
        .map_err(|e| FetchError::Exchange(e.to_string()))?;
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .filter_map(|(n, v)| Some((n.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .collect();
    let limit = request.max_body;
    let collected = Limited::new(response.into_body(), limit)
        .collect()
        .await
        .map_err(|e| {
            if e.is::<http_body_util::LengthLimitError>() {
                FetchError::BodyTooLarge { limit }
            } else {
                FetchError::Exchange(e.to_string())
            }
        })?;
    driver.abort();
    Ok(FetchResponse {
        status,
        headers,
        body: collected.to_bytes().to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_http_is_dialled() {
        let ok = |u: &str| loopback_target(&u.parse().unwrap());
        assert_eq!(ok("http://127.0.0.1:8/x").unwrap().port(), 8);
        assert_eq!(ok("http://[::1]:9/").unwrap().port(), 9);
        assert_eq!(
            ok("http://localhost:7/").unwrap(),
            "127.0.0.1:7".parse().unwrap()
        );
        assert!(matches!(
            ok("http://10.0.0.1/"),
            Err(FetchError::Refused(_))
        ));
        assert!(matches!(
            ok("http://example.com/"),
            Err(FetchError::Refused(_))
        ));
        assert!(matches!(
            ok("https://127.0.0.1/"),
            Err(FetchError::Refused(_))
        ));
    }

    #[test]
    fn debug_hides_bodies_and_header_values() {
        let mut request =
            FetchRequest::post_form("http://127.0.0.1/t", "code=SECRETCODE".into(), 9);
        request
            .headers
            .push(("authorization".into(), "Basic SECRETBASIC".into()));
        let shown = format!("{request:?}");
        assert!(!shown.contains("SECRET"), "{shown}");
        assert!(shown.contains("authorization"));
        let response = FetchResponse {
            status: 200,
            headers: vec![("set-cookie".into(), "SECRETCOOKIE".into())],
            body: b"{\"access_token\":\"SECRETTOKEN\"}".to_vec(),
        };
        assert!(!format!("{response:?}").contains("SECRET"));
    }
}
