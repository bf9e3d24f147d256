//! Production knobs of a server author (#22 item 10): the request and response caps as
//! options with named bounds (O36, O39: the protocol's sizes are the defaults and the hard
//! maxima), the `tools/call` time-out (per tool and per server, answered like the read
//! time-out of O33), and the one completion event per request (`tracing`, target
//! `strict_mcp::request`). Its own binary: it installs a global subscriber.
#![forbid(unsafe_code)]
#![cfg(all(feature = "http", feature = "cli"))]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::Request;
use serde_json::{json, Value};
use tower::ServiceExt as _;

use strict_mcp::core::descriptor::{ContentBlock, ResourceContents};
use strict_mcp::core::{
    BuildError, Caller, CancelToken, DynamicOutput, Invocation, ReadReply, Registry,
    RegistryBuilder, ResourceDef, ToolDef, ToolFailure, MAX_TIMEOUT, MIN_TIMEOUT,
};
use strict_mcp::server::http::{HttpConfig, McpHttp};
use strict_mcp::server::log::{COMPLETION_TARGET, MAX_LOGGED_NAME};
use strict_mcp::server::{
    ConfigError, Outbox, PublishMode, Reply, Server, ServerOptions, DEFAULT_TOOL_TIMEOUT,
    MAX_REQUEST_BYTES, MAX_RESPONSE_BYTES, MIN_REQUEST_BYTES, MIN_RESPONSE_BYTES,
};
use strict_mcp::wire::limits::RESPONSE_RESERVE_BYTES;

#[derive(Default)]
struct Collect {
    replies: Mutex<Vec<Reply>>,
}

impl Outbox for Collect {
    fn notify(&self, _line: String) -> bool {
        true
    }
    fn finish(&self, reply: Reply) {
        self.replies.lock().unwrap().push(reply);
    }
}

impl Collect {
    fn only_line(&self) -> String {
        let replies = self.replies.lock().unwrap();
        assert_eq!(replies.len(), 1, "{:?}", *replies);
        replies[0].line.clone()
    }
}

