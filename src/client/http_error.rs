//! The HTTP client transport's error types, in a leaf module: the transport seam
//! ([`crate::client::transport::Refusal`]) names [`HttpError`] while the HTTP transport itself
//! implements that seam, so the types live below both (no `http <-> transport` cycle). Every
//! type is re-exported from [`crate::client::http`], its public home.

use crate::codec::{EgressError, IngressError};
use crate::net::error::DialError;
use crate::wire::headers::RequiredHeaderError;

/// The most bytes of `WWW-Authenticate` values kept on [`HttpError::Unauthorized`], all
/// values together.
///
/// Threat: a server sending megabytes of challenges that every refused call would copy and
/// carry; real challenges (scheme, realm, `resource_metadata`, scope, error) are well under
/// 1 KiB each.
pub const MAX_WWW_AUTHENTICATE_BYTES: usize = 8 * 1024;

/// The longest `DPoP-Nonce` value kept on [`HttpError::Unauthorized`] (RFC 9449 §9).
///
/// Threat: a server handing out a huge nonce that the client would then echo, signed, in
/// every proof; real nonces are opaque strings of a few dozen bytes.
pub const MAX_DPOP_NONCE_BYTES: usize = 512;

/// Whether `value` is a DPoP nonce (RFC 9449 §8.1: `1*NQCHAR`, that is printable ASCII but
/// space, `"` and `\`) of at most [`MAX_DPOP_NONCE_BYTES`].
pub fn valid_dpop_nonce(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= MAX_DPOP_NONCE_BYTES
        && value
            .bytes()
            .all(|b| matches!(b, 0x21 | 0x23..=0x5B | 0x5D..=0x7E))
}

/// Why the HTTP transport could not carry a message or read its answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// The base URL is not an absolute `http://` (or, with feature `https`, `https://`) URL
    /// with a host and without credentials.
    #[error("the endpoint must be an absolute http:// or https:// URL without credentials")]
    BadUrl,
    /// The message could not be encoded within the client's egress bounds.
    #[error("the message could not be encoded: {0}")]
    Encode(#[from] EgressError),
    /// A client posts requests and notifications, never responses.
    #[error("a client posts requests and notifications only")]
    NotPostable,
    /// The protocol headers could not be computed from the message.
    #[error("the protocol headers could not be computed: {0}")]
    Headers(#[from] RequiredHeaderError),
    /// A computed protocol header is not a valid HTTP header (the value is not repeated).
    #[error("the protocol header {name} is not a valid HTTP header")]
    InvalidProtocolHeader {
        /// The header's name.
        name: String,
    },
    /// The request decorator refused or failed.
    #[error(transparent)]
    Decorator(#[from] DecoratorError),
    /// No connection could be opened: resolution, the address check, TCP or TLS.
    #[error(transparent)]
    Dial(#[from] DialError),
    /// The connection failed before the response headers arrived.
    #[error("the connection failed before the response headers")]
    Connection,
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
    /// The server refused the request's authorization: `401` (no or an invalid token) or
    /// `403` (say, a missing scope), with its challenges, so an OAuth client can act without
    /// asking again. A JSON-RPC body is kept instead only when no challenge came with it.
    #[error("the server refused the request's authorization (HTTP {status})")]
    Unauthorized {
        /// `401` or `403`.
        status: u16,
        /// The `WWW-Authenticate` values in arrival order, each whole (not parsed), at most
        /// [`MAX_WWW_AUTHENTICATE_BYTES`] in all; bytes that are not UTF-8 are replaced.
        www_authenticate: Vec<String>,
        /// Values not kept because they would pass that bound.
        dropped: usize,
        /// The response's `DPoP-Nonce` (RFC 9449 §9, with a DPoP `use_dpop_nonce` challenge),
        /// the first one only and only when [`valid_dpop_nonce`].
        dpop_nonce: Option<String>,
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

/// Why a decorator's header was refused.
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
