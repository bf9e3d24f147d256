//! The per-request invocation context handed to every handler.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::core::caller::{Caller, CancelToken};
use crate::core::error::{CoreError, Diagnostic, FailureCode, ToolError, ToolFailure};
use crate::core::schema::CompiledSchema;

/// The client capabilities declared on the current request (never remembered across requests).
///
/// ```
/// use strict_mcp::core::{ClientCapabilities, ElicitMode};
/// let caps = ClientCapabilities::from_value(serde_json::json!({"elicitation": {}}));
/// assert!(caps.supports(ElicitMode::Form));
/// assert!(!caps.supports(ElicitMode::Url)); // URL only when declared explicitly
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClientCapabilities {
    form: bool,
    url: bool,
    sampling: bool,
    sampling_tools: bool,
    sampling_context: bool,
    roots: bool,
    presentation: Presentation,
    tasks: bool,
}

/// The extension identifier of MCP Apps (`ClientCapabilities.extensions` key).
pub const UI_EXTENSION: &str = "io.modelcontextprotocol/ui";

/// The MIME type of an MCP Apps HTML view.
pub const MCP_APP_MIME_TYPE: &str = "text/html;profile=mcp-app";

/// What the client declared, on this request only, about presenting user interfaces:
/// the MCP Apps extension `extensions["io.modelcontextprotocol/ui"]` with its `mimeTypes`.
///
/// Absent, malformed or without `mimeTypes`, it declares nothing: no UI is supported. MIME
/// types compare as RFC 9110 media types: type, subtype and parameter names without regard
/// to ASCII case or the optional whitespace around `;` and `=`; parameter values exactly.
///
/// ```
/// use strict_mcp::core::{Caller, ClientCapabilities, Invocation, MCP_APP_MIME_TYPE};
/// let caps = ClientCapabilities::from_value(serde_json::json!({
///     "extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}
/// }));
/// let inv = Invocation::new(Caller::anonymous()).with_capabilities(caps);
/// assert!(inv.presentation().supports_ui(MCP_APP_MIME_TYPE));
/// assert!(inv.presentation().supports_ui("Text/HTML; profile=mcp-app"));
/// assert!(!inv.presentation().supports_ui("text/html"));
/// assert_eq!(inv.presentation().ui_mime_types(), ["text/html;profile=mcp-app"]);
///
/// // A request that declares nothing gets the text-only fallback.
/// let plain = Invocation::new(Caller::anonymous());
/// assert!(!plain.presentation().supports_ui(MCP_APP_MIME_TYPE));
/// assert!(plain.presentation().ui_mime_types().is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Presentation {
    /// Shared, so cloning the capabilities into each invocation of a request stays cheap.
    ui_mime_types: Arc<[String]>,
}

impl Presentation {
    /// Reads the presentation hints from a `clientCapabilities` object.
    #[must_use]
    pub fn from_capabilities(caps: &Value) -> Self {
        let ui_mime_types = caps
            .get("extensions")
            .and_then(|e| e.get(UI_EXTENSION))
            .filter(|ui| ui.is_object())
            .and_then(|ui| ui.get("mimeTypes"))
            .and_then(Value::as_array)
            .map(|types| {
                types
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect::<Arc<[String]>>()
            })
            .unwrap_or_default();
        Presentation { ui_mime_types }
    }

    /// The UI MIME types the client declared, as sent (string entries only).
    #[must_use]
    pub fn ui_mime_types(&self) -> &[String] {
        &self.ui_mime_types
    }

    /// Whether the client declared it can present a UI resource of this MIME type.
    #[must_use]
    pub fn supports_ui(&self, mime_type: &str) -> bool {
        let wanted = normalize_media_type(mime_type);
        self.ui_mime_types
            .iter()
            .any(|declared| normalize_media_type(declared) == wanted)
    }
}

