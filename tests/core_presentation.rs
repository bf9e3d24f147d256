//! Presentation hints (MCP Apps): what THIS request's client capabilities declare under
//! `extensions["io.modelcontextprotocol/ui"].mimeTypes` (B4, O61 groundwork).

use serde_json::json;
use strict_mcp::core::{
    Caller, ClientCapabilities, Invocation, Presentation, MCP_APP_MIME_TYPE, UI_EXTENSION,
};

fn presentation(caps: serde_json::Value) -> Presentation {
    Invocation::new(Caller::anonymous())
        .with_capabilities(ClientCapabilities::from_value(caps))
        .presentation()
        .clone()
}

#[test]
fn b4_the_official_example_declares_mcp_app_html() {
    assert_eq!(UI_EXTENSION, "io.modelcontextprotocol/ui");
    assert_eq!(MCP_APP_MIME_TYPE, "text/html;profile=mcp-app");
    // schema/2026-07-28/examples/ClientCapabilities/extensions-ui-mime-types.json
    let p = presentation(json!({
        "extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}
    }));
    assert_eq!(p.ui_mime_types(), ["text/html;profile=mcp-app"]);
    assert!(p.supports_ui(MCP_APP_MIME_TYPE));
    assert!(!p.supports_ui("text/html"));
    assert!(!p.supports_ui("text/uri-list"));
}

#[test]
fn b4_media_types_compare_case_insensitively_except_parameter_values() {
    let p = presentation(json!({
        "extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["TEXT/Html ; Profile = mcp-app"]}}
    }));
    assert!(p.supports_ui("text/html;profile=mcp-app"));
    assert!(!p.supports_ui("text/html;profile=MCP-APP"));
    assert!(!p.supports_ui("text/html;version=mcp-app"));
    // Listed as sent.
    assert_eq!(p.ui_mime_types(), ["TEXT/Html ; Profile = mcp-app"]);
}

#[test]
fn b4_absent_or_malformed_declarations_declare_nothing() {
    let cases = [
        json!({}),
        json!({"extensions": {}}),
        json!({"extensions": {"io.modelcontextprotocol/ui": {}}}),
        json!({"extensions": {"io.modelcontextprotocol/ui": true}}),
        json!({"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": "text/html;profile=mcp-app"}}}),
        json!({"extensions": {"io.modelcontextprotocol/apps": {"mimeTypes": ["text/html;profile=mcp-app"]}}}),
        json!({"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}),
        json!({"extensions": [{"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}]}),
        json!(null),
    ];
    for caps in cases {
        let p = presentation(caps.clone());
        assert!(!p.supports_ui(MCP_APP_MIME_TYPE), "{caps}");
        assert!(p.ui_mime_types().is_empty(), "{caps}");
        assert_eq!(p, Presentation::default(), "{caps}");
    }
}

#[test]
fn b4_non_string_entries_are_ignored() {
    let p = presentation(json!({
        "extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": [1, null, "text/html;profile=mcp-app", {"x": 1}]}}
    }));
    assert_eq!(p.ui_mime_types(), ["text/html;profile=mcp-app"]);
}

#[test]
fn b4_a_fresh_invocation_declares_nothing() {
    let inv = Invocation::new(Caller::anonymous());
    assert_eq!(inv.presentation(), &Presentation::default());
    assert_eq!(inv.capabilities().presentation(), &Presentation::default());
}
