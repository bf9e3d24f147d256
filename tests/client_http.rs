//! The strict client over its Streamable HTTP transport, against our own host on loopback and
//! against raw loopback servers that misbehave on purpose (D2–D21, D46, D47). Nothing here dials
//! anything but 127.0.0.1.
#![forbid(unsafe_code)]
#![cfg(all(feature = "http", feature = "client", feature = "server"))]

#[path = "support/fake_http.rs"]
mod fake_http;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use strict_mcp::client::http::{
    Decorator, DecoratorError, HttpError, HttpTransport, MAX_REDIRECT_HOPS,
    MAX_WWW_AUTHENTICATE_BYTES,
};
use strict_mcp::client::{
    CallOptions, Client, ClientError, ClientOptions, ConnectError, Inbound, LogMessage,
    LogMessageSink, Progress, ProgressSink, Refusal, RoundInput, RpcErrorKind, ToolOutcome,
    Transport, TransportError,
};
use strict_mcp::codec::ReplyTo;
use strict_mcp::core::{Invocation, RegistryBuilder, ToolDef};
use strict_mcp::server::http::{serve, HttpConfig, McpHttp};
use strict_mcp::server::{Server, ServerOptions};
use strict_mcp::wire::jsonrpc::{Message, Notification, Request, RequestId, Response};
use strict_mcp::wire::limits::MAX_CLIENT_INGRESS_FRAME_BYTES;
use strict_mcp::wire::logging::LogLevel;

use fake_http::{call_request, http, read_request, refused};

const PV: &str = "2026-07-28";

#[derive(Deserialize, JsonSchema)]
struct RegionIn {
    /// Where to run; mirrored into `Mcp-Param-Region`.
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: String,
}

#[derive(Deserialize, JsonSchema)]
struct Empty {}

#[derive(Deserialize, JsonSchema)]
struct TagIn {
    /// Whose messages these are.
    tag: String,
}

#[derive(Serialize, JsonSchema)]
struct TextOut {
    /// The text.
    text: String,
}

/// Raised when the `wait` tool's handler is dropped (its request was cancelled).
struct StopOnDrop(Arc<AtomicBool>);
impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Our own host on a loopback port; returns the endpoint URL and the `wait` tool's flag.
async fn own_host(stream_after: Option<Duration>) -> (String, Arc<AtomicBool>) {
    let (url, stopped, _) = own_host_server(stream_after).await;
    (url, stopped)
}

/// As [`own_host`], also returning the protocol server.
async fn own_host_server(stream_after: Option<Duration>) -> (String, Arc<AtomicBool>, Server) {
    let stopped = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stopped);
    let registry = RegistryBuilder::new()
        .tool(ToolDef::typed(
            "region",
            |_i: Invocation, i: RegionIn| async move { Ok(TextOut { text: i.region }) },
        ))
        .tool(ToolDef::typed(
            "progress",
            |inv: Invocation, _i: Empty| async move {
                inv.report_progress(1.0, Some(2.0), Some("half"));
                tokio::time::sleep(Duration::from_millis(20)).await;
                Ok(TextOut {
                    text: "done".into(),
                })
            },
        ))
        .tool(ToolDef::typed(
            "chatty",
            |inv: Invocation, i: TagIn| async move {
                for n in 0..3 {
                    inv.log(
                        LogLevel::Info,
                        Some("chatty"),
                        json!(format!("{} {n}", i.tag)),
                    );
                    tokio::time::sleep(Duration::from_millis(15)).await;
                }
                Ok(TextOut { text: i.tag })
            },
        ))
        .tool(ToolDef::typed("wait", move |inv: Invocation, _i: Empty| {
            let guard = StopOnDrop(Arc::clone(&flag));
            async move {
                let _guard = guard;
                inv.cancel_token().cancelled().await;
                Ok(TextOut {
                    text: "cancelled".into(),
                })
            }
        }))
        .build()
        .expect("registry");
    let server = Server::new(registry, ServerOptions::new().mode("direct")).expect("server");
    let handle = server.clone();
    let config = HttpConfig {
        stream_after,
        ..HttpConfig::default()
    };
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(serve(
        listener,
        McpHttp::new(server, config),
        std::future::pending(),
    ));
    (format!("http://{addr}/mcp"), stopped, handle)
}

