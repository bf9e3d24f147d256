//! The real protocol server behind the Streamable HTTP host, over loopback TCP (O117, O118).
//!
//! Typed tools built with the core API; the host runs through the bundled `serve` accept loop.
#![forbid(unsafe_code)]
#![cfg(feature = "http")]

mod support;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use support::{EchoIn, EchoOut};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Request, StatusCode};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;

use std::future::Future;
use std::pin::Pin;
use strict_mcp::codec::IngressLimits;
use strict_mcp::core::descriptor::{ContentBlock, PromptMessage, ResourceContents, Role};
use strict_mcp::core::{Caller, CancelToken};
use strict_mcp::core::{
    Invocation, Outcome, PromptDef, PromptReply, ReadReply, Registry, RegistryBuilder, ResourceDef,
    TemplateDef, ToolDef,
};
use strict_mcp::server::http::{serve, Dispatch, HeaderCheck, HttpBody, HttpConfig, McpHttp};
use strict_mcp::server::{Outbox, Server, ServerOptions};
use strict_mcp::wire::jsonrpc::{Message, Request as RpcRequest};
use support::harness::{with_clock, ManualClock};
use tokio::net::TcpListener;

const PV: &str = "2026-07-28";

#[derive(Deserialize, JsonSchema)]
struct RegionIn {
    /// Where to run; mirrored into `Mcp-Param-Region`.
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: String,
}

#[derive(Deserialize, JsonSchema)]
struct Empty {}

/// Flags the `wait` tool raises, and a notifier a test waits on instead of polling.
#[derive(Default)]
struct Probes {
    started: AtomicBool,
    stopped: AtomicBool,
    changed: tokio::sync::Notify,
}

impl Probes {
    fn raise(&self, flag: &AtomicBool) {
        flag.store(true, Ordering::SeqCst);
        self.changed.notify_waiters();
    }

    /// Until `flag` is raised (bounded by a virtual or real 5 s, so a bug fails, never hangs).
    async fn wait_for(&self, flag: &AtomicBool) {
        let raised = async {
            loop {
                // Registered before the check, so a raise in between is not missed.
                let changed = self.changed.notified();
                if flag.load(Ordering::SeqCst) {
                    return;
                }
                changed.await;
            }
        };
        tokio::time::timeout(Duration::from_secs(5), raised)
            .await
            .expect("probe raised in time");
    }
}

struct StopOnDrop(Arc<Probes>);
impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.raise(&self.0.stopped);
    }
}

fn registry(probes: &Arc<Probes>, extra: bool) -> Registry {
    let p = Arc::clone(probes);
    let mut b = RegistryBuilder::new()
        .tool(ToolDef::typed(
            "echo",
            |_i: Invocation, i: EchoIn| async move { Ok(EchoOut { text: i.text }) },
        ))
        .tool(ToolDef::typed(
            "region",
            |_i: Invocation, i: RegionIn| async move { Ok(EchoOut { text: i.region }) },
        ))
        .tool(ToolDef::typed(
            "progress",
            |inv: Invocation, _i: Empty| async move {
                inv.report_progress(1.0, Some(2.0), Some("half"));
                tokio::time::sleep(Duration::from_millis(20)).await;
                Ok(EchoOut {
                    text: "done".into(),
                })
            },
        ))
        .tool(ToolDef::typed("wait", move |inv: Invocation, _i: Empty| {
            let guard = StopOnDrop(Arc::clone(&p));
            async move {
                let _guard = guard;
                _guard.0.raise(&_guard.0.started);
                inv.cancel_token().cancelled().await;
                Ok(EchoOut {
                    text: "cancelled".into(),
                })
            }
        }));
    b = catalogue(b);
    if extra {
        b = b.tool(ToolDef::typed(
            "added",
            |_i: Invocation, i: EchoIn| async move { Ok(EchoOut { text: i.text }) },
        ));
    }
    b.build().expect("registry")
}

