//! Live tool sweep (O112, seed 003; E16, O15): every tool the conformance server
//! (`examples/conformance_server`, direct mode), the example demo server
//! (`examples/stdio_server`, compact mode) and the CLI's demo server (`strict-mcp demo serve`,
//! direct mode) publish has seed arguments in [`SEEDS`]; each is called through the stdio
//! transport of the real binary. A published tool without seed arguments fails the sweep, and
//! so does a seed for a tool that is no longer published. For every complete result:
//! `structuredContent` is a JSON object where the tool declares an `outputSchema`, and every
//! result carrying `structuredContent` ends with the text block holding its JSON.

#![forbid(unsafe_code)]

mod support;

use std::collections::BTreeSet;

use serde_json::{json, Value};
use support::peers::{Stdio, PV};

/// What a seeded call must come back as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// A complete result, `isError` absent or false.
    Success,
    /// A complete result with `isError: true` (the tool's documented failure).
    ToolError,
    /// `resultType: "input_required"` (a multi round-trip tool's first round).
    InputRequired,
}

/// `(server binary, tool, arguments, expected outcome)`: the one seed table.
const SEEDS: &[(&str, &str, &str, Expect)] = &[
    (
        "conformance_server",
        "test_simple_text",
        "{}",
        Expect::Success,
    ),
    (
        "conformance_server",
        "json_schema_2020_12_tool",
        r#"{"name": "Ada", "address": {"city": "London"}, "contactMethod": "email", "email": "ada@example.org"}"#,
        Expect::Success,
    ),
    (
        "conformance_server",
        "test_logging_tool",
        "{}",
        Expect::Success,
    ),
    (
        "conformance_server",
        "test_image_content",
        "{}",
        Expect::Success,
    ),
    (
        "conformance_server",
        "test_audio_content",
        "{}",
        Expect::Success,
    ),
    (
        "conformance_server",
        "test_embedded_resource",
        "{}",
        Expect::Success,
    ),
    (
        "conformance_server",
        "test_multiple_content_types",
        "{}",
        Expect::Success,
    ),
    (
        "conformance_server",
        "test_error_handling",
        "{}",
        Expect::ToolError,
    ),
    (
        "conformance_server",
        "test_tool_with_progress",
        "{}",
        Expect::Success,
    ),
    (
        "conformance_server",
        "test_header_params",
        r#"{"region": "eu-west", "text": "hi"}"#,
        Expect::Success,
    ),
    (
        "conformance_server",
        "test_missing_capability",
        "{}",
        Expect::InputRequired,
    ),
    (
        "conformance_server",
        "test_streaming_elicitation",
        "{}",
        Expect::InputRequired,
    ),
    (
        "conformance_server",
        "test_input_required_result_elicitation",
        "{}",
        Expect::InputRequired,
    ),
    (
        "conformance_server",
        "test_input_required_result_sampling",
        "{}",
        Expect::InputRequired,
    ),
    (
        "conformance_server",
        "test_input_required_result_list_roots",
        "{}",
        Expect::InputRequired,
    ),
    (
        "conformance_server",
        "test_input_required_result_request_state",
        "{}",
        Expect::InputRequired,
    ),
    (
        "conformance_server",
        "test_input_required_result_multiple_inputs",
        "{}",
        Expect::InputRequired,
    ),
    (
        "conformance_server",
        "test_input_required_result_multi_round",
        "{}",
        Expect::InputRequired,
    ),
    (
        "conformance_server",
        "test_input_required_result_tampered_state",
        "{}",
        Expect::InputRequired,
    ),
    (
        "conformance_server",
        "test_input_required_result_capabilities",
        "{}",
        Expect::InputRequired,
    ),
    (
        "conformance_server",
        "test_trigger_tool_change",
        "{}",
        Expect::Success,
    ),
    (
        "conformance_server",
        "test_trigger_prompt_change",
        "{}",
        Expect::Success,
    ),
    (
        "conformance_server",
        "test_dynamic_tool",
        "{}",
        Expect::Success,
    ),
    (
        "stdio_server",
        "search_tools",
        r#"{"query": "echo"}"#,
        Expect::Success,
    ),
    (
        "stdio_server",
        "get_tool_details",
        r#"{"name": "echo"}"#,
        Expect::Success,
    ),
    (
        "stdio_server",
        "call_tool",
        r#"{"name": "echo", "arguments": {"text": "hi"}}"#,
        Expect::Success,
    ),
    (DEMO, "add", r#"{"a": 2, "b": 3}"#, Expect::Success),
    (DEMO, "upper", r#"{"text": "hi"}"#, Expect::Success),
    (
        DEMO,
        "confirm",
        r#"{"action": "audit"}"#,
        Expect::InputRequired,
    ),
    (DEMO, "count", r#"{"steps": 2}"#, Expect::Success),
];

/// The seed-table name of the CLI's demo server (`strict-mcp demo serve`, the binary itself).
const DEMO: &str = "strict-mcp demo serve";

/// The server `binary` of the seed table, spawned over stdio.
fn spawn(binary: &str) -> Stdio {
    if binary == DEMO {
        Stdio::spawn_program(
            std::path::Path::new(env!("CARGO_BIN_EXE_strict-mcp")),
            &["demo", "serve"],
        )
    } else {
        Stdio::spawn_example(binary)
    }
}

/// The most `tools/list` pages the sweep follows: far above either server's tool count.
const MAX_PAGES: usize = 20;

/// Every capability a seeded tool may ask for, so interactive tools reach their first round.
fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": PV,
        "io.modelcontextprotocol/clientCapabilities":
            {"elicitation": {"form": {}}, "sampling": {}, "roots": {}}
    })
}

