//! Tool definitions: typed tools (schemas derived from Rust types, ADR-061) and dynamic tools
//! (explicit schema text, the documented exception for proxies and fixtures).

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::core::descriptor::{
    CallToolResult, ContentBlock, Icon, Meta, StructuredContent, ToolAnnotations,
};
use crate::core::error::{Diagnostic, FailureCode, ToolError, ToolFailure};
use crate::core::invocation::{InputRequest, Invocation, Outcome};
use crate::core::schema::{derive_schema_with, SchemaProfile, Side};

pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// What a dynamic handler returns on success.
#[derive(Debug, Clone, Default)]
pub struct DynamicOutput {
    /// Content blocks, in order.
    pub content: Vec<ContentBlock>,
    /// Structured result as exact JSON text; required when an output schema is declared.
    pub structured: Option<Box<RawValue>>,
}

/// The arguments a handler is called with: their exact text after validation (borrowed from
/// the request where nothing was rewritten) and the value the input schema checked, parsed
/// once from that text. Typed handlers read the value (no second parse, strings moved, not
/// copied); dynamic handlers get the text.
pub(crate) struct Arguments<'a> {
    pub(crate) text: Cow<'a, RawValue>,
    pub(crate) value: Value,
}

/// What a handler produced: the output, and for a typed tool the value of its structured
/// result serialised from the typed output ([`typed_value`]), so the output schema checks it
/// without parsing the text just written; `None` means the text is parsed for the check.
pub(crate) struct HandlerOutput {
    pub(crate) output: DynamicOutput,
    pub(crate) value: Option<Value>,
    /// A typed tool's text fallback (one text block holding exactly the structured text) is
    /// owed but not written yet: [`TextCopy`] says whether the reply gets it.
    pub(crate) text_copy: bool,
}

/// Whether a typed tool's reply carries its text fallback block. [`Registry::call_tool`]
/// (the public core) includes it; the server's wire result replaces that block by the text
/// copy of the `{"value": …}` envelope anyway (`publication::envelope::success_parts`), so it
/// asks for none and the result text is not copied once more for nothing (issue #23: one copy
/// of the whole result per call).
///
/// [`Registry::call_tool`]: crate::core::Registry::call_tool
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TextCopy {
    /// The reply's content ends with the text block, as the public core documents it.
    Include,
    /// The reply's content leaves it out (the server's wire path).
    #[cfg_attr(not(feature = "server"), expect(dead_code))]
    Omit,
}

pub(crate) type ErasedHandler = Arc<
    dyn for<'a> Fn(
            Invocation,
            Arguments<'a>,
        ) -> BoxFuture<Result<Outcome<HandlerOutput>, ToolError>>
        + Send
        + Sync,
>;

/// One side's schema derivation of a typed tool, in a given profile.
pub(crate) type Derive = fn(SchemaProfile) -> Value;

fn derive_input<In: JsonSchema>(profile: SchemaProfile) -> Value {
    derive_schema_with::<In>(Side::Input, profile)
}

fn derive_output<Out: JsonSchema>(profile: SchemaProfile) -> Value {
    derive_schema_with::<Out>(Side::Output, profile)
}

#[derive(Clone)]
pub(crate) enum SchemaSource {
    /// Derived from a Rust type (typed tools).
    Derived(Value),
    /// Registered text, kept byte-exact (dynamic tools).
    Text(String),
}

/// A tool ready for registration. Create it with [`ToolDef::typed`] (the normal way) or
/// [`ToolDef::dynamic`] (explicit schemas) and refine it with the builder methods.
#[derive(Clone)]
pub struct ToolDef {
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) icons: Option<Vec<Icon>>,
    pub(crate) annotations: ToolAnnotations,
    pub(crate) meta: Option<Meta>,
    pub(crate) keywords: Vec<String>,
    pub(crate) input: SchemaSource,
    pub(crate) output: Option<SchemaSource>,
    pub(crate) typed: bool,
    /// The Rust output type of a typed tool, named in registration errors about its schema.
    pub(crate) output_type: Option<&'static str>,
    pub(crate) recovery_safe: bool,
    /// A typed tool's schema derivations (input, output), kept to derive again in another
    /// [`SchemaProfile`].
    pub(crate) derive: Option<(Derive, Derive)>,
    /// This tool's own `tools/call` time-out, overriding the server's.
    pub(crate) timeout: Option<Duration>,
    /// Whether a `tools/call` of this tool may run as a task (Tasks extension).
    pub(crate) task: crate::core::tasks::TaskMode,
    pub(crate) handler: ErasedHandler,
}

impl fmt::Debug for ToolDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolDef")
            .field("name", &self.name)
            .field("typed", &self.typed)
            .finish_non_exhaustive()
    }
}

impl ToolDef {
    /// The display title.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// The description the model reads.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Icons.
    #[must_use]
    pub fn icons(mut self, icons: Vec<Icon>) -> Self {
        self.icons = Some(icons);
        self
    }

