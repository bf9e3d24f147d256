//! The Streamable HTTP host over real loopback TCP (D-section, O36, O38, O117, O118).
//!
//! The host is driven by a small scripted dispatcher (tool names pick a behaviour), so these
//! tests pin the transport alone; the registry the header checks read is built with the core
//! API. Requests go through hyper-util's pooled client (keep-alive) or, where exact bytes or a
//! hard disconnect matter, through a raw TCP socket.
#![forbid(unsafe_code)]
#![cfg(feature = "http")]

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::value::RawValue;
use serde_json::{json, Value};
use strict_mcp::codec::IngressLimits;
use strict_mcp::core::{
    Caller, CancelToken, DynamicOutput, Invocation, Registry, RegistryBuilder, ToolDef,
};
use strict_mcp::server::http::{Dispatch, HttpConfig, McpHttp, OriginPolicy};
use strict_mcp::server::{Cause, Outbox, Reply};
use strict_mcp::wire::jsonrpc::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::broadcast;

const PV: &str = "2026-07-28";

// ---------------------------------------------------------------------------------------------
// The scripted dispatcher

#[derive(Clone)]
struct Script {
    registry: Arc<Registry>,
    /// Lines pushed to open listen streams; `"close"` ends them with the listen result.
    listen: broadcast::Sender<String>,
    /// How many handlers observed their cancellation.
    cancelled: Arc<AtomicUsize>,
    /// Notifications the dispatcher received.
    notifications: Arc<AtomicUsize>,
    /// How many of the `flood` tool's notifications the outbox accepted.
    flood_accepted: Arc<AtomicUsize>,
    /// How many `linger` calls ran their work after the final reply to its end.
    lingered: Arc<AtomicUsize>,
}

fn registry() -> Registry {
    let noop = |_i: Invocation, _a: Box<RawValue>| async move { Ok(DynamicOutput::default()) };
    let schema = r#"{"type":"object","properties":{
        "region":{"type":"string","x-mcp-header":"Region"},
        "loc":{"type":"object","properties":{"zone":{"type":"integer","x-mcp-header":"Zone"}}},
        "dry":{"type":"boolean","x-mcp-header":"Dry"},
        "text":{"type":"string"}}}"#;
    let plain = r#"{"type":"object","properties":{"text":{"type":"string"}}}"#;
    let mut b = RegistryBuilder::new().tool(ToolDef::dynamic("region_echo", schema, None, noop));
    for name in [
        "echo",
        "whoami",
        "progress",
        "wait",
        "progress_wait",
        "slow",
        "linger",
    ] {
        b = b.tool(ToolDef::dynamic(name, plain, None, noop));
    }
    b.build().expect("registry")
}

fn result_line(id: &str, result: &Value) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#)
}

fn progress_line(n: u32) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":"t","progress":{n}}}}}"#
    )
}

impl Dispatch for Script {
    fn dispatch(
        &self,
        caller: Caller,
        message: Message,
        outbox: Arc<dyn Outbox>,
        cancel: CancelToken,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'static>> {
        let me = self.clone();
        Box::pin(async move {
            let request = match message {
                Message::Request(r) => r,
                Message::Notification(_) => {
                    me.notifications.fetch_add(1, Ordering::SeqCst);
                    return;
                }
                Message::Response(_) => return,
            };
            let id = request.id.token().to_owned();
            let params: Value = request
                .params
                .as_deref()
                .map(|p| serde_json::from_str(p.get()).unwrap())
                .unwrap_or(Value::Null);
            let ok = |result: Value| Reply {
                line: result_line(&id, &result),
                status: 200,
            };
            match request.method.as_str() {
                "tools/call" => {
                    let name = params["name"].as_str().unwrap_or_default().to_owned();
                    match name.as_str() {
                        "whoami" => outbox.finish(ok(json!({
                            "principal": caller.principal(),
                            "tag": params["arguments"]["text"],
                        }))),
                        "progress" => {
                            for n in 1..=3 {
                                assert!(outbox.notify(progress_line(n)));
                            }
                            outbox.finish(ok(json!({"done": true})));
                        }
                        "wait" | "progress_wait" => {
                            if name == "progress_wait" {
                                outbox.notify(progress_line(1));
                            }
                            let woke = tokio::time::timeout(
                                Duration::from_secs(20),
                                cancel.cancelled(),
                            )
                            .await;
                            if woke.is_ok() {
                                me.cancelled.fetch_add(1, Ordering::SeqCst);
                                // D12: whatever comes now must be dropped by the host.
                                assert!(!outbox.notify(progress_line(2)));
                            }
                            outbox.finish(ok(json!({"late": true})));
                        }
                        "slow" => {
                            tokio::time::sleep(Duration::from_millis(400)).await;
                            outbox.finish(ok(json!({"slow": true})));
                        }
                        "linger" => {
                            outbox.finish(ok(json!({"lingering": true})));
                            tokio::time::sleep(Duration::from_millis(300)).await;
                            me.lingered.fetch_add(1, Ordering::SeqCst);
                        }
                        "panic" => panic!("scripted dispatcher failure"),
                        "flood" => {
                            let accepted = (1..=10).filter(|n| outbox.notify(progress_line(*n))).count();
                            me.flood_accepted.store(accepted, Ordering::SeqCst);
                            if cancel.is_cancelled() {
                                me.cancelled.fetch_add(1, Ordering::SeqCst);
                            }
                            outbox.finish(ok(json!({"flooded": true})));
                        }
                        "vanish" => {
                            outbox.notify(progress_line(1));
                        }
                        other => outbox.finish(ok(json!({"called": other}))),
                    }
                }
                "subscriptions/listen" => {
                    let mut rx = me.listen.subscribe();
                    let ack = format!(
                        r#"{{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{{"_meta":{{"io.modelcontextprotocol/subscriptionId":{id}}},"notifications":{{"toolsListChanged":true}}}}}}"#
                    );
                    outbox.notify(ack);
                    loop {
                        tokio::select! {
                            () = cancel.cancelled() => {
                                me.cancelled.fetch_add(1, Ordering::SeqCst);
                                return;
                            }
                            line = rx.recv() => match line.as_deref() {
                                Ok("close") | Err(_) => break,
                                Ok(method) => {
                                    let note = format!(
                                        r#"{{"jsonrpc":"2.0","method":"{method}","params":{{"_meta":{{"io.modelcontextprotocol/subscriptionId":{id}}}}}}}"#
                                    );
                                    if !outbox.notify(note) {
                                        return;
                                    }
                                }
                            }
                        }
                    }
                    outbox.finish(ok(json!({
                        "resultType": "complete",
                        "_meta": {"io.modelcontextprotocol/subscriptionId": request.id}
                    })));
                }
                "test/missing-meta" => {
                    let cause = Cause::MissingMeta;
                    outbox.finish(Reply {
                        line: format!(
                            r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32602,"message":"missing _meta"}}}}"#
                        ),
                        status: cause.http_status(),
                    });
                }
                "tools/list" | "prompts/get" | "resources/read" => {
                    outbox.finish(ok(json!({"method": request.method})))
                }
                _ => outbox.finish(Reply {
                    line: format!(
                        r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32601,"message":"Method not found"}}}}"#
                    ),
                    status: Cause::MethodNotFound.http_status(),
                }),
            }
        })
    }

    fn ingress_limits(&self) -> IngressLimits {
        IngressLimits::SERVER
    }

    fn registry(&self) -> Arc<Registry> {
        self.registry.clone()
    }
}

