//! Cross-adapter equivalence (O10, O117): one fixture table of operations, run in order
//! against a fresh conformance server through the stdio server (the conformance binary as a
//! child), the Streamable HTTP server and the in-memory transport. The raw reply messages must
//! be identical once the request id is removed, including side effects (a tool that changes
//! the registry, then the list that shows it) and errors (code, message, `data`, failure
//! envelopes).
//!
//! Allowed differences, and only these:
//! - framing: one line on stdio, a JSON body or an SSE event on HTTP (the message inside is
//!   compared), and the HTTP status (checked per row against the status table below);
//! - -32020 (header/body mismatch) exists only on HTTP, so no row sends a header case;
//! - sealed values are keyed per server process: `requestState` and `nextCursor` strings are
//!   compared as present-and-non-empty, not byte for byte.
//!
//! The CLI adapter joins this table when it lands (contracts/README.md, "CLI").

#![forbid(unsafe_code)]

#[path = "../examples/conformance/fixtures.rs"]
mod fixtures;
mod support;
#[path = "../examples/conformance/triggers.rs"]
mod triggers;

use std::sync::Arc;

use serde_json::{json, Value};
use strict_mcp::server::{Server, ServerOptions};
use support::peers::{Http, Memory, Reply, Stdio, PV};

/// The server the conformance example runs, built the same way in process.
fn conformance_server() -> Server {
    let catalogue = Arc::new(triggers::Catalogue::default());
    let registry = triggers::registry(&catalogue, fixtures::builder);
    let server = Server::new(
        registry,
        ServerOptions::new()
            .server_info("strict-mcp-conformance", env!("CARGO_PKG_VERSION"))
            .mode("direct"),
    )
    .expect("server");
    catalogue.attach(server.clone());
    server
}

/// One row: method, params, and the HTTP status the row must get.
struct Row {
    method: &'static str,
    params: Value,
    http_status: u16,
}

fn row(method: &'static str, params: Value, http_status: u16) -> Row {
    Row {
        method,
        params,
        http_status,
    }
}

/// The fixture table, run in this order on every adapter.
fn table() -> Vec<Row> {
    let old = json!({"io.modelcontextprotocol/protocolVersion": "2024-11-05",
                     "io.modelcontextprotocol/clientCapabilities": {}});
    vec![
        row("server/discover", json!({}), 200),
        row("tools/list", json!({}), 200),
        row(
            "tools/call",
            json!({"name": "test_simple_text", "arguments": {}}),
            200,
        ),
        row(
            "tools/call",
            json!({"name": "test_error_handling", "arguments": {}}),
            200,
        ),
        row(
            "tools/call",
            json!({"name": "no_such_tool", "arguments": {}}),
            200,
        ),
        row(
            "tools/call",
            json!({"name": "test_simple_text", "arguments": {"unexpected": 1}}),
            200,
        ),
        row(
            "tools/call",
            json!({"name": "test_missing_capability", "arguments": {}}),
            400,
        ),
        row(
            "tools/call",
            json!({"name": "test_input_required_result_elicitation", "arguments": {},
                   "_meta": {"io.modelcontextprotocol/protocolVersion": PV,
                             "io.modelcontextprotocol/clientCapabilities":
                                 {"elicitation": {"form": {}}}}}),
            200,
        ),
        row("resources/list", json!({}), 200),
        row("resources/templates/list", json!({}), 200),
        row("resources/read", json!({"uri": "test://static-text"}), 200),
        row(
            "resources/read",
            json!({"uri": "test://static-binary"}),
            200,
        ),
        row(
            "resources/read",
            json!({"uri": "test://template/42/data"}),
            200,
        ),
        row("resources/read", json!({"uri": "test://no-such"}), 200),
        row("prompts/list", json!({}), 200),
        row(
            "prompts/get",
            json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "a", "arg2": "b"}}),
            200,
        ),
        row("prompts/get", json!({"name": "no_such_prompt"}), 200),
        row(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                   "argument": {"name": "arg1", "value": ""}}),
            200,
        ),
        row("tools/list", json!({"cursor": "not-a-cursor"}), 200),
        // Side effect: the trigger adds a tool, the next list shows it on every adapter.
        row(
            "tools/call",
            json!({"name": "test_trigger_tool_change", "arguments": {}}),
            200,
        ),
        row("tools/list", json!({}), 200),
        row(
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
            200,
        ),
        row("ping", json!({}), 404),
        row("initialize", json!({}), 404),
        row("no/such/method", json!({}), 404),
        row("tools/list", json!({"_meta": old}), 400),
        row(
            "tools/list",
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": PV}}),
            400,
        ),
    ]
}

