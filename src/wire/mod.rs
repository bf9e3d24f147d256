//! Exact wire types: the generated schema types plus the hand-written JSON-RPC glue.

pub mod jsonrpc;
pub mod limits;
pub mod pin;

pub use crate::generated::*;
