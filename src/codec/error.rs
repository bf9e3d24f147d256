//! Typed ingress and egress failures, each mapped to exactly one JSON-RPC [`ErrorCode`].
//!
//! HTTP statuses are deliberately absent: the server maps an error *cause* to (code, status)
//! in one place (e.g. an oversized HTTP body is 413 there). Display texts never contain bytes
//! sent by the peer, so they are safe to use as the `message` of an error reply.

use crate::wire::errors::Cause;
use crate::wire::jsonrpc::{ErrorCode, ErrorObject, ErrorResponse, InvalidId, RequestId};

/// Why one inbound frame was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IngressError {
    /// The frame is longer than the direction's bound; it was not parsed.
    #[error("message exceeds the {limit}-byte frame limit")]
    FrameTooLarge {
        /// The bound that was exceeded.
        limit: usize,
        /// The frame length; `None` when a stdio line was discarded unread.
        actual: Option<usize>,
    },
    /// The bytes are not UTF-8.
    #[error("message is not valid UTF-8")]
    InvalidUtf8,
    /// The text is not one JSON value: bad token, trailing data, leading BOM, `NaN`, lone
    /// surrogate escape, empty frame.
    #[error("message is not valid JSON")]
    Syntax {
        /// Byte offset where the scanner stopped.
        offset: usize,
    },
    /// A JSON array at top level: MCP has no batches.
    #[error("batches are not supported")]
    Batch,
    /// A top-level string, number, literal: not a JSON-RPC object.
    #[error("message is not a JSON object")]
    NotAnObject,
    /// Objects/arrays nested deeper than the bound (named const, 64).
    #[error("message nests deeper than {limit} levels")]
    TooDeep {
        /// The depth bound.
        limit: usize,
    },
    /// The same member name twice in one object, compared after unescaping.
    #[error("duplicate member name in an object")]
    DuplicateKey {
        /// Nesting level of the offending object (top-level object = 1).
        depth: usize,
    },
    /// A member name that serde_json would read as an instruction instead of data
    /// (`"$serde_json::private::RawValue"`, `"$serde_json::private::Number"`), at any depth.
    #[error("member name reserved by the JSON library")]
    ReservedKey {
        /// Nesting level of the offending object (top-level object = 1).
        depth: usize,
    },
    /// A top-level member other than `jsonrpc`, `id`, `method`, `params`, `result`, `error`,
    /// or an unknown member of the `error` object.
    #[error("unknown member in the JSON-RPC envelope")]
    UnknownMember,
    /// `jsonrpc` is missing or is not the string `"2.0"`.
    #[error("jsonrpc must be \"2.0\"")]
    BadVersion,
    /// The `id` is null, fractional, structured or otherwise not an id.
    #[error("invalid request id: {0}")]
    BadId(InvalidId),
    /// The encoded id token is longer than the bound.
    #[error("request id exceeds {limit} encoded bytes")]
    IdTooLong {
        /// The bound that was exceeded.
        limit: usize,
    },
    /// `method` is present but not a string.
    #[error("method must be a string")]
    MethodNotString,
    /// The encoded method token is longer than the bound.
    #[error("method exceeds {limit} encoded bytes")]
    MethodTooLong {
        /// The bound that was exceeded.
        limit: usize,
    },
    /// `params` is present but not an object (MCP params are always objects).
    #[error("params must be an object")]
    ParamsNotObject,
    /// Notification `params` longer than the bound.
    #[error("notification params exceed {limit} bytes")]
    NotificationParamsTooLarge {
        /// The bound that was exceeded.
        limit: usize,
    },
    /// Neither `method` nor `result`/`error`: not a JSON-RPC message.
    #[error("message is neither a request, a notification nor a response")]
    NotAMessage,
    /// `method` together with `result`/`error`, or `result` together with `error`.
    #[error("message mixes request and response members")]
    AmbiguousEnvelope,
    /// `result` is present but not an object.
    #[error("result must be an object")]
    ResultNotObject,
    /// `error` is not an object with an integer `code`, a string `message` and optional `data`.
    #[error("malformed error object")]
    BadErrorObject,
    /// A success response without an id.
    #[error("response id missing")]
    MissingResponseId,
    /// A request arrived at a client: servers never send requests.
    #[error("unexpected request")]
    UnexpectedRequest,
    /// A response arrived at a server: clients never send responses.
    #[error("unexpected response")]
    UnexpectedResponse,
}

