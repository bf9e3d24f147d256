//! Typed methods: list walks, explicit MRTR rounds, convenience calls and the opt-in driver.
//!
//! Nothing here answers or retries an `input_required` result on its own: the round
//! APIs return it, the convenience APIs turn it into [`ClientError::InputRequired`], and only
//! [`Client::call_tool_driven`] answers, through the host's callback, at most
//! [`MAX_DRIVEN_ROUNDS`] times.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::client::connection::{lock, CallOptions, Client};
use crate::client::error::{
    ClientError, InputRequired, InvalidResult, PaginationError, RpcErrorKind, ToolFailed,
};
use crate::core::schema::CompiledSchema;
use crate::wire::headers::param_headers;
use crate::wire::result::{decode_lenient_owned, CompleteResult, Decoded, Method};
use crate::wire::{
    CallToolResult, CompleteResult as CompletionResult, ElicitRequestParams, GetPromptResult,
    InputRequest, InputRequiredResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, Prompt, ReadResourceResult, Resource, ResourceTemplate,
    Tool,
};

/// The most pages one list walk follows: a server that keeps paginating is cut off.
pub const MAX_LIST_PAGES: usize = 100;

/// The most entries one list walk collects, across all its pages.
pub const MAX_LIST_ITEMS: usize = 10_000;

/// The most `input_required` rounds [`Client::call_tool_driven`] answers before giving up.
pub const MAX_DRIVEN_ROUNDS: usize = 10;

/// What one round of a multi round-trip request sends back: this round's answers and
/// the server's `requestState`, byte-exact. Each round is a new request with a fresh id.
#[derive(Debug, Clone, Default)]
pub struct RoundInput {
    /// `inputResponses`, keyed as the server's `inputRequests` were.
    pub input_responses: Option<Map<String, Value>>,
    /// `requestState`, exactly as the server sent it.
    pub request_state: Option<String>,
}

impl RoundInput {
    /// The first round: nothing to answer.
    #[must_use]
    pub fn first() -> Self {
        Self::default()
    }

    /// The next round after `previous`: `responses` plus its `requestState`, unchanged.
    #[must_use]
    pub fn answer(previous: &InputRequiredResult, responses: Map<String, Value>) -> Self {
        RoundInput {
            input_responses: Some(responses),
            request_state: previous.request_state.clone(),
        }
    }

    /// [`RoundInput::answer`], after checking `responses` with [`check_answers`].
    ///
    /// # Errors
    /// [`ClientError::Request`] naming the first answer that cannot be sent.
    pub fn try_answer(
        previous: &InputRequiredResult,
        responses: Map<String, Value>,
    ) -> Result<Self, ClientError> {
        check_answers(previous, &responses).map_err(ClientError::Request)?;
        Ok(Self::answer(previous, responses))
    }

    pub(crate) fn write(self, params: &mut Map<String, Value>) {
        if let Some(responses) = self.input_responses {
            params.insert("inputResponses".into(), Value::Object(responses));
        }
        if let Some(state) = self.request_state {
            params.insert("requestState".into(), Value::String(state));
        }
    }
}

/// Checks one round's answers before they are sent: every input request answered and no
/// other key, and each answer to an `elicitation/create` an `ElicitResult`:
/// `action` is `accept`, `decline` or `cancel`; a form accept's `content`, if any, maps to
/// string, number, boolean or string-array values; a URL accept has no `content`.
///
/// # Errors
/// Why the first offending answer (in key order) cannot be sent.
pub fn check_answers(
    asked: &InputRequiredResult,
    responses: &Map<String, Value>,
) -> Result<(), String> {
    let empty = std::collections::BTreeMap::new();
    let requests = asked.input_requests.as_ref().map_or(&empty, |r| &r.0);
    if let Some(extra) = responses.keys().find(|k| !requests.contains_key(*k)) {
        return Err(format!("answer {extra:?} matches no input request"));
    }
    for (key, request) in requests {
        let Some(answer) = responses.get(key) else {
            return Err(format!("input request {key:?} is not answered"));
        };
        if let InputRequest::ElicitRequest(elicit) = request {
            let url = matches!(elicit.params, ElicitRequestParams::UrlParams(_));
            check_elicit_result(answer, url)
                .map_err(|reason| format!("answer {key:?}: {reason}"))?;
        }
    }
    Ok(())
}

