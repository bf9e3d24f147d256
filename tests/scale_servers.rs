//! Two `Server` instances sharing one `RedisLedgerStore` and one key ring, the way instances
//! behind a balancer do: an MRTR round started on A resumes on B, and a replayed or
//! concurrently resumed `requestState` is dispatched at most once across both (O53).

#![forbid(unsafe_code)]

mod scale_support;
mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use strict_mcp::core::seal::{KeyRing, SealKey};
use strict_mcp::core::store::LedgerStore;
use strict_mcp::core::{ElicitAction, Invocation, Outcome, Registry, RegistryBuilder, ToolDef};
use strict_mcp::scale::{RedisLedgerStore, RedisStoreConfig};
use strict_mcp::server::{Server, ServerOptions};
use support::harness::{confirm_schema, serve_one, DeleteIn, DeleteOut};

/// Concurrent A/B resumes of one round in the race test.
const RESUME_RACE_REPEATS: usize = 20;

/// Completed deletions across every instance: the side effect a confirmation guards.
#[derive(Default)]
struct Probes {
    deleted: AtomicUsize,
}

fn registry(probes: &Arc<Probes>) -> Registry {
    let probes = Arc::clone(probes);
    RegistryBuilder::new()
        .tool(ToolDef::typed_interactive(
            "delete",
            move |inv: Invocation, input: DeleteIn| {
                let probes = Arc::clone(&probes);
                async move {
                    let answer = inv.form_answer("confirm", &confirm_schema())?;
                    match answer {
                        None => Ok(Outcome::input(
                            "confirm",
                            inv.elicit_form("Really delete?", confirm_schema())?,
                        )),
                        Some(a) => {
                            if a.action == ElicitAction::Accept {
                                probes.deleted.fetch_add(1, Ordering::SeqCst);
                            }
                            Ok(Outcome::Complete(DeleteOut {
                                deleted: input.item,
                            }))
                        }
                    }
                }
            },
        ))
        .build()
        .expect("registry builds")
}

async fn request(server: &Server, id: usize, params: Value) -> Value {
    serve_one(server, "alice", id, "tools/call", params).await.0
}

fn delete_params(extra: Value) -> Value {
    let mut p = json!({
        "name": "delete",
        "arguments": {"item": "a"},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        },
    });
    if let Value::Object(extra) = extra {
        for (k, v) in extra {
            p[k] = v;
        }
    }
    p
}

fn resume(state: &str) -> Value {
    delete_params(json!({
        "inputResponses": {"confirm": {"action": "accept", "content": {"ok": true}}},
        "requestState": state,
    }))
}

fn state_of(reply: &Value) -> String {
    assert_eq!(reply["result"]["resultType"], "input_required", "{reply}");
    reply["result"]["requestState"]
        .as_str()
        .expect("a sealed requestState")
        .to_owned()
}

/// What a replay of a completed chain answers (O53: the operation is not run again).
fn already_completed() -> Value {
    json!({"failure": {"code": "already_completed",
                       "message": "The operation already completed; it is not run again.",
                       "retryable": false}})
}

struct Fleet {
    a: Server,
    b: Server,
    probes: Arc<Probes>,
    _redis: Option<scale_support::RedisProc>,
}

/// Two instances: one key ring, one Redis ledger (each its own connection), one probe.
async fn fleet(test: &str) -> Option<Fleet> {
    let (url, guard) = scale_support::shared_redis()?;
    Some(fleet_on(test, url, guard).await)
}

async fn fleet_on(test: &str, url: String, guard: Option<scale_support::RedisProc>) -> Fleet {
    let ring = KeyRing::new(SealKey::new(3, [7; 32]));
    let prefix = scale_support::unique_prefix(test);
    let probes = Arc::new(Probes::default());
    let mut servers = Vec::new();
    for _ in 0..2 {
        let mut cfg = RedisStoreConfig::new(url.clone());
        cfg.prefix = prefix.clone();
        let store: Arc<dyn LedgerStore> =
            Arc::new(RedisLedgerStore::connect(cfg).await.expect("redis store"));
        let options = ServerOptions::new()
            .key_ring(ring.clone())
            .ledger_store(store)
            .mode("direct");
        servers.push(Server::new(registry(&probes), options).expect("server builds"));
    }
    let b = servers.pop().unwrap();
    let a = servers.pop().unwrap();
    Fleet {
        a,
        b,
        probes,
        _redis: guard,
    }
}

