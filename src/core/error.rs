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
/// caller cannot tell them apart.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CoreError {
    /// The tool does not exist or is hidden from this caller.
    #[error("Unknown tool: {name}")]
    UnknownTool {
        /// The requested name, echoed back.
        name: String,
    },
    /// A native `tools/call` of a tool the caller may see, on a server that publishes in
    /// compact mode, where tools are reached through `call_tool`. The message says so; a
    /// hidden or unknown tool stays [`CoreError::UnknownTool`].
    #[error("Unknown tool: {name}. This server publishes its tools in compact mode: call `call_tool` with {{\"name\": \"{name}\", \"arguments\": {{...}}}} (find tools with `search_tools`)")]
    CompactOnly {
        /// The requested name, echoed back.
        name: String,
    },
    /// The prompt does not exist or is hidden from this caller.
    #[error("Unknown prompt: {name}")]
    UnknownPrompt {
        /// The requested name, echoed back.
        name: String,
    },
    /// The resource does not exist or is hidden from this caller (never -32002).
    #[error("Resource not found")]
    UnknownResource {
        /// The requested URI, echoed in `data.uri`.
        uri: String,
    },
    /// The cursor was tampered with, minted for another caller or list, or expired.
    #[error("Invalid cursor")]
    InvalidCursor,
    /// Any other invalid parameter (missing prompt argument, search limit out of range, ...).
    #[error("Invalid params: {message}")]
    InvalidParams {
        /// A safe, caller-facing explanation.
        message: String,
    },
    /// The request lacks a client capability the operation needs.
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
    /// A resource read produced more bytes than the configured wire limit.
    #[error("Resource too large")]
    ResourceTooLarge {
        /// The requested URI.
        uri: String,
    },
    /// A resource read did not finish (handler, conversion and final size check) within its
    /// time-out; the handler's cancellation token fired. A retry may succeed.
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
    /// A `tools/call` did not finish (handler and result check) within its time-out; the
    /// handler's cancellation token fired. A retry may succeed.
    #[error("Tool call timed out")]
    ToolTimedOut {
        /// The called tool's name.
        name: String,
    },
    /// The request's cancellation token had fired (server shutdown) before the read or prompt
    /// started. A client-cancelled request gets no reply at all.
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
            | CoreError::CompactOnly { .. }
            | CoreError::UnknownPrompt { .. }
            | CoreError::UnknownResource { .. } => Cause::UnknownTarget,
            CoreError::InvalidCursor | CoreError::InvalidParams { .. } => Cause::InvalidParams,
            CoreError::MissingCapability { .. } => Cause::MissingCapability,
            CoreError::Internal { .. }
            | CoreError::ResourceTooLarge { .. }
            | CoreError::ReadTimedOut { .. }
            | CoreError::PromptTimedOut { .. }
            | CoreError::ToolTimedOut { .. }
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
            CoreError::PromptTimedOut { name } | CoreError::ToolTimedOut { name } => {
                Some(json!({ "name": name, "retryable": true }))
            }
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

/// The stable failure codes of a tool failure (`failure.code` on the wire): the built-in ones
/// the library produces, and [`FailureCode::Application`] for an application's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
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
    /// A code the application defines (`not_found`, `conflict`, ...), see [`AppCode`].
    Application(AppCode),
}

/// The wire names of the built-in codes, in declaration order; application codes may not
/// reuse them, so a client can trust that these always mean what the library means.
pub const BUILTIN_FAILURE_CODES: [&str; 10] = [
    "unavailable_tool",
    "invalid_arguments",
    "result_too_large",
    "interaction_limit",
    "state_rejected",
    "already_completed",
    "state_unavailable",
    "invalid_result",
    "cancelled",
    "internal",
];

/// Longest application failure code, in bytes: long enough for a descriptive snake_case name,
/// short enough that codes stay identifiers rather than messages.
pub const MAX_APP_CODE_LEN: usize = 64;