/// Every published tool, following `nextCursor`.
async fn published(peer: &mut Stdio) -> Vec<Value> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let reply = peer.exchange(None, "tools/list", params).await;
        let result = &reply.message["result"];
        tools.extend(result["tools"].as_array().expect("tools").iter().cloned());
        match result["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return tools,
        }
    }
    panic!("tools/list did not end within {MAX_PAGES} pages");
}

/// O15, E16: `structuredContent` is an object where an output schema exists, and a result
/// carrying it ends with the text block holding its JSON. Returns what is wrong, if anything.
fn check_result(tool: &Value, result: &Value) -> Result<(), String> {
    let structured = result.get("structuredContent");
    if tool.get("outputSchema").is_some() && !structured.is_some_and(Value::is_object) {
        return Err(format!("outputSchema but structuredContent {structured:?}"));
    }
    if let Some(s) = structured {
        let last = result["content"]
            .as_array()
            .and_then(|c| c.last())
            .ok_or("structuredContent without content blocks")?;
        if last["type"] != "text" {
            return Err(format!("last block is not the text fallback: {last}"));
        }
        let text: Value = serde_json::from_str(last["text"].as_str().unwrap_or_default())
            .map_err(|e| format!("text fallback is not JSON: {e}"))?;
        if &text != s {
            return Err(format!("text fallback {text} differs from {s}"));
        }
    }
    Ok(())
}

async fn sweep(binary: &str) -> usize {
    let mut peer = spawn(binary);
    // Tools published at any point of the sweep: a trigger tool adds one mid-sweep.
    let mut tools = published(&mut peer).await;
    let mut failures = Vec::new();
    let mut called = 0;
    for (_, name, args, expect) in SEEDS.iter().filter(|s| s.0 == binary) {
        if !tools.iter().any(|t| t["name"] == *name) {
            for t in published(&mut peer).await {
                if !tools.iter().any(|k| k["name"] == t["name"]) {
                    tools.push(t);
                }
            }
        }
        let Some(tool) = tools.iter().find(|t| t["name"] == *name).cloned() else {
            failures.push(format!("{name}: seeded but never published"));
            continue;
        };
        let arguments: Value = serde_json::from_str(args).expect("seed arguments are JSON");
        let params = json!({"name": name, "arguments": arguments, "_meta": meta()});
        let reply = peer.exchange(None, "tools/call", params).await;
        called += 1;
        let m = &reply.message;
        let Some(result) = m.get("result") else {
            failures.push(format!("{name}: protocol error {}", m["error"]));
            continue;
        };
        let got = if result["resultType"] == "input_required" {
            Expect::InputRequired
        } else if result["isError"] == true {
            Expect::ToolError
        } else {
            Expect::Success
        };
        if got != *expect {
            failures.push(format!(
                "{name}: expected {expect:?}, got {got:?}: {result}"
            ));
            continue;
        }
        if got != Expect::InputRequired {
            if let Err(e) = check_result(&tool, result) {
                failures.push(format!("{name}: {e}"));
            }
        }
    }
    for t in published(&mut peer).await {
        if !tools.iter().any(|k| k["name"] == t["name"]) {
            tools.push(t);
        }
    }
    peer.close().await;
    let names: BTreeSet<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    let seeded: BTreeSet<&str> = SEEDS
        .iter()
        .filter(|s| s.0 == binary)
        .map(|s| s.1)
        .collect();
    let unseeded: Vec<_> = names.difference(&seeded).collect();
    assert!(
        unseeded.is_empty(),
        "{binary}: tools without seed arguments: {unseeded:?}"
    );
    assert!(failures.is_empty(), "{binary}: {failures:#?}");
    called
}

/// O112: every tool of the conformance server, seeded and called over stdio.
#[tokio::test]
async fn o112_conformance_server_every_tool_has_seeds_and_answers() {
    let called = sweep("conformance_server").await;
    assert_eq!(
        called,
        SEEDS.iter().filter(|s| s.0 == "conformance_server").count()
    );
}

/// O112: every published tool of the demo server (compact mode), seeded and called over
/// stdio.
#[tokio::test]
async fn o112_demo_server_every_tool_has_seeds_and_answers() {
    assert_eq!(sweep("stdio_server").await, 3);
}

/// O112: every tool of the CLI's demo server (`strict-mcp demo serve`), seeded and called
/// over stdio.
#[tokio::test]
async fn o112_cli_demo_server_every_tool_has_seeds_and_answers() {
    assert_eq!(sweep(DEMO).await, 4);
}

/// The result check is not vacuous (O15): a missing, foreign or non-object envelope fails.
#[test]
fn o15_result_check_refuses_a_missing_or_wrong_fallback() {
    let tool = json!({"name": "t", "outputSchema": {"type": "object"}});
    let ok = json!({"content": [{"type": "text", "text": "{\"value\":1}"}],
                    "structuredContent": {"value": 1}});
    assert_eq!(check_result(&tool, &ok), Ok(()));
    let no_fallback = json!({"content": [{"type": "image", "data": "", "mimeType": "image/png"}],
                             "structuredContent": {"value": 1}});
    assert!(check_result(&tool, &no_fallback).is_err());
    let differs = json!({"content": [{"type": "text", "text": "{\"value\":2}"}],
                         "structuredContent": {"value": 1}});
    assert!(check_result(&tool, &differs).is_err());
    let not_object = json!({"content": [{"type": "text", "text": "1"}],
                            "structuredContent": 1});
    assert!(check_result(&tool, &not_object).is_err());
    let absent = json!({"content": [{"type": "text", "text": "hi"}]});
    assert!(check_result(&tool, &absent).is_err());
    let plain_tool = json!({"name": "t"});
    assert_eq!(check_result(&plain_tool, &absent), Ok(()));
}
