//! `server::http::serve` runs any `tower::Service` that names its paths (`Endpoint`): the
//! OAuth layer or an application's own middleware sits in front of `McpHttp` in the ready
//! accept loop, which keeps its one-path rule (D1) and answers a failing or panicking
//! middleware with one -32603 (O9, O2).
#![forbid(unsafe_code)]
#![cfg(all(feature = "http", feature = "auth"))]

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::json;
use strict_mcp::core::{Caller, Invocation, RegistryBuilder, ToolDef};
use strict_mcp::server::auth::{
    AuthConfig, AuthLayer, BearerToken, BoxFuture, Principal, TokenVerifier, VerifyError,
};
use strict_mcp::server::http::{
    serve, serve_with, Endpoint, HttpConfig, McpHttp, OnPaths, ServeConfig,
    DEFAULT_MAX_REQUESTS_IN_FLIGHT,
};
use strict_mcp::server::{Server, ServerOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tower::Layer as _;

mod support;

use support::evidence::{Outcome as Seen, Recorder};

const PV: &str = "2026-07-28";

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct WhoIn {}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct WhoOut {
    /// The caller the request ran as.
    principal: String,
}

/// Holds `hold` calls until the test adds permits.
static GATE: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(0);

fn server() -> Server {
    let registry = RegistryBuilder::new()
        .tool(ToolDef::typed(
            "hold",
            |_: Invocation, _: WhoIn| async move {
                GATE.acquire().await.unwrap().forget();
                Ok(WhoOut {
                    principal: "held".into(),
                })
            },
        ))
        .tool(ToolDef::typed(
            "whoami",
            |inv: Invocation, _: WhoIn| async move {
                Ok(WhoOut {
                    principal: inv.caller().principal().unwrap_or("anonymous").to_owned(),
                })
            },
        ))
        .build()
        .unwrap();
    Server::new(registry, ServerOptions::new().mode("direct")).unwrap()
}

/// Accepts the token `good` as subject `ada`.
struct OneToken;

impl TokenVerifier for OneToken {
    fn verify<'a>(
        &'a self,
        token: &'a BearerToken,
    ) -> BoxFuture<'a, Result<Principal, VerifyError>> {
        let ok = token.expose() == "good";
        Box::pin(async move {
            if ok {
                Ok(Principal::new("ada").with_scopes(["mcp"]))
            } else {
                Err(VerifyError::BadSignature)
            }
        })
    }
}

/// Runs `serve` with `service` on a loopback port; the task ends when the test does.
async fn start<S, B>(service: S) -> SocketAddr
where
    S: Endpoint
        + tower::Service<hyper::Request<hyper::body::Incoming>, Response = hyper::Response<B>>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: hyper::body::Body<Data = hyper::body::Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, service, std::future::pending()));
    addr
}

fn call(path: &str, extra: &str) -> Vec<u8> {
    call_tool(path, "whoami", extra)
}

fn call_tool(path: &str, tool: &str, extra: &str) -> Vec<u8> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": tool, "arguments": {}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": PV,
        "io.modelcontextprotocol/clientCapabilities": {}
    }}})
    .to_string();
    format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\nMCP-Protocol-Version: {PV}\r\nMcp-Method: tools/call\r\n\
         Mcp-Name: {tool}\r\n{extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// One `Content-Length` framed answer: status and body.
async fn exchange(addr: SocketAddr, request: &[u8]) -> (u16, String) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(request).await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), async {
        let mut buf = Vec::new();
        let mut byte = [0u8; 1];
        while !buf.ends_with(b"\r\n\r\n") {
            assert_eq!(
                s.read(&mut byte).await.unwrap(),
                1,
                "connection ended early"
            );
            buf.push(byte[0]);
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
        s.read_exact(&mut body).await.unwrap();
        (status, String::from_utf8(body).unwrap())
    })
    .await
    .expect("an answer within 10 s")
}

