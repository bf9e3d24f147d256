//! The continuation store's own failures (unavailable, timed out) are typed and retryable, and
//! never read as acceptance of the state: compact `call_tool` answers the failure
//! `state_unavailable` with `retryable: true`; direct `tools/call`, `resources/read` and
//! `prompts/get` answer -32603 with `data: {"reason": "state_unavailable", "retryable": true}`.
//! The state survives the outage: once the store answers again, the same retry completes.
//!
//! A switchable store in front of `MemoryLedgerStore` drives every path without Redis; the
//! Redis tests stop a real redis-server mid-chain and pause one past the operation time-out.

#![forbid(unsafe_code)]

mod scale_support;
mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use strict_mcp::core::descriptor::{ContentBlock, PromptMessage, ResourceContents, Role};
use strict_mcp::core::seal::{KeyRing, SealKey};
use strict_mcp::core::store::{LedgerStore, MemoryLedgerStore, StoreError, StoreFuture};
use strict_mcp::core::{
    ElicitAction, FailureCode, Invocation, Outcome, PromptDef, PromptReply, ReadReply, Registry,
    RegistryBuilder, ResourceDef, ToolDef,
};
use strict_mcp::machine::ledger::{Chain, ChainId};
use strict_mcp::machine::{Epoch, Tick};
use strict_mcp::scale::{RedisLedgerStore, RedisStoreConfig};
use strict_mcp::server::{Server, ServerOptions};
use support::harness::{confirm_schema, serve_one, DeleteIn, DeleteOut};

/// The exact `error` member of a store outage on a direct method, as sent.
const OUTAGE_ERROR: &str = r#"{"code":-32603,"message":"The request state could not be checked right now; retry the call.","data":{"reason":"state_unavailable","retryable":true}}"#;

/// The HTTP status of that error (the internal-error row of the cause table).
const OUTAGE_STATUS: u16 = 500;

/// The exact failure envelope of a store outage inside compact `call_tool`.
const OUTAGE_FAILURE: &str = r#"{"failure":{"code":"state_unavailable","message":"The request state could not be checked right now; retry the call.","retryable":true}}"#;

/// Operation time-out of the Redis store in the pause test.
const PAUSE_OP_TIMEOUT: Duration = Duration::from_millis(300);

#[derive(Default)]
struct Probes {
    deleted: AtomicUsize,
    prompted: AtomicUsize,
}

fn accepted(inv: &Invocation) -> Option<bool> {
    let answer = inv.form_answer("confirm", &confirm_schema()).ok()??;
    Some(answer.action == ElicitAction::Accept)
}

fn registry(probes: &Arc<Probes>) -> Registry {
    let (p1, p2) = (Arc::clone(probes), Arc::clone(probes));
    RegistryBuilder::new()
        .tool(ToolDef::typed_interactive(
            "delete",
            move |inv: Invocation, input: DeleteIn| {
                let probes = Arc::clone(&p1);
                async move {
                    match accepted(&inv) {
                        None => Ok(Outcome::input(
                            "confirm",
                            inv.elicit_form("Really delete?", confirm_schema())?,
                        )),
                        Some(_) => {
                            probes.deleted.fetch_add(1, Ordering::SeqCst);
                            Ok(Outcome::Complete(DeleteOut {
                                deleted: input.item,
                            }))
                        }
                    }
                }
            },
        ))
        .resource(ResourceDef::new(
            "mem://answers",
            "answers",
            |_inv: Invocation, uri: String| async move {
                Ok(ReadReply::new(vec![ResourceContents::text(uri, "read")]))
            },
        ))
        .prompt(PromptDef::new("confirm", move |inv: Invocation, _args| {
            let probes = Arc::clone(&p2);
            async move {
                match accepted(&inv) {
                    None => Ok(Outcome::input(
                        "confirm",
                        inv.elicit_form("Go ahead?", confirm_schema())?,
                    )),
                    Some(_) => {
                        probes.prompted.fetch_add(1, Ordering::SeqCst);
                        Ok(Outcome::Complete(PromptReply {
                            description: None,
                            messages: vec![PromptMessage::new(
                                Role::User,
                                ContentBlock::text("confirmed"),
                            )],
                        }))
                    }
                }
            }
        }))
        .build()
        .expect("registry builds")
}

