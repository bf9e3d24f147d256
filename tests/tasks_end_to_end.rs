//! Our Tasks client against our own Tasks server (`io.modelcontextprotocol/tasks`), in memory
//! and over Streamable HTTP on 127.0.0.1 (where the server checks `Mcp-Name` = `taskId` on
//! every `tasks/*` request, so each poll that succeeds proves the client's header): task
//! creation, completion with the result read against the tool's output schema, an input
//! round inside a task answered explicitly, cancel, -32021 without the declaration, unknown
//! and foreign task ids, and a follow that takes `notifications/tasks` from a listen stream.
//! Requirement ids: N11, N12, N36, N38, N41–N44, N46, N47, I15.
#![forbid(unsafe_code)]
#![cfg(all(feature = "server", feature = "http"))]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use strict_mcp::client::http::HttpTransport;
use strict_mcp::client::tasks::{TaskCall, TaskError, TrackedTask};
use strict_mcp::client::transport::InboundSink;
use strict_mcp::client::{
    BoxFuture, CallOptions, Client, ClientError, ClientOptions, Inbound, RoundInput, RpcErrorKind,
    ToolOutcome, Transport, TransportError, MAX_POLL_INTERVAL,
};
use strict_mcp::core::tasks::TaskMode;
use strict_mcp::core::{Caller, Invocation, Outcome, RegistryBuilder, ToolDef};
use strict_mcp::server::http::{serve, HttpConfig, McpHttp};
use strict_mcp::server::{Server, ServerOptions};
use strict_mcp::testing::InMemoryTransport;
use strict_mcp::wire::jsonrpc::Message;
use strict_mcp::wire::tasks::TaskStatus;

/// The longest wait for one task (they finish within a fraction of a second).
const WAIT: Duration = Duration::from_secs(30);

#[derive(Deserialize, JsonSchema)]
struct Sleep {
    ms: u64,
}

#[derive(Deserialize, JsonSchema)]
struct Nothing {}

#[derive(Serialize, JsonSchema)]
struct Text {
    text: String,
}

fn server() -> Server {
    let registry = RegistryBuilder::new()
        .tool(
            ToolDef::typed("slow", |inv: Invocation, s: Sleep| async move {
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(s.ms)) => {}
                    () = inv.cancelled() => {}
                }
                Ok(Text {
                    text: format!("slept {}", s.ms),
                })
            })
            .task(TaskMode::Optional),
        )
        .tool(
            ToolDef::typed("quick", |_: Invocation, _: Nothing| async move {
                Ok(Text {
                    text: "quick".into(),
                })
            })
            .task(TaskMode::Optional),
        )
        .tool(
            ToolDef::typed("batch", |_: Invocation, _: Nothing| async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                Ok(Text {
                    text: "batched".into(),
                })
            })
            .task(TaskMode::Required),
        )
        .tool(
            // Works a while, then asks inside the task.
            ToolDef::typed_interactive("ask_later", |inv: Invocation, _: Nothing| async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]});
                if let Ok(Some(answer)) = inv.form_answer("ok", &schema) {
                    return Ok(Outcome::Complete(Text {
                        text: format!("confirmed: {}", answer.confirmed("ok")),
                    }));
                }
                let ask = inv.elicit_form("Go ahead?", schema)?;
                Ok(Outcome::input("ok", ask))
            })
            .task(TaskMode::Optional),
        )
        .build()
        .expect("registry");
    Server::new(registry, ServerOptions::new().mode("direct")).expect("server")
}

/// A transport that counts the `tasks/get` requests it passes on.
struct Counting {
    inner: Arc<dyn Transport>,
    gets: AtomicUsize,
}

impl Counting {
    fn new(inner: Arc<dyn Transport>) -> Arc<Counting> {
        Arc::new(Counting {
            inner,
            gets: AtomicUsize::new(0),
        })
    }