fn script() -> Script {
    Script {
        registry: Arc::new(registry()),
        listen: broadcast::channel(64).0,
        cancelled: Arc::new(AtomicUsize::new(0)),
        notifications: Arc::new(AtomicUsize::new(0)),
        flood_accepted: Arc::new(AtomicUsize::new(0)),
        lingered: Arc::new(AtomicUsize::new(0)),
    }
}

// ---------------------------------------------------------------------------------------------
// Harness

struct Host {
    addr: SocketAddr,
    script: Script,
    client: Client<HttpConnector, Full<Bytes>>,
}

/// Starts the host on 127.0.0.1 behind a stand-in for the application's auth middleware: the
/// `x-user` header becomes the request's `Caller` extension (D36, O3).
async fn start(config: HttpConfig) -> Host {
    let script = script();
    let service = McpHttp::new(script.clone(), config);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            stream.set_nodelay(true).unwrap();
            let service = service.clone();
            tokio::spawn(async move {
                let f = hyper::service::service_fn(move |mut req: Request<Incoming>| {
                    let service = service.clone();
                    async move {
                        if let Some(user) = req.headers().get("x-user") {
                            let user = user.to_str().unwrap().to_owned();
                            req.extensions_mut().insert(Caller::new(user));
                        }
                        Ok::<_, Infallible>(service.handle(req).await)
                    }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), f)
                    .await;
            });
        }
    });
    let client = Client::builder(TokioExecutor::new()).build_http();
    Host {
        addr,
        script,
        client,
    }
}

fn body(id: &str, method: &str, params: Value) -> String {
    let mut params = params;
    if params.is_null() {
        params = json!({});
    }
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": PV,
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#)
}

fn call_body(id: &str, tool: &str, arguments: Value) -> String {
    body(
        id,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
}

/// The headers a conforming client sends for `method` (and `Mcp-Name` when given).
fn std_headers(method: &str, name: Option<&str>) -> Vec<(String, String)> {
    let mut h = vec![
        (
            "accept".into(),
            "application/json, text/event-stream".into(),
        ),
        ("content-type".into(), "application/json".into()),
        ("mcp-protocol-version".into(), PV.into()),
        ("mcp-method".into(), method.into()),
    ];
    if let Some(n) = name {
        h.push(("mcp-name".into(), n.into()));
    }
    h
}

fn with(mut h: Vec<(String, String)>, k: &str, v: &str) -> Vec<(String, String)> {
    h.push((k.into(), v.into()));
    h
}

fn without(h: Vec<(String, String)>, k: &str) -> Vec<(String, String)> {
    h.into_iter().filter(|(n, _)| n != k).collect()
}

struct Answer {
    status: StatusCode,
    headers: hyper::HeaderMap,
    text: String,
}

impl Answer {
    fn json(&self) -> Value {
        assert_eq!(
            self.headers["content-type"], "application/json",
            "body: {}",
            self.text
        );
        serde_json::from_str(&self.text).unwrap()
    }

    /// Asserts a JSON-RPC error answer with exactly this status, code and id.
    fn assert_error(&self, status: u16, code: i64, id: Value) {
        assert_eq!(self.status.as_u16(), status, "body: {}", self.text);
        let v = self.json();
        assert_eq!(v["error"]["code"], code, "body: {}", self.text);
        assert_eq!(v["id"], id, "body: {}", self.text);
        assert_eq!(v["jsonrpc"], "2.0");
    }

    /// The `data:` payloads of an SSE body, in order.
    fn events(&self) -> Vec<Value> {
        assert_eq!(self.headers["content-type"], "text/event-stream");
        self.text
            .split("\n\n")
            .filter_map(|e| e.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).unwrap())
            .collect()
    }
}

impl Host {
    fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    async fn send(&self, method: &str, headers: &[(String, String)], body: &str) -> Answer {
        let mut b = Request::builder().method(method).uri(self.url());
        for (k, v) in headers {
            b = b.header(k.as_str(), v.as_str());
        }
        let req = b.body(Full::new(Bytes::from(body.to_owned()))).unwrap();
        let res = self.client.request(req).await.unwrap();
        let (parts, body) = res.into_parts();
        let bytes = body.collect().await.unwrap().to_bytes();
        Answer {
            status: parts.status,
            headers: parts.headers,
            text: String::from_utf8(bytes.to_vec()).unwrap(),
        }
    }

    async fn post(&self, headers: &[(String, String)], body: &str) -> Answer {
        self.send("POST", headers, body).await
    }

    /// A tools/call with conforming headers plus `extra`.
    async fn call(&self, id: &str, tool: &str, args: Value, extra: &[(&str, &str)]) -> Answer {
        let mut h = std_headers("tools/call", Some(tool));
        for (k, v) in extra {
            h.push(((*k).into(), (*v).into()));
        }
        self.post(&h, &call_body(id, tool, args)).await
    }
}

/// Sends raw bytes on a fresh connection and reads until the server closes or `stop` matches.
async fn raw_exchange(addr: SocketAddr, request: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(request).await.unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf))
            .await
            .expect("answer in time")
            .unwrap();
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&out);
        if let Some((head, rest)) = text.split_once("\r\n\r\n") {
            if let Some(len) = head.lines().find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length: ")
                    .map(str::to_owned)
            }) {
                if rest.len() >= len.trim().parse::<usize>().unwrap() {
                    break;
                }
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Reads one `Content-Length` response from a kept-alive connection and returns its body.
async fn read_one(s: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = s.read(&mut buf).await.unwrap();
        assert!(n > 0, "connection closed early");
        out.extend_from_slice(&buf[..n]);
        let t = String::from_utf8_lossy(&out).into_owned();
        if let Some((head, rest)) = t.split_once("\r\n\r\n") {
            let len: usize = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length: ")
                        .map(|v| v.trim().parse().unwrap())
                })
                .expect("content-length");
            if rest.len() >= len {
                return rest.to_owned();
            }
        }
    }
}

