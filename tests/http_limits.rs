//! The HTTP host's connection-level bounds over raw loopback sockets: refused bodies are drained
//! so the 413 arrives (O36), slow and idle clients are cut off (header, body and idle
//! time-outs), the connection limit answers 503, one endpoint path (D1), and a legacy
//! `initialize` gets the -32601 answer it gets on stdio (B22, D31).
#![forbid(unsafe_code)]
#![cfg(feature = "http")]

mod support;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use support::{EchoIn, EchoOut};

use serde_json::json;
use strict_mcp::core::{Invocation, RegistryBuilder, ToolDef};
use strict_mcp::server::http::{
    serve_with, HttpConfig, McpHttp, ServeConfig, MAX_DRAIN_BYTES, MAX_DRAIN_TIME,
    MAX_LINGERING_REFUSALS, MAX_REFUSAL_LINGER, REFUSAL_LINGER,
};
use strict_mcp::server::{Server, ServerOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const PV: &str = "2026-07-28";

/// How long the `slow` tool takes: past the short time-outs the tests configure.
const SLOW_CALL: Duration = Duration::from_millis(900);

/// The read/idle time-out the time-out tests configure: 2 s, so the 150 ms pause "within the
/// bound" has 1.85 s of margin on a loaded machine (it was 400 ms, a 250 ms margin).
const READ_TIMEOUT: Duration = Duration::from_secs(2);
/// The pause before the rest of a request, well within [`READ_TIMEOUT`].
const WITHIN: Duration = Duration::from_millis(150);
/// How long a test waits for the close that [`READ_TIMEOUT`] must cause: only a hang stopper.
/// The lower bounds below need no margin: each test starts its clock before the step that
/// starts the host's timer (the connect, the head, the request), so the host's time-out can
/// only end later than the test's measure, however the two sides are scheduled.
const CLOSE_WAIT: Duration = Duration::from_secs(20);

struct Host {
    addr: SocketAddr,
    server: Server,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    run: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn start(http: HttpConfig, serve: ServeConfig) -> Host {
    let registry = RegistryBuilder::new()
        .tool(ToolDef::typed(
            "echo",
            |_i: Invocation, i: EchoIn| async move { Ok(EchoOut { text: i.text }) },
        ))
        .tool(ToolDef::typed(
            "slow",
            |_i: Invocation, i: EchoIn| async move {
                tokio::time::sleep(SLOW_CALL).await;
                Ok(EchoOut { text: i.text })
            },
        ))
        .build()
        .unwrap();
    let server = Server::new(registry, ServerOptions::new().mode("direct")).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(serve_with(
        listener,
        McpHttp::new(server.clone(), http),
        serve,
        async {
            let _ = stopped.await;
        },
    ));
    Host {
        addr,
        server,
        stop: Some(stop),
        run,
    }
}

impl Host {
    async fn stop(mut self) {
        self.server.shutdown(Duration::from_secs(2)).await;
        let _ = self.stop.take().unwrap().send(());
        tokio::time::timeout(Duration::from_secs(5), self.run)
            .await
            .expect("accept loop ends")
            .unwrap()
            .unwrap();
    }
}

fn list_body() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": PV,
        "io.modelcontextprotocol/clientCapabilities": {}
    }}})
    .to_string()
}

/// The head of a conforming `tools/list` POST to `path` with `Content-Length: len`.
fn list_head(path: &str, len: usize) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\nMCP-Protocol-Version: {PV}\r\nMcp-Method: tools/list\r\n\
         Content-Length: {len}\r\n\r\n"
    )
}

fn list_request(path: &str) -> Vec<u8> {
    let body = list_body();
    let mut out = list_head(path, body.len()).into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

#[derive(Debug)]
struct Answer {
    status: u16,
    head: String,
    body: String,
}

/// Reads one `Content-Length` framed HTTP/1.1 response; `None` when the connection ends first.
async fn read_answer(s: &mut TcpStream) -> Option<Answer> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte).await {
            Ok(1) => buf.push(byte[0]),
            _ => return None,
        }
    }
    let head = String::from_utf8(buf).unwrap();
    let status = head[9..12].parse().unwrap();
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().unwrap())
        })
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).await.ok()?;
    Some(Answer {
        status,
        head,
        body: String::from_utf8(body).unwrap(),
    })
}

