//! The OAuth 2.1 protected-resource layer for the Streamable HTTP host.
//!
//! [`AuthLayer`] wraps any HTTP service (normally [`McpHttp`](crate::server::http::McpHttp))
//! and, for every request:
//!
//! 1. serves the RFC 9728 Protected Resource Metadata document on `GET` at
//!    `/.well-known/oauth-protected-resource` and at the same path with the resource's path
//!    appended (RFC 9728 §3.1, e.g. `/.well-known/oauth-protected-resource/mcp`), with
//!    `Access-Control-Allow-Origin: *` (and no credentials) so browser clients on any origin
//!    can read it; `OPTIONS` there is the CORS preflight (204); any other method is 405 with
//!    `Allow: GET, OPTIONS`;
//! 2. takes the access token from the `Authorization: Bearer` header only. A token in the query
//!    string (`access_token=`) or two `Authorization` headers are 400 `invalid_request`; no
//!    token is 401 with `WWW-Authenticate: Bearer resource_metadata="…"` (and `scope="…"` when
//!    this request needs scopes); a token that does not verify is 401 with
//!    `error="invalid_token"`;
//! 3. works out the scopes this request needs from the configured map keyed on the JSON-RPC
//!    method and the tool / prompt name or resource URI (read from the `Mcp-Method` and
//!    `Mcp-Name` headers, see below), plus an optional callback for anything finer; a token
//!    that lacks one of them (after scope implications) is 403 with
//!    `error="insufficient_scope"`, `scope` (every scope the operation needs) and
//!    `resource_metadata`;
//! 4. hands the request on with the verified [`Principal`] and a
//!    [`Caller`] built from it as request extensions. `McpHttp` runs the
//!    request under that caller, so per-caller policy, cursors and the continuation
//!    (`requestState`) principal binding all use the token's subject. The `Authorization`
//!    header itself is removed before the inner service sees it (a token is never forwarded).
//!
//! Every request is authenticated on its own; nothing is remembered per connection.
//! Refusals carry an empty body; the rest of the refused request body is read and discarded
//! (bounded by [`REFUSAL_DRAIN_BYTES`] and [`REFUSAL_DRAIN_TIME`]) so a client that writes its
//! whole body before reading sees the answer.
//!
//! # Why the method and name headers can be trusted
//!
//! The layer runs before the body is read, so it keys scopes on the mirrored headers.
//! `McpHttp` then checks, for every **request**, that `Mcp-Method` equals the body's `method`
//! and that `Mcp-Name` equals `params.name` (`tools/call`, `prompts/get`) or `params.uri`
//! (`resources/read`), base64 sentinel decoded, and answers 400 / -32020 otherwise
//! (`wire::headers::check_request_headers`). A request whose headers lie about its method or
//! target is therefore never dispatched. `Mcp-Name` is read only for those three methods, the
//! ones the host checks. Two cases the host does not check: a **notification** (the revision
//! defines no header rules for them) and a removed initialise-era method sent without
//! `MCP-Protocol-Version` (answered -32601 without dispatch). Both still need a valid token
//! and the scopes every request needs ([`AuthConfigBuilder::require_scopes`]); method-specific
//! scopes cannot be enforced for notifications.
//!
//! # Order against the host's own checks
//!
//! The layer runs first, so a request that would fail the host's `Host` / `Origin` checks is
//! refused 401 when it carries no valid token (the host's 403 only once it does): neither
//! answer reveals more than the other.

mod claims;
mod fetch;
mod introspect;
mod jwt;
mod metadata;

pub use fetch::{
    BoxFuture, DialingFetcher, FetchError, FetchRequest, FetchResponse, Fetcher, HttpFetcher,
    DEFAULT_FETCH_TIMEOUT,
};
pub use introspect::{
    ClientCredentials, IntrospectionBuilder, IntrospectionConfigError, IntrospectionVerifier,
    MAX_INTROSPECTION_BYTES, MAX_INTROSPECTION_CACHE_ENTRIES, MAX_INTROSPECTION_CACHE_TTL,
};
pub use jsonwebtoken::Algorithm;
pub use jwt::{
    JwtBuilder, JwtConfigError, JwtVerifier, TokenTyp, DEFAULT_JWKS_REFETCH_INTERVAL,
    DEFAULT_JWKS_TTL, DEFAULT_LEEWAY, MAX_JWKS_BYTES, MAX_JWKS_KEYS, MAX_JWKS_TTL, MAX_LEEWAY,
};
pub use metadata::{ResourceError, WELL_KNOWN_PREFIX};

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Bytes, Frame, SizeHint};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};

use crate::core::Caller;
use crate::wire::headers::{decode_header_value, METHOD_HEADER, NAME_HEADER};
use metadata::Resource;

/// Longest bearer token accepted, in bytes. Access tokens are typically under 2 KiB (a JWT
/// with a few claims); the bound keeps a verifier from parsing or posting megabytes per
/// request. A longer token is 401 `invalid_token` without reaching the verifier.
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;

