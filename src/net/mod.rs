//! Outbound HTTP below both roles: the SSRF-safe dial policy ([`dial`]), its errors
//! ([`error`]), the rustls setup ([`tls`], feature `https`) and one bounded fetcher
//! ([`fetch::SafeFetcher`]) that the client's OAuth metadata and token requests and the
//! server's JWKS and introspection requests go through.
//!
//! It names neither role: the client's HTTP transport and both roles' OAuth code build on it,
//! never the other way round (`tests/layering.rs`).
#![forbid(unsafe_code)]

use std::future::Future;
use std::pin::Pin;

pub mod dial;
pub mod error;
pub mod fetch;
#[cfg(feature = "https")]
pub mod tls;

/// A boxed, sendable future: what the object-safe traits of this module return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