/// Whether the peer closed the connection (EOF or reset) within `within`.
async fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    let mut sink = [0u8; 1024];
    matches!(
        tokio::time::timeout(within, s.read(&mut sink)).await,
        Ok(Ok(0)) | Ok(Err(_))
    )
}

/// A host that takes one connection and lingers `linger` on each refused one, with that one
/// connection made and answered (a `tools/list` 200): the next connection is refused.
async fn host_at_capacity(linger: Duration) -> (Host, TcpStream) {
    let serve = ServeConfig {
        max_connections: 1,
        refusal_linger: linger,
        ..ServeConfig::default()
    };
    let host = start(HttpConfig::default(), serve).await;
    let mut held = TcpStream::connect(host.addr).await.unwrap();
    held.write_all(&list_request("/mcp")).await.unwrap();
    assert_eq!(read_answer(&mut held).await.unwrap().status, 200);
    (host, held)
}

fn mt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

const TOO_LARGE: &str = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"request body exceeds the 2097152-byte limit"}}"#;

/// O36: a client that writes a 3 MiB body before it reads gets the 413 JSON-RPC error every
/// time (the host reads the refused body away instead of closing under the client's write),
/// and the connection stays usable.
#[test]
fn o36_over_limit_body_written_whole_gets_413_every_time() {
    mt().block_on(async {
        let host = start(HttpConfig::default(), ServeConfig::default()).await;
        let len = 3 * 1024 * 1024;
        for round in 0..10 {
            let mut s = TcpStream::connect(host.addr).await.unwrap();
            let mut request = list_head("/mcp", len).into_bytes();
            request.resize(request.len() + len, b' ');
            s.write_all(&request)
                .await
                .unwrap_or_else(|e| panic!("round {round}: write failed: {e}"));
            let a = read_answer(&mut s).await.expect("an answer");
            assert_eq!(
                (a.status, a.body.as_str()),
                (413, TOO_LARGE),
                "round {round}"
            );
            // The whole body was read, so the same connection serves the next request.
            s.write_all(&list_request("/mcp")).await.unwrap();
            assert_eq!(read_answer(&mut s).await.expect("next answer").status, 200);
        }
        host.stop().await;
    });
}

/// O36 with chunked framing: no length is declared, so the cap applies while reading, and
/// the rest is drained the same way.
#[test]
fn o36_over_limit_chunked_body_gets_413() {
    mt().block_on(async {
        let host = start(HttpConfig::default(), ServeConfig::default()).await;
        for _ in 0..3 {
            let mut s = TcpStream::connect(host.addr).await.unwrap();
            let head = list_head("/mcp", 0)
                .replace("Content-Length: 0\r\n", "Transfer-Encoding: chunked\r\n");
            let mut request = head.into_bytes();
            let chunk = vec![b' '; 64 * 1024];
            for _ in 0..48 {
                request.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
                request.extend_from_slice(&chunk);
                request.extend_from_slice(b"\r\n");
            }
            request.extend_from_slice(b"0\r\n\r\n");
            s.write_all(&request).await.unwrap();
            let a = read_answer(&mut s).await.expect("an answer");
            assert_eq!((a.status, a.body.as_str()), (413, TOO_LARGE));
        }
        host.stop().await;
    });
}

/// The drain bound: a body of exactly `MAX_DRAIN_BYTES` is still read away (413 arrives);
/// one byte more is not read at all: the host answers at once and closes, so the client may
/// see the 413 or a reset, but never a hang.
#[test]
fn o36_drain_stops_at_max_drain_bytes() {
    mt().block_on(async {
        let host = start(HttpConfig::default(), ServeConfig::default()).await;
        let at = MAX_DRAIN_BYTES as usize;
        let mut s = TcpStream::connect(host.addr).await.unwrap();
        let mut request = list_head("/mcp", at).into_bytes();
        request.resize(request.len() + at, b' ');
        s.write_all(&request).await.unwrap();
        let a = read_answer(&mut s).await.expect("an answer at the bound");
        assert_eq!((a.status, a.body.as_str()), (413, TOO_LARGE));

        let mut s = TcpStream::connect(host.addr).await.unwrap();
        let (mut rd, mut wr) = s.split();
        let over = at + 1;
        let started = Instant::now();
        let write = async {
            let mut request = list_head("/mcp", over).into_bytes();
            request.resize(request.len() + over, b' ');
            let _ = wr.write_all(&request).await; // may fail: the host stopped reading
        };
        let read = async {
            let mut answer = Vec::new();
            let _ = rd.read_to_end(&mut answer).await;
            answer
        };
        let ((), answer) =
            tokio::time::timeout(Duration::from_secs(5), async { tokio::join!(write, read) })
                .await
                .expect("the host ends a body past the drain bound promptly");
        assert!(started.elapsed() < Duration::from_secs(5));
        let text = String::from_utf8_lossy(&answer);
        assert!(
            text.is_empty() || text.starts_with("HTTP/1.1 413"),
            "{text}"
        );
        host.stop().await;
    });
}

