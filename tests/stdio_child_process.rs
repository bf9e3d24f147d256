//! The child-process verification matrix of the stdio server (issue #6): every test spawns the
//! real `matrix_server` example binary (`examples/matrix_server.rs`, a documented test fixture)
//! with `tokio::process`, writes raw JSON lines to its stdin and reads its stdout line by line.
//!
//! * Every read is bounded by [`READ_TIMEOUT`]; a hung server fails the test instead of hanging
//!   it, and `kill_on_drop` reaps the child of a failed test.
//! * Every stdout line is checked to be one compact JSON-RPC 2.0 message and never a request
//!   (C1, C3, A12); stderr is collected separately and only used where a test says so.
//! * Replies are compared byte-exact where the issue asks for exact wire values (envelopes,
//!   error objects); elsewhere the assertions name each member whose presence or absence
//!   matters.
//!
//! Test names cite requirement ids of `REQUIREMENTS.md`.

mod support;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};
use support::example_binary;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::mpsc;

/// Upper bound for any single read from the child (the machine is shared; generous on purpose).
const READ_TIMEOUT: Duration = Duration::from_secs(20);

const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
const META_ELICIT: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}"#;

/// The `_meta` every result of the fixture carries (B6), as it appears on the wire.
fn info_meta() -> String {
    format!(
        r#"{{"io.modelcontextprotocol/serverInfo":{{"name":"strict-mcp-matrix","version":"{}"}}}}"#,
        env!("CARGO_PKG_VERSION")
    )
}

// ---------------------------------------------------------------------------------------------
// The child process

struct Child {
    process: tokio::process::Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
    stderr: mpsc::UnboundedReceiver<String>,
    /// Every stderr line received so far.
    stderr_seen: Vec<String>,
}

/// What a child left behind once its stdin closed.
struct Finished {
    /// Stdout lines after stdin closed, up to EOF (each already checked by [`assert_jsonrpc_line`]).
    lines: Vec<String>,
    status: ExitStatus,
    /// Every stderr line of the whole run.
    stderr: Vec<String>,
    /// From closing stdin to the process exit.
    elapsed: Duration,
}

impl Finished {
    fn values(&self) -> Vec<Value> {
        self.lines
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

fn spawn_example(name: &str, args: &[&str]) -> Child {
    let mut process = tokio::process::Command::new(example_binary(name))
        .args(args)
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the example server");
    let stdin = process.stdin.take();
    let stdout = BufReader::new(process.stdout.take().expect("piped stdout")).lines();
    let mut stderr = BufReader::new(process.stderr.take().expect("piped stderr")).lines();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok(Some(line)) = stderr.next_line().await {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    Child {
        process,
        stdin,
        stdout,
        stderr: rx,
        stderr_seen: Vec::new(),
    }
}

fn spawn(args: &[&str]) -> Child {
    spawn_example("matrix_server", args)
}

impl Child {
    async fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        stdin.write_all(bytes).await.expect("write to the child");
        stdin.write_all(b"\n").await.expect("write to the child");
        stdin.flush().await.expect("flush to the child");
    }

    async fn send(&mut self, line: &str) {
        self.send_bytes(line.as_bytes()).await;
    }

    async fn send_request(&mut self, id: &str, method: &str, params: &str) {
        self.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#
        ))
        .await;
    }

    /// The next stdout line, within [`READ_TIMEOUT`]; EOF fails the test.
    async fn recv_line(&mut self) -> String {
        let line = tokio::time::timeout(READ_TIMEOUT, self.stdout.next_line())
            .await
            .expect("a stdout line within the read timeout")
            .expect("stdout readable")
            .expect("stdout not at EOF");
        assert_jsonrpc_line(&line);
        line
    }

    async fn recv(&mut self) -> Value {
        serde_json::from_str(&self.recv_line().await).unwrap()
    }

    /// Sends a request (raw id text) and returns its reply line. Nothing else may arrive first:
    /// these tests issue requests one by one and ask for no notifications.
    async fn call_line(&mut self, id: &str, method: &str, params: &str) -> String {
        self.send_request(id, method, params).await;
        let line = self.recv_line().await;
        let v: Value = serde_json::from_str(&line).unwrap();
        let want: Value = serde_json::from_str(id).unwrap();
        assert_eq!(
            v.get("id"),
            Some(&want),
            "expected the reply to {id}: {line}"
        );
        line
    }

    async fn call(&mut self, id: i64, method: &str, params: &str) -> Value {
        serde_json::from_str(&self.call_line(&id.to_string(), method, params).await).unwrap()
    }

    /// Waits (bounded) until stderr shows exactly `wanted` as a line.
    async fn await_stderr(&mut self, wanted: &str) {
        if self.stderr_seen.iter().any(|l| l == wanted) {
            return;
        }
        let deadline = tokio::time::Instant::now() + READ_TIMEOUT;
        loop {
            let line = tokio::time::timeout_at(deadline, self.stderr.recv())
                .await
                .unwrap_or_else(|_| {
                    panic!("stderr never showed `{wanted}`: {:?}", self.stderr_seen)
                })
                .unwrap_or_else(|| panic!("stderr closed before `{wanted}`"));
            let hit = line == wanted;
            self.stderr_seen.push(line);
            if hit {
                return;
            }
        }
    }

    /// Closes stdin, reads stdout to EOF and waits for the exit, all bounded.
    async fn finish(mut self) -> Finished {
        drop(self.stdin.take());
        let closed = Instant::now();
        let mut lines = Vec::new();
        while let Some(line) = tokio::time::timeout(READ_TIMEOUT, self.stdout.next_line())
            .await
            .expect("stdout reaches EOF within the read timeout")
            .expect("stdout readable")
        {
            assert_jsonrpc_line(&line);
            lines.push(line);
        }
        let status = tokio::time::timeout(READ_TIMEOUT, self.process.wait())
            .await
            .expect("the child exits after stdin EOF")
            .expect("wait for the child");
        let elapsed = closed.elapsed();
        // The stderr pipe closes with the process; collect the rest.
        while let Ok(Some(line)) = tokio::time::timeout(READ_TIMEOUT, self.stderr.recv()).await {
            self.stderr_seen.push(line);
        }
        Finished {
            lines,
            status,
            stderr: self.stderr_seen,
            elapsed,
        }
    }
}

/// C1, C3, A12: one compact JSON-RPC 2.0 message per line, never a server-to-client request.
fn assert_jsonrpc_line(line: &str) {
    assert!(!line.contains('\r'), "raw CR in {line:?}");
    let v: Value = serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line}"));
    assert_eq!(v["jsonrpc"], "2.0", "{line}");
    let is_notification = v.get("method").is_some() && v.get("id").is_none();
    let is_response = v.get("id").is_some()
        && v.get("method").is_none()
        && (v.get("result").is_some() ^ v.get("error").is_some());
    assert!(
        is_notification || is_response,
        "neither a notification nor a response: {line}"
    );
    assert_eq!(
        serde_json::to_string(&v).unwrap().len(),
        line.len(),
        "not compact: {line}"
    );
}

// ---------------------------------------------------------------------------------------------
// Request and reply builders

