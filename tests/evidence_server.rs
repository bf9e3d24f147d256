//! Contract evidence for the server transports (O115, O117): every request method of the
//! revision, sent as raw wire bytes through the stdio server (the conformance server binary
//! as a child process) and the Streamable HTTP server (in process, on 127.0.0.1), answered
//! with a result (positive) and with an error (negative). Each exchange is recorded by the
//! helper that wrote the bytes and read the reply (`support::evidence`).

#![forbid(unsafe_code)]

#[path = "../examples/conformance/fixtures.rs"]
mod fixtures;
mod support;

use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use strict_mcp::server::http::{serve, HttpConfig, McpHttp};
use strict_mcp::server::{Server, ServerOptions};
use support::evidence::{Outcome, Recorder};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// The revision every request names.
const PV: &str = "2026-07-28";

/// How long one exchange may take before the test fails (a hung server fails, never hangs).
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(20);

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": PV,
        "io.modelcontextprotocol/clientCapabilities": {}
    })
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

fn request(id: u64, method: &str, mut params: Value) -> Value {
    if params.get("_meta").is_none() {
        params["_meta"] = meta();
    }
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// Whether `message` answers request `id`: its response, or (listen) its acknowledgement.
fn answers(message: &Value, id: u64) -> Option<Outcome> {
    if message["id"] == id && message.get("method").is_none() {
        if message.get("result").is_some() {
            return Some(Outcome::Result);
        }
        if message.get("error").is_some() {
            return Some(Outcome::Error);
        }
    }
    let ack = message["method"] == strict_mcp::wire::listen::ACKNOWLEDGED
        && message["params"]["_meta"][strict_mcp::wire::meta::SUBSCRIPTION_ID] == id;
    ack.then_some(Outcome::Result)
}

// ---------------------------------------------------------------------------------------------
// stdio: the conformance server binary

struct Stdio {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    next_id: u64,
}

impl Stdio {
    fn spawn() -> Stdio {
        let mut child = tokio::process::Command::new(support::example_binary("conformance_server"))
            .arg("--stdio")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn the conformance server");
        let stdin = child.stdin.take().expect("stdin");
        let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        Stdio {
            child,
            stdin,
            lines,
            next_id: 0,
        }
    }

    /// Writes one request line, reads until its reply, records what was seen.
    async fn exchange(&mut self, rec: &Recorder, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let line = request(id, method, params).to_string();
        self.stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .expect("write");
        self.stdin.flush().await.expect("flush");
        let read = async {
            loop {
                let got = self
                    .lines
                    .next_line()
                    .await
                    .expect("read")
                    .expect("a reply");
                let message: Value = serde_json::from_str(&got).expect("the server writes JSON");
                if let Some(outcome) = answers(&message, id) {
                    return (outcome, message);
                }
            }
        };
        let (outcome, message) = tokio::time::timeout(EXCHANGE_TIMEOUT, read)
            .await
            .unwrap_or_else(|_| panic!("{method}: no reply in {EXCHANGE_TIMEOUT:?}"));
        rec.observed("stdio-server", method, outcome);
        message
    }

    async fn close(mut self) {
        drop(self.stdin);
        let _ = tokio::time::timeout(EXCHANGE_TIMEOUT, self.child.wait()).await;
        let _ = self.child.kill().await;
    }
}

// ---------------------------------------------------------------------------------------------
// HTTP: the Streamable HTTP server in process

struct Http {
    url: String,
    client: Client<HttpConnector, Full<Bytes>>,
    next_id: u64,
}

/// A conformance-fixture server, as the conformance example builds it (direct mode).
fn fixture_server() -> Server {
    Server::new(
        fixtures::registry(),
        ServerOptions::new()
            .server_info("strict-mcp-conformance", "0.0.0")
            .mode("direct"),
    )
    .expect("server")
}

impl Http {
    async fn start() -> Http {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let service = McpHttp::new(
            fixture_server(),
            HttpConfig {
                path: Some("/mcp".into()),
                ..HttpConfig::default()
            },
        );
        tokio::spawn(serve(listener, service, std::future::pending()));
        Http {
            url: format!("http://{addr}/mcp"),
            client: Client::builder(TokioExecutor::new()).build_http(),
            next_id: 0,
        }
    }

    /// POSTs one request with the headers it must carry, reads (JSON or SSE) until its reply.
    async fn exchange(&mut self, rec: &Recorder, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let body = request(id, method, params);
        let version = body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
            .as_str()
            .unwrap_or(PV)
            .to_owned();
        let mut b = hyper::Request::post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", version)
            .header("mcp-method", method);
        let name = match method {
            "tools/call" | "prompts/get" => body["params"]["name"].as_str(),
            "resources/read" => body["params"]["uri"].as_str(),
            _ => None,
        };
        if let Some(name) = name {
            b = b.header("mcp-name", name);
        }
        let req = b
            .body(Full::new(Bytes::from(body.to_string())))
            .expect("request");
        let read = async {
            let res = self.client.request(req).await.expect("HTTP exchange");
            let sse = res.headers()["content-type"]
                .to_str()
                .is_ok_and(|ct| ct.starts_with("text/event-stream"));
            let mut body = res.into_body();
            if !sse {
                let bytes = body.collect().await.expect("body").to_bytes();
                let message: Value = serde_json::from_slice(&bytes).expect("a JSON reply");
                let outcome = answers(&message, id).expect("the JSON body answers the request");
                return (outcome, message);
            }
            read_sse(&mut body, id).await
        };
        let (outcome, message) = tokio::time::timeout(EXCHANGE_TIMEOUT, read)
            .await
            .unwrap_or_else(|_| panic!("{method}: no reply in {EXCHANGE_TIMEOUT:?}"));
        rec.observed("http-server", method, outcome);
        message
    }
}

/// Reads SSE events until one answers `id`.
async fn read_sse(body: &mut Incoming, id: u64) -> (Outcome, Value) {
    let mut buffer = String::new();
    loop {
        let frame = body
            .frame()
            .await
            .expect("the stream ended before the reply")
            .expect("frame");
        let Ok(data) = frame.into_data() else {
            continue;
        };
        buffer.push_str(std::str::from_utf8(&data).expect("UTF-8 events"));
        while let Some(end) = buffer.find("\n\n") {
            let event: String = buffer.drain(..end + 2).collect();
            for line in event.lines() {
                if let Some(data) = line.strip_prefix("data: ") {
                    let message: Value = serde_json::from_str(data).expect("JSON event");
                    if let Some(outcome) = answers(&message, id) {
                        return (outcome, message);
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The proofs

fn assert_result(method: &str, reply: &Value) {
    let ok =
        reply.get("result").is_some() || reply["method"] == strict_mcp::wire::listen::ACKNOWLEDGED;
    assert!(ok, "{method}: expected a result, got {reply}");
}

fn assert_error(method: &str, reply: &Value, code: i64) {
    assert_eq!(reply["error"]["code"], code, "{method}: {reply}");
}

/// O115, O117: every method over stdio answers with a result.
#[tokio::test]
async fn o115_stdio_server_answers_every_method() {
    let rec = support::evidence::recorder!();
    let mut peer = Stdio::spawn();
    for (method, params) in positive_table() {
        let reply = peer.exchange(&rec, method, params).await;
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
        let reply = peer.exchange(&rec, method, params).await;
        assert_error(method, &reply, code);
    }
    peer.close().await;
}

/// O115, O117: every method over Streamable HTTP answers with a result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o115_http_server_answers_every_method() {
    let rec = support::evidence::recorder!();
    let mut peer = Http::start().await;
    for (method, params) in positive_table() {
        let reply = peer.exchange(&rec, method, params).await;
        assert_result(method, &reply);
    }
}

/// O115, O117: every method over Streamable HTTP refuses bad input with its exact error code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o115_http_server_refuses_bad_input_for_every_method() {
    let rec = support::evidence::recorder!();
    let mut peer = Http::start().await;
    for (method, params, code) in negative_table() {
        let reply = peer.exchange(&rec, method, params).await;
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
