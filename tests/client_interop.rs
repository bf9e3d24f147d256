//! The strict client against servers built on the official SDKs (O71–O86, K-section [C],
//! I-section; issue #14): `interop/node/ts_server.mjs` (TypeScript SDK v2,
//! `@modelcontextprotocol/server` 2.4.0) and `interop/python/py_server.py` (Python SDK v2,
//! `mcp` 2.3.0), each over stdio and over Streamable HTTP on 127.0.0.1.
//!
//! Every peer × transport runs the same walk with exact expectations: discovery, `tools/list`,
//! `tools/call` of `echo`, one MRTR round of `confirm_echo` (answered through
//! [`RoundInput::answer`], `requestState` echoed byte for byte), `resources/list` and
//! `resources/read`, `prompts/list` and `prompts/get`, and `subscriptions/listen`: the
//! acknowledgement, then one `notifications/resources/updated` that the `touch` tool causes.
//!
//! The peers come from `.ci/install-peers`. Without them a test prints why it skips and passes
//! locally; under `CI=true` a missing peer fails it. Every test is bounded by
//! [`SCENARIO_DEADLINE`]; the server children are killed when a test ends, however it ends
//! (stdio: the transport ends the child's process group; HTTP: `kill_on_drop` and an explicit
//! kill and reap).
#![forbid(unsafe_code)]
#![cfg(all(unix, feature = "http", feature = "stdio"))]

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{json, Map, Value};
use strict_mcp::client::http::HttpTransport;
use strict_mcp::client::stdio::{CommandSpec, StdioTransport};
use strict_mcp::client::{
    CallOptions, Client, ClientError, ClientOptions, ListenStream, Progress, ProgressSink,
    RoundInput, RpcError, RpcErrorKind, ToolOutcome,
};
use strict_mcp::wire::jsonrpc::ErrorCode;
use strict_mcp::wire::listen::{Change, Filter};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdout};

/// The whole walk for one peer × transport, server start included. A Python server starting
/// on a loaded 2-core machine takes a few seconds; the walk itself takes about one.
const SCENARIO_DEADLINE: Duration = Duration::from_secs(120);

/// How long an HTTP server may take to print its `{"listening":…}` line.
const STARTUP_DEADLINE: Duration = Duration::from_secs(60);

/// The deadline of each request the walk makes (and of the listen acknowledgement).
const CALL_DEADLINE: Duration = Duration::from_secs(30);

/// How long the reaped HTTP server may take to exit after SIGKILL.
const REAP_DEADLINE: Duration = Duration::from_secs(10);

/// The protocol revision every peer must list.
const REVISION: &str = "2026-07-28";

/// The one resource both servers serve.
const RESOURCE_URI: &str = "strict://interop/greeting";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Which SDK the server is built on.
#[derive(Clone, Copy, Debug)]
enum Peer {
    Ts,
    Py,
}

/// How the client reaches it.
#[derive(Clone, Copy, Debug)]
enum Wire {
    Stdio,
    Http,
    /// HTTP with every response as an SSE stream (the TS server's `--sse`).
    HttpSse,
}

