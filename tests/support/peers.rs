//! Raw peers for the evidence, equivalence and sweep tests: the stdio server (the
//! conformance server binary as a child process), the Streamable HTTP server (in process on
//! 127.0.0.1) and the in-memory transport, each taking one request as JSON and returning the
//! reply message exactly as it arrived (minus framing). An exchange is recorded on the
//! recorder, when one is given, by the code that moved the bytes.
#![allow(dead_code)]

use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use strict_mcp::client::{Inbound, Transport};
use strict_mcp::codec::{decode, IngressLimits};
use strict_mcp::core::Caller;
use strict_mcp::server::http::{serve, HttpConfig, McpHttp};
use strict_mcp::server::Server;
use strict_mcp::testing::InMemoryTransport;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

use crate::support::evidence::{Outcome, Recorder};

/// The revision every request names.
pub const PV: &str = "2026-07-28";

/// How long one exchange may take before the test fails (a hung server fails, never hangs).
pub const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(20);

/// One reply as it arrived.
#[derive(Debug, Clone)]
pub struct Reply {
    /// Result or error.
    pub outcome: Outcome,
    /// The reply message (for `subscriptions/listen`: its acknowledgement).
    pub message: Value,
    /// The HTTP status, on HTTP.
    pub status: Option<u16>,
    /// Whether the HTTP reply was an SSE stream.
    pub sse: bool,
}

pub fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": PV,
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

pub fn request(id: u64, method: &str, mut params: Value) -> Value {
    if params.get("_meta").is_none() {
        params["_meta"] = meta();
    }
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// Whether `message` answers request `id`: its response, or (listen) its acknowledgement.
pub fn answers(message: &Value, id: u64) -> Option<Outcome> {
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

/// The stdio server binary as a child process.
pub struct Stdio {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    next_id: u64,
}

impl Stdio {
    /// Spawns `conformance_server --stdio`.
    pub fn spawn() -> Stdio {
        Stdio::spawn_with("conformance_server", &["--stdio"])
    }

    /// Spawns `conformance_server --tasks --stdio`: the fixtures plus the Tasks extension's,
    /// as the conformance run serves them.
    pub fn spawn_with_tasks() -> Stdio {
        Stdio::spawn_with("conformance_server", &["--tasks", "--stdio"])
    }

    /// Spawns the stdio server example `name` with no arguments.
    pub fn spawn_example(name: &str) -> Stdio {
        Stdio::spawn_with(name, &[])
    }

    fn spawn_with(name: &str, args: &[&str]) -> Stdio {
        Stdio::spawn_program(&crate::support::example_binary(name), args)
    }

    /// Spawns `program` with `args` as a stdio server (e.g. `strict-mcp demo serve`).
    pub fn spawn_program(program: &std::path::Path, args: &[&str]) -> Stdio {
        let mut child = tokio::process::Command::new(program)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn the example server");
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
    pub async fn exchange(&mut self, rec: Option<&Recorder>, method: &str, params: Value) -> Reply {
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
        if let Some(rec) = rec {
            rec.observed("stdio-server", method, outcome);
        }
        Reply {
            outcome,
            message,
            status: None,
            sse: false,
        }
    }

    /// Closes stdin and waits for the child to exit.
    pub async fn close(mut self) {
        drop(self.stdin);
        let _ = tokio::time::timeout(EXCHANGE_TIMEOUT, self.child.wait()).await;
        let _ = self.child.kill().await;
    }
}

// ---------------------------------------------------------------------------------------------
// HTTP: the Streamable HTTP server in process

/// A Streamable HTTP server in process.
pub struct Http {
    url: String,
    client: Client<HttpConnector, Full<Bytes>>,
    next_id: u64,
}

impl Http {
    /// Serves `server` on 127.0.0.1 (an ephemeral port) at `/mcp`.
    pub async fn start(server: Server) -> Http {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let service = McpHttp::new(
            server,
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

    /// The endpoint URL (`http://127.0.0.1:<port>/mcp`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// POSTs one request with the headers it must carry, reads (JSON or SSE) until its reply.
    pub async fn exchange(&mut self, rec: Option<&Recorder>, method: &str, params: Value) -> Reply {
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
            // The Tasks extension mirrors `params.taskId` (SEP-2663 routing headers, N46).
            m if strict_mcp::wire::tasks::is_task_method(m) => body["params"]["taskId"].as_str(),
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
            let status = res.status().as_u16();
            let sse = res.headers()["content-type"]
                .to_str()
                .is_ok_and(|ct| ct.starts_with("text/event-stream"));
            let mut body = res.into_body();
            if !sse {
                let bytes = body.collect().await.expect("body").to_bytes();
                let message: Value = serde_json::from_slice(&bytes).expect("a JSON reply");
                let outcome = answers(&message, id).expect("the JSON body answers the request");
                return (outcome, message, status, false);
            }
            let (outcome, message) = read_sse(&mut body, id).await;
            (outcome, message, status, true)
        };
        let (outcome, message, status, sse) = tokio::time::timeout(EXCHANGE_TIMEOUT, read)
            .await
            .unwrap_or_else(|_| panic!("{method}: no reply in {EXCHANGE_TIMEOUT:?}"));
        if let Some(rec) = rec {
            rec.observed("http-server", method, outcome);
        }
        Reply {
            outcome,
            message,
            status: Some(status),
            sse,
        }
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
// In memory: the same codec and limits as a pipe, no process

/// A server behind the in-memory transport, driven with raw messages.
pub struct Memory {
    transport: InMemoryTransport,
    next_id: u64,
}

impl Memory {
    /// Serves `server` as `caller` in process.
    pub fn new(server: Server, caller: &str) -> Memory {
        Memory {
            transport: InMemoryTransport::new(server, Caller::new(caller)),
            next_id: 0,
        }
    }

    /// Sends one request through the transport's codec, reads until its reply.
    pub async fn exchange(&mut self, method: &str, params: Value) -> Reply {
        self.next_id += 1;
        let id = self.next_id;
        let line = request(id, method, params).to_string();
        let message = decode(line.as_bytes(), &IngressLimits::SERVER).expect("a valid request");
        self.transport.send(&message).await.expect("send");
        let read = async {
            loop {
                match self.transport.recv().await.expect("recv") {
                    // A notification on the request's own stream (the in-memory transport
                    // tags them) is its reply only when it is a listen acknowledgement.
                    Inbound::Message(m) | Inbound::OnStream { message: m, .. } => {
                        let v = serde_json::to_value(&m).expect("JSON");
                        if let Some(outcome) = answers(&v, id) {
                            return (outcome, v);
                        }
                    }
                    Inbound::Rejected(r) => panic!("{method}: reply rejected: {r:?}"),
                }
            }
        };
        let (outcome, message) = tokio::time::timeout(EXCHANGE_TIMEOUT, read)
            .await
            .unwrap_or_else(|_| panic!("{method}: no reply in {EXCHANGE_TIMEOUT:?}"));
        Reply {
            outcome,
            message,
            status: None,
            sse: false,
        }
    }
}
