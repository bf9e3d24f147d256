//! The initialise era against a real peer (feature `legacy`, issue #18): the official
//! TypeScript SDK v2 client in its default version negotiation (which opens with
//! `initialize`) drives the conformance server built with `legacy` over stdio
//! (`interop/node/ts_legacy.mjs`): ping, tools, resources, prompts, the unknown-resource error,
//! an elicitation round (the server's own `elicitation/create` answered by the client's
//! handler, O126), the `confirmation_required` failure (X22) and a subscription
//! (`resources/subscribe`, the `notifications/resources/updated` that
//! `test_touch_resource` causes, `resources/unsubscribe`); the same over legacy Streamable
//! HTTP; the SDK v1 client (`interop/node/sdk1_legacy.mjs`) with the same elicitation round
//! and subscription on both transports (HTTP with session termination); the Python SDK v2
//! client in legacy mode with both on both transports; the Inspector CLI in its default era
//! (list, call, resources, prompts: its CLI mode can neither answer an elicitation nor
//! subscribe, see [`b23_inspector_cli_default_era_over_stdio_and_http`]). A missing peer
//! fails when `CI=true`.

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
const STEPS: [(&str, &str, Outcome); 14] = [
    ("connect", "initialize", Outcome::Result),
    ("ping", "ping", Outcome::Result),
    ("tools/list", "tools/list", Outcome::Result),
    ("tools/call", "tools/call", Outcome::Result),
    ("resources/list", "resources/list", Outcome::Result),
    ("resources/read", "resources/read", Outcome::Result),
    ("resources/read-unknown", "resources/read", Outcome::Error),
    ("elicitation", "tools/call", Outcome::Result),
    ("tools/call-needs-input", "tools/call", Outcome::Result),
    (
        "resources/subscribe",
        "resources/subscribe",
        Outcome::Result,
    ),
    ("resources/updated", "tools/call", Outcome::Result),
    (
        "resources/unsubscribe",
        "resources/unsubscribe",
        Outcome::Result,
    ),
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
    // X22: sampling, which this client did not declare, is the confirmation_required failure.
    assert_eq!(
        step(lines, "tools/call-needs-input")["result"],
        confirmation_required()
    );
    check_elicitation(lines);
    check_subscription(lines);
    assert_eq!(
        step(lines, "prompts/get")["result"]["messages"][0]["content"]["text"],
        "This is a simple prompt for testing."
    );
}

/// The `confirmation_required` tool failure (X22) as every SDK reports the result.
fn confirmation_required() -> Value {
    let failure = json!({"failure": {
        "code": "confirmation_required",
        "message": "This tool needs an answer from the user, which this client session cannot provide.",
        "retryable": false,
    }});
    json!({
        "content": [{"type": "text", "text": failure.to_string()}],
        "structuredContent": failure,
        "isError": true,
    })
}

/// O126: the `elicitation` step's `test_elicitation` call: the server sent exactly one
/// `elicitation/create` (the form the fixture asks, in 2025-11-25 shape), the driver's handler
/// accepted it with `{username: "octocat", email: "octocat@example.com"}`, and the tool's result
/// shows that answer came back through the re-entered handler.
fn check_elicitation(lines: &[Value]) {
    let s = step(lines, "elicitation");
    assert_eq!(
        s["elicitations"],
        json!([{"mode": "form", "message": "Who are you?", "requestedSchema": {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        }}]),
        "{s}"
    );
    assert_eq!(
        s["result"]["content"],
        json!([{"type": "text", "text":
            "User response: action=accept, content={\"email\":\"octocat@example.com\",\"username\":\"octocat\"}"}]),
        "{s}"
    );
    assert_ne!(s["result"]["isError"], true, "{s}");
}

/// The subscription round: `resources/subscribe` to `test://static-text` answered `{}`, the
/// first `notifications/resources/updated` the client received names that uri (after a
/// `test_touch_resource` call announced its update), `resources/unsubscribe` answered `{}`.
fn check_subscription(lines: &[Value]) {
    assert_eq!(step(lines, "resources/subscribe")["result"], json!({}));
    let updated = step(lines, "resources/updated");
    assert_eq!(updated["uri"], "test://static-text", "{updated}");
    assert_eq!(
        updated["touch"]["content"],
        json!([{"type": "text", "text": "Touched test://static-text"}])
    );
    assert_eq!(step(lines, "resources/unsubscribe")["result"], json!({}));
}

/// SDK v1 (`@modelcontextprotocol/sdk` 1.32.2 as resolved in `interop/node/package-lock.json`)
/// knows only the initialise era: connect with an issued `Mcp-Session-Id`, list, call, read,
/// a prompt, an elicitation round and a subscription, then DELETE of the session and a 404 for
/// the ended id.
#[test]
fn b23_typescript_sdk_v1_over_streamable_http_with_session_termination() {
    let Some(node) = sdk1_peer() else {
        return;
    };
    let server = HttpServer::start(&legacy_server());
    let lines = run_driver(
        &node,
        "interop/node/sdk1_legacy.mjs",
        &["--url".as_ref(), server.url.as_ref()],
    );
    let connect = check_sdk1_steps(&lines, "http");
    let session = connect["sessionId"].as_str().expect("an issued session id");
    assert_eq!(session.len(), 32, "{session}");
    assert_eq!(step(&lines, "terminate")["sessionId"], Value::Null);
    let after = step(&lines, "after-terminate");
    assert_eq!(after["status"], 404);
    assert_eq!(
        after["body"],
        json!({"jsonrpc":"2.0","id":9,"error":{"code":-32001,"message":"Session not found"}})
    );
}

