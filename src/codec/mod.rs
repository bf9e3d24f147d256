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
//!
//! A stdio server loop, as a driver writes it (reading and writing are the driver's business):
//!
//! ```
//! use strict_mcp::codec::{decode, encode_line, EgressLimits, IngressLimits, LineEvent, LineFramer, Rejection};
//! use strict_mcp::wire::jsonrpc::{Message, Response};
//!
//! let limits = IngressLimits::SERVER;
//! let mut framer = LineFramer::new(limits.max_frame_bytes);
//! let mut out = Vec::new();
//! let mut input: &[u8] = b"[1]\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\"}\n";
//! while !input.is_empty() {
//!     let (used, event) = framer.feed(input);
//!     input = &input[used..];
//!     let rejection = match event {
//!         Some(LineEvent::Line(line)) => match decode(&line, &limits) {
//!             Ok(_message) => continue, // hand to core
//!             Err(rejection) => rejection,
//!         },
//!         Some(LineEvent::Oversized) => Rejection::oversized_line(limits.max_frame_bytes),
//!         None => continue,
//!     };
//!     if let Some(reply) = rejection.to_response() {
//!         let line = encode_line(&Message::Response(Response::Error(reply)), &EgressLimits::SERVER)
//!             .expect("error replies are small");
//!         out.extend_from_slice(line.as_bytes()); // write_all, never a partial line
//!     }
//! }
//! assert_eq!(
//!     out,
//!     b"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"batches are not supported\"}}\n"
//! );
//! ```

pub mod egress;
pub mod error;
pub(crate) mod escape;
pub mod ingress;
mod scan;
pub mod stdio;

pub use egress::{
    check_identity, encode, encode_error, encode_line, preflight_result, EgressLimits, EncodedLine,
    ErrorReply, LineWriter,
};
pub use error::{EgressBound, EgressError, IngressError, Rejection, ReplyTo};
pub use ingress::{decode, IngressLimits, Role};
pub use stdio::{LineEvent, LineFramer};
