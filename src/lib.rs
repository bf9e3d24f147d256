//! # strict-mcp
//!
//! A strict, verified implementation of the Model Context Protocol, revision
//! `2026-07-28` (the stateless revision): server library, client library and CLI.
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
