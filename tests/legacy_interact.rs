//! The legacy interaction loop (feature `legacy`, issue #18; O126, O127, X22) over stdio and
//! legacy Streamable HTTP: a handler's `input_required` becomes one server-sent request per
//! input, the client's response re-enters the core once; failure stops the loop without a
//! retry; discovery stays usable while an answer is pending; cancellation drops the pending
//! answer; June lowering and refusals; progress monotonic and paced across invocations.
//! Exact bytes on the wire; nothing listens (stdio over in-process pipes, HTTP through the
//! service directly).
#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Request, Response};
use serde_json::{json, Value};
use strict_mcp::core::descriptor::ContentBlock;
use strict_mcp::core::{
    Caller, DynamicOutput, Invocation, Outcome, Registry, RegistryBuilder, ToolDef, ToolError,
};
use strict_mcp::server::http::{HttpBody, HttpConfig, McpHttp};
use strict_mcp::server::{Server, ServerOptions};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

const NO_ARGS: &str = r#"{"type":"object","properties":{},"additionalProperties":false}"#;

/// Core invocations of the `ask` tool (one per entry into the core).
type Count = Arc<AtomicUsize>;

fn done(text: impl Into<String>) -> Result<Outcome<DynamicOutput>, ToolError> {
    Ok(Outcome::Complete(DynamicOutput {
        content: vec![ContentBlock::text(text.into())],
        structured: None,
    }))
}

/// A tool that asks `request(inv)` under key `input` and answers with the raw answer.
fn asking(
    name: &'static str,
    count: &Count,
    request: fn(&Invocation) -> Result<strict_mcp::core::InputRequest, ToolError>,
) -> ToolDef {
    let count = Arc::clone(count);
    ToolDef::dynamic_interactive(name, NO_ARGS, None, move |inv: Invocation, _args| {
        count.fetch_add(1, Ordering::SeqCst);
        async move {
            match inv.input_response("input") {
                Some(raw) => done(format!("answer: {}", raw.get())),
                None => Ok(Outcome::input("input", request(&inv)?)),
            }
        }
    })
    .description("Asks the client once.")
}

fn registry(count: &Count) -> Registry {
    let seen = Arc::clone(count);
    RegistryBuilder::new()
        .tool(
            ToolDef::dynamic("wait", NO_ARGS, None, move |inv: Invocation, _args| {
                let seen = Arc::clone(&seen);
                async move {
                    // Ends only when cancelled; the count proves the handler saw it.
                    inv.cancel_token().cancelled().await;
                    seen.fetch_add(100, Ordering::SeqCst);
                    Ok(DynamicOutput {
                        content: vec![ContentBlock::text("cancelled")],
                        structured: None,
                    })
                }
            })
            .description("Waits for its cancellation."),
        )
        .tool(asking("ask", count, |inv| {
            Ok(inv.elicit_form(
                "Your name?",
                json!({"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}),
            )?)
        }))
        .tool(asking("choose", count, |inv| {
            Ok(inv.elicit_form(
                "Pick one",
                json!({"type":"object","properties":{"c":{"type":"string","title":"Choice","oneOf":[
                    {"const":"a","title":"A"},{"const":"b","title":"B"}]}}}),
            )?)
        }))
        .tool(asking("multi", count, |inv| {
            Ok(inv.elicit_form(
                "Pick some",
                json!({"type":"object","properties":{"m":{"type":"array","items":{"type":"string","enum":["a","b"]}}}}),
            )?)
        }))
        .tool(asking("sample", count, |inv| {
            Ok(inv.sample(json!({"messages":[{"role":"user","content":{"text":"hi","type":"text"}}],"maxTokens":5}))?)
        }))
        .tool(asking("roots", count, |inv| Ok(inv.list_roots()?)))
        .tool(
            ToolDef::dynamic_interactive("paced", NO_ARGS, None, |inv: Invocation, _args| async move {
                if inv.input_response("input").is_none() {
                    inv.report_progress(1.0, Some(4.0), None);
                    return Ok(Outcome::input("input", inv.list_roots()?));
                }
                // A re-entered core starts its own pacing afresh; the loop keeps the outer
                // call's progress growing and spaced.
                inv.report_progress(0.5, Some(4.0), None);
                tokio::time::sleep(Duration::from_millis(150)).await;
                inv.report_progress(3.0, Some(4.0), None);
                done("paced")
            })
            .description("Reports progress in both invocations."),
        )
        .build()
        .expect("registry builds")
}

fn server(count: &Count) -> Server {
    Server::new(
        registry(count),
        ServerOptions::new()
            .legacy_era(true)
            .server_info("legacy-interact", "1.0.0")
            .mode("direct"),
    )
    .expect("server builds")
}

fn initialize(version: &str, capabilities: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{version}","capabilities":{capabilities},"clientInfo":{{"name":"old","version":"1"}}}}}}"#
    )
}

fn call(id: u32, tool: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{}}}}}}"#
    )
}

