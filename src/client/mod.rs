//! The strict client: pieces a client core drives.
//!
//! - `auth`: OAuth 2.1 for the HTTP transport (feature `client-auth`).
//! - [`diagnostics`]: what was read leniently and strict mode.
//! - [`extensions`]: typed codecs for extension payloads; unknown ones stay raw and inert.
//! - [`digest`]: stable snapshot digests for hosts that cache or compare what a server
//!   published (runtime-free).
//! - `http`: the Streamable HTTP transport, one POST per message (feature `http`).
//! - [`stdio`]: the child-process transport, line-framed through [`crate::codec`] (Unix).
//! - [`tasks`]: the Tasks extension: task calls, polls with backoff, explicit updates, cancel.
//! - [`transport`]: the message-level seam every transport implements.
//! - [`Client`] ([`connection`], [`methods`], [`listen`]): discovery, requests with fresh
//!   ids and deadlines, typed outcomes ([`error`]), list walks, MRTR rounds, listen streams.
#![forbid(unsafe_code)]

#[cfg(feature = "client-auth")]
pub mod auth;
pub mod connection;
pub mod diagnostics;
pub mod digest;
pub mod error;
pub mod extensions;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "http")]
mod http_error;
pub mod listen;
pub mod methods;
pub mod skills;
#[cfg(all(unix, feature = "stdio"))]
pub mod stdio;
pub mod tasks;
pub mod transport;

pub use connection::{
    CallOptions, Client, ClientOptions, Discovery, LogMessage, LogMessageSink, Progress,
    ProgressSink, DEFAULT_DEADLINE, LISTEN_QUEUE_MESSAGES, MAX_DEADLINE, MAX_LOG_MESSAGES_PER_CALL,
    MAX_VERSION_RETRIES,
};
pub use diagnostics::{Leniency, MAX_DIAGNOSTICS};
pub use error::{
    ClientError, ConnectError, InputRequired, InvalidResult, PaginationError, RpcError,
    RpcErrorKind, ToolFailed,
};
pub use extensions::{Declarations, ExtensionCodec, ExtensionError, ExtensionRegistry, SerdeCodec};
pub use listen::{ListenError, ListenStream};
pub use methods::{
    check_answers, ListPage, Round, RoundInput, ToolOutcome, MAX_DRIVEN_ROUNDS, MAX_LIST_ITEMS,
    MAX_LIST_PAGES,
};
pub use tasks::{
    TaskCall, TaskError, TrackedTask, INITIAL_POLL_INTERVAL, MAX_ANSWERED_KEYS, MAX_POLL_INTERVAL,
    MAX_TASK_WAIT, MIN_POLL_INTERVAL, TTL_GRACE,
};
pub use transport::{BoxFuture, Inbound, Refusal, Transport, TransportError};
