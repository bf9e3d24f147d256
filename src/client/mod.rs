//! The strict client: pieces a client core drives.
//!
//! - [`digest`]: stable snapshot digests for hosts that cache or compare what a server
//!   published (runtime-free).
#![forbid(unsafe_code)]

pub mod digest;
