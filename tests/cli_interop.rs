//! The `strict-mcp` command against the official TypeScript SDK v2 reference server
//! (`interop/node/ref_server.mjs`, `@modelcontextprotocol/server` 2.4.0): tools list / call
//! over stdio and HTTP, and `check` with every verdict pinned together with its evidence, so
//! any change in the peer (or in the audit) is a visible diff.
//!
//! Needs the pinned peers (`.ci/install-peers`); a skip notice locally, a failure under
//! `CI=true`.
#![cfg(unix)]

#[path = "support/cli.rs"]
mod cli;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const EXE: &str = env!("CARGO_BIN_EXE_strict-mcp");

/// The longest a single CLI run may take before it counts as hung (the batch rule waits out
/// its --timeout against this peer on stdio).
const RUN_BOUND: Duration = Duration::from_secs(90);

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn peers() -> Option<(PathBuf, PathBuf)> {
    let node = root().join(".interop/node/bin/node");
    let modules = root().join("interop/node/node_modules");
    if let Some(missing) = [&node, &modules].into_iter().find(|p| !p.exists()) {
        let in_ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(
            !in_ci,
            "peer missing under CI=true: {} (run .ci/install-peers)",
            missing.display()
        );
        eprintln!(
            "SKIP: {} missing (run .ci/install-peers)",
            missing.display()
        );
        return None;
    }
    Some((node, root().join("interop/node/ref_server.mjs")))
}

