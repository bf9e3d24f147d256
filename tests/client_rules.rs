//! The client core's remaining rules: the opt-in HeaderMismatch refresh-and-retry (O82, D25,
//! X14), per-request log messages (L2, L4, O75), the extension registry (O76) and the
//! strict/lossless diagnostics (X1, X2). Against scripted fakes, our own server in memory and
//! a raw HTTP server on loopback (nothing else is dialled).

#![forbid(unsafe_code)]

#[path = "../examples/conformance/fixtures.rs"]
mod fixtures;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Map, Value};
use strict_mcp::client::{
    BoxFuture, CallOptions, Client, ClientError, ClientOptions, ConnectError, ExtensionError,
    ExtensionRegistry, Inbound, InvalidResult, Leniency, LogMessage, LogMessageSink, RoundInput,
    RpcErrorKind, SerdeCodec, ToolOutcome, Transport, TransportError, MAX_LOG_MESSAGES_PER_CALL,
    MAX_VERSION_RETRIES,
};
use strict_mcp::codec::{decode, IngressLimits};
use strict_mcp::core::Caller;
use strict_mcp::server::{Server, ServerOptions};
use strict_mcp::testing::InMemoryTransport;
use strict_mcp::wire::jsonrpc::{Message, Request};
use strict_mcp::wire::logging::LogLevel;

// ---------------------------------------------------------------------------------------------
// A scripted fake server

type Script = Box<dyn Fn(&Request, usize) -> Vec<String> + Send + Sync>;

/// Answers each request with the lines its script returns; keeps every message sent.
struct Fake {
    script: Script,
    tx: tokio::sync::mpsc::UnboundedSender<Inbound>,
    rx: tokio::sync::Mutex<tokio::sync::mpsc::UnboundedReceiver<Inbound>>,
    sent: Mutex<Vec<Message>>,
}

impl Fake {
    fn new(script: impl Fn(&Request, usize) -> Vec<String> + Send + Sync + 'static) -> Arc<Fake> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        Arc::new(Fake {
            script: Box::new(script),
            tx,
            rx: tokio::sync::Mutex::new(rx),
            sent: Mutex::new(Vec::new()),
        })
    }

    fn requests(&self) -> Vec<Request> {
        self.sent
            .lock()
            .unwrap()
            .iter()
            .filter_map(|m| match m {
                Message::Request(r) => Some(r.clone()),
                _ => None,
            })
            .collect()
    }

    fn methods(&self) -> Vec<String> {
        self.requests().into_iter().map(|r| r.method).collect()
    }

    /// Every message sent, as the exact JSON text the client wrote.
    fn wire(&self) -> Vec<String> {
        self.sent
            .lock()
            .unwrap()
            .iter()
            .map(|m| serde_json::to_string(m).unwrap())
            .collect()
    }
}

impl Transport for Fake {
    fn send<'a>(&'a self, message: &'a Message) -> BoxFuture<'a, Result<(), TransportError>> {
        Box::pin(async move {
            let n = {
                let mut sent = self.sent.lock().unwrap();
                sent.push(message.clone());
                sent.len()
            };
            if let Message::Request(r) = message {
                for line in (self.script)(r, n) {
                    let inbound = match decode(line.as_bytes(), &IngressLimits::CLIENT) {
                        Ok(m) => Inbound::Message(m),
                        Err(rejection) => Inbound::Rejected(rejection),
                    };
                    let _ = self.tx.send(inbound);
                }
            }
            Ok(())
        })
    }

    fn recv(&self) -> BoxFuture<'_, Result<Inbound, TransportError>> {
        Box::pin(async move {
            self.rx
                .lock()
                .await
                .recv()
                .await
                .ok_or(TransportError::Closed)
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

const DISCOVER: &str = r#"{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{},"extensions":{"com.example/thing":{"level":3,"big":123456789012345678901234567890,"f":1.50},"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}},"ttlMs":0,"cacheScope":"private"}"#;

fn ok(r: &Request, result: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{},"result":{result}}}"#,
        r.id.token()
    )
}

fn err(r: &Request, code: i64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":{code},"message":"header mismatch"}}}}"#,
        r.id.token()
    )
}

const TOOLS: &str = r#"{"resultType":"complete","tools":[{"name":"deploy","inputSchema":{"type":"object"}}],"ttlMs":0,"cacheScope":"private"}"#;
const CALL_OK: &str = r#"{"resultType":"complete","content":[{"type":"text","text":"ok"}]}"#;

/// A fake that discovers normally and hands every other request to `rest`.
fn modern(rest: impl Fn(&Request, usize) -> Vec<String> + Send + Sync + 'static) -> Arc<Fake> {
    Fake::new(move |r, n| {
        if r.method == "server/discover" {
            vec![ok(r, DISCOVER)]
        } else {
            rest(r, n)
        }
    })
}

async fn connect_with(fake: &Arc<Fake>, options: ClientOptions) -> Client {
    Client::connect(fake.clone(), options)
        .await
        .expect("connect")
}

fn params_of(r: &Request) -> Value {
    serde_json::from_str(r.params.as_ref().expect("params").get()).unwrap()
}