fn raw_post(headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut r = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n".to_vec();
    for (k, v) in headers {
        r.extend_from_slice(k.as_bytes());
        r.extend_from_slice(b": ");
        r.extend_from_slice(v.as_bytes());
        r.extend_from_slice(b"\r\n");
    }
    r.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
    r.extend_from_slice(body);
    r
}

/// Every test of this binary holds [`ALONE`] shared while it runs; the RSS test holds it
/// exclusively, so it measures this process with no other test's allocations in flight
/// (cargo runs one test binary at a time; the test threads of one binary are what ran
/// beside it and made it fail under load).
static ALONE: RwLock<()> = RwLock::new(());

/// A two-worker runtime whose `block_on` runs while this test holds [`ALONE`] shared.
struct Rt {
    runtime: tokio::runtime::Runtime,
    _shared: Option<RwLockReadGuard<'static, ()>>,
    _alone: Option<RwLockWriteGuard<'static, ()>>,
}

impl Rt {
    fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.runtime.block_on(f)
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn mt() -> Rt {
    Rt {
        runtime: runtime(),
        _shared: Some(ALONE.read().unwrap_or_else(PoisonError::into_inner)),
        _alone: None,
    }
}

/// As [`mt`], with no other test of this binary running until it is dropped.
fn mt_alone() -> Rt {
    Rt {
        runtime: runtime(),
        _shared: None,
        _alone: Some(ALONE.write().unwrap_or_else(PoisonError::into_inner)),
    }
}

// ---------------------------------------------------------------------------------------------
// Method, Accept, Content-Type, sessions (D3, D37, D38)

#[test]
fn d37_d38_get_and_delete_get_405_with_allow_post() {
    mt().block_on(async {
        let host = start(HttpConfig::default()).await;
        for method in ["GET", "DELETE", "PUT"] {
            let h = std_headers("tools/list", None);
            let a = host.send(method, &h, "").await;
            assert_eq!(a.status, StatusCode::METHOD_NOT_ALLOWED, "{method}");
            assert_eq!(a.headers["allow"], "POST");
            assert_eq!(a.text, "");
        }
    });
}

#[test]
fn d37_session_id_and_last_event_id_are_ignored_and_never_minted() {
    mt().block_on(async {
        let host = start(HttpConfig::default()).await;
        let h = with(std_headers("tools/list", None), "mcp-session-id", "abc");
        let h = with(h, "last-event-id", "7");
        let a = host.post(&h, &body("1", "tools/list", Value::Null)).await;
        assert_eq!(a.status, StatusCode::OK);
        assert_eq!(a.json()["result"]["method"], "tools/list");
        assert!(a.headers.get("mcp-session-id").is_none());
        // SSE streams carry no event ids either.
        let a = host.call("2", "progress", json!({}), &[]).await;
        assert!(!a.text.contains("\nid:") && !a.text.starts_with("id:"));
        assert!(a.headers.get("mcp-session-id").is_none());
    });
}

#[test]
fn d3_accept_without_both_types_is_406_with_json_rpc_error() {
    mt().block_on(async {
        let host = start(HttpConfig::default()).await;
        for accept in ["application/json", "text/event-stream", "*/*", ""] {
            let h = without(std_headers("tools/list", None), "accept");
            let h = if accept.is_empty() {
                h
            } else {
                with(h, "accept", accept)
            };
            let a = host.post(&h, &body("1", "tools/list", Value::Null)).await;
            a.assert_error(406, -32600, Value::Null);
        }
    });
}

#[test]
fn content_type_other_than_json_is_415() {
    mt().block_on(async {
        let host = start(HttpConfig::default()).await;
        let h = with(
            without(std_headers("tools/list", None), "content-type"),
            "content-type",
            "text/plain",
        );
        let a = host.post(&h, &body("1", "tools/list", Value::Null)).await;
        a.assert_error(415, -32600, Value::Null);
        let h = with(
            without(std_headers("tools/list", None), "content-type"),
            "content-type",
            "application/json; charset=utf-8",
        );
        let a = host.post(&h, &body("1", "tools/list", Value::Null)).await;
        assert_eq!(a.status, StatusCode::OK);
    });
}

// ---------------------------------------------------------------------------------------------
// Body, parse, status mapping (D6, D31, D32, O36)

#[test]
fn o36_body_of_exactly_2_mib_is_served_and_one_byte_more_is_413() {
    mt().block_on(async {
        let host = start(HttpConfig::default()).await;
        let base = call_body("1", "echo", json!({"text": ""}));
        let limit = 2 * 1024 * 1024;
        let pad = limit - base.len();
        let fitting = call_body("1", "echo", json!({"text": "x".repeat(pad)}));
        assert_eq!(fitting.len(), limit);
        let h = std_headers("tools/call", Some("echo"));
        let a = host.post(&h, &fitting).await;
        assert_eq!(a.status, StatusCode::OK, "{}", &a.text[..a.text.len().min(200)]);
        let over = call_body("1", "echo", json!({"text": "x".repeat(pad + 1)}));
        let a = host.post(&h, &over).await;
        a.assert_error(413, -32600, Value::Null);
        // The same without Content-Length (chunked): the cap applies while reading.
        let mut s = TcpStream::connect(host.addr).await.unwrap();
        let head = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\nTransfer-Encoding: chunked\r\n\r\n";
        s.write_all(head.as_bytes()).await.unwrap();
        let chunk = vec![b' '; 64 * 1024];
        let mut answer = Vec::new();
        // Keep sending until the server answers; it must answer before 3 MiB were sent.
        for _ in 0..48 {
            let mut framed = format!("{:x}\r\n", chunk.len()).into_bytes();
            framed.extend_from_slice(&chunk);
            framed.extend_from_slice(b"\r\n");
            if s.write_all(&framed).await.is_err() {
                break;
            }
        }
        let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut answer)).await;
        let text = String::from_utf8_lossy(&answer);
        assert!(text.starts_with("HTTP/1.1 413"), "{text}");
        assert!(text.contains("\"code\":-32600"), "{text}");
    });
}

