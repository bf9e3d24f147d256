//! The initialise era against a real peer (feature `legacy`, issue #18): the official
//! TypeScript SDK v2 client in its default version negotiation (which opens with
//! `initialize`) drives the conformance server built with `legacy` over stdio
//! (`interop/node/ts_legacy.mjs`): ping, tools, resources, prompts, the unknown-resource error
//! and the `confirmation_required` failure (X22); the same over legacy Streamable HTTP, and the
//! SDK v1 client over HTTP with session termination (`interop/node/sdk1_legacy.mjs`). A missing
//! peer fails when `CI=true`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

mod support;

use support::evidence::{Outcome, Recorder};
use support::interop::{self, step};

/// The driver: the TypeScript SDK v2 client in its default negotiation.
const DRIVER: &str = "interop/node/ts_legacy.mjs";

/// The peer at `relative`, or `None` after recording the skip (a missing peer fails under CI).
fn peer(rec: &Recorder, relative: &str) -> Option<PathBuf> {
    let found = interop::peer(relative);
    if found.is_none() {
        rec.skip(&format!("{relative} is not installed"));
    }
    found
}

/// The driver's steps that are one request each, with the method the SDK sent for it and
/// how its answer ended when the step succeeded (`connect` is the `initialize` exchange;
/// the unknown-resource step succeeds only on the server's error).
const STEPS: [(&str, &str, Outcome); 10] = [
    ("connect", "initialize", Outcome::Result),
    ("ping", "ping", Outcome::Result),
    ("tools/list", "tools/list", Outcome::Result),
    ("tools/call", "tools/call", Outcome::Result),
    ("resources/list", "resources/list", Outcome::Result),
    ("resources/read", "resources/read", Outcome::Result),
    ("resources/read-unknown", "resources/read", Outcome::Error),
    ("tools/call-needs-input", "tools/call", Outcome::Result),
    ("prompts/list", "prompts/list", Outcome::Result),
    ("prompts/get", "prompts/get", Outcome::Result),
];

/// Contract evidence (transport `legacy-stdio-server`): each step the SDK client reported
/// done, as the exchange it stands for.
fn observe(rec: &Recorder, lines: &[Value]) {
    for line in lines.iter().filter(|l| l["ok"] == true) {
        if let Some((_, method, outcome)) = STEPS.iter().find(|(s, _, _)| line["step"] == *s) {
            rec.observed("legacy-stdio-server", method, *outcome);
        }
    }
}

fn drive(node: &Path, server: &Path) -> Vec<Value> {
    let mut command = Command::new(node);
    command
        .arg(interop::root().join(DRIVER))
        .arg("--")
        .arg(server)
        .arg("--stdio");
    interop::run_driver(command, DRIVER)
}

/// The conformance server built with `legacy` (a no-op when fresh).
fn legacy_server() -> PathBuf {
    interop::conformance_server(&["legacy"])
}

/// Runs `script` under `program` with `args` and reads its JSON lines (ending `done`, ok).
fn run_driver(program: &Path, script: &str, args: &[&std::ffi::OsStr]) -> Vec<Value> {
    let mut command = Command::new(program);
    command.arg(interop::root().join(script)).args(args);
    interop::run_driver(command, script)
}

/// The conformance server on loopback HTTP (`--http 127.0.0.1:0`), killed by its pid when
/// dropped.
struct HttpServer {
    child: std::process::Child,
    url: String,
}

