//! The Apps shell on the wire (O60–O66, N2–N5, N7, X9, X19): discovery, compact `call_tool`'s
//! hints, the exclusive mount with precedence over application resources and no policy call,
//! its omission from resource lists, MIME and cache metadata. Exact reply bytes.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use strict_mcp::core::descriptor::ResourceContents;
use strict_mcp::core::{
    Access, Caller, Invocation, Policy, ReadReply, RegistryBuilder, ResourceDef, ToolDef, ToolError,
};
use strict_mcp::server::{AppCsp, AppPermissions, Apps, Server, ServerOptions};
use support::harness::serve_one;

const URI: &str = "ui://strict/shell";
const HTML: &str = "<!doctype html><title>shell</title><p>\"hi\"</p>";
const INFO: &str = r#"{"name":"mcp","version":"unreleased"}"#;

/// A policy that denies every resource and counts how often it was asked.
#[derive(Default)]
struct DenyResources(Arc<AtomicUsize>);

impl Policy for DenyResources {
    fn resource(&self, _caller: &Caller, _uri: &str) -> Access {
        self.0.fetch_add(1, Ordering::SeqCst);
        Access::Hidden
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoIn {
    text: String,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct EchoOut {
    echo: String,
}

fn echo() -> ToolDef {
    ToolDef::typed("echo", |_inv: Invocation, input: EchoIn| async move {
        Ok::<_, ToolError>(EchoOut { echo: input.text })
    })
    .description("Echoes text.")
}

fn apps() -> Apps {
    Apps {
        uri: URI.to_owned(),
        html: HTML.to_owned(),
        views: vec!["view-chart-7".to_owned()],
        csp: AppCsp {
            connect_domains: vec!["wss://rt.example.com".to_owned()],
            resource_domains: vec!["https://*.cdn.example".to_owned()],
            frame_domains: vec![],
            base_uri_domains: vec!["http://127.0.0.1:8080".to_owned()],
        },
        permissions: AppPermissions {
            camera: true,
            clipboard_write: true,
            ..AppPermissions::default()
        },
        domain: Some("shell.example".to_owned()),
        prefers_border: Some(false),
    }
}

fn server(apps: Option<Apps>, resources: bool, asked: &Arc<AtomicUsize>) -> Server {
    let mut registry = RegistryBuilder::new()
        .tool(echo())
        .policy(DenyResources(Arc::clone(asked)));
    if resources {
        registry = registry
            .resource(ResourceDef::new(
                URI,
                "shadowed",
                |_i: Invocation, u: String| async move {
                    Ok(ReadReply::new(vec![ResourceContents::text(
                        u,
                        "application",
                    )]))
                },
            ))
            .resource(ResourceDef::new(
                "mem://other",
                "other",
                |_i: Invocation, u: String| async move {
                    Ok(ReadReply::new(vec![ResourceContents::text(u, "other")]))
                },
            ));
    }
    let options = match apps {
        Some(apps) => ServerOptions::new().apps(apps),
        None => ServerOptions::new(),
    };
    Server::new(registry.build().unwrap(), options).unwrap()
}

fn meta() -> Value {
    serde_json::from_str(support::harness::META).unwrap()
}

async fn line(server: &Server, method: &str, mut params: Value) -> String {
    params["_meta"] = meta();
    serve_one(server, "alice", 1, method, params).await.1.line
}

/// The exact `resources/read` reply of the shell (N3, N7, O66, X19): the HTML as `text`, the
/// Apps MIME type, `_meta.ui` with every CSP list, enabled permissions as `{}`, `domain`,
/// `prefersBorder`, and private cache hints.
fn shell_reply() -> String {
    let html = serde_json::to_string(HTML).unwrap();
    format!(
        concat!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"_meta":{{"io.modelcontextprotocol/serverInfo":{info}}},"#,
            r#""cacheScope":"private","contents":[{{"#,
            r#""_meta":{{"ui":{{"csp":{{"baseUriDomains":["http://127.0.0.1:8080"],"connectDomains":["wss://rt.example.com"],"#,
            r#""frameDomains":[],"resourceDomains":["https://*.cdn.example"]}},"domain":"shell.example","#,
            r#""permissions":{{"camera":{{}},"clipboardWrite":{{}}}},"prefersBorder":false}}}},"#,
            r#""mimeType":"text/html;profile=mcp-app","text":{html},"uri":"ui://strict/shell"}}],"#,
            r#""resultType":"complete","ttlMs":0}}}}"#
        ),
        info = INFO,
        html = html
    )
}

#[tokio::test]
async fn o61_n2_discovery_advertises_the_ui_extension_and_resources() {
    let asked = Arc::default();
    let on = server(Some(apps()), false, &asked);
    let (reply, _) = serve_one(&on, "alice", 1, "server/discover", json!({"_meta": meta()})).await;
    let caps = &reply["result"]["capabilities"];
    assert_eq!(
        caps["extensions"],
        json!({"io.modelcontextprotocol/ui": {}})
    );
    // Only the shell is readable: neither subscribe nor listChanged is promised.
    assert_eq!(caps["resources"], json!({}));
    // With application resources the ordinary resource capability stays.
    let with = server(Some(apps()), true, &asked);
    let (reply, _) = serve_one(
        &with,
        "alice",
        1,
        "server/discover",
        json!({"_meta": meta()}),
    )
    .await;
    let caps = &reply["result"]["capabilities"];
    assert_eq!(
        caps["resources"],
        json!({"subscribe": true, "listChanged": true})
    );
    assert_eq!(
        caps["extensions"],
        json!({"io.modelcontextprotocol/ui": {}})
    );
    // O60: off by default.
    let off = server(None, false, &asked);
    let (reply, _) = serve_one(
        &off,
        "alice",
        1,
        "server/discover",
        json!({"_meta": meta()}),
    )
    .await;
    let caps = reply["result"]["capabilities"].as_object().unwrap();
    assert!(!caps.contains_key("extensions"), "{reply}");
    assert!(!caps.contains_key("resources"), "{reply}");
}

#[tokio::test]
async fn o62_o63_x9_only_call_tool_carries_the_hints_for_every_client() {
    let asked = Arc::default();
    let on = server(Some(apps()), false, &asked);
    let off = server(None, false, &asked);
    let plain = line(&on, "tools/list", json!({})).await;
    let off_line = line(&off, "tools/list", json!({})).await;
    // The whole body is the Apps-off body with exactly one insertion: call_tool's `_meta`.
    let hint =
        r#","_meta":{"ui":{"resourceUri":"ui://strict/shell","visibility":["model","app"]}}"#;
    let anchor = r#""required":["name"],"additionalProperties":false}"#;
    let at = off_line.rfind(anchor).unwrap() + anchor.len();
    let expected = format!("{}{hint}{}", &off_line[..at], &off_line[at..]);
    assert_eq!(plain, expected);
    assert_eq!(plain.matches("\"_meta\":{\"ui\"").count(), 1);
    // A client that declares Apps support gets the same bytes (X9: no per-client variation).
    let mut params = json!({});
    params["_meta"] = meta();
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({
        "extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}
    });
    let (_, reply) = serve_one(&on, "alice", 1, "tools/list", params).await;
    assert_eq!(reply.line, plain);
    // O63: no views, HTML or catalogue in the bootstrap schemas.
    for secret in ["view-chart-7", "shell</title>", "echo"] {
        assert!(!plain.contains(secret), "{secret} leaked into tools/list");
    }
}

#[tokio::test]
async fn o63_search_and_details_stay_ordinary() {
    let asked = Arc::default();
    let on = server(Some(apps()), false, &asked);
    let off = server(None, false, &asked);
    for params in [
        json!({"name": "search_tools", "arguments": {"query": "echo"}}),
        json!({"name": "get_tool_details", "arguments": {"name": "echo"}}),
    ] {
        let a = line(&on, "tools/call", params.clone()).await;
        let b = line(&off, "tools/call", params).await;
        assert_eq!(a, b);
        assert!(!a.contains("ui://"), "{a}");
    }
}

#[tokio::test]
async fn o64_o66_n3_n7_the_shell_read_exact_bytes() {
    let asked = Arc::default();
    let on = server(Some(apps()), false, &asked);
    assert_eq!(
        line(&on, "resources/read", json!({"uri": URI})).await,
        shell_reply()
    );
}

#[tokio::test]
async fn o64_mount_takes_precedence_without_a_policy_call() {
    let asked = Arc::new(AtomicUsize::new(0));
    let on = server(Some(apps()), true, &asked);
    assert_eq!(
        line(&on, "resources/read", json!({"uri": URI})).await,
        shell_reply()
    );
    assert_eq!(
        asked.load(Ordering::SeqCst),
        0,
        "the shell read asked the policy"
    );
    // Byte-exact: a different spelling is an ordinary URI, under the application's policy.
    for other in [
        "ui://strict/shell/",
        "UI://strict/shell",
        "ui://strict/shel",
    ] {
        let (reply, _) = serve_one(
            &on,
            "alice",
            1,
            "resources/read",
            json!({"uri": other, "_meta": meta()}),
        )
        .await;
        assert_eq!(reply["error"]["code"], json!(-32602), "{other}: {reply}");
    }
    assert_eq!(asked.load(Ordering::SeqCst), 0);
    // The counter works: an application resource's read asks the policy (which hides it).
    let (reply, _) = serve_one(
        &on,
        "alice",
        1,
        "resources/read",
        json!({"uri": "mem://other", "_meta": meta()}),
    )
    .await;
    assert_eq!(reply["error"]["code"], json!(-32602), "{reply}");
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    // Without Apps the application's resource at that URI is read under its policy.
    let off = server(None, true, &asked);
    let (reply, _) = serve_one(
        &off,
        "alice",
        1,
        "resources/read",
        json!({"uri": URI, "_meta": meta()}),
    )
    .await;
    assert!(reply.get("error").is_some(), "{reply}");
}

/// A policy that allows everything, for the list test.
struct Open;
impl Policy for Open {}

#[tokio::test]
async fn o64_n5_the_shell_is_omitted_from_resource_lists() {
    let registry = RegistryBuilder::new()
        .tool(echo())
        .policy(Open)
        .resource(ResourceDef::new(
            URI,
            "shadowed",
            |_i: Invocation, u: String| async move {
                Ok(ReadReply::new(vec![ResourceContents::text(
                    u,
                    "application",
                )]))
            },
        ))
        .resource(ResourceDef::new(
            "mem://other",
            "other",
            |_i: Invocation, u: String| async move {
                Ok(ReadReply::new(vec![ResourceContents::text(u, "other")]))
            },
        ))
        .build()
        .unwrap();
    let on = Server::new(registry, ServerOptions::new().apps(apps())).unwrap();
    let listed = line(&on, "resources/list", json!({})).await;
    assert_eq!(
        listed,
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"_meta":{{"io.modelcontextprotocol/serverInfo":{INFO}}},"cacheScope":"private","resources":[{{"name":"other","uri":"mem://other"}}],"resultType":"complete","ttlMs":0}}}}"#
        )
    );
    // A shell-only server lists nothing, and the shell is still readable.
    let asked = Arc::default();
    let alone = server(Some(apps()), false, &asked);
    let listed = line(&alone, "resources/list", json!({})).await;
    assert!(listed.contains(r#""resources":[]"#), "{listed}");
    assert_eq!(
        line(&alone, "resources/read", json!({"uri": URI})).await,
        shell_reply()
    );
}

#[tokio::test]
async fn o64_a_request_state_for_the_shell_is_rejected_like_any_forged_one() {
    let asked = Arc::default();
    let on = server(Some(apps()), true, &asked);
    let read = |uri: &str, extra: Value| {
        let mut params = json!({"uri": uri});
        for (k, v) in extra.as_object().unwrap() {
            params[k] = v.clone();
        }
        line(&on, "resources/read", params)
    };
    let forged = json!({"requestState": "not-a-sealed-state"});
    let shell = read(URI, forged.clone()).await;
    assert_eq!(
        shell,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"The requestState was rejected.","data":{"reason":"state_rejected","retryable":false}}}"#
    );
    // A malformed continuation member is the same -32602 as on any read.
    let bad = read(URI, json!({"requestState": 7})).await;
    assert_eq!(bad, read("mem://other", json!({"requestState": 7})).await);
    // `inputResponses` alone answer nothing the shell asked: the shell is read.
    assert_eq!(
        read(URI, json!({"inputResponses": {"k": {}}})).await,
        shell_reply()
    );
}
