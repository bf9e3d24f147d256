//! Contract evidence for the client transports (O115, O117): the strict client's typed
//! methods over the stdio transport (the conformance server binary as its child), the HTTP
//! transport (our server on 127.0.0.1) and the in-memory transport, each answered with a
//! result (positive) and refused by the server with a typed error (negative). A
//! [`RecordingTransport`] around the client's transport records what was actually sent and
//! how each reply ended.

#![forbid(unsafe_code)]

#[path = "../examples/conformance/fixtures.rs"]
mod fixtures;
mod support;

use std::sync::Arc;

use serde_json::{json, Map, Value};
use strict_mcp::client::http::HttpTransport;
use strict_mcp::client::stdio::{CommandSpec, StdioTransport};
use strict_mcp::client::{
    CallOptions, Client, ClientError, ClientOptions, ConnectError, RoundInput, ToolOutcome,
    Transport,
};
use strict_mcp::core::Caller;
use strict_mcp::server::http::{serve, HttpConfig, McpHttp};
use strict_mcp::server::{Server, ServerOptions};
use strict_mcp::testing::InMemoryTransport;
use strict_mcp::wire::listen::Filter;
use strict_mcp::wire::result::Method;
use support::evidence::{Recorder, RecordingTransport};
use tokio::net::TcpListener;

/// The conformance fixtures in direct mode, as the conformance example serves them.
fn fixture_server() -> Server {
    Server::new(
        fixtures::registry(),
        ServerOptions::new()
            .server_info("strict-mcp-conformance", "0.0.0")
            .mode("direct"),
    )
    .expect("server")
}

/// The three client transports of the contract.
#[derive(Clone, Copy)]
enum Via {
    Stdio,
    Http,
    InMemory,
}

impl Via {
    fn id(self) -> &'static str {
        match self {
            Via::Stdio => "stdio-client",
            Via::Http => "http-client",
            Via::InMemory => "in-memory-client",
        }
    }
}

/// A connected client and, for the in-process transports, its server.
async fn connect(via: Via, rec: &Arc<Recorder>) -> (Client, Option<Server>) {
    let server = fixture_server();
    let handle = server.clone();
    let inner: Arc<dyn Transport> = match via {
        Via::Stdio => Arc::new(
            StdioTransport::spawn(
                &CommandSpec::new(support::example_binary("conformance_server")).arg("--stdio"),
            )
            .expect("spawn the conformance server"),
        ),
        Via::Http => {
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let addr = listener.local_addr().expect("addr");
            let service = McpHttp::new(
                server,
                HttpConfig {
                    path: Some("/mcp".into()),
                    ..HttpConfig::default()
                },
            );
            tokio::spawn(serve(listener, service, std::future::pending()));
            Arc::new(HttpTransport::new(&format!("http://{addr}/mcp"), None).expect("transport"))
        }
        Via::InMemory => Arc::new(InMemoryTransport::new(server, Caller::new("t"))),
    };
    let recording = Arc::new(RecordingTransport::new(inner, via.id(), Arc::clone(rec)));
    let client = Client::connect(recording, ClientOptions::default())
        .await
        .expect("connect (server/discover)");
    (client, (!matches!(via, Via::Stdio)).then_some(handle))
}

/// A stdio peer that answers the first request (the client's discovery) with -32022.
fn refusing_stdio_peer() -> CommandSpec {
    let reply = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["1999-01-01"],"requested":"2026-07-28"}}}"#;
    CommandSpec::new("sh")
        .arg("-c")
        .arg(format!("read line; echo '{reply}'; sleep 5"))
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}

/// Every typed method answers with a result.
async fn every_method_answers(via: Via, rec: Arc<Recorder>) {
    let o = CallOptions::default();
    let (client, _server) = connect(via, &rec).await;
    assert_eq!(
        client.discovery().result.supported_versions,
        vec!["2026-07-28".to_owned()]
    );
    let tools = client.list_tools(&o).await.expect("tools/list");
    assert!(tools.iter().any(|t| t.name == "test_simple_text"));
    match client
        .call_tool("test_simple_text", None, RoundInput::first(), &o)
        .await
        .expect("tools/call")
    {
        ToolOutcome::Success(_) => {}
        other => panic!("tools/call: {other:?}"),
    }
    assert!(!client
        .list_resources(&o)
        .await
        .expect("resources/list")
        .is_empty());
    assert!(!client
        .list_resource_templates(&o)
        .await
        .expect("resources/templates/list")
        .is_empty());
    let read = client
        .read_resource("test://static-text", &o)
        .await
        .expect("resources/read");
    assert_eq!(read.contents.len(), 1);
    assert!(!client
        .list_prompts(&o)
        .await
        .expect("prompts/list")
        .is_empty());
    let prompt = client
        .get_prompt("test_simple_prompt", None, &o)
        .await
        .expect("prompts/get");
    assert!(!prompt.messages.is_empty());
    client
        .complete_argument(
            obj(
                json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                        "argument": {"name": "arg1", "value": ""}}),
            ),
            &o,
        )
        .await
        .expect("completion/complete");
    let filter = Filter {
        tools_list_changed: true,
        ..Filter::default()
    };
    let stream = client
        .listen(filter, &o)
        .await
        .expect("subscriptions/listen");
    assert!(stream.effective_filter().tools_list_changed);
    drop(stream);
    client.close().await;
}