    fn count(&self, message: &Message) {
        if matches!(message, Message::Request(r) if r.method == "tasks/get") {
            self.gets.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl Transport for Counting {
    fn send<'a>(&'a self, message: &'a Message) -> BoxFuture<'a, Result<(), TransportError>> {
        self.count(message);
        self.inner.send(message)
    }

    fn send_request<'a>(
        &'a self,
        message: &'a Message,
    ) -> BoxFuture<'a, Result<Option<Inbound>, TransportError>> {
        self.count(message);
        self.inner.send_request(message)
    }

    fn recv(&self) -> BoxFuture<'_, Result<Inbound, TransportError>> {
        self.inner.recv()
    }

    fn attach(&self, sink: InboundSink) -> bool {
        self.inner.attach(sink)
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        self.inner.close()
    }

    fn announces_cancellation(&self) -> bool {
        self.inner.announces_cancellation()
    }
}

fn object(v: Value) -> Option<Map<String, Value>> {
    v.as_object().cloned()
}

async fn connect(transport: Arc<dyn Transport>) -> Client {
    Client::connect(transport, ClientOptions::default())
        .await
        .expect("connect")
}

fn text_of(outcome: ToolOutcome) -> Value {
    match outcome {
        ToolOutcome::Success(r) => {
            serde_json::to_value(&r).expect("json")["structuredContent"]["value"]["text"].clone()
        }
        other => panic!("expected a success, got {other:?}"),
    }
}

async fn task_of(client: &Client, name: &str, args: Value, options: &CallOptions) -> TrackedTask {
    match client
        .call_tool_task(name, object(args), RoundInput::first(), options)
        .await
        .expect("call")
    {
        TaskCall::Task(task) => TrackedTask::new(task.task_id),
        other => panic!("expected a task, got {other:?}"),
    }
}