fn request(method: &str, params: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{{{params},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
    )
}

/// Serves one line and returns the one reply line.
async fn serve(server: &Server, line: &str) -> String {
    let outbox = Arc::new(Collect::default());
    let message = strict_mcp::codec::decode(line.as_bytes(), &server.ingress_limits()).unwrap();
    server
        .serve(
            Caller::anonymous(),
            message,
            outbox.clone(),
            CancelToken::new(),
        )
        .await;
    outbox.only_line()
}

async fn serve_json(server: &Server, line: &str) -> Value {
    serde_json::from_str(&serve(server, line).await).unwrap()
}

/// A dynamic tool answering `n` bytes of `x` as its only text block: each byte of `n` is one
/// byte of the result (nothing to escape, no structured copy).
fn blob() -> ToolDef {
    ToolDef::dynamic(
        "blob",
        r#"{"type":"object","properties":{"n":{"type":"integer","minimum":0}},"required":["n"]}"#,
        None,
        |_: Invocation, args: Box<serde_json::value::RawValue>| async move {
            let n: Value = serde_json::from_str(args.get()).unwrap();
            let n = usize::try_from(n["n"].as_u64().unwrap()).unwrap();
            Ok(DynamicOutput {
                content: vec![ContentBlock::text("x".repeat(n))],
                structured: None,
            })
        },
    )
}

/// A dynamic tool that takes one string and answers `{}`-free text "ok".
fn echo() -> ToolDef {
    ToolDef::dynamic(
        "echo",
        r#"{"type":"object","properties":{"text":{"type":"string"}}}"#,
        None,
        |_: Invocation, _args: Box<serde_json::value::RawValue>| async move {
            Ok(DynamicOutput {
                content: vec![ContentBlock::text("ok")],
                structured: None,
            })
        },
    )
}

fn registry(tools: Vec<ToolDef>) -> Registry {
    let mut builder = RegistryBuilder::new();
    for tool in tools {
        builder = builder.tool(tool);
    }
    builder.build().unwrap()
}

fn direct() -> ServerOptions {
    ServerOptions::new().mode(PublishMode::Direct)
}

#[test]
fn o36_o39_the_caps_are_checked_at_their_bounds_and_one_past() {
    let built = |options: ServerOptions| Server::new(registry(vec![echo()]), options);
    // Defaults are the protocol's sizes.
    let server = built(ServerOptions::new()).unwrap();
    assert_eq!(server.ingress_limits().max_frame_bytes, 2 * 1024 * 1024);
    assert_eq!(server.egress_limits().max_message_bytes, 16 * 1024 * 1024);
    assert_eq!(MAX_REQUEST_BYTES, 2 * 1024 * 1024);
    assert_eq!(MAX_RESPONSE_BYTES, 16 * 1024 * 1024);
    for (n, ok) in [
        (MIN_REQUEST_BYTES, true),
        (MIN_REQUEST_BYTES - 1, false),
        (MAX_REQUEST_BYTES, true),
        (MAX_REQUEST_BYTES + 1, false),
    ] {
        match built(ServerOptions::new().max_request_bytes(n)) {
            Ok(server) => {
                assert!(ok, "{n}");
                assert_eq!(server.ingress_limits().max_frame_bytes, n);
            }
            Err(e) => {
                assert!(!ok, "{n}");
                assert_eq!(
                    e,
                    ConfigError::InvalidLimit {
                        option: "max_request_bytes",
                        value: n,
                        min: MIN_REQUEST_BYTES,
                        max: MAX_REQUEST_BYTES,
                    }
                );
            }
        }
    }
    for (n, ok) in [
        (MIN_RESPONSE_BYTES, true),
        (MIN_RESPONSE_BYTES - 1, false),
        (MAX_RESPONSE_BYTES, true),
        (MAX_RESPONSE_BYTES + 1, false),
    ] {
        match built(ServerOptions::new().max_response_bytes(n)) {
            Ok(server) => {
                assert!(ok, "{n}");
                assert_eq!(server.egress_limits().max_message_bytes, n);
            }
            Err(e) => {
                assert!(!ok, "{n}");
                assert_eq!(
                    e,
                    ConfigError::InvalidLimit {
                        option: "max_response_bytes",
                        value: n,
                        min: MIN_RESPONSE_BYTES,
                        max: MAX_RESPONSE_BYTES,
                    }
                );
            }
        }
    }
    let twice = built(
        ServerOptions::new()
            .max_request_bytes(MIN_REQUEST_BYTES)
            .max_request_bytes(MIN_REQUEST_BYTES),
    );
    assert_eq!(
        twice.unwrap_err(),
        ConfigError::Repeated("max_request_bytes")
    );
}

/// A `tools/call` of `echo` whose encoded body is exactly `len` bytes (padding in `text`).
fn echo_body(len: usize) -> String {
    let body = |pad: usize| {
        request(
            "tools/call",
            &format!(
                r#""name":"echo","arguments":{{"text":"{}"}}"#,
                "p".repeat(pad)
            ),
        )
    };
    let base = body(0).len();
    assert!(len >= base);
    let out = body(len - base);
    assert_eq!(out.len(), len);
    out
}

async fn post(mcp: &McpHttp<Server>, body: String) -> (u16, Value) {
    let request = Request::post("/mcp")
        .header("host", "127.0.0.1")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "echo")
        .body(Full::new(Bytes::from(body)))
        .unwrap();
    let response = mcp.clone().oneshot(request).await.unwrap();
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap())
}

#[tokio::test]
async fn o36_a_configured_request_cap_holds_over_http_and_in_the_codec() {
    let server = Server::new(
        registry(vec![echo()]),
        direct().max_request_bytes(MIN_REQUEST_BYTES),
    )
    .unwrap();
    // The same limits every transport decodes with: the bound itself passes, one more not.
    let limits = server.ingress_limits();
    assert!(strict_mcp::codec::decode(echo_body(MIN_REQUEST_BYTES).as_bytes(), &limits).is_ok());
    assert!(
        strict_mcp::codec::decode(echo_body(MIN_REQUEST_BYTES + 1).as_bytes(), &limits).is_err()
    );
    let mcp = McpHttp::new(server, HttpConfig::default());
    let (status, reply) = post(&mcp, echo_body(MIN_REQUEST_BYTES)).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(
        reply["result"]["content"],
        json!([{"text":"ok","type":"text"}])
    );
    let (status, reply) = post(&mcp, echo_body(MIN_REQUEST_BYTES + 1)).await;
    assert_eq!(status, 413);
    assert_eq!(
        reply,
        json!({"jsonrpc":"2.0","id":null,"error":{"code":-32600,
            "message":"request body exceeds the 16384-byte limit"}})
    );
}