    /// Behavioural hints; unset hints stay absent, explicit `false` stays present.
    #[must_use]
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = annotations;
        self
    }

    /// `_meta` of the definition.
    #[must_use]
    pub fn meta(mut self, meta: Meta) -> Self {
        self.meta = Some(meta);
        self
    }

    /// Extra search keywords (never published, only matched by search).
    #[must_use]
    pub fn keywords<I, S>(mut self, keywords: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.keywords = keywords.into_iter().map(Into::into).collect();
        self
    }

    /// Declares that the handler is safe to run in recovery mode (a replay of a completed
    /// chain): it checks [`Invocation::is_recovery`] and repeats no side effect. Typed tools
    /// that do not opt in answer the failure `already_completed` on replay.
    #[must_use]
    pub fn recovery_safe(mut self) -> Self {
        self.recovery_safe = true;
        self
    }

    /// Publishes this typed tool's schemas in `profile`: [`SchemaProfile::Shared`] keeps a
    /// sub-schema used more than once under `$defs` with local `$ref`s (smaller), for
    /// clients that resolve references; the default [`SchemaProfile::Portable`] inlines
    /// every non-recursive one. Arguments and results are validated against the published
    /// schemas either way. A dynamic tool's schemas are its own text and stay as given.
    ///
    /// ```
    /// use schemars::JsonSchema;
    /// use serde::{Deserialize, Serialize};
    /// use strict_mcp::core::{Invocation, RegistryBuilder, ToolDef};
    /// use strict_mcp::core::schema::SchemaProfile;
    /// #[derive(Deserialize, Serialize, JsonSchema)]
    /// struct Point { /// Metres east.
    ///     x: i32, /// Metres north.
    ///     y: i32 }
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Route { from: Point, to: Point }
    /// #[derive(Serialize, JsonSchema)]
    /// struct Length { metres: u32 }
    /// let tool = ToolDef::typed("length", |_: Invocation, r: Route| async move {
    ///     Ok(Length { metres: (r.to.x - r.from.x).unsigned_abs() + (r.to.y - r.from.y).unsigned_abs() })
    /// }).schema_profile(SchemaProfile::Shared);
    /// let registry = RegistryBuilder::new().tool(tool).build().unwrap();
    /// # let _ = registry;
    /// ```
    #[must_use]
    pub fn schema_profile(mut self, profile: SchemaProfile) -> Self {
        if let Some((input, output)) = self.derive {
            self.input = SchemaSource::Derived(input(profile));
            self.output = Some(SchemaSource::Derived(output(profile)));
        }
        self
    }

    /// Overrides the server's `tools/call` time-out
    /// ([`ServerOptions::tool_timeout`](crate::server::ServerOptions::tool_timeout)) for this
    /// tool. It covers the handler and the check of its result. On expiry the handler's
    /// cancellation token fires and the client gets -32603 "Tool call timed out" with
    /// `data: {"name": …, "retryable": true}`. Must lie within
    /// [`MIN_TIMEOUT`](crate::core::MIN_TIMEOUT)`..=`[`MAX_TIMEOUT`](crate::core::MAX_TIMEOUT),
    /// checked when the registry is built.
    ///
    /// ```
    /// use std::time::Duration;
    /// use strict_mcp::core::{BuildError, Invocation, RegistryBuilder, ToolDef};
    /// # use schemars::JsonSchema; use serde::{Deserialize, Serialize};
    /// #[derive(Deserialize, JsonSchema)]
    /// struct In {}
    /// #[derive(Serialize, JsonSchema)]
    /// struct Out { done: bool }
    /// let tool = |t: Duration| ToolDef::typed("slow", |_i: Invocation, _: In| async move {
    ///     Ok(Out { done: true })
    /// }).timeout(t);
    /// let zero = RegistryBuilder::new().tool(tool(Duration::ZERO)).build();
    /// assert!(matches!(zero, Err(BuildError::InvalidTimeout { kind: "tool", .. })));
    /// let ok = RegistryBuilder::new().tool(tool(Duration::from_secs(2))).build().unwrap();
    /// assert_eq!(ok.tool_timeout("slow"), Some(Duration::from_secs(2)));
    /// ```
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Lets a `tools/call` of this tool run as a task of the Tasks extension
    /// (`io.modelcontextprotocol/tasks`): [`TaskMode::Optional`](crate::core::tasks::TaskMode)
    /// makes it a task for a request that declared the extension when the work does not finish
    /// at once, [`TaskMode::Required`](crate::core::tasks::TaskMode) always (a request that did
    /// not declare the extension gets -32021). The server decides; the client sends no hint.
    #[must_use]
    pub fn task(mut self, mode: crate::core::tasks::TaskMode) -> Self {
        self.task = mode;
        self
    }

    /// The tool's task mode.
    #[must_use]
    pub fn task_mode(&self) -> crate::core::tasks::TaskMode {
        self.task
    }

    /// The time-out override, if any.
    #[must_use]
    pub fn timeout_override(&self) -> Option<Duration> {
        self.timeout
    }

    /// The tool name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Typed tools: the input type gives `inputSchema`, the output type gives