pub(crate) fn check_elicit_result(answer: &Value, url: bool) -> Result<(), String> {
    let Some(object) = answer.as_object() else {
        return Err("an elicitation answer is an object".to_owned());
    };
    let action = object.get("action").and_then(Value::as_str);
    let content = object.get("content");
    match (action, content) {
        (Some("decline" | "cancel"), _) => Ok(()),
        (Some("accept"), None) => Ok(()),
        (Some("accept"), Some(_)) if url => Err("a URL-mode accept carries no content".to_owned()),
        (Some("accept"), Some(Value::Object(fields))) => {
            let primitive = |v: &Value| {
                matches!(v, Value::String(_) | Value::Number(_) | Value::Bool(_))
                    || v.as_array().is_some_and(|a| a.iter().all(Value::is_string))
            };
            match fields.iter().find(|(_, v)| !primitive(v)) {
                Some((name, _)) => Err(format!(
                    "content field {name:?} is not a string, number, boolean or string array"
                )),
                None => Ok(()),
            }
        }
        (Some("accept"), Some(_)) => Err("content is an object".to_owned()),
        _ => Err("action is accept, decline or cancel".to_owned()),
    }
}

/// How one round of `resources/read` or `prompts/get` ended.
#[derive(Debug, Clone)]
pub enum Round<T> {
    /// The typed complete result.
    Complete(T),
    /// The server needs more input (boxed: larger than most results).
    InputRequired(Box<InputRequired>),
}

/// How one round of `tools/call` ended: the three result classes stay apart.
#[derive(Debug, Clone)]
pub enum ToolOutcome {
    /// A complete result without `isError` (its `structuredContent` matched the schema).
    Success(CallToolResult),
    /// A complete result with `isError: true`: the tool's own failure.
    Failed(ToolFailed),
    /// The server needs more input.
    InputRequired(InputRequired),
}

/// One page of a list (`tools/list`, `resources/list`, `resources/templates/list`,
/// `prompts/list`) and the cursor of the next, for a host that pages on its own.
#[derive(Debug, Clone)]
pub struct ListPage {
    /// The typed page, entries as the server sent them (see [`Client::list_page`]).
    pub result: CompleteResult,
    /// `nextCursor`: absent on the last page.
    pub next_cursor: Option<String>,
}

/// The `nextCursor` of a list page; `None` for a result that is not a list page.
fn next_cursor_of(result: &CompleteResult) -> Option<Option<String>> {
    Some(match result {
        CompleteResult::ToolsList(r) => r.next_cursor.clone(),
        CompleteResult::ResourcesList(r) => r.next_cursor.clone(),
        CompleteResult::ResourcesTemplatesList(r) => r.next_cursor.clone(),
        CompleteResult::PromptsList(r) => r.next_cursor.clone(),
        _ => return None,
    })
}

fn unexpected(method: Method) -> ClientError {
    ClientError::Invalid(InvalidResult::Frame {
        method: method.name().to_owned(),
        reason: "result of another method".to_owned(),
    })
}

impl Client {
    async fn complete(
        &self,
        method: Method,
        params: Map<String, Value>,
        options: &CallOptions,
    ) -> Result<CompleteResult, ClientError> {
        match self.request(method, params, options).await? {
            Decoded::Complete(c) => Ok(c),
            // Only reachable for the three methods that may ask (decode_lenient refuses it
            // elsewhere, O77).
            Decoded::InputRequired(result) => {
                Err(ClientError::InputRequired(Box::new(InputRequired {
                    method: method.name().to_owned(),
                    result,
                })))
            }
        }
    }

    /// Follows `nextCursor` until it is absent; a repeated cursor or more than
    /// [`MAX_LIST_PAGES`] pages / [`MAX_LIST_ITEMS`] entries ends the walk with a typed error.
    async fn walk<T>(
        &self,
        method: Method,
        options: &CallOptions,
        mut page: impl FnMut(CompleteResult) -> Option<(Vec<T>, Option<String>)>,
    ) -> Result<Vec<T>, ClientError> {
        let mut items = Vec::new();
        let mut seen = HashSet::new();
        let mut cursor: Option<String> = None;
        for number in 1..=MAX_LIST_PAGES {
            let mut params = Map::new();
            if let Some(c) = &cursor {
                params.insert("cursor".into(), Value::String(c.clone()));
            }
            let result = self.complete(method, params, options).await?;
            let (mut entries, next) = page(result).ok_or_else(|| unexpected(method))?;
            if items.len() + entries.len() > MAX_LIST_ITEMS {
                return Err(ClientError::Pagination(PaginationError::TooManyItems {
                    limit: MAX_LIST_ITEMS,
                }));
            }
            items.append(&mut entries);
            match next {
                None => return Ok(items),
                Some(next) => {
                    if !seen.insert(next.clone()) {
                        return Err(ClientError::Pagination(PaginationError::RepeatedCursor {
                            cursor: next,
                            page: number,
                        }));
                    }
                    cursor = Some(next);
                }
            }
        }
        Err(ClientError::Pagination(PaginationError::TooManyPages {
            limit: MAX_LIST_PAGES,
        }))
    }

