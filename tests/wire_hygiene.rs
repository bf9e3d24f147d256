//! Nothing internal on the wire: published schemas and titles/descriptions, and every error
//! text we can provoke, carry no requirement ids (`A1`…`O127`, `X21`), ADR numbers, seed
//! names or references to internal documents.
//!
//! Two servers are driven in both publication modes: the conformance fixture server
//! (`examples/conformance/fixtures.rs`, the quickstart's registry too) in this process through
//! `Server::serve`, and the `matrix_server` example as a real child process over stdio (which
//! also receives raw malformed lines the in-process path cannot express).
//!
//! What is scanned: every string (keys included) of `server/discover`, every `tools/list` page,
//! every compact `get_tool_details` answer, `prompts/list`, `resources/list` and
//! `resources/templates/list`; for each provoked error, `error.message` and every string inside
//! `error.data`; for each provoked tool failure, its whole `structuredContent` and content text.
//! Tool *results* of successful calls are the fixtures' own data and are not scanned.
//!
//! False positives the pattern avoids: ids are matched only as whole words (`\b`), so
//! base64 or hex runs (`…AAAE3F…`) and names such as `test_simple_text` never match; only the
//! texts above are scanned, never content blobs; `seed` is matched as a word or `seed-NNN`
//! only, case-insensitively.

#![forbid(unsafe_code)]

#[path = "../examples/conformance/fixtures.rs"]
mod fixtures;

mod support;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use support::example_binary;

use serde_json::{json, Value};
use strict_mcp::core::Caller;
use strict_mcp::server::{Outbox, Reply, Server, ServerOptions};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// Requirement ids (`A1`…`O127`, `X1`…`X99`), ADR numbers and internal document references.
const INTERNAL_ID: &str = r"\b[A-O][0-9]{1,3}\b|\bX[0-9]{1,2}\b|\bADR-?[0-9]+\b|\binterfaces\.md\b|\bREQUIREMENTS\b|\bissue #?[0-9]+\b";
/// Seed documents, by word (`seed`, `Seed-000`), case-insensitively.
const SEED: &str = r"\bseed(-[0-9]+)?\b";

/// How long one reply may take from the child process.
const READ_TIMEOUT: Duration = Duration::from_secs(20);

fn patterns() -> &'static [regress::Regex; 2] {
    static RE: OnceLock<[regress::Regex; 2]> = OnceLock::new();
    RE.get_or_init(|| {
        [
            regress::Regex::new(INTERNAL_ID).expect("pattern compiles"),
            regress::Regex::with_flags(SEED, "i").expect("pattern compiles"),
        ]
    })
}

fn leak(text: &str) -> Option<&str> {
    patterns()
        .iter()
        .find_map(|re| re.find(text).map(|m| &text[m.range()]))
}

#[test]
fn the_pattern_catches_ids_and_spares_lookalikes() {
    for (text, hit) in [
        ("never as a panic (O109)", "O109"),
        ("see X21.", "X21"),
        ("A1", "A1"),
        ("per ADR-0004", "ADR-0004"),
        ("ADR7", "ADR7"),
        ("the seed says", "seed"),
        ("Seed-000 adapted", "Seed-000"),
        ("(interfaces.md)", "interfaces.md"),
        ("see issue #12", "issue #12"),
    ] {
        assert_eq!(leak(text), Some(hit), "{text:?}");
    }
    for text in [
        "test_simple_text",
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ",
        "sha256:ef70b61f99b6d2e5e3b46863822eab08",
        "UTF-8 JSON",
        "P1 Q12 Z9 X100 O1234",
        "https://json-schema.org/draft/2020-12/schema",
        "The call proceeded; seeding is not a word here, nor is linseed.",
        "Mcp-Param-Region",
    ] {
        assert_eq!(leak(text), None, "false positive in {text:?}");
    }
}

/// Everything scanned, with where it came from.
#[derive(Default)]
struct Texts(Vec<(String, String)>);

impl Texts {
    fn add(&mut self, origin: &str, text: &str) {
        self.0.push((origin.to_owned(), text.to_owned()));
    }

