//! One request, one pass: the caller's policy answers once per `tools/call` (O3, O23, O28), in
//! both publication modes and for every access level, and the answer it gave is the one the
//! reply follows.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::{json, Value};
use strict_mcp::core::{
    Access, Caller, DynamicOutput, Invocation, Policy, RegistryBuilder, ToolDef,
};
use strict_mcp::server::{Server, ServerOptions};
use support::harness::InMemory;

/// Counts every tool decision; `open` is allowed, `listed` list-only, `secret` hidden.
#[derive(Default)]
struct Counting(Arc<AtomicUsize>);

impl Policy for Counting {
    fn tool(&self, _caller: &Caller, name: &str) -> Access {
        self.0.fetch_add(1, Ordering::SeqCst);
        match name {
            "listed" => Access::ListOnly,
            "secret" => Access::Hidden,
            _ => Access::Allowed,
        }
    }
}

fn tool(name: &str) -> ToolDef {
    ToolDef::dynamic(
        name,
        r#"{"type":"object"}"#,
        None,
        |_inv: Invocation, _args: Box<RawValue>| async move {
            Ok(DynamicOutput {
                content: vec![],
                structured: Some(RawValue::from_string(r#"{"ran":true}"#.to_owned()).unwrap()),
            })
        },
    )
}

fn server(mode: &str) -> (InMemory, Arc<AtomicUsize>) {
    let count = Arc::new(AtomicUsize::new(0));
    let registry = RegistryBuilder::new()
        .tool(tool("open"))
        .tool(tool("listed"))
        .tool(tool("secret"))
        .policy(Counting(Arc::clone(&count)))
        .build()
        .expect("registry builds");
    let server = Server::new(registry, ServerOptions::new().mode(mode)).expect("server builds");
    (InMemory::new(server), count)
}

/// One `tools/call`; the reply and how often the policy ran for it.
async fn call(h: &InMemory, count: &AtomicUsize, params: Value) -> (Value, usize) {
    let before = count.load(Ordering::SeqCst);
    let (reply, _status) = h.request("alice", "tools/call", params).await;
    (reply, count.load(Ordering::SeqCst) - before)
}

#[tokio::test]
async fn o23_direct_tools_call_asks_the_policy_once() {
    let (server, count) = server("direct");
    let (reply, asked) = call(&server, &count, json!({"name": "open", "arguments": {}})).await;
    assert_eq!(
        reply["result"]["structuredContent"],
        json!({"value": {"ran": true}})
    );
    assert_eq!(reply["result"].get("isError"), None, "{reply}");
    assert_eq!(asked, 1, "policy runs once per request");

    let (reply, asked) = call(&server, &count, json!({"name": "listed"})).await;
    assert_eq!(reply["result"]["isError"], json!(true), "{reply}");
    assert_eq!(
        reply["result"]["structuredContent"]["failure"]["code"],
        json!("unavailable_tool")
    );
    assert_eq!(asked, 1);

    let (reply, asked) = call(&server, &count, json!({"name": "secret"})).await;
    assert_eq!(reply["error"]["code"], json!(-32602), "{reply}");
    assert_eq!(asked, 1);
}

#[tokio::test]
async fn o23_compact_call_tool_asks_the_policy_once() {
    let (server, count) = server("compact");
    let params = json!({"name": "call_tool", "arguments": {"name": "open", "arguments": {}}});
    let (reply, asked) = call(&server, &count, params).await;
    assert_eq!(
        reply["result"]["structuredContent"],
        json!({"value": {"ran": true}}),
        "{reply}"
    );
    assert_eq!(asked, 1, "policy runs once per request");

    let params = json!({"name": "call_tool", "arguments": {"name": "secret"}});
    let (reply, asked) = call(&server, &count, params).await;
    assert_eq!(
        reply["result"]["structuredContent"]["failure"]["code"],
        json!("unavailable_tool"),
        "{reply}"
    );
    assert_eq!(asked, 1);
}

/// One `tools/call` through the HTTP host (headers checked against the body first, D28); the
/// reply, its status and how often the policy ran for it.
#[cfg(feature = "http")]
async fn http_call(server: Server, count: &AtomicUsize, mut params: Value) -> (Value, u16, usize) {
    use http_body_util::{BodyExt, Full};
    use hyper::body::Bytes;
    use strict_mcp::server::http::{HttpConfig, McpHttp};

    let service = McpHttp::new(server, HttpConfig::default());
    params["_meta"] = serde_json::from_str(support::harness::META).unwrap();
    let name = params["name"].as_str().unwrap().to_owned();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let request = hyper::Request::post("http://127.0.0.1/mcp")
        .header("host", "127.0.0.1")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", name)
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let before = count.load(Ordering::SeqCst);
    let response = service.handle(request).await;
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let reply: Value = serde_json::from_slice(&bytes).expect("a JSON reply");
    (reply, status, count.load(Ordering::SeqCst) - before)
}

/// O23, D28: over HTTP the header check and the call read one policy answer, so the policy
/// runs once per direct `tools/call` (it ran twice while the host asked for itself).
#[cfg(feature = "http")]
#[tokio::test]
async fn o23_direct_tools_call_over_http_asks_the_policy_once() {
    let (h, count) = server("direct");
    let call = |name: &str| {
        http_call(
            h.server.clone(),
            &count,
            json!({"name": name, "arguments": {}}),
        )
    };
    let (reply, status, asked) = call("open").await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(
        reply["result"]["structuredContent"],
        json!({"value": {"ran": true}})
    );
    assert_eq!(asked, 1, "policy runs once per request");

    let (reply, status, asked) = call("listed").await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(
        reply["result"]["structuredContent"]["failure"]["code"],
        json!("unavailable_tool")
    );
    assert_eq!(asked, 1);

    let (reply, _status, asked) = call("secret").await;
    assert_eq!(reply["error"]["code"], json!(-32602), "{reply}");
    assert_eq!(asked, 1);

    // An unknown tool is answered without asking the policy at all.
    let (reply, _status, asked) = call("nope").await;
    assert_eq!(reply["error"]["code"], json!(-32602), "{reply}");
    assert_eq!(asked, 0);
}

/// O23: compact mode's `call_tool` over HTTP asks the policy once too (for the wrapped tool;
/// the host asks nothing, compact tools carry no annotations).
#[cfg(feature = "http")]
#[tokio::test]
async fn o23_compact_call_tool_over_http_asks_the_policy_once() {
    let (h, count) = server("compact");
    let params = json!({"name": "call_tool", "arguments": {"name": "open", "arguments": {}}});
    let (reply, status, asked) = http_call(h.server.clone(), &count, params).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(
        reply["result"]["structuredContent"],
        json!({"value": {"ran": true}}),
        "{reply}"
    );
    assert_eq!(asked, 1, "policy runs once per request");
}