/// The pattern every failure code matches (built-in and application ones), as published in
/// the failure schema.
pub const FAILURE_CODE_PATTERN: &str = "^[a-z][a-z0-9_]*$";

impl FailureCode {
    /// The stable wire string.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            FailureCode::UnavailableTool => BUILTIN_FAILURE_CODES[0],
            FailureCode::InvalidArguments => BUILTIN_FAILURE_CODES[1],
            FailureCode::ResultTooLarge => BUILTIN_FAILURE_CODES[2],
            FailureCode::InteractionLimit => BUILTIN_FAILURE_CODES[3],
            FailureCode::StateRejected => BUILTIN_FAILURE_CODES[4],
            FailureCode::AlreadyCompleted => BUILTIN_FAILURE_CODES[5],
            FailureCode::StateUnavailable => BUILTIN_FAILURE_CODES[6],
            FailureCode::InvalidResult => BUILTIN_FAILURE_CODES[7],
            FailureCode::Cancelled => BUILTIN_FAILURE_CODES[8],
            FailureCode::Internal => BUILTIN_FAILURE_CODES[9],
            FailureCode::Application(code) => code.name(),
        }
    }

    /// The built-in code with this wire name.
    #[must_use]
    pub fn builtin(name: &str) -> Option<FailureCode> {
        const ALL: [FailureCode; 10] = [
            FailureCode::UnavailableTool,
            FailureCode::InvalidArguments,
            FailureCode::ResultTooLarge,
            FailureCode::InteractionLimit,
            FailureCode::StateRejected,
            FailureCode::AlreadyCompleted,
            FailureCode::StateUnavailable,
            FailureCode::InvalidResult,
            FailureCode::Cancelled,
            FailureCode::Internal,
        ];
        ALL.into_iter().find(|c| c.as_str() == name)
    }

    /// The default `retryable` flag of this code: true for `cancelled`, `internal` and
    /// `state_unavailable`, the application's choice for its own codes, false otherwise.
    #[must_use]
    pub fn default_retryable(self) -> bool {
        match self {
            FailureCode::Application(code) => code.is_retryable(),
            other => matches!(
                other,
                FailureCode::Cancelled | FailureCode::Internal | FailureCode::StateUnavailable
            ),
        }
    }
}

impl From<AppCode> for FailureCode {
    fn from(code: AppCode) -> Self {
        FailureCode::Application(code)
    }
}

impl Serialize for FailureCode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Reads the built-in codes only: an application code's name is `'static`, known to the
/// application, so a reader that needs one compares [`FailureCode::as_str`] instead.
impl<'de> Deserialize<'de> for FailureCode {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        FailureCode::builtin(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown failure code `{name}`")))
    }
}

impl JsonSchema for FailureCode {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "FailureCode".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": FAILURE_CODE_PATTERN,
            "maxLength": MAX_APP_CODE_LEN,
            "description": "Stable failure code: unavailable_tool, invalid_arguments, \
                result_too_large, interaction_limit, state_rejected, already_completed, \
                invalid_result, cancelled, internal, or one the server defines.",
        })
    }
}

/// An application's own failure code (`failure.code` on the wire), e.g. `not_found`: a
/// snake_case name of 1 to [`MAX_APP_CODE_LEN`] bytes (`[a-z][a-z0-9_]*`) that is not one of
/// [`BUILTIN_FAILURE_CODES`], with its default `retryable` flag (false unless set).
///
/// ```
/// use strict_mcp::core::{AppCode, ToolError, ToolFailure};
/// const NOT_FOUND: AppCode = match AppCode::new("not_found") {
///     Ok(code) => code,
///     Err(_) => panic!("not a valid code"), // evaluated at compile time
/// };
/// let busy = AppCode::new("busy").unwrap().retryable(true);
/// let f = ToolFailure::new(NOT_FOUND, "No note has that id.");
/// assert_eq!(f.envelope().to_string(),
///     r#"{"failure":{"code":"not_found","message":"No note has that id.","retryable":false}}"#);
/// assert!(ToolFailure::new(busy, "try later").retryable);
/// assert!(AppCode::new("internal").is_err()); // built-in names are reserved
/// let _: ToolError = f.into();
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AppCode {
    name: &'static str,
    retryable: bool,
}

