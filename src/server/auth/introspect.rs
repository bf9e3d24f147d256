//! An RFC 7662 token-introspection verifier: for opaque tokens, ask the authorization server.
//!
//! Each verification POSTs `token=…&token_type_hint=access_token` (form encoded) to the
//! introspection endpoint, authenticated with the resource server's client credentials
//! (HTTP Basic, RFC 7662 §2.1), and accepts the token only when the answer says
//! `"active": true` and its claims pass the checker the JWT verifier shares: `aud` contains
//! this resource (RFC 8707; an answer without `aud` is refused), `iss` (required once issuers
//! are configured) is trusted, `exp` and `nbf` (when present) hold with the leeway, and it
//! names a `sub`.
//!
//! By default answers are not cached: a revoked token stops working on the next request.
//! [`IntrospectionBuilder::cache_ttl`] trades that for fewer round trips: an accepted answer
//! is reused for at most the TTL (at most [`MAX_INTROSPECTION_CACHE_TTL`]) and never past the
//! token's own `exp`, for at most [`MAX_INTROSPECTION_CACHE_ENTRIES`] tokens (when full, the
//! answer that would lapse soonest makes room). Refusals are never cached, and the cache is
//! keyed on the token's SHA-256, so no token is kept.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use hyper::body::Bytes;
use hyper::header::{self, HeaderValue};
use hyper::Method;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::claims::{ClaimRules, Need};
use super::fetch::{fetch_checked, FetchRequest, Fetcher, DEFAULT_FETCH_TIMEOUT};
use super::jwt::{DEFAULT_LEEWAY, MAX_LEEWAY};
use super::{BearerToken, BoxFuture, FetchError, Principal, TokenVerifier, VerifyError};
use crate::core::{Clock, SystemClock};

/// Largest introspection answer read: a JSON object of a few claims.
pub const MAX_INTROSPECTION_BYTES: usize = 64 * 1024;

/// Longest time an accepted introspection answer may be reused: every second of it is a
/// second a revoked token still works, so it stays short.
pub const MAX_INTROSPECTION_CACHE_TTL: Duration = Duration::from_secs(300);

/// Most introspection answers cached at once (each a principal of a few claims), so a stream
/// of distinct valid tokens cannot grow the server's memory without bound.
pub const MAX_INTROSPECTION_CACHE_ENTRIES: usize = 4096;

/// The resource server's own credentials at the authorization server. The secret never
/// appears in `Debug`.
#[derive(Clone)]
pub struct ClientCredentials {
    id: String,
    secret: String,
}

impl ClientCredentials {
    /// A client id and secret.
    #[must_use]
    pub fn new(id: impl Into<String>, secret: impl Into<String>) -> Self {
        ClientCredentials {
            id: id.into(),
            secret: secret.into(),
        }
    }

    /// `Basic base64(urlencode(id) ":" urlencode(secret))` (RFC 6749 §2.3.1).
    fn basic(&self) -> Option<HeaderValue> {
        let pair = format!("{}:{}", form_encode(&self.id), form_encode(&self.secret));
        let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
        let mut value = HeaderValue::from_str(&format!("Basic {encoded}")).ok()?;
        value.set_sensitive(true);
        Some(value)
    }
}

impl fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientCredentials")
            .field("id", &self.id)
            .field("secret", &"<redacted>")
            .finish()
    }
}

/// An introspection configuration that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IntrospectionConfigError {
    /// The resource identifier (expected audience) is empty.
    #[error("the resource identifier (audience) is empty")]
    NoResource,
    /// The endpoint URL is empty.
    #[error("the introspection endpoint is empty")]
    NoEndpoint,
    /// The leeway exceeds [`MAX_LEEWAY`].
    #[error("the leeway exceeds {MAX_LEEWAY:?}")]
    LeewayTooLarge,
    /// The cache TTL exceeds [`MAX_INTROSPECTION_CACHE_TTL`].
    #[error("the introspection cache TTL exceeds {MAX_INTROSPECTION_CACHE_TTL:?}")]
    CacheTtl,
}

/// Builds an [`IntrospectionVerifier`]; see [`IntrospectionVerifier::builder`].
pub struct IntrospectionBuilder {
    resource: String,
    endpoint: String,
    fetcher: Arc<dyn Fetcher>,
    credentials: Option<ClientCredentials>,
    issuers: BTreeSet<String>,
    leeway: Duration,
    timeout: Duration,
    cache_ttl: Duration,
    clock: Arc<dyn Clock>,
}