/// Params: `extra` members (may be empty) plus `_meta`.
fn params(extra: &str, meta: &str) -> String {
    if extra.is_empty() {
        format!(r#"{{"_meta":{meta}}}"#)
    } else {
        format!(r#"{{{extra},"_meta":{meta}}}"#)
    }
}

/// Compact `tools/call` params for `call_tool` with an inner tool and its arguments.
fn compact(inner: &str, args: &str, meta: &str, extra: &str) -> String {
    format!(
        r#"{{"name":"call_tool","arguments":{{"name":"{inner}","arguments":{args}}}{extra},"_meta":{meta}}}"#
    )
}

/// A complete `CallToolResult` line as the server writes it (keys in wire order).
fn result_line(id: &str, content: &str, structured: Option<&str>, is_error: bool) -> String {
    let mut body = format!(r#"{{"_meta":{},"content":{content}"#, info_meta());
    if is_error {
        body.push_str(r#","isError":true"#);
    }
    body.push_str(r#","resultType":"complete""#);
    if let Some(s) = structured {
        body.push_str(&format!(r#","structuredContent":{s}"#));
    }
    body.push('}');
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{body}}}"#)
}

/// The result line of a tool whose only output is `envelope` (O15: the envelope's JSON text is
/// the trailing, here the only, text block).
fn envelope_line(id: &str, envelope: &str, is_error: bool) -> String {
    let copy = serde_json::to_string(envelope).unwrap();
    result_line(
        id,
        &format!(r#"[{{"text":{copy},"type":"text"}}]"#),
        Some(envelope),
        is_error,
    )
}

fn failure_envelope(code: &str, message: &str, retryable: bool) -> String {
    format!(r#"{{"failure":{{"code":"{code}","message":"{message}","retryable":{retryable}}}}}"#)
}

fn error_line(id: &str, code: i64, message: &str, data: Option<&str>) -> String {
    let data = data.map(|d| format!(r#","data":{d}"#)).unwrap_or_default();
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":{code},"message":"{message}"{data}}}}}"#
    )
}

/// Asserts an error reply's id, code and `data` (absent when `None`), and a non-empty message.
fn assert_error(reply: &Value, id: &Value, code: i64, data: Option<Value>) {
    assert_eq!(reply.get("id"), Some(id), "{reply}");
    assert!(reply.get("result").is_none(), "{reply}");
    let error = &reply["error"];
    assert_eq!(error["code"], code, "{reply}");
    assert!(
        error["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{reply}"
    );
    assert_eq!(error.get("data").cloned(), data, "{reply}");
}

const MISSING_META: &str = "params._meta must carry io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities";

// ---------------------------------------------------------------------------------------------
// Discovery and method coverage

#[tokio::test]
async fn b16_b18_b6_h1_a5_discover_is_exact() {
    let mut c = spawn(&[]);
    let line = c.call_line("1", "server/discover", &params("", META)).await;
    assert_eq!(
        line,
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"_meta":{},"cacheScope":"private","capabilities":{{"completions":{{}},"logging":{{}},"prompts":{{"listChanged":true}},"resources":{{"listChanged":true,"subscribe":true}},"tools":{{"listChanged":true}}}},"resultType":"complete","supportedVersions":["2026-07-28"],"ttlMs":0}}}}"#,
            info_meta()
        )
    );
    let done = c.finish().await;
    assert!(done.lines.is_empty(), "{:?}", done.lines);
    assert!(done.status.success(), "{:?}", done.status);
}

#[tokio::test]
async fn e1_e4_o11_o16_h1_compact_tools_list_is_three_tools() {
    let mut c = spawn(&["--mode", "compact"]);
    let reply = c.call(1, "tools/list", &params("", META)).await;
    let result = &reply["result"];
    let tools = result["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["search_tools", "get_tool_details", "call_tool"]);
    for tool in tools {
        assert_eq!(tool["inputSchema"]["type"], "object", "E5: {tool}");
    }
    // O16: compact call_tool publishes no outputSchema; the discovery tools do.
    assert!(tools[2].get("outputSchema").is_none(), "{}", tools[2]);
    assert!(tools[0].get("outputSchema").is_some());
    assert!(tools[1].get("outputSchema").is_some());
    assert!(result.get("nextCursor").is_none(), "one page only");
    assert_eq!(result["ttlMs"], 0);
    assert_eq!(result["cacheScope"], "private");
    assert_eq!(result["resultType"], "complete");
    assert_eq!(
        result["_meta"],
        serde_json::from_str::<Value>(&info_meta()).unwrap()
    );
    // Compact mode issues no cursor, so any cursor is invalid (-32602).
    let bad = c
        .call(2, "tools/list", &params(r#""cursor":"abc""#, META))
        .await;
    assert_error(&bad, &json!(2), -32602, None);
    assert!(c.finish().await.status.success());
}

#[tokio::test]
async fn f1_f3_f4_o31_resources_list_templates_and_read() {
    let mut c = spawn(&[]);
    let list = c.call_line("1", "resources/list", &params("", META)).await;
    assert_eq!(
        list,
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"_meta":{},"cacheScope":"private","resources":[{{"description":"A static text resource.","mimeType":"text/plain","name":"readme","uri":"mem://readme"}},{{"description":"Never ends and ignores cancellation.","name":"stuck","uri":"mem://stuck"}}],"resultType":"complete","ttlMs":0}}}}"#,
            info_meta()
        )
    );
    let templates = c
        .call_line("2", "resources/templates/list", &params("", META))
        .await;
    assert_eq!(
        templates,
        format!(
            r#"{{"jsonrpc":"2.0","id":2,"result":{{"_meta":{},"cacheScope":"private","resourceTemplates":[{{"description":"Items by id.","name":"item","uriTemplate":"mem://items/{{id}}"}}],"resultType":"complete","ttlMs":0}}}}"#,
            info_meta()
        )
    );
    let read = c
        .call_line(
            "3",
            "resources/read",
            &params(r#""uri":"mem://readme""#, META),
        )
        .await;
    assert_eq!(
        read,
        format!(
            r#"{{"jsonrpc":"2.0","id":3,"result":{{"_meta":{},"cacheScope":"private","contents":[{{"mimeType":"text/plain","text":"matrix fixture","uri":"mem://readme"}}],"resultType":"complete","ttlMs":0}}}}"#,
            info_meta()
        )
    );
    let item = c
        .call(
            4,
            "resources/read",
            &params(r#""uri":"mem://items/42""#, META),
        )
        .await;
    assert_eq!(
        item["result"]["contents"],
        json!([{"uri":"mem://items/42","text":"item 42"}])
    );
    // F5, O34: an unknown resource is -32602 (never -32002, never empty contents).
    let missing = c
        .call(5, "resources/read", &params(r#""uri":"mem://nope""#, META))
        .await;
    assert_error(
        &missing,
        &json!(5),
        -32602,
        Some(json!({"uri":"mem://nope"})),
    );
    // A missing uri is -32602 too.
    let no_uri = c.call(6, "resources/read", &params("", META)).await;
    assert_error(&no_uri, &json!(6), -32602, None);
    assert!(c.finish().await.status.success());
}

#[tokio::test]
async fn g2_g4_g5_g10_prompts_list_get_and_completion() {
    let mut c = spawn(&[]);
    let list = c.call_line("1", "prompts/list", &params("", META)).await;
    assert_eq!(
        list,
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"_meta":{},"cacheScope":"private","prompts":[{{"arguments":[{{"description":"Whom to greet.","name":"name","required":true}}],"description":"Greets someone.","name":"greet"}}],"resultType":"complete","ttlMs":0}}}}"#,
            info_meta()
        )
    );
    let get = c
        .call_line(
            "2",
            "prompts/get",
            &params(r#""name":"greet","arguments":{"name":"Ada"}"#, META),
        )
        .await;
    // G4: not cacheable, so no ttlMs/cacheScope.
    assert_eq!(
        get,
        format!(
            r#"{{"jsonrpc":"2.0","id":2,"result":{{"_meta":{},"messages":[{{"content":{{"text":"Say hello to Ada.","type":"text"}},"role":"user"}}],"resultType":"complete"}}}}"#,
            info_meta()
        )
    );
    // G5: unknown prompt and a missing required argument are -32602.
    let unknown = c
        .call(3, "prompts/get", &params(r#""name":"nope""#, META))
        .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    let missing = c
        .call(4, "prompts/get", &params(r#""name":"greet""#, META))
        .await;
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
    // G10: completion for a prompt argument and for a template variable; not cacheable.
    let prompt = c
        .call_line(
            "5",
            "completion/complete",
            &params(
                r#""ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"name","value":"a"}"#,
                META,
            ),
        )
        .await;
    assert_eq!(
        prompt,
        format!(
            r#"{{"jsonrpc":"2.0","id":5,"result":{{"_meta":{},"completion":{{"values":["ada","alan"]}},"resultType":"complete"}}}}"#,
            info_meta()
        )
    );
    let resource = c
        .call(
            6,
            "completion/complete",
            &params(
                r#""ref":{"type":"ref/resource","uri":"mem://items/{id}"},"argument":{"name":"id","value":"alp"}"#,
                META,
            ),
        )
        .await;
    assert_eq!(
        resource["result"]["completion"],
        json!({"values":["alpha","alpine"]})
    );
    // G11: a bad ref is -32602.
    let bad = c
        .call(
            7,
            "completion/complete",
            &params(
                r#""ref":{"type":"ref/nothing"},"argument":{"name":"x","value":""}"#,
                META,
            ),
        )
        .await;
    assert_error(&bad, &json!(7), -32602, None);
    assert!(c.finish().await.status.success());
}

#[tokio::test]
async fn k3_k4_k9_o6_listen_ack_cancel_and_closing_result_at_eof() {
    let mut c = spawn(&[]);
    // K3, K4, K13: the ack comes first, tagged with the listen id in its JSON type.
    c.send_request(
        r#""L1""#,
        "subscriptions/listen",
        &params(
            r#""notifications":{"toolsListChanged":true,"resourceSubscriptions":["mem://readme"]}"#,
            META,
        ),
    )
    .await;
    assert_eq!(
        c.recv_line().await,
        r#"{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"resourceSubscriptions":["mem://readme"],"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":"L1"}}}"#
    );
    c.send_request(
        "7",
        "subscriptions/listen",
        &params(r#""notifications":{}"#, META),
    )
    .await;
    let ack = c.recv().await;
    assert_eq!(
        ack["params"],
        json!({"notifications":{},"_meta":{"io.modelcontextprotocol/subscriptionId":7}})
    );
    // K9: the client ends listen 7 with notifications/cancelled; it gets no reply.
    c.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}"#)
        .await;
    // The server keeps serving other requests meanwhile (C14).
    let ok = c.call(8, "server/discover", &params("", META)).await;
    assert_eq!(ok["result"]["resultType"], "complete");
    // O6, K10, S2: at EOF the open stream L1 gets its closing result, then notifications/cancelled.
    let done = c.finish().await;
    assert_eq!(
        done.lines,
        [
            format!(
                r#"{{"jsonrpc":"2.0","id":"L1","result":{{"resultType":"complete","_meta":{{"io.modelcontextprotocol/subscriptionId":"L1","io.modelcontextprotocol/serverInfo":{{"name":"strict-mcp-matrix","version":"{}"}}}}}}}}"#,
                env!("CARGO_PKG_VERSION")
            ),
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"L1"}}"#
                .to_owned(),
        ],
        "nothing for the cancelled listen 7"
    );
    assert!(done.status.success());
}

// ---------------------------------------------------------------------------------------------
// Per-request protocol rules

#[tokio::test]
async fn b14_unsupported_version_is_32022_with_supported_and_requested() {
    let mut c = spawn(&[]);
    for (id, method) in [
        ("1", "server/discover"),
        (r#""two""#, "tools/list"),
        ("3", "tools/call"),
    ] {
        let line = c
            .call_line(
                id,
                method,
                r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-06-18","io.modelcontextprotocol/clientCapabilities":{}}}"#,
            )
            .await;
        assert_eq!(
            line,
            error_line(
                id,
                -32022,
                "Unsupported protocol version",
                Some(r#"{"requested":"2025-06-18","supported":["2026-07-28"]}"#)
            )
        );
    }
    // B4: the next request's own version counts, nothing is remembered.
    let ok = c.call(4, "server/discover", &params("", META)).await;
    assert_eq!(ok["result"]["supportedVersions"], json!(["2026-07-28"]));
    assert!(c.finish().await.status.success());
}

#[tokio::test]
async fn b1_b3_missing_or_malformed_meta_is_32602() {
    let mut c = spawn(&[]);
    let cases = [
        // No params at all.
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#.to_owned(),
        // params without _meta.
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}"#.to_owned(),
        // No clientCapabilities.
        r#"{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#.to_owned(),
        // No protocolVersion.
        r#"{"jsonrpc":"2.0","id":4,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}}"#.to_owned(),
        // Ill-typed members.
        r#"{"jsonrpc":"2.0","id":5,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":20260728,"io.modelcontextprotocol/clientCapabilities":{}}}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":6,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":null,"name":"call_tool"}}"#.to_owned(),
    ];
    for (i, line) in cases.iter().enumerate() {
        c.send(line).await;
        let id = (i + 1).to_string();
        assert_eq!(
            c.recv_line().await,
            error_line(&id, -32602, MISSING_META, None),
            "case {id}"
        );
    }
    // B9: a `_meta` key outside the key syntax, and B12: a malformed traceparent, are -32602.
    for (id, extra) in [
        (8, r#""-bad/key":1"#),
        (9, r#""a..b/c":1"#),
        (10, r#""traceparent":"not-a-traceparent""#),
    ] {
        let reply = c
            .call(
                id,
                "server/discover",
                &format!(
                    r#"{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}},{extra}}}}}"#
                ),
            )
            .await;
        assert_error(&reply, &json!(id), -32602, None);
    }
    // Received reserved keys are allowed (wire::meta: peers legitimately send them).
    let reserved = c
        .call(
            11,
            "server/discover",
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/future":1}}"#,
        )
        .await;
    assert_eq!(reserved["result"]["resultType"], "complete", "{reserved}");
    assert!(c.finish().await.status.success());
}

#[tokio::test]
async fn a14_f15_l7_removed_and_unknown_methods_are_32601() {
    let mut c = spawn(&[]);
    let removed = [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
    ];
    for (i, method) in removed.iter().enumerate() {
        let id = (i + 1).to_string();
        // With perfectly valid params: the method itself is what is refused.
        let line = c.call_line(&id, method, &params("", META)).await;
        assert_eq!(
            line,
            error_line(
                &id,
                -32601,
                &format!("Method not found: {method} was removed in 2026-07-28"),
                Some(r#"{"supported":["2026-07-28"]}"#)
            )
        );
    }
    for (id, method) in [
        ("10", "tools/frobnicate"),
        ("11", "notifications/cancelled"),
        ("12", "elicitation/create"),
        ("13", "sampling/createMessage"),
    ] {
        let line = c.call_line(id, method, &params("", META)).await;
        assert_eq!(line, error_line(id, -32601, "Method not found", None));
    }
    // Method is checked before _meta: no params at all is still -32601.
    c.send(r#"{"jsonrpc":"2.0","id":14,"method":"initialize"}"#)
        .await;
    assert_eq!(c.recv().await["error"]["code"], -32601);
    assert!(c.finish().await.status.success());
}

#[tokio::test]
async fn a4_ids_keep_their_exact_json_type() {
    let mut c = spawn(&[]);
    for id in [
        r#""1""#,
        "1",
        "0",
        "-5",
        "9007199254740993",
        r#""é\n\"x""#,
        r#""""#,
    ] {
        c.send_request(id, "server/discover", &params("", META))
            .await;
        let line = c.recv_line().await;
        assert!(
            line.starts_with(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"#)),
            "A4: id {id} echoed with its exact text and type: {line}"
        );
    }
    assert!(c.finish().await.status.success());
}

// ---------------------------------------------------------------------------------------------
// Malformed input (A-section, O36, O37, O43)

#[tokio::test]
async fn a2_a21_o36_o37_malformed_lines_are_answered_and_serving_continues() {
    let mut c = spawn(&[]);
    let deep = format!("{}{}", "[".repeat(70), "]".repeat(70));
    let long_id = "1".repeat(400);
    let oversized = format!(
        r#"{{"jsonrpc":"2.0","id":77,"method":"tools/list","params":{{"pad":"{}"}}}}"#,
        "x".repeat(2 * 1024 * 1024 + 10)
    );
    // (line, expected code, expected id)
    let cases: Vec<(Vec<u8>, i64, Value)> = vec![
        (b"garbage".to_vec(), -32700, Value::Null),
        (b"{\"jsonrpc\":\"2.0\",".to_vec(), -32700, Value::Null),
        (vec![0xff, 0xfe, b'{', b'}'], -32700, Value::Null),
        (br#"{"jsonrpc":"2.0"}"#.to_vec(), -32600, Value::Null),
        (
            br#"{"id":1,"method":"tools/list"}"#.to_vec(),
            -32600,
            json!(1),
        ),
        (
            br#"{"jsonrpc":"1.0","id":2,"method":"tools/list"}"#.to_vec(),
            -32600,
            json!(2),
        ),
        (
            br#"{"jsonrpc":"2.0","id":3,"method":5}"#.to_vec(),
            -32600,
            json!(3),
        ),
        // A2: null, fractional and structured ids.
        (
            br#"{"jsonrpc":"2.0","id":null,"method":"tools/list"}"#.to_vec(),
            -32600,
            Value::Null,
        ),
        (
            br#"{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}"#.to_vec(),
            -32600,
            Value::Null,
        ),
        (
            br#"{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}"#.to_vec(),
            -32600,
            Value::Null,
        ),
        // A21: batches, empty or not.
        (
            br#"[{"jsonrpc":"2.0","id":4,"method":"tools/list"}]"#.to_vec(),
            -32600,
            Value::Null,
        ),
        (b"[]".to_vec(), -32600, Value::Null),
        // O36: duplicate member names.
        (
            br#"{"jsonrpc":"2.0","id":5,"method":"tools/list","method":"tools/list"}"#.to_vec(),
            -32600,
            json!(5),
        ),
        // O13: a member name serde_json reads as an instruction (its raw-value token would turn
        // this `text` object into the string "hi" for the schema check and the handler).
        (
            br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"text":{"$serde_json::private::RawValue":"\"hi\""}}}}"#.to_vec(),
            -32600,
            json!(9),
        ),
        // O37: a 400-digit id is over the 256-byte bound.
        (
            format!(r#"{{"jsonrpc":"2.0","id":{long_id},"method":"tools/list"}}"#).into_bytes(),
            -32600,
            Value::Null,
        ),
        // Depth bound (64 levels).
        (
            format!(r#"{{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{deep}}}"#)
                .into_bytes(),
            -32600,
            json!(6),
        ),
        // A12: clients never send responses.
        (
            br#"{"jsonrpc":"2.0","id":8,"result":{}}"#.to_vec(),
            -32600,
            json!(8),
        ),
        // O36: a line over 2 MiB is skipped up to its newline and answered once, id null.
        (oversized.into_bytes(), -32600, Value::Null),
    ];
    for (n, (line, code, id)) in cases.into_iter().enumerate() {
        c.send_bytes(&line).await;
        let reply = c.recv().await;
        assert_error(&reply, &id, code, None);
        // The next valid request is served normally.
        let next = 1000 + i64::try_from(n).unwrap();
        let ok = c.call(next, "server/discover", &params("", META)).await;
        assert_eq!(ok["result"]["resultType"], "complete", "after case {n}");
    }
    // A11, J10: notifications are never answered, malformed or unknown cancellations included.
    for note in [
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":999}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":"x"}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled"}"#,
        // J11: a cancellation that arrives after the reply changes nothing.
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1000}}"#,
    ] {
        c.send(note).await;
    }
    // If any of them had been answered, that line would arrive before this reply.
    let ok = c.call(2000, "server/discover", &params("", META)).await;
    assert_eq!(ok["result"]["resultType"], "complete");
    let done = c.finish().await;
    assert!(done.lines.is_empty(), "{:?}", done.lines);
    assert!(done.status.success());
}

#[tokio::test]
async fn c1_c11_framing_split_writes_blank_lines_crlf_and_a_last_line_without_newline() {
    let mut c = spawn(&[]);
    let request = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{{"_meta":{META}}}}}"#
    );
    // One line delivered in two writes. The pause only makes two separate reads likely; the
    // expected outcome is the same either way.
    let (head, tail) = request.split_at(request.len() / 2);
    let stdin = c.stdin.as_mut().unwrap();
    stdin.write_all(head.as_bytes()).await.unwrap();
    stdin.flush().await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    stdin.write_all(tail.as_bytes()).await.unwrap();
    stdin.write_all(b"\n").await.unwrap();
    stdin.flush().await.unwrap();
    assert_eq!(c.recv().await["result"]["resultType"], "complete");
    // An empty line is skipped without a reply; a line of only whitespace is not a JSON
    // message (-32700, id null). A CR before the newline and whitespace around a message are
    // JSON whitespace: the request is served.
    c.send_bytes(
        format!(
            "\n  \r\n  {{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"server/discover\",\"params\":{{\"_meta\":{META}}}}}  \r"
        )
        .as_bytes(),
    )
    .await;
    assert_error(&c.recv().await, &Value::Null, -32700, None);
    let crlf = c.recv().await;
    assert_eq!(crlf["id"], 2);
    assert_eq!(crlf["result"]["resultType"], "complete");
    // C11: a last request without its newline is still served before the exit.
    let stdin = c.stdin.as_mut().unwrap();
    stdin
        .write_all(
            format!(
                r#"{{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{{"_meta":{META}}}}}"#
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let done = c.finish().await;
    let values = done.values();
    assert_eq!(values.len(), 1, "{:?}", done.lines);
    assert_eq!(values[0]["id"], 3);
    assert_eq!(values[0]["result"]["resultType"], "complete");
    assert!(done.status.success());
}

#[tokio::test]
async fn c6_c14_pipelined_requests_each_get_exactly_one_whole_line() {
    let mut c = spawn(&[]);
    // 60 requests written at once, mixing instant replies and progress-reporting calls whose
    // notifications are written concurrently with other replies.
    let mut batch = String::new();
    for id in 0..60 {
        let params = if id % 10 == 0 {
            compact(
                "progress",
                "{}",
                &meta_with_token(&format!(r#""p{id}""#)),
                "",
            )
        } else {
            compact(
                "echo",
                &format!(r#"{{"text":"line {id}\nwith a newline"}}"#),
                META,
                "",
            )
        };
        batch.push_str(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#
        ));
        batch.push('\n');
    }
    c.send_bytes(batch.trim_end().as_bytes()).await;
    let mut replies = std::collections::BTreeMap::new();
    let mut progress = std::collections::BTreeMap::<String, usize>::new();
    while replies.len() < 60 {
        let v = c.recv().await;
        if let Some(id) = v.get("id") {
            let id = id.as_i64().unwrap();
            assert!(
                replies.insert(id, v.clone()).is_none(),
                "two replies for {id}"
            );
        } else {
            assert_eq!(v["method"], "notifications/progress");
            let token = v["params"]["progressToken"].as_str().unwrap().to_owned();
            let id: i64 = token[1..].parse().unwrap();
            assert!(
                !replies.contains_key(&id),
                "J4: progress after the reply of {id}"
            );
            *progress.entry(token).or_default() += 1;
        }
    }
    for (id, reply) in &replies {
        let expected = if id % 10 == 0 {
            json!({"value":{"steps":3}})
        } else {
            json!({"value":{"text":format!("line {id}\nwith a newline")}})
        };
        assert_eq!(reply["result"]["structuredContent"], expected, "{id}");
    }
    assert_eq!(progress.len(), 6, "{progress:?}");
    assert!(progress.values().all(|n| *n == 3), "{progress:?}");
    let done = c.finish().await;
    assert!(done.lines.is_empty(), "{:?}", done.lines);
    assert!(done.status.success());
}

/// O8: a client that stops reading stdout stops the server reading stdin. The replies of each
/// read are written before the next read, so a full stdout pipe holds the reader and input
/// piles up in the client's pipe instead of in the server's memory. Then every request that
/// was written whole gets its one reply (`echo` answers at once, so in the order written).
#[tokio::test]
async fn o8_a_client_not_reading_stdout_stops_the_server_reading_stdin() {
    /// Far more than the pipes and the server's read buffer hold, far less than `SENT`.
    const BOUND: usize = 2 << 20;
    const SENT: usize = 400;
    /// A write that makes no progress for this long counts as held up.
    const STALL: Duration = Duration::from_secs(1);
    let mut c = spawn(&[]);
    let text = "x".repeat(16 * 1024);
    let mut written = 0usize;
    let mut whole = 0usize;
    let stdin = c.stdin.as_mut().expect("stdin open");
    for id in 0..SENT {
        let params = compact("echo", &format!(r#"{{"text":"{text}"}}"#), META, "");
        let line =
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#)
                + "\n";
        match tokio::time::timeout(STALL, stdin.write_all(line.as_bytes())).await {
            Ok(result) => result.expect("write to the child"),
            Err(_) => break,
        }
        written += line.len();
        whole += 1;
    }
    assert!(
        whole < SENT,
        "the server read all {written} bytes while stdout was not read"
    );
    assert!(
        written < BOUND,
        "{written} bytes read before the server held"
    );
    // Reading stdout lets the server go on; EOF ends the run. A line cut by the held-up write
    // ends the input: it is answered too (an error, or its reply if only the newline was cut).
    let done = c.finish().await;
    let values = done.values();
    let ids: Vec<i64> = values.iter().filter_map(|v| v["id"].as_i64()).collect();
    let expected: Vec<i64> = (0..whole as i64).collect();
    assert_eq!(
        ids[..whole.min(ids.len())],
        expected[..],
        "replies in order"
    );
    assert!(
        values.len() <= whole + 1,
        "{} replies to {whole} requests",
        values.len()
    );
    for v in &values[..whole] {
        assert_eq!(
            v["result"]["structuredContent"],
            json!({"value":{"text":text}})
        );
    }
    assert!(done.status.success());
}

// ---------------------------------------------------------------------------------------------
// Compact envelopes (O12–O18)

#[tokio::test]
async fn o14_o15_compact_value_null_and_absent_envelopes_are_byte_exact() {
    let mut c = spawn(&[]);
    // A typed result: {"value": …}; its own JSON copy is replaced by the envelope copy (O15).
    let echo = c
        .call_line(
            "1",
            "tools/call",
            &compact("echo", r#"{"text":"hi"}"#, META, ""),
        )
        .await;
    assert_eq!(
        echo,
        envelope_line("1", r#"{"value":{"text":"hi"}}"#, false)
    );
    // O14: an explicit null result stays present as {"value":null}.
    let null = c
        .call_line("2", "tools/call", &compact("null_value", "{}", META, ""))
        .await;
    assert_eq!(null, envelope_line("2", r#"{"value":null}"#, false));
    // O14: no structured result means no structuredContent and no copy: content only.
    let absent = c
        .call_line("3", "tools/call", &compact("no_structured", "{}", META, ""))
        .await;
    assert_eq!(
        absent,
        result_line("3", r#"[{"text":"plain","type":"text"}]"#, None, false)
    );
    // An optional field left out stays out; given, it is present.
    let without = c
        .call_line(
            "4",
            "tools/call",
            &compact("optional", r#"{"text":"a"}"#, META, ""),
        )
        .await;
    assert_eq!(
        without,
        envelope_line("4", r#"{"value":{"text":"a"}}"#, false)
    );
    let with = c
        .call_line(
            "5",
            "tools/call",
            &compact("optional", r#"{"text":"a","note":"n"}"#, META, ""),
        )
        .await;
    assert_eq!(
        with,
        envelope_line("5", r#"{"value":{"text":"a","note":"n"}}"#, false)
    );
    // call_tool without inner arguments works for a tool that takes none.
    let bare = c
        .call_line(
            "6",
            "tools/call",
            &format!(
                r#"{{"name":"call_tool","arguments":{{"name":"null_value"}},"_meta":{META}}}"#
            ),
        )
        .await;
    assert_eq!(bare, envelope_line("6", r#"{"value":null}"#, false));
    assert!(c.finish().await.status.success());
}

#[tokio::test]
async fn o17_e12_typed_failure_envelope_is_byte_exact() {
    let mut c = spawn(&[]);
    let line = c
        .call_line(
            "1",
            "tools/call",
            &compact("fail", r#"{"reason":"x"}"#, META, ""),
        )
        .await;
    assert_eq!(
        line,
        envelope_line(
            "1",
            r#"{"failure":{"code":"invalid_arguments","message":"The reason `x` is not accepted.","retryable":false,"diagnostics":[{"pointer":"/reason","keyword":"const","message":"no reason is accepted"}]}}"#,
            true
        )
    );
    // S1, E12: schema-invalid arguments of a known tool are the failure invalid_arguments with
    // diagnostics, not a protocol error.
    let bad = c
        .call(2, "tools/call", &compact("echo", r#"{"text":1}"#, META, ""))
        .await;
    let result = &bad["result"];
    assert_eq!(result["isError"], true, "{bad}");
    let failure = &result["structuredContent"]["failure"];
    assert_eq!(failure["code"], "invalid_arguments");
    assert_eq!(failure["retryable"], false);
    assert!(
        failure["diagnostics"]
            .as_array()
            .is_some_and(|d| d.iter().any(|d| d["pointer"] == "/text")),
        "{failure}"
    );
    // O15: the last content block is the envelope's JSON text.
    let content = result["content"].as_array().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(content.last().unwrap()["text"].as_str().unwrap()).unwrap(),
        result["structuredContent"]
    );
    assert!(c.finish().await.status.success());
}

#[tokio::test]
async fn o13_o18_x17_unknown_tools_and_malformed_envelopes() {
    let mut c = spawn(&[]);
    let unavailable = failure_envelope(
        "unavailable_tool",
        "No tool of that name is available to the caller.",
        false,
    );
    // O18: an unknown inner name is the unavailable_tool failure, byte-exact.
    let inner = c
        .call_line("1", "tools/call", &compact("nope", "{}", META, ""))
        .await;
    assert_eq!(inner, envelope_line("1", &unavailable, true));
    // A missing inner name is the same failure.
    let missing = c
        .call_line(
            "2",
            "tools/call",
            &format!(r#"{{"name":"call_tool","arguments":{{}},"_meta":{META}}}"#),
        )
        .await;
    assert_eq!(missing, envelope_line("2", &unavailable, true));
    // A filler tool is not special in compact mode: it runs through call_tool.
    let filler = c
        .call_line("3", "tools/call", &compact("tool_07", "{}", META, ""))
        .await;
    assert_eq!(
        filler,
        result_line("3", r#"[{"text":"tool_07","type":"text"}]"#, None, false)
    );
    // O18, X17, E11: an unknown outer tool is -32602, and so is an application tool named
    // directly (compact publishes only the three tools).
    for (id, name) in [("4", "nope"), ("5", "echo")] {
        let reply: Value = serde_json::from_str(
            &c.call_line(
                id,
                "tools/call",
                &format!(r#"{{"name":"{name}","arguments":{{}},"_meta":{META}}}"#),
            )
            .await,
        )
        .unwrap();
        assert_error(&reply, &serde_json::from_str(id).unwrap(), -32602, None);
    }
    // O13: malformed envelopes are -32602.
    let malformed = [
        // Unknown member in call_tool's arguments.
        format!(
            r#"{{"name":"call_tool","arguments":{{"name":"echo","arguments":{{"text":"a"}},"extra":1}},"_meta":{META}}}"#
        ),
        // Inner arguments not an object.
        format!(
            r#"{{"name":"call_tool","arguments":{{"name":"echo","arguments":[]}},"_meta":{META}}}"#
        ),
        // Inner name not a string.
        format!(r#"{{"name":"call_tool","arguments":{{"name":5}},"_meta":{META}}}"#),
        // Outer arguments not an object.
        format!(r#"{{"name":"call_tool","arguments":"echo","_meta":{META}}}"#),
        // search_tools: limit out of range, unknown member.
        format!(
            r#"{{"name":"search_tools","arguments":{{"query":"x","limit":21}},"_meta":{META}}}"#
        ),
        format!(r#"{{"name":"search_tools","arguments":{{"query":"x","q":1}},"_meta":{META}}}"#),
        // O51: discovery tools refuse continuations.
        format!(
            r#"{{"name":"get_tool_details","arguments":{{"name":"echo"}},"requestState":"abc","_meta":{META}}}"#
        ),
        // No outer name.
        format!(r#"{{"arguments":{{}},"_meta":{META}}}"#),
    ];
    for (i, p) in malformed.iter().enumerate() {
        let id = 10 + i64::try_from(i).unwrap();
        let reply = c.call(id, "tools/call", p).await;
        assert_error(&reply, &json!(id), -32602, None);
    }
    // O13, O36: a duplicate member name inside the envelope is refused by the codec before
    // dispatch, as an Invalid Request (-32600) that still names the request id.
    let duplicate = c
        .call(
            30,
            "tools/call",
            &format!(
                r#"{{"name":"call_tool","arguments":{{"name":"echo","name":"echo","arguments":{{}}}},"_meta":{META}}}"#
            ),
        )
        .await;
    assert_error(&duplicate, &json!(30), -32600, None);
    assert!(c.finish().await.status.success());
}

#[tokio::test]
async fn o12_compact_search_and_details_describe_without_running() {
    let mut c = spawn(&[]);
    let search = c
        .call(
            1,
            "tools/call",
            &format!(r#"{{"name":"search_tools","arguments":{{"query":"tool"}},"_meta":{META}}}"#),
        )
        .await;
    let value = &search["result"]["structuredContent"];
    // O12: default limit 5; more matched, so truncated.
    assert_eq!(value["tools"].as_array().map(Vec::len), Some(5), "{search}");
    assert_eq!(value["truncated"], true);
    assert!(search["result"].get("isError").is_none());
    let capped = c
        .call(
            2,
            "tools/call",
            &format!(
                r#"{{"name":"search_tools","arguments":{{"query":"tool","limit":20}},"_meta":{META}}}"#
            ),
        )
        .await;
    assert_eq!(
        capped["result"]["structuredContent"]["tools"]
            .as_array()
            .map(Vec::len),
        Some(20)
    );
    let details = c
        .call(
            3,
            "tools/call",
            &format!(
                r#"{{"name":"get_tool_details","arguments":{{"name":"echo"}},"_meta":{META}}}"#
            ),
        )
        .await;
    let tool = &details["result"]["structuredContent"]["tool"];
    assert_eq!(tool["name"], "echo");
    assert_eq!(tool["description"], "Echoes text.");
    assert_eq!(tool["inputSchema"]["properties"]["text"]["type"], "string");
    assert!(tool.get("outputSchema").is_some());
    // get_tool_details of an unknown name is the unavailable_tool failure.
    let unknown = c
        .call_line(
            "4",
            "tools/call",
            &format!(
                r#"{{"name":"get_tool_details","arguments":{{"name":"nope"}},"_meta":{META}}}"#
            ),
        )
        .await;
    assert_eq!(
        unknown,
        envelope_line(
            "4",
            &failure_envelope(
                "unavailable_tool",
                "No tool of that name is available to the caller.",
                false
            ),
            true
        )
    );
    // Searching never ran a handler: the slow/stuck fixtures would have written to stderr.
    let done = c.finish().await;
    assert!(done.status.success());
    assert!(
        done.stderr.iter().all(|l| !l.starts_with("started:")),
        "{:?}",
        done.stderr
    );
}

// ---------------------------------------------------------------------------------------------
// Direct mode (O21–O24)

/// Every tool of the fixture in the order direct mode lists them.
fn direct_names() -> Vec<String> {
    let mut names: Vec<String> = [
        "ask",
        "echo",
        "fail",
        "no_structured",
        "null_value",
        "optional",
        "progress",
        "slow",
        "stuck",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    names.extend((0..45).map(|n| format!("tool_{n:02}")));
    names
}

fn page_names(reply: &Value) -> Vec<String> {
    reply["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{reply}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn o21_e3_e4_h3_direct_pages_of_20_20_and_the_rest_of_54() {
    let mut c = spawn(&["--mode", "direct"]);
    let all = direct_names();
    assert_eq!(all.len(), 54);
    let first = c.call(1, "tools/list", &params("", META)).await;
    assert_eq!(page_names(&first), all[..20]);
    let cursor1 = first["result"]["nextCursor"].as_str().unwrap().to_owned();
    let second = c
        .call(
            2,
            "tools/list",
            &params(&format!(r#""cursor":"{cursor1}""#), META),
        )
        .await;
    assert_eq!(page_names(&second), all[20..40]);
    let cursor2 = second["result"]["nextCursor"].as_str().unwrap().to_owned();
    let third = c
        .call(
            3,
            "tools/list",
            &params(&format!(r#""cursor":"{cursor2}""#), META),
        )
        .await;
    assert_eq!(page_names(&third), all[40..]);
    assert!(
        third["result"].get("nextCursor").is_none(),
        "E4: no nextCursor (not even null) on the last page: {third}"
    );
    // H1, H3: every page carries the same cache scope.
    for page in [&first, &second, &third] {
        assert_eq!(page["result"]["cacheScope"], "private");
        assert_eq!(page["result"]["ttlMs"], 0);
        assert_eq!(page["result"]["resultType"], "complete");
    }
    // O22, O25, O26: a typed tool publishes the {value}/{failure} union; dynamic tools none.
    let echo = &first["result"]["tools"][1];
    assert_eq!(echo["name"], "echo");
    assert!(echo["outputSchema"].is_object(), "{echo}");
    assert!(
        echo.get("annotations").is_none(),
        "O22: absent hints stay absent"
    );
    let filler = &first["result"]["tools"][9];
    assert_eq!(filler["name"], "tool_00");
    assert!(filler.get("outputSchema").is_none(), "{filler}");
    // E3, B8: the same request gives the same page; a cursor is reusable (no server state).
    let again = c
        .call_line(
            "4",
            "tools/list",
            &params(&format!(r#""cursor":"{cursor1}""#), META),
        )
        .await;
    let second_again: Value = serde_json::from_str(&again).unwrap();
    assert_eq!(second_again["result"]["tools"], second["result"]["tools"]);
    assert!(second_again["result"]["nextCursor"].is_string());
    // E4, H11: a tampered or foreign cursor is -32602.
    let mut tampered = cursor1.into_bytes();
    let last = tampered.len() - 2;
    tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    for (id, cursor) in [(5, tampered.as_str()), (6, "not-a-cursor"), (7, "")] {
        let bad = c
            .call(
                id,
                "tools/list",
                &params(&format!(r#""cursor":"{cursor}""#), META),
            )
            .await;
        assert_error(&bad, &json!(id), -32602, None);
    }
    let not_string = c
        .call(8, "tools/list", &params(r#""cursor":5"#, META))
        .await;
    assert_error(&not_string, &json!(8), -32602, None);
    assert!(c.finish().await.status.success());
}

#[tokio::test]
async fn o23_o24_direct_calls_native_tools_and_unknown_is_32602() {
    let mut c = spawn(&["--mode", "direct"]);
    let echo = c
        .call_line(
            "1",
            "tools/call",
            &params(r#""name":"echo","arguments":{"text":"yo"}"#, META),
        )
        .await;
    assert_eq!(
        echo,
        envelope_line("1", r#"{"value":{"text":"yo"}}"#, false)
    );
    let null = c
        .call_line("2", "tools/call", &params(r#""name":"null_value""#, META))
        .await;
    assert_eq!(null, envelope_line("2", r#"{"value":null}"#, false));
    let filler = c
        .call_line(
            "3",
            "tools/call",
            &params(r#""name":"tool_44","arguments":{}"#, META),
        )
        .await;
    assert_eq!(
        filler,
        result_line("3", r#"[{"text":"tool_44","type":"text"}]"#, None, false)
    );
    // O23, X17: unknown names (the compact tool names included, O24) are -32602.
    for (id, name) in [(4, "nope"), (5, "call_tool"), (6, "search_tools")] {
        let reply = c
            .call(
                id,
                "tools/call",
                &params(&format!(r#""name":"{name}","arguments":{{}}"#), META),
            )
            .await;
        assert_error(&reply, &json!(id), -32602, None);
    }
    assert!(c.finish().await.status.success());
}

#[tokio::test]
async fn o7_an_unknown_mode_fails_at_startup() {
    let c = spawn(&["--mode", "fast"]);
    let done = c.finish().await;
    assert!(done.lines.is_empty(), "nothing on stdout: {:?}", done.lines);
    assert!(!done.status.success(), "{:?}", done.status);
    assert!(
        done.stderr.iter().any(|l| l.contains("`fast`")),
        "{:?}",
        done.stderr
    );
}

// ---------------------------------------------------------------------------------------------
// MRTR (I-section, O45–O54)

fn accept(key: &str) -> String {
    format!(r#","inputResponses":{{"{key}":{{"action":"accept","content":{{"ok":true}}}}}}"#)
}

fn ask_params(mode: Mode, rounds: Option<u32>, extra: &str) -> String {
    let args = match rounds {
        Some(r) => format!(r#"{{"rounds":{r}}}"#),
        None => "{}".to_owned(),
    };
    match mode {
        Mode::Compact => compact("ask", &args, META_ELICIT, extra),
        Mode::Direct => {
            format!(r#"{{"name":"ask","arguments":{args}{extra},"_meta":{META_ELICIT}}}"#)
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Mode {
    Compact,
    Direct,
}

/// Checks one `input_required` reply for question `k` and returns its `requestState`.
fn expect_question(reply: &Value, k: u32) -> String {
    let result = &reply["result"];
    assert_eq!(result["resultType"], "input_required", "round {k}: {reply}");
    // I3, I4, O47: only inputRequests, requestState and _meta; no content, no cache hints (H2).
    let mut keys: Vec<&str> = result
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["_meta", "inputRequests", "requestState", "resultType"],
        "{reply}"
    );
    assert_eq!(
        result["inputRequests"],
        json!({format!("q{k}"): {"method":"elicitation/create","params":{"mode":"form","message":format!("Question {k}?"),"requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}}})
    );
    result["requestState"].as_str().unwrap().to_owned()
}

/// Runs the ask tool through `answers` answered rounds and returns the state of every round
/// and the reply line to the last answer.
async fn answer_rounds(
    c: &mut Child,
    mode: Mode,
    rounds: Option<u32>,
    answers: u32,
    first_id: i64,
) -> (Vec<String>, String) {
    let mut line = c
        .call_line(
            &first_id.to_string(),
            "tools/call",
            &ask_params(mode, rounds, ""),
        )
        .await;
    let mut states = Vec::new();
    for k in 1..=answers {
        let state = expect_question(&serde_json::from_str(&line).unwrap(), k);
        states.push(state.clone());
        let extra = format!(r#"{},"requestState":"{state}""#, accept(&format!("q{k}")));
        // I11: every retry under a new id.
        line = c
            .call_line(
                &(first_id + i64::from(k)).to_string(),
                "tools/call",
                &ask_params(mode, rounds, &extra),
            )
            .await;
    }
    (states, line)
}

/// Byte equality of two reply lines, for failures of the continuation itself: they are
/// assembled by the same text path as every other tool result, so even member order matches.
fn assert_same_line(actual: &str, expected: &str) {
    assert_eq!(
        actual, expected,
        "\nactual:   {actual}\nexpected: {expected}"
    );
}

#[tokio::test]
async fn o54_o53_ten_answers_complete_and_a_replay_is_recovery_only() {
    for mode in [Mode::Compact, Mode::Direct] {
        let mode_flag = match mode {
            Mode::Compact => "compact",
            Mode::Direct => "direct",
        };
        let mut c = spawn(&["--mode", mode_flag]);
        let (states, done) = answer_rounds(&mut c, mode, Some(10), 10, 100).await;
        assert_eq!(states.len(), 10);
        assert_eq!(
            done,
            envelope_line("110", r#"{"value":{"answered":10}}"#, false),
            "{mode:?}: the 10th answer completes (O54)"
        );
        // O53: replaying the completed chain's last state never runs the tool again; the
        // typed tool did not opt into recovery, so it answers already_completed.
        let extra = format!(r#"{},"requestState":"{}""#, accept("q10"), states[9]);
        let replay = c
            .call_line("200", "tools/call", &ask_params(mode, Some(10), &extra))
            .await;
        assert_eq!(
            replay,
            envelope_line(
                "200",
                &failure_envelope(
                    "already_completed",
                    "The operation already completed; it is not run again.",
                    false
                ),
                true
            ),
            "{mode:?}"
        );
        assert!(c.finish().await.status.success());
    }
}

#[tokio::test]
async fn o54_o50_the_eleventh_prompt_is_interaction_limit_and_the_chain_is_dead() {
    let mut c = spawn(&[]);
    // rounds absent: the tool asks forever; after 10 answers its 11th prompt is refused.
    let (states, eleventh) = answer_rounds(&mut c, Mode::Compact, None, 10, 1).await;
    assert_same_line(
        &eleventh,
        &envelope_line(
            "11",
            &failure_envelope(
                "interaction_limit",
                "The interaction needed more than ten answers.",
                false,
            ),
            true,
        ),
    );
    // O50: replaying any state of the failed chain is the state_rejected tool failure.
    let extra = format!(r#"{},"requestState":"{}""#, accept("q10"), states[9]);
    let replay = c
        .call_line("12", "tools/call", &ask_params(Mode::Compact, None, &extra))
        .await;
    assert_same_line(
        &replay,
        &envelope_line(
            "12",
            &failure_envelope("state_rejected", "The requestState was rejected.", false),
            true,
        ),
    );
    assert!(c.finish().await.status.success());
}

#[tokio::test]
async fn o53_x5_replaying_an_answered_round_or_missing_answers_repeat_the_pending_prompt() {
    let mut c = spawn(&[]);
    let (states, pending) = answer_rounds(&mut c, Mode::Compact, Some(3), 1, 1).await;
    let round2 = expect_question(&serde_json::from_str(&pending).unwrap(), 2);
    // O53: the already used state of round 1 brings back the pending prompt (round 2); the
    // tool does not run again.
    let extra = format!(r#"{},"requestState":"{}""#, accept("q1"), states[0]);
    let replay = c
        .call(3, "tools/call", &ask_params(Mode::Compact, Some(3), &extra))
        .await;
    let again = expect_question(&replay, 2);
    // X5: answers under other keys are ignored and the pending prompt comes back too.
    let extra = format!(r#"{},"requestState":"{round2}""#, accept("zzz"));
    let missing = c
        .call(4, "tools/call", &ask_params(Mode::Compact, Some(3), &extra))
        .await;
    expect_question(&missing, 2);
    // The re-issued state is a working state of the same chain: answering it proceeds.
    let extra = format!(r#"{},"requestState":"{again}""#, accept("q2"));
    let next = c
        .call(5, "tools/call", &ask_params(Mode::Compact, Some(3), &extra))
        .await;
    expect_question(&next, 3);
    assert!(c.finish().await.status.success());
}

#[tokio::test]
async fn i6_i7_o50_tampered_other_request_and_malformed_continuations() {
    let mut c = spawn(&[]);
    let first = c
        .call(1, "tools/call", &ask_params(Mode::Compact, Some(1), ""))
        .await;
    let state = expect_question(&first, 1);
    let rejected = failure_envelope("state_rejected", "The requestState was rejected.", false);
    // I6, O50: a tampered token and a token that is no token at all are the state_rejected
    // tool failure on tools/call (a deliberate decision: failures of the answer are tool
    // failures there, JSON-RPC errors on resources/read and prompts/get).
    let mut bytes = state.clone().into_bytes();
    bytes[30] = if bytes[30] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(bytes).unwrap();
    for (id, token) in [("2", tampered.as_str()), ("3", "abc"), ("4", "")] {
        let extra = format!(r#"{},"requestState":"{token}""#, accept("q1"));
        let line = c
            .call_line(
                id,
                "tools/call",
                &ask_params(Mode::Compact, Some(1), &extra),
            )
            .await;
        assert_same_line(&line, &envelope_line(id, &rejected, true));
    }
    // I7: the state is bound to the original request: other arguments are rejected.
    let extra = format!(r#"{},"requestState":"{state}""#, accept("q1"));
    let other = c
        .call_line(
            "5",
            "tools/call",
            &ask_params(Mode::Compact, Some(2), &extra),
        )
        .await;
    assert_same_line(&other, &envelope_line("5", &rejected, true));
    // I13, O49: malformed answers are protocol errors before dispatch.
    for (id, responses) in [
        (6, r#"{"q1":{"action":"accept"}}"#),
        (7, r#"{"q1":{"action":"maybe"}}"#),
        (8, r#"{"q1":{"action":"decline","content":{}}}"#),
        (9, r#"{"q1":null}"#),
    ] {
        let extra = format!(r#","inputResponses":{responses},"requestState":"{state}""#);
        let reply = c
            .call(
                id,
                "tools/call",
                &ask_params(Mode::Compact, Some(1), &extra),
            )
            .await;
        assert_error(&reply, &json!(id), -32602, None);
    }
    // requestState must be a string.
    let extra = format!(r#"{},"requestState":5"#, accept("q1"));
    let reply = c
        .call(
            10,
            "tools/call",
            &ask_params(Mode::Compact, Some(1), &extra),
        )
        .await;
    assert_error(&reply, &json!(10), -32602, None);
    // The untouched state still completes the chain: nothing above consumed it.
    let extra = format!(r#"{},"requestState":"{state}""#, accept("q1"));
    let done = c
        .call_line(
            "11",
            "tools/call",
            &ask_params(Mode::Compact, Some(1), &extra),
        )
        .await;
    assert_eq!(
        done,
        envelope_line("11", r#"{"value":{"answered":1}}"#, false)
    );
    assert!(c.finish().await.status.success());
}

#[tokio::test]
async fn b8_i6_o5_a_request_state_from_another_server_process_is_state_rejected() {
    // The fixture configures no key ring, so each process seals with its own random key and
    // its own ledger: a restarted server must refuse the old process's state (mod docs).
    let mut first = spawn(&[]);
    let reply = first
        .call(1, "tools/call", &ask_params(Mode::Compact, Some(1), ""))
        .await;
    let state = expect_question(&reply, 1);
    assert!(first.finish().await.status.success());
    let mut second = spawn(&[]);
    let extra = format!(r#"{},"requestState":"{state}""#, accept("q1"));
    let line = second
        .call_line(
            "2",
            "tools/call",
            &ask_params(Mode::Compact, Some(1), &extra),
        )
        .await;
    assert_same_line(
        &line,
        &envelope_line(
            "2",
            &failure_envelope("state_rejected", "The requestState was rejected.", false),
            true,
        ),
    );
    assert!(second.finish().await.status.success());
}

#[tokio::test]
async fn b4_b5_i5_o45_asking_without_the_elicitation_capability_is_32021() {
    let mut c = spawn(&[]);
    // The same tool asks when this request declares elicitation…
    let asked = c
        .call(1, "tools/call", &ask_params(Mode::Compact, Some(1), ""))
        .await;
    expect_question(&asked, 1);
    // …and the next request, without it, gets -32021: nothing is remembered (B4).
    let line = c
        .call_line(
            "2",
            "tools/call",
            &compact("ask", r#"{"rounds":1}"#, META, ""),
        )
        .await;
    assert_eq!(
        line,
        error_line(
            "2",
            -32021,
            "Missing required client capability",
            Some(r#"{"requiredCapabilities":{"elicitation":{"form":{}}}}"#)
        )
    );
    assert!(c.finish().await.status.success());
}

// ---------------------------------------------------------------------------------------------
// The conformance fixture server as a child process (resources, prompts, MRTR on prompts/get)

#[tokio::test]
async fn f4_g4_g10_l2_l3_o50_conformance_server_serves_fixtures_over_real_pipes() {
    let mut c = spawn_example("conformance_server", &[]);
    let discover = c.call(1, "server/discover", &params("", META)).await;
    assert_eq!(
        discover["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "strict-mcp-conformance"
    );
    let read = c
        .call(
            2,
            "resources/read",
            &params(r#""uri":"test://static-text""#, META),
        )
        .await;
    assert_eq!(
        read["result"]["contents"],
        json!([{"uri":"test://static-text","mimeType":"text/plain","text":"This is the content of the static text resource."}])
    );
    assert_eq!(read["result"]["ttlMs"], 0);
    assert_eq!(read["result"]["cacheScope"], "private");
    let complete = c
        .call(
            3,
            "completion/complete",
            &params(
                r#""ref":{"type":"ref/prompt","name":"test_prompt_with_arguments"},"argument":{"name":"arg1","value":"par"}"#,
                META,
            ),
        )
        .await;
    assert_eq!(
        complete["result"]["completion"]["values"],
        json!(["paris", "park", "partial"])
    );
    // I2, F8/G4: prompts/get may ask for input; its state failures are JSON-RPC errors (O50).
    let prompt = |extra: &str| {
        format!(r#"{{"name":"test_input_required_result_prompt"{extra},"_meta":{META_ELICIT}}}"#)
    };
    let first = c.call(4, "prompts/get", &prompt("")).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let answer =
        r#","inputResponses":{"user_context":{"action":"accept","content":{"context":"tests"}}}"#;
    let mut tampered = state.clone().into_bytes();
    tampered[30] = if tampered[30] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    let bad = c
        .call(
            5,
            "prompts/get",
            &prompt(&format!(r#"{answer},"requestState":"{tampered}""#)),
        )
        .await;
    assert_error(
        &bad,
        &json!(5),
        -32602,
        Some(json!({"reason":"state_rejected","retryable":false})),
    );
    let good = c
        .call(
            6,
            "prompts/get",
            &prompt(&format!(r#"{answer},"requestState":"{state}""#)),
        )
        .await;
    assert_eq!(
        good["result"]["messages"][0]["content"]["text"], "Answer using this context: tests",
        "{good}"
    );
    // L2: log notifications only when this request asks, at or above its level, before the
    // reply; L3: an unknown level is -32602.
    let log_meta = |level: &str| {
        format!(
            r#"{{"name":"test_logging_tool","_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/logLevel":"{level}"}}}}"#
        )
    };
    c.send_request("7", "tools/call", &log_meta("info")).await;
    for step in ["started", "processing data", "completed"] {
        assert_eq!(
            c.recv_line().await,
            format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"data":"Tool execution {step}","level":"info","logger":"test_logging_tool"}}}}"#
            )
        );
    }
    assert_eq!(
        c.recv().await["result"]["content"],
        json!([{"text":"Logging test completed","type":"text"}])
    );
    // Above the messages' level, and without logLevel at all: the reply comes first.
    let quiet = c.call(8, "tools/call", &log_meta("warning")).await;
    assert_eq!(quiet["result"]["resultType"], "complete");
    let silent = c
        .call(
            9,
            "tools/call",
            &params(r#""name":"test_logging_tool""#, META),
        )
        .await;
    assert_eq!(silent["result"]["resultType"], "complete");
    let bad = c.call(10, "tools/call", &log_meta("loud")).await;
    assert_error(&bad, &json!(10), -32602, None);
    let done = c.finish().await;
    assert!(done.lines.is_empty(), "{:?}", done.lines);
    assert!(done.status.success(), "{:?}", done.status);
}

// ---------------------------------------------------------------------------------------------
// Progress (J-section, O57–O59)

/// `_meta` with a `progressToken` given as raw JSON text.
fn meta_with_token(token: &str) -> String {
    format!(
        r#"{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}},"progressToken":{token}}}"#
    )
}

#[tokio::test]
async fn j2_j3_j4_j6_o57_o58_progress_precedes_the_reply_with_the_token_echoed_exactly() {
    let mut c = spawn(&[]);
    for (n, token) in [r#""tok-1""#, "42", "9007199254740993", r#""""#]
        .into_iter()
        .enumerate()
    {
        let id = (n + 1).to_string();
        c.send_request(
            &id,
            "tools/call",
            &compact("progress", "{}", &meta_with_token(token), ""),
        )
        .await;
        let mut notes = Vec::new();
        let reply = loop {
            let line = c.recv_line().await;
            if line.starts_with(r#"{"jsonrpc":"2.0","method":"notifications/progress""#) {
                notes.push(line);
            } else {
                break line;
            }
        };
        // O57: the token in its original JSON text; O58: a non-increasing update never shows,
        // total and message as reported; J4: nothing after the reply (checked by the next
        // request's first line and by `finish`).
        assert_eq!(
            notes,
            [
                format!(
                    r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":{token},"progress":0.5,"total":3.0,"message":"half"}}}}"#
                ),
                format!(
                    r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":{token},"progress":2.0,"total":3.0}}}}"#
                ),
                format!(
                    r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":{token},"progress":3.0,"total":3.0,"message":"done"}}}}"#
                ),
            ],
            "token {token}"
        );
        assert_eq!(reply, envelope_line(&id, r#"{"value":{"steps":3}}"#, false));
    }
    let done = c.finish().await;
    assert!(done.lines.is_empty(), "J4: {:?}", done.lines);
    assert!(done.status.success());
}

#[tokio::test]
async fn o57_x11_invalid_or_oversized_tokens_disable_progress_without_failing_the_call() {
    let mut c = spawn(&[]);
    let oversized = format!(r#""{}""#, "t".repeat(300));
    for (n, token) in ["1.5", "null", "true", r#"{"a":1}"#, "[1]", &oversized]
        .into_iter()
        .enumerate()
    {
        let id = (n + 1).to_string();
        // `call_line` fails if any line (a progress notification) precedes the reply.
        let reply = c
            .call_line(
                &id,
                "tools/call",
                &compact("progress", "{}", &meta_with_token(token), ""),
            )
            .await;
        assert_eq!(
            reply,
            envelope_line(&id, r#"{"value":{"steps":3}}"#, false),
            "token {token}"
        );
    }
    // Without a token there is no progress either (J1: opt-in).
    let reply = c
        .call_line("9", "tools/call", &compact("progress", "{}", META, ""))
        .await;
    assert_eq!(reply, envelope_line("9", r#"{"value":{"steps":3}}"#, false));
    let done = c.finish().await;
    assert!(done.lines.is_empty(), "{:?}", done.lines);
    assert!(done.status.success());
}

// ---------------------------------------------------------------------------------------------
// Cancellation and shutdown (C9, C11, J9, O5)

#[tokio::test]
async fn c9_j9_c14_a_cancelled_call_stops_its_handler_and_is_never_answered() {
    let mut c = spawn(&[]);
    c.send_request(
        r#""slow-1""#,
        "tools/call",
        &compact("slow", r#"{"marker":"m1"}"#, META, ""),
    )
    .await;
    // The handler runs (observed on stderr) before the cancellation is sent.
    c.await_stderr("started:m1").await;
    c.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow-1","reason":"user"}}"#)
        .await;
    // J9: the handler stops promptly; it reports that on stderr, before stdin closes.
    c.await_stderr("cancelled:m1").await;
    // C14: other requests are served meanwhile, and nothing for slow-1 came before this reply.
    let echo = c
        .call_line(
            "2",
            "tools/call",
            &compact("echo", r#"{"text":"x"}"#, META, ""),
        )
        .await;
    assert_eq!(echo, envelope_line("2", r#"{"value":{"text":"x"}}"#, false));
    let done = c.finish().await;
    // C9: no reply for the cancelled id, ever.
    assert!(
        done.values()
            .iter()
            .all(|v| v.get("id") != Some(&json!("slow-1"))),
        "{:?}",
        done.lines
    );
    assert!(done.lines.is_empty(), "{:?}", done.lines);
    assert!(done.status.success(), "{:?}", done.status);
    assert_eq!(
        done.stderr.iter().filter(|l| *l == "cancelled:m1").count(),
        1,
        "{:?}",
        done.stderr
    );
}

#[tokio::test]
async fn a4_c8_a_cancellation_matches_the_id_with_its_json_type() {
    let mut c = spawn(&[]);
    c.send_request(
        r#""1""#,
        "tools/call",
        &compact("slow", r#"{"marker":"typed"}"#, META, ""),
    )
    .await;
    c.await_stderr("started:typed").await;
    // requestId 1 (an integer) names another request than "1" (a string): nothing happens.
    c.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#)
        .await;
    // At EOF the shutdown cancels the call, which therefore still answers: had the integer
    // cancellation matched, there would be no reply at all (C9).
    let done = c.finish().await;
    assert_eq!(
        done.lines,
        [envelope_line(
            r#""1""#,
            &failure_envelope("cancelled", "The call was cancelled.", true),
            true
        )]
    );
    assert!(done.status.success());
}

#[tokio::test]
async fn o5_c11_eof_cancels_a_cooperative_handler_which_still_answers_and_exit_is_0() {
    let mut c = spawn(&["--shutdown-budget-ms", "2000"]);
    c.send_request(
        "1",
        "tools/call",
        &compact("slow", r#"{"marker":"m2"}"#, META, ""),
    )
    .await;
    c.await_stderr("started:m2").await;
    let done = c.finish().await;
    // Shutdown cancels the call; the handler observes it and its answer is still delivered.
    assert_eq!(
        done.lines,
        [envelope_line(
            "1",
            &failure_envelope("cancelled", "The call was cancelled.", true),
            true
        )]
    );
    assert!(done.status.success(), "{:?}", done.status);
    assert!(done.stderr.iter().any(|l| l == "cancelled:m2"));
    assert!(
        done.stderr.iter().all(|l| !l.contains("cleanup_failed")),
        "{:?}",
        done.stderr
    );
}

/// Starts a call whose handler never ends (`marker` shows on stderr once it runs), closes stdin
/// and checks the O5 outcome: no reply for it, exit status 3 with the `cleanup_failed` line,
/// after the budget and within the budget plus a margin.
async fn assert_stuck_shutdown(
    method: &str,
    request_params: &str,
    marker: &str,
    serves_meanwhile: bool,
) {
    const BUDGET: Duration = Duration::from_millis(400);
    let budget = BUDGET.as_millis().to_string();
    let mut c = spawn(&["--shutdown-budget-ms", &budget]);
    c.send_request("1", method, request_params).await;
    c.await_stderr(marker).await;
    if serves_meanwhile {
        let ok = c.call(2, "server/discover", &params("", META)).await;
        assert_eq!(ok["result"]["resultType"], "complete");
    }
    let done = c.finish().await;
    assert!(
        done.lines.is_empty(),
        "no reply for the stuck call: {:?}",
        done.lines
    );
    assert_eq!(done.status.code(), Some(3), "{:?}", done.status);
    assert!(
        done.stderr
            .iter()
            .any(|l| l == "shutdown: cleanup_failed (1 calls still running)"),
        "{:?}",
        done.stderr
    );
    // The shutdown waited for the budget, and not much longer.
    assert!(done.elapsed >= BUDGET, "{:?}", done.elapsed);
    assert!(
        done.elapsed < BUDGET + Duration::from_secs(5),
        "{:?}",
        done.elapsed
    );
}

#[tokio::test]
async fn o5_c11_a_handler_ignoring_cancellation_makes_shutdown_exit_3_within_the_budget() {
    assert_stuck_shutdown(
        "resources/read",
        &params(r#""uri":"mem://stuck""#, META),
        "started:mem-stuck",
        true,
    )
    .await;
}

/// A tool handler that blocks its thread (a bug in the handler: it should use
/// `spawn_blocking`) stalls the requests read after it — the stdio host polls each request
/// once on its session thread — but it cannot stop the shutdown: the reader still sees EOF,
/// the shutdown runs without the stuck thread, reports `cleanup_failed` within the budget and
/// the process exits 3 (O5, C11). Regression test for a hang at EOF.
#[tokio::test]
async fn o5_c11_a_thread_blocking_tool_handler_still_lets_shutdown_exit_3_within_the_budget() {
    assert_stuck_shutdown(
        "tools/call",
        &compact("stuck", "{}", META, ""),
        "started:stuck",
        false,
    )
    .await;
}

#[tokio::test]
async fn c11_an_idle_server_exits_0_promptly_on_eof() {
    let c = spawn(&[]);
    let done = c.finish().await;
    assert!(done.lines.is_empty());
    assert!(done.status.success(), "{:?}", done.status);
    assert!(done.elapsed < Duration::from_secs(5), "{:?}", done.elapsed);
    assert!(
        done.stderr.iter().all(|l| !l.contains("cleanup_failed")),
        "{:?}",
        done.stderr
    );
}
