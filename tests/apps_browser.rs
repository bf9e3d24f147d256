//! The MCP Apps shell in a real browser (O60–O70, CORS for browser hosts).
//!
//! `interop/node/apps_browser.mjs` bundles a test app (the pinned `@modelcontextprotocol/ext-apps`
//! 2.0.4 `App`) into one HTML file and serves a host page on a loopback origin; this test makes
//! that HTML the shell of a server it starts in process on 127.0.0.1 with CORS allowing the
//! page's origin. Debian's Chromium (headless, through the pinned `playwright-core`) opens the
//! page: the host reads the shell across origins, renders it in a sandboxed iframe with the
//! CSP the shell declares, calls the tool and passes the result in through the ext-apps
//! `AppBridge`. The test asserts the DOM text the app shows, that a fetch the CSP forbids (to a
//! second loopback origin, `127.0.0.2`) is blocked before any connection, and that a screenshot
//! was written under the target directory (`apps-browser/apps-browser.png`).
//!
//! It is `#[ignore]`d for the plain `cargo test` and run by `.ci/run`'s `apps-browser` step
//! (`cargo test --test apps_browser -- --ignored`). Without node or Chromium it is skipped with a note, except under `CI=true`, where it
//! fails. Every service it starts listens on loopback and is stopped at the end; the node
//! process (and its browser) is bounded by [`BROWSER_TIMEOUT`] and killed by its pid.
#![forbid(unsafe_code)]
#![cfg(feature = "http")]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use strict_mcp::core::descriptor::{ContentBlock, ResourceContents};
use strict_mcp::core::{DynamicOutput, ReadReply, RegistryBuilder, ResourceDef, ToolDef};
use strict_mcp::server::http::{serve, HttpConfig, McpHttp};
use strict_mcp::server::{Server, ServerOptions};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::process::Command;

/// The whole browser run: bundling (two rolldown builds), a cold Chromium start and the page,
/// on two cores shared with other builds. A healthy run takes a few seconds; past this the run
/// is killed and the test fails rather than hanging CI.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(120);

/// The shell's URI and the tool whose result the app shows.
const SHELL_URI: &str = "ui://strict-mcp/browser-test";
const TOOL: &str = "greet";
const GREETING: &str = "Hello from strict-mcp, 1.50 exactly";

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `<target>/apps-browser`, from this test executable's path (`<target>/debug/deps/…`).
fn out_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let target = exe
        .ancestors()
        .nth(3)
        .expect("<target>/<profile>/deps/<test>")
        .to_path_buf();
    let dir = target.join("apps-browser");
    std::fs::create_dir_all(&dir).expect("create the screenshot directory");
    dir
}

