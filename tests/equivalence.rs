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
//! The CLI column runs each row through the `strict-mcp` binary (`--json`, lossless records of
//! the raw result or error) against its own fixture server over HTTP, and compares the
//! message its record carries with the stdio one. Its allowed differences, and only these:
//! - rows the CLI cannot send are listed per row with the reason ([`ViaCli::Cannot`]): a
//!   made-up cursor, methods outside the revision (`ping`, `initialize`, unknown), and a wrong
//!   or partial `_meta` (the CLI writes its own);
//! - a CLI run discovers first and `tools call` fetches the tool list first (extra requests
//!   without side effects); the row's answer is the first record of the row's method;
//! - a listen row's record holds the acknowledgement's effective filter, not its
//!   subscription id (which is the request id).

#![forbid(unsafe_code)]

#[path = "../examples/conformance/fixtures.rs"]
mod fixtures;
mod support;
#[path = "../examples/conformance/triggers.rs"]
mod triggers;

use std::sync::Arc;
use std::time::Duration;

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

/// One row: method, params, the HTTP status the row must get, and how the CLI sends it.
struct Row {
    method: &'static str,
    params: Value,
    http_status: u16,
    cli: ViaCli,
}

/// How the CLI column sends a row.
#[derive(Debug, Clone)]
enum ViaCli {
    /// Not decided: a row without a CLI mapping fails the table test.
    Unmapped,
    /// These words after `strict-mcp` (`--json --url URL` are added); the row's answer is
    /// the last `--json` record of the row's method.
    Words(Vec<String>),
    /// The CLI cannot send this request; the reason is the allowed difference.
    Cannot(&'static str),
}

fn row(method: &'static str, params: Value, http_status: u16) -> Row {
    Row {
        method,
        params,
        http_status,
        cli: ViaCli::Unmapped,
    }
}

impl Row {
    /// The CLI sends this row as `strict-mcp <words>`.
    fn cli(mut self, words: &[&str]) -> Row {
        self.cli = ViaCli::Words(words.iter().map(|w| (*w).to_owned()).collect());
        self
    }