/// A media type in comparable form: type, subtype and parameter names lower-cased, optional
/// whitespace removed, parameter values kept as written.
fn normalize_media_type(text: &str) -> String {
    let mut parts = text.split(';');
    let mut out = parts.next().unwrap_or("").trim().to_ascii_lowercase();
    for param in parts {
        let (name, value) = param.split_once('=').unwrap_or((param, ""));
        out.push(';');
        out.push_str(&name.trim().to_ascii_lowercase());
        out.push('=');
        out.push_str(value.trim());
    }
    out
}

impl ClientCapabilities {
    /// Reads the request's `clientCapabilities` object. Anything not an object declares nothing.
    #[must_use]
    pub fn from_value(value: Value) -> Self {
        let elicitation = value.get("elicitation").and_then(Value::as_object);
        let form = elicitation
            .is_some_and(|e| e.is_empty() || e.get("form").is_some_and(Value::is_object));
        let url = elicitation.is_some_and(|e| e.get("url").is_some_and(Value::is_object));
        let sampling = value.get("sampling").and_then(Value::as_object);
        let sampling_has =
            |key: &str| sampling.is_some_and(|s| s.get(key).is_some_and(Value::is_object));
        ClientCapabilities {
            form,
            url,
            sampling: sampling.is_some(),
            sampling_tools: sampling_has("tools"),
            sampling_context: sampling_has("context"),
            roots: value.get("roots").is_some_and(Value::is_object),
            tasks: crate::wire::tasks::declares_tasks(&value),
            presentation: Presentation::from_capabilities(&value),
        }
    }

    /// Whether this request declared the Tasks extension
    /// (`extensions["io.modelcontextprotocol/tasks"]`, an object): only then may a
    /// `tools/call` answer `resultType: "task"` and `tasks/*` be used.
    #[must_use]
    pub fn declares_tasks(&self) -> bool {
        self.tasks
    }

    /// What the client declared for presenting user interfaces (MCP Apps).
    #[must_use]
    pub fn presentation(&self) -> &Presentation {
        &self.presentation
    }

    /// Whether the client accepts elicitation in this mode.
    #[must_use]
    pub fn supports(&self, mode: ElicitMode) -> bool {
        match mode {
            ElicitMode::Form => self.form,
            ElicitMode::Url => self.url,
        }
    }

    /// Whether the client declared `sampling`.
    #[must_use]
    pub fn sampling(&self) -> bool {
        self.sampling
    }

    /// Whether the client declared `sampling.tools` (tool use inside sampling).
    #[must_use]
    pub fn sampling_tools(&self) -> bool {
        self.sampling_tools
    }

    /// Whether the client declared `sampling.context` (a non-`none` `includeContext`).
    #[must_use]
    pub fn sampling_context(&self) -> bool {
        self.sampling_context
    }

    /// Whether the client declared `roots`.
    #[must_use]
    pub fn roots(&self) -> bool {
        self.roots
    }
}

/// Elicitation mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElicitMode {
    /// An in-client form described by a flat schema.
    Form,
    /// An out-of-band URL the user visits.
    Url,
}

/// One server-initiated request under `inputRequests` (`InputRequest`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InputRequest {
    method: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<Value>,
}

impl InputRequest {
    /// The JSON-RPC method (`elicitation/create`, `sampling/createMessage`, `roots/list`).
    #[must_use]
    pub fn method(&self) -> &'static str {
        self.method
    }

    /// The params object.
    #[must_use]
    pub fn params(&self) -> Option<&Value> {
        self.params.as_ref()
    }
}

/// What a handler that may ask for input returns.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome<T> {
    /// The operation finished.
    Complete(T),
    /// The operation needs client input first; the server binds this to the ledger and
    /// answers `resultType: "input_required"`.
    InputRequired {
        /// Requests keyed by server-chosen ids.
        requests: BTreeMap<String, InputRequest>,
    },
}

/// A finished value is a complete outcome, so a handler that never asks for input can return
/// its value where an [`Outcome`] is accepted (prompt handlers of either constructor).
impl<T> From<T> for Outcome<T> {
    fn from(value: T) -> Self {
        Outcome::Complete(value)
    }
}