/// `outputSchema`, so the handler cannot answer in a shape the schema does not describe.
///
/// Input and output derive `schemars::JsonSchema`; fields that are not `Option` are required,
/// `Option` fields are optional (mark output ones `skip_serializing_if = "Option::is_none"`),
/// doc comments become descriptions. The output must be an object that names its payload
/// (no bare array, no generic `items` key); the registry refuses anything else at build time.
/// The handler receives the exact argument bytes deserialised into the input type; arguments
/// are validated against the input schema first and results against the output schema after.
/// A panic in the handler is caught and reported as the failure `internal`.
impl ToolDef {
    /// A typed tool whose handler completes in one step.
    ///
    /// ```
    /// use schemars::JsonSchema;
    /// use serde::{Deserialize, Serialize};
    /// use strict_mcp::core::{FailureCode, Invocation, ToolDef, ToolFailure};
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Query { /// Branch name prefix.
    ///     prefix: String }
    /// #[derive(Serialize, JsonSchema)]
    /// struct Branches { /// Matching branches.
    ///     branches: Vec<String>, /// Whether the list stopped at its limit.
    ///     truncated: bool }
    ///
    /// let tool = ToolDef::typed("list_branches", |_inv: Invocation, q: Query| async move {
    ///     if q.prefix.is_empty() {
    ///         return Err(ToolFailure::new(FailureCode::InvalidArguments, "prefix is empty").into());
    ///     }
    ///     Ok(Branches { branches: vec![format!("{}-main", q.prefix)], truncated: false })
    /// }).description("Lists branches by prefix.");
    /// assert_eq!(tool.name(), "list_branches");
    /// ```
    pub fn typed<In, Out, F, Fut>(name: impl Into<String>, handler: F) -> ToolDef
    where
        In: DeserializeOwned + JsonSchema + Send + 'static,
        Out: Serialize + JsonSchema + Send + 'static,
        F: Fn(Invocation, In) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Out, ToolError>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        Self::build_typed::<In, Out>(
            name.into(),
            Arc::new(move |inv, args: Arguments<'_>| {
                let handler = Arc::clone(&handler);
                // Decoded before the future exists: the arguments' text is borrowed from the
                // request and needed only when the validated value does not fit `In`.
                let input = decode_typed::<In>(args);
                Box::pin(async move {
                    let out = handler(inv, input?).await?;
                    encode_typed(&out).map(Outcome::Complete)
                })
            }),
        )
    }

    /// A typed tool whose handler shares `state` with other handlers: each call gets its own
    /// clone of the `Arc`, so no clone is written before or inside the closure.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use schemars::JsonSchema;
    /// use serde::{Deserialize, Serialize};
    /// use strict_mcp::core::{Invocation, RegistryBuilder, ToolDef};
    ///
    /// #[derive(Default)]
    /// struct Notes { items: Mutex<Vec<String>> }
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Add { /// The note.
    ///     text: String }
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Nothing {}
    /// #[derive(Serialize, JsonSchema)]
    /// struct Count { /// Notes stored.
    ///     count: usize }
    ///
    /// let notes = Arc::new(Notes::default());
    /// let registry = RegistryBuilder::new()
    ///     .tool(ToolDef::typed_with("add_note", &notes, |notes, _inv: Invocation, a: Add| async move {
    ///         let mut items = notes.items.lock().unwrap();
    ///         items.push(a.text);
    ///         Ok(Count { count: items.len() })
    ///     }))
    ///     .tool(ToolDef::typed_with("count_notes", &notes, |notes, _inv: Invocation, _: Nothing| async move {
    ///         Ok(Count { count: notes.items.lock().unwrap().len() })
    ///     }))
    ///     .build()
    ///     .unwrap();
    /// # let _ = registry;
    /// ```
    pub fn typed_with<S, In, Out, F, Fut>(
        name: impl Into<String>,
        state: &Arc<S>,
        handler: F,
    ) -> ToolDef
    where
        S: Send + Sync + 'static,
        In: DeserializeOwned + JsonSchema + Send + 'static,
        Out: Serialize + JsonSchema + Send + 'static,
        F: Fn(Arc<S>, Invocation, In) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Out, ToolError>> + Send + 'static,
    {
        let state = Arc::clone(state);
        Self::typed(name, move |inv, input| {
            handler(Arc::clone(&state), inv, input)
        })
    }

    /// A typed tool whose handler may ask the client for input first
    /// (see [`Invocation::elicit_form`] and friends).
    pub fn typed_interactive<In, Out, F, Fut>(name: impl Into<String>, handler: F) -> ToolDef
    where
        In: DeserializeOwned + JsonSchema + Send + 'static,
        Out: Serialize + JsonSchema + Send + 'static,
        F: Fn(Invocation, In) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Outcome<Out>, ToolError>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        Self::build_typed::<In, Out>(
            name.into(),
            Arc::new(move |inv, args: Arguments<'_>| {
                let handler = Arc::clone(&handler);
                let input = decode_typed::<In>(args);
                Box::pin(async move {
                    match handler(inv, input?).await? {
                        Outcome::Complete(out) => encode_typed(&out).map(Outcome::Complete),
                        Outcome::InputRequired { requests } => {
                            Ok(Outcome::InputRequired { requests })
                        }
                    }
                })
            }),
        )
    }

    /// [`ToolDef::typed_interactive`] with shared `state`, as [`ToolDef::typed_with`].
    pub fn typed_interactive_with<S, In, Out, F, Fut>(
        name: impl Into<String>,
        state: &Arc<S>,
        handler: F,
    ) -> ToolDef
    where
        S: Send + Sync + 'static,
        In: DeserializeOwned + JsonSchema + Send + 'static,
        Out: Serialize + JsonSchema + Send + 'static,
        F: Fn(Arc<S>, Invocation, In) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Outcome<Out>, ToolError>> + Send + 'static,
    {
        let state = Arc::clone(state);
        Self::typed_interactive(name, move |inv, input| {
            handler(Arc::clone(&state), inv, input)
        })
    }

    fn build_typed<In: JsonSchema, Out: JsonSchema>(
        name: String,
        handler: ErasedHandler,
    ) -> ToolDef {
        ToolDef {
            name,
            title: None,
            description: None,
            icons: None,
            annotations: ToolAnnotations::default(),
            meta: None,
            keywords: Vec::new(),
            input: SchemaSource::Derived(derive_input::<In>(SchemaProfile::Portable)),
            output: Some(SchemaSource::Derived(derive_output::<Out>(
                SchemaProfile::Portable,
            ))),
            derive: Some((derive_input::<In>, derive_output::<Out>)),
            typed: true,
            output_type: Some(std::any::type_name::<Out>()),
            recovery_safe: false,
            timeout: None,
            task: crate::core::tasks::TaskMode::Never,
            handler,
        }
    }
}

/// The typed input from the validated value (moved: no second parse of the arguments, strings
/// not copied). Where the value cannot give what the text would ([`exact_value`] refuses: a
/// `RawValue` member, an integer beyond `u64`, a key that is not a plain string), or `In`
/// refuses it, the exact text is deserialised instead, exactly as before; so every input gets
/// the answer the text gives.
fn decode_typed<In: DeserializeOwned>(args: Arguments<'_>) -> Result<In, ToolError> {
    if let Ok(input) = In::deserialize(exact_value::Owned(args.value)) {
        return Ok(input);
    }
    serde_json::from_str::<In>(args.text.get()).map_err(|e| {
        // The schema accepted the arguments but the type did not: report it without the
        // parser's position noise.
        tracing::warn!(error = %e, "arguments passed the schema but not the input type");
        ToolError::Failure(
            ToolFailure::new(
                FailureCode::InvalidArguments,
                "The arguments do not match the tool's input type.",
            )
            .with_diagnostics(vec![Diagnostic {
                pointer: String::new(),
                keyword: "type".to_owned(),
                message: "the value does not fit the declared input type".to_owned(),
                expected: None,
                allowed_keys: None,
            }]),
        )
    })
}

fn encode_typed<Out: Serialize>(out: &Out) -> Result<HandlerOutput, ToolError> {
    // Serialised straight into a raw value (serde_json's own output is not parsed again), long
    // strings escaped by `codec::escape` (the same bytes, plain runs copied whole).
    let structured = crate::codec::escape::to_raw_value(out).map_err(|e| {
        tracing::warn!(error = %e, "typed tool output could not be serialised");
        ToolError::Failure(ToolFailure::new(
            FailureCode::InvalidResult,
            "The tool produced a result it cannot encode.",
        ))
    })?;
    Ok(HandlerOutput {
        value: typed_value(out),
        // The text block is written only for a reply that includes it (`TextCopy`).
        output: DynamicOutput {
            content: Vec::new(),
            structured: Some(structured),
        },
        text_copy: true,
    })
}

