//! The official TypeScript SDK v2 client and Python SDK v2 client (drivers in `interop/`)
//! against the conformance server example over stdio: discover, list, call and MRTR round
//! trips, with exact expectations. One more test repeats the check over the server's
//! `--http` mode, including the `Mcp-Param-*` header of an `x-mcp-header` argument.
//!
//! The peers come from `.ci/install-peers`. Without them the tests print a skip notice and
//! pass locally; under `CI=true` a missing peer fails.

#![forbid(unsafe_code)]

mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};
use support::interop::{conformance_server, peer, root, run_driver, step};

/// Runs a driver against the stdio server and returns its JSON lines; panics with the
/// driver's output when it did not exit 0.
fn drive(interpreter: &Path, script: &str, args: &[&str], server: &Path) -> Vec<Value> {
    let mut command = Command::new(interpreter);
    command
        .arg(root().join(script))
        .args(args)
        .arg("--")
        .arg(server)
        .arg("--stdio");
    run_driver(command, script)
}

/// The same against a server URL.
fn drive_url(interpreter: &Path, script: &str, args: &[&str], url: &str) -> Vec<Value> {
    let mut command = Command::new(interpreter);
    command
        .arg(root().join(script))
        .args(args)
        .args(["--url", url]);
    run_driver(command, script)
}

fn texts(result: &Value) -> Vec<&str> {
    result["content"]
        .as_array()
        .expect("content array")
        .iter()
        .filter(|b| b["type"] == "text")
        .map(|b| b["text"].as_str().expect("text"))
        .collect()
}

const BASIC: &[&str] = &[
    "--steps",
    "discover,list,call,mrtr",
    "--tool",
    "test_simple_text",
    "--args",
    "{}",
    "--expect-text",
    "This is a simple text response for testing.",
    "--mrtr-tool",
    "test_input_required_result_elicitation",
    "--mrtr-args",
    "{}",
    "--elicit-content",
    r#"{"name":"Alice"}"#,
    "--mrtr-expect-text",
    "Hello, Alice!",
];

/// Two rounds: the same answer object carries both `name` (step 1) and `color` (step 2).
const MULTI_ROUND: &[&str] = &[
    "--steps",
    "mrtr",
    "--mrtr-tool",
    "test_input_required_result_multi_round",
    "--mrtr-args",
    "{}",
    "--elicit-content",
    r#"{"name":"Alice","color":"blue"}"#,
    "--mrtr-expect-text",
    "Both rounds answered; favourite colour: blue.",
];

/// `all_pages`: whether the driver's listing follows `nextCursor` (the TS client does; the
/// Python driver lists the first page only).
fn check_basic(lines: &[Value], all_pages: bool) {
    let connect = step(lines, "connect");
    assert_eq!(connect["transport"], "stdio");
    assert_eq!(connect["protocolVersion"], "2026-07-28");

    let discover = &step(lines, "discover")["result"];
    assert_eq!(
        discover["_meta"]["io.modelcontextprotocol/serverInfo"],
        json!({"name": "strict-mcp-conformance", "version": env!("CARGO_PKG_VERSION")})
    );
    assert_eq!(discover["supportedVersions"], json!(["2026-07-28"]));
    for capability in ["tools", "prompts", "resources", "completions", "logging"] {
        assert!(
            discover["capabilities"][capability].is_object(),
            "{capability} missing: {discover}"
        );
    }

    let listed = step(lines, "tools/list");
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .expect("tool names")
        .iter()
        .map(|n| n.as_str().expect("name"))
        .collect();
    for expected in [
        "json_schema_2020_12_tool",
        "test_simple_text",
        "test_input_required_result_elicitation",
    ] {
        assert!(names.contains(&expected), "{expected} not in {names:?}");
    }
    // 22 tools: a first page of 20 (the core's page size) and a second of two.
    if all_pages {
        assert_eq!(names.len(), 22, "{names:?}");
        assert_eq!(names.last(), Some(&"test_trigger_tool_change"));
    } else {
        assert_eq!(names.len(), 20, "{names:?}");
        assert!(listed["result"]["nextCursor"].is_string(), "{listed}");
    }

    let call = step(lines, "tools/call");
    assert_eq!(call["tool"], "test_simple_text");
    assert_eq!(
        texts(&call["result"]),
        ["This is a simple text response for testing."]
    );

    let mrtr = step(lines, "mrtr");
    assert_eq!(mrtr["rounds"], 1, "{mrtr}");
    let asked = &mrtr["elicitations"][0];
    assert_eq!(asked["message"], "What is your name?");
    assert_eq!(
        asked["requestedSchema"],
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})
    );
    assert_eq!(texts(&mrtr["result"]), ["Hello, Alice!"]);
}

fn check_multi_round(lines: &[Value]) {
    let mrtr = step(lines, "mrtr");
    assert_eq!(mrtr["rounds"], 2, "{mrtr}");
    let messages: Vec<&Value> = mrtr["elicitations"]
        .as_array()
        .expect("elicitations")
        .iter()
        .map(|e| &e["message"])
        .collect();
    assert_eq!(
        messages,
        [
            "Step 1: What is your name?",
            "Step 2: What is your favorite color?"
        ]
    );
    assert_eq!(
        texts(&mrtr["result"]),
        ["Both rounds answered; favourite colour: blue."]
    );
}

