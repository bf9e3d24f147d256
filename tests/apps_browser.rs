//! The MCP Apps shell in a real browser (O60–O70, N7, N10, CORS for browser hosts).
//!
//! `interop/node/apps_browser.mjs` serves a host page on a loopback origin and, for the first
//! test, bundles a test app (the pinned `@modelcontextprotocol/ext-apps` 2.0.4 `App`) into one
//! HTML file; that HTML becomes the shell (`ServerOptions::apps`) of a server this test starts
//! in process on 127.0.0.1 with CORS allowing the page's origin. Debian's Chromium (headless,
//! through the pinned `playwright-core`) opens the page: the host's client (pinned to
//! 2026-07-28) finds the shell's URI on compact `call_tool`, reads the shell across origins,
//! renders it in a sandboxed iframe with the CSP the shell declares, calls the tool and passes
//! the result in through the ext-apps `AppBridge`. The tests assert the DOM text the app shows;
//! the first also that a fetch the CSP forbids (to a second loopback origin, `127.0.0.2`) is
//! blocked before any connection, the second runs the demo app (`demo serve --app`). Each
//! writes a screenshot under the target directory (`apps-browser/*.png`).
//!
//! Both are `#[ignore]`d for the plain `cargo test` and run by `.ci/run`'s `apps-browser` step
//! (`cargo test --test apps_browser -- --ignored`). Without node or Chromium they are skipped
//! with a note, except under `CI=true`, where they fail. Every service they start listens on
//! loopback and is stopped at the end; the node process (and its browser) is bounded by
//! [`BROWSER_TIMEOUT`] and killed by its pid.
#![forbid(unsafe_code)]
#![cfg(feature = "http")]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use strict_mcp::core::descriptor::ContentBlock;
use strict_mcp::core::{AppView, DynamicOutput, Invocation, RegistryBuilder, ToolDef};
use strict_mcp::server::http::{serve, HttpConfig, McpHttp};
use strict_mcp::server::{Apps, Server, ServerOptions};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::process::Command;

/// The whole browser run: bundling (two rolldown builds), a cold Chromium start and the page,
/// on two cores shared with other builds. A healthy run takes a few seconds; past this the run
/// is killed and the test fails rather than hanging CI.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(120);

/// The shell's URI, the tool whose result the app shows, and the view it selects.
const SHELL_URI: &str = "ui://strict-mcp/browser-test";
const TOOL: &str = "greet";
const GREETING: &str = "Hello from strict-mcp, 1.50 exactly";
const VIEW: &str = "greeting";
const VIEW_DATA: &str = r#"{"to":"browser","count":3}"#;

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

/// The test server: the Apps shell at [`SHELL_URI`] with `html` and the [`VIEW`] view, and the
/// [`TOOL`] tool, which selects that view for its result.
fn server(html: String) -> Server {
    let greet = |inv: Invocation, _a| async move {
        inv.show_view(AppView::from_json(VIEW, VIEW_DATA).expect("view data"));
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
        .build()
        .expect("registry");
    Server::new(
        registry,
        ServerOptions::new()
            .server_info("apps-browser-test", "0.0.1")
            .apps(Apps {
                uri: SHELL_URI.to_owned(),
                html,
                views: vec![VIEW.to_owned()],
                ..Apps::default()
            }),
    )
    .expect("server")
}

/// Whether the test can run here; `None` skips it (never under `CI=true`, which fails).
fn peers_or_skip() -> Option<(PathBuf, PathBuf)> {
    match peers() {
        Ok(p) => Some(p),
        Err(why) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CI=true: the real browser test cannot run: {why}")
        }
        Err(why) => {
            eprintln!("skipped: {why}");
            None
        }
    }
}

