//! The message-level seam between the client core and a transport.
//!
//! A transport carries whole JSON-RPC messages: the core hands it one request or notification
//! at a time and reads decoded messages back. Framing, size bounds and process handling stay
//! in the transport ([`crate::client::stdio`] for a child process,
//! `crate::testing::InMemoryTransport` for a server in the same process); matching replies
//! to requests, deadlines and outcomes are the core's ([`crate::client::Client`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::codec::{EgressError, Rejection};
use crate::wire::jsonrpc::{Message, RequestId};

/// A boxed future, so transports can be used behind `dyn Transport`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One inbound frame as the transport decoded it.
#[derive(Debug)]
pub enum Inbound {
    /// A well-formed response or notification.
    Message(Message),
    /// A notification that arrived on the response stream of the request `request` (an HTTP
    /// request-scoped SSE stream, or the in-memory transport's server serving `request`): it
    /// belongs to that request, whatever else is in flight. Over stdio nothing names the
    /// request a log message belongs to, so stdio never produces this.
    OnStream {
        /// The request whose stream carried it.
        request: RequestId,
        /// The notification.
        message: Message,
    },
    /// A frame the codec refused (invalid JSON, duplicate keys, over a bound). The client
    /// never answers it; when the refusal names a pending request's id, that request
    /// fails closed with an invalid result.
    Rejected(Rejection),
}

impl Inbound {
    /// The message, wherever it arrived; `None` for a refused frame.
    #[must_use]
    pub fn message(&self) -> Option<&Message> {
        match self {
            Inbound::Message(m) | Inbound::OnStream { message: m, .. } => Some(m),
            Inbound::Rejected(_) => None,
        }
    }
}

/// Where a transport that reads in a task of its own hands each inbound frame
/// ([`Transport::attach`]): frames in arrival order, and last the fatal error that ended the
/// transport, after which it is never called again.
pub type InboundSink = Box<dyn FnMut(Result<Inbound, TransportError>) + Send>;

/// Why one message was refused while the transport stays usable: the typed cause, so a caller
/// matches it (say `Refusal::Http(HttpError::Status { status: 401 })`) instead of parsing text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// The message could not be encoded within the client's egress bounds.
    #[error(transparent)]
    Encode(#[from] EgressError),
    /// The stdio transport refused the line.
    #[cfg(all(unix, feature = "stdio"))]
    #[error(transparent)]
    Line(#[from] crate::client::stdio::LineError),
    /// The HTTP transport could not carry the message or read its answer.
    #[cfg(feature = "http")]
    #[error(transparent)]
    Http(#[from] crate::client::http_error::HttpError),
}

/// Why a transport could not carry a message.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// This one message was refused before any byte was sent; the transport still works.
    #[error("message refused by the transport: {0}")]
    Refused(Refusal),
    /// The transport is finished; `cause` says why (the child exited, a pipe broke, ...).
    #[error("the transport failed: {cause}")]
    Failed {
        /// The transport's own error, for callers that want to inspect it.
        cause: Arc<dyn std::error::Error + Send + Sync>,
    },
    /// The transport was closed on purpose.
    #[error("the transport is closed")]
    Closed,
}

impl TransportError {
    /// Whether the transport can carry no further message.
    #[must_use]
    pub fn is_fatal(&self) -> bool {
        !matches!(self, TransportError::Refused(_))
    }

    /// The typed refusal, when this message alone was refused.
    #[must_use]
    pub fn refusal(&self) -> Option<&Refusal> {
        match self {
            TransportError::Refused(r) => Some(r),
            _ => None,
        }
    }

    /// A fatal error wrapping `cause`.
    pub fn failed(cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        TransportError::Failed {
            cause: Arc::new(cause),
        }
    }
}

/// What the client core drives. Implementations must allow `send` and `recv` to run
/// concurrently (one task reads while callers send).
pub trait Transport: Send + Sync + 'static {
    /// Sends one request or notification. `Ok` means the message reached the wire (the pipe,
    /// the in-process server): only then does cancelling it send `notifications/cancelled`.
    fn send<'a>(&'a self, message: &'a Message) -> BoxFuture<'a, Result<(), TransportError>>;

    /// Sends a request and, when the transport reads its answer in this same task (an HTTP
    /// JSON body), returns that answer instead of queueing it for [`Transport::recv`], so the
    /// core routes it at once without a hand-off to its reader task. The default sends and
    /// returns `None` (the answer arrives through `recv`).
    fn send_request<'a>(
        &'a self,
        message: &'a Message,
    ) -> BoxFuture<'a, Result<Option<Inbound>, TransportError>> {
        Box::pin(async move { self.send(message).await.map(|()| None) })
    }

    /// The next inbound frame; after a fatal error every later call returns a fatal error.
    fn recv(&self) -> BoxFuture<'_, Result<Inbound, TransportError>>;

    /// Asks the transport to hand every inbound frame to `sink` from the task that reads it
    /// (the stdio transport's stdout reader), so the core routes a reply to its waiting caller
    /// there, without a queue and a reader task of its own in between. `true`: from now on
    /// frames go only to `sink` (and [`Transport::recv`] is not used). `false` (the default,
    /// and whenever `recv` was already used): the core reads with `recv` instead.
    fn attach(&self, sink: InboundSink) -> bool {
        drop(sink);
        false
    }

    /// Ends the transport; pending `recv` calls return [`TransportError::Closed`] or the
    /// error that ended it.
    fn close(&self) -> BoxFuture<'_, ()>;

    /// Whether cancelling a request that reached the wire is announced with
    /// `notifications/cancelled`. Every transport here says yes: stdio and in-process send it;
    /// the HTTP transport takes that notice and closes the request's response stream instead
    /// of posting it.
    fn announces_cancellation(&self) -> bool {
        true
    }
}

#[cfg(all(unix, feature = "stdio"))]
impl Transport for crate::client::stdio::StdioTransport {
    fn send<'a>(&'a self, message: &'a Message) -> BoxFuture<'a, Result<(), TransportError>> {
        Box::pin(async move {
            self.send_message(message).await.map_err(|e| {
                use crate::client::stdio::TransportError as StdioError;
                match e {
                    StdioError::Line(line) => TransportError::Refused(Refusal::Line(line)),
                    e => TransportError::failed(e),
                }
            })
        })
    }

    fn recv(&self) -> BoxFuture<'_, Result<Inbound, TransportError>> {
        Box::pin(async move { stdio_inbound(self.recv().await) })
    }

    /// Replies are routed from the stdout reader itself (no queue, no reader task).
    fn attach(&self, mut sink: InboundSink) -> bool {
        self.attach_sink(Box::new(move |frame| sink(stdio_inbound(frame))))
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let _report = crate::client::stdio::StdioTransport::close(self).await;
        })
    }
}

/// A stdio frame or error as the core sees it.
#[cfg(all(unix, feature = "stdio"))]
fn stdio_inbound(
    frame: Result<crate::client::stdio::Incoming, crate::client::stdio::TransportError>,
) -> Result<Inbound, TransportError> {
    use crate::client::stdio::{Incoming, TransportError as StdioError};
    match frame {
        Ok(Incoming::Message(m)) => Ok(Inbound::Message(m)),
        Ok(Incoming::Rejected(r)) => Ok(Inbound::Rejected(r)),
        Err(StdioError::Closed) => Err(TransportError::Closed),
        Err(e) => Err(TransportError::failed(e)),
    }
}