impl<T> Outcome<T> {
    /// One input request under `key`.
    #[must_use]
    pub fn input(key: impl Into<String>, request: InputRequest) -> Self {
        let mut requests = BTreeMap::new();
        requests.insert(key.into(), request);
        Outcome::InputRequired { requests }
    }
}

/// Receives progress reports; the server wires it to the pacer and the client's token.
///
/// The core forwards only valid reports: finite values, `progress` strictly increasing,
/// `total` (when given) finite and not negative, and nothing after the call has ended.
pub trait ProgressSink: Send + Sync {
    /// One report.
    fn report(&self, progress: f64, total: Option<f64>, message: Option<&str>);
}

/// Filters reports for one invocation and closes when the call ends.
#[derive(Default)]
pub(crate) struct ProgressGate {
    last: Mutex<Option<f64>>,
    ended: AtomicBool,
}

impl ProgressGate {
    fn admit(&self, progress: f64, total: Option<f64>) -> bool {
        if self.ended.load(Ordering::Acquire)
            || !progress.is_finite()
            || total.is_some_and(|t| !t.is_finite() || t < 0.0)
        {
            return false;
        }
        let Ok(mut last) = self.last.lock() else {
            return false;
        };
        if last.is_some_and(|l| progress <= l) {
            return false;
        }
        *last = Some(progress);
        true
    }

    pub(crate) fn end(&self) {
        self.ended.store(true, Ordering::Release);
    }
}

pub use crate::wire::logging::LogLevel;

/// Where a handler's log messages go. The server installs one only for requests whose `_meta`
/// asks for logging, filtering by the requested level and delivering on that request's
/// own response stream; without one, [`Invocation::log`] does nothing.
pub trait LogSink: Send + Sync {
    /// One message: `data` is any JSON value; `logger` names the source.
    fn log(&self, level: LogLevel, logger: Option<&str>, data: &Value);
}

/// The context of one request: who calls, what the client can do, cancellation, progress,
/// recovery mode and the answers to earlier input requests.
#[derive(Clone)]
pub struct Invocation {
    caller: Caller,
    caps: ClientCapabilities,
    cancel: CancelToken,
    progress: Option<Arc<dyn ProgressSink>>,
    gate: Arc<ProgressGate>,
    log: Option<Arc<dyn LogSink>>,
    recovery: bool,
    responses: Arc<BTreeMap<String, Box<RawValue>>>,
    /// The Apps view this invocation's result selects ([`Invocation::show_view`]).
    view: Arc<crate::core::view::ViewSlot>,
}