#[tokio::test]
async fn o39_a_configured_response_cap_holds_at_the_bound_and_one_past() {
    let call = |n: usize| {
        request(
            "tools/call",
            &format!(r#""name":"blob","arguments":{{"n":{n}}}"#),
        )
    };
    // The payload (the `result` text) of an empty blob, measured with the default cap.
    let roomy = Server::new(registry(vec![blob()]), direct()).unwrap();
    let line = serve(&roomy, &call(0)).await;
    let overhead = r#"{"jsonrpc":"2.0","id":1,"result":}"#.len();
    let empty_payload = line.len() - overhead;
    // The cap less its 8 KiB reserve is what a result may take (O39).
    let room = MIN_RESPONSE_BYTES - RESPONSE_RESERVE_BYTES;
    let fits = room - empty_payload;
    let server = Server::new(
        registry(vec![blob()]),
        direct().max_response_bytes(MIN_RESPONSE_BYTES),
    )
    .unwrap();
    let line = serve(&server, &call(fits)).await;
    assert_eq!(line.len() - overhead, room);
    let reply: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(
        reply["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .len(),
        fits
    );
    assert!(reply["result"].get("isError").is_none(), "{line}");
    // One byte more is the result_too_large failure (O40), not a broken reply.
    let reply = serve_json(&server, &call(fits + 1)).await;
    assert_eq!(reply["result"]["isError"], json!(true), "{reply}");
    assert_eq!(
        reply["result"]["structuredContent"]["failure"]["code"],
        json!("result_too_large")
    );
    // The default cap takes the same result without complaint.
    let reply = serve_json(&roomy, &call(fits + 1)).await;
    assert!(reply["result"].get("isError").is_none(), "{reply}");
}

/// A typed-free tool that sleeps `wait` (tokio's clock) and then answers "done".
fn sleeper(name: &str, wait: Duration) -> ToolDef {
    ToolDef::dynamic(
        name,
        r#"{"type":"object"}"#,
        None,
        move |_: Invocation, _args: Box<serde_json::value::RawValue>| async move {
            tokio::time::sleep(wait).await;
            Ok(DynamicOutput {
                content: vec![ContentBlock::text("done")],
                structured: None,
            })
        },
    )
}

fn timed_out(name: &str) -> Value {
    json!({"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Tool call timed out",
        "data":{"name":name,"retryable":true}}})
}

#[tokio::test(start_paused = true)]
async fn tool_time_out_per_tool_at_the_bound_and_one_past_on_virtual_time() {
    const LIMIT: Duration = Duration::from_secs(5);
    let server = Server::new(
        registry(vec![
            sleeper("in_time", LIMIT - Duration::from_millis(1)).timeout(LIMIT),
            sleeper("on_the_tick", LIMIT).timeout(LIMIT),
        ]),
        direct(),
    )
    .unwrap();
    let started = tokio::time::Instant::now();
    let reply = serve_json(
        &server,
        &request("tools/call", r#""name":"in_time","arguments":{}"#),
    )
    .await;
    assert_eq!(
        reply["result"]["content"],
        json!([{"text":"done","type":"text"}]),
        "{reply}"
    );
    let reply = serve_json(
        &server,
        &request("tools/call", r#""name":"on_the_tick","arguments":{}"#),
    )
    .await;
    assert_eq!(reply, timed_out("on_the_tick"));
    assert_eq!(started.elapsed(), LIMIT * 2 - Duration::from_millis(1));
}

#[tokio::test(start_paused = true)]
async fn tool_time_out_server_default_bounds_tools_without_their_own_in_both_modes() {
    const LIMIT: Duration = Duration::from_secs(2);
    let saw_cancel = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&saw_cancel);
    let stuck = ToolDef::dynamic(
        "stuck",
        r#"{"type":"object"}"#,
        None,
        move |inv: Invocation, _args: Box<serde_json::value::RawValue>| {
            let flag = Arc::clone(&flag);
            async move {
                inv.cancelled().await;
                flag.store(true, Ordering::SeqCst);
                Err(ToolFailure::internal().into())
            }
        },
    );
    let tools = || {
        vec![
            sleeper("quick", Duration::from_secs(1)),
            // Its own, longer limit wins over the server's.
            sleeper("patient", Duration::from_secs(3)).timeout(Duration::from_secs(4)),
        ]
    };
    let mut with_stuck = tools();
    with_stuck.push(stuck);
    let server = Server::new(registry(with_stuck), direct().tool_timeout(LIMIT)).unwrap();
    assert_eq!(server.tool_timeout(), LIMIT);
    let call = |name: &str| {
        request(
            "tools/call",
            &format!(r#""name":"{name}","arguments":{{}}"#),
        )
    };
    let reply = serve_json(&server, &call("stuck")).await;
    assert_eq!(reply, timed_out("stuck"));
    assert!(
        saw_cancel.load(Ordering::SeqCst),
        "the handler's token fired"
    );
    for name in ["quick", "patient"] {
        let reply = serve_json(&server, &call(name)).await;
        assert_eq!(
            reply["result"]["content"][0]["text"],
            json!("done"),
            "{reply}"
        );
    }
    // Compact mode bounds the wrapped tool by the wrapped tool's own limit.
    let compact = Server::new(
        registry(vec![sleeper("slow", Duration::from_secs(3))]),
        ServerOptions::new().tool_timeout(LIMIT),
    )
    .unwrap();
    let wrapped = request(
        "tools/call",
        r#""name":"call_tool","arguments":{"name":"slow","arguments":{}}"#,
    );
    assert_eq!(serve_json(&compact, &wrapped).await, timed_out("slow"));
}

#[test]
fn tool_time_out_options_are_checked_at_their_bounds() {
    let built = |options: ServerOptions| Server::new(registry(vec![echo()]), options);
    assert_eq!(
        built(ServerOptions::new()).unwrap().tool_timeout(),
        DEFAULT_TOOL_TIMEOUT
    );
    assert_eq!(DEFAULT_TOOL_TIMEOUT, Duration::from_secs(600));
    for (t, ok) in [
        (MIN_TIMEOUT, true),
        (MIN_TIMEOUT - Duration::from_nanos(1), false),
        (MAX_TIMEOUT, true),
        (MAX_TIMEOUT + Duration::from_millis(1), false),
    ] {
        let server = built(ServerOptions::new().tool_timeout(t));
        assert_eq!(server.is_ok(), ok, "{t:?}");
        if !ok {
            assert_eq!(
                server.unwrap_err(),
                ConfigError::InvalidTimeout {
                    option: "tool_timeout",
                    value: t,
                }
            );
        }
        let built = RegistryBuilder::new().tool(echo().timeout(t)).build();
        match built {
            Ok(registry) => {
                assert!(ok, "{t:?}");
                assert_eq!(registry.tool_timeout("echo"), Some(t));
            }
            Err(e) => {
                assert!(!ok, "{t:?}");
                assert!(
                    matches!(e, BuildError::InvalidTimeout { kind: "tool", ref name, timeout }
                        if name == "echo" && timeout == t),
                    "{e:?}"
                );
            }
        }
    }
}

#[derive(Clone, Default)]
struct LogBuffer(Arc<Mutex<Vec<u8>>>);
impl std::io::Write for LogBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The process-wide subscriber (INFO, plain text), installed once.
fn logs() -> &'static LogBuffer {
    static LOGS: OnceLock<LogBuffer> = OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = LogBuffer::default();
        let writer = logs.clone();
        tracing::subscriber::set_global_default(
            tracing_subscriber::fmt()
                .with_max_level(tracing::Level::INFO)
                .with_ansi(false)
                .with_writer(move || writer.clone())
                .finish(),
        )
        .unwrap();
        logs
    })
}

