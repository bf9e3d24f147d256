//! The Tasks extension on the server (SEP-2663, N11–N12, N35–N47, O119), driven in memory:
//! discovery only while a task tool is served, -32021 without the per-request declaration,
//! the task lifecycle, a panicking worker, TTL expiry (ManualClock), cancel racing
//! completion, a second principal probing ids, the count bound, `tasks/update` rounds,
//! `notifications/cancelled` leaving tasks alone, and shutdown. Each test ends with no work
//! left running (`Status.running_tasks == 0`).

#![forbid(unsafe_code)]

mod support;

use std::sync::Arc;

use serde_json::{json, Value};
use strict_mcp::core::descriptor::ContentBlock;
use strict_mcp::core::tasks::{TaskLimits, TaskMode, MIN_TASK_TTL_MS};
use strict_mcp::core::{
    Caller, CancelToken, DynamicOutput, Invocation, Outcome, Registry, RegistryBuilder, ToolDef,
};
use strict_mcp::server::{Server, ServerOptions};
use support::harness::{with_clock, Collect, InMemory, ManualClock};
use tokio::sync::Semaphore;

const NO_ARGS: &str = r#"{"type":"object","properties":{},"additionalProperties":false}"#;

fn declared() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "elicitation": {},
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        }
    })
}

fn done(text: &str) -> DynamicOutput {
    DynamicOutput {
        content: vec![ContentBlock::text(text)],
        structured: None,
    }
}

/// A tool that waits for a permit of `gate` (so the test decides when it finishes).
fn gated(name: &str, gate: &Arc<Semaphore>, mode: TaskMode) -> ToolDef {
    let gate = Arc::clone(gate);
    ToolDef::dynamic(name, NO_ARGS, None, move |_inv, _args| {
        let gate = Arc::clone(&gate);
        async move {
            gate.acquire().await.expect("gate open").forget();
            Ok(done("finished"))
        }
    })
    .task(mode)
}

/// A tool that suspends once, then panics.
fn panicking(gate: &Arc<Semaphore>) -> ToolDef {
    let gate = Arc::clone(gate);
    ToolDef::dynamic("boom", NO_ARGS, None, move |_inv, _args| {
        let gate = Arc::clone(&gate);
        async move {
            gate.acquire().await.expect("gate open").forget();
            explode()
        }
    })
    .task(TaskMode::Optional)
}

fn explode() -> Result<DynamicOutput, strict_mcp::core::ToolError> {
    panic!("worker bug")
}