impl fmt::Debug for Invocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Invocation")
            .field("caller", &self.caller)
            .field("caps", &self.caps)
            .field("cancelled", &self.cancel.is_cancelled())
            .field("progress", &self.progress.is_some())
            .field("log", &self.log.is_some())
            .field("recovery", &self.recovery)
            .field("responses", &self.responses.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// The shared empty answer map (most calls carry no answers: no allocation for them).
fn no_responses() -> Arc<BTreeMap<String, Box<RawValue>>> {
    static EMPTY: std::sync::OnceLock<Arc<BTreeMap<String, Box<RawValue>>>> =
        std::sync::OnceLock::new();
    Arc::clone(EMPTY.get_or_init(|| Arc::new(BTreeMap::new())))
}

impl Invocation {
    /// A context with no declared capabilities, a fresh token and no progress sink.
    #[must_use]
    pub fn new(caller: Caller) -> Self {
        Self::for_request(caller, ClientCapabilities::default(), CancelToken::new())
    }

    /// The server's constructor: the request's capabilities and token, without a throwaway
    /// fresh token or answer map (one call per request).
    pub(crate) fn for_request(
        caller: Caller,
        caps: ClientCapabilities,
        cancel: CancelToken,
    ) -> Self {
        Invocation {
            caller,
            caps,
            cancel,
            progress: None,
            gate: Arc::new(ProgressGate::default()),
            log: None,
            recovery: false,
            responses: no_responses(),
            view: Arc::default(),
        }
    }

    /// Sets the request's declared client capabilities.
    #[must_use]
    pub fn with_capabilities(mut self, caps: ClientCapabilities) -> Self {
        self.caps = caps;
        self
    }

    /// Sets the cancellation token the driver will trigger.
    #[must_use]
    pub fn with_cancel(mut self, cancel: CancelToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// Sets the progress sink (only when the client sent a valid progress token).
    #[must_use]
    pub fn with_progress(mut self, sink: Arc<dyn ProgressSink>) -> Self {
        self.progress = Some(sink);
        self
    }

    /// Marks the call as the replay of a completed chain.
    #[must_use]
    pub fn with_recovery(mut self, recovery: bool) -> Self {
        self.recovery = recovery;
        self
    }

    /// Supplies the exact answer bytes of `inputResponses`, by key.
    #[must_use]
    pub fn with_input_responses(mut self, responses: BTreeMap<String, Box<RawValue>>) -> Self {
        self.responses = if responses.is_empty() {
            no_responses()
        } else {
            Arc::new(responses)
        };
        self
    }

    /// Selects the MCP Apps view that shows this call's successful result, with its data (a
    /// later selection replaces an earlier one). The server sends it only when Apps is
    /// enabled ([`ServerOptions::apps`](crate::server::ServerOptions::apps)) and the call came
    /// through compact `call_tool`; a view that is not configured turns the result into the
    /// failure `invalid_result`. The result still needs its ordinary content for clients that
    /// render no UI. Without Apps the selection is ignored. The selection belongs to this
    /// invocation: a round that asks for input and is continued later selects again in the
    /// round that completes.
    pub fn show_view(&self, view: crate::core::AppView) {
        self.view.set(view);
    }

    /// The slot [`Invocation::show_view`] fills, for the server to read once the result is
    /// complete (only the server reads it).
    #[cfg(feature = "server")]
    pub(crate) fn view_slot(&self) -> Arc<crate::core::view::ViewSlot> {
        Arc::clone(&self.view)
    }

    /// The caller.
    #[must_use]
    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    /// The declared client capabilities.
    #[must_use]
    pub fn capabilities(&self) -> &ClientCapabilities {
        &self.caps
    }

    /// What this request's client declared for presenting user interfaces (the MCP Apps
    /// extension `io.modelcontextprotocol/ui`), read from this request only. A handler
    /// may attach a UI resource when [`Presentation::supports_ui`] holds and must still return
    /// meaningful text content for clients without it.
    #[must_use]
    pub fn presentation(&self) -> &Presentation {
        self.caps.presentation()
    }

    /// Whether the current request supports an elicitation mode.
    #[must_use]
    pub fn supports(&self, mode: ElicitMode) -> bool {
        self.caps.supports(mode)
    }

    /// The cancellation token.
    #[must_use]
    pub fn cancel_token(&self) -> &CancelToken {
        &self.cancel
    }

    /// Whether the call was cancelled.
    #[must_use]
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Resolves once the request is cancelled: by the client (`notifications/cancelled` on
    /// stdio, a closed stream on HTTP), by a time-out, or by server shutdown. Tool, read and
    /// prompt handlers may await it to stop cooperatively.
    ///
    /// ```
    /// use strict_mcp::core::{Caller, CancelToken, Invocation};
    /// let token = CancelToken::new();
    /// let inv = Invocation::new(Caller::anonymous()).with_cancel(token.clone());
    /// token.cancel();
    /// futures_util::FutureExt::now_or_never(inv.cancelled()).expect("resolved after cancel");
    /// ```
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await;
    }

    /// Whether this is a replay of a completed chain: do not repeat side effects.
    #[must_use]
    pub fn is_recovery(&self) -> bool {
        self.recovery
    }

    /// Sends log messages to `sink` (installed by the server for requests that ask).
    #[must_use]
    pub fn with_log(mut self, sink: Arc<dyn LogSink>) -> Self {
        self.log = Some(sink);
        self
    }

    /// Logs a message for the client; does nothing unless this request asked for logging at
    /// `level` or below. Never put credentials or internals in `data`.
    pub fn log(&self, level: LogLevel, logger: Option<&str>, data: Value) {
        if let Some(sink) = &self.log {
            sink.log(level, logger, &data);
        }
    }

    /// Reports progress; does nothing when the client asked for none, when the values are
    /// invalid (not finite, not increasing, negative total) or after the call has ended.
    pub fn report_progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(sink) = &self.progress {
            if self.gate.admit(progress, total) {
                sink.report(progress, total, message);
            }
        }
    }

    pub(crate) fn progress_gate(&self) -> Arc<ProgressGate> {
        Arc::clone(&self.gate)
    }

    /// The exact bytes of the answer under `key`, if the client sent one.
    #[must_use]
    pub fn input_response(&self, key: &str) -> Option<&RawValue> {
        self.responses.get(key).map(AsRef::as_ref)
    }

    /// Builds a form elicitation. The schema must be a flat object of primitive properties
    /// (the rules are listed on the checker in [`crate::core::schema`]).
    ///
    /// # Errors
    /// -32021 when the request did not declare form elicitation; -32603 when the schema is
    /// not a flat primitive object (a programming error, logged).
    ///
    /// ```
    /// use strict_mcp::core::{Caller, ClientCapabilities, Invocation};
    /// let inv = Invocation::new(Caller::anonymous());
    /// let err = inv.elicit_form("Name?", serde_json::json!({"type":"object"})).unwrap_err();
    /// assert_eq!(err.code(), -32021);
    /// ```
    pub fn elicit_form(
        &self,
        message: &str,
        requested_schema: Value,
    ) -> Result<InputRequest, CoreError> {
        if !self.caps.form {
            return Err(CoreError::MissingCapability {
                required: json!({"elicitation": {"form": {}}}),
            });
        }
        if let Err(reason) = crate::core::schema::check_flat_schema(&requested_schema) {
            tracing::warn!(%reason, "elicitation schema is not a flat primitive object");
            return Err(CoreError::Internal { retryable: false });
        }
        Ok(InputRequest {
            method: "elicitation/create",
            params: Some(json!({
                "mode": "form",
                "message": message,
                "requestedSchema": requested_schema,
            })),
        })
    }

    /// Builds a URL elicitation.
    ///
    /// # Errors
    /// -32021 when the request did not declare URL elicitation.
    pub fn elicit_url(&self, message: &str, url: &str) -> Result<InputRequest, CoreError> {
        if !self.caps.url {
            return Err(CoreError::MissingCapability {
                required: json!({"elicitation": {"url": {}}}),
            });
        }
        Ok(InputRequest {
            method: "elicitation/create",
            params: Some(json!({ "mode": "url", "message": message, "url": url })),
        })
    }

    /// Builds a sampling request from `CreateMessageRequestParams`.
    ///
    /// # Errors
    /// -32021 when the request did not declare `sampling`; also when `params` carry `tools`
    /// or `toolChoice` without `sampling.tools`, or an `includeContext` other than `"none"`
    /// without `sampling.context`. `data.requiredCapabilities` names everything missing,
    /// e.g. `{"sampling":{"tools":{}}}`.
    ///
    /// ```
    /// use strict_mcp::core::{Caller, ClientCapabilities, Invocation};
    /// let caps = ClientCapabilities::from_value(serde_json::json!({"sampling": {}}));
    /// let inv = Invocation::new(Caller::anonymous()).with_capabilities(caps);
    /// let params = serde_json::json!({"messages": [], "maxTokens": 10, "tools": []});
    /// let err = inv.sample(params).unwrap_err();
    /// assert_eq!(err.data().unwrap(), serde_json::json!({"requiredCapabilities": {"sampling": {"tools": {}}}}));
    /// ```
    pub fn sample(&self, params: Value) -> Result<InputRequest, CoreError> {
        let mut needed = serde_json::Map::new();
        let uses_tools = params.get("tools").is_some() || params.get("toolChoice").is_some();
        if uses_tools && !self.caps.sampling_tools {
            needed.insert("tools".to_owned(), json!({}));
        }
        let uses_context = params
            .get("includeContext")
            .is_some_and(|c| c.as_str() != Some("none"));
        if uses_context && !self.caps.sampling_context {
            needed.insert("context".to_owned(), json!({}));
        }
        if !self.caps.sampling || !needed.is_empty() {
            return Err(CoreError::MissingCapability {
                required: json!({ "sampling": needed }),
            });
        }
        Ok(InputRequest {
            method: "sampling/createMessage",
            params: Some(params),
        })
    }

    /// Builds a roots request.
    ///
    /// # Errors
    /// -32021 when the request did not declare `roots`.
    pub fn list_roots(&self) -> Result<InputRequest, CoreError> {
        if !self.caps.roots {
            return Err(CoreError::MissingCapability {
                required: json!({"roots": {}}),
            });
        }
        Ok(InputRequest {
            method: "roots/list",
            params: None,
        })
    }
}

/// What the user did with an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElicitAction {
    /// Submitted the form / confirmed.
    Accept,
    /// Explicitly declined.
    Decline,
    /// Dismissed without choosing.
    Cancel,
}

