//! A deterministic in-memory harness for the protocol server: requests go straight to
//! [`Server::serve`] through a collecting outbox (no transport, no sockets), and time is a
//! [`ManualClock`] the test moves by hand, injected as both the server's wall clock and its
//! monotonic clock, so expiry and deadlines are tested without sleeping.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use strict_mcp::core::{Caller, Clock, MonotonicClock, WaitUntil};
use strict_mcp::server::{Outbox, Reply, Server, ServerOptions};

/// `_meta` every request of this revision carries.
pub const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

/// Virtual time in milliseconds, moved only by [`ManualClock::advance`]; the server's timers
/// wait on it ([`MonotonicClock::wait_until`]), so a deadline passes when a test moves it.
#[derive(Debug, Default)]
pub struct ManualClock {
    now: AtomicU64,
    moved: tokio::sync::Notify,
}

impl ManualClock {
    /// A clock standing at `ms`.
    pub fn at(ms: u64) -> Arc<ManualClock> {
        Arc::new(ManualClock {
            now: AtomicU64::new(ms),
            moved: tokio::sync::Notify::new(),
        })
    }

    /// Moves time forward by `ms`, waking every wait it reached.
    pub fn advance(&self, ms: u64) {
        self.now.fetch_add(ms, Ordering::SeqCst);
        self.moved.notify_waiters();
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }
}

impl MonotonicClock for ManualClock {
    fn elapsed_ms(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }

    fn wait_until(&self, at_ms: u64) -> Option<WaitUntil<'_>> {
        Some(Box::pin(async move {
            loop {
                // Registered before the check, so an advance in between is not missed.
                let moved = self.moved.notified();
                if self.now.load(Ordering::SeqCst) >= at_ms {
                    return;
                }
                moved.await;
            }
        }))
    }
}

/// `options` with `clock` as both the wall and the monotonic clock.
pub fn with_clock(options: ServerOptions, clock: &Arc<ManualClock>) -> ServerOptions {
    options
        .clock(Arc::clone(clock) as Arc<dyn Clock>)
        .monotonic_clock(Arc::clone(clock) as Arc<dyn MonotonicClock>)
}

/// Everything one request produced, in order.
#[derive(Debug, Default)]
pub struct Collect {
    /// Notification lines.
    pub notifications: Mutex<Vec<String>>,
    /// Final replies (exactly one for an answered request).
    pub replies: Mutex<Vec<Reply>>,
}

impl Outbox for Collect {
    fn notify(&self, line: String) -> bool {
        self.notifications.lock().unwrap().push(line);
        true
    }
    fn finish(&self, reply: Reply) {
        self.replies.lock().unwrap().push(reply);
    }
}

/// One server driven in memory, with fresh request ids.
pub struct InMemory {
    /// The server under test.
    pub server: Server,
    next_id: AtomicUsize,
}

impl InMemory {
    /// Drives `server`.
    pub fn new(server: Server) -> InMemory {
        InMemory {
            server,
            next_id: AtomicUsize::new(1),
        }
    }

    /// One request from `caller` (`_meta` added when `params` has none); its one reply as
    /// JSON (checked to answer this request's id) and its HTTP status.
    pub async fn request(&self, caller: &str, method: &str, mut params: Value) -> (Value, u16) {
        if params.get("_meta").is_none() {
            params["_meta"] = serde_json::from_str(META).unwrap();
        }
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let (value, reply) = serve_one(&self.server, caller, id, method, params).await;
        (value, reply.status)
    }
}

/// One request (`id`, `method`, `params` as given) from `caller`, straight into
/// [`Server::serve`] through a [`Collect`] outbox: its one reply parsed (checked to answer
/// `id`), and as sent.
pub async fn serve_one(
    server: &Server,
    caller: &str,
    id: usize,
    method: &str,
    params: Value,
) -> (Value, Reply) {
    let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let message = strict_mcp::codec::decode(line.to_string().as_bytes(), &server.ingress_limits())
        .expect("a valid request");
    let outbox = Arc::new(Collect::default());
    server
        .serve(
            Caller::new(caller),
            message,
            outbox.clone(),
            Default::default(),
        )
        .await;
    let mut replies = outbox.replies.lock().unwrap();
    assert_eq!(replies.len(), 1, "exactly one reply");
    let reply = replies.pop().expect("one reply");
    let value: Value = serde_json::from_str(&reply.line).expect("JSON reply");
    assert_eq!(value["id"], json!(id), "{value}");
    (value, reply)
}

/// The input of the confirm-before-delete tool the MRTR and scale tests register.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct DeleteIn {
    /// What to delete.
    pub item: String,
}

/// Its output.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct DeleteOut {
    /// What was deleted.
    pub deleted: String,
}

/// The form its confirmation asks for: `{ok: boolean}`.
pub fn confirm_schema() -> Value {
    json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]})
}