    /// The CLI cannot send this row, because `why`.
    fn not_cli(mut self, why: &'static str) -> Row {
        self.cli = ViaCli::Cannot(why);
        self
    }
}

/// Replaced by the path of a response file with no rounds: the CLI then declares
/// `elicitation.form` as the row does, and prints the input request instead of answering it.
const RESPONSES_FILE: &str = "<responses-file>";

/// The CLI always writes its own, valid `_meta`.
const CLI_OWN_META: &str = "the CLI writes every request's _meta itself, always valid";
/// The CLI sends only the revision's methods, through its subcommands.
const CLI_OWN_METHODS: &str = "the CLI sends only the methods its subcommands stand for";

/// The fixture table, run in this order on every adapter.
fn table() -> Vec<Row> {
    let old = json!({"io.modelcontextprotocol/protocolVersion": "2024-11-05",
                     "io.modelcontextprotocol/clientCapabilities": {}});
    vec![
        row("server/discover", json!({}), 200).cli(&["discover"]),
        row("tools/list", json!({}), 200).cli(&["tools", "list", "--single-page"]),
        row(
            "tools/call",
            json!({"name": "test_simple_text", "arguments": {}}),
            200,
        )
        .cli(&["tools", "call", "test_simple_text", "--args", "{}"]),
        row(
            "tools/call",
            json!({"name": "test_error_handling", "arguments": {}}),
            200,
        )
        .cli(&["tools", "call", "test_error_handling", "--args", "{}"]),
        row(
            "tools/call",
            json!({"name": "no_such_tool", "arguments": {}}),
            200,
        )
        .cli(&["tools", "call", "no_such_tool", "--args", "{}"]),
        row(
            "tools/call",
            json!({"name": "test_simple_text", "arguments": {"unexpected": 1}}),
            200,
        )
        .cli(&[
            "tools",
            "call",
            "test_simple_text",
            "--args",
            r#"{"unexpected":1}"#,
        ]),
        row(
            "tools/call",
            json!({"name": "test_missing_capability", "arguments": {}}),
            400,
        )
        .cli(&["tools", "call", "test_missing_capability", "--args", "{}"]),
        row(
            "tools/call",
            json!({"name": "test_input_required_result_elicitation", "arguments": {},
                   "_meta": {"io.modelcontextprotocol/protocolVersion": PV,
                             "io.modelcontextprotocol/clientCapabilities":
                                 {"elicitation": {"form": {}}}}}),
            200,
        )
        .cli(&[
            "tools",
            "call",
            "test_input_required_result_elicitation",
            "--args",
            "{}",
            "--responses",
            RESPONSES_FILE,
        ]),
        row("resources/list", json!({}), 200).cli(&["resources", "list", "--single-page"]),
        row("resources/templates/list", json!({}), 200).cli(&[
            "resources",
            "templates",
            "--single-page",
        ]),
        row("resources/read", json!({"uri": "test://static-text"}), 200).cli(&[
            "resources",
            "read",
            "test://static-text",
        ]),
        row(
            "resources/read",
            json!({"uri": "test://static-binary"}),
            200,
        )
        .cli(&["resources", "read", "test://static-binary"]),
        row(
            "resources/read",
            json!({"uri": "test://template/42/data"}),
            200,
        )
        .cli(&["resources", "read", "test://template/42/data"]),
        row("resources/read", json!({"uri": "test://no-such"}), 200).cli(&[
            "resources",
            "read",
            "test://no-such",
        ]),
        row("prompts/list", json!({}), 200).cli(&["prompts", "list", "--single-page"]),
        row(
            "prompts/get",
            json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "a", "arg2": "b"}}),
            200,
        )
        .cli(&[
            "prompts",
            "get",
            "test_prompt_with_arguments",
            "--args",
            r#"{"arg1":"a","arg2":"b"}"#,
        ]),
        row("prompts/get", json!({"name": "no_such_prompt"}), 200).cli(&[
            "prompts",
            "get",
            "no_such_prompt",
        ]),
        row(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                   "argument": {"name": "arg1", "value": ""}}),
            200,
        )
        .cli(&[
            "complete",
            "--prompt",
            "test_prompt_with_arguments",
            "--argument",
            "arg1",
            "--value",
            "",
        ]),
        row("tools/list", json!({"cursor": "not-a-cursor"}), 200)
            .not_cli("the CLI sends only the cursors the server gave it"),
        // Side effect: the trigger adds a tool, the next list shows it on every adapter.
        row(
            "tools/call",
            json!({"name": "test_trigger_tool_change", "arguments": {}}),
            200,
        )
        .cli(&["tools", "call", "test_trigger_tool_change", "--args", "{}"]),
        row("tools/list", json!({}), 200).cli(&["tools", "list", "--single-page"]),
        row(
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
            200,
        )
        .cli(&["listen", "--tools", "--for", "1"]),
        row("ping", json!({}), 404).not_cli(CLI_OWN_METHODS),
        row("initialize", json!({}), 404).not_cli(CLI_OWN_METHODS),
        row("no/such/method", json!({}), 404).not_cli(CLI_OWN_METHODS),
        row("tools/list", json!({"_meta": old}), 400).not_cli(CLI_OWN_META),
        row(
            "tools/list",
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": PV}}),
            400,
        )
        .not_cli(CLI_OWN_META),
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

/// The binary under test.
const EXE: &str = env!("CARGO_BIN_EXE_strict-mcp");

/// The longest one CLI run may take before the row counts as hung (a listen row lasts 1 s).
const CLI_RUN_BOUND: Duration = Duration::from_secs(60);

