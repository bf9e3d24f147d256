//! The server dispatcher and the stdio host, driven through in-memory pipes with raw JSON lines
//! (plus one test against a real child process at the end). Test names cite requirement ids.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use strict_mcp::core::descriptor::{ContentBlock, PromptMessage, ResourceContents, Role};
use strict_mcp::core::{
    Caller, DynamicOutput, Invocation, Outcome, PromptDef, PromptError, PromptReply, ReadReply,
    Registry, RegistryBuilder, ResourceDef, ResourceError, TemplateDef, ToolDef,
};
use strict_mcp::server::{Server, ServerOptions, ServerPhase, ShutdownReport};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
const META_ELICIT: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}"#;

#[derive(Default)]
struct Probes {
    /// Set when the `mem://wait` handler's future is dropped or sees cancellation.
    wait_stopped: AtomicBool,
    /// Completed (non-recovery) runs of the `ask` prompt.
    ask_completed: AtomicUsize,
}

struct SetOnDrop(Arc<Probes>);
impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.wait_stopped.store(true, Ordering::SeqCst);
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoIn {
    /// Text to echo.
    text: String,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct EchoOut {
    /// The same text.
    text: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct ConfirmIn {
    /// What to delete.
    item: String,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct ConfirmOut {
    /// What was deleted.
    deleted: String,
}

fn ask_prompt(probes: Arc<Probes>) -> PromptDef {
    PromptDef::new(
        "ask",
        move |inv: Invocation, args: BTreeMap<String, String>| {
            let probes = Arc::clone(&probes);
            async move {
                let rounds: usize = args
                    .get("rounds")
                    .and_then(|r| r.parse().ok())
                    .ok_or_else(|| PromptError::InvalidArguments("rounds".into()))?;
                for k in 1..=rounds {
                    let key = format!("q{k}");
                    if inv.input_response(&key).is_none() {
                        let request = inv.elicit_form(
                            &format!("Question {k}?"),
                            json!({"type":"object","properties":{}}),
                        )?;
                        return Ok(Outcome::input(key, request));
                    }
                }
                let text = if inv.is_recovery() {
                    "recovered".to_owned()
                } else {
                    probes.ask_completed.fetch_add(1, Ordering::SeqCst);
                    format!("answered {rounds}")
                };
                Ok(Outcome::Complete(PromptReply {
                    description: None,
                    messages: vec![PromptMessage::new(Role::User, ContentBlock::text(text))],
                }))
            }
        },
    )
    .argument("rounds", "How many questions to ask.", true)
}

fn registry(probes: &Arc<Probes>) -> Registry {
    let wait_probes = Arc::clone(probes);
    RegistryBuilder::new()
        .tool(
            ToolDef::typed("echo", |_inv: Invocation, i: EchoIn| async move {
                Ok(EchoOut { text: i.text })
            })
            .description("Echoes text."),
        )
        .tool(ToolDef::typed_interactive(
            "confirm",
            |inv: Invocation, c: ConfirmIn| async move {
                if inv.input_response("confirm").is_some() {
                    return Ok(Outcome::Complete(ConfirmOut { deleted: c.item }));
                }
                let ask = inv.elicit_form(
                    "Really delete?",
                    json!({"type":"object","properties":{"ok":{"type":"boolean"}}}),
                )?;
                Ok(Outcome::input("confirm", ask))
            },
        ))
        .tool(ToolDef::dynamic(
            "exact",
            r#"{"type":"object"}"#,
            None,
            |_inv: Invocation, _args| async move {
                Ok(DynamicOutput {
                    content: vec![ContentBlock::text("exact")],
                    structured: Some(
                        serde_json::value::RawValue::from_string(
                            r#"{"n":1.50,"big":123456789012345678901234567890}"#.to_owned(),
                        )
                        .unwrap(),
                    ),
                })
            },
        ))
        .tool(ToolDef::dynamic(
            "big",
            r#"{"type":"object"}"#,
            None,
            |_inv: Invocation, _args| async move {
                Ok(DynamicOutput {
                    content: vec![ContentBlock::text("x".repeat(17 * 1024 * 1024))],
                    structured: None,
                })
            },
        ))
        .resource(
            ResourceDef::new("mem://hello", "hello", |_inv, uri| async move {
                Ok(ReadReply::new(vec![ResourceContents::text(uri, "hello")]))
            }),
        )
        .resource(ResourceDef::new("mem://progress", "progress", |inv: Invocation, uri| async move {
            inv.report_progress(1.0, Some(2.0), Some("half"));
            Ok(ReadReply::new(vec![ResourceContents::text(uri, "done")]))
        }))
        .resource(ResourceDef::new("mem://wait", "wait", move |inv: Invocation, _uri| {
            let guard = SetOnDrop(Arc::clone(&wait_probes));
            async move {
                let _guard = guard;
                inv.cancel_token().cancelled().await;
                Err::<ReadReply, _>(ResourceError::Internal { retryable: true })
            }
        }))
        .resource(ResourceDef::new("mem://stuck", "stuck", |_inv, _uri| async move {
            std::future::pending::<Result<ReadReply, ResourceError>>().await
        }))
        .template(TemplateDef::new(
            "mem://items/{id}",
            "item",
            |_inv, uri, vars: BTreeMap<String, String>| async move {
                Ok(ReadReply::new(vec![ResourceContents::text(
                    uri,
                    format!("item {}", vars["id"]),
                )]))
            },
        ))
        .prompt(ask_prompt(Arc::clone(probes)))
        .build()
        .expect("registry builds")
}

struct Peer {
    writer: Option<DuplexStream>,
    lines: Lines<BufReader<DuplexStream>>,
    run: tokio::task::JoinHandle<std::io::Result<strict_mcp::server::ShutdownReport>>,
    server: Server,
    probes: Arc<Probes>,
}

fn start_with(options: ServerOptions) -> Peer {
    let probes = Arc::new(Probes::default());
    let server = Server::new(registry(&probes), options).expect("server builds");
    let (client_w, server_r) = tokio::io::duplex(1 << 22);
    let (server_w, client_r) = tokio::io::duplex(1 << 22);
    let s = server.clone();
    let run = tokio::spawn(async move {
        s.run_stdio_on(Caller::new("alice"), server_r, server_w)
            .await
    });
    Peer {
        writer: Some(client_w),
        lines: BufReader::new(client_r).lines(),
        run,
        server,
        probes,
    }
}

fn start() -> Peer {
    start_with(ServerOptions::new().server_info("test-server", "1.2.3"))
}

impl Peer {
    async fn send(&mut self, line: &str) {
        let w = self.writer.as_mut().expect("stdin open");
        w.write_all(line.as_bytes()).await.unwrap();
        w.write_all(b"\n").await.unwrap();
    }

    async fn recv_line(&mut self) -> String {
        tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
            .await
            .expect("a line within 10 s")
            .expect("readable")
            .expect("not EOF")
    }

    async fn recv(&mut self) -> Value {
        let line = self.recv_line().await;
        assert_jsonrpc_line(&line);
        serde_json::from_str(&line).unwrap()
    }

    /// Sends a request and returns its reply (any notifications before it are returned too).
    async fn call(&mut self, id: i64, method: &str, params: &str) -> (Vec<Value>, Value) {
        self.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#
        ))
        .await;
        let mut notes = Vec::new();
        loop {
            let v = self.recv().await;
            if v.get("id") == Some(&json!(id)) {
                return (notes, v);
            }
            notes.push(v);
        }
    }

    /// Closes stdin, reads stdout to EOF and waits for the host to return.
    async fn close(mut self) -> (Vec<Value>, Server, Arc<Probes>) {
        drop(self.writer.take());
        let mut rest = Vec::new();
        while let Some(line) = tokio::time::timeout(Duration::from_secs(20), self.lines.next_line())
            .await
            .expect("EOF within 20 s")
            .unwrap()
        {
            assert_jsonrpc_line(&line);
            rest.push(serde_json::from_str(&line).unwrap());
        }
        tokio::time::timeout(Duration::from_secs(20), self.run)
            .await
            .expect("run_stdio returns")
            .unwrap()
            .expect("run_stdio ok");
        (rest, self.server, self.probes)
    }
}

/// C1: every stdout line is one compact JSON-RPC 2.0 message.
fn assert_jsonrpc_line(line: &str) {
    assert!(!line.contains('\n') && !line.contains('\r'), "{line}");
    let v: Value = serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line}"));
    assert_eq!(v["jsonrpc"], "2.0", "{line}");
    assert!(v.get("method").is_some() || v.get("result").is_some() || v.get("error").is_some());
    assert_eq!(
        serde_json::to_string(&v).unwrap().len(),
        line.len(),
        "compact: {line}"
    );
}