    /// Every string and key inside `value`.
    fn add_all(&mut self, origin: &str, value: &Value) {
        match value {
            Value::String(s) => self.add(origin, s),
            Value::Array(items) => items.iter().for_each(|v| self.add_all(origin, v)),
            Value::Object(map) => {
                for (k, v) in map {
                    self.add(origin, k);
                    self.add_all(origin, v);
                }
            }
            _ => {}
        }
    }

    /// What a refusal says: a JSON-RPC error's message and data, or a tool failure's
    /// structured content and text. Returns whether the reply was a refusal at all.
    fn add_refusal(&mut self, origin: &str, reply: &Value) -> bool {
        if let Some(error) = reply.get("error") {
            self.add(origin, error["message"].as_str().unwrap_or_default());
            if let Some(data) = error.get("data") {
                self.add_all(origin, data);
            }
            return true;
        }
        let result = &reply["result"];
        if result["isError"] == true {
            self.add_all(origin, &result["structuredContent"]);
            self.add_all(origin, &result["content"]);
            return true;
        }
        false
    }

    fn assert_clean(&self, min: usize) {
        assert!(
            self.0.len() >= min,
            "only {} texts collected: the drive went wrong",
            self.0.len()
        );
        let leaks: Vec<String> = self
            .0
            .iter()
            .filter_map(|(origin, text)| {
                leak(text).map(|hit| format!("{origin}: `{hit}` in {text:?}"))
            })
            .collect();
        assert!(
            leaks.is_empty(),
            "internal references on the wire:\n{}",
            leaks.join("\n")
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Peers
// ---------------------------------------------------------------------------------------------

#[derive(Default)]
struct Collect(Mutex<Vec<Reply>>);

impl Outbox for Collect {
    fn notify(&self, _line: String) -> bool {
        true
    }
    fn finish(&self, reply: Reply) {
        self.0.lock().unwrap().push(reply);
    }
}

struct ChildPeer {
    process: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
}

enum Peer {
    Local(Server),
    Child(Box<ChildPeer>),
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Peer {
    async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = NEXT_ID.fetch_add(1, Ordering::SeqCst);
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.line(&line.to_string(), &json!(id)).await
    }

    /// Sends one raw line and returns the reply whose id is `id`.
    async fn line(&mut self, line: &str, id: &Value) -> Value {
        match self {
            Peer::Local(server) => {
                let message = strict_mcp::codec::decode(line.as_bytes(), &server.ingress_limits())
                    .expect("the in-process peer only sends valid messages");
                let outbox = Arc::new(Collect::default());
                server
                    .serve(
                        Caller::new("tester"),
                        message,
                        outbox.clone(),
                        Default::default(),
                    )
                    .await;
                let reply = outbox.0.lock().unwrap().pop().expect("one reply");
                serde_json::from_str(&reply.line).unwrap()
            }
            Peer::Child(child) => {
                child.stdin.write_all(line.as_bytes()).await.unwrap();
                child.stdin.write_all(b"\n").await.unwrap();
                child.stdin.flush().await.unwrap();
                loop {
                    let next = tokio::time::timeout(READ_TIMEOUT, child.stdout.next_line())
                        .await
                        .expect("a reply within the read timeout")
                        .unwrap()
                        .expect("the child is still writing");
                    let v: Value = serde_json::from_str(&next).unwrap();
                    if v.get("method").is_none() && &v["id"] == id {
                        return v;
                    }
                }
            }
        }
    }

    async fn finish(self) {
        if let Peer::Child(child) = self {
            let ChildPeer {
                mut process, stdin, ..
            } = *child;
            drop(stdin);
            let status = tokio::time::timeout(READ_TIMEOUT, process.wait())
                .await
                .expect("the child exits at EOF")
                .unwrap();
            assert!(status.success(), "{status}");
        }
    }
}

fn fixture_server(mode: &str) -> Peer {
    Peer::Local(
        Server::new(fixtures::registry(), ServerOptions::new().mode(mode)).expect("server builds"),
    )
}

fn matrix_server(mode: &str) -> Peer {
    let mut process = tokio::process::Command::new(example_binary("matrix_server"))
        .args(["--mode", mode])
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn matrix_server");
    let stdin = process.stdin.take().expect("piped stdin");
    let stdout = BufReader::new(process.stdout.take().expect("piped stdout")).lines();
    Peer::Child(Box::new(ChildPeer {
        process,
        stdin,
        stdout,
    }))
}

// ---------------------------------------------------------------------------------------------
// The drive
// ---------------------------------------------------------------------------------------------

fn meta(caps: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
    })
}

fn with_meta(mut params: Value, caps: Value) -> Value {
    params["_meta"] = meta(caps);
    params
}

/// `tools/call` params for an application tool in `mode`.
fn tool(mode: &str, name: &str, arguments: Value, caps: Value) -> Value {
    let params = if mode == "direct" {
        json!({"name": name, "arguments": arguments})
    } else {
        json!({"name": "call_tool", "arguments": {"name": name, "arguments": arguments}})
    };
    with_meta(params, caps)
}

/// Every published schema and description the peer serves.
async fn published(peer: &mut Peer, mode: &str, texts: &mut Texts) -> Vec<String> {
    let discover = peer
        .request("server/discover", with_meta(json!({}), json!({})))
        .await;
    assert!(discover.get("result").is_some(), "{discover}");
    texts.add_all("server/discover", &discover["result"]);
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut params = with_meta(json!({}), json!({}));
        if let Some(c) = &cursor {
            params["cursor"] = json!(c);
        }
        let page = peer.request("tools/list", params).await;
        let result = &page["result"];
        texts.add_all(&format!("{mode} tools/list"), result);
        for t in result["tools"].as_array().expect("tools") {
            names.push(t["name"].as_str().unwrap().to_owned());
        }
        match result["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    for method in ["prompts/list", "resources/list", "resources/templates/list"] {
        let reply = peer.request(method, with_meta(json!({}), json!({}))).await;
        assert!(reply.get("result").is_some(), "{method}: {reply}");
        texts.add_all(method, &reply["result"]);
    }
    names
}

/// In compact mode, every application tool's details (names come from a direct listing).
async fn details(peer: &mut Peer, names: &[String], texts: &mut Texts) {
    for name in names {
        let reply = peer
            .request(
                "tools/call",
                with_meta(
                    json!({"name": "get_tool_details", "arguments": {"name": name}}),
                    json!({}),
                ),
            )
            .await;
        let detail = &reply["result"]["structuredContent"];
        assert_eq!(detail["tool"]["name"], json!(name), "{reply}");
        texts.add_all(&format!("get_tool_details {name}"), detail);
    }
}

/// Requests every server refuses, whatever its registry.
fn common_refusals(mode: &str) -> Vec<(&'static str, &'static str, Value)> {
    let m = |p: Value| with_meta(p, json!({}));
    let mut out = vec![
        (
            "unknown tool",
            "tools/call",
            m(json!({"name": "nope", "arguments": {}})),
        ),
        (
            "tools/call without name",
            "tools/call",
            m(json!({"arguments": {}})),
        ),
        (
            "arguments not an object",
            "tools/call",
            m(json!({"name": "nope", "arguments": 5})),
        ),
        ("bad cursor", "tools/list", m(json!({"cursor": "garbage"}))),
        (
            "bad prompts cursor",
            "prompts/list",
            m(json!({"cursor": "garbage"})),
        ),
        (
            "bad resources cursor",
            "resources/list",
            m(json!({"cursor": "garbage"})),
        ),
        (
            "bad templates cursor",
            "resources/templates/list",
            m(json!({"cursor": "garbage"})),
        ),
        ("missing _meta", "tools/list", json!({})),
        (
            "missing capabilities",
            "tools/list",
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
        ),
        (
            "missing version",
            "tools/list",
            json!({"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}}),
        ),
        (
            "capabilities not an object",
            "tools/list",
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                             "io.modelcontextprotocol/clientCapabilities": 5}}),
        ),
        (
            "bad version",
            "tools/list",
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2024-11-05",
                             "io.modelcontextprotocol/clientCapabilities": {}}}),
        ),
        ("bad log level", "tools/list", {
            let mut p = m(json!({}));
            p["_meta"]["io.modelcontextprotocol/logLevel"] = json!("loud");
            p
        }),
        ("traceparent not a string", "tools/list", {
            let mut p = m(json!({}));
            p["_meta"]["traceparent"] = json!(7);
            p
        }),
        ("malformed traceparent", "tools/list", {
            let mut p = m(json!({}));
            p["_meta"]["traceparent"] = json!("00-0-0-00");
            p
        }),
        ("malformed tracestate", "tools/list", {
            let mut p = m(json!({}));
            p["_meta"]["traceparent"] =
                json!("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
            p["_meta"]["tracestate"] = json!(5);
            p
        }),
        ("unknown method", "nope/nothing", m(json!({}))),
        ("removed initialize", "initialize", m(json!({}))),
        ("removed ping", "ping", m(json!({}))),
        (
            "removed subscribe",
            "resources/subscribe",
            m(json!({"uri": "mem://x"})),
        ),
        ("unknown prompt", "prompts/get", m(json!({"name": "nope"}))),
        ("prompts/get without name", "prompts/get", m(json!({}))),
        (
            "unknown resource",
            "resources/read",
            m(json!({"uri": "nope://x"})),
        ),
        ("resources/read without uri", "resources/read", m(json!({}))),
        (
            "completion of an unknown prompt",
            "completion/complete",
            m(json!({"ref": {"type": "ref/prompt", "name": "nope"},
                     "argument": {"name": "a", "value": ""}})),
        ),
        (
            "completion with a bad ref",
            "completion/complete",
            m(json!({"ref": {"type": "ref/other"}, "argument": {"name": "a", "value": ""}})),
        ),
    ];
    if mode == "compact" {
        out.extend([
            (
                "unknown inner tool",
                "tools/call",
                m(json!({"name": "call_tool", "arguments": {"name": "nope", "arguments": {}}})),
            ),
            (
                "call_tool without inner name",
                "tools/call",
                m(json!({"name": "call_tool", "arguments": {}})),
            ),
            (
                "call_tool with an extra member",
                "tools/call",
                m(json!({"name": "call_tool", "arguments": {"name": "x", "extra": 1}})),
            ),
            (
                "call_tool inner arguments not an object",
                "tools/call",
                m(json!({"name": "call_tool", "arguments": {"name": "x", "arguments": []}})),
            ),
            (
                "search_tools limit out of range",
                "tools/call",
                m(json!({"name": "search_tools", "arguments": {"query": "x", "limit": 99}})),
            ),
            (
                "search_tools without query",
                "tools/call",
                m(json!({"name": "search_tools", "arguments": {}})),
            ),
            (
                "get_tool_details without name",
                "tools/call",
                m(json!({"name": "get_tool_details", "arguments": {}})),
            ),
            (
                "get_tool_details unknown name",
                "tools/call",
                m(json!({"name": "get_tool_details", "arguments": {"name": "nope"}})),
            ),
            (
                "continuation to discovery",
                "tools/call",
                m(json!({"name": "search_tools", "arguments": {"query": "x"},
                         "inputResponses": {}})),
            ),
        ]);
    }
    out
}