/// A tool that suspends, then asks for a confirmation (`ok`) and finishes with it.
fn asking(gate: &Arc<Semaphore>) -> ToolDef {
    let gate = Arc::clone(gate);
    ToolDef::dynamic_interactive("ask", NO_ARGS, None, move |inv: Invocation, _args| {
        let gate = Arc::clone(&gate);
        async move {
            gate.acquire().await.expect("gate open").forget();
            match inv.input_response("ok") {
                Some(raw) => Ok(Outcome::Complete(done(&format!("answer {}", raw.get())))),
                None => Ok(Outcome::input(
                    "ok",
                    inv.elicit_form(
                        "Sure?",
                        json!({"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}),
                    )?,
                )),
            }
        }
    })
    .task(TaskMode::Optional)
}

fn registry(tools: Vec<ToolDef>) -> Registry {
    let mut b = RegistryBuilder::new();
    for t in tools {
        b = b.tool(t);
    }
    b.build().expect("registry builds")
}

fn server(tools: Vec<ToolDef>, options: ServerOptions) -> InMemory {
    InMemory::new(Server::new(registry(tools), options.mode("direct")).expect("server"))
}

/// A server whose one tool, `slow` (task optional), waits on the returned gate (closed), with
/// `limits` and on `clock`.
fn gated_slow_on(limits: TaskLimits, clock: &Arc<ManualClock>) -> (InMemory, Arc<Semaphore>) {
    let gate = Arc::new(Semaphore::new(0));
    let h = server(
        vec![gated("slow", &gate, TaskMode::Optional)],
        with_clock(ServerOptions::new().task_limits(limits), clock),
    );
    (h, gate)
}

async fn call(h: &InMemory, caller: &str, tool: &str, declare: bool) -> Value {
    let mut params = json!({"name": tool, "arguments": {}});
    if declare {
        params["_meta"] = declared();
    }
    h.request(caller, "tools/call", params).await.0
}

async fn task_op(h: &InMemory, caller: &str, method: &str, id: &str) -> Value {
    let mut params = json!({"taskId": id, "_meta": declared()});
    if method == "tasks/update" {
        params["inputResponses"] = json!({});
    }
    h.request(caller, method, params).await.0
}

/// The result's members without `_meta`, sorted.
fn keys(result: &Value) -> Vec<String> {
    let mut k: Vec<String> = result
        .as_object()
        .expect("object result")
        .keys()
        .filter(|k| *k != "_meta")
        .cloned()
        .collect();
    k.sort();
    k
}

/// Polls `tasks/get` (yielding to the worker between polls) until `status`.
async fn until(h: &InMemory, caller: &str, id: &str, status: &str) -> Value {
    for _ in 0..1000 {
        let got = task_op(h, caller, "tasks/get", id).await;
        if got["result"]["status"] == json!(status) {
            return got["result"].clone();
        }
        tokio::task::yield_now().await;
    }
    panic!("task {id} never reached {status}");
}

async fn idle(h: &InMemory) {
    for _ in 0..1000 {
        if h.server.status().running_tasks == 0 {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("task work still running: {:?}", h.server.status());
}

fn task_id(created: &Value) -> String {
    created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no task: {created}"))
        .to_owned()
}

#[tokio::test]
async fn n35_o119_b19_discovery_advertises_tasks_only_while_a_task_tool_is_served() {
    let gate = Arc::new(Semaphore::new(0));
    let with = server(
        vec![gated("slow", &gate, TaskMode::Optional)],
        ServerOptions::new(),
    );
    let (found, _) = with.request("a", "server/discover", json!({})).await;
    assert_eq!(
        found["result"]["capabilities"]["extensions"],
        json!({"io.modelcontextprotocol/tasks": {}})
    );
    assert!(found["result"]["capabilities"].get("tasks").is_none());
    let without = server(
        vec![gated("slow", &gate, TaskMode::Never)],
        ServerOptions::new(),
    );
    let (found, _) = without.request("a", "server/discover", json!({})).await;
    assert!(
        found["result"]["capabilities"].get("extensions").is_none(),
        "{found}"
    );
    // Not served, the methods do not exist (A14), declared or not.
    let got = task_op(&without, "a", "tasks/get", "x").await;
    assert_eq!(got["error"]["code"], json!(-32601), "{got}");
}

#[tokio::test]
async fn n12_n36_without_the_declaration_no_task_reaches_the_client_and_tasks_methods_are_32021() {
    let gate = Arc::new(Semaphore::new(1));
    let h = server(
        vec![
            gated("slow", &gate, TaskMode::Optional),
            gated("must", &gate, TaskMode::Required),
        ],
        ServerOptions::new(),
    );
    // An optional task tool runs synchronously (its work suspends, yet no task).
    let sync = call(&h, "a", "slow", false).await;
    assert_eq!(sync["result"]["resultType"], json!("complete"), "{sync}");
    assert!(sync["result"].get("taskId").is_none());
    assert_eq!(sync["result"]["content"][0]["text"], json!("finished"));
    // A required one is refused before it runs (the gate has no permit left).
    let refused = call(&h, "a", "must", false).await;
    assert_eq!(
        refused["error"],
        json!({"code": -32021, "message": "Missing required client capability: io.modelcontextprotocol/tasks",
               "data": {"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}})
    );
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let (got, _) = h
            .request("a", method, json!({"taskId": "x", "inputResponses": {}}))
            .await;
        assert_eq!(got["error"]["code"], json!(-32021), "{method}: {got}");
    }
    // The legacy capability slot is not a declaration (N35).
    let mut params = json!({"name": "must", "arguments": {}});
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"tasks": {"requests": {"tools": {"call": {}}}}}});
    let (legacy, _) = h.request("a", "tools/call", params).await;
    assert_eq!(legacy["error"]["code"], json!(-32021));
    idle(&h).await;
}

#[tokio::test]
async fn n38_n39_n41_a_declaring_call_gets_a_flat_task_then_the_inlined_result() {
    let gate = Arc::new(Semaphore::new(0));
    let h = server(
        vec![gated("slow", &gate, TaskMode::Optional)],
        ServerOptions::new(),
    );
    let created = call(&h, "alice", "slow", true).await;
    assert_eq!(
        keys(&created["result"]),
        [
            "createdAt",
            "lastUpdatedAt",
            "pollIntervalMs",
            "resultType",
            "status",
            "taskId",
            "ttlMs"
        ]
    );
    assert_eq!(created["result"]["resultType"], json!("task"));
    assert_eq!(created["result"]["status"], json!("working"));
    assert_eq!(created["result"]["ttlMs"], json!(600_000));
    assert_eq!(created["result"]["pollIntervalMs"], json!(500));
    let id = task_id(&created);
    assert_eq!(id.len(), 32, "128 random bits, hex");
    assert_eq!(h.server.status().running_tasks, 1);
    // Resolvable at once (N40), working, no result yet, never requestState.
    let working = task_op(&h, "alice", "tasks/get", &id).await;
    assert_eq!(working["result"]["resultType"], json!("complete"));
    assert_eq!(
        keys(&working["result"]),
        [
            "createdAt",
            "lastUpdatedAt",
            "pollIntervalMs",
            "resultType",
            "status",
            "taskId",
            "ttlMs"
        ]
    );
    gate.add_permits(1);
    let completed = until(&h, "alice", &id, "completed").await;
    assert_eq!(
        completed["result"],
        json!({"resultType": "complete", "content": [{"type": "text", "text": "finished"}]})
    );
    assert!(completed.get("error").is_none());
    idle(&h).await;
    // Cancel of a finished task: the same empty ack, status unchanged (N43).
    let ack = task_op(&h, "alice", "tasks/cancel", &id).await;
    assert_eq!(keys(&ack["result"]), ["resultType"]);
    assert_eq!(
        until(&h, "alice", &id, "completed").await["status"],
        json!("completed")
    );
    // Removed methods (N37).
    for method in ["tasks/result", "tasks/list"] {
        let (got, _) = h.request("alice", method, json!({"taskId": id})).await;
        assert_eq!(got["error"]["code"], json!(-32601), "{method}");
    }
    let unknown = task_op(&h, "alice", "tasks/get", "nope").await;
    assert_eq!(unknown["error"]["code"], json!(-32602));
}

#[tokio::test]
async fn a_panicking_worker_leaves_its_task_failed_not_running() {
    let gate = Arc::new(Semaphore::new(0));
    let h = server(vec![panicking(&gate)], ServerOptions::new());
    let id = task_id(&call(&h, "alice", "boom", true).await);
    gate.add_permits(1);
    let failed = until(&h, "alice", &id, "failed").await;
    assert_eq!(
        failed["error"],
        json!({"code": -32603, "message": "Internal error"})
    );
    assert!(failed.get("result").is_none());
    idle(&h).await;
}

#[tokio::test]
async fn n44_ttl_expiry_purges_the_task_and_cancels_its_work_at_the_bound_not_before() {
    let clock = ManualClock::at(1_785_196_800_000);
    let (h, _gate) = gated_slow_on(
        TaskLimits {
            ttl_ms: MIN_TASK_TTL_MS,
            ..TaskLimits::default()
        },
        &clock,
    );
    let created = call(&h, "alice", "slow", true).await;
    assert_eq!(
        created["result"]["createdAt"],
        json!("2026-07-28T00:00:00.000Z")
    );
    assert_eq!(created["result"]["ttlMs"], json!(MIN_TASK_TTL_MS));
    let id = task_id(&created);
    clock.advance(MIN_TASK_TTL_MS - 1);
    assert_eq!(
        task_op(&h, "alice", "tasks/get", &id).await["result"]["status"],
        json!("working")
    );
    clock.advance(1);
    let gone = task_op(&h, "alice", "tasks/get", &id).await;
    assert_eq!(gone["error"]["code"], json!(-32602), "{gone}");
    idle(&h).await;
}

/// N44 without any task request after the create: the TTL timer itself (the server's
/// monotonic clock) cancels the work at the bound, not before, so no work outlives its task
/// even when nobody sweeps; the purged task then answers -32602.
#[tokio::test]
async fn n44_a_task_past_its_ttl_stops_its_work_with_no_request_to_sweep_it() {
    let clock = ManualClock::at(1_785_196_800_000);
    let (h, _gate) = gated_slow_on(
        TaskLimits {
            ttl_ms: MIN_TASK_TTL_MS,
            ..TaskLimits::default()
        },
        &clock,
    );
    let id = task_id(&call(&h, "alice", "slow", true).await);
    clock.advance(MIN_TASK_TTL_MS - 1);
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    assert_eq!(h.server.status().running_tasks, 1, "one ms before the TTL");
    clock.advance(1);
    idle(&h).await;
    let gone = task_op(&h, "alice", "tasks/get", &id).await;
    assert_eq!(gone["error"]["code"], json!(-32602), "{gone}");
}

#[tokio::test]
async fn result_retention_purges_a_finished_task_at_the_bound() {
    let clock = ManualClock::at(0);
    let (h, gate) = gated_slow_on(
        TaskLimits {
            result_retention_ms: 5_000,
            ..TaskLimits::default()
        },
        &clock,
    );
    let id = task_id(&call(&h, "alice", "slow", true).await);
    gate.add_permits(1);
    until(&h, "alice", &id, "completed").await;
    idle(&h).await;
    clock.advance(4_999);
    until(&h, "alice", &id, "completed").await;
    clock.advance(1);
    assert_eq!(
        task_op(&h, "alice", "tasks/get", &id).await["error"]["code"],
        json!(-32602)
    );
}

#[tokio::test]
async fn n43_cancel_racing_completion_the_first_write_wins_and_stays() {
    let gate = Arc::new(Semaphore::new(0));
    let h = server(
        vec![gated("slow", &gate, TaskMode::Optional)],
        ServerOptions::new(),
    );
    // Cancel first, then the work finishes: cancelled stays.
    let first = task_id(&call(&h, "alice", "slow", true).await);
    let ack = task_op(&h, "alice", "tasks/cancel", &first).await;
    assert_eq!(keys(&ack["result"]), ["resultType"]);
    gate.add_permits(1);
    idle(&h).await;
    assert_eq!(
        until(&h, "alice", &first, "cancelled").await["status"],
        json!("cancelled")
    );
    // Completion first, then a cancel: completed stays.
    let second = task_id(&call(&h, "alice", "slow", true).await);
    gate.add_permits(1);
    until(&h, "alice", &second, "completed").await;
    task_op(&h, "alice", "tasks/cancel", &second).await;
    assert_eq!(
        until(&h, "alice", &second, "completed").await["status"],
        json!("completed")
    );
    // Both at once: exactly one terminal status, never overwritten.
    let third = task_id(&call(&h, "alice", "slow", true).await);
    gate.add_permits(1);
    task_op(&h, "alice", "tasks/cancel", &third).await;
    idle(&h).await;
    let end = task_op(&h, "alice", "tasks/get", &third).await["result"]["status"].clone();
    assert!(
        end == json!("cancelled") || end == json!("completed"),
        "{end}"
    );
    let again = task_op(&h, "alice", "tasks/get", &third).await["result"]["status"].clone();
    assert_eq!(end, again);
    idle(&h).await;
}

#[tokio::test]
async fn n40_a_second_principal_probing_ids_sees_unknown_tasks() {
    let gate = Arc::new(Semaphore::new(0));
    let h = server(
        vec![gated("slow", &gate, TaskMode::Optional)],
        ServerOptions::new(),
    );
    let id = task_id(&call(&h, "alice", "slow", true).await);
    let unknown = task_op(
        &h,
        "mallory",
        "tasks/get",
        "0123456789abcdef0123456789abcdef",
    )
    .await;
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let probed = task_op(&h, "mallory", method, &id).await;
        assert_eq!(probed["error"], unknown["error"], "{method}: {probed}");
        assert_eq!(probed["error"]["code"], json!(-32602));
    }
    // Mallory's cancel did nothing.
    assert_eq!(
        task_op(&h, "alice", "tasks/get", &id).await["result"]["status"],
        json!("working")
    );
    gate.add_permits(1);
    until(&h, "alice", &id, "completed").await;
    idle(&h).await;
}

#[tokio::test]
async fn the_task_count_is_bounded_at_the_limit_and_one_past_is_refused() {
    let gate = Arc::new(Semaphore::new(0));
    let limits = TaskLimits {
        max_tasks: 2,
        ..TaskLimits::default()
    };
    let h = server(
        vec![gated("slow", &gate, TaskMode::Optional)],
        ServerOptions::new().task_limits(limits),
    );
    let a = task_id(&call(&h, "alice", "slow", true).await);
    let b = task_id(&call(&h, "alice", "slow", true).await);
    let past = call(&h, "alice", "slow", true).await;
    assert_eq!(past["error"]["code"], json!(-32603), "{past}");
    assert_eq!(
        past["error"]["message"],
        json!("Too many tasks are kept; try again later")
    );
    task_op(&h, "alice", "tasks/cancel", &a).await;
    task_op(&h, "alice", "tasks/cancel", &b).await;
    idle(&h).await;
    // Out-of-range limits are refused at construction.
    for bad in [
        TaskLimits {
            max_tasks: 0,
            ..TaskLimits::default()
        },
        TaskLimits {
            ttl_ms: MIN_TASK_TTL_MS - 1,
            ..TaskLimits::default()
        },
    ] {
        let tools = vec![gated("slow", &gate, TaskMode::Optional)];
        assert!(Server::new(registry(tools), ServerOptions::new().task_limits(bad)).is_err());
    }
}

#[tokio::test]
async fn n42_tasks_update_answers_the_parked_input_and_the_task_resumes() {
    let gate = Arc::new(Semaphore::new(0));
    let h = server(vec![asking(&gate)], ServerOptions::new());
    let id = task_id(&call(&h, "alice", "ask", true).await);
    gate.add_permits(1);
    let parked = until(&h, "alice", &id, "input_required").await;
    let keys_now: Vec<&String> = parked["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys_now, ["1.ok"]);
    assert_eq!(
        parked["inputRequests"]["1.ok"]["method"],
        json!("elicitation/create")
    );
    // Unknown keys are ignored, the update still acked, the task still waits.
    let (ack, _) = h
        .request(
            "alice",
            "tasks/update",
            json!({"taskId": id, "inputResponses": {"nope": {}}, "_meta": declared()}),
        )
        .await;
    assert_eq!(keys(&ack["result"]), ["resultType"]);
    until(&h, "alice", &id, "input_required").await;
    gate.add_permits(1);
    let (ack, _) = h
        .request(
            "alice",
            "tasks/update",
            json!({"taskId": id, "inputResponses": {"1.ok": {"action": "accept", "content": {"ok": true}}}, "_meta": declared()}),
        )
        .await;
    assert_eq!(keys(&ack["result"]), ["resultType"]);
    let completed = until(&h, "alice", &id, "completed").await;
    assert_eq!(
        completed["result"]["content"][0]["text"],
        json!(r#"answer {"action":"accept","content":{"ok":true}}"#)
    );
    idle(&h).await;
}

#[tokio::test]
async fn n12_notifications_cancelled_for_the_creating_request_never_cancels_the_task() {
    let gate = Arc::new(Semaphore::new(0));
    let h = server(
        vec![gated("slow", &gate, TaskMode::Optional)],
        ServerOptions::new(),
    );
    let line = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "slow", "arguments": {}, "_meta": declared()}});
    let message =
        strict_mcp::codec::decode(line.to_string().as_bytes(), &h.server.ingress_limits())
            .expect("a valid request");
    let outbox = Arc::new(Collect::default());
    let request_cancel = CancelToken::new();
    h.server
        .serve(
            Caller::new("alice"),
            message,
            outbox.clone(),
            request_cancel.clone(),
        )
        .await;
    let reply: Value = serde_json::from_str(&outbox.replies.lock().unwrap()[0].line).unwrap();
    let id = task_id(&reply);
    // The transport fires the request's token on `notifications/cancelled`.
    request_cancel.cancel();
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        task_op(&h, "alice", "tasks/get", &id).await["result"]["status"],
        json!("working")
    );
    gate.add_permits(1);
    until(&h, "alice", &id, "completed").await;
    idle(&h).await;
}