/// A checked answer to a form elicitation.
#[derive(Debug, Clone, PartialEq)]
pub struct FormAnswer {
    /// The user's action.
    pub action: ElicitAction,
    /// The submitted values (present exactly when `action` is `Accept`), already validated
    /// against the requested schema. Never defaulted.
    pub content: Option<serde_json::Map<String, Value>>,
}

impl FormAnswer {
    /// The submitted values when the user accepted; `None` when they declined or cancelled.
    #[must_use]
    pub fn accepted(&self) -> Option<&serde_json::Map<String, Value>> {
        match self.action {
            ElicitAction::Accept => self.content.as_ref(),
            ElicitAction::Decline | ElicitAction::Cancel => None,
        }
    }

    /// Whether the user accepted with the boolean `field` set to `true`: the check a
    /// confirmation form needs. Declined, cancelled, `false` and a missing field are all `false`.
    ///
    /// ```
    /// use strict_mcp::core::{ElicitAction, FormAnswer};
    /// let answer = |action, confirm: bool| FormAnswer { action,
    ///     content: Some(serde_json::json!({"confirm": confirm}).as_object().unwrap().clone()) };
    /// assert!(answer(ElicitAction::Accept, true).confirmed("confirm"));
    /// assert!(!answer(ElicitAction::Accept, false).confirmed("confirm"));
    /// assert!(!answer(ElicitAction::Accept, true).confirmed("other"));
    /// let declined = FormAnswer { action: ElicitAction::Decline, content: None };
    /// assert!(!declined.confirmed("confirm"));
    /// ```
    #[must_use]
    pub fn confirmed(&self, field: &str) -> bool {
        self.accepted()
            .and_then(|content| content.get(field))
            .and_then(Value::as_bool)
            == Some(true)
    }
}

