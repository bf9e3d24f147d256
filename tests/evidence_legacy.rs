//! Contract evidence for the legacy-era stdio server (feature `legacy`, transport
//! `legacy-stdio-server`; B23, O115, O127, X6, X22): the conformance fixtures served by the
//! stdio loop (`Server::run_stdio_on`, the loop `Server::run_stdio` runs on the process's
//! stdin and stdout) with `ServerOptions::legacy_era(true)`, driven with raw lines. Every
//! method a legacy session has is answered with a result (positive) and refused with its
//! exact error code (negative), and so are the two 2026-07-28-only methods, which the same
//! connection serves to a request carrying modern `_meta` and refuses -32601 to the session.
//!
//! Each exchange is recorded by the helper that wrote the line and read its reply
//! ([`Peer::request`]); a notification has no reply, so [`Peer::notify`] records it as
//! accepted only when the next line the server writes is the answer to the `ping` sent right
//! after it (nothing was written for the notification itself).
//!
//! The same methods over legacy Streamable HTTP (transport `legacy-http-server`, section
//! `http`): the fixtures behind `server::http::serve` on 127.0.0.1, each POST carrying the
//! session id the `initialize` answer gave, recorded by `http::HttpPeer` from the JSON or
//! SSE reply it read; a notification counts as accepted on a 202 with no body, and the
//! session's `DELETE /mcp` as a result on 204 and an error on the 404 of an ended session;
//! its `GET /mcp` (the standalone SSE stream) as a result on a 200 event stream, which then
//! carries the session's `notifications/resources/updated`, and as an error on the 409 of a
//! second stream and the 404 of an ended session.

#![forbid(unsafe_code)]

#[path = "../examples/conformance/fixtures.rs"]
mod fixtures;
mod support;

use serde_json::{json, Value};
use strict_mcp::core::Caller;
use strict_mcp::server::{Server, ServerOptions};
use support::evidence::{Outcome, Recorder};
use support::peers::{answers, meta, EXCHANGE_TIMEOUT};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

/// The contract transport id.
const LEGACY: &str = "legacy-stdio-server";

/// The room each direction of the in-process pipe has: far more than one exchange writes.
const PIPE_BYTES: usize = 1 << 20;

/// The conformance fixtures (direct mode) with the initialise era switched on, as the
/// conformance example serves them when built with `--features legacy`.
fn legacy_fixture_server() -> Server {
    Server::new(
        fixtures::registry(),
        ServerOptions::new()
            .legacy_era(true)
            .server_info("strict-mcp-conformance", "0.0.0")
            .mode("direct"),
    )
    .expect("server")
}

/// One stdio connection to the legacy-era server.
struct Peer {
    writer: DuplexStream,
    lines: Lines<BufReader<DuplexStream>>,
    next_id: u64,
}

impl Peer {
    fn start() -> Peer {
        let server = legacy_fixture_server();
        let (client_w, server_r) = tokio::io::duplex(PIPE_BYTES);
        let (server_w, client_r) = tokio::io::duplex(PIPE_BYTES);
        tokio::spawn(async move {
            server
                .run_stdio_on(Caller::new("local-user"), server_r, server_w)
                .await
        });
        Peer {
            writer: client_w,
            lines: BufReader::new(client_r).lines(),
            next_id: 0,
        }
    }

    async fn write(&mut self, message: &Value) {
        let line = format!("{message}\n");
        self.writer.write_all(line.as_bytes()).await.expect("write");
        self.writer.flush().await.expect("flush");
    }

    async fn read(&mut self) -> Value {
        let line = tokio::time::timeout(EXCHANGE_TIMEOUT, self.lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("no line in {EXCHANGE_TIMEOUT:?}"))
            .expect("readable")
            .expect("not EOF");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// Sends request `method` (`params` absent when `None`), reads until its reply (its
    /// response, or a listen stream's acknowledgement), records what was seen.
    async fn request(&mut self, rec: &Recorder, method: &str, params: Option<Value>) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if let Some(params) = params {
            message["params"] = params;
        }
        self.write(&message).await;
        loop {
            let got = self.read().await;
            if let Some(outcome) = answers(&got, id) {
                rec.observed(LEGACY, method, outcome);
                return got;
            }
            // Only notifications (progress, log messages) may come first.
            assert!(
                got.get("id").is_none(),
                "{method}: a reply to another id: {got}"
            );
        }
    }

    /// Sends notification `method`, then a `ping`: the notification was accepted when the
    /// first line written afterwards is the ping's result (the server wrote nothing for it).
    async fn notify(&mut self, rec: &Recorder, method: &str) {
        self.write(&json!({"jsonrpc": "2.0", "method": method}))
            .await;
        self.next_id += 1;
        let id = self.next_id;
        self.write(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}))
            .await;
        let got = self.read().await;
        assert_eq!(
            got,
            json!({"jsonrpc": "2.0", "id": id, "result": {}}),
            "{method}"
        );
        rec.observed(LEGACY, method, Outcome::Result);
        rec.observed(LEGACY, "ping", Outcome::Result);
    }

    async fn initialize(&mut self, rec: &Recorder, version: &str) -> Value {
        self.request(
            rec,
            "initialize",
            Some(json!({"protocolVersion": version, "capabilities": {},
                        "clientInfo": {"name": "evidence", "version": "1"}})),
        )
        .await
    }
}