    /// One page of `method` (a list method), starting at `cursor` (`None`: the first page),
    /// with its `nextCursor`. Nothing is walked, filtered or remembered: the entries are the
    /// page's own (no invalid-annotation drop; tool output schemas are recorded by [`Client::list_tools`]
    /// only), and the host decides whether to follow the cursor.
    ///
    /// # Errors
    /// [`ClientError::Request`] when `method` is not a list method (nothing is sent), or any
    /// [`ClientError`] of the request.
    pub async fn list_page(
        &self,
        method: Method,
        cursor: Option<&str>,
        options: &CallOptions,
    ) -> Result<ListPage, ClientError> {
        if !matches!(
            method,
            Method::ToolsList
                | Method::ResourcesList
                | Method::ResourcesTemplatesList
                | Method::PromptsList
        ) {
            return Err(ClientError::Request(format!(
                "{} is not a list method",
                method.name()
            )));
        }
        let mut params = Map::new();
        if let Some(c) = cursor {
            params.insert("cursor".into(), Value::String(c.to_owned()));
        }
        let result = self.complete(method, params, options).await?;
        let next_cursor = next_cursor_of(&result).ok_or_else(|| unexpected(method))?;
        Ok(ListPage {
            result,
            next_cursor,
        })
    }

    /// Every tool, across pages. Output schemas are kept to check later `structuredContent`.
    /// A tool whose `x-mcp-header` annotations are invalid is dropped with a warning, its
    /// siblings kept: no call could carry the headers it declares.
    ///
    /// # Errors
    /// Any [`ClientError`]; [`ClientError::Pagination`] for a looping or endless list.
    pub async fn list_tools(&self, options: &CallOptions) -> Result<Vec<Tool>, ClientError> {
        let tools = self
            .walk(Method::ToolsList, options, |r| match r {
                CompleteResult::ToolsList(ListToolsResult {
                    tools, next_cursor, ..
                }) => Some((tools, next_cursor)),
                _ => None,
            })
            .await?;
        let tools = keep_valid_annotations(tools);
        let mut schemas = lock(&self.shared.output_schemas);
        schemas.clear();
        for tool in &tools {
            if let Some(schema) = &tool.output_schema {
                let compiled = serde_json::to_string(schema)
                    .map_err(|e| e.to_string())
                    .and_then(|text| CompiledSchema::compile(&text))
                    .map(Arc::new);
                schemas.insert(tool.name.clone(), compiled);
            }
        }
        Ok(tools)
    }

    /// Every resource, across pages.
    ///
    /// # Errors
    /// As [`Client::list_tools`].
    pub async fn list_resources(
        &self,
        options: &CallOptions,
    ) -> Result<Vec<Resource>, ClientError> {
        self.walk(Method::ResourcesList, options, |r| match r {
            CompleteResult::ResourcesList(ListResourcesResult {
                resources,
                next_cursor,
                ..
            }) => Some((resources, next_cursor)),
            _ => None,
        })
        .await
    }

    /// Every resource template, across pages.
    ///
    /// # Errors
    /// As [`Client::list_tools`].
    pub async fn list_resource_templates(
        &self,
        options: &CallOptions,
    ) -> Result<Vec<ResourceTemplate>, ClientError> {
        self.walk(Method::ResourcesTemplatesList, options, |r| match r {
            CompleteResult::ResourcesTemplatesList(ListResourceTemplatesResult {
                resource_templates,
                next_cursor,
                ..
            }) => Some((resource_templates, next_cursor)),
            _ => None,
        })
        .await
    }

