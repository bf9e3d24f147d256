//! [`SafeFetcher`]: one bounded HTTP/1.1 exchange through the SSRF-safe dialer, for the
//! OAuth documents and endpoints of both roles (the client's metadata, registration and token
//! requests; the server's JWKS and introspection requests).
//!
//! - **Dial policy fixed from a base URL** ([`SafeFetcher::for_base`]): the address of every
//!   dial is resolved and checked ([`super::dial::AddressPolicy`]); loopback, private and
//!   link-local addresses are refused unless the base URL itself names such a target. For
//!   the client the base is the MCP server the user chose, for the server the key set or
//!   introspection endpoint the operator configured — never a URL a fetched document named,
//!   so metadata cannot steer a request to `169.254.169.254` or an internal host.
//! - **HTTPS** through the same rustls setup as the client transport (feature `https`;
//!   Mozilla roots plus [`SafeFetcher::add_root_certificate`]).
//! - **Bounds**: the body is read under the caller's cap, the whole exchange under
//!   [`SafeFetcher::timeout`] ([`DEFAULT_SAFE_FETCH_TIMEOUT`]), the dial under
//!   [`super::dial::DIAL_TIMEOUT`]; redirects are never followed (a `3xx` comes back as it
//!   is, `Location` included, for the caller to judge).
//! - The resolver and connector are injectable, so a test proves a refusal by recording that
//!   no dial happened.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Bytes;
use hyper::{Method, Request, Uri};

use super::dial::{
    AddressPolicy, Connect, DialError, DialSettings, Resolve, SystemResolver, TcpConnect,
    DIAL_TIMEOUT,
};

/// Time a whole fetch (dial, request, complete body) may take by default: OAuth documents
/// and token answers are small, and a user's request waits behind them.
pub const DEFAULT_SAFE_FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a fetch produced no response. Never carries header values or bodies.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SafeFetchError {
    /// The URL is not an absolute `http`/`https` URL with a host and without credentials.
    #[error("the URL is not an absolute http(s) URL without credentials")]
    BadUrl,
    /// No connection: resolution, the address check, TCP or TLS.
    #[error(transparent)]
    Dial(#[from] DialError),
    /// The exchange failed after the connection was open.
    #[error("the exchange failed: {0}")]
    Exchange(String),
    /// The body is longer than the caller's cap.
    #[error("the response body exceeds {limit} bytes")]
    BodyTooLarge {
        /// The cap.
        limit: usize,
    },
    /// The whole exchange took longer than the fetcher's time-out.
    #[error("the fetch did not finish within {limit:?}")]
    Timeout {
        /// The time-out.
        limit: Duration,
    },
}

/// A response: status, headers whose values are text, the body.
#[derive(Clone)]
pub struct SafeResponse {
    /// The HTTP status.
    pub status: u16,
    /// Headers (lower-case names) whose values are visible ASCII, in order.
    pub headers: Vec<(String, String)>,
    /// The body, at most the cap.
    pub body: Bytes,
}

impl fmt::Debug for SafeResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("SafeResponse")
            .field("status", &self.status)
            .field("headers", &names)
            .field("body_bytes", &self.body.len())
            .finish()
    }
}

/// The SSRF-safe fetcher; see the module documentation.
#[derive(Clone)]
pub struct SafeFetcher {
    settings: Arc<DialSettings>,
    timeout: Duration,
    #[cfg(feature = "https")]
    roots: super::tls::Roots,
}

impl fmt::Debug for SafeFetcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SafeFetcher")
            .field("policy", &self.settings.policy)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

fn checked_uri(url: &str) -> Result<Uri, SafeFetchError> {
    let uri: Uri = url.parse().map_err(|_| SafeFetchError::BadUrl)?;
    let authority = uri.authority().ok_or(SafeFetchError::BadUrl)?;
    if !matches!(uri.scheme_str(), Some("http" | "https"))
        || uri.host().is_none_or(str::is_empty)
        || authority.as_str().contains('@')
    {
        return Err(SafeFetchError::BadUrl);
    }
    Ok(uri)
}

impl SafeFetcher {
    /// A fetcher whose dial policy is fixed from `base_url`'s host (see the module docs),
    /// with the system resolver, plain TCP and the bundled roots.
    ///
    /// # Errors
    /// [`SafeFetchError::BadUrl`] when `base_url` is not an absolute `http(s)` URL.
    pub fn for_base(base_url: &str) -> Result<SafeFetcher, SafeFetchError> {
        let base = checked_uri(base_url)?;
        #[cfg(feature = "https")]
        let roots = super::tls::Roots::default();
        let settings = DialSettings {
            policy: AddressPolicy::for_host(base.host().unwrap_or_default()),
            resolver: Arc::new(SystemResolver),
            connector: Arc::new(TcpConnect),
            timeout: DIAL_TIMEOUT,
            #[cfg(feature = "https")]
            tls: super::tls::config(&roots).map_err(|e| SafeFetchError::Dial(DialError::Tls(e)))?,
        };
        Ok(SafeFetcher {
            settings: Arc::new(settings),
            timeout: DEFAULT_SAFE_FETCH_TIMEOUT,
            #[cfg(feature = "https")]
            roots,
        })
    }