#[test]
fn typescript_sdk_client_over_stdio() {
    let Some(node) = peer(".interop/node/bin/node") else {
        return;
    };
    let server = conformance_server(&[]);
    check_basic(
        &drive(&node, "interop/node/ts_client.mjs", BASIC, &server),
        true,
    );
    check_multi_round(&drive(
        &node,
        "interop/node/ts_client.mjs",
        MULTI_ROUND,
        &server,
    ));
}

#[test]
fn python_sdk_client_over_stdio() {
    let Some(python) = peer(".interop/venv/bin/python") else {
        return;
    };
    let server = conformance_server(&[]);
    check_basic(
        &drive(&python, "interop/python/py_client.py", BASIC, &server),
        false,
    );
    check_multi_round(&drive(
        &python,
        "interop/python/py_client.py",
        MULTI_ROUND,
        &server,
    ));
}

/// The conformance server in `--http` mode; killed on drop.
struct HttpServer {
    child: Child,
    url: String,
}

impl HttpServer {
    fn start(binary: &Path) -> HttpServer {
        let mut child = Command::new(binary)
            .args(["--http", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("server starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("listening line");
        let announced: Value = serde_json::from_str(&line).expect("JSON listening line");
        let url = announced["listening"]
            .as_str()
            .expect("listening URL")
            .to_owned();
        assert!(
            url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
            "{url}"
        );
        HttpServer { child, url }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `test_header_params` declares `region` as `x-mcp-header: Region`, so both clients must
/// mirror it into `Mcp-Param-Region`; the host refuses a call whose header is missing or
/// differs (-32020), so a passing call proves the header arrived and matched.
const HTTP_STEPS: &[&str] = &[
    "--steps",
    "discover,list,call,mrtr",
    "--tool",
    "test_header_params",
    "--args",
    r#"{"region":"eu-west","text":"hi"}"#,
    "--expect-text",
    "eu-west: hi",
    "--mrtr-tool",
    "test_input_required_result_elicitation",
    "--mrtr-args",
    "{}",
    "--elicit-content",
    r#"{"name":"Alice"}"#,
    "--mrtr-expect-text",
    "Hello, Alice!",
];

#[test]
fn both_sdk_clients_over_http() {
    let (Some(node), Some(python)) = (
        peer(".interop/node/bin/node"),
        peer(".interop/venv/bin/python"),
    ) else {
        return;
    };
    let server = HttpServer::start(&conformance_server(&[]));
    for (interpreter, script) in [
        (&node, "interop/node/ts_client.mjs"),
        (&python, "interop/python/py_client.py"),
    ] {
        let lines = drive_url(interpreter, script, HTTP_STEPS, &server.url);
        assert_eq!(step(&lines, "connect")["transport"], "http");
        let call = step(&lines, "tools/call");
        assert_eq!(call["tool"], "test_header_params");
        assert_eq!(texts(&call["result"]), ["eu-west: hi"]);
        let mrtr = step(&lines, "mrtr");
        assert_eq!(mrtr["rounds"], 1, "{mrtr}");
        assert_eq!(texts(&mrtr["result"]), ["Hello, Alice!"]);
    }
}

/// O120, O117, O118: the official Inspector CLI 2.12.0 (`--cli --protocol-era modern`) lists and
/// calls tools of the conformance server over stdio and over Streamable HTTP (on HTTP through
/// `test_header_params`, so its `Mcp-Param-Region` header must match). The Inspector declares no
/// elicitation capability, so it has no MRTR step (interop/README.md).
#[test]
fn inspector_cli_over_stdio_and_http() {
    let (Some(_node), Some(_inspector)) = (
        peer(".interop/node/bin/node"),
        peer("interop/node/node_modules/@modelcontextprotocol/inspector"),
    ) else {
        return;
    };
    let server = conformance_server(&[]);
    let bash = Path::new("bash");
    let simple = "This is a simple text response for testing.";
    let lines = drive(
        bash,
        "interop/inspector.sh",
        &[
            "--tool",
            "test_simple_text",
            "--args",
            "{}",
            "--expect-text",
            simple,
        ],
        &server,
    );
    let listed = step(&lines, "tools/list");
    assert!(
        listed["result"]["tools"]
            .as_array()
            .expect("tools array")
            .iter()
            .any(|t| t["name"] == "test_simple_text"),
        "{listed}"
    );
    assert_eq!(texts(&step(&lines, "tools/call")["result"]), vec![simple]);

    let http = HttpServer::start(&server);
    let lines = drive_url(
        bash,
        "interop/inspector.sh",
        &[
            "--tool",
            "test_header_params",
            "--args",
            r#"{"region":"eu-west","text":"hi"}"#,
            "--expect-text",
            "eu-west: hi",
        ],
        &http.url,
    );
    assert_eq!(
        texts(&step(&lines, "tools/call")["result"]),
        vec!["eu-west: hi"]
    );
}