fn args(v: Value) -> Option<Map<String, Value>> {
    match v {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

fn retrying() -> ClientOptions {
    ClientOptions {
        retry_header_mismatch: true,
        ..ClientOptions::default()
    }
}

/// A fake whose `tools/call` answers -32020 the first `mismatches` times.
fn mismatching(mismatches: usize) -> Arc<Fake> {
    let calls = Arc::new(AtomicUsize::new(0));
    modern(move |r, _| match r.method.as_str() {
        "tools/list" => vec![ok(r, TOOLS)],
        "tools/call" if calls.fetch_add(1, Ordering::SeqCst) < mismatches => vec![err(r, -32020)],
        "tools/call" => vec![ok(r, CALL_OK)],
        _ => vec![],
    })
}

// ---------------------------------------------------------------------------------------------
// 1. HeaderMismatch refresh-and-retry (O82, D25, X14)

#[tokio::test]
async fn o82_i15_header_mismatch_is_typed_and_never_retried_by_default() {
    let fake = mismatching(1);
    let client = connect_with(&fake, ClientOptions::default()).await;
    match client
        .call(
            "deploy",
            args(json!({"region": "eu"})),
            &CallOptions::default(),
        )
        .await
    {
        Err(ClientError::Rpc(e)) => {
            assert_eq!((e.kind, e.code), (RpcErrorKind::HeaderMismatch, -32020));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(fake.methods(), vec!["server/discover", "tools/call"]);

    // Switched on for the client, switched off again for one call: still no retry.
    let fake = mismatching(1);
    let client = connect_with(&fake, retrying()).await;
    let off = CallOptions {
        retry_header_mismatch: Some(false),
        ..CallOptions::default()
    };
    assert!(matches!(
        client.call("deploy", None, &off).await,
        Err(ClientError::Rpc(e)) if e.kind == RpcErrorKind::HeaderMismatch
    ));
    assert_eq!(fake.methods(), vec!["server/discover", "tools/call"]);
}

#[tokio::test]
async fn o82_d25_x14_opt_in_refreshes_tools_list_and_retries_once_with_a_new_id() {
    let fake = mismatching(1);
    let client = connect_with(&fake, ClientOptions::default()).await;
    let on = CallOptions {
        retry_header_mismatch: Some(true),
        ..CallOptions::default()
    };
    let result = client
        .call("deploy", args(json!({"region": "eu"})), &on)
        .await
        .expect("the retry succeeds");
    assert_eq!(
        serde_json::to_value(&result.content).unwrap(),
        json!([{"type": "text", "text": "ok"}])
    );
    assert_eq!(
        fake.methods(),
        vec!["server/discover", "tools/call", "tools/list", "tools/call"]
    );
    let requests = fake.requests();
    let (first, retry) = (&requests[1], &requests[3]);
    assert_ne!(first.id.token(), retry.id.token(), "a new id (D25)");
    assert_ne!(requests[2].id.token(), retry.id.token());
    // The same request otherwise: name, arguments and _meta unchanged.
    assert_eq!(params_of(first), params_of(retry));
    assert_eq!(params_of(retry)["arguments"], json!({"region": "eu"}));
}

#[tokio::test]
async fn o82_a_second_mismatch_after_the_one_retry_is_the_typed_header_mismatch() {
    let fake = mismatching(usize::MAX);
    let client = connect_with(&fake, retrying()).await;
    match client
        .call_tool("deploy", None, RoundInput::first(), &CallOptions::default())
        .await
    {
        Err(ClientError::Rpc(e)) => assert_eq!(e.kind, RpcErrorKind::HeaderMismatch),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        fake.methods(),
        vec!["server/discover", "tools/call", "tools/list", "tools/call"]
    );
}

#[tokio::test]
async fn o82_a_failed_refresh_or_a_vanished_tool_stops_without_a_retry() {
    // The refresh itself fails: the typed pair, no second call.
    let calls = Arc::new(AtomicUsize::new(0));
    let fake = modern(move |r, _| match r.method.as_str() {
        "tools/list" => vec![err(r, -32603)],
        "tools/call" => {
            calls.fetch_add(1, Ordering::SeqCst);
            vec![err(r, -32020)]
        }
        _ => vec![],
    });
    let client = connect_with(&fake, retrying()).await;
    match client.call("deploy", None, &CallOptions::default()).await {
        Err(ClientError::HeaderMismatchRefresh { mismatch, refresh }) => {
            assert_eq!(mismatch.kind, RpcErrorKind::HeaderMismatch);
            assert!(matches!(*refresh, ClientError::Rpc(ref e) if e.code == -32603));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        fake.methods(),
        vec!["server/discover", "tools/call", "tools/list"]
    );

    // The refreshed listing no longer has the tool: the -32020 stands, nothing is resent.
    let fake = modern(move |r, _| match r.method.as_str() {
        "tools/list" => vec![ok(
            r,
            r#"{"resultType":"complete","tools":[],"ttlMs":0,"cacheScope":"private"}"#,
        )],
        "tools/call" => vec![err(r, -32020)],
        _ => vec![],
    });
    let client = connect_with(&fake, retrying()).await;
    assert!(matches!(
        client.call("deploy", None, &CallOptions::default()).await,
        Err(ClientError::Rpc(e)) if e.kind == RpcErrorKind::HeaderMismatch
    ));
    assert_eq!(
        fake.methods(),
        vec!["server/discover", "tools/call", "tools/list"]
    );
}

#[tokio::test]
async fn d23_a_tool_with_an_invalid_header_annotation_is_dropped_siblings_kept() {
    let fake = modern(|r, _| {
        vec![ok(
            r,
            r#"{"resultType":"complete","tools":[
                {"name":"bad","inputSchema":{"type":"object","properties":{"a":{"type":"object","x-mcp-header":"A"}}}},
                {"name":"good","inputSchema":{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A"}}}}
            ],"ttlMs":0,"cacheScope":"private"}"#,
        )]
    });
    let client = connect_with(&fake, ClientOptions::default()).await;
    let names: Vec<String> = client
        .list_tools(&CallOptions::default())
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, vec!["good"]);
}

#[cfg(feature = "http")]
mod http_retry {
    use super::*;
    use strict_mcp::client::http::HttpTransport;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// One exchange the raw server saw: the request head (lower-cased) and its JSON body.
    type Seen = Arc<Mutex<Vec<(String, Value)>>>;

    /// A loopback server whose `deploy` tool mirrors `region` into `Mcp-Param-Region` in the
    /// first listing, then changes to `Mcp-Param-Zone` (every later listing says so); a call
    /// without `Mcp-Param-Zone` gets 400 / -32020, as a strict server answers.
    async fn changing_server() -> (String, Seen) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let seen: Seen = Arc::default();
        let kept = Arc::clone(&seen);
        let listings = Arc::new(AtomicUsize::new(0));
        tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                let kept = Arc::clone(&kept);
                let listings = Arc::clone(&listings);
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    let end = loop {
                        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            break i + 4;
                        }
                        match socket.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    };
                    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                    let length: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:")?.trim().parse().ok())
                        .unwrap_or(0);
                    while buf.len() < end + length {
                        match socket.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let body: Value = serde_json::from_slice(&buf[end..end + length]).unwrap();
                    let id = body["id"].to_string();
                    let (status, result) = match body["method"].as_str().unwrap_or("") {
                        "server/discover" => ("200 OK", format!(r#""result":{DISCOVER}"#)),
                        "tools/list" => {
                            let n = listings.fetch_add(1, Ordering::SeqCst);
                            let name = if n == 0 { "Region" } else { "Zone" };
                            (
                                "200 OK",
                                format!(
                                    r#""result":{{"resultType":"complete","tools":[{{"name":"deploy","inputSchema":{{"type":"object","properties":{{"region":{{"type":"string","x-mcp-header":"{name}"}}}}}}}}],"ttlMs":0,"cacheScope":"private"}}"#
                                ),
                            )
                        }
                        // The tool changed after the first listing: calls need the new header.
                        _ => {
                            if head.contains("mcp-param-zone: eu\r\n") {
                                ("200 OK", format!(r#""result":{CALL_OK}"#))
                            } else {
                                (
                                    "400 Bad Request",
                                    r#""error":{"code":-32020,"message":"header mismatch"}"#
                                        .to_owned(),
                                )
                            }
                        }
                    };
                    kept.lock().unwrap().push((head, body));
                    let body = format!(r#"{{"jsonrpc":"2.0","id":{id},{result}}}"#);
                    let reply = format!(
                        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = socket.write_all(reply.as_bytes()).await;
                    let _ = socket.shutdown().await;
                });
            }
        });
        (format!("http://{addr}/mcp"), seen)
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct RegionIn {
        /// Mirrored into `Mcp-Param-Region`.
        #[schemars(extend("x-mcp-header" = "Region"))]
        region: String,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct ZoneIn {
        /// The same property, now mirrored into `Mcp-Param-Zone`.
        #[schemars(extend("x-mcp-header" = "Zone"))]
        region: String,
    }

    #[derive(serde::Serialize, schemars::JsonSchema)]
    struct Out {
        /// The region deployed to.
        text: String,
    }

    fn registry(zone: bool) -> strict_mcp::core::Registry {
        use strict_mcp::core::{Invocation, RegistryBuilder, ToolDef};
        let tool = if zone {
            ToolDef::typed("deploy", |_: Invocation, i: ZoneIn| async move {
                Ok(Out { text: i.region })
            })
        } else {
            ToolDef::typed("deploy", |_: Invocation, i: RegionIn| async move {
                Ok(Out { text: i.region })
            })
        };
        RegistryBuilder::new().tool(tool).build().expect("registry")
    }

    #[tokio::test]
    async fn o82_d25_own_http_server_changing_annotations_is_refreshed_and_retried_once() {
        use strict_mcp::server::http::{serve, HttpConfig, McpHttp};
        let server = Server::new(registry(false), ServerOptions::new().mode("direct")).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        tokio::spawn(serve(
            listener,
            McpHttp::new(server.clone(), HttpConfig::default()),
            std::future::pending(),
        ));
        let transport = Arc::new(HttpTransport::new(&url, None).expect("transport"));
        let client = Client::connect(transport.clone(), ClientOptions::default())
            .await
            .expect("connect");
        client.list_tools(&CallOptions::default()).await.unwrap();
        // The server's tool changes its annotation after the client listed it.
        server.replace_registry(registry(true));
        let deploy = || args(json!({"region": "eu"}));
        // Off by default: the typed -32020, the stale annotation still in use.
        match client
            .call("deploy", deploy(), &CallOptions::default())
            .await
        {
            Err(ClientError::Rpc(e)) => assert_eq!(e.kind, RpcErrorKind::HeaderMismatch),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            transport.annotations("deploy")[0].header_name(),
            "Mcp-Param-Region"
        );
        // Opted in: one refresh, one retry, success.
        let on = CallOptions {
            retry_header_mismatch: Some(true),
            ..CallOptions::default()
        };
        let result = client.call("deploy", deploy(), &on).await.expect("retried");
        assert_eq!(
            result.structured_content.as_ref().map(|s| s.get()),
            Some(r#"{"value":{"text":"eu"}}"#)
        );
        assert_eq!(
            transport.annotations("deploy")[0].header_name(),
            "Mcp-Param-Zone"
        );
    }

    #[tokio::test]
    async fn o82_d25_http_retry_sends_the_refreshed_annotations_headers_under_a_new_id() {
        let (url, seen) = changing_server().await;
        let transport = Arc::new(HttpTransport::new(&url, None).expect("transport"));
        let client = Client::connect(transport, retrying())
            .await
            .expect("connect");
        client.list_tools(&CallOptions::default()).await.unwrap();
        let result = client
            .call(
                "deploy",
                args(json!({"region": "eu"})),
                &CallOptions::default(),
            )
            .await
            .expect("the retry carries the refreshed header");
        assert_eq!(result.is_error, None);
        let seen = seen.lock().unwrap().clone();
        let methods: Vec<&str> = seen
            .iter()
            .map(|(_, b)| b["method"].as_str().unwrap())
            .collect();
        assert_eq!(
            methods,
            vec![
                "server/discover",
                "tools/list",
                "tools/call",
                "tools/list",
                "tools/call"
            ]
        );
        let (first, retry) = (&seen[2], &seen[4]);
        assert!(first.0.contains("mcp-param-region: eu\r\n"), "{}", first.0);
        assert!(!first.0.contains("mcp-param-zone"));
        assert!(retry.0.contains("mcp-param-zone: eu\r\n"), "{}", retry.0);
        assert!(!retry.0.contains("mcp-param-region"));
        assert_ne!(first.1["id"], retry.1["id"]);
        assert_eq!(first.1["params"], retry.1["params"]);
    }
}

// ---------------------------------------------------------------------------------------------
// 2. Per-request logLevel and bounded notifications/message (L2, L4, O75)

fn own_server() -> Server {
    Server::new(
        fixtures::builder().build().unwrap(),
        ServerOptions::new().mode("direct"),
    )
    .unwrap()
}

async fn own_client() -> Client {
    let transport = Arc::new(InMemoryTransport::new(own_server(), Caller::new("t")));
    Client::connect(transport, ClientOptions::default())
        .await
        .expect("connect to our own server")
}

fn collecting() -> (LogMessageSink, Arc<Mutex<Vec<LogMessage>>>) {
    let seen: Arc<Mutex<Vec<LogMessage>>> = Arc::default();
    let kept = Arc::clone(&seen);
    (
        LogMessageSink(Arc::new(move |m| kept.lock().unwrap().push(m))),
        seen,
    )
}

/// L8: logging stays off unless a call asks for it (no level, no messages).
#[tokio::test]
async fn l2_o75_own_server_logs_reach_only_the_call_that_asked_before_its_reply() {
    let client = own_client().await;
    let (sink, seen) = collecting();
    let options = CallOptions::default().logs(LogLevel::Info, sink);
    client
        .call("test_logging_tool", None, &options)
        .await
        .unwrap();
    // Delivered synchronously by the reader before the reply was routed.
    let got = seen.lock().unwrap().clone();
    assert_eq!(
        got,
        ["started", "processing data", "completed"]
            .iter()
            .map(|step| LogMessage {
                level: LogLevel::Info,
                logger: Some("test_logging_tool".into()),
                data: json!(format!("Tool execution {step}")),
            })
            .collect::<Vec<_>>()
    );
    assert_eq!(client.dropped_log_messages(), 0);

    // Above the messages' level: the server sends none (L2), nothing arrives.
    let (sink, seen) = collecting();
    let options = CallOptions::default().logs(LogLevel::Warning, sink);
    client
        .call("test_logging_tool", None, &options)
        .await
        .unwrap();
    assert!(seen.lock().unwrap().is_empty());

    // A sink without a level: no logLevel on the wire, no messages.
    let (sink, seen) = collecting();
    let options = CallOptions {
        on_log: Some(sink),
        ..CallOptions::default()
    };
    client
        .call("test_logging_tool", None, &options)
        .await
        .unwrap();
    assert!(seen.lock().unwrap().is_empty());
    assert_eq!(client.dropped_log_messages(), 0);
}

/// A fake answering `tools/call` with `count` log messages at `level`, then the reply, then
/// one more message after it.
fn chatty(count: usize, level: &'static str) -> Arc<Fake> {
    modern(move |r, _| {
        let log = |i: usize| {
            format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"level":"{level}","data":{{"i":{i}}}}}}}"#
            )
        };
        let mut lines: Vec<String> = (0..count).map(log).collect();
        lines.push(ok(r, CALL_OK));
        lines.push(log(count));
        lines
    })
}

#[tokio::test]
async fn l2_o75_log_level_meta_key_is_sent_exactly_as_the_schema_names_it() {
    let fake = chatty(0, "info");
    let client = connect_with(&fake, ClientOptions::default()).await;
    let (sink, _) = collecting();
    for level in LogLevel::ALL {
        client
            .call("t", None, &CallOptions::default().logs(level, sink.clone()))
            .await
            .unwrap();
        let sent = fake.requests().pop().unwrap();
        assert_eq!(
            params_of(&sent)["_meta"]["io.modelcontextprotocol/logLevel"],
            json!(level.as_str())
        );
    }
    client
        .call("t", None, &CallOptions::default())
        .await
        .unwrap();
    let sent = fake.requests().pop().unwrap();
    assert!(params_of(&sent)["_meta"]
        .get("io.modelcontextprotocol/logLevel")
        .is_none());
}

#[tokio::test]
async fn l2_log_messages_per_call_at_the_bound_and_one_past_and_none_after_the_reply() {
    for (count, delivered) in [
        (MAX_LOG_MESSAGES_PER_CALL, MAX_LOG_MESSAGES_PER_CALL),
        (MAX_LOG_MESSAGES_PER_CALL + 1, MAX_LOG_MESSAGES_PER_CALL),
    ] {
        let fake = chatty(count, "error");
        let client = connect_with(&fake, ClientOptions::default()).await;
        let (sink, seen) = collecting();
        client
            .call(
                "t",
                None,
                &CallOptions::default().logs(LogLevel::Debug, sink),
            )
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(30)).await;
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), delivered, "{count} sent");
        let order: Vec<Value> = seen.iter().map(|m| m.data["i"].clone()).collect();
        assert_eq!(order, (0..delivered).map(|i| json!(i)).collect::<Vec<_>>());
        // The one past the cap (if any) and the one after the reply are dropped, counted.
        assert_eq!(
            client.dropped_log_messages(),
            (count - delivered + 1) as u64
        );
    }
}

