//! The official TypeScript and Python SDK clients against the HTTP host (O120, interop/README.md).
//!
//! Needs the pinned peers (`.ci/install-peers`). Without them the test prints a skip notice
//! locally; under `CI=true` a missing peer fails it, never a silent pass.
//! `STRICT_MCP_INTEROP_ROOT` may point at another checkout whose `.interop/` and
//! `interop/node/node_modules` are installed.
#![forbid(unsafe_code)]
#![cfg(feature = "http")]

use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use strict_mcp::core::{Invocation, RegistryBuilder, ToolDef};
use strict_mcp::server::http::{serve, HttpConfig, McpHttp};
use strict_mcp::server::{Server, ServerOptions};

#[derive(Deserialize, JsonSchema)]
struct EchoIn {
    /// Text to echo.
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct RegionIn {
    /// Region, mirrored into `Mcp-Param-Region`.
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: String,
    /// Text to echo.
    text: String,
}

#[derive(Serialize, JsonSchema)]
struct EchoOut {
    /// The text.
    text: String,
}

fn root() -> PathBuf {
    std::env::var_os("STRICT_MCP_INTEROP_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

async fn run_driver(program: &PathBuf, script: &PathBuf, url: &str, extra: &[&str]) -> Vec<Value> {
    let (ok, lines, stderr) = run_driver_raw(program, script, url, extra).await;
    assert!(
        ok,
        "{} {:?} failed:\n{lines:?}\n{stderr}",
        script.display(),
        extra,
    );
    lines
}

/// Runs a driver and returns (exit success, its JSON lines, its stderr).
async fn run_driver_raw(
    program: &PathBuf,
    script: &PathBuf,
    url: &str,
    extra: &[&str],
) -> (bool, Vec<Value>, String) {
    assert!(
        program.exists(),
        "peer missing: {} (run .ci/install-peers)",
        program.display()
    );
    let mut cmd = tokio::process::Command::new(program);
    cmd.arg(script)
        .args(["--url", url, "--steps", "discover,list,call"])
        .args(extra)
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("driver finished in time")
        .expect("driver ran");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|_| panic!("not JSON: {l}")))
        .collect();
    (
        out.status.success(),
        lines,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Whether the peers are installed; a skip notice locally, a failure under `CI=true`.
fn peers_present(peers: &[PathBuf], what: &str) -> bool {
    if let Some(missing) = peers.iter().find(|p| !p.exists()) {
        let in_ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(
            !in_ci,
            "peer missing under CI=true: {} (run .ci/install-peers)",
            missing.display()
        );
        eprintln!(
            "SKIP {what}: {} missing (run .ci/install-peers)",
            missing.display()
        );
        return false;
    }
    true
}

/// B22, D31: the TS SDK v2 client in its default negotiation (`legacy`: it opens with
/// `initialize`, no `MCP-Protocol-Version`) gets the -32601 answer with the supported versions,
/// not a header mismatch, and reports the error with the version to speak.
#[test]
fn b22_ts_client_default_legacy_negotiation_sees_supported_version() {
    let node = root().join(".interop/node/bin/node");
    if !peers_present(
        &[node.clone(), root().join("interop/node/node_modules")],
        "b22 ts legacy interop",
    ) {
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let registry = RegistryBuilder::new()
            .tool(ToolDef::typed(
                "echo",
                |_i: Invocation, i: EchoIn| async move { Ok(EchoOut { text: i.text }) },
            ))
            .build()
            .unwrap();
        let server = Server::new(registry, ServerOptions::new().mode("direct")).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let host = tokio::spawn(serve(
            listener,
            McpHttp::new(server.clone(), HttpConfig::default()),
            async {
                let _ = stopped.await;
            },
        ));
        let ts = root().join("interop/node/ts_client.mjs");
        let (ok, lines, stderr) = run_driver_raw(&node, &ts, &url, &["--era", "legacy"]).await;
        assert!(!ok, "a legacy-only client cannot connect: {lines:?}");
        let connect = lines
            .iter()
            .find(|l| l["step"] == "connect")
            .unwrap_or_else(|| panic!("connect step: {lines:?}\n{stderr}"));
        assert_eq!(connect["ok"], false, "{connect}");
        let message = connect["error"]["message"].as_str().unwrap_or_default();
        eprintln!("ts client reports: {}", connect["error"]);
        // As the SDK 2.4.0 reports it: an HTTP error carrying our body, status 404.
        assert!(!message.contains("Header mismatch"), "{connect}");
        assert!(
            message.contains(r#""code":-32601"#)
                && message.contains(r#""data":{"supported":["2026-07-28"]}"#),
            "{connect}"
        );
        assert_eq!(connect["error"]["data"]["status"], 404, "{connect}");
        server.shutdown(Duration::from_secs(2)).await;
        let _ = stop.send(());
        host.await.unwrap().unwrap();
    });
}

#[test]
fn o120_official_ts_and_python_clients_over_http() {
    let peers = [
        root().join(".interop/node/bin/node"),
        root().join(".interop/venv/bin/python"),
        root().join("interop/node/node_modules"),
    ];
    if let Some(missing) = peers.iter().find(|p| !p.exists()) {
        let in_ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(
            !in_ci,
            "peer missing under CI=true: {} (run .ci/install-peers)",
            missing.display()
        );
        eprintln!(
            "SKIP o120 http interop: {} missing (run .ci/install-peers)",
            missing.display()
        );
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let registry = RegistryBuilder::new()
            .tool(ToolDef::typed(
                "echo",
                |_i: Invocation, i: EchoIn| async move { Ok(EchoOut { text: i.text }) },
            ))
            .tool(ToolDef::typed(
                "region_echo",
                |_i: Invocation, i: RegionIn| async move {
                    Ok(EchoOut {
                        text: format!("{}: {}", i.region, i.text),
                    })
                },
            ))
            .build()
            .unwrap();
        let server = Server::new(registry, ServerOptions::new().mode("direct")).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let config = HttpConfig {
            path: Some("/mcp".into()),
            ..HttpConfig::default()
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let host = tokio::spawn(serve(
            listener,
            McpHttp::new(server.clone(), config),
            async {
                let _ = stopped.await;
            },
        ));
        let root = root();
        let node = root.join(".interop/node/bin/node");
        let python = root.join(".interop/venv/bin/python");
        let ts = root.join("interop/node/ts_client.mjs");
        let py = root.join("interop/python/py_client.py");
        let region = [
            "--tool",
            "region_echo",
            "--args",
            r#"{"region":"eu-west","text":"x"}"#,
        ];
        for (program, script) in [(&node, &ts), (&python, &py)] {
            for extra in [&[][..], &region[..]] {
                let lines = run_driver(program, script, &url, extra).await;
                let done = lines.last().expect("output");
                assert_eq!(done["step"], "done");
                assert_eq!(done["ok"], true, "{lines:?}");
                let call = lines
                    .iter()
                    .find(|l| l["step"] == "tools/call")
                    .expect("call step");
                assert_eq!(call["ok"], true, "{call}");
            }
        }
        server.shutdown(Duration::from_secs(2)).await;
        let _ = stop.send(());
        host.await.unwrap().unwrap();
    });
}
