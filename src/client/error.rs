//! The client's typed outcomes: every way a request can end is its own type, so a host
//! never mistakes a tool's own failure for a protocol error or a dead transport.
//!
//! | class | type |
//! |---|---|
//! | transport failure | [`TransportError`], [`ClientError::Transport`], [`ClientError::Deadline`] |
//! | JSON-RPC / MCP error | [`RpcError`] ([`RpcErrorKind`]) |
//! | invalid or unrecognised result | [`InvalidResult`] |
//! | input required | [`InputRequired`] (only from `tools/call`, `resources/read`, `prompts/get`) |
//! | complete with `isError` | [`ToolFailed`] |
//! | complete success | the method's typed result |

use std::time::Duration;

use serde_json::Value;

pub use crate::client::transport::TransportError;
use crate::wire::jsonrpc::{ErrorCode, ErrorObject};
use crate::wire::result::ResultError;
use crate::wire::{CallToolResult, InputRequiredResult};

/// The code a retired revision used for "resource not found"; read as [`RpcErrorKind::NotFound`].
pub const RETIRED_NOT_FOUND_CODE: i64 = -32002;

/// What a JSON-RPC error code means to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RpcErrorKind {
    /// -32020: an HTTP protocol header disagreed with the body.
    HeaderMismatch,
    /// -32021: the request needs a client capability it did not declare for this call.
    MissingRequiredClientCapability,
    /// -32022: the server does not serve the requested protocol version.
    UnsupportedProtocolVersion,
    /// Retired -32002: the target does not exist.
    NotFound,
    /// Another code this revision defines (-32700, -32600, -32601, -32602, -32603).
    Standard(ErrorCode),
    /// A code this revision does not define (an application code).
    Other(i64),
}

impl RpcErrorKind {
    /// The kind for a code read off the wire.
    #[must_use]
    pub fn from_code(code: i64) -> Self {
        match ErrorCode::from_code(code) {
            Some(ErrorCode::HeaderMismatch) => RpcErrorKind::HeaderMismatch,
            Some(ErrorCode::MissingRequiredClientCapability) => {
                RpcErrorKind::MissingRequiredClientCapability
            }
            Some(ErrorCode::UnsupportedProtocolVersion) => RpcErrorKind::UnsupportedProtocolVersion,
            Some(other) => RpcErrorKind::Standard(other),
            None if code == RETIRED_NOT_FOUND_CODE => RpcErrorKind::NotFound,
            None => RpcErrorKind::Other(code),
        }
    }
}

/// A JSON-RPC error response to one of our requests.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("the server answered {method} with error {code}: {message}")]
pub struct RpcError {
    /// The request's method.
    pub method: String,
    /// The typed meaning of `code`.
    pub kind: RpcErrorKind,
    /// The code exactly as received.
    pub code: i64,
    /// The server's message.
    pub message: String,
    /// The server's `data`, if any.
    pub data: Option<Value>,
}

impl RpcError {
    pub(crate) fn from_object(method: &str, error: &ErrorObject) -> Self {
        RpcError {
            method: method.to_owned(),
            kind: RpcErrorKind::from_code(error.code),
            code: error.code,
            message: error.message.clone(),
            data: error
                .data
                .as_deref()
                .and_then(|d| serde_json::from_str(d.get()).ok()),
        }
    }
}

/// Why a response could not be accepted; the client fails closed on it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidResult {
    /// The result breaks the result rules or the method's schema (unknown `resultType`,
    /// unknown content `type`, wrong field types, `input_required` from a method without it).
    #[error("invalid {method} result: {error}")]
    Result {
        /// The request's method.
        method: String,
        /// What was wrong.
        error: ResultError,
    },
    /// The response frame itself was refused (duplicate keys, invalid JSON-RPC, over a bound).
    #[error("invalid response to {method}: {reason}")]
    Frame {
        /// The request's method.
        method: String,
        /// The codec's reason.
        reason: String,
    },
    /// Strict mode refused what the client would otherwise read leniently.
    #[error("strict mode: {0}")]
    Lenient(crate::client::diagnostics::Leniency),
    /// `structuredContent` does not match the tool's `outputSchema`.
    #[error("structuredContent of tool {tool} does not match its output schema: {reason}")]
    OutputSchema {
        /// The tool.
        tool: String,
        /// The first mismatch, or why the schema could not be compiled.
        reason: String,
    },
}

/// A server asked for more input (MRTR, I-section). Answering is the host's decision.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the server needs more input to finish {method}")]
pub struct InputRequired {
    /// The request's method (`tools/call`, `resources/read` or `prompts/get`).
    pub method: String,
    /// The server's input requests and opaque `requestState`, exactly as received.
    pub result: InputRequiredResult,
}

/// A tool ran and reported its own failure (`isError: true`): a remote execution error, not
/// a protocol, schema or transport error.
#[derive(Debug, Clone, thiserror::Error)]
#[error("tool {tool} reported an execution error")]
pub struct ToolFailed {
    /// The tool.
    pub tool: String,
    /// The result with its error content.
    pub result: CallToolResult,
}

/// Why walking a paginated list stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PaginationError {
    /// The server returned a cursor it had already returned: following it would loop.
    #[error("the server repeated the cursor {cursor:?} on page {page}")]
    RepeatedCursor {
        /// The repeated cursor.
        cursor: String,
        /// The page (1-based) that repeated it.
        page: usize,
    },
    /// More pages than [`crate::client::MAX_LIST_PAGES`].
    #[error("the list has more than {limit} pages")]
    TooManyPages {
        /// The bound.
        limit: usize,
    },
    /// More entries than [`crate::client::MAX_LIST_ITEMS`].
    #[error("the list has more than {limit} entries")]
    TooManyItems {
        /// The bound.
        limit: usize,
    },
}