/// The typed result as the value its text parses to, serialised from the typed output (no
/// parse of the text: strings are copied, not unescaped). `None` where serialising to a value
/// would not give what parsing the text gives, so the caller parses the text: an `f32` (its
/// text is its own shortest form, which parses to another `f64` than the widened `f32`), an
/// integer beyond `u64`/`i64` (a value cannot hold it), or anything serde_json's value
/// serializer refuses. A `RawValue` member is parsed by that serializer, as the text is.
fn typed_value<Out: Serialize>(out: &Out) -> Option<Value> {
    out.serialize(no_f32::NoF32(serde_json::value::Serializer))
        .ok()
}

/// Dynamic tools: explicit schema text kept byte-exact (for proxies and
/// conformance fixtures). `$schema` (draft-07, 2020-12), boolean subschemas, `$id`-relative
/// `$ref` and `$dynamicRef`/`$dynamicAnchor` keep their meaning; nothing is fetched.
impl ToolDef {
    /// A dynamic tool. The handler receives the exact argument bytes (after validation).
    ///
    /// ```
    /// use strict_mcp::core::{DynamicOutput, Invocation, ToolDef};
    /// use strict_mcp::core::descriptor::ContentBlock;
    /// let tool = ToolDef::dynamic(
    ///     "echo",
    ///     r#"{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}"#,
    ///     None,
    ///     |_inv: Invocation, args: Box<serde_json::value::RawValue>| async move {
    ///         Ok(DynamicOutput { content: vec![ContentBlock::text(args.get())], structured: None })
    ///     },
    /// );
    /// assert_eq!(tool.name(), "echo");
    /// ```
    pub fn dynamic<F, Fut>(
        name: impl Into<String>,
        input_schema: &str,
        output_schema: Option<&str>,
        handler: F,
    ) -> ToolDef
    where
        F: Fn(Invocation, Box<RawValue>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<DynamicOutput, ToolError>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        Self::dynamic_interactive(name, input_schema, output_schema, move |inv, args| {
            let fut = handler(inv, args);
            async move { fut.await.map(Outcome::Complete) }
        })
    }

    /// A dynamic tool whose handler may ask for input.
    pub fn dynamic_interactive<F, Fut>(
        name: impl Into<String>,
        input_schema: &str,
        output_schema: Option<&str>,
        handler: F,
    ) -> ToolDef
    where
        F: Fn(Invocation, Box<RawValue>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Outcome<DynamicOutput>, ToolError>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        ToolDef {
            name: name.into(),
            title: None,
            description: None,
            icons: None,
            annotations: ToolAnnotations::default(),
            meta: None,
            keywords: Vec::new(),
            input: SchemaSource::Text(input_schema.to_owned()),
            output: output_schema.map(|s| SchemaSource::Text(s.to_owned())),
            typed: false,
            output_type: None,
            recovery_safe: true,
            derive: None,
            timeout: None,
            task: crate::core::tasks::TaskMode::Never,
            handler: Arc::new(move |inv, args: Arguments<'_>| {
                // The handler gets its own copy of the exact text (none when validation
                // rewrote it: that text is moved); the parsed value is not needed.
                let fut = handler(inv, args.text.into_owned());
                Box::pin(async move {
                    Ok(match fut.await? {
                        Outcome::Complete(output) => Outcome::Complete(HandlerOutput {
                            output,
                            value: None,
                            text_copy: false,
                        }),
                        Outcome::InputRequired { requests } => Outcome::InputRequired { requests },
                    })
                })
            }),
        }
    }
}

/// The outcome of a tool call as the core sees it; the publication layer turns it into the
/// wire result of its mode.
#[derive(Debug, Clone)]
pub enum ToolReply {
    /// The call succeeded; `structured` already passed the output schema.
    Success {
        /// Content blocks (typed tools: one text block holding the JSON of the result).
        content: Vec<ContentBlock>,
        /// Structured result, exact text.
        structured: Option<Box<RawValue>>,
    },
    /// A typed failure (`isError: true`).
    Failure(ToolFailure),
    /// The handler needs input from the client first.
    InputRequired {
        /// Requests keyed by id.
        requests: std::collections::BTreeMap<String, InputRequest>,
    },
}

impl ToolReply {
    /// The direct-mode `CallToolResult`: success as is; a failure as `isError: true` with the
    /// failure envelope as `structuredContent` and its JSON as text. `None` for
    /// `InputRequired`, which the server answers through the ledger.
    #[must_use]
    pub fn into_call_result(self) -> Option<CallToolResult> {
        match self {
            ToolReply::Success {
                content,
                structured,
            } => Some(CallToolResult {
                content,
                is_error: None,
                meta: None,
                structured_content: structured.map(StructuredContent::from),
            }),
            ToolReply::Failure(failure) => {
                let text = failure.envelope().to_string();
                let structured = RawValue::from_string(text.clone()).ok();
                Some(CallToolResult {
                    content: vec![ContentBlock::text(text)],
                    is_error: Some(true),
                    meta: None,
                    structured_content: structured.map(StructuredContent::from),
                })
            }
            ToolReply::InputRequired { .. } => None,
        }
    }
}