/// One resource, one template with a completer, and one prompt that asks for a form answer:
/// enough to prove every resource, prompt and completion operation over HTTP (O117).
fn catalogue(b: RegistryBuilder) -> RegistryBuilder {
    b.resource(
        ResourceDef::new("mem://hello", "hello", |_inv, uri| async move {
            Ok(ReadReply::new(vec![ResourceContents::text(uri, "hello")]))
        })
        .mime_type("text/plain"),
    )
    .template(
        TemplateDef::new(
            "mem://items/{id}",
            "item",
            |_inv, uri, vars: BTreeMap<String, String>| async move {
                Ok(ReadReply::new(vec![ResourceContents::text(
                    uri,
                    format!("item {}", vars["id"]),
                )]))
            },
        )
        .complete("id", |_caller, partial, _known| {
            ["alpha", "beta", "apple"]
                .iter()
                .filter(|v| v.starts_with(partial))
                .map(|v| (*v).to_owned())
                .collect()
        }),
    )
    .prompt(
        PromptDef::new(
            "greet",
            |inv: Invocation, args: BTreeMap<String, String>| async move {
                if inv.input_response("name").is_none() {
                    let ask = inv.elicit_form(
                        "Whom to greet?",
                        json!({"type":"object","properties":{"name":{"type":"string"}}}),
                    )?;
                    return Ok(Outcome::input("name", ask));
                }
                Ok(Outcome::Complete(PromptReply {
                    description: None,
                    messages: vec![PromptMessage::new(
                        Role::User,
                        ContentBlock::text(format!("Greet in {}.", args["style"])),
                    )],
                }))
            },
        )
        .argument("style", "How to greet.", true),
    )
}