async fn refuse_all(
    peer: &mut Peer,
    requests: Vec<(&'static str, &'static str, Value)>,
    texts: &mut Texts,
) {
    for (what, method, params) in requests {
        let reply = peer.request(method, params).await;
        assert!(
            texts.add_refusal(what, &reply),
            "{what}: not refused: {reply}"
        );
    }
}

/// A continuation round: the first prompt's state, then a tampered state, malformed answers
/// and a `requestState` of the wrong type, all refused.
async fn continuation_refusals(
    peer: &mut Peer,
    mode: &str,
    name: &str,
    arguments: Value,
    key: &str,
    texts: &mut Texts,
) {
    let caps = json!({"elicitation": {"form": {}}});
    let first = peer
        .request(
            "tools/call",
            tool(mode, name, arguments.clone(), caps.clone()),
        )
        .await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let mut tampered = state.clone().into_bytes();
    let i = tampered.len() / 2;
    tampered[i] = if tampered[i] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    let accept = json!({key: {"action": "accept", "content": {"ok": true}}});
    let cases = [
        (
            "tampered state",
            json!({"inputResponses": accept.clone(), "requestState": tampered}),
        ),
        (
            "garbage state",
            json!({"inputResponses": accept.clone(), "requestState": "abc"}),
        ),
        (
            "state not a string",
            json!({"inputResponses": accept.clone(), "requestState": 5}),
        ),
        (
            "inputResponses not an object",
            json!({"inputResponses": [1], "requestState": state}),
        ),
        (
            "malformed action",
            json!({"inputResponses": {key: {"action": "maybe"}}, "requestState": state}),
        ),
        (
            "accept without content",
            json!({"inputResponses": {key: {"action": "accept"}}, "requestState": state}),
        ),
        (
            "decline with content",
            json!({"inputResponses": {key: {"action": "decline", "content": {}}},
                   "requestState": state}),
        ),
        (
            "null answer",
            json!({"inputResponses": {key: null}, "requestState": state}),
        ),
    ];
    for (what, extra) in cases {
        let mut params = tool(mode, name, arguments.clone(), caps.clone());
        for (k, v) in extra.as_object().unwrap() {
            params[k] = v.clone();
        }
        let reply = peer.request("tools/call", params).await;
        assert!(
            texts.add_refusal(&format!("{mode} {what}"), &reply),
            "{what}: not refused: {reply}"
        );
    }
}