/// A `serde` deserializer over an owned, validated `serde_json::Value` that gives a typed
/// input exactly what deserialising the value's own text gives, or an error (the caller then
/// deserialises the text, so an error here never decides an answer). The value was built by
/// serde_json's text deserializer through `deserialize_any`, so replaying its nodes replays
/// the visits that parse made, with strings moved instead of copied. Refused, because the value
/// no longer holds what the text had:
/// - a `RawValue` (its exact text: `1.10` would come back as `1.1`);
/// - a `u128`/`i128` read of an integer beyond `u64`/`i64` (the value holds it as `f64`);
/// - an object of more than one member read as a map or as any value (the value's members are
///   sorted, the text's are in wire order; an order-keeping map would see another order). An
///   object read as a struct is fine: a struct's fields have no order;
/// - bytes, and map keys read as anything but a string or a unit variant (the text's key
///   reader parses numbers and more from key strings).
mod exact_value {
    use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};
    use serde::forward_to_deserialize_any;
    use serde_json::{Error, Map, Value};

    use crate::wire::raw::RAW_VALUE_TOKEN;

    /// The deserializer over one owned value.
    pub(super) struct Owned(pub(super) Value);

    fn refuse(what: &str) -> Error {
        de::Error::custom(format_args!("{what} is read from the exact argument text"))
    }

    fn visit_array<'de, V: Visitor<'de>>(items: Vec<Value>, visitor: V) -> Result<V::Value, Error> {
        let len = items.len();
        let mut seq = Items(items.into_iter());
        let out = visitor.visit_seq(&mut seq)?;
        if seq.0.len() == 0 {
            Ok(out)
        } else {
            Err(de::Error::invalid_length(len, &"fewer elements in array"))
        }
    }

    fn visit_object<'de, V: Visitor<'de>>(
        members: Map<String, Value>,
        visitor: V,
    ) -> Result<V::Value, Error> {
        let len = members.len();
        let mut map = Members {
            iter: members.into_iter(),
            value: None,
        };
        let out = visitor.visit_map(&mut map)?;
        if map.iter.len() == 0 {
            Ok(out)
        } else {
            Err(de::Error::invalid_length(len, &"fewer elements in map"))
        }
    }

    impl<'de> de::Deserializer<'de> for Owned {
        type Error = Error;

        fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            match self.0 {
                Value::Null => visitor.visit_unit(),
                Value::Bool(b) => visitor.visit_bool(b),
                Value::Number(n) => de::Deserializer::deserialize_any(n, visitor),
                Value::String(s) => visitor.visit_string(s),
                Value::Array(items) => visit_array(items, visitor),
                Value::Object(members) if members.len() <= 1 => visit_object(members, visitor),
                Value::Object(_) => Err(refuse("an object read in member order")),
            }
        }

        fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            self.deserialize_any(visitor)
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            _fields: &'static [&'static str],
            visitor: V,
        ) -> Result<V::Value, Error> {
            match self.0 {
                Value::Object(members) => visit_object(members, visitor),
                other => Owned(other).deserialize_any(visitor),
            }
        }

        fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            match self.0 {
                Value::Null => visitor.visit_none(),
                other => visitor.visit_some(Owned(other)),
            }
        }

        fn deserialize_newtype_struct<V: Visitor<'de>>(
            self,
            name: &'static str,
            visitor: V,
        ) -> Result<V::Value, Error> {
            if name == RAW_VALUE_TOKEN {
                return Err(refuse("a raw value"));
            }
            visitor.visit_newtype_struct(self)
        }

        fn deserialize_enum<V: Visitor<'de>>(
            self,
            _name: &'static str,
            _variants: &'static [&'static str],
            visitor: V,
        ) -> Result<V::Value, Error> {
            match self.0 {
                Value::String(s) => visitor.visit_enum(s.into_deserializer()),
                Value::Object(members) if members.len() == 1 => {
                    visitor.visit_enum(de::value::MapAccessDeserializer::new(Members {
                        iter: members.into_iter(),
                        value: None,
                    }))
                }
                _ => Err(refuse("this enum value")),
            }
        }

        fn deserialize_i128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            match self.0 {
                Value::Number(n) if n.is_i64() || n.is_u64() => {
                    de::Deserializer::deserialize_i128(n, visitor)
                }
                _ => Err(refuse("a 128-bit integer")),
            }
        }

        fn deserialize_u128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            match self.0 {
                Value::Number(n) if n.is_i64() || n.is_u64() => {
                    de::Deserializer::deserialize_u128(n, visitor)
                }
                _ => Err(refuse("a 128-bit integer")),
            }
        }

        fn deserialize_bytes<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Error> {
            Err(refuse("bytes"))
        }

        fn deserialize_byte_buf<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Error> {
            Err(refuse("bytes"))
        }

        forward_to_deserialize_any! {
            bool i8 i16 i32 i64 u8 u16 u32 u64 f32 f64 char str string
            unit unit_struct seq tuple tuple_struct identifier ignored_any
        }
    }

    struct Items(std::vec::IntoIter<Value>);

    impl<'de> SeqAccess<'de> for Items {
        type Error = Error;

        fn next_element_seed<T: DeserializeSeed<'de>>(
            &mut self,
            seed: T,
        ) -> Result<Option<T::Value>, Error> {
            self.0
                .next()
                .map(|item| seed.deserialize(Owned(item)))
                .transpose()
        }

        fn size_hint(&self) -> Option<usize> {
            Some(self.0.len())
        }
    }

    struct Members {
        iter: serde_json::map::IntoIter,
        value: Option<Value>,
    }

    impl<'de> MapAccess<'de> for Members {
        type Error = Error;

        fn next_key_seed<K: DeserializeSeed<'de>>(
            &mut self,
            seed: K,
        ) -> Result<Option<K::Value>, Error> {
            match self.iter.next() {
                Some((key, value)) => {
                    self.value = Some(value);
                    seed.deserialize(Key(key)).map(Some)
                }
                None => Ok(None),
            }
        }

        fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
            match self.value.take() {
                Some(value) => seed.deserialize(Owned(value)),
                None => Err(de::Error::custom("a map value was read before its key")),
            }
        }

        fn size_hint(&self) -> Option<usize> {
            Some(self.iter.len())
        }
    }

    /// A member name: a string, or a unit variant's name; anything else the text's key reader
    /// would parse out of the string, so it is refused.
    struct Key(String);

    impl<'de> de::Deserializer<'de> for Key {
        type Error = Error;

        fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            visitor.visit_string(self.0)
        }

        fn deserialize_enum<V: Visitor<'de>>(
            self,
            _name: &'static str,
            _variants: &'static [&'static str],
            visitor: V,
        ) -> Result<V::Value, Error> {
            visitor.visit_enum(self.0.into_deserializer())
        }

        fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            self.deserialize_any(visitor)
        }

        fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            self.deserialize_any(visitor)
        }

        fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            self.deserialize_any(visitor)
        }

        fn deserialize_bool<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, Error> {
            Err(refuse("a key"))
        }
        fn deserialize_i8<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, Error> {
            Err(refuse("a key"))
        }
        fn deserialize_i16<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, Error> {
            Err(refuse("a key"))
        }
        fn deserialize_i32<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, Error> {
            Err(refuse("a key"))
        }
        fn deserialize_i64<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, Error> {
            Err(refuse("a key"))
        }
        fn deserialize_i128<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, Error> {
            Err(refuse("a key"))
        }
        fn deserialize_u8<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, Error> {
            Err(refuse("a key"))
        }
        fn deserialize_u16<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, Error> {
            Err(refuse("a key"))
        }
        fn deserialize_u32<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, Error> {
            Err(refuse("a key"))
        }
        fn deserialize_u64<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, Error> {
            Err(refuse("a key"))
        }
        fn deserialize_u128<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, Error> {
            Err(refuse("a key"))
        }
        fn deserialize_f32<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, Error> {
            Err(refuse("a key"))
        }
        fn deserialize_f64<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, Error> {
            Err(refuse("a key"))
        }
        fn deserialize_char<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, Error> {
            Err(refuse("a key"))
        }
        fn deserialize_bytes<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, Error> {
            Err(refuse("a key"))
        }
        fn deserialize_byte_buf<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, Error> {
            Err(refuse("a key"))
        }
        fn deserialize_option<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, Error> {
            Err(refuse("a key"))
        }
        fn deserialize_unit<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, Error> {
            Err(refuse("a key"))
        }
        fn deserialize_unit_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            _v: V,
        ) -> Result<V::Value, Error> {
            Err(refuse("a key"))
        }
        fn deserialize_newtype_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            _v: V,
        ) -> Result<V::Value, Error> {
            Err(refuse("a key"))
        }
        fn deserialize_seq<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, Error> {
            Err(refuse("a key"))
        }
        fn deserialize_tuple<V: Visitor<'de>>(self, _len: usize, _v: V) -> Result<V::Value, Error> {
            Err(refuse("a key"))
        }
        fn deserialize_tuple_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            _len: usize,
            _v: V,
        ) -> Result<V::Value, Error> {
            Err(refuse("a key"))
        }
        fn deserialize_map<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, Error> {
            Err(refuse("a key"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            _fields: &'static [&'static str],
            _v: V,
        ) -> Result<V::Value, Error> {
            Err(refuse("a key"))
        }
        fn deserialize_ignored_any<V: Visitor<'de>>(self, _v: V) -> Result<V::Value, Error> {
            Err(refuse("a key"))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};

    /// #23, O107: the public core's typed reply ends with the text fallback block (the
    /// structured JSON as text); the server's wire path asks for none, since the wire
    /// result's text block is the envelope's copy. Structured text the same either way.
    #[cfg(feature = "server")]
    #[test]
    fn o107_issue23_typed_text_fallback_only_where_the_reply_includes_it() {
        use futures_util::FutureExt as _;

        use crate::core::descriptor::ContentBlock;
        use crate::core::{Caller, Invocation, RegistryBuilder, TextCopy, ToolDef, ToolReply};

        #[derive(serde::Deserialize, schemars::JsonSchema)]
        struct In {
            /// The text.
            text: String,
        }
        #[derive(serde::Serialize, schemars::JsonSchema)]
        struct Out {
            /// The text back.
            text: String,
        }
        let reg = RegistryBuilder::new()
            .tool(ToolDef::typed("echo", |_: Invocation, i: In| async move {
                Ok(Out { text: i.text })
            }))
            .build()
            .unwrap();
        let args = RawValue::from_string(r#"{"text":"a\"b"}"#.to_owned()).unwrap();
        let inv = || Invocation::new(Caller::new("alice"));
        // The handler answers at once, so each call completes on its first poll (the core
        // runs without a runtime).
        let public = reg
            .call_tool(inv(), "echo", Some(&args))
            .now_or_never()
            .expect("completes at once")
            .unwrap();
        let include = reg
            .call_tool_as(inv(), "echo", Some(&args), TextCopy::Include)
            .now_or_never()
            .expect("completes at once")
            .unwrap();
        let omit = reg
            .call_tool_as(inv(), "echo", Some(&args), TextCopy::Omit)
            .now_or_never()
            .expect("completes at once")
            .unwrap();
        let parts = |reply: ToolReply| match reply {
            ToolReply::Success {
                content,
                structured,
            } => (content, structured.map(|s| s.get().to_owned())),
            other => panic!("{other:?}"),
        };
        let expected = r#"{"text":"a\"b"}"#;
        assert_eq!(
            parts(public),
            (
                vec![ContentBlock::text(expected)],
                Some(expected.to_owned())
            )
        );
        assert_eq!(
            parts(include),
            (
                vec![ContentBlock::text(expected)],
                Some(expected.to_owned())
            )
        );
        assert_eq!(parts(omit), (vec![], Some(expected.to_owned())));
    }

    use serde::Deserialize;
    use serde_json::value::RawValue;
    use serde_json::Value;

    use super::exact_value::Owned;

    /// Deserialised from the value parsed out of `text`, if the value path accepts it.
    fn from_value<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, serde_json::Error> {
        let value: Value = serde_json::from_str(text).expect("JSON");
        T::deserialize(Owned(value))
    }

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum Mode {
        Fast,
        Slow { depth: u8 },
        Tuple(u8, String),
        Wrapped(String),
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct Inner {
        n: i64,
        x: f64,
        tags: Vec<String>,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct Plain {
        text: String,
        count: u32,
        small: u128,
        maybe: Option<Inner>,
        none: Option<u8>,
        modes: Vec<Mode>,
        pair: (bool, char),
        one: BTreeMap<String, u8>,
        #[serde(default)]
        missing: Vec<u8>,
    }

    const PLAIN: &str = r#"{"text":"a \"q\" \\ é 😀\n","count":7,"small":18446744073709551615,
        "maybe":{"n":-3,"x":1.10,"tags":["a","b"]},"none":null,
        "modes":["fast",{"slow":{"depth":2}},{"tuple":[1,"t"]},{"wrapped":"w"}],
        "pair":[true,"c"],"one":{"k":1}}"#;

    /// The value path gives what the text gives, member for member (o13_: the handler sees
    /// what it always saw).
    #[test]
    fn o13_value_path_gives_what_the_text_gives() {
        let by_text: Plain = serde_json::from_str(PLAIN).unwrap();
        let by_value: Plain = from_value(PLAIN).expect("the value path takes plain inputs");
        assert_eq!(by_value, by_text);
        assert_eq!(by_value.small, u128::from(u64::MAX));
        // A struct given as an array (serde_json accepts it from text too).
        let by_text: Inner = serde_json::from_str(r#"[1,2.5,["z"]]"#).unwrap();
        assert_eq!(from_value::<Inner>(r#"[1,2.5,["z"]]"#).unwrap(), by_text);
    }

    /// What the value has lost is refused, so the text decides: a raw value (exact text), an
    /// integer beyond u64 read as u128 (o29_), a map of several members (order), numeric keys,
    /// bytes, an enum object of two members, an array longer than a tuple.
    #[test]
    fn o29_value_path_refuses_what_only_the_text_has() {
        #[derive(Deserialize)]
        struct Raw {
            #[allow(dead_code)]
            exact: Box<RawValue>,
        }
        assert!(from_value::<Raw>(r#"{"exact":1.10}"#).is_err());
        let raw: Raw = serde_json::from_str(r#"{"exact":1.10}"#).unwrap();
        assert_eq!(raw.exact.get(), "1.10");

        assert!(from_value::<u128>("18446744073709551617").is_err());
        assert_eq!(
            serde_json::from_str::<u128>("18446744073709551617").unwrap(),
            18_446_744_073_709_551_617
        );
        assert!(from_value::<i128>("-9223372036854775809").is_err());
        assert_eq!(
            from_value::<u128>("18446744073709551615").unwrap(),
            18_446_744_073_709_551_615
        );

        // Two members read as a map: refused (an order-keeping map would see sorted keys);
        // one member is fine.
        assert!(from_value::<HashMap<String, u8>>(r#"{"b":1,"a":2}"#).is_err());
        assert!(from_value::<Value>(r#"{"b":1,"a":2}"#).is_err());
        assert_eq!(
            from_value::<HashMap<String, u8>>(r#"{"b":1}"#).unwrap(),
            HashMap::from([("b".to_owned(), 1)])
        );
        // Keys the text's key reader would parse.
        assert!(from_value::<BTreeMap<u8, u8>>(r#"{"1":1}"#).is_err());
        assert_eq!(
            serde_json::from_str::<BTreeMap<u8, u8>>(r#"{"1":1}"#).unwrap(),
            BTreeMap::from([(1, 1)])
        );
        // Bytes, an enum object of two members, a too-long tuple.
        #[derive(Debug, Deserialize)]
        struct Bytes(#[allow(dead_code)] serde_bytes_like::Buf);
        assert!(from_value::<Bytes>(r#""abc""#).is_err());
        assert!(from_value::<Mode>(r#"{"fast":null,"slow":{"depth":1}}"#).is_err());
        assert!(from_value::<(u8, u8)>("[1,2,3]").is_err());
        assert!(serde_json::from_str::<(u8, u8)>("[1,2,3]").is_err());
    }

    /// A stand-in for a `serde_bytes` buffer: asks for bytes.
    mod serde_bytes_like {
        pub(super) struct Buf;
        impl std::fmt::Debug for Buf {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("Buf")
            }
        }
        impl<'de> serde::Deserialize<'de> for Buf {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl serde::de::Visitor<'_> for V {
                    type Value = Buf;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str("bytes")
                    }
                    fn visit_bytes<E>(self, _v: &[u8]) -> Result<Buf, E> {
                        Ok(Buf)
                    }
                }
                d.deserialize_bytes(V)
            }
        }
    }

    /// The value a typed result is checked as is the value its text parses to (o13_: the
    /// output schema sees what the client gets), or `None` where it could not be.
    #[test]
    fn o13_typed_result_value_is_what_its_text_parses_to() {
        use super::typed_value;
        use serde::Serialize;
        #[derive(Serialize)]
        enum Kind {
            Unit,
            New(u8),
            Pair(u8, String),
            Named { a: bool },
        }
        #[derive(Serialize)]
        struct Out {
            text: String,
            n: i64,
            big: u64,
            x: f64,
            nan: f64,
            c: char,
            kinds: Vec<Kind>,
            none: Option<u8>,
            some: Option<&'static str>,
            map: BTreeMap<u32, bool>,
            raw: Box<RawValue>,
            unit: (),
            tuple: (u8, i128),
        }
        let out = Out {
            text: "a \"q\" \\ é 😀\n\u{1}".to_owned(),
            n: -5,
            big: u64::MAX,
            x: 0.1 + 0.2,
            nan: f64::NAN,
            c: 'ü',
            kinds: vec![
                Kind::Unit,
                Kind::New(1),
                Kind::Pair(2, "p".to_owned()),
                Kind::Named { a: true },
            ],
            none: None,
            some: Some("s"),
            map: BTreeMap::from([(3, true), (10, false)]),
            raw: RawValue::from_string(r#"{"m":1.10,"z":[]}"#.to_owned()).unwrap(),
            unit: (),
            tuple: (1, -7),
        };
        let parsed: Value = serde_json::from_str(&serde_json::to_string(&out).unwrap()).unwrap();
        assert_eq!(typed_value(&out), Some(parsed));

        // An f32 writes its own shortest text (0.1), which parses to another f64 than the
        // widened f32 (0.10000000149011612): the text is checked instead.
        #[derive(Serialize)]
        struct Float {
            ratio: Option<f32>,
        }
        assert_eq!(typed_value(&Float { ratio: Some(0.1) }), None);
        assert_eq!(
            typed_value(&Float { ratio: None }),
            Some(serde_json::json!({ "ratio": null }))
        );
        // o29_: an integer beyond u64 has no value form; one inside it has.
        #[derive(Serialize)]
        struct Wide {
            n: u128,
        }
        assert_eq!(
            typed_value(&Wide {
                n: u128::from(u64::MAX) + 1
            }),
            None
        );
        assert_eq!(
            typed_value(&Wide {
                n: u128::from(u64::MAX)
            }),
            Some(serde_json::json!({ "n": u64::MAX }))
        );
        // A raw value beyond the f64 range: no value, as its text does not parse to one.
        #[derive(Serialize)]
        struct Huge {
            raw: Box<RawValue>,
        }
        let huge = Huge {
            raw: RawValue::from_string("1e400".to_owned()).unwrap(),
        };
        assert_eq!(typed_value(&huge), None);
    }

    /// The typed decoder falls back to the text where the value refuses, and reports the one
    /// failure where neither fits (o13_).
    #[test]
    fn o13_typed_decode_falls_back_to_the_exact_text() {
        use super::{decode_typed, Arguments};
        use std::borrow::Cow;
        #[derive(Deserialize)]
        struct Big {
            n: u128,
            exact: Box<RawValue>,
        }
        let text = r#"{"n":18446744073709551617,"exact":{"m":1.10}}"#;
        let raw: Box<RawValue> = RawValue::from_string(text.to_owned()).unwrap();
        let args = Arguments {
            text: Cow::Borrowed(&*raw),
            value: serde_json::from_str(text).unwrap(),
        };
        let big = decode_typed::<Big>(args).expect("the text fits");
        assert_eq!(big.n, 18_446_744_073_709_551_617);
        assert_eq!(big.exact.get(), r#"{"m":1.10}"#);

        let args = Arguments {
            text: Cow::Borrowed(&*raw),
            value: serde_json::from_str(text).unwrap(),
        };
        assert!(decode_typed::<Inner>(args).is_err());
    }
}

/// A serializer that passes everything to the one it wraps, at every depth (each nested value
/// goes through [`no_f32::Guard`]), except an `f32`, which it refuses: serialised to text an
/// `f32` is written in its own shortest form, which parses back to another `f64` than the
/// widened `f32` a value would hold, so a value built from it would not be what the text
/// says.
mod no_f32 {
    use serde::ser::{self, Serialize, Serializer};

    pub(super) struct NoF32<S>(pub(super) S);

    /// A value serialised through [`NoF32`] by whichever serializer asks for it.
    struct Guard<'a, T: ?Sized>(&'a T);

    impl<T: ?Sized + Serialize> Serialize for Guard<'_, T> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            self.0.serialize(NoF32(serializer))
        }
    }

    /// A compound serializer whose members go through [`Guard`].
    pub(super) struct Compound<C>(C);

    impl<S: Serializer> Serializer for NoF32<S> {
        type Ok = S::Ok;
        type Error = S::Error;
        type SerializeSeq = Compound<S::SerializeSeq>;
        type SerializeTuple = Compound<S::SerializeTuple>;
        type SerializeTupleStruct = Compound<S::SerializeTupleStruct>;
        type SerializeTupleVariant = Compound<S::SerializeTupleVariant>;
        type SerializeMap = Compound<S::SerializeMap>;
        type SerializeStruct = Compound<S::SerializeStruct>;
        type SerializeStructVariant = Compound<S::SerializeStructVariant>;

        crate::codec::escape::forward_scalars!(
            serialize_bool: bool,
            serialize_i8: i8,
            serialize_i16: i16,
            serialize_i32: i32,
            serialize_i64: i64,
            serialize_i128: i128,
            serialize_u8: u8,
            serialize_u16: u16,
            serialize_u32: u32,
            serialize_u64: u64,
            serialize_u128: u128,
            serialize_f64: f64,
            serialize_char: char,
            serialize_str: &str,
            serialize_bytes: &[u8],
        );
        fn serialize_f32(self, _v: f32) -> Result<S::Ok, S::Error> {
            Err(ser::Error::custom("an f32 is checked from its text"))
        }
        crate::codec::escape::forward_wrapped!(Guard);
        fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq, S::Error> {
            self.0.serialize_seq(len).map(Compound)
        }
        fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple, S::Error> {
            self.0.serialize_tuple(len).map(Compound)
        }
        fn serialize_tuple_struct(
            self,
            name: &'static str,
            len: usize,
        ) -> Result<Self::SerializeTupleStruct, S::Error> {
            self.0.serialize_tuple_struct(name, len).map(Compound)
        }
        fn serialize_tuple_variant(
            self,
            name: &'static str,
            index: u32,
            variant: &'static str,
            len: usize,
        ) -> Result<Self::SerializeTupleVariant, S::Error> {
            self.0
                .serialize_tuple_variant(name, index, variant, len)
                .map(Compound)
        }
        fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap, S::Error> {
            self.0.serialize_map(len).map(Compound)
        }
        fn serialize_struct(
            self,
            name: &'static str,
            len: usize,
        ) -> Result<Self::SerializeStruct, S::Error> {
            self.0.serialize_struct(name, len).map(Compound)
        }
        fn serialize_struct_variant(
            self,
            name: &'static str,
            index: u32,
            variant: &'static str,
            len: usize,
        ) -> Result<Self::SerializeStructVariant, S::Error> {
            self.0
                .serialize_struct_variant(name, index, variant, len)
                .map(Compound)
        }
        fn is_human_readable(&self) -> bool {
            self.0.is_human_readable()
        }
    }

    /// The four compounds whose one method takes a value: each element or field is guarded.
    macro_rules! guard_each_value {
        ($($trait:ident :: $method:ident),* $(,)?) => {$(
            impl<C: ser::$trait> ser::$trait for Compound<C> {
                type Ok = C::Ok;
                type Error = C::Error;
                fn $method<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), C::Error> {
                    self.0.$method(&Guard(value))
                }
                fn end(self) -> Result<C::Ok, C::Error> {
                    self.0.end()
                }
            }
        )*};
    }

    guard_each_value!(
        SerializeSeq::serialize_element,
        SerializeTuple::serialize_element,
        SerializeTupleStruct::serialize_field,
        SerializeTupleVariant::serialize_field,
    );

    impl<C: ser::SerializeMap> ser::SerializeMap for Compound<C> {
        type Ok = C::Ok;
        type Error = C::Error;
        fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Result<(), C::Error> {
            self.0.serialize_key(&Guard(key))
        }
        fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), C::Error> {
            self.0.serialize_value(&Guard(value))
        }
        fn end(self) -> Result<C::Ok, C::Error> {
            self.0.end()
        }
    }

    impl<C: ser::SerializeStruct> ser::SerializeStruct for Compound<C> {
        type Ok = C::Ok;
        type Error = C::Error;
        fn serialize_field<T: ?Sized + Serialize>(
            &mut self,
            key: &'static str,
            value: &T,
        ) -> Result<(), C::Error> {
            self.0.serialize_field(key, &Guard(value))
        }
        fn skip_field(&mut self, key: &'static str) -> Result<(), C::Error> {
            self.0.skip_field(key)
        }
        fn end(self) -> Result<C::Ok, C::Error> {
            self.0.end()
        }
    }

    impl<C: ser::SerializeStructVariant> ser::SerializeStructVariant for Compound<C> {
        type Ok = C::Ok;
        type Error = C::Error;
        fn serialize_field<T: ?Sized + Serialize>(
            &mut self,
            key: &'static str,
            value: &T,
        ) -> Result<(), C::Error> {
            self.0.serialize_field(key, &Guard(value))
        }
        fn skip_field(&mut self, key: &'static str) -> Result<(), C::Error> {
            self.0.skip_field(key)
        }
        fn end(self) -> Result<C::Ok, C::Error> {
            self.0.end()
        }
    }
}