/// SDK v1 over stdio: the same steps (no session id, nothing to terminate: the session is the
/// process).
#[test]
fn b23_typescript_sdk_v1_over_stdio() {
    let Some(node) = sdk1_peer() else {
        return;
    };
    let binary = legacy_server();
    let lines = run_driver(
        &node,
        "interop/node/sdk1_legacy.mjs",
        &["--".as_ref(), binary.as_os_str(), "--stdio".as_ref()],
    );
    let connect = check_sdk1_steps(&lines, "stdio");
    assert_eq!(connect["sessionId"], Value::Null);
    assert!(lines.iter().all(|l| l["step"] != "terminate"));
}

/// Node, when SDK v1 is installed too (a missing peer fails under CI).
fn sdk1_peer() -> Option<PathBuf> {
    let node = interop::peer(".interop/node/bin/node")?;
    interop::peer("interop/node/node_modules/@modelcontextprotocol/sdk/package.json")?;
    Some(node)
}

/// The SDK v1 steps both transports share; returns the `connect` line.
fn check_sdk1_steps(lines: &[Value], transport: &str) -> Value {
    let connect = step(lines, "connect").clone();
    assert_eq!(connect["transport"], transport, "{connect}");
    assert_eq!(connect["protocolVersion"], "2025-11-25", "{connect}");
    assert_eq!(
        connect["capabilities"],
        json!({"completions":{},"logging":{},"prompts":{"listChanged":true},"resources":{"listChanged":true,"subscribe":true},"tools":{"listChanged":true}})
    );
    assert_eq!(step(lines, "ping")["result"], json!({}));
    assert_eq!(
        step(lines, "tools/call")["result"],
        json!({"content":[{"type":"text","text":"This is a simple text response for testing."}]})
    );
    assert_eq!(
        step(lines, "resources/read")["result"]["contents"][0]["text"],
        "This is the content of the static text resource."
    );
    assert_eq!(
        step(lines, "prompts/get")["result"]["messages"][0]["content"]["text"],
        "This is a simple prompt for testing."
    );
    check_elicitation(lines);
    check_subscription(lines);
    assert_eq!(step(lines, "done")["ok"], true);
    connect
}

/// The Python SDK v2 client (`mcp` 2.3.0, `.interop/venv`) in its legacy mode (the
/// `initialize` handshake) on both transports: connect at 2025-11-25, list, call, an
/// elicitation round (`--steps elicit`: `test_elicitation` answered by its
/// `elicitation_callback`) and a subscription (`--steps subscribe`).
#[test]
fn b23_python_sdk_legacy_mode_over_stdio_and_streamable_http() {
    let Some(python) = interop::peer(".interop/venv/bin/python") else {
        return;
    };
    let binary = legacy_server();
    let server = HttpServer::start(&binary);
    let common: [&std::ffi::OsStr; 16] = [
        "--era".as_ref(),
        "legacy".as_ref(),
        "--steps".as_ref(),
        "list,call,elicit,subscribe".as_ref(),
        "--tool".as_ref(),
        "test_simple_text".as_ref(),
        "--args".as_ref(),
        "{}".as_ref(),
        "--mrtr-tool".as_ref(),
        "test_elicitation".as_ref(),
        "--mrtr-args".as_ref(),
        r#"{"message":"Who are you?"}"#.as_ref(),
        "--elicit-content".as_ref(),
        r#"{"username":"octocat","email":"octocat@example.com"}"#.as_ref(),
        "--subscribe-uri".as_ref(),
        "test://static-text".as_ref(),
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
        args.push("--expect-text".as_ref());
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
        // The Python SDK reports a result with its defaults filled in (`isError: false`, and
        // `resultType`, which the legacy wire does not carry: the SDK's own model default).
        check_elicitation(&lines);
        check_subscription(&lines);
        assert_eq!(step(&lines, "done")["ok"], true);
    }
}

/// The Inspector CLI (`@modelcontextprotocol/inspector` 2.12.0) in its default era (it opens
/// with `initialize`; `interop/inspector.sh --era default` passes no `--protocol-era`)
/// against the legacy-enabled conformance server over stdio and HTTP: list, call,
/// resources, prompts. Every result is in the legacy shape (no `resultType`), which is how
/// the era shows.
///
/// Neither an elicitation round nor a subscription can be driven through it: its CLI builds
/// its client with `elicit: false` (`clients/cli/build/index.js`, the `new InspectorClient(…)`
/// of the one-shot runner), so it declares no elicitation capability at `initialize` and a
/// tool that asks gets the `confirmation_required` failure, and `--cli --method
/// resources/subscribe` is refused by the CLI itself: "Unsupported method:
/// resources/subscribe. Supported --cli methods: initialize, tools/list, tools/call,
/// resources/list, resources/read, resources/templates/list, prompts/list, prompts/get,
/// logging/setLevel, skills/list, skills/get, resources/directory/read, servers/list,
/// servers/show, servers/add, servers/edit, servers/remove." (2.12.0).
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
