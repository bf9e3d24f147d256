//! Views selected by results (O69, O70, N6): an approved view travels on the result `_meta`
//! under `strict-mcp/view` with its data byte-exact; an unapproved one turns the result into a
//! safe `invalid_result` without the rejected data; a completed Apps call needs ordinary
//! content (structured output's compatibility text counts); with Apps disabled results are
//! as before. Exact reply bytes.

mod support;

use serde_json::value::RawValue;
use serde_json::{json, Value};
use strict_mcp::core::descriptor::ContentBlock;
use strict_mcp::core::{
    AppView, DynamicOutput, FailureCode, Invocation, RegistryBuilder, ToolDef, ToolError,
    ToolFailure,
};
use strict_mcp::server::apps::VIEW_META_KEY;
use strict_mcp::server::{Apps, Server, ServerOptions};
use support::harness::serve_one;

/// Data with a number beyond `u64` and one with a trailing zero: kept as sent.
const DATA: &str = r#"{"id":12345678901234567890123,"x":1.10,"s":"é"}"#;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct ShowIn {
    view: String,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct ShowOut {
    shown: String,
}

fn registry() -> strict_mcp::core::Registry {
    RegistryBuilder::new()
        // Typed: selects the requested view, returns a structured result.
        .tool(ToolDef::typed(
            "show",
            |inv: Invocation, input: ShowIn| async move {
                inv.show_view(AppView::from_json(input.view.clone(), DATA).unwrap());
                Ok::<_, ToolError>(ShowOut { shown: input.view })
            },
        ))
        // Dynamic, text only, no structured result: the text is the ordinary content.
        .tool(ToolDef::dynamic(
            "text_only",
            r#"{"type":"object"}"#,
            None,
            |inv: Invocation, _args: Box<RawValue>| async move {
                inv.show_view(AppView::new("chart", &json!({"n": 1})).unwrap());
                Ok(DynamicOutput {
                    content: vec![ContentBlock::text("one chart")],
                    structured: None,
                })
            },
        ))
        // Dynamic, structured only: the compatibility text is its ordinary content.
        .tool(ToolDef::dynamic(
            "structured_only",
            r#"{"type":"object"}"#,
            None,
            |inv: Invocation, _args: Box<RawValue>| async move {
                inv.show_view(AppView::new("chart", &json!([])).unwrap());
                Ok(DynamicOutput {
                    content: vec![],
                    structured: Some(RawValue::from_string("{\"k\":2}".to_owned()).unwrap()),
                })
            },
        ))
        // Dynamic, nothing at all.
        .tool(ToolDef::dynamic(
            "bare",
            r#"{"type":"object"}"#,
            None,
            |_inv: Invocation, _args: Box<RawValue>| async move { Ok(DynamicOutput::default()) },
        ))
        // A failure that selected a view first.
        .tool(ToolDef::dynamic(
            "fails",
            r#"{"type":"object"}"#,
            None,
            |inv: Invocation, _args: Box<RawValue>| async move {
                inv.show_view(AppView::from_json("chart", DATA).unwrap());
                Err(ToolError::Failure(ToolFailure::new(
                    FailureCode::UnavailableTool,
                    "down",
                )))
            },
        ))
        .build()
        .unwrap()
}

fn apps() -> Apps {
    Apps {
        uri: "ui://views/shell".to_owned(),
        html: "<!doctype html>".to_owned(),
        views: vec!["chart".to_owned(), "tablé".to_owned()],
        ..Apps::default()
    }
}

fn on() -> Server {
    Server::new(registry(), ServerOptions::new().apps(apps())).unwrap()
}

fn off() -> Server {
    Server::new(registry(), ServerOptions::new()).unwrap()
}

async fn call_with(server: &Server, name: &str, arguments: Value, caps: Value) -> String {
    let mut meta: Value = serde_json::from_str(support::harness::META).unwrap();
    meta["io.modelcontextprotocol/clientCapabilities"] = caps;
    let params = json!({
        "name": "call_tool",
        "arguments": {"name": name, "arguments": arguments},
        "_meta": meta,
    });
    serve_one(server, "alice", 1, "tools/call", params)
        .await
        .1
        .line
}

async fn call(server: &Server, name: &str, arguments: Value) -> String {
    call_with(server, name, arguments, json!({})).await
}

