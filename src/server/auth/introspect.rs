//! An RFC 7662 token-introspection verifier: for opaque tokens, ask the authorization server.
//!
//! Each verification POSTs `token=…&token_type_hint=access_token` (form encoded) to the
//! introspection endpoint, authenticated with the resource server's client credentials
//! (HTTP Basic, RFC 7662 §2.1), and accepts the token only when the answer says
//! `"active": true`, its `aud` contains this resource (RFC 8707; an answer without `aud` is
//! refused), its `iss` (when present and issuers are configured) is trusted, its `exp` (when
//! present) has not passed (with the leeway), and it names a `sub`. Answers are not cached:
//! a revoked token stops working on the next request.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use hyper::body::Bytes;
use hyper::header::{self, HeaderValue};
use hyper::Method;
use serde_json::Value;

use super::fetch::{fetch_checked, FetchRequest, Fetcher, DEFAULT_FETCH_TIMEOUT};
use super::jwt::{numeric_date, token_scopes, DEFAULT_LEEWAY, MAX_LEEWAY};
use super::{BearerToken, BoxFuture, FetchError, Principal, TokenVerifier, VerifyError};
use crate::core::{Clock, SystemClock};

/// Largest introspection answer read: a JSON object of a few claims.
pub const MAX_INTROSPECTION_BYTES: usize = 64 * 1024;

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

    /// The clock `exp` is read against (default [`SystemClock`]).
    #[must_use]
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Checks the configuration.
    ///
    /// # Errors
    /// [`IntrospectionConfigError`] for an empty resource or endpoint or too large a leeway.
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
        Ok(IntrospectionVerifier { config: self })
    }
}

/// Verifies opaque tokens by RFC 7662 introspection; see the module docs.
#[derive(Debug)]
pub struct IntrospectionVerifier {
    config: IntrospectionBuilder,
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
            clock: Arc::new(SystemClock::new()),
        }
    }

    async fn check(&self, token: &str) -> Result<Principal, VerifyError> {
        let c = &self.config;
        let mut headers = vec![
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/x-www-form-urlencoded"),
            ),
            (header::ACCEPT, HeaderValue::from_static("application/json")),
        ];
        if let Some(basic) = c.credentials.as_ref().and_then(ClientCredentials::basic) {
            headers.push((header::AUTHORIZATION, basic));
        }
        let body = format!("token={}&token_type_hint=access_token", form_encode(token));
        let request = FetchRequest {
            method: Method::POST,
            url: c.endpoint.clone(),
            headers,
            body: Some(Bytes::from(body)),
            max_body: MAX_INTROSPECTION_BYTES,
            timeout: c.timeout,
        };
        let response = fetch_checked(c.fetcher.as_ref(), request)
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
        let audience_ok = match object.get("aud") {
            Some(Value::String(aud)) => *aud == c.resource,
            Some(Value::Array(auds)) => auds.iter().any(|a| a.as_str() == Some(&c.resource)),
            Some(_) => false,
            None => return Err(VerifyError::MissingClaim("aud")),
        };
        if !audience_ok {
            return Err(VerifyError::WrongAudience);
        }
        let iss = object.get("iss").and_then(Value::as_str);
        if !c.issuers.is_empty() && !iss.is_some_and(|i| c.issuers.contains(i)) {
            return Err(VerifyError::WrongIssuer);
        }
        let now = c.clock.now_ms() / 1000;
        let exp = match object.get("exp") {
            None => None,
            Some(v) => Some(numeric_date(Some(v)).ok_or(VerifyError::MissingClaim("exp"))?),
        };
        if exp.is_some_and(|exp| now >= exp.saturating_add(c.leeway.as_secs())) {
            return Err(VerifyError::Expired);
        }
        let sub = object
            .get("sub")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or(VerifyError::MissingClaim("sub"))?;
        let mut principal = Principal::new(sub).with_scopes(token_scopes(object));
        if let Some(iss) = iss {
            principal = principal.with_issuer(iss);
        }
        if let Some(client) = object.get("client_id").and_then(Value::as_str) {
            principal = principal.with_client_id(client);
        }
        principal.expires_at = exp;
        Ok(principal)
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
