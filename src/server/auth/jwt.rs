//! A JWT access-token verifier (RFC 9068 style tokens) with a bounded, cached JWKS.
//!
//! Signatures are checked by `jsonwebtoken` (RustCrypto backend); everything else is checked
//! here against an injectable clock, so the bounds are exact and testable:
//!
//! - the header's `alg` must be on the allow-list (`none` never is; `HS*` only when a shared
//!   secret is configured, and then only with that secret, never with a key-set key); a `crit`
//!   header is refused (no extension is understood); keys embedded in the token (`jwk`, `jku`,
//!   `x5u`) are ignored;
//! - the header's `typ` must say this is an access token (RFC 9068 §4: `at+jwt` or
//!   `application/at+jwt`, compared without regard to case as media types are); see
//!   [`TokenTyp`] for whether a token without `typ` is taken (by default it is not);
//! - the claims go through the checker the introspection verifier shares: `iss` is required
//!   and must be one of the configured issuers; `aud` (a string or an array) must contain
//!   this resource's identifier (RFC 8707); `exp` is required: a token is expired once
//!   `now >= exp + leeway`; `nbf`, when present, makes it not yet valid while
//!   `now + leeway < nbf`; `sub` is required (the principal).
//!
//! Keys come from a JWKS URL through a [`Fetcher`]: the document is read under
//! [`MAX_JWKS_BYTES`] with at most [`MAX_JWKS_KEYS`] keys, cached for a TTL (at most
//! [`MAX_JWKS_TTL`]), and refetched when stale or when a token names an unknown `kid`, but
//! never more often than once per refetch interval ([`DEFAULT_JWKS_REFETCH_INTERVAL`]), so a
//! stream of tokens with made-up key ids cannot turn the server into a flood against the
//! authorization server. A fetch holds the cache lock, so concurrent verifications share one
//! fetch (bounded by its time-out) rather than each starting their own.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use hyper::header::{self, HeaderValue};
use hyper::Method;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;

use super::claims::{ClaimRules, Need};
use super::fetch::{fetch_checked, FetchError, FetchRequest, Fetcher, DEFAULT_FETCH_TIMEOUT};
use super::{BearerToken, BoxFuture, Principal, TokenVerifier, VerifyError};
use crate::core::{Clock, SystemClock};

/// Default clock skew tolerated on `exp` and `nbf`: small, because every second of leeway is a
/// second an expired token still works.
pub const DEFAULT_LEEWAY: Duration = Duration::from_secs(30);

/// Largest leeway a configuration may ask for; more would make `exp` meaningless.
pub const MAX_LEEWAY: Duration = Duration::from_secs(300);

/// Default time a fetched key set is trusted before it is fetched again.
pub const DEFAULT_JWKS_TTL: Duration = Duration::from_secs(300);

/// Longest TTL a configuration may ask for, so a revoked key leaves the cache within a day.
pub const MAX_JWKS_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// Default least time between two key-set fetches (an unknown `kid` refetches at most this
/// often).
pub const DEFAULT_JWKS_REFETCH_INTERVAL: Duration = Duration::from_secs(30);

/// Largest key-set document read; real ones hold a handful of keys in a few KiB.
pub const MAX_JWKS_BYTES: usize = 256 * 1024;

/// Most keys taken from one key set; a larger set is refused as a whole rather than
/// truncated (which key would be dropped would be arbitrary).
pub const MAX_JWKS_KEYS: usize = 64;

