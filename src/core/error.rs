//! Typed errors of the core: protocol errors ([`CoreError`]), tool failures ([`ToolFailure`])
//! and registration errors ([`BuildError`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::wire::errors::Cause;
use crate::wire::jsonrpc::ErrorCode;

/// A protocol-level error of the core; the server turns it into a JSON-RPC error object.
///
/// Unknown and hidden names deliberately produce the same variant with the same text, so a
/// caller cannot tell them apart (O23).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CoreError {
    /// The tool does not exist or is hidden from this caller (E11, O23).
    #[error("Unknown tool: {name}")]
    UnknownTool {
        /// The requested name, echoed back.
        name: String,
    },
    /// The prompt does not exist or is hidden from this caller (G5).
    #[error("Unknown prompt: {name}")]
    UnknownPrompt {
        /// The requested name, echoed back.
        name: String,
    },
    /// The resource does not exist or is hidden from this caller (F5, O34; never -32002).
    #[error("Resource not found")]
    UnknownResource {
        /// The requested URI, echoed in `data.uri`.
        uri: String,
    },
    /// The cursor was tampered with, minted for another caller or list, or expired (O21).
    #[error("Invalid cursor")]
    InvalidCursor,
    /// Any other invalid parameter (missing prompt argument, search limit out of range, ...).
    #[error("Invalid params: {message}")]
    InvalidParams {
        /// A safe, caller-facing explanation.
        message: String,
    },
    /// The request lacks a client capability the operation needs (O46).
    #[error("Missing required client capability")]
    MissingCapability {
        /// The capabilities that would have been needed, in `ClientCapabilities` shape.
        required: Value,
    },
    /// An internal failure; the private cause is never part of the error.
    #[error("Internal error")]
    Internal {
        /// Whether a retry could succeed.
        retryable: bool,
    },
    /// A resource read produced more bytes than the configured wire limit (O33).
    #[error("Resource too large")]
    ResourceTooLarge {
        /// The requested URI.
        uri: String,
    },
    /// A resource read did not finish (handler, conversion and final size check) within its
    /// time-out (O33); the handler's cancellation token fired. A retry may succeed.
    #[error("Resource read timed out")]
    ReadTimedOut {
        /// The requested URI.
        uri: String,
    },
    /// A prompt did not finish within its time-out; the handler's cancellation token fired.
    #[error("Prompt timed out")]
    PromptTimedOut {
        /// The requested prompt name.
        name: String,
    },
    /// The request's cancellation token had fired (server shutdown) before the read or prompt
    /// started. A client-cancelled request gets no reply at all (C9).
    #[error("Request cancelled")]
    Cancelled,
}

impl CoreError {
    /// The row of the cause table this error is answered with (code and HTTP status); every
    /// variant is listed, so a new one cannot fall through to a default.
    #[must_use]
    pub fn cause(&self) -> Cause {
        match self {
            CoreError::UnknownTool { .. }
            | CoreError::UnknownPrompt { .. }
            | CoreError::UnknownResource { .. } => Cause::UnknownTarget,
            CoreError::InvalidCursor | CoreError::InvalidParams { .. } => Cause::InvalidParams,
            CoreError::MissingCapability { .. } => Cause::MissingCapability,
            CoreError::Internal { .. }
            | CoreError::ResourceTooLarge { .. }
            | CoreError::ReadTimedOut { .. }
            | CoreError::PromptTimedOut { .. }
            | CoreError::Cancelled => Cause::Internal,
        }
    }

    /// The JSON-RPC error code (of [`CoreError::cause`]).
    #[must_use]
    pub fn code(&self) -> i32 {
        let code = self
            .cause()
            .code()
            .unwrap_or(ErrorCode::InternalError)
            .code();
        // Every code of the table is a small negative number.
        i32::try_from(code).unwrap_or(-32603)
    }

