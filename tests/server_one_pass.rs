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