impl IngressError {
    /// The single JSON-RPC code for this failure.
    pub fn code(&self) -> ErrorCode {
        match self {
            IngressError::InvalidUtf8 | IngressError::Syntax { .. } => ErrorCode::ParseError,
            IngressError::ParamsNotObject => ErrorCode::InvalidParams,
            IngressError::FrameTooLarge { .. }
            | IngressError::Batch
            | IngressError::NotAnObject
            | IngressError::TooDeep { .. }
            | IngressError::DuplicateKey { .. }
            | IngressError::ReservedKey { .. }
            | IngressError::UnknownMember
            | IngressError::BadVersion
            | IngressError::BadId(_)
            | IngressError::IdTooLong { .. }
            | IngressError::MethodNotString
            | IngressError::MethodTooLong { .. }
            | IngressError::NotificationParamsTooLarge { .. }
            | IngressError::NotAMessage
            | IngressError::AmbiguousEnvelope
            | IngressError::ResultNotObject
            | IngressError::BadErrorObject
            | IngressError::MissingResponseId
            | IngressError::UnexpectedRequest
            | IngressError::UnexpectedResponse => ErrorCode::InvalidRequest,
        }
    }
}

/// Whom a server answers after rejecting a frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplyTo {
    /// The id could be read: echo it exactly.
    Id(RequestId),
    /// The id could not be read (parse error, oversized line, bad id): reply with `"id": null`.
    NullId,
    /// The frame was recognisably a notification: never reply, not even with an error.
    Nobody,
}

/// A rejected inbound frame: the cause plus whom to answer.
///
/// Client drivers never send replies and only log the cause.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{error}")]
pub struct Rejection {
    /// What was wrong.
    pub error: IngressError,
    /// Whom to answer.
    pub reply_to: ReplyTo,
}

impl Rejection {
    /// A rejection with the given reply target.
    pub fn new(error: IngressError, reply_to: ReplyTo) -> Self {
        Self { error, reply_to }
    }

    /// The reply for a stdio line that was discarded for exceeding `limit` bytes.
    pub fn oversized_line(limit: usize) -> Self {
        Self::new(
            IngressError::FrameTooLarge {
                limit,
                actual: None,
            },
            ReplyTo::NullId,
        )
    }

    /// The JSON-RPC code of the cause.
    pub fn code(&self) -> ErrorCode {
        self.error.code()
    }

    /// The cause this rejection is answered with (an over-limit frame is `BodyTooLarge`: 413 on
    /// HTTP, -32600 on both transports).
    pub fn cause(&self) -> Cause {
        match self.error {
            IngressError::FrameTooLarge { .. } => Cause::BodyTooLarge,
            _ => Cause::from_code(self.code()),
        }
    }

    /// The error response a server sends, or `None` for notifications.
    pub fn to_response(&self) -> Option<ErrorResponse> {
        let id = match &self.reply_to {
            ReplyTo::Id(id) => Some(id.clone()),
            ReplyTo::NullId => None,
            ReplyTo::Nobody => return None,
        };
        let error = ErrorObject::new(self.code(), self.error.to_string());
        Some(ErrorResponse::new(id, error))
    }
}

/// Which egress bound tripped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EgressBound {
    /// A result payload against the ceiling minus the reserve.
    ResultPayload,
    /// A whole encoded message or line against the ceiling.
    Message,
    /// Notification params.
    NotificationParams,
    /// The encoded server identity (4 KiB).
    Identity,
    /// The encoded request id (256 B).
    Id,
}

/// Why an outbound message was not encoded; nothing was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EgressError {
    /// The message (or part of it) exceeds its bound. The server turns an oversized tool result
    /// into the `result_too_large` tool failure; the codec knows nothing of tools.
    #[error("{bound:?} of {actual} bytes exceeds the {limit}-byte limit")]
    TooLarge {
        /// Which bound tripped.
        bound: EgressBound,
        /// The bound.
        limit: usize,
        /// The measured size (a lower bound when the check stopped early).
        actual: usize,
    },
    /// Serialisation failed (e.g. an I/O error from the line writer's sink).
    #[error("encoding failed: {0}")]
    Encode(String),
}

impl EgressError {
    /// The single JSON-RPC code used if this failure has to be reported as an error response
    /// (e.g. an oversized non-tool result): an internal error, never the peer's fault.
    pub fn code(&self) -> ErrorCode {
        match self {
            EgressError::TooLarge { .. } | EgressError::Encode(_) => ErrorCode::InternalError,
        }
    }

    /// Whether this is a size violation (the server's cue for `result_too_large`).
    pub fn is_too_large(&self) -> bool {
        matches!(self, EgressError::TooLarge { .. })
    }
}