/// Slow headers: completing them within `header_read_timeout` is served; stopping halfway
/// gets the connection closed once the time-out passes.
#[test]
fn header_read_timeout_closes_half_sent_headers() {
    mt().block_on(async {
        let serve = ServeConfig {
            header_read_timeout: READ_TIMEOUT,
            ..ServeConfig::default()
        };
        let host = start(HttpConfig::default(), serve).await;
        let request = list_request("/mcp");
        let (first, rest) = request.split_at(40);

        // Within the bound: the rest arrives after 150 ms.
        let mut s = TcpStream::connect(host.addr).await.unwrap();
        s.write_all(first).await.unwrap();
        tokio::time::sleep(WITHIN).await;
        s.write_all(rest).await.unwrap();
        assert_eq!(read_answer(&mut s).await.expect("served").status, 200);

        // Past it: half the headers, then nothing.
        let started = Instant::now();
        let mut s = TcpStream::connect(host.addr).await.unwrap();
        s.write_all(first).await.unwrap();
        assert!(closed_within(&mut s, CLOSE_WAIT).await);
        let waited = started.elapsed();
        assert!(waited >= READ_TIMEOUT, "{waited:?}");
        host.stop().await;
    });
}

/// Headers without the body: a body that follows within `body_read_timeout` is served; one
/// that never comes is answered 408 with a JSON-RPC error.
#[test]
fn body_read_timeout_answers_408_for_a_stalled_body() {
    mt().block_on(async {
        let http = HttpConfig {
            body_read_timeout: READ_TIMEOUT,
            ..HttpConfig::default()
        };
        let host = start(http, ServeConfig::default()).await;
        let body = list_body();

        let mut s = TcpStream::connect(host.addr).await.unwrap();
        s.write_all(list_head("/mcp", body.len()).as_bytes())
            .await
            .unwrap();
        tokio::time::sleep(WITHIN).await;
        s.write_all(body.as_bytes()).await.unwrap();
        assert_eq!(read_answer(&mut s).await.expect("served").status, 200);

        let mut s = TcpStream::connect(host.addr).await.unwrap();
        let started = Instant::now();
        s.write_all(list_head("/mcp", body.len()).as_bytes())
            .await
            .unwrap();
        let a = read_answer(&mut s).await.expect("an answer");
        let waited = started.elapsed();
        assert!(waited >= READ_TIMEOUT, "{waited:?}");
        assert_eq!(
            (a.status, a.body.as_str()),
            (
                408,
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"request body not received in time"}}"#
            )
        );
        host.stop().await;
    });
}

/// An idle keep-alive connection: reused within `idle_timeout`, closed after it.
#[test]
fn idle_timeout_closes_an_idle_keep_alive_connection() {
    mt().block_on(async {
        let serve = ServeConfig {
            idle_timeout: READ_TIMEOUT,
            header_read_timeout: Duration::from_secs(10),
            ..ServeConfig::default()
        };
        let host = start(HttpConfig::default(), serve).await;
        let mut s = TcpStream::connect(host.addr).await.unwrap();
        s.write_all(&list_request("/mcp")).await.unwrap();
        assert_eq!(read_answer(&mut s).await.unwrap().status, 200);
        tokio::time::sleep(WITHIN).await;
        let started = Instant::now();
        s.write_all(&list_request("/mcp")).await.unwrap();
        assert_eq!(read_answer(&mut s).await.unwrap().status, 200);
        assert!(closed_within(&mut s, CLOSE_WAIT).await);
        let waited = started.elapsed();
        assert!(waited >= READ_TIMEOUT, "{waited:?}");
        host.stop().await;
    });
}