/// Most bytes of a refused request body read and discarded, so the client sees the refusal
/// instead of a reset; past it the connection is simply closed.
pub const REFUSAL_DRAIN_BYTES: usize = 64 * 1024;

/// Longest time spent discarding a refused request body (see [`REFUSAL_DRAIN_BYTES`]).
pub const REFUSAL_DRAIN_TIME: Duration = Duration::from_secs(1);

/// How long a browser may reuse the metadata document's CORS preflight answer, in seconds:
/// the answer never changes while the server runs, so a day saves a round trip per client.
pub const METADATA_CORS_MAX_AGE_SECS: u32 = 24 * 60 * 60;

/// The request headers a cross-origin client may send when reading the metadata document:
/// the MCP protocol version header some clients add to every request.
pub const METADATA_CORS_ALLOW_HEADERS: &str = "mcp-protocol-version";

/// Most scope implication steps followed when expanding a token's scopes
/// ([`AuthConfigBuilder::scope_implies`]); a configuration deeper than this is refused when
/// built, so a cycle or a long chain cannot make every request expensive.
pub const MAX_SCOPE_IMPLICATION_DEPTH: usize = 8;

/// The [`Caller`] attribute holding the token's granted scopes, space
/// separated, as the token stated them.
pub const CALLER_SCOPE: &str = "scope";
/// The [`Caller`] attribute holding the token's issuer, when known.
pub const CALLER_ISSUER: &str = "iss";
/// The [`Caller`] attribute holding the OAuth client id, when known.
pub const CALLER_CLIENT_ID: &str = "client_id";

/// A bearer access token as presented. Deliberately neither `Display` nor a transparent
/// `Debug`: it is a secret and must never reach an error, a log line or a `Debug` dump.
#[derive(Clone, PartialEq, Eq)]
pub struct BearerToken(String);

impl BearerToken {
    /// Wraps a token (verifiers' tests build their own).
    #[must_use]
    pub fn new(token: impl Into<String>) -> Self {
        BearerToken(token.into())
    }

    /// The token text, for a verifier to check.
    #[must_use]
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BearerToken(<{} bytes redacted>)", self.0.len())
    }
}

/// Who a verified token speaks for, and what it grants.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Principal {
    /// The subject (`sub`): the principal id the server runs the request under.
    pub subject: String,
    /// The issuer (`iss`), when the verifier knows it.
    pub issuer: Option<String>,
    /// The OAuth client the token was issued to (`client_id` / `azp`), when known.
    pub client_id: Option<String>,
    /// The granted scopes, as the token states them.
    pub scopes: BTreeSet<String>,
    /// Expiry, seconds since the Unix epoch, when known.
    pub expires_at: Option<u64>,
}

impl Principal {
    /// A principal with just a subject.
    #[must_use]
    pub fn new(subject: impl Into<String>) -> Self {
        Principal {
            subject: subject.into(),
            issuer: None,
            client_id: None,
            scopes: BTreeSet::new(),
            expires_at: None,
        }
    }

    /// With these granted scopes.
    #[must_use]
    pub fn with_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// With this issuer.
    #[must_use]
    pub fn with_issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// With this client id.
    #[must_use]
    pub fn with_client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// The server's caller for this principal: the subject as principal id, the scopes
    /// ([`CALLER_SCOPE`]), issuer ([`CALLER_ISSUER`]) and client id ([`CALLER_CLIENT_ID`]) as
    /// attributes.
    #[must_use]
    pub fn caller(&self) -> Caller {
        let scopes = self
            .scopes
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(" ");
        let mut caller = Caller::new(self.subject.clone()).with_attribute(CALLER_SCOPE, scopes);
        if let Some(issuer) = &self.issuer {
            caller = caller.with_attribute(CALLER_ISSUER, issuer.clone());
        }
        if let Some(client) = &self.client_id {
            caller = caller.with_attribute(CALLER_CLIENT_ID, client.clone());
        }
        caller
    }
}

/// Why a token was refused. Every variant is answered 401 `invalid_token`; the variant is for
/// the server's own diagnostics and never reaches the wire. No variant carries the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// The token is not a well-formed token of the kind the verifier takes.
    #[error("the token is malformed")]
    Malformed,
    /// The JWT's `typ` header does not mark it as an access token (RFC 9068 §4; see
    /// [`TokenTyp`]).
    #[error("the token is not typed as an access token")]
    NotAnAccessToken,
    /// The token's signing algorithm is not on the allow-list (including `none`).
    #[error("the token's signing algorithm is not allowed")]
    AlgorithmNotAllowed,
    /// No key in the key set matches the token (unknown `kid`, wrong key type).
    #[error("no key matches the token")]
    UnknownKey,
    /// The signature does not verify.
    #[error("the token's signature does not verify")]
    BadSignature,
    /// The token is not for this resource (`aud`, RFC 8707).
    #[error("the token was not issued for this resource")]
    WrongAudience,
    /// The token's issuer is not a trusted one.
    #[error("the token's issuer is not trusted")]
    WrongIssuer,
    /// The token has expired (`exp`, with the leeway).
    #[error("the token has expired")]
    Expired,
    /// The token is not valid yet (`nbf`, with the leeway).
    #[error("the token is not valid yet")]
    NotYetValid,
    /// A required claim is absent or of the wrong type.
    #[error("the token lacks the {0} claim")]
    MissingClaim(&'static str),
    /// The authorization server says the token is not active (RFC 7662).
    #[error("the token is not active")]
    Inactive,
    /// The key set or introspection endpoint could not be used.
    #[error("the authorization server could not be reached: {0}")]
    Upstream(FetchError),
}