/// The completion lines logged so far that contain `needle`.
fn completions(needle: &str) -> Vec<String> {
    let text = String::from_utf8(logs().0.lock().unwrap().clone()).unwrap();
    text.lines()
        .filter(|l| l.contains("request completed") && l.contains(needle))
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn one_completion_event_per_request_with_method_name_latency_and_outcome() {
    logs();
    assert_eq!(COMPLETION_TARGET, "strict_mcp::request");
    let failing = ToolDef::dynamic(
        "log_fails",
        r#"{"type":"object"}"#,
        None,
        |_: Invocation, _args: Box<serde_json::value::RawValue>| async move {
            Err(ToolFailure::internal().into())
        },
    );
    let registry = RegistryBuilder::new()
        .tool(sleeper("log_ok", Duration::ZERO))
        .tool(failing)
        .resource(ResourceDef::new(
            "mem://log-note",
            "note",
            |_: Invocation, uri: String| async move {
                Ok(ReadReply::new(vec![ResourceContents::text(uri, "hi")]))
            },
        ))
        .build()
        .unwrap();
    let server = Server::new(registry, direct()).unwrap();
    let call = |name: &str| {
        request(
            "tools/call",
            &format!(r#""name":"{name}","arguments":{{}}"#),
        )
    };
    serve(&server, &call("log_ok")).await;
    serve(&server, &call("log_fails")).await;
    serve(&server, &call("log_missing")).await;
    serve(
        &server,
        &request("resources/read", r#""uri":"mem://log-note""#),
    )
    .await;
    let long = format!("log_{}é", "n".repeat(MAX_LOGGED_NAME - 5));
    assert_eq!(long.len(), MAX_LOGGED_NAME + 1);
    serve(&server, &call(&long)).await;

    let fields = |line: &str| {
        let at = line.find("request completed").unwrap();
        line[at..].to_owned()
    };
    let latency = regex_free_latency;
    for (needle, method, name, outcome, code) in [
        ("\"log_ok\"", "tools/call", "log_ok", "result", 0),
        ("\"log_fails\"", "tools/call", "log_fails", "tool_error", 0),
        (
            "\"log_missing\"",
            "tools/call",
            "log_missing",
            "error",
            -32602,
        ),
        (
            "mem://log-note",
            "resources/read",
            "mem://log-note",
            "result",
            0,
        ),
    ] {
        let lines = completions(needle);
        assert_eq!(lines.len(), 1, "{needle}: {lines:?}");
        let line = &lines[0];
        assert!(line.contains(" INFO strict_mcp::request: "), "{line}");
        let us = latency(line);
        assert_eq!(
            fields(line),
            format!(
                "request completed method=\"{method}\" name=\"{name}\" latency_us={us} \
                 outcome=\"{outcome}\" code={code}"
            )
        );
    }
    // A client's long name is cut to MAX_LOGGED_NAME bytes at a character boundary: the
    // two-byte `é` that would end at byte 129 is dropped whole.
    let lines = completions("log_nnn");
    assert_eq!(lines.len(), 1, "{lines:?}");
    let kept = &long[..MAX_LOGGED_NAME - 1];
    assert!(
        lines[0].contains(&format!("name=\"{kept}\" ")),
        "{}",
        lines[0]
    );
}

#[tokio::test]
async fn the_completion_event_names_compact_modes_wrapped_tool() {
    logs();
    let server = Server::new(
        registry(vec![sleeper("log_wrapped", Duration::ZERO)]),
        ServerOptions::new(),
    )
    .unwrap();
    let wrapped = request(
        "tools/call",
        r#""name":"call_tool","arguments":{"name":"log_wrapped","arguments":{}}"#,
    );
    serve(&server, &wrapped).await;
    let lines = completions("name=\"log_wrapped\"");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("outcome=\"result\" code=0"),
        "{}",
        lines[0]
    );
}

/// The `latency_us` value of a completion line (digits only).
fn regex_free_latency(line: &str) -> u64 {
    let at = line.find("latency_us=").unwrap() + "latency_us=".len();
    let digits: String = line[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().unwrap()
}