/// The `InitializeResult` the fixtures get at `version`.
fn init_result(id: u64, version: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {
        "protocolVersion": version,
        "capabilities": {"completions": {}, "logging": {}, "prompts": {"listChanged": true},
                         "resources": {"listChanged": true, "subscribe": true},
                         "tools": {"listChanged": true}},
        "serverInfo": {"name": "strict-mcp-conformance", "version": "0.0.0"},
    }})
}

/// A legacy-shaped result: a result with none of the 2026-07-28-only members (O127, X6).
fn assert_legacy_result(method: &str, reply: &Value) -> Value {
    let result = reply
        .get("result")
        .unwrap_or_else(|| panic!("{method}: expected a result, got {reply}"));
    for member in ["resultType", "cacheScope", "ttlMs"] {
        assert!(
            result.get(member).is_none(),
            "{method}: {member} in {reply}"
        );
    }
    assert!(
        result["_meta"].get("serverInfo").is_none(),
        "{method}: {reply}"
    );
    result.clone()
}

fn code(reply: &Value) -> i64 {
    reply["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("expected an error, got {reply}"))
}

/// B23, O115: at each served legacy version, every method a legacy session has answers with
/// a legacy-shaped result; on the same connection `server/discover` and
/// `subscriptions/listen` with modern `_meta` are served statelessly.
#[tokio::test]
async fn o115_legacy_stdio_server_answers_every_method() {
    let rec = support::evidence::recorder!();
    for version in ["2025-06-18", "2025-11-25"] {
        let mut p = Peer::start();
        assert_eq!(p.initialize(&rec, version).await, init_result(1, version));
        p.notify(&rec, "notifications/initialized").await;
        let ping = p.request(&rec, "ping", None).await;
        assert_eq!(ping["result"], json!({}));
        let level = p
            .request(&rec, "logging/setLevel", Some(json!({"level": "info"})))
            .await;
        assert_eq!(level["result"], json!({}));
        let tools = assert_legacy_result("tools/list", &p.request(&rec, "tools/list", None).await);
        assert!(
            tools["tools"]
                .as_array()
                .is_some_and(|t| t.iter().any(|t| t["name"] == "test_simple_text")),
            "{tools}"
        );
        let call = p
            .request(
                &rec,
                "tools/call",
                Some(json!({"name": "test_simple_text", "arguments": {}})),
            )
            .await;
        assert_eq!(
            assert_legacy_result("tools/call", &call),
            json!({"content": [{"type": "text",
                                "text": "This is a simple text response for testing."}]})
        );
        // X22: a handler that needs an elicitation the legacy client cannot answer ends in
        // the `confirmation_required` tool failure, a result.
        let needs = p
            .request(
                &rec,
                "tools/call",
                Some(json!({"name": "test_input_required_result_elicitation",
                            "arguments": {}})),
            )
            .await;
        let needs = assert_legacy_result("tools/call", &needs);
        assert_eq!(needs["isError"], true, "{needs}");
        assert!(
            needs["content"][0]["text"]
                .as_str()
                .is_some_and(|t| t.contains("\"confirmation_required\"")),
            "{needs}"
        );
        let resources = p.request(&rec, "resources/list", Some(json!({}))).await;
        assert!(
            assert_legacy_result("resources/list", &resources)["resources"].is_array(),
            "{resources}"
        );
        let templates = p
            .request(&rec, "resources/templates/list", Some(json!({})))
            .await;
        assert!(
            assert_legacy_result("resources/templates/list", &templates)["resourceTemplates"]
                .is_array(),
            "{templates}"
        );
        let read = p
            .request(
                &rec,
                "resources/read",
                Some(json!({"uri": "test://static-text"})),
            )
            .await;
        assert_eq!(
            assert_legacy_result("resources/read", &read)["contents"][0]["text"],
            "This is the content of the static text resource."
        );
        let prompts = p.request(&rec, "prompts/list", None).await;
        assert!(
            assert_legacy_result("prompts/list", &prompts)["prompts"].is_array(),
            "{prompts}"
        );
        let prompt = p
            .request(
                &rec,
                "prompts/get",
                Some(json!({"name": "test_simple_prompt"})),
            )
            .await;
        assert_eq!(
            assert_legacy_result("prompts/get", &prompt)["messages"][0]["content"]["text"],
            "This is a simple prompt for testing."
        );
        let complete = p
            .request(
                &rec,
                "completion/complete",
                Some(
                    json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                            "argument": {"name": "arg1", "value": ""}}),
                ),
            )
            .await;
        assert!(
            assert_legacy_result("completion/complete", &complete)["completion"]["values"]
                .is_array(),
            "{complete}"
        );
        // B23: a request carrying modern `_meta` stays modern inside the legacy session.
        let discover = p
            .request(&rec, "server/discover", Some(json!({"_meta": meta()})))
            .await;
        assert_eq!(
            discover["result"]["supportedVersions"],
            json!(["2026-07-28"]),
            "{discover}"
        );
        let listen = p
            .request(
                &rec,
                "subscriptions/listen",
                Some(json!({"_meta": meta(), "notifications": {"toolsListChanged": true}})),
            )
            .await;
        assert_eq!(
            listen["method"],
            strict_mcp::wire::listen::ACKNOWLEDGED,
            "{listen}"
        );
    }
}