/// Checks bearer tokens. Implement it for a custom token format; [`JwtVerifier`] and
/// [`IntrospectionVerifier`] are the bundled ones.
pub trait TokenVerifier: Send + Sync + 'static {
    /// Verifies `token` for this resource: signature or introspection, audience, issuer and
    /// validity period. Scopes are the layer's business, not the verifier's.
    fn verify<'a>(
        &'a self,
        token: &'a BearerToken,
    ) -> BoxFuture<'a, Result<Principal, VerifyError>>;
}

impl<T: TokenVerifier + ?Sized> TokenVerifier for Arc<T> {
    fn verify<'a>(
        &'a self,
        token: &'a BearerToken,
    ) -> BoxFuture<'a, Result<Principal, VerifyError>> {
        (**self).verify(token)
    }
}

/// What a finer scope rule sees: the verified method and name (when the request carried
/// them), the principal and the request headers (without `Authorization`).
#[derive(Debug)]
#[non_exhaustive]
pub struct ScopeQuery<'a> {
    /// The JSON-RPC method (`Mcp-Method`).
    pub method: Option<&'a str>,
    /// The tool or prompt name, or the resource URI (`Mcp-Name`, decoded).
    pub name: Option<&'a str>,
    /// The verified principal.
    pub principal: &'a Principal,
    /// The request's headers (e.g. `Mcp-Param-*`).
    pub headers: &'a HeaderMap,
}

type ScopeCallback = Arc<dyn Fn(&ScopeQuery<'_>) -> Vec<String> + Send + Sync>;

/// A configuration the layer refuses to start with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthConfigError {
    /// The resource identifier is not a canonical absolute URI.
    #[error("invalid resource identifier: {0}")]
    Resource(#[from] ResourceError),
    /// An authorization server is not an absolute `https` URL (or `http` on loopback).
    #[error("invalid authorization server URL: {0}")]
    AuthorizationServer(String),
    /// No authorization server was configured (RFC 9728 metadata must name one for clients).
    #[error("at least one authorization server is required")]
    NoAuthorizationServer,
    /// A scope is not an RFC 6749 scope token (printable ASCII without space, `"` or `\`).
    #[error("invalid scope name: {0:?}")]
    Scope(String),
    /// Scope implications chain deeper than [`MAX_SCOPE_IMPLICATION_DEPTH`] or form a cycle.
    #[error("scope implications are deeper than {MAX_SCOPE_IMPLICATION_DEPTH} steps or cyclic")]
    ImplicationDepth,
}

/// Builds an [`AuthConfig`]; see [`AuthConfig::builder`].
pub struct AuthConfigBuilder {
    resource: String,
    authorization_servers: Vec<String>,
    scopes_supported: Vec<String>,
    resource_name: Option<String>,
    resource_documentation: Option<String>,
    base: BTreeSet<String>,
    by_method: BTreeMap<String, BTreeSet<String>>,
    by_name: BTreeMap<(String, String), BTreeSet<String>>,
    implies: BTreeMap<String, BTreeSet<String>>,
    callback: Option<ScopeCallback>,
}

impl fmt::Debug for AuthConfigBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthConfigBuilder")
            .field("resource", &self.resource)
            .finish_non_exhaustive()
    }
}