struct Host {
    addr: std::net::SocketAddr,
    server: Server,
    client: Client<HttpConnector, Full<Bytes>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    run: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn start(mode: &str) -> Host {
    let probes = Arc::new(Probes::default());
    let server = Server::new(
        registry(&probes, false),
        ServerOptions::new()
            .server_info("http-test", "0.0.1")
            .mode(mode),
    )
    .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let service = McpHttp::new(
        server.clone(),
        HttpConfig {
            path: Some("/mcp".into()),
            keep_alive: Duration::from_millis(50),
            ..HttpConfig::default()
        },
    );
    let run = tokio::spawn(serve(listener, service, async {
        let _ = stopped.await;
    }));
    Host {
        addr,
        server,
        client: Client::builder(TokioExecutor::new()).build_http(),
        stop: Some(stop),
        run,
    }
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": PV,
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

fn rpc(id: Value, method: &str, mut params: Value) -> String {
    if params.get("_meta").is_none() {
        params["_meta"] = meta();
    }
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

impl Host {
    fn request(&self, headers: &[(&str, &str)], body: String) -> Request<Full<Bytes>> {
        let mut b = Request::post(format!("http://{}/mcp", self.addr))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json");
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(Full::new(Bytes::from(body))).unwrap()
    }

    async fn post(&self, headers: &[(&str, &str)], body: String) -> (StatusCode, String, String) {
        let res = self
            .client
            .request(self.request(headers, body))
            .await
            .unwrap();
        let status = res.status();
        let ct = res.headers()["content-type"].to_str().unwrap().to_owned();
        let bytes = res.into_body().collect().await.unwrap().to_bytes();
        (status, ct, String::from_utf8(bytes.to_vec()).unwrap())
    }

    async fn json(&self, headers: &[(&str, &str)], body: String) -> (StatusCode, Value) {
        let (status, ct, text) = self.post(headers, body).await;
        assert_eq!(ct, "application/json", "{text}");
        (status, serde_json::from_str(&text).unwrap())
    }

    async fn stop(mut self) {
        self.server.shutdown(Duration::from_secs(2)).await;
        let _ = self.stop.take().unwrap().send(());
        tokio::time::timeout(Duration::from_secs(5), self.run)
            .await
            .expect("accept loop ends")
            .unwrap()
            .unwrap();
    }
}

fn events(text: &str) -> Vec<Value> {
    text.split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o117_discovery_and_an_ordinary_call_over_http() {
    let host = start("direct").await;
    let (status, v) = host
        .json(
            &[
                ("mcp-protocol-version", PV),
                ("mcp-method", "server/discover"),
            ],
            rpc(json!(1), "server/discover", json!({})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(v["id"], 1);
    assert_eq!(v["result"]["supportedVersions"], json!([PV]));
    let (status, v) = host
        .json(
            &[
                ("mcp-protocol-version", PV),
                ("mcp-method", "tools/call"),
                ("mcp-name", "echo"),
            ],
            rpc(
                json!("c"),
                "tools/call",
                json!({"name": "echo", "arguments": {"text": "hi"}}),
            ),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(v["id"], "c");
    assert_eq!(
        v["result"]["structuredContent"],
        json!({"value": {"text": "hi"}})
    );
    host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d32_unsupported_version_missing_meta_and_d31_unknown_method_statuses() {
    let host = start("direct").await;
    // -32022 with 400: header and body agree on a revision the server does not serve.
    let mut m = meta();
    m["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let (status, v) = host
        .json(
            &[
                ("mcp-protocol-version", "2099-01-01"),
                ("mcp-method", "tools/list"),
            ],
            rpc(json!(2), "tools/list", json!({"_meta": m})),
        )
        .await;
    assert_eq!(
        (status, v["error"]["code"].clone()),
        (StatusCode::BAD_REQUEST, json!(-32022))
    );
    // Missing _meta: -32602 with 400.
    let (status, v) = host
        .json(
            &[("mcp-protocol-version", PV), ("mcp-method", "tools/list")],
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}"#.to_owned(),
        )
        .await;
    assert_eq!(
        (status, v["error"]["code"].clone()),
        (StatusCode::BAD_REQUEST, json!(-32602))
    );
    // Unknown method: 404 with -32601.
    let (status, v) = host
        .json(
            &[("mcp-protocol-version", PV), ("mcp-method", "ping")],
            rpc(json!(4), "ping", json!({})),
        )
        .await;
    assert_eq!(
        (status, v["error"]["code"].clone()),
        (StatusCode::NOT_FOUND, json!(-32601))
    );
    // Unknown tool: -32602 with 200.
    let (status, v) = host
        .json(
            &[
                ("mcp-protocol-version", PV),
                ("mcp-method", "tools/call"),
                ("mcp-name", "nope"),
            ],
            rpc(
                json!(5),
                "tools/call",
                json!({"name": "nope", "arguments": {}}),
            ),
        )
        .await;
    assert_eq!(
        (status, v["error"]["code"].clone()),
        (StatusCode::OK, json!(-32602))
    );
    host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d28_typed_tool_x_mcp_header_is_enforced_in_direct_mode_only() {
    let host = start("direct").await;
    let body = || {
        rpc(
            json!(6),
            "tools/call",
            json!({"name": "region", "arguments": {"region": "eu"}}),
        )
    };
    let base = [
        ("mcp-protocol-version", PV),
        ("mcp-method", "tools/call"),
        ("mcp-name", "region"),
    ];
    let (status, v) = host.json(&base, body()).await;
    assert_eq!(
        (status, v["error"]["code"].clone()),
        (StatusCode::BAD_REQUEST, json!(-32020))
    );
    let mut h = base.to_vec();
    h.push(("Mcp-Param-Region", "eu"));
    let (status, v) = host.json(&h, body()).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(
        v["result"]["structuredContent"],
        json!({"value": {"text": "eu"}})
    );
    host.stop().await;
    // Compact mode publishes only `call_tool` (no annotations): nothing to mirror.
    let host = start("compact").await;
    let (status, v) = host
        .json(
            &[("mcp-protocol-version", PV), ("mcp-method", "tools/call"), ("mcp-name", "call_tool")],
            rpc(
                json!(7),
                "tools/call",
                json!({"name": "call_tool", "arguments": {"name": "region", "arguments": {"region": "eu"}}}),
            ),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(
        v["result"]["structuredContent"],
        json!({"value": {"text": "eu"}}),
        "{v}"
    );
    host.stop().await;
}

// ---------------------------------------------------------------------------------------------
// In memory, on virtual time (the deterministic harness): no socket, the host's timers
// (`stream_after`, keep-alive) on tokio's paused clock and the server's on a `ManualClock`
// (`tests/support/harness.rs`), so these tests wait on events, never on real time.

/// The host and its server, driven through [`McpHttp::handle`] with in-memory bodies.
struct Mem<D> {
    service: McpHttp<D>,
    server: Server,
    probes: Arc<Probes>,
}

fn mem_server(mode: &str, probes: &Arc<Probes>) -> Server {
    let clock = ManualClock::at(1_000_000);
    let options = ServerOptions::new()
        .server_info("http-test", "0.0.1")
        .mode(mode);
    Server::new(registry(probes, false), with_clock(options, &clock)).unwrap()
}

fn in_memory(mode: &str, config: HttpConfig) -> Mem<Server> {
    let probes = Arc::new(Probes::default());
    let server = mem_server(mode, &probes);
    Mem {
        service: McpHttp::new(server.clone(), config),
        server,
        probes,
    }
}

/// `keep_alive` as `start` sets it, for the in-memory host.
fn mem_config() -> HttpConfig {
    HttpConfig {
        keep_alive: Duration::from_millis(50),
        ..HttpConfig::default()
    }
}

fn mem_request(headers: &[(&str, &str)], body: String) -> Request<Full<Bytes>> {
    let mut b = Request::post("http://127.0.0.1/mcp")
        .header("host", "127.0.0.1")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", PV);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(Full::new(Bytes::from(body))).unwrap()
}

/// The headers of a `tools/call` naming `name`.
fn call_headers(name: &str) -> [(&str, &str); 2] {
    [("mcp-method", "tools/call"), ("mcp-name", name)]
}

/// The next frame of an in-memory response body as text (virtual 5 s at most).
async fn mem_next(body: &mut HttpBody) -> Option<String> {
    let f = tokio::time::timeout(Duration::from_secs(5), body.frame())
        .await
        .expect("frame in time");
    f.map(|f| String::from_utf8(f.unwrap().into_data().unwrap().to_vec()).unwrap())
}

/// The next `data:` event of an in-memory body, skipping keep-alive comments.
async fn mem_next_event(body: &mut HttpBody) -> Option<Value> {
    loop {
        let f = mem_next(body).await?;
        if let Some(d) = f.strip_prefix("data: ") {
            return Some(serde_json::from_str(d.trim_end()).unwrap());
        }
        assert_eq!(f, ": keep-alive\n\n");
    }
}

/// Status, content type and the whole body of an in-memory response.
async fn mem_post<D: Dispatch>(
    service: &McpHttp<D>,
    headers: &[(&str, &str)],
    body: String,
) -> (StatusCode, String, String) {
    let res = service.handle(mem_request(headers, body)).await;
    let status = res.status();
    let ct = res.headers()["content-type"].to_str().unwrap().to_owned();
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    (status, ct, String::from_utf8(bytes.to_vec()).unwrap())
}

#[tokio::test(start_paused = true)]
async fn j6_progress_travels_on_the_requests_sse_stream() {
    let mem = in_memory("direct", mem_config());
    let mut m = meta();
    m["progressToken"] = json!("tok");
    let (status, ct, text) = mem_post(
        &mem.service,
        &call_headers("progress"),
        rpc(
            json!(8),
            "tools/call",
            json!({"name": "progress", "arguments": {}, "_meta": m}),
        ),
    )
    .await;
    assert_eq!((status, ct.as_str()), (StatusCode::OK, "text/event-stream"));
    let ev = events(&text);
    assert_eq!(ev.len(), 2, "{text}");
    assert_eq!(
        ev[0],
        json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok","progress":1.0,"total":2.0,"message":"half"}})
    );
    assert_eq!(ev[1]["id"], 8);
    assert_eq!(
        ev[1]["result"]["structuredContent"],
        json!({"value": {"text": "done"}})
    );
}

/// D12: the client goes away before any answer (hyper drops the service future): the
/// handler's token fires, and the server keeps serving.
#[tokio::test(start_paused = true)]
async fn d12_disconnect_cancels_the_handler_and_the_server_keeps_serving() {
    let mem = in_memory("direct", mem_config());
    let service = mem.service.clone();
    let request = mem_request(
        &call_headers("wait"),
        rpc(
            json!(9),
            "tools/call",
            json!({"name": "wait", "arguments": {}}),
        ),
    );
    let pending = tokio::spawn(async move { service.handle(request).await });
    mem.probes.wait_for(&mem.probes.started).await;
    assert!(!mem.probes.stopped.load(Ordering::SeqCst));
    pending.abort();
    mem.probes.wait_for(&mem.probes.stopped).await;
    let (status, ct, text) = mem_post(
        &mem.service,
        &call_headers("echo"),
        rpc(
            json!(10),
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "still"}}),
        ),
    )
    .await;
    assert_eq!((status, ct.as_str()), (StatusCode::OK, "application/json"));
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["result"]["structuredContent"]["value"]["text"], "still");
}

#[tokio::test(start_paused = true)]
async fn k_listen_over_http_ack_filter_tagging_keep_alive_and_close_on_shutdown() {
    let mem = in_memory("direct", mem_config());
    let body = rpc(
        json!("L"),
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true, "promptsListChanged": true}}),
    );
    let res = mem
        .service
        .handle(mem_request(&[("mcp-method", "subscriptions/listen")], body))
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    assert_eq!(res.headers()["x-accel-buffering"], "no");
    let mut body = res.into_body();
    let ack = mem_next_event(&mut body).await.unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "L"
    );
    assert_eq!(ack["params"]["notifications"]["toolsListChanged"], true);
    // Idle stream: keep-alive comment after `keep_alive` of virtual time (K14).
    let idle = tokio::time::Instant::now();
    assert_eq!(mem_next(&mut body).await.unwrap(), ": keep-alive\n\n");
    assert_eq!(idle.elapsed(), Duration::from_millis(50));
    // Not subscribed: a resource update never reaches this stream (K2).
    mem.server.resource_updated("mem://unrelated");
    mem.server.replace_registry(registry(&mem.probes, true));
    let changed = mem_next_event(&mut body).await.unwrap();
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "L"
    );
    let server = mem.server.clone();
    let shutdown = tokio::spawn(async move { server.shutdown(Duration::from_secs(2)).await });
    let mut last = None;
    while let Some(ev) = mem_next_event(&mut body).await {
        last = Some(ev);
    }
    let last = last.expect("closing result");
    assert_eq!(last["id"], "L");
    assert_eq!(last["result"]["resultType"], "complete");
    assert_eq!(
        last["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "L"
    );
    shutdown.await.unwrap();
}

/// The server behind a dispatcher whose header check (inside the dispatch future, as
/// `Server`'s own) is decided only after one virtual millisecond: later than a
/// `stream_after` of zero.
struct LateCheck(Server);

impl Dispatch for LateCheck {
    fn dispatch(
        &self,
        caller: Caller,
        message: Message,
        outbox: Arc<dyn Outbox>,
        cancel: CancelToken,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'static>> {
        self.0.dispatch(caller, message, outbox, cancel)
    }

    fn ingress_limits(&self) -> IngressLimits {
        Dispatch::ingress_limits(&self.0)
    }

    fn registry(&self) -> Arc<Registry> {
        Dispatch::registry(&self.0)
    }

    fn dispatch_request(
        &self,
        caller: Caller,
        request: RpcRequest,
        check: HeaderCheck,
        outbox: Arc<dyn Outbox>,
        cancel: CancelToken,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'static>> {
        let work = self
            .0
            .dispatch_request(caller, request, check, outbox, cancel);
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(1)).await;
            work.await;
        })
    }
}

