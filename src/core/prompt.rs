//! Prompts with typed arguments, and completion results (G-section).

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::core::caller::Caller;
use crate::core::descriptor::{Prompt, PromptArgument, PromptMessage};
use crate::core::error::{BuildError, CoreError};
use crate::core::invocation::{Invocation, Outcome};
use crate::core::resource::Completer;
use crate::core::schema::{derive_schema, Side};
use crate::core::tool::BoxFuture;

/// Maximum number of values in one completion result.
pub const MAX_COMPLETION_VALUES: usize = 100;

/// A successful `prompts/get` body (without `resultType`; never cacheable).
///
/// ```
/// use strict_mcp::core::PromptReply;
/// use strict_mcp::core::descriptor::PromptMessage;
/// let one = PromptReply::user("Review this Rust code.");
/// let two = PromptReply::new(vec![PromptMessage::user("Review this Rust code.")]);
/// assert_eq!(one, two);
/// assert_eq!(serde_json::to_string(&one.description("A review")).unwrap(),
///     r#"{"description":"A review","messages":[{"content":{"text":"Review this Rust code.","type":"text"},"role":"user"}]}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptReply {
    /// Optional description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages.
    pub messages: Vec<PromptMessage>,
}

impl PromptReply {
    /// These messages, without description.
    #[must_use]
    pub fn new(messages: Vec<PromptMessage>) -> Self {
        PromptReply {
            description: None,
            messages,
        }
    }

    /// One text message from the user: the common prompt.
    #[must_use]
    pub fn user(text: impl Into<String>) -> Self {
        PromptReply::new(vec![PromptMessage::user(text)])
    }

    /// Sets the description.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

/// Why a prompt handler failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PromptError {
    /// The arguments are unusable (-32602); the message is shown to the client.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// Internal failure (-32603); the cause is never serialised.
    #[error("internal failure")]
    Internal {
        /// Whether a retry could succeed.
        retryable: bool,
    },
    /// Any other protocol error (e.g. -32021).
    #[error(transparent)]
    Protocol(#[from] CoreError),
}

impl From<crate::core::invocation::AnswerError> for PromptError {
    fn from(e: crate::core::invocation::AnswerError) -> Self {
        PromptError::Protocol(e.into())
    }
}

impl From<PromptError> for CoreError {
    fn from(e: PromptError) -> Self {
        match e {
            PromptError::InvalidArguments(message) => CoreError::InvalidParams { message },
            PromptError::Internal { retryable } => CoreError::Internal { retryable },
            PromptError::Protocol(e) => e,
        }
    }
}

pub(crate) type PromptHandler = Arc<
    dyn Fn(
            Invocation,
            BTreeMap<String, String>,
        ) -> BoxFuture<Result<Outcome<PromptReply>, PromptError>>
        + Send
        + Sync,
>;

/// A prompt with its handler, argument declarations and completers.
#[derive(Clone)]
pub struct PromptDef {
    pub(crate) descriptor: Prompt,
    pub(crate) handler: PromptHandler,
    pub(crate) completers: BTreeMap<String, Completer>,
    pub(crate) schema_error: Option<String>,
    pub(crate) timeout: Option<Duration>,
}

impl fmt::Debug for PromptDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PromptDef")
            .field("name", &self.descriptor.name)
            .finish_non_exhaustive()
    }
}