#[tokio::test]
async fn l4_messages_below_the_calls_level_are_not_delivered() {
    // Severity order: debug < info < notice < warning < error < critical < alert < emergency.
    for (threshold, sent, delivered) in [
        (LogLevel::Warning, "notice", false),
        (LogLevel::Warning, "warning", true),
        (LogLevel::Warning, "emergency", true),
        (LogLevel::Emergency, "alert", false),
        (LogLevel::Debug, "debug", true),
    ] {
        let fake = chatty(1, sent);
        let client = connect_with(&fake, ClientOptions::default()).await;
        let (sink, seen) = collecting();
        client
            .call("t", None, &CallOptions::default().logs(threshold, sink))
            .await
            .unwrap();
        assert_eq!(
            seen.lock().unwrap().len(),
            usize::from(delivered),
            "{sent} at {threshold:?}"
        );
    }
    // An unknown level or a message without data is malformed: dropped, counted.
    let fake = modern(|r, _| {
        vec![
            r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"loud","data":1}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":7,"data":1}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":null}}"#.to_owned(),
            ok(r, CALL_OK),
        ]
    });
    let client = connect_with(&fake, ClientOptions::default()).await;
    let (sink, seen) = collecting();
    client
        .call(
            "t",
            None,
            &CallOptions::default().logs(LogLevel::Debug, sink),
        )
        .await
        .unwrap();
    // Only the last one (`data: null` is data) is delivered.
    assert_eq!(
        *seen.lock().unwrap(),
        vec![LogMessage {
            level: LogLevel::Info,
            logger: None,
            data: Value::Null
        }]
    );
    assert_eq!(client.dropped_log_messages(), 3);
}

