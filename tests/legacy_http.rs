//! The initialise era over Streamable HTTP (feature `legacy`, issue #18): era selection on
//! HTTP (B23, the same rule as stdio), `Mcp-Session-Id` sessions bound to the caller, their
//! named bounds at the bound and one past, DELETE, GET, the stateless legacy mode, and the
//! modern wire unchanged without the switch (B22). In process (the service is called
//! directly; nothing listens), exact bytes.
#![forbid(unsafe_code)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Request, Response};
use serde_json::json;
use strict_mcp::codec;
use strict_mcp::core::{Caller, Invocation, LogLevel, Outcome, RegistryBuilder, ToolDef};
use strict_mcp::server::http::{HttpBody, HttpConfig, McpHttp};
use strict_mcp::server::legacy::sessions::{
    Post, DEFAULT_IDLE_EXPIRY, DEFAULT_MAX_IN_FLIGHT_PER_SESSION, DEFAULT_MAX_SESSIONS,
    SESSION_ID_BYTES,
};
use strict_mcp::server::legacy::LegacyHttpConfig;
use strict_mcp::server::{Server, ServerOptions};
use tokio::sync::Notify;

const INFO: &str = r#"{"name":"legacy-http","version":"1.0.0"}"#;
const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"old","version":"1"}}}"#;
const LIST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoIn {
    /// Text to echo.
    text: String,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct EchoOut {
    /// The same text.
    text: String,
}

/// `hold` signals `.0` when it runs and returns once `.1` is signalled.
type Gate = Arc<(Notify, Notify)>;

fn gate() -> Gate {
    Arc::new((Notify::new(), Notify::new()))
}

fn server(options: ServerOptions, gate: Gate) -> Server {
    let registry = RegistryBuilder::new()
        .tool(
            ToolDef::typed("echo", |inv: Invocation, i: EchoIn| async move {
                inv.report_progress(1.0, Some(2.0), Some("half"));
                inv.log(LogLevel::Info, Some("echo"), json!({"seen": i.text}));
                Ok(EchoOut { text: i.text })
            })
            .description("Echoes text."),
        )
        .tool(
            ToolDef::typed("hold", move |_inv: Invocation, i: EchoIn| {
                let gate = gate.clone();
                async move {
                    gate.0.notify_one();
                    gate.1.notified().await;
                    Ok(EchoOut { text: i.text })
                }
            })
            .description("Waits for the test."),
        )
        .build()
        .expect("registry builds");
    Server::new(
        registry,
        options.server_info("legacy-http", "1.0.0").mode("direct"),
    )
    .expect("server builds")
}

fn make_host(options: ServerOptions) -> McpHttp<Server> {
    McpHttp::new(server(options, gate()), HttpConfig::default())
}

fn legacy_host() -> McpHttp<Server> {
    make_host(ServerOptions::new().legacy_era(true))
}

fn request(method: &str, headers: &[(&str, &str)], body: &str) -> Request<Full<Bytes>> {
    let mut b = Request::builder()
        .method(method)
        .uri("http://127.0.0.1/mcp")
        .header("host", "127.0.0.1")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(Full::new(Bytes::from(body.to_owned()))).unwrap()
}

struct Answer {
    status: u16,
    session: Option<String>,
    allow: Option<String>,
    content_type: Option<String>,
    body: String,
}

async fn read(response: Response<HttpBody>) -> Answer {
    let header = |n: &str| {
        response
            .headers()
            .get(n)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    let (status, session, allow, content_type) = (
        response.status().as_u16(),
        header("mcp-session-id"),
        header("allow"),
        header("content-type"),
    );
    let body = response.into_body().collect().await.unwrap().to_bytes();
    Answer {
        status,
        session,
        allow,
        content_type,
        body: String::from_utf8(body.to_vec()).unwrap(),
    }
}

async fn call(
    host: &McpHttp<Server>,
    method: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Answer {
    read(host.handle(request(method, headers, body)).await).await
}

/// The `initialize` result of a session (list changes are announced on its GET stream).
fn init_result(id: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"capabilities":{{"logging":{{}},"tools":{{"listChanged":true}}}},"protocolVersion":"2025-11-25","serverInfo":{INFO}}}}}"#
    )
}

