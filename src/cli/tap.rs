//! The recording transport: sits between the client core and the real transport so the
//! command can print every answer, error objects and list pages included, exactly as
//! received and in arrival order (the lossless mode), and see cancellations reach the
//! wire. It changes nothing it passes on: exact arguments, single pages and log
//! messages come from the client API (`Client::call_tool_exact`, `Client::list_page`,
//! `CallOptions::on_log`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::value::RawValue;
use tokio::sync::Notify;

use crate::client::{BoxFuture, Inbound, Transport, TransportError};
use crate::wire::jsonrpc::{Message, Response};
use crate::wire::methods;

/// Answers kept for printing before the command drains them.
///
/// Threat: a long run (a paginating server, many MRTR rounds) growing memory without bound;
/// the client already stops list walks at 100 pages, so 1024 answers is never reached by a
/// walk, and a record past it is counted as dropped instead of kept.
pub const MAX_RECORDS: usize = 1024;

/// One answer to one of our requests, in arrival order.
#[derive(Debug, Clone)]
pub struct Record {
    /// The request's method.
    pub method: String,
    /// The request's id, as its JSON text.
    pub id: String,
    /// The result object (`Ok`) or the error object (`Err`), exactly as received.
    pub body: Result<Box<RawValue>, Box<RawValue>>,
}

#[derive(Default)]
struct State {
    methods: HashMap<String, String>,
    records: Vec<Record>,
    dropped: usize,
    cancelled: usize,
}

/// A [`Transport`] that records answers as they pass.
pub struct Tap {
    inner: Arc<dyn Transport>,
    state: Mutex<State>,
    cancel_sent: Notify,
}

impl std::fmt::Debug for Tap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tap").finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Tap {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn Transport>) -> Tap {
        Tap {
            inner,
            state: Mutex::new(State::default()),
            cancel_sent: Notify::new(),
        }
    }

    /// The answers received since the last drain, in order, and how many were dropped.
    pub fn drain(&self) -> (Vec<Record>, usize) {
        let mut state = lock(&self.state);
        let dropped = std::mem::take(&mut state.dropped);
        (std::mem::take(&mut state.records), dropped)
    }

    /// How many `notifications/cancelled` reached the wire.
    pub fn cancellations(&self) -> usize {
        lock(&self.state).cancelled
    }

    /// Resolves once a cancellation has been sent (or at once if one already was).
    pub async fn cancel_sent(&self) {
        let notified = self.cancel_sent.notified();
        if self.cancellations() > 0 {
            return;
        }
        notified.await;
    }

    fn record(&self, response: &Response) {
        let Some(id) = response.id() else {
            return;
        };
        let token = id.token().to_owned();
        let body = match response {
            Response::Success(s) => Ok(s.result.clone()),
            Response::Error(e) => match serde_json::value::to_raw_value(&e.error) {
                Ok(raw) => Err(raw),
                Err(_) => return,
            },
        };
        let mut state = lock(&self.state);
        let Some(method) = state.methods.remove(&token) else {
            return;
        };
        if state.records.len() >= MAX_RECORDS {
            state.dropped += 1;
            return;
        }
        state.records.push(Record {
            method,
            id: token,
            body,
        });
    }
}

impl Transport for Tap {
    fn send<'a>(&'a self, message: &'a Message) -> BoxFuture<'a, Result<(), TransportError>> {
        Box::pin(async move {
            if let Message::Request(r) = message {
                lock(&self.state)
                    .methods
                    .insert(r.id.token().to_owned(), r.method.clone());
            }
            let outcome = self.inner.send(message).await;
            if let Message::Notification(n) = message {
                if n.method == methods::CANCELLED && outcome.is_ok() {
                    lock(&self.state).cancelled += 1;
                    self.cancel_sent.notify_waiters();
                }
            }
            outcome
        })
    }

    fn recv(&self) -> BoxFuture<'_, Result<Inbound, TransportError>> {
        Box::pin(async move {
            let inbound = self.inner.recv().await;
            if let Ok(Inbound::Message(Message::Response(r))) = &inbound {
                self.record(r);
            }
            inbound
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        self.inner.close()
    }

    fn announces_cancellation(&self) -> bool {
        self.inner.announces_cancellation()
    }
}