/// With `stream_after` zero, a header refusal still leaves as its own 400 JSON response: the
/// refusal is decided before any upgrade to SSE (D28, D10). An admitted silent call does
/// become a stream at once, and dropping that stream cancels it (D12).
#[tokio::test(start_paused = true)]
async fn d10_d28_stream_after_zero_never_hides_a_header_refusal_in_a_200_stream() {
    let config = || HttpConfig {
        stream_after: Some(Duration::ZERO),
        ..mem_config()
    };
    let refused = |id: u64| {
        rpc(
            json!(id),
            "tools/call",
            json!({"name": "region", "arguments": {"region": "eu"}}),
        )
    };
    let expect_refusal = |(status, ct, text): (StatusCode, String, String), id: u64| {
        assert_eq!(
            (status, ct.as_str()),
            (StatusCode::BAD_REQUEST, "application/json"),
            "{text}"
        );
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            (v["id"].clone(), v["error"]["code"].clone()),
            (json!(id), json!(-32020))
        );
    };
    let mem = in_memory("direct", config());
    expect_refusal(
        mem_post(&mem.service, &call_headers("region"), refused(30)).await,
        30,
    );
    // The check decided after the zero deadline has passed: still the refusal, not SSE.
    let probes = Arc::new(Probes::default());
    let late = McpHttp::new(LateCheck(mem_server("direct", &probes)), config());
    expect_refusal(
        mem_post(&late, &call_headers("region"), refused(31)).await,
        31,
    );
    // Admitted and silent: SSE at once (no virtual time passes), the reply still to come.
    let before = tokio::time::Instant::now();
    let res = late
        .handle(mem_request(
            &call_headers("wait"),
            rpc(
                json!(32),
                "tools/call",
                json!({"name": "wait", "arguments": {}}),
            ),
        ))
        .await;
    assert_eq!(
        before.elapsed(),
        Duration::from_millis(1),
        "the late check's own millisecond"
    );
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    probes.wait_for(&probes.started).await;
    drop(res);
    probes.wait_for(&probes.stopped).await;
}