#[tokio::test]
async fn l2_overlapping_logging_calls_get_no_guessed_messages() {
    // The fake answers the first call only when the second arrives, and sends one log line
    // between: two calls are waiting, so the message belongs to neither for sure.
    let first: Arc<Mutex<Option<Request>>> = Arc::default();
    let fake = modern(move |r, _| {
        let mut held = first.lock().unwrap();
        match held.take() {
            None => {
                *held = Some(r.clone());
                vec![]
            }
            Some(earlier) => vec![
                r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"whose?"}}"#.to_owned(),
                ok(&earlier, CALL_OK),
                ok(r, CALL_OK),
            ],
        }
    });
    let client = connect_with(&fake, ClientOptions::default()).await;
    let (a, seen_a) = collecting();
    let (b, seen_b) = collecting();
    let oa = CallOptions::default().logs(LogLevel::Debug, a);
    let ob = CallOptions::default().logs(LogLevel::Debug, b);
    let (ra, rb) = tokio::join!(client.call("a", None, &oa), async {
        tokio::time::sleep(Duration::from_millis(20)).await;
        client.call("b", None, &ob).await
    });
    ra.unwrap();
    rb.unwrap();
    assert!(seen_a.lock().unwrap().is_empty());
    assert!(seen_b.lock().unwrap().is_empty());
    assert_eq!(client.dropped_log_messages(), 1);
}

#[tokio::test]
async fn l2_a_call_ended_by_a_refused_frame_or_a_deadline_leaves_no_log_channel_behind() {
    let calls = Arc::new(AtomicUsize::new(0));
    let fake = modern(move |r, _| {
        match calls.fetch_add(1, Ordering::SeqCst) {
        // A reply frame the codec refuses (duplicate keys): the call fails closed.
        0 => vec![format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"a":1,"a":2}}}}"#,
            r.id.token()
        )],
        // No reply at all: the call hits its deadline.
        1 => vec![],
        _ => vec![
            r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"mine"}}"#.to_owned(),
            ok(r, CALL_OK),
        ],
    }
    });
    let client = connect_with(&fake, ClientOptions::default()).await;
    let (sink, seen) = collecting();
    let logs = CallOptions::default().logs(LogLevel::Debug, sink);
    assert!(matches!(
        client.call("t", None, &logs).await,
        Err(ClientError::Invalid(InvalidResult::Frame { .. }))
    ));
    assert!(matches!(
        client
            .call("t", None, &logs.clone().deadline(Duration::from_millis(30)))
            .await,
        Err(ClientError::Deadline { .. })
    ));
    // The next logging call is the only one waiting: its message is delivered.
    client.call("t", None, &logs).await.unwrap();
    assert_eq!(seen.lock().unwrap().len(), 1);
    assert_eq!(client.dropped_log_messages(), 0);
}

// ---------------------------------------------------------------------------------------------
// 3. Extension registry (O76, B19–B21)

#[derive(Debug, PartialEq, serde::Deserialize)]
struct Ui {
    #[serde(rename = "mimeTypes")]
    mime_types: Vec<String>,
}

#[tokio::test]
async fn o76_b21_discovery_extensions_stay_byte_exact_and_decode_through_a_registered_codec() {
    let mut registry = ExtensionRegistry::new();
    registry
        .register("io.modelcontextprotocol/ui", SerdeCodec::<Ui>::new())
        .unwrap();
    let fake = modern(|_, _| vec![]);
    let client = connect_with(
        &fake,
        ClientOptions {
            extensions: registry,
            ..ClientOptions::default()
        },
    )
    .await;
    let declared = &client.discovery().extensions;
    assert_eq!(
        declared.ids().collect::<Vec<_>>(),
        vec!["com.example/thing", "io.modelcontextprotocol/ui"]
    );
    // The unknown one is kept exactly: a big integer and the number text `1.50` intact.
    assert_eq!(
        declared.get("com.example/thing").unwrap().get(),
        r#"{"level":3,"big":123456789012345678901234567890,"f":1.50}"#
    );
    let extensions = &client.options().extensions;
    assert_eq!(
        declared.decode::<SerdeCodec<Ui>>(extensions, "io.modelcontextprotocol/ui"),
        Ok(Some(Ui {
            mime_types: vec!["text/html;profile=mcp-app".into()]
        }))
    );
    // Inert: nothing registered for it, nothing decoded.
    assert_eq!(
        declared.decode::<SerdeCodec<Value>>(extensions, "com.example/thing"),
        Ok(None)
    );
    assert_eq!(
        declared.decode::<SerdeCodec<Value>>(extensions, "io.modelcontextprotocol/ui"),
        Err(ExtensionError::WrongCodec(
            "io.modelcontextprotocol/ui".into()
        ))
    );
    // A result's `_meta` payload decodes through the same registry.
    let raw = serde_json::value::RawValue::from_string(r#"{"mimeTypes":[]}"#.into()).unwrap();
    assert_eq!(
        extensions.decode::<SerdeCodec<Ui>>("io.modelcontextprotocol/ui", &raw),
        Ok(Some(Ui { mime_types: vec![] }))
    );
}

#[tokio::test]
async fn o76_registering_codecs_never_changes_a_request_byte() {
    async fn session(options: ClientOptions) -> Vec<String> {
        let fake = modern(|r, _| match r.method.as_str() {
            "tools/list" => vec![ok(r, TOOLS)],
            _ => vec![ok(r, CALL_OK)],
        });
        let client = connect_with(&fake, options).await;
        let call = CallOptions::default().capabilities(json!({"elicitation": {"form": {}}}));
        client.list_tools(&CallOptions::default()).await.unwrap();
        client
            .call("deploy", args(json!({"region": "eu"})), &call)
            .await
            .unwrap();
        fake.wire()
    }
    let plain = session(ClientOptions::default()).await;
    let mut registry = ExtensionRegistry::new();
    registry
        .register("io.modelcontextprotocol/ui", SerdeCodec::<Ui>::new())
        .unwrap()
        .register("com.example/thing", SerdeCodec::<Value>::new())
        .unwrap();
    let registered = session(ClientOptions {
        extensions: registry,
        ..ClientOptions::default()
    })
    .await;
    assert_eq!(plain.len(), 3);
    assert_eq!(plain, registered);
    assert!(plain.iter().all(|line| !line.contains("extensions")));
}

// ---------------------------------------------------------------------------------------------
// 4. Strict/lossless diagnostics (X1, X2)

fn strict() -> ClientOptions {
    ClientOptions {
        strict: true,
        ..ClientOptions::default()
    }
}

/// A fake answering `resources/read` and `tools/list` with `result`.
fn answering(result: &'static str) -> Arc<Fake> {
    modern(move |r, _| vec![ok(r, result)])
}

#[tokio::test]
async fn x1_a8_missing_result_type_is_complete_and_recorded_strict_refuses_it() {
    let result = r#"{"content":[{"type":"text","text":"old"}]}"#;
    let fake = answering(result);
    let client = connect_with(&fake, ClientOptions::default()).await;
    let r = client
        .call("t", None, &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(r.content.len(), 1);
    assert_eq!(
        client.take_diagnostics(),
        (
            vec![Leniency::MissingResultType {
                method: "tools/call".into()
            }],
            0
        )
    );
    assert_eq!(client.diagnostics(), (vec![], 0));

    let fake = answering(result);
    let client = connect_with(&fake, strict()).await;
    match client.call("t", None, &CallOptions::default()).await {
        Err(ClientError::Invalid(InvalidResult::Lenient(Leniency::MissingResultType {
            method,
        }))) => assert_eq!(method, "tools/call"),
        other => panic!("{other:?}"),
    }
    assert_eq!(client.diagnostics(), (vec![], 0));
}

#[tokio::test]
async fn x2_h8_official_example_without_cache_hints_reads_leniently_strict_refuses() {
    // The official example that omits both cache hints.
    let dir = std::env::var("MCP_SCHEMA_PATH")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/schema/2026-07-28")
        })
        .join("examples/ReadResourceResultResponse/read-resource-result-response.json");
    let file = dir;
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let example: Value = serde_json::from_str(&text).unwrap();
    let result = example["result"].clone();
    assert!(result.get("ttlMs").is_none() && result.get("cacheScope").is_none());
    let result: &'static str = Box::leak(result.to_string().into_boxed_str());

    let client = connect_with(&answering(result), ClientOptions::default()).await;
    let read = client
        .read_resource("file:///example.txt", &CallOptions::default())
        .await
        .expect("the official example reads");
    assert_eq!(read.ttl_ms, 0);
    assert_eq!(
        serde_json::to_value(read.cache_scope).unwrap(),
        json!("private")
    );
    let (kept, _) = client.diagnostics();
    let method = || "resources/read".to_owned();
    assert!(
        kept.contains(&Leniency::MissingTtl { method: method() }),
        "{kept:?}"
    );
    assert!(kept.contains(&Leniency::MissingCacheScope { method: method() }));

    let client = connect_with(&answering(result), strict()).await;
    assert!(matches!(
        client
            .read_resource("file:///example.txt", &CallOptions::default())
            .await,
        Err(ClientError::Invalid(InvalidResult::Lenient(_)))
    ));
}

