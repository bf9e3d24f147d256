//! Whole request sequences through the server, structure-aware: the fuzzer picks a sequence of
//! operations (well-formed requests of every method family with fuzz-chosen members and
//! `_meta`, mutated copies of them, raw lines, cancellations) and the chunk sizes stdin arrives
//! in; the bytes are served by the real stdio host (`Server::run_stdio_on`) over in-memory
//! pipes until EOF.
//!
//! Invariants: no panic; every output line is one JSON-RPC 2.0 object within the server's
//! egress ceiling; every generated request (unique id) gets exactly one reply, a cancelled one
//! at most one, and no reply names an id that was never sent; after EOF the server reports no
//! active call and no open listen stream (nothing leaked); output stays within a fixed multiple
//! of what came in plus a per-request allowance (bounded memory).
#![no_main]

use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use strict_mcp::codec::EgressLimits;
use strict_mcp::core::descriptor::{ContentBlock, PromptMessage, ResourceContents, Role};
use strict_mcp::core::{
    Caller, DynamicOutput, Invocation, Outcome, PromptDef, PromptReply, ReadReply, Registry,
    RegistryBuilder, ResourceDef, ToolDef, ToolError,
};
use strict_mcp::server::{Server, ServerOptions};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Operations per input: enough for interleavings (calls, cancels, MRTR rounds), small enough
/// that one input runs in milliseconds.
const MAX_OPS: usize = 24;
/// Output allowance per line of input, beyond the input's own size: a tools/list or discover
/// reply is a few KiB; anything near this means output grew without bound.
const OUTPUT_PER_LINE: usize = 64 * 1024;

#[derive(Arbitrary, Debug)]
enum Method {
    Discover,
    ToolsList,
    CallEcho,
    CallAsk,
    CallFail,
    CallUnknown,
    ResourcesList,
    ResourcesRead,
    TemplatesList,
    PromptsList,
    PromptsGet,
    Complete,
    Listen,
    Initialize,
    Other,
}

#[derive(Arbitrary, Debug)]
enum MetaPick {
    /// The 2026-07-28 members, capabilities without elicitation.
    Modern,
    /// Modern, declaring form elicitation (the `ask` tool can ask).
    ModernElicit,
    /// No `_meta` at all.
    Missing,
    /// Another protocol version.
    OldVersion,
    /// `_meta` of the wrong type.
    NotObject,
}

#[derive(Arbitrary, Debug)]
enum Op {
    /// A well-formed request (fresh unique id).
    Request {
        method: Method,
        meta: MetaPick,
        text: String,
        variant: u8,
    },
    /// An earlier generated line with one byte replaced (its id, if any, not counted).
    Mutate { back: u8, at: u16, byte: u8 },
    /// A raw line (newlines removed; never names a generated id).
    Raw(Vec<u8>),
    /// `notifications/cancelled` for an earlier generated request.
    Cancel { back: u8 },
    /// An answer round for an earlier `ask` call (inputResponses, fuzz-chosen requestState).
    Answer {
        back: u8,
        state: String,
        accept: bool,
    },
}

#[derive(Arbitrary, Debug)]
struct Session {
    ops: Vec<Op>,
    /// Sizes of the chunks stdin is delivered in (cycled; 0 means 1).
    chunks: Vec<u16>,
}

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        RegistryBuilder::new()
            .tool(ToolDef::dynamic(
                "echo",
                r#"{"type":"object","properties":{"text":{"type":"string","maxLength":64}},"required":["text"]}"#,
                None,
                |_inv: Invocation, args: Box<RawValue>| async move {
                    Ok(DynamicOutput {
                        content: vec![ContentBlock::text(args.get())],
                        structured: None,
                    })
                },
            ))
            .tool(ToolDef::dynamic_interactive(
                "ask",
                r#"{"type":"object"}"#,
                None,
                |inv: Invocation, _args: Box<RawValue>| async move {
                    if let Some(answer) = inv.input_response("name") {
                        return Ok(Outcome::Complete(DynamicOutput {
                            content: vec![ContentBlock::text(answer.get())],
                            structured: None,
                        }));
                    }
                    let ask = inv
                        .elicit_form(
                            "Name?",
                            json!({"type":"object","properties":{"name":{"type":"string"}}}),
                        )
                        .map_err(ToolError::from)?;
                    Ok(Outcome::InputRequired {
                        requests: [("name".to_owned(), ask)].into_iter().collect(),
                    })
                },
            ))
            .tool(ToolDef::dynamic(
                "fail",
                r#"{"type":"object"}"#,
                None,
                |_inv: Invocation, _args: Box<RawValue>| async move {
                    Err(ToolError::from("it failed"))
                },
            ))
            .resource(ResourceDef::new("mem://a", "a", |_inv, uri| async move {
                Ok(ReadReply::new(vec![ResourceContents::text(uri, "alpha")]))
            }))
            .prompt(
                PromptDef::new("greet", |_inv, args| async move {
                    let name = args.get("name").cloned().unwrap_or_default();
                    Ok(Outcome::Complete(PromptReply {
                        description: None,
                        messages: vec![PromptMessage::new(Role::User, ContentBlock::text(format!("Hello {name}.")))],
                    }))
                })
                .argument("name", "Whom to greet.", false),
            )
            .build()
            .expect("the fuzz registry builds")
    })
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    })
}