/// An answer that breaks the rules or the requested schema. On `tools/call` it becomes
/// a tool failure; on `resources/read` and `prompts/get` a -32602 error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid answer under `{key}`: {message}")]
pub struct AnswerError {
    /// The `inputResponses` key.
    pub key: String,
    /// What is wrong.
    pub message: String,
    /// Schema findings, when the content failed the requested schema.
    pub diagnostics: Vec<Diagnostic>,
}

impl From<AnswerError> for CoreError {
    fn from(e: AnswerError) -> Self {
        CoreError::InvalidParams {
            message: e.to_string(),
        }
    }
}

impl From<AnswerError> for ToolError {
    fn from(e: AnswerError) -> Self {
        let failure = ToolFailure::new(FailureCode::InvalidArguments, e.to_string());
        ToolError::Failure(if e.diagnostics.is_empty() {
            failure
        } else {
            failure.with_diagnostics(e.diagnostics)
        })
    }
}

impl Invocation {
    fn answer_object(
        &self,
        key: &str,
    ) -> Result<Option<(ElicitAction, Option<Value>)>, AnswerError> {
        let Some(raw) = self.input_response(key) else {
            return Ok(None);
        };
        let fail = |message: &str| AnswerError {
            key: key.to_owned(),
            message: message.to_owned(),
            diagnostics: Vec::new(),
        };
        let value: Value = serde_json::from_str(raw.get()).map_err(|_| fail("not JSON"))?;
        let Value::Object(mut map) = value else {
            return Err(fail("the answer must be an object"));
        };
        let action = match map.get("action").and_then(Value::as_str) {
            Some("accept") => ElicitAction::Accept,
            Some("decline") => ElicitAction::Decline,
            Some("cancel") => ElicitAction::Cancel,
            _ => {
                return Err(fail(
                    "`action` must be \"accept\", \"decline\" or \"cancel\"",
                ))
            }
        };
        let content = map.remove("content");
        if content == Some(Value::Null) {
            return Err(fail("`content` must not be null"));
        }
        Ok(Some((action, content)))
    }

