//! Tool publication: how the registry's tools appear on the wire.
//!
//! Two modes, fixed for the life of a [`Publication`]:
//!
//! - [`Mode::Compact`] publishes exactly three tools, `search_tools`, `get_tool_details`
//!   and `call_tool`, whose envelopes are strict: unknown members, repeated
//!   member names and wrong types are -32602. Application tools run through `call_tool`.
//! - [`Mode::Direct`] publishes every tool the caller may see as a native tool, at most 20 per
//!   page with the registry's opaque, caller-bound cursors. Each tool's wire wrapper
//!   (its published definition and, for a declared output schema, the `{value}` /
//!   `{failure}` union) is built and compiled on its first authorised access and cached
//!   immutably per `Publication`. Policy still runs on every request.
//!
//! # Result envelopes (both modes)
//!
//! - Success with a structured result → `structuredContent: {"value": <exact result>}`;
//!   an explicit `null` result stays `{"value": null}`.
//! - Success without a structured result ("absent": a dynamic tool that returned only
//!   content) → no `structuredContent` and no JSON copy; the content is sent as it is.
//! - Failure → `isError: true`, `structuredContent: {"failure": {code, message, retryable,
//!   diagnostics?}}`. Schema-invalid arguments of a known tool are the failure
//!   `invalid_arguments` with diagnostics (spec S1, interfaces.md).
//! - Content: the tool's ordered blocks, then one text block holding the JSON of the envelope.
//!   A typed tool's own trailing copy of its unwrapped JSON is replaced by that
//!   envelope copy rather than repeated.
//!
//! The two compact discovery tools answer in their own declared output shapes
//! (`{tools, truncated}` and `{tool}`), unwrapped, with the same JSON text copy; an unknown
//! name in `get_tool_details` answers the failure envelope, which its output schema admits.
//!
//! Direct mode wraps too: seed-000 wraps every present structured success, and a declared
//! output schema is published as the union, so a failure's `structuredContent` still
//! validates against the published schema. Tools without an output schema publish none
//! and are wrapped the same way on the wire.
//!
//! # Protocol errors versus tool failures
//!
//! -32602 ([`CoreError`]): an unknown outer tool, a hidden or unknown direct tool (the same
//! bytes for both), a malformed compact envelope, a bad cursor, and a continuation
//! (`inputResponses` / `requestState`) sent to a discovery tool. Inside compact
//! `call_tool`, a missing, unknown or hidden inner name is the failure `unavailable_tool`;
//! so is an unknown name in `get_tool_details`.
//!
//! # Exactness
//!
//! Every body is assembled as JSON text around the exact bytes from the registry and the
//! handler; the `*_text` methods return that text. The `Map` forms parse it, which is
//! exact for every integer within `i64`/`u64` and for every other number that is already in
//! shortest form; a server that must keep arbitrary numbers byte-exact should splice the
//! text forms.
//!
//! # Content variants
//!
//! The six root variants are text, image, audio, `resource_link`, and embedded
//! resources with text or with blob contents. Empty embedded `text`/`blob` and
//! `priority: 0` stay on the wire. A `resource_link` block has a single set of fields (its
//! block-level `_meta`/annotations are the reference's); an embedded resource keeps
//! the resource's `_meta` on the inner resource and the block's on the block.

#![forbid(unsafe_code)]

mod envelope;
mod schemas;

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::core::descriptor::{Tool, ToolOutputSchema};
use crate::core::schema::CompiledSchema;
use crate::core::{
    Caller, CoreError, FailureCode, InputRequest, Invocation, Registry, TextCopy, ToolFailure,
    ToolReply,
};

pub use schemas::{compact_tools_text, failure_envelope_schema_text};

pub(crate) use schemas::compact_tools_text_with_call_meta;

pub(crate) use envelope::{CallParams, ResultParts};

use envelope::{
    failure_envelope, failure_parts, failure_text, invalid, is_object, result_parts, string_member,
    success_parts, to_map, OrderedMembers, Structured,
};

/// How tools are published. Fixed per [`Publication`]; searching never changes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Three discovery/dispatch tools.
    Compact,
    /// Every visible tool as a native tool.
    Direct,
}

/// What a `tools/call` produced.
#[derive(Debug, Clone)]
pub enum CallOutcome {
    /// A complete `CallToolResult` body (no `resultType`/`_meta`; the server adds those).
    Complete(Map<String, Value>),
    /// The tool needs client input first; the server binds these requests to the ledger.
    InputRequired {
        /// Requests keyed by server-chosen ids, as the core returned them.
        requests: std::collections::BTreeMap<String, InputRequest>,
    },
}

