//! The Tasks client (`io.modelcontextprotocol/tasks`) against a Tasks server built on the
//! official TypeScript SDK v2 (`interop/node/ts_tasks_server.mjs`: `@modelcontextprotocol/
//! server` 2.4.0 with `@modelcontextprotocol/ext-tasks` 0.2.2's V2 schemas) over Streamable
//! HTTP on 127.0.0.1. The SDK's HTTP entry refuses a `tasks/*` request whose `Mcp-Name` is
//! absent or differs from `params.taskId`, so every poll that succeeds proves the header.
//!
//! Requirement ids: N11, N12, N36–N43, I15. The peer comes from `.ci/install-peers`; without
//! it the test prints why it skips and passes locally, and fails under `CI=true`. The server
//! child is killed (by its handle) and reaped however the test ends; every step is bounded.
#![forbid(unsafe_code)]
#![cfg(all(unix, feature = "http"))]

#[path = "support/interop.rs"]
mod interop;

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};
use strict_mcp::client::http::HttpTransport;
use strict_mcp::client::tasks::{TaskCall, TaskError, TrackedTask};
use strict_mcp::client::{CallOptions, Client, ClientOptions, RoundInput, ToolOutcome};
use strict_mcp::wire::tasks::{Task, TaskStatus};
use tokio::io::{AsyncBufReadExt, BufReader};

/// How long the node server may take to print its `{"listening":…}` line on a loaded machine.
const STARTUP_DEADLINE: Duration = Duration::from_secs(60);

/// The longest wait for one task (the tasks finish within a fraction of a second).
const WAIT: Duration = Duration::from_secs(30);

/// How long the killed server may take to be reaped.
const REAP_DEADLINE: Duration = Duration::from_secs(10);

fn object(v: Value) -> Option<Map<String, Value>> {
    v.as_object().cloned()
}

/// Calls `name` declaring the extension (default call options) and returns the task it
/// created; a plain result fails the test.
async fn task_call(client: &Client, name: &str, args: Option<Value>) -> Task {
    let call = client
        .call_tool_task(
            name,
            args.and_then(object),
            RoundInput::first(),
            &CallOptions::default(),
        )
        .await
        .expect(name);
    let TaskCall::Task(created) = call else {
        panic!("{name}: expected a task, got {call:?}");
    };
    created
}

#[tokio::test]
async fn n12_our_tasks_client_against_the_typescript_sdk_v2_tasks_server() {
    let Some(node) = interop::peer(".interop/node/bin/node") else {
        return;
    };
    if interop::peer("interop/node/node_modules/@modelcontextprotocol/ext-tasks/package.json")
        .is_none()
    {
        return;
    }
    let mut child = tokio::process::Command::new(node)
        .arg("interop/node/ts_tasks_server.mjs")
        .args(["--http", "0"])
        .current_dir(interop::root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("the server starts");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    let read = tokio::time::timeout(STARTUP_DEADLINE, stdout.read_line(&mut line)).await;
    assert!(
        matches!(read, Ok(Ok(n)) if n > 0),
        "no listening line: {read:?}"
    );
    let url = serde_json::from_str::<Value>(&line).expect("json")["listening"]
        .as_str()
        .expect("url")
        .to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");

    let transport = Arc::new(HttpTransport::new(&url, None).expect("transport"));
    let client = Client::connect(transport, ClientOptions::default())
        .await
        .expect("connect");
    assert!(
        client.tasks_advertised(),
        "the TS server advertises the extension"
    );
    let options = CallOptions::default();
    client.list_tools(&options).await.expect("tools/list");

    // A declaring call becomes a task; polls (Mcp-Name = taskId) see it complete.
    let created = task_call(&client, "slow", Some(json!({"ms": 200}))).await;
    assert_eq!(created.status, TaskStatus::Working);
    let tracked = TrackedTask::new(created.task_id.clone());
    let done = client
        .wait_task(&tracked, WAIT, &options)
        .await
        .expect("wait");
    assert_eq!(done.task.status, TaskStatus::Completed);
    let outcome = client.task_tool_outcome("slow", &done).expect("outcome");
    let ToolOutcome::Success(result) = outcome else {
        panic!("expected a success, got {outcome:?}");
    };
    assert_eq!(
        serde_json::to_value(&result).expect("json")["content"],
        json!([{"type": "text", "text": "slept 200"}])
    );

    // The same tool without the declaration runs in-line: never a task (N11).
    let plain = client
        .call("slow", object(json!({"ms": 1})), &options)
        .await
        .expect("plain call");
    assert_eq!(
        serde_json::to_value(&plain).expect("json")["content"][0]["text"],
        "slept 1"
    );

    // Input is returned to the host and answered explicitly (I15, N42).
    let created = task_call(&client, "ask", None).await;
    let mut tracked = TrackedTask::new(created.task_id.clone());
    let asked = client
        .wait_task(&tracked, WAIT, &options)
        .await
        .expect("wait");
    assert_eq!(asked.task.status, TaskStatus::InputRequired);
    assert_eq!(
        tracked.outstanding(&asked).into_keys().collect::<Vec<_>>(),
        ["confirm"]
    );
    let mut answers = Map::new();
    answers.insert(
        "confirm".into(),
        json!({"action": "accept", "content": {"ok": true}}),
    );
    client
        .update_task(&mut tracked, &asked, answers, &options)
        .await
        .expect("update");
    let done = client
        .wait_task(&tracked, WAIT, &options)
        .await
        .expect("wait");
    assert_eq!(done.task.status, TaskStatus::Completed);
    let ToolOutcome::Success(result) = client.task_tool_outcome("ask", &done).expect("outcome")
    else {
        panic!("expected a success");
    };
    assert_eq!(
        serde_json::to_value(&result).expect("json")["content"][0]["text"],
        "confirmed: true"
    );

    // A JSON-RPC failure of the work is a failed task with its error.
    let created = task_call(&client, "broken", None).await;
    let failed = client
        .wait_task(&TrackedTask::new(created.task_id.clone()), WAIT, &options)
        .await
        .expect("wait");
    assert_eq!(failed.task.status, TaskStatus::Failed);

    // Cancel: acknowledged, then seen cancelled; a second cancel of the ended task is acked.
    // The task sleeps 60 s: still working at the cancel, however slow the machine.
    let created = task_call(&client, "slow", Some(json!({"ms": 60000}))).await;
    client
        .cancel_task(&created.task_id, &options)
        .await
        .expect("cancel");
    let seen = client
        .get_task(&created.task_id, &options)
        .await
        .expect("get");
    assert_eq!(seen.task.status, TaskStatus::Cancelled);
    client
        .cancel_task(&created.task_id, &options)
        .await
        .expect("cancel again");

    // The SDK grants no task notifications on subscriptions/listen: a follow polls instead.
    let created = task_call(&client, "slow", Some(json!({"ms": 200}))).await;
    let done = client
        .follow_task(&TrackedTask::new(created.task_id.clone()), WAIT, &options)
        .await
        .expect("follow");
    assert_eq!(done.task.status, TaskStatus::Completed);

    // An unknown task id is -32602, typed.
    let e = client.get_task("no-such-task", &options).await.unwrap_err();
    assert!(
        matches!(&e, TaskError::UnknownTask { task_id, error } if task_id == "no-such-task" && error.code == -32602),
        "{e:?}"
    );

    let _ = child.start_kill();
    tokio::time::timeout(REAP_DEADLINE, child.wait())
        .await
        .expect("the server exits after SIGKILL")
        .expect("reap");
}