/// Why a name is not a valid [`AppCode`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AppCodeError {
    /// The name is empty.
    #[error("a failure code must not be empty")]
    Empty,
    /// The name is longer than [`MAX_APP_CODE_LEN`] bytes.
    #[error("a failure code is at most 64 bytes, this one has {len}")]
    TooLong {
        /// The name's length in bytes.
        len: usize,
    },
    /// A byte outside `[a-z0-9_]`, or a first byte that is not `[a-z]`.
    #[error("a failure code is snake_case ([a-z][a-z0-9_]*); byte {index} is not allowed")]
    Character {
        /// Byte offset of the first offending byte.
        index: usize,
    },
    /// The name is one of the built-in codes.
    #[error("failure code `{0}` is built in; choose another name")]
    Reserved(&'static str),
}

impl AppCode {
    /// Validates `name`; the code is not retryable unless [`AppCode::retryable`] says so.
    /// A `const fn`, so a code can be checked at compile time in a `const` item.
    ///
    /// # Errors
    /// [`AppCodeError`] when the name breaks the rules above.
    pub const fn new(name: &'static str) -> Result<AppCode, AppCodeError> {
        let bytes = name.as_bytes();
        if bytes.is_empty() {
            return Err(AppCodeError::Empty);
        }
        if bytes.len() > MAX_APP_CODE_LEN {
            return Err(AppCodeError::TooLong { len: bytes.len() });
        }
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            let ok = b.is_ascii_lowercase() || (i > 0 && (b.is_ascii_digit() || b == b'_'));
            if !ok {
                return Err(AppCodeError::Character { index: i });
            }
            i += 1;
        }
        let mut k = 0;
        while k < BUILTIN_FAILURE_CODES.len() {
            if const_eq(BUILTIN_FAILURE_CODES[k].as_bytes(), bytes) {
                return Err(AppCodeError::Reserved(BUILTIN_FAILURE_CODES[k]));
            }
            k += 1;
        }
        Ok(AppCode {
            name,
            retryable: false,
        })
    }

    /// Sets the code's default `retryable` flag (a single failure can still override it).
    #[must_use]
    pub const fn retryable(mut self, retryable: bool) -> AppCode {
        self.retryable = retryable;
        self
    }

    /// The wire name.
    #[must_use]
    pub const fn name(self) -> &'static str {
        self.name
    }

    /// The default `retryable` flag.
    #[must_use]
    pub const fn is_retryable(self) -> bool {
        self.retryable
    }
}

const fn const_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
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
    /// A failure with the code's default `retryable` flag; `code` is a [`FailureCode`] or an
    /// application's [`AppCode`].
    #[must_use]
    pub fn new(code: impl Into<FailureCode>, message: impl Into<String>) -> Self {
        let code = code.into();
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
        ToolFailure::new(FailureCode::Internal, INTERNAL_MESSAGE)
    }

    /// The `internal` failure for `cause`, which is logged (`tracing` error event, target
    /// `strict_mcp::tool`) and never sent: what `?` does with an I/O error, a string or a boxed
    /// error in a handler.
    #[must_use]
    pub fn internal_from(cause: &dyn std::fmt::Display) -> Self {
        tracing::error!(target: "strict_mcp::tool", cause = %cause, "tool handler failed");
        ToolFailure::internal()
    }

    /// The failure envelope `{"failure": {...}}` used by the publication layer.
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

/// The message of every `internal` failure: the model learns that the tool failed, never why.
pub const INTERNAL_MESSAGE: &str = "The tool failed unexpectedly.";