/// The issue's figure: RSS stays flat across 100k requests, a quarter of them valid calls and
/// the rest rejected in three different ways.
const RSS_REQUESTS: usize = 100_000;

fn rss_pages() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    statm.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// User need 4: no per-request state survives a request, accepted or refused (D38, O118).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rss_stays_flat_over_100k_real_server_requests_including_rejected_ones() {
    let probes = Arc::new(Probes::default());
    let server = Server::new(
        registry(&probes, false),
        ServerOptions::new().mode("direct"),
    )
    .unwrap();
    let service = McpHttp::new(server, HttpConfig::default());
    let call = rpc(
        json!(1),
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "x"}}),
    );
    let no_meta = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}"#.to_owned();
    let round = |n: usize| {
        let service = service.clone();
        let call = call.clone();
        let no_meta = no_meta.clone();
        async move {
            for i in 0..n {
                let (method, name, body, status) = match i % 4 {
                    0 => ("tools/call", Some("echo"), call.as_str(), 200),
                    1 => ("tools/call", Some("other"), call.as_str(), 400),
                    2 => ("tools/list", None, no_meta.as_str(), 400),
                    _ => ("tools/list", None, "{bad", 400),
                };
                let mut b = Request::post("http://127.0.0.1/mcp")
                    .header("host", "127.0.0.1")
                    .header("accept", "application/json, text/event-stream")
                    .header("content-type", "application/json")
                    .header("mcp-protocol-version", PV)
                    .header("mcp-method", method);
                if let Some(n) = name {
                    b = b.header("mcp-name", n);
                }
                let res = service
                    .handle(b.body(Full::new(Bytes::from(body.to_owned()))).unwrap())
                    .await;
                assert_eq!(res.status().as_u16(), status, "request {i}");
                let bytes = res.into_body().collect().await.unwrap().to_bytes();
                assert!(!bytes.is_empty());
            }
        }
    };
    round(4_000).await;
    let before = rss_pages();
    round(RSS_REQUESTS).await;
    let after = rss_pages();
    let grown_kib = after.saturating_sub(before) * 4;
    assert!(
        grown_kib < 2048,
        "RSS grew by {grown_kib} KiB ({before} → {after} pages)"
    );
}

