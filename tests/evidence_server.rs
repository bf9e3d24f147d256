//! Contract evidence for the server transports (O115, O117): every request method of the
//! revision, sent as raw wire bytes through the stdio server (the conformance server binary
//! as a child process) and the Streamable HTTP server (in process, on 127.0.0.1), answered
//! with a result (positive) and with an error (negative). Each exchange is recorded by the
//! helper that wrote the bytes and read the reply (`support::evidence`).

#![forbid(unsafe_code)]

#[path = "../examples/conformance/fixtures.rs"]
mod fixtures;
mod support;

use serde_json::{json, Value};
use strict_mcp::server::{Server, ServerOptions};
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
    let mut peer = Stdio::spawn();
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
    let mut peer = Stdio::spawn();
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

/// The recorder macro names the test as the contract cites it.
#[test]
fn recorder_is_named_after_its_test() {
    let rec = support::evidence::recorder!();
    assert_eq!(
        rec.reference(),
        "tests/evidence_server.rs::recorder_is_named_after_its_test"
    );
}
