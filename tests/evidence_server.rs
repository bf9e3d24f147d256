//! Contract evidence for the server transports (O115, O117): every request method of the
//! revision, sent as raw wire bytes through the stdio server (the conformance server binary
//! as a child process) and the Streamable HTTP server (in process, on 127.0.0.1), answered
//! with a result (positive) and with an error (negative). Each exchange is recorded by the
//! helper that wrote the bytes and read the reply (`support::evidence`).

#![forbid(unsafe_code)]

#[path = "../examples/conformance/fixtures.rs"]
mod fixtures;
mod support;
#[path = "../examples/conformance/tasks.rs"]
mod tasks;

use serde_json::{json, Value};
use strict_mcp::core::RegistryBuilder;
use strict_mcp::server::{Server, ServerOptions};
use support::evidence::Recorder;
use support::peers::{Http, Reply, Stdio};

/// A conformance-fixture server (direct mode), as the conformance example serves it.
fn fixture_server() -> Server {
    Server::new(
        fixtures::registry(),
        ServerOptions::new()
            .server_info("strict-mcp-conformance", "0.0.0")
            .mode("direct"),
    )
    .expect("server")
}

/// One request per method with params the conformance fixtures answer with a result.
pub fn positive_table() -> Vec<(&'static str, Value)> {
    vec![
        ("server/discover", json!({})),
        ("tools/list", json!({})),
        (
            "tools/call",
            json!({"name": "test_simple_text", "arguments": {}}),
        ),
        ("resources/list", json!({})),
        ("resources/templates/list", json!({})),
        ("resources/read", json!({"uri": "test://static-text"})),
        ("prompts/list", json!({})),
        ("prompts/get", json!({"name": "test_simple_prompt"})),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                   "argument": {"name": "arg1", "value": ""}}),
        ),
        (
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
        ),
    ]
}

/// One request per method the server must refuse, with the exact error code it answers.
pub fn negative_table() -> Vec<(&'static str, Value, i64)> {
    let old = json!({
        "io.modelcontextprotocol/protocolVersion": "2024-11-05",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    vec![
        ("server/discover", json!({"_meta": old}), -32022),
        ("tools/list", json!({"cursor": "not-a-cursor"}), -32602),
        (
            "tools/call",
            json!({"name": "no_such_tool", "arguments": {}}),
            -32602,
        ),
        ("resources/list", json!({"cursor": "not-a-cursor"}), -32602),
        (
            "resources/templates/list",
            json!({"cursor": "not-a-cursor"}),
            -32602,
        ),
        ("resources/read", json!({"uri": "test://no-such"}), -32602),
        ("prompts/list", json!({"cursor": "not-a-cursor"}), -32602),
        ("prompts/get", json!({"name": "no_such_prompt"}), -32602),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "no_such_prompt"},
                   "argument": {"name": "arg1", "value": ""}}),
            -32602,
        ),
        ("subscriptions/listen", json!({"notifications": 7}), -32602),
    ]
}

// ---------------------------------------------------------------------------------------------
// The proofs

fn assert_result(method: &str, reply: &Reply) {
    let m = &reply.message;
    let ok = m.get("result").is_some() || m["method"] == strict_mcp::wire::listen::ACKNOWLEDGED;
    assert!(ok, "{method}: expected a result, got {m}");
}

fn assert_error(method: &str, reply: &Reply, code: i64) {
    assert_eq!(
        reply.message["error"]["code"], code,
        "{method}: {}",
        reply.message
    );
}

/// O115, O117: every method over stdio answers with a result.
#[tokio::test]
async fn o115_stdio_server_answers_every_method() {
    let rec = support::evidence::recorder!();
    let mut peer = Stdio::spawn_with_tasks();
    for (method, params) in positive_table() {
        let reply = peer.exchange(Some(&rec), method, params).await;
        assert_result(method, &reply);
    }
    peer.close().await;
}

/// O115, O117: every method over stdio refuses bad input with its exact error code.
#[tokio::test]
async fn o115_stdio_server_refuses_bad_input_for_every_method() {
    let rec = support::evidence::recorder!();
    let mut peer = Stdio::spawn_with_tasks();
    for (method, params, code) in negative_table() {
        let reply = peer.exchange(Some(&rec), method, params).await;
        assert_error(method, &reply, code);
    }
    peer.close().await;
}

/// O115, O117: every method over Streamable HTTP answers with a result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o115_http_server_answers_every_method() {
    let rec = support::evidence::recorder!();
    let mut peer = Http::start(fixture_server()).await;
    for (method, params) in positive_table() {
        let reply = peer.exchange(Some(&rec), method, params).await;
        assert_result(method, &reply);
    }
}

/// O115, O117: every method over Streamable HTTP refuses bad input with its exact error code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o115_http_server_refuses_bad_input_for_every_method() {
    let rec = support::evidence::recorder!();
    let mut peer = Http::start(fixture_server()).await;
    for (method, params, code) in negative_table() {
        let reply = peer.exchange(Some(&rec), method, params).await;
        assert_error(method, &reply, code);
    }
}

