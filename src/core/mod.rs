//! The transport-free core: registry, typed tools, policy, resources, prompts, sealing.
//!
//! Nothing in this module performs I/O, reads a clock directly (except [`SystemClock`]) or
//! depends on an async runtime. A server drives it as follows:
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

mod caller;
mod cursor;
pub mod descriptor;
mod error;
mod invocation;
mod policy;
mod prompt;
mod registry;
mod resource;
pub mod schema;
mod tool;

pub use caller::{Caller, CancelToken, Clock, SystemClock};
pub use cursor::{CursorKey, ListKind};
pub use error::{codes, BuildError, CoreError, Diagnostic, FailureCode, ToolError, ToolFailure};
pub use invocation::{
    AnswerError, ClientCapabilities, ElicitAction, ElicitMode, FormAnswer, InputRequest,
    Invocation, Outcome, ProgressSink,
};
pub use policy::{Access, AllowAll, Policy};
pub use prompt::{CompletionReply, PromptDef, PromptError, PromptReply};
pub use registry::{
    CompletionRef, Page, Registry, RegistryBuilder, SearchHit, SearchReply, DEFAULT_PAGE_SIZE,
    DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT,
};
pub use resource::{ReadReply, ResourceDef, ResourceError, TemplateDef};
pub use tool::{DynamicOutput, ToolDef, ToolReply};