/// B22, B23, O34, O115, O127, X6: every method refuses bad input with its exact code: the
/// lifecycle's own checks, the dispatcher's through the translation, -32002 for an unknown
/// resource on the legacy path only, and -32601 for the 2026-07-28-only methods and for a
/// method neither era serves here.
#[tokio::test]
async fn o115_legacy_stdio_server_refuses_bad_input_for_every_method() {
    let rec = support::evidence::recorder!();
    let mut p = Peer::start();
    // Before `initialize` a request without modern `_meta` is refused as without the era.
    let early = p.request(&rec, "tools/list", None).await;
    assert_eq!(code(&early), -32602, "{early}");
    let bad = p
        .request(
            &rec,
            "initialize",
            Some(json!({"protocolVersion": "2025-11-25", "clientInfo": {}})),
        )
        .await;
    assert_eq!(
        bad,
        json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32602,
               "message": "capabilities must be an object"}})
    );
    // An `initialize` carrying modern `_meta` is a modern request: 2026-07-28 has none.
    let modern = p
        .request(
            &rec,
            "initialize",
            Some(
                json!({"_meta": meta(), "protocolVersion": "2025-11-25", "capabilities": {},
                        "clientInfo": {"name": "x", "version": "1"}}),
            ),
        )
        .await;
    assert_eq!(code(&modern), -32601, "{modern}");
    assert_eq!(modern["error"]["data"]["supported"], json!(["2026-07-28"]));
    assert_eq!(
        p.initialize(&rec, "2025-11-25").await,
        init_result(4, "2025-11-25")
    );
    let again = p.initialize(&rec, "2025-11-25").await;
    assert_eq!(
        again,
        json!({"jsonrpc": "2.0", "id": 5, "error": {"code": -32600,
               "message": "The session is already initialized."}})
    );
    // The handshake notification sent as a request (with an id) is no method.
    let as_request = p.request(&rec, "notifications/initialized", None).await;
    assert_eq!(code(&as_request), -32601, "{as_request}");
    // `ping` with modern `_meta` is a 2026-07-28 request, where ping was removed.
    let ping = p
        .request(&rec, "ping", Some(json!({"_meta": meta()})))
        .await;
    assert_eq!(code(&ping), -32601, "{ping}");
    let level = p
        .request(&rec, "logging/setLevel", Some(json!({"level": "loud"})))
        .await;
    assert_eq!(
        level["error"],
        json!({"code": -32602, "message": "level must be one of debug, info, notice, warning, \
                                            error, critical, alert, emergency"})
    );
    for method in [
        "tools/list",
        "resources/list",
        "resources/templates/list",
        "prompts/list",
    ] {
        let reply = p
            .request(&rec, method, Some(json!({"cursor": "not-a-cursor"})))
            .await;
        assert_eq!(code(&reply), -32602, "{method}: {reply}");
    }
    let unknown_tool = p
        .request(
            &rec,
            "tools/call",
            Some(json!({"name": "no_such_tool", "arguments": {}})),
        )
        .await;
    assert_eq!(code(&unknown_tool), -32602, "{unknown_tool}");
    // O127: a legacy client cannot submit the modern continuation members.
    let state = p
        .request(
            &rec,
            "tools/call",
            Some(json!({"name": "test_simple_text", "arguments": {}, "requestState": "x"})),
        )
        .await;
    assert_eq!(
        state["error"],
        json!({"code": -32602, "message": "requestState and inputResponses are not part of \
                                            this protocol revision"})
    );
    // X6, O34: -32002 on the legacy path.
    let read = p
        .request(
            &rec,
            "resources/read",
            Some(json!({"uri": "test://no-such"})),
        )
        .await;
    assert_eq!(
        read["error"],
        json!({"code": -32002, "message": "Resource not found",
               "data": {"uri": "test://no-such"}})
    );
    let prompt = p
        .request(&rec, "prompts/get", Some(json!({"name": "no_such_prompt"})))
        .await;
    assert_eq!(code(&prompt), -32602, "{prompt}");
    let complete = p
        .request(
            &rec,
            "completion/complete",
            Some(
                json!({"ref": {"type": "ref/prompt", "name": "no_such_prompt"},
                        "argument": {"name": "arg1", "value": ""}}),
            ),
        )
        .await;
    assert_eq!(code(&complete), -32602, "{complete}");
    // The 2026-07-28-only methods do not exist for the session (O127).
    for method in ["server/discover", "subscriptions/listen"] {
        let reply = p.request(&rec, method, Some(json!({}))).await;
        assert_eq!(
            reply["error"],
            json!({"code": -32601, "message": "Method not found"}),
            "{method}"
        );
    }
    // A 2025 method served by neither era here: no tasks.
    let tasks = p
        .request(&rec, "tasks/get", Some(json!({"taskId": "t"})))
        .await;
    assert_eq!(code(&tasks), -32601, "{tasks}");
}

