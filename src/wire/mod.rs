//! Exact wire types: the generated schema types plus the hand-written JSON-RPC glue.
//!
//! The generated types (from the pinned schema, see `build.rs`) are re-exported here so
//! callers name them `wire::CallToolResult` etc.; `generated` stays an implementation
//! detail that only this module and tests look through.

pub mod content;
pub mod errors;
pub mod headers;
pub mod jsonrpc;
pub mod limits;
pub mod listen;
pub mod logging;
pub(crate) mod members;
pub mod meta;
pub mod methods;
pub mod pin;
pub mod progress;
pub(crate) mod raw;
pub mod result;
pub mod skills;
pub(crate) mod string_run;
pub mod tasks;

pub use crate::generated::*;

/// The protocol revision this crate speaks, on both roles.
pub const PROTOCOL_REVISION: &str = "2026-07-28";
