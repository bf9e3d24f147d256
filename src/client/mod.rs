//! The strict client: pieces a client core drives.
//!
//! - [`digest`]: stable snapshot digests for hosts that cache or compare what a server
//!   published (runtime-free).
//! - `http`: the Streamable HTTP transport, one POST per message (feature `http`).
//! - [`stdio`]: the child-process transport, line-framed through [`crate::codec`] (Unix).
//! - [`transport`]: the message-level seam every transport implements.
//! - [`Client`] ([`connection`], [`methods`], [`listen`]): discovery, requests with fresh
//!   ids and deadlines, typed outcomes ([`error`]), list walks, MRTR rounds, listen streams.
#![forbid(unsafe_code)]

pub mod connection;
pub mod digest;
pub mod error;
#[cfg(feature = "http")]
pub mod http;
pub mod listen;
pub mod methods;
#[cfg(all(unix, feature = "stdio"))]
pub mod stdio;
pub mod transport;

pub use connection::{
    CallOptions, Client, ClientOptions, Discovery, Progress, ProgressSink, DEFAULT_DEADLINE,
    LISTEN_QUEUE_MESSAGES, MAX_DEADLINE,
};
pub use error::{
    ClientError, ConnectError, InputRequired, InvalidResult, PaginationError, RpcError,
    RpcErrorKind, ToolFailed,
};
pub use listen::{ListenError, ListenStream};
pub use methods::{
    Round, RoundInput, ToolOutcome, MAX_DRIVEN_ROUNDS, MAX_LIST_ITEMS, MAX_LIST_PAGES,
};
pub use transport::{BoxFuture, Inbound, Refusal, Transport, TransportError};
