//! The strict client: pieces a client core drives.
//!
//! - [`digest`]: stable snapshot digests for hosts that cache or compare what a server
//!   published (runtime-free).
//! - [`stdio`]: the child-process transport, line-framed through [`crate::codec`] (Unix).
#![forbid(unsafe_code)]

pub mod digest;
#[cfg(all(unix, feature = "stdio"))]
pub mod stdio;