#[tokio::test]
async fn conformance_fixture_server_publishes_and_refuses_without_internal_references() {
    let mut texts = Texts::default();
    let mut direct = fixture_server("direct");
    let names = published(&mut direct, "direct", &mut texts).await;
    assert!(names.len() >= 20, "{names:?}");
    let mut compact = fixture_server("compact");
    let compact_names = published(&mut compact, "compact", &mut texts).await;
    assert_eq!(
        compact_names,
        ["search_tools", "get_tool_details", "call_tool"]
    );
    details(&mut compact, &names, &mut texts).await;
    for (mode, peer) in [("direct", &mut direct), ("compact", &mut compact)] {
        refuse_all(peer, common_refusals(mode), &mut texts).await;
        let specific = vec![
            (
                "bad arguments",
                "tools/call",
                tool(mode, "test_header_params", json!({"region": 5}), json!({})),
            ),
            (
                "unknown argument",
                "tools/call",
                tool(mode, "test_simple_text", json!({"x": 1}), json!({})),
            ),
            (
                "missing capability",
                "tools/call",
                tool(mode, "test_missing_capability", json!({}), json!({})),
            ),
            (
                "missing elicitation capability",
                "tools/call",
                tool(
                    mode,
                    "test_input_required_result_elicitation",
                    json!({}),
                    json!({}),
                ),
            ),
            (
                "tool error",
                "tools/call",
                tool(mode, "test_error_handling", json!({}), json!({})),
            ),
            (
                "missing prompt argument",
                "prompts/get",
                with_meta(
                    json!({"name": "test_prompt_with_arguments", "arguments": {}}),
                    json!({}),
                ),
            ),
        ];
        refuse_all(peer, specific, &mut texts).await;
        continuation_refusals(
            peer,
            mode,
            "test_input_required_result_tampered_state",
            json!({}),
            "confirm",
            &mut texts,
        )
        .await;
    }
    texts.assert_clean(500);
}