#[tokio::test]
async fn x2_h8_negative_invalid_and_unknown_hints_in_both_modes() {
    let cases: [(&'static str, Leniency, u64, &str); 4] = [
        (
            r#"{"resultType":"complete","tools":[],"ttlMs":-5,"cacheScope":"public"}"#,
            Leniency::NegativeTtl {
                method: "tools/list".into(),
                ttl: "-5".into(),
            },
            0,
            "public",
        ),
        (
            r#"{"resultType":"complete","tools":[],"ttlMs":2.5,"cacheScope":"public"}"#,
            Leniency::InvalidTtl {
                method: "tools/list".into(),
                ttl: "2.5".into(),
            },
            0,
            "public",
        ),
        (
            r#"{"resultType":"complete","tools":[],"ttlMs":null,"cacheScope":"private"}"#,
            Leniency::InvalidTtl {
                method: "tools/list".into(),
                ttl: "null".into(),
            },
            0,
            "private",
        ),
        (
            r#"{"resultType":"complete","tools":[],"ttlMs":7,"cacheScope":"shared"}"#,
            Leniency::UnknownCacheScope {
                method: "tools/list".into(),
                scope: "\"shared\"".into(),
            },
            7,
            "private",
        ),
    ];
    for (result, leniency, ttl, scope) in cases {
        // Lenient: read per H8/X2 and recorded.
        let fake = modern(move |r, _| vec![ok(r, result)]);
        let client = connect_with(&fake, ClientOptions::default()).await;
        let page = client
            .request(
                strict_mcp::wire::result::Method::ToolsList,
                Map::new(),
                &CallOptions::default(),
            )
            .await
            .unwrap();
        let strict_mcp::wire::result::Decoded::Complete(
            strict_mcp::wire::result::CompleteResult::ToolsList(page),
        ) = page
        else {
            panic!("not a tools/list page");
        };
        assert_eq!(page.ttl_ms, ttl, "{result}");
        assert_eq!(
            serde_json::to_value(page.cache_scope).unwrap(),
            json!(scope)
        );
        assert_eq!(client.diagnostics(), (vec![leniency.clone()], 0));
        // Strict: the same result is a typed error naming the leniency.
        let fake = modern(move |r, _| vec![ok(r, result)]);
        let client = connect_with(&fake, strict()).await;
        match client.list_tools(&CallOptions::default()).await {
            Err(ClientError::Invalid(InvalidResult::Lenient(l))) => assert_eq!(l, leniency),
            other => panic!("{result}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn x2_strict_mode_applies_to_discovery_and_own_server_needs_no_leniency() {
    let fake = Fake::new(|r, _| {
        vec![ok(
            r,
            r#"{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{}}"#,
        )]
    });
    match Client::connect(fake.clone(), strict()).await {
        Err(ConnectError::Discover(e)) => assert!(
            matches!(
                *e,
                ClientError::Invalid(InvalidResult::Lenient(Leniency::MissingTtl { .. }))
            ),
            "{e:?}"
        ),
        other => panic!("{other:?}"),
    }
    let transport = Arc::new(InMemoryTransport::new(own_server(), Caller::new("t")));
    let client = Client::connect(transport, strict())
        .await
        .expect("strict connect");
    let none = CallOptions::default();
    client.list_tools(&none).await.unwrap();
    client.list_resources(&none).await.unwrap();
    client.list_prompts(&none).await.unwrap();
    client.call("test_simple_text", None, &none).await.unwrap();
    assert_eq!(client.diagnostics(), (vec![], 0));
}

#[tokio::test]
async fn x1_the_first_round_outcome_is_unaffected_by_diagnostics_for_input_required() {
    let fake = modern(|r, _| {
        vec![ok(
            r,
            r#"{"resultType":"input_required","requestState":"s1"}"#,
        )]
    });
    let client = connect_with(&fake, strict()).await;
    assert!(matches!(
        client
            .call_tool("t", None, RoundInput::first(), &CallOptions::default())
            .await,
        Ok(ToolOutcome::InputRequired(_))
    ));
    assert_eq!(client.diagnostics(), (vec![], 0));
}

// ---------------------------------------------------------------------------------------------
// 5. Audit: client rules of sections A–L not yet proven elsewhere by id

/// Sends nothing back (the call hangs until its deadline).
fn silent() -> Arc<Fake> {
    modern(|_, _| vec![])
}

#[tokio::test]
async fn o86_i15_a_side_effecting_tools_call_is_never_replayed_silently() {
    let tools_calls = |fake: &Fake| fake.methods().iter().filter(|m| *m == "tools/call").count();
    // A call that hits its deadline is cancelled, never resent, even with the opt-in retry.
    let fake = silent();
    let client = connect_with(&fake, retrying()).await;
    let short = CallOptions::default().deadline(Duration::from_millis(50));
    assert!(matches!(
        client.call("deploy", None, &short).await,
        Err(ClientError::Deadline { .. })
    ));
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(tools_calls(&fake), 1);
    // Any other error (internal error, invalid result) ends the call: one request each.
    for answer in [
        r#"{"jsonrpc":"2.0","id":ID,"error":{"code":-32603,"message":"boom"}}"#,
        r#"{"jsonrpc":"2.0","id":ID,"result":{"resultType":"later"}}"#,
        r#"{"jsonrpc":"2.0","id":ID,"error":{"code":-32021,"message":"needs"}}"#,
    ] {
        let fake = modern(move |r, _| vec![answer.replace("ID", r.id.token())]);
        let client = connect_with(&fake, retrying()).await;
        assert!(client
            .call("deploy", None, &CallOptions::default())
            .await
            .is_err());
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(tools_calls(&fake), 1, "{answer}");
        assert_eq!(fake.methods().len(), 2, "no tools/list refresh either");
    }
}

#[tokio::test]
async fn a16_f7_retired_32002_from_resources_read_is_not_found() {
    let fake = modern(|r, _| vec![err(r, -32002)]);
    let client = connect_with(&fake, ClientOptions::default()).await;
    match client
        .read_resource("file:///gone", &CallOptions::default())
        .await
    {
        Err(ClientError::Rpc(e)) => {
            assert_eq!((e.kind, e.code), (RpcErrorKind::NotFound, -32002));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a20_local_failures_are_distinguishable_from_peer_errors() {
    let fake = silent();
    let client = connect_with(&fake, ClientOptions::default()).await;
    let short = CallOptions::default().deadline(Duration::from_millis(30));
    // Local: our own deadline, our own refusal before sending. Neither is a peer RpcError.
    let local = client.call("t", None, &short).await.unwrap_err();
    assert!(matches!(local, ClientError::Deadline { .. }), "{local:?}");
    let refused = CallOptions {
        meta: vec![("io.modelcontextprotocol/progressToken".into(), json!(1))],
        ..CallOptions::default()
    };
    let local = client.call("t", None, &refused).await.unwrap_err();
    assert!(matches!(local, ClientError::Request(_)), "{local:?}");
    // From the peer: the code exactly as received.
    let fake = modern(|r, _| vec![err(r, -32603)]);
    let client = connect_with(&fake, ClientOptions::default()).await;
    let peer = client
        .call("t", None, &CallOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(peer, ClientError::Rpc(ref e) if e.code == -32603),
        "{peer:?}"
    );
}

#[tokio::test]
async fn b7_the_servers_self_reported_identity_never_changes_what_the_client_sends() {
    async fn session(info: &'static str) -> Vec<String> {
        let discover: &'static str = Box::leak(
            format!(
                r#"{{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{{"tools":{{}}}},"ttlMs":0,"cacheScope":"private","_meta":{{"io.modelcontextprotocol/serverInfo":{info}}}}}"#
            )
            .into_boxed_str(),
        );
        let fake = Fake::new(move |r, _| match r.method.as_str() {
            "server/discover" => vec![ok(r, discover)],
            "tools/list" => vec![ok(r, TOOLS)],
            _ => vec![ok(r, CALL_OK)],
        });
        let client = connect_with(&fake, ClientOptions::default()).await;
        client.list_tools(&CallOptions::default()).await.unwrap();
        client
            .call("deploy", None, &CallOptions::default())
            .await
            .unwrap();
        fake.wire()
    }
    let a = session(r#"{"name":"trusted-official-server","version":"1.0.0"}"#).await;
    let b = session(r#"{"name":"x","version":"0.0.1-evil"}"#).await;
    assert_eq!(a.len(), 3);
    assert_eq!(a, b);
}

#[tokio::test]
async fn b15_unsupported_protocol_version_is_reported_with_the_servers_versions_not_retried() {
    let fake = modern(|r, _| {
        vec![format!(
            r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":-32022,"message":"unsupported","data":{{"supported":["2099-01-01"],"requested":"2026-07-28"}}}}}}"#,
            r.id.token()
        )]
    });
    let client = connect_with(&fake, ClientOptions::default()).await;
    match client.call("t", None, &CallOptions::default()).await {
        Err(ClientError::Rpc(e)) => {
            assert_eq!(e.kind, RpcErrorKind::UnsupportedProtocolVersion);
            assert_eq!(e.data.unwrap()["supported"], json!(["2099-01-01"]));
        }
        other => panic!("{other:?}"),
    }
    // This client speaks one version: there is nothing to retry with.
    assert_eq!(fake.methods(), vec!["server/discover", "tools/call"]);
}

#[tokio::test]
async fn b20_b21_extensions_stay_off_until_a_call_declares_them() {
    let fake = modern(|r, _| vec![ok(r, CALL_OK)]);
    let mut registry = ExtensionRegistry::new();
    registry
        .register("io.modelcontextprotocol/ui", SerdeCodec::<Value>::new())
        .unwrap();
    let client = connect_with(
        &fake,
        ClientOptions {
            extensions: registry,
            ..ClientOptions::default()
        },
    )
    .await;
    // The server declared two extensions; the client enables none on its own.
    assert_eq!(client.discovery().extensions.len(), 2);
    client
        .call("t", None, &CallOptions::default())
        .await
        .unwrap();
    let caps = |fake: &Fake| {
        params_of(&fake.requests().pop().unwrap())["_meta"]
            ["io.modelcontextprotocol/clientCapabilities"]
            .clone()
    };
    assert_eq!(caps(&fake), json!({}));
    let ui = json!({"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}});
    client
        .call("t", None, &CallOptions::default().capabilities(ui.clone()))
        .await
        .unwrap();
    assert_eq!(caps(&fake), ui);
}

#[tokio::test]
async fn e7_tool_names_are_case_sensitive() {
    let fake = modern(|r, _| match r.method.as_str() {
        "tools/list" => vec![ok(
            r,
            r#"{"resultType":"complete","tools":[{"name":"Echo","inputSchema":{"type":"object"}},{"name":"echo","inputSchema":{"type":"object"}}],"ttlMs":0,"cacheScope":"private"}"#,
        )],
        _ => vec![ok(r, CALL_OK)],
    });
    let client = connect_with(&fake, ClientOptions::default()).await;
    let names: Vec<String> = client
        .list_tools(&CallOptions::default())
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, vec!["Echo", "echo"]);
    client
        .call("Echo", None, &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(
        params_of(&fake.requests().pop().unwrap())["name"],
        json!("Echo")
    );
}

#[tokio::test]
async fn e9_e24_schemas_and_annotations_are_kept_losslessly_as_data() {
    let input = json!({
        "type": "object",
        "$defs": {"n": {"$anchor": "num", "type": "integer"}},
        "properties": {"a": {"$ref": "#/$defs/n"}, "b": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
        "if": {"required": ["a"]}, "then": {"required": ["b"]},
        "x-vendor": {"deep": [1, {"k": true}]},
        "unevaluatedProperties": false
    });
    let output = json!({"type": "object", "properties": {"v": {"const": 1}}, "x-other": "kept"});
    let annotations = json!({"readOnlyHint": true, "destructiveHint": false, "title": "T"});
    let tool = json!({"name": "t", "inputSchema": input, "outputSchema": output, "annotations": annotations});
    let page: &'static str = Box::leak(
        json!({"resultType": "complete", "tools": [tool], "ttlMs": 0, "cacheScope": "private"})
            .to_string()
            .into_boxed_str(),
    );
    let fake = modern(move |r, _| vec![ok(r, page)]);
    let client = connect_with(&fake, ClientOptions::default()).await;
    let tools = client.list_tools(&CallOptions::default()).await.unwrap();
    let listed = serde_json::to_value(&tools[0]).unwrap();
    assert_eq!(listed["inputSchema"], input);
    assert_eq!(listed["outputSchema"], output);
    // Hints stay hints: kept as data, nothing in the client acts on them.
    assert_eq!(listed["annotations"], annotations);
}

#[tokio::test]
async fn e21_e22_an_unresolvable_external_ref_in_an_output_schema_fails_closed_without_a_fetch() {
    let fake = modern(|r, _| match r.method.as_str() {
        "tools/list" => vec![ok(
            r,
            r#"{"resultType":"complete","tools":[{"name":"t","inputSchema":{"type":"object"},"outputSchema":{"type":"object","properties":{"a":{"$ref":"https://schemas.example/a.json"}}}}],"ttlMs":0,"cacheScope":"private"}"#,
        )],
        _ => vec![ok(
            r,
            r#"{"resultType":"complete","content":[],"structuredContent":{"a":1}}"#,
        )],
    });
    let client = connect_with(&fake, ClientOptions::default()).await;
    client.list_tools(&CallOptions::default()).await.unwrap();
    match client.call("t", None, &CallOptions::default()).await {
        Err(ClientError::Invalid(InvalidResult::OutputSchema { tool, reason })) => {
            assert_eq!(tool, "t");
            assert!(
                reason.contains("https://schemas.example/a.json"),
                "{reason}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn h5_h6_h7_h9_h13_cache_hints_never_switch_on_caching_or_polling() {
    let fake = modern(|r, _| match r.method.as_str() {
        "tools/list" => vec![ok(
            r,
            r#"{"resultType":"complete","tools":[],"ttlMs":600000,"cacheScope":"public"}"#,
        )],
        _ => vec![ok(
            r,
            r#"{"resultType":"complete","contents":[],"ttlMs":600000,"cacheScope":"public"}"#,
        )],
    });
    let client = connect_with(&fake, ClientOptions::default()).await;
    let none = CallOptions::default();
    for _ in 0..2 {
        client.list_tools(&none).await.unwrap();
        client.read_resource("file:///a", &none).await.unwrap();
    }
    // Every fresh-looking result was fetched again: nothing is served from a hidden cache
    // (so no entry is ever reused across params, MRTR retries or credentials either) ...
    assert_eq!(
        fake.methods(),
        vec![
            "server/discover",
            "tools/list",
            "resources/read",
            "tools/list",
            "resources/read"
        ]
    );
    // ... and a long TTL never turns into background polling.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(fake.methods().len(), 5);
}

#[tokio::test]
async fn j11_a_reply_after_the_deadline_is_ignored_and_the_client_stays_usable() {
    let held: Arc<Mutex<Option<Request>>> = Arc::default();
    let fake = modern(move |r, _| {
        let mut held = held.lock().unwrap();
        match r.method.as_str() {
            "tools/call" => {
                *held = Some(r.clone());
                vec![]
            }
            // The late reply to the abandoned call arrives first, then this one's.
            _ => {
                let mut lines = Vec::new();
                if let Some(late) = held.take() {
                    lines.push(ok(&late, CALL_OK));
                }
                lines.push(ok(r, TOOLS));
                lines
            }
        }
    });
    let client = connect_with(&fake, ClientOptions::default()).await;
    let short = CallOptions::default().deadline(Duration::from_millis(30));
    assert!(matches!(
        client.call("t", None, &short).await,
        Err(ClientError::Deadline { .. })
    ));
    let tools = client.list_tools(&CallOptions::default()).await.unwrap();
    assert_eq!(tools.len(), 1);
    assert!(client.failure().is_none());
}

#[tokio::test]
async fn k8_several_listen_streams_at_once_each_with_its_own_acknowledgement() {
    use strict_mcp::client::ListenError;
    use strict_mcp::machine::subscriptions::{Change, Filter};
    let server = own_server();
    let transport = Arc::new(InMemoryTransport::new(server.clone(), Caller::new("t")));
    let client = Client::connect(transport, ClientOptions::default())
        .await
        .unwrap();
    let tools = Filter {
        tools_list_changed: true,
        ..Filter::default()
    };
    let prompts = Filter {
        prompts_list_changed: true,
        ..Filter::default()
    };
    let mut a = client
        .listen(tools.clone(), &CallOptions::default())
        .await
        .unwrap();
    let b = client
        .listen(prompts.clone(), &CallOptions::default())
        .await
        .unwrap();
    assert_ne!(a.subscription_id(), b.subscription_id());
    assert_eq!(
        (a.effective_filter(), b.effective_filter()),
        (&tools, &prompts)
    );
    server.replace_registry(fixtures::registry());
    let change: Result<Option<Change>, ListenError> =
        tokio::time::timeout(Duration::from_secs(5), a.next())
            .await
            .unwrap();
    assert_eq!(change.unwrap(), Some(Change::ToolsListChanged));
    assert!(a.violations().is_empty() && b.violations().is_empty());
}

#[tokio::test]
async fn i9_i12_a_rounds_answers_and_state_go_only_into_that_one_retry() {
    let fake = modern(|r, _| {
        if params_of(r).get("requestState").is_some() || r.method != "tools/call" {
            vec![ok(r, CALL_OK)]
        } else {
            vec![ok(
                r,
                r#"{"resultType":"input_required","requestState":"s1","inputRequests":{"a":{"method":"elicitation/create","params":{"mode":"form","message":"A?","requestedSchema":{"type":"object","properties":{}}}},"b":{"method":"elicitation/create","params":{"mode":"form","message":"B?","requestedSchema":{"type":"object","properties":{}}}}}}"#,
            )]
        }
    });
    let client = connect_with(&fake, ClientOptions::default()).await;
    let options = CallOptions::default().capabilities(json!({"elicitation": {"form": {}}}));
    // I9: every request is answered before the retry (the host answers the whole map).
    client
        .call_tool_driven("t", args(json!({"x": 1})), &options, |asked| {
            let keys: Vec<&String> = asked.input_requests.as_ref().unwrap().keys().collect();
            assert_eq!(keys, vec!["a", "b"]);
            Ok(args(json!({"a": {"action": "decline"}, "b": {"action": "cancel"}})).unwrap())
        })
        .await
        .unwrap();
    // A new, unrelated call: the server asks again, and nothing of the old round is reused.
    assert!(matches!(
        client.call("t", args(json!({"x": 2})), &options).await,
        Err(ClientError::InputRequired(_))
    ));
    let calls: Vec<Value> = fake
        .requests()
        .iter()
        .filter(|r| r.method == "tools/call")
        .map(params_of)
        .collect();
    assert_eq!(calls.len(), 3);
    assert_eq!(
        calls[1]["inputResponses"],
        json!({"a": {"action": "decline"}, "b": {"action": "cancel"}})
    );
    assert_eq!(calls[1]["arguments"], json!({"x": 1}));
    // I12: the next, unrelated request carries neither.
    assert!(calls[2].get("inputResponses").is_none());
    assert!(calls[2].get("requestState").is_none());
}

/// A fake that answers `tools/call` after `reply_after`, sending a progress notification for
/// the call's token every `every` until then.
fn slow_with_progress(every: Duration, reply_after: Duration) -> Arc<Fake> {
    let fake = Arc::new(Mutex::new(
        None::<tokio::sync::mpsc::UnboundedSender<Inbound>>,
    ));
    let tx_slot = Arc::clone(&fake);
    let f = modern(move |r, _| {
        let tx = tx_slot.lock().unwrap().clone().expect("sender");
        let token = params_of(r)["_meta"]["progressToken"].to_string();
        let reply = ok(r, CALL_OK);
        tokio::spawn(async move {
            let line = |text: String| {
                Inbound::Message(decode(text.as_bytes(), &IngressLimits::CLIENT).unwrap())
            };
            let started = tokio::time::Instant::now();
            let mut n = 0;
            while started.elapsed() + every < reply_after {
                tokio::time::sleep(every).await;
                n += 1;
                let _ = tx.send(line(format!(
                    r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":{token},"progress":{n}}}}}"#
                )));
            }
            tokio::time::sleep_until(started + reply_after).await;
            let _ = tx.send(line(reply));
        });
        vec![]
    });
    *fake.lock().unwrap() = Some(f.tx.clone());
    f
}

/// On tokio's paused clock (the fake is in-process): the progress gaps, deadlines and the hard
/// maximum are exact, so a loaded machine cannot stretch a gap past the deadline.
#[tokio::test(start_paused = true)]
async fn j13_progress_restarts_the_deadline_only_when_asked_and_never_past_the_hard_maximum() {
    let every = Duration::from_millis(40);
    // The gaps between progress (40 ms) are far below the deadline (300 ms).
    let deadline = Duration::from_millis(300);
    let with_reset = |hard: Duration| CallOptions {
        reset_on_progress: Some(hard),
        ..CallOptions::default().deadline(deadline)
    };
    // Without the opt-in the deadline stands, progress or not.
    let fake = slow_with_progress(every, Duration::from_millis(900));
    let client = connect_with(&fake, ClientOptions::default()).await;
    let plain = CallOptions {
        on_progress: Some(strict_mcp::client::ProgressSink(Arc::new(|_| {}))),
        ..CallOptions::default().deadline(deadline)
    };
    match client.call("t", None, &plain).await {
        Err(ClientError::Deadline { deadline: d, .. }) => assert_eq!(d, deadline),
        other => panic!("{other:?}"),
    }
    // With it, a reply well inside the hard maximum arrives (a progress token was picked).
    let fake = slow_with_progress(every, Duration::from_millis(900));
    let client = connect_with(&fake, ClientOptions::default()).await;
    client
        .call("t", None, &with_reset(Duration::from_millis(1800)))
        .await
        .expect("progress kept the call alive");
    assert_eq!(
        params_of(&fake.requests().pop().unwrap())["_meta"]["progressToken"],
        json!("progress-1")
    );
    // Past the hard maximum the call ends although progress keeps coming.
    let fake = slow_with_progress(every, Duration::from_millis(1800));
    let client = connect_with(&fake, ClientOptions::default()).await;
    let started = tokio::time::Instant::now();
    match client
        .call("t", None, &with_reset(Duration::from_millis(900)))
        .await
    {
        Err(ClientError::Deadline { deadline: d, .. }) => {
            assert_eq!(d, Duration::from_millis(900));
        }
        other => panic!("{other:?}"),
    }
    // Ended at the hard maximum, on the virtual clock: not before it, not at the reply (1800 ms).
    assert_eq!(started.elapsed(), Duration::from_millis(900));
}

#[tokio::test]
async fn j13_the_progress_hard_maximum_at_the_bound_and_one_past() {
    let fake = modern(|r, _| vec![ok(r, CALL_OK)]);
    let client = connect_with(&fake, ClientOptions::default()).await;
    let at = CallOptions {
        reset_on_progress: Some(strict_mcp::client::MAX_DEADLINE),
        ..CallOptions::default()
    };
    client.call("t", None, &at).await.unwrap();
    for bad in [
        strict_mcp::client::MAX_DEADLINE + Duration::from_nanos(1),
        Duration::from_millis(1),
    ] {
        let past = CallOptions {
            reset_on_progress: Some(bad),
            ..CallOptions::default()
        };
        assert!(matches!(
            client.call("t", None, &past).await,
            Err(ClientError::Request(_))
        ));
    }
    assert_eq!(fake.methods(), vec!["server/discover", "tools/call"]);
}

#[tokio::test]
async fn i16_o73_a_calls_capabilities_must_have_the_schemas_shape() {
    let fake = modern(|r, _| vec![ok(r, CALL_OK)]);
    let client = connect_with(&fake, ClientOptions::default()).await;
    for bad in [
        json!({"elicitation": []}),
        json!({"elicitation": {"form": 1}}),
        json!([]),
    ] {
        assert!(
            matches!(
                client
                    .call("t", None, &CallOptions::default().capabilities(bad.clone()))
                    .await,
                Err(ClientError::Request(_))
            ),
            "{bad}"
        );
    }
    assert_eq!(fake.methods(), vec!["server/discover"], "nothing was sent");
    // `elicitation: {}` (form only) and an explicit mode go out exactly as given.
    for good in [
        json!({"elicitation": {}}),
        json!({"elicitation": {"url": {}}}),
    ] {
        client
            .call(
                "t",
                None,
                &CallOptions::default().capabilities(good.clone()),
            )
            .await
            .unwrap();
        assert_eq!(
            params_of(&fake.requests().pop().unwrap())["_meta"]
                ["io.modelcontextprotocol/clientCapabilities"],
            good
        );
    }
}

#[tokio::test]
async fn i18_elicitation_requests_decode_as_form_or_url_and_anything_else_fails_closed() {
    let ask = |request: &'static str| {
        modern(move |r, _| {
            vec![ok(
                r,
                &format!(
                    r#"{{"resultType":"input_required","requestState":"s","inputRequests":{{"e":{{"method":"elicitation/create","params":{request}}}}}}}"#
                ),
            )]
        })
    };
    let form = r#"{"message":"Name?","requestedSchema":{"type":"object","properties":{"n":{"type":"string"}}}}"#;
    let url = r#"{"mode":"url","message":"Sign in","url":"https://example.com/login","elicitationId":"e1"}"#;
    for (request, ok_expected) in [
        (form, true),
        (url, true),
        (r#"{"mode":"url","message":"Sign in"}"#, false),
        (
            r#"{"mode":"pigeon","message":"?","requestedSchema":{"type":"object","properties":{}}}"#,
            false,
        ),
        (r#"{"mode":"form","message":"?"}"#, false),
    ] {
        let fake = ask(request);
        let client = connect_with(&fake, ClientOptions::default()).await;
        let out = client
            .call_tool("t", None, RoundInput::first(), &CallOptions::default())
            .await;
        if ok_expected {
            assert!(
                matches!(out, Ok(ToolOutcome::InputRequired(_))),
                "{request}: {out:?}"
            );
        } else {
            assert!(
                matches!(out, Err(ClientError::Invalid(InvalidResult::Result { .. }))),
                "{request}: {out:?}"
            );
        }
    }
}

#[tokio::test]
async fn i9_i20_answers_are_checked_before_the_retry_is_sent() {
    use strict_mcp::client::methods::check_answers;
    use strict_mcp::wire::InputRequiredResult;
    let asked: InputRequiredResult = serde_json::from_value(json!({
        "resultType": "input_required",
        "requestState": "s",
        "inputRequests": {
            "f": {"method": "elicitation/create", "params": {"message": "?", "requestedSchema": {"type": "object", "properties": {}}}},
            "u": {"method": "elicitation/create", "params": {"mode": "url", "message": "?", "url": "https://example.com/", "elicitationId": "e"}}
        }
    }))
    .unwrap();
    let check = |v: Value| check_answers(&asked, &args(v).unwrap());
    assert_eq!(
        check(
            json!({"f": {"action": "accept", "content": {"s": "x", "n": 1.5, "b": true, "l": ["a"]}}, "u": {"action": "accept"}})
        ),
        Ok(())
    );
    assert_eq!(
        check(json!({"f": {"action": "decline"}, "u": {"action": "cancel"}})),
        Ok(())
    );
    for bad in [
        json!({"f": {"action": "decline"}}),
        json!({"f": {"action": "decline"}, "u": {"action": "cancel"}, "x": {}}),
        json!({"f": {"action": "maybe"}, "u": {"action": "cancel"}}),
        json!({"f": "accept", "u": {"action": "cancel"}}),
        json!({"f": {"action": "accept", "content": {"o": {"nested": 1}}}, "u": {"action": "cancel"}}),
        json!({"f": {"action": "accept", "content": {"l": [1]}}, "u": {"action": "cancel"}}),
        json!({"f": {"action": "accept", "content": []}, "u": {"action": "cancel"}}),
        json!({"f": {"action": "decline"}, "u": {"action": "accept", "content": {"k": "v"}}}),
    ] {
        assert!(check(bad.clone()).is_err(), "{bad}");
    }
    // The driver refuses a bad answer without sending the retry.
    let fake = modern(move |r, _| {
        vec![ok(
            r,
            r#"{"resultType":"input_required","requestState":"s","inputRequests":{"f":{"method":"elicitation/create","params":{"message":"?","requestedSchema":{"type":"object","properties":{}}}}}}"#,
        )]
    });
    let client = connect_with(&fake, ClientOptions::default()).await;
    let out = client
        .call_tool_driven("t", None, &CallOptions::default(), |_| {
            Ok(args(json!({"f": {"action": "yes"}})).unwrap())
        })
        .await;
    assert!(matches!(out, Err(ClientError::Request(_))), "{out:?}");
    assert_eq!(fake.methods(), vec!["server/discover", "tools/call"]);
}

/// A fake whose `server/discover` answers -32022 (listing `supported`) the first `refusals`
/// times, then discovers normally.
fn version_refusing(refusals: usize, supported: &'static str) -> Arc<Fake> {
    let seen = Arc::new(AtomicUsize::new(0));
    Fake::new(move |r, _| {
        if r.method == "server/discover" && seen.fetch_add(1, Ordering::SeqCst) < refusals {
            return vec![format!(
                r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":-32022,"message":"unsupported","data":{{"supported":{supported},"requested":"2026-07-28"}}}}}}"#,
                r.id.token()
            )];
        }
        if r.method == "server/discover" {
            return vec![ok(r, DISCOVER)];
        }
        vec![ok(r, CALL_OK)]
    })
}

/// B15: a -32022 listing our revision is asked again under a fresh id, at most
/// `MAX_VERSION_RETRIES` times; one more refusal is returned typed with its `data`.
#[tokio::test]
async fn b15_connect_retries_a_version_refusal_at_the_bound_and_not_past_it() {
    assert_eq!(MAX_VERSION_RETRIES, 1);
    let ours = r#"["2026-07-28","2099-01-01"]"#;
    let at = version_refusing(MAX_VERSION_RETRIES, ours);
    let client = connect_with(&at, ClientOptions::default()).await;
    client
        .call("t", None, &CallOptions::default())
        .await
        .unwrap();
    let ids: Vec<String> = at
        .requests()
        .iter()
        .map(|r| r.id.token().to_owned())
        .collect();
    assert_eq!(
        at.methods(),
        vec!["server/discover", "server/discover", "tools/call"]
    );
    assert_ne!(ids[0], ids[1], "each retry is a fresh id");

    let past = version_refusing(MAX_VERSION_RETRIES + 1, ours);
    match Client::connect(past.clone(), ClientOptions::default()).await {
        Err(ConnectError::Discover(e)) => match *e {
            ClientError::Rpc(e) => {
                assert_eq!(e.kind, RpcErrorKind::UnsupportedProtocolVersion);
                assert_eq!(
                    e.data.unwrap()["supported"],
                    json!(["2026-07-28", "2099-01-01"])
                );
            }
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
    assert_eq!(
        past.methods(),
        vec!["server/discover"; MAX_VERSION_RETRIES + 1]
    );
}

/// B15: the retry is opt-out, and a refusal that does not list our revision is the typed
/// incompatibility, with the server's versions and no retry.
#[tokio::test]
async fn b15_version_retry_is_opt_out_and_no_common_version_is_typed() {
    let off = version_refusing(1, r#"["2026-07-28"]"#);
    let options = ClientOptions {
        retry_unsupported_version: false,
        ..ClientOptions::default()
    };
    match Client::connect(off.clone(), options).await {
        Err(ConnectError::Discover(e)) => assert!(
            matches!(&*e, ClientError::Rpc(e) if e.kind == RpcErrorKind::UnsupportedProtocolVersion),
            "{e:?}"
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(off.methods(), vec!["server/discover"]);

    let other = version_refusing(1, r#"["2099-01-01","2025-11-25"]"#);
    match Client::connect(other.clone(), ClientOptions::default()).await {
        Err(ConnectError::UnsupportedVersions { versions }) => {
            assert_eq!(versions, vec!["2099-01-01", "2025-11-25"]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(other.methods(), vec!["server/discover"]);
}