impl AuthConfigBuilder {
    /// Adds an authorization server (its issuer URL) to the metadata.
    #[must_use]
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.authorization_servers.push(issuer.into());
        self
    }

    /// The scopes advertised in the metadata's `scopes_supported` (the minimal set for basic
    /// use; do not list `offline_access`).
    #[must_use]
    pub fn scopes_supported<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes_supported = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// A human-readable `resource_name` for the metadata.
    #[must_use]
    pub fn resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// A `resource_documentation` URL for the metadata.
    #[must_use]
    pub fn resource_documentation(mut self, url: impl Into<String>) -> Self {
        self.resource_documentation = Some(url.into());
        self
    }

    /// Scopes every request needs.
    #[must_use]
    pub fn require_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.base.extend(scopes.into_iter().map(Into::into));
        self
    }

    /// Scopes a JSON-RPC method needs (e.g. `tools/call`), on top of [`Self::require_scopes`].
    #[must_use]
    pub fn require_for_method<I, S>(mut self, method: impl Into<String>, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.by_method
            .entry(method.into())
            .or_default()
            .extend(scopes.into_iter().map(Into::into));
        self
    }

    /// Scopes one tool (`tools/call`), prompt (`prompts/get`) or resource URI
    /// (`resources/read`) needs, on top of the method's.
    #[must_use]
    pub fn require_for_name<I, S>(
        mut self,
        method: impl Into<String>,
        name: impl Into<String>,
        scopes: I,
    ) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.by_name
            .entry((method.into(), name.into()))
            .or_default()
            .extend(scopes.into_iter().map(Into::into));
        self
    }

    /// A granted `broader` scope implies each of `narrower` (the spec's scope hierarchies):
    /// a token with `files` then satisfies a requirement of `files:read`.
    #[must_use]
    pub fn scope_implies<I, S>(mut self, broader: impl Into<String>, narrower: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.implies
            .entry(broader.into())
            .or_default()
            .extend(narrower.into_iter().map(Into::into));
        self
    }

    /// A finer rule: the scopes it returns are needed on top of the map's (e.g. by argument,
    /// by tenant). It runs only once the token verified. Returned names that are not scope
    /// tokens are still required (so the request fails closed) but left out of the challenge.
    #[must_use]
    pub fn scope_callback(
        mut self,
        callback: impl Fn(&ScopeQuery<'_>) -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        self.callback = Some(Arc::new(callback));
        self
    }

    /// Checks the configuration and renders the metadata document once.
    ///
    /// # Errors
    /// [`AuthConfigError`] for a bad resource identifier, authorization server URL, scope
    /// name or implication graph.
    pub fn build(self) -> Result<AuthConfig, AuthConfigError> {
        let resource = Resource::parse(&self.resource)?;
        if self.authorization_servers.is_empty() {
            return Err(AuthConfigError::NoAuthorizationServer);
        }
        for server in &self.authorization_servers {
            metadata::check_server_url(server)
                .map_err(|_| AuthConfigError::AuthorizationServer(server.clone()))?;
        }
        let all_scopes = self
            .scopes_supported
            .iter()
            .chain(&self.base)
            .chain(self.by_method.values().flatten())
            .chain(self.by_name.values().flatten())
            .chain(self.implies.keys())
            .chain(self.implies.values().flatten());
        for scope in all_scopes {
            if !is_scope_token(scope) {
                return Err(AuthConfigError::Scope(scope.clone()));
            }
        }
        for root in self.implies.keys() {
            implication_depth(&self.implies, root, 0)?;
        }
        let document = metadata::document(
            &resource,
            &self.authorization_servers,
            &self.scopes_supported,
            self.resource_name.as_deref(),
            self.resource_documentation.as_deref(),
        );
        Ok(AuthConfig {
            inner: Arc::new(ConfigInner {
                metadata_url: resource.metadata_url(),
                resource,
                document: Bytes::from(document),
                base: self.base,
                by_method: self.by_method,
                by_name: self.by_name,
                implies: self.implies,
                callback: self.callback,
            }),
        })
    }
}

fn implication_depth(
    implies: &BTreeMap<String, BTreeSet<String>>,
    scope: &str,
    depth: usize,
) -> Result<(), AuthConfigError> {
    if depth > MAX_SCOPE_IMPLICATION_DEPTH {
        return Err(AuthConfigError::ImplicationDepth);
    }
    if let Some(narrower) = implies.get(scope) {
        for next in narrower {
            implication_depth(implies, next, depth + 1)?;
        }
    }
    Ok(())
}

/// RFC 6749 §3.3 `scope-token = 1*( %x21 / %x23-5B / %x5D-7E )`: safe inside a quoted
/// `WWW-Authenticate` parameter as it stands.
pub(crate) fn is_scope_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b == 0x21 || (0x23..=0x5B).contains(&b) || (0x5D..=0x7E).contains(&b))
}

/// The checked configuration of an [`AuthLayer`]; cheap to clone.
#[derive(Clone)]
pub struct AuthConfig {
    inner: Arc<ConfigInner>,
}

struct ConfigInner {
    resource: Resource,
    metadata_url: String,
    document: Bytes,
    base: BTreeSet<String>,
    by_method: BTreeMap<String, BTreeSet<String>>,
    by_name: BTreeMap<(String, String), BTreeSet<String>>,
    implies: BTreeMap<String, BTreeSet<String>>,
    callback: Option<ScopeCallback>,
}

impl fmt::Debug for AuthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthConfig")
            .field("resource", &self.inner.resource.as_str())
            .field("metadata_url", &self.inner.metadata_url)
            .finish_non_exhaustive()
    }
}

impl AuthConfig {
    /// Starts a configuration for the MCP server whose canonical URI (RFC 8707 resource
    /// identifier, e.g. `https://mcp.example.com/mcp`) is `resource`: tokens must name it in
    /// `aud`, and the metadata document is served at its RFC 9728 well-known locations.
    #[must_use]
    pub fn builder(resource: impl Into<String>) -> AuthConfigBuilder {
        AuthConfigBuilder {
            resource: resource.into(),
            authorization_servers: Vec::new(),
            scopes_supported: Vec::new(),
            resource_name: None,
            resource_documentation: None,
            base: BTreeSet::new(),
            by_method: BTreeMap::new(),
            by_name: BTreeMap::new(),
            implies: BTreeMap::new(),
            callback: None,
        }
    }

    /// The resource identifier.
    #[must_use]
    pub fn resource(&self) -> &str {
        self.inner.resource.as_str()
    }