/// O117 for the resource, prompt and completion operations over HTTP, each in both
/// polarities: a proper result with `resultType`, cache hints and the right status, and the
/// matching refusal with its exact code and HTTP status (O34, X4/-32021, B1).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o117_resources_prompts_and_completion_over_http_in_both_polarities() {
    let host = start("direct").await;
    let h = |method: &'static str| vec![("mcp-protocol-version", PV), ("mcp-method", method)];

    // resources/list: one resource, private with ttlMs 0 (O31).
    let (status, v) = host
        .json(
            &h("resources/list"),
            rpc(json!(1), "resources/list", json!({})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["result"]["resources"][0]["uri"], "mem://hello");
    assert_eq!(v["result"]["resources"][0]["mimeType"], "text/plain");
    assert_eq!(v["result"]["ttlMs"], 0);
    assert_eq!(v["result"]["cacheScope"], "private");
    assert_eq!(v["result"]["resultType"], "complete");
    // ... and the same method with no _meta is -32602 with 400.
    let (status, v) = host
        .json(
            &h("resources/list"),
            r#"{"jsonrpc":"2.0","id":2,"method":"resources/list","params":{}}"#.to_owned(),
        )
        .await;
    assert_eq!(
        (status, v["error"]["code"].clone()),
        (StatusCode::BAD_REQUEST, json!(-32602))
    );

    // resources/templates/list.
    let (status, v) = host
        .json(
            &h("resources/templates/list"),
            rpc(json!(3), "resources/templates/list", json!({})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(
        v["result"]["resourceTemplates"][0]["uriTemplate"],
        "mem://items/{id}"
    );
    assert_eq!(v["result"]["resultType"], "complete");
    // ... a version the server does not serve: -32022 with 400, naming both versions.
    let mut old = meta();
    old["io.modelcontextprotocol/protocolVersion"] = json!("2025-06-18");
    let (status, v) = host
        .json(
            &[
                ("mcp-protocol-version", "2025-06-18"),
                ("mcp-method", "resources/templates/list"),
            ],
            rpc(json!(4), "resources/templates/list", json!({"_meta": old})),
        )
        .await;
    assert_eq!(
        (status, v["error"]["code"].clone()),
        (StatusCode::BAD_REQUEST, json!(-32022))
    );
    assert_eq!(v["error"]["data"]["requested"], "2025-06-18");

    // resources/read: static and templated, with Mcp-Name carrying the URI.
    let (status, v) = host
        .json(
            &[
                ("mcp-protocol-version", PV),
                ("mcp-method", "resources/read"),
                ("mcp-name", "mem://items/42"),
            ],
            rpc(json!(5), "resources/read", json!({"uri": "mem://items/42"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(
        v["result"]["contents"],
        json!([{"uri": "mem://items/42", "text": "item 42"}])
    );
    assert_eq!(v["result"]["ttlMs"], 0);
    assert_eq!(v["result"]["cacheScope"], "private");
    // ... an unknown URI: -32602 with data.uri, never -32002 (O34).
    let (status, v) = host
        .json(
            &[
                ("mcp-protocol-version", PV),
                ("mcp-method", "resources/read"),
                ("mcp-name", "mem://nope"),
            ],
            rpc(json!(6), "resources/read", json!({"uri": "mem://nope"})),
        )
        .await;
    assert_eq!(v["error"]["code"], -32602, "{v}");
    assert_eq!(v["error"]["data"]["uri"], "mem://nope");
    // Like an unknown tool, an unknown URI is a result-level refusal: 200 with the error body.
    assert_eq!(status, StatusCode::OK);

    // prompts/list.
    let (status, v) = host
        .json(&h("prompts/list"), rpc(json!(7), "prompts/list", json!({})))
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["result"]["prompts"][0]["name"], "greet");
    assert_eq!(v["result"]["prompts"][0]["arguments"][0]["required"], true);
    // ... a mismatched Mcp-Method header: -32020 with 400 (D-section).
    let (status, v) = host
        .json(&h("tools/list"), rpc(json!(8), "prompts/list", json!({})))
        .await;
    assert_eq!(
        (status, v["error"]["code"].clone()),
        (StatusCode::BAD_REQUEST, json!(-32020))
    );

    // prompts/get with elicitation declared: input_required (I-section) over HTTP.
    let mut elicit = meta();
    elicit["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {"form": {}}});
    let get = |id: i64, m: Value| {
        rpc(
            json!(id),
            "prompts/get",
            json!({"name": "greet", "arguments": {"style": "haiku"}, "_meta": m}),
        )
    };
    let headers = [
        ("mcp-protocol-version", PV),
        ("mcp-method", "prompts/get"),
        ("mcp-name", "greet"),
    ];
    let (status, v) = host.json(&headers, get(9, elicit.clone())).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["result"]["resultType"], "input_required");
    assert_eq!(
        v["result"]["inputRequests"]["name"]["method"],
        "elicitation/create"
    );
    let state = v["result"]["requestState"]
        .as_str()
        .expect("state")
        .to_owned();
    let retry = rpc(
        json!(10),
        "prompts/get",
        json!({
            "name": "greet", "arguments": {"style": "haiku"}, "_meta": elicit,
            "inputResponses": {"name": {"action": "accept", "content": {"name": "Ada"}}},
            "requestState": state,
        }),
    );
    let (status, v) = host.json(&headers, retry).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["result"]["resultType"], "complete");
    assert_eq!(
        v["result"]["messages"][0]["content"]["text"],
        "Greet in haiku."
    );
    // ... without the capability: -32021 with 400 and the capability it needs (X4).
    let (status, v) = host.json(&headers, get(11, meta())).await;
    assert_eq!(
        (status, v["error"]["code"].clone()),
        (StatusCode::BAD_REQUEST, json!(-32021))
    );
    assert!(
        v["error"]["data"]["requiredCapabilities"]["elicitation"].is_object(),
        "{v}"
    );

    // completion/complete on the template variable.
    let complete = |id: i64, m: Value| {
        rpc(
            json!(id),
            "completion/complete",
            json!({
                "ref": {"type": "ref/resource", "uri": "mem://items/{id}"},
                "argument": {"name": "id", "value": "a"},
                "_meta": m,
            }),
        )
    };
    let (status, v) = host
        .json(&h("completion/complete"), complete(12, meta()))
        .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(
        v["result"]["completion"]["values"],
        json!(["alpha", "apple"])
    );
    assert_eq!(v["result"]["resultType"], "complete");
    // ... with a header that disagrees with the body's revision: -32020 with 400.
    let (status, v) = host
        .json(
            &[
                ("mcp-protocol-version", "2025-06-18"),
                ("mcp-method", "completion/complete"),
            ],
            complete(13, meta()),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{v}");
    assert_eq!(v["error"]["code"], json!(-32020), "{v}");
    host.stop().await;
}
