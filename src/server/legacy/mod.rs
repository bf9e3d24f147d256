//! The initialise era beside 2026-07-28 (feature `legacy`, switched on per server with
//! [`ServerOptions::legacy_era`](super::ServerOptions::legacy_era)).
//!
//! A client that opens with `initialize` and no modern `_meta` (and, on HTTP, no 2026-07-28
//! `MCP-Protocol-Version` header) starts a legacy session of revision 2025-06-18 or 2025-11-25
//! ([`era`]). The session's own methods (`initialize`, `notifications/initialized`, `ping`,
//! `logging/setLevel`) are answered here ([`lifecycle`]); every other request is rewritten into
//! a stateless 2026-07-28 request carrying the session's version, capabilities and log level in
//! `_meta` and served by the same dispatcher, registry and per-caller policy as a modern one.
//! Its reply is rewritten back to the legacy shape ([`translate`]): no `resultType`, no
//! `serverInfo` in `_meta`, -32002 for an unknown resource. A request that carries
//! modern `_meta` stays modern, inside a legacy session too.
//!
//! Without the switch (or without the feature) `initialize` keeps getting -32601 with the
//! supported versions.

pub mod era;
pub mod interact;
pub mod lifecycle;
pub mod notify;
mod outbox;
pub mod sessions;
pub mod translate;

pub use era::{negotiate, starts_legacy_session, LATEST_LEGACY_VERSION, LEGACY_VERSIONS};
pub use interact::{Interaction, Peer};
pub use lifecycle::{Decision, LegacyLink, LegacySession, Route};
pub use sessions::{LegacyHttpConfig, Sessions};