/// The reply message minus its id, with per-process sealed strings reduced to a marker.
fn normal(reply: &Reply) -> Value {
    let mut m = reply.message.clone();
    if let Some(o) = m.as_object_mut() {
        o.remove("id");
    }
    seal_markers(&mut m);
    m
}

fn seal_markers(v: &mut Value) {
    match v {
        Value::Object(o) => {
            for (k, val) in o.iter_mut() {
                if (k == "requestState" || k == "nextCursor")
                    && val.as_str().is_some_and(|s| !s.is_empty())
                {
                    *val = json!("<sealed>");
                } else {
                    seal_markers(val);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(seal_markers),
        _ => {}
    }
}

/// O10, O117: every row gets the same reply message through stdio, HTTP and in memory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o10_o117_same_replies_through_stdio_http_and_in_memory() {
    let rows = table();
    let mut stdio = Stdio::spawn();
    let mut http = Http::start(conformance_server()).await;
    let mut memory = Memory::new(conformance_server(), "local-user");
    let mut compared = 0;
    let mut replies = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        let s = stdio.exchange(None, r.method, r.params.clone()).await;
        let h = http.exchange(None, r.method, r.params.clone()).await;
        let m = memory.exchange(r.method, r.params.clone()).await;
        let (ns, nh, nm) = (normal(&s), normal(&h), normal(&m));
        assert_eq!(ns, nh, "row {i} {}: stdio vs HTTP", r.method);
        assert_eq!(ns, nm, "row {i} {}: stdio vs in-memory", r.method);
        assert_eq!(s.outcome, h.outcome);
        assert_eq!(
            h.status,
            Some(r.http_status),
            "row {i} {}: HTTP status ({})",
            r.method,
            h.message
        );
        compared += 1;
        replies.push(ns);
    }
    assert_eq!(compared, rows.len());
    // The table exercises what it claims: the side effect, a continuation, the error classes.
    let names = |v: &Value| -> Vec<String> {
        v["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    };
    assert!(!names(&replies[1]).contains(&"test_dynamic_tool".to_owned()));
    assert!(names(&replies[20]).contains(&"test_dynamic_tool".to_owned()));
    assert_eq!(replies[7]["result"]["resultType"], "input_required");
    assert_eq!(replies[7]["result"]["requestState"], "<sealed>");
    assert_eq!(replies[3]["result"]["isError"], true);
    let codes: Vec<i64> = replies
        .iter()
        .filter_map(|r| r["error"]["code"].as_i64())
        .collect();
    assert_eq!(
        codes,
        [-32602, -32021, -32602, -32602, -32602, -32601, -32601, -32601, -32022, -32602]
    );
    // Arguments that fail the input schema are a tool failure, not a protocol error.
    assert_eq!(replies[5]["result"]["isError"], true);
    stdio.close().await;
}

/// The normalisation hides only sealed strings and the id: a different code, message or
/// `data`, or a missing sealed value, still differs.
#[test]
fn o117_normalisation_hides_only_the_listed_differences() {
    let reply = |message: Value| Reply {
        outcome: support::evidence::Outcome::Error,
        message,
        status: None,
        sse: false,
    };
    let a = reply(json!({"jsonrpc": "2.0", "id": 1, "result": {"requestState": "abc"}}));
    let b = reply(json!({"jsonrpc": "2.0", "id": 9, "result": {"requestState": "xyz"}}));
    assert_eq!(normal(&a), normal(&b));
    let c = reply(json!({"jsonrpc": "2.0", "id": 1, "result": {"requestState": ""}}));
    assert_ne!(normal(&a), normal(&c));
    let e1 = reply(json!({"jsonrpc": "2.0", "id": 1,
                          "error": {"code": -32602, "message": "m", "data": {"x": 1}}}));
    let e2 = reply(json!({"jsonrpc": "2.0", "id": 1,
                          "error": {"code": -32602, "message": "m", "data": {"x": 2}}}));
    assert_ne!(normal(&e1), normal(&e2));
}