    /// Every prompt, across pages.
    ///
    /// # Errors
    /// As [`Client::list_tools`].
    pub async fn list_prompts(&self, options: &CallOptions) -> Result<Vec<Prompt>, ClientError> {
        self.walk(Method::PromptsList, options, |r| match r {
            CompleteResult::PromptsList(ListPromptsResult {
                prompts,
                next_cursor,
                ..
            }) => Some((prompts, next_cursor)),
            _ => None,
        })
        .await
    }

    /// One round of `tools/call`: always a fresh request id; `round` carries this
    /// round's answers and the byte-exact `requestState`. `structuredContent` is checked
    /// against the tool's output schema (from the last [`Client::list_tools`]) unless the
    /// result has `isError: true`.
    ///
    /// # Errors
    /// Any [`ClientError`] but the convenience ones.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        round: RoundInput,
        options: &CallOptions,
    ) -> Result<ToolOutcome, ClientError> {
        refuse_tasks_declaration(options)?;
        let mut params = Map::new();
        params.insert("name".into(), Value::String(name.to_owned()));
        if let Some(arguments) = arguments {
            params.insert("arguments".into(), Value::Object(arguments));
        }
        round.write(&mut params);
        let decoded = self.request_tool(name, params, options).await?;
        self.tool_outcome(name, decoded)
    }

    /// [`Client::call_tool`] with `arguments` sent exactly as given (an integer past 64
    /// bits or a number like `1.0` is never re-encoded through `f64` or `Value`), and the
    /// complete or input-required result returned beside its typed reading, byte-exact as
    /// received. The same checks, output-schema validation and -32020 retry apply.
    ///
    /// # Errors
    /// [`ClientError::Request`] when `arguments` is not one JSON object or names a member
    /// twice (nothing is sent), else as [`Client::call_tool`].
    pub async fn call_tool_exact(
        &self,
        name: &str,
        arguments: Option<&RawValue>,
        round: RoundInput,
        options: &CallOptions,
    ) -> Result<(ToolOutcome, Box<RawValue>), ClientError> {
        refuse_tasks_declaration(options)?;
        if let Some(arguments) = arguments {
            check_exact_arguments(arguments)?;
        }
        let mut params = Map::new();
        params.insert("name".into(), Value::String(name.to_owned()));
        round.write(&mut params);
        let exact = arguments.map(|a| ("arguments", a));
        let (decoded, raw) = self
            .request_tool_exact(name, params, exact, options)
            .await?;
        Ok((self.tool_outcome(name, decoded)?, raw))
    }

    /// One `tools/call` request with an exact member: the typed reading and the raw result.
    async fn send_tool_exact(
        &self,
        params: Map<String, Value>,
        exact: Option<(&str, &RawValue)>,
        options: &CallOptions,
    ) -> Result<(Decoded, Box<RawValue>), ClientError> {
        let method = Method::ToolsCall;
        let raw = self
            .shared
            .round_trip_exact(method.name(), params, exact, options)
            .await?;
        let value: Value = serde_json::from_str(raw.get()).map_err(|e| {
            ClientError::Invalid(InvalidResult::Frame {
                method: method.name().to_owned(),
                reason: e.to_string(),
            })
        })?;
        let value = self.shared.lenient(method, value)?;
        let decoded = decode_lenient_owned(method, value).map_err(|error| {
            ClientError::Invalid(InvalidResult::Result {
                method: method.name().to_owned(),
                error,
            })
        })?;
        Ok((decoded, raw))
    }

    /// [`Client::request_tool`] for [`Client::call_tool_exact`]: the same -32020 retry.
    async fn request_tool_exact(
        &self,
        name: &str,
        params: Map<String, Value>,
        exact: Option<(&str, &RawValue)>,
        options: &CallOptions,
    ) -> Result<(Decoded, Box<RawValue>), ClientError> {
        let retry = options
            .retry_header_mismatch
            .unwrap_or(self.options().retry_header_mismatch);
        let first = self.send_tool_exact(params.clone(), exact, options).await;
        if !retry {
            return first;
        }
        let mismatch = match first {
            Err(ClientError::Rpc(e)) if e.kind == RpcErrorKind::HeaderMismatch => e,
            other => return other,
        };
        self.refresh_after_mismatch(name, mismatch, options).await?;
        self.send_tool_exact(params, exact, options).await
    }

    /// The typed outcome of a `tools/call` result: input required, the tool's own
    /// failure, or a success whose `structuredContent` matches the output schema.
    pub(crate) fn tool_outcome(
        &self,
        name: &str,
        decoded: Decoded,
    ) -> Result<ToolOutcome, ClientError> {
        match decoded {
            Decoded::InputRequired(result) => Ok(ToolOutcome::InputRequired(InputRequired {
                method: Method::ToolsCall.name().to_owned(),
                result,
            })),
            Decoded::Complete(CompleteResult::ToolsCall(result)) => {
                if result.is_error == Some(true) {
                    return Ok(ToolOutcome::Failed(ToolFailed {
                        tool: name.to_owned(),
                        result,
                    }));
                }
                self.check_structured(name, &result)?;
                Ok(ToolOutcome::Success(result))
            }
            _ => Err(unexpected(Method::ToolsCall)),
        }
    }

    /// Sends one `tools/call`; with the opt-in retry, a -32020 refreshes
    /// `tools/list` (bounded by [`MAX_LIST_PAGES`] / [`MAX_LIST_ITEMS`]; a transport that
    /// mirrors `x-mcp-header` annotations learns the refreshed ones from it) and sends the
    /// call once more under a new id. A second -32020 is returned as it came. The retry
    /// never replays a side effect: -32020 is refused before the tool runs.
    async fn request_tool(
        &self,
        name: &str,
        params: Map<String, Value>,
        options: &CallOptions,
    ) -> Result<Decoded, ClientError> {
        let retry = options
            .retry_header_mismatch
            .unwrap_or(self.options().retry_header_mismatch);
        if !retry {
            return self.request(Method::ToolsCall, params, options).await;
        }
        let first = self
            .request(Method::ToolsCall, params.clone(), options)
            .await;
        let mismatch = match first {
            Err(ClientError::Rpc(e)) if retry && e.kind == RpcErrorKind::HeaderMismatch => e,
            other => return other,
        };
        self.refresh_after_mismatch(name, mismatch, options).await?;
        self.request(Method::ToolsCall, params, options).await
    }

    /// After a -32020: refreshes `tools/list`; `Ok` when `name` is still listed, so the call
    /// may be sent once more.
    pub(crate) async fn refresh_after_mismatch(
        &self,
        name: &str,
        mismatch: crate::client::RpcError,
        options: &CallOptions,
    ) -> Result<(), ClientError> {
        let refresh = CallOptions {
            deadline: options.deadline,
            capabilities: options.capabilities.clone(),
            ..CallOptions::default()
        };
        match self.list_tools(&refresh).await {
            Err(e) => {
                return Err(ClientError::HeaderMismatchRefresh {
                    mismatch,
                    refresh: Box::new(e),
                })
            }
            // Gone (or dropped for an invalid annotation): no definition to retry with.
            Ok(tools) if !tools.iter().any(|t| t.name == name) => {
                return Err(ClientError::Rpc(mismatch))
            }
            Ok(_) => {}
        }
        tracing::debug!(
            tool = name,
            "retrying tools/call after -32020 and a tools/list refresh"
        );
        Ok(())
    }

    fn check_structured(&self, tool: &str, result: &CallToolResult) -> Result<(), ClientError> {
        let schema = lock(&self.shared.output_schemas).get(tool).cloned();
        let Some(schema) = schema else {
            return Ok(());
        };
        let invalid = |reason: String| {
            ClientError::Invalid(InvalidResult::OutputSchema {
                tool: tool.to_owned(),
                reason,
            })
        };
        let schema = schema.map_err(invalid)?;
        let Some(structured) = &result.structured_content else {
            return Err(invalid(
                "the tool declares an output schema but sent no structuredContent".to_owned(),
            ));
        };
        // The exact text was written from the decoded value, so it reads back as that value.
        let structured: Value = serde_json::from_str(structured.get())
            .map_err(|e| invalid(format!("structuredContent: {e}")))?;
        schema.validate_value(&structured).map_err(|diagnostics| {
            invalid(
                diagnostics
                    .first()
                    .map(|d| format!("at `{}`: {}", d.pointer, d.message))
                    .unwrap_or_default(),
            )
        })
    }

    /// `tools/call` as one step: input requests and tool failures come back as errors
    /// ([`ClientError::InputRequired`], [`ClientError::ToolFailed`]), never hidden.
    ///
    /// # Errors
    /// Any [`ClientError`].
    pub async fn call(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        options: &CallOptions,
    ) -> Result<CallToolResult, ClientError> {
        match self
            .call_tool(name, arguments, RoundInput::first(), options)
            .await?
        {
            ToolOutcome::Success(r) => Ok(r),
            ToolOutcome::Failed(f) => Err(ClientError::ToolFailed(Box::new(f))),
            ToolOutcome::InputRequired(i) => Err(ClientError::InputRequired(Box::new(i))),
        }
    }

    /// `tools/call`, answering each `input_required` round through `answer` (opt-in),
    /// at most [`MAX_DRIVEN_ROUNDS`] times; each retry is a fresh request.
    ///
    /// # Errors
    /// [`ClientError::TooManyRounds`] past the cap, [`ClientError::Declined`] when `answer`
    /// gives up, [`ClientError::Request`] for answers [`check_answers`] refuses (nothing is
    /// sent), [`ClientError::ToolFailed`] for the tool's own failure, or any other error.
    pub async fn call_tool_driven(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        options: &CallOptions,
        mut answer: impl FnMut(&InputRequiredResult) -> Result<Map<String, Value>, String>,
    ) -> Result<CallToolResult, ClientError> {
        let mut round = RoundInput::first();
        let mut answered = 0;
        loop {
            match self
                .call_tool(name, arguments.clone(), round, options)
                .await?
            {
                ToolOutcome::Success(r) => return Ok(r),
                ToolOutcome::Failed(f) => return Err(ClientError::ToolFailed(Box::new(f))),
                ToolOutcome::InputRequired(i) => {
                    if answered == MAX_DRIVEN_ROUNDS {
                        return Err(ClientError::TooManyRounds {
                            limit: MAX_DRIVEN_ROUNDS,
                        });
                    }
                    answered += 1;
                    let responses = answer(&i.result).map_err(ClientError::Declined)?;
                    round = RoundInput::try_answer(&i.result, responses)?;
                }
            }
        }
    }

    /// One round of `resources/read`.
    ///
    /// # Errors
    /// Any [`ClientError`] but the convenience ones.
    pub async fn read_resource_round(
        &self,
        uri: &str,
        round: RoundInput,
        options: &CallOptions,
    ) -> Result<Round<ReadResourceResult>, ClientError> {
        let mut params = Map::new();
        params.insert("uri".into(), Value::String(uri.to_owned()));
        round.write(&mut params);
        match self.request(Method::ResourcesRead, params, options).await? {
            Decoded::Complete(CompleteResult::ResourcesRead(r)) => Ok(Round::Complete(r)),
            Decoded::InputRequired(result) => Ok(Round::InputRequired(Box::new(InputRequired {
                method: Method::ResourcesRead.name().to_owned(),
                result,
            }))),
            _ => Err(unexpected(Method::ResourcesRead)),
        }
    }

    /// `resources/read` as one step; an input request is returned as an error.
    ///
    /// # Errors
    /// Any [`ClientError`].
    pub async fn read_resource(
        &self,
        uri: &str,
        options: &CallOptions,
    ) -> Result<ReadResourceResult, ClientError> {
        into_complete(
            self.read_resource_round(uri, RoundInput::first(), options)
                .await?,
        )
    }

    /// One round of `prompts/get`.
    ///
    /// # Errors
    /// Any [`ClientError`] but the convenience ones.
    pub async fn get_prompt_round(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        round: RoundInput,
        options: &CallOptions,
    ) -> Result<Round<GetPromptResult>, ClientError> {
        let mut params = Map::new();
        params.insert("name".into(), Value::String(name.to_owned()));
        if let Some(arguments) = arguments {
            params.insert("arguments".into(), Value::Object(arguments));
        }
        round.write(&mut params);
        match self.request(Method::PromptsGet, params, options).await? {
            Decoded::Complete(CompleteResult::PromptsGet(r)) => Ok(Round::Complete(r)),
            Decoded::InputRequired(result) => Ok(Round::InputRequired(Box::new(InputRequired {
                method: Method::PromptsGet.name().to_owned(),
                result,
            }))),
            _ => Err(unexpected(Method::PromptsGet)),
        }
    }

    /// `prompts/get` as one step; an input request is returned as an error.
    ///
    /// # Errors
    /// Any [`ClientError`].
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        options: &CallOptions,
    ) -> Result<GetPromptResult, ClientError> {
        into_complete(
            self.get_prompt_round(name, arguments, RoundInput::first(), options)
                .await?,
        )
    }

    /// `completion/complete` with `params` (`ref`, `argument`, optional `context`).
    ///
    /// # Errors
    /// Any [`ClientError`].
    pub async fn complete_argument(
        &self,
        params: Map<String, Value>,
        options: &CallOptions,
    ) -> Result<CompletionResult, ClientError> {
        match self
            .complete(Method::CompletionComplete, params, options)
            .await?
        {
            CompleteResult::CompletionComplete(r) => Ok(r),
            _ => Err(unexpected(Method::CompletionComplete)),
        }
    }
}