/// The peers the test needs, or why they are missing.
fn peers() -> Result<(PathBuf, PathBuf), String> {
    let node = manifest().join(".interop/node/bin/node");
    let chromium = std::env::var_os("STRICT_MCP_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    let bundler = manifest().join("interop/node/node_modules/rolldown/package.json");
    let driver = manifest().join("interop/node/node_modules/playwright-core/package.json");
    for (what, path) in [
        ("node (.ci/install-peers)", &node),
        ("chromium (.ci/chromium install)", &chromium),
        ("rolldown (interop/node)", &bundler),
        ("playwright-core (interop/node)", &driver),
    ] {
        if !path.exists() {
            return Err(format!("{what} missing at {}", path.display()));
        }
    }
    Ok((node, chromium))
}

async fn next_json(
    lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    what: &str,
) -> Value {
    let text = tokio::time::timeout(BROWSER_TIMEOUT, lines.next_line())
        .await
        .unwrap_or_else(|_| panic!("no {what} from apps_browser.mjs within {BROWSER_TIMEOUT:?}"))
        .expect("read apps_browser.mjs output")
        .unwrap_or_else(|| panic!("apps_browser.mjs ended before its {what}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{what} is not JSON ({e}): {text}"))
}

/// The server under test: the shell at [`SHELL_URI`] (until the Apps option lands, a resource
/// of the Apps MIME type with the declared CSP on its contents' `_meta.ui`, N7) and the tool.
fn server(html: String) -> Server {
    let html = Arc::new(html);
    let greet = |_i, _a| async move {
        Ok(DynamicOutput {
            content: vec![ContentBlock::text(GREETING)],
            structured: None,
        })
    };
    let registry = RegistryBuilder::new()
        .tool(ToolDef::dynamic(
            TOOL,
            r#"{"type":"object","properties":{}}"#,
            None,
            greet,
        ))
        .resource(ResourceDef::new(
            SHELL_URI,
            "browser-test",
            move |_inv, uri| {
                let html = html.clone();
                async move {
                    let mut meta = serde_json::Map::new();
                    meta.insert(
                        "ui".into(),
                        json!({"csp": {"connectDomains": [], "resourceDomains": []}}),
                    );
                    Ok(ReadReply::new(vec![ResourceContents::Text {
                        uri,
                        mime_type: Some("text/html;profile=mcp-app".into()),
                        text: (*html).clone(),
                        meta: Some(meta),
                    }]))
                }
            },
        ))
        .build()
        .expect("registry");
    Server::new(
        registry,
        ServerOptions::new().server_info("apps-browser-test", "0.0.1"),
    )
    .expect("server")
}

// Run by .ci/run's `apps-browser` step (after `chromium-install`), not by the plain `cargo test`
// step: `cargo test --test apps_browser -- --ignored`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real browser: .ci/run's apps-browser step runs it with --ignored"]
async fn o60_o66_apps_shell_renders_in_chromium_with_cors_and_csp() {
    let (node, chromium) = match peers() {
        Ok(p) => p,
        Err(why) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CI=true: the real browser test cannot run: {why}")
        }
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };

    // The second loopback origin the app's CSP forbids; any connection to it is a failure.
    let forbidden = TcpListener::bind("127.0.0.2:0")
        .await
        .expect("bind 127.0.0.2");
    let forbidden_url = format!("http://{}/probe", forbidden.local_addr().unwrap());
    let dialled = Arc::new(AtomicUsize::new(0));
    let counter = dialled.clone();
    let forbidden_task = tokio::spawn(async move {
        while let Ok((_socket, _)) = forbidden.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
        }
    });

    let dir = out_dir();
    let view = dir.join("view.html");
    let screenshot = dir.join("apps-browser.png");
    let _ = std::fs::remove_file(&screenshot);
    let mut child = Command::new(&node)
        .arg(manifest().join("interop/node/apps_browser.mjs"))
        .arg("--forbidden")
        .arg(&forbidden_url)
        .arg("--view-out")
        .arg(&view)
        .arg("--screenshot")
        .arg(&screenshot)
        .arg("--chromium")
        .arg(&chromium)
        .arg("--timeout")
        .arg(BROWSER_TIMEOUT.as_millis().to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn node apps_browser.mjs");
    let pid = child.id().expect("node pid");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let ready = next_json(&mut lines, "ready line").await;
    assert_eq!(ready["ready"], true, "{ready}");
    let page_origin = ready["pageOrigin"].as_str().expect("pageOrigin").to_owned();
    assert!(
        page_origin.starts_with("http://127.0.0.1:"),
        "{page_origin}"
    );
    let html = std::fs::read_to_string(&view).expect("the bundled view");

    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let service = McpHttp::new(
        server(html),
        HttpConfig {
            path: Some("/mcp".into()),
            cors_origins: vec![page_origin.clone()],
            ..HttpConfig::default()
        },
    );
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(serve(listener, service, async {
        let _ = stopped.await;
    }));

    let mut stdin = child.stdin.take().unwrap();
    let cfg = json!({
        "server": format!("http://{addr}/mcp"),
        "uri": SHELL_URI,
        // Compact mode (the default): the host runs the tool through `call_tool`.
        "tool": "call_tool",
        "args": {"name": TOOL, "arguments": {}},
    });
    stdin
        .write_all(format!("{cfg}\n").as_bytes())
        .await
        .expect("write the run's configuration");
    drop(stdin);
    let report = next_json(&mut lines, "report").await;
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
    if status.is_err() {
        eprintln!("apps_browser.mjs (pid {pid}) still running after its report: killing it");
        let _ = child.kill().await;
    }
    let _ = stop.send(());
    let _ = tokio::time::timeout(Duration::from_secs(5), run).await;
    forbidden_task.abort();

    eprintln!("apps-browser report: {report:#}");
    assert_eq!(report.get("error"), None, "the browser run failed");
    let host = &report["host"];
    // The host's client, pinned to 2026-07-28, read the shell across origins (CORS).
    assert_eq!(host["pageOrigin"], page_origin.as_str());
    assert_eq!(host["protocolVersion"], "2026-07-28");
    assert_eq!(host["mimeType"], "text/html;profile=mcp-app");
    assert_eq!(
        host["declaredCsp"],
        json!({"connectDomains": [], "resourceDomains": []})
    );
    assert!(
        host["appliedCsp"]
            .as_str()
            .unwrap()
            .contains("connect-src 'none'"),
        "{host}"
    );
    assert_eq!(host["appInitialized"], true);
    assert_eq!(host["sandbox"], "allow-scripts");
    assert_eq!(
        host["toolResult"]["content"],
        json!([{"type": "text", "text": GREETING}])
    );
    // What the app shows, read from its DOM inside the sandboxed (opaque-origin) iframe.
    let view = &report["view"];
    assert_eq!(view["origin"], "null", "the iframe must be opaque: {view}");
    assert_eq!(view["result"], GREETING);
    // The forbidden fetch: refused by the CSP, reported as a violation, never dialled.
    assert_eq!(view["probe"], "fetch blocked: TypeError");
    assert_eq!(
        view["violation"],
        format!("connect-src {forbidden_url}").as_str()
    );
    assert_eq!(dialled.load(Ordering::SeqCst), 0, "127.0.0.2 was dialled");
    let png = std::fs::read(&screenshot).expect("the screenshot");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    eprintln!("screenshot: {}", screenshot.display());
}
