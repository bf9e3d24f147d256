//! OAuth 2.1 for the HTTP client: finding a protected server's authorization server and
//! obtaining, storing and refreshing the access token it sends.
//!
//! - [`fetch`]: the one injectable [`Fetcher`] every outbound request goes through.
//! - [`discovery`]: the `WWW-Authenticate` challenge, RFC 9728 resource metadata and RFC 8414 /
//!   OpenID Connect authorization server metadata, in the spec's order, `issuer` checked.
//! - [`flow`]: authorization code + PKCE `S256` through a [`UserStep`], `state` and RFC 9207
//!   `iss` checks, refresh with rotation, client credentials; `resource` on every request.
//! - [`provider`]: [`OAuthClient`] ties them to a [`TokenStore`] and the HTTP transport's
//!   request decorator, with refresh, step-up and a bounded number of attempts.
//! - [`dpop`]: RFC 9449 proofs and nonces, opt-in with [`OAuthClient::with_dpop`].
//! - [`loopback`]: [`LoopbackUserStep`], the redirect listener for CLIs and desktop apps.
//! - [`store`]: [`FileTokenStore`], tokens kept between runs in a `0600` file (Unix).
//!
//! Secrets (tokens, codes, verifiers, client secrets) never appear in an error's text or in a
//! `Debug` output of this module.
#![forbid(unsafe_code)]

pub mod discovery;
pub mod dpop;
pub mod fetch;
pub mod flow;
pub mod loopback;
pub mod provider;
#[cfg(unix)]
pub mod store;

pub use discovery::{
    authorization_server_candidates, canonical_resource, check_endpoint, discover,
    discover_authorization_server, parse_challenge, protected_resource_candidates,
    AuthorizationServerMetadata, Challenge, ChallengeError, Discovered, ProtectedResourceMetadata,
    MAX_CHALLENGE_BYTES, MAX_METADATA_BYTES,
};
pub use dpop::{
    Dpop, DpopKey, NonceFrom, DPOP_ALGORITHM, DPOP_JTI_BYTES, DPOP_PROOF_TYP,
    MAX_KEY_GENERATION_TRIES,
};
pub use fetch::{
    BoxFuture, DialingFetcher, FetchError, FetchMethod, FetchRequest, FetchResponse, Fetcher,
    LoopbackFetcher, DEFAULT_FETCH_TIMEOUT,
};
pub use flow::{
    authorization_code, authorization_request, client_credentials, exchange_code, refresh,
    register, AuthorizationRequest, ClientCredentials, HeadlessUserStep, Pkce, RegistrationRequest,
    Secret, TokenAuthMethod, Tokens, UserStep, CLIENT_ASSERTION_LIFETIME, MAX_AUTHORIZE_PAGE_BYTES,
    MAX_DPOP_NONCE_RETRIES, MAX_ERROR_CODE_CHARS, MAX_REGISTRATION_RESPONSE_BYTES,
    MAX_TOKEN_RESPONSE_BYTES, PKCE_VERIFIER_BYTES, STATE_BYTES,
};
pub use loopback::{
    LoopbackUserStep, CALLBACK_PATH, CALLBACK_READ_TIMEOUT, DEFAULT_CALLBACK_WAIT,
    MAX_CALLBACK_CONNECTIONS, MAX_CALLBACK_REQUEST_BYTES, MAX_CALLBACK_WAIT,
};
pub use provider::{
    http_refusal, refusal, ClientIdentity, Grant, MemoryTokenStore, OAuthClient, OAuthConfig,
    TokenKey, TokenStore, MAX_AUTHORIZATION_ATTEMPTS,
};
#[cfg(unix)]
pub use store::{FileTokenStore, TokenFileError, MAX_TOKEN_FILE_BYTES};