/// The whole walk on one connection; `gets` counts the `tasks/get` requests sent.
async fn walk(client: &Client, gets: &AtomicUsize) {
    assert!(client.tasks_advertised());
    let options = CallOptions::default();
    client.list_tools(&options).await.expect("tools/list");

    // Created, polled to completion; the result is read as the tool's result would be.
    let tracked = task_of(client, "slow", json!({"ms": 100}), &options).await;
    let done = client
        .wait_task(&tracked, WAIT, &options)
        .await
        .expect("wait");
    assert_eq!(done.task.status, TaskStatus::Completed);
    let outcome = client.task_tool_outcome("slow", &done).expect("outcome");
    assert_eq!(text_of(outcome), "slept 100");

    // An optional task tool that finishes at once answers synchronously (N38).
    let call = client
        .call_tool_task("quick", None, RoundInput::first(), &options)
        .await
        .expect("quick");
    match call {
        TaskCall::Done(outcome) => assert_eq!(text_of(outcome), "quick"),
        other => panic!("expected a plain result, got {other:?}"),
    }

    // Without the declaration no task reaches the client: a slow optional tool runs in-line,
    // a required one is -32021 (N11, N36).
    let plain = client
        .call("slow", object(json!({"ms": 1})), &options)
        .await
        .expect("plain");
    assert_eq!(
        serde_json::to_value(&plain).unwrap()["structuredContent"]["value"]["text"],
        "slept 1"
    );
    let e = client.call("batch", None, &options).await.unwrap_err();
    assert!(
        matches!(&e, ClientError::Rpc(rpc) if rpc.kind == RpcErrorKind::MissingRequiredClientCapability),
        "{e:?}"
    );
    let tracked = task_of(client, "batch", json!({}), &options).await;
    let done = client
        .wait_task(&tracked, WAIT, &options)
        .await
        .expect("wait");
    assert_eq!(done.task.status, TaskStatus::Completed);

    // Input inside a task comes back to the host; it is sent only by update_task (I15).
    let asking = CallOptions::default().capabilities(json!({"elicitation": {"form": {}}}));
    let mut tracked = task_of(client, "ask_later", json!({}), &asking).await;
    let asked = client
        .wait_task(&tracked, WAIT, &asking)
        .await
        .expect("wait");
    assert_eq!(asked.task.status, TaskStatus::InputRequired);
    let keys: Vec<String> = tracked
        .outstanding(&asked)
        .into_keys()
        .map(str::to_owned)
        .collect();
    assert_eq!(keys.len(), 1, "{keys:?}");
    let mut answers = Map::new();
    answers.insert(
        keys[0].clone(),
        json!({"action": "accept", "content": {"ok": true}}),
    );
    client
        .update_task(&mut tracked, &asked, answers, &asking)
        .await
        .expect("update");
    let done = client
        .wait_task(&tracked, WAIT, &asking)
        .await
        .expect("wait");
    assert_eq!(done.task.status, TaskStatus::Completed, "{done:?}");
    let outcome = client
        .task_tool_outcome("ask_later", &done)
        .expect("outcome");
    assert_eq!(text_of(outcome), "confirmed: true");

    // Cancelled; a second cancel of the ended task is still acknowledged (N43).
    let tracked = task_of(client, "slow", json!({"ms": 20_000}), &options).await;
    client
        .cancel_task(tracked.id(), &options)
        .await
        .expect("cancel");
    let ended = client
        .wait_task(&tracked, WAIT, &options)
        .await
        .expect("wait");
    assert_eq!(ended.task.status, TaskStatus::Cancelled);
    client
        .cancel_task(tracked.id(), &options)
        .await
        .expect("cancel again");

    // Followed on subscriptions/listen: our server grants the task id and pushes
    // notifications/tasks, so one tasks/get (right after the acknowledgement) is all the
    // follow sends; the poll backstop would come only after MAX_POLL_INTERVAL (N47).
    let tracked = task_of(client, "slow", json!({"ms": 300}), &options).await;
    let before = gets.load(Ordering::SeqCst);
    let started = std::time::Instant::now();
    let done = client
        .follow_task(&tracked, WAIT, &options)
        .await
        .expect("follow");
    assert_eq!(done.task.status, TaskStatus::Completed);
    assert_eq!(gets.load(Ordering::SeqCst) - before, 1);
    assert!(
        started.elapsed() < MAX_POLL_INTERVAL,
        "{:?}",
        started.elapsed()
    );

    // An unknown id is -32602, typed (N12).
    let e = client.get_task("no-such-task", &options).await.unwrap_err();
    assert!(matches!(e, TaskError::UnknownTask { .. }), "{e:?}");
}

#[tokio::test]
async fn n12_our_client_against_our_server_in_memory() {
    let server = server();
    let transport = Counting::new(Arc::new(InMemoryTransport::new(
        server.clone(),
        Caller::new("alice"),
    )));
    let client = connect(transport.clone()).await;
    walk(&client, &transport.gets).await;
    // Tasks are bound to their caller: another principal sees an unknown task.
    let options = CallOptions::default();
    let tracked = task_of(&client, "slow", json!({"ms": 5000}), &options).await;
    let other = connect(Arc::new(InMemoryTransport::new(
        server.clone(),
        Caller::new("mallory"),
    )))
    .await;
    let e = other.get_task(tracked.id(), &options).await.unwrap_err();
    assert!(matches!(e, TaskError::UnknownTask { .. }), "{e:?}");
    let e = other.cancel_task(tracked.id(), &options).await.unwrap_err();
    assert!(matches!(e, TaskError::UnknownTask { .. }), "{e:?}");
    let seen = client
        .get_task(tracked.id(), &options)
        .await
        .expect("owner");
    assert_eq!(seen.task.status, TaskStatus::Working);
    client
        .cancel_task(tracked.id(), &options)
        .await
        .expect("cancel");
}

#[tokio::test]
async fn n46_our_client_against_our_server_over_http() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    let host = tokio::spawn(serve(
        listener,
        McpHttp::new(server(), HttpConfig::default()),
        std::future::pending(),
    ));
    let transport = Counting::new(Arc::new(HttpTransport::new(&url, None).expect("transport")));
    let client = connect(transport.clone()).await;
    walk(&client, &transport.gets).await;
    host.abort();
}
