//! Host and Origin refusals explain themselves (D34, D35): a 403 with a short `text/plain`
//! body naming the check (no configuration, no echoed value) and an `info` event with the
//! reason and the refused value. Its own binary: it installs a global subscriber.
#![forbid(unsafe_code)]
#![cfg(all(feature = "http", feature = "cli"))]

mod support;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::Request;
use strict_mcp::core::{Invocation, RegistryBuilder, ToolDef};
use strict_mcp::server::http::{HttpConfig, McpHttp};
use strict_mcp::server::{Server, ServerOptions};
use support::logs::Layout;
use tower::ServiceExt as _;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Empty {}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Done {
    /// Always true.
    done: bool,
}

const HOST_BODY: &str = "Forbidden: the Host header names a host this server is not configured \
to answer (DNS rebinding protection).\n";
const MISSING_BODY: &str = "Forbidden: the request names no host (Host header); this server \
answers only the host names it is configured for.\n";
const ORIGIN_BODY: &str = "Forbidden: the Origin header names a browser origin this server \
does not allow.\n";

async fn answer(
    mcp: &McpHttp<Server>,
    host: Option<&str>,
    origin: Option<&str>,
) -> (u16, String, String) {
    let mut request = Request::post("/mcp")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    if let Some(host) = host {
        request = request.header("host", host);
    }
    if let Some(origin) = origin {
        request = request.header("origin", origin);
    }
    let response = mcp
        .clone()
        .oneshot(request.body(Full::new(Bytes::from_static(b"{}"))).unwrap())
        .await
        .unwrap();
    let status = response.status().as_u16();
    let kind = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, kind, String::from_utf8(body.to_vec()).unwrap())
}

#[tokio::test]
async fn d34_d35_refusals_name_the_check_in_body_and_log() {
    let logs = support::logs::capture(tracing::Level::INFO, Layout::Full);
    let registry = RegistryBuilder::new()
        .tool(ToolDef::typed("done", |_: Invocation, _: Empty| async {
            Ok(Done { done: true })
        }))
        .build()
        .unwrap();
    let server = Server::new(registry, ServerOptions::new()).unwrap();
    let mcp = McpHttp::new(server, HttpConfig::default());
    let plain = "text/plain; charset=utf-8";

    let got = answer(&mcp, Some("attacker.example:8080"), None).await;
    assert_eq!(got, (403, plain.to_owned(), HOST_BODY.to_owned()));
    let got = answer(&mcp, None, None).await;
    assert_eq!(got, (403, plain.to_owned(), MISSING_BODY.to_owned()));
    let got = answer(&mcp, Some("127.0.0.1"), Some("https://evil.example")).await;
    assert_eq!(got, (403, plain.to_owned(), ORIGIN_BODY.to_owned()));
    // The logged value is bounded at 128 bytes (MAX_LOGGED_HEADER_VALUE): 128 kept, 129 not.
    let long = "h".repeat(129);
    assert_eq!(answer(&mcp, Some(&long), None).await.2, HOST_BODY);
    // A request that passes both checks is not refused by them (406/415/400 come later).
    assert_ne!(answer(&mcp, Some("127.0.0.1"), None).await.0, 403);

    let text = logs.text();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("request refused with 403"))
        .collect();
    assert_eq!(lines.len(), 4, "{text}");
    let logged = format!("value=\"{}\"", "h".repeat(128));
    assert!(lines[3].ends_with(&logged), "{}", lines[3]);
    assert!(
        lines[0].contains("reason=\"host_not_allowed\"")
            && lines[0].contains("attacker.example:8080"),
        "{}",
        lines[0]
    );
    assert!(lines[1].contains("reason=\"host_missing\""), "{}", lines[1]);
    assert!(
        lines[2].contains("reason=\"origin_not_allowed\"")
            && lines[2].contains("https://evil.example"),
        "{}",
        lines[2]
    );
    assert!(lines.iter().all(|l| l.contains(" INFO ")), "{text}");
}
