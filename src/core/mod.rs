//! The transport-free core: registry, typed tools, policy, resources, prompts, sealing.
//!
//! Nothing in this module performs I/O, reads a clock directly (except [`SystemClock`] and
//! [`SystemMonotonic`]) or depends on an async runtime. A server drives it as follows:
//!
//! 1. Build an immutable [`Registry`] with [`RegistryBuilder`] (tools, resources, prompts,
//!    a [`Policy`] and a [`CursorKey`]). Every schema is compiled and every `x-mcp-header`
//!    annotation is checked here; a bad declaration is a [`BuildError`] naming the item.
//! 2. Per request, make an [`Invocation`] (caller, declared client capabilities,
//!    cancellation token, optional progress sink, recovery flag, input responses).
//! 3. Call [`Registry::call_tool`], [`Registry::read_resource`], [`Registry::get_prompt`],
//!    [`Registry::complete`], [`Registry::search_tools`] or one of the `list_*` methods.
//!    Protocol errors come back as [`CoreError`] (with a JSON-RPC code), tool failures as
//!    [`ToolFailure`] inside a [`ToolReply`].
//!
//! | request | core call | result |
//! |---|---|---|
//! | `tools/list` | [`Registry::list_tools`]`(caller, cursor)` | [`Page`]; [`Page::to_result`]`("tools")` is the exact body |
//! | `tools/call` | [`Registry::call_tool`]`(inv, name, raw_args)` | [`ToolReply`]: success, failure, or input required |
//! | compact `search_tools` | [`Registry::search_tools`]`(caller, query, limit)` | [`SearchReply`] `{tools, truncated}` |
//! | compact `get_tool_details` | [`Registry::tool`]`(caller, name)` | [`descriptor::Tool`] |
//! | `resources/list`, `resources/templates/list` | [`Registry::list_resources`], [`Registry::list_resource_templates`] | [`Page`] |
//! | `resources/read` | [`Registry::read_resource`]`(inv, uri)` | [`Outcome`]`<`[`ReadReply`]`>` |
//! | `prompts/list`, `prompts/get` | [`Registry::list_prompts`], [`Registry::get_prompt`]`(inv, name, args)` | [`Page`], [`Outcome`]`<`[`PromptReply`]`>` |
//! | `completion/complete` | [`Registry::complete`]`(caller, ref, argument, value, context)` | [`CompletionReply`] |
//!
//! # What the server adds
//!
//! - Binding [`Outcome::InputRequired`] / [`ToolReply::InputRequired`] to the continuation
//!   ledger (`requestState`), and on a retry passing the answers through
//!   [`Invocation::with_input_responses`] (handlers read them with
//!   [`Invocation::form_answer`] / [`Invocation::url_answer`]) and replays of completed chains
//!   through [`Invocation::with_recovery`].
//! - The publication mode: compact `{"value": …}` / `{"failure": …}` wrapping, or direct
//!   results ([`ToolReply::into_call_result`]); `result_too_large` against the response
//!   budget; capability declaration from [`Registry::has_tools`] and friends.
//! - Progress pacing behind the [`ProgressSink`] it installs (the core already drops invalid
//!   and late reports), and time-outs: the core records per-item overrides
//!   ([`ResourceDef::timeout`], [`TemplateDef::timeout`], [`PromptDef::timeout`], looked up
//!   with [`Registry::read_timeout`] / [`Registry::prompt_timeout`]) and only observes the
//!   [`CancelToken`]; the server owns the timer.
//!
//! # Example: a typed tool in ten lines
//!
//! ```
//! use strict_mcp::core::{Caller, Invocation, RegistryBuilder, ToolDef, ToolReply};
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct AddInput {
//!     /// First addend.
//!     a: i64,
//!     /// Second addend.
//!     b: i64,
//! }
//!
//! #[derive(Serialize, JsonSchema)]
//! struct AddOutput {
//!     /// The sum of both addends.
//!     sum: i64,
//! }
//!
//! let add = ToolDef::typed("add", |_inv: Invocation, i: AddInput| async move {
//!     Ok(AddOutput { sum: i.a + i.b })
//! })
//! .description("Adds two integers.");
//! let registry = RegistryBuilder::new().tool(add).build().unwrap();
//!
//! // What a server does for `tools/call {"name":"add","arguments":{"a":2,"b":40}}`:
//! let args = serde_json::value::RawValue::from_string(r#"{"a":2,"b":40}"#.into()).unwrap();
//! let inv = Invocation::new(Caller::anonymous());
//! let reply = futures_util::FutureExt::now_or_never(
//!     registry.call_tool(inv, "add", Some(&args))).unwrap().unwrap();
//! match reply {
//!     ToolReply::Success { structured, .. } => assert_eq!(structured.unwrap().get(), r#"{"sum":42}"#),
//!     other => panic!("unexpected {other:?}"),
//! }
//! ```

pub mod bus;
mod caller;
pub mod continuation;
mod cursor;
pub mod descriptor;
mod error;
mod invocation;
pub mod lifecycle;
mod policy;
mod prompt;
mod registry;
mod resource;
pub mod schema;
pub mod seal;
mod search;
mod skills;
pub mod store;
pub mod tasks;
mod tool;
mod view;

pub use caller::{
    Caller, CancelToken, Clock, MonotonicClock, SystemClock, SystemMonotonic, WaitUntil,
};
pub use cursor::{CursorKey, ListKind};
pub use error::{
    AppCode, AppCodeError, BuildError, CoreError, Diagnostic, FailureCode, ToolError, ToolFailure,
    ToolResultExt, BUILTIN_FAILURE_CODES, FAILURE_CODE_PATTERN, INTERNAL_MESSAGE, MAX_APP_CODE_LEN,
};
pub use invocation::{
    AnswerError, ClientCapabilities, ElicitAction, ElicitMode, FormAnswer, InputRequest,
    Invocation, LogLevel, LogSink, Outcome, Presentation, ProgressSink, MCP_APP_MIME_TYPE,
    UI_EXTENSION,
};
pub use policy::{Access, AllowAll, Policy};
pub use prompt::{CompletionReply, PromptDef, PromptError, PromptReply};
pub use registry::{
    CompletionRef, Page, Registry, RegistryBuilder, SearchHit, SearchReply, DEFAULT_PAGE_SIZE,
    DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT,
};
pub use resource::{
    timeout_in_range, ReadReply, ResourceDef, ResourceError, TemplateDef, MAX_RESOURCE_SIZE,
    MAX_TIMEOUT, MIN_TIMEOUT,
};
pub use schema::failure_envelope_schema;
pub use skills::{
    SkillError, SkillTree, Skills, MAX_DEPTH, MAX_FILES_PER_SKILL, MAX_SKILLS, MAX_SKILL_BYTES,
    MAX_TREE_ENTRIES,
};
#[cfg(feature = "server")]
pub(crate) use tool::TextCopy;
pub use tool::{DynamicOutput, ToolDef, ToolReply};
pub use view::AppView;