    /// The absolute URL of the metadata document (the `resource_metadata` challenge value).
    #[must_use]
    pub fn metadata_url(&self) -> &str {
        &self.inner.metadata_url
    }

    /// The paths the metadata document is served at: the RFC 9728 path-inserted one first,
    /// then the root one (the same when the resource has no path).
    #[must_use]
    pub fn metadata_paths(&self) -> Vec<String> {
        self.inner.resource.metadata_paths()
    }

    /// The exact metadata document bytes.
    #[must_use]
    pub fn metadata_document(&self) -> &[u8] {
        &self.inner.document
    }

    /// The scopes the map requires for `method` / `name` (without the callback).
    fn mapped_scopes(&self, method: Option<&str>, name: Option<&str>) -> BTreeSet<String> {
        let inner = &self.inner;
        let mut needed = inner.base.clone();
        if let Some(method) = method {
            if let Some(scopes) = inner.by_method.get(method) {
                needed.extend(scopes.iter().cloned());
            }
            if let Some(name) = name {
                if let Some(scopes) = inner.by_name.get(&(method.to_owned(), name.to_owned())) {
                    needed.extend(scopes.iter().cloned());
                }
            }
        }
        needed
    }

    /// `granted` with every implied scope added.
    fn expand(&self, granted: &BTreeSet<String>) -> BTreeSet<String> {
        let mut all = granted.clone();
        let mut frontier: Vec<String> = granted.iter().cloned().collect();
        // Depth is bounded when built; the visited set keeps diamonds linear.
        while let Some(scope) = frontier.pop() {
            if let Some(narrower) = self.inner.implies.get(&scope) {
                for next in narrower {
                    if all.insert(next.clone()) {
                        frontier.push(next.clone());
                    }
                }
            }
        }
        all
    }
}

/// The `tower::Layer` that puts [`AuthService`] in front of an HTTP service.
#[derive(Clone)]
pub struct AuthLayer {
    config: AuthConfig,
    verifier: Arc<dyn TokenVerifier>,
    /// The host's CORS decision ([`AuthLayer::with_cors`]); `None` answers no browser origin.
    cors: Option<Arc<dyn BrowserCors>>,
}

/// The HTTP host's CORS decision, for the answers [`AuthLayer`] gives itself
/// ([`AuthLayer::with_cors`]). [`HttpConfig`](crate::server::http::HttpConfig) implements it
/// with the host's own rules (its `cors_origins` list and its Origin check), so the layer and
/// the host never disagree about an origin.
pub trait BrowserCors: Send + Sync + 'static {
    /// Whether the request (its headers) comes from a browser origin the host serves.
    fn serves(&self, request: &HeaderMap) -> bool;
    /// Adds the CORS answer headers to `response` when the host serves the request's origin.
    fn expose(&self, request: &HeaderMap, response: &mut HeaderMap);
}

impl fmt::Debug for AuthLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthLayer")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl AuthLayer {
    /// A layer with this configuration and token verifier.
    pub fn new(config: AuthConfig, verifier: impl TokenVerifier) -> Self {
        AuthLayer {
            config,
            verifier: Arc::new(verifier),
            cors: None,
        }
    }

    /// Serves browser hosts the way the HTTP host behind this layer does (pass a clone of
    /// that host's own [`HttpConfig`](crate::server::http::HttpConfig), so one `cors_origins`
    /// list and one Origin policy decide): a CORS preflight from an origin the host serves
    /// reaches the host without a token (browsers never send credentials on a preflight; the
    /// host answers it without dispatching), and this layer's own refusals to such an origin
    /// carry `Access-Control-Allow-Origin` and the exposed headers, so the page can read the
    /// `WWW-Authenticate` challenge. Without it (or with an empty list) nothing changes.
    #[must_use]
    pub fn with_cors(mut self, host: impl BrowserCors) -> Self {
        self.cors = Some(Arc::new(host));
        self
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &AuthConfig {
        &self.config
    }
}

impl<S> tower::Layer<S> for AuthLayer {
    type Service = AuthService<S>;

    fn layer(&self, inner: S) -> AuthService<S> {
        AuthService {
            inner,
            config: self.config.clone(),
            verifier: self.verifier.clone(),
            cors: self.cors.clone(),
        }
    }
}

/// The protected service: metadata, challenges, token and scope checks, then `S`.
#[derive(Clone)]
pub struct AuthService<S> {
    inner: S,
    config: AuthConfig,
    verifier: Arc<dyn TokenVerifier>,
    cors: Option<Arc<dyn BrowserCors>>,
}

impl<S> fmt::Debug for AuthService<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthService")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl<S> AuthService<S> {
    /// The protected service.
    #[must_use]
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &AuthConfig {
        &self.config
    }
}

/// The response body: the inner service's, or the layer's own (metadata, empty refusals).
pub struct AuthBody<B> {
    kind: BodyKind<B>,
}

enum BodyKind<B> {
    Inner(Pin<Box<B>>),
    Own(Option<Bytes>),
}