/// The stateless `initialize` result: nothing outlives a request, so no `listChanged`.
fn stateless_init_result(id: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"capabilities":{{"logging":{{}},"tools":{{}}}},"protocolVersion":"2025-11-25","serverInfo":{INFO}}}}}"#
    )
}

/// Starts a session; its id.
async fn open(host: &McpHttp<Server>) -> String {
    let a = call(host, "POST", &[], INIT).await;
    assert_eq!(
        (a.status, a.body.as_str()),
        (200, init_result("0").as_str())
    );
    a.session.expect("a session id")
}

const LISTED: &str = r##"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"description":"Echoes text.","inputSchema":{"$schema":"https://json-schema.org/draft/2020-12/schema","additionalProperties":false,"properties":{"text":{"description":"Text to echo.","type":"string"}},"required":["text"],"title":"EchoIn","type":"object"},"name":"echo","outputSchema":{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","oneOf":[{"type":"object","properties":{"value":{"$ref":"#/$defs/value"}},"required":["value"],"additionalProperties":false},{"$ref":"#/$defs/failure"}],"$defs":{"value":{"$id":"urn:strict-mcp:output:echo","$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"text":{"description":"The same text.","type":"string"}},"required":["text"],"title":"EchoOut","type":"object"},"failure":{"additionalProperties":false,"properties":{"failure":{"additionalProperties":false,"description":"A typed tool failure: reported as a result with `isError: true`, never as a panic.","properties":{"code":{"description":"Stable failure code.","maxLength":64,"pattern":"^[a-z][a-z0-9_]*$","type":"string"},"diagnostics":{"description":"Optional structured findings.","items":{"additionalProperties":false,"description":"One machine-readable finding attached to a failure, e.g. a schema violation.","properties":{"allowedKeys":{"description":"The keys allowed at `pointer`, when the failure concerns object members.","items":{"type":"string"},"type":"array"},"expected":{"description":"The expected type(s) when `keyword` is `type`.","type":"string"},"keyword":{"description":"The JSON Schema keyword that failed (`type`, `required`, `additionalProperties`, ...).","type":"string"},"message":{"description":"A human-readable explanation without parser line/column noise.","type":"string"},"pointer":{"description":"JSON Pointer into the arguments (`\"\"` is the whole object).","type":"string"}},"required":["pointer","keyword","message"],"type":"object"},"type":"array"},"message":{"description":"A safe message for the model.","type":"string"},"retryable":{"description":"Whether retrying the same call could succeed.","type":"boolean"}},"required":["code","message","retryable"],"type":"object"}},"required":["failure"],"type":"object"}}}},{"description":"Waits for the test.","inputSchema":{"$schema":"https://json-schema.org/draft/2020-12/schema","additionalProperties":false,"properties":{"text":{"description":"Text to echo.","type":"string"}},"required":["text"],"title":"EchoIn","type":"object"},"name":"hold","outputSchema":{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","oneOf":[{"type":"object","properties":{"value":{"$ref":"#/$defs/value"}},"required":["value"],"additionalProperties":false},{"$ref":"#/$defs/failure"}],"$defs":{"value":{"$id":"urn:strict-mcp:output:hold","$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"text":{"description":"The same text.","type":"string"}},"required":["text"],"title":"EchoOut","type":"object"},"failure":{"additionalProperties":false,"properties":{"failure":{"additionalProperties":false,"description":"A typed tool failure: reported as a result with `isError: true`, never as a panic.","properties":{"code":{"description":"Stable failure code.","maxLength":64,"pattern":"^[a-z][a-z0-9_]*$","type":"string"},"diagnostics":{"description":"Optional structured findings.","items":{"additionalProperties":false,"description":"One machine-readable finding attached to a failure, e.g. a schema violation.","properties":{"allowedKeys":{"description":"The keys allowed at `pointer`, when the failure concerns object members.","items":{"type":"string"},"type":"array"},"expected":{"description":"The expected type(s) when `keyword` is `type`.","type":"string"},"keyword":{"description":"The JSON Schema keyword that failed (`type`, `required`, `additionalProperties`, ...).","type":"string"},"message":{"description":"A human-readable explanation without parser line/column noise.","type":"string"},"pointer":{"description":"JSON Pointer into the arguments (`\"\"` is the whole object).","type":"string"}},"required":["pointer","keyword","message"],"type":"object"},"type":"array"},"message":{"description":"A safe message for the model.","type":"string"},"retryable":{"description":"Whether retrying the same call could succeed.","type":"boolean"}},"required":["code","message","retryable"],"type":"object"}},"required":["failure"],"type":"object"}}}}]}}"##;

