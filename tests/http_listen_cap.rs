//! The HTTP host's cap on open `subscriptions/listen` streams (issue #23's production bounds):
//! at `HttpConfig::max_listen_streams` every stream is served, one more is refused 503 /
//! -32603 with its id and `Retry-After: 1`, ordinary calls still pass, and a closed stream
//! frees its slot. Loopback only, every wait bounded.
#![forbid(unsafe_code)]
#![cfg(feature = "http")]

mod support;
use std::time::Duration;
use support::{EchoIn, EchoOut};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use tokio::net::TcpListener;

use strict_mcp::core::{Invocation, RegistryBuilder, ToolDef};
use strict_mcp::server::http::{serve, HttpConfig, McpHttp, DEFAULT_MAX_LISTEN_STREAMS};
use strict_mcp::server::{Server, ServerOptions};

const PV: &str = "2026-07-28";

/// The cap the tests run with: small, so the bound and one past it are cheap to reach.
const CAP: usize = 2;

struct Host {
    addr: std::net::SocketAddr,
    server: Server,
    client: Client<HttpConnector, Full<Bytes>>,
    stop: tokio::sync::oneshot::Sender<()>,
    run: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn start(max_listen_streams: usize) -> Host {
    let registry = RegistryBuilder::new()
        .tool(ToolDef::typed(
            "echo",
            |_i: Invocation, i: EchoIn| async move { Ok(EchoOut { text: i.text }) },
        ))
        .build()
        .expect("registry");
    let server = Server::new(
        registry,
        ServerOptions::new()
            .server_info("listen-cap-test", "0.0.1")
            .mode("direct"),
    )
    .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let service = McpHttp::new(
        server.clone(),
        HttpConfig {
            path: Some("/mcp".into()),
            max_listen_streams,
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
        stop,
        run,
    }
}

fn rpc(id: &str, method: &str, mut params: Value) -> String {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": PV,
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

impl Host {
    async fn send(&self, headers: &[(&str, &str)], body: String) -> Response<Incoming> {
        let mut b = Request::post(format!("http://{}/mcp", self.addr))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", PV);
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        let request = b.body(Full::new(Bytes::from(body))).unwrap();
        tokio::time::timeout(Duration::from_secs(5), self.client.request(request))
            .await
            .expect("answer in time")
            .unwrap()
    }

    /// Opens a listen stream; the response and its body, still open.
    async fn listen(&self, id: &str) -> Response<Incoming> {
        self.send(
            &[("mcp-method", "subscriptions/listen")],
            rpc(
                id,
                "subscriptions/listen",
                json!({"notifications": {"toolsListChanged": true}}),
            ),
        )
        .await
    }

    async fn echo(&self, id: &str) -> (StatusCode, Value) {
        let res = self
            .send(
                &[("mcp-method", "tools/call"), ("mcp-name", "echo")],
                rpc(
                    id,
                    "tools/call",
                    json!({"name": "echo", "arguments": {"text": "through"}}),
                ),
            )
            .await;
        let status = res.status();
        (status, body_json(res).await)
    }

    async fn stop(self) {
        self.server.shutdown(Duration::from_secs(2)).await;
        let _ = self.stop.send(());
        tokio::time::timeout(Duration::from_secs(5), self.run)
            .await
            .expect("accept loop ends")
            .unwrap()
            .unwrap();
    }
}

async fn body_json(res: Response<Incoming>) -> Value {
    let bytes = tokio::time::timeout(Duration::from_secs(5), res.into_body().collect())
        .await
        .expect("body in time")
        .unwrap()
        .to_bytes();
    serde_json::from_slice(&bytes).unwrap()
}

/// The first `data:` event of an SSE body, skipping keep-alive comments.
async fn first_event(body: &mut Incoming) -> Value {
    loop {
        let frame = tokio::time::timeout(Duration::from_secs(5), body.frame())
            .await
            .expect("frame in time")
            .expect("stream open")
            .unwrap();
        let text = String::from_utf8(frame.into_data().unwrap().to_vec()).unwrap();
        if let Some(d) = text.strip_prefix("data: ") {
            return serde_json::from_str(d.trim_end()).unwrap();
        }
    }
}

/// An open, acknowledged stream.
async fn acknowledged(res: Response<Incoming>, id: &str) -> Incoming {
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    let mut body = res.into_body();
    let ack = first_event(&mut body).await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        id
    );
    body
}

/// The refusal of a listen stream over the cap: 503, `Retry-After: 1`, and exactly this
/// JSON-RPC error with the request's id (`Cause::Overloaded`: -32603 / 503).
async fn assert_refused(res: Response<Incoming>, id: &str) {
    assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(res.headers()["content-type"], "application/json");
    assert_eq!(res.headers()["retry-after"], "1");
    assert_eq!(
        body_json(res).await,
        json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": -32603, "message": "Server busy: too many listen streams"}
        })
    );
}

#[test]
fn k_default_listen_stream_cap_is_the_named_constant() {
    assert_eq!(DEFAULT_MAX_LISTEN_STREAMS, 1024);
    assert_eq!(
        HttpConfig::default().max_listen_streams,
        DEFAULT_MAX_LISTEN_STREAMS
    );
}

/// K-section streams under the cap: `CAP` streams are acknowledged (the bound), the next one
/// is refused (one past), a call still passes at the cap, the refused request leaves the
/// open streams untouched (they still carry a list change), and closing one frees its slot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k_listen_streams_are_capped_with_a_503_and_a_closed_stream_frees_its_slot() {
    let host = start(CAP).await;
    let mut open = Vec::new();
    for i in 0..CAP {
        let id = format!("L{i}");
        let res = host.listen(&id).await;
        open.push(acknowledged(res, &id).await);
    }
    assert_refused(host.listen("over").await, "over").await;

    // Calls are not listen streams: served at the cap.
    let (status, v) = host.echo("c1").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(v["id"], "c1");
    assert_eq!(
        v["result"]["structuredContent"],
        json!({"value": {"text": "through"}})
    );

    // The open streams still work: one list change reaches both.
    host.server.replace_registry(
        RegistryBuilder::new()
            .tool(ToolDef::typed(
                "echo2",
                |_i: Invocation, i: EchoIn| async move { Ok(EchoOut { text: i.text }) },
            ))
            .build()
            .unwrap(),
    );
    for body in &mut open {
        let changed = first_event(body).await;
        assert_eq!(changed["method"], "notifications/tools/list_changed");
    }

    // Closing one stream frees its slot; the release follows the dispatch's end, so poll.
    drop(open.pop());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    let reopened = loop {
        let res = host.listen("again").await;
        if res.status() == StatusCode::OK {
            break res;
        }
        assert_refused(res, "again").await;
        assert!(
            tokio::time::Instant::now() < deadline,
            "slot not freed in 5 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let _reopened = acknowledged(reopened, "again").await;
    // Back at the cap: one past is refused again.
    assert_refused(host.listen("over2").await, "over2").await;
    drop(open);
    host.stop().await;
}

/// A cap of zero refuses every listen stream and nothing else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k_listen_stream_cap_of_zero_refuses_every_stream() {
    let host = start(0).await;
    assert_refused(host.listen("L").await, "L").await;
    let (status, v) = host.echo("c").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(v["id"], "c");
    host.stop().await;
}