/// `max_connections` are served; one more is answered 503 with a JSON-RPC error and closed,
/// even when it already sent its request; once a slot frees, a new connection is served.
#[test]
fn max_connections_refuses_one_more_with_503() {
    mt().block_on(async {
        let serve = ServeConfig {
            max_connections: 2,
            ..ServeConfig::default()
        };
        let host = start(HttpConfig::default(), serve).await;
        let mut c1 = TcpStream::connect(host.addr).await.unwrap();
        let mut c2 = TcpStream::connect(host.addr).await.unwrap();
        for c in [&mut c1, &mut c2] {
            c.write_all(&list_request("/mcp")).await.unwrap();
            assert_eq!(read_answer(c).await.expect("at the bound").status, 200);
        }
        let mut c3 = TcpStream::connect(host.addr).await.unwrap();
        c3.write_all(&list_request("/mcp")).await.unwrap();
        let a = read_answer(&mut c3).await.expect("a readable refusal");
        assert_eq!(
            (a.status, a.body.as_str()),
            (
                503,
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Server busy: too many connections"}}"#
            )
        );
        assert!(a.head.to_ascii_lowercase().contains("connection: close"), "{}", a.head);
        assert!(closed_within(&mut c3, Duration::from_secs(2)).await);
        // The served connections are untouched.
        c1.write_all(&list_request("/mcp")).await.unwrap();
        assert_eq!(read_answer(&mut c1).await.unwrap().status, 200);
        drop(c2);
        let mut served = false;
        for _ in 0..50 {
            let mut c4 = TcpStream::connect(host.addr).await.unwrap();
            c4.write_all(&list_request("/mcp")).await.unwrap();
            if read_answer(&mut c4).await.is_some_and(|a| a.status == 200) {
                served = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(served, "a freed slot is reused");
        host.stop().await;
    });
}

/// D1: `serve` answers one path, `/mcp` unless `HttpConfig::path` names another; every other
/// path is a plain 404 without a body.
#[test]
fn d1_serve_answers_one_path_and_404s_the_rest() {
    mt().block_on(async {
        let host = start(HttpConfig::default(), ServeConfig::default()).await;
        let mut s = TcpStream::connect(host.addr).await.unwrap();
        s.write_all(&list_request("/mcp")).await.unwrap();
        assert_eq!(read_answer(&mut s).await.unwrap().status, 200);
        for other in ["/", "/mcp/", "/other", "/MCP"] {
            let mut s = TcpStream::connect(host.addr).await.unwrap();
            s.write_all(&list_request(other)).await.unwrap();
            let a = read_answer(&mut s).await.unwrap();
            assert_eq!((a.status, a.body.as_str()), (404, ""), "{other}");
            assert!(
                !a.head.to_ascii_lowercase().contains("content-type"),
                "{other}"
            );
        }
        host.stop().await;

        let http = HttpConfig {
            path: Some("/rpc".into()),
            ..HttpConfig::default()
        };
        let host = start(http, ServeConfig::default()).await;
        for (path, status) in [("/rpc", 200), ("/mcp", 404)] {
            let mut s = TcpStream::connect(host.addr).await.unwrap();
            s.write_all(&list_request(path)).await.unwrap();
            assert_eq!(read_answer(&mut s).await.unwrap().status, status, "{path}");
        }
        host.stop().await;
    });
}

/// D1 behind a router: `McpHttp` as a `tower::Service` answers whatever path it is mounted
/// on after the router strips its prefix, as axum's `nest_service` does (`/api/mcp` →
/// `/mcp`, `/api` → `/`).
#[test]
fn d1_mounted_service_answers_the_path_a_router_leaves() {
    use http_body_util::{BodyExt, Full};
    use hyper::body::Bytes;
    use tower::ServiceExt as _;

    mt().block_on(async {
        let registry = RegistryBuilder::new()
            .tool(ToolDef::typed(
                "echo",
                |_i: Invocation, i: EchoIn| async move { Ok(EchoOut { text: i.text }) },
            ))
            .build()
            .unwrap();
        let server = Server::new(registry, ServerOptions::new().mode("direct")).unwrap();
        let mcp = McpHttp::new(server, HttpConfig::default());
        // The prefix-stripping layer, as nest_service applies it.
        let nested = tower::service_fn(move |mut request: hyper::Request<Full<Bytes>>| {
            let mcp = mcp.clone();
            async move {
                let path = request.uri().path();
                let Some(rest) = path.strip_prefix("/api") else {
                    return Ok::<_, std::convert::Infallible>(None);
                };
                let rest = if rest.is_empty() { "/" } else { rest };
                *request.uri_mut() = rest.parse().unwrap();
                Ok(Some(mcp.oneshot(request).await?))
            }
        });
        for path in ["/api/mcp", "/api"] {
            let request = hyper::Request::post(path)
                .header("host", "127.0.0.1")
                .header("accept", "application/json, text/event-stream")
                .header("content-type", "application/json")
                .header("mcp-protocol-version", PV)
                .header("mcp-method", "tools/list")
                .body(Full::new(Bytes::from(list_body())))
                .unwrap();
            let response = nested.clone().oneshot(request).await.unwrap().unwrap();
            assert_eq!(response.status(), 200, "{path}");
            let body = response.into_body().collect().await.unwrap().to_bytes();
            let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(body["result"]["tools"][0]["name"], "echo", "{path}");
        }
    });
}

/// B22, D31: an initialise-era client's `initialize` (no `MCP-Protocol-Version`, no modern
/// `_meta`) gets the same -32601 answer with the supported versions as on stdio, with HTTP
/// 404, not a header complaint.
#[test]
fn b22_legacy_initialize_over_http_is_32601_with_supported_versions() {
    mt().block_on(async {
        let host = start(HttpConfig::default(), ServeConfig::default()).await;
        for version in ["2025-06-18", "2025-11-25"] {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "legacy", "version": "1.0.0"}
            }})
            .to_string();
            let head = format!(
                "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json, text/event-stream\r\n\
                 Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                body.len()
            );
            let mut s = TcpStream::connect(host.addr).await.unwrap();
            s.write_all(head.as_bytes()).await.unwrap();
            s.write_all(body.as_bytes()).await.unwrap();
            let a = read_answer(&mut s).await.unwrap();
            assert_eq!(
                (a.status, a.body.as_str()),
                (
                    404,
                    r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found: initialize was removed in 2026-07-28","data":{"supported":["2026-07-28"]}}}"#
                ),
                "{version}"
            );
            assert!(
                a.head.to_ascii_lowercase().contains("content-type: application/json"),
                "{}",
                a.head
            );
        }
        // A modern request without the header is still refused (D33).
        let body = list_body();
        let head = list_head("/mcp", body.len()).replace("MCP-Protocol-Version: 2026-07-28\r\n", "");
        let mut s = TcpStream::connect(host.addr).await.unwrap();
        s.write_all(head.as_bytes()).await.unwrap();
        s.write_all(body.as_bytes()).await.unwrap();
        let a = read_answer(&mut s).await.unwrap();
        assert_eq!(
            (a.status, a.body.as_str()),
            (
                400,
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32020,"message":"Header mismatch: required header MCP-Protocol-Version is missing"}}"#
            )
        );
        host.stop().await;
    });
}