/// A memory store that fails every operation with a chosen error while switched on.
#[derive(Default)]
struct Switchable {
    inner: MemoryLedgerStore,
    failing: Mutex<Option<StoreError>>,
    /// When set: swaps still allowed before every further swap fails as unavailable.
    swaps_left: Mutex<Option<usize>>,
}

impl Switchable {
    /// Lets `n` more swaps through, then fails the rest (loads keep working).
    fn fail_swaps_after(&self, n: Option<usize>) {
        *self.swaps_left.lock().unwrap() = n;
    }

    fn swap_allowed(&self) -> bool {
        match &mut *self.swaps_left.lock().unwrap() {
            None => true,
            Some(0) => false,
            Some(n) => {
                *n -= 1;
                true
            }
        }
    }

    fn fail_with(&self, e: Option<StoreError>) {
        *self.failing.lock().unwrap() = e;
    }

    fn failure(&self) -> Option<StoreError> {
        self.failing.lock().unwrap().clone()
    }
}

impl LedgerStore for Switchable {
    fn load(&self, id: ChainId) -> StoreFuture<'_, Result<Option<Chain>, StoreError>> {
        match self.failure() {
            Some(e) => Box::pin(async move { Err(e) }),
            None => self.inner.load(id),
        }
    }

    fn compare_and_swap(
        &self,
        now: Tick,
        expected: Option<Chain>,
        new: Chain,
    ) -> StoreFuture<'_, Result<(), StoreError>> {
        if !self.swap_allowed() {
            return Box::pin(async { Err(StoreError::Unavailable("refused".into())) });
        }
        match self.failure() {
            Some(e) => Box::pin(async move { Err(e) }),
            None => self.inner.compare_and_swap(now, expected, new),
        }
    }

    fn bump_epoch(&self, now: Tick, epoch: Epoch) -> StoreFuture<'_, Result<(), StoreError>> {
        self.inner.bump_epoch(now, epoch)
    }

    fn sweep(&self, now: Tick) -> StoreFuture<'_, Result<usize, StoreError>> {
        self.inner.sweep(now)
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Direct,
    Compact,
}

struct Harness {
    server: Server,
    probes: Arc<Probes>,
    mode: Mode,
    next_id: AtomicUsize,
    /// The last reply as sent and its HTTP status.
    last: Mutex<(String, u16)>,
}

impl Harness {
    fn new(mode: Mode, store: Arc<dyn LedgerStore>) -> Harness {
        let probes = Arc::new(Probes::default());
        let options = ServerOptions::new()
            .key_ring(KeyRing::new(SealKey::new(1, [9; 32])))
            .ledger_store(store)
            .mode(match mode {
                Mode::Direct => "direct",
                Mode::Compact => "compact",
            });
        Harness {
            server: Server::new(registry(&probes), options).expect("server builds"),
            probes,
            mode,
            next_id: AtomicUsize::new(1),
            last: Mutex::new((String::new(), 0)),
        }
    }

    /// One request; the reply line parsed, after checking its id.
    async fn request(&self, method: &str, params: Value) -> Value {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let (value, reply) = serve_one(&self.server, "alice", id, method, params).await;
        *self.last.lock().unwrap() = (reply.line, reply.status);
        value
    }

    fn delete_params(&self, extra: Value) -> Value {
        let mut p = match self.mode {
            Mode::Direct => json!({"name": "delete", "arguments": {"item": "a"}}),
            Mode::Compact => json!({"name": "call_tool",
                                    "arguments": {"name": "delete", "arguments": {"item": "a"}}}),
        };
        p["_meta"] = meta();
        merge(&mut p, extra);
        p
    }

    async fn delete(&self, extra: Value) -> Value {
        self.request("tools/call", self.delete_params(extra)).await
    }

    async fn prompt(&self, extra: Value) -> Value {
        let mut p = json!({"name": "confirm", "arguments": {}, "_meta": meta()});
        merge(&mut p, extra);
        self.request("prompts/get", p).await
    }

