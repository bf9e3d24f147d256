//! Session-level notifications of the initialise era (feature `legacy`, issue #18):
//! `resources/subscribe` / `unsubscribe`, `notifications/resources/updated` for subscribed
//! URIs only, the list changes, on stdout (stdio) and on the session's standalone GET stream
//! (legacy HTTP) with its bound at and past it; DELETE ends the stream. Exact bytes; nothing
//! listens (in-process pipes, the HTTP service called directly).
#![forbid(unsafe_code)]

use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Request, Response};
use strict_mcp::core::descriptor::ResourceContents;
use strict_mcp::core::{Caller, ReadReply, Registry, RegistryBuilder, ResourceDef};
use strict_mcp::server::http::{HttpBody, HttpConfig, McpHttp};
use strict_mcp::server::legacy::notify::MAX_STREAMS_PER_SESSION;
use strict_mcp::server::legacy::sessions::STREAM_CONFLICT_STATUS;
use strict_mcp::server::{Server, ServerOptions};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

mod support;

use support::evidence::Outcome;

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"old","version":"1"}}}"#;
const SUBSCRIBE: &str =
    r#"{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"mem://w"}}"#;
const UNSUBSCRIBE: &str =
    r#"{"jsonrpc":"2.0","id":2,"method":"resources/unsubscribe","params":{"uri":"mem://w"}}"#;
const UPDATED: &str =
    r#"{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"mem://w"}}"#;

fn registry() -> Registry {
    RegistryBuilder::new()
        .resource(ResourceDef::new("mem://w", "w", |_inv, uri| async move {
            Ok(ReadReply::new(vec![ResourceContents::text(uri, "w")]))
        }))
        .build()
        .expect("registry builds")
}

fn server(options: ServerOptions) -> Server {
    Server::new(
        registry(),
        options
            .legacy_era(true)
            .server_info("legacy-notify", "1.0.0"),
    )
    .expect("server builds")
}

struct Stdio {
    writer: DuplexStream,
    lines: Lines<BufReader<DuplexStream>>,
}

impl Stdio {
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

    async fn exchange(&mut self, line: &str) -> String {
        self.send(line).await;
        self.recv().await
    }
}

fn stdio(server: &Server) -> Stdio {
    let server = server.clone();
    let (client_w, server_r) = tokio::io::duplex(1 << 20);
    let (server_w, client_r) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        server
            .run_stdio_on(Caller::new("alice"), server_r, server_w)
            .await
    });
    Stdio {
        writer: client_w,
        lines: BufReader::new(client_r).lines(),
    }
}

/// A subscribed URI's update reaches the session; after `unsubscribe` it does not; list
/// changes always do; `resources.subscribe` and `listChanged` are declared.
#[tokio::test]
async fn legacy_stdio_subscriptions_and_list_changes_reach_the_session() {
    let rec = support::evidence::recorder!();
    let server = server(ServerOptions::new());
    let mut p = stdio(&server);
    assert_eq!(
        p.exchange(INIT).await,
        r#"{"jsonrpc":"2.0","id":0,"result":{"capabilities":{"completions":{},"logging":{},"resources":{"listChanged":true,"subscribe":true}},"protocolVersion":"2025-11-25","serverInfo":{"name":"legacy-notify","version":"1.0.0"}}}"#
    );
    assert_eq!(
        p.exchange(SUBSCRIBE).await,
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#
    );
    server.resource_updated("mem://other");
    server.resource_updated("mem://w");
    assert_eq!(p.recv().await, UPDATED);
    assert_eq!(
        p.exchange(UNSUBSCRIBE).await,
        r#"{"jsonrpc":"2.0","id":2,"result":{}}"#
    );
    server.resource_updated("mem://w");
    server.replace_registry(registry());
    assert_eq!(
        p.recv().await,
        r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}"#
    );
    assert_eq!(
        p.recv().await,
        r#"{"jsonrpc":"2.0","method":"notifications/prompts/list_changed","params":{}}"#
    );
    assert_eq!(
        p.recv().await,
        r#"{"jsonrpc":"2.0","method":"notifications/resources/list_changed","params":{}}"#
    );
    assert_eq!(
        p.exchange(r#"{"jsonrpc":"2.0","id":3,"method":"resources/subscribe","params":{"uri":7}}"#)
            .await,
        r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"uri must be a string"}}"#
    );
    assert_eq!(
        p.exchange(r#"{"jsonrpc":"2.0","id":4,"method":"resources/unsubscribe","params":{}}"#)
            .await,
        r#"{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"uri must be a string"}}"#
    );
    // Contract evidence (transport `legacy-stdio-server`): each answered and refused above.
    for method in ["resources/subscribe", "resources/unsubscribe"] {
        rec.observed("legacy-stdio-server", method, Outcome::Result);
        rec.observed("legacy-stdio-server", method, Outcome::Error);
    }
}

