//! # strict-mcp
//!
//! A strict implementation of the Model Context Protocol, revision `2026-07-28` (the stateless
//! revision): a server library, a client library and the `strict-mcp` command. Each accepts
//! exactly what the specification allows and says precisely why it refuses anything else.
//!
//! ## Where to start
//!
//! - **A server:** describe tools, resources and prompts with [`core::ToolDef`],
//!   [`core::ResourceDef`] and [`core::PromptDef`], collect them in a
//!   [`core::RegistryBuilder`], and serve the registry with `server::Server` over stdio
//!   (`Server::run_stdio`) or HTTP (`server::http::McpHttp`, a `tower` service you mount in
//!   your router, or the ready accept loop `server::http::serve`). `examples/notes_server.rs`
//!   is a complete server; README's "Using the library" walks through it.
//! - **A client:** `client::Client` connects over stdio or HTTP, discovers the server and
//!   refuses one that does not speak `2026-07-28`.
//! - **Wire level:** [`codec`] decodes and encodes bounded JSON-RPC frames into the exact
//!   [`wire`] types.
//!
//! ## Features
//!
//! | feature | what it adds |
//! |---|---|
//! | `server` | `server`: publication, per-request rules, dispatch, shutdown |
//! | `stdio`, `http` | the line-framed stdio and Streamable HTTP transports |
//! | `auth` | `server::auth`: OAuth protected-resource layer (JWT, introspection) |
//! | `client`, `https`, `client-auth` | `client`: the client library, TLS, OAuth 2.1 |
//! | `cli` | the `strict-mcp` command (not default) |
//! | `legacy` | the initialise era (2025-06-18, 2025-11-25) beside 2026-07-28 |
//! | `redis`, `redis-tls` | `scale`: a continuation ledger shared by several instances |
//!
//! The default features are the libraries without the command.
//!
//! ## Layers
//!
//! ```text
//!  bytes ──► codec (bounded ingress) ──► wire (exact types) ──► core (registry, policy)
//!                                                │                    │
//!                                          machine (pure state: ledger, epoch, listen, pacer)
//!                                                │
//!  server::{stdio,http} / client::{stdio,http} drive the machines; only they do I/O.
//! ```
//!
//! Layers may only call downwards: `generated` ← `wire` ← `codec` ← `machine` ← `core` ←
//! drivers. `wire`, `codec`, `machine` and `core` build without tokio or hyper.
#![forbid(unsafe_code)]
// Everything public is documented; an undocumented public item is a warning (an error in CI).
#![warn(missing_docs)]

#[cfg(all(unix, feature = "cli"))]
pub mod cli;
#[cfg(feature = "client")]
pub mod client;
pub mod codec;
pub mod core;
pub mod generated;
pub mod machine;
#[cfg(feature = "http")]
pub mod net;
#[cfg(feature = "redis")]
pub mod scale;
#[cfg(feature = "server")]
pub mod server;
#[cfg(all(feature = "server", feature = "client"))]
pub mod testing;
pub mod wire;

/// The README's code compiles (doctest only).
#[cfg(all(doctest, feature = "server", feature = "stdio"))]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
