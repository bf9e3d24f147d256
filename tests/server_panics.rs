//! Exactly one reply per request, whatever panics (issue "one protocol layer": panic policy).
//!
//! Handlers are contained by the core; everything else is caught by the dispatcher. These
//! tests make the server panic at its named fault points (`server::fault`, compiled only for
//! tests) and in a user completer, on stdio and on HTTP, and check that the request gets one
//! -32603 "Internal error" (no private cause), that nothing else is sent for it, and that the
//! same connection serves the next request.

// Each test holds the process-wide fault lock for its whole run on its own runtime and thread,
// which is what serialises the tests that arm points; no other task waits on that lock.
#![allow(clippy::await_holding_lock)]

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Value};
use strict_mcp::core::descriptor::{ContentBlock, PromptMessage, Role};
use strict_mcp::core::{
    Caller, Invocation, Outcome, PromptDef, PromptReply, Registry, RegistryBuilder,
};
use strict_mcp::server::fault::{self, points};
use strict_mcp::server::http::{HttpConfig, McpHttp};
use strict_mcp::server::{Server, ServerOptions};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::net::{TcpListener, TcpStream};

const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

fn registry() -> Registry {
    RegistryBuilder::new()
        .prompt(
            PromptDef::new(
                "greet",
                |_inv: Invocation, _args: BTreeMap<String, String>| async move {
                    Ok(Outcome::Complete(PromptReply {
                        description: None,
                        messages: vec![PromptMessage::new(Role::User, ContentBlock::text("hello"))],
                    }))
                },
            )
            .argument("name", "who", false)
            .argument("boom", "a completer that panics", false)
            .complete("name", |_caller, partial, _known| {
                vec![format!("{partial}x")]
            })
            .complete("boom", |_caller, _partial, _known| panic!("completer bug")),
        )
        .build()
        .expect("registry builds")
}

fn server() -> Server {
    Server::new(
        registry(),
        ServerOptions::new().server_info("panics", "1.0.0"),
    )
    .expect("server")
}

fn request(id: u64, method: &str, params: &str) -> String {
    let params = params.replacen('{', &format!("{{\"_meta\":{META},"), 1);
    let params = params.replace(",}", "}");
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#)
}

fn complete_params(argument: &str) -> String {
    format!(
        r#"{{"ref":{{"type":"ref/prompt","name":"greet"}},"argument":{{"name":"{argument}","value":"a"}}}}"#
    )
}

fn internal_error(id: u64) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32603,"message":"Internal error"}}}}"#)
}

/// A panic point armed for one request, disarmed however the test ends.
struct Armed;
impl Armed {
    fn at(point: &'static str) -> Armed {
        fault::arm(point);
        Armed
    }
}
impl Drop for Armed {
    fn drop(&mut self) {
        fault::disarm();
    }
}

// ---------------------------------------------------------------------------------------------
// stdio

struct Stdio {
    writer: DuplexStream,
    lines: Lines<BufReader<DuplexStream>>,
}

impl Stdio {
    fn start() -> Stdio {
        let (client_w, server_r) = tokio::io::duplex(1 << 20);
        let (server_w, client_r) = tokio::io::duplex(1 << 20);
        let s = server();
        tokio::spawn(async move {
            s.run_stdio_on(Caller::new("alice"), server_r, server_w)
                .await
        });
        Stdio {
            writer: client_w,
            lines: BufReader::new(client_r).lines(),
        }
    }

    async fn send(&mut self, line: &str) {
        self.writer.write_all(line.as_bytes()).await.unwrap();
        self.writer.write_all(b"\n").await.unwrap();
    }

    async fn line(&mut self) -> String {
        tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
            .await
            .expect("a line within 10 s (no hang)")
            .expect("readable")
            .expect("not EOF")
    }

    /// Nothing more arrives within a short wait.
    async fn quiet(&mut self) {
        let more = tokio::time::timeout(Duration::from_millis(200), self.lines.next_line()).await;
        assert!(more.is_err(), "unexpected extra line: {more:?}");
    }
}

/// The request after a contained panic is answered normally on the same connection.
async fn stdio_still_serves(io: &mut Stdio, id: u64) {
    io.send(&request(
        id,
        "completion/complete",
        &complete_params("name"),
    ))
    .await;
    let reply: Value = serde_json::from_str(&io.line().await).unwrap();
    assert_eq!(reply["id"], json!(id));
    assert_eq!(reply["result"]["completion"]["values"], json!(["ax"]));
}

#[tokio::test]
async fn a4_c6_stdio_panics_in_the_server_get_one_internal_error_and_the_connection_serves_on() {
    let _exclusive = fault::exclusive();
    let mut io = Stdio::start();
    let mut id = 1;
    for point in [points::DISPATCH, points::REPLY, points::COMPLETE] {
        {
            let _armed = Armed::at(point);
            io.send(&request(
                id,
                "completion/complete",
                &complete_params("name"),
            ))
            .await;
            assert_eq!(io.line().await, internal_error(id), "{point}");
        }
        io.quiet().await;
        stdio_still_serves(&mut io, id + 1).await;
        id += 2;
    }
    // A user completer that panics (no fault point: the application's own bug).
    io.send(&request(
        id,
        "completion/complete",
        &complete_params("boom"),
    ))
    .await;
    assert_eq!(io.line().await, internal_error(id));
    io.quiet().await;
    stdio_still_serves(&mut io, id + 1).await;
}