    /// Asserts the reply is the store-outage answer of this mode for `tools/call`.
    fn assert_tool_outage(&self, reply: &Value) {
        match self.mode {
            Mode::Direct => self.assert_outage_error(reply),
            Mode::Compact => {
                assert!(reply.get("error").is_none(), "{reply}");
                assert_eq!(self.last.lock().unwrap().1, 200, "{reply}");
                assert_eq!(reply["result"]["isError"], json!(true), "{reply}");
                assert_eq!(
                    reply["result"]["structuredContent"].to_string(),
                    OUTAGE_FAILURE,
                    "{reply}"
                );
                assert_eq!(
                    reply["result"]["content"],
                    json!([{"type": "text", "text": OUTAGE_FAILURE}]),
                    "{reply}"
                );
            }
        }
    }

    /// Asserts the last reply is, byte for byte, the outage error of the reply's id.
    fn assert_outage_error(&self, reply: &Value) {
        let (line, status) = self.last.lock().unwrap().clone();
        let expected = format!(
            r#"{{"jsonrpc":"2.0","id":{},"error":{OUTAGE_ERROR}}}"#,
            reply["id"]
        );
        assert_eq!(line, expected);
        assert_eq!(status, OUTAGE_STATUS, "{line}");
    }
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    })
}

fn merge(params: &mut Value, extra: Value) {
    if let Value::Object(extra) = extra {
        for (k, v) in extra {
            params[k] = v;
        }
    }
}

fn answer(state: &str) -> Value {
    json!({
        "inputResponses": {"confirm": {"action": "accept", "content": {"ok": true}}},
        "requestState": state,
    })
}

fn state_of(reply: &Value) -> String {
    assert_eq!(reply["result"]["resultType"], "input_required", "{reply}");
    reply["result"]["requestState"]
        .as_str()
        .expect("a sealed requestState")
        .to_owned()
}

/// Both outages the store can report.
fn outages() -> [StoreError; 2] {
    [
        StoreError::Unavailable("connection refused".into()),
        StoreError::Timeout(Duration::from_secs(2)),
    ]
}

#[test]
fn state_unavailable_is_a_retryable_failure_code() {
    assert_eq!(FailureCode::StateUnavailable.as_str(), "state_unavailable");
    assert!(FailureCode::StateUnavailable.default_retryable());
    assert_eq!(
        serde_json::to_string(&FailureCode::StateUnavailable).unwrap(),
        r#""state_unavailable""#
    );
    for e in outages() {
        assert!(e.is_outage(), "{e:?}");
    }
    assert!(!StoreError::Full.is_outage());
    assert!(!StoreError::Conflict.is_outage());
}

/// tools/call resumed while the store is down: no dispatch, the mode's retryable answer; the
/// store back, the very same retry completes (the state was neither accepted nor spent).
#[tokio::test]
async fn store_outage_on_tools_call_resume_is_retryable_and_the_retry_completes() {
    for mode in [Mode::Direct, Mode::Compact] {
        for outage in outages() {
            let store = Arc::new(Switchable::default());
            let h = Harness::new(mode, store.clone());
            let state = state_of(&h.delete(json!({})).await);
            store.fail_with(Some(outage.clone()));
            let failed = h.delete(answer(&state)).await;
            h.assert_tool_outage(&failed);
            assert_eq!(h.probes.deleted.load(Ordering::SeqCst), 0, "{mode:?}");

            store.fail_with(None);
            let done = h.delete(answer(&state)).await;
            assert_eq!(
                done["result"]["structuredContent"],
                json!({"value": {"deleted": "a"}}),
                "{mode:?} {outage:?}: {done}"
            );
            assert_eq!(h.probes.deleted.load(Ordering::SeqCst), 1);
        }
    }
}

