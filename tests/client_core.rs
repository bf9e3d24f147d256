//! The strict client core against our own server (in-memory transport) and against scripted
//! fake servers (a [`Transport`] implemented here): discovery and the version check, every
//! outcome class, MRTR rounds, pagination bounds, deadlines, cancellation, transport death,
//! listen streams.

#![forbid(unsafe_code)]

#[path = "../examples/conformance/fixtures.rs"]
mod fixtures;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Map, Value};
use strict_mcp::client::{
    BoxFuture, CallOptions, Client, ClientError, ClientOptions, ConnectError, Inbound,
    InvalidResult, ListenError, PaginationError, Round, RoundInput, RpcErrorKind, ToolOutcome,
    Transport, TransportError, MAX_DEADLINE, MAX_DRIVEN_ROUNDS, MAX_LIST_ITEMS, MAX_LIST_PAGES,
};
use strict_mcp::codec::{decode, IngressLimits};
use strict_mcp::core::Caller;
use strict_mcp::machine::subscriptions::{Change, Filter, Violation};
use strict_mcp::server::{Server, ServerOptions};
use strict_mcp::testing::InMemoryTransport;
use strict_mcp::wire::jsonrpc::{Message, Request};
use strict_mcp::wire::result::ResultError;
use tokio::sync::mpsc;

// ---------------------------------------------------------------------------------------------
// A scripted fake server

