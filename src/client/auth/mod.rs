//! OAuth 2.1 for the HTTP client: finding a protected server's authorization server and
//! obtaining, storing and refreshing the access token it sends.
//!
//! - [`fetch`]: the one injectable [`Fetcher`] every outbound request goes through.
//! - [`discovery`]: the `WWW-Authenticate` challenge, RFC 9728 resource metadata and RFC 8414 /
//!   OpenID Connect authorization server metadata, in the spec's order, `issuer` checked.
//!
//! Secrets (tokens, codes, verifiers, client secrets) never appear in an error's text or in a
//! `Debug` output of this module.
#![forbid(unsafe_code)]

pub mod discovery;
pub mod fetch;

pub use discovery::{
    authorization_server_candidates, canonical_resource, check_endpoint, discover,
    discover_authorization_server, parse_challenge, protected_resource_candidates,
    AuthorizationServerMetadata, Challenge, ChallengeError, Discovered, ProtectedResourceMetadata,
    MAX_CHALLENGE_BYTES, MAX_METADATA_BYTES,
};
pub use fetch::{
    BoxFuture, FetchError, FetchMethod, FetchRequest, FetchResponse, Fetcher, LoopbackFetcher,
    DEFAULT_FETCH_TIMEOUT,
};

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
}