#[tokio::test]
async fn o5_shutdown_cancels_running_tasks_and_status_reports_them() {
    let gate = Arc::new(Semaphore::new(0));
    let h = server(
        vec![gated("slow", &gate, TaskMode::Optional)],
        ServerOptions::new(),
    );
    let _id = task_id(&call(&h, "alice", "slow", true).await);
    assert_eq!(h.server.status().running_tasks, 1);
    h.server.shutdown(std::time::Duration::from_secs(1)).await;
    idle(&h).await;
    assert_eq!(h.server.status().running_tasks, 0);
}

/// Waits until `outbox` holds a notification line containing `needle`; returns that line.
async fn line_with(outbox: &Collect, needle: &str) -> String {
    for _ in 0..1000 {
        if let Some(line) = outbox
            .notifications
            .lock()
            .unwrap()
            .iter()
            .find(|l| l.contains(needle))
        {
            return line.clone();
        }
        tokio::task::yield_now().await;
    }
    panic!(
        "no notification with {needle}: {:?}",
        outbox.notifications.lock().unwrap()
    );
}

#[tokio::test]
async fn n47_notifications_tasks_reach_the_owners_listen_stream_with_the_detailed_task() {
    let gate = Arc::new(Semaphore::new(0));
    let h = server(
        vec![gated("slow", &gate, TaskMode::Optional)],
        ServerOptions::new(),
    );
    let id = task_id(&call(&h, "alice", "slow", true).await);
    let listen = |caller: &'static str, token: CancelToken, outbox: Arc<Collect>| {
        let server = h.server.clone();
        let line = json!({"jsonrpc": "2.0", "id": format!("listen-{caller}"), "method": "subscriptions/listen",
            "params": {"notifications": {"taskIds": [id.clone(), "unknown"]}, "_meta": declared()}});
        tokio::spawn(async move {
            let message =
                strict_mcp::codec::decode(line.to_string().as_bytes(), &server.ingress_limits())
                    .expect("a valid request");
            server
                .serve(Caller::new(caller), message, outbox, token)
                .await;
        })
    };
    let (alice_out, mallory_out) = (Arc::new(Collect::default()), Arc::new(Collect::default()));
    let (alice_stop, mallory_stop) = (CancelToken::new(), CancelToken::new());
    let alice = listen("alice", alice_stop.clone(), Arc::clone(&alice_out));
    let mallory = listen("mallory", mallory_stop.clone(), Arc::clone(&mallory_out));
    // Only the owner's own, known task is granted.
    let ack = line_with(&alice_out, "acknowledged").await;
    assert!(
        ack.contains(&format!(r#""notifications":{{"taskIds":["{id}"]}}"#)),
        "{ack}"
    );
    let ack = line_with(&mallory_out, "acknowledged").await;
    assert!(ack.contains(r#""notifications":{"taskIds":[]}"#), "{ack}");
    gate.add_permits(1);
    let done = line_with(&alice_out, "notifications/tasks").await;
    let done: Value = serde_json::from_str(&done).unwrap();
    assert_eq!(done["method"], json!("notifications/tasks"));
    let params = &done["params"];
    assert_eq!(params["taskId"], json!(id));
    assert_eq!(params["status"], json!("completed"));
    assert_eq!(
        params["result"],
        json!({"resultType": "complete", "content": [{"type": "text", "text": "finished"}]})
    );
    assert_eq!(
        params["_meta"],
        json!({"io.modelcontextprotocol/subscriptionId": "listen-alice"})
    );
    // The same detailed task tasks/get answers (N47).
    let got = task_op(&h, "alice", "tasks/get", &id).await;
    let mut got = got["result"].clone();
    got.as_object_mut().unwrap().remove("resultType");
    got.as_object_mut().unwrap().remove("_meta");
    let mut sent = params.clone();
    sent.as_object_mut().unwrap().remove("_meta");
    assert_eq!(sent, got);
    // Nothing reached the other principal's stream.
    assert_eq!(mallory_out.notifications.lock().unwrap().len(), 1);
    alice_stop.cancel();
    mallory_stop.cancel();
    alice.await.unwrap();
    mallory.await.unwrap();
    assert_eq!(h.server.status().listen_streams, 0);
    // A listen asking for taskIds without the declaration is refused (N36).
    let (refused, _) = h
        .request(
            "alice",
            "subscriptions/listen",
            json!({"notifications": {"taskIds": [id]}}),
        )
        .await;
    assert_eq!(refused["error"]["code"], json!(-32021), "{refused}");
    idle(&h).await;
}