impl<B> AuthBody<B> {
    fn own(bytes: Option<Bytes>) -> Self {
        AuthBody {
            kind: BodyKind::Own(bytes.filter(|b| !b.is_empty())),
        }
    }
}

impl<B> fmt::Debug for AuthBody<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            BodyKind::Inner(_) => f.write_str("AuthBody::Inner"),
            BodyKind::Own(b) => write!(
                f,
                "AuthBody::Own({} bytes)",
                b.as_ref().map_or(0, Bytes::len)
            ),
        }
    }
}

impl<B> Body for AuthBody<B>
where
    B: Body<Data = Bytes>,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        match &mut self.get_mut().kind {
            BodyKind::Inner(body) => body.as_mut().poll_frame(cx),
            BodyKind::Own(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            BodyKind::Inner(body) => body.is_end_stream(),
            BodyKind::Own(bytes) => bytes.is_none(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            BodyKind::Inner(body) => body.size_hint(),
            BodyKind::Own(bytes) => {
                SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64))
            }
        }
    }
}

/// How the layer answered, before it becomes a response.
enum Refusal {
    /// 400 `invalid_request`.
    InvalidRequest,
    /// 401 without an error code (no token presented).
    NoToken { scopes: BTreeSet<String> },
    /// 401 `invalid_token`.
    InvalidToken { scopes: BTreeSet<String> },
    /// 403 `insufficient_scope`.
    InsufficientScope { scopes: BTreeSet<String> },
}

impl<S> AuthService<S> {
    /// The `WWW-Authenticate` challenge of a refusal, parameters in a fixed order: `error`,
    /// `scope`, `resource_metadata`.
    fn challenge(&self, error: Option<&str>, scopes: &BTreeSet<String>) -> HeaderValue {
        let mut value = String::from("Bearer ");
        let mut params = Vec::with_capacity(3);
        if let Some(error) = error {
            params.push(format!("error=\"{error}\""));
        }
        let listed: Vec<&str> = scopes
            .iter()
            .map(String::as_str)
            .filter(|s| is_scope_token(s))
            .collect();
        if !listed.is_empty() {
            params.push(format!("scope=\"{}\"", listed.join(" ")));
        }
        params.push(format!(
            "resource_metadata=\"{}\"",
            self.config.inner.metadata_url
        ));
        value.push_str(&params.join(", "));
        // Every part is checked printable ASCII (URL, scope tokens, fixed error codes).
        HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
    }

    /// [`AuthService::refusal`] with the CORS answer headers when `cors` holds the headers of
    /// a request whose origin the host serves ([`AuthLayer::with_cors`]).
    fn refused<B>(&self, refusal: &Refusal, cors: Option<&HeaderMap>) -> Response<AuthBody<B>> {
        let mut response = self.refusal(refusal);
        if let (Some(host), Some(request)) = (&self.cors, cors) {
            host.expose(request, response.headers_mut());
        }
        response
    }

    fn refusal<B>(&self, refusal: &Refusal) -> Response<AuthBody<B>> {
        let (status, value) = match refusal {
            Refusal::InvalidRequest => (
                StatusCode::BAD_REQUEST,
                self.challenge(Some("invalid_request"), &BTreeSet::new()),
            ),
            Refusal::NoToken { scopes } => (StatusCode::UNAUTHORIZED, self.challenge(None, scopes)),
            Refusal::InvalidToken { scopes } => (
                StatusCode::UNAUTHORIZED,
                self.challenge(Some("invalid_token"), scopes),
            ),
            Refusal::InsufficientScope { scopes } => (
                StatusCode::FORBIDDEN,
                self.challenge(Some("insufficient_scope"), scopes),
            ),
        };
        let mut response = Response::new(AuthBody::own(None));
        *response.status_mut() = status;
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
        response
    }

    /// The metadata document on `GET`, a CORS preflight answer on `OPTIONS`, 405 otherwise.
    /// Both successes carry `Access-Control-Allow-Origin: *` and never
    /// `Access-Control-Allow-Credentials`: the document is public, and a browser-based client
    /// on any origin must be able to read it (RFC 9728 discovery happens before it has any
    /// credentials).
    fn metadata<B>(&self, method: &Method) -> Response<AuthBody<B>> {
        let mut response;
        if method == Method::GET {
            response = Response::new(AuthBody::own(Some(self.config.inner.document.clone())));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
        } else if method == Method::OPTIONS {
            response = Response::new(AuthBody::own(None));
            *response.status_mut() = StatusCode::NO_CONTENT;
            let headers = response.headers_mut();
            headers.insert(
                header::ACCESS_CONTROL_ALLOW_METHODS,
                HeaderValue::from_static("GET, OPTIONS"),
            );
            headers.insert(
                header::ACCESS_CONTROL_ALLOW_HEADERS,
                HeaderValue::from_static(METADATA_CORS_ALLOW_HEADERS),
            );
            headers.insert(
                header::ACCESS_CONTROL_MAX_AGE,
                HeaderValue::from(METADATA_CORS_MAX_AGE_SECS),
            );
        } else {
            response = Response::new(AuthBody::own(None));
            *response.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, OPTIONS"));
            return response;
        }
        response.headers_mut().insert(
            header::ACCESS_CONTROL_ALLOW_ORIGIN,
            HeaderValue::from_static("*"),
        );
        response
    }
}