impl PromptDef {
    /// A prompt whose arguments are derived from a type: every property must be a string
    /// (prompt arguments are a map of strings); non-`Option` fields are required and doc
    /// comments become descriptions. The handler returns a [`PromptReply`] (or, to ask the
    /// client for input first, an [`Outcome`]), like [`PromptDef::new`]'s.
    ///
    /// ```
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    /// use strict_mcp::core::{Invocation, PromptDef, PromptReply};
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Review { /// The language of the code.
    ///     language: String, /// Optional focus area.
    ///     focus: Option<String> }
    ///
    /// let p = PromptDef::typed("review", |_inv: Invocation, a: Review| async move {
    ///     Ok(PromptReply::user(format!("Review this {} code", a.language)))
    /// });
    /// assert_eq!(p.name(), "review");
    /// ```
    pub fn typed<A, R, F, Fut>(name: impl Into<String>, handler: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        R: Into<Outcome<PromptReply>> + Send + 'static,
        F: Fn(Invocation, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, PromptError>> + Send + 'static,
    {
        let schema = derive_schema::<A>(Side::Input);
        let (arguments, schema_error) = match prompt_arguments(&schema) {
            Ok(args) => (args, None),
            Err(e) => (Vec::new(), Some(e)),
        };
        let handler = Arc::new(handler);
        PromptDef {
            descriptor: Prompt {
                arguments: (!arguments.is_empty()).then(|| arguments.into()),
                ..Prompt::new(name)
            },
            handler: Arc::new(move |inv, args| {
                let handler = Arc::clone(&handler);
                Box::pin(async move {
                    let object: serde_json::Map<String, Value> = args
                        .into_iter()
                        .map(|(k, v)| (k, Value::String(v)))
                        .collect();
                    let typed: A = serde_json::from_value(Value::Object(object)).map_err(|_| {
                        PromptError::InvalidArguments(
                            "the arguments do not fit the prompt".to_owned(),
                        )
                    })?;
                    handler(inv, typed).await.map(Into::into)
                })
            }),
            completers: BTreeMap::new(),
            schema_error,
            timeout: None,
        }
    }

    /// A prompt with hand-declared string arguments (add them with [`PromptDef::required`],
    /// [`PromptDef::optional`] or [`PromptDef::argument`]). The handler gets the arguments
    /// as sent and returns a [`PromptReply`], or an [`Outcome`] to ask the client for input
    /// first.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use strict_mcp::core::{Invocation, PromptDef, PromptReply};
    /// let p = PromptDef::new("greet", |_inv: Invocation, args: BTreeMap<String, String>| async move {
    ///     Ok(PromptReply::user(format!("Say hello to {}.", args["name"])))
    /// })
    /// .required("name", "Who to greet.");
    /// assert_eq!(p.name(), "greet");
    /// ```
    pub fn new<R, F, Fut>(name: impl Into<String>, handler: F) -> Self
    where
        R: Into<Outcome<PromptReply>> + Send + 'static,
        F: Fn(Invocation, BTreeMap<String, String>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, PromptError>> + Send + 'static,
    {
        let handler = move |inv, args| {
            let fut = handler(inv, args);
            async move { fut.await.map(Into::into) }
        };
        PromptDef {
            descriptor: Prompt::new(name),
            handler: Arc::new(move |inv, args| Box::pin(handler(inv, args))),
            completers: BTreeMap::new(),
            schema_error: None,
            timeout: None,
        }
    }

    /// Declares one required argument.
    #[must_use]
    pub fn required(self, name: impl Into<String>, description: impl Into<String>) -> Self {
        self.argument(name, description, true)
    }

    /// Declares one optional argument.
    #[must_use]
    pub fn optional(self, name: impl Into<String>, description: impl Into<String>) -> Self {
        self.argument(name, description, false)
    }

    /// Declares one argument.
    #[must_use]
    pub fn argument(
        mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        required: bool,
    ) -> Self {
        self.descriptor
            .arguments
            .get_or_insert_with(|| Vec::new().into())
            .0
            .push(PromptArgument {
                description: Some(description.into()),
                required: Some(required),
                ..PromptArgument::new(name)
            });
        self
    }

    /// The name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.descriptor.name
    }

    /// Display title.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.descriptor.title = Some(title.into());
        self
    }

    /// Description.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.descriptor.description = Some(description.into());
        self
    }

    /// Overrides the server's time-out for this prompt (the server bounds `prompts/get` like
    /// a resource read). On expiry the handler's cancellation token fires and the client gets
    /// -32603 with `data: {"name", "retryable": true}`. Must lie within
    /// [`MIN_TIMEOUT`](crate::core::MIN_TIMEOUT)`..=`[`MAX_TIMEOUT`](crate::core::MAX_TIMEOUT),
    /// checked when the registry is built.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The time-out override, if any.
    #[must_use]
    pub fn timeout_override(&self) -> Option<Duration> {
        self.timeout
    }

    /// Registers a completer for one argument.
    #[must_use]
    pub fn complete<F>(mut self, argument: impl Into<String>, completer: F) -> Self
    where
        F: Fn(&Caller, &str, &BTreeMap<String, String>) -> Vec<String> + Send + Sync + 'static,
    {
        self.completers.insert(argument.into(), Arc::new(completer));
        self
    }

    pub(crate) fn check(&self) -> Result<(), BuildError> {
        if let Some(timeout) = self
            .timeout
            .filter(|t| !crate::core::resource::timeout_in_range(*t))
        {
            return Err(BuildError::InvalidTimeout {
                kind: "prompt",
                name: self.descriptor.name.clone(),
                timeout,
            });
        }
        if let Some(reason) = &self.schema_error {
            return Err(BuildError::Schema {
                kind: "prompt arguments",
                name: self.descriptor.name.clone(),
                reason: reason.clone(),
            });
        }
        for arg in self.completers.keys() {
            let declared = self
                .descriptor
                .arguments
                .iter()
                .flat_map(|a| a.iter())
                .any(|a| &a.name == arg);
            if !declared {
                return Err(BuildError::Schema {
                    kind: "prompt arguments",
                    name: self.descriptor.name.clone(),
                    reason: format!("completer for undeclared argument `{arg}`"),
                });
            }
        }
        Ok(())
    }
}

fn prompt_arguments(schema: &Value) -> Result<Vec<PromptArgument>, String> {
    if schema.get("type") != Some(&Value::String("object".to_owned())) {
        return Err("prompt arguments must be a struct".to_owned());
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = Vec::new();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, prop) in props {
            if prop.get("type") != Some(&Value::String("string".to_owned())) {
                return Err(format!("argument `{name}` must be a string"));
            }
            out.push(PromptArgument {
                name: name.clone(),
                title: prop.get("title").and_then(Value::as_str).map(str::to_owned),
                description: prop
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                required: Some(required.contains(&name.as_str())),
                extra: serde_json::Map::new(),
            });
        }
    }
    Ok(out)
}

/// The `completion` object of a `completion/complete` result (not cacheable).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompletionReply {
    /// At most 100 values, ranked.
    pub values: Vec<String>,
    /// Total number of matches, when more exist than returned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether more values exist than returned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
}

impl CompletionReply {
    pub(crate) fn from_values(mut values: Vec<String>) -> Self {
        let total = values.len();
        if total > MAX_COMPLETION_VALUES {
            values.truncate(MAX_COMPLETION_VALUES);
            CompletionReply {
                values,
                total: Some(total as u64),
                has_more: Some(true),
            }
        } else {
            CompletionReply {
                values,
                total: None,
                has_more: None,
            }
        }
    }
}