/// `line` with `"strict-mcp/view":<view>` added to its result `_meta` after `serverInfo`.
fn with_view(line: &str, view: &str) -> String {
    let info = r#""io.modelcontextprotocol/serverInfo":{"name":"mcp","version":"unreleased"}"#;
    assert_eq!(line.matches(info).count(), 1, "{line}");
    line.replacen(info, &format!(r#"{info},"{VIEW_META_KEY}":{view}"#), 1)
}

fn failure(line: &str) -> Value {
    let reply: Value = serde_json::from_str(line).unwrap();
    let result = &reply["result"];
    assert_eq!(result["isError"], json!(true), "{line}");
    // The one content block is the failure envelope's JSON (the compatibility text).
    let text = result["content"][0]["text"].as_str().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap(),
        result["structuredContent"]
    );
    result["structuredContent"]["failure"].clone()
}

#[tokio::test]
async fn o69_o70_an_approved_view_travels_on_the_result_meta_byte_exact() {
    for view in ["chart", "tablé"] {
        let got = call(&on(), "show", json!({"view": view})).await;
        // The Apps-off result of the same call, with exactly the view added.
        let before = call(&off(), "show", json!({"view": view})).await;
        let id = serde_json::to_string(view).unwrap();
        assert_eq!(
            got,
            with_view(&before, &format!(r#"{{"data":{DATA},"view":{id}}}"#))
        );
        assert!(got.contains("12345678901234567890123,\"x\":1.10"), "{got}");
    }
}

#[tokio::test]
async fn o70_a_client_without_apps_gets_the_same_result() {
    let declared = json!({"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}});
    let with = call_with(&on(), "show", json!({"view": "chart"}), declared).await;
    let without = call(&on(), "show", json!({"view": "chart"})).await;
    assert_eq!(with, without);
    assert!(!without.contains("\"error\""), "{without}");
}

#[tokio::test]
async fn o69_an_unapproved_view_is_a_safe_invalid_result() {
    for view in ["secret-view", "Chart", "chart ", ""] {
        let got = call(&on(), "show", json!({"view": view})).await;
        let failure = failure(&got);
        assert_eq!(failure["code"], json!("invalid_result"), "{got}");
        assert_eq!(
            failure["message"],
            json!("The tool selected a view that is not configured.")
        );
        assert!(
            !got.contains("12345678901234567890123"),
            "data leaked: {got}"
        );
        assert!(!got.contains(VIEW_META_KEY), "{got}");
        if !view.is_empty() {
            assert!(!got.contains(view), "view name leaked: {got}");
        }
        assert!(!got.contains("shown"), "the rejected result leaked: {got}");
    }
}

#[tokio::test]
async fn o70_n6_every_completed_apps_call_needs_ordinary_content() {
    // Text content alone is enough.
    let text = call(&on(), "text_only", json!({})).await;
    assert_eq!(
        text,
        with_view(
            &call(&off(), "text_only", json!({})).await,
            r#"{"data":{"n":1},"view":"chart"}"#
        )
    );
    // Structured output's compatibility text counts.
    let structured = call(&on(), "structured_only", json!({})).await;
    assert_eq!(
        structured,
        with_view(
            &call(&off(), "structured_only", json!({})).await,
            r#"{"data":[],"view":"chart"}"#
        )
    );
    // Nothing at all: invalid_result under Apps ...
    let bare = call(&on(), "bare", json!({})).await;
    let failure = failure(&bare);
    assert_eq!(failure["code"], json!("invalid_result"), "{bare}");
    assert_eq!(
        failure["message"],
        json!("The tool returned no content for clients without Apps.")
    );
    // ... and the empty success it always was without Apps.
    let before = call(&off(), "bare", json!({})).await;
    assert_eq!(
        before,
        r#"{"jsonrpc":"2.0","id":1,"result":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcp","version":"unreleased"}},"content":[],"resultType":"complete"}}"#
    );
}

#[tokio::test]
async fn o69_failures_are_sent_as_they_are_without_the_view() {
    let got = call(&on(), "fails", json!({})).await;
    assert_eq!(got, call(&off(), "fails", json!({})).await);
    assert_eq!(failure(&got)["code"], json!("unavailable_tool"));
    assert!(!got.contains(VIEW_META_KEY), "{got}");
}

#[tokio::test]
async fn o60_with_apps_disabled_a_selection_is_ignored() {
    // Apps off: no view on the wire, no check of the (absent) view list: "secret-view" passes.
    let got = call(&off(), "show", json!({"view": "secret-view"})).await;
    assert!(!got.contains(VIEW_META_KEY), "{got}");
    let reply: Value = serde_json::from_str(&got).unwrap();
    assert_eq!(
        reply["result"]["structuredContent"],
        json!({"value": {"shown": "secret-view"}})
    );
}