#[tokio::test]
async fn matrix_child_process_publishes_and_refuses_without_internal_references() {
    let mut texts = Texts::default();
    let mut direct = matrix_server("direct");
    let names = published(&mut direct, "direct", &mut texts).await;
    assert!(names.len() > 50, "paged: {}", names.len());
    let mut compact = matrix_server("compact");
    published(&mut compact, "compact", &mut texts).await;
    details(&mut compact, &names, &mut texts).await;
    for (mode, peer) in [("direct", &mut direct), ("compact", &mut compact)] {
        refuse_all(peer, common_refusals(mode), &mut texts).await;
        let specific = vec![
            (
                "missing argument",
                "tools/call",
                tool(mode, "echo", json!({}), json!({})),
            ),
            (
                "wrong argument type",
                "tools/call",
                tool(mode, "echo", json!({"text": 1}), json!({})),
            ),
            (
                "extra argument",
                "tools/call",
                tool(mode, "echo", json!({"text": "a", "x": 1}), json!({})),
            ),
            (
                "typed failure",
                "tools/call",
                tool(mode, "fail", json!({"reason": "r"}), json!({})),
            ),
            (
                "asking without elicitation",
                "tools/call",
                tool(mode, "ask", json!({"rounds": 1}), json!({})),
            ),
            (
                "missing prompt argument",
                "prompts/get",
                with_meta(json!({"name": "greet", "arguments": {}}), json!({})),
            ),
        ];
        refuse_all(peer, specific, &mut texts).await;
        continuation_refusals(peer, mode, "ask", json!({"rounds": 1}), "q1", &mut texts).await;
        // Malformed lines only a real transport can carry.
        for (what, line, id) in [
            ("not JSON", "{".to_owned(), Value::Null),
            ("not an object", "[]".to_owned(), Value::Null),
            (
                "no method",
                r#"{"jsonrpc":"2.0","id":91}"#.to_owned(),
                json!(91),
            ),
            (
                "wrong jsonrpc",
                r#"{"jsonrpc":"1.0","id":92,"method":"tools/list"}"#.to_owned(),
                json!(92),
            ),
            (
                "params not an object",
                r#"{"jsonrpc":"2.0","id":93,"method":"tools/list","params":5}"#.to_owned(),
                json!(93),
            ),
            (
                "duplicate key",
                r#"{"jsonrpc":"2.0","id":94,"method":"tools/list","method":"x","params":{}}"#
                    .to_owned(),
                json!(94),
            ),
            (
                "id of the wrong type",
                r#"{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list","params":{}}"#.to_owned(),
                Value::Null,
            ),
        ] {
            let reply = peer.line(&line, &id).await;
            assert!(
                texts.add_refusal(what, &reply),
                "{what}: not refused: {reply}"
            );
        }
    }
    // O54's limit, with the text of its failure: ten answers, then the eleventh prompt.
    let caps = json!({"elicitation": {}});
    let mut state: Option<String> = None;
    for k in 1..=11 {
        let mut params = tool("compact", "ask", json!({}), caps.clone());
        if let Some(s) = &state {
            params["requestState"] = json!(s);
            params["inputResponses"] =
                json!({format!("q{}", k - 1): {"action": "accept", "content": {}}});
        }
        let reply = compact.request("tools/call", params).await;
        if k < 11 {
            state = Some(reply["result"]["requestState"].as_str().unwrap().to_owned());
        } else {
            assert_eq!(
                reply["result"]["structuredContent"]["failure"]["code"], "interaction_limit",
                "{reply}"
            );
            assert!(texts.add_refusal("interaction limit", &reply));
        }
    }
    direct.finish().await;
    compact.finish().await;
    texts.assert_clean(500);
}

