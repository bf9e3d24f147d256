//! The sealing key ring shared by every instance: a state sealed by one instance opens on every
//! other that holds the same ring, and a key rotation rolled out instance by instance never
//! refuses a live state, when it is done in two steps:
//!
//! 1. every instance gets `KeyRing::with_previous(old, new)`: it still seals with `old` and
//!    already opens `new`;
//! 2. every instance gets `KeyRing::with_previous(new, old)`: it seals with `new` and still
//!    opens `old`;
//! 3. (after the longest state lifetime) `KeyRing::new(new)` retires `old`.
//!
//! At every moment of the rollout, any two instances are at most one step apart, and each opens
//! what the other seals. A one-step rotation does not have that property (tested too). The
//! instances share one in-process `MemoryLedgerStore`, the way instances share a Redis one.

#![forbid(unsafe_code)]

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use strict_mcp::core::seal::{KeyRing, SealKey};
use strict_mcp::core::store::{LedgerStore, MemoryLedgerStore};
use strict_mcp::core::{Invocation, Outcome, Registry, RegistryBuilder, ToolDef};
use strict_mcp::server::{Server, ServerOptions};
use support::harness::{confirm_schema, serve_one, DeleteIn, DeleteOut};

fn registry(deleted: &Arc<AtomicUsize>) -> Registry {
    let deleted = Arc::clone(deleted);
    RegistryBuilder::new()
        .tool(ToolDef::typed_interactive(
            "delete",
            move |inv: Invocation, input: DeleteIn| {
                let deleted = Arc::clone(&deleted);
                async move {
                    match inv.form_answer("confirm", &confirm_schema())? {
                        None => Ok(Outcome::input(
                            "confirm",
                            inv.elicit_form("Really delete?", confirm_schema())?,
                        )),
                        Some(_) => {
                            deleted.fetch_add(1, Ordering::SeqCst);
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

/// Instances sharing one store and one side-effect counter, each with its own ring.
struct Fleet {
    store: Arc<MemoryLedgerStore>,
    deleted: Arc<AtomicUsize>,
}

impl Fleet {
    fn new() -> Fleet {
        Fleet {
            store: Arc::new(MemoryLedgerStore::default()),
            deleted: Arc::new(AtomicUsize::new(0)),
        }
    }

    fn instance(&self, ring: KeyRing) -> Server {
        let store: Arc<dyn LedgerStore> = self.store.clone();
        let options = ServerOptions::new()
            .key_ring(ring)
            .ledger_store(store)
            .mode("direct");
        Server::new(registry(&self.deleted), options).expect("server builds")
    }

    fn deleted(&self) -> usize {
        self.deleted.load(Ordering::SeqCst)
    }
}

async fn request(server: &Server, params: Value) -> Value {
    serve_one(server, "alice", 1, "tools/call", params).await.0
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

/// Starts a chain on `server`; its sealed state.
async fn start(server: &Server) -> String {
    let reply = request(server, delete_params(json!({}))).await;
    assert_eq!(reply["result"]["resultType"], "input_required", "{reply}");
    reply["result"]["requestState"]
        .as_str()
        .expect("a sealed requestState")
        .to_owned()
}

/// Resumes `state` on `server` with an accepted confirmation.
async fn resume(server: &Server, state: &str) -> Value {
    request(
        server,
        delete_params(json!({
            "inputResponses": {"confirm": {"action": "accept", "content": {"ok": true}}},
            "requestState": state,
        })),
    )
    .await
}

fn completed(reply: &Value) -> bool {
    reply["result"]["structuredContent"] == json!({"value": {"deleted": "a"}})
}

fn rejected() -> Value {
    json!({"code": -32602, "message": "The requestState was rejected.",
           "data": {"reason": "state_rejected", "retryable": false}})
}

fn old() -> SealKey {
    SealKey::new(1, [0x11; 32])
}

fn new() -> SealKey {
    SealKey::new(2, [0x22; 32])
}

/// Every ordered pair of `instances`: a state sealed by the first opens on the second and
/// dispatches exactly once.
async fn every_pair_interoperates(fleet: &Fleet, instances: &[(&str, &Server)]) {
    for (from_name, from) in instances {
        for (to_name, to) in instances {
            let before = fleet.deleted();
            let state = start(from).await;
            let reply = resume(to, &state).await;
            assert!(completed(&reply), "{from_name} -> {to_name}: {reply}");
            assert_eq!(fleet.deleted(), before + 1, "{from_name} -> {to_name}");
        }
    }
}

/// A state sealed by one instance opens on every other with the same ring.
#[tokio::test]
async fn a_state_sealed_by_a_opens_on_b_and_c() {
    let fleet = Fleet::new();
    let (a, b, c) = (
        fleet.instance(KeyRing::new(old())),
        fleet.instance(KeyRing::new(old())),
        fleet.instance(KeyRing::new(old())),
    );
    every_pair_interoperates(&fleet, &[("a", &a), ("b", &b), ("c", &c)]).await;
}

/// The two-step rolling rotation: at every stage of the rollout, instances one step apart open
/// each other's states; after the old key is retired its states are refused, new ones open.
#[tokio::test]
async fn two_step_rolling_rotation_never_refuses_a_live_state() {
    let fleet = Fleet::new();
    let step0 = || KeyRing::new(old());
    let step1 = || KeyRing::with_previous(old(), new()).expect("distinct ids");
    let step2 = || KeyRing::with_previous(new(), old()).expect("distinct ids");
    let step3 = || KeyRing::new(new());

    // Rolling out step 1 over instances still on step 0.
    let (s0, s1) = (fleet.instance(step0()), fleet.instance(step1()));
    every_pair_interoperates(&fleet, &[("step0", &s0), ("step1", &s1)]).await;
    // A state issued before the rollout and still pending when step 2 arrives.
    let pending = start(&s0).await;
    // Rolling out step 2 over instances on step 1.
    let s2 = fleet.instance(step2());
    every_pair_interoperates(&fleet, &[("step1", &s1), ("step2", &s2)]).await;
    // Rolling out step 3 over instances on step 2.
    let s3 = fleet.instance(step3());
    every_pair_interoperates(&fleet, &[("step2", &s2), ("step3", &s3)]).await;

    // The old key retired: a state it sealed is refused on the retired ring, not run...
    let before = fleet.deleted();
    assert_eq!(resume(&s3, &pending).await["error"], rejected());
    assert_eq!(fleet.deleted(), before);
    // ...and still opens where the old key is kept (the chain was never spent).
    assert!(completed(&resume(&s2, &pending).await));
    assert_eq!(fleet.deleted(), before + 1);
}

/// Why two steps: switching one instance straight to the new key makes its states unreadable
/// to instances that have not been switched yet.
#[tokio::test]
async fn a_one_step_rotation_refuses_states_on_instances_not_yet_rotated() {
    let fleet = Fleet::new();
    let rotated = fleet.instance(KeyRing::with_previous(new(), old()).expect("distinct ids"));
    let not_yet = fleet.instance(KeyRing::new(old()));
    // The rotated instance still opens the old instance's states...
    let state = start(&not_yet).await;
    assert!(completed(&resume(&rotated, &state).await));
    // ...but not the other way round.
    let state = start(&rotated).await;
    assert_eq!(resume(&not_yet, &state).await["error"], rejected());
    assert_eq!(fleet.deleted(), 1);
}

/// #20, live rotation: `Server::replace_key_ring` swaps the ring of running instances without a
/// restart. Walking both instances through the two-step rotation live, a state sealed before
/// each swap still opens after it (on the same and on the other instance), new states are
/// sealed under the new current key (a ring without the old key opens them), and once the old
/// key is retired its pending state is refused there without running the operation.
#[tokio::test]
async fn a_live_key_ring_swap_keeps_states_of_the_overlap_open() {
    let fleet = Fleet::new();
    let a = fleet.instance(KeyRing::new(old()));
    let b = fleet.instance(KeyRing::new(old()));
    let sealed_before_any_swap = start(&a).await;
    let retired_later = start(&b).await;
    // Step 1 on both, live: still sealing with `old`, already opening `new`.
    a.replace_key_ring(KeyRing::with_previous(old(), new()).expect("distinct ids"));
    b.replace_key_ring(KeyRing::with_previous(old(), new()).expect("distinct ids"));
    assert!(completed(&resume(&b, &sealed_before_any_swap).await));
    // Step 2 on A only: A seals with `new`; B (step 1) opens it, and A opens B's `old` states.
    a.replace_key_ring(KeyRing::with_previous(new(), old()).expect("distinct ids"));
    let sealed_new = start(&a).await;
    assert!(completed(&resume(&b, &sealed_new).await));
    let sealed_old = start(&b).await;
    assert!(completed(&resume(&a, &sealed_old).await));
    // What A seals now opens under a ring holding only `new`: it really is the new key.
    let only_new = fleet.instance(KeyRing::new(new()));
    let sealed_new = start(&a).await;
    assert!(completed(&resume(&only_new, &sealed_new).await));
    assert_eq!(fleet.deleted(), 4);
    // Step 3 on A, live: `old` retired there; B's pending `old` state is refused on A and not
    // run, and it still opens on B, which keeps `old` (the chain was never spent).
    a.replace_key_ring(KeyRing::new(new()));
    assert_eq!(resume(&a, &retired_later).await["error"], rejected());
    assert_eq!(fleet.deleted(), 4);
    assert!(completed(&resume(&b, &retired_later).await));
    assert_eq!(fleet.deleted(), 5);
}