/// Contract evidence (transport `http-server`): what `request` asked and how `exchange`'s
/// answer `(status, body)` ended. A POST is its body's method: a JSON-RPC answer to its id is
/// a result or an error, and a refusal before dispatch without a body (401, 403, 405) an
/// error; a GET of the metadata document is `GET <well-known prefix>`, answered 2xx or
/// refused. Anything else (a 404 of another path, a 500 of a broken middleware) is not an
/// operation's answer and is not recorded.
fn observe(rec: &Recorder, request: &[u8], (status, body): &(u16, String)) {
    let text = String::from_utf8_lossy(request);
    let refused = matches!(status, 401 | 403 | 405) && body.is_empty();
    if text.starts_with("GET /.well-known/oauth-protected-resource") {
        let op = format!("GET {}", strict_mcp::server::auth::WELL_KNOWN_PREFIX);
        if (200..300).contains(status) {
            rec.observed("http-server", &op, Seen::Result);
        } else if refused {
            rec.observed("http-server", &op, Seen::Error);
        }
        return;
    }
    let Some((_, sent)) = text.split_once("\r\n\r\n") else {
        return;
    };
    let Ok(sent) = serde_json::from_str::<serde_json::Value>(sent) else {
        return;
    };
    let Some(method) = sent["method"].as_str() else {
        return;
    };
    let got: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    if got["id"] == sent["id"] && got.get("result").is_some() {
        rec.observed("http-server", method, Seen::Result);
    } else if (got["id"] == sent["id"] && got.get("error").is_some()) || refused {
        rec.observed("http-server", method, Seen::Error);
    }
}

/// [`exchange`], recorded on `rec`.
async fn recorded(rec: &Recorder, addr: SocketAddr, request: &[u8]) -> (u16, String) {
    let answer = exchange(addr, request).await;
    observe(rec, request, &answer);
    answer
}

fn principal_of(body: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(body).unwrap();
    v["result"]["structuredContent"]["value"]["principal"]
        .as_str()
        .unwrap_or_else(|| panic!("no principal in {body}"))
        .to_owned()
}