const NOT_FOUND: &str =
    r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"Session not found"}}"#;

#[tokio::test]
async fn b23_http_initialize_starts_a_session_with_a_random_visible_ascii_id() {
    let host = legacy_host();
    let a = call(&host, "POST", &[], INIT).await;
    assert_eq!(a.status, 200);
    assert_eq!(a.content_type.as_deref(), Some("application/json"));
    assert_eq!(a.body, init_result("0"));
    let first = a.session.unwrap();
    assert_eq!(first.len(), 2 * SESSION_ID_BYTES);
    assert!(first
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
    // A legacy MCP-Protocol-Version header on initialize is still the legacy era.
    let b = call(
        &host,
        "POST",
        &[("mcp-protocol-version", "2025-11-25")],
        INIT,
    )
    .await;
    assert_eq!(b.body, init_result("0"));
    assert_ne!(b.session.unwrap(), first, "every session gets a fresh id");
}

#[tokio::test]
async fn b23_http_a_session_request_is_served_in_the_legacy_shape() {
    let host = legacy_host();
    let id = open(&host).await;
    let headers = [
        ("mcp-session-id", id.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let n = call(
        &host,
        "POST",
        &headers,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .await;
    assert_eq!((n.status, n.body.as_str(), n.session), (202, "", None));
    let listed = call(&host, "POST", &headers, LIST).await;
    assert_eq!(
        (listed.status, listed.body.as_str()),
        (200, LISTED),
        "no resultType, no cache hints, no serverInfo _meta"
    );
    let ping = call(
        &host,
        "POST",
        &headers,
        r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#,
    )
    .await;
    assert_eq!(ping.body, r#"{"jsonrpc":"2.0","id":"p","result":{}}"#);
    // A dispatcher error (-32601 is 404 on the modern path) travels with 200 here: a 404
    // would tell the client its session is gone.
    let missing = call(
        &host,
        "POST",
        &headers,
        r#"{"jsonrpc":"2.0","id":3,"method":"server/discover"}"#,
    )
    .await;
    assert_eq!(
        (missing.status, missing.body.as_str()),
        (
            200,
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"Method not found"}}"#
        )
    );
}

#[tokio::test]
async fn b23_http_a_call_with_notifications_answers_sse_with_the_legacy_reply_last() {
    let host = legacy_host();
    let id = open(&host).await;
    let headers = [
        ("mcp-session-id", id.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let set = call(
        &host,
        "POST",
        &headers,
        r#"{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"info"}}"#,
    )
    .await;
    assert_eq!(set.body, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
    let a = call(
        &host,
        "POST",
        &headers,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":"t"}}}"#,
    )
    .await;
    assert_eq!(a.status, 200);
    assert_eq!(a.content_type.as_deref(), Some("text/event-stream"));
    assert_eq!(
        a.body,
        concat!(
            r#"data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1.0,"total":2.0,"message":"half"}}"#,
            "\n\n",
            r#"data: {"jsonrpc":"2.0","method":"notifications/message","params":{"data":{"seen":"hi"},"level":"info","logger":"echo"}}"#,
            "\n\n",
            r#"data: {"jsonrpc":"2.0","id":2,"result":{"content":[{"text":"{\"value\":{\"text\":\"hi\"}}","type":"text"}],"structuredContent":{"value":{"text":"hi"}}}}"#,
            "\n\n",
        )
    );
}

#[tokio::test]
async fn legacy_http_a_request_without_its_session_id_is_400() {
    let host = legacy_host();
    let _id = open(&host).await;
    let a = call(
        &host,
        "POST",
        &[("mcp-protocol-version", "2025-11-25")],
        LIST,
    )
    .await;
    assert_eq!(
        (a.status, a.body.as_str()),
        (
            400,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Mcp-Session-Id header is required"}}"#
        )
    );
}

#[tokio::test]
async fn legacy_http_an_unknown_or_foreign_session_id_is_404() {
    let host = legacy_host();
    let id = open(&host).await; // the anonymous caller's
    let unknown = call(
        &host,
        "POST",
        &[
            ("mcp-session-id", "0123456789abcdef0123456789abcdef"),
            ("mcp-protocol-version", "2025-11-25"),
        ],
        LIST,
    )
    .await;
    assert_eq!((unknown.status, unknown.body.as_str()), (404, NOT_FOUND));
    // Another principal presenting the id sees exactly an unknown session.
    let mut r = request(
        "POST",
        &[
            ("mcp-session-id", id.as_str()),
            ("mcp-protocol-version", "2025-11-25"),
        ],
        LIST,
    );
    r.extensions_mut().insert(Caller::new("mallory"));
    let foreign = read(host.handle(r).await).await;
    assert_eq!((foreign.status, foreign.body.as_str()), (404, NOT_FOUND));
    let mut d = request("DELETE", &[("mcp-session-id", id.as_str())], "");
    d.extensions_mut().insert(Caller::new("mallory"));
    assert_eq!(read(host.handle(d).await).await.status, 404);
    // The owner still has it.
    let own = call(
        &host,
        "POST",
        &[
            ("mcp-session-id", id.as_str()),
            ("mcp-protocol-version", "2025-11-25"),
        ],
        LIST,
    )
    .await;
    assert_eq!(own.body, LISTED);
}

#[tokio::test]
async fn legacy_http_delete_ends_the_session_and_later_requests_are_404() {
    let host = legacy_host();
    let id = open(&host).await;
    let headers = [
        ("mcp-session-id", id.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let deleted = call(&host, "DELETE", &headers, "").await;
    assert_eq!((deleted.status, deleted.body.as_str()), (204, ""));
    let after = call(&host, "POST", &headers, LIST).await;
    assert_eq!((after.status, after.body.as_str()), (404, NOT_FOUND));
    let again = call(&host, "DELETE", &headers, "").await;
    assert_eq!(
        (again.status, again.body.as_str()),
        (
            404,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}"#
        )
    );
}

#[tokio::test]
async fn d37_d38_other_methods_are_405_on_a_live_session_and_get_without_one() {
    let host = legacy_host();
    let id = open(&host).await;
    let live = call(&host, "PUT", &[("mcp-session-id", id.as_str())], "").await;
    assert_eq!(
        (live.status, live.allow.as_deref(), live.body.as_str()),
        (405, Some("GET, POST, DELETE"), "")
    );
    // A GET for the standalone stream must accept SSE (the stream itself: legacy_notify.rs).
    let json_only = read(
        host.handle(
            Request::builder()
                .method("GET")
                .uri("http://127.0.0.1/mcp")
                .header("host", "127.0.0.1")
                .header("accept", "application/json")
                .header("mcp-session-id", id.as_str())
                .body(Full::new(Bytes::new()))
                .unwrap(),
        )
        .await,
    )
    .await;
    assert_eq!(
        (json_only.status, json_only.body.as_str()),
        (
            406,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Accept must list text/event-stream"}}"#
        )
    );
    // Without a live session id D37/D38 apply unchanged: the modern 405.
    let plain = call(&host, "GET", &[], "").await;
    let modern = call(&make_host(ServerOptions::new()), "GET", &[], "").await;
    assert_eq!(plain.status, 405);
    assert_eq!(plain.allow.as_deref(), Some("POST"));
    assert_eq!(plain.body, modern.body);
    let delete = call(&host, "DELETE", &[], "").await;
    assert_eq!(
        (delete.status, delete.allow.as_deref()),
        (405, Some("POST"))
    );
}

#[tokio::test]
async fn legacy_http_max_sessions_at_the_bound_and_one_past() {
    assert_eq!(DEFAULT_MAX_SESSIONS, 1024);
    let config = LegacyHttpConfig {
        max_sessions: 2,
        ..LegacyHttpConfig::default()
    };
    let host = make_host(ServerOptions::new().legacy_era(true).legacy_http(config));
    let first = open(&host).await;
    let _second = open(&host).await; // at the bound
    let past = call(&host, "POST", &[], INIT).await;
    assert_eq!(
        (past.status, past.session, past.body.as_str()),
        (
            503,
            None,
            r#"{"jsonrpc":"2.0","id":0,"error":{"code":-32603,"message":"too many legacy sessions; try again later"}}"#
        )
    );
    // Ending one makes room again.
    assert_eq!(
        call(&host, "DELETE", &[("mcp-session-id", first.as_str())], "")
            .await
            .status,
        204
    );
    let _third = open(&host).await;
}

fn decode(server: &Server, line: &str) -> strict_mcp::wire::jsonrpc::Message {
    codec::decode(line.as_bytes(), &server.ingress_limits()).expect("decodes")
}

fn status(post: Post) -> u16 {
    match post {
        Post::Answer(a) => a.status,
        Post::Serve(..) => 200,
        Post::Modern(_) => 0,
    }
}

#[tokio::test]
async fn legacy_http_idle_expiry_at_the_bound_and_one_past() {
    assert_eq!(DEFAULT_IDLE_EXPIRY, Duration::from_secs(1800));
    let expiry = Duration::from_secs(60);
    let config = LegacyHttpConfig {
        idle_expiry: expiry,
        ..LegacyHttpConfig::default()
    };
    let server = server(
        ServerOptions::new().legacy_era(true).legacy_http(config),
        gate(),
    );
    let sessions = server.legacy_sessions();
    let caller = Caller::anonymous();
    let t0 = Instant::now();
    let id = match sessions.post_at(t0, &server, &caller, None, None, decode(&server, INIT)) {
        Post::Answer(a) => a.session_id.expect("a session id"),
        other => panic!("{other:?}"),
    };
    let list = |at: Instant| {
        status(sessions.post_at(
            at,
            &server,
            &caller,
            Some(&id),
            Some("2025-11-25"),
            decode(&server, LIST),
        ))
    };
    // Idle exactly the expiry: still live (and the use renews it).
    assert_eq!(list(t0 + expiry), 200);
    // Idle one past the expiry (measured from the last use): gone for good.
    let last = t0 + expiry;
    assert_eq!(list(last + expiry + Duration::from_nanos(1)), 404);
    assert_eq!(list(last), 404, "an expired session does not come back");
    assert!(sessions.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_http_requests_in_flight_per_session_at_the_bound_and_one_past() {
    assert_eq!(DEFAULT_MAX_IN_FLIGHT_PER_SESSION, 16);
    let gate = gate();
    let config = LegacyHttpConfig {
        max_in_flight_per_session: 1,
        ..LegacyHttpConfig::default()
    };
    let host = McpHttp::new(
        server(
            ServerOptions::new().legacy_era(true).legacy_http(config),
            gate.clone(),
        ),
        HttpConfig::default(),
    );
    let id = open(&host).await;
    let hold = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"hold","arguments":{"text":"held"}}}"#;
    let held = {
        let host = host.clone();
        let id = id.clone();
        tokio::spawn(async move {
            call(
                &host,
                "POST",
                &[
                    ("mcp-session-id", id.as_str()),
                    ("mcp-protocol-version", "2025-11-25"),
                ],
                hold,
            )
            .await
        })
    };
    let headers = [
        ("mcp-session-id", id.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    // The held call is in flight (the session at its bound): one more is refused.
    gate.0.notified().await;
    let past = call(&host, "POST", &headers, LIST).await;
    assert_eq!(
        (past.status, past.body.as_str()),
        (
            429,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"too many requests in flight for this session"}}"#
        )
    );
    gate.1.notify_one();
    let done = held.await.unwrap();
    assert_eq!(
        done.body,
        r#"{"jsonrpc":"2.0","id":5,"result":{"content":[{"text":"{\"value\":{\"text\":\"held\"}}","type":"text"}],"structuredContent":{"value":{"text":"held"}}}}"#
    );
    // Done: the session serves again.
    let mut again = call(&host, "POST", &headers, LIST).await;
    for _ in 0..200 {
        if again.status != 429 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        again = call(&host, "POST", &headers, LIST).await;
    }
    assert_eq!(again.body, LISTED);
}

#[tokio::test]
async fn legacy_http_stateless_mode_issues_no_session_and_serves_every_request() {
    let config = LegacyHttpConfig {
        stateless: true,
        ..LegacyHttpConfig::default()
    };
    let host = make_host(ServerOptions::new().legacy_era(true).legacy_http(config));
    let a = call(&host, "POST", &[], INIT).await;
    assert_eq!(
        (a.status, a.session, a.body.as_str()),
        (200, None, stateless_init_result("0").as_str())
    );
    let listed = call(
        &host,
        "POST",
        &[("mcp-protocol-version", "2025-11-25")],
        LIST,
    )
    .await;
    assert_eq!((listed.status, listed.body.as_str()), (200, LISTED));
    // A 2025-06-18 client is served at its version too; an interaction it cannot perform is
    // the X22 tool failure (no session to carry it).
    let n = call(
        &host,
        "POST",
        &[("mcp-protocol-version", "2025-06-18")],
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .await;
    assert_eq!((n.status, n.body.as_str()), (202, ""));
    // DELETE has no session to end: the modern 405.
    let d = call(&host, "DELETE", &[("mcp-session-id", "x")], "").await;
    assert_eq!((d.status, d.allow.as_deref()), (405, Some("POST")));
}

#[tokio::test]
async fn b22_b23_without_the_switch_or_with_a_modern_header_nothing_changes_on_the_wire() {
    let expected = r#"{"jsonrpc":"2.0","id":0,"error":{"code":-32601,"message":"Method not found: initialize was removed in 2026-07-28","data":{"supported":["2026-07-28"]}}}"#;
    let off = call(&make_host(ServerOptions::new()), "POST", &[], INIT).await;
    assert_eq!(
        (off.status, off.session.as_deref(), off.body.as_str()),
        (404, None, expected)
    );
    let modern_init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let modern_list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let v26 = ("mcp-protocol-version", "2026-07-28");
    let cases: [(&[(&str, &str)], &str); 6] = [
        // A 2026-07-28 header on initialize keeps today's answer (B23).
        (&[v26], INIT),
        (&[v26, ("mcp-method", "initialize")], modern_init),
        // Modern `_meta` without the header is modern too.
        (&[], modern_init),
        (&[v26, ("mcp-method", "tools/list")], modern_list),
        // A session header beside a 2026-07-28 one is ignored, as on the modern path.
        (
            &[v26, ("mcp-method", "tools/list"), ("mcp-session-id", "abc")],
            modern_list,
        ),
        // No header, no `_meta`, not initialize: the modern refusal.
        (&[], LIST),
    ];
    let on = legacy_host();
    let off = make_host(ServerOptions::new());
    for (headers, body) in cases {
        let a = call(&on, "POST", headers, body).await;
        let b = call(&off, "POST", headers, body).await;
        assert_eq!(
            (a.status, a.session, a.body.as_str()),
            (b.status, None, b.body.as_str()),
            "{headers:?} {body}"
        );
    }
}

#[tokio::test]
async fn d34_d35_host_and_origin_checks_come_first_for_legacy_requests_too() {
    let host = legacy_host();
    let id = open(&host).await;
    let origin = call(
        &host,
        "DELETE",
        &[
            ("mcp-session-id", id.as_str()),
            ("origin", "https://evil.example"),
        ],
        "",
    )
    .await;
    assert_eq!(origin.status, 403);
    let mut r = request("POST", &[], INIT);
    r.headers_mut()
        .insert("host", "evil.example".parse().unwrap());
    let refused = read(host.handle(r).await).await;
    assert_eq!((refused.status, refused.session), (403, None));
    // The session survived the refused DELETE.
    let listed = call(
        &host,
        "POST",
        &[
            ("mcp-session-id", id.as_str()),
            ("mcp-protocol-version", "2025-11-25"),
        ],
        LIST,
    )
    .await;
    assert_eq!(listed.body, LISTED);
}

#[tokio::test]
async fn a_duplicate_keys_are_refused_by_the_codec_before_any_session_is_started() {
    let server = server(ServerOptions::new().legacy_era(true), gate());
    let host = McpHttp::new(server.clone(), HttpConfig::default());
    let dup = r#"{"jsonrpc":"2.0","id":0,"id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"old","version":"1"}}}"#;
    let legacy = call(&host, "POST", &[], dup).await;
    let modern = call(&make_host(ServerOptions::new()), "POST", &[], dup).await;
    assert_eq!(legacy.session, None);
    assert_eq!(legacy.status, 400);
    assert_eq!(
        (legacy.status, legacy.body.as_str()),
        (modern.status, modern.body.as_str())
    );
    assert!(
        server.legacy_sessions().is_empty(),
        "no session was started"
    );
}

/// X22 over HTTP: a tool that needs an answer from the user (the session lends no
/// elicitation capability to its calls) fails as the `confirmation_required` tool failure,
/// in the direct-mode failure form with `structuredContent`.
#[tokio::test]
async fn x22_a_tool_needing_input_fails_as_confirmation_required_over_http() {
    const NO_ARGS: &str = r#"{"type":"object","properties":{},"additionalProperties":false}"#;
    let registry = RegistryBuilder::new()
        .tool(
            ToolDef::dynamic_interactive(
                "ask",
                NO_ARGS,
                None,
                |inv: Invocation, _args| async move {
                    let form = json!({"type":"object","properties":{"name":{"type":"string"}},"required":["name"]});
                    let request = inv.elicit_form("Your name?", form)?;
                    Ok(Outcome::input("name", request))
                },
            )
            .description("Asks for a name."),
        )
        .build()
        .expect("registry builds");
    let server = Server::new(
        registry,
        ServerOptions::new()
            .legacy_era(true)
            .server_info("legacy-http", "1.0.0")
            .mode("direct"),
    )
    .expect("server builds");
    let host = McpHttp::new(server, HttpConfig::default());
    let id = open_with(&host, r#"{"capabilities":{"logging":{},"tools":{"listChanged":true}},"protocolVersion":"2025-11-25","serverInfo":{"name":"legacy-http","version":"1.0.0"}}"#).await;
    let a = call(
        &host,
        "POST",
        &[
            ("mcp-session-id", id.as_str()),
            ("mcp-protocol-version", "2025-11-25"),
        ],
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"ask","arguments":{}}}"#,
    )
    .await;
    assert_eq!(
        (a.status, a.body.as_str()),
        (
            200,
            r#"{"jsonrpc":"2.0","id":4,"result":{"content":[{"text":"{\"failure\":{\"code\":\"confirmation_required\",\"message\":\"This tool needs an answer from the user, which this client session cannot provide.\",\"retryable\":false}}","type":"text"}],"isError":true,"structuredContent":{"failure":{"code":"confirmation_required","message":"This tool needs an answer from the user, which this client session cannot provide.","retryable":false}}}}"#
        )
    );
}

/// Starts a session whose `initialize` result is `result`; its id.
async fn open_with(host: &McpHttp<Server>, result: &str) -> String {
    let a = call(host, "POST", &[], INIT).await;
    assert_eq!(
        (a.status, a.body.as_str()),
        (
            200,
            format!(r#"{{"jsonrpc":"2.0","id":0,"result":{result}}}"#).as_str()
        )
    );
    a.session.expect("a session id")
}
