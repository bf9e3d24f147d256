//! Tool definitions: typed tools (schemas derived from Rust types, ADR-061) and dynamic tools
//! (explicit schema text, the documented exception for proxies and fixtures).

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

pub(crate) type ErasedHandler = Arc<
    dyn Fn(Invocation, Box<RawValue>) -> BoxFuture<Result<Outcome<DynamicOutput>, ToolError>>
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
            Arc::new(move |inv, args: Box<RawValue>| {
                let handler = Arc::clone(&handler);
                Box::pin(async move {
                    let input = decode_typed::<In>(&args)?;
                    let out = handler(inv, input).await?;
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
            Arc::new(move |inv, args: Box<RawValue>| {
                let handler = Arc::clone(&handler);
                Box::pin(async move {
                    let input = decode_typed::<In>(&args)?;
                    match handler(inv, input).await? {
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

fn decode_typed<In: DeserializeOwned>(args: &RawValue) -> Result<In, ToolError> {
    serde_json::from_str::<In>(args.get()).map_err(|e| {
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

fn encode_typed<Out: Serialize>(out: &Out) -> Result<DynamicOutput, ToolError> {
    // Serialised straight into a raw value (serde_json's own output is not parsed again).
    let structured = serde_json::value::to_raw_value(out).map_err(|e| {
        tracing::warn!(error = %e, "typed tool output could not be serialised");
        ToolError::Failure(ToolFailure::new(
            FailureCode::InvalidResult,
            "The tool produced a result it cannot encode.",
        ))
    })?;
    Ok(DynamicOutput {
        content: vec![ContentBlock::text(structured.get())],
        structured: Some(structured),
    })
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
            handler: Arc::new(move |inv, args| Box::pin(handler(inv, args))),
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
