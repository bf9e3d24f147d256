//! The seam between the protocol server and a transport driver.
//!
//! A driver (stdio, HTTP) decodes a frame with the codec, then hands the message to the server
//! together with an [`Outbox`]. Everything one inbound request produces leaves through that
//! outbox, in order: zero or more notifications tied to the request (progress, log messages,
//! listen-stream notifications), then exactly one final reply. The server never writes to a
//! socket or a pipe itself, so the same dispatch serves every transport.

/// One final message: a JSON-RPC response (result or error), already encoded as one compact
/// line and checked by the egress guard, plus the HTTP status its cause maps to
/// ([`crate::wire::errors::Cause::http_status`]; 200 for results). stdio ignores `status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The encoded JSON-RPC response, without a trailing newline.
    pub line: String,
    /// The HTTP status to answer with on Streamable HTTP.
    pub status: u16,
}

/// Where the server delivers what one inbound request produces.
///
/// Implementations must be cheap to call from any task. `notify` reports whether the peer can
/// still receive: `false` means the response stream is gone (HTTP client closed it, stdout
/// closed), which the server treats as cancellation of that request.
///
/// Two exceptions to "notifications, then one reply": a request the client cancelled gets no
/// reply at all (`finish` is never called), and a `subscriptions/listen` stream ended by
/// the server on stdio gets its closing result and then one `notifications/cancelled` line
/// (S2) through `notify`.
pub trait Outbox: Send + Sync {
    /// A notification belonging to this request, encoded as one compact line.
    fn notify(&self, line: String) -> bool;
    /// The final reply; called at most once per request, never for notifications.
    fn finish(&self, reply: Reply);
    /// Which transport carries this outbox; it decides how a listen stream ends (S2).
    fn transport(&self) -> crate::machine::subscriptions::Transport {
        crate::machine::subscriptions::Transport::Http
    }
    /// Every refusal is decided: the request passed admission (header check, method,
    /// `_meta`) and its handler is about to run. The HTTP host upgrades a silent request to
    /// SSE (`stream_after`) only after this, so a refusal always leaves with its own status,
    /// never inside a 200 stream. Wrapping outboxes forward it; the default ignores it.
    fn admitted(&self) {}
}