/// Started on A, resumed on B: the operation runs once, on B; replaying the same state on A
/// or B never runs it again (already completed).
#[tokio::test]
async fn o53_round_started_on_a_resumes_on_b_and_replays_never_rerun() {
    let Some(f) = fleet("ab").await else {
        return;
    };
    let state = state_of(&request(&f.a, 1, delete_params(json!({}))).await);
    assert_eq!(f.probes.deleted.load(Ordering::SeqCst), 0);
    let done = request(&f.b, 2, resume(&state)).await;
    assert_eq!(
        done["result"]["structuredContent"],
        json!({"value": {"deleted": "a"}}),
        "{done}"
    );
    assert_eq!(f.probes.deleted.load(Ordering::SeqCst), 1);
    for (i, server) in [&f.a, &f.b, &f.a].into_iter().enumerate() {
        let replay = request(server, 3 + i, resume(&state)).await;
        assert_eq!(
            replay["result"]["structuredContent"],
            already_completed(),
            "replay {i}: {replay}"
        );
    }
    assert_eq!(f.probes.deleted.load(Ordering::SeqCst), 1);
}

/// The same round resumed through A and B at once dispatches exactly once, every time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o53_concurrent_resumes_through_two_instances_dispatch_once() {
    let Some(f) = fleet("race").await else {
        return;
    };
    let f = Arc::new(f);
    for round in 0..RESUME_RACE_REPEATS {
        let state = state_of(&request(&f.a, 1, delete_params(json!({}))).await);
        let before = f.probes.deleted.load(Ordering::SeqCst);
        let go = |on_b: bool, id: usize| {
            let (f, state) = (Arc::clone(&f), state.clone());
            tokio::spawn(async move {
                let server = if on_b { &f.b } else { &f.a };
                request(server, id, resume(&state)).await
            })
        };
        let (ra, rb) = (go(false, 2), go(true, 3));
        let replies = [ra.await.unwrap(), rb.await.unwrap()];
        assert_eq!(
            f.probes.deleted.load(Ordering::SeqCst),
            before + 1,
            "round {round}: {replies:?}"
        );
        let completed = replies
            .iter()
            .filter(|r| r["result"]["structuredContent"] == json!({"value": {"deleted": "a"}}))
            .count();
        assert_eq!(completed, 1, "round {round}: {replies:?}");
        // The loser saw the round in flight (rejected) or already completed: never a rerun.
        for r in &replies {
            let body = &r["result"]["structuredContent"];
            assert!(
                *body == json!({"value": {"deleted": "a"}})
                    || *body == already_completed()
                    || r["error"]
                        == json!({"code": -32602, "message": "The requestState was rejected.",
                                  "data": {"reason": "state_rejected", "retryable": false}}),
                "round {round}: {r}"
            );
        }
    }
}

/// Redis stopped mid-chain: the resume on B is an internal error, never a dispatch and never an
/// acceptance; Redis back (empty): new chains work, the lost one stays refused.
#[tokio::test]
async fn redis_outage_mid_chain_never_dispatches_and_new_chains_work_after() {
    if !scale_support::redis_available() {
        return;
    }
    let proc = scale_support::RedisProc::start(&[]);
    let url = proc.url();
    let mut f = fleet_on("outage", url, Some(proc)).await;
    let state = state_of(&request(&f.a, 1, delete_params(json!({}))).await);
    f._redis.as_mut().unwrap().stop();
    let failed = request(&f.b, 2, resume(&state)).await;
    assert_eq!(failed["error"]["code"], json!(-32603), "{failed}");
    assert!(failed.get("result").is_none(), "{failed}");
    assert_eq!(f.probes.deleted.load(Ordering::SeqCst), 0);

    f._redis.as_mut().unwrap().restart();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let fresh = loop {
        let reply = request(&f.a, 3, delete_params(json!({}))).await;
        if reply["result"]["resultType"] == "input_required" {
            break state_of(&reply);
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never recovered: {reply}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let done = request(&f.b, 4, resume(&fresh)).await;
    assert_eq!(
        done["result"]["structuredContent"],
        json!({"value": {"deleted": "a"}}),
        "{done}"
    );
    let lost = request(&f.b, 5, resume(&state)).await;
    assert_eq!(lost["error"]["data"]["reason"], "state_rejected", "{lost}");
    assert_eq!(f.probes.deleted.load(Ordering::SeqCst), 1);
}