/// Why the client could not obtain a token. No variant carries a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// A URL to dial is neither `https` nor `http` to a loopback host.
    #[error("refusing to use {url}: https is required except for loopback hosts")]
    InsecureEndpoint {
        /// The refused URL.
        url: String,
    },
    /// A fetch produced no response.
    #[error("fetching {url} failed: {source}")]
    Fetch {
        /// What was fetched.
        url: String,
        /// Why it failed.
        source: FetchError,
    },
    /// A server answered an unexpected status.
    #[error("{url} answered HTTP {status}")]
    Status {
        /// What was fetched.
        url: String,
        /// The status.
        status: u16,
    },
    /// A metadata document is not valid JSON of the expected shape.
    #[error("the metadata at {url} is not a valid document")]
    InvalidMetadata {
        /// Where it was read.
        url: String,
    },
    /// No location had the metadata document.
    #[error("no metadata document at any of {tried:?}")]
    NoMetadata {
        /// The locations tried, in order.
        tried: Vec<String>,
    },
    /// The resource metadata describes another resource.
    #[error("the resource metadata is for {found}, not {expected}")]
    ResourceMismatch {
        /// The server's canonical URI.
        expected: String,
        /// The document's `resource`.
        found: String,
    },
    /// The resource metadata lists no authorization server.
    #[error("the resource metadata lists no authorization server")]
    NoAuthorizationServer,
    /// The authorization server metadata names another issuer than it was fetched for.
    #[error("the authorization server metadata names issuer {found}, expected {expected}")]
    IssuerMismatch {
        /// The issuer it was fetched for.
        expected: String,
        /// The document's `issuer`.
        found: String,
    },
    /// The system's random source failed.
    #[error("the system random source failed")]
    Random,
    /// The authorization server does not advertise PKCE `S256`; the code flow is refused.
    #[error("the authorization server does not support PKCE S256")]
    PkceUnsupported,
    /// The authorization server has no authorization endpoint.
    #[error("the authorization server has no authorization endpoint")]
    NoAuthorizationEndpoint,
    /// The authorization response's `iss` is absent where promised, or not the issuer.
    #[error("the authorization response comes from another issuer")]
    CallbackIssuer,
    /// The authorization response's `state` is not the one sent.
    #[error("the authorization response's state does not match")]
    StateMismatch,
    /// A parameter of the authorization response appears twice.
    #[error("the authorization response repeats a parameter")]
    DuplicateParameter,
    /// The authorization server refused (its `error` code).
    #[error("the authorization was refused: {error}")]
    AuthorizationDenied {
        /// The `error` code, bounded.
        error: String,
    },
    /// The authorization response carries no code.
    #[error("the authorization response carries no code")]
    NoCode,
    /// The authorization endpoint redirected somewhere other than the redirect URI.
    #[error("the authorization endpoint redirected elsewhere than the redirect URI")]
    UnexpectedRedirect,
    /// A `client_secret_*` method without a secret.
    #[error("the token endpoint method needs a client secret")]
    NoSecret,
    /// The token endpoint refused (its `error` code).
    #[error("the token endpoint refused: {error}")]
    TokenEndpoint {
        /// The `error` code, bounded.
        error: String,
    },
    /// The token endpoint's answer is not a bearer token response.
    #[error("the token endpoint's answer is not a valid bearer token response")]
    InvalidTokenResponse,
    /// A 403 that is not `insufficient_scope`: no new token would help.
    #[error("the server refused the request (403) for a reason other than scope")]
    Forbidden,
    /// More grants than [`MAX_AUTHORIZATION_ATTEMPTS`] without a request going through.
    #[error("authorization did not succeed within {limit} attempts")]
    TooManyAttempts {
        /// The bound.
        limit: u32,
    },
    /// No way to identify the client to this authorization server: no pre-registered
    /// credentials, no metadata document it accepts, and dynamic registration not opted in
    /// (or not offered).
    #[error("no client identity usable with this authorization server")]
    NoClientIdentity,
    /// The authorization server offers no dynamic registration.
    #[error("the authorization server offers no dynamic client registration")]
    RegistrationUnsupported,
    /// The registration answer is not a usable client information response.
    #[error("the registration answer is not a valid client information response")]
    InvalidRegistration,
    /// The user step was asked to wait on a redirect URI that is not its own.
    #[error("the redirect URI is not the one the user step listens on")]
    RedirectUriMismatch,
    /// The private-key JWT signing key is not a usable PKCS#8 PEM P-256 key.
    #[error("the client assertion signing key is not a usable P-256 PKCS#8 PEM key")]
    InvalidSigningKey,
    /// The loopback listener could not be bound or used.
    #[error("the loopback callback listener failed: {kind}")]
    CallbackListener {
        /// The system's error kind.
        kind: std::io::ErrorKind,
    },
    /// A server's DPoP nonce is not `1*NQCHAR` within the bound (RFC 9449 §8.1).
    #[error("the server's DPoP nonce is not a valid nonce")]
    InvalidDpopNonce,
    /// The server asked again for the DPoP nonce the proof already carried.
    #[error("the server refused the DPoP nonce it supplied")]
    DpopNonceRefused,
    /// No callback with the right `state` arrived in time.
    #[error("no authorization callback arrived within {waited_ms} ms")]
    CallbackTimeout {
        /// How long the step waited.
        waited_ms: u64,
    },
}