/// The asymmetric algorithms allowed when none are configured.
const DEFAULT_ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// Which JOSE `typ` header values mark a token as an access token.
///
/// RFC 9068 §4 has the resource server refuse any JWT whose `typ` is not `at+jwt` (or
/// `application/at+jwt`): that is what keeps an ID token, a logout token or any other JWT
/// the same issuer signs from being replayed as an access token. The default follows it as
/// written, so a token without `typ` is refused too. Issuers that predate RFC 9068 often
/// omit `typ`; [`TokenTyp::AtJwtOrAbsent`] takes those, and then the audience check (which
/// must name this resource, where an ID token names the client) is what keeps other JWTs
/// out. A `typ` of any other value (`JWT` included) is refused under both.
///
/// Some identity providers issue access tokens typed plainly `JWT` (the JOSE default), as
/// their ID tokens are. [`TokenTyp::AtJwtOrPlainJwt`] is the explicit opt-in for those: it
/// also takes `JWT` (and `application/jwt`) and a missing `typ`, leaving the audience
/// (RFC 8707: this resource), issuer and expiry checks as the only thing that tells an access
/// token from an ID token of the same issuer. Off by default; choose it only for such a
/// provider, whose ID tokens must then never carry this resource as their audience.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TokenTyp {
    /// `at+jwt` or `application/at+jwt` only (the default; RFC 9068 §4).
    #[default]
    AtJwt,
    /// Also a token with no `typ` header at all.
    AtJwtOrAbsent,
    /// Also `typ: JWT` / `application/jwt` (any case) and no `typ`: for providers that issue
    /// plain JWT access tokens (see above). Never the default.
    AtJwtOrPlainJwt,
}

impl TokenTyp {
    /// Whether a header's `typ` (absent: `None`) is acceptable.
    fn accepts(self, typ: Option<&Value>) -> bool {
        match typ {
            None => self != TokenTyp::AtJwt,
            Some(Value::String(t)) => {
                t.eq_ignore_ascii_case("at+jwt")
                    || t.eq_ignore_ascii_case("application/at+jwt")
                    || (self == TokenTyp::AtJwtOrPlainJwt
                        && (t.eq_ignore_ascii_case("jwt")
                            || t.eq_ignore_ascii_case("application/jwt")))
            }
            Some(_) => false,
        }
    }
}

/// A JWT verifier configuration that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JwtConfigError {
    /// The resource identifier (expected audience) is empty.
    #[error("the resource identifier (audience) is empty")]
    NoResource,
    /// No trusted issuer.
    #[error("at least one issuer is required")]
    NoIssuer,
    /// The algorithm allow-list is empty.
    #[error("the algorithm allow-list is empty")]
    NoAlgorithm,
    /// An `HS*` algorithm is allowed but no shared secret is configured.
    #[error("HS* algorithms need a shared secret")]
    HmacWithoutSecret,
    /// An asymmetric algorithm is allowed but no key set is configured.
    #[error("asymmetric algorithms need a JWKS URL and fetcher")]
    AsymmetricWithoutJwks,
    /// The leeway exceeds [`MAX_LEEWAY`].
    #[error("the leeway exceeds {MAX_LEEWAY:?}")]
    LeewayTooLarge,
    /// The TTL exceeds [`MAX_JWKS_TTL`] or is shorter than the refetch interval.
    #[error("the key-set TTL must be at least the refetch interval and at most {MAX_JWKS_TTL:?}")]
    Ttl,
}

/// Builds a [`JwtVerifier`]; see [`JwtVerifier::builder`].
pub struct JwtBuilder {
    resource: String,
    issuers: Vec<String>,
    algorithms: Vec<Algorithm>,
    secret: Option<Vec<u8>>,
    jwks: Option<(String, Arc<dyn Fetcher>)>,
    leeway: Duration,
    ttl: Duration,
    refetch_interval: Duration,
    fetch_timeout: Duration,
    typ: TokenTyp,
    clock: Arc<dyn Clock>,
}

impl fmt::Debug for JwtBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JwtBuilder")
            .field("resource", &self.resource)
            .field("issuers", &self.issuers)
            .field("algorithms", &self.algorithms)
            .field("secret", &self.secret.as_ref().map(|_| "<redacted>"))
            .finish_non_exhaustive()
    }
}