/// The immutable wire wrapper of one direct tool.
pub struct WrapperPlan {
    /// The registry's definition the plan was built from (to notice a swapped registry whose
    /// schemas are unchanged but whose documentation or hints differ).
    source: Tool,
    /// The published definition as exact JSON text.
    definition: Box<RawValue>,
    /// The compiled `{value}` / `{failure}` union, when an output schema is declared.
    output: Option<CompiledSchema>,
}

impl fmt::Debug for WrapperPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WrapperPlan")
            .field("definition", &self.definition.get())
            .field("has_output", &self.output.is_some())
            .finish()
    }
}

impl WrapperPlan {
    /// The published tool definition (exact JSON text).
    #[must_use]
    pub fn definition(&self) -> &RawValue {
        &self.definition
    }

    /// The published output schema, when the tool declares one.
    #[must_use]
    pub fn output_schema(&self) -> Option<&CompiledSchema> {
        self.output.as_ref()
    }

    fn build(tool: &Tool) -> Result<Self, CoreError> {
        let mut published = tool.clone();
        let output = match &tool.output_schema {
            None => None,
            Some(app) => {
                let text = schemas::wrap_output_schema(&tool.name, app.as_raw())?;
                let compiled = CompiledSchema::compile(&text).map_err(|reason| {
                    tracing::error!(tool = %tool.name, %reason, "output wrapper does not compile");
                    CoreError::Internal { retryable: false }
                })?;
                let wrapper = ToolOutputSchema::new(compiled.raw().to_owned()).map_err(|e| {
                    tracing::error!(tool = %tool.name, error = %e, "output wrapper is not an object");
                    CoreError::Internal { retryable: false }
                })?;
                published.output_schema = Some(wrapper);
                Some(compiled)
            }
        };
        let text = serde_json::to_string(&published)
            .map_err(|_| CoreError::Internal { retryable: false })?;
        let definition =
            RawValue::from_string(text).map_err(|_| CoreError::Internal { retryable: false })?;
        Ok(WrapperPlan {
            source: tool.clone(),
            definition,
            output,
        })
    }

    fn built_from(&self, tool: &Tool) -> bool {
        self.source == *tool
    }
}

/// Plans are keyed by the registry's catalogue digest, then the tool name (looked up without
/// a copy), so one publication can serve a registry that the server swaps atomically; a plan
/// whose source definition no longer matches (same schemas, new documentation) is rebuilt,
/// never patched.
type Plans = HashMap<[u8; 32], HashMap<String, Arc<WrapperPlan>>>;

/// Publishes a registry's tools in one [`Mode`]. `Send + Sync`; share it behind an `Arc`.
pub struct Publication {
    mode: Mode,
    plans: RwLock<Plans>,
    built: AtomicUsize,
}

impl fmt::Debug for Publication {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Publication")
            .field("mode", &self.mode)
            .field("plans_built", &self.plans_built())
            .finish_non_exhaustive()
    }
}

impl Publication {
    /// A publication in `mode`. Builds nothing: wrappers are prepared on first access.
    #[must_use]
    pub fn new(mode: Mode) -> Self {
        Publication {
            mode,
            plans: RwLock::new(HashMap::new()),
            built: AtomicUsize::new(0),
        }
    }

    /// The mode.
    #[must_use]
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// How many wrapper plans this publication has built so far (each at most once per tool
    /// and registry).
    #[must_use]
    pub fn plans_built(&self) -> usize {
        self.built.load(Ordering::Relaxed)
    }

    /// The wrapper plan of a direct tool the caller can see, built on first access and then
    /// shared (the same `Arc` every time).
    ///
    /// # Errors
    /// -32602 for hidden and unknown tools (identical); -32603 when the wrapper cannot be
    /// built (logged; the cause is not serialised).
    pub fn plan(
        &self,
        registry: &Registry,
        caller: &Caller,
        name: &str,
    ) -> Result<Arc<WrapperPlan>, CoreError> {
        let tool = registry.tool_ref(caller, name)?;
        self.plan_for(registry, tool)
    }