/// The CLI column: the row's words against `url`, returning the reply message the CLI's
/// `--json` record carries for the row's method, rebuilt as `{jsonrpc, result | error}`
/// (the record holds the raw result or error as received; the id and framing are gone). A
/// listen row's record holds the acknowledgement's effective filter, rebuilt as the
/// acknowledgement minus its subscription id.
async fn via_cli(method: &str, words: &[String], url: &str, responses: &str) -> Value {
    let mut args: Vec<String> = words
        .iter()
        .map(|w| {
            if w == RESPONSES_FILE {
                responses.to_owned()
            } else {
                w.clone()
            }
        })
        .collect();
    args.extend(["--json".to_owned(), "--url".to_owned(), url.to_owned()]);
    let child = tokio::process::Command::new(EXE)
        .args(&args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn strict-mcp");
    let out = tokio::time::timeout(CLI_RUN_BOUND, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("strict-mcp {args:?}: no end within {CLI_RUN_BOUND:?}"))
        .expect("strict-mcp output");
    let text = String::from_utf8_lossy(&out.stdout);
    let record: Value = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a --json record"))
        .find(|r| r["method"] == method && r["kind"] != "digest")
        .unwrap_or_else(|| {
            panic!(
                "strict-mcp {args:?}: no {method} record in {text:?}; stderr {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let mut m = if record["kind"] == "listening" {
        json!({"jsonrpc": "2.0", "method": strict_mcp::wire::listen::ACKNOWLEDGED,
               "params": {"notifications": record["effective"]}})
    } else if let Some(e) = record.get("error") {
        json!({"jsonrpc": "2.0", "error": e})
    } else {
        json!({"jsonrpc": "2.0", "result": record["result"]})
    };
    seal_markers(&mut m);
    m
}

/// The acknowledgement minus its subscription id (the request id, which the CLI does not
/// print): the one part of a listen reply the CLI column cannot compare.
fn without_subscription_id(mut v: Value) -> Value {
    if let Some(meta) = v["params"].get_mut("_meta").and_then(Value::as_object_mut) {
        meta.remove(strict_mcp::wire::meta::SUBSCRIPTION_ID);
        if meta.is_empty() {
            v["params"].as_object_mut().map(|p| p.remove("_meta"));
        }
    }
    v
}

/// O10, O117: every row gets the same reply message through stdio, HTTP and in memory, and
/// through the CLI for every row it can send.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o10_o117_same_replies_through_stdio_http_in_memory_and_cli() {
    let rows = table();
    let mut stdio = Stdio::spawn();
    let mut http = Http::start(conformance_server()).await;
    let mut memory = Memory::new(conformance_server(), "local-user");
    // The CLI column: one CLI run per row against its own fixture server over HTTP, so the
    // side effects carry from row to row as on the other adapters.
    let cli_server = Http::start(conformance_server()).await;
    let responses = std::env::temp_dir().join(format!(
        "strict-mcp-equivalence-responses-{}.json",
        std::process::id()
    ));
    std::fs::write(&responses, r#"{"rounds": []}"#).expect("write the response file");
    let responses = responses.display().to_string();
    let mut compared = 0;
    let mut through_cli = 0;
    let mut not_through_cli = Vec::new();
    let mut replies = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        let s = stdio.exchange(None, r.method, r.params.clone()).await;
        let h = http.exchange(None, r.method, r.params.clone()).await;
        let m = memory.exchange(r.method, r.params.clone()).await;
        let (ns, nh, nm) = (normal(&s), normal(&h), normal(&m));
        assert_eq!(ns, nh, "row {i} {}: stdio vs HTTP", r.method);
        assert_eq!(ns, nm, "row {i} {}: stdio vs in-memory", r.method);
        match &r.cli {
            ViaCli::Words(words) => {
                let nc = via_cli(r.method, words, cli_server.url(), &responses).await;
                let want = if r.method == "subscriptions/listen" {
                    without_subscription_id(ns.clone())
                } else {
                    ns.clone()
                };
                assert_eq!(want, nc, "row {i} {}: stdio vs CLI ({words:?})", r.method);
                through_cli += 1;
            }
            ViaCli::Cannot(why) => not_through_cli.push((i, *why)),
            ViaCli::Unmapped => panic!("row {i} {}: no CLI mapping", r.method),
        }
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
    // The rows the CLI cannot send, and only these: a made-up cursor, methods outside the
    // revision, and requests with a wrong or partial `_meta`.
    assert_eq!(through_cli, 21, "{not_through_cli:?}");
    assert_eq!(
        not_through_cli.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
        [18, 22, 23, 24, 25, 26]
    );
    let _ = std::fs::remove_file(&responses);
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