/// What the fake does in answer to one request.
enum Act {
    /// Sends this raw line (decoded by the client's codec, duplicate keys and all).
    Line(String),
    /// Kills the transport with this cause.
    Die(&'static str),
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Cause(&'static str);

type Script = Box<dyn Fn(&Request, usize) -> Vec<Act> + Send + Sync>;

struct Fake {
    script: Script,
    tx: mpsc::UnboundedSender<Result<Inbound, TransportError>>,
    rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<Result<Inbound, TransportError>>>,
    sent: Mutex<Vec<Message>>,
    /// While set, `send` of a `tools/call` never completes (the pipe is blocked).
    block_calls: AtomicBool,
    dead: Mutex<Option<TransportError>>,
}

impl Fake {
    fn new(script: impl Fn(&Request, usize) -> Vec<Act> + Send + Sync + 'static) -> Arc<Fake> {
        let (tx, rx) = mpsc::unbounded_channel();
        Arc::new(Fake {
            script: Box::new(script),
            tx,
            rx: tokio::sync::Mutex::new(rx),
            sent: Mutex::new(Vec::new()),
            block_calls: AtomicBool::new(false),
            dead: Mutex::new(None),
        })
    }

    fn sent(&self) -> Vec<Message> {
        self.sent.lock().unwrap().clone()
    }

    fn sent_requests(&self) -> Vec<Request> {
        self.sent()
            .into_iter()
            .filter_map(|m| match m {
                Message::Request(r) => Some(r),
                _ => None,
            })
            .collect()
    }

    /// The params of every `notifications/cancelled` sent, as JSON text.
    fn cancellations(&self) -> Vec<String> {
        self.sent()
            .into_iter()
            .filter_map(|m| match m {
                Message::Notification(n) if n.method == "notifications/cancelled" => {
                    n.params.map(|p| p.get().to_owned())
                }
                _ => None,
            })
            .collect()
    }
}

impl Transport for Fake {
    fn send<'a>(&'a self, message: &'a Message) -> BoxFuture<'a, Result<(), TransportError>> {
        Box::pin(async move {
            if let Some(dead) = self.dead.lock().unwrap().clone() {
                return Err(dead);
            }
            if let Message::Request(r) = message {
                if r.method == "tools/call" && self.block_calls.load(Ordering::SeqCst) {
                    std::future::pending::<()>().await;
                }
            }
            let n = {
                let mut sent = self.sent.lock().unwrap();
                sent.push(message.clone());
                sent.len()
            };
            if let Message::Request(r) = message {
                for act in (self.script)(r, n) {
                    match act {
                        Act::Line(line) => {
                            let inbound = match decode(line.as_bytes(), &IngressLimits::CLIENT) {
                                Ok(m) => Inbound::Message(m),
                                Err(rejection) => Inbound::Rejected(rejection),
                            };
                            let _ = self.tx.send(Ok(inbound));
                        }
                        Act::Die(cause) => {
                            let e = TransportError::failed(Cause(cause));
                            *self.dead.lock().unwrap() = Some(e.clone());
                            let _ = self.tx.send(Err(e));
                        }
                    }
                }
            }
            Ok(())
        })
    }

    fn recv(&self) -> BoxFuture<'_, Result<Inbound, TransportError>> {
        // Frames queued before a death are delivered first, as from a pipe.
        Box::pin(async move {
            match self.rx.lock().await.recv().await {
                Some(r) => r,
                None => Err(TransportError::Closed),
            }
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

fn discover_result(versions: Value) -> String {
    json!({
        "resultType": "complete",
        "supportedVersions": versions,
        "capabilities": {"tools": {"listChanged": true}},
        "instructions": "be nice",
        "ttlMs": 5000,
        "cacheScope": "public",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake", "version": "1.2.3"}},
    })
    .to_string()
}

fn ok(r: &Request, result: &str) -> Act {
    Act::Line(format!(
        r#"{{"jsonrpc":"2.0","id":{},"result":{result}}}"#,
        r.id.token()
    ))
}

fn err(r: &Request, code: i64, message: &str) -> Act {
    Act::Line(format!(
        r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":{code},"message":"{message}","data":{{"k":1}}}}}}"#,
        r.id.token()
    ))
}

fn tools_page(names: &[String], next: Option<&str>) -> String {
    let tools: Vec<Value> = names
        .iter()
        .map(|n| json!({"name": n, "inputSchema": {"type": "object"}}))
        .collect();
    let mut page =
        json!({"resultType": "complete", "tools": tools, "ttlMs": 0, "cacheScope": "private"});
    if let Some(next) = next {
        page["nextCursor"] = json!(next);
    }
    page.to_string()
}

/// A fake that discovers normally and hands every other request to `rest`.
fn modern(rest: impl Fn(&Request, usize) -> Vec<Act> + Send + Sync + 'static) -> Arc<Fake> {
    Fake::new(move |r, n| {
        if r.method == "server/discover" {
            vec![ok(r, &discover_result(json!(["2026-07-28"])))]
        } else {
            rest(r, n)
        }
    })
}

async fn connect(fake: &Arc<Fake>) -> Client {
    Client::connect(fake.clone(), ClientOptions::default())
        .await
        .expect("connect")
}

fn params_of(r: &Request) -> Value {
    serde_json::from_str(r.params.as_ref().expect("params").get()).unwrap()
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("not an object"),
    }
}

// ---------------------------------------------------------------------------------------------
// Our own server, in memory

fn own_server() -> Server {
    Server::new(
        fixtures::builder().page_size(3).build().unwrap(),
        ServerOptions::new()
            .server_info("strict-mcp-test", "9.9.9")
            .instructions("Use the fixtures.")
            .mode("direct"),
    )
    .unwrap()
}

async fn own_client() -> (Client, Server) {
    let server = own_server();
    let transport = Arc::new(InMemoryTransport::new(server.clone(), Caller::new("t")));
    let client = Client::connect(transport, ClientOptions::default())
        .await
        .expect("connect to our own server");
    (client, server)
}

#[tokio::test]
async fn o72_connect_to_own_server_keeps_the_typed_discovery() {
    let (client, _server) = own_client().await;
    let d = client.discovery();
    assert_eq!(d.result.supported_versions, vec!["2026-07-28".to_owned()]);
    assert!(d.result.capabilities.tools.is_some());
    assert!(d.result.capabilities.prompts.is_some());
    assert!(d.result.capabilities.logging.is_some());
    assert_eq!(d.result.instructions.as_deref(), Some("Use the fixtures."));
    assert_eq!(d.result.ttl_ms, 0);
    assert_eq!(
        serde_json::to_value(d.result.cache_scope).unwrap(),
        json!("private")
    );
    let info = d.server_info.as_ref().expect("serverInfo from _meta");
    assert_eq!(
        (info.name.as_str(), info.version.as_str()),
        ("strict-mcp-test", "9.9.9")
    );
}

/// B17, B24: a modern-only client probes with `server/discover` first.
#[tokio::test]
async fn o72_o79_fake_discovery_keeps_cache_hints_and_sends_discover_only() {
    let fake = modern(|_, _| vec![]);
    let client = connect(&fake).await;
    assert_eq!(client.discovery().result.ttl_ms, 5000);
    assert_eq!(
        serde_json::to_value(client.discovery().result.cache_scope).unwrap(),
        json!("public")
    );
    let sent = fake.sent_requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].method, "server/discover");
}

#[tokio::test]
async fn o72_b26_an_older_version_list_is_a_typed_error_naming_it() {
    let fake = Fake::new(|r, _| vec![ok(r, &discover_result(json!(["2025-11-25"])))]);
    let e = Client::connect(fake.clone(), ClientOptions::default())
        .await
        .unwrap_err();
    match &e {
        ConnectError::UnsupportedVersions { versions } => {
            assert_eq!(versions, &vec!["2025-11-25".to_owned()]);
        }
        other => panic!("{other:?}"),
    }
    let text = e.to_string();
    assert!(
        text.contains("2025-11-25") && text.contains("2026-07-28"),
        "{text}"
    );
    // O71: nothing else was tried (no initialize, no second discover).
    let methods: Vec<String> = fake.sent_requests().into_iter().map(|r| r.method).collect();
    assert_eq!(methods, vec!["server/discover".to_owned()]);
}

#[tokio::test]
async fn b26_o71_method_not_found_to_discover_is_the_legacy_message_without_fallback() {
    let fake = Fake::new(|r, _| vec![err(r, -32601, "Method not found")]);
    let e = Client::connect(fake.clone(), ClientOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(e, ConnectError::LegacyServer), "{e:?}");
    let text = e.to_string();
    assert!(
        text.contains("initialize") && text.contains("2026-07-28") && text.contains("upgrade"),
        "{text}"
    );
    assert_eq!(fake.sent().len(), 1, "no initialize, no retry");
}

#[tokio::test]
async fn b26_an_initialize_shaped_result_is_the_legacy_message() {
    let fake = Fake::new(|r, _| {
        vec![ok(
            r,
            r#"{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"old","version":"1"}}"#,
        )]
    });
    let e = Client::connect(fake.clone(), ClientOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(e, ConnectError::LegacyServer), "{e:?}");
}

#[tokio::test]
async fn o72_a_failed_discovery_is_reported_not_retried() {
    let fake = Fake::new(|r, _| vec![err(r, -32603, "boom")]);
    let e = Client::connect(fake.clone(), ClientOptions::default())
        .await
        .unwrap_err();
    match e {
        ConnectError::Discover(inner) => match *inner {
            ClientError::Rpc(rpc) => assert_eq!(rpc.code, -32603),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
    assert_eq!(fake.sent().len(), 1);
}

// ---------------------------------------------------------------------------------------------
// Requests: _meta, ids, routing

#[tokio::test]
async fn o73_every_request_carries_version_call_capabilities_and_identity() {
    let fake = modern(|r, _| vec![ok(r, &tools_page(&[], None))]);
    let client = connect(&fake).await;
    client.list_tools(&CallOptions::default()).await.unwrap();
    let options = CallOptions::default().capabilities(json!({"elicitation": {"form": {}}}));
    client.list_tools(&options).await.unwrap();
    let sent = fake.sent_requests();
    assert_eq!(sent.len(), 3);
    let info = json!({"name": "strict-mcp", "version": env!("CARGO_PKG_VERSION")});
    for (request, caps) in
        sent.iter()
            .zip([json!({}), json!({}), json!({"elicitation": {"form": {}}})])
    {
        let meta = &params_of(request)["_meta"];
        assert_eq!(
            meta,
            &json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": caps,
                "io.modelcontextprotocol/clientInfo": info,
            }),
            "{}",
            request.method
        );
    }
}

#[tokio::test]
async fn o73_caller_meta_cannot_write_reserved_keys_and_nothing_is_sent() {
    let fake = modern(|r, _| vec![ok(r, &tools_page(&[], None))]);
    let client = connect(&fake).await;
    for key in [
        "io.modelcontextprotocol/protocolVersion",
        "io.modelcontextprotocol/anything",
        "dev.mcp/x",
        "progressToken",
    ] {
        let options = CallOptions {
            meta: vec![(key.to_owned(), json!(1))],
            ..CallOptions::default()
        };
        let e = client.list_tools(&options).await.unwrap_err();
        assert!(matches!(e, ClientError::Request(_)), "{key}: {e:?}");
    }
    let e = client
        .call("t", None, &CallOptions::default())
        .await
        .map(|_| ());
    // `_meta` inside the arguments is the tool's business; `_meta` in params is refused.
    assert!(!matches!(e, Err(ClientError::Request(_))), "{e:?}");
    let options = CallOptions {
        meta: vec![("com.example/trace".to_owned(), json!("abc"))],
        ..CallOptions::default()
    };
    client.list_tools(&options).await.unwrap();
    let last = fake.sent_requests().pop().unwrap();
    assert_eq!(params_of(&last)["_meta"]["com.example/trace"], json!("abc"));
    assert_eq!(
        fake.sent_requests().len(),
        3,
        "refused requests never reach the wire"
    );
}

/// C7: responses are matched by their exact id (listen notifications by subscriptionId in k3_k7_*, progress by token in j1_*).
#[tokio::test]
async fn a3_a4_ids_are_fresh_and_replies_match_by_exact_token() {
    // Each reply is first preceded by a decoy: the same id as a string, and an unknown id.
    let fake = modern(|r, _| {
        vec![
            Act::Line(format!(
                r#"{{"jsonrpc":"2.0","id":"{}","result":{}}}"#,
                r.id.token(),
                tools_page(&["decoy".into()], None)
            )),
            Act::Line(format!(
                r#"{{"jsonrpc":"2.0","id":999999,"result":{}}}"#,
                tools_page(&["stray".into()], None)
            )),
            ok(r, &tools_page(&[format!("for-{}", r.id.token())], None)),
        ]
    });
    let client = connect(&fake).await;
    let mut calls = Vec::new();
    for _ in 0..20 {
        let c = client.clone();
        calls.push(tokio::spawn(async move {
            c.list_tools(&CallOptions::default()).await.unwrap()
        }));
    }
    let mut names = Vec::new();
    for c in calls {
        let tools = c.await.unwrap();
        assert_eq!(tools.len(), 1);
        names.push(tools[0].name.clone());
    }
    let ids: Vec<String> = fake
        .sent_requests()
        .iter()
        .map(|r| r.id.token().to_owned())
        .collect();
    let unique: std::collections::HashSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "ids never reused: {ids:?}");
    for name in &names {
        assert!(
            ids.contains(&name.trim_start_matches("for-").to_owned()),
            "{name}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Outcome classes (O85)

#[tokio::test]
async fn o85_rpc_errors_are_typed_codes_and_retired_32002_is_not_found() {
    let cases = [
        (-32020, RpcErrorKind::HeaderMismatch),
        (-32021, RpcErrorKind::MissingRequiredClientCapability),
        (-32022, RpcErrorKind::UnsupportedProtocolVersion),
        (-32002, RpcErrorKind::NotFound),
        (
            -32602,
            RpcErrorKind::Standard(strict_mcp::wire::jsonrpc::ErrorCode::InvalidParams),
        ),
        (-31000, RpcErrorKind::Other(-31000)),
    ];
    for (code, kind) in cases {
        let fake = modern(move |r, _| vec![err(r, code, "nope")]);
        let client = connect(&fake).await;
        match client
            .read_resource("test://x", &CallOptions::default())
            .await
        {
            Err(ClientError::Rpc(e)) => {
                assert_eq!((e.code, e.kind), (code, kind));
                assert_eq!(e.message, "nope");
                assert_eq!(e.method, "resources/read");
                assert_eq!(e.data, Some(json!({"k": 1})));
            }
            other => panic!("{code}: {other:?}"),
        }
    }
}

/// A18: the legacy implementation-defined codes -32000…-32019 carry no shared meaning: each is
/// an application code (`Other`) with its exact value, except the retired -32002 (A16).
#[tokio::test]
async fn a18_legacy_implementation_defined_codes_carry_no_shared_meaning_but_32002() {
    for code in -32019..=-32000 {
        let expected = if code == -32002 {
            RpcErrorKind::NotFound
        } else {
            RpcErrorKind::Other(code)
        };
        assert_eq!(RpcErrorKind::from_code(code), expected, "{code}");
    }
    // Just outside the range, the codes this revision defines keep their meaning.
    assert_eq!(
        RpcErrorKind::from_code(-32020),
        RpcErrorKind::HeaderMismatch
    );
    assert_eq!(RpcErrorKind::from_code(-31999), RpcErrorKind::Other(-31999));
    // And off the wire: a -32001 from a tool call is an application error, not a transport or
    // outcome class of its own.
    let fake = modern(|r, _| vec![err(r, -32001, "busy")]);
    let client = connect(&fake).await;
    match client.call("t", None, &CallOptions::default()).await {
        Err(ClientError::Rpc(e)) => {
            assert_eq!((e.code, e.kind), (-32001, RpcErrorKind::Other(-32001)));
        }
        other => panic!("{other:?}"),
    }
}

/// A7, E18: an unknown `resultType` or content block `type` fails closed.
#[tokio::test]
async fn o74_unknown_result_type_unknown_content_type_and_duplicate_keys_fail_closed() {
    let fake = modern(|r, n| {
        let body = match n {
            2 => r#"{"resultType":"partial","content":[]}"#.to_owned(),
            3 => r#"{"resultType":"complete","content":[{"type":"video","url":"x"}]}"#.to_owned(),
            4 => r#"{"resultType":"complete","content":[],"content":[]}"#.to_owned(),
            _ => r#"{"resultType":"complete","content":[{"type":"text","text":"ok"}]}"#.to_owned(),
        };
        vec![ok(r, &body)]
    });
    let client = connect(&fake).await;
    let none = CallOptions::default();
    match client.call("t", None, &none).await {
        Err(ClientError::Invalid(InvalidResult::Result { error, method })) => {
            assert_eq!(method, "tools/call");
            assert_eq!(error, ResultError::UnknownResultType("partial".into()));
        }
        other => panic!("{other:?}"),
    }
    match client.call("t", None, &none).await {
        Err(ClientError::Invalid(InvalidResult::Result {
            error: ResultError::Schema { .. },
            ..
        })) => {}
        other => panic!("{other:?}"),
    }
    match client.call("t", None, &none).await {
        Err(ClientError::Invalid(InvalidResult::Frame { reason, .. })) => {
            assert!(reason.contains("duplicate"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // The client is still usable afterwards.
    let done = client.call("t", None, &none).await.unwrap();
    assert_eq!(done.content.len(), 1);
}

#[tokio::test]
async fn o77_input_required_from_a_list_method_is_an_invalid_result() {
    let fake = modern(|r, _| {
        vec![ok(
            r,
            r#"{"resultType":"input_required","requestState":"s"}"#,
        )]
    });
    let client = connect(&fake).await;
    match client.list_tools(&CallOptions::default()).await {
        Err(ClientError::Invalid(InvalidResult::Result { error, .. })) => {
            assert!(
                matches!(error, ResultError::InputRequiredNotAllowed(_)),
                "{error:?}"
            );
        }
        other => panic!("{other:?}"),
    }
}

/// A fake with one tool declaring an output schema; `tools/call` answers with `body`.
fn schema_fake(body: &'static str) -> Arc<Fake> {
    modern(move |r, _| {
        if r.method == "tools/list" {
            let page = json!({
                "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
                "tools": [{
                    "name": "sum",
                    "inputSchema": {"type": "object"},
                    "outputSchema": {
                        "type": "object",
                        "properties": {"total": {"$ref": "#/$defs/n"}},
                        "required": ["total"],
                        "$defs": {"n": {"type": "integer"}}
                    }
                }]
            });
            vec![ok(r, &page.to_string())]
        } else {
            vec![ok(r, body)]
        }
    })
}

/// E17: `structuredContent` is validated against `outputSchema`.
#[tokio::test]
async fn o80_o81_structured_content_is_checked_against_the_output_schema_with_local_refs() {
    let fake =
        schema_fake(r#"{"resultType":"complete","content":[],"structuredContent":{"total":3}}"#);
    let client = connect(&fake).await;
    client.list_tools(&CallOptions::default()).await.unwrap();
    let r = client
        .call("sum", None, &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(
        r.structured_content.as_ref().map(|s| s.get()),
        Some(r#"{"total":3}"#)
    );

    let fake =
        schema_fake(r#"{"resultType":"complete","content":[],"structuredContent":{"total":"3"}}"#);
    let client = connect(&fake).await;
    client.list_tools(&CallOptions::default()).await.unwrap();
    match client.call("sum", None, &CallOptions::default()).await {
        Err(ClientError::Invalid(InvalidResult::OutputSchema { tool, reason })) => {
            assert_eq!(tool, "sum");
            assert!(reason.contains("/total"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

/// E14: an `isError` result stays apart from JSON-RPC errors.
#[tokio::test]
async fn o85_is_error_is_a_tool_failure_and_skips_the_output_schema() {
    let fake = schema_fake(
        r#"{"resultType":"complete","isError":true,"content":[{"type":"text","text":"broke"}],"structuredContent":{"total":"no"}}"#,
    );
    let client = connect(&fake).await;
    client.list_tools(&CallOptions::default()).await.unwrap();
    match client
        .call_tool("sum", None, RoundInput::first(), &CallOptions::default())
        .await
        .unwrap()
    {
        ToolOutcome::Failed(f) => {
            assert_eq!(f.tool, "sum");
            assert_eq!(f.result.is_error, Some(true));
        }
        other => panic!("{other:?}"),
    }
    match client.call("sum", None, &CallOptions::default()).await {
        Err(ClientError::ToolFailed(f)) => assert_eq!(f.result.content.len(), 1),
        other => panic!("{other:?}"),
    }
}

/// E14: tool errors and JSON-RPC errors are distinct outcomes.
#[tokio::test]
async fn o85_own_server_success_and_tool_failure_are_distinct() {
    let (client, _server) = own_client().await;
    let r = client
        .call("test_simple_text", None, &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&r.content).unwrap(),
        json!([{"type": "text", "text": "This is a simple text response for testing."}])
    );
    assert_eq!(r.is_error, None);
    match client
        .call_tool(
            "test_error_handling",
            None,
            RoundInput::first(),
            &CallOptions::default(),
        )
        .await
        .unwrap()
    {
        ToolOutcome::Failed(f) => assert_eq!(f.result.is_error, Some(true)),
        other => panic!("{other:?}"),
    }
    // An unknown tool is a JSON-RPC error, not a tool failure.
    match client
        .call("no_such_tool", None, &CallOptions::default())
        .await
    {
        Err(ClientError::Rpc(e)) => assert_eq!(e.code, -32602),
        other => panic!("{other:?}"),
    }
    // A missing capability is its own typed code.
    match client
        .call("test_missing_capability", None, &CallOptions::default())
        .await
    {
        Err(ClientError::Rpc(e)) => {
            assert_eq!(e.kind, RpcErrorKind::MissingRequiredClientCapability);
        }
        other => panic!("{other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// MRTR (O77, O78, I15)

fn elicit() -> CallOptions {
    CallOptions::default().capabilities(json!({"elicitation": {"form": {}}}))
}

fn confirm_yes() -> Map<String, Value> {
    obj(json!({"confirm": {"action": "accept", "content": {"ok": true}}}))
}

#[tokio::test]
async fn o78_i15_mrtr_chain_driven_explicitly_against_own_server() {
    let (client, _server) = own_client().await;
    let tool = "test_input_required_result_request_state";
    // The convenience API does not hide the interim result.
    match client.call(tool, None, &elicit()).await {
        Err(ClientError::InputRequired(i)) => assert_eq!(i.method, "tools/call"),
        other => panic!("{other:?}"),
    }
    let first = match client
        .call_tool(tool, None, RoundInput::first(), &elicit())
        .await
        .unwrap()
    {
        ToolOutcome::InputRequired(i) => i.result,
        other => panic!("{other:?}"),
    };
    let requests = serde_json::to_value(first.input_requests.as_ref().unwrap()).unwrap();
    assert!(requests.get("confirm").is_some(), "{requests}");
    let state = first.request_state.clone().expect("sealed state");

    // A tampered state is refused with a JSON-RPC error (X21).
    let tampered = RoundInput {
        input_responses: Some(confirm_yes()),
        request_state: Some(format!("{state}x")),
    };
    match client.call_tool(tool, None, tampered, &elicit()).await {
        Err(ClientError::Rpc(e)) => assert_eq!(e.code, -32602),
        other => panic!("{other:?}"),
    }

    let done = client
        .call_tool(
            tool,
            None,
            RoundInput::answer(&first, confirm_yes()),
            &elicit(),
        )
        .await
        .unwrap();
    match done {
        ToolOutcome::Success(r) => assert_eq!(
            serde_json::to_value(&r.content).unwrap(),
            json!([{"type": "text", "text": "state-ok: confirmed=true"}])
        ),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn o78_driven_calls_answer_through_the_callback_against_own_server() {
    let (client, _server) = own_client().await;
    let mut asked = 0;
    let r = client
        .call_tool_driven(
            "test_input_required_result_request_state",
            None,
            &elicit(),
            |_| {
                asked += 1;
                Ok(confirm_yes())
            },
        )
        .await
        .unwrap();
    assert_eq!(asked, 1);
    assert_eq!(
        serde_json::to_value(&r.content).unwrap(),
        json!([{"type": "text", "text": "state-ok: confirmed=true"}])
    );
}

/// A fake that asks for input `rounds` times, then completes; the state it hands out contains
/// escapes so byte-exactness is visible.
fn asking_fake(rounds: usize) -> Arc<Fake> {
    modern(move |r, _| {
        let p = params_of(r);
        let round = match p.get("requestState").and_then(Value::as_str) {
            None => 0,
            Some(s) => s.rsplit('#').next().unwrap().parse::<usize>().unwrap(),
        };
        if round == rounds {
            vec![ok(
                r,
                r#"{"resultType":"complete","content":[{"type":"text","text":"done"}]}"#,
            )]
        } else {
            let state = format!("st\u{e9}\\\"te#{}", round + 1);
            let result = json!({
                "resultType": "input_required",
                "inputRequests": {"q": {"method": "elicitation/create", "params": {"mode": "form", "message": "?", "requestedSchema": {"type": "object", "properties": {}}}}},
                "requestState": state,
            });
            vec![ok(r, &result.to_string())]
        }
    })
}

/// I10, I11: each retry resends the call with `inputResponses` and the byte-exact `requestState` under a new id.
#[tokio::test]
async fn o78_driven_rounds_use_fresh_ids_exact_state_and_stop_at_the_cap() {
    // At the bound: MAX_DRIVEN_ROUNDS answers, then completion.
    let fake = asking_fake(MAX_DRIVEN_ROUNDS);
    let client = connect(&fake).await;
    let r = client
        .call_tool_driven("t", None, &CallOptions::default(), |_| {
            Ok(obj(json!({"q": {"action": "decline"}})))
        })
        .await
        .unwrap();
    assert_eq!(r.content.len(), 1);
    let calls: Vec<Request> = fake
        .sent_requests()
        .into_iter()
        .filter(|r| r.method == "tools/call")
        .collect();
    assert_eq!(calls.len(), MAX_DRIVEN_ROUNDS + 1);
    let ids: std::collections::HashSet<String> =
        calls.iter().map(|r| r.id.token().to_owned()).collect();
    assert_eq!(ids.len(), calls.len(), "a fresh id per round");
    assert_eq!(
        params_of(&calls[1])["requestState"],
        json!("st\u{e9}\\\"te#1")
    );
    assert_eq!(
        params_of(&calls[1])["inputResponses"],
        json!({"q": {"action": "decline"}})
    );
    assert!(params_of(&calls[0]).get("requestState").is_none());

    // One past the bound.
    let fake = asking_fake(MAX_DRIVEN_ROUNDS + 1);
    let client = connect(&fake).await;
    match client
        .call_tool_driven("t", None, &CallOptions::default(), |_| {
            Ok(obj(json!({"q": {"action": "cancel"}})))
        })
        .await
    {
        Err(ClientError::TooManyRounds { limit }) => assert_eq!(limit, MAX_DRIVEN_ROUNDS),
        other => panic!("{other:?}"),
    }
    // I15: without the driver nothing is answered.
    let fake = asking_fake(1);
    let client = connect(&fake).await;
    let out = client
        .call_tool("t", None, RoundInput::first(), &CallOptions::default())
        .await
        .unwrap();
    assert!(matches!(out, ToolOutcome::InputRequired(_)));
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        fake.sent_requests().len(),
        2,
        "discover and one call, no retry"
    );
}

#[tokio::test]
async fn o78_prompt_and_resource_rounds_return_input_required_as_an_outcome() {
    let fake = asking_fake(1);
    let client = connect(&fake).await;
    let none = CallOptions::default();
    assert!(matches!(
        client
            .get_prompt_round("p", None, RoundInput::first(), &none)
            .await
            .unwrap(),
        Round::InputRequired(_)
    ));
    assert!(matches!(
        client
            .read_resource_round("test://x", RoundInput::first(), &none)
            .await
            .unwrap(),
        Round::InputRequired(_)
    ));
    assert!(matches!(
        client.get_prompt("p", None, &none).await,
        Err(ClientError::InputRequired(_))
    ));
    assert!(matches!(
        client.read_resource("test://x", &none).await,
        Err(ClientError::InputRequired(_))
    ));
}

#[tokio::test]
async fn o77_own_server_prompts_resources_and_completion() {
    let (client, _server) = own_client().await;
    let none = CallOptions::default();
    let prompt = client
        .get_prompt("test_simple_prompt", None, &none)
        .await
        .unwrap();
    assert!(!prompt.messages.is_empty());
    let read = client
        .read_resource("test://static-text", &none)
        .await
        .unwrap();
    assert_eq!(read.contents.len(), 1);
    let templates = client.list_resource_templates(&none).await.unwrap();
    assert_eq!(templates.len(), 1);
    let c = client
        .complete_argument(
            obj(
                json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                "argument": {"name": "arg1", "value": ""}}),
            ),
            &none,
        )
        .await;
    assert!(c.is_ok(), "{c:?}");
}

// ---------------------------------------------------------------------------------------------
// Pagination (O86, O95)

#[tokio::test]
async fn o86_list_walks_follow_cursors_across_pages_of_own_server() {
    let (client, server) = own_client().await;
    let none = CallOptions::default();
    let tools = client.list_tools(&none).await.unwrap();
    let whole = Server::new(
        fixtures::builder().page_size(1000).build().unwrap(),
        ServerOptions::new().mode("direct"),
    )
    .unwrap();
    let one_page = Client::connect(
        Arc::new(InMemoryTransport::new(whole, Caller::new("t"))),
        ClientOptions::default(),
    )
    .await
    .unwrap();
    let expected: Vec<String> = one_page
        .list_tools(&none)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert!(expected.len() > 3, "several pages of 3");
    let names: Vec<String> = tools.iter().map(|t| t.name.clone()).collect();
    assert_eq!(names, expected, "every page, in order, none repeated");
    assert!(client.list_prompts(&none).await.unwrap().len() > 3);
    assert!(!client.list_resources(&none).await.unwrap().is_empty());
    drop(server);
}

#[tokio::test]
async fn o86_a_repeated_cursor_ends_the_walk_with_a_typed_error() {
    let fake = modern(|r, _| {
        let p = params_of(r);
        let next = match p.get("cursor").and_then(Value::as_str) {
            None => "a",
            Some("a") => "b",
            Some(_) => "a",
        };
        vec![ok(r, &tools_page(&["x".into()], Some(next)))]
    });
    let client = connect(&fake).await;
    match client.list_tools(&CallOptions::default()).await {
        Err(ClientError::Pagination(PaginationError::RepeatedCursor { cursor, page })) => {
            assert_eq!((cursor.as_str(), page), ("a", 3));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        fake.sent_requests().len(),
        4,
        "discover + three pages, then stop"
    );
}

/// A fake with `pages` pages of `per_page` tools each.
fn paged_fake(pages: usize, per_page: usize) -> Arc<Fake> {
    modern(move |r, _| {
        let p = params_of(r);
        let page: usize = p
            .get("cursor")
            .and_then(Value::as_str)
            .map_or(1, |c| c.parse().unwrap());
        let names: Vec<String> = (0..per_page).map(|i| format!("t{page}-{i}")).collect();
        let next = (page < pages).then(|| (page + 1).to_string());
        vec![ok(r, &tools_page(&names, next.as_deref()))]
    })
}

#[tokio::test]
async fn o86_page_cap_at_the_bound_and_one_past() {
    let client = connect(&paged_fake(MAX_LIST_PAGES, 1)).await;
    assert_eq!(
        client
            .list_tools(&CallOptions::default())
            .await
            .unwrap()
            .len(),
        MAX_LIST_PAGES
    );
    let fake = paged_fake(MAX_LIST_PAGES + 1, 1);
    let client = connect(&fake).await;
    match client.list_tools(&CallOptions::default()).await {
        Err(ClientError::Pagination(PaginationError::TooManyPages { limit })) => {
            assert_eq!(limit, MAX_LIST_PAGES);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(fake.sent_requests().len(), MAX_LIST_PAGES + 1);
}

#[tokio::test]
async fn o86_item_cap_at_the_bound_and_one_past() {
    let per_page = MAX_LIST_ITEMS / 10;
    let client = connect(&paged_fake(10, per_page)).await;
    assert_eq!(
        client
            .list_tools(&CallOptions::default())
            .await
            .unwrap()
            .len(),
        MAX_LIST_ITEMS
    );
    let fake = modern(move |r, _| {
        let p = params_of(r);
        let names: Vec<String> = match p.get("cursor") {
            None => (0..MAX_LIST_ITEMS).map(|i| format!("t{i}")).collect(),
            Some(_) => vec!["one-more".into()],
        };
        let next = p.get("cursor").is_none().then_some("2");
        vec![ok(r, &tools_page(&names, next))]
    });
    let client = connect(&fake).await;
    match client.list_tools(&CallOptions::default()).await {
        Err(ClientError::Pagination(PaginationError::TooManyItems { limit })) => {
            assert_eq!(limit, MAX_LIST_ITEMS);
        }
        other => panic!("{other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Deadlines, cancellation, transport death

/// J13: every request has a deadline. On tokio's paused clock (the fake is in-process), so the
/// call ends at its deadline exactly, however loaded the machine.
#[tokio::test(start_paused = true)]
async fn o86_a_server_that_never_answers_hits_the_deadline_and_is_cancelled() {
    let fake = modern(|_, _| vec![]);
    let client = connect(&fake).await;
    let started = tokio::time::Instant::now();
    let options = CallOptions::default().deadline(Duration::from_millis(200));
    match client.call("slow", None, &options).await {
        Err(ClientError::Deadline { method, deadline }) => {
            assert_eq!(method, "tools/call");
            assert_eq!(deadline, Duration::from_millis(200));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(started.elapsed(), Duration::from_millis(200));
    tokio::time::sleep(Duration::from_millis(50)).await;
    let id = fake.sent_requests().pop().unwrap().id.token().to_owned();
    assert_eq!(
        fake.cancellations(),
        vec![format!(r#"{{"requestId":{id}}}"#)]
    );
}

/// J13: the deadline is configurable per request within a hard maximum.
#[tokio::test]
async fn o86_deadline_bounds_zero_and_past_the_maximum_are_refused_before_sending() {
    let fake = modern(|r, _| vec![ok(r, &tools_page(&[], None))]);
    let client = connect(&fake).await;
    client
        .list_tools(&CallOptions::default().deadline(MAX_DEADLINE))
        .await
        .unwrap();
    for bad in [Duration::ZERO, MAX_DEADLINE + Duration::from_nanos(1)] {
        match client
            .list_tools(&CallOptions::default().deadline(bad))
            .await
        {
            Err(ClientError::Request(_)) => {}
            other => panic!("{bad:?}: {other:?}"),
        }
    }
    assert_eq!(fake.sent_requests().len(), 2);
    let options = ClientOptions {
        default_deadline: MAX_DEADLINE + Duration::from_nanos(1),
        ..ClientOptions::default()
    };
    assert!(Client::connect(modern(|_, _| vec![]), options)
        .await
        .is_err());
}

/// C8, J7, J8: only a request that reached the wire and is still pending is cancelled, with its raw id.
#[tokio::test]
async fn o83_cancelling_after_the_wire_sends_the_raw_id_and_before_it_sends_nothing() {
    let fake = modern(|_, _| vec![]);
    let client = connect(&fake).await;
    // Reached the wire: dropping the call announces it.
    let none = CallOptions::default();
    let call = client.call("slow", None, &none);
    assert!(tokio::time::timeout(Duration::from_millis(100), call)
        .await
        .is_err());
    tokio::time::sleep(Duration::from_millis(50)).await;
    let id = fake.sent_requests().pop().unwrap().id.token().to_owned();
    assert_eq!(
        fake.cancellations(),
        vec![format!(r#"{{"requestId":{id}}}"#)]
    );

    // Never reached the wire: nothing is announced.
    fake.block_calls.store(true, Ordering::SeqCst);
    let none = CallOptions::default();
    let call = client.call("blocked", None, &none);
    assert!(tokio::time::timeout(Duration::from_millis(100), call)
        .await
        .is_err());
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        fake.cancellations().len(),
        1,
        "no cancel for an unsent request"
    );

    // The deadline covers a send that never completes: no hang, no cancel.
    let options = CallOptions::default().deadline(Duration::from_millis(100));
    match client.call("blocked", None, &options).await {
        Err(ClientError::Deadline { deadline, .. }) => {
            assert_eq!(deadline, Duration::from_millis(100));
        }
        other => panic!("{other:?}"),
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(fake.cancellations().len(), 1, "still no cancel");
}

/// On tokio's paused clock (our server is in memory): the fixture's 300 ms and the 150 ms the
/// cancellation gets are exact, so a loaded machine cannot make the cancellation look late.
#[tokio::test(start_paused = true)]
async fn o83_j9_cancelling_on_own_server_stops_the_running_call() {
    let (client, server) = own_client().await;
    // The progress fixture runs for 300 ms; the call is dropped after 50.
    let none = CallOptions::default();
    let call = client.call("test_tool_with_progress", None, &none);
    assert!(tokio::time::timeout(Duration::from_millis(50), call)
        .await
        .is_err());
    let deadline = tokio::time::Instant::now() + Duration::from_millis(150);
    while server.status().active_calls > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(
        server.status().active_calls,
        0,
        "the server saw the cancellation"
    );
}

/// On tokio's paused clock (the fake is in-process): "fast" is measured on the virtual clock,
/// so only a real wait (a timer) could exceed the bound, not a loaded machine.
#[tokio::test(start_paused = true)]
async fn o86_a_server_dying_mid_call_fails_every_waiter_with_the_cause_then_fast() {
    let fake = modern(|r, _| {
        if r.method == "tools/call" {
            vec![Act::Die("server process exited: signal 9")]
        } else {
            vec![]
        }
    });
    let client = connect(&fake).await;
    // A second request is waiting when the server dies.
    let waiting = {
        let c = client.clone();
        tokio::spawn(async move { c.list_tools(&CallOptions::default()).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    let started = tokio::time::Instant::now();
    let e = client
        .call("t", None, &CallOptions::default())
        .await
        .unwrap_err();
    let text = e.to_string();
    assert!(
        matches!(e, ClientError::Transport(TransportError::Failed { .. })),
        "{e:?}"
    );
    assert!(text.contains("signal 9"), "{text}");
    let other = waiting.await.unwrap().unwrap_err();
    assert!(other.to_string().contains("signal 9"), "{other}");
    // Fail fast afterwards, without touching the transport.
    let sent = fake.sent().len();
    let later = client
        .list_tools(&CallOptions::default())
        .await
        .unwrap_err();
    assert!(later.to_string().contains("signal 9"), "{later}");
    assert_eq!(fake.sent().len(), sent);
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(client.failure().is_some());
}

#[tokio::test]
async fn o83_closing_the_client_releases_waiters_with_closed() {
    let fake = modern(|_, _| vec![]);
    let client = connect(&fake).await;
    let waiting = {
        let c = client.clone();
        tokio::spawn(async move { c.list_tools(&CallOptions::default()).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    client.close().await;
    match waiting.await.unwrap() {
        Err(ClientError::Transport(TransportError::Closed)) => {}
        other => panic!("{other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Listen (K3, K4, K7, O84)

fn tools_filter() -> Filter {
    Filter {
        tools_list_changed: true,
        ..Filter::default()
    }
}

#[tokio::test]
async fn k3_o84_listen_on_own_server_acknowledges_then_delivers_changes() {
    let (client, server) = own_client().await;
    let mut stream = client
        .listen(tools_filter(), &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(stream.effective_filter(), &tools_filter());
    server.replace_registry(fixtures::registry());
    let change = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(change, Some(Change::ToolsListChanged));
    assert!(stream.violations().is_empty());
}

fn listen_line(method: &str, sub: &str, extra: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"{method}","params":{{{extra}"_meta":{{"io.modelcontextprotocol/subscriptionId":{sub}}}}}}}"#
    )
}

/// C7, K7: listen notifications are matched by `_meta.subscriptionId`.
#[tokio::test]
async fn k3_k7_fake_listen_rejects_before_ack_wrong_id_and_outside_filter() {
    let fake = modern(|r, _| {
        let sub = r.id.token().to_owned();
        vec![
            Act::Line(listen_line("notifications/tools/list_changed", &sub, "")),
            Act::Line(listen_line(
                "notifications/subscriptions/acknowledged",
                &sub,
                r#""notifications":{"toolsListChanged":true},"#,
            )),
            Act::Line(listen_line("notifications/tools/list_changed", "12345", "")),
            Act::Line(listen_line("notifications/prompts/list_changed", &sub, "")),
            Act::Line(listen_line("notifications/tools/list_changed", &sub, "")),
            Act::Die("pipe closed"),
        ]
    });
    let client = connect(&fake).await;
    let mut stream = client
        .listen(tools_filter(), &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(stream.next().await.unwrap(), Some(Change::ToolsListChanged));
    match stream.next().await {
        Err(ListenError::Transport(e)) => assert!(e.to_string().contains("pipe closed"), "{e}"),
        other => panic!("{other:?}"),
    }
    // The notification for another subscription id is demultiplexed away from this stream
    // (K7): it never reaches it, so it is neither delivered nor counted here.
    assert_eq!(
        stream.violations(),
        &[Violation::BeforeAck, Violation::OutsideFilter]
    );
    // O84: never reconnected.
    let listens = fake
        .sent_requests()
        .into_iter()
        .filter(|r| r.method == "subscriptions/listen")
        .count();
    assert_eq!(listens, 1);
}

#[tokio::test]
async fn k10_fake_listen_closing_result_ends_gracefully_and_drop_cancels_a_live_stream() {
    let fake = modern(|r, n| {
        let sub = r.id.token().to_owned();
        let mut acts = vec![Act::Line(listen_line(
            "notifications/subscriptions/acknowledged",
            &sub,
            r#""notifications":{"toolsListChanged":true},"#,
        ))];
        if n == 2 {
            acts.push(ok(
                r,
                &format!(
                    r#"{{"resultType":"complete","_meta":{{"io.modelcontextprotocol/subscriptionId":{sub}}}}}"#
                ),
            ));
            acts.push(Act::Line(format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{sub}}}}}"#
            )));
        }
        acts
    });
    let client = connect(&fake).await;
    let mut stream = client
        .listen(tools_filter(), &CallOptions::default())
        .await
        .unwrap();
    assert_eq!(stream.next().await.unwrap(), None);
    drop(stream);
    let stream = client
        .listen(tools_filter(), &CallOptions::default())
        .await
        .unwrap();
    let id = stream.subscription_id().to_owned();
    drop(stream);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        fake.cancellations(),
        vec![format!(r#"{{"requestId":{id}}}"#)]
    );
}

/// A fake whose listen is acknowledged for tools, and whose `tools/list` first emits `burst`
/// notifications of `method` on that subscription (all routed before the list reply).
fn burst_fake(burst: usize, method: &'static str) -> Arc<Fake> {
    let sub: Arc<Mutex<String>> = Arc::default();
    modern(move |r, _| {
        if r.method == "subscriptions/listen" {
            *sub.lock().unwrap() = r.id.token().to_owned();
            return vec![Act::Line(listen_line(
                "notifications/subscriptions/acknowledged",
                r.id.token(),
                r#""notifications":{"toolsListChanged":true},"#,
            ))];
        }
        let sub = sub.lock().unwrap().clone();
        let mut acts: Vec<Act> = (0..burst)
            .map(|_| Act::Line(listen_line(method, &sub, "")))
            .collect();
        acts.push(ok(r, &tools_page(&[], None)));
        acts
    })
}

/// K15: an overflowing consumer queue is reported, never silently lossy.
#[tokio::test]
async fn o84_listen_queue_at_the_bound_delivers_all_and_one_past_overflows() {
    use strict_mcp::client::LISTEN_QUEUE_MESSAGES;
    let none = CallOptions::default();
    let fake = burst_fake(LISTEN_QUEUE_MESSAGES, "notifications/tools/list_changed");
    let client = connect(&fake).await;
    let mut stream = client.listen(tools_filter(), &none).await.unwrap();
    client.list_tools(&none).await.unwrap();
    for _ in 0..LISTEN_QUEUE_MESSAGES {
        assert_eq!(stream.next().await.unwrap(), Some(Change::ToolsListChanged));
    }

    let fake = burst_fake(
        LISTEN_QUEUE_MESSAGES + 1,
        "notifications/tools/list_changed",
    );
    let client = connect(&fake).await;
    let mut stream = client.listen(tools_filter(), &none).await.unwrap();
    client.list_tools(&none).await.unwrap();
    for _ in 0..LISTEN_QUEUE_MESSAGES {
        assert_eq!(stream.next().await.unwrap(), Some(Change::ToolsListChanged));
    }
    match stream.next().await {
        Err(ListenError::Overflow) => {}
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn k7_listen_remembers_violations_up_to_the_bound() {
    use strict_mcp::client::listen::MAX_REMEMBERED_VIOLATIONS;
    let none = CallOptions::default();
    for (burst, kept) in [
        (MAX_REMEMBERED_VIOLATIONS, MAX_REMEMBERED_VIOLATIONS),
        (MAX_REMEMBERED_VIOLATIONS + 1, MAX_REMEMBERED_VIOLATIONS),
    ] {
        let fake = burst_fake(burst, "notifications/prompts/list_changed");
        let client = connect(&fake).await;
        let mut stream = client.listen(tools_filter(), &none).await.unwrap();
        client.list_tools(&none).await.unwrap();
        client.close().await;
        assert!(stream.next().await.is_err());
        assert_eq!(stream.violations().len(), kept, "burst of {burst}");
        assert!(stream
            .violations()
            .iter()
            .all(|v| *v == Violation::OutsideFilter));
    }
}

/// C7: progress is matched by `progressToken`.
#[tokio::test]
async fn j1_progress_reaches_the_call_sink_and_nothing_after_the_reply() {
    use strict_mcp::client::{Progress, ProgressSink};
    let (client, _server) = own_client().await;
    let seen: Arc<Mutex<Vec<Progress>>> = Arc::default();
    let sink = {
        let seen = Arc::clone(&seen);
        ProgressSink(Arc::new(move |p| seen.lock().unwrap().push(p)))
    };
    let options = CallOptions {
        on_progress: Some(sink),
        ..CallOptions::default()
    };
    client
        .call("test_tool_with_progress", None, &options)
        .await
        .unwrap();
    let seen = seen.lock().unwrap().clone();
    let steps: Vec<f64> = seen.iter().map(|p| p.progress.parse().unwrap()).collect();
    assert_eq!(steps, vec![0.0, 50.0, 100.0]);
    assert!(seen
        .iter()
        .all(|p| p.total.as_deref().map(str::parse::<f64>) == Some(Ok(100.0))));

    // A fake sending progress after its reply: the late one is not delivered.
    let fake = modern(|r, _| {
        let token = params_of(r)["_meta"]["progressToken"].to_string();
        let progress = |n: u32| {
            Act::Line(format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":{token},"progress":{n}}}}}"#
            ))
        };
        vec![progress(1), ok(r, &tools_page(&[], None)), progress(2)]
    });
    let client = connect(&fake).await;
    let count = Arc::new(Mutex::new(Vec::new()));
    let sink = {
        let count = Arc::clone(&count);
        ProgressSink(Arc::new(move |p: Progress| {
            count.lock().unwrap().push(p.progress)
        }))
    };
    let options = CallOptions {
        on_progress: Some(sink),
        ..CallOptions::default()
    };
    client.list_tools(&options).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(*count.lock().unwrap(), vec!["1".to_owned()]);
    let sent = fake.sent_requests().pop().unwrap();
    assert_eq!(
        params_of(&sent)["_meta"]["progressToken"],
        json!("progress-1")
    );
}

#[tokio::test]
async fn k3_o86_a_listen_never_acknowledged_hits_the_deadline_and_is_cancelled() {
    let fake = modern(|_, _| vec![]);
    let client = connect(&fake).await;
    let options = CallOptions::default().deadline(Duration::from_millis(100));
    match client.listen(tools_filter(), &options).await {
        Err(ListenError::Deadline) => {}
        other => panic!("{other:?}"),
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    let id = fake.sent_requests().pop().unwrap().id.token().to_owned();
    assert_eq!(
        fake.cancellations(),
        vec![format!(r#"{{"requestId":{id}}}"#)]
    );
}

// ---------------------------------------------------------------------------------------------
// Host hooks: exact arguments and raw results, one page with its cursor (O93, O95, O96)

/// A fake whose `tools/call` answers with `result` and whose `tools/list` is one page.
fn exact_fake(result: &'static str) -> Arc<Fake> {
    modern(move |r, _| match r.method.as_str() {
        "tools/call" => vec![ok(r, result)],
        _ => vec![ok(r, &tools_page(&["t".into()], None))],
    })
}

#[tokio::test]
async fn o93_exact_arguments_reach_the_wire_byte_for_byte() {
    let result = r#"{"resultType":"complete","content":[],"structuredContent":{"n":123456789012345678901234567890,"f":1.0}}"#;
    let fake = exact_fake(result);
    let client = connect(&fake).await;
    let args: Box<serde_json::value::RawValue> = serde_json::value::RawValue::from_string(
        r#"{"big":123456789012345678901234567890,"f":1.0,"e":1e400}"#.to_owned(),
    )
    .unwrap();
    let (outcome, raw) = client
        .call_tool_exact(
            "t",
            Some(&args),
            RoundInput::first(),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    assert!(matches!(outcome, ToolOutcome::Success(_)), "{outcome:?}");
    // O96: the result exactly as received, numbers untouched.
    assert_eq!(raw.get(), result);
    let sent = fake.sent_requests();
    let call = sent.iter().find(|r| r.method == "tools/call").unwrap();
    let text = call.params.as_ref().unwrap().get();
    assert!(
        text.ends_with(r#","arguments":{"big":123456789012345678901234567890,"f":1.0,"e":1e400}}"#),
        "{text}"
    );
    assert!(text.contains(r#""name":"t""#), "{text}");
    // The Value API cannot carry these: 1e400 is refused by serde_json, the big integer
    // would be rounded.
    assert!(serde_json::from_str::<Value>(args.get()).is_err());
}

#[tokio::test]
async fn o93_exact_arguments_must_be_one_object_without_duplicate_members() {
    let fake = exact_fake(r#"{"resultType":"complete","content":[]}"#);
    let client = connect(&fake).await;
    for bad in [r#"[1,2]"#, r#"{"a":1,"a":2}"#, "7"] {
        let raw = serde_json::value::RawValue::from_string(bad.to_owned()).unwrap();
        match client
            .call_tool_exact(
                "t",
                Some(&raw),
                RoundInput::first(),
                &CallOptions::default(),
            )
            .await
        {
            Err(ClientError::Request(_)) => {}
            other => panic!("{bad}: {other:?}"),
        }
    }
    assert!(
        fake.sent_requests()
            .iter()
            .all(|r| r.method != "tools/call"),
        "nothing is sent for refused arguments"
    );
}

#[tokio::test]
async fn o78_exact_call_keeps_the_round_state_and_returns_input_required_raw() {
    let asked = r#"{"resultType":"input_required","inputRequests":{"q":{"method":"elicitation/create","params":{"mode":"form","message":"m","requestedSchema":{"type":"object","properties":{}}}}},"requestState":"s1"}"#;
    let fake = exact_fake(asked);
    let client = connect(&fake).await;
    let args = serde_json::value::RawValue::from_string(r#"{"a":1}"#.to_owned()).unwrap();
    let (outcome, raw) = client
        .call_tool_exact(
            "t",
            Some(&args),
            RoundInput::first(),
            &CallOptions::default(),
        )
        .await
        .unwrap();
    let ToolOutcome::InputRequired(first) = outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(raw.get(), asked);
    let next = RoundInput::answer(&first.result, obj(json!({"q": {"action": "decline"}})));
    client
        .call_tool_exact("t", Some(&args), next, &CallOptions::default())
        .await
        .unwrap();
    let calls: Vec<Value> = fake
        .sent_requests()
        .iter()
        .filter(|r| r.method == "tools/call")
        .map(params_of)
        .collect();
    assert_eq!(calls[1]["requestState"], "s1");
    assert_eq!(calls[1]["arguments"], json!({"a": 1}));
    assert_eq!(
        calls[1]["inputResponses"],
        json!({"q": {"action": "decline"}})
    );
}

#[tokio::test]
async fn o95_list_page_returns_one_page_and_its_cursor() {
    let fake = paged_fake(3, 2);
    let client = connect(&fake).await;
    let none = CallOptions::default();
    let first = client
        .list_page(strict_mcp::wire::result::Method::ToolsList, None, &none)
        .await
        .unwrap();
    assert_eq!(first.next_cursor.as_deref(), Some("2"));
    let second = client
        .list_page(
            strict_mcp::wire::result::Method::ToolsList,
            Some("2"),
            &none,
        )
        .await
        .unwrap();
    assert_eq!(second.next_cursor.as_deref(), Some("3"));
    let last = client
        .list_page(
            strict_mcp::wire::result::Method::ToolsList,
            Some("3"),
            &none,
        )
        .await
        .unwrap();
    assert_eq!(last.next_cursor, None);
    match &last.result {
        strict_mcp::wire::result::CompleteResult::ToolsList(page) => {
            let names: Vec<&str> = page.tools.iter().map(|t| t.name.as_str()).collect();
            assert_eq!(names, ["t3-0", "t3-1"]);
        }
        other => panic!("{other:?}"),
    }
    // One request per page, nothing walked: discover + 3.
    assert_eq!(fake.sent_requests().len(), 4);
    // Not a list method: refused, nothing sent.
    match client
        .list_page(strict_mcp::wire::result::Method::ToolsCall, None, &none)
        .await
    {
        Err(ClientError::Request(_)) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(fake.sent_requests().len(), 4);
}

// ---------------------------------------------------------------------------------------------
// The in-memory transport names the request a notification belongs to

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct TagIn {
    tag: String,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct TagOut {
    tag: String,
}

/// A server whose `chatty` tool logs three messages at info, 10 ms apart, then answers.
fn chatty_server() -> Server {
    use strict_mcp::core::{Invocation, LogLevel, RegistryBuilder, ToolDef};
    let registry = RegistryBuilder::new()
        .tool(ToolDef::typed(
            "chatty",
            |inv: Invocation, i: TagIn| async move {
                for n in 0..3 {
                    inv.log(
                        LogLevel::Info,
                        Some("chatty"),
                        json!(format!("{} {n}", i.tag)),
                    );
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                Ok(TagOut { tag: i.tag })
            },
        ))
        .build()
        .expect("registry");
    Server::new(registry, ServerOptions::new().mode("direct")).expect("server")
}

/// L2, D8 (as over HTTP): a log message sent while serving a request arrives as
/// `Inbound::OnStream` naming that request; the reply itself is a plain message.
#[tokio::test]
async fn l2_in_memory_notifications_arrive_on_their_requests_stream() {
    use strict_mcp::wire::jsonrpc::{RequestId, Response};
    let transport = InMemoryTransport::new(chatty_server(), Caller::new("t"));
    let params = r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"info"},"name":"chatty","arguments":{"tag":"x"}}"#;
    let request = Message::Request(Request {
        id: RequestId::integer(7),
        method: "tools/call".into(),
        params: Some(serde_json::value::RawValue::from_string(params.into()).unwrap()),
    });
    transport.send(&request).await.expect("sent");
    for n in 0..3 {
        match transport.recv().await.expect("frame") {
            Inbound::OnStream {
                request,
                message: Message::Notification(note),
            } => {
                assert_eq!(request.token(), "7");
                assert_eq!(note.method, "notifications/message");
                assert_eq!(
                    serde_json::from_str::<Value>(note.params.unwrap().get()).unwrap(),
                    json!({"level": "info", "logger": "chatty", "data": format!("x {n}")})
                );
            }
            other => panic!("message {n}: {other:?}"),
        }
    }
    match transport.recv().await.expect("reply") {
        Inbound::Message(Message::Response(Response::Success(s))) => {
            assert_eq!(s.id.token(), "7");
        }
        other => panic!("{other:?}"),
    }
}

/// L2, L5: two concurrent logging calls in memory each get exactly their own messages; none is
/// dropped as ambiguous (before `OnStream`, overlapping calls dropped all of them).
#[tokio::test]
async fn l2_in_memory_concurrent_logging_calls_each_get_exactly_their_own() {
    use strict_mcp::client::{LogMessage, LogMessageSink};
    use strict_mcp::wire::logging::LogLevel;
    let transport = Arc::new(InMemoryTransport::new(chatty_server(), Caller::new("t")));
    let client = Client::connect(transport, ClientOptions::default())
        .await
        .expect("connect");
    let collecting = || {
        let seen: Arc<Mutex<Vec<LogMessage>>> = Arc::default();
        let kept = Arc::clone(&seen);
        (
            LogMessageSink(Arc::new(move |m| kept.lock().unwrap().push(m))),
            seen,
        )
    };
    let (a, seen_a) = collecting();
    let (b, seen_b) = collecting();
    let oa = CallOptions::default().logs(LogLevel::Info, a);
    let ob = CallOptions::default().logs(LogLevel::Info, b);
    let args = |tag: &str| json!({ "tag": tag }).as_object().cloned();
    let (ra, rb) = tokio::join!(
        client.call("chatty", args("a"), &oa),
        client.call("chatty", args("b"), &ob)
    );
    ra.expect("a");
    rb.expect("b");
    let expected = |tag: &str| {
        (0..3)
            .map(|n| LogMessage {
                level: LogLevel::Info,
                logger: Some("chatty".into()),
                data: json!(format!("{tag} {n}")),
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(*seen_a.lock().unwrap(), expected("a"));
    assert_eq!(*seen_b.lock().unwrap(), expected("b"));
    assert_eq!(client.dropped_log_messages(), 0);
}