impl fmt::Debug for IntrospectionBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IntrospectionBuilder")
            .field("resource", &self.resource)
            .field("endpoint", &self.endpoint)
            .field("credentials", &self.credentials)
            .field("issuers", &self.issuers)
            .field("leeway", &self.leeway)
            .field("timeout", &self.timeout)
            .field("cache_ttl", &self.cache_ttl)
            .finish_non_exhaustive()
    }
}

impl IntrospectionBuilder {
    /// Authenticates to the endpoint with these credentials (HTTP Basic).
    #[must_use]
    pub fn credentials(mut self, credentials: ClientCredentials) -> Self {
        self.credentials = Some(credentials);
        self
    }

    /// Trusts answers whose `iss` is this issuer (when any issuer is configured, an answer
    /// with another `iss` is refused).
    #[must_use]
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuers.insert(issuer.into());
        self
    }

    /// Clock skew tolerated on `exp` (default [`DEFAULT_LEEWAY`]).
    #[must_use]
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// Time one introspection may take (default [`DEFAULT_FETCH_TIMEOUT`]).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Reuses an accepted answer for up to `ttl` (default zero: no cache; at most
    /// [`MAX_INTROSPECTION_CACHE_TTL`]), never past the token's `exp`. See the module docs.
    #[must_use]
    pub fn cache_ttl(mut self, ttl: Duration) -> Self {
        self.cache_ttl = ttl;
        self
    }

    /// The clock `exp`, `nbf` and the cache are read against (default [`SystemClock`]).
    #[must_use]
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Checks the configuration.
    ///
    /// # Errors
    /// [`IntrospectionConfigError`] for an empty resource or endpoint, too large a leeway or
    /// too long a cache TTL.
    pub fn build(self) -> Result<IntrospectionVerifier, IntrospectionConfigError> {
        if self.resource.is_empty() {
            return Err(IntrospectionConfigError::NoResource);
        }
        if self.endpoint.is_empty() {
            return Err(IntrospectionConfigError::NoEndpoint);
        }
        if self.leeway > MAX_LEEWAY {
            return Err(IntrospectionConfigError::LeewayTooLarge);
        }
        if self.cache_ttl > MAX_INTROSPECTION_CACHE_TTL {
            return Err(IntrospectionConfigError::CacheTtl);
        }
        Ok(IntrospectionVerifier {
            rules: ClaimRules {
                resource: self.resource,
                issuers: self.issuers,
                iss: Need::Optional,
                exp: Need::Optional,
                leeway_s: self.leeway.as_secs(),
                clock: self.clock,
            },
            endpoint: self.endpoint,
            fetcher: self.fetcher,
            credentials: self.credentials,
            timeout: self.timeout,
            cache: AnswerCache {
                ttl_ms: u64::try_from(self.cache_ttl.as_millis()).unwrap_or(u64::MAX),
                entries: Mutex::new(HashMap::new()),
            },
        })
    }
}

/// Verifies opaque tokens by RFC 7662 introspection; see the module docs.
pub struct IntrospectionVerifier {
    rules: ClaimRules,
    endpoint: String,
    fetcher: Arc<dyn Fetcher>,
    credentials: Option<ClientCredentials>,
    timeout: Duration,
    cache: AnswerCache,
}

impl fmt::Debug for IntrospectionVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IntrospectionVerifier")
            .field("resource", &self.rules.resource)
            .field("endpoint", &self.endpoint)
            .field("credentials", &self.credentials)
            .field("issuers", &self.rules.issuers)
            .field("leeway_s", &self.rules.leeway_s)
            .field("timeout", &self.timeout)
            .field("cache_ttl_ms", &self.cache.ttl_ms)
            .finish_non_exhaustive()
    }
}

/// Accepted answers by the token's SHA-256, each with the clock time (ms) it lapses at.
struct AnswerCache {
    /// Zero: nothing is cached.
    ttl_ms: u64,
    entries: Mutex<HashMap<[u8; 32], (Principal, u64)>>,
}

impl AnswerCache {
    fn get(&self, key: &[u8; 32], now_ms: u64) -> Option<Principal> {
        if self.ttl_ms == 0 {
            return None;
        }
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        match entries.get(key) {
            Some((principal, until)) if now_ms < *until => Some(principal.clone()),
            Some(_) => {
                entries.remove(key);
                None
            }
            None => None,
        }
    }