impl HttpServer {
    fn start(binary: &Path) -> Self {
        use std::io::BufRead as _;
        let mut child = Command::new(binary)
            .args(["--http", "127.0.0.1:0"])
            .env("RUST_LOG", "warn")
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("the server starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut line = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .expect("the server prints its address");
        let listening: Value = serde_json::from_str(&line).expect("one JSON line");
        let url = listening["listening"].as_str().expect("a URL").to_owned();
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        HttpServer { child, url }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn b23_typescript_sdk_default_negotiation_over_stdio() {
    let rec = support::evidence::recorder!();
    let Some(node) = peer(&rec, ".interop/node/bin/node") else {
        return;
    };
    let lines = drive(&node, &legacy_server());
    observe(&rec, &lines);
    check_ts_steps(&lines);
}

/// The same steps over legacy Streamable HTTP: `initialize` starts an `Mcp-Session-Id`
/// session, every later request carries it (B23 on HTTP).
#[test]
fn b23_typescript_sdk_default_negotiation_over_streamable_http() {
    let Some(node) = interop::peer(".interop/node/bin/node") else {
        return;
    };
    let server = HttpServer::start(&legacy_server());
    let lines = run_driver(
        &node,
        "interop/node/ts_legacy.mjs",
        &["--url".as_ref(), server.url.as_ref()],
    );
    assert_eq!(step(&lines, "connect")["transport"], "http");
    check_ts_steps(&lines);
}

fn check_ts_steps(lines: &[Value]) {
    let connect = step(lines, "connect");
    assert_eq!(connect["era"], "legacy", "{connect}");
    assert_eq!(connect["protocolVersion"], "2025-11-25");
    assert_eq!(
        connect["capabilities"],
        json!({"completions":{},"logging":{},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"tools":{"listChanged":true}})
    );
    assert_eq!(step(lines, "ping")["result"], json!({}));
    let tools = step(lines, "tools/list")["tools"]
        .as_array()
        .unwrap()
        .clone();
    assert!(tools.contains(&json!("test_simple_text")), "{tools:?}");
    assert_eq!(
        step(lines, "tools/call")["result"],
        json!({"content":[{"type":"text","text":"This is a simple text response for testing."}]})
    );
    assert_eq!(
        step(lines, "resources/list")["resources"],
        // The Skills fixtures' files are static resources of the same registry (N34).
        json!([
            "skill://pdf-processing/SKILL.md",
            "skill://pdf-processing/references/FORMS.md",
            "skill://team/code-review/SKILL.md",
            "test://static-binary",
            "test://static-text"
        ])
    );
    assert_eq!(
        step(lines, "resources/read")["result"]["contents"][0]["text"],
        "This is the content of the static text resource."
    );
    assert_eq!(
        step(lines, "resources/read-unknown")["message"],
        "Resource not found"
    );
    assert_eq!(
        step(lines, "tools/call-needs-input")["result"]["isError"],
        true
    );
    assert_eq!(
        step(lines, "prompts/get")["result"]["messages"][0]["content"]["text"],
        "This is a simple prompt for testing."
    );
}

/// SDK v1 (`@modelcontextprotocol/sdk` 1.32.2 as resolved in `interop/node/package-lock.json`)
/// knows only the initialise era: connect with an issued `Mcp-Session-Id`, list, call, read,
/// a prompt, then DELETE of the session and a 404 for the ended id.
#[test]
fn b23_typescript_sdk_v1_over_streamable_http_with_session_termination() {
    let Some(node) = interop::peer(".interop/node/bin/node") else {
        return;
    };
    if interop::peer("interop/node/node_modules/@modelcontextprotocol/sdk/package.json").is_none() {
        return;
    }
    let server = HttpServer::start(&legacy_server());
    let lines = run_driver(
        &node,
        "interop/node/sdk1_legacy.mjs",
        &["--url".as_ref(), server.url.as_ref()],
    );
    let connect = step(&lines, "connect");
    assert_eq!(connect["protocolVersion"], "2025-11-25", "{connect}");
    let session = connect["sessionId"].as_str().expect("an issued session id");
    assert_eq!(session.len(), 32, "{session}");
    assert_eq!(
        connect["capabilities"],
        json!({"completions":{},"logging":{},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"tools":{"listChanged":true}})
    );
    assert_eq!(step(&lines, "ping")["result"], json!({}));
    assert_eq!(
        step(&lines, "tools/call")["result"],
        json!({"content":[{"type":"text","text":"This is a simple text response for testing."}]})
    );
    assert_eq!(
        step(&lines, "resources/read")["result"]["contents"][0]["text"],
        "This is the content of the static text resource."
    );
    assert_eq!(
        step(&lines, "prompts/get")["result"]["messages"][0]["content"]["text"],
        "This is a simple prompt for testing."
    );
    assert_eq!(step(&lines, "terminate")["sessionId"], Value::Null);
    let after = step(&lines, "after-terminate");
    assert_eq!(after["status"], 404);
    assert_eq!(
        after["body"],
        json!({"jsonrpc":"2.0","id":9,"error":{"code":-32001,"message":"Session not found"}})
    );
}

/// The Python SDK v2 client (`mcp` 2.3.0, `.interop/venv`) in its legacy mode (the
/// `initialize` handshake) on both transports: connect at 2025-11-25, list, call.
#[test]
fn b23_python_sdk_legacy_mode_over_stdio_and_streamable_http() {
    let Some(python) = interop::peer(".interop/venv/bin/python") else {
        return;
    };
    let binary = legacy_server();
    let server = HttpServer::start(&binary);
    let common: [&std::ffi::OsStr; 9] = [
        "--era".as_ref(),
        "legacy".as_ref(),
        "--steps".as_ref(),
        "list,call".as_ref(),
        "--tool".as_ref(),
        "test_simple_text".as_ref(),
        "--args".as_ref(),
        "{}".as_ref(),
        "--expect-text".as_ref(),
    ];
    let text: &std::ffi::OsStr = "This is a simple text response for testing.".as_ref();
    for (transport, tail) in [
        ("http", vec!["--url".as_ref(), server.url.as_ref()]),
        (
            "stdio",
            vec!["--".as_ref(), binary.as_os_str(), "--stdio".as_ref()],
        ),
    ] {
        let mut args: Vec<&std::ffi::OsStr> = common.to_vec();
        args.push(text);
        args.extend(tail);
        let lines = run_driver(&python, "interop/python/py_client.py", &args);
        let connect = step(&lines, "connect");
        assert_eq!(connect["transport"], transport, "{connect}");
        assert_eq!(connect["mode"], "legacy");
        assert_eq!(connect["protocolVersion"], "2025-11-25");
        assert_eq!(
            step(&lines, "tools/call")["result"]["content"],
            json!([{"type":"text","text":"This is a simple text response for testing."}])
        );
        assert_eq!(step(&lines, "done")["ok"], true);
    }
}

/// The Inspector CLI (`@modelcontextprotocol/inspector` 2.12.0) in its default era (it opens
/// with `initialize`; `interop/inspector.sh --era default` passes no `--protocol-era`)
/// against the legacy-enabled conformance server over stdio and HTTP: list, call,
/// resources, prompts. Every result is in the legacy shape (no `resultType`), which is how
/// the era shows.
#[test]
fn b23_inspector_cli_default_era_over_stdio_and_http() {
    let (Some(_node), Some(_inspector)) = (
        interop::peer(".interop/node/bin/node"),
        interop::peer("interop/node/node_modules/@modelcontextprotocol/inspector"),
    ) else {
        return;
    };
    let binary = legacy_server();
    let server = HttpServer::start(&binary);
    let simple = "This is a simple text response for testing.";
    let words = [
        "--era",
        "default",
        "--steps",
        "list,call,resources,read,prompts,prompt",
        "--tool",
        "test_simple_text",
        "--args",
        "{}",
        "--expect-text",
        simple,
    ];
    let common: Vec<&std::ffi::OsStr> = words.iter().map(|s| s.as_ref()).collect();
    for tail in [
        vec!["--url".as_ref(), server.url.as_ref()],
        vec!["--".as_ref(), binary.as_os_str(), "--stdio".as_ref()],
    ] {
        let mut args = common.clone();
        args.extend(tail);
        let lines = run_driver(Path::new("bash"), "interop/inspector.sh", &args);
        for name in [
            "tools/list",
            "tools/call",
            "resources/list",
            "resources/read",
            "prompts/list",
            "prompts/get",
        ] {
            let s = step(&lines, name);
            assert_eq!(s["ok"], true, "{s}");
            assert!(s["result"].get("resultType").is_none(), "legacy shape: {s}");
        }
        assert_eq!(
            step(&lines, "tools/call")["result"],
            json!({"content":[{"type":"text","text":simple}]})
        );
        assert_eq!(
            step(&lines, "resources/read")["result"]["contents"][0]["text"],
            "This is the content of the static text resource."
        );
        assert_eq!(
            step(&lines, "prompts/get")["result"]["messages"][0]["content"]["text"],
            "This is a simple prompt for testing."
        );
        assert!(step(&lines, "resources/list")["result"]["resources"]
            .as_array()
            .expect("resources")
            .iter()
            .any(|r| r["uri"] == "test://static-text"));
        assert!(step(&lines, "prompts/list")["result"]["prompts"]
            .as_array()
            .expect("prompts")
            .iter()
            .any(|p| p["name"] == "test_simple_prompt"));
    }
}