impl JwtBuilder {
    /// Trusts tokens from this issuer (`iss`, compared exactly).
    #[must_use]
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuers.push(issuer.into());
        self
    }

    /// The algorithm allow-list (default: the asymmetric RS*, PS*, ES256, ES384, EdDSA).
    #[must_use]
    pub fn algorithms(mut self, algorithms: impl IntoIterator<Item = Algorithm>) -> Self {
        self.algorithms = algorithms.into_iter().collect();
        self
    }

    /// A shared secret for `HS*` tokens (which must also be on the allow-list).
    #[must_use]
    pub fn hmac_secret(mut self, secret: impl Into<Vec<u8>>) -> Self {
        self.secret = Some(secret.into());
        self
    }

    /// The key set's URL and the fetcher that reads it.
    #[must_use]
    pub fn jwks(mut self, url: impl Into<String>, fetcher: impl Fetcher) -> Self {
        self.jwks = Some((url.into(), Arc::new(fetcher)));
        self
    }

    /// Clock skew tolerated on `exp` / `nbf` (default [`DEFAULT_LEEWAY`], at most
    /// [`MAX_LEEWAY`]); whole seconds.
    #[must_use]
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// How long a fetched key set is used (default [`DEFAULT_JWKS_TTL`]).
    #[must_use]
    pub fn jwks_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// Least time between two key-set fetches (default [`DEFAULT_JWKS_REFETCH_INTERVAL`]).
    #[must_use]
    pub fn jwks_refetch_interval(mut self, interval: Duration) -> Self {
        self.refetch_interval = interval;
        self
    }

    /// Time a key-set fetch may take (default [`DEFAULT_FETCH_TIMEOUT`]).
    #[must_use]
    pub fn fetch_timeout(mut self, timeout: Duration) -> Self {
        self.fetch_timeout = timeout;
        self
    }

    /// Which `typ` headers are taken (default [`TokenTyp::AtJwt`]).
    #[must_use]
    pub fn token_typ(mut self, typ: TokenTyp) -> Self {
        self.typ = typ;
        self
    }

    /// The clock `exp`, `nbf` and the cache read (default [`SystemClock`]; wall time, as the
    /// claims are).
    #[must_use]
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Checks the configuration.
    ///
    /// # Errors
    /// [`JwtConfigError`] when it cannot verify anything safely.
    pub fn build(self) -> Result<JwtVerifier, JwtConfigError> {
        if self.resource.is_empty() {
            return Err(JwtConfigError::NoResource);
        }
        if self.issuers.is_empty() {
            return Err(JwtConfigError::NoIssuer);
        }
        if self.algorithms.is_empty() {
            return Err(JwtConfigError::NoAlgorithm);
        }
        let hmac =
            |a: &Algorithm| matches!(a, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512);
        if self.algorithms.iter().any(hmac) && self.secret.is_none() {
            return Err(JwtConfigError::HmacWithoutSecret);
        }
        if self.algorithms.iter().any(|a| !hmac(a)) && self.jwks.is_none() {
            return Err(JwtConfigError::AsymmetricWithoutJwks);
        }
        if self.leeway > MAX_LEEWAY {
            return Err(JwtConfigError::LeewayTooLarge);
        }
        if self.ttl > MAX_JWKS_TTL || self.ttl < self.refetch_interval {
            return Err(JwtConfigError::Ttl);
        }
        let jwks = self.jwks.map(|(url, fetcher)| Jwks {
            url,
            fetcher,
            ttl_ms: millis(self.ttl),
            interval_ms: millis(self.refetch_interval),
            timeout: self.fetch_timeout,
            state: tokio::sync::Mutex::new(KeyState::default()),
        });
        Ok(JwtVerifier {
            rules: ClaimRules {
                resource: self.resource,
                issuers: self.issuers.into_iter().collect(),
                iss: Need::Required,
                exp: Need::Required,
                leeway_s: self.leeway.as_secs(),
                clock: self.clock,
            },
            algorithms: self.algorithms,
            secret: self.secret.map(|s| DecodingKey::from_secret(&s)),
            jwks,
            typ: self.typ,
        })
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Verifies JWT access tokens; see the module docs for every check.
pub struct JwtVerifier {
    rules: ClaimRules,
    algorithms: Vec<Algorithm>,
    secret: Option<DecodingKey>,
    jwks: Option<Jwks>,
    typ: TokenTyp,
}

impl fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("resource", &self.rules.resource)
            .field("issuers", &self.rules.issuers)
            .field("algorithms", &self.algorithms)
            .field("secret", &self.secret.as_ref().map(|_| "<redacted>"))
            .field("jwks", &self.jwks.as_ref().map(|j| &j.url))
            .field("leeway_s", &self.rules.leeway_s)
            .field("typ", &self.typ)
            .finish_non_exhaustive()
    }
}