/// Request params: `extra` members (may be empty) plus the required `_meta`.
fn req(extra: &str) -> String {
    if extra.is_empty() {
        format!(r#"{{"_meta":{META}}}"#)
    } else {
        format!(r#"{{{extra},"_meta":{META}}}"#)
    }
}

fn server_info() -> Value {
    json!({"name":"test-server","version":"1.2.3"})
}

#[tokio::test]
async fn b16_b18_discover_exact_bytes_and_capabilities() {
    let mut p = start();
    p.send(&format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{{"_meta":{META}}}}}"#
    ))
    .await;
    let line = p.recv_line().await;
    assert_eq!(
        line,
        r#"{"jsonrpc":"2.0","id":1,"result":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"test-server","version":"1.2.3"}},"cacheScope":"private","capabilities":{"completions":{},"logging":{},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"tools":{"listChanged":true}},"resultType":"complete","supportedVersions":["2026-07-28"],"ttlMs":0}}"#
    );
    p.close().await;
}

#[tokio::test]
async fn b18_a14_capabilities_follow_the_registry_and_unadvertised_methods_are_not_found() {
    let server = Server::new(
        RegistryBuilder::new()
            .resource(ResourceDef::new("mem://a", "a", |_i, u| async move {
                Ok(ReadReply::new(vec![ResourceContents::text(u, "a")]))
            }))
            .build()
            .unwrap(),
        ServerOptions::new(),
    )
    .unwrap();
    let (client_w, server_r) = tokio::io::duplex(1 << 16);
    let (server_w, client_r) = tokio::io::duplex(1 << 16);
    let s = server.clone();
    let run = tokio::spawn(async move {
        s.run_stdio_on(Caller::anonymous(), server_r, server_w)
            .await
    });
    let mut w = client_w;
    for (id, m) in [
        (1, "server/discover"),
        (2, "tools/list"),
        (3, "prompts/list"),
    ] {
        w.write_all(
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{m}","params":{{"_meta":{META}}}}}"#)
                .as_bytes(),
        )
        .await
        .unwrap();
        w.write_all(b"\n").await.unwrap();
    }
    drop(w);
    let mut lines = BufReader::new(client_r).lines();
    let mut by_id = BTreeMap::new();
    while let Some(l) = lines.next_line().await.unwrap() {
        let v: Value = serde_json::from_str(&l).unwrap();
        by_id.insert(v["id"].as_i64().unwrap(), v);
    }
    run.await.unwrap().unwrap();
    let caps = &by_id[&1]["result"]["capabilities"];
    assert_eq!(
        caps,
        &json!({"completions":{},"logging":{},"resources":{"listChanged":true,"subscribe":true}})
    );
    assert_eq!(
        by_id[&1]["result"]["_meta"]["io.modelcontextprotocol/serverInfo"],
        json!({"name":"mcp","version":"unreleased"}),
        "O7 default identity"
    );
    assert_eq!(by_id[&2]["error"]["code"], -32601);
    assert_eq!(by_id[&3]["error"]["code"], -32601);
}