fn meta(pick: &MetaPick) -> Option<Value> {
    let caps = match pick {
        MetaPick::ModernElicit => json!({"elicitation": {"form": {}}}),
        _ => json!({}),
    };
    match pick {
        MetaPick::Modern | MetaPick::ModernElicit => Some(json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": caps,
        })),
        MetaPick::Missing => None,
        MetaPick::OldVersion => Some(json!({
            "io.modelcontextprotocol/protocolVersion": "2025-11-25",
            "io.modelcontextprotocol/clientCapabilities": {},
        })),
        MetaPick::NotObject => Some(json!("meta")),
    }
}

/// The method name and params for one pick; `variant` bends members (wrong types, extras).
fn request_body(method: &Method, text: &str, variant: u8) -> (&'static str, Value) {
    let odd = variant % 4;
    match method {
        Method::Discover => ("server/discover", json!({})),
        Method::ToolsList => (
            "tools/list",
            if odd == 1 {
                json!({"cursor": text})
            } else {
                json!({})
            },
        ),
        Method::CallEcho => {
            let arguments = match odd {
                0 => json!({"text": text}),
                1 => json!({"text": variant}),
                2 => json!({}),
                _ => json!({"text": text, "extra": [text]}),
            };
            (
                "tools/call",
                json!({"name": "echo", "arguments": arguments}),
            )
        }
        Method::CallAsk => ("tools/call", json!({"name": "ask", "arguments": {}})),
        Method::CallFail => ("tools/call", json!({"name": "fail", "arguments": {}})),
        Method::CallUnknown => ("tools/call", json!({"name": text, "arguments": {}})),
        Method::ResourcesList => ("resources/list", json!({})),
        Method::ResourcesRead => (
            "resources/read",
            json!({"uri": if odd == 0 { "mem://a" } else { text }}),
        ),
        Method::TemplatesList => ("resources/templates/list", json!({})),
        Method::PromptsList => ("prompts/list", json!({})),
        Method::PromptsGet => (
            "prompts/get",
            json!({"name": "greet", "arguments": {"name": text}}),
        ),
        Method::Complete => (
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "greet"},
                   "argument": {"name": "name", "value": text}}),
        ),
        Method::Listen => ("subscriptions/listen", json!({})),
        Method::Initialize => (
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "fuzz", "version": "0"}}),
        ),
        Method::Other => ("tasks/list", json!({})),
    }
}

fn with_meta(mut params: Value, meta: Option<Value>) -> Value {
    if let (Some(meta), Some(obj)) = (meta, params.as_object_mut()) {
        obj.insert("_meta".to_owned(), meta);
    }
    params
}

/// What the session sent, to judge the replies against.
#[derive(Default)]
struct Script {
    bytes: Vec<u8>,
    lines: usize,
    /// Generated lines (for mutation) and the id each one carries.
    sent: Vec<(Vec<u8>, String)>,
    /// Generated ask calls with their params (for answer rounds).
    asks: Vec<Value>,
    /// id → cancelled?
    expected: HashMap<String, bool>,
    next_id: u32,
}

impl Script {
    fn push_line(&mut self, line: &[u8]) {
        self.bytes.extend_from_slice(line);
        self.bytes.push(b'\n');
        self.lines += 1;
    }

    fn fresh_id(&mut self) -> String {
        self.next_id += 1;
        format!("fz-{}", self.next_id)
    }

    fn request(&mut self, method: &str, params: Value) -> String {
        let id = self.fresh_id();
        let line = serde_json::to_vec(&json!({
            "jsonrpc": "2.0", "id": id, "method": method, "params": params,
        }))
        .expect("json");
        self.push_line(&line);
        self.sent.push((line, id.clone()));
        self.expected.insert(id.clone(), false);
        id
    }
}

fn pick<T>(items: &[T], back: u8) -> Option<&T> {
    if items.is_empty() {
        None
    } else {
        Some(&items[items.len() - 1 - usize::from(back) % items.len()])
    }
}