/// `MAX_DRAIN_TIME`: a refused body that keeps trickling is read away for at most that long,
/// then the host answers and closes; it is not held open by a slow sender.
#[test]
fn o36_drain_stops_after_max_drain_time() {
    mt().block_on(async {
        let host = start(HttpConfig::default(), ServeConfig::default()).await;
        let declared = 3 * 1024 * 1024;
        let mut s = TcpStream::connect(host.addr).await.unwrap();
        let mut request = list_head("/mcp", declared).into_bytes();
        // Past the 2 MiB cap at once, then one byte every 50 ms (well within the body time-out).
        request.resize(request.len() + 2 * 1024 * 1024 + 1, b' ');
        s.write_all(&request).await.unwrap();
        let refused = Instant::now();
        let (mut rd, mut wr) = s.split();
        let trickle = async {
            loop {
                tokio::time::sleep(Duration::from_millis(50)).await;
                if wr.write_all(b" ").await.is_err() {
                    return;
                }
            }
        };
        let ended = async {
            let mut sink = [0u8; 4096];
            while let Ok(n) = rd.read(&mut sink).await {
                if n == 0 {
                    break;
                }
            }
            refused.elapsed()
        };
        let waited = tokio::select! {
            () = trickle => unreachable!("the trickle only ends when the host closes"),
            waited = ended => waited,
        };
        // Without the drain bound the trickle would hold the connection open for ever; the
        // upper bound only tells "stopped" from that, with 5 s of room for a loaded machine
        // (it was MAX_DRAIN_TIME * 2, a 2 s margin).
        assert!(
            waited >= MAX_DRAIN_TIME - Duration::from_millis(100)
                && waited < MAX_DRAIN_TIME + Duration::from_secs(5),
            "{waited:?}"
        );
        host.stop().await;
    });
}