    /// The `error.data` member, when the code defines one.
    #[must_use]
    pub fn data(&self) -> Option<Value> {
        match self {
            CoreError::UnknownResource { uri } => Some(json!({ "uri": uri })),
            CoreError::MissingCapability { required } => {
                Some(json!({ "requiredCapabilities": required }))
            }
            CoreError::Internal { retryable } => Some(json!({ "retryable": retryable })),
            CoreError::ResourceTooLarge { uri } => Some(json!({ "uri": uri, "retryable": false })),
            CoreError::ReadTimedOut { uri } => Some(json!({ "uri": uri, "retryable": true })),
            CoreError::PromptTimedOut { name } => Some(json!({ "name": name, "retryable": true })),
            CoreError::Cancelled => Some(json!({ "retryable": true })),
            _ => None,
        }
    }

    /// The JSON-RPC `error` object: `{code, message, data?}`.
    ///
    /// ```
    /// use strict_mcp::core::CoreError;
    /// let e = CoreError::UnknownResource { uri: "file:///x".into() };
    /// assert_eq!(e.to_error_object().to_string(),
    ///     r#"{"code":-32602,"data":{"uri":"file:///x"},"message":"Resource not found"}"#);
    /// ```
    #[must_use]
    pub fn to_error_object(&self) -> Value {
        let mut obj = json!({ "code": self.code(), "message": self.to_string() });
        if let Some(data) = self.data() {
            obj["data"] = data;
        }
        obj
    }
}

/// The stable failure codes of a tool failure (`failure.code` on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FailureCode {
    /// The tool is not available to this caller (compact mode: unknown inner name).
    UnavailableTool,
    /// The arguments do not match the input schema; diagnostics say where and why.
    InvalidArguments,
    /// The result exceeds the response budget.
    ResultTooLarge,
    /// Too many interaction rounds.
    InteractionLimit,
    /// The continuation state was rejected (tampered, expired, foreign, stale).
    StateRejected,
    /// The operation already completed; a replay does not run it again.
    AlreadyCompleted,
    /// The continuation state could not be checked right now (its shared store did not
    /// answer); it was neither accepted nor rejected, and the same call may be retried.
    StateUnavailable,
    /// The handler produced a result its output schema does not describe.
    InvalidResult,
    /// The call was cancelled.
    Cancelled,
    /// An internal failure; the private cause is never serialised.
    Internal,
}

impl FailureCode {
    /// The stable wire string.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            FailureCode::UnavailableTool => "unavailable_tool",
            FailureCode::InvalidArguments => "invalid_arguments",
            FailureCode::ResultTooLarge => "result_too_large",
            FailureCode::InteractionLimit => "interaction_limit",
            FailureCode::StateRejected => "state_rejected",
            FailureCode::AlreadyCompleted => "already_completed",
            FailureCode::StateUnavailable => "state_unavailable",
            FailureCode::InvalidResult => "invalid_result",
            FailureCode::Cancelled => "cancelled",
            FailureCode::Internal => "internal",
        }
    }

    /// The default `retryable` flag of this code (interfaces.md).
    #[must_use]
    pub fn default_retryable(self) -> bool {
        matches!(
            self,
            FailureCode::Cancelled | FailureCode::Internal | FailureCode::StateUnavailable
        )
    }
}

/// One machine-readable finding attached to a failure, e.g. a schema violation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Diagnostic {
    /// JSON Pointer into the arguments (`""` is the whole object).
    pub pointer: String,
    /// The JSON Schema keyword that failed (`type`, `required`, `additionalProperties`, ...).
    pub keyword: String,
    /// A human-readable explanation without parser line/column noise.
    pub message: String,
    /// The expected type(s) when `keyword` is `type`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    /// The keys allowed at `pointer`, when the failure concerns object members.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_keys: Option<Vec<String>>,
}

/// A typed tool failure: reported as a result with `isError: true`, never as a panic.
// (O109; the doc comment above is published as the failure schema's description, so it
// carries no internal references.)
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolFailure {
    /// Stable failure code.
    pub code: FailureCode,
    /// A safe message for the model.
    pub message: String,
    /// Whether retrying the same call could succeed.
    pub retryable: bool,
    /// Optional structured findings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<Vec<Diagnostic>>,
}

impl ToolFailure {
    /// A failure with the code's default `retryable` flag.
    #[must_use]
    pub fn new(code: FailureCode, message: impl Into<String>) -> Self {
        ToolFailure {
            code,
            message: message.into(),
            retryable: code.default_retryable(),
            diagnostics: None,
        }
    }