impl JwtVerifier {
    /// Starts a verifier for tokens whose `aud` names `resource` (this server's canonical URI,
    /// the same string as [`AuthConfig::resource`](super::AuthConfig::resource)).
    #[must_use]
    pub fn builder(resource: impl Into<String>) -> JwtBuilder {
        JwtBuilder {
            resource: resource.into(),
            issuers: Vec::new(),
            algorithms: DEFAULT_ALGORITHMS.to_vec(),
            secret: None,
            jwks: None,
            leeway: DEFAULT_LEEWAY,
            ttl: DEFAULT_JWKS_TTL,
            refetch_interval: DEFAULT_JWKS_REFETCH_INTERVAL,
            fetch_timeout: DEFAULT_FETCH_TIMEOUT,
            typ: TokenTyp::default(),
            clock: Arc::new(SystemClock::new()),
        }
    }

    async fn check(&self, token: &str) -> Result<Principal, VerifyError> {
        let (alg, kid) = self.read_header(token)?;
        let key = match alg {
            Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512 => self
                .secret
                .clone()
                .ok_or(VerifyError::AlgorithmNotAllowed)?,
            _ => {
                let jwks = self.jwks.as_ref().ok_or(VerifyError::AlgorithmNotAllowed)?;
                jwks.key(kid.as_deref(), alg, self.rules.clock.as_ref())
                    .await?
            }
        };
        let mut validation = Validation::new(alg);
        // Time, audience and issuer are checked below against the injected clock.
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.validate_aud = false;
        validation.required_spec_claims.clear();
        let data = jsonwebtoken::decode::<Value>(token, &key, &validation).map_err(|e| match e
            .kind()
        {
            jsonwebtoken::errors::ErrorKind::InvalidSignature => VerifyError::BadSignature,
            jsonwebtoken::errors::ErrorKind::InvalidAlgorithm => VerifyError::AlgorithmNotAllowed,
            _ => VerifyError::Malformed,
        })?;
        let claims = data.claims.as_object().ok_or(VerifyError::Malformed)?;
        self.rules.check(claims)
    }

    /// The allowed algorithm and `kid` of a compact JWS, read without trusting anything else.
    fn read_header(&self, token: &str) -> Result<(Algorithm, Option<String>), VerifyError> {
        let mut parts = token.split('.');
        let (Some(head), Some(_payload), Some(_sig), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(VerifyError::Malformed);
        };
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(head)
            .map_err(|_| VerifyError::Malformed)?;
        let header: Value = serde_json::from_slice(&bytes).map_err(|_| VerifyError::Malformed)?;
        let Some(object) = header.as_object() else {
            return Err(VerifyError::Malformed);
        };
        let alg = object
            .get("alg")
            .and_then(Value::as_str)
            .ok_or(VerifyError::Malformed)?;
        // `none` and anything unknown are simply not on the list.
        let alg = self
            .algorithms
            .iter()
            .copied()
            .find(|a| format!("{a:?}") == alg)
            .ok_or(VerifyError::AlgorithmNotAllowed)?;
        if object.contains_key("crit") {
            return Err(VerifyError::Malformed);
        }
        if !self.typ.accepts(object.get("typ")) {
            return Err(VerifyError::NotAnAccessToken);
        }
        let kid = match object.get("kid") {
            None => None,
            Some(Value::String(k)) => Some(k.clone()),
            Some(_) => return Err(VerifyError::Malformed),
        };
        Ok((alg, kid))
    }
}