#[tokio::test]
async fn a5_b6_h1_every_core_method_answers_with_result_type_server_info_and_cache_hints() {
    let mut p = start();
    let cases: Vec<(&str, String, bool)> = vec![
        ("tools/list", req(""), true),
        ("resources/list", req(""), true),
        ("resources/templates/list", req(""), true),
        ("prompts/list", req(""), true),
        ("resources/read", req(r#""uri":"mem://hello""#), true),
        ("resources/read", req(r#""uri":"mem://items/42""#), true),
        (
            "completion/complete",
            req(
                r#""ref":{"type":"ref/prompt","name":"ask"},"argument":{"name":"rounds","value":""}"#,
            ),
            false,
        ),
    ];
    for (i, (method, params, cacheable)) in cases.iter().enumerate() {
        let (_, reply) = p.call(i as i64 + 10, method, params).await;
        let result = reply
            .get("result")
            .unwrap_or_else(|| panic!("{method}: {reply}"));
        assert_eq!(result["resultType"], "complete", "{method}");
        assert_eq!(
            result["_meta"]["io.modelcontextprotocol/serverInfo"],
            server_info(),
            "{method}"
        );
        assert_eq!(
            result.get("ttlMs").is_some(),
            *cacheable,
            "{method}: {result}"
        );
        assert_eq!(
            result.get("cacheScope").is_some(),
            *cacheable,
            "{method}: {result}"
        );
        if *cacheable {
            assert_eq!(result["ttlMs"], 0);
            assert_eq!(result["cacheScope"], "private");
        }
    }
    let (_, read) = p
        .call(30, "resources/read", &req(r#""uri":"mem://items/42""#))
        .await;
    assert_eq!(
        read["result"]["contents"],
        json!([{"uri":"mem://items/42","text":"item 42"}])
    );
    let (_, templates) = p.call(31, "resources/templates/list", &req("")).await;
    assert_eq!(
        templates["result"]["resourceTemplates"][0]["uriTemplate"],
        "mem://items/{id}"
    );
    let (_, prompts) = p.call(32, "prompts/list", &req("")).await;
    assert_eq!(prompts["result"]["prompts"][0]["name"], "ask");
    let (_, unknown) = p
        .call(33, "resources/read", &req(r#""uri":"mem://nope""#))
        .await;
    assert_eq!(unknown["error"]["code"], -32602, "O34: never -32002");
    assert_eq!(unknown["error"]["data"], json!({"uri":"mem://nope"}));
    p.close().await;
}

#[tokio::test]
async fn b14_unsupported_version_gets_32022_with_supported_and_requested() {
    let mut p = start();
    let (_, reply) = p
        .call(
            1,
            "tools/list",
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}}"#,
        )
        .await;
    assert_eq!(reply["error"]["code"], -32022);
    assert_eq!(
        reply["error"]["data"],
        json!({"supported":["2026-07-28"],"requested":"2025-11-25"})
    );
    assert_eq!(reply["id"], 1);
    p.close().await;
}

#[tokio::test]
async fn b1_b3_missing_or_malformed_meta_gets_32602() {
    let mut p = start();
    let cases = [
        r#"{}"#,
        r#"{"_meta":{}}"#,
        r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#,
        r#"{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}"#,
        r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}}"#,
        r#"{"_meta":"x"}"#,
    ];
    for (i, params) in cases.iter().enumerate() {
        let (_, reply) = p.call(i as i64, "tools/list", params).await;
        assert_eq!(reply["error"]["code"], -32602, "{params}");
    }
    // No params at all.
    p.send(r#"{"jsonrpc":"2.0","id":"np","method":"tools/list"}"#)
        .await;
    let reply = p.recv().await;
    assert_eq!(reply["id"], "np", "A4: the id keeps its JSON type");
    assert_eq!(reply["error"]["code"], -32602);
    // L3: an unknown logLevel; B9: a malformed _meta key.
    for (i, extra) in [
        r#""io.modelcontextprotocol/logLevel":"loud""#,
        r#""bad key/":1"#,
    ]
    .iter()
    .enumerate()
    {
        let params = format!(
            r#"{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}},{extra}}}}}"#
        );
        let (_, reply) = p.call(100 + i as i64, "tools/list", &params).await;
        assert_eq!(reply["error"]["code"], -32602, "{extra}");
    }
    p.close().await;
}

#[tokio::test]
async fn b4_capabilities_are_read_from_each_request_only() {
    let mut p = start();
    let ask = r#""name":"ask","arguments":{"rounds":"1"}"#;
    let (_, first) = p
        .call(
            1,
            "prompts/get",
            &format!(r#"{{{ask},"_meta":{META_ELICIT}}}"#),
        )
        .await;
    assert_eq!(first["result"]["resultType"], "input_required");
    // The next request declares nothing: elicitation is not remembered (B4, B5).
    let (_, second) = p
        .call(2, "prompts/get", &format!(r#"{{{ask},"_meta":{META}}}"#))
        .await;
    assert_eq!(second["error"]["code"], -32021);
    assert_eq!(
        second["error"]["data"],
        json!({"requiredCapabilities":{"elicitation":{"form":{}}}})
    );
    p.close().await;
}

#[tokio::test]
async fn a14_removed_and_unknown_methods_get_32601() {
    let mut p = start();
    for (i, m) in [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "tasks/get",
        "nope",
    ]
    .iter()
    .enumerate()
    {
        let (_, reply) = p.call(i as i64, m, &req("")).await;
        assert_eq!(reply["error"]["code"], -32601, "{m}");
    }
    // B22: the legacy handshake learns which versions are served.
    let (_, init) = p
        .call(9, "initialize", r#"{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}"#)
        .await;
    assert_eq!(init["error"]["data"]["supported"], json!(["2026-07-28"]));
    p.close().await;
}

#[tokio::test]
async fn a11_c_malformed_lines_are_answered_and_never_fatal() {
    let mut p = start();
    // First message may be a notification; it gets no reply (A11).
    p.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        .await;
    p.send("{not json").await;
    let parse = p.recv().await;
    assert_eq!(parse["error"]["code"], -32700);
    assert_eq!(parse["id"], Value::Null);
    p.send(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#)
        .await;
    assert_eq!(p.recv().await["error"]["code"], -32600, "A21: batches");
    p.send(r#"{"jsonrpc":"2.0","id":null,"method":"tools/list"}"#)
        .await;
    assert_eq!(p.recv().await["error"]["code"], -32600, "A2: null id");
    p.send(r#"{"jsonrpc":"1.0","id":5,"method":"tools/list"}"#)
        .await;
    let bad_version = p.recv().await;
    assert_eq!(bad_version["error"]["code"], -32600);
    // Invalid cancellations are ignored silently (J10).
    p.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":999}}"#)
        .await;
    p.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":"x"}"#)
        .await;
    // An oversized line (O36: 2 MiB) is answered once with id null, and serving continues.
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":77,"method":"tools/list","params":{{"pad":"{}"}}}}"#,
        "x".repeat(2 * 1024 * 1024 + 10)
    );
    p.send(&big).await;
    let oversized = p.recv().await;
    assert_eq!(oversized["error"]["code"], -32600);
    assert_eq!(oversized["id"], Value::Null);
    let (_, ok) = p.call(6, "server/discover", &req("")).await;
    assert_eq!(ok["result"]["resultType"], "complete");
    let (rest, _, _) = p.close().await;
    assert!(
        rest.is_empty(),
        "nothing answers the notifications: {rest:?}"
    );
}

#[tokio::test]
async fn c9_j9_cancellation_stops_the_handler_and_no_reply_follows() {
    let mut p = start();
    p.send(&format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{}}}"#,
        req(r#""uri":"mem://wait""#)
    ))
    .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    p.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user"}}"#)
        .await;
    // Another request still works, and by the time it is answered the handler has stopped.
    let (notes, ok) = p.call(8, "server/discover", &req("")).await;
    assert!(notes.is_empty());
    assert_eq!(ok["result"]["resultType"], "complete");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !p.probes.wait_stopped.load(Ordering::SeqCst) {
        assert!(Instant::now() < deadline, "the handler never stopped");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (rest, server, _) = p.close().await;
    assert!(
        rest.iter().all(|v| v.get("id") != Some(&json!(7))),
        "no reply for the cancelled request: {rest:?}"
    );
    assert_eq!(server.status().phase, ServerPhase::Stopped);
    assert_eq!(server.status().active_calls, 0);
}

#[tokio::test]
async fn c14_requests_are_served_concurrently_and_answered_out_of_order() {
    let mut p = start();
    p.send(&format!(
        r#"{{"jsonrpc":"2.0","id":"slow","method":"resources/read","params":{}}}"#,
        req(r#""uri":"mem://wait""#)
    ))
    .await;
    let (_, fast) = p
        .call(2, "resources/read", &req(r#""uri":"mem://hello""#))
        .await;
    assert_eq!(fast["result"]["contents"][0]["text"], "hello");
    // O5: EOF shuts down; the cooperative handler sees the cancellation and still answers.
    let (rest, server, _) = p.close().await;
    assert_eq!(rest.len(), 1, "{rest:?}");
    assert_eq!(rest[0]["id"], "slow");
    assert_eq!(rest[0]["error"]["code"], -32603);
    assert_eq!(server.status().phase, ServerPhase::Stopped);
}

#[tokio::test]
async fn c_at_most_max_in_flight_requests_run_at_once() {
    let mut p = start();
    let max = strict_mcp::server::MAX_IN_FLIGHT;
    for id in 0..max {
        p.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"resources/read","params":{}}}"#,
            req(r#""uri":"mem://wait""#)
        ))
        .await;
    }
    p.send(&format!(
        r#"{{"jsonrpc":"2.0","id":"next","method":"server/discover","params":{}}}"#,
        req("")
    ))
    .await;
    let early = tokio::time::timeout(Duration::from_millis(300), p.lines.next_line()).await;
    assert!(
        early.is_err(),
        "a request beyond the bound ran early: {early:?}"
    );
    // Freeing one slot (cancelling a request) lets the waiting one run.
    p.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":0}}"#)
        .await;
    let next = p.recv().await;
    assert_eq!(next["id"], "next");
    assert_eq!(next["result"]["resultType"], "complete");
    let (rest, _, _) = p.close().await;
    assert_eq!(rest.len(), max - 1, "the others end with shutdown");
    assert!(rest.iter().all(|v| v["id"] != 0));
}

#[tokio::test]
async fn o5_shutdown_with_a_stuck_handler_reports_cleanup_failed_within_budget() {
    let mut p = start_with(ServerOptions::new().shutdown_budget(Duration::from_millis(300)));
    p.send(&format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{}}}"#,
        req(r#""uri":"mem://stuck""#)
    ))
    .await;
    let (_, ok) = p.call(2, "server/discover", &req("")).await;
    assert!(ok.get("result").is_some());
    let started = Instant::now();
    let (rest, server, _) = p.close().await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(rest.iter().all(|v| v.get("id") != Some(&json!(1))));
    let status = server.status();
    assert_eq!(status.phase, ServerPhase::CleanupFailed);
    assert_eq!(
        status.active_calls, 1,
        "status keeps reporting unfinished work"
    );
    // A second shutdown does not restart anything and reports the same.
    assert_eq!(
        server.shutdown(Duration::from_millis(50)).await,
        ShutdownReport::CleanupFailed { unfinished: 1 }
    );
}

#[tokio::test]
async fn o5_shutdown_direct_api_stopped_and_no_admission_afterwards() {
    let probes = Arc::new(Probes::default());
    let server = Server::new(registry(&probes), ServerOptions::new()).unwrap();
    assert_eq!(
        server.shutdown(Duration::from_millis(100)).await,
        ShutdownReport::Stopped
    );
    assert_eq!(server.status().epoch, 1, "the epoch moved on");
    // O4: a stopped server never serves again, and stdio runs once.
    let (client_w, server_r) = tokio::io::duplex(1 << 16);
    let (server_w, client_r) = tokio::io::duplex(1 << 16);
    let s = server.clone();
    let run = tokio::spawn(async move {
        s.run_stdio_on(Caller::anonymous(), server_r, server_w)
            .await
    });
    let mut w = client_w;
    w.write_all(format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{{\"_meta\":{META}}}}}\n").as_bytes()).await.unwrap();
    drop(w);
    let mut lines = BufReader::new(client_r).lines();
    let line = lines.next_line().await.unwrap().unwrap();
    let v: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["error"]["code"], -32603);
    run.await.unwrap().unwrap();
    let (_r, w2) = tokio::io::duplex(16);
    let (r2, _w) = tokio::io::duplex(16);
    assert!(
        server
            .run_stdio_on(Caller::anonymous(), r2, w2)
            .await
            .is_err(),
        "O4: runs once"
    );
}

fn ask_params(rounds: u32, meta: &str, extra: &str) -> String {
    format!(r#"{{"name":"ask","arguments":{{"rounds":"{rounds}"}}{extra},"_meta":{meta}}}"#)
}

fn accept(key: &str) -> String {
    format!(r#","inputResponses":{{"{key}":{{"action":"accept","content":{{}}}}}}"#)
}

/// Walks the ask prompt through `rounds` answers; returns the last state and final reply.
async fn answer_rounds(p: &mut Peer, rounds: u32, start_id: i64) -> (String, Value) {
    let (_, mut reply) = p
        .call(
            start_id,
            "prompts/get",
            &ask_params(rounds, META_ELICIT, ""),
        )
        .await;
    let mut state = String::new();
    for k in 1..=rounds {
        let result = &reply["result"];
        assert_eq!(result["resultType"], "input_required", "round {k}: {reply}");
        assert!(
            result.get("ttlMs").is_none(),
            "H2: no cache hints on input_required"
        );
        let key = format!("q{k}");
        assert_eq!(
            result["inputRequests"][&key]["method"],
            "elicitation/create"
        );
        state = result["requestState"].as_str().unwrap().to_owned();
        let extra = format!(r#"{},"requestState":"{state}""#, accept(&key));
        let (_, next) = p
            .call(
                start_id + i64::from(k),
                "prompts/get",
                &ask_params(rounds, META_ELICIT, &extra),
            )
            .await;
        reply = next;
    }
    (state, reply)
}

#[tokio::test]
async fn o54_ten_answers_complete_and_o53_completed_replay_is_recovery_only() {
    let mut p = start();
    let (last_state, done) = answer_rounds(&mut p, 10, 100).await;
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(
        done["result"]["messages"][0]["content"]["text"],
        "answered 10"
    );
    assert_eq!(p.probes.ask_completed.load(Ordering::SeqCst), 1);
    // Replaying the completed chain's last state never runs the operation again.
    let extra = format!(r#"{},"requestState":"{last_state}""#, accept("q10"));
    let (_, replay) = p
        .call(200, "prompts/get", &ask_params(10, META_ELICIT, &extra))
        .await;
    assert_eq!(
        replay["result"]["messages"][0]["content"]["text"],
        "recovered"
    );
    assert_eq!(p.probes.ask_completed.load(Ordering::SeqCst), 1);
    p.close().await;
}

#[tokio::test]
async fn o54_an_eleventh_prompt_is_interaction_limit() {
    let mut p = start();
    let (_, eleventh) = answer_rounds(&mut p, 10, 300).await;
    // rounds=10 completes; with 11 rounds the handler asks an 11th time after 10 answers.
    assert_eq!(eleventh["result"]["resultType"], "complete");
    let mut p2 = start();
    let (_, mut reply) = p2
        .call(1, "prompts/get", &ask_params(11, META_ELICIT, ""))
        .await;
    for k in 1..=10 {
        let state = reply["result"]["requestState"].as_str().unwrap().to_owned();
        let extra = format!(r#"{},"requestState":"{state}""#, accept(&format!("q{k}")));
        reply = p2
            .call(1 + k, "prompts/get", &ask_params(11, META_ELICIT, &extra))
            .await
            .1;
    }
    assert_eq!(reply["error"]["code"], -32603, "{reply}");
    assert_eq!(reply["error"]["data"]["reason"], "interaction_limit");
    p.close().await;
    p2.close().await;
}

#[tokio::test]
async fn o53_x5_pending_replay_and_missing_answers_repeat_the_same_prompt() {
    let mut p = start();
    let (_, first) = p
        .call(1, "prompts/get", &ask_params(2, META_ELICIT, ""))
        .await;
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    // Answers for other keys only: ignored, and the pending prompt comes back (X5).
    let extra = format!(
        r#","inputResponses":{{"zzz":{{"action":"accept","content":{{}}}}}},"requestState":"{state}""#
    );
    let (_, again) = p
        .call(2, "prompts/get", &ask_params(2, META_ELICIT, &extra))
        .await;
    assert_eq!(again["result"]["resultType"], "input_required");
    assert_eq!(
        again["result"]["inputRequests"],
        first["result"]["inputRequests"]
    );
    p.close().await;
}

#[tokio::test]
async fn i6_o50_tampered_foreign_and_malformed_continuations_are_rejected() {
    let mut p = start();
    let (_, first) = p
        .call(1, "prompts/get", &ask_params(1, META_ELICIT, ""))
        .await;
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    // Tampered token.
    let mut bytes = state.clone().into_bytes();
    bytes[20] = if bytes[20] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(bytes).unwrap();
    let extra = format!(r#"{},"requestState":"{tampered}""#, accept("q1"));
    let (_, r) = p
        .call(2, "prompts/get", &ask_params(1, META_ELICIT, &extra))
        .await;
    assert_eq!(r["error"]["code"], -32602);
    assert_eq!(r["error"]["data"]["reason"], "state_rejected");
    // The same state for another request (other arguments).
    let extra = format!(r#"{},"requestState":"{state}""#, accept("q1"));
    let (_, r) = p
        .call(3, "prompts/get", &ask_params(3, META_ELICIT, &extra))
        .await;
    assert_eq!(r["error"]["data"]["reason"], "state_rejected");
    // O49: a malformed action is a protocol error before dispatch.
    let extra =
        format!(r#","inputResponses":{{"q1":{{"action":"maybe"}}}},"requestState":"{state}""#);
    let (_, r) = p
        .call(4, "prompts/get", &ask_params(1, META_ELICIT, &extra))
        .await;
    assert_eq!(r["error"]["code"], -32602);
    // Null content on a form accept.
    let extra = format!(
        r#","inputResponses":{{"q1":{{"action":"accept","content":null}}}},"requestState":"{state}""#
    );
    let (_, r) = p
        .call(5, "prompts/get", &ask_params(1, META_ELICIT, &extra))
        .await;
    assert_eq!(r["error"]["code"], -32602);
    // The untouched state still works afterwards.
    let extra = format!(r#"{},"requestState":"{state}""#, accept("q1"));
    let (_, ok) = p
        .call(6, "prompts/get", &ask_params(1, META_ELICIT, &extra))
        .await;
    assert_eq!(ok["result"]["messages"][0]["content"]["text"], "answered 1");
    p.close().await;
}

#[tokio::test]
async fn i7_state_is_bound_to_the_principal() {
    let probes = Arc::new(Probes::default());
    let server = Server::new(registry(&probes), ServerOptions::new()).unwrap();
    let outbox = Arc::new(Collect::default());
    let decode =
        |s: &str| strict_mcp::codec::decode(s.as_bytes(), &server.ingress_limits()).unwrap();
    let first = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{}}}"#,
        ask_params(1, META_ELICIT, "")
    );
    server
        .serve(
            Caller::new("alice"),
            decode(&first),
            outbox.clone(),
            Default::default(),
        )
        .await;
    let reply = outbox.take_reply();
    let state = reply["result"]["requestState"].as_str().unwrap().to_owned();
    let extra = format!(r#"{},"requestState":"{state}""#, accept("q1"));
    let retry = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{}}}"#,
        ask_params(1, META_ELICIT, &extra)
    );
    server
        .serve(
            Caller::new("mallory"),
            decode(&retry),
            outbox.clone(),
            Default::default(),
        )
        .await;
    assert_eq!(
        outbox.take_reply()["error"]["data"]["reason"],
        "state_rejected"
    );
    // O5: after shutdown the epoch moved on and the old state is dead, even for alice
    // (and nothing is admitted any more).
    assert_eq!(
        server.shutdown(Duration::from_millis(100)).await,
        ShutdownReport::Stopped
    );
    server
        .serve(
            Caller::new("alice"),
            decode(&retry),
            outbox.clone(),
            Default::default(),
        )
        .await;
    assert_eq!(outbox.take_reply()["error"]["code"], -32603);
}

#[derive(Default)]
struct Collect {
    notes: std::sync::Mutex<Vec<String>>,
    replies: std::sync::Mutex<Vec<(String, u16)>>,
}

impl Collect {
    fn take_reply(&self) -> Value {
        let (line, _) = self.replies.lock().unwrap().pop().expect("a reply");
        serde_json::from_str(&line).unwrap()
    }
}

impl strict_mcp::server::Outbox for Collect {
    fn notify(&self, line: String) -> bool {
        self.notes.lock().unwrap().push(line);
        true
    }
    fn finish(&self, reply: strict_mcp::server::Reply) {
        self.replies
            .lock()
            .unwrap()
            .push((reply.line, reply.status));
    }
}

#[tokio::test]
async fn d_status_codes_travel_with_replies() {
    let probes = Arc::new(Probes::default());
    let server = Server::new(registry(&probes), ServerOptions::new()).unwrap();
    let outbox = Arc::new(Collect::default());
    let decode =
        |s: &str| strict_mcp::codec::decode(s.as_bytes(), &server.ingress_limits()).unwrap();
    let cases = [
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"nope","params":{}}"#.to_owned(),
            404,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#.to_owned(),
            400,
        ),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{}}}"#,
                req(r#""uri":"mem://nope""#)
            ),
            200,
        ),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}}"#,
                req("")
            ),
            200,
        ),
    ];
    for (line, status) in cases {
        server
            .serve(
                Caller::anonymous(),
                decode(&line),
                outbox.clone(),
                Default::default(),
            )
            .await;
        assert_eq!(
            outbox.replies.lock().unwrap().pop().unwrap().1,
            status,
            "{line}"
        );
    }
}

#[tokio::test]
async fn j_progress_goes_to_the_request_before_its_reply() {
    let mut p = start();
    let params = r#"{"uri":"mem://progress","_meta":{"progressToken":"tok-1","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}"#;
    let (notes, reply) = p.call(1, "resources/read", params).await;
    assert_eq!(reply["result"]["contents"][0]["text"], "done");
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(notes[0]["method"], "notifications/progress");
    assert_eq!(notes[0]["params"]["progressToken"], "tok-1");
    assert_eq!(notes[0]["params"]["progress"], 1.0);
    assert_eq!(notes[0]["params"]["total"], 2.0);
    assert_eq!(notes[0]["params"]["message"], "half");
    // O57: without a (valid) token, nothing is sent.
    let params = r#"{"uri":"mem://progress","_meta":{"progressToken":1.5,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}"#;
    let (notes, _) = p.call(2, "resources/read", params).await;
    assert!(notes.is_empty(), "{notes:?}");
    p.close().await;
}

#[tokio::test]
async fn k_listen_ack_first_list_changed_then_closing_result_and_cancelled_on_shutdown() {
    let mut p = start();
    p.send(&format!(
        r#"{{"jsonrpc":"2.0","id":"L1","method":"subscriptions/listen","params":{{"notifications":{{"toolsListChanged":true,"promptsListChanged":true,"resourceSubscriptions":["mem://hello"]}},"_meta":{META}}}}}"#
    ))
    .await;
    let ack = p.recv().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"],
        json!({"notifications":{"toolsListChanged":true,"promptsListChanged":true,"resourceSubscriptions":["mem://hello"]},"_meta":{"io.modelcontextprotocol/subscriptionId":"L1"}})
    );
    let probes = Arc::new(Probes::default());
    p.server.replace_registry(registry(&probes));
    let tools = p.recv().await;
    assert_eq!(tools["method"], "notifications/tools/list_changed");
    assert_eq!(
        tools["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "L1"
    );
    let prompts = p.recv().await;
    assert_eq!(prompts["method"], "notifications/prompts/list_changed");
    p.server.resource_updated("mem://other");
    p.server.resource_updated("mem://hello");
    let updated = p.recv().await;
    assert_eq!(updated["method"], "notifications/resources/updated");
    assert_eq!(updated["params"]["uri"], "mem://hello");
    let (rest, _, _) = p.close().await;
    assert_eq!(rest.len(), 2, "{rest:?}");
    assert_eq!(
        rest[0]["result"],
        json!({"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":"L1","io.modelcontextprotocol/serverInfo":server_info()}})
    );
    assert_eq!(rest[0]["id"], "L1");
    assert_eq!(
        rest[1],
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"L1"}})
    );
}