    fn put(&self, key: [u8; 32], principal: &Principal, now_ms: u64) {
        if self.ttl_ms == 0 {
            return;
        }
        let mut until = now_ms.saturating_add(self.ttl_ms);
        if let Some(exp) = principal.expires_at {
            until = until.min(exp.saturating_mul(1000));
        }
        if until <= now_ms {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= MAX_INTROSPECTION_CACHE_ENTRIES && !entries.contains_key(&key) {
            entries.retain(|_, (_, lapses)| now_ms < *lapses);
            if entries.len() >= MAX_INTROSPECTION_CACHE_ENTRIES {
                let soonest = entries
                    .iter()
                    .min_by_key(|(_, (_, lapses))| *lapses)
                    .map(|(k, _)| *k);
                if let Some(soonest) = soonest {
                    entries.remove(&soonest);
                }
            }
        }
        entries.insert(key, (principal.clone(), until));
    }
}

impl IntrospectionVerifier {
    /// Starts a verifier for tokens meant for `resource`, introspected at `endpoint` through
    /// `fetcher`.
    #[must_use]
    pub fn builder(
        resource: impl Into<String>,
        endpoint: impl Into<String>,
        fetcher: impl Fetcher,
    ) -> IntrospectionBuilder {
        IntrospectionBuilder {
            resource: resource.into(),
            endpoint: endpoint.into(),
            fetcher: Arc::new(fetcher),
            credentials: None,
            issuers: BTreeSet::new(),
            leeway: DEFAULT_LEEWAY,
            timeout: DEFAULT_FETCH_TIMEOUT,
            cache_ttl: Duration::ZERO,
            clock: Arc::new(SystemClock::new()),
        }
    }

    async fn check(&self, token: &str) -> Result<Principal, VerifyError> {
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(principal) = self.cache.get(&key, self.rules.clock.now_ms()) {
            return Ok(principal);
        }
        let principal = self.introspect(token).await?;
        self.cache.put(key, &principal, self.rules.clock.now_ms());
        Ok(principal)
    }

    async fn introspect(&self, token: &str) -> Result<Principal, VerifyError> {
        let mut headers = vec![
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/x-www-form-urlencoded"),
            ),
            (header::ACCEPT, HeaderValue::from_static("application/json")),
        ];
        if let Some(basic) = self.credentials.as_ref().and_then(ClientCredentials::basic) {
            headers.push((header::AUTHORIZATION, basic));
        }
        let body = format!("token={}&token_type_hint=access_token", form_encode(token));
        let request = FetchRequest {
            method: Method::POST,
            url: self.endpoint.clone(),
            headers,
            body: Some(Bytes::from(body)),
            max_body: MAX_INTROSPECTION_BYTES,
            timeout: self.timeout,
        };
        let response = fetch_checked(self.fetcher.as_ref(), request)
            .await
            .map_err(VerifyError::Upstream)?;
        let answer: Value = serde_json::from_slice(&response.body).map_err(|_| {
            VerifyError::Upstream(FetchError::Malformed(
                "the introspection answer is not JSON",
            ))
        })?;
        let object = answer
            .as_object()
            .ok_or(VerifyError::Upstream(FetchError::Malformed(
                "the introspection answer is not an object",
            )))?;
        if object.get("active") != Some(&Value::Bool(true)) {
            return Err(VerifyError::Inactive);
        }
        self.rules.check(object)
    }
}

impl TokenVerifier for IntrospectionVerifier {
    fn verify<'a>(
        &'a self,
        token: &'a BearerToken,
    ) -> BoxFuture<'a, Result<Principal, VerifyError>> {
        Box::pin(self.check(token.expose()))
    }
}

/// `application/x-www-form-urlencoded` encoding of one value: unreserved bytes as they are,
/// everything else percent-encoded (space too, never `+`).
fn form_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_encoding_escapes_everything_but_unreserved() {
        assert_eq!(form_encode("a.b-c_d~e"), "a.b-c_d~e");
        assert_eq!(form_encode("a+b/c=d e"), "a%2Bb%2Fc%3Dd%20e");
        assert_eq!(form_encode("é"), "%C3%A9");
    }

    #[test]
    fn credentials_debug_hides_the_secret() {
        let c = ClientCredentials::new("rs", "hunter2-secret");
        let shown = format!("{c:?}");
        assert!(
            shown.contains("rs") && !shown.contains("hunter2"),
            "{shown}"
        );
        let basic = c.basic().expect("header");
        assert!(basic.is_sensitive());
        // base64("rs:hunter2-secret")
        assert_eq!(basic.to_str().ok(), Some("Basic cnM6aHVudGVyMi1zZWNyZXQ="));
    }
}