/// How a peer's `requestState` looks.
enum State {
    /// The fixture's fixed text, which the client must echo unchanged.
    Exact(&'static str),
    /// The SDK's sealed state: opaque, with this version prefix.
    SealedWithPrefix(&'static str),
}

/// How a peer answers `tools/call` of a tool it does not serve.
enum UnknownTool {
    /// JSON-RPC -32602 with this message (server/tools.mdx "Error Handling": an unknown tool
    /// is a protocol error).
    InvalidParams(&'static str),
    /// A complete result with `isError: true` and this text: a divergence from the spec.
    ToolFailed(&'static str),
}

/// What a listen stream sees when its HTTP server shuts down (SIGTERM).
enum AtShutdown {
    /// The closing result `{resultType: "complete", _meta: {subscriptionId}}`, then the end.
    ClosingResult,
    /// Nothing: the server keeps the stream open and waits for the client to hang up.
    StaysOpen,
}

/// What one peer serves, exactly.
struct Expect {
    interpreter: PathBuf,
    script: PathBuf,
    server_name: &'static str,
    resource_text: &'static str,
    /// The key of the one input request `confirm_echo` makes.
    mrtr_key: &'static str,
    request_state: State,
    /// Whether a string-returning tool also sends `structuredContent: {"result": …}` (the
    /// Python SDK derives an output schema from the return annotation).
    structured_result: bool,
    /// `prompts/get`'s `description`, when the peer sends one.
    prompt_description: Option<&'static str>,
    unknown_tool: UnknownTool,
    /// The text of the `fail` tool's `isError` result.
    fail_text: &'static str,
    /// The error message for `resources/read` of an unknown URI (always -32602).
    unknown_resource_message: &'static str,
    /// The code and message for `prompts/get` of an unknown prompt.
    unknown_prompt: (i64, &'static str),
    /// The `-32021` message when `confirm_echo` runs without the elicitation capability.
    missing_capability_message: &'static str,
    at_shutdown: AtShutdown,
}

impl Peer {
    fn expect(self) -> Expect {
        match self {
            Peer::Ts => Expect {
                interpreter: root().join(".interop/node/bin/node"),
                script: root().join("interop/node/ts_server.mjs"),
                server_name: "strict-mcp-interop-ts",
                resource_text: "hello from the ts server",
                mrtr_key: "confirm",
                request_state: State::Exact("confirm_echo/round-1"),
                structured_result: false,
                prompt_description: None,
                unknown_tool: UnknownTool::InvalidParams("Tool nope not found"),
                fail_text: "boom",
                unknown_resource_message: "Resource not found: strict://interop/missing",
                unknown_prompt: (-32602, "Prompt nope not found"),
                missing_capability_message: "Cannot request input 'confirm' (elicitation/create): \
                    the request's client capabilities do not declare the required capability",
                at_shutdown: AtShutdown::ClosingResult,
            },
            Peer::Py => Expect {
                interpreter: root().join(".interop/venv/bin/python"),
                script: root().join("interop/python/py_server.py"),
                server_name: "strict-mcp-interop-py",
                resource_text: "hello from the py server",
                mrtr_key: "__main__:ask_confirm",
                request_state: State::SealedWithPrefix("v1."),
                structured_result: true,
                prompt_description: Some("Greet someone by name."),
                unknown_tool: UnknownTool::ToolFailed("Unknown tool: nope"),
                fail_text: "Error executing tool fail: boom",
                unknown_resource_message: "Unknown resource: strict://interop/missing",
                unknown_prompt: (-32603, "Internal server error"),
                missing_capability_message: "Client did not declare the form elicitation \
                    capability required by resolver '__main__:ask_confirm'",
                at_shutdown: AtShutdown::StaysOpen,
            },
        }
    }

    /// Whether the peer is installed: `Ok(())`, or why not.
    async fn present(self, expect: &Expect) -> Result<(), String> {
        if !expect.interpreter.exists() {
            return Err(format!("{} is missing", expect.interpreter.display()));
        }
        match self {
            Peer::Ts => {
                let package = root()
                    .join("interop/node/node_modules/@modelcontextprotocol/server/package.json");
                if !package.exists() {
                    return Err(format!("{} is missing", package.display()));
                }
            }
            Peer::Py => {
                let probe = tokio::process::Command::new(&expect.interpreter)
                    .args(["-c", "import mcp.server.mcpserver, uvicorn"])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .kill_on_drop(true)
                    .status();
                match tokio::time::timeout(STARTUP_DEADLINE, probe).await {
                    Ok(Ok(status)) if status.success() => {}
                    other => {
                        return Err(format!(
                            "the venv cannot import the mcp server package ({other:?})"
                        ))
                    }
                }
            }
        }
        Ok(())
    }
}

/// An HTTP server child: killed on drop (a panicking test), killed and reaped by [`stop`].
struct HttpServer {
    child: Child,
    _stdout: BufReader<ChildStdout>,
}

impl HttpServer {
    async fn start(expect: &Expect, extra: &[&str]) -> (HttpServer, String) {
        let mut child = tokio::process::Command::new(&expect.interpreter)
            .arg(&expect.script)
            .args(["--http", "0"])
            .args(extra)
            .current_dir(root())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("the server starts");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut line = String::new();
        let read = tokio::time::timeout(STARTUP_DEADLINE, stdout.read_line(&mut line)).await;
        assert!(
            matches!(read, Ok(Ok(n)) if n > 0),
            "no listening line from {} within {STARTUP_DEADLINE:?}: {read:?}",
            expect.script.display()
        );
        let announced: Value = serde_json::from_str(&line).expect("a JSON listening line");
        let url = announced["listening"]
            .as_str()
            .expect("a listening URL")
            .to_owned();
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        (
            HttpServer {
                child,
                _stdout: stdout,
            },
            url,
        )
    }

    /// Asks the server to shut down (SIGTERM), as an operator would.
    fn terminate(&self) {
        let pid = self.child.id().expect("the server is running");
        let status = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -TERM {pid}: {status}");
    }

    /// Kills the server (if it still runs) and reaps it.
    async fn stop(mut self) {
        // Already gone after a graceful shutdown: nothing to signal.
        let _ = self.child.start_kill();
        tokio::time::timeout(REAP_DEADLINE, self.child.wait())
            .await
            .expect("the server exits after SIGKILL")
            .expect("reap the server");
    }
}

/// The connected client and what must be ended after the walk.
enum Connection {
    Stdio(Arc<StdioTransport>),
    /// Boxed: the child handle and its reader are large next to an `Arc`.
    Http(Box<HttpServer>),
}

async fn connect(expect: &Expect, wire: Wire) -> (Client, Connection) {
    let options = ClientOptions {
        default_deadline: CALL_DEADLINE,
        ..ClientOptions::default()
    };
    match wire {
        Wire::Stdio => {
            let spec = CommandSpec::new(&expect.interpreter)
                .arg(&expect.script)
                .current_dir(root());
            let transport = Arc::new(StdioTransport::spawn(&spec).expect("spawn the server"));
            let client = Client::connect(transport.clone(), options)
                .await
                .unwrap_or_else(|e| {
                    panic!(
                        "connect over stdio: {e}\n--- server stderr ---\n{}",
                        String::from_utf8_lossy(&transport.stderr_tail())
                    )
                });
            (client, Connection::Stdio(transport))
        }
        Wire::Http | Wire::HttpSse => {
            let extra: &[&str] = match wire {
                Wire::HttpSse => &["--sse"],
                _ => &[],
            };
            let (server, url) = HttpServer::start(expect, extra).await;
            let transport = Arc::new(HttpTransport::new(&url, None).expect("an HTTP transport"));
            let client = Client::connect(transport, options)
                .await
                .expect("connect over HTTP");
            (client, Connection::Http(Box::new(server)))
        }
    }
}

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}

fn to_json(value: &impl serde::Serialize) -> Value {
    serde_json::to_value(value).expect("serialisable")
}

/// The content a text-returning tool answers with, exactly.
fn text_content(text: &str) -> Value {
    json!([{"type": "text", "text": text}])
}

/// Checks a successful string-returning call: exact content, and `structuredContent` only
/// where the peer sends it.
fn assert_text_result(expect: &Expect, result: &Value, text: &str) {
    assert_eq!(result["content"], text_content(text), "{result}");
    assert_eq!(result["resultType"], "complete", "{result}");
    if expect.structured_result {
        assert_eq!(
            result["structuredContent"],
            json!({"result": text}),
            "{result}"
        );
    } else {
        assert!(result.get("structuredContent").is_none(), "{result}");
    }
}

/// The peer's expectations and a connected client, or `None` (after a skip notice) when the
/// peer is not installed locally; under `CI=true` a missing peer fails.
async fn start(peer: Peer, wire: Wire) -> Option<(Expect, Client, Connection)> {
    let expect = peer.expect();
    if let Err(why) = peer.present(&expect).await {
        assert!(
            !in_ci(),
            "{peer:?} peer missing under CI=true: {why} (run .ci/install-peers)"
        );
        eprintln!("SKIP {peer:?} over {wire:?}: {why} (run .ci/install-peers)");
        return None;
    }
    let (client, connection) = connect(&expect, wire).await;
    Some((expect, client, connection))
}

/// Closes the client and ends the server: the stdio child's whole process group is gone, the
/// HTTP child is killed and reaped.
async fn finish(client: Client, connection: Connection) {
    client.close().await;
    match connection {
        Connection::Stdio(transport) => {
            let report = transport.close().await;
            assert!(report.group_ended, "{report:?}");
        }
        Connection::Http(server) => (*server).stop().await,
    }
}

/// The walk: every step asserts exact values; the first divergence fails with its evidence.
async fn walk(peer: Peer, wire: Wire) {
    let Some((expect, client, connection)) = start(peer, wire).await else {
        return;
    };
    let opts = CallOptions::default().deadline(CALL_DEADLINE);

    // O71, O72, B16–B19: discovery.
    let discovery = client.discovery();
    assert_eq!(
        discovery.result.supported_versions,
        vec![REVISION.to_owned()]
    );
    let info = discovery.server_info.as_ref().expect("serverInfo in _meta");
    assert_eq!(
        (info.name.as_str(), info.version.as_str()),
        (expect.server_name, "0.1.0")
    );
    let caps = to_json(&discovery.result.capabilities);
    assert_eq!(caps["tools"]["listChanged"], true, "{caps}");
    assert_eq!(caps["resources"]["subscribe"], true, "{caps}");
    assert!(caps["prompts"].is_object(), "{caps}");

    // E-section, O86: tools/list.
    let tools = client.list_tools(&opts).await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "echo",
            "confirm_echo",
            "touch",
            "touch_tools",
            "sleep",
            "count",
            "fail"
        ],
        "{tools:?}"
    );
    let echo = to_json(&tools[0]);
    assert_eq!(echo["inputSchema"]["type"], "object", "{echo}");
    assert_eq!(echo["inputSchema"]["properties"]["text"]["type"], "string");
    assert_eq!(echo["inputSchema"]["required"], json!(["text"]), "{echo}");

    // O80, O81, O85: tools/call, exact content (and structuredContent checked against the
    // tool's output schema when the peer declares one).
    let echoed = client
        .call(
            "echo",
            Some(object(json!({"text": "hello, strict"}))),
            &opts,
        )
        .await
        .expect("tools/call echo");
    assert_text_result(&expect, &to_json(&echoed), "hello, strict");

    // J1–J5, J7: progress reaches this call's sink, numbers as the exact texts sent, every
    // notification before the reply.
    let seen: Arc<Mutex<Vec<Progress>>> = Arc::default();
    let sink = {
        let seen = Arc::clone(&seen);
        ProgressSink(Arc::new(move |p| {
            seen.lock().unwrap_or_else(PoisonError::into_inner).push(p);
        }))
    };
    let with_progress = CallOptions {
        deadline: Some(CALL_DEADLINE),
        on_progress: Some(sink),
        ..CallOptions::default()
    };
    let counted = client
        .call("count", Some(object(json!({"n": 3}))), &with_progress)
        .await
        .expect("tools/call count");
    assert_text_result(&expect, &to_json(&counted), "counted 3");
    let seen = seen.lock().unwrap_or_else(PoisonError::into_inner).clone();
    let wanted: Vec<Progress> = (1..=3)
        .map(|i| Progress {
            progress: i.to_string(),
            total: Some("3".to_owned()),
            message: Some(format!("step {i}")),
        })
        .collect();
    assert_eq!(seen, wanted);

    // I-section, O77, O78: one MRTR round. The request declares form elicitation for this
    // call only; the retry is a fresh request carrying the answer and the state unchanged.
    let elicit = CallOptions::default()
        .deadline(CALL_DEADLINE)
        .capabilities(json!({"elicitation": {"form": {}}}));
    let arguments = Some(object(json!({"text": "hi"})));
    let first = client
        .call_tool(
            "confirm_echo",
            arguments.clone(),
            RoundInput::first(),
            &elicit,
        )
        .await
        .expect("confirm_echo round 1");
    let ToolOutcome::InputRequired(asked) = first else {
        panic!("expected input_required, got {first:?}");
    };
    let requests = to_json(&asked.result.input_requests);
    let keys: Vec<&String> = requests
        .as_object()
        .expect("inputRequests")
        .keys()
        .collect();
    assert_eq!(keys, [expect.mrtr_key], "{requests}");
    let request = &requests[expect.mrtr_key];
    assert_eq!(request["method"], "elicitation/create", "{request}");
    assert_eq!(request["params"]["mode"], "form", "{request}");
    assert_eq!(request["params"]["message"], "Echo \"hi\"?", "{request}");
    let schema = &request["params"]["requestedSchema"];
    assert_eq!(schema["type"], "object", "{schema}");
    assert_eq!(
        schema["properties"]["confirm"]["type"], "boolean",
        "{schema}"
    );
    assert_eq!(schema["required"], json!(["confirm"]), "{schema}");
    let state = asked.result.request_state.clone().expect("a requestState");
    match expect.request_state {
        State::Exact(s) => assert_eq!(state, s),
        State::SealedWithPrefix(p) => assert!(state.starts_with(p) && state.len() > 64, "{state}"),
    }
    let answer = object(json!({
        expect.mrtr_key: {"action": "accept", "content": {"confirm": true}}
    }));
    let round = RoundInput::answer(&asked.result, answer);
    assert_eq!(round.request_state.as_deref(), Some(state.as_str()));
    let second = client
        .call_tool("confirm_echo", arguments, round, &elicit)
        .await
        .expect("confirm_echo round 2");
    let ToolOutcome::Success(done) = second else {
        panic!("expected a complete result, got {second:?}");
    };
    assert_text_result(&expect, &to_json(&done), "confirmed: hi");

    // F-section: resources/list and resources/read.
    let resources = client.list_resources(&opts).await.expect("resources/list");
    assert_eq!(resources.len(), 1, "{resources:?}");
    let listed = to_json(&resources[0]);
    assert_eq!(
        (
            &listed["uri"],
            &listed["name"],
            &listed["title"],
            &listed["mimeType"]
        ),
        (
            &json!(RESOURCE_URI),
            &json!("greeting"),
            &json!("Greeting"),
            &json!("text/plain")
        ),
        "{listed}"
    );
    let read = client
        .read_resource(RESOURCE_URI, &opts)
        .await
        .expect("resources/read");
    assert_eq!(
        to_json(&read.contents),
        json!([{"uri": RESOURCE_URI, "mimeType": "text/plain", "text": expect.resource_text}])
    );

    // G-section: prompts/list and prompts/get.
    let prompts = client.list_prompts(&opts).await.expect("prompts/list");
    assert_eq!(prompts.len(), 1, "{prompts:?}");
    let prompt = to_json(&prompts[0]);
    assert_eq!(prompt["name"], "greet", "{prompt}");
    assert_eq!(
        prompt["arguments"],
        json!([{"name": "name", "required": true}]),
        "{prompt}"
    );
    let got = client
        .get_prompt("greet", Some(object(json!({"name": "Ada"}))), &opts)
        .await
        .expect("prompts/get");
    let got = to_json(&got);
    assert_eq!(
        got["messages"],
        json!([{"role": "user", "content": {"type": "text", "text": "Hello, Ada!"}}]),
        "{got}"
    );
    assert_eq!(
        got.get("description").and_then(Value::as_str),
        expect.prompt_description,
        "{got}"
    );

    // K-section [C], O84: listen; the acknowledgement names the whole requested filter, and
    // the change `touch` causes arrives on the stream, tagged with its subscription id.
    let filter = Filter {
        tools_list_changed: true,
        resource_subscriptions: Some(BTreeSet::from([RESOURCE_URI.to_owned()])),
        ..Filter::default()
    };
    let mut stream = client
        .listen(filter.clone(), &opts)
        .await
        .expect("subscriptions/listen acknowledged");
    assert_eq!(stream.effective_filter(), &filter);
    assert_eq!(stream.dropped_filter(), &Filter::default());
    let touched = client
        .call("touch", Some(Map::new()), &opts)
        .await
        .expect("tools/call touch");
    assert_text_result(&expect, &to_json(&touched), "touched");
    let change = tokio::time::timeout(CALL_DEADLINE, stream.next())
        .await
        .expect("a change within the deadline")
        .expect("the stream is alive");
    assert_eq!(
        change,
        Some(Change::ResourceUpdated {
            uri: RESOURCE_URI.to_owned()
        })
    );
    assert!(stream.violations().is_empty(), "{:?}", stream.violations());
    drop(stream);
    finish(client, connection).await;
}

/// The rpc error a failed call ended with.
fn rpc_error(outcome: Result<impl std::fmt::Debug, ClientError>) -> RpcError {
    match outcome {
        Err(ClientError::Rpc(e)) => e,
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

/// The error paths (O85: each outcome class stays apart), exact per peer: an unknown tool, a
/// tool's own failure, an unknown resource, an unknown prompt, and an input round the request's
/// capabilities do not allow.
async fn error_walk(peer: Peer, wire: Wire) {
    let Some((expect, client, connection)) = start(peer, wire).await else {
        return;
    };
    let opts = CallOptions::default().deadline(CALL_DEADLINE);
    client.list_tools(&opts).await.expect("tools/list");

    // E11: an unknown tool is a protocol error (-32602).
    let unknown = client
        .call_tool("nope", Some(Map::new()), RoundInput::first(), &opts)
        .await;
    match expect.unknown_tool {
        UnknownTool::InvalidParams(message) => {
            let e = rpc_error(unknown);
            assert_eq!(
                (e.kind, e.code, e.message.as_str(), &e.data),
                (
                    RpcErrorKind::Standard(ErrorCode::InvalidParams),
                    -32602,
                    message,
                    &None
                )
            );
        }
        // Documents a divergence of the peer (server/tools.mdx, "Error Handling": an unknown
        // tool is a protocol error): it answers a tool execution error, which the client can
        // only report as the tool's own failure.
        UnknownTool::ToolFailed(text) => match unknown {
            Ok(ToolOutcome::Failed(failed)) => {
                let result = to_json(&failed.result);
                assert_eq!(result["content"], text_content(text), "{result}");
                assert_eq!(result["isError"], true, "{result}");
            }
            other => panic!("expected the peer's isError answer, got {other:?}"),
        },
    }

    // O80, O85: the tool's own failure is `Failed`, and its `isError` result is not checked
    // against the output schema (the Python peer declares one and sends no structuredContent).
    let failed = client
        .call_tool("fail", Some(Map::new()), RoundInput::first(), &opts)
        .await
        .expect("tools/call fail");
    let ToolOutcome::Failed(failed) = failed else {
        panic!("expected the tool's failure, got {failed:?}");
    };
    assert_eq!(failed.tool, "fail");
    let result = to_json(&failed.result);
    assert_eq!(
        result["content"],
        text_content(expect.fail_text),
        "{result}"
    );
    assert!(result.get("structuredContent").is_none(), "{result}");
    let convenience = client.call("fail", Some(Map::new()), &opts).await;
    assert!(
        matches!(&convenience, Err(ClientError::ToolFailed(f)) if f.tool == "fail"),
        "{convenience:?}"
    );

    // F5: an unknown resource is -32602 with the URI in `data`.
    let missing = "strict://interop/missing";
    let e = rpc_error(client.read_resource(missing, &opts).await);
    assert_eq!(
        (e.kind, e.code, e.message.as_str(), e.data),
        (
            RpcErrorKind::Standard(ErrorCode::InvalidParams),
            -32602,
            expect.unknown_resource_message,
            Some(json!({"uri": missing}))
        )
    );

    // G5: an unknown prompt should be -32602. The Python peer answers -32603 (documents its
    // divergence: server/prompts.mdx, "Error Handling").
    let e = rpc_error(client.get_prompt("nope", Some(Map::new()), &opts).await);
    let (code, message) = expect.unknown_prompt;
    assert_eq!(
        (e.kind, e.code, e.message.as_str(), &e.data),
        (RpcErrorKind::from_code(code), code, message, &None)
    );

    // B5: the input round needs form elicitation, which this request did not declare: -32021
    // with the missing capability (HTTP 400, read from the body all the same).
    let e = rpc_error(
        client
            .call_tool(
                "confirm_echo",
                Some(object(json!({"text": "hi"}))),
                RoundInput::first(),
                &opts,
            )
            .await,
    );
    assert_eq!(
        (e.kind, e.code, e.message.as_str(), e.data),
        (
            RpcErrorKind::MissingRequiredClientCapability,
            -32021,
            expect.missing_capability_message,
            Some(json!({"requiredCapabilities": {"elicitation": {"form": {}}}}))
        )
    );

    finish(client, connection).await;
}

/// The deadline of the call that must run out: far below the tool's sleep.
const SHORT_DEADLINE: Duration = Duration::from_millis(500);

/// How long the `sleep` tool sleeps in the deadline step: far beyond [`SHORT_DEADLINE`].
const SLEEP_MS: u64 = 20_000;

/// The stream's next change, within [`CALL_DEADLINE`].
async fn next_change(stream: &mut ListenStream) -> Option<Change> {
    tokio::time::timeout(CALL_DEADLINE, stream.next())
        .await
        .expect("a change within the deadline")
        .expect("the stream is alive")
}

/// K7, K8: two listen streams at once, each sees only what it asked for, demultiplexed by
/// subscription id; O83: a call past its deadline fails with `Deadline` (the client cancels it)
/// and the connection keeps serving.
async fn streams_walk(peer: Peer, wire: Wire) {
    let Some((expect, client, connection)) = start(peer, wire).await else {
        return;
    };
    let opts = CallOptions::default().deadline(CALL_DEADLINE);
    let resources = Filter {
        resource_subscriptions: Some(BTreeSet::from([RESOURCE_URI.to_owned()])),
        ..Filter::default()
    };
    let tools = Filter {
        tools_list_changed: true,
        ..Filter::default()
    };
    let mut a = client.listen(resources.clone(), &opts).await.expect("a");
    let mut b = client.listen(tools.clone(), &opts).await.expect("b");
    assert_ne!(a.subscription_id(), b.subscription_id());
    assert_eq!(
        (a.effective_filter(), b.effective_filter()),
        (&resources, &tools)
    );
    let touched = client.call("touch_tools", Some(Map::new()), &opts).await;
    assert_text_result(
        &expect,
        &to_json(&touched.expect("touch_tools")),
        "touched tools",
    );
    assert_eq!(next_change(&mut b).await, Some(Change::ToolsListChanged));
    let touched = client.call("touch", Some(Map::new()), &opts).await;
    assert_text_result(&expect, &to_json(&touched.expect("touch")), "touched");
    assert_eq!(
        next_change(&mut a).await,
        Some(Change::ResourceUpdated {
            uri: RESOURCE_URI.to_owned()
        })
    );
    // The update was not for b: the next thing b sees is the second tools change.
    client
        .call("touch_tools", Some(Map::new()), &opts)
        .await
        .expect("touch_tools again");
    assert_eq!(next_change(&mut b).await, Some(Change::ToolsListChanged));
    assert!(a.violations().is_empty(), "{:?}", a.violations());
    assert!(b.violations().is_empty(), "{:?}", b.violations());
    drop(a);
    drop(b);

    let short = CallOptions::default().deadline(SHORT_DEADLINE);
    let late = client
        .call("sleep", Some(object(json!({"ms": SLEEP_MS}))), &short)
        .await;
    assert!(
        matches!(
            &late,
            Err(ClientError::Deadline { method, deadline })
                if method == "tools/call" && *deadline == SHORT_DEADLINE
        ),
        "{late:?}"
    );
    assert!(client.failure().is_none(), "{:?}", client.failure());
    let echoed = client
        .call("echo", Some(object(json!({"text": "still here"}))), &opts)
        .await
        .expect("the connection serves after the cancelled call");
    assert_text_result(&expect, &to_json(&echoed), "still here");
    finish(client, connection).await;
}

/// How long a stream is watched for a closing result the Python peer never sends.
const SHUTDOWN_WATCH: Duration = Duration::from_secs(3);

/// K10 over HTTP: the server shuts down (SIGTERM) while a listen stream is open.
async fn shutdown_walk(peer: Peer) {
    let Some((expect, client, connection)) = start(peer, Wire::Http).await else {
        return;
    };
    let Connection::Http(server) = connection else {
        unreachable!("an HTTP walk");
    };
    let opts = CallOptions::default().deadline(CALL_DEADLINE);
    let filter = Filter {
        resource_subscriptions: Some(BTreeSet::from([RESOURCE_URI.to_owned()])),
        ..Filter::default()
    };
    let mut stream = client.listen(filter, &opts).await.expect("acknowledged");
    server.terminate();
    match expect.at_shutdown {
        AtShutdown::ClosingResult => {
            let end = tokio::time::timeout(CALL_DEADLINE, stream.next())
                .await
                .expect("the stream ends within the deadline");
            assert_eq!(end.expect("a graceful end"), None);
            assert!(stream.violations().is_empty(), "{:?}", stream.violations());
        }
        // Documents a divergence of the peer (basic/patterns/subscriptions.mdx: a server
        // ending a subscription SHOULD send the listen result): its shutdown waits for the
        // client to hang up and never sends the closing result.
        AtShutdown::StaysOpen => {
            let watched = tokio::time::timeout(SHUTDOWN_WATCH, stream.next()).await;
            assert!(watched.is_err(), "the stream ended: {watched:?}");
        }
    }
    drop(stream);
    client.close().await;
    (*server).stop().await;
}

async fn bounded(what: &str, walk: impl std::future::Future<Output = ()>) {
    tokio::time::timeout(SCENARIO_DEADLINE, walk)
        .await
        .unwrap_or_else(|_| panic!("{what} took longer than {SCENARIO_DEADLINE:?}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o71_o86_ts_sdk_server_over_stdio() {
    bounded("ts over stdio", walk(Peer::Ts, Wire::Stdio)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o85_ts_sdk_server_error_paths_over_stdio() {
    bounded("ts errors over stdio", error_walk(Peer::Ts, Wire::Stdio)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o71_o86_ts_sdk_server_over_http() {
    bounded("ts over http", walk(Peer::Ts, Wire::Http)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o85_ts_sdk_server_error_paths_over_http() {
    bounded("ts errors over http", error_walk(Peer::Ts, Wire::Http)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o71_o86_ts_sdk_server_over_http_sse_responses() {
    bounded("ts over http (sse)", walk(Peer::Ts, Wire::HttpSse)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k10_ts_sdk_server_shutdown_with_an_open_listen_stream() {
    bounded("ts shutdown", shutdown_walk(Peer::Ts)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o71_o86_python_sdk_server_over_stdio() {
    bounded("python over stdio", walk(Peer::Py, Wire::Stdio)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o85_python_sdk_server_error_paths_over_stdio() {
    bounded(
        "python errors over stdio",
        error_walk(Peer::Py, Wire::Stdio),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o71_o86_python_sdk_server_over_http() {
    bounded("python over http", walk(Peer::Py, Wire::Http)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o85_python_sdk_server_error_paths_over_http() {
    bounded("python errors over http", error_walk(Peer::Py, Wire::Http)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k10_python_sdk_server_shutdown_with_an_open_listen_stream() {
    bounded("python shutdown", shutdown_walk(Peer::Py)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k8_o83_ts_sdk_server_two_streams_and_a_deadline_over_stdio() {
    bounded("ts streams over stdio", streams_walk(Peer::Ts, Wire::Stdio)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k8_o83_ts_sdk_server_two_streams_and_a_deadline_over_http() {
    bounded("ts streams over http", streams_walk(Peer::Ts, Wire::Http)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k8_o83_python_sdk_server_two_streams_and_a_deadline_over_stdio() {
    bounded(
        "python streams over stdio",
        streams_walk(Peer::Py, Wire::Stdio),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k8_o83_python_sdk_server_two_streams_and_a_deadline_over_http() {
    bounded(
        "python streams over http",
        streams_walk(Peer::Py, Wire::Http),
    )
    .await;
}