    /// Reads and checks the answer to a form elicitation under `key`, validating its content
    /// against the schema that was asked for (pass the same schema again: the core keeps no
    /// state between rounds). `Ok(None)` means no answer yet — ask again.
    ///
    /// Rules: `accept` requires an object (`{}` for an empty form); `decline` and
    /// `cancel` carry no content; `null` content or an unknown action is refused.
    ///
    /// # Errors
    /// [`AnswerError`] for a malformed answer or content that fails the schema.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use serde_json::{json, value::RawValue};
    /// use strict_mcp::core::{Caller, ElicitAction, Invocation};
    /// let mut answers = BTreeMap::new();
    /// answers.insert("name".to_owned(),
    ///     RawValue::from_string(r#"{"action":"accept","content":{"login":"octo"}}"#.into()).unwrap());
    /// let inv = Invocation::new(Caller::anonymous()).with_input_responses(answers);
    /// let schema = json!({"type":"object","properties":{"login":{"type":"string"}},"required":["login"]});
    /// let answer = inv.form_answer("name", &schema).unwrap().unwrap();
    /// assert_eq!(answer.action, ElicitAction::Accept);
    /// assert_eq!(answer.content.unwrap()["login"], "octo");
    /// assert!(inv.form_answer("other", &schema).unwrap().is_none());
    /// ```
    pub fn form_answer(
        &self,
        key: &str,
        requested_schema: &Value,
    ) -> Result<Option<FormAnswer>, AnswerError> {
        let Some((action, content)) = self.answer_object(key)? else {
            return Ok(None);
        };
        let fail = |message: &str, diagnostics: Vec<Diagnostic>| AnswerError {
            key: key.to_owned(),
            message: message.to_owned(),
            diagnostics,
        };
        match (action, content) {
            (ElicitAction::Accept, Some(Value::Object(map))) => {
                let schema = CompiledSchema::compile_value(requested_schema).map_err(|reason| {
                    tracing::warn!(%reason, "requested elicitation schema does not compile");
                    fail("the requested schema is invalid", Vec::new())
                })?;
                schema
                    .validate_value(&Value::Object(map.clone()))
                    .map_err(|d| fail("the content does not match the requested schema", d))?;
                Ok(Some(FormAnswer {
                    action,
                    content: Some(map),
                }))
            }
            (ElicitAction::Accept, _) => {
                Err(fail("`accept` requires an object `content`", Vec::new()))
            }
            (_, Some(_)) => Err(fail("only `accept` carries `content`", Vec::new())),
            (action, None) => Ok(Some(FormAnswer {
                action,
                content: None,
            })),
        }
    }

    /// Reads and checks the answer to a URL elicitation under `key`. An `accept` only records
    /// the user's action: the handler must check its own external flow before completing.
    ///
    /// # Errors
    /// [`AnswerError`] when the answer is malformed or carries content.
    pub fn url_answer(&self, key: &str) -> Result<Option<ElicitAction>, AnswerError> {
        match self.answer_object(key)? {
            None => Ok(None),
            Some((action, None)) => Ok(Some(action)),
            Some((_, Some(_))) => Err(AnswerError {
                key: key.to_owned(),
                message: "a URL elicitation answer carries no `content`".to_owned(),
                diagnostics: Vec::new(),
            }),
        }
    }
}
