//! Test support: a client transport wired to a [`Server`] in the same process.
//!
//! [`InMemoryTransport`] encodes each outgoing message with the client's egress guard,
//! decodes it with the server's ingress limits and hands it to [`Server::serve`] with an
//! [`Outbox`] whose lines come back through the client's ingress decoder: the same bytes and
//! checks as a pipe, without sockets or processes. Cancellation works as on stdio (the
//! server's token is cancelled by `notifications/cancelled`). A notification the server sends
//! while serving a request is delivered as [`Inbound::OnStream`] naming that request, as the
//! HTTP transport does for a request's own response stream, so concurrent calls each get
//! exactly their own log messages.
#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{mpsc, watch};

use crate::client::transport::{BoxFuture, Inbound, Transport, TransportError};
use crate::codec::{decode, encode_line, EgressLimits, IngressLimits};
use crate::core::{Caller, CancelToken};
use crate::machine::subscriptions::Transport as Carrier;
use crate::server::outbox::{Outbox, Reply};
use crate::server::Server;
use crate::wire::jsonrpc::{Message, RequestId};

type InFlight = Arc<Mutex<HashMap<String, CancelToken>>>;

/// One server line for the client, with the request whose handling produced it when it is a
/// notification sent while serving that request (its "stream").
type Line = (Option<RequestId>, String);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A client transport that serves every message with an in-process [`Server`].
///
/// The server → client queue is unbounded: the server itself bounds what one request may
/// produce (egress caps), and tests read everything they provoke.
#[derive(Debug)]
pub struct InMemoryTransport {
    server: Server,
    caller: Caller,
    tx: mpsc::UnboundedSender<Line>,
    rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<Line>>,
    in_flight: InFlight,
    closed: watch::Sender<bool>,
    tasks: Mutex<Vec<tokio::task::AbortHandle>>,
}

impl InMemoryTransport {
    /// A transport serving `server` as `caller`.
    #[must_use]
    pub fn new(server: Server, caller: Caller) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        InMemoryTransport {
            server,
            caller,
            tx,
            rx: tokio::sync::Mutex::new(rx),
            in_flight: Arc::default(),
            closed: watch::channel(false).0,
            tasks: Mutex::new(Vec::new()),
        }
    }

    /// How many requests the server is still working on.
    #[must_use]
    pub fn in_flight(&self) -> usize {
        lock(&self.in_flight).len()
    }

    fn is_closed(&self) -> bool {
        *self.closed.borrow()
    }
}

/// Where the server's lines for one request go.
struct Lines {
    key: String,
    /// The request being served: its notifications arrive on its stream.
    request: RequestId,
    tx: mpsc::UnboundedSender<Line>,
    in_flight: InFlight,
    closed: watch::Receiver<bool>,
}

impl Outbox for Lines {
    fn notify(&self, line: String) -> bool {
        !*self.closed.borrow() && self.tx.send((Some(self.request.clone()), line)).is_ok()
    }

    fn finish(&self, reply: Reply) {
        lock(&self.in_flight).remove(&self.key);
        let _ = self.tx.send((None, reply.line));
    }

    fn transport(&self) -> Carrier {
        Carrier::Stdio
    }
}

impl Transport for InMemoryTransport {
    fn send<'a>(&'a self, message: &'a Message) -> BoxFuture<'a, Result<(), TransportError>> {
        Box::pin(async move {
            if self.is_closed() {
                return Err(TransportError::Closed);
            }
            let line = encode_line(message, &EgressLimits::CLIENT)
                .map_err(|e| TransportError::Refused(e.into()))?;
            let bytes = line.as_bytes();
            let frame = &bytes[..bytes.len() - 1];
            match decode(frame, &self.server.ingress_limits()) {
                Err(rejection) => {
                    if let Some(body) = rejection
                        .encode_reply(&EgressLimits::SERVER)
                        .and_then(|r| r.body)
                    {
                        let _ = self.tx.send((None, body));
                    }
                }
                Ok(Message::Notification(n)) => {
                    if let Some(id) = Server::cancelled_request(&n) {
                        if let Some(token) = lock(&self.in_flight).remove(&id) {
                            token.cancel();
                        }
                    }
                }
                Ok(Message::Response(_)) => {}
                Ok(Message::Request(request)) => {
                    let key = request.id.token().to_owned();
                    let token = CancelToken::new();
                    lock(&self.in_flight).insert(key.clone(), token.clone());
                    let outbox: Arc<dyn Outbox> = Arc::new(Lines {
                        key,
                        request: request.id.clone(),
                        tx: self.tx.clone(),
                        in_flight: Arc::clone(&self.in_flight),
                        closed: self.closed.subscribe(),
                    });
                    let server = self.server.clone();
                    let caller = self.caller.clone();
                    let task = tokio::spawn(async move {
                        server
                            .serve(caller, Message::Request(request), outbox, token)
                            .await;
                    });
                    let mut tasks = lock(&self.tasks);
                    tasks.retain(|t| !t.is_finished());
                    tasks.push(task.abort_handle());
                }
            }
            Ok(())
        })
    }

    fn recv(&self) -> BoxFuture<'_, Result<Inbound, TransportError>> {
        Box::pin(async move {
            let mut closed = self.closed.subscribe();
            let mut rx = self.rx.lock().await;
            tokio::select! {
                biased;
                _ = closed.wait_for(|c| *c) => Err(TransportError::Closed),
                line = rx.recv() => match line {
                    None => Err(TransportError::Closed),
                    Some((stream, line)) => Ok(match (decode(line.as_bytes(), &IngressLimits::CLIENT), stream) {
                        (Ok(message @ Message::Notification(_)), Some(request)) => {
                            Inbound::OnStream { request, message }
                        }
                        (Ok(message), _) => Inbound::Message(message),
                        (Err(rejection), _) => Inbound::Rejected(rejection),
                    }),
                },
            }
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.closed.send_replace(true);
            for token in lock(&self.in_flight).drain().map(|(_, t)| t) {
                token.cancel();
            }
            for task in lock(&self.tasks).drain(..) {
                task.abort();
            }
        })
    }
}