/// A first call whose prompt cannot be stored: the same retryable answer, no state issued.
#[tokio::test]
async fn store_outage_when_starting_a_chain_is_retryable() {
    for mode in [Mode::Direct, Mode::Compact] {
        for outage in outages() {
            let store = Arc::new(Switchable::default());
            let h = Harness::new(mode, store.clone());
            store.fail_with(Some(outage));
            let failed = h.delete(json!({})).await;
            h.assert_tool_outage(&failed);
            store.fail_with(None);
            state_of(&h.delete(json!({})).await);
        }
    }
}

/// prompts/get and resources/read answer the JSON-RPC error in both modes (O50).
#[tokio::test]
async fn store_outage_on_prompts_get_and_resources_read_is_32603_retryable() {
    for mode in [Mode::Direct, Mode::Compact] {
        for outage in outages() {
            let store = Arc::new(Switchable::default());
            let h = Harness::new(mode, store.clone());
            let state = state_of(&h.prompt(json!({})).await);
            store.fail_with(Some(outage.clone()));
            h.assert_outage_error(&h.prompt(answer(&state)).await);
            let mut read = json!({"uri": "mem://answers", "_meta": meta()});
            merge(&mut read, answer(&state));
            h.assert_outage_error(&h.request("resources/read", read).await);
            assert_eq!(h.probes.prompted.load(Ordering::SeqCst), 0);

            store.fail_with(None);
            let done = h.prompt(answer(&state)).await;
            assert_eq!(
                done["result"]["messages"][0]["content"]["text"], "confirmed",
                "{mode:?}: {done}"
            );
            assert_eq!(h.probes.prompted.load(Ordering::SeqCst), 1);
        }
    }
}

/// The store fails after the round was dispatched (its completion cannot be recorded): the
/// operation ran, so the client gets its result, not a retryable failure; the record stays
/// "running", so a replay is refused and never runs it again.
#[tokio::test]
async fn store_failure_after_dispatch_answers_the_result_and_a_replay_never_reruns() {
    for mode in [Mode::Direct, Mode::Compact] {
        let store = Arc::new(Switchable::default());
        let h = Harness::new(mode, store.clone());
        let state = state_of(&h.delete(json!({})).await);
        // The dispatch swap goes through; the swap recording completion fails.
        store.fail_swaps_after(Some(1));
        let done = h.delete(answer(&state)).await;
        assert_eq!(
            done["result"]["structuredContent"],
            json!({"value": {"deleted": "a"}}),
            "{mode:?}: {done}"
        );
        assert_eq!(h.probes.deleted.load(Ordering::SeqCst), 1);

        store.fail_swaps_after(None);
        let replay = h.delete(answer(&state)).await;
        assert_eq!(h.probes.deleted.load(Ordering::SeqCst), 1, "{replay}");
        let rejected = match mode {
            Mode::Direct => replay["error"]["data"]["reason"].clone(),
            Mode::Compact => replay["result"]["structuredContent"]["failure"]["code"].clone(),
        };
        assert_eq!(rejected, json!("state_rejected"), "{mode:?}: {replay}");
    }
}

/// A full store is not an outage: the plain internal error, not `state_unavailable`.
#[tokio::test]
async fn a_full_store_is_an_internal_error_not_state_unavailable() {
    let store = Arc::new(Switchable::default());
    let h = Harness::new(Mode::Direct, store.clone());
    store.fail_with(Some(StoreError::Full));
    let failed = h.delete(json!({})).await;
    assert_eq!(
        failed["error"],
        json!({"code": -32603, "message": "Internal error", "data": {"retryable": true}}),
        "{failed}"
    );
}

// ---------------------------------------------------------------------------------------------
// Real Redis
// ---------------------------------------------------------------------------------------------

async fn redis_harness(mode: Mode, url: &str, op_timeout: Duration) -> Harness {
    let mut cfg = RedisStoreConfig::new(url);
    cfg.prefix = scale_support::unique_prefix("retryable");
    cfg.op_timeout = op_timeout;
    cfg.connect_timeout = Duration::from_millis(500);
    cfg.backoff_max = Duration::from_millis(100);
    let store = RedisLedgerStore::connect(cfg).await.expect("redis store");
    Harness::new(mode, Arc::new(store))
}