impl TokenVerifier for JwtVerifier {
    fn verify<'a>(
        &'a self,
        token: &'a BearerToken,
    ) -> BoxFuture<'a, Result<Principal, VerifyError>> {
        Box::pin(self.check(token.expose()))
    }
}

/// The key set and its cache.
struct Jwks {
    url: String,
    fetcher: Arc<dyn Fetcher>,
    ttl_ms: u64,
    interval_ms: u64,
    timeout: Duration,
    state: tokio::sync::Mutex<KeyState>,
}

#[derive(Default)]
struct KeyState {
    keys: Vec<KeyEntry>,
    /// When the keys were fetched (clock ms); `None` before the first success.
    fetched_at: Option<u64>,
    /// When a fetch was last started, successful or not.
    last_attempt: Option<u64>,
    /// Why the last fetch failed, while it is the latest word.
    last_error: Option<FetchError>,
}

struct KeyEntry {
    kid: Option<String>,
    /// The JWK's own `alg`, when it states one.
    alg: Option<String>,
    kind: KeyKind,
    key: DecodingKey,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum KeyKind {
    Rsa,
    P256,
    P384,
    Ed25519,
}

fn kind_for(alg: Algorithm) -> Option<KeyKind> {
    match alg {
        Algorithm::RS256
        | Algorithm::RS384
        | Algorithm::RS512
        | Algorithm::PS256
        | Algorithm::PS384
        | Algorithm::PS512 => Some(KeyKind::Rsa),
        Algorithm::ES256 => Some(KeyKind::P256),
        Algorithm::ES384 => Some(KeyKind::P384),
        Algorithm::EdDSA => Some(KeyKind::Ed25519),
        Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512 => None,
    }
}

impl KeyState {
    fn find(&self, kid: Option<&str>, alg: Algorithm) -> Option<DecodingKey> {
        let kind = kind_for(alg)?;
        let name = format!("{alg:?}");
        let mut usable = self
            .keys
            .iter()
            .filter(|k| k.kind == kind && k.alg.as_deref().is_none_or(|a| a == name));
        match kid {
            Some(kid) => usable
                .find(|k| k.kid.as_deref() == Some(kid))
                .map(|k| k.key.clone()),
            // Without a `kid` only an unambiguous key will do.
            None => {
                let first = usable.next()?;
                usable.next().is_none().then(|| first.key.clone())
            }
        }
    }
}

impl Jwks {
    async fn key(
        &self,
        kid: Option<&str>,
        alg: Algorithm,
        clock: &dyn Clock,
    ) -> Result<DecodingKey, VerifyError> {
        let mut state = self.state.lock().await;
        let now = clock.now_ms();
        let fresh = state
            .fetched_at
            .is_some_and(|at| now < at.saturating_add(self.ttl_ms));
        if fresh {
            if let Some(key) = state.find(kid, alg) {
                return Ok(key);
            }
        }
        let allowed = state
            .last_attempt
            .is_none_or(|at| now >= at.saturating_add(self.interval_ms));
        if !allowed {
            return Err(match (&state.last_error, fresh) {
                (Some(e), false) => VerifyError::Upstream(e.clone()),
                _ => VerifyError::UnknownKey,
            });
        }
        state.last_attempt = Some(now);
        match self.fetch().await {
            Ok(keys) => {
                state.keys = keys;
                state.fetched_at = Some(now);
                state.last_error = None;
            }
            Err(e) => {
                tracing::warn!(url = %self.url, error = %e, "key set fetch failed");
                state.last_error = Some(e.clone());
                if !fresh {
                    // Stale keys are not used: a key that left the set may have been revoked.
                    state.keys.clear();
                    state.fetched_at = None;
                    return Err(VerifyError::Upstream(e));
                }
            }
        }
        state.find(kid, alg).ok_or(VerifyError::UnknownKey)
    }