#[test]
fn parse_and_invalid_request_errors_are_400_with_json_rpc_bodies() {
    mt().block_on(async {
        let host = start(HttpConfig::default()).await;
        let h = std_headers("tools/list", None);
        host.post(&h, "{not json")
            .await
            .assert_error(400, -32700, Value::Null);
        host.post(&h, "[]")
            .await
            .assert_error(400, -32600, Value::Null);
        host.post(
            &h,
            r#"{"jsonrpc":"2.0","id":9,"method":"tools/list","x":1}"#,
        )
        .await
        .assert_error(400, -32600, json!(9));
        host.post(&h, r#"{"jsonrpc":"2.0","id":3,"result":{}}"#)
            .await
            .assert_error(400, -32600, json!(3));
        // A refused notification gets an error status and an id-less error body (D6).
        host.post(
            &h,
            r#"{"jsonrpc":"2.0","method":"notifications/x","extra":1}"#,
        )
        .await
        .assert_error(400, -32600, Value::Null);
    });
}

#[test]
fn d6_notification_is_202_with_empty_body() {
    mt().block_on(async {
        let host = start(HttpConfig::default()).await;
        let h = std_headers("notifications/cancelled", None);
        let a = host
            .post(
                &h,
                r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
            )
            .await;
        assert_eq!(a.status, StatusCode::ACCEPTED);
        assert_eq!(a.text, "");
        assert!(a.headers.get("content-type").is_none());
        assert_eq!(host.script.notifications.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn d31_d32_reply_status_passes_through_404_and_400() {
    mt().block_on(async {
        let host = start(HttpConfig::default()).await;
        let a = host
            .post(&std_headers("ping", None), &body("4", "ping", Value::Null))
            .await;
        a.assert_error(404, -32601, json!(4));
        let a = host
            .post(
                &std_headers("test/missing-meta", None),
                &body("\"m\"", "test/missing-meta", Value::Null),
            )
            .await;
        a.assert_error(400, -32602, json!("m"));
    });
}

// ---------------------------------------------------------------------------------------------
// Standard headers (D15–D18, D26, D27, D33)

#[test]
fn d15_d33_protocol_version_header_missing_or_different_is_400_32020() {
    mt().block_on(async {
        let host = start(HttpConfig::default()).await;
        let b = body("5", "tools/list", Value::Null);
        let h = without(std_headers("tools/list", None), "mcp-protocol-version");
        host.post(&h, &b).await.assert_error(400, -32020, json!(5));
        let h = with(h, "mcp-protocol-version", "2025-11-25");
        let a = host.post(&h, &b).await;
        a.assert_error(400, -32020, json!(5));
        assert_eq!(
            a.json()["error"]["message"],
            "Header mismatch: header MCP-Protocol-Version does not match the request body"
        );
    });
}

#[test]
fn d16_mcp_method_missing_mismatched_or_wrong_case_is_400_32020() {
    mt().block_on(async {
        let host = start(HttpConfig::default()).await;
        let b = body("6", "tools/list", Value::Null);
        let h = without(std_headers("tools/list", None), "mcp-method");
        let a = host.post(&h, &b).await;
        a.assert_error(400, -32020, json!(6));
        assert_eq!(
            a.json()["error"]["message"],
            "Header mismatch: required header Mcp-Method is missing"
        );
        for wrong in ["tools/call", "Tools/List"] {
            let h = with(
                without(std_headers("tools/list", None), "mcp-method"),
                "mcp-method",
                wrong,
            );
            host.post(&h, &b).await.assert_error(400, -32020, json!(6));
        }
        // Two values for one header are refused.
        let h = with(std_headers("tools/list", None), "mcp-method", "tools/list");
        host.post(&h, &b).await.assert_error(400, -32020, json!(6));
    });
}

#[test]
fn d27_header_names_are_case_insensitive_on_the_wire() {
    mt().block_on(async {
        let host = start(HttpConfig::default()).await;
        let b = call_body("7", "region_echo", json!({"region": "us-west1"}));
        let req = raw_post(
            &[
                ("ACCEPT", "application/json, text/event-stream"),
                ("CONTENT-TYPE", "application/json"),
                ("mcp-PROTOCOL-version", PV),
                ("MCP-METHOD", "tools/call"),
                ("mCp-NaMe", "region_echo"),
                ("MCP-PARAM-REGION", "us-west1"),
            ],
            b.as_bytes(),
        );
        let text = raw_exchange(host.addr, &req).await;
        assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
        assert!(text.contains(r#""called":"region_echo""#), "{text}");
    });
}

#[test]
fn d17_mcp_name_for_tools_prompts_and_resources() {
    mt().block_on(async {
        let host = start(HttpConfig::default()).await;
        // tools/call: missing, different, different case.
        let b = call_body("8", "echo", json!({}));
        host.post(&std_headers("tools/call", None), &b)
            .await
            .assert_error(400, -32020, json!(8));
        host.post(&std_headers("tools/call", Some("other")), &b)
            .await
            .assert_error(400, -32020, json!(8));
        host.post(&std_headers("tools/call", Some("ECHO")), &b)
            .await
            .assert_error(400, -32020, json!(8));
        let a = host
            .post(&std_headers("tools/call", Some("echo")), &b)
            .await;
        assert_eq!(a.json()["result"]["called"], "echo");
        // prompts/get uses params.name, resources/read params.uri.
        let b = body("9", "prompts/get", json!({"name": "greet"}));
        host.post(&std_headers("prompts/get", None), &b)
            .await
            .assert_error(400, -32020, json!(9));
        let a = host
            .post(&std_headers("prompts/get", Some("greet")), &b)
            .await;
        assert_eq!(a.status, StatusCode::OK);
        let b = body("10", "resources/read", json!({"uri": "file:///a/b.txt"}));
        host.post(&std_headers("resources/read", Some("file:///a/c.txt")), &b)
            .await
            .assert_error(400, -32020, json!(10));
        let a = host
            .post(&std_headers("resources/read", Some("file:///a/b.txt")), &b)
            .await;
        assert_eq!(a.status, StatusCode::OK);
    });
}

#[test]
fn d18_d27_base64_sentinel_in_mcp_name() {
    mt().block_on(async {
        let host = start(HttpConfig::default()).await;
        let b = call_body("11", "héllo wörld", json!({}));
        // base64("héllo wörld")
        let encoded = "=?base64?aMOpbGxvIHfDtnJsZA==?=";
        let a = host
            .post(&std_headers("tools/call", Some(encoded)), &b)
            .await;
        assert_eq!(a.json()["result"]["called"], "héllo wörld");
        // Malformed base64 is invalid characters; an upper-case marker is a literal mismatch.
        host.post(&std_headers("tools/call", Some("=?base64?@@@?=")), &b)
            .await
            .assert_error(400, -32020, json!(11));
        host.post(
            &std_headers("tools/call", Some("=?BASE64?aMOpbGxvIHfDtnJsZA==?=")),
            &b,
        )
        .await
        .assert_error(400, -32020, json!(11));
        // Raw non-ASCII bytes in the header are refused (D26).
        let req = raw_post(
            &[
                ("Accept", "application/json, text/event-stream"),
                ("Content-Type", "application/json"),
                ("MCP-Protocol-Version", PV),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "héllo wörld"),
            ],
            b.as_bytes(),
        );
        let text = raw_exchange(host.addr, &req).await;
        assert!(text.starts_with("HTTP/1.1 400"), "{text}");
        assert!(text.contains(r#""code":-32020"#), "{text}");
        assert!(text.contains(r#""id":11"#), "{text}");
    });
}

// ---------------------------------------------------------------------------------------------
// Mcp-Param-* (D19–D30)

#[test]
fn d28_param_header_matches_body_or_is_refused() {
    mt().block_on(async {
        let host = start(HttpConfig::default()).await;
        let ok = host
            .call(
                "20",
                "region_echo",
                json!({"region": "us-west1"}),
                &[("mcp-param-region", "us-west1")],
            )
            .await;
        assert_eq!(ok.status, StatusCode::OK, "{}", ok.text);
        // Present in the body, header missing → refused.
        let a = host
            .call("21", "region_echo", json!({"region": "us-west1"}), &[])
            .await;
        a.assert_error(400, -32020, json!(21));
        assert_eq!(
            a.json()["error"]["message"],
            "Header mismatch: header Mcp-Param-Region is missing but the body carries its value"
        );
        // Values are case-sensitive.
        host.call(
            "22",
            "region_echo",
            json!({"region": "us-west1"}),
            &[("mcp-param-region", "US-west1")],
        )
        .await
        .assert_error(400, -32020, json!(22));
        // Absent or null in the body → no header expected; an extra header disagrees.
        for args in [json!({}), json!({"region": null})] {
            let a = host.call("23", "region_echo", args.clone(), &[]).await;
            assert_eq!(a.status, StatusCode::OK, "{args}");
            host.call(
                "24",
                "region_echo",
                args,
                &[("mcp-param-region", "us-west1")],
            )
            .await
            .assert_error(400, -32020, json!(24));
        }
        // base64 sentinel decoded before comparing.
        let a = host
            .call(
                "25",
                "region_echo",
                json!({"region": "Hello, 世界"}),
                &[("mcp-param-region", "=?base64?SGVsbG8sIOS4lueVjA==?=")],
            )
            .await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.text);
        // Unannotated Mcp-Param headers are ignored (D42).
        let a = host
            .call(
                "26",
                "echo",
                json!({"text": "x"}),
                &[("mcp-param-unknown", "whatever")],
            )
            .await;
        assert_eq!(a.status, StatusCode::OK);
    });
}

#[test]
fn d29_nested_integer_param_compares_numerically() {
    mt().block_on(async {
        let host = start(HttpConfig::default()).await;
        let args = json!({"loc": {"zone": 42}});
        for v in ["42", "42.0"] {
            let a = host
                .call("30", "region_echo", args.clone(), &[("mcp-param-zone", v)])
                .await;
            assert_eq!(a.status, StatusCode::OK, "{v}: {}", a.text);
        }
        for v in ["43", "42x", "forty-two"] {
            host.call("31", "region_echo", args.clone(), &[("mcp-param-zone", v)])
                .await
                .assert_error(400, -32020, json!(31));
        }
        host.call("32", "region_echo", args, &[])
            .await
            .assert_error(400, -32020, json!(32));
        // Booleans as lowercase true/false.
        let a = host
            .call(
                "33",
                "region_echo",
                json!({"dry": true}),
                &[("mcp-param-dry", "true")],
            )
            .await;
        assert_eq!(a.status, StatusCode::OK);
        host.call(
            "34",
            "region_echo",
            json!({"dry": true}),
            &[("mcp-param-dry", "TRUE")],
        )
        .await
        .assert_error(400, -32020, json!(34));
    });
}

#[test]
fn d30_param_header_with_invalid_characters_is_refused() {
    mt().block_on(async {
        let host = start(HttpConfig::default()).await;
        let b = call_body("35", "region_echo", json!({"region": "zürich"}));
        let req = raw_post(
            &[
                ("Accept", "application/json, text/event-stream"),
                ("Content-Type", "application/json"),
                ("MCP-Protocol-Version", PV),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "region_echo"),
                ("Mcp-Param-Region", "zürich"),
            ],
            b.as_bytes(),
        );
        let text = raw_exchange(host.addr, &req).await;
        assert!(text.starts_with("HTTP/1.1 400"), "{text}");
        assert!(
            text.contains("Header mismatch: header Mcp-Param-Region contains invalid characters"),
            "{text}"
        );
    });
}

#[test]
fn o38_protocol_headers_up_to_8_kib_pass_and_one_byte_more_is_400_32020() {
    mt().block_on(async {
        let host = start(HttpConfig::default()).await;
        let h = std_headers("tools/list", None);
        let used: usize = h
            .iter()
            .filter(|(k, _)| k.starts_with("mcp-"))
            .map(|(k, v)| k.len() + v.len())
            .sum();
        let name = "mcp-param-filler";
        let fill = 8192 - used - name.len();
        let b = body("40", "tools/list", Value::Null);
        let a = host
            .post(&with(h.clone(), name, &"f".repeat(fill)), &b)
            .await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.text);
        let a = host.post(&with(h, name, &"f".repeat(fill + 1)), &b).await;
        a.assert_error(400, -32020, Value::Null);
        assert_eq!(
            a.json()["error"]["message"],
            "Header mismatch: protocol headers total 8193 bytes, over the 8192-byte limit"
        );
    });
}

// ---------------------------------------------------------------------------------------------
// Origin and Host (D34, D35)

#[test]
fn d34_present_origin_must_be_allowed_absent_origin_is_allowed() {
    mt().block_on(async {
        let host = start(HttpConfig::default()).await;
        let b = body("50", "tools/list", Value::Null);
        for bad in [
            "https://evil.example",
            "null",
            "http://localhost.evil.example",
        ] {
            let a = host
                .post(&with(std_headers("tools/list", None), "origin", bad), &b)
                .await;
            assert_eq!(a.status, StatusCode::FORBIDDEN, "{bad}");
            assert_eq!(
                a.text,
                "Forbidden: the Origin header names a browser origin this server does not allow.\n"
            );
        }
        // Checked on every request, also for GET.
        let a = host
            .send(
                "GET",
                &with(
                    std_headers("tools/list", None),
                    "origin",
                    "https://evil.example",
                ),
                "",
            )
            .await;
        assert_eq!(a.status, StatusCode::FORBIDDEN);
        let a = host
            .post(
                &with(
                    std_headers("tools/list", None),
                    "origin",
                    "http://localhost:5173",
                ),
                &b,
            )
            .await;
        assert_eq!(a.status, StatusCode::OK);
        let a = host.post(&std_headers("tools/list", None), &b).await;
        assert_eq!(a.status, StatusCode::OK);

        let strict = start(HttpConfig {
            origins: OriginPolicy::Allow(vec!["https://app.example".into()]),
            ..HttpConfig::default()
        })
        .await;
        let a = strict
            .post(
                &with(
                    std_headers("tools/list", None),
                    "origin",
                    "https://app.example",
                ),
                &b,
            )
            .await;
        assert_eq!(a.status, StatusCode::OK);
        let a = strict
            .post(
                &with(
                    std_headers("tools/list", None),
                    "origin",
                    "http://localhost",
                ),
                &b,
            )
            .await;
        assert_eq!(a.status, StatusCode::FORBIDDEN);
    });
}

#[test]
fn d35_foreign_host_is_refused_dns_rebinding() {
    mt().block_on(async {
        let host = start(HttpConfig::default()).await;
        let b = body("51", "tools/list", Value::Null);
        let mk = |h: &str| {
            let mut r = format!("POST /mcp HTTP/1.1\r\nHost: {h}\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nMCP-Protocol-Version: {PV}\r\nMcp-Method: tools/list\r\nContent-Length: {}\r\n\r\n", b.len()).into_bytes();
            r.extend_from_slice(b.as_bytes());
            r
        };
        let text = raw_exchange(host.addr, &mk("attacker.example:8080")).await;
        assert!(text.starts_with("HTTP/1.1 403"), "{text}");
        let text = raw_exchange(host.addr, &mk("localhost:9")).await;
        assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    });
}

// ---------------------------------------------------------------------------------------------
// JSON vs SSE, progress, keep-alive (D4, D8–D10)

#[test]
fn d4_final_reply_first_is_json() {
    mt().block_on(async {
        let host = start(HttpConfig::default()).await;
        let a = host.call("60", "echo", json!({"text": "hi"}), &[]).await;
        assert_eq!(a.status, StatusCode::OK);
        assert_eq!(
            a.json(),
            json!({"jsonrpc": "2.0", "id": 60, "result": {"called": "echo"}})
        );
    });
}

/// D4: the final reply is answered as soon as the outbox has it, and the dispatcher's work
/// after `finish` still runs to its end on its own (nothing is dropped half-way).
#[test]
fn d4_reply_goes_out_at_finish_and_the_dispatch_tail_still_runs() {
    mt().block_on(async {
        let host = start(HttpConfig::default()).await;
        let a = host.call("61", "linger", json!({}), &[]).await;
        assert_eq!(
            a.json(),
            json!({"jsonrpc": "2.0", "id": 61, "result": {"lingering": true}})
        );
        assert_eq!(
            host.script.lingered.load(Ordering::SeqCst),
            0,
            "answered before the tail"
        );
        wait_for(&host.script.lingered, 1).await;
        assert_eq!(host.script.cancelled.load(Ordering::SeqCst), 0);
    });
}

#[test]
fn d8_d9_d10_progress_makes_an_sse_stream_that_ends_with_the_result() {
    mt().block_on(async {
        let host = start(HttpConfig::default()).await;
        let a = host.call("\"p\"", "progress", json!({}), &[]).await;
        assert_eq!(a.status, StatusCode::OK);
        assert_eq!(a.headers["cache-control"], "no-cache");
        assert_eq!(a.headers["x-accel-buffering"], "no");
        let events = a.events();
        assert_eq!(events.len(), 4, "{}", a.text);
        for (i, e) in events[..3].iter().enumerate() {
            assert_eq!(e["method"], "notifications/progress");
            assert_eq!(e["params"]["progress"], i + 1);
        }
        assert_eq!(
            events[3],
            json!({"jsonrpc": "2.0", "id": "p", "result": {"done": true}})
        );
        assert!(a.text.ends_with("\n\n"));
    });
}

#[test]
fn d10_silent_long_call_switches_to_sse_with_keep_alive_comments() {
    mt().block_on(async {
        let host = start(HttpConfig {
            stream_after: Some(Duration::from_millis(50)),
            keep_alive: Duration::from_millis(60),
            ..HttpConfig::default()
        })
        .await;
        let a = host.call("61", "slow", json!({}), &[]).await;
        assert_eq!(a.headers["content-type"], "text/event-stream");
        let comments = a.text.matches(": keep-alive\n\n").count();
        assert!(comments >= 2, "{:?}", a.text);
        assert_eq!(
            a.events(),
            [json!({"jsonrpc": "2.0", "id": 61, "result": {"slow": true}})]
        );
        // Without stream_after the same call is one JSON body.
        let host = start(HttpConfig {
            stream_after: None,
            ..HttpConfig::default()
        })
        .await;
        let a = host.call("62", "slow", json!({}), &[]).await;
        assert_eq!(a.json()["result"]["slow"], true);
    });
}

#[test]
fn dispatcher_ending_without_a_reply_gets_an_internal_error_not_a_hang() {
    mt().block_on(async {
        let host = start(HttpConfig::default()).await;
        let a = tokio::time::timeout(
            Duration::from_secs(5),
            host.call("63", "panic", json!({}), &[]),
        )
        .await
        .expect("no hang");
        a.assert_error(500, -32603, json!(63));
        assert_eq!(a.json()["error"]["message"], "Internal error");
        let a = tokio::time::timeout(
            Duration::from_secs(5),
            host.call("64", "vanish", json!({}), &[]),
        )
        .await
        .expect("no hang");
        let events = a.events();
        assert_eq!(events.len(), 2, "{}", a.text);
        assert_eq!(events[0]["method"], "notifications/progress");
        assert_eq!(
            events[1],
            json!({"jsonrpc": "2.0", "id": 64, "error": {"code": -32603, "message": "Internal error"}})
        );
        // Still serving.
        assert_eq!(host.call("65", "echo", json!({}), &[]).await.status, StatusCode::OK);
    });
}

#[test]
fn slow_reader_overflow_ends_the_stream_without_a_result_and_cancels() {
    mt().block_on(async {
        let host = start(HttpConfig {
            max_queued_notifications: 2,
            ..HttpConfig::default()
        })
        .await;
        let a = host.call("66", "flood", json!({}), &[]).await;
        assert_eq!(a.status, StatusCode::OK);
        // Two queued notifications are delivered, then the stream ends: no final response, so
        // the client knows it missed something (nothing is dropped silently).
        let events = a.events();
        assert_eq!(events.len(), 2, "{}", a.text);
        assert_eq!(events[0]["params"]["progress"], 1);
        assert_eq!(events[1]["params"]["progress"], 2);
        assert_eq!(host.script.flood_accepted.load(Ordering::SeqCst), 2);
        assert_eq!(host.script.cancelled.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn http2_prior_knowledge_is_served_and_host_checked_via_authority() {
    mt().block_on(async {
        let host = start(HttpConfig::default()).await;
        let h2: Client<HttpConnector, Full<Bytes>> = Client::builder(TokioExecutor::new())
            .http2_only(true)
            .build_http();
        let send = |authority: String| {
            let mut b = Request::post(format!("http://{authority}/mcp"));
            for (k, v) in std_headers("tools/list", None) {
                b = b.header(k, v);
            }
            let req = b
                .body(Full::new(Bytes::from(body(
                    "80",
                    "tools/list",
                    Value::Null,
                ))))
                .unwrap();
            h2.request(req)
        };
        let res = send(host.addr.to_string()).await.unwrap();
        assert_eq!(res.version(), hyper::Version::HTTP_2);
        assert_eq!(res.status(), StatusCode::OK);
        // Same socket address, foreign authority: refused (D35).
        let mut b = Request::post(format!("http://{}/mcp", host.addr));
        for (k, v) in std_headers("tools/list", None) {
            b = b.header(k, v);
        }
        let req = b
            .header("host", "rebind.example")
            .body(Full::new(Bytes::from(body(
                "81",
                "tools/list",
                Value::Null,
            ))))
            .unwrap();
        let res = h2.request(req).await.unwrap();
        assert_eq!(res.status(), StatusCode::FORBIDDEN);
    });
}

// ---------------------------------------------------------------------------------------------
// Cancellation by disconnect (D12)

/// Polls of 10 ms before a counter counts as stuck: at least 20 s, only a hang stopper (it was
/// 400, about 4 s, which a loaded machine could use up).
const COUNTER_POLLS: usize = 2000;

async fn wait_for(counter: &AtomicUsize, n: usize) {
    for _ in 0..COUNTER_POLLS {
        if counter.load(Ordering::SeqCst) >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("counter stayed at {}", counter.load(Ordering::SeqCst));
}

#[test]
fn d12_closing_the_connection_before_any_answer_cancels_the_request() {
    mt().block_on(async {
        let host = start(HttpConfig {
            stream_after: None,
            ..HttpConfig::default()
        })
        .await;
        let b = call_body("70", "wait", json!({}));
        let req = raw_post(
            &[
                ("Accept", "application/json, text/event-stream"),
                ("Content-Type", "application/json"),
                ("MCP-Protocol-Version", PV),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "wait"),
            ],
            b.as_bytes(),
        );
        let mut s = TcpStream::connect(host.addr).await.unwrap();
        s.write_all(&req).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(host.script.cancelled.load(Ordering::SeqCst), 0);
        drop(s);
        wait_for(&host.script.cancelled, 1).await;
        // The server keeps serving.
        let a = host.call("71", "echo", json!({}), &[]).await;
        assert_eq!(a.status, StatusCode::OK);
    });
}

#[test]
fn d12_dropping_an_sse_stream_cancels_the_request() {
    mt().block_on(async {
        let host = start(HttpConfig::default()).await;
        let b = call_body("72", "progress_wait", json!({}));
        let mut req = Request::post(host.url());
        for (k, v) in std_headers("tools/call", Some("progress_wait")) {
            req = req.header(k, v);
        }
        let res = host
            .client
            .request(req.body(Full::new(Bytes::from(b))).unwrap())
            .await
            .unwrap();
        assert_eq!(res.headers()["content-type"], "text/event-stream");
        let mut body = res.into_body();
        let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert!(
            first.starts_with(b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"")
        );
        drop(body);
        wait_for(&host.script.cancelled, 1).await;
        let a = host.call("73", "echo", json!({}), &[]).await;
        assert_eq!(a.status, StatusCode::OK);
    });
}

/// The next body frame as text, `None` at the end of the stream.
async fn next(body: &mut Incoming) -> Option<String> {
    let f = tokio::time::timeout(Duration::from_secs(5), body.frame())
        .await
        .expect("frame in time");
    f.map(|f| String::from_utf8(f.unwrap().into_data().unwrap().to_vec()).unwrap())
}

// ---------------------------------------------------------------------------------------------
// subscriptions/listen (D41, K3, K4, K10, K14)

#[test]
fn k3_k4_listen_stream_acknowledges_first_then_tagged_notifications_then_result() {
    mt().block_on(async {
        let host = start(HttpConfig {
            keep_alive: Duration::from_millis(40),
            ..HttpConfig::default()
        })
        .await;
        let b = body(
            "\"L1\"",
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
        );
        let mut req = Request::post(host.url());
        for (k, v) in std_headers("subscriptions/listen", None) {
            req = req.header(k, v);
        }
        let res = host
            .client
            .request(req.body(Full::new(Bytes::from(b))).unwrap())
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(res.headers()["content-type"], "text/event-stream");
        let mut body = res.into_body();
        let mut text = String::new();
        let ack = next(&mut body).await.unwrap();
        assert!(
            ack.contains("notifications/subscriptions/acknowledged"),
            "{ack}"
        );
        assert!(
            ack.contains(r#""io.modelcontextprotocol/subscriptionId":"L1""#),
            "{ack}"
        );
        // Idle: keep-alive comments.
        let idle = next(&mut body).await.unwrap();
        assert_eq!(idle, ": keep-alive\n\n");
        host.script
            .listen
            .send("notifications/tools/list_changed".into())
            .unwrap();
        loop {
            let f = next(&mut body).await.unwrap();
            if f.starts_with("data: ") {
                text.push_str(&f);
                break;
            }
        }
        assert!(
            text.contains(r#""method":"notifications/tools/list_changed""#),
            "{text}"
        );
        assert!(
            text.contains(r#""io.modelcontextprotocol/subscriptionId":"L1""#),
            "{text}"
        );
        // Server-side close (e.g. shutdown): the listen result ends the stream.
        host.script.listen.send("close".into()).unwrap();
        let mut last = String::new();
        while let Some(f) = next(&mut body).await {
            if f.starts_with("data: ") {
                last = f;
            }
        }
        let v: Value = serde_json::from_str(last.trim().strip_prefix("data: ").unwrap()).unwrap();
        assert_eq!(v["id"], "L1");
        assert_eq!(
            v["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            "L1"
        );
    });
}

// ---------------------------------------------------------------------------------------------
// Concurrency and connection reuse (D36, O3, O35, O118)

#[test]
fn d36_identity_never_carries_over_on_a_keep_alive_connection() {
    mt().block_on(async {
        let host = start(HttpConfig::default()).await;
        // One raw connection, three requests in sequence: alice, anonymous, a refused one, bob.
        let mut s = TcpStream::connect(host.addr).await.unwrap();
        let ask = |user: Option<&'static str>, id: u32, good: bool| {
            let b = call_body(&id.to_string(), "whoami", json!({"text": id.to_string()}));
            let mut h = vec![
                ("Accept", "application/json, text/event-stream"),
                ("Content-Type", "application/json"),
                ("MCP-Protocol-Version", PV),
                ("Mcp-Method", "tools/call"),
            ];
            if good {
                h.push(("Mcp-Name", "whoami"));
            }
            if let Some(u) = user {
                h.push(("x-user", u));
            }
            raw_post(&h, b.as_bytes())
        };
        let plan = [
            (Some("alice"), 1, true),
            (None, 2, true),
            (Some("mallory"), 3, false),
            (None, 4, true),
            (Some("bob"), 5, true),
        ];
        for (user, id, good) in plan {
            s.write_all(&ask(user, id, good)).await.unwrap();
            let body: Value = serde_json::from_str(&read_one(&mut s).await).unwrap();
            assert_eq!(body["id"], id);
            if good {
                assert_eq!(body["result"]["principal"], json!(user), "request {id}");
                assert_eq!(body["result"]["tag"], id.to_string());
            } else {
                assert_eq!(body["error"]["code"], -32020);
            }
        }
    });
}

#[test]
fn o118_64_concurrent_calls_with_interleaved_invalid_requests_do_not_leak() {
    mt().block_on(async {
        let host = Arc::new(start(HttpConfig::default()).await);
        let mut tasks = Vec::new();
        for i in 0..64u32 {
            let host = host.clone();
            tasks.push(tokio::spawn(async move {
                let user = format!("user-{i}");
                let id = (1000 + i).to_string();
                if i % 4 == 3 {
                    // Invalid: Mcp-Name disagrees with the body.
                    let a = host
                        .post(
                            &with(std_headers("tools/call", Some("echo")), "x-user", &user),
                            &call_body(&id, "whoami", json!({"text": id})),
                        )
                        .await;
                    a.assert_error(400, -32020, json!(1000 + i));
                } else if i % 4 == 1 {
                    let a = host
                        .post(
                            &with(std_headers("tools/call", Some("whoami")), "x-user", &user),
                            "{oops",
                        )
                        .await;
                    a.assert_error(400, -32700, Value::Null);
                } else {
                    let a = host
                        .post(
                            &with(std_headers("tools/call", Some("whoami")), "x-user", &user),
                            &call_body(&id, "whoami", json!({"text": id})),
                        )
                        .await;
                    assert_eq!(a.status, StatusCode::OK);
                    let v = a.json();
                    assert_eq!(v["id"], 1000 + i);
                    assert_eq!(v["result"]["principal"], user);
                    assert_eq!(v["result"]["tag"], id);
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Memory (user need 4: RSS flat over many requests, rejected ones included)

fn rss_pages() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    statm.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn rss_stays_flat_over_20k_requests_including_rejected_ones() {
    mt_alone().block_on(async {
        let service = McpHttp::new(script(), HttpConfig::default());
        let good = call_body("1", "echo", json!({"text": "x"}));
        let mismatch = call_body("2", "whoami", json!({}));
        let round = |n: usize| {
            let service = service.clone();
            let good = good.clone();
            let mismatch = mismatch.clone();
            async move {
                for i in 0..n {
                    let (name, body, status) = match i % 4 {
                        0 => ("echo", good.as_str(), 200),
                        1 => ("echo", mismatch.as_str(), 400),
                        2 => ("echo", "{bad", 400),
                        _ => ("progress", r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"progress"}}"#, 200),
                    };
                    let mut b = Request::post("http://127.0.0.1/mcp").header("host", "127.0.0.1");
                    for (k, v) in std_headers("tools/call", Some(name)) {
                        b = b.header(k, v);
                    }
                    let res: Response<_> = service.handle(b.body(Full::new(Bytes::from(body.to_owned()))).unwrap()).await;
                    assert_eq!(res.status().as_u16(), status, "request {i}");
                    let bytes = res.into_body().collect().await.unwrap().to_bytes();
                    assert!(!bytes.is_empty());
                }
            }
        };
        round(4_000).await;
        let before = rss_pages();
        round(20_000).await;
        let after = rss_pages();
        let grown_kib = after.saturating_sub(before) * 4;
        assert!(grown_kib < 2048, "RSS grew by {grown_kib} KiB ({before} → {after} pages)");
    });
}

// ---------------------------------------------------------------------------------------------
// The bundled accept loop

#[test]
fn serve_accepts_on_loopback_and_shuts_down_gracefully() {
    mt().block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let service = McpHttp::new(script(), HttpConfig::default());
        let server = tokio::spawn(strict_mcp::server::http::serve(listener, service, async {
            let _ = stopped.await;
        }));
        let client: Client<HttpConnector, Full<Bytes>> =
            Client::builder(TokioExecutor::new()).build_http();
        let mut req = Request::post(format!("http://{addr}/mcp"));
        for (k, v) in std_headers("tools/call", Some("echo")) {
            req = req.header(k, v);
        }
        let res = client
            .request(
                req.body(Full::new(Bytes::from(call_body("1", "echo", json!({})))))
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        drop(res);
        drop(client);
        stop.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(5), server)
            .await
            .expect("serve returns after shutdown")
            .unwrap()
            .unwrap();
        assert!(TcpStream::connect(addr).await.is_err(), "listener closed");
    });
}

// ---------------------------------------------------------------------------------------------
// The tower entry point (O2): mounted by the application, identity from its middleware

#[test]
fn o2_tower_service_takes_the_caller_from_request_extensions() {
    mt().block_on(async {
        use tower::ServiceExt as _;
        let service = McpHttp::new(script(), HttpConfig::default());
        for (user, expected) in [(Some("carol"), json!("carol")), (None, Value::Null)] {
            let mut b = Request::post("http://127.0.0.1/mcp").header("host", "127.0.0.1");
            for (k, v) in std_headers("tools/call", Some("whoami")) {
                b = b.header(k, v);
            }
            let mut req = b
                .body(Full::new(Bytes::from(call_body(
                    "90",
                    "whoami",
                    json!({"text": "t"}),
                ))))
                .unwrap();
            if let Some(u) = user {
                req.extensions_mut().insert(Caller::new(u));
            }
            let res = service.clone().oneshot(req).await.unwrap();
            assert_eq!(res.status(), StatusCode::OK);
            let bytes = res.into_body().collect().await.unwrap().to_bytes();
            let v: Value = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(v["result"]["principal"], expected);
        }
    });
}
