//! The server adapter: publication, per-request protocol rules, dispatch over the core, and the
//! transport drivers. Protocol rules live here and in the layers below; the drivers
//! (`stdio`, `http`) only move bytes (sans-I/O, see the crate docs).

#[cfg(feature = "http")]
pub mod http;
pub mod outbox;
pub mod status;

pub use outbox::{Outbox, Reply};
pub use status::Cause;