// ---------------------------------------------------------------------------------------------
// The extension methods (issue #21): the Tasks extension's `tasks/*` and the Skills
// extension's, served beside the core route table while their extension is active (O119)

/// The conformance server's registry, as `examples/conformance_server.rs` builds it: the core
/// fixtures (a skill catalogue with `directoryRead`) plus the Tasks extension's tools.
fn extension_server() -> Server {
    let mut builder = fixtures::builder();
    for tool in tasks::tools() {
        builder = builder.tool(tool);
    }
    Server::new(
        builder.build().expect("the fixtures are valid"),
        ServerOptions::new()
            .server_info("strict-mcp-conformance", "0.0.0")
            .mode("direct"),
    )
    .expect("server")
}

/// `_meta` of a request that declares the Tasks extension (N36) and elicitation (the
/// `confirm_delete` fixture asks through it).
fn declared() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "elicitation": {},
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        }
    })
}

/// How many `tasks/get` polls a test waits for a status, [`POLL_PAUSE`] apart (5 s: the
/// fixtures park within 100 ms and finish within 200 ms of an answer).
const POLLS: usize = 100;
/// The pause between two polls.
const POLL_PAUSE: std::time::Duration = std::time::Duration::from_millis(50);

/// The two raw server peers, driven alike.
trait Peer {
    async fn send(&mut self, rec: &Recorder, method: &str, params: Value) -> Reply;
}

impl Peer for Stdio {
    async fn send(&mut self, rec: &Recorder, method: &str, params: Value) -> Reply {
        self.exchange(Some(rec), method, params).await
    }
}

impl Peer for Http {
    async fn send(&mut self, rec: &Recorder, method: &str, params: Value) -> Reply {
        self.exchange(Some(rec), method, params).await
    }
}

/// `tools/call` of `tool` declaring the extension, answered with a `CreateTaskResult`: its id.
async fn start_task(peer: &mut impl Peer, rec: &Recorder, tool: &str, arguments: Value) -> String {
    let reply = peer
        .send(
            rec,
            "tools/call",
            json!({"name": tool, "arguments": arguments, "_meta": declared()}),
        )
        .await;
    let result = &reply.message["result"];
    assert_eq!(result["resultType"], "task", "{tool}: {}", reply.message);
    result["taskId"].as_str().expect("taskId").to_owned()
}

/// Polls `tasks/get` until the task reports `status`: that result.
async fn until(peer: &mut impl Peer, rec: &Recorder, id: &str, status: &str) -> Value {
    for _ in 0..POLLS {
        let reply = peer
            .send(rec, "tasks/get", json!({"taskId": id, "_meta": declared()}))
            .await;
        let result = &reply.message["result"];
        assert_eq!(result["resultType"], "complete", "N41: {}", reply.message);
        assert_eq!(result["taskId"], id, "{}", reply.message);
        if result["status"] == status {
            return result.clone();
        }
        tokio::time::sleep(POLL_PAUSE).await;
    }
    panic!("task {id} never reached {status}");
}

/// Every extension method answered with a result (N20, N25, N27, N41, N42, N43).
async fn every_extension_method_answers(peer: &mut impl Peer, rec: &Recorder) {
    let listed = peer.send(rec, "skills/list", json!({})).await;
    assert_eq!(
        listed.message["result"]["skills"][0]["uri"], "skill://pdf-processing/SKILL.md",
        "{}",
        listed.message
    );
    let got = peer
        .send(
            rec,
            "skills/get",
            json!({"uri": "skill://pdf-processing/SKILL.md"}),
        )
        .await;
    assert_eq!(
        got.message["result"]["skill"]["uri"], "skill://pdf-processing/SKILL.md",
        "{}",
        got.message
    );
    let dir = peer
        .send(
            rec,
            "resources/directory/read",
            json!({"uri": "skill://pdf-processing"}),
        )
        .await;
    assert_eq!(
        dir.message["result"]["resources"][0]["uri"], "skill://pdf-processing/SKILL.md",
        "{}",
        dir.message
    );
    // tasks/get on a running task, then tasks/cancel: the empty ack (N43).
    let slow = start_task(peer, rec, "slow_compute", json!({"seconds": 30})).await;
    until(peer, rec, &slow, "working").await;
    let cancel = peer
        .send(
            rec,
            "tasks/cancel",
            json!({"taskId": slow, "_meta": declared()}),
        )
        .await;
    assert_eq!(
        cancel.message["result"]["resultType"], "complete",
        "{}",
        cancel.message
    );
    assert!(
        cancel.message["result"].get("taskId").is_none(),
        "N43: no task fields"
    );
    until(peer, rec, &slow, "cancelled").await;
    // tasks/update answers the parked confirmation; the task then finishes with it (N42).
    let asking = start_task(peer, rec, "confirm_delete", json!({"filename": "a.txt"})).await;
    let parked = until(peer, rec, &asking, "input_required").await;
    let keys: Vec<String> = parked["inputRequests"]
        .as_object()
        .expect("inputRequests")
        .keys()
        .cloned()
        .collect();
    assert_eq!(keys.len(), 1, "{parked}");
    let answers: serde_json::Map<String, Value> = keys
        .iter()
        .map(|k| {
            (
                k.clone(),
                json!({"action": "accept", "content": {"confirm": true}}),
            )
        })
        .collect();
    let ack = peer
        .send(
            rec,
            "tasks/update",
            json!({"taskId": asking, "inputResponses": answers, "_meta": declared()}),
        )
        .await;
    assert_eq!(
        ack.message["result"]["resultType"], "complete",
        "{}",
        ack.message
    );
    assert!(
        ack.message["result"].get("taskId").is_none(),
        "N42: no task fields"
    );
    let done = until(peer, rec, &asking, "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"], "Deleted a.txt.",
        "{done}"
    );
}