/// Refused connections: at most `MAX_LINGERING_REFUSALS` linger at once, and one more is
/// closed at once without an answer; a client that closes ends its linger, so a refused
/// connection gets its 503 again long before the (longest) linger would end.
#[test]
fn max_lingering_refusals_bounds_refused_connections() {
    mt().block_on(async {
        // The longest linger: however slowly the connections below are made, none has
        // stopped lingering when the one past the bound comes.
        let (host, _held) = host_at_capacity(MAX_REFUSAL_LINGER).await;
        let started = Instant::now();
        let mut lingering = Vec::new();
        for _ in 0..MAX_LINGERING_REFUSALS {
            lingering.push(TcpStream::connect(host.addr).await.unwrap());
        }
        for s in &mut lingering {
            assert_eq!(
                read_answer(s).await.expect("a 503 at the bound").status,
                503
            );
        }
        let mut one_more = TcpStream::connect(host.addr).await.unwrap();
        let mut answer = Vec::new();
        let _ = tokio::time::timeout(
            Duration::from_millis(500),
            one_more.read_to_end(&mut answer),
        )
        .await
        .expect("closed at once");
        assert!(
            started.elapsed() < MAX_REFUSAL_LINGER,
            "setup too slow to test the bound: {:?}",
            started.elapsed()
        );
        assert!(answer.is_empty(), "{}", String::from_utf8_lossy(&answer));
        // The clients close: the host reads their end and lets go, and a refused connection
        // gets its 503 again (the host may not have seen every close by the first try).
        drop(lingering);
        let mut again = None;
        for _ in 0..100 {
            let mut s = TcpStream::connect(host.addr).await.unwrap();
            if let Some(a) = read_answer(&mut s).await {
                again = Some(a.status);
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(again, Some(503));
        assert!(
            started.elapsed() < MAX_REFUSAL_LINGER,
            "freed by the closes, not by the linger: {:?}",
            started.elapsed()
        );
        host.stop().await;
    });
}

/// When the host lets go of a refused connection whose client stays silent after its 503: a
/// byte the host no longer reads away is answered with a reset, which fails the write after
/// it. Probes every 5 ms; `None` when nothing fails within `CLOSE_WAIT` (a hang stopper).
async fn let_go(s: &mut TcpStream) -> Option<Instant> {
    let until = Instant::now() + CLOSE_WAIT;
    while Instant::now() < until {
        if s.write_all(b"x").await.is_err() {
            return Some(Instant::now());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    None
}

/// Issue #23 (the connection cap's clear refusal): `ServeConfig::refusal_linger` is the
/// host's: a refused client that stays silent after its 503 is held for the configured
/// 50 ms, not less (its clock starts before the connect, so the host's linger can only end
/// later than the test measures) and not the default `REFUSAL_LINGER` (1 s); zero lets it
/// go at once, its 503 still written whole.
#[test]
fn refusal_linger_is_the_configured_time() {
    mt().block_on(async {
        const SHORT: Duration = Duration::from_millis(50);
        for linger in [SHORT, Duration::ZERO] {
            let (host, _held) = host_at_capacity(linger).await;
            let started = Instant::now();
            let mut refused = TcpStream::connect(host.addr).await.unwrap();
            let a = read_answer(&mut refused).await.expect("a readable refusal");
            assert_eq!(
                (a.status, a.body.as_str()),
                (
                    503,
                    r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Server busy: too many connections"}}"#
                )
            );
            let held_for = let_go(&mut refused).await.expect("let go") - started;
            assert!(
                held_for >= linger && held_for < REFUSAL_LINGER,
                "linger {linger:?}: held for {held_for:?}"
            );
            host.stop().await;
        }
    });
}

/// Issue #23: `ServeConfig::default()` lingers `REFUSAL_LINGER` (1 s), within
/// `MAX_REFUSAL_LINGER`.
#[test]
fn refusal_linger_defaults_to_refusal_linger() {
    assert_eq!(ServeConfig::default().refusal_linger, REFUSAL_LINGER);
    assert_eq!(REFUSAL_LINGER, Duration::from_secs(1));
    assert!(REFUSAL_LINGER <= MAX_REFUSAL_LINGER);
}

/// A response that takes longer than the header and idle time-outs is not cut and leaves the
/// connection open: the request is in flight (not idle), and hyper's header timer runs only
/// while it waits for a request.
#[test]
fn long_call_outlives_header_and_idle_timeouts() {
    mt().block_on(async {
        let serve = ServeConfig {
            header_read_timeout: Duration::from_millis(300),
            idle_timeout: Duration::from_millis(300),
            ..ServeConfig::default()
        };
        let host = start(HttpConfig::default(), serve).await;
        let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "slow", "arguments": {"text": "late"},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": PV,
                "io.modelcontextprotocol/clientCapabilities": {}
            }
        }})
        .to_string();
        let head = list_head("/mcp", body.len()).replace(
            "Mcp-Method: tools/list\r\n",
            "Mcp-Method: tools/call\r\nMcp-Name: slow\r\n",
        );
        let mut s = TcpStream::connect(host.addr).await.unwrap();
        let started = Instant::now();
        s.write_all(head.as_bytes()).await.unwrap();
        s.write_all(body.as_bytes()).await.unwrap();
        let a = read_answer(&mut s).await.expect("the slow call's answer");
        assert!(started.elapsed() >= SLOW_CALL);
        assert_eq!(a.status, 200, "{}", a.body);
        assert!(a.body.contains("late"), "{}", a.body);
        // Not counted as idle while the call ran: the connection is still open for the next.
        s.write_all(&list_request("/mcp")).await.unwrap();
        assert_eq!(read_answer(&mut s).await.expect("kept alive").status, 200);
        host.stop().await;
    });
}