async fn connect(url: &str, decorator: Option<Decorator>) -> (Client, Arc<HttpTransport>) {
    let transport = Arc::new(HttpTransport::new(url, decorator).expect("transport"));
    let client = Client::connect(transport.clone(), ClientOptions::default())
        .await
        .expect("connect");
    (client, transport)
}

fn args(v: Value) -> Option<Map<String, Value>> {
    match v {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

fn text_of(outcome: ToolOutcome) -> Value {
    match outcome {
        ToolOutcome::Success(r) => {
            serde_json::to_value(&r).expect("json")["structuredContent"]["value"]["text"].clone()
        }
        other => panic!("expected a success, got {other:?}"),
    }
}

#[tokio::test]
async fn d2_d19_discover_list_and_call_with_mcp_param_headers() {
    let (url, _) = own_host(None).await;
    let (client, transport) = connect(&url, None).await;
    assert_eq!(
        client.discovery().result.supported_versions,
        vec![PV.to_owned()]
    );
    // Without the annotations from tools/list, Mcp-Param-Region is missing: the host refuses.
    let err = client
        .call_tool(
            "region",
            args(json!({"region": "eu-west"})),
            RoundInput::first(),
            &CallOptions::default(),
        )
        .await
        .expect_err("no Mcp-Param-Region yet");
    match err {
        ClientError::Rpc(e) => {
            assert_eq!(e.kind, RpcErrorKind::HeaderMismatch);
            assert_eq!(e.code, -32020);
        }
        other => panic!("expected -32020, got {other:?}"),
    }
    let tools = client
        .list_tools(&CallOptions::default())
        .await
        .expect("list");
    let mut names: Vec<_> = tools.iter().map(|t| t.name.clone()).collect();
    names.sort();
    assert_eq!(names, ["chatty", "progress", "region", "wait"]);
    let kept = transport.annotations("region");
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].header_name(), "Mcp-Param-Region");
    let outcome = client
        .call_tool(
            "region",
            args(json!({"region": "eu-west"})),
            RoundInput::first(),
            &CallOptions::default(),
        )
        .await
        .expect("call");
    assert_eq!(text_of(outcome), json!("eu-west"));
    // Non-ASCII goes through the base64 sentinel and the host still matches it (D21).
    let outcome = client
        .call_tool(
            "region",
            args(json!({"region": "zürich"})),
            RoundInput::first(),
            &CallOptions::default(),
        )
        .await
        .expect("call");
    assert_eq!(text_of(outcome), json!("zürich"));
}

#[tokio::test]
async fn d5_d11_progress_token_gets_a_request_scoped_sse_stream() {
    let (url, _) = own_host(None).await;
    let (client, _) = connect(&url, None).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink_seen = Arc::clone(&seen);
    let options = CallOptions {
        on_progress: Some(ProgressSink(Arc::new(move |p: Progress| {
            sink_seen.lock().unwrap().push(p)
        }))),
        ..CallOptions::default()
    };
    let outcome = client
        .call_tool("progress", args(json!({})), RoundInput::first(), &options)
        .await
        .expect("call");
    assert_eq!(text_of(outcome), json!("done"));
    assert_eq!(
        *seen.lock().unwrap(),
        vec![Progress {
            progress: "1.0".into(),
            total: Some("2.0".into()),
            message: Some("half".into()),
        }]
    );
}