/// The verified method and name, as the host will check them against the body.
fn method_and_name(headers: &HeaderMap) -> (Option<String>, Option<String>) {
    let method = single_text(headers, METHOD_HEADER).map(str::to_owned);
    let name = match method.as_deref() {
        // The methods whose `Mcp-Name` the host checks against the body (D17, D26).
        Some("tools/call" | "prompts/get" | "resources/read") => {
            single_text(headers, NAME_HEADER).and_then(decode_header_value)
        }
        _ => None,
    };
    (method, name)
}

fn single_text<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    let mut values = headers.get_all(name).iter();
    let first = values.next()?;
    if values.next().is_some() {
        return None;
    }
    first.to_str().ok()
}

/// What the `Authorization` header holds.
enum Presented {
    None,
    Token(BearerToken),
    /// A bearer token that is not a `b64token` or is longer than [`MAX_TOKEN_BYTES`].
    Unusable,
    /// More than one `Authorization` header, or a token in the query string.
    Ambiguous,
}

fn presented(head: &hyper::http::request::Parts) -> Presented {
    if head.uri.query().is_some_and(query_has_token) {
        return Presented::Ambiguous;
    }
    let mut values = head.headers.get_all(header::AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Presented::None;
    };
    if values.next().is_some() {
        return Presented::Ambiguous;
    }
    let bytes = value.as_bytes();
    // RFC 6750 §2.1: `Bearer` (scheme case-insensitive, RFC 9110 §11.1) 1*SP b64token.
    let Some(scheme) = bytes.get(..6) else {
        return Presented::None;
    };
    if !scheme.eq_ignore_ascii_case(b"bearer") || bytes.get(6) != Some(&b' ') {
        // Another scheme (e.g. Basic): no bearer credentials were offered.
        return Presented::None;
    }
    let token = value
        .to_str()
        .map(|s| s[7..].trim_start_matches(' '))
        .unwrap_or("");
    if token.is_empty() || token.len() > MAX_TOKEN_BYTES || !is_b64token(token) {
        return Presented::Unusable;
    }
    Presented::Token(BearerToken(token.to_owned()))
}

/// RFC 6750 `b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`.
fn is_b64token(s: &str) -> bool {
    let body = s.trim_end_matches('=');
    !body.is_empty()
        && body.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/')
        })
}

/// Whether a query string carries an `access_token` parameter (RFC 6750 §2.3), which this
/// server never accepts (the spec forbids tokens in URIs).
fn query_has_token(query: &str) -> bool {
    query
        .split('&')
        .any(|pair| pair.split('=').next() == Some("access_token"))
}

/// Reads and discards what remains of a refused request body, within the drain bounds.
async fn drain<B: Body>(body: B) {
    use http_body_util::BodyExt as _;
    let mut body = std::pin::pin!(body);
    let mut read = 0usize;
    let _ = tokio::time::timeout(REFUSAL_DRAIN_TIME, async {
        while read <= REFUSAL_DRAIN_BYTES {
            match body.frame().await {
                Some(Ok(frame)) => {
                    if let Some(data) = frame.data_ref() {
                        read += hyper::body::Buf::remaining(data);
                    }
                }
                _ => break,
            }
        }
    })
    .await;
}