/// Every extension method refused with its exact code: bad input (-32602), and for Tasks a
/// request that did not declare the extension (-32021, N36).
async fn every_extension_method_refused(peer: &mut impl Peer, rec: &Recorder) {
    let refusals = [
        ("skills/list", json!({"cursor": "not-a-cursor"}), -32602),
        (
            "skills/get",
            json!({"uri": "skill://mcp-conformance-nonexistent-skill-9f3a2b/SKILL.md"}),
            -32602,
        ),
        (
            "resources/directory/read",
            json!({"uri": "skill://mcp-conformance-nonexistent-skill-9f3a2b"}),
            -32602,
        ),
        (
            "tasks/get",
            json!({"taskId": "no-such-task", "_meta": declared()}),
            -32602,
        ),
        (
            "tasks/update",
            json!({"taskId": "no-such-task", "inputResponses": {}, "_meta": declared()}),
            -32602,
        ),
        (
            "tasks/cancel",
            json!({"taskId": "no-such-task", "_meta": declared()}),
            -32602,
        ),
        ("tasks/get", json!({"taskId": "x"}), -32021),
        (
            "tasks/update",
            json!({"taskId": "x", "inputResponses": {}}),
            -32021,
        ),
        ("tasks/cancel", json!({"taskId": "x"}), -32021),
    ];
    for (method, params, code) in refusals {
        let reply = peer.send(rec, method, params).await;
        assert_error(method, &reply, code);
    }
}

/// O119: a server without a task tool or a skill catalogue does not serve their methods
/// (-32601).
async fn extension_methods_not_served(rec: &Recorder) {
    let registry = RegistryBuilder::new()
        .tool(
            tasks::tools()
                .into_iter()
                .next()
                .expect("greet, not a task tool"),
        )
        .build()
        .expect("registry");
    let mut bare = Http::start(Server::new(registry, ServerOptions::new()).expect("server")).await;
    for method in strict_mcp::wire::tasks::TASK_METHODS
        .iter()
        .chain(strict_mcp::wire::skills::METHODS.iter())
    {
        let params = json!({"taskId": "x", "inputResponses": {}, "uri": "skill://a/SKILL.md",
                            "_meta": declared()});
        let reply = bare.send(rec, method, params).await;
        assert_error(method, &reply, -32601);
    }
}

/// O115, O119, issue #21: every extension method over stdio (the conformance server binary)
/// answers with a result.
#[tokio::test]
async fn o115_stdio_server_answers_every_extension_method() {
    let rec = support::evidence::recorder!();
    let mut peer = Stdio::spawn_with_tasks();
    every_extension_method_answers(&mut peer, &rec).await;
    peer.close().await;
}

/// O115, N36, issue #21: every extension method over stdio refuses bad input and an
/// undeclared Tasks request with its exact error code.
#[tokio::test]
async fn o115_stdio_server_refuses_every_extension_method() {
    let rec = support::evidence::recorder!();
    let mut peer = Stdio::spawn_with_tasks();
    every_extension_method_refused(&mut peer, &rec).await;
    peer.close().await;
}

/// O115, O119, issue #21: every extension method over Streamable HTTP answers with a result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o115_http_server_answers_every_extension_method() {
    let rec = support::evidence::recorder!();
    let mut peer = Http::start(extension_server()).await;
    every_extension_method_answers(&mut peer, &rec).await;
}

/// O115, O119, N36, issue #21: every extension method over Streamable HTTP refuses bad input,
/// an undeclared Tasks request, and (on a server without the extensions) is not found.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o115_http_server_refuses_every_extension_method() {
    let rec = support::evidence::recorder!();
    let mut peer = Http::start(extension_server()).await;
    every_extension_method_refused(&mut peer, &rec).await;
    extension_methods_not_served(&rec).await;
}

/// The recorder macro names the test as the contract cites it.
#[test]
fn recorder_is_named_after_its_test() {
    let rec = support::evidence::recorder!();
    assert_eq!(
        rec.reference(),
        "tests/evidence_server.rs::recorder_is_named_after_its_test"
    );
}