// ---------------------------------------------------------------------------------------------
// Legacy Streamable HTTP (transport `legacy-http-server`; B23, D37, D38, X7): the same
// fixtures behind `server::http::serve` on 127.0.0.1, one POST per message with the
// `Mcp-Session-Id` the `initialize` answer carried, and the session's `DELETE`.
#[cfg(feature = "http")]
mod http {
    use super::*;

    /// The contract transport id of legacy Streamable HTTP.
    const LEGACY_HTTP: &str = "legacy-http-server";

    /// The contract operation kind of the session's end (the endpoint at `serve`'s path).
    fn delete_kind() -> String {
        format!("DELETE {}", strict_mcp::server::http::DEFAULT_PATH)
    }

    /// One answer as the HTTP helper read it: the status, the `Mcp-Session-Id` response header
    /// and the reply message (none for an empty body: a notification's 202, a DELETE's 204).
    struct HttpReply {
        status: u16,
        session: Option<String>,
        message: Option<Value>,
    }

    /// A legacy-era client of the Streamable HTTP server, over a real loopback socket.
    struct HttpPeer {
        url: String,
        client: hyper_util::client::legacy::Client<
            hyper_util::client::legacy::connect::HttpConnector,
            http_body_util::Full<hyper::body::Bytes>,
        >,
        /// The server behind the socket (to announce changes in-process).
        server: Server,
        /// The session id the last `initialize` answer carried.
        session: Option<String>,
        /// The negotiated version, sent as `MCP-Protocol-Version` once a session is open.
        version: Option<String>,
        next_id: u64,
    }

    impl HttpPeer {
        async fn start() -> HttpPeer {
            use strict_mcp::server::http::{serve, HttpConfig, McpHttp, DEFAULT_PATH};
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            let addr = listener.local_addr().expect("addr");
            let server = legacy_fixture_server();
            let service = McpHttp::new(
                server.clone(),
                HttpConfig {
                    path: Some(DEFAULT_PATH.into()),
                    ..HttpConfig::default()
                },
            );
            tokio::spawn(serve(listener, service, std::future::pending()));
            HttpPeer {
                url: format!("http://{addr}{DEFAULT_PATH}"),
                client: hyper_util::client::legacy::Client::builder(
                    hyper_util::rt::TokioExecutor::new(),
                )
                .build_http(),
                server,
                session: None,
                version: None,
                next_id: 0,
            }
        }