// ---------------------------------------------------------------------------------------
// Streamable HTTP

fn http(method: &str, headers: &[(&str, &str)], body: &str) -> Request<Full<Bytes>> {
    let mut b = Request::builder()
        .method(method)
        .uri("http://127.0.0.1/mcp")
        .header("host", "127.0.0.1")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(Full::new(Bytes::from(body.to_owned()))).unwrap()
}

async fn whole(response: Response<HttpBody>) -> (u16, String) {
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

/// The next SSE event's data (keep-alives skipped); `None` at the end of the body.
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

/// The session's GET stream carries its subscriptions' updates; the stream bound holds at
/// [`MAX_STREAMS_PER_SESSION`] and one past it (409), a closed stream frees its place, and
/// DELETE ends the stream.
#[tokio::test]
async fn legacy_http_the_get_stream_carries_updates_within_its_bound() {
    let rec = support::evidence::recorder!();
    let server = server(ServerOptions::new());
    let host = McpHttp::new(server.clone(), HttpConfig::default());
    let r = host.handle(http("POST", &[], INIT)).await;
    let session = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let (status, body) = whole(r).await;
    assert_eq!(
        (status, body.as_str()),
        (
            200,
            r#"{"jsonrpc":"2.0","id":0,"result":{"capabilities":{"completions":{},"logging":{},"resources":{"listChanged":true,"subscribe":true}},"protocolVersion":"2025-11-25","serverInfo":{"name":"legacy-notify","version":"1.0.0"}}}"#
        )
    );
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let mut streams = Vec::new();
    for _ in 0..MAX_STREAMS_PER_SESSION {
        let r = host.handle(http("GET", &headers, "")).await;
        assert_eq!(r.status().as_u16(), 200);
        assert_eq!(r.headers()["content-type"], "text/event-stream");
        streams.push(r.into_body());
    }
    let (status, body) = whole(host.handle(http("GET", &headers, "")).await).await;
    assert_eq!(
        (status, body.as_str()),
        (
            STREAM_CONFLICT_STATUS,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"a standalone stream is already open for this session"}}"#
        )
    );
    // The client leaves: its place is free again.
    drop(streams.pop());
    let mut stream = host.handle(http("GET", &headers, "")).await.into_body();
    assert_eq!(
        whole(host.handle(http("POST", &headers, SUBSCRIBE)).await).await,
        (200, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_owned())
    );
    server.resource_updated("mem://w");
    assert_eq!(next_event(&mut stream).await.as_deref(), Some(UPDATED));
    assert_eq!(
        whole(host.handle(http("POST", &headers, UNSUBSCRIBE)).await).await,
        (200, r#"{"jsonrpc":"2.0","id":2,"result":{}}"#.to_owned())
    );
    for method in ["resources/subscribe", "resources/unsubscribe"] {
        let bad =
            format!(r#"{{"jsonrpc":"2.0","id":5,"method":"{method}","params":{{"uri":[]}}}}"#);
        assert_eq!(
            whole(host.handle(http("POST", &headers, &bad)).await).await,
            (
                200,
                r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"uri must be a string"}}"#
                    .to_owned()
            )
        );
        // Contract evidence (transport `legacy-http-server`): answered and refused.
        rec.observed("legacy-http-server", method, Outcome::Result);
        rec.observed("legacy-http-server", method, Outcome::Error);
    }
    assert_eq!(
        whole(host.handle(http("DELETE", &headers, "")).await).await,
        (204, String::new())
    );
    assert_eq!(
        next_event(&mut stream).await,
        None,
        "DELETE ends the stream"
    );
    // An ended session's GET is 404.
    let (status, _) = whole(host.handle(http("GET", &headers, "")).await).await;
    assert_eq!(status, 404);
}

/// Stateless legacy HTTP has no sessions: subscriptions are not served (nor declared) and
/// GET is the modern 405.
#[tokio::test]
async fn legacy_http_stateless_mode_serves_no_subscriptions() {
    let server = server(ServerOptions::new().legacy_http(
        strict_mcp::server::legacy::LegacyHttpConfig {
            stateless: true,
            ..Default::default()
        },
    ));
    let host = McpHttp::new(server, HttpConfig::default());
    let (_, init) = whole(host.handle(http("POST", &[], INIT)).await).await;
    assert!(init.contains(r#""resources":{}"#), "{init}");
    let (status, body) = whole(
        host.handle(http(
            "POST",
            &[("mcp-protocol-version", "2025-11-25")],
            SUBSCRIBE,
        ))
        .await,
    )
    .await;
    assert_eq!(status, 200);
    assert!(body.contains(r#""code":-32601"#), "{body}");
    let (status, _) = whole(
        host.handle(http("GET", &[("mcp-session-id", "x")], ""))
            .await,
    )
    .await;
    assert_eq!(status, 405);
}