/// O9: `AuthLayer` in front of `McpHttp` under `serve`: the token's subject is the caller,
/// a missing token is 401, the metadata path is let through, any other path is 404 (D1).
#[tokio::test]
async fn o9_serve_runs_the_auth_layer_in_front() {
    let rec = support::evidence::recorder!();
    let config = AuthConfig::builder("http://127.0.0.1:8123/mcp")
        .authorization_server("http://127.0.0.1:9000")
        .build()
        .unwrap();
    let service = AuthLayer::new(config, OneToken).layer(McpHttp::new(
        server(),
        HttpConfig {
            path: Some("/mcp".into()),
            ..HttpConfig::default()
        },
    ));
    assert_eq!(
        service.paths(),
        [
            "/mcp",
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-protected-resource"
        ]
    );
    let addr = start(service).await;
    let (status, body) =
        recorded(&rec, addr, &call("/mcp", "Authorization: Bearer good\r\n")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(principal_of(&body), "ada");
    assert_eq!(recorded(&rec, addr, &call("/mcp", "")).await.0, 401);
    assert_eq!(
        recorded(&rec, addr, &call("/mcp", "Authorization: Bearer bad\r\n"))
            .await
            .0,
        401
    );
    let metadata =
        b"GET /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    let (status, body) = recorded(&rec, addr, metadata).await;
    assert_eq!(status, 200);
    assert!(
        body.contains(r#""resource":"http://127.0.0.1:8123/mcp""#),
        "{body}"
    );
    let (status, body) = recorded(
        &rec,
        addr,
        &call("/other", "Authorization: Bearer good\r\n"),
    )
    .await;
    assert_eq!((status, body.as_str()), (404, ""));
}

/// O9, D1: any middleware (here one that sets the `Caller` itself) runs under `serve` when
/// wrapped in `OnPaths`; the loop answers only the named paths.
#[tokio::test]
async fn d1_serve_runs_any_middleware_on_the_named_paths() {
    let rec = support::evidence::recorder!();
    let mcp = McpHttp::new(server(), HttpConfig::default());
    let stack = tower::ServiceBuilder::new()
        .map_request(|mut r: hyper::Request<hyper::body::Incoming>| {
            r.extensions_mut().insert(Caller::new("bob"));
            r
        })
        .service(mcp);
    let addr = start(OnPaths::new(["/rpc"], stack)).await;
    let (status, body) = recorded(&rec, addr, &call("/rpc", "")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(principal_of(&body), "bob");
    assert_eq!(
        recorded(&rec, addr, &call("/mcp", "")).await,
        (404, String::new())
    );
}

/// The exact answer to a middleware that fails or panics: one JSON-RPC -32603, no cause.
const INTERNAL: &str =
    r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}"#;

/// O2: a middleware error becomes 500 with one -32603 (`"id": null`), never a reset; the
/// private cause stays in the log.
#[tokio::test]
async fn o2_a_failing_middleware_is_answered_internal_error() {
    let failing = tower::service_fn(|_: hyper::Request<hyper::body::Incoming>| async {
        Err::<hyper::Response<String>, _>(std::io::Error::other("db password wrong"))
    });
    let addr = start(OnPaths::new(["/mcp"], failing)).await;
    assert_eq!(
        exchange(addr, &call("/mcp", "")).await,
        (500, INTERNAL.to_owned())
    );
}

/// O2: a middleware that panics gets the same answer, and the loop keeps serving.
#[tokio::test]
async fn o2_a_panicking_middleware_is_answered_internal_error() {
    let panicking = tower::service_fn(|r: hyper::Request<hyper::body::Incoming>| async move {
        assert!(r.uri().path() != "/mcp", "middleware bug");
        Ok::<_, std::convert::Infallible>(hyper::Response::new(String::new()))
    });
    let addr = start(OnPaths::new(["/mcp"], panicking)).await;
    for _ in 0..2 {
        assert_eq!(
            exchange(addr, &call("/mcp", "")).await,
            (500, INTERNAL.to_owned())
        );
    }
}

/// Production knob: at most `max_requests_in_flight` requests run at once over all
/// connections; at the bound (2) both run, one past it is answered 503 with `Retry-After`
/// and one -32603 without reaching the service; once they finish, requests run again.
#[tokio::test]
async fn serve_bounds_requests_in_flight_at_the_limit_and_one_past() {
    assert_eq!(
        ServeConfig::default().max_requests_in_flight,
        DEFAULT_MAX_REQUESTS_IN_FLIGHT
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let config = ServeConfig {
        max_requests_in_flight: 2,
        ..ServeConfig::default()
    };
    let mcp = McpHttp::new(server(), HttpConfig::default());
    tokio::spawn(serve_with(listener, mcp, config, std::future::pending()));
    let held: Vec<_> = (0..2)
        .map(|_| tokio::spawn(async move { exchange(addr, &call_tool("/mcp", "hold", "")).await }))
        .collect();
    // Let both held calls reach their handlers, which wait on the gate.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(&call("/mcp", "")).await.unwrap();
    let mut raw = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut raw))
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8_lossy(&raw[..n]).to_string();
    assert!(text.starts_with("HTTP/1.1 503"), "{text}");
    assert!(
        text.to_ascii_lowercase().contains("retry-after: 1\r\n"),
        "{text}"
    );
    assert!(
        text.ends_with(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Server busy: too many requests in flight"}}"#),
        "{text}"
    );
    GATE.add_permits(2);
    for h in held {
        let (status, body) = h.await.unwrap();
        assert_eq!(status, 200, "{body}");
        assert_eq!(principal_of(&body), "held");
    }
    let (status, body) = exchange(addr, &call("/mcp", "")).await;
    assert_eq!(status, 200, "{body}");
}
