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
#[path = "../examples/conformance/tasks.rs"]
mod tasks;

use std::sync::Arc;

use serde_json::{json, Map, Value};
use strict_mcp::client::http::HttpTransport;
use strict_mcp::client::stdio::{CommandSpec, StdioTransport};
use strict_mcp::client::tasks::{with_tasks, TaskCall, TaskError, TrackedTask};
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
use strict_mcp::wire::tasks::{DetailedTask, TaskDetail, TaskStatus};
use support::evidence::{Recorder, RecordingTransport};
use tokio::net::TcpListener;

/// The conformance fixtures in direct mode with the Tasks extension's tools, as the
/// conformance example serves them.
fn fixture_server() -> Server {
    let mut builder = fixtures::builder();
    for tool in tasks::tools() {
        builder = builder.tool(tool);
    }
    Server::new(
        builder.build().expect("the fixtures are valid"),
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
                &CommandSpec::new(support::example_binary("conformance_server"))
                    .arg("--tasks")
                    .arg("--stdio"),
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

// ---------------------------------------------------------------------------------------------
// The extension methods (issue #21): Tasks (`tasks/*`) and Skills, through the typed methods

/// How many `tasks/get` polls a test waits for a status, [`POLL_PAUSE`] apart (5 s: the
/// fixtures park within 100 ms and finish within 200 ms of an answer).
const POLLS: usize = 100;
/// The pause between two polls.
const POLL_PAUSE: std::time::Duration = std::time::Duration::from_millis(50);

/// A `tools/call` that the server made a task: its id.
async fn start_task(client: &Client, tool: &str, arguments: Value, o: &CallOptions) -> String {
    match client
        .call_tool_task(tool, Some(obj(arguments)), RoundInput::first(), o)
        .await
        .expect("tools/call")
    {
        TaskCall::Task(task) => task.task_id,
        TaskCall::Done(outcome) => panic!("{tool}: not a task: {outcome:?}"),
    }
}

/// Polls `tasks/get` until the task reports `status`.
async fn until(client: &Client, id: &str, status: TaskStatus, o: &CallOptions) -> DetailedTask {
    for _ in 0..POLLS {
        let task = client.get_task(id, o).await.expect("tasks/get");
        assert_eq!(task.task.task_id, id);
        if task.task.status == status {
            return task;
        }
        tokio::time::sleep(POLL_PAUSE).await;
    }
    panic!("task {id} never reached {status:?}");
}

/// Every extension method of the client answered with a result (N15, N20, N25, N27, N41–N43).
async fn every_extension_method_answers(via: Via, rec: Arc<Recorder>) {
    // Elicitation too: the `confirm_delete` fixture asks through it.
    let o = with_tasks(&CallOptions {
        capabilities: Some(json!({"elicitation": {}})),
        ..CallOptions::default()
    })
    .expect("declare Tasks");
    let (client, _server) = connect(via, &rec).await;
    assert!(client.tasks_advertised(), "O119: the task tools are served");
    let page = client
        .list_skills_page(None, &o)
        .await
        .expect("skills/list");
    assert_eq!(page.skills[0].uri, "skill://pdf-processing/SKILL.md");
    let entry = client
        .get_skill("skill://pdf-processing/SKILL.md", &o)
        .await
        .expect("skills/get");
    assert_eq!(entry.uri, "skill://pdf-processing/SKILL.md");
    let dir = client
        .read_directory_page("skill://pdf-processing", None, &o)
        .await
        .expect("resources/directory/read");
    assert!(!dir.resources.is_empty());
    let slow = start_task(&client, "slow_compute", json!({"seconds": 30}), &o).await;
    until(&client, &slow, TaskStatus::Working, &o).await;
    client.cancel_task(&slow, &o).await.expect("tasks/cancel");
    until(&client, &slow, TaskStatus::Cancelled, &o).await;
    let asking = start_task(&client, "confirm_delete", json!({"filename": "a.txt"}), &o).await;
    let asked = until(&client, &asking, TaskStatus::InputRequired, &o).await;
    let TaskDetail::InputRequired { input_requests } = &asked.detail else {
        panic!("not input_required: {asked:?}");
    };
    let answers: Map<String, Value> = input_requests
        .keys()
        .map(|k| {
            (
                k.clone(),
                json!({"action": "accept", "content": {"confirm": true}}),
            )
        })
        .collect();
    let mut tracked = TrackedTask::new(asking.clone());
    client
        .update_task(&mut tracked, &asked, answers, &o)
        .await
        .expect("tasks/update");
    let done = until(&client, &asking, TaskStatus::Completed, &o).await;
    let TaskDetail::Completed { result } = &done.detail else {
        panic!("not completed: {done:?}");
    };
    assert_eq!(result["content"][0]["text"], "Deleted a.txt.", "{result:?}");
    client.close().await;
}

fn assert_unknown_task<T: std::fmt::Debug>(method: &str, got: Result<T, TaskError>) {
    match got {
        Err(TaskError::UnknownTask { task_id, error }) => {
            assert_eq!(task_id, "no-such-task");
            assert_eq!(
                (error.method.as_str(), error.code),
                (method, -32602),
                "{error:?}"
            );
        }
        other => panic!("{method}: expected the unknown-task refusal, got {other:?}"),
    }
}

/// Every extension method of the client refused by the server with its typed error: an
/// unknown task (-32602, `TaskError::UnknownTask`), an unknown skill or a bad cursor (-32602,
/// `ClientError::Rpc`).
async fn every_extension_method_refused(via: Via, rec: Arc<Recorder>) {
    let o = with_tasks(&CallOptions::default()).expect("declare Tasks");
    let (client, _server) = connect(via, &rec).await;
    assert_refused(
        "skills/list",
        client.list_skills_page(Some("not-a-cursor"), &o).await,
        -32602,
    );
    assert_refused(
        "skills/get",
        client
            .get_skill(
                "skill://mcp-conformance-nonexistent-skill-9f3a2b/SKILL.md",
                &o,
            )
            .await,
        -32602,
    );
    assert_refused(
        "resources/directory/read",
        client
            .read_directory_page("skill://mcp-conformance-nonexistent-skill-9f3a2b", None, &o)
            .await,
        -32602,
    );
    assert_unknown_task("tasks/get", client.get_task("no-such-task", &o).await);
    assert_unknown_task("tasks/cancel", client.cancel_task("no-such-task", &o).await);
    // An update is checked against what the task asked: one asked of a task the server
    // does not know (a fabricated `input_required` for the id) reaches the server.
    let asked = DetailedTask::read(&json!({
        "taskId": "no-such-task", "status": "input_required",
        "createdAt": "2026-07-28T00:00:00Z", "lastUpdatedAt": "2026-07-28T00:00:00Z",
        "ttlMs": null,
        "inputRequests": {"confirm": {"method": "elicitation/create", "params": {
            "mode": "form", "message": "ok?",
            "requestedSchema": {"type": "object", "properties": {}}}}}
    }))
    .expect("a DetailedTask");
    let mut tracked = TrackedTask::new("no-such-task");
    assert_unknown_task(
        "tasks/update",
        client
            .update_task(
                &mut tracked,
                &asked,
                obj(json!({"confirm": {"action": "accept", "content": {}}})),
                &o,
            )
            .await,
    );
    client.close().await;
}

/// O115, O119, issue #21: every extension method of the stdio client, answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o115_stdio_client_every_extension_method_answers() {
    every_extension_method_answers(Via::Stdio, support::evidence::recorder!()).await;
}

/// O115, issue #21: every extension method of the stdio client, refused with its typed error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o115_stdio_client_every_extension_method_refused() {
    every_extension_method_refused(Via::Stdio, support::evidence::recorder!()).await;
}

/// O115, O119, issue #21: every extension method of the HTTP client, answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o115_http_client_every_extension_method_answers() {
    every_extension_method_answers(Via::Http, support::evidence::recorder!()).await;
}

/// O115, issue #21: every extension method of the HTTP client, refused with its typed error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o115_http_client_every_extension_method_refused() {
    every_extension_method_refused(Via::Http, support::evidence::recorder!()).await;
}

/// O115, O119, issue #21: every extension method of the in-memory client, answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o115_in_memory_client_every_extension_method_answers() {
    every_extension_method_answers(Via::InMemory, support::evidence::recorder!()).await;
}

/// O115, issue #21: every extension method of the in-memory client, refused with its typed
/// error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o115_in_memory_client_every_extension_method_refused() {
    every_extension_method_refused(Via::InMemory, support::evidence::recorder!()).await;
}