    fn plan_for(&self, registry: &Registry, tool: &Tool) -> Result<Arc<WrapperPlan>, CoreError> {
        let digest = registry.digest();
        if let Some(plan) = self
            .plans
            .read()
            .map_err(|_| CoreError::Internal { retryable: true })?
            .get(&digest)
            .and_then(|plans| plans.get(tool.name.as_str()))
            .filter(|plan| plan.built_from(tool))
        {
            return Ok(Arc::clone(plan));
        }
        let mut plans = self
            .plans
            .write()
            .map_err(|_| CoreError::Internal { retryable: true })?;
        let plans = plans.entry(digest).or_default();
        if let Some(plan) = plans
            .get(tool.name.as_str())
            .filter(|plan| plan.built_from(tool))
        {
            return Ok(Arc::clone(plan));
        }
        let plan = Arc::new(WrapperPlan::build(tool)?);
        self.built.fetch_add(1, Ordering::Relaxed);
        plans.insert(tool.name.clone(), Arc::clone(&plan));
        Ok(plan)
    }

    /// The `tools/list` result body as exact JSON text: `{"tools": [...], "nextCursor"?}`.
    ///
    /// # Errors
    /// -32602 for a bad cursor (compact mode issues none, so any cursor is bad there);
    /// -32603 when a wrapper cannot be built.
    pub fn list_tools_text(
        &self,
        registry: &Registry,
        caller: &Caller,
        cursor: Option<&str>,
    ) -> Result<String, CoreError> {
        match self.mode {
            Mode::Compact => match cursor {
                Some(_) => Err(CoreError::InvalidCursor),
                None => Ok(compact_tools_text().to_owned()),
            },
            Mode::Direct => {
                let page = registry.list_tools(caller, cursor)?;
                let mut out = String::from("{\"tools\":[");
                for (i, tool) in page.items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(self.plan_for(registry, tool)?.definition.get());
                }
                out.push(']');
                if let Some(next) = &page.next_cursor {
                    out.push_str(",\"nextCursor\":");
                    out.push_str(
                        &serde_json::to_string(next)
                            .map_err(|_| CoreError::Internal { retryable: false })?,
                    );
                }
                out.push('}');
                Ok(out)
            }
        }
    }

    /// The `tools/list` result body: `{"tools":[...], "nextCursor"?}`; no `resultType`,
    /// `_meta` or cache hints (the server adds those).
    ///
    /// # Errors
    /// As [`Publication::list_tools_text`].
    pub fn list_tools(
        &self,
        registry: &Registry,
        caller: &Caller,
        cursor: Option<&str>,
    ) -> Result<Map<String, Value>, CoreError> {
        to_map(&self.list_tools_text(registry, caller, cursor)?)
    }

    /// `tools/call` with the exact params bytes
    /// (`{"name", "arguments"?, "_meta", "inputResponses"?, "requestState"?}`).
    ///
    /// `inputResponses`, when present, are handed to the invocation (the server opens and
    /// checks `requestState` and binds the ledger).
    ///
    /// # Errors
    /// -32602 for unknown/hidden tools (direct), unknown outer tools and malformed envelopes
    /// (compact), continuations sent to discovery tools; protocol errors of handlers.
    pub async fn call_tool(
        &self,
        registry: &Registry,
        inv: Invocation,
        params: &RawValue,
    ) -> Result<CallOutcome, CoreError> {
        match self.call_tool_text(registry, inv, params).await? {
            TextOutcome::Complete(text) => Ok(CallOutcome::Complete(to_map(&text)?)),
            TextOutcome::InputRequired { requests } => Ok(CallOutcome::InputRequired { requests }),
        }
    }

    /// As [`Publication::call_tool`], with a complete result as exact JSON text.
    ///
    /// # Errors
    /// As [`Publication::call_tool`].
    pub async fn call_tool_text(
        &self,
        registry: &Registry,
        inv: Invocation,
        params: &RawValue,
    ) -> Result<TextOutcome, CoreError> {
        let mut call = CallParams::parse(params)?;
        let inv = match call.input_responses.take() {
            Some(responses) => inv.with_input_responses(responses),
            None => inv,
        };
        Ok(match self.call_tool_parts(registry, inv, &call).await? {
            PartsOutcome::Complete(parts) => TextOutcome::Complete(parts.body_text()),
            PartsOutcome::InputRequired { requests } => TextOutcome::InputRequired { requests },
        })
    }

    /// `tools/call` on params the server already read (the invocation carries any
    /// `inputResponses`), with the result in pieces for the server to write once.
    pub(crate) async fn call_tool_parts(
        &self,
        registry: &Registry,
        inv: Invocation,
        call: &CallParams<'_>,
    ) -> Result<PartsOutcome, CoreError> {
        match self.mode {
            Mode::Direct => {
                // The policy answers once; the wrapper and the call both read its answer.
                let tool = registry.visible_tool_as(inv.caller(), &call.name, call.decided)?;
                let plan = self.plan_for(registry, tool.descriptor())?;
                // The typed text fallback is left out: `success_parts` would replace it by the
                // envelope's copy anyway.
                let reply = registry
                    .call_visible(inv, tool, call.arguments, TextCopy::Omit)
                    .await?;
                finish(reply, Some(&plan))
            }
            Mode::Compact => match call.name.as_str() {
                "search_tools" | "get_tool_details" if call.continuation => Err(invalid(format!(
                    "`{}` does not accept inputResponses or requestState",
                    call.name
                ))),
                "search_tools" => {
                    search(registry, inv.caller(), call.arguments).map(PartsOutcome::Complete)
                }
                "get_tool_details" => {
                    details(registry, inv.caller(), call.arguments).map(PartsOutcome::Complete)
                }
                "call_tool" => compact_call(registry, inv, call.arguments).await,
                // A tool the caller may see is named in the answer as reachable through
                // `call_tool`; an unknown or hidden one gets the plain answer (O23).
                _ => Err(match registry.visible_tool(inv.caller(), &call.name) {
                    Ok(_) => CoreError::CompactOnly {
                        name: call.name.clone(),
                    },
                    Err(_) => CoreError::UnknownTool {
                        name: call.name.clone(),
                    },
                }),
            },
        }
    }

    /// A complete `CallToolResult` body for a failure the server detects after the fact
    /// (e.g. `result_too_large` once the egress guard refused the real result). The
    /// `retryable` flag is the code's default.
    #[must_use]
    pub fn failure_result(&self, code: FailureCode, message: &str) -> Map<String, Value> {
        to_map(&self.failure_result_text(code, message)).unwrap_or_default()
    }

    /// As [`Publication::failure_result`], as the exact JSON text every other tool result
    /// uses (content blocks keep their `type`-first member order).
    #[must_use]
    pub fn failure_result_text(&self, code: FailureCode, message: &str) -> String {
        let failure = ToolFailure::new(code, message);
        failure_text(&failure).unwrap_or_else(|_| fallback_failure_text(code))
    }

    /// As [`Publication::failure_result_text`], in pieces (`None` only if the failure cannot
    /// be serialised, which a `ToolFailure` never is).
    pub(crate) fn failure_result_parts(
        &self,
        code: FailureCode,
        message: &str,
    ) -> Option<ResultParts> {
        failure_parts(&ToolFailure::new(code, message)).ok()
    }
}