/// A call that declares the Tasks extension must be ready for a task answer, which
/// [`ToolOutcome`] cannot hold: such calls go through [`Client::call_tool_task`].
fn refuse_tasks_declaration(options: &CallOptions) -> Result<(), ClientError> {
    if options
        .capabilities
        .as_ref()
        .is_some_and(crate::wire::tasks::declares_tasks)
    {
        return Err(ClientError::Request(
            "this call declares the Tasks extension, so the server may answer with a task: \
             use call_tool_task (or call_tool_task_exact)"
                .to_owned(),
        ));
    }
    Ok(())
}

/// Exact tool arguments must be one JSON object without a repeated member.
pub(crate) fn check_exact_arguments(arguments: &RawValue) -> Result<(), ClientError> {
    if !arguments.get().trim_start().starts_with('{') {
        return Err(ClientError::Request(
            "tool arguments must be a JSON object".to_owned(),
        ));
    }
    crate::client::digest::canonical_json(arguments.get())
        .map_err(|e| ClientError::Request(format!("tool arguments: {e}")))?;
    Ok(())
}

fn into_complete<T>(round: Round<T>) -> Result<T, ClientError> {
    match round {
        Round::Complete(r) => Ok(r),
        Round::InputRequired(i) => Err(ClientError::InputRequired(i)),
    }
}