/// L2, D8: two logging calls in flight at once over HTTP; each message arrives on its own
/// request's SSE stream, so each sink gets exactly its own messages, in order, and nothing is
/// dropped.
#[tokio::test]
async fn l2_d8_concurrent_logging_calls_each_get_exactly_their_own_messages() {
    let (url, _) = own_host(None).await;
    let (client, _) = connect(&url, None).await;
    let collecting = || {
        let seen: Arc<Mutex<Vec<LogMessage>>> = Arc::default();
        let kept = Arc::clone(&seen);
        (
            LogMessageSink(Arc::new(move |m| kept.lock().unwrap().push(m))),
            seen,
        )
    };
    let (a, seen_a) = collecting();
    let (b, seen_b) = collecting();
    let oa = CallOptions::default().logs(LogLevel::Info, a);
    let ob = CallOptions::default().logs(LogLevel::Info, b);
    let (ra, rb) = tokio::join!(
        client.call("chatty", args(json!({"tag": "a"})), &oa),
        client.call("chatty", args(json!({"tag": "b"})), &ob)
    );
    ra.expect("a");
    rb.expect("b");
    let expected = |tag: &str| {
        (0..3)
            .map(|n| LogMessage {
                level: LogLevel::Info,
                logger: Some("chatty".into()),
                data: json!(format!("{tag} {n}")),
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(*seen_a.lock().unwrap(), expected("a"));
    assert_eq!(*seen_b.lock().unwrap(), expected("b"));
    assert_eq!(client.dropped_log_messages(), 0);
}

#[tokio::test]
async fn d13_deadline_on_a_json_call_closes_the_connection_and_the_handler_stops() {
    let (url, stopped) = own_host(None).await;
    let (client, _) = connect(&url, None).await;
    let err = client
        .call_tool(
            "wait",
            args(json!({})),
            RoundInput::first(),
            &CallOptions::default().deadline(Duration::from_millis(300)),
        )
        .await
        .expect_err("deadline");
    assert!(matches!(err, ClientError::Deadline { .. }), "{err:?}");
    wait_for(&stopped).await;
}

#[tokio::test]
async fn d13_cancelling_a_streamed_call_closes_its_sse_stream_not_a_post() {
    let (url, stopped) = own_host(Some(Duration::from_millis(50))).await;
    let (client, _) = connect(&url, None).await;
    let err = client
        .call_tool(
            "wait",
            args(json!({})),
            RoundInput::first(),
            &CallOptions::default().deadline(Duration::from_millis(500)),
        )
        .await
        .expect_err("deadline");
    assert!(matches!(err, ClientError::Deadline { .. }), "{err:?}");
    wait_for(&stopped).await;
}

/// How long a test waits for the server side to see a cancellation: only a hang stopper (it
/// was 200 polls of 10 ms, about 2 s, which a loaded machine could use up).
const SERVER_SIDE_WAIT: Duration = Duration::from_secs(20);

async fn wait_for(flag: &AtomicBool) {
    let until = tokio::time::Instant::now() + SERVER_SIDE_WAIT;
    while tokio::time::Instant::now() < until {
        if flag.load(Ordering::SeqCst) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the handler was not cancelled");
}

fn meta_params(rest: &str) -> Option<Box<RawValue>> {
    Some(
        RawValue::from_string(format!(
            r#"{{{rest}"_meta":{{"io.modelcontextprotocol/protocolVersion":"{PV}"}}}}"#
        ))
        .expect("raw"),
    )
}

#[tokio::test]
async fn d7_a_notification_is_posted_and_acknowledged_202() {
    let (url, _) = own_host(None).await;
    let transport = HttpTransport::new(&url, None).expect("transport");
    let note = Message::Notification(Notification {
        method: "notifications/roots/list_changed".into(),
        params: meta_params(""),
    });
    transport.send(&note).await.expect("202");
}

#[tokio::test]
async fn d46_a_decorator_setting_mcp_method_is_refused_with_a_typed_error() {
    let (url, _) = own_host(None).await;
    let decorator: Decorator = Arc::new(|_method, d| d.insert("Mcp-Method", "tools/call"));
    let transport = Arc::new(HttpTransport::new(&url, Some(decorator)).expect("transport"));
    let err = Client::connect(transport, ClientOptions::default())
        .await
        .expect_err("refused");
    let ConnectError::Discover(inner) = err else {
        panic!("expected a discovery failure, got {err:?}");
    };
    match *inner {
        ClientError::Transport(TransportError::Refused(Refusal::Http(e))) => assert_eq!(
            e,
            HttpError::Decorator(DecoratorError::Reserved("mcp-method".into()))
        ),
        other => panic!("expected a refused message, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Raw loopback servers

/// An SSE comment that tells [`raw_server`] to hold the stream open.
const HOLD: &[u8] = b": hold\n\n";

/// A loopback server answering each request with `answer(head, body)` written raw, then
/// closing the connection; the request heads it saw are kept.
async fn raw_server(
    answer: impl Fn(&str, &[u8]) -> Vec<u8> + Send + Sync + 'static,
) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let heads = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&heads);
    let answer = Arc::new(answer);
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let answer = Arc::clone(&answer);
            let kept = Arc::clone(&kept);
            tokio::spawn(async move {
                let Some((head, body)) = read_request(&mut socket).await else {
                    return;
                };
                let reply = answer(&head, &body);
                kept.lock().unwrap().push(head);
                let _ = socket.write_all(&reply).await;
                if reply.ends_with(HOLD) {
                    // Keep the stream open until the client closes it, and record that it did.
                    let mut chunk = [0u8; 4096];
                    while matches!(socket.read(&mut chunk).await, Ok(n) if n > 0) {}
                    kept.lock().unwrap().push("CLOSED".to_owned());
                    return;
                }
                let _ = socket.shutdown().await;
            });
        }
    });
    (format!("http://{addr}/mcp"), heads)
}

/// A success response for id 1 of exactly `len` bytes.
fn response_of_len(len: usize) -> Vec<u8> {
    let shell = r#"{"jsonrpc":"2.0","id":1,"result":{"x":""}}"#;
    let pad = len - shell.len();
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{{"x":"{}"}}}}"#,
        "a".repeat(pad)
    )
    .into_bytes()
}