#[tokio::test]
async fn k_stdio_listen_stream_that_panics_after_its_ack_ends_with_an_error_on_the_listen_id() {
    let _exclusive = fault::exclusive();
    let mut io = Stdio::start();
    {
        let _armed = Armed::at(points::LISTEN_AFTER_ACK);
        io.send(&request(
            9,
            "subscriptions/listen",
            r#"{"notifications":{"promptsListChanged":true}}"#,
        ))
        .await;
        let ack: Value = serde_json::from_str(&io.line().await).unwrap();
        assert_eq!(
            ack["method"], "notifications/subscriptions/acknowledged",
            "{ack}"
        );
        assert_eq!(io.line().await, internal_error(9));
    }
    io.quiet().await;
    stdio_still_serves(&mut io, 10).await;
}

// ---------------------------------------------------------------------------------------------
// HTTP (one keep-alive connection, raw HTTP/1.1)

async fn http_host() -> std::net::SocketAddr {
    let service = McpHttp::new(server(), HttpConfig::default());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let service = service.clone();
            tokio::spawn(async move {
                let f = hyper::service::service_fn(
                    move |req: hyper::Request<hyper::body::Incoming>| {
                        let service = service.clone();
                        async move { Ok::<_, std::convert::Infallible>(service.handle(req).await) }
                    },
                );
                let _ = hyper_util::server::conn::auto::Builder::new(
                    hyper_util::rt::TokioExecutor::new(),
                )
                .serve_connection(hyper_util::rt::TokioIo::new(stream), f)
                .await;
            });
        }
    });
    addr
}

/// Writes one POST and reads its response (status, body) from a keep-alive connection.
async fn post(
    stream: &mut TcpStream,
    addr: std::net::SocketAddr,
    method: &str,
    body: &str,
) -> (u16, String) {
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), read_response(stream))
        .await
        .expect("a response within 10 s (no hang)")
}

async fn read_response(stream: &mut TcpStream) -> (u16, String) {
    let mut buf = Vec::new();
    let head_end = loop {
        let mut byte = [0u8; 1];
        let n = stream.read(&mut byte).await.unwrap();
        assert_eq!(n, 1, "connection closed before the response head");
        buf.push(byte[0]);
        if buf.ends_with(b"\r\n\r\n") {
            break buf.len();
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let status: u16 = head[9..12].parse().unwrap();
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map(|v| v.trim().parse::<usize>().unwrap());
    let mut body = Vec::new();
    match length {
        Some(len) => {
            body.resize(len, 0);
            stream.read_exact(&mut body).await.unwrap();
        }
        None => {
            // Chunked (an SSE stream): read chunks until the last one.
            let mut reader = BufReader::new(stream);
            loop {
                let mut size = String::new();
                reader.read_line(&mut size).await.unwrap();
                let size = usize::from_str_radix(size.trim(), 16).unwrap();
                let mut chunk = vec![0u8; size + 2];
                reader.read_exact(&mut chunk).await.unwrap();
                if size == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..size]);
            }
        }
    }
    (status, String::from_utf8(body).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a4_d6_http_panics_in_the_server_get_one_500_internal_error_and_keep_alive_serves_on() {
    let _exclusive = fault::exclusive();
    let addr = http_host().await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let mut id = 1;
    for point in [points::DISPATCH, points::REPLY, points::COMPLETE] {
        {
            let _armed = Armed::at(point);
            let body = request(id, "completion/complete", &complete_params("name"));
            let (status, text) = post(&mut stream, addr, "completion/complete", &body).await;
            assert_eq!((status, text), (500, internal_error(id)), "{point}");
        }
        let body = request(id + 1, "completion/complete", &complete_params("name"));
        let (status, text) = post(&mut stream, addr, "completion/complete", &body).await;
        assert_eq!(status, 200, "{text}");
        let reply: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(reply["result"]["completion"]["values"], json!(["ax"]));
        id += 2;
    }
    let body = request(id, "completion/complete", &complete_params("boom"));
    let (status, text) = post(&mut stream, addr, "completion/complete", &body).await;
    assert_eq!((status, text), (500, internal_error(id)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k_http_listen_stream_that_panics_after_its_ack_ends_with_an_error_event() {
    let _exclusive = fault::exclusive();
    let addr = http_host().await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let _armed = Armed::at(points::LISTEN_AFTER_ACK);
    let body = request(
        9,
        "subscriptions/listen",
        r#"{"notifications":{"promptsListChanged":true}}"#,
    );
    let (status, text) = post(&mut stream, addr, "subscriptions/listen", &body).await;
    assert_eq!(status, 200);
    let events: Vec<Value> = text
        .split("\n\n")
        .filter_map(|e| e.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert_eq!(events.len(), 2, "{text}");
    assert_eq!(
        events[0]["method"],
        "notifications/subscriptions/acknowledged"
    );
    assert_eq!(
        events[1],
        serde_json::from_str::<Value>(&internal_error(9)).unwrap()
    );
}
