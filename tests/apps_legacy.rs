//! The Apps shell for an initialise-era session (feature `legacy`; O61, N2, N10): the
//! extension and the `resources` capability in `initialize`, the hints on `call_tool` and the
//! shell read in the legacy shapes. Exact bytes on the wire.
#![cfg(feature = "legacy")]

use std::time::Duration;

use strict_mcp::core::{Caller, Invocation, RegistryBuilder, ToolDef, ToolError};
use strict_mcp::server::{Apps, Server, ServerOptions};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct In {}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Out {
    ok: bool,
}

#[tokio::test]
async fn o61_n2_n10_a_legacy_session_sees_the_extension_hints_and_shell() {
    let registry = RegistryBuilder::new()
        .tool(ToolDef::typed("t", |_i: Invocation, _in: In| async move {
            Ok::<_, ToolError>(Out { ok: true })
        }))
        .build()
        .unwrap();
    let apps = Apps {
        uri: "ui://legacy/shell".to_owned(),
        html: "<!doctype html>".to_owned(),
        ..Apps::default()
    };
    let server = Server::new(
        registry,
        ServerOptions::new()
            .legacy_era(true)
            .server_info("legacy-apps", "1")
            .apps(apps),
    )
    .unwrap();
    let (mut client_w, server_r) = tokio::io::duplex(1 << 20);
    let (server_w, client_r) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        server
            .run_stdio_on(Caller::new("alice"), server_r, server_w)
            .await
    });
    let mut lines = BufReader::new(client_r).lines();
    // One line out; with `reply`, the next line in.
    let mut send = async |line: &str, reply: bool| {
        client_w.write_all(line.as_bytes()).await.unwrap();
        client_w.write_all(b"\n").await.unwrap();
        if !reply {
            return String::new();
        }
        tokio::time::timeout(Duration::from_secs(10), lines.next_line())
            .await
            .expect("a line in time")
            .unwrap()
            .expect("not EOF")
    };
    assert_eq!(
        send(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}},"clientInfo":{"name":"old","version":"1"}}}"#, true).await,
        r#"{"jsonrpc":"2.0","id":0,"result":{"capabilities":{"extensions":{"io.modelcontextprotocol/ui":{}},"logging":{},"resources":{},"tools":{"listChanged":true}},"protocolVersion":"2025-11-25","serverInfo":{"name":"legacy-apps","version":"1"}}}"#
    );
    send(
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        false,
    )
    .await;
    let tools = send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#, true).await;
    assert!(
        tools.contains(r#""additionalProperties":false},"_meta":{"ui":{"resourceUri":"ui://legacy/shell","visibility":["model","app"]}},"name":"call_tool","title":"Call a tool"}]"#),
        "{tools}"
    );
    assert_eq!(
        send(r#"{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"ui://legacy/shell"}}"#, true).await,
        r#"{"jsonrpc":"2.0","id":2,"result":{"contents":[{"_meta":{"ui":{"csp":{"baseUriDomains":[],"connectDomains":[],"frameDomains":[],"resourceDomains":[]}}},"mimeType":"text/html;profile=mcp-app","text":"<!doctype html>","uri":"ui://legacy/shell"}]}}"#
    );
}
