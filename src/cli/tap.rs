//! The recording transport: sits between the client core and the real transport so the
//! command can print every answer exactly as received (the lossless mode, O96) and send tool
//! arguments byte-exact (O93), which the client's `serde_json::Value` arguments cannot carry
//! for integers beyond 64 bits.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::value::RawValue;
use tokio::sync::Notify;

use crate::client::{BoxFuture, Inbound, Transport, TransportError};
use crate::wire::jsonrpc::{Message, Request, Response};
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

/// A server log message (`notifications/message`) to show on stderr.
pub type LogHook = Arc<dyn Fn(&RawValue) + Send + Sync>;

#[derive(Default)]
struct State {
    methods: HashMap<String, String>,
    records: Vec<Record>,
    dropped: usize,
    cancelled: usize,
}

/// A [`Transport`] that records answers and rewrites `tools/call` arguments to exact bytes.
pub struct Tap {
    inner: Arc<dyn Transport>,
    state: Mutex<State>,
    exact_arguments: Mutex<Option<Box<RawValue>>>,
    log: Option<LogHook>,
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
    /// Wraps `inner`; `log` receives the params of each `notifications/message`.
    pub fn new(inner: Arc<dyn Transport>, log: Option<LogHook>) -> Tap {
        Tap {
            inner,
            state: Mutex::new(State::default()),
            exact_arguments: Mutex::new(None),
            log,
            cancel_sent: Notify::new(),
        }
    }

    /// From now on every `tools/call` carries exactly these argument bytes.
    pub fn set_exact_arguments(&self, arguments: Box<RawValue>) {
        *lock(&self.exact_arguments) = Some(arguments);
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

    fn rewrite(&self, request: &Request) -> Option<Message> {
        if request.method != methods::TOOLS_CALL {
            return None;
        }
        let exact = lock(&self.exact_arguments).clone()?;
        let params = request.params.as_ref()?;
        let mut members: BTreeMap<String, Box<RawValue>> =
            serde_json::from_str(params.get()).ok()?;
        members.insert("arguments".to_owned(), exact);
        let params = serde_json::value::to_raw_value(&members).ok()?;
        Some(Message::Request(Request {
            id: request.id.clone(),
            method: request.method.clone(),
            params: Some(params),
        }))
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
            let rewritten = match message {
                Message::Request(r) => {
                    lock(&self.state)
                        .methods
                        .insert(r.id.token().to_owned(), r.method.clone());
                    self.rewrite(r)
                }
                _ => None,
            };
            let outcome = self.inner.send(rewritten.as_ref().unwrap_or(message)).await;
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
            match &inbound {
                Ok(Inbound::Message(Message::Response(r))) => self.record(r),
                Ok(
                    Inbound::Message(Message::Notification(n))
                    | Inbound::OnStream {
                        message: Message::Notification(n),
                        ..
                    },
                ) if n.method == methods::MESSAGE => {
                    if let (Some(hook), Some(params)) = (&self.log, &n.params) {
                        hook(params);
                    }
                }
                _ => {}
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