/// [`TextOutcome`] with the complete body in pieces.
#[derive(Debug, Clone)]
pub(crate) enum PartsOutcome {
    /// A complete `CallToolResult` body.
    Complete(ResultParts),
    /// The tool needs client input first.
    InputRequired {
        /// Requests keyed by server-chosen ids.
        requests: std::collections::BTreeMap<String, InputRequest>,
    },
}

/// [`CallOutcome`] with the complete body as exact JSON text.
#[derive(Debug, Clone)]
pub enum TextOutcome {
    /// A complete `CallToolResult` body.
    Complete(String),
    /// The tool needs client input first.
    InputRequired {
        /// Requests keyed by server-chosen ids.
        requests: std::collections::BTreeMap<String, InputRequest>,
    },
}

fn fallback_failure_text(code: FailureCode) -> String {
    // Serialising a `ToolFailure` cannot fail; this keeps the signature infallible anyway.
    let envelope = format!(
        "{{\"failure\":{{\"code\":\"{}\",\"message\":\"\",\"retryable\":{}}}}}",
        code.as_str(),
        code.default_retryable()
    );
    let escaped = serde_json::to_string(&envelope).unwrap_or_else(|_| "\"\"".to_owned());
    format!(
        "{{\"content\":[{{\"text\":{escaped},\"type\":\"text\"}}],\"isError\":true,\"structuredContent\":{envelope}}}"
    )
}

fn finish(reply: ToolReply, plan: Option<&WrapperPlan>) -> Result<PartsOutcome, CoreError> {
    let (content, envelope, is_error) = match reply {
        ToolReply::InputRequired { requests } => {
            return Ok(PartsOutcome::InputRequired { requests })
        }
        ToolReply::Failure(failure) => (
            Vec::new(),
            Some(Structured::Text(failure_envelope(&failure)?)),
            true,
        ),
        ToolReply::Success {
            content,
            structured,
        } => {
            let (content, envelope) = success_parts(content, structured);
            (content, envelope, false)
        }
    };
    // The published union must admit what we send (E15); a mismatch is our bug. A success's
    // `value` was already validated by the registry against the same application schema the
    // union wraps, so release builds check only failure envelopes (debug builds, and so every
    // test, check both).
    let check = is_error || cfg!(debug_assertions);
    if let (true, Some(schema), Some(envelope)) =
        (check, plan.and_then(WrapperPlan::output_schema), &envelope)
    {
        if let Err(diagnostics) = schema.validate_bytes(&envelope.text()) {
            tracing::error!(
                ?diagnostics,
                "structured envelope does not match the published output schema"
            );
            return Ok(PartsOutcome::Complete(failure_parts(&ToolFailure::new(
                FailureCode::InvalidResult,
                "The tool produced a result that does not match its output schema.",
            ))?));
        }
    }
    Ok(PartsOutcome::Complete(ResultParts::with_structured(
        content, envelope, is_error,
    )?))
}