fn run(args: &[&str]) -> Output {
    let mut child = Command::new(EXE)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn strict-mcp");
    let start = Instant::now();
    loop {
        if child.try_wait().expect("try_wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if start.elapsed() > RUN_BOUND {
            let _ = child.kill();
            panic!("strict-mcp did not finish within {RUN_BOUND:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The reference server over HTTP, killed when dropped.
struct RefHttp(Child, String);

impl RefHttp {
    fn start(node: &Path, server: &Path) -> RefHttp {
        let mut child = Command::new(node)
            .arg(server)
            .args(["--http", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn ref server");
        let url = cli::listening_url(&mut child);
        RefHttp(child, url)
    }
}

impl Drop for RefHttp {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exit code")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `rule pass status code` per verdict.
fn verdicts(o: &Output) -> Vec<String> {
    stdout(o)
        .lines()
        .map(|l| {
            let r: Value = serde_json::from_str(l).expect("record");
            let a = &r["answer"];
            format!(
                "{} {} status={} code={} result={} none={}{}",
                r["rule"].as_str().unwrap_or_default(),
                if r["pass"] == true { "pass" } else { "FAIL" },
                a["status"],
                a["code"],
                a["result"],
                a["none"],
                a.get("note")
                    .map(|n| format!(" note={n}"))
                    .unwrap_or_default()
            )
        })
        .collect()
}

#[test]
fn o92_tools_list_and_call_against_the_ts_sdk_server() {
    let Some((node, server)) = peers() else {
        return;
    };
    let http = RefHttp::start(&node, &server);
    let stdio = format!("'{}' '{}'", node.display(), server.display());
    for selection in [["--url", http.1.as_str()], ["--stdio", stdio.as_str()]] {
        let mut args = vec!["tools", "list"];
        args.extend(selection);
        let o = run(&args);
        assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
        assert!(stdout(&o).contains("\necho "), "{}", stdout(&o));
        let mut args = vec!["tools", "call", "echo", "--args", r#"{"text":"hi"}"#];
        args.extend(selection);
        let o = run(&args);
        assert_eq!((code(&o), stdout(&o)), (0, "hi\n".to_owned()));
    }
}

#[test]
fn check_pins_the_ts_sdk_server_verdicts_over_http() {
    let Some((node, server)) = peers() else {
        return;
    };
    let http = RefHttp::start(&node, &server);
    let o = run(&[
        "check",
        "--url",
        &http.1,
        "--json",
        "--mrtr-tool",
        "confirm_echo",
        "--mrtr-args",
        r#"{"text":"hi"}"#,
    ]);
    // Foreign Origin accepted: a MUST that this peer breaks.
    assert_eq!(code(&o), 7);
    assert_eq!(
        verdicts(&o),
        [
            "discover-offers-2026-07-28 pass status=200 code=null result=true none=null",
            "unsupported-version-is-32022 pass status=400 code=-32022 result=false none=null",
            "unknown-method-is-32601 pass status=404 code=-32601 result=false none=null",
            "batch-rejected pass status=400 code=-32600 result=false none=null",
            "duplicate-keys-rejected FAIL status=200 code=null result=true none=null",
            "id-over-256-bytes-rejected FAIL status=200 code=null result=true none=null",
            // A 257-byte method is answered as an unknown method, not refused as too long.
            "method-over-256-bytes-rejected FAIL status=404 code=-32601 result=false none=null",
            "foreign-host-refused pass status=403 code=-32000 result=false none=null",
            "foreign-origin-is-403 FAIL status=200 code=null result=true none=null",
            "method-header-mismatch-is-32020 pass status=400 code=-32020 result=false none=null",
            "pages-chain pass status=200 code=null result=true none=null",
            "list-cache-hints pass status=200 code=null result=true none=null",
            "input-schema-is-object pass status=200 code=null result=true none=null",
            "schema-dialect-2020-12 pass status=200 code=null result=true none=null",
            // An invalid cursor gets the first page (a SHOULD broken).
            "invalid-cursor-is-32602 FAIL status=200 code=null result=true none=null note=\"not refused with -32602\"",
            // The fixture's requestState is a fixed, unsealed string: the SDK leaves its
            // integrity to the tool, and this tool takes any state (a MUST broken).
            "tampered-state-refused FAIL status=200 code=null result=true none=null note=\"a tampered requestState was not refused\"",
            "missing-meta-is-32602 pass status=400 code=-32602 result=false none=null",
            "initialize-is-unknown pass status=404 code=-32601 result=false none=null",
            "frame-over-2-mib-rejected FAIL status=200 code=null result=true none=null",
        ]
    );
    // Without --mrtr-tool: no tool of this peer is annotated readOnlyHint: true, so none is
    // called on a guess and the MRTR rule is reported as not run.
    let o = run(&["check", "--url", &http.1, "--json"]);
    assert!(
        verdicts(&o)
            .iter()
            .all(|v| !v.starts_with("tampered-state-refused")),
        "{:?}",
        verdicts(&o)
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("tampered-state-refused (X21) not run"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn check_pins_the_ts_sdk_server_verdicts_over_stdio() {
    let Some((node, server)) = peers() else {
        return;
    };
    let stdio = format!("'{}' '{}'", node.display(), server.display());
    let o = run(&[
        "check",
        "--stdio",
        &stdio,
        "--json",
        "--timeout",
        "3",
        "--mrtr-tool",
        "confirm_echo",
        "--mrtr-args",
        r#"{"text":"hi"}"#,
    ]);
    assert_eq!(code(&o), 7);
    assert_eq!(
        verdicts(&o),
        [
            "discover-offers-2026-07-28 pass status=null code=null result=true none=null",
            "unsupported-version-is-32022 pass status=null code=-32022 result=false none=null",
            "unknown-method-is-32601 pass status=null code=-32601 result=false none=null",
            // The batch is never answered.
            "batch-rejected FAIL status=null code=null result=false none=\"timed out\"",
            "duplicate-keys-rejected FAIL status=null code=null result=true none=null",
            "id-over-256-bytes-rejected FAIL status=null code=null result=true none=null",
            "method-over-256-bytes-rejected FAIL status=null code=-32601 result=false none=null",
            "pages-chain pass status=null code=null result=true none=null",
            "list-cache-hints pass status=null code=null result=true none=null",
            "input-schema-is-object pass status=null code=null result=true none=null",
            "schema-dialect-2020-12 pass status=null code=null result=true none=null",
            "invalid-cursor-is-32602 FAIL status=null code=null result=true none=null note=\"not refused with -32602\"",
            "tampered-state-refused FAIL status=null code=null result=true none=null note=\"a tampered requestState was not refused\"",
            "missing-meta-is-32602 pass status=null code=-32602 result=false none=null",
            "initialize-is-unknown pass status=null code=-32601 result=false none=null",
            "frame-over-2-mib-rejected FAIL status=null code=null result=true none=null",
        ]
    );
}

/// The Python SDK v2 server (`interop/python/py_server.py`, `mcp` 2.3.0), if installed.
fn py_peer() -> Option<(PathBuf, PathBuf)> {
    let python = root().join(".interop/venv/bin/python");
    let server = root().join("interop/python/py_server.py");
    if !python.exists() {
        let in_ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(
            !in_ci,
            "peer missing under CI=true: {} (run .ci/install-peers)",
            python.display()
        );
        eprintln!("SKIP: {} missing (run .ci/install-peers)", python.display());
        return None;
    }
    Some((python, server))
}

#[test]
fn o98_tools_list_call_and_mrtr_against_the_python_sdk_server() {
    let Some((python, server)) = py_peer() else {
        return;
    };
    let http = RefHttp::start(&python, &server);
    let stdio = format!("'{}' '{}'", python.display(), server.display());
    let dir = std::env::temp_dir().join(format!("strict-mcp-cli-py-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let responses = dir.join("responses.json");
    // The SDK keys its input request by the resolver's qualified name.
    std::fs::write(
        &responses,
        r#"{"rounds":[{"__main__:ask_confirm":{"action":"accept","content":{"confirm":true}}}]}"#,
    )
    .expect("write");
    let responses = responses.display().to_string();
    for selection in [["--url", http.1.as_str()], ["--stdio", stdio.as_str()]] {
        let with = |args: &[&str]| {
            let mut all = args.to_vec();
            all.extend(selection);
            run(&all)
        };
        let o = with(&["tools", "list"]);
        assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
        assert!(stdout(&o).contains("\nconfirm_echo "), "{}", stdout(&o));
        let o = with(&["tools", "call", "echo", "--args", r#"{"text":"hi"}"#]);
        assert_eq!(
            (code(&o), stdout(&o)),
            (0, "{\n  \"result\": \"hi\"\n}\n".to_owned())
        );
        let o = with(&[
            "tools",
            "call",
            "confirm_echo",
            "--args",
            r#"{"text":"yo"}"#,
            "--responses",
            &responses,
        ]);
        assert_eq!(
            (code(&o), stdout(&o)),
            (0, "{\n  \"result\": \"confirmed: yo\"\n}\n".to_owned()),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let o = with(&["tools", "call", "fail", "--args", "{}"]);
        assert_eq!(code(&o), 1);
    }
}