#[tokio::test]
async fn d3_d15_d16_d46_wire_headers_are_exact_and_decorations_added() {
    let (url, heads) = raw_server(|_, _| {
        http(
            "200 OK",
            "application/json",
            br#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        )
    })
    .await;
    let decorator: Decorator = Arc::new(|method, d| {
        assert_eq!(method, "tools/call");
        d.insert("Authorization", "Bearer s3cret")?;
        d.insert(
            "traceparent",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        )
    });
    let transport = HttpTransport::new(&url, Some(decorator)).expect("transport");
    transport.send(&call_request(1)).await.expect("sent");
    let Inbound::Message(Message::Response(Response::Success(s))) =
        transport.recv().await.expect("recv")
    else {
        panic!("expected the success");
    };
    assert_eq!(s.result.get(), "{}");
    let head = heads.lock().unwrap()[0].to_ascii_lowercase();
    assert!(head.starts_with("post /mcp http/1.1\r\n"), "{head}");
    for line in [
        "accept: application/json, text/event-stream\r\n",
        "content-type: application/json\r\n",
        "mcp-protocol-version: 2026-07-28\r\n",
        "mcp-method: tools/call\r\n",
        "mcp-name: x\r\n",
        "authorization: bearer s3cret\r\n",
        "traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\n",
    ] {
        assert_eq!(head.matches(line).count(), 1, "{line:?} in {head}");
    }
}

#[tokio::test]
async fn d47_a_json_body_at_the_bound_is_read_one_past_is_refused() {
    let (url, _) = raw_server(|head, _| {
        let len = if head.contains("mcp-name: at") {
            MAX_CLIENT_INGRESS_FRAME_BYTES
        } else {
            MAX_CLIENT_INGRESS_FRAME_BYTES + 1
        };
        http("200 OK", "application/json", &response_of_len(len))
    })
    .await;
    let transport = HttpTransport::new(&url, None).expect("transport");
    let at = Message::Request(Request {
        id: RequestId::integer(1),
        method: "tools/call".into(),
        params: meta_params(r#""name":"at","#),
    });
    transport.send(&at).await.expect("at the bound");
    assert!(matches!(
        transport.recv().await,
        Ok(Inbound::Message(Message::Response(Response::Success(_))))
    ));
    let err = transport.send(&call_request(1)).await.expect_err("past");
    assert_eq!(
        refused(err),
        HttpError::TooLarge {
            limit: MAX_CLIENT_INGRESS_FRAME_BYTES
        }
    );
}

#[tokio::test]
async fn d47_a_server_closing_mid_json_body_is_truncated() {
    let (url, _) = raw_server(|_, _| {
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{\"jsonrpc\""
            .to_vec()
    })
    .await;
    let transport = HttpTransport::new(&url, None).expect("transport");
    let err = transport.send(&call_request(1)).await.expect_err("cut");
    assert_eq!(refused(err), HttpError::Truncated);
}

#[tokio::test]
async fn d14_an_sse_stream_closed_before_the_response_fails_that_request() {
    let (url, _) = raw_server(|_, _| {
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n: keep-alive\n\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":1}}\n\ndata: {\"jsonrpc\""
            .to_vec()
    })
    .await;
    let transport = HttpTransport::new(&url, None).expect("transport");
    transport
        .send(&call_request(7))
        .await
        .expect("stream opened");
    // D8: a notification on the request's stream names that request.
    let Ok(Inbound::OnStream {
        request,
        message: Message::Notification(n),
    }) = transport.recv().await
    else {
        panic!("expected the notification first");
    };
    assert_eq!(request, RequestId::integer(7));
    assert_eq!(n.method, "notifications/message");
    let Ok(Inbound::Rejected(rejection)) = transport.recv().await else {
        panic!("expected the request to fail");
    };
    assert_eq!(rejection.reply_to, ReplyTo::Id(RequestId::integer(7)));
}

#[tokio::test]
async fn d5_status_without_json_rpc_body_bad_type_and_error_bodies() {
    let (url, _) = raw_server(|head, _| {
        if head.contains("mcp-name: plain") {
            http("500 Internal Server Error", "text/plain", b"oops")
        } else if head.contains("mcp-name: html") {
            http("200 OK", "text/html", b"<p>")
        } else {
            http(
                "400 Bad Request",
                "application/json",
                br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32020,"message":"Header mismatch"}}"#,
            )
        }
    })
    .await;
    let transport = HttpTransport::new(&url, None).expect("transport");
    let named = |name: &str| {
        Message::Request(Request {
            id: RequestId::integer(1),
            method: "tools/call".into(),
            params: meta_params(&format!(r#""name":"{name}","#)),
        })
    };
    let err = transport.send(&named("plain")).await.expect_err("500");
    assert_eq!(refused(err), HttpError::Status { status: 500 });
    let err = transport.send(&named("html")).await.expect_err("html");
    assert_eq!(refused(err), HttpError::ContentType);
    transport.send(&named("err")).await.expect("error body");
    let Ok(Inbound::Message(Message::Response(Response::Error(e)))) = transport.recv().await else {
        panic!("expected the error response");
    };
    assert_eq!(e.error.code, -32020);
}

/// As [`http`], with these extra header lines (each `name: value`).
fn http_with(status: &str, headers: &[String], content_type: &str, body: &[u8]) -> Vec<u8> {
    let extra: String = headers.iter().map(|l| format!("{l}\r\n")).collect();
    let mut out = format!(
        "HTTP/1.1 {status}\r\n{extra}content-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

/// A 401/403 answer reaches the caller with its status and every `WWW-Authenticate` value,
/// byte-exact and in order, so an OAuth client acts without probing again; at most
/// `MAX_WWW_AUTHENTICATE_BYTES` of values are kept, whole values only.
#[tokio::test]
async fn d5_401_and_403_refusals_carry_status_and_www_authenticate_at_the_bound() {
    const META: &str = r#"Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource/mcp", scope="mcp:basic""#;
    const SCOPE: &str = r#"Bearer error="insufficient_scope", scope="mcp:write""#;
    const NONCE: &str = r#"DPoP error="use_dpop_nonce""#;
    let at = MAX_WWW_AUTHENTICATE_BYTES;
    let (url, _) = raw_server(move |head, _| {
        let www = |v: &str| format!("WWW-Authenticate: {v}");
        let rpc_error = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"no"}}"#;
        let name = head
            .lines()
            .find_map(|l| l.strip_prefix("mcp-name: "))
            .unwrap_or_default()
            .to_owned();
        match name.as_str() {
            "two" => http_with(
                "401 Unauthorized",
                &[www(META), www(r#"Basic realm="mcp""#)],
                "text/plain",
                b"",
            ),
            "scope" => http_with(
                "403 Forbidden",
                &[www(SCOPE)],
                "application/json",
                rpc_error,
            ),
            "none" => http("401 Unauthorized", "text/plain", b"no"),
            // RFC 9449 §9: a resource server's nonce comes with its DPoP challenge.
            "nonce" => http_with(
                "401 Unauthorized",
                &[www(NONCE), "DPoP-Nonce: rs-nonce-1".into()],
                "text/plain",
                b"",
            ),
            "bad-nonce" => http_with(
                "401 Unauthorized",
                &[www(NONCE), "DPoP-Nonce: has space".into()],
                "text/plain",
                b"",
            ),
            "body" => http("403 Forbidden", "application/json", rpc_error),
            "at" => http_with(
                "401 Unauthorized",
                &[www(&"a".repeat(at - 10)), www(&"b".repeat(10))],
                "text/plain",
                b"",
            ),
            "past" => http_with(
                "401 Unauthorized",
                &[www(&"a".repeat(at - 10)), www(&"b".repeat(11)), www("c")],
                "text/plain",
                b"",
            ),
            _ => http_with(
                "401 Unauthorized",
                &[www(&"a".repeat(at + 1))],
                "text/plain",
                b"",
            ),
        }
    })
    .await;
    let transport = HttpTransport::new(&url, None).expect("transport");
    let named = |name: &str| {
        Message::Request(Request {
            id: RequestId::integer(1),
            method: "tools/call".into(),
            params: meta_params(&format!(r#""name":"{name}","#)),
        })
    };
    let unauthorized = |status: u16, values: Vec<String>, dropped: usize| HttpError::Unauthorized {
        status,
        www_authenticate: values,
        dropped,
        dpop_nonce: None,
    };
    let err = transport.send(&named("two")).await.expect_err("401");
    assert_eq!(
        refused(err),
        unauthorized(401, vec![META.into(), r#"Basic realm="mcp""#.into()], 0)
    );
    // A challenge outranks a JSON-RPC body: it is what the caller can act on.
    let err = transport.send(&named("scope")).await.expect_err("403");
    assert_eq!(refused(err), unauthorized(403, vec![SCOPE.into()], 0));
    // The DPoP nonce is kept when it is 1*NQCHAR (MAX_DPOP_NONCE_BYTES), else left out.
    let err = transport.send(&named("nonce")).await.expect_err("401");
    assert_eq!(
        refused(err),
        HttpError::Unauthorized {
            status: 401,
            www_authenticate: vec![NONCE.into()],
            dropped: 0,
            dpop_nonce: Some("rs-nonce-1".into()),
        }
    );
    let err = transport.send(&named("bad-nonce")).await.expect_err("401");
    assert_eq!(refused(err), unauthorized(401, vec![NONCE.into()], 0));
    // No header: the status alone.
    let err = transport.send(&named("none")).await.expect_err("401");
    assert_eq!(refused(err), unauthorized(401, Vec::new(), 0));
    assert_eq!(
        err_text(&transport, "none").await,
        "message refused by the transport: the server refused the request's authorization (HTTP 401)"
    );
    // No challenge and a JSON-RPC body: the body is the core's to judge, as for other statuses.
    transport.send(&named("body")).await.expect("error body");
    let Ok(Inbound::Message(Message::Response(Response::Error(e)))) = transport.recv().await else {
        panic!("expected the error response");
    };
    assert_eq!(e.error.code, -32600);
    // At the bound: both values kept; one byte past: the value that passes it and every later
    // one are dropped, never cut.
    let err = transport.send(&named("at")).await.expect_err("at");
    assert_eq!(
        refused(err),
        unauthorized(401, vec!["a".repeat(at - 10), "b".repeat(10)], 0)
    );
    let err = transport.send(&named("past")).await.expect_err("past");
    assert_eq!(
        refused(err),
        unauthorized(401, vec!["a".repeat(at - 10)], 2)
    );
    let err = transport.send(&named("huge")).await.expect_err("huge");
    assert_eq!(refused(err), unauthorized(401, Vec::new(), 1));
}

async fn err_text(transport: &HttpTransport, name: &str) -> String {
    let message = Message::Request(Request {
        id: RequestId::integer(1),
        method: "tools/call".into(),
        params: meta_params(&format!(r#""name":"{name}","#)),
    });
    transport
        .send(&message)
        .await
        .expect_err("refused")
        .to_string()
}

#[tokio::test]
async fn d47_redirects_are_not_followed_and_secrets_stay_out_of_errors() {
    let (target, heads_target) = raw_server(|_, _| http("200 OK", "application/json", b"{}")).await;
    let location = target.clone();
    let (url, heads) = raw_server(move |_, _| {
        format!(
            "HTTP/1.1 307 Temporary Redirect\r\nlocation: {location}\r\ncontent-length: 0\r\n\r\n"
        )
        .into_bytes()
    })
    .await;
    let decorator: Decorator = Arc::new(|_, d| {
        d.insert("Authorization", "Bearer s3cret")?;
        d.insert("Cookie", "sid=s3cret")
    });
    let transport = HttpTransport::new(&url, Some(decorator)).expect("transport");
    let err = transport
        .send(&call_request(1))
        .await
        .expect_err("redirect");
    let text = format!("{err} {err:?}");
    assert_eq!(refused(err), HttpError::Redirect { status: 307 });
    assert!(!text.contains("s3cret"), "{text}");
    assert_eq!(heads.lock().unwrap().len(), 1);
    assert!(heads_target.lock().unwrap().is_empty());
}

/// A server whose `/hop/N` redirects (307) to `/hop/N+1` until `N == last`, which answers.
async fn hop_server(last: usize) -> String {
    let (url, _) = raw_server(move |head, _| {
        let n: usize = head
            .strip_prefix("POST /hop/")
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse().ok())
            .expect("hop path");
        if n == last {
            http(
                "200 OK",
                "application/json",
                br#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            )
        } else {
            format!(
                "HTTP/1.1 307 Temporary Redirect\r\nlocation: /hop/{}\r\ncontent-length: 0\r\n\r\n",
                n + 1
            )
            .into_bytes()
        }
    })
    .await;
    url.replace("/mcp", "/hop/0")
}

#[tokio::test]
async fn d47_same_origin_307_chain_at_the_hop_bound_is_followed_one_past_is_refused() {
    let at = hop_server(MAX_REDIRECT_HOPS).await;
    let transport = HttpTransport::new(&at, None)
        .expect("transport")
        .follow_redirects(usize::MAX);
    transport.send(&call_request(1)).await.expect("followed");
    assert!(matches!(
        transport.recv().await,
        Ok(Inbound::Message(Message::Response(Response::Success(_))))
    ));
    let past = hop_server(MAX_REDIRECT_HOPS + 1).await;
    let transport = HttpTransport::new(&past, None)
        .expect("transport")
        .follow_redirects(usize::MAX);
    let err = transport
        .send(&call_request(1))
        .await
        .expect_err("too many");
    assert_eq!(
        refused(err),
        HttpError::TooManyRedirects {
            limit: MAX_REDIRECT_HOPS
        }
    );
}

#[tokio::test]
async fn d47_cross_origin_and_method_changing_redirects_are_never_followed() {
    let (target, heads_target) = raw_server(|_, _| http("200 OK", "application/json", b"{}")).await;
    let location = target.clone();
    let (cross, _) = raw_server(move |_, _| {
        format!(
            "HTTP/1.1 308 Permanent Redirect\r\nlocation: {location}\r\ncontent-length: 0\r\n\r\n"
        )
        .into_bytes()
    })
    .await;
    let transport = HttpTransport::new(&cross, None)
        .expect("transport")
        .follow_redirects(MAX_REDIRECT_HOPS);
    let err = transport.send(&call_request(1)).await.expect_err("cross");
    assert_eq!(refused(err), HttpError::CrossOriginRedirect);
    assert!(heads_target.lock().unwrap().is_empty());
    let (found, heads) = raw_server(|_, _| {
        b"HTTP/1.1 302 Found\r\nlocation: /mcp\r\ncontent-length: 0\r\n\r\n".to_vec()
    })
    .await;
    let transport = HttpTransport::new(&found, None)
        .expect("transport")
        .follow_redirects(MAX_REDIRECT_HOPS);
    let err = transport.send(&call_request(1)).await.expect_err("302");
    assert_eq!(refused(err), HttpError::Redirect { status: 302 });
    assert_eq!(heads.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn d13_a_cancelled_streamed_call_closes_its_stream_and_posts_nothing() {
    let discover = json!({
        "jsonrpc": "2.0",
        "id": 1,
        "result": {
            "resultType": "complete",
            "supportedVersions": [PV],
            "capabilities": {},
        },
    })
    .to_string();
    let (url, heads) = raw_server(move |head, _| {
        if head.contains("mcp-method: server/discover") {
            http("200 OK", "application/json", discover.as_bytes())
        } else {
            let mut out = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n".to_vec();
            out.extend_from_slice(HOLD);
            out
        }
    })
    .await;
    let transport = Arc::new(HttpTransport::new(&url, None).expect("transport"));
    let client = Client::connect(transport, ClientOptions::default())
        .await
        .expect("connect");
    let err = client
        .call_tool(
            "slow",
            args(json!({})),
            RoundInput::first(),
            &CallOptions::default().deadline(Duration::from_millis(200)),
        )
        .await
        .expect_err("deadline");
    assert!(matches!(err, ClientError::Deadline { .. }), "{err:?}");
    let until = tokio::time::Instant::now() + SERVER_SIDE_WAIT;
    while tokio::time::Instant::now() < until {
        if heads.lock().unwrap().len() == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Give a stray cancellation POST time to arrive before checking there was none.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let heads = heads.lock().unwrap().clone();
    assert_eq!(heads.len(), 3, "{heads:?}");
    assert!(heads[0].contains("mcp-method: server/discover"));
    assert!(heads[1].contains("mcp-method: tools/call"));
    assert_eq!(heads[2], "CLOSED");
}

#[tokio::test]
async fn d5_a_null_id_error_on_a_requests_exchange_answers_that_request() {
    let (url, _) = raw_server(|_, _| {
        http(
            "503 Service Unavailable",
            "application/json",
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"busy"}}"#,
        )
    })
    .await;
    let transport = HttpTransport::new(&url, None).expect("transport");
    transport.send(&call_request(9)).await.expect("error body");
    let Ok(Inbound::Message(Message::Response(Response::Error(e)))) = transport.recv().await else {
        panic!("expected the error response");
    };
    assert_eq!(e.id, Some(RequestId::integer(9)));
    assert_eq!(e.error.code, -32603);
    assert_eq!(e.error.message, "busy");
}

#[tokio::test]
async fn close_ends_recv_and_refuses_later_sends() {
    let transport = Arc::new(HttpTransport::new("http://127.0.0.1:9/mcp", None).expect("t"));
    let reader = tokio::spawn({
        let t = Arc::clone(&transport);
        async move { t.recv().await }
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    transport.close().await;
    let got = tokio::time::timeout(Duration::from_secs(2), reader)
        .await
        .expect("recv ended")
        .expect("join");
    assert!(matches!(got, Err(TransportError::Closed)), "{got:?}");
    assert!(matches!(
        transport.send(&call_request(1)).await,
        Err(TransportError::Closed)
    ));
}

#[tokio::test]
async fn d2_sequential_posts_reuse_one_keep_alive_connection() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = Arc::clone(&accepted);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    // One request: its head, then its Content-Length body.
                    let (end, length) = loop {
                        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            let head = String::from_utf8_lossy(&buf[..i]).to_ascii_lowercase();
                            let length = head
                                .lines()
                                .find_map(|l| l.strip_prefix("content-length:"))
                                .and_then(|v| v.trim().parse::<usize>().ok())
                                .unwrap_or(0);
                            break (i + 4, length);
                        }
                        match socket.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    };
                    while buf.len() < end + length {
                        match socket.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    buf.drain(..end + length);
                    let body = br#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
                    let mut out = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                        body.len()
                    )
                    .into_bytes();
                    out.extend_from_slice(body);
                    if socket.write_all(&out).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    let transport = HttpTransport::new(&format!("http://{addr}/mcp"), None).expect("transport");
    for _ in 0..3 {
        transport.send(&call_request(1)).await.expect("sent");
        assert!(matches!(
            transport.recv().await,
            Ok(Inbound::Message(Message::Response(Response::Success(_))))
        ));
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn d5_d13_listen_stream_over_http_delivers_changes_and_closes_on_drop() {
    use strict_mcp::machine::subscriptions::{Change, Filter};
    let (url, _, server) = own_host_server(None).await;
    let (client, _) = connect(&url, None).await;
    let filter = Filter {
        tools_list_changed: true,
        ..Filter::default()
    };
    let mut stream = client
        .listen(filter.clone(), &CallOptions::default())
        .await
        .expect("acknowledged");
    assert_eq!(stream.effective_filter(), &filter);
    assert_eq!(server.status().listen_streams, 1);
    let registry = RegistryBuilder::new()
        .tool(ToolDef::typed(
            "region",
            |_i: Invocation, i: RegionIn| async move { Ok(TextOut { text: i.region }) },
        ))
        .build()
        .expect("registry");
    server.replace_registry(registry);
    let change = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("in time")
        .expect("change");
    assert_eq!(change, Some(Change::ToolsListChanged));
    drop(stream);
    let until = tokio::time::Instant::now() + SERVER_SIDE_WAIT;
    while tokio::time::Instant::now() < until {
        if server.status().listen_streams == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the listen stream was not closed");
}