/// One browser run: the node driver starts, reports its page origin, `make` builds the server
/// from the bundled test view (when `forbidden` is given), the server runs on 127.0.0.1 with
/// CORS allowing the page, and `cfg` (plus the server URL) tells the host what to call. Every
/// process and listener it starts is stopped before it returns the report.
async fn run_browser(
    (node, chromium): (PathBuf, PathBuf),
    forbidden: Option<&str>,
    screenshot: &Path,
    make: impl FnOnce(Option<String>) -> Server,
    mut cfg: Value,
) -> Value {
    let dir = out_dir();
    let view = dir.join("view.html");
    let _ = std::fs::remove_file(screenshot);
    let mut command = Command::new(&node);
    command.arg(manifest().join("interop/node/apps_browser.mjs"));
    if let Some(url) = forbidden {
        command
            .arg("--forbidden")
            .arg(url)
            .arg("--view-out")
            .arg(&view);
    }
    let mut child = command
        .arg("--screenshot")
        .arg(screenshot)
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
    let html = forbidden.map(|_| std::fs::read_to_string(&view).expect("the bundled view"));

    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let service = McpHttp::new(
        make(html),
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

    cfg["server"] = json!(format!("http://{addr}/mcp"));
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(format!("{cfg}\n").as_bytes())
        .await
        .expect("write the run's configuration");
    drop(stdin);
    let report = next_json(&mut lines, "report").await;
    if tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .is_err()
    {
        eprintln!("apps_browser.mjs (pid {pid}) still running after its report: killing it");
        let _ = child.kill().await;
    }
    let _ = stop.send(());
    let _ = tokio::time::timeout(Duration::from_secs(5), run).await;
    eprintln!("apps-browser report: {report:#}");
    assert_eq!(report.get("error"), None, "the browser run failed");
    assert_eq!(report["host"]["pageOrigin"], page_origin.as_str());
    report
}

/// The declared CSP of a shell configured with no external origin (O67: empty lists).
fn empty_csp() -> Value {
    json!({"connectDomains": [], "resourceDomains": [], "frameDomains": [], "baseUriDomains": []})
}

/// The common checks of a run: the pinned client read the shell across origins, found its URI
/// on compact `call_tool` (O62), got the Apps MIME type and CSP (O66, N7), rendered it in an
/// opaque sandboxed iframe, and left a PNG screenshot.
fn assert_shell_rendered(report: &Value, uri: &str, screenshot: &Path) {
    let host = &report["host"];
    assert_eq!(host["protocolVersion"], "2026-07-28");
    assert_eq!(
        host["toolUi"],
        json!({"resourceUri": uri, "visibility": ["model", "app"]})
    );
    assert_eq!(host["mimeType"], "text/html;profile=mcp-app");
    assert_eq!(host["declaredCsp"], empty_csp());
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
        report["view"]["origin"], "null",
        "the iframe must be opaque"
    );
    let png = std::fs::read(screenshot).expect("the screenshot");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    eprintln!("screenshot: {}", screenshot.display());
}

// Run by .ci/run's `apps-browser` step (after `chromium-install`), not by the plain `cargo test`
// step: `cargo test --test apps_browser -- --ignored`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real browser: .ci/run's apps-browser step runs it with --ignored"]
async fn o60_o66_apps_shell_renders_in_chromium_with_cors_and_csp() {
    let Some(peers) = peers_or_skip() else {
        return;
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
    let screenshot = out_dir().join("apps-browser.png");
    let report = run_browser(
        peers,
        Some(&forbidden_url),
        &screenshot,
        |html| server(html.expect("the test view")),
        // Compact mode (the default): the host runs the tool through `call_tool`.
        json!({"tool": "call_tool", "args": {"name": TOOL, "arguments": {}}}),
    )
    .await;
    forbidden_task.abort();

    assert_shell_rendered(&report, SHELL_URI, &screenshot);
    let host = &report["host"];
    assert_eq!(
        host["toolResult"]["content"],
        json!([{"type": "text", "text": GREETING}])
    );
    assert_eq!(
        host["toolResult"]["_meta"]["strict-mcp/view"],
        json!({"view": VIEW, "data": {"to": "browser", "count": 3}})
    );
    // What the app shows, read from its DOM inside the sandboxed iframe.
    let view = &report["view"];
    assert_eq!(view["result"], GREETING);
    assert_eq!(view["view"], format!("{VIEW}: {VIEW_DATA}").as_str());
    // The forbidden fetch: refused by the CSP, reported as a violation, never dialled.
    assert_eq!(view["probe"], "fetch blocked: TypeError");
    assert_eq!(
        view["violation"],
        format!("connect-src {forbidden_url}").as_str()
    );
    assert_eq!(dialled.load(Ordering::SeqCst), 0, "127.0.0.2 was dialled");
}

/// The demo app (`strict-mcp demo serve --app`) in the same host: `add` through compact
/// `call_tool`, its `sum` view shown as an equation, its text beside it.
#[cfg(feature = "cli")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real browser: .ci/run's apps-browser step runs it with --ignored"]
async fn o60_o70_demo_app_shows_the_add_result_in_chromium() {
    use strict_mcp::cli::demo::{self, DemoOptions};
    let Some(peers) = peers_or_skip() else {
        return;
    };
    let screenshot = out_dir().join("demo-app.png");
    let options = DemoOptions {
        http: None,
        mode: None,
        page_size: demo::DEFAULT_PAGE_SIZE,
        app: true,
        cors_origins: Vec::new(),
    };
    let report = run_browser(
        peers,
        None,
        &screenshot,
        |_| demo::server(&options).expect("the demo server"),
        json!({
            "tool": "call_tool",
            "args": {"name": "add", "arguments": {"a": 2, "b": 1234567890123456_u64}},
            "wait": {"id": "status", "text": "tool result shown"},
            "read": ["tool", "sum", "text", "status"],
        }),
    )
    .await;
    assert_shell_rendered(&report, demo::DEMO_APP_URI, &screenshot);
    let view = &report["view"];
    assert_eq!(view["tool"], "add");
    // Past 15 digits the view data carries strings, so nothing is rounded (O70); the operand
    // stays below 2^53 so the JavaScript host sends it exactly.
    assert_eq!(view["sum"], "2 + 1234567890123456 = 1234567890123458");
    let text = view["text"].as_str().unwrap();
    assert!(text.contains("1234567890123458"), "{text}");
}