// ---------------------------------------------------------------------------------------------
// Streamable HTTP: the host's own refusals (headers, media types, origin, host, method)
// ---------------------------------------------------------------------------------------------

mod http {
    use super::{fixtures, with_meta, Texts};

    use http_body_util::{BodyExt, Full};
    use hyper::body::Bytes;
    use hyper::Request;
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::TokioExecutor;
    use serde_json::{json, Value};
    use strict_mcp::server::http::{serve, HttpConfig, McpHttp};
    use strict_mcp::server::{Server, ServerOptions};

    const PV: &str = "2026-07-28";

    /// One request: method, extra headers (replacing the defaults of the same name), body.
    struct Case {
        what: &'static str,
        verb: &'static str,
        headers: Vec<(&'static str, String)>,
        body: String,
    }

    fn rpc(method: &str, params: Value) -> String {
        json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": with_meta(params, json!({}))})
            .to_string()
    }

    fn case(what: &'static str, headers: &[(&'static str, &str)], body: String) -> Case {
        Case {
            what,
            verb: "POST",
            headers: headers.iter().map(|(k, v)| (*k, (*v).to_owned())).collect(),
            body,
        }
    }

    fn cases() -> Vec<Case> {
        let list = || rpc("tools/list", json!({}));
        let call = |args: Value| {
            rpc(
                "tools/call",
                json!({"name": "test_header_params", "arguments": args}),
            )
        };
        let region = json!({"region": "eu", "text": "x"});
        vec![
            case(
                "version header disagrees",
                &[("mcp-protocol-version", "2025-06-18")],
                list(),
            ),
            case(
                "method header disagrees",
                &[("mcp-method", "prompts/list")],
                list(),
            ),
            case(
                "unsupported version header",
                &[("mcp-protocol-version", "2099-01-01")],
                list(),
            ),
            case(
                "name header missing",
                &[("mcp-method", "tools/call")],
                call(region.clone()),
            ),
            case(
                "name header disagrees",
                &[("mcp-method", "tools/call"), ("mcp-name", "other")],
                call(region.clone()),
            ),
            case(
                "param header missing",
                &[
                    ("mcp-method", "tools/call"),
                    ("mcp-name", "test_header_params"),
                ],
                call(region.clone()),
            ),
            case(
                "param header disagrees",
                &[
                    ("mcp-method", "tools/call"),
                    ("mcp-name", "test_header_params"),
                    ("mcp-param-region", "us"),
                ],
                call(region),
            ),
            case(
                "accept without event-stream",
                &[("accept", "application/json")],
                list(),
            ),
            case(
                "not JSON content",
                &[("content-type", "text/plain")],
                list(),
            ),
            case(
                "foreign origin",
                &[("origin", "http://evil.example")],
                list(),
            ),
            case("foreign host", &[("host", "evil.example")], list()),
            case("not JSON", &[], "{".to_owned()),
            case("not a request", &[], "[]".to_owned()),
            Case {
                what: "GET",
                verb: "GET",
                headers: Vec::new(),
                body: String::new(),
            },
            Case {
                what: "DELETE",
                verb: "DELETE",
                headers: Vec::new(),
                body: String::new(),
            },
        ]
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn http_host_refusals_carry_no_internal_references() {
        let server = Server::new(fixtures::registry(), ServerOptions::new().mode("direct"))
            .expect("server builds");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let service = McpHttp::new(
            server.clone(),
            HttpConfig {
                path: Some("/mcp".into()),
                ..HttpConfig::default()
            },
        );
        let run = tokio::spawn(serve(listener, service, async {
            let _ = stopped.await;
        }));
        let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
        let mut texts = Texts::default();
        for case in cases() {
            let mut headers: Vec<(&str, String)> = vec![
                ("accept", "application/json, text/event-stream".to_owned()),
                ("content-type", "application/json".to_owned()),
                ("mcp-protocol-version", PV.to_owned()),
                ("mcp-method", "tools/list".to_owned()),
            ];
            for (k, v) in case.headers {
                headers.retain(|(name, _)| *name != k);
                headers.push((k, v));
            }
            let mut request = Request::builder()
                .method(case.verb)
                .uri(format!("http://{addr}/mcp"));
            for (k, v) in &headers {
                request = request.header(*k, v.as_str());
            }
            let response = client
                .request(request.body(Full::new(Bytes::from(case.body))).unwrap())
                .await
                .unwrap();
            let status = response.status();
            let bytes = response.into_body().collect().await.unwrap().to_bytes();
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let refused = match serde_json::from_str::<Value>(&text) {
                Ok(reply) => texts.add_refusal(case.what, &reply),
                Err(_) => {
                    texts.add(case.what, &text);
                    !status.is_success()
                }
            };
            assert!(refused, "{}: not refused: {status} {text}", case.what);
        }
        server.shutdown(std::time::Duration::from_secs(2)).await;
        let _ = stop.send(());
        run.await.unwrap().unwrap();
        texts.assert_clean(15);
    }
}