        /// Sends one HTTP request with `body` and the session's headers (the 2026-07-28 ones
        /// instead when `modern`), reads the response: JSON, or SSE until the event answering
        /// `id` (a listen stream stays open; it is dropped once acknowledged).
        async fn send(
            &self,
            http_method: &str,
            body: Option<&Value>,
            id: Option<u64>,
            modern: bool,
        ) -> HttpReply {
            use http_body_util::BodyExt;
            let mut b = hyper::Request::builder()
                .method(http_method)
                .uri(&self.url)
                .header("accept", "application/json, text/event-stream")
                .header("content-type", "application/json");
            if modern {
                let method = body.and_then(|m| m["method"].as_str()).unwrap_or_default();
                b = b
                    .header("mcp-protocol-version", support::peers::PV)
                    .header("mcp-method", method);
            } else {
                if let Some(session) = &self.session {
                    b = b.header("mcp-session-id", session);
                }
                if let Some(version) = &self.version {
                    b = b.header("mcp-protocol-version", version);
                }
            }
            let bytes = body.map(Value::to_string).unwrap_or_default();
            let request = b
                .body(http_body_util::Full::new(hyper::body::Bytes::from(bytes)))
                .expect("request");
            let read = async {
                let response = self.client.request(request).await.expect("HTTP exchange");
                let status = response.status().as_u16();
                let header = |name: &str| {
                    response
                        .headers()
                        .get(name)
                        .map(|v| v.to_str().expect("visible ASCII").to_owned())
                };
                let session = header("mcp-session-id");
                let sse =
                    header("content-type").is_some_and(|c| c.starts_with("text/event-stream"));
                let mut body = response.into_body();
                if !sse {
                    let bytes = body.collect().await.expect("body").to_bytes();
                    let message = (!bytes.is_empty()).then(|| {
                        serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                            panic!("not JSON ({e}): {}", String::from_utf8_lossy(&bytes))
                        })
                    });
                    return HttpReply {
                        status,
                        session,
                        message,
                    };
                }
                let id = id.expect("an SSE response answers a request");
                let mut buffer = String::new();
                loop {
                    let frame = body
                        .frame()
                        .await
                        .expect("the stream ended before the reply")
                        .expect("frame");
                    let Ok(data) = frame.into_data() else {
                        continue;
                    };
                    buffer.push_str(std::str::from_utf8(&data).expect("UTF-8 events"));
                    while let Some(end) = buffer.find("\n\n") {
                        let event: String = buffer.drain(..end + 2).collect();
                        for line in event.lines() {
                            let Some(data) = line.strip_prefix("data: ") else {
                                continue;
                            };
                            let message: Value = serde_json::from_str(data).expect("JSON event");
                            if answers(&message, id).is_some() {
                                return HttpReply {
                                    status,
                                    session,
                                    message: Some(message),
                                };
                            }
                        }
                    }
                }
            };
            tokio::time::timeout(EXCHANGE_TIMEOUT, read)
                .await
                .unwrap_or_else(|_| panic!("{http_method}: no answer in {EXCHANGE_TIMEOUT:?}"))
        }

        /// POSTs request `method` (2026-07-28 headers when `modern`), records the reply it read
        /// (its result or error, or a listen stream's acknowledgement) and returns it.
        async fn request_as(
            &mut self,
            rec: &Recorder,
            method: &str,
            params: Option<Value>,
            modern: bool,
        ) -> HttpReply {
            self.next_id += 1;
            let id = self.next_id;
            let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method});
            if let Some(params) = params {
                message["params"] = params;
            }
            let reply = self.send("POST", Some(&message), Some(id), modern).await;
            let got = reply
                .message
                .as_ref()
                .unwrap_or_else(|| panic!("{method}: status {} and no body", reply.status));
            let outcome = answers(got, id).unwrap_or_else(|| panic!("{method}: {got}"));
            rec.observed(LEGACY_HTTP, method, outcome);
            reply
        }

        async fn request(&mut self, rec: &Recorder, method: &str, params: Option<Value>) -> Value {
            let reply = self.request_as(rec, method, params, false).await;
            assert_eq!(reply.status, 200, "{method}: {:?}", reply.message);
            reply.message.expect("a reply")
        }

        /// POSTs notification `method`: accepted is a 202 with no body, and only then recorded.
        async fn notify(&mut self, rec: &Recorder, method: &str) {
            let message = json!({"jsonrpc": "2.0", "method": method});
            let reply = self.send("POST", Some(&message), None, false).await;
            assert_eq!(
                (reply.status, reply.message, reply.session),
                (202, None, None),
                "{method}"
            );
            rec.observed(LEGACY_HTTP, method, Outcome::Result);
        }

        /// Starts a session at `version`; the session id and version are sent from now on.
        async fn initialize(&mut self, rec: &Recorder, version: &str) -> Value {
            let params = json!({"protocolVersion": version, "capabilities": {},
                                "clientInfo": {"name": "evidence", "version": "1"}});
            let reply = self
                .request_as(rec, "initialize", Some(params), false)
                .await;
            let message = reply.message.expect("a reply");
            if message.get("result").is_some() {
                let session = reply
                    .session
                    .expect("an initialize result carries a session id");
                self.session = Some(session);
                self.version = message["result"]["protocolVersion"]
                    .as_str()
                    .map(str::to_owned);
            } else {
                assert_eq!(
                    reply.session, None,
                    "a refused initialize starts no session"
                );
            }
            message
        }

        /// DELETEs the session: 204 with no body ends it (a result); an unknown or ended
        /// session's 404 carries a JSON-RPC error (-32001).
        async fn delete(&mut self, rec: &Recorder) -> HttpReply {
            let reply = self.send("DELETE", None, None, false).await;
            let outcome = match (reply.status, &reply.message) {
                (204, None) => Outcome::Result,
                (404, Some(m)) if m.get("error").is_some() => Outcome::Error,
                other => panic!("DELETE: {other:?}"),
            };
            rec.observed(LEGACY_HTTP, &delete_kind(), outcome);
            reply
        }
    }

    /// The contract operation kind of the session's standalone stream.
    fn get_kind() -> String {
        format!("GET {}", strict_mcp::server::http::DEFAULT_PATH)
    }

    impl HttpPeer {
        /// GETs the session's standalone stream (`Accept: text/event-stream` and the session's
        /// headers): a 200 SSE response is recorded as a result and its body returned; a
        /// refusal with a JSON-RPC error body (409, 404) as an error, with its status and body.
        async fn get_stream(&self, rec: &Recorder) -> Result<hyper::body::Incoming, (u16, Value)> {
            use http_body_util::BodyExt;
            let mut b = hyper::Request::builder()
                .method("GET")
                .uri(&self.url)
                .header("accept", "text/event-stream");
            if let Some(session) = &self.session {
                b = b.header("mcp-session-id", session);
            }
            if let Some(version) = &self.version {
                b = b.header("mcp-protocol-version", version);
            }
            let request = b
                .body(http_body_util::Full::new(hyper::body::Bytes::new()))
                .expect("request");
            let response = tokio::time::timeout(EXCHANGE_TIMEOUT, self.client.request(request))
                .await
                .expect("GET answered in time")
                .expect("HTTP exchange");
            let status = response.status().as_u16();
            let sse = response
                .headers()
                .get("content-type")
                .is_some_and(|c| c.as_bytes().starts_with(b"text/event-stream"));
            if status == 200 && sse {
                rec.observed(LEGACY_HTTP, &get_kind(), Outcome::Result);
                return Ok(response.into_body());
            }
            let bytes = tokio::time::timeout(EXCHANGE_TIMEOUT, response.into_body().collect())
                .await
                .expect("refusal body in time")
                .expect("body")
                .to_bytes();
            let body: Value = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                panic!(
                    "GET {status}: not JSON ({e}): {}",
                    String::from_utf8_lossy(&bytes)
                )
            });
            assert!(body.get("error").is_some(), "GET {status}: {body}");
            rec.observed(LEGACY_HTTP, &get_kind(), Outcome::Error);
            Err((status, body))
        }
    }

    /// The next event's `data` on a standalone stream, as JSON; `None` once the stream ended.
    async fn next_event(stream: &mut hyper::body::Incoming) -> Option<Value> {
        use http_body_util::BodyExt;
        let mut buffer = String::new();
        let read = async {
            loop {
                let frame = stream.frame().await?.expect("frame");
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                buffer.push_str(std::str::from_utf8(&data).expect("UTF-8 events"));
                while let Some(end) = buffer.find("\n\n") {
                    let event: String = buffer.drain(..end + 2).collect();
                    if let Some(data) = event.lines().find_map(|l| l.strip_prefix("data: ")) {
                        return Some(serde_json::from_str(data).expect("JSON event"));
                    }
                }
            }
        };
        tokio::time::timeout(EXCHANGE_TIMEOUT, read)
            .await
            .unwrap_or_else(|_| panic!("no event in {EXCHANGE_TIMEOUT:?}"))
    }

    /// B23, D37, O115: `GET /mcp` on a live legacy session opens its standalone SSE stream
    /// (200, `text/event-stream`), which carries the `notifications/resources/updated` of a
    /// URI the session subscribed to, at each served legacy version; DELETE ends the stream.
    #[tokio::test]
    async fn o115_legacy_http_server_get_opens_the_standalone_stream() {
        let rec = support::evidence::recorder!();
        for version in ["2025-06-18", "2025-11-25"] {
            let mut p = HttpPeer::start().await;
            assert_eq!(p.initialize(&rec, version).await, init_result(1, version));
            p.notify(&rec, "notifications/initialized").await;
            let mut stream = p.get_stream(&rec).await.expect("the stream opens");
            let subscribed = p
                .request(
                    &rec,
                    "resources/subscribe",
                    Some(json!({"uri": "test://static-text"})),
                )
                .await;
            assert_eq!(subscribed["result"], json!({}), "{subscribed}");
            p.server.resource_updated("test://other");
            p.server.resource_updated("test://static-text");
            assert_eq!(
                next_event(&mut stream).await,
                Some(
                    json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                            "params": {"uri": "test://static-text"}})
                ),
                "only the subscribed URI's update, on the standalone stream"
            );
            let end = p.delete(&rec).await;
            assert_eq!((end.status, end.message), (204, None));
            assert_eq!(
                next_event(&mut stream).await,
                None,
                "DELETE ends the stream"
            );
        }
    }

    /// D37, D38, O115: a second `GET /mcp` while the session's stream is open is 409 (at most
    /// `MAX_STREAMS_PER_SESSION`), a GET without a live session's id is 404 with -32001.
    #[tokio::test]
    async fn o115_legacy_http_server_refuses_a_second_or_ended_stream() {
        let rec = support::evidence::recorder!();
        let mut p = HttpPeer::start().await;
        assert_eq!(
            p.initialize(&rec, "2025-11-25").await,
            init_result(1, "2025-11-25")
        );
        let _open = p.get_stream(&rec).await.expect("the first stream opens");
        let (status, body) = p
            .get_stream(&rec)
            .await
            .expect_err("a second one is refused");
        assert_eq!(
            (status, body),
            (
                strict_mcp::server::legacy::sessions::STREAM_CONFLICT_STATUS,
                json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600,
                       "message": "a standalone stream is already open for this session"}})
            )
        );
        let end = p.delete(&rec).await;
        assert_eq!((end.status, end.message), (204, None));
        let (status, body) = p
            .get_stream(&rec)
            .await
            .expect_err("an ended session has none");
        assert_eq!(
            (status, body),
            (
                404,
                json!({"jsonrpc": "2.0", "id": null,
                       "error": {"code": -32001, "message": "Session not found"}})
            )
        );
    }

    /// B23, D37, X7, O115: over legacy Streamable HTTP, at each served legacy version, every
    /// method a legacy session has answers with a legacy-shaped result, the handshake
    /// notification is accepted (202), the same endpoint serves `server/discover` and
    /// `subscriptions/listen` to 2026-07-28 requests, and DELETE ends the session (204).
    #[tokio::test]
    async fn o115_legacy_http_server_answers_every_method() {
        let rec = support::evidence::recorder!();
        for version in ["2025-06-18", "2025-11-25"] {
            let mut p = HttpPeer::start().await;
            assert_eq!(p.initialize(&rec, version).await, init_result(1, version));
            p.notify(&rec, "notifications/initialized").await;
            let ping = p.request(&rec, "ping", None).await;
            assert_eq!(ping["result"], json!({}));
            let level = p
                .request(&rec, "logging/setLevel", Some(json!({"level": "info"})))
                .await;
            assert_eq!(level["result"], json!({}));
            let tools =
                assert_legacy_result("tools/list", &p.request(&rec, "tools/list", None).await);
            assert!(
                tools["tools"]
                    .as_array()
                    .is_some_and(|t| t.iter().any(|t| t["name"] == "test_simple_text")),
                "{tools}"
            );
            let call = p
                .request(
                    &rec,
                    "tools/call",
                    Some(json!({"name": "test_simple_text", "arguments": {}})),
                )
                .await;
            assert_eq!(
                assert_legacy_result("tools/call", &call),
                json!({"content": [{"type": "text",
                                    "text": "This is a simple text response for testing."}]})
            );
            // X22: the elicitation a legacy client cannot answer ends in `confirmation_required`.
            let needs = p
                .request(
                    &rec,
                    "tools/call",
                    Some(json!({"name": "test_input_required_result_elicitation",
                                "arguments": {}})),
                )
                .await;
            let needs = assert_legacy_result("tools/call", &needs);
            assert_eq!(needs["isError"], true, "{needs}");
            assert!(
                needs["content"][0]["text"]
                    .as_str()
                    .is_some_and(|t| t.contains("\"confirmation_required\"")),
                "{needs}"
            );
            let resources = p.request(&rec, "resources/list", Some(json!({}))).await;
            assert!(
                assert_legacy_result("resources/list", &resources)["resources"].is_array(),
                "{resources}"
            );
            let templates = p
                .request(&rec, "resources/templates/list", Some(json!({})))
                .await;
            assert!(
                assert_legacy_result("resources/templates/list", &templates)["resourceTemplates"]
                    .is_array(),
                "{templates}"
            );
            let read = p
                .request(
                    &rec,
                    "resources/read",
                    Some(json!({"uri": "test://static-text"})),
                )
                .await;
            assert_eq!(
                assert_legacy_result("resources/read", &read)["contents"][0]["text"],
                "This is the content of the static text resource."
            );
            let prompts = p.request(&rec, "prompts/list", None).await;
            assert!(
                assert_legacy_result("prompts/list", &prompts)["prompts"].is_array(),
                "{prompts}"
            );
            let prompt = p
                .request(
                    &rec,
                    "prompts/get",
                    Some(json!({"name": "test_simple_prompt"})),
                )
                .await;
            assert_eq!(
                assert_legacy_result("prompts/get", &prompt)["messages"][0]["content"]["text"],
                "This is a simple prompt for testing."
            );
            let complete = p
                .request(
                    &rec,
                    "completion/complete",
                    Some(
                        json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                                "argument": {"name": "arg1", "value": ""}}),
                    ),
                )
                .await;
            assert!(
                assert_legacy_result("completion/complete", &complete)["completion"]["values"]
                    .is_array(),
                "{complete}"
            );
            // B23, D38: a 2026-07-28 request on the same endpoint stays modern (no session).
            let discover = p
                .request_as(
                    &rec,
                    "server/discover",
                    Some(json!({"_meta": meta()})),
                    true,
                )
                .await;
            assert_eq!(
                (discover.status, discover.session),
                (200, None),
                "{:?}",
                discover.message
            );
            assert_eq!(
                discover.message.expect("a reply")["result"]["supportedVersions"],
                json!(["2026-07-28"])
            );
            let listen = p
                .request_as(
                    &rec,
                    "subscriptions/listen",
                    Some(json!({"_meta": meta(), "notifications": {"toolsListChanged": true}})),
                    true,
                )
                .await;
            assert_eq!(
                listen.message.expect("an acknowledgement")["method"],
                strict_mcp::wire::listen::ACKNOWLEDGED
            );
            let end = p.delete(&rec).await;
            assert_eq!((end.status, end.message), (204, None));
        }
    }

    /// B22, B23, D37, D38, O34, O115, O127, X6: over legacy Streamable HTTP every method refuses
    /// bad input with its exact code, the 2026-07-28-only methods are -32601 to the session, and
    /// a DELETE of an ended session is 404 with -32001.
    #[tokio::test]
    async fn o115_legacy_http_server_refuses_bad_input_for_every_method() {
        let rec = support::evidence::recorder!();
        let mut p = HttpPeer::start().await;
        // A legacy request before any session: refused, no session started.
        p.version = Some("2025-11-25".to_owned());
        let early = p.request_as(&rec, "tools/list", None, false).await;
        assert_eq!(
            (
                early.status,
                early.message.expect("a reply")["error"].clone()
            ),
            (
                400,
                json!({"code": -32600, "message": "Mcp-Session-Id header is required"})
            )
        );
        p.version = None;
        let bad = p
            .initialize_with(
                &rec,
                json!({"protocolVersion": "2025-11-25", "clientInfo": {}}),
            )
            .await;
        assert_eq!(
            bad,
            json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32602,
                   "message": "capabilities must be an object"}})
        );
        // An `initialize` carrying modern `_meta` is a modern request: 2026-07-28 has none.
        let modern = p
            .initialize_with(
                &rec,
                json!({"_meta": meta(), "protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "x", "version": "1"}}),
            )
            .await;
        assert_eq!(code(&modern), -32601, "{modern}");
        assert_eq!(modern["error"]["data"]["supported"], json!(["2026-07-28"]));
        assert_eq!(
            p.initialize(&rec, "2025-11-25").await,
            init_result(4, "2025-11-25")
        );
        // The handshake notification sent as a request (with an id) is no method.
        let as_request = p.request(&rec, "notifications/initialized", None).await;
        assert_eq!(code(&as_request), -32601, "{as_request}");
        // `ping` with modern `_meta` is a 2026-07-28 request, where ping was removed.
        let ping = p
            .request_as(&rec, "ping", Some(json!({"_meta": meta()})), true)
            .await;
        assert_eq!(code(&ping.message.expect("a reply")), -32601);
        let level = p
            .request(&rec, "logging/setLevel", Some(json!({"level": "loud"})))
            .await;
        assert_eq!(
            level["error"],
            json!({"code": -32602, "message": "level must be one of debug, info, notice, warning, \
                                                error, critical, alert, emergency"})
        );
        for method in [
            "tools/list",
            "resources/list",
            "resources/templates/list",
            "prompts/list",
        ] {
            let reply = p
                .request(&rec, method, Some(json!({"cursor": "not-a-cursor"})))
                .await;
            assert_eq!(code(&reply), -32602, "{method}: {reply}");
        }
        let unknown_tool = p
            .request(
                &rec,
                "tools/call",
                Some(json!({"name": "no_such_tool", "arguments": {}})),
            )
            .await;
        assert_eq!(code(&unknown_tool), -32602, "{unknown_tool}");
        // O127: a legacy client cannot submit the modern continuation members.
        let state = p
            .request(
                &rec,
                "tools/call",
                Some(json!({"name": "test_simple_text", "arguments": {}, "requestState": "x"})),
            )
            .await;
        assert_eq!(
            state["error"],
            json!({"code": -32602, "message": "requestState and inputResponses are not part of \
                                                this protocol revision"})
        );
        // X6, O34: -32002 on the legacy path.
        let read = p
            .request(
                &rec,
                "resources/read",
                Some(json!({"uri": "test://no-such"})),
            )
            .await;
        assert_eq!(
            read["error"],
            json!({"code": -32002, "message": "Resource not found",
                   "data": {"uri": "test://no-such"}})
        );
        let prompt = p
            .request(&rec, "prompts/get", Some(json!({"name": "no_such_prompt"})))
            .await;
        assert_eq!(code(&prompt), -32602, "{prompt}");
        let complete = p
            .request(
                &rec,
                "completion/complete",
                Some(
                    json!({"ref": {"type": "ref/prompt", "name": "no_such_prompt"},
                            "argument": {"name": "arg1", "value": ""}}),
                ),
            )
            .await;
        assert_eq!(code(&complete), -32602, "{complete}");
        // The 2026-07-28-only methods do not exist for the session (O127).
        for method in ["server/discover", "subscriptions/listen"] {
            let reply = p.request(&rec, method, Some(json!({}))).await;
            assert_eq!(
                reply["error"],
                json!({"code": -32601, "message": "Method not found"}),
                "{method}"
            );
        }
        // D38: the session ends once; its id is then unknown (404, -32001), for DELETE too.
        let end = p.delete(&rec).await;
        assert_eq!((end.status, end.message), (204, None));
        let again = p.delete(&rec).await;
        assert_eq!(
            (again.status, again.message),
            (
                404,
                Some(json!({"jsonrpc": "2.0", "id": null,
                            "error": {"code": -32001, "message": "Session not found"}}))
            )
        );
    }

    impl HttpPeer {
        /// POSTs an `initialize` with exactly these params (none of the session's headers).
        async fn initialize_with(&mut self, rec: &Recorder, params: Value) -> Value {
            let reply = self
                .request_as(rec, "initialize", Some(params), false)
                .await;
            assert_eq!(
                reply.session, None,
                "a refused initialize starts no session"
            );
            reply.message.expect("a reply")
        }
    }
}