fn script(session: &Session) -> Script {
    let mut s = Script::default();
    for op in session.ops.iter().take(MAX_OPS) {
        match op {
            Op::Request {
                method,
                meta: m,
                text,
                variant,
            } => {
                let (name, params) = request_body(method, text, *variant);
                let params = with_meta(params, meta(m));
                if matches!(method, Method::CallAsk) {
                    s.asks.push(params.clone());
                }
                s.request(name, params);
            }
            Op::Mutate { back, at, byte } => {
                if let Some((line, _)) = pick(&s.sent, *back) {
                    let mut line = line.clone();
                    let i = usize::from(*at) % line.len();
                    line[i] = if *byte == b'\n' || *byte == b'\r' {
                        b' '
                    } else {
                        *byte
                    };
                    // Its id may have changed or survived: it is not counted, but a surviving
                    // id would be a duplicate of a counted one, so rename it out of the way.
                    let line = String::from_utf8_lossy(&line).replace("fz-", "zz-");
                    s.push_line(line.as_bytes());
                }
            }
            Op::Raw(bytes) => {
                let mut line: Vec<u8> = bytes
                    .iter()
                    .map(|b| if *b == b'\n' || *b == b'\r' { b' ' } else { *b })
                    .collect();
                for w in 0..line.len().saturating_sub(2) {
                    if &line[w..w + 3] == b"fz-" {
                        line[w] = b'z';
                    }
                }
                s.push_line(&line);
            }
            Op::Cancel { back } => {
                if let Some((_, id)) = pick(&s.sent, *back) {
                    let id = id.clone();
                    let line = serde_json::to_vec(&json!({
                        "jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": id, "reason": "fuzz"},
                    }))
                    .expect("json");
                    s.push_line(&line);
                    s.expected.insert(id, true);
                }
            }
            Op::Answer {
                back,
                state,
                accept,
            } => {
                if let Some(params) = pick(&s.asks, *back) {
                    let mut params = params.clone();
                    let answer = if *accept {
                        json!({"action": "accept", "content": {"name": state}})
                    } else {
                        json!({"action": "decline"})
                    };
                    if let Some(obj) = params.as_object_mut() {
                        obj.insert("inputResponses".to_owned(), json!({ "name": answer }));
                        obj.insert("requestState".to_owned(), json!(state));
                    }
                    s.request("tools/call", params);
                }
            }
        }
    }
    s
}

/// Stdin: the script's bytes in fuzz-chosen chunk sizes.
struct Chunked {
    bytes: Vec<u8>,
    at: usize,
    chunks: Vec<u16>,
    turn: usize,
}

impl AsyncRead for Chunked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let size = if this.chunks.is_empty() {
            usize::MAX
        } else {
            usize::from(this.chunks[this.turn % this.chunks.len()]).max(1)
        };
        this.turn += 1;
        let n = size.min(this.bytes.len() - this.at).min(buf.remaining());
        buf.put_slice(&this.bytes[this.at..this.at + n]);
        this.at += n;
        Poll::Ready(Ok(()))
    }
}

/// Stdout: everything the server writes.
#[derive(Clone, Default)]
struct Sink(Arc<Mutex<Vec<u8>>>);

impl AsyncWrite for Sink {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.0.lock().expect("sink").extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

fuzz_target!(|session: Session| {
    let script = script(&session);
    let server = Server::new(
        registry().clone(),
        ServerOptions::new().shutdown_budget(Duration::from_millis(200)),
    )
    .expect("the fuzz server builds");
    let sink = Sink::default();
    let stdin = Chunked {
        bytes: script.bytes.clone(),
        at: 0,
        chunks: session.chunks.clone(),
        turn: 0,
    };
    let report = runtime()
        .block_on(server.run_stdio_on(Caller::new("fuzz"), stdin, sink.clone()))
        .expect("in-memory pipes do not fail");
    let _ = report;

    let status = server.status();
    assert_eq!(status.active_calls, 0, "a call outlived EOF: {status:?}");
    assert_eq!(
        status.listen_streams, 0,
        "a listen stream outlived EOF: {status:?}"
    );

    let out = sink.0.lock().expect("sink").clone();
    assert!(
        out.len() <= script.bytes.len() + OUTPUT_PER_LINE * (script.lines + 1),
        "output grew past its allowance: {} bytes for {} in",
        out.len(),
        script.bytes.len()
    );
    let ceiling = EgressLimits::SERVER.max_message_bytes;
    let mut replies: HashMap<String, usize> = HashMap::new();
    for line in out.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        assert!(line.len() <= ceiling, "a line of {} bytes", line.len());
        let value: Value = serde_json::from_slice(line).expect("every line is JSON");
        assert_eq!(value["jsonrpc"], "2.0", "not JSON-RPC 2.0: {value}");
        let is_reply = value.get("result").is_some() || value.get("error").is_some();
        if !is_reply {
            assert!(
                value.get("method").is_some(),
                "neither reply nor notification: {value}"
            );
            continue;
        }
        if let Some(id) = value["id"].as_str().filter(|id| id.starts_with("fz-")) {
            assert!(
                script.expected.contains_key(id),
                "a reply to unsent id {id}"
            );
            *replies.entry(id.to_owned()).or_default() += 1;
        }
    }
    if std::env::var_os("SESSION_STATS").is_some() {
        eprintln!(
            "stats: ops={} expected={} replied={} out_lines={}",
            session.ops.len(),
            script.expected.len(),
            replies.len(),
            out.split(|b| *b == b'\n').filter(|l| !l.is_empty()).count()
        );
    }
    for (id, cancelled) in &script.expected {
        let n = replies.get(id).copied().unwrap_or(0);
        if *cancelled {
            assert!(n <= 1, "{n} replies to cancelled {id}");
        } else {
            assert_eq!(n, 1, "{n} replies to {id}");
        }
    }
});