#[tokio::test]
async fn k9_client_cancels_listen_and_gets_no_reply() {
    let mut p = start();
    p.send(&format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"subscriptions/listen","params":{{"notifications":{{}},"_meta":{META}}}}}"#
    ))
    .await;
    let ack = p.recv().await;
    assert_eq!(ack["params"]["notifications"], json!({}));
    p.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}"#)
        .await;
    let (_, ok) = p.call(6, "server/discover", &req("")).await;
    assert!(ok.get("result").is_some());
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(p.server.status().listen_streams, 0);
    let (rest, _, _) = p.close().await;
    assert!(rest.is_empty(), "{rest:?}");
}

#[test]
fn o7_options_are_checked() {
    let probes = Arc::new(Probes::default());
    let err = |o: ServerOptions| Server::new(registry(&probes), o).unwrap_err().to_string();
    assert!(err(ServerOptions::new().mode("fast")).contains("fast"));
    assert!(err(ServerOptions::new().mode("direct").mode("compact")).contains("mode"));
    assert!(err(ServerOptions::new().server_info("", "1")).contains("identity"));
    assert!(Server::new(registry(&probes), ServerOptions::new().mode("")).is_ok());
    assert_eq!(
        Server::new(registry(&probes), ServerOptions::new())
            .unwrap()
            .mode(),
        strict_mcp::server::PublishMode::Compact
    );
}