    async fn fetch(&self) -> Result<Vec<KeyEntry>, FetchError> {
        let request = FetchRequest {
            method: Method::GET,
            url: self.url.clone(),
            headers: vec![(
                header::ACCEPT,
                HeaderValue::from_static("application/jwk-set+json, application/json"),
            )],
            body: None,
            max_body: MAX_JWKS_BYTES,
            timeout: self.timeout,
        };
        let response = fetch_checked(self.fetcher.as_ref(), request).await?;
        parse_jwks(&response.body)
    }
}

/// The usable signing keys of a JWKS document. Keys that are not for signatures, symmetric,
/// or not parseable are skipped; more than [`MAX_JWKS_KEYS`] entries refuse the set.
fn parse_jwks(body: &[u8]) -> Result<Vec<KeyEntry>, FetchError> {
    let doc: Value = serde_json::from_slice(body)
        .map_err(|_| FetchError::Malformed("the key set is not JSON"))?;
    let keys = doc
        .get("keys")
        .and_then(Value::as_array)
        .ok_or(FetchError::Malformed("the key set has no keys array"))?;
    if keys.len() > MAX_JWKS_KEYS {
        return Err(FetchError::Malformed("the key set has too many keys"));
    }
    let mut out = Vec::with_capacity(keys.len());
    for raw in keys {
        let Ok(jwk) = serde_json::from_value::<Jwk>(raw.clone()) else {
            continue;
        };
        if matches!(&jwk.common.public_key_use, Some(u) if *u != PublicKeyUse::Signature) {
            continue;
        }
        let kind = match &jwk.algorithm {
            AlgorithmParameters::RSA(_) => KeyKind::Rsa,
            AlgorithmParameters::EllipticCurve(p) => match p.curve {
                EllipticCurve::P256 => KeyKind::P256,
                EllipticCurve::P384 => KeyKind::P384,
                _ => continue,
            },
            AlgorithmParameters::OctetKeyPair(p) if p.curve == EllipticCurve::Ed25519 => {
                KeyKind::Ed25519
            }
            // Symmetric keys do not belong in a published key set.
            _ => continue,
        };
        let Ok(key) = DecodingKey::from_jwk(&jwk) else {
            continue;
        };
        out.push(KeyEntry {
            kid: jwk.common.key_id.clone(),
            alg: jwk.common.key_algorithm.map(|a| a.to_string()),
            kind,
            key,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// RFC 9068 §4: `at+jwt` in either spelling and any case; a missing `typ` only when
    /// configured; anything else (`JWT`, a non-string) never.
    #[test]
    fn rfc9068_typ_acceptance() {
        for typ in [
            "at+jwt",
            "application/at+jwt",
            "AT+JWT",
            "Application/At+Jwt",
        ] {
            let typ = json!(typ);
            assert!(TokenTyp::AtJwt.accepts(Some(&typ)), "{typ}");
            assert!(TokenTyp::AtJwtOrAbsent.accepts(Some(&typ)), "{typ}");
            assert!(TokenTyp::AtJwtOrPlainJwt.accepts(Some(&typ)), "{typ}");
        }
        // The plain-JWT opt-in: `JWT` / `application/jwt` in any case, and nothing else more.
        for typ in ["JWT", "jwt", "application/jwt", "Application/JWT"] {
            let typ = json!(typ);
            assert!(TokenTyp::AtJwtOrPlainJwt.accepts(Some(&typ)), "{typ}");
            assert!(!TokenTyp::AtJwt.accepts(Some(&typ)), "{typ}");
            assert!(!TokenTyp::AtJwtOrAbsent.accepts(Some(&typ)), "{typ}");
        }
        for typ in [
            json!("JWT "),
            json!("id_token+jwt"),
            json!("jose"),
            json!(1),
        ] {
            assert!(!TokenTyp::AtJwtOrPlainJwt.accepts(Some(&typ)), "{typ}");
        }
        assert!(TokenTyp::AtJwtOrPlainJwt.accepts(None));
        for typ in [
            json!("JWT"),
            json!("at+jwt "),
            json!("application/jwt"),
            json!(1),
        ] {
            assert!(!TokenTyp::AtJwt.accepts(Some(&typ)), "{typ}");
            assert!(!TokenTyp::AtJwtOrAbsent.accepts(Some(&typ)), "{typ}");
        }
        assert!(!TokenTyp::AtJwt.accepts(None));
        assert!(TokenTyp::AtJwtOrAbsent.accepts(None));
        assert_eq!(TokenTyp::default(), TokenTyp::AtJwt);
    }

    #[test]
    fn key_sets_skip_unusable_keys_and_refuse_oversized_ones() {
        let ec = json!({"kty": "EC", "crv": "P-256", "kid": "k1",
            "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
            "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"});
        let oct = json!({"kty": "oct", "k": "c2VjcmV0", "kid": "s"});
        let enc = json!({"kty": "EC", "crv": "P-256", "kid": "e", "use": "enc",
            "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
            "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"});
        let body =
            serde_json::to_vec(&json!({"keys": [ec, oct, enc, {"kty": "nope"}]})).expect("json");
        let keys = parse_jwks(&body).expect("parsed");
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].kid.as_deref(), Some("k1"));

        let many = |n: usize| {
            let keys: Vec<Value> = (0..n).map(|_| ec.clone()).collect();
            serde_json::to_vec(&json!({ "keys": keys })).expect("json")
        };
        assert_eq!(
            parse_jwks(&many(MAX_JWKS_KEYS)).map(|k| k.len()),
            Ok(MAX_JWKS_KEYS)
        );
        assert_eq!(
            parse_jwks(&many(MAX_JWKS_KEYS + 1)).err(),
            Some(FetchError::Malformed("the key set has too many keys"))
        );
    }

    #[test]
    fn configuration_bounds() {
        let base = || {
            JwtVerifier::builder("https://mcp.example.com/mcp")
                .issuer("https://auth.example.com")
                .hmac_secret(b"0123456789abcdef0123456789abcdef".to_vec())
                .algorithms([Algorithm::HS256])
        };
        assert!(base().build().is_ok());
        assert!(base().leeway(MAX_LEEWAY).build().is_ok());
        assert_eq!(
            base()
                .leeway(MAX_LEEWAY + Duration::from_secs(1))
                .build()
                .err(),
            Some(JwtConfigError::LeewayTooLarge)
        );
        assert!(base().jwks_ttl(MAX_JWKS_TTL).build().is_ok());
        assert_eq!(
            base()
                .jwks_ttl(MAX_JWKS_TTL + Duration::from_secs(1))
                .build()
                .err(),
            Some(JwtConfigError::Ttl)
        );
        assert_eq!(
            JwtVerifier::builder("https://mcp.example.com/mcp")
                .issuer("https://auth.example.com")
                .algorithms([Algorithm::HS256])
                .build()
                .err(),
            Some(JwtConfigError::HmacWithoutSecret)
        );
        assert_eq!(
            JwtVerifier::builder("https://mcp.example.com/mcp")
                .issuer("https://auth.example.com")
                .build()
                .err(),
            Some(JwtConfigError::AsymmetricWithoutJwks)
        );
        let shown = format!("{:?}", base().build().expect("built"));
        assert!(
            shown.contains("<redacted>") && !shown.contains("0123456789"),
            "{shown}"
        );
    }
}