    fn settings_mut(&mut self) -> &mut DialSettings {
        Arc::make_mut(&mut self.settings)
    }

    /// Resolves names through `resolver` (every answer is still checked).
    #[must_use]
    pub fn resolver(mut self, resolver: Arc<dyn Resolve>) -> SafeFetcher {
        self.settings_mut().resolver = resolver;
        self
    }

    /// Connects through `connector` (it only ever receives checked addresses).
    #[must_use]
    pub fn connector(mut self, connector: Arc<dyn Connect>) -> SafeFetcher {
        self.settings_mut().connector = connector;
        self
    }

    /// Also allows private and CGNAT addresses for any name (an intranet deployment).
    #[must_use]
    pub fn allow_private_networks(mut self) -> SafeFetcher {
        let policy = self.settings.policy.clone().allow_private_networks();
        self.settings_mut().policy = policy;
        self
    }

    /// The bound on one whole exchange.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> SafeFetcher {
        self.timeout = timeout;
        self
    }

    /// Also trusts the DER root certificate `der` (a private CA).
    ///
    /// # Errors
    /// [`SafeFetchError::Dial`] with `TlsError::BadRootCertificate` when it does not parse.
    #[cfg(feature = "https")]
    pub fn add_root_certificate(mut self, der: Vec<u8>) -> Result<SafeFetcher, SafeFetchError> {
        self.roots
            .custom
            .push(tokio_rustls::rustls::pki_types::CertificateDer::from(der));
        let config =
            super::tls::config(&self.roots).map_err(|e| SafeFetchError::Dial(DialError::Tls(e)))?;
        self.settings_mut().tls = config;
        Ok(self)
    }

    /// One exchange: `method` to `url` with `headers` and `body`, the response body read
    /// under `max_body` bytes.
    ///
    /// # Errors
    /// [`SafeFetchError`]; a `3xx` is a response, not an error.
    pub async fn fetch(
        &self,
        method: Method,
        url: &str,
        headers: &[(String, String)],
        body: Option<Bytes>,
        max_body: usize,
    ) -> Result<SafeResponse, SafeFetchError> {
        let uri = checked_uri(url)?;
        let exchange = self.exchange(method, uri, headers, body, max_body);
        tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| SafeFetchError::Timeout {
                limit: self.timeout,
            })?
    }

    async fn exchange(
        &self,
        method: Method,
        uri: Uri,
        headers: &[(String, String)],
        body: Option<Bytes>,
        max_body: usize,
    ) -> Result<SafeResponse, SafeFetchError> {
        let stream = self.settings.dial_within(&uri).await?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(stream)
            .await
            .map_err(|e| SafeFetchError::Exchange(e.to_string()))?;
        let driver = tokio::spawn(async move {
            let _ = conn.await;
        });
        let authority = uri
            .authority()
            .map(|a| a.as_str().to_owned())
            .ok_or(SafeFetchError::BadUrl)?;
        let path = uri
            .path_and_query()
            .map_or("/".to_owned(), |p| p.as_str().to_owned());
        let mut builder = Request::builder()
            .method(method)
            .uri(path)
            .header(hyper::header::HOST, authority);
        for (name, value) in headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        let request = builder
            .body(Full::new(body.unwrap_or_default()))
            .map_err(|_| SafeFetchError::Exchange("the request could not be built".into()))?;
        let outcome = async {
            let response = sender
                .send_request(request)
                .await
                .map_err(|e| SafeFetchError::Exchange(e.to_string()))?;
            let status = response.status().as_u16();
            let headers = response
                .headers()
                .iter()
                .filter_map(|(n, v)| Some((n.as_str().to_owned(), v.to_str().ok()?.to_owned())))
                .collect();
            let body = Limited::new(response.into_body(), max_body)
                .collect()
                .await
                .map_err(|e| {
                    if e.is::<http_body_util::LengthLimitError>() {
                        SafeFetchError::BodyTooLarge { limit: max_body }
                    } else {
                        SafeFetchError::Exchange(e.to_string())
                    }
                })?
                .to_bytes();
            Ok(SafeResponse {
                status,
                headers,
                body,
            })
        }
        .await;
        driver.abort();
        outcome
    }
}