fn assert_refused<T: std::fmt::Debug>(method: &str, got: Result<T, ClientError>, code: i64) {
    match got {
        Err(ClientError::Rpc(e)) => {
            assert_eq!((e.method.as_str(), e.code), (method, code), "{e:?}");
        }
        other => panic!("{method}: expected the server's error {code}, got {other:?}"),
    }
}

/// Every method refused by the server comes back as the typed `ClientError::Rpc`.
async fn every_method_refused(via: Via, rec: Arc<Recorder>) {
    let o = CallOptions::default();
    let (client, server) = connect(via, &rec).await;
    let bad_cursor = || obj(json!({"cursor": "not-a-cursor"}));
    for (method, name) in [
        (Method::ToolsList, "tools/list"),
        (Method::ResourcesList, "resources/list"),
        (Method::ResourcesTemplatesList, "resources/templates/list"),
        (Method::PromptsList, "prompts/list"),
    ] {
        assert_refused(name, client.request(method, bad_cursor(), &o).await, -32602);
    }
    assert_refused(
        "tools/call",
        client
            .call_tool("no_such_tool", None, RoundInput::first(), &o)
            .await,
        -32602,
    );
    assert_refused(
        "resources/read",
        client.read_resource("test://no-such", &o).await,
        -32602,
    );
    assert_refused(
        "prompts/get",
        client.get_prompt("no_such_prompt", None, &o).await,
        -32602,
    );
    assert_refused(
        "completion/complete",
        client
            .complete_argument(
                obj(
                    json!({"ref": {"type": "ref/prompt", "name": "no_such_prompt"},
                            "argument": {"name": "arg1", "value": ""}}),
                ),
                &o,
            )
            .await,
        -32602,
    );
    assert_refused(
        "subscriptions/listen",
        client
            .request(
                Method::SubscriptionsListen,
                obj(json!({"notifications": 7})),
                &o,
            )
            .await,
        -32602,
    );
    // server/discover: a well-formed client request is always served, so the refusal comes
    // from a server that is shutting down (in process) or a peer that does not serve this
    // revision (stdio, scripted).
    match server {
        Some(server) => {
            server.shutdown(std::time::Duration::from_secs(1)).await;
            let got = client.request(Method::ServerDiscover, Map::new(), &o).await;
            match got {
                Err(ClientError::Rpc(e)) => assert_eq!(e.method, "server/discover", "{e:?}"),
                other => panic!("server/discover after shutdown: {other:?}"),
            }
            client.close().await;
        }
        None => {
            client.close().await;
            let inner: Arc<dyn Transport> =
                Arc::new(StdioTransport::spawn(&refusing_stdio_peer()).expect("spawn sh"));
            let recording = Arc::new(RecordingTransport::new(inner, via.id(), Arc::clone(&rec)));
            // The peer's -32022 lists no revision this client speaks, so connect ends with
            // the typed refusal at once (B15: no retry can help); the recorder holds the
            // -32022 reply itself.
            match Client::connect(recording, ClientOptions::default()).await {
                Err(ConnectError::UnsupportedVersions { versions }) => {
                    assert_eq!(versions, ["1999-01-01"])
                }
                other => panic!("connect to a refusing peer: {other:?}"),
            }
        }
    }
}

/// O115, O117: every method of the stdio client (child process), answered with a result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o115_stdio_client_every_method_answers() {
    every_method_answers(Via::Stdio, support::evidence::recorder!()).await;
}

/// O115, O117: every method of the stdio client (child process), refused by the server as `ClientError::Rpc`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o115_stdio_client_every_method_refused() {
    every_method_refused(Via::Stdio, support::evidence::recorder!()).await;
}

/// O115, O117: every method of the HTTP client, answered with a result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o115_http_client_every_method_answers() {
    every_method_answers(Via::Http, support::evidence::recorder!()).await;
}

/// O115, O117: every method of the HTTP client, refused by the server as `ClientError::Rpc`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o115_http_client_every_method_refused() {
    every_method_refused(Via::Http, support::evidence::recorder!()).await;
}

/// O115, O117: every method of the in-memory client, answered with a result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o115_in_memory_client_every_method_answers() {
    every_method_answers(Via::InMemory, support::evidence::recorder!()).await;
}

/// O115, O117: every method of the in-memory client, refused by the server as `ClientError::Rpc`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o115_in_memory_client_every_method_refused() {
    every_method_refused(Via::InMemory, support::evidence::recorder!()).await;
}
