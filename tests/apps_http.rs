//! The Apps hints and shell over stateless Streamable HTTP (O62, O64, X9): a loopback host
//! answers `tools/list` and the shell read with the same bytes as the in-memory server, with
//! no retained client capability.
#![forbid(unsafe_code)]
#![cfg(feature = "http")]

mod support;

use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Request, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use strict_mcp::core::{Invocation, RegistryBuilder, ToolDef, ToolError};
use strict_mcp::server::http::{serve, HttpConfig, McpHttp};
use strict_mcp::server::{Apps, Server, ServerOptions};
use support::harness::serve_one;
use tokio::net::TcpListener;

const PV: &str = "2026-07-28";
const URI: &str = "ui://http/shell";

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct In {}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Out {
    ok: bool,
}

fn server() -> Server {
    let registry = RegistryBuilder::new()
        .tool(ToolDef::typed("t", |_i: Invocation, _in: In| async move {
            Ok::<_, ToolError>(Out { ok: true })
        }))
        .build()
        .unwrap();
    let apps = Apps {
        uri: URI.to_owned(),
        html: "<!doctype html><p>over http</p>".to_owned(),
        views: vec!["v".to_owned()],
        ..Apps::default()
    };
    Server::new(registry, ServerOptions::new().apps(apps)).unwrap()
}

fn params(extra: Value) -> Value {
    let mut params = extra;
    params["_meta"] = serde_json::from_str(support::harness::META).unwrap();
    params
}

#[tokio::test]
async fn o62_o64_x9_hints_and_shell_over_stateless_http_match_in_memory() {
    let server = server();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let service = McpHttp::new(
        server.clone(),
        HttpConfig {
            path: Some("/mcp".into()),
            ..HttpConfig::default()
        },
    );
    let run = tokio::spawn(serve(listener, service, async {
        let _ = stopped.await;
    }));
    let client = Client::builder(TokioExecutor::new()).build_http();
    for (method, name, extra) in [
        ("tools/list", None, json!({})),
        ("resources/read", Some(URI), json!({"uri": URI})),
    ] {
        let body =
            json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params(extra.clone())});
        let mut request = Request::post(format!("http://{addr}/mcp"))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", PV)
            .header("mcp-method", method);
        if let Some(name) = name {
            request = request.header("mcp-name", name);
        }
        let response = tokio::time::timeout(
            Duration::from_secs(10),
            client.request(
                request
                    .body(Full::new(Bytes::from(body.to_string())))
                    .unwrap(),
            ),
        )
        .await
        .expect("answered in time")
        .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let text = String::from_utf8(bytes.to_vec()).unwrap();
        let (_, in_memory) = serve_one(&server, "anonymous", 1, method, params(extra)).await;
        assert_eq!(text.trim_end(), in_memory.line, "{method}");
    }
    let _ = stop.send(());
    tokio::time::timeout(Duration::from_secs(5), run)
        .await
        .expect("accept loop ends")
        .unwrap()
        .unwrap();
}