/// Drops the tools whose input schema breaks the `x-mcp-header` rules, keeping the
/// order of the rest, and logs one warning per dropped tool with the reason.
fn keep_valid_annotations(tools: Vec<Tool>) -> Vec<Tool> {
    tools
        .into_iter()
        .filter(|tool| {
            let verdict = serde_json::to_value(&tool.input_schema)
                .map_err(|e| e.to_string())
                .and_then(|schema| param_headers(&schema).map_err(|v| v.to_string()));
            match verdict {
                Ok(_) => true,
                Err(reason) => {
                    tracing::warn!(tool = %tool.name, %reason, "dropped: invalid x-mcp-header");
                    false
                }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, properties: Value) -> Tool {
        serde_json::from_value(serde_json::json!({
            "name": name,
            "inputSchema": {"type": "object", "properties": properties},
        }))
        .expect("tool")
    }

    #[test]
    fn d23_invalid_annotations_drop_the_tool_and_keep_valid_siblings() {
        let string = |h: &str| serde_json::json!({"type": "string", "x-mcp-header": h});
        let tools = vec![
            tool("plain", serde_json::json!({"q": {"type": "string"}})),
            tool("empty", serde_json::json!({"v": string("")})),
            tool(
                "valid",
                serde_json::json!({"region": string("Region"), "n": {"type": "integer", "x-mcp-header": "N"}}),
            ),
            tool(
                "object",
                serde_json::json!({"d": {"type": "object", "x-mcp-header": "Data"}}),
            ),
            tool(
                "array",
                serde_json::json!({"d": {"type": "array", "x-mcp-header": "Items"}}),
            ),
            tool(
                "null",
                serde_json::json!({"d": {"type": "null", "x-mcp-header": "Nothing"}}),
            ),
            tool(
                "number",
                serde_json::json!({"d": {"type": "number", "x-mcp-header": "Score"}}),
            ),
            tool(
                "duplicate",
                serde_json::json!({"a": string("Region"), "b": string("Region")}),
            ),
            tool(
                "duplicate-case",
                serde_json::json!({"a": string("MyField"), "b": string("myfield")}),
            ),
            tool("space", serde_json::json!({"v": string("My Region")})),
            tool("colon", serde_json::json!({"v": string("Region:Primary")})),
            tool("non-ascii", serde_json::json!({"v": string("R\u{e9}gion")})),
            tool("control", serde_json::json!({"v": string("Region\t1")})),
        ];
        let kept: Vec<String> = keep_valid_annotations(tools)
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert_eq!(kept, ["plain", "valid"]);
    }
}