impl<S> AuthService<S> {
    /// Answers one request: the layer's own answer, or the inner service's.
    async fn handle<ReqB, ResB>(
        self,
        request: Request<ReqB>,
    ) -> Result<Response<AuthBody<ResB>>, S::Error>
    where
        S: tower::Service<Request<ReqB>, Response = Response<ResB>> + Clone + Send + 'static,
        S::Future: Send,
        ReqB: Body + Send + 'static,
    {
        let (mut head, body) = request.into_parts();
        let inner = &self.config.inner;
        if inner.resource.serves_metadata_at(head.uri.path()) {
            let response = self.metadata(&head.method);
            drain(body).await;
            return Ok(response);
        }
        let cors = self
            .cors
            .as_ref()
            .is_some_and(|host| host.serves(&head.headers));
        let preflight = head.method == Method::OPTIONS
            && head
                .headers
                .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
        if cors && preflight {
            // No token on a preflight, ever: the host behind answers it without dispatch.
            let response =
                tower::ServiceExt::oneshot(self.inner, Request::from_parts(head, body)).await?;
            return Ok(response.map(|b| AuthBody {
                kind: BodyKind::Inner(Box::pin(b)),
            }));
        }
        let (method, name) = method_and_name(&head.headers);
        let mapped = self
            .config
            .mapped_scopes(method.as_deref(), name.as_deref());
        let token = match presented(&head) {
            Presented::Token(token) => token,
            Presented::None => {
                drain(body).await;
                return Ok(self.refused(
                    &Refusal::NoToken { scopes: mapped },
                    cors.then_some(&head.headers),
                ));
            }
            Presented::Unusable => {
                tracing::debug!("bearer token refused: malformed or oversized");
                drain(body).await;
                return Ok(self.refused(
                    &Refusal::InvalidToken { scopes: mapped },
                    cors.then_some(&head.headers),
                ));
            }
            Presented::Ambiguous => {
                drain(body).await;
                return Ok(self.refused(&Refusal::InvalidRequest, cors.then_some(&head.headers)));
            }
        };
        // Nothing after this point (the scope callback, the inner service) sees the token.
        head.headers.remove(header::AUTHORIZATION);
        let principal = match self.verifier.verify(&token).await {
            Ok(principal) => principal,
            Err(e) => {
                tracing::debug!(reason = %e, "bearer token refused");
                drain(body).await;
                return Ok(self.refused(
                    &Refusal::InvalidToken { scopes: mapped },
                    cors.then_some(&head.headers),
                ));
            }
        };
        drop(token);
        let mut needed = mapped;
        if let Some(callback) = &inner.callback {
            let query = ScopeQuery {
                method: method.as_deref(),
                name: name.as_deref(),
                principal: &principal,
                headers: &head.headers,
            };
            let extra = callback(&query);
            for scope in &extra {
                if !is_scope_token(scope) {
                    tracing::warn!(
                        scope = %scope.escape_debug(),
                        "scope callback returned a name that is not a scope token"
                    );
                }
            }
            needed.extend(extra);
        }
        let granted = self.config.expand(&principal.scopes);
        if !needed.is_subset(&granted) {
            tracing::debug!(subject = %principal.subject, "bearer token lacks a required scope");
            drain(body).await;
            return Ok(self.refused(
                &Refusal::InsufficientScope { scopes: needed },
                cors.then_some(&head.headers),
            ));
        }
        head.extensions.insert(principal.caller());
        head.extensions.insert(principal);
        let response =
            tower::ServiceExt::oneshot(self.inner, Request::from_parts(head, body)).await?;
        Ok(response.map(|b| AuthBody {
            kind: BodyKind::Inner(Box::pin(b)),
        }))
    }
}

impl<S, ReqB, ResB> tower::Service<Request<ReqB>> for AuthService<S>
where
    S: tower::Service<Request<ReqB>, Response = Response<ResB>> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Send,
    ReqB: Body + Send + 'static,
    ResB: Send + 'static,
{
    type Response = Response<AuthBody<ResB>>;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Self::Response, S::Error>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        // Readiness is the inner service's business, awaited per call (`oneshot`).
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<ReqB>) -> Self::Future {
        let this = self.clone();
        Box::pin(this.handle(request))
    }
}

impl<S, ReqB, ResB> hyper::service::Service<Request<ReqB>> for AuthService<S>
where
    S: tower::Service<Request<ReqB>, Response = Response<ResB>> + Clone + Send + Sync + 'static,
    S::Future: Send,
    S::Error: Send,
    ReqB: Body + Send + 'static,
    ResB: Send + 'static,
{
    type Response = Response<AuthBody<ResB>>;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Self::Response, S::Error>>;

    fn call(&self, request: Request<ReqB>) -> Self::Future {
        let this = self.clone();
        Box::pin(this.handle(request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_tokens_follow_rfc6749() {
        for ok in ["files:read", "a", "x!#[]~", "repo/write"] {
            assert!(is_scope_token(ok), "{ok}");
        }
        for bad in ["", "a b", "a\"b", "a\\b", "é", "a\tb"] {
            assert!(!is_scope_token(bad), "{bad}");
        }
    }

    #[test]
    fn b64tokens_follow_rfc6750() {
        for ok in ["abc", "a.b.c", "A-_~+/9", "abc==", "x="] {
            assert!(is_b64token(ok), "{ok}");
        }
        for bad in ["", "=", "a b", "a,b", "a\"b", "a=b"] {
            assert!(!is_b64token(bad), "{bad}");
        }
    }

    #[test]
    fn bearer_token_debug_is_redacted() {
        let token = BearerToken::new("super-secret-token-value");
        let shown = format!("{token:?}");
        assert_eq!(shown, "BearerToken(<24 bytes redacted>)");
    }

    #[test]
    fn implication_depth_is_bounded_at_the_constant() {
        let chain = |n: usize| {
            let mut b = AuthConfig::builder("https://mcp.example.com/mcp")
                .authorization_server("https://auth.example.com");
            for i in 0..n {
                b = b.scope_implies(format!("s{i}"), [format!("s{}", i + 1)]);
            }
            b.build()
        };
        assert!(chain(MAX_SCOPE_IMPLICATION_DEPTH).is_ok());
        assert_eq!(
            chain(MAX_SCOPE_IMPLICATION_DEPTH + 1).err(),
            Some(AuthConfigError::ImplicationDepth)
        );
        let cyclic = AuthConfig::builder("https://mcp.example.com/mcp")
            .authorization_server("https://auth.example.com")
            .scope_implies("a", ["b"])
            .scope_implies("b", ["a"])
            .build();
        assert_eq!(cyclic.err(), Some(AuthConfigError::ImplicationDepth));
    }
}