impl ToolError {
    /// The `internal` failure for a private `cause`, logged and never sent
    /// ([`ToolFailure::internal_from`]).
    #[must_use]
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        ToolError::Failure(ToolFailure::internal_from(&cause))
    }
}

// `?` in a handler: these errors become the `internal` failure; the cause is logged, never
// sent (it may hold paths, queries or secrets). Send a failure the model should read as a
// `ToolFailure` with a code and a safe message instead.
impl From<std::io::Error> for ToolError {
    fn from(e: std::io::Error) -> Self {
        ToolError::internal(e)
    }
}

impl From<serde_json::Error> for ToolError {
    fn from(e: serde_json::Error) -> Self {
        ToolError::internal(e)
    }
}

impl From<&str> for ToolError {
    fn from(cause: &str) -> Self {
        ToolError::internal(cause)
    }
}

impl From<String> for ToolError {
    fn from(cause: String) -> Self {
        ToolError::internal(cause)
    }
}

impl From<Box<dyn std::error::Error + Send + Sync>> for ToolError {
    fn from(e: Box<dyn std::error::Error + Send + Sync>) -> Self {
        ToolError::internal(e)
    }
}

impl From<Box<dyn std::error::Error>> for ToolError {
    fn from(e: Box<dyn std::error::Error>) -> Self {
        ToolError::internal(e)
    }
}

/// `?` for any other error type in a handler: `.or_internal()?` logs the cause and fails
/// with `internal`; `.or_failure(code, message)?` fails with a code and a safe message.
///
/// ```
/// use strict_mcp::core::{AppCode, ToolError, ToolResultExt};
/// fn find(id: u32) -> Result<String, ToolError> {
///     let n: u32 = "7".parse().or_internal()?;
///     let found = (id == n).then(|| "note".to_owned());
///     found.ok_or(()).or_failure(AppCode::new("not_found").unwrap(), "No note has that id.")
/// }
/// assert!(find(7).is_ok());
/// assert!(matches!(find(8), Err(ToolError::Failure(f)) if f.code.as_str() == "not_found"));
/// ```
pub trait ToolResultExt<T> {
    /// The error becomes the `internal` failure; its `Debug` form is logged, never sent.
    ///
    /// # Errors
    /// [`ToolError::Failure`] with code `internal` when `self` is an error.
    fn or_internal(self) -> Result<T, ToolError>;

    /// The error becomes a failure with `code` and the safe `message`; the cause is dropped.
    ///
    /// # Errors
    /// [`ToolError::Failure`] with `code` when `self` is an error.
    fn or_failure(
        self,
        code: impl Into<FailureCode>,
        message: impl Into<String>,
    ) -> Result<T, ToolError>;
}

impl<T, E: std::fmt::Debug> ToolResultExt<T> for Result<T, E> {
    fn or_internal(self) -> Result<T, ToolError> {
        self.map_err(|e| ToolError::internal(format_args!("{e:?}")))
    }

    fn or_failure(
        self,
        code: impl Into<FailureCode>,
        message: impl Into<String>,
    ) -> Result<T, ToolError> {
        self.map_err(|_| ToolError::Failure(ToolFailure::new(code, message)))
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
    /// The tool name is not 1–128 characters of `[A-Za-z0-9_.-]`.
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
    /// An `x-mcp-header` annotation is malformed.
    #[error("tool `{tool}`: property `{property}`: invalid x-mcp-header annotation: {reason}")]
    McpHeader {
        /// The tool name.
        tool: String,
        /// JSON Pointer of the annotated property inside the input schema.
        property: String,
        /// What is wrong.
        reason: String,
    },
    /// The output type does not name its payload.
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
        /// `tool`, `resource`, `resource template` or `prompt`.
        kind: &'static str,
        /// The tool name, URI, template or prompt name.
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
