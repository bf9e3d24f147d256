//! Bounded ingress and guarded egress: every byte a peer sends passes through here first.
//!
//! Sans-I/O and runtime-free: drivers feed bytes into [`LineFramer`] (stdio) or hand a whole
//! body to [`decode`] (HTTP), and write only what [`encode`] / [`encode_line`] produced.
//! Bounds come from [`crate::wire::limits`], bundled per direction in [`IngressLimits`] and
//! [`EgressLimits`]. Errors map to JSON-RPC codes here; HTTP statuses are the server's business.
//!
//! ```
//! use strict_mcp::codec::{decode, IngressLimits};
//! use strict_mcp::wire::jsonrpc::Message;
//!
//! let line = br#"{"jsonrpc":"2.0","id":18446744073709551617,"method":"tools/call","params":{"n":1.50}}"#;
//! let Ok(Message::Request(req)) = decode(line, &IngressLimits::SERVER) else { panic!() };
//! assert_eq!(req.id.token(), "18446744073709551617");
//! assert_eq!(req.params.as_deref().map(|p| p.get()), Some(r#"{"n":1.50}"#));
//! ```

pub mod egress;
pub mod error;
pub mod ingress;
mod scan;
pub mod stdio;

pub use egress::{
    check_identity, encode, encode_line, preflight_result, EgressLimits, EncodedLine, LineWriter,
};
pub use error::{EgressBound, EgressError, IngressError, Rejection, ReplyTo};
pub use ingress::{decode, IngressLimits, Role};
pub use stdio::{LineEvent, LineFramer};