/// Why `Client::connect` refused a server.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The server's `supportedVersions` does not contain the revision this client speaks.
    #[error("the server supports protocol versions {versions:?}, but this client speaks only {wanted}", wanted = crate::wire::PROTOCOL_REVISION)]
    UnsupportedVersions {
        /// The versions the server offered.
        versions: Vec<String>,
    },
    /// The server speaks an `initialize`-era revision.
    #[error("the server does not implement server/discover and appears to speak an older, initialize-based MCP revision; this client speaks only {wanted} and does not fall back: upgrade the server or use a client for the older revision", wanted = crate::wire::PROTOCOL_REVISION)]
    LegacyServer,
    /// Discovery failed for another reason; nothing else was tried.
    #[error("server/discover failed: {0}")]
    Discover(Box<ClientError>),
}

/// Everything a client call can end with other than its success type.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The transport failed or was closed; every pending request gets the same cause.
    #[error(transparent)]
    Transport(TransportError),
    /// No reply within the request's deadline.
    #[error("no reply to {method} within {deadline:?}")]
    Deadline {
        /// The request's method.
        method: String,
        /// The deadline that passed.
        deadline: Duration,
    },
    /// The server answered with a JSON-RPC error.
    #[error(transparent)]
    Rpc(RpcError),
    /// The server's answer was not acceptable.
    #[error(transparent)]
    Invalid(InvalidResult),
    /// A convenience API met an `input_required` result.
    #[error(transparent)]
    InputRequired(Box<InputRequired>),
    /// A convenience API met a tool's own failure.
    #[error(transparent)]
    ToolFailed(Box<ToolFailed>),
    /// A list walk stopped.
    #[error(transparent)]
    Pagination(PaginationError),
    /// The driven MRTR loop needed more than [`crate::client::MAX_DRIVEN_ROUNDS`] rounds.
    #[error("more than {limit} input rounds")]
    TooManyRounds {
        /// The bound.
        limit: usize,
    },
    /// The caller's request was refused before sending (reserved `_meta` key, bad deadline,
    /// unencodable params).
    #[error("request refused before sending: {0}")]
    Request(String),
    /// A `tools/call` met -32020 and the opt-in `tools/list` refresh before its one retry
    /// failed; nothing was retried.
    #[error("{mismatch}; refreshing tools/list before the retry failed: {refresh}")]
    HeaderMismatchRefresh {
        /// The -32020 the call received.
        mismatch: RpcError,
        /// Why the refresh failed.
        refresh: Box<ClientError>,
    },
    /// The host's answer callback gave up.
    #[error("the input callback declined: {0}")]
    Declined(String),
    /// A Skills extension call was refused or its content failed verification
    /// ([`crate::client::skills`]).
    #[error(transparent)]
    Skill(SkillError),
}

/// Why a skill was not listed, loaded or read (`crate::client::skills`). It lives here, beside
/// [`ClientError::Skill`], so the error module imports no method module (no cycle).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// The server did not declare `io.modelcontextprotocol/skills` (or its value is not an
    /// object); nothing was sent.
    #[error(
        "the server does not declare the {} extension",
        crate::wire::skills::EXTENSION_ID
    )]
    NotDeclared,
    /// The server did not declare `directoryRead: true`; nothing was sent.
    #[error(
        "the server does not declare directoryRead for {}",
        crate::wire::skills::EXTENSION_ID
    )]
    DirectoryReadNotDeclared,
    /// The entry cannot be loaded: its manifest is missing, malformed or not self-consistent.
    #[error("skill entry {uri} cannot be loaded: {reason}")]
    InvalidEntry {
        /// The entry's `uri`.
        uri: String,
        /// What is wrong.
        reason: String,
    },
    /// A `"dynamic"` entry: no digests to verify against, so this client declines it.
    #[error("skill {uri} publishes no file manifest (\"dynamic\"); it is not loaded")]
    Dynamic {
        /// The entry's `uri`.
        uri: String,
    },
    /// The file is not in the held entry's `resources`: it is never read.
    #[error("{uri} is not listed in the resources of skill {skill}")]
    NotListed {
        /// The skill's `uri`.
        skill: String,
        /// The requested file.
        uri: String,
    },
    /// The read returned no content for the requested URI.
    #[error("resources/read of {uri} returned no content for that URI")]
    NoContent {
        /// The requested file.
        uri: String,
    },
    /// The bytes' length differs from the entry's `size` (the digest is not computed).
    #[error("{uri}: {actual} bytes where the entry lists {expected}")]
    SizeMismatch {
        /// The file.
        uri: String,
        /// The entry's `size`.
        expected: u64,
        /// The bytes received.
        actual: u64,
    },
    /// The bytes' SHA-256 differs from the entry's `digest`.
    #[error("{uri}: digest {actual} where the entry lists {expected}")]
    DigestMismatch {
        /// The file.
        uri: String,
        /// The entry's `digest`.
        expected: String,
        /// The digest of the bytes received.
        actual: String,
    },
    /// The fetched `SKILL.md` has no usable frontmatter.
    #[error("{uri}: {error}")]
    Frontmatter {
        /// The manifest.
        uri: String,
        /// What is wrong.
        error: crate::wire::skills::FrontmatterError,
    },
    /// The fetched frontmatter differs from the entry's in `field`.
    #[error("{uri}: frontmatter field {field:?} differs from the skill entry")]
    FrontmatterMismatch {
        /// The manifest.
        uri: String,
        /// The first differing field (in key order).
        field: String,
    },
}