    /// Overrides the `retryable` flag.
    #[must_use]
    pub fn retryable(mut self, retryable: bool) -> Self {
        self.retryable = retryable;
        self
    }

    /// Attaches diagnostics.
    #[must_use]
    pub fn with_diagnostics(mut self, diagnostics: Vec<Diagnostic>) -> Self {
        self.diagnostics = Some(diagnostics);
        self
    }

    /// The `internal` failure; its message never carries the private cause.
    #[must_use]
    pub fn internal() -> Self {
        ToolFailure::new(FailureCode::Internal, "The tool failed unexpectedly.")
    }

    /// The failure envelope `{"failure": {...}}` used by the publication layer (O17).
    ///
    /// ```
    /// use strict_mcp::core::{FailureCode, ToolFailure};
    /// let f = ToolFailure::new(FailureCode::Cancelled, "stopped");
    /// assert_eq!(f.envelope().to_string(),
    ///     r#"{"failure":{"code":"cancelled","message":"stopped","retryable":true}}"#);
    /// ```
    #[must_use]
    pub fn envelope(&self) -> Value {
        json!({ "failure": self })
    }
}

/// What a tool handler may return instead of a result: a tool failure or a protocol error
/// (for example the -32021 produced by asking for input the client cannot give).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// Reported to the model as `isError: true`.
    #[error("tool failure: {}", .0.message)]
    Failure(ToolFailure),
    /// Reported as a JSON-RPC error.
    #[error(transparent)]
    Protocol(CoreError),
}

impl From<ToolFailure> for ToolError {
    fn from(f: ToolFailure) -> Self {
        ToolError::Failure(f)
    }
}

impl From<CoreError> for ToolError {
    fn from(e: CoreError) -> Self {
        ToolError::Protocol(e)
    }
}

/// A registration error; the registry refuses to build and names the offending item.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// Two items share a name (or URI).
    #[error("duplicate {kind} `{name}`")]
    Duplicate {
        /// `tool`, `prompt`, `resource` or `resource template`.
        kind: &'static str,
        /// The duplicated name.
        name: String,
    },
    /// The tool name breaks E6 (1–128 characters of `[A-Za-z0-9_.-]`).
    #[error("tool `{name}`: invalid name (1-128 characters of A-Z a-z 0-9 _ . -)")]
    InvalidName {
        /// The offending name.
        name: String,
    },
    /// A schema could not be compiled or breaks a registration rule.
    #[error("{kind} `{name}`: {reason}")]
    Schema {
        /// `tool input`, `tool output`, `prompt arguments`, ...
        kind: &'static str,
        /// The item name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// An `x-mcp-header` annotation breaks D22.
    #[error("tool `{tool}`: property `{property}`: invalid x-mcp-header annotation: {reason}")]
    McpHeader {
        /// The tool name.
        tool: String,
        /// JSON Pointer of the annotated property inside the input schema.
        property: String,
        /// What is wrong.
        reason: String,
    },
    /// The output type does not name its payload (O108).
    #[error("tool `{tool}`: output must be an object that names its payload: {reason}")]
    UnnamedPayload {
        /// The tool name.
        tool: String,
        /// What is wrong.
        reason: String,
    },
    /// Nothing was registered: an empty registry is almost always a wiring mistake.
    #[error("the registry is empty: register at least one tool, resource, template or prompt")]
    Empty,
    /// A time-out override lies outside
    /// [`MIN_TIMEOUT`](crate::core::MIN_TIMEOUT)`..=`[`MAX_TIMEOUT`](crate::core::MAX_TIMEOUT).
    #[error("{kind} `{name}`: time-out {timeout:?} is outside 1 ms ..= 1 h")]
    InvalidTimeout {
        /// `resource`, `resource template` or `prompt`.
        kind: &'static str,
        /// The URI, template or prompt name.
        name: String,
        /// The refused value.
        timeout: std::time::Duration,
    },
    /// A resource URI or template is malformed.
    #[error("resource `{uri}`: {reason}")]
    Resource {
        /// The URI or template.
        uri: String,
        /// What is wrong.
        reason: String,
    },
}