/// The HTTP/2 connection preface (RFC 9113 §3.4) a prior-knowledge client opens with.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The first bytes a connection answers the HTTP/2 preface with, read until the peer closes
/// or `CLOSE_WAIT` passes (only a hang stopper).
async fn answer_to_preface(host: &Host) -> Vec<u8> {
    let mut s = TcpStream::connect(host.addr).await.unwrap();
    s.write_all(H2_PREFACE).await.unwrap();
    // An empty SETTINGS frame: what a client sends right after the preface.
    s.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    // Nine bytes are a whole frame header: enough to tell an HTTP/2 answer from none.
    while got.len() < 9 {
        match tokio::time::timeout(CLOSE_WAIT, s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Err(_) => panic!("neither an answer nor a close to the HTTP/2 preface"),
        }
    }
    got
}

/// `ServeConfig::http2` (default `DEFAULT_HTTP2` = true): on, a connection that opens with the
/// HTTP/2 preface is answered with the server's SETTINGS frame (frame type 4); off, it is closed
/// without a byte, and HTTP/1.1 is served exactly as before on both.
#[test]
fn http2_switch_off_closes_an_h2_preface_and_serves_http1() {
    mt().block_on(async {
        assert_eq!(
            ServeConfig::default().http2,
            strict_mcp::server::http::DEFAULT_HTTP2
        );
        assert!(ServeConfig::default().http2);
        for http2 in [true, false] {
            let serve = ServeConfig {
                http2,
                ..ServeConfig::default()
            };
            let host = start(HttpConfig::default(), serve).await;
            let answer = answer_to_preface(&host).await;
            if http2 {
                assert!(answer.len() >= 9, "{answer:?}");
                assert_eq!(answer[3], 4, "a SETTINGS frame first: {answer:?}");
            } else {
                assert_eq!(answer, b"", "closed without an answer");
            }
            let mut s = TcpStream::connect(host.addr).await.unwrap();
            for _ in 0..2 {
                s.write_all(&list_request("/mcp")).await.unwrap();
                let a = read_answer(&mut s).await.expect("an HTTP/1.1 answer");
                assert_eq!(a.status, 200, "http2 {http2}: {}", a.body);
                assert!(a.head.starts_with("HTTP/1.1 200"), "{}", a.head);
                assert!(a.body.contains(r#""name":"echo""#), "{}", a.body);
            }
            host.stop().await;
        }
    });
}