/// C1, C11 against a real child process: the example server spoken to over real pipes.
#[tokio::test]
async fn c1_c11_real_binary_speaks_json_lines_and_exits_on_eof() {
    let exe = example_binary("stdio_server");
    let mut child = tokio::process::Command::new(&exe)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn the example server");
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let input = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{{\"_meta\":{META}}}}}\n\
         garbage\n\
         {{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\",\"params\":{{}}}}\n\
         {{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\",\"params\":{{\"_meta\":{META}}}}}\n"
    );
    stdin.write_all(input.as_bytes()).await.unwrap();
    drop(stdin);
    let mut lines = BufReader::new(stdout).lines();
    let mut by_id = BTreeMap::new();
    while let Some(line) = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("output within 20 s")
        .unwrap()
    {
        assert_jsonrpc_line(&line);
        let v: Value = serde_json::from_str(&line).unwrap();
        by_id.insert(v["id"].to_string(), v);
    }
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("exits after EOF")
        .unwrap();
    assert!(status.success());
    assert_eq!(
        by_id["1"]["result"]["supportedVersions"],
        json!(["2026-07-28"])
    );
    assert_eq!(by_id["null"]["error"]["code"], -32700);
    assert_eq!(by_id["2"]["error"]["code"], -32601);
    assert!(by_id["3"]["result"]["tools"].is_array());
    assert_eq!(by_id.len(), 4);
}

/// The example binary next to this test's executable, built first if missing.
fn example_binary(name: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap();
    let path = dir.join("examples").join(name);
    if !path.exists() {
        let status = std::process::Command::new(env!("CARGO"))
            .args(["build", "--example", name])
            .status()
            .expect("cargo build");
        assert!(status.success());
    }
    path
}

fn call_tool(inner: &str, args: &str, meta: &str, extra: &str) -> String {
    format!(
        r#"{{"name":"call_tool","arguments":{{"name":"{inner}","arguments":{args}}}{extra},"_meta":{meta}}}"#
    )
}

#[tokio::test]
async fn o11_h1_compact_tools_list_is_three_tools_with_cache_hints() {
    let mut p = start();
    let (_, reply) = p.call(1, "tools/list", &req("")).await;
    let result = &reply["result"];
    let names: Vec<&str> = result["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["search_tools", "get_tool_details", "call_tool"]);
    assert_eq!(result["ttlMs"], 0);
    assert_eq!(result["cacheScope"], "private");
    assert_eq!(result["resultType"], "complete");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"],
        server_info()
    );
    p.close().await;
}

#[tokio::test]
async fn o14_compact_call_tool_wraps_the_value() {
    let mut p = start();
    let (_, reply) = p
        .call(
            1,
            "tools/call",
            &call_tool("echo", r#"{"text":"hi"}"#, META, ""),
        )
        .await;
    let result = &reply["result"];
    assert_eq!(result["structuredContent"], json!({"value":{"text":"hi"}}));
    assert_eq!(result["resultType"], "complete");
    assert!(result.get("ttlMs").is_none(), "tools/call is not cacheable");
    assert!(result.get("isError").is_none());
    // E11/X17: an unknown outer tool is -32602.
    let (_, unknown) = p
        .call(
            2,
            "tools/call",
            &format!(r#"{{"name":"nope","_meta":{META}}}"#),
        )
        .await;
    assert_eq!(unknown["error"]["code"], -32602);
    p.close().await;
}

#[tokio::test]
async fn o51_discovery_tools_refuse_continuations() {
    let mut p = start();
    let params = format!(
        r#"{{"name":"search_tools","arguments":{{"query":"echo"}},"requestState":"abc","_meta":{META}}}"#
    );
    let (_, reply) = p.call(1, "tools/call", &params).await;
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    p.close().await;
}

#[tokio::test]
async fn i1_o47_o50_o53_tools_call_mrtr_through_compact_call_tool() {
    let mut p = start();
    let args = r#"{"item":"x"}"#;
    let (_, first) = p
        .call(
            1,
            "tools/call",
            &call_tool("confirm", args, META_ELICIT, ""),
        )
        .await;
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    assert_eq!(
        result["inputRequests"]["confirm"]["method"],
        "elicitation/create"
    );
    assert!(result.get("content").is_none() && result.get("structuredContent").is_none());
    let state = result["requestState"].as_str().unwrap().to_owned();
    // Tampered state: a state_rejected tool failure, not a protocol error (O50).
    let mut bytes = state.clone().into_bytes();
    bytes[30] = if bytes[30] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(bytes).unwrap();
    let extra = format!(
        r#","inputResponses":{{"confirm":{{"action":"accept","content":{{"ok":true}}}}}},"requestState":"{tampered}""#
    );
    let (_, bad) = p
        .call(
            2,
            "tools/call",
            &call_tool("confirm", args, META_ELICIT, &extra),
        )
        .await;
    assert_eq!(bad["result"]["isError"], true, "{bad}");
    assert_eq!(
        bad["result"]["structuredContent"]["failure"]["code"],
        "state_rejected"
    );
    // The real answer completes the call.
    let extra = format!(
        r#","inputResponses":{{"confirm":{{"action":"accept","content":{{"ok":true}}}}}},"requestState":"{state}""#
    );
    let (_, done) = p
        .call(
            3,
            "tools/call",
            &call_tool("confirm", args, META_ELICIT, &extra),
        )
        .await;
    assert_eq!(
        done["result"]["structuredContent"],
        json!({"value":{"deleted":"x"}}),
        "{done}"
    );
    // Replaying it is recovery-only dispatch: the tool did not opt in, so already_completed.
    let (_, replay) = p
        .call(
            4,
            "tools/call",
            &call_tool("confirm", args, META_ELICIT, &extra),
        )
        .await;
    assert_eq!(
        replay["result"]["structuredContent"]["failure"]["code"], "already_completed",
        "{replay}"
    );
    p.close().await;
}

#[tokio::test]
async fn o40_a_too_large_tool_result_becomes_result_too_large() {
    let mut p = start();
    let (_, reply) = p
        .call(1, "tools/call", &call_tool("big", "{}", META, ""))
        .await;
    assert_eq!(reply["result"]["isError"], true);
    assert_eq!(
        reply["result"]["structuredContent"]["failure"]["code"],
        "result_too_large"
    );
    assert_eq!(
        reply["result"]["_meta"]["io.modelcontextprotocol/serverInfo"],
        server_info()
    );
    p.close().await;
}

#[tokio::test]
async fn o29_o44_tool_result_numbers_keep_their_exact_text_on_the_wire() {
    let mut p = start();
    p.send(&format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}}"#,
        call_tool("exact", "{}", META, "")
    ))
    .await;
    let line = p.recv_line().await;
    assert!(
        line.contains(
            r#""structuredContent":{"value":{"n":1.50,"big":123456789012345678901234567890}}"#
        ),
        "{line}"
    );
    p.close().await;
}

#[tokio::test]
async fn o21_direct_mode_publishes_native_tools() {
    let mut p = start_with(ServerOptions::new().mode("direct"));
    let (_, list) = p.call(1, "tools/list", &req("")).await;
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["big", "confirm", "echo", "exact"]);
    let (_, call) = p
        .call(
            2,
            "tools/call",
            &format!(r#"{{"name":"echo","arguments":{{"text":"yo"}},"_meta":{META}}}"#),
        )
        .await;
    assert_eq!(
        call["result"]["structuredContent"],
        json!({"value":{"text":"yo"}})
    );
    p.close().await;
}