/// Redis stopped mid-chain: the exact retryable answers on every method, no dispatch.
#[tokio::test]
async fn redis_stopped_mid_chain_answers_the_exact_retryable_failures() {
    if !scale_support::redis_available() {
        return;
    }
    for mode in [Mode::Direct, Mode::Compact] {
        let mut redis = scale_support::RedisProc::start(&[]);
        let h = redis_harness(mode, &redis.url(), Duration::from_millis(500)).await;
        let tool_state = state_of(&h.delete(json!({})).await);
        let prompt_state = state_of(&h.prompt(json!({})).await);
        redis.stop();
        h.assert_tool_outage(&h.delete(answer(&tool_state)).await);
        h.assert_outage_error(&h.prompt(answer(&prompt_state)).await);
        let mut read = json!({"uri": "mem://answers", "_meta": meta()});
        merge(&mut read, answer(&tool_state));
        h.assert_outage_error(&h.request("resources/read", read).await);
        assert_eq!(h.probes.deleted.load(Ordering::SeqCst), 0, "{mode:?}");
        assert_eq!(h.probes.prompted.load(Ordering::SeqCst), 0, "{mode:?}");
    }
}

/// Pauses every client of a redis-server for `ms` milliseconds.
fn pause_clients(port: u16, ms: u128) {
    let out = std::process::Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(["CLIENT", "PAUSE", &ms.to_string(), "ALL"])
        .output()
        .expect("redis-cli runs");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "OK");
}

/// Polls (to a generous bound) until Redis answers `store` again after a `CLIENT PAUSE`,
/// instead of sleeping out the pause: each attempt is cut at the store's operation time-out.
async fn until_unpaused(store: &RedisLedgerStore) {
    let bound = std::time::Instant::now() + Duration::from_secs(30);
    while store.load(ChainId([1; 16])).await.is_err() {
        assert!(std::time::Instant::now() < bound, "Redis still paused");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A Redis that stops answering: a load that outlives the operation time-out is
/// `StoreError::Timeout` with that limit, a pause well within it is not; on the server, the
/// retryable answer and no dispatch; once Redis answers again, the same retry completes.
#[tokio::test]
async fn redis_operation_past_its_time_out_is_a_typed_timeout() {
    if !scale_support::redis_available() {
        return;
    }
    let redis = scale_support::RedisProc::start(&[]);
    let mut cfg = RedisStoreConfig::new(redis.url());
    cfg.prefix = scale_support::unique_prefix("timeout");
    cfg.op_timeout = PAUSE_OP_TIMEOUT;
    let store = RedisLedgerStore::connect(cfg).await.expect("redis store");

    // Within the limit: a pause of a third of it delays the answer but does not fail it.
    pause_clients(redis.port, PAUSE_OP_TIMEOUT.as_millis() / 3);
    assert_eq!(store.load(ChainId([1; 16])).await, Ok(None));
    // Past it: the operation is cut at exactly the limit, typed.
    // (The typed time-out itself shows the cut: without it the load would wait out the pause
    // and answer `Ok(None)`; no upper bound on wall time is asserted.)
    pause_clients(redis.port, PAUSE_OP_TIMEOUT.as_millis() * 4);
    assert_eq!(
        store.load(ChainId([1; 16])).await,
        Err(StoreError::Timeout(PAUSE_OP_TIMEOUT))
    );
    until_unpaused(&store).await;

    let h = redis_harness(Mode::Direct, &redis.url(), PAUSE_OP_TIMEOUT).await;
    let state = state_of(&h.delete(json!({})).await);
    pause_clients(redis.port, PAUSE_OP_TIMEOUT.as_millis() * 4);
    h.assert_tool_outage(&h.delete(answer(&state)).await);
    assert_eq!(h.probes.deleted.load(Ordering::SeqCst), 0);
    until_unpaused(&store).await;
    let done = h.delete(answer(&state)).await;
    assert_eq!(
        done["result"]["structuredContent"],
        json!({"value": {"deleted": "a"}}),
        "{done}"
    );
    assert_eq!(h.probes.deleted.load(Ordering::SeqCst), 1);
}