fn compact_arguments<'a>(
    arguments: Option<&'a RawValue>,
    tool: &str,
    allowed: &[&str],
) -> Result<OrderedMembers<'a>, CoreError> {
    let what = format!("`{tool}` arguments");
    let members = match arguments {
        Some(raw) => OrderedMembers::parse(raw, &what)?,
        None => OrderedMembers(Vec::new()),
    };
    members.only(allowed, &what)?;
    Ok(members)
}

fn search(
    registry: &Registry,
    caller: &Caller,
    arguments: Option<&RawValue>,
) -> Result<ResultParts, CoreError> {
    let args = compact_arguments(arguments, "search_tools", &["query", "limit"])?;
    let query = args
        .get("query")
        .ok_or_else(|| invalid("`query` is required"))
        .and_then(|raw| string_member(raw, "query"))?;
    let limit = match args.get("limit") {
        None => None,
        Some(raw) => Some(
            serde_json::from_str::<u32>(raw.get())
                .ok()
                .filter(|l| (1..=crate::core::MAX_SEARCH_LIMIT).contains(l))
                .ok_or_else(|| invalid("`limit` must be an integer from 1 to 20"))?,
        ),
    };
    let reply = registry.search_tools(caller, &query, limit)?;
    let text =
        serde_json::to_string(&reply).map_err(|_| CoreError::Internal { retryable: false })?;
    result_parts(Vec::new(), Some(text), false)
}

fn details(
    registry: &Registry,
    caller: &Caller,
    arguments: Option<&RawValue>,
) -> Result<ResultParts, CoreError> {
    let args = compact_arguments(arguments, "get_tool_details", &["name"])?;
    let name = args
        .get("name")
        .ok_or_else(|| invalid("`name` is required"))
        .and_then(|raw| string_member(raw, "name"))?;
    let tool = match registry.tool(caller, &name) {
        Ok(tool) => tool,
        Err(CoreError::UnknownTool { .. }) => return failure_parts(&unavailable()),
        Err(other) => return Err(other),
    };
    let text = serde_json::to_string(&detail(tool))
        .map_err(|_| CoreError::Internal { retryable: false })?;
    result_parts(Vec::new(), Some(format!("{{\"tool\":{text}}}")), false)
}

/// The `get_tool_details` body: the registry's [`Tool`] as `tools/list` writes it (the
/// generated type's member order), without `icons`, `_meta` and unnamed members, which the
/// `{tool}` branch of its output schema does not admit. `outputSchema` is the application's
/// own schema: it describes the `value` that compact `call_tool` returns. `examples` is
/// omitted: the registry holds none.
fn detail(tool: Tool) -> Tool {
    Tool {
        icons: None,
        meta: None,
        extra: Map::new(),
        ..tool
    }
}

fn unavailable() -> ToolFailure {
    ToolFailure::new(
        FailureCode::UnavailableTool,
        "No tool of that name is available to the caller.",
    )
}

async fn compact_call(
    registry: &Registry,
    inv: Invocation,
    arguments: Option<&RawValue>,
) -> Result<PartsOutcome, CoreError> {
    let args = compact_arguments(arguments, "call_tool", &["name", "arguments"])?;
    let inner_args = args.get("arguments");
    if inner_args.is_some_and(|a| !is_object(a)) {
        return Err(invalid("`arguments` of call_tool must be an object"));
    }
    let Some(name_raw) = args.get("name") else {
        return Ok(PartsOutcome::Complete(failure_parts(&unavailable())?));
    };
    let name = string_member(name_raw, "name")?;
    match registry
        .call_tool_as(inv, &name, inner_args, TextCopy::Omit)
        .await
    {
        Err(CoreError::UnknownTool { .. }) => {
            Ok(PartsOutcome::Complete(failure_parts(&unavailable())?))
        }
        Err(other) => Err(other),
        Ok(reply) => finish(reply, None),
    }
}