fn text_result(id: u32, text: &str) -> String {
    let text = Value::String(text.to_owned()).to_string();
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"text":{text},"type":"text"}}]}}}}"#
    )
}

const CONFIRMATION: &str = r#"{"content":[{"text":"{\"failure\":{\"code\":\"confirmation_required\",\"message\":\"This tool needs an answer from the user, which this client session cannot provide.\",\"retryable\":false}}","type":"text"}],"isError":true,"structuredContent":{"failure":{"code":"confirmation_required","message":"This tool needs an answer from the user, which this client session cannot provide.","retryable":false}}}"#;

const ASK_NAME: &str = r#"{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"message":"Your name?","mode":"form","requestedSchema":{"properties":{"name":{"type":"string"}},"required":["name"],"type":"object"}}}"#;

// ---------------------------------------------------------------------------------------
// stdio

struct Stdio {
    writer: DuplexStream,
    lines: Lines<BufReader<DuplexStream>>,
}

impl Stdio {
    async fn start(count: &Count, version: &str, capabilities: &str) -> Stdio {
        Stdio::start_on(server(count), version, capabilities).await
    }

    /// A session of `server` at `version`, initialised with `capabilities`.
    async fn start_on(server: Server, version: &str, capabilities: &str) -> Stdio {
        let (client_w, server_r) = tokio::io::duplex(1 << 20);
        let (server_w, client_r) = tokio::io::duplex(1 << 20);
        tokio::spawn(async move {
            server
                .run_stdio_on(Caller::new("alice"), server_r, server_w)
                .await
        });
        let mut p = Stdio {
            writer: client_w,
            lines: BufReader::new(client_r).lines(),
        };
        p.send(&initialize(version, capabilities)).await;
        let init = p.recv().await;
        assert!(init.contains(r#""result""#), "{init}");
        p
    }

    async fn send(&mut self, line: &str) {
        self.writer.write_all(line.as_bytes()).await.unwrap();
        self.writer.write_all(b"\n").await.unwrap();
    }

    async fn recv(&mut self) -> String {
        tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
            .await
            .expect("a line within 10 s")
            .expect("readable")
            .expect("not EOF")
    }

    /// Nothing more within `wait`.
    async fn silent(&mut self, wait: Duration) {
        if let Ok(line) = tokio::time::timeout(wait, self.lines.next_line()).await {
            panic!("unexpected line: {line:?}");
        }
    }
}

const NOVEMBER_CAPS: &str = r#"{"elicitation":{},"sampling":{},"roots":{"listChanged":true}}"#;

/// O126: one server-sent `elicitation/create`, the client's answer re-enters the core once,
/// and the final reply is the legacy one.
#[tokio::test]
async fn o126_stdio_an_elicitation_round_re_enters_the_core_once() {
    let count = Count::default();
    let mut p = Stdio::start(&count, "2025-11-25", NOVEMBER_CAPS).await;
    p.send(&call(7, "ask")).await;
    assert_eq!(p.recv().await, ASK_NAME);
    p.send(r#"{"jsonrpc":"2.0","id":1,"result":{"action":"accept","content":{"name":"Ada"}}}"#)
        .await;
    assert_eq!(
        p.recv().await,
        text_result(7, r#"answer: {"action":"accept","content":{"name":"Ada"}}"#)
    );
    assert_eq!(
        count.load(Ordering::SeqCst),
        2,
        "invoked, then re-entered once"
    );
}

/// O126: sampling and roots go the same way, each with a fresh adapter id.
#[tokio::test]
async fn o126_stdio_sampling_and_roots_are_asked_of_the_client() {
    let count = Count::default();
    let mut p = Stdio::start(&count, "2025-11-25", NOVEMBER_CAPS).await;
    p.send(&call(3, "sample")).await;
    assert_eq!(
        p.recv().await,
        r#"{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{"maxTokens":5,"messages":[{"content":{"text":"hi","type":"text"},"role":"user"}]}}"#
    );
    p.send(r#"{"jsonrpc":"2.0","id":1,"result":{"role":"assistant","content":{"text":"yo","type":"text"},"model":"m"}}"#).await;
    assert_eq!(
        p.recv().await,
        text_result(
            3,
            r#"answer: {"role":"assistant","content":{"text":"yo","type":"text"},"model":"m"}"#
        )
    );
    p.send(&call(4, "roots")).await;
    assert_eq!(
        p.recv().await,
        r#"{"jsonrpc":"2.0","id":2,"method":"roots/list"}"#
    );
    p.send(r#"{"jsonrpc":"2.0","id":2,"result":{"roots":[]}}"#)
        .await;
    assert_eq!(p.recv().await, text_result(4, r#"answer: {"roots":[]}"#));
}

/// O126: discovery (and every other request) is served while an answer is pending.
#[tokio::test]
async fn o126_stdio_discovery_stays_usable_while_an_answer_is_pending() {
    let count = Count::default();
    let mut p = Stdio::start(&count, "2025-11-25", NOVEMBER_CAPS).await;
    p.send(&call(7, "ask")).await;
    assert_eq!(p.recv().await, ASK_NAME);
    p.send(r#"{"jsonrpc":"2.0","id":8,"method":"ping"}"#).await;
    assert_eq!(p.recv().await, r#"{"jsonrpc":"2.0","id":8,"result":{}}"#);
    p.send(r#"{"jsonrpc":"2.0","id":9,"method":"tools/list"}"#)
        .await;
    let listed = p.recv().await;
    assert!(
        listed.starts_with(r#"{"jsonrpc":"2.0","id":9,"result":{"tools":["#),
        "{listed}"
    );
    p.send(r#"{"jsonrpc":"2.0","id":1,"result":{"action":"decline"}}"#)
        .await;
    assert_eq!(
        p.recv().await,
        text_result(7, r#"answer: {"action":"decline"}"#)
    );
}

/// O126: a client error stops the loop with the X22 failure; nothing is retried (the core
/// was entered once) and a late answer to the same id answers nothing.
#[tokio::test]
async fn o126_x22_stdio_a_client_error_stops_the_loop_without_a_retry() {
    let count = Count::default();
    let mut p = Stdio::start(&count, "2025-11-25", NOVEMBER_CAPS).await;
    p.send(&call(7, "ask")).await;
    assert_eq!(p.recv().await, ASK_NAME);
    p.send(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"no UI"}}"#)
        .await;
    assert_eq!(
        p.recv().await,
        format!(r#"{{"jsonrpc":"2.0","id":7,"result":{CONFIRMATION}}}"#)
    );
    p.send(r#"{"jsonrpc":"2.0","id":1,"result":{"action":"accept","content":{"name":"x"}}}"#)
        .await;
    p.silent(Duration::from_millis(200)).await;
    assert_eq!(count.load(Ordering::SeqCst), 1, "no automatic retry");
}

/// O126: cancelling the outer call drops the pending answer: the client is told to dismiss
/// the server-sent request, no reply follows, a late answer dispatches nothing.
#[tokio::test]
async fn o126_stdio_cancellation_stops_the_pending_collection() {
    let count = Count::default();
    let mut p = Stdio::start(&count, "2025-11-25", NOVEMBER_CAPS).await;
    p.send(&call(7, "ask")).await;
    assert_eq!(p.recv().await, ASK_NAME);
    p.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user"}}"#).await;
    assert_eq!(
        p.recv().await,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"The request was cancelled."}}"#
    );
    p.send(r#"{"jsonrpc":"2.0","id":1,"result":{"action":"accept","content":{"name":"x"}}}"#)
        .await;
    p.send(r#"{"jsonrpc":"2.0","id":8,"method":"ping"}"#).await;
    assert_eq!(p.recv().await, r#"{"jsonrpc":"2.0","id":8,"result":{}}"#);
    p.silent(Duration::from_millis(200)).await;
    assert_eq!(count.load(Ordering::SeqCst), 1, "no answer was dispatched");
}

/// O127: June lowers a titled single-select to a plain enum and drops `mode`.
#[tokio::test]
async fn o127_stdio_june_lowers_titled_single_selects_to_plain_enums() {
    let count = Count::default();
    let mut p = Stdio::start(&count, "2025-06-18", r#"{"elicitation":{}}"#).await;
    p.send(&call(5, "choose")).await;
    assert_eq!(
        p.recv().await,
        r#"{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"message":"Pick one","requestedSchema":{"properties":{"c":{"enum":["a","b"],"title":"Choice","type":"string"}},"type":"object"}}}"#
    );
    p.send(r#"{"jsonrpc":"2.0","id":1,"result":{"action":"accept","content":{"c":"b"}}}"#)
        .await;
    assert_eq!(
        p.recv().await,
        text_result(5, r#"answer: {"action":"accept","content":{"c":"b"}}"#)
    );
}

/// O127: a multi-select needs November: June gets `confirmation_required` and is sent
/// nothing; November is asked the form unchanged.
#[tokio::test]
async fn o127_stdio_multi_select_needs_november() {
    let count = Count::default();
    let mut june = Stdio::start(&count, "2025-06-18", r#"{"elicitation":{}}"#).await;
    june.send(&call(5, "multi")).await;
    assert_eq!(
        june.recv().await,
        format!(r#"{{"jsonrpc":"2.0","id":5,"result":{CONFIRMATION}}}"#)
    );
    let mut november = Stdio::start(&count, "2025-11-25", r#"{"elicitation":{}}"#).await;
    november.send(&call(5, "multi")).await;
    assert_eq!(
        november.recv().await,
        r#"{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"message":"Pick some","mode":"form","requestedSchema":{"properties":{"m":{"items":{"enum":["a","b"],"type":"string"},"type":"array"}},"type":"object"}}}"#
    );
}

/// O127, "before any pending record": June's multi-select is refused by the continuation path
/// before it records a chain, so the ledger store holds no record after the
/// `confirmation_required` answer (and nothing was sent); the same call from a November session
/// records its one chain before the `elicitation/create` goes out (the count sees records).
#[tokio::test]
async fn o127_a_june_multi_select_is_refused_before_any_pending_record() {
    use strict_mcp::core::store::MemoryLedgerStore;
    let count = Count::default();
    let store = Arc::new(MemoryLedgerStore::default());
    let with_store = |count: &Count| {
        Server::new(
            registry(count),
            ServerOptions::new()
                .legacy_era(true)
                .server_info("legacy-interact", "1.0.0")
                .mode("direct")
                .ledger_store(Arc::clone(&store) as Arc<dyn strict_mcp::core::store::LedgerStore>),
        )
        .expect("server builds")
    };
    let mut june = Stdio::start_on(with_store(&count), "2025-06-18", r#"{"elicitation":{}}"#).await;
    june.send(&call(5, "multi")).await;
    assert_eq!(
        june.recv().await,
        format!(r#"{{"jsonrpc":"2.0","id":5,"result":{CONFIRMATION}}}"#)
    );
    assert_eq!(store.len(), 0, "the refusal recorded nothing");
    assert_eq!(count.load(Ordering::SeqCst), 1, "the handler ran once");
    june.send(r#"{"jsonrpc":"2.0","id":6,"method":"ping"}"#)
        .await;
    assert_eq!(
        june.recv().await,
        r#"{"jsonrpc":"2.0","id":6,"result":{}}"#,
        "nothing was sent before"
    );
    let mut november =
        Stdio::start_on(with_store(&count), "2025-11-25", r#"{"elicitation":{}}"#).await;
    november.send(&call(5, "multi")).await;
    let asked = november.recv().await;
    assert!(
        asked.contains(r#""method":"elicitation/create""#),
        "{asked}"
    );
    assert_eq!(store.len(), 1, "the November prompt is recorded");
}

/// X22: a session that did not declare the capability is never asked; the tool fails as
/// `confirmation_required`.
#[tokio::test]
async fn x22_stdio_a_client_without_the_capability_gets_confirmation_required() {
    let count = Count::default();
    let mut p = Stdio::start(&count, "2025-11-25", r#"{"elicitation":{}}"#).await;
    p.send(&call(6, "sample")).await;
    assert_eq!(
        p.recv().await,
        format!(r#"{{"jsonrpc":"2.0","id":6,"result":{CONFIRMATION}}}"#)
    );
}

/// O126: progress of one outer call grows and is spaced across its core invocations: the
/// re-entered core's lower report is dropped, the later higher one passes.
#[tokio::test]
async fn o126_stdio_progress_is_monotonic_across_core_invocations() {
    let count = Count::default();
    let mut p = Stdio::start(&count, "2025-11-25", NOVEMBER_CAPS).await;
    p.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"paced","arguments":{},"_meta":{"progressToken":"pt"}}}"#).await;
    assert_eq!(
        p.recv().await,
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"pt","progress":1.0,"total":4.0}}"#
    );
    assert_eq!(
        p.recv().await,
        r#"{"jsonrpc":"2.0","id":1,"method":"roots/list"}"#
    );
    p.send(r#"{"jsonrpc":"2.0","id":1,"result":{"roots":[]}}"#)
        .await;
    assert_eq!(
        p.recv().await,
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"pt","progress":3.0,"total":4.0}}"#
    );
    assert_eq!(p.recv().await, text_result(2, "paced"));
}

// ---------------------------------------------------------------------------------------
// Streamable HTTP

fn post(headers: &[(&str, &str)], body: &str) -> Request<Full<Bytes>> {
    let mut b = Request::builder()
        .method("POST")
        .uri("http://127.0.0.1/mcp")
        .header("host", "127.0.0.1")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(Full::new(Bytes::from(body.to_owned()))).unwrap()
}

/// The next SSE event's data (keep-alive comments skipped); `None` at the end of the body.
async fn next_event(body: &mut HttpBody) -> Option<String> {
    loop {
        let frame = tokio::time::timeout(Duration::from_secs(10), body.frame())
            .await
            .expect("an event within 10 s")?
            .unwrap();
        let Ok(data) = frame.into_data() else {
            continue;
        };
        let text = String::from_utf8(data.to_vec()).unwrap();
        if let Some(line) = text.strip_prefix("data: ") {
            return Some(line.trim_end().to_owned());
        }
    }
}

async fn whole(response: Response<HttpBody>) -> (u16, String) {
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

async fn open(host: &McpHttp<Server>, capabilities: &str) -> String {
    let r = host
        .handle(post(&[], &initialize("2025-11-25", capabilities)))
        .await;
    let id = r
        .headers()
        .get("mcp-session-id")
        .expect("a session id")
        .to_str()
        .unwrap()
        .to_owned();
    let (status, _) = whole(r).await;
    assert_eq!(status, 200);
    id
}

/// O126 over legacy HTTP: the server-sent request travels on the call's own SSE stream, the
/// client POSTs its response (202), the final reply ends the stream.
#[tokio::test]
async fn o126_http_an_elicitation_round_on_the_calls_stream() {
    let count = Count::default();
    let host = McpHttp::new(server(&count), HttpConfig::default());
    let session = open(&host, NOVEMBER_CAPS).await;
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let r = host.handle(post(&headers, &call(7, "ask"))).await;
    assert_eq!(
        r.headers().get("content-type").unwrap(),
        "text/event-stream"
    );
    let mut body = r.into_body();
    assert_eq!(next_event(&mut body).await.as_deref(), Some(ASK_NAME));
    // Discovery meanwhile.
    let (status, listed) = whole(
        host.handle(post(
            &headers,
            r#"{"jsonrpc":"2.0","id":8,"method":"ping"}"#,
        ))
        .await,
    )
    .await;
    assert_eq!(
        (status, listed.as_str()),
        (200, r#"{"jsonrpc":"2.0","id":8,"result":{}}"#)
    );
    let answered = whole(
        host.handle(post(
            &headers,
            r#"{"jsonrpc":"2.0","id":1,"result":{"action":"accept","content":{"name":"Ada"}}}"#,
        ))
        .await,
    )
    .await;
    assert_eq!(answered, (202, String::new()));
    assert_eq!(
        next_event(&mut body).await,
        Some(text_result(
            7,
            r#"answer: {"action":"accept","content":{"name":"Ada"}}"#
        ))
    );
    assert_eq!(next_event(&mut body).await, None);
    // The same answer again answers nothing pending: 400.
    let again = whole(
        host.handle(post(
            &headers,
            r#"{"jsonrpc":"2.0","id":1,"result":{"action":"accept","content":{"name":"Ada"}}}"#,
        ))
        .await,
    )
    .await;
    assert_eq!(
        again,
        (
            400,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"the response answers no pending request of this session"}}"#.to_owned()
        )
    );
    assert_eq!(count.load(Ordering::SeqCst), 2);
}

/// A response without a live session id is still the codec's refusal (A12 on the modern
/// path), and with an unknown id it is 404.
#[tokio::test]
async fn a12_http_a_response_outside_a_legacy_session_is_refused() {
    let count = Count::default();
    let host = McpHttp::new(server(&count), HttpConfig::default());
    let answer = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
    let (status, body) = whole(host.handle(post(&[], answer)).await).await;
    assert_eq!(status, 400);
    assert!(body.contains(r#""code":-32600"#), "{body}");
    let (status, body) = whole(
        host.handle(post(&[("mcp-session-id", "feedface")], answer))
            .await,
    )
    .await;
    assert_eq!(
        (status, body.as_str()),
        (
            404,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}"#
        )
    );
}

/// Legacy HTTP `notifications/cancelled` stops the request: the pending answer is dropped
/// (the client is told on the stream), the stream ends without a reply, the session stays
/// usable and the core was never re-entered.
#[tokio::test]
async fn c9_http_cancellation_stops_the_request_and_no_reply_is_sent() {
    let count = Count::default();
    let host = McpHttp::new(server(&count), HttpConfig::default());
    let session = open(&host, NOVEMBER_CAPS).await;
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let mut body = host
        .handle(post(&headers, &call(7, "ask")))
        .await
        .into_body();
    assert_eq!(next_event(&mut body).await.as_deref(), Some(ASK_NAME));
    let cancelled = whole(
        host.handle(post(
            &headers,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user"}}"#,
        ))
        .await,
    )
    .await;
    assert_eq!(cancelled, (202, String::new()));
    assert_eq!(
        next_event(&mut body).await.as_deref(),
        Some(
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"The request was cancelled."}}"#
        )
    );
    assert_eq!(
        next_event(&mut body).await,
        None,
        "no reply for a cancelled request"
    );
    let (status, pong) = whole(
        host.handle(post(
            &headers,
            r#"{"jsonrpc":"2.0","id":8,"method":"ping"}"#,
        ))
        .await,
    )
    .await;
    assert_eq!(
        (status, pong.as_str()),
        (200, r#"{"jsonrpc":"2.0","id":8,"result":{}}"#)
    );
    assert_eq!(count.load(Ordering::SeqCst), 1);
}

/// X22: stateless legacy HTTP cannot be asked anything: `confirmation_required`.
#[tokio::test]
async fn x22_http_stateless_legacy_gets_confirmation_required() {
    let count = Count::default();
    let server = Server::new(
        registry(&count),
        ServerOptions::new()
            .legacy_era(true)
            .legacy_http(strict_mcp::server::legacy::LegacyHttpConfig {
                stateless: true,
                ..Default::default()
            })
            .server_info("legacy-interact", "1.0.0")
            .mode("direct"),
    )
    .expect("server builds");
    let host = McpHttp::new(server, HttpConfig::default());
    let (status, body) = whole(
        host.handle(post(
            &[("mcp-protocol-version", "2025-11-25")],
            &call(3, "ask"),
        ))
        .await,
    )
    .await;
    assert_eq!(
        (status, body),
        (
            200,
            format!(r#"{{"jsonrpc":"2.0","id":3,"result":{CONFIRMATION}}}"#)
        )
    );
}

/// Legacy HTTP `notifications/cancelled` for a running call: the handler observes the
/// cancellation, no reply is sent for it (the stream ends empty), the session stays usable.
#[tokio::test]
async fn c9_http_cancellation_reaches_the_running_handler() {
    let count = Count::default();
    let host = McpHttp::new(server(&count), HttpConfig::default());
    let session = open(&host, "{}").await;
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let pending = tokio::spawn({
        let host = host.clone();
        let headers: Vec<(String, String)> = headers
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        async move {
            let h: Vec<(&str, &str)> = headers
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            whole(host.handle(post(&h, &call(9, "wait"))).await).await
        }
    });
    // The call is running before it is cancelled (cancelling an id not in flight is a no-op).
    tokio::time::sleep(Duration::from_millis(100)).await;
    let cancelled = whole(
        host.handle(post(
            &headers,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9,"reason":"user"}}"#,
        ))
        .await,
    )
    .await;
    assert_eq!(cancelled, (202, String::new()));
    let (status, body) = tokio::time::timeout(Duration::from_secs(10), pending)
        .await
        .expect("the cancelled call ends")
        .unwrap();
    assert_eq!(
        (status, body.as_str()),
        (200, ""),
        "no reply for a cancelled request"
    );
    assert_eq!(
        count.load(Ordering::SeqCst),
        100,
        "the handler observed the cancellation"
    );
    let (status, pong) = whole(
        host.handle(post(
            &headers,
            r#"{"jsonrpc":"2.0","id":8,"method":"ping"}"#,
        ))
        .await,
    )
    .await;
    assert_eq!(
        (status, pong.as_str()),
        (200, r#"{"jsonrpc":"2.0","id":8,"result":{}}"#)
    );
}

/// A ledger store that keeps a copy of every chain written to it (to see what was recorded).
struct Recording {
    inner: strict_mcp::core::store::MemoryLedgerStore,
    written: std::sync::Mutex<Vec<strict_mcp::machine::ledger::Chain>>,
}

impl strict_mcp::core::store::LedgerStore for Recording {
    fn load(
        &self,
        id: strict_mcp::machine::ledger::ChainId,
    ) -> strict_mcp::core::store::StoreFuture<
        '_,
        Result<Option<strict_mcp::machine::ledger::Chain>, strict_mcp::core::store::StoreError>,
    > {
        self.inner.load(id)
    }

    fn compare_and_swap(
        &self,
        now: strict_mcp::machine::Tick,
        expected: Option<strict_mcp::machine::ledger::Chain>,
        new: strict_mcp::machine::ledger::Chain,
    ) -> strict_mcp::core::store::StoreFuture<'_, Result<(), strict_mcp::core::store::StoreError>>
    {
        self.written.lock().unwrap().push(new.clone());
        self.inner.compare_and_swap(now, expected, new)
    }

    fn bump_epoch(
        &self,
        now: strict_mcp::machine::Tick,
        epoch: strict_mcp::machine::Epoch,
    ) -> strict_mcp::core::store::StoreFuture<'_, Result<(), strict_mcp::core::store::StoreError>>
    {
        self.inner.bump_epoch(now, epoch)
    }

    fn sweep(
        &self,
        now: strict_mcp::machine::Tick,
    ) -> strict_mcp::core::store::StoreFuture<'_, Result<usize, strict_mcp::core::store::StoreError>>
    {
        self.inner.sweep(now)
    }
}

/// O127 "before any pending record", in a later round: a June session answers a plain form,
/// then the re-entered handler asks a multi-select June cannot be asked. That second prompt is
/// refused before it is recorded: no chain written holds a second prompt, the chain ends
/// `Failed`, nothing more is sent to the client, and the tool fails as `confirmation_required`.
#[tokio::test]
async fn o127_a_later_round_june_cannot_be_asked_is_refused_before_its_record() {
    use strict_mcp::machine::ledger::Phase;
    let store = Arc::new(Recording {
        inner: strict_mcp::core::store::MemoryLedgerStore::default(),
        written: std::sync::Mutex::new(Vec::new()),
    });
    let registry = RegistryBuilder::new()
        .tool(
            ToolDef::dynamic_interactive("two", NO_ARGS, None, |inv: Invocation, _args| async move {
                if inv.input_response("first").is_none() {
                    return Ok(Outcome::input(
                        "first",
                        inv.elicit_form(
                            "Your name?",
                            json!({"type":"object","properties":{"name":{"type":"string"}}}),
                        )?,
                    ));
                }
                Ok(Outcome::input(
                    "second",
                    inv.elicit_form(
                        "Pick some",
                        json!({"type":"object","properties":{"m":{"type":"array","items":{"type":"string","enum":["a","b"]}}}}),
                    )?,
                ))
            })
            .description("Asks twice."),
        )
        .build()
        .expect("registry builds");
    let server = Server::new(
        registry,
        ServerOptions::new()
            .legacy_era(true)
            .server_info("legacy-interact", "1.0.0")
            .mode("direct")
            .ledger_store(Arc::clone(&store) as Arc<dyn strict_mcp::core::store::LedgerStore>),
    )
    .expect("server builds");
    let mut june = Stdio::start_on(server, "2025-06-18", r#"{"elicitation":{}}"#).await;
    june.send(&call(5, "two")).await;
    let asked = june.recv().await;
    assert!(
        asked.contains(r#""method":"elicitation/create""#) && asked.contains("Your name?"),
        "{asked}"
    );
    let first_writes = store.written.lock().unwrap().len();
    assert!(first_writes >= 1, "the first prompt is recorded");
    june.send(r#"{"jsonrpc":"2.0","id":1,"result":{"action":"accept","content":{"name":"Ada"}}}"#)
        .await;
    assert_eq!(
        june.recv().await,
        format!(r#"{{"jsonrpc":"2.0","id":5,"result":{CONFIRMATION}}}"#)
    );
    let written = store.written.lock().unwrap().clone();
    assert!(written.len() > first_writes, "the round's end is recorded");
    assert!(
        written.iter().all(|c| c.prompts_issued() <= 1),
        "no second prompt was ever recorded: {written:?}"
    );
    assert!(
        written
            .iter()
            .all(|c| !String::from_utf8_lossy(c.prompt()).contains("Pick some")),
        "the refused prompt's bytes were never written"
    );
    assert_eq!(written.last().unwrap().phase(), Phase::Failed);
    june.send(r#"{"jsonrpc":"2.0","id":6,"method":"ping"}"#)
        .await;
    assert_eq!(
        june.recv().await,
        r#"{"jsonrpc":"2.0","id":6,"result":{}}"#,
        "nothing else was sent"
    );
}
