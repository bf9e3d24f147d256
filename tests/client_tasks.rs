//! The Tasks client (`io.modelcontextprotocol/tasks`) against scripted fake servers: a
//! message-level fake for every task state and error with the exact bytes the client sends,
//! and a raw HTTP fake on loopback for the `Mcp-Name` header. Requirement ids: N11, N12,
//! N36–N44 (SEP-2663), I15 (input is never answered on its own).

#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Map, Value};
use strict_mcp::client::tasks::{TaskCall, TaskError, TrackedTask};
use strict_mcp::client::{
    BoxFuture, CallOptions, Client, ClientError, ClientOptions, Inbound, InvalidResult, RoundInput,
    ToolOutcome, Transport, TransportError, MAX_POLL_INTERVAL, TTL_GRACE,
};
use strict_mcp::codec::{decode, IngressLimits};
use strict_mcp::wire::jsonrpc::{Message, Request};
use strict_mcp::wire::result::ResultError;
use strict_mcp::wire::tasks::{DetailedTask, TaskStatus};
use tokio::sync::mpsc;

// ---------------------------------------------------------------------------------------------
// A scripted fake server

type Script = Box<dyn Fn(&Request) -> Option<String> + Send + Sync>;

struct Fake {
    script: Script,
    tx: mpsc::UnboundedSender<Result<Inbound, TransportError>>,
    rx: tokio::sync::Mutex<mpsc::UnboundedReceiver<Result<Inbound, TransportError>>>,
    sent: Mutex<Vec<(tokio::time::Instant, Message)>>,
}

impl Fake {
    /// A fake that discovers with the Tasks extension advertised and answers every other
    /// request with `script`'s result or error object text (`None`: no answer).
    fn new(script: impl Fn(&Request) -> Option<String> + Send + Sync + 'static) -> Arc<Fake> {
        let (tx, rx) = mpsc::unbounded_channel();
        Arc::new(Fake {
            script: Box::new(script),
            tx,
            rx: tokio::sync::Mutex::new(rx),
            sent: Mutex::new(Vec::new()),
        })
    }

    /// Every request after discovery: method and exact params text.
    fn requests(&self) -> Vec<(String, String)> {
        self.sent
            .lock()
            .unwrap()
            .iter()
            .filter_map(|(_, m)| match m {
                Message::Request(r) if r.method != "server/discover" => Some((
                    r.method.clone(),
                    r.params
                        .as_ref()
                        .map(|p| p.get().to_owned())
                        .unwrap_or_default(),
                )),
                _ => None,
            })
            .collect()
    }

    /// When each request of `method` was sent.
    fn times(&self, method: &str) -> Vec<tokio::time::Instant> {
        self.sent
            .lock()
            .unwrap()
            .iter()
            .filter_map(|(t, m)| match m {
                Message::Request(r) if r.method == method => Some(*t),
                _ => None,
            })
            .collect()
    }

    fn notifications(&self) -> Vec<String> {
        self.sent
            .lock()
            .unwrap()
            .iter()
            .filter_map(|(_, m)| match m {
                Message::Notification(n) => Some(n.method.clone()),
                _ => None,
            })
            .collect()
    }
}

impl Transport for Fake {
    fn send<'a>(&'a self, message: &'a Message) -> BoxFuture<'a, Result<(), TransportError>> {
        Box::pin(async move {
            self.sent
                .lock()
                .unwrap()
                .push((tokio::time::Instant::now(), message.clone()));
            if let Message::Request(r) = message {
                let answer = if r.method == "server/discover" {
                    Some(format!(r#"{{"result":{DISCOVER}}}"#))
                } else {
                    (self.script)(r)
                };
                // Each line of `answer` is `{"result":…}` or `{"error":…}` (a response to `r`)
                // or `{"method":…}` (a notification); the envelope is added here.
                for answer in answer.iter().flat_map(|a| a.lines()) {
                    let line = if answer.starts_with(r#"{"method""#) {
                        format!(r#"{{"jsonrpc":"2.0",{}"#, &answer[1..])
                    } else {
                        format!(
                            r#"{{"jsonrpc":"2.0","id":{},{}"#,
                            r.id.token(),
                            &answer[1..]
                        )
                    };
                    let inbound = match decode(line.as_bytes(), &IngressLimits::CLIENT) {
                        Ok(m) => Inbound::Message(m),
                        Err(rejection) => Inbound::Rejected(rejection),
                    };
                    let _ = self.tx.send(Ok(inbound));
                }
            }
            Ok(())
        })
    }

    fn recv(&self) -> BoxFuture<'_, Result<Inbound, TransportError>> {
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

const DISCOVER: &str = r#"{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{},"extensions":{"io.modelcontextprotocol/tasks":{}}},"ttlMs":0,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"fake","version":"1"}}}"#;

/// The `_meta` every request of a call declaring only the Tasks extension carries.
const TASKS_META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},"io.modelcontextprotocol/clientInfo":{"name":"strict-mcp","version":"0.1.0"}}"#;

fn result(v: Value) -> Option<String> {
    Some(json!({ "result": v }).to_string())
}

fn error(code: i64, message: &str) -> Option<String> {
    Some(json!({"error": {"code": code, "message": message}}).to_string())
}

/// A task in `status` with the fields every task carries, plus `extra`.
fn task(id: &str, status: &str, extra: Value) -> Value {
    let mut t = json!({
        "taskId": id,
        "status": status,
        "createdAt": "2026-07-28T10:00:00Z",
        "lastUpdatedAt": "2026-07-28T10:00:01Z",
        "ttlMs": 60000,
    });
    for (k, v) in extra.as_object().cloned().unwrap_or_default() {
        t[k] = v;
    }
    t
}

fn get_result(id: &str, status: &str, extra: Value) -> Option<String> {
    let mut t = task(id, status, extra);
    t["resultType"] = json!("complete");
    result(t)
}

fn created(id: &str) -> Option<String> {
    let mut t = task(id, "working", json!({"pollIntervalMs": 100}));
    t["resultType"] = json!("task");
    result(t)
}

fn ack() -> Option<String> {
    result(json!({"resultType": "complete"}))
}

fn elicit(message: &str) -> Value {
    json!({"method": "elicitation/create", "params": {"mode": "form", "message": message,
        "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}})
}

/// `wait_task` for the fakes' one task, `t-1`, with default call options.
async fn wait_t1(client: &Client, within: Duration) -> Result<DetailedTask, TaskError> {
    client
        .wait_task(&TrackedTask::new("t-1"), within, &CallOptions::default())
        .await
}

async fn connect(fake: &Arc<Fake>) -> Client {
    Client::connect(fake.clone(), ClientOptions::default())
        .await
        .expect("connect")
}

fn accept() -> Value {
    json!({"action": "accept", "content": {"ok": true}})
}

fn answers(pairs: &[(&str, Value)]) -> Map<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

/// Counts calls per method inside a script.
#[derive(Default)]
struct Counter(AtomicUsize);

impl Counter {
    fn next(&self) -> usize {
        self.0.fetch_add(1, Ordering::SeqCst)
    }
}

// ---------------------------------------------------------------------------------------------
// Creating a task through a normal call

#[tokio::test]
async fn n12_n36_a_declaring_call_sends_the_extension_and_a_task_result_is_a_typed_handle() {
    let fake = Fake::new(|r| match r.method.as_str() {
        "tools/call" => created("t-1"),
        _ => None,
    });
    let client = connect(&fake).await;
    assert!(client.tasks_advertised());
    let args = json!({"n": 1}).as_object().cloned();
    let call = client
        .call_tool_task("slow", args, RoundInput::first(), &CallOptions::default())
        .await
        .expect("call");
    let TaskCall::Task(task) = call else {
        panic!("expected a task, got {call:?}");
    };
    assert_eq!(task.task_id, "t-1");
    assert_eq!(task.status, TaskStatus::Working);
    assert_eq!(
        fake.requests(),
        [(
            "tools/call".to_owned(),
            format!(r#"{{"_meta":{TASKS_META},"arguments":{{"n":1}},"name":"slow"}}"#)
        )]
    );
}

#[tokio::test]
async fn n38_a_declaring_call_handles_the_immediate_result_and_keeps_other_capabilities() {
    let fake = Fake::new(|r| match r.method.as_str() {
        "tools/call" => {
            result(json!({"resultType": "complete", "content": [{"type": "text", "text": "now"}]}))
        }
        _ => None,
    });
    let client = connect(&fake).await;
    let options = CallOptions::default().capabilities(json!({"elicitation": {"form": {}}}));
    let call = client
        .call_tool_task("quick", None, RoundInput::first(), &options)
        .await
        .expect("call");
    assert!(
        matches!(call, TaskCall::Done(ToolOutcome::Success(_))),
        "{call:?}"
    );
    let (_, params) = &fake.requests()[0];
    assert!(
        params.starts_with(r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}},"extensions":{"io.modelcontextprotocol/tasks":{}}},"#),
        "{params}"
    );
}

#[tokio::test]
async fn n11_a_call_that_did_not_declare_the_extension_never_accepts_a_task() {
    let fake = Fake::new(|r| match r.method.as_str() {
        "tools/call" => created("t-1"),
        _ => None,
    });
    let client = connect(&fake).await;
    let e = client
        .call("slow", None, &CallOptions::default())
        .await
        .expect_err("a task to a non-declaring call is invalid");
    assert!(
        matches!(
            &e,
            ClientError::Invalid(InvalidResult::Result { error: ResultError::UnknownResultType(t), .. }) if t == "task"
        ),
        "{e:?}"
    );
    let (_, params) = &fake.requests()[0];
    assert!(
        !params.contains("io.modelcontextprotocol/tasks"),
        "{params}"
    );
}

#[tokio::test]
async fn n38_a_call_that_cannot_take_a_task_refuses_to_declare_the_extension() {
    let fake = Fake::new(|r| match r.method.as_str() {
        "tools/call" => created("t-1"),
        _ => None,
    });
    let client = connect(&fake).await;
    let declaring = CallOptions::default()
        .capabilities(json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}));
    let e = client
        .call_tool("slow", None, RoundInput::first(), &declaring)
        .await
        .expect_err("a ToolOutcome cannot hold a task");
    assert!(matches!(e, ClientError::Request(_)), "{e:?}");
    let e = client
        .call_tool_exact("slow", None, RoundInput::first(), &declaring)
        .await
        .expect_err("nor can the exact variant");
    assert!(matches!(e, ClientError::Request(_)), "{e:?}");
    assert!(fake.requests().is_empty(), "{:?}", fake.requests());
}

#[tokio::test]
async fn n39_a_task_result_missing_its_task_fields_is_invalid() {
    let fake = Fake::new(|r| match r.method.as_str() {
        "tools/call" => result(json!({"resultType": "task", "status": "working"})),
        _ => None,
    });
    let client = connect(&fake).await;
    let e = client
        .call_tool_task("slow", None, RoundInput::first(), &CallOptions::default())
        .await
        .expect_err("no taskId");
    assert!(
        matches!(&e, TaskError::Invalid { method, .. } if method == "tools/call"),
        "{e:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Polling

#[tokio::test(start_paused = true)]
async fn n41_n44_wait_polls_until_completed_at_the_servers_interval() {
    let gets = Arc::new(Counter::default());
    let g = gets.clone();
    let fake = Fake::new(move |r| match r.method.as_str() {
        "tasks/get" => match g.next() {
            0 | 1 => get_result("t-1", "working", json!({"pollIntervalMs": 700})),
            _ => get_result(
                "t-1",
                "completed",
                json!({"result": {"content": [{"type": "text", "text": "done"}]}}),
            ),
        },
        _ => None,
    });
    let client = connect(&fake).await;
    let tracked = TrackedTask::new("t-1");
    let mut seen = Vec::new();
    let task = client
        .wait_task_with(
            &tracked,
            Duration::from_secs(30),
            &CallOptions::default(),
            |t| seen.push(t.task.status),
        )
        .await
        .expect("wait");
    assert_eq!(task.task.status, TaskStatus::Completed);
    // Every poll's state is shown to the host, the last one included.
    assert_eq!(
        seen,
        [
            TaskStatus::Working,
            TaskStatus::Working,
            TaskStatus::Completed
        ]
    );
    let times = fake.times("tasks/get");
    assert_eq!(times.len(), 3);
    assert_eq!(times[1] - times[0], Duration::from_millis(700));
    assert_eq!(times[2] - times[1], Duration::from_millis(700));
    assert_eq!(
        fake.requests()[0],
        (
            "tasks/get".to_owned(),
            format!(r#"{{"_meta":{TASKS_META},"taskId":"t-1"}}"#)
        )
    );
}

#[tokio::test(start_paused = true)]
async fn wait_without_a_hint_backs_off_by_doubling() {
    let gets = Arc::new(Counter::default());
    let g = gets.clone();
    let fake = Fake::new(move |r| match r.method.as_str() {
        "tasks/get" => match g.next() {
            0..=3 => get_result("t-1", "working", json!({})),
            _ => get_result("t-1", "cancelled", json!({})),
        },
        _ => None,
    });
    let client = connect(&fake).await;
    let task = wait_t1(&client, Duration::from_secs(30))
        .await
        .expect("wait");
    assert_eq!(task.task.status, TaskStatus::Cancelled);
    let times = fake.times("tasks/get");
    let gaps: Vec<u128> = times
        .windows(2)
        .map(|w| (w[1] - w[0]).as_millis())
        .collect();
    assert_eq!(gaps, [250, 500, 1000, 2000]);
}

#[tokio::test(start_paused = true)]
async fn a_wait_never_polls_past_its_deadline() {
    let fake = Fake::new(|r| match r.method.as_str() {
        "tasks/get" => get_result("t-1", "working", json!({"pollIntervalMs": 1000})),
        _ => None,
    });
    let client = connect(&fake).await;
    let start = tokio::time::Instant::now();
    let e = wait_t1(&client, Duration::from_millis(4500))
        .await
        .expect_err("still working");
    assert!(
        matches!(&e, TaskError::WaitDeadline { task_id, status, .. } if task_id == "t-1" && *status == TaskStatus::Working),
        "{e:?}"
    );
    // Polls at 0, 1, 2, 3, 4 s; the next would start at 5 s, past the deadline.
    assert_eq!(fake.times("tasks/get").len(), 5);
    assert!(start.elapsed() <= Duration::from_millis(4500));
    // A wait outside its bound is refused before anything is sent.
    let e = wait_t1(&client, Duration::ZERO)
        .await
        .expect_err("zero wait");
    assert!(
        matches!(e, TaskError::Client(ClientError::Request(_))),
        "{e:?}"
    );
    assert_eq!(fake.times("tasks/get").len(), 5);
}

/// A wait whose time is gone when a poll would start (a sleep that overslept on a loaded
/// machine; here a wait of one nanosecond on the real clock) ends as `WaitDeadline`, not as
/// a poll refused for its zero deadline (found by CI: `tasks wait --for 1` exited 2, not 9).
#[tokio::test]
async fn n44_a_wait_whose_time_is_gone_before_a_poll_ends_as_its_deadline() {
    let fake = Fake::new(|r| match r.method.as_str() {
        "tasks/get" => get_result("t-1", "working", json!({"pollIntervalMs": 1000})),
        _ => None,
    });
    let client = connect(&fake).await;
    let e = wait_t1(&client, Duration::from_nanos(1))
        .await
        .expect_err("no time to wait");
    assert!(
        matches!(&e, TaskError::WaitDeadline { task_id, status, .. } if task_id == "t-1" && *status == TaskStatus::Working),
        "{e:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_silent_server_ends_the_wait_at_its_deadline() {
    let fake = Fake::new(|_| None);
    let client = connect(&fake).await;
    let start = tokio::time::Instant::now();
    let e = wait_t1(&client, Duration::from_secs(3))
        .await
        .expect_err("no answer");
    assert!(matches!(e, TaskError::WaitDeadline { .. }), "{e:?}");
    assert_eq!(start.elapsed(), Duration::from_secs(3));
}

#[tokio::test(start_paused = true)]
async fn the_poll_interval_is_capped() {
    let gets = Arc::new(Counter::default());
    let g = gets.clone();
    let fake = Fake::new(move |r| match r.method.as_str() {
        "tasks/get" => match g.next() {
            0 => get_result("t-1", "working", json!({"pollIntervalMs": 3_600_000})),
            _ => get_result(
                "t-1",
                "failed",
                json!({"error": {"code": -32603, "message": "boom"}, "statusMessage": "it broke"}),
            ),
        },
        _ => None,
    });
    let client = connect(&fake).await;
    let task = wait_t1(&client, Duration::from_secs(60))
        .await
        .expect("wait");
    assert_eq!(task.task.status, TaskStatus::Failed);
    let times = fake.times("tasks/get");
    assert_eq!(times[1] - times[0], MAX_POLL_INTERVAL);
}

// ---------------------------------------------------------------------------------------------
// The task's TTL as the wait's backstop (N44)

/// The gaps between consecutive `tasks/get` polls, in milliseconds.
fn gaps(fake: &Fake) -> Vec<u128> {
    fake.times("tasks/get")
        .windows(2)
        .map(|w| (w[1] - w[0]).as_millis())
        .collect()
}

/// Calls `slow` and tracks the task the server made of it (`ttlMs` `ttl_ms`), first seen now.
async fn call_and_track(client: &Client) -> TrackedTask {
    let call = client
        .call_tool_task("slow", None, RoundInput::first(), &CallOptions::default())
        .await
        .expect("call");
    let TaskCall::Task(task) = call else {
        panic!("expected a task, got {call:?}");
    };
    TrackedTask::from_task(&task)
}

/// A task made with `ttlMs` `ttl_ms` that stays `working`, polled every second.
fn never_ending(ttl_ms: u64) -> Arc<Fake> {
    Fake::new(move |r| match r.method.as_str() {
        "tools/call" => result({
            let mut t = task(
                "t-1",
                "working",
                json!({"ttlMs": ttl_ms, "pollIntervalMs": 1000}),
            );
            t["resultType"] = json!("task");
            t
        }),
        "tasks/get" => get_result(
            "t-1",
            "working",
            json!({"ttlMs": ttl_ms, "pollIntervalMs": 1000}),
        ),
        _ => None,
    })
}

#[tokio::test(start_paused = true)]
async fn n44_wait_ends_at_the_task_ttl_backstop() {
    assert_eq!(TTL_GRACE, Duration::from_secs(5));
    // ttlMs 2000: the backstop falls 2 s + 5 s after the task arrived. Polls at 0..=6 s; the
    // next would start at 7 s, at the backstop itself, so it is not sent and the wait ends.
    let fake = never_ending(2000);
    let client = connect(&fake).await;
    let start = tokio::time::Instant::now();
    let tracked = call_and_track(&client).await;
    assert_eq!(tracked.first_seen(), Some(start));
    let e = client
        .wait_task(&tracked, Duration::from_secs(60), &CallOptions::default())
        .await
        .expect_err("the task outlives its ttl");
    assert!(
        matches!(&e, TaskError::TtlExpired { task_id, ttl_ms: 2000, waited, status: TaskStatus::Working }
            if task_id == "t-1" && *waited == Duration::from_secs(6)),
        "{e:?}"
    );
    assert_eq!(gaps(&fake), [1000; 6]);
    assert_eq!(fake.times("tasks/get")[6] - start, Duration::from_secs(6));
    assert_eq!(start.elapsed(), Duration::from_secs(6));
    // One millisecond more of ttlMs moves the backstop past 7 s: the poll at 7 s is sent.
    let fake = never_ending(2001);
    let client = connect(&fake).await;
    let tracked = call_and_track(&client).await;
    let e = client
        .wait_task(&tracked, Duration::from_secs(60), &CallOptions::default())
        .await
        .expect_err("the task outlives its ttl");
    assert!(
        matches!(&e, TaskError::TtlExpired { ttl_ms: 2001, waited, .. } if *waited == Duration::from_secs(7)),
        "{e:?}"
    );
    assert_eq!(gaps(&fake), [1000; 7]);
}

#[tokio::test(start_paused = true)]
async fn n44_a_poll_in_flight_is_cut_at_the_ttl_backstop() {
    let gets = Arc::new(Counter::default());
    let g = gets.clone();
    // The first poll answers (ttlMs 2000); the server never answers the second, sent at 1 s.
    let fake = Fake::new(move |r| match r.method.as_str() {
        "tasks/get" => match g.next() {
            0 => get_result(
                "t-1",
                "working",
                json!({"ttlMs": 2000, "pollIntervalMs": 1000}),
            ),
            _ => None,
        },
        _ => None,
    });
    let client = connect(&fake).await;
    let start = tokio::time::Instant::now();
    let e = wait_t1(&client, Duration::from_secs(60))
        .await
        .expect_err("no answer");
    // Tracked by id: first seen at the first poll (0 s); the backstop at 7 s ends the poll
    // in flight, well before the request's own 30 s deadline.
    assert!(
        matches!(&e, TaskError::TtlExpired { task_id, ttl_ms: 2000, waited, status: TaskStatus::Working }
            if task_id == "t-1" && *waited == Duration::from_secs(7)),
        "{e:?}"
    );
    assert_eq!(start.elapsed(), Duration::from_secs(7));
    assert_eq!(gaps(&fake), [1000]);
}

#[tokio::test(start_paused = true)]
async fn n44_a_raised_ttl_is_waited_for_and_the_task_completes() {
    let gets = Arc::new(Counter::default());
    let g = gets.clone();
    // ttlMs 2000 would end the wait at 6 s; the second poll raises it to 20000 (backstop at
    // 25 s from the first sighting), and the task completes at the eleventh poll, at 10 s.
    let fake = Fake::new(move |r| match r.method.as_str() {
        "tasks/get" => match g.next() {
            0 => get_result(
                "t-1",
                "working",
                json!({"ttlMs": 2000, "pollIntervalMs": 1000}),
            ),
            1..=9 => get_result(
                "t-1",
                "working",
                json!({"ttlMs": 20000, "pollIntervalMs": 1000}),
            ),
            _ => get_result(
                "t-1",
                "completed",
                json!({"ttlMs": 20000, "result": {"content": []}}),
            ),
        },
        _ => None,
    });
    let client = connect(&fake).await;
    let start = tokio::time::Instant::now();
    let task = wait_t1(&client, Duration::from_secs(60))
        .await
        .expect("completes");
    assert_eq!(task.task.status, TaskStatus::Completed);
    assert_eq!(task.task.ttl_ms, Some(20000));
    assert_eq!(gaps(&fake), [1000; 10]);
    assert_eq!(start.elapsed(), Duration::from_secs(10));
}

#[tokio::test(start_paused = true)]
async fn n44_a_lowered_ttl_brings_the_backstop_closer() {
    let gets = Arc::new(Counter::default());
    let g = gets.clone();
    // ttlMs 60000 at first, 1000 from the third poll (2 s): the backstop is 1 s + 5 s after the
    // first sighting, so the polls at 3, 4 and 5 s are the last.
    let fake = Fake::new(move |r| match r.method.as_str() {
        "tasks/get" => {
            let ttl = if g.next() < 2 { 60_000 } else { 1000 };
            get_result(
                "t-1",
                "working",
                json!({"ttlMs": ttl, "pollIntervalMs": 1000}),
            )
        }
        _ => None,
    });
    let client = connect(&fake).await;
    let e = wait_t1(&client, Duration::from_secs(60))
        .await
        .expect_err("the lowered ttl runs out");
    assert!(
        matches!(&e, TaskError::TtlExpired { ttl_ms: 1000, waited, status: TaskStatus::Working, .. }
            if *waited == Duration::from_secs(5)),
        "{e:?}"
    );
    assert_eq!(gaps(&fake), [1000; 5]);
}

#[tokio::test(start_paused = true)]
async fn n44_a_null_ttl_keeps_the_callers_deadline() {
    let fake = Fake::new(|r| match r.method.as_str() {
        "tasks/get" => get_result(
            "t-1",
            "working",
            json!({"ttlMs": null, "pollIntervalMs": 1000}),
        ),
        _ => None,
    });
    let client = connect(&fake).await;
    let e = wait_t1(&client, Duration::from_secs(10))
        .await
        .expect_err("still working");
    // Polls at 0..=9 s; the next would start at the 10 s deadline.
    assert!(
        matches!(&e, TaskError::WaitDeadline { task_id, waited, status: TaskStatus::Working }
            if task_id == "t-1" && *waited == Duration::from_secs(9)),
        "{e:?}"
    );
    assert_eq!(gaps(&fake), [1000; 9]);
}

#[tokio::test(start_paused = true)]
async fn n44_a_purged_task_past_its_ttl_is_still_an_unknown_task() {
    let gets = Arc::new(Counter::default());
    let g = gets.clone();
    // ttlMs 1000; from the fourth poll (3 s, past the TTL, within the grace) the server has
    // purged the task and answers -32602.
    let fake = Fake::new(move |r| match r.method.as_str() {
        "tasks/get" => match g.next() {
            0..=2 => get_result(
                "t-1",
                "working",
                json!({"ttlMs": 1000, "pollIntervalMs": 1000}),
            ),
            _ => error(-32602, "Task not found or expired"),
        },
        _ => None,
    });
    let client = connect(&fake).await;
    let e = wait_t1(&client, Duration::from_secs(60))
        .await
        .expect_err("purged");
    assert!(
        matches!(&e, TaskError::UnknownTask { task_id, error } if task_id == "t-1" && error.code == -32602),
        "{e:?}"
    );
    assert_eq!(gaps(&fake), [1000; 3]);
}

/// Connects to `fake` and tracks `t-1` by id; waits on it until a deadline of 4.5 s cuts the
/// wait (polls at 0..=4 s of a task polled every second whose backstop lies past 4.5 s),
/// checking the `WaitDeadline` and that the task was first seen at the first poll, the
/// returned start.
async fn first_wait_by_id(fake: &Arc<Fake>) -> (Client, TrackedTask, tokio::time::Instant) {
    let client = connect(fake).await;
    let tracked = TrackedTask::new("t-1");
    let start = tokio::time::Instant::now();
    assert_eq!(tracked.first_seen(), None);
    let e = client
        .wait_task(
            &tracked,
            Duration::from_millis(4500),
            &CallOptions::default(),
        )
        .await
        .expect_err("the caller's deadline comes first");
    assert!(
        matches!(&e, TaskError::WaitDeadline { task_id, waited, status: TaskStatus::Working }
            if task_id == "t-1" && *waited == Duration::from_secs(4)),
        "{e:?}"
    );
    assert_eq!(fake.times("tasks/get").len(), 5);
    assert_eq!(tracked.first_seen(), Some(start));
    (client, tracked, start)
}

/// A later wait on `tracked` with a minute to spare, which the task's TTL must end.
async fn wait_past_the_ttl(client: &Client, tracked: &TrackedTask) -> TaskError {
    client
        .wait_task(tracked, Duration::from_secs(60), &CallOptions::default())
        .await
        .expect_err("the task outlives its ttl")
}

/// N44: a task tracked by id is first seen at the first poll of its first wait, and a second
/// wait on the same `TrackedTask` keeps that start (it used to restart the TTL clock at its
/// own first poll: here the backstop would have moved from 7 s to 11 s).
#[tokio::test(start_paused = true)]
async fn n44_a_second_wait_on_a_task_tracked_by_id_keeps_its_first_sighting() {
    // ttlMs 2000: the backstop at 0 + 2 s + 5 s. The second wait begins at 4 s and polls at
    // 4, 5 and 6 s; the next would start at 7 s, the backstop itself, so it is not sent.
    let fake = never_ending(2000);
    let (client, tracked, start) = first_wait_by_id(&fake).await;
    let e = wait_past_the_ttl(&client, &tracked).await;
    assert!(
        matches!(&e, TaskError::TtlExpired { task_id, ttl_ms: 2000, waited, status: TaskStatus::Working }
            if task_id == "t-1" && *waited == Duration::from_secs(2)),
        "{e:?}"
    );
    // The first wait's last poll and the second's first are both at 4 s.
    assert_eq!(gaps(&fake), [1000, 1000, 1000, 1000, 0, 1000, 1000]);
    assert_eq!(start.elapsed(), Duration::from_secs(6));
    assert_eq!(tracked.first_seen(), Some(start));
    // A clone made now carries the first sighting along.
    assert_eq!(tracked.clone().first_seen(), Some(start));
    // One millisecond more of ttlMs puts the backstop just past 7 s: the poll at 7 s is sent,
    // the one at 8 s is not.
    let fake = never_ending(2001);
    let (client, tracked, start) = first_wait_by_id(&fake).await;
    let e = wait_past_the_ttl(&client, &tracked).await;
    assert!(
        matches!(&e, TaskError::TtlExpired { ttl_ms: 2001, waited, .. } if *waited == Duration::from_secs(3)),
        "{e:?}"
    );
    assert_eq!(gaps(&fake), [1000, 1000, 1000, 1000, 0, 1000, 1000, 1000]);
    assert_eq!(start.elapsed(), Duration::from_secs(7));
}

/// N44: in a second wait a poll the server never answers is cut at exactly the first
/// wait's first sighting + `ttlMs` + `TTL_GRACE`.
#[tokio::test(start_paused = true)]
async fn n44_a_second_wait_is_cut_at_the_backstop_of_the_first_sighting() {
    let gets = Arc::new(Counter::default());
    let g = gets.clone();
    // Polls 0..=5 (0..=4 s in the first wait, 4 s in the second) answer; the seventh, sent at
    // 5 s, never does.
    let fake = Fake::new(move |r| match r.method.as_str() {
        "tasks/get" => match g.next() {
            0..=5 => get_result(
                "t-1",
                "working",
                json!({"ttlMs": 2000, "pollIntervalMs": 1000}),
            ),
            _ => None,
        },
        _ => None,
    });
    let (client, tracked, start) = first_wait_by_id(&fake).await;
    let e = wait_past_the_ttl(&client, &tracked).await;
    assert!(
        matches!(&e, TaskError::TtlExpired { task_id, ttl_ms: 2000, waited, status: TaskStatus::Working }
            if task_id == "t-1" && *waited == Duration::from_secs(3)),
        "{e:?}"
    );
    assert_eq!(start.elapsed(), Duration::from_secs(7));
    assert_eq!(gaps(&fake), [1000, 1000, 1000, 1000, 0, 1000]);
}

/// N44: a wait that ends at input the host must answer has seen the task; the wait after the
/// answer counts the TTL from that poll, not from its own first one.
#[tokio::test(start_paused = true)]
async fn n44_a_wait_that_ends_at_input_starts_the_ttl_for_the_next_wait() {
    let gets = Arc::new(Counter::default());
    let g = gets.clone();
    let fake = Fake::new(move |r| match r.method.as_str() {
        "tasks/get" => match g.next() {
            0 => get_result(
                "t-1",
                "input_required",
                json!({"inputRequests": {"a": elicit("A?")}, "ttlMs": 2000}),
            ),
            _ => get_result(
                "t-1",
                "working",
                json!({"ttlMs": 2000, "pollIntervalMs": 1000}),
            ),
        },
        "tasks/update" => ack(),
        _ => None,
    });
    let client = connect(&fake).await;
    let mut tracked = TrackedTask::new("t-1");
    let start = tokio::time::Instant::now();
    let asked = client
        .wait_task(&tracked, Duration::from_secs(60), &CallOptions::default())
        .await
        .expect("input required");
    assert_eq!(asked.task.status, TaskStatus::InputRequired);
    assert_eq!(tracked.first_seen(), Some(start));
    // The host takes 3 s to answer; the next wait polls at 3..=6 s and ends at the 7 s
    // backstop (from the poll at 0 s; 10 s if counted from its own first poll).
    tokio::time::advance(Duration::from_secs(3)).await;
    client
        .update_task(
            &mut tracked,
            &asked,
            answers(&[("a", accept())]),
            &CallOptions::default(),
        )
        .await
        .expect("update");
    let e = wait_past_the_ttl(&client, &tracked).await;
    assert!(
        matches!(&e, TaskError::TtlExpired { ttl_ms: 2000, waited, status: TaskStatus::Working, .. }
            if *waited == Duration::from_secs(3)),
        "{e:?}"
    );
    assert_eq!(gaps(&fake), [3000, 1000, 1000, 1000]);
    assert_eq!(start.elapsed(), Duration::from_secs(6));
    assert_eq!(tracked.first_seen(), Some(start));
}

// ---------------------------------------------------------------------------------------------
// Input: answered only explicitly, deduplicated across polls

#[tokio::test(start_paused = true)]
async fn i15_n42_input_is_returned_to_the_host_answered_explicitly_and_deduplicated() {
    let gets = Arc::new(Counter::default());
    let g = gets.clone();
    let fake = Fake::new(move |r| match r.method.as_str() {
        "tasks/get" => match g.next() {
            0 => get_result("t-1", "working", json!({"pollIntervalMs": 100})),
            // Both keys outstanding.
            1 => get_result(
                "t-1",
                "input_required",
                json!({"inputRequests": {"a": elicit("A?"), "b": elicit("B?")}, "pollIntervalMs": 100}),
            ),
            // After "a" was answered, one poll still shows both (eventually consistent),
            // then only "b".
            2 => get_result(
                "t-1",
                "input_required",
                json!({"inputRequests": {"a": elicit("A?"), "b": elicit("B?")}, "pollIntervalMs": 100}),
            ),
            3 => get_result(
                "t-1",
                "input_required",
                json!({"inputRequests": {"b": elicit("B?")}, "pollIntervalMs": 100}),
            ),
            _ => get_result("t-1", "completed", json!({"result": {"content": []}})),
        },
        "tasks/update" => ack(),
        _ => None,
    });
    let client = connect(&fake).await;
    let mut tracked = TrackedTask::new("t-1");
    let wait = Duration::from_secs(30);
    let asked = client
        .wait_task(&tracked, wait, &CallOptions::default())
        .await
        .expect("wait");
    assert_eq!(asked.task.status, TaskStatus::InputRequired);
    assert_eq!(
        tracked.outstanding(&asked).into_keys().collect::<Vec<_>>(),
        ["a", "b"]
    );
    // Nothing was answered on its own.
    assert!(fake.requests().iter().all(|(m, _)| m == "tasks/get"));
    // A subset is allowed.
    client
        .update_task(
            &mut tracked,
            &asked,
            answers(&[("a", accept())]),
            &CallOptions::default(),
        )
        .await
        .expect("update");
    assert_eq!(tracked.answered().collect::<Vec<_>>(), ["a"]);
    let last = fake.requests().pop().unwrap();
    assert_eq!(
        last,
        (
            "tasks/update".to_owned(),
            format!(
                r#"{{"_meta":{TASKS_META},"inputResponses":{{"a":{{"action":"accept","content":{{"ok":true}}}}}},"taskId":"t-1"}}"#
            )
        )
    );
    // The poll that still lists "a" (beside the new "b") returns for "b" only.
    let asked = client
        .wait_task(&tracked, wait, &CallOptions::default())
        .await
        .expect("wait");
    assert_eq!(
        tracked.outstanding(&asked).into_keys().collect::<Vec<_>>(),
        ["b"]
    );
    client
        .update_task(
            &mut tracked,
            &asked,
            answers(&[("b", json!({"action": "decline"}))]),
            &CallOptions::default(),
        )
        .await
        .expect("update");
    let done = client
        .wait_task(&tracked, wait, &CallOptions::default())
        .await
        .expect("wait");
    assert_eq!(done.task.status, TaskStatus::Completed);
}

#[tokio::test]
async fn n42_answers_that_cannot_be_sent_are_refused_before_sending() {
    let fake = Fake::new(|r| match r.method.as_str() {
        "tasks/get" => get_result(
            "t-1",
            "input_required",
            json!({"inputRequests": {"a": elicit("A?")}}),
        ),
        "tasks/update" => ack(),
        _ => None,
    });
    let client = connect(&fake).await;
    let options = CallOptions::default();
    let asked = client.get_task("t-1", &options).await.expect("get");
    let mut tracked = TrackedTask::new("t-1");
    let refused =
        |r: Result<(), TaskError>| matches!(r, Err(TaskError::Client(ClientError::Request(_))));
    // No answer, an unknown key, a malformed elicitation answer, another task's requests.
    assert!(refused(
        client
            .update_task(&mut tracked, &asked, Map::new(), &options)
            .await
    ));
    assert!(refused(
        client
            .update_task(&mut tracked, &asked, answers(&[("zz", accept())]), &options)
            .await
    ));
    assert!(refused(
        client
            .update_task(
                &mut tracked,
                &asked,
                answers(&[("a", json!({"action": "maybe"}))]),
                &options
            )
            .await
    ));
    let mut other = TrackedTask::new("t-2");
    assert!(refused(
        client
            .update_task(&mut other, &asked, answers(&[("a", accept())]), &options)
            .await
    ));
    assert!(fake.requests().iter().all(|(m, _)| m == "tasks/get"));
    // Answered once, the key cannot be answered again.
    client
        .update_task(&mut tracked, &asked, answers(&[("a", accept())]), &options)
        .await
        .expect("update");
    assert!(refused(
        client
            .update_task(&mut tracked, &asked, answers(&[("a", accept())]), &options)
            .await
    ));
    let updates = fake
        .requests()
        .iter()
        .filter(|(m, _)| m == "tasks/update")
        .count();
    assert_eq!(updates, 1);
}

// ---------------------------------------------------------------------------------------------
// Cancel and errors

#[tokio::test]
async fn n43_cancel_sends_tasks_cancel_and_never_notifications_cancelled() {
    let fake = Fake::new(|r| match r.method.as_str() {
        "tasks/cancel" => ack(),
        _ => None,
    });
    let client = connect(&fake).await;
    client
        .cancel_task("t-9", &CallOptions::default())
        .await
        .expect("cancel");
    assert_eq!(
        fake.requests(),
        [(
            "tasks/cancel".to_owned(),
            format!(r#"{{"_meta":{TASKS_META},"taskId":"t-9"}}"#)
        )]
    );
    assert!(
        fake.notifications().is_empty(),
        "{:?}",
        fake.notifications()
    );
}

#[tokio::test]
async fn n12_n43_an_unknown_task_is_a_typed_error_on_every_method() {
    let fake = Fake::new(|_| error(-32602, "Task not found"));
    let client = connect(&fake).await;
    let options = CallOptions::default();
    let unknown = |e: TaskError| matches!(e, TaskError::UnknownTask { task_id, error } if task_id == "gone" && error.code == -32602);
    assert!(unknown(
        client.get_task("gone", &options).await.unwrap_err()
    ));
    assert!(unknown(
        client.cancel_task("gone", &options).await.unwrap_err()
    ));
    assert!(unknown(
        client
            .wait_task(&TrackedTask::new("gone"), Duration::from_secs(5), &options)
            .await
            .unwrap_err()
    ));
}

#[tokio::test]
async fn n36_missing_capability_is_its_own_error() {
    let fake = Fake::new(|_| error(-32021, "Missing required client capability"));
    let client = connect(&fake).await;
    let e = client
        .get_task("t-1", &CallOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&e, TaskError::NotNegotiated(rpc) if rpc.code == -32021),
        "{e:?}"
    );
}

#[tokio::test]
async fn n41_n48_tasks_results_of_the_wrong_shape_are_invalid() {
    let fake = Fake::new(|r| {
        let id = serde_json::from_str::<Value>(r.params.as_ref().unwrap().get()).unwrap()["taskId"]
            .as_str()
            .unwrap()
            .to_owned();
        match (r.method.as_str(), id.as_str()) {
            // `resultType: "task"` on tasks/get (the SEP's examples; the normative text says
            // "complete").
            ("tasks/get", "as-task") => result({
                let mut t = task("as-task", "working", json!({}));
                t["resultType"] = json!("task");
                t
            }),
            ("tasks/get", "other-id") => get_result("someone-else", "working", json!({})),
            ("tasks/get", "no-status") => {
                result(json!({"resultType": "complete", "taskId": "no-status"}))
            }
            ("tasks/cancel", _) => result(json!({"resultType": "task"})),
            _ => None,
        }
    });
    let client = connect(&fake).await;
    let options = CallOptions::default();
    for id in ["as-task", "other-id", "no-status"] {
        let e = client.get_task(id, &options).await.unwrap_err();
        assert!(
            matches!(&e, TaskError::Invalid { method, .. } if method == "tasks/get"),
            "{id}: {e:?}"
        );
    }
    let e = client.cancel_task("x", &options).await.unwrap_err();
    assert!(
        matches!(&e, TaskError::Invalid { method, .. } if method == "tasks/cancel"),
        "{e:?}"
    );
}

#[tokio::test]
async fn a_missing_result_type_is_read_leniently_and_refused_in_strict_mode() {
    let script = |r: &Request| match r.method.as_str() {
        "tasks/cancel" => result(json!({})),
        _ => None,
    };
    let fake = Fake::new(script);
    let client = connect(&fake).await;
    client
        .cancel_task("t-1", &CallOptions::default())
        .await
        .expect("lenient");
    let (diagnostics, _) = client.diagnostics();
    assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
    let strict = Fake::new(script);
    let client = Client::connect(
        strict.clone(),
        ClientOptions {
            strict: true,
            ..ClientOptions::default()
        },
    )
    .await
    .expect("connect");
    let e = client
        .cancel_task("t-1", &CallOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            TaskError::Client(ClientError::Invalid(InvalidResult::Lenient(_)))
        ),
        "{e:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Over HTTP: Mcp-Name carries the taskId

#[path = "support/fake_http.rs"]
mod fake_http;

#[tokio::test]
async fn n12_n46_over_http_every_tasks_request_names_its_task_in_mcp_name() {
    use tokio::io::AsyncWriteExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    let heads = Arc::new(Mutex::new(Vec::<(String, String)>::new()));
    let seen = heads.clone();
    let server = tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let Some((head, body)) = fake_http::read_request(&mut socket).await else {
                continue;
            };
            let request: Value = serde_json::from_slice(&body).expect("json body");
            let method = request["method"].as_str().unwrap_or_default().to_owned();
            let result = match method.as_str() {
                "server/discover" => DISCOVER.to_owned(),
                "tasks/get" => {
                    let mut t = task("t-1", "working", json!({}));
                    t["resultType"] = json!("complete");
                    t.to_string()
                }
                _ => r#"{"resultType":"complete"}"#.to_owned(),
            };
            seen.lock()
                .unwrap()
                .push((method, head.to_ascii_lowercase()));
            let reply = format!(
                r#"{{"jsonrpc":"2.0","id":{},"result":{result}}}"#,
                request["id"]
            );
            let _ = socket
                .write_all(&fake_http::http(
                    "200 OK",
                    "application/json",
                    reply.as_bytes(),
                ))
                .await;
        }
    });
    let transport =
        Arc::new(strict_mcp::client::http::HttpTransport::new(&url, None).expect("transport"));
    let client = Client::connect(transport, ClientOptions::default())
        .await
        .expect("connect");
    let options = CallOptions::default();
    let asked = client.get_task("t-1", &options).await.expect("get");
    assert_eq!(asked.task.status, TaskStatus::Working);
    client.cancel_task("t-1", &options).await.expect("cancel");
    let heads = heads.lock().unwrap().clone();
    server.abort();
    let tasks: Vec<&(String, String)> = heads
        .iter()
        .filter(|(m, _)| m.starts_with("tasks/"))
        .collect();
    assert_eq!(tasks.len(), 2);
    for (method, head) in tasks {
        assert!(head.contains("\r\nmcp-name: t-1\r\n"), "{method}: {head}");
        assert!(
            head.contains(&format!("\r\nmcp-method: {method}\r\n")),
            "{head}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Following a task on subscriptions/listen

/// A script that acknowledges a listen request for `acked` task ids and, on each `tasks/get`,
/// answers `get(n)` and pushes `push(n, subscription id)` on the stream.
fn listening(
    acked: &'static [&'static str],
    get: impl Fn(usize) -> Option<String> + Send + Sync + 'static,
    push: impl Fn(usize, &str) -> Vec<Value> + Send + Sync + 'static,
) -> Arc<Fake> {
    let stream = Arc::new(Mutex::new(String::new()));
    let gets = Counter::default();
    Fake::new(move |r| match r.method.as_str() {
        "subscriptions/listen" => {
            *stream.lock().unwrap() = r.id.token().to_owned();
            let id: Value = serde_json::from_str(r.id.token()).unwrap();
            Some(
                json!({"method": "notifications/subscriptions/acknowledged", "params": {
                    "notifications": {"taskIds": acked},
                    "_meta": {"io.modelcontextprotocol/subscriptionId": id}}})
                .to_string(),
            )
        }
        "tasks/get" => {
            let n = gets.next();
            let id = stream.lock().unwrap().clone();
            let mut lines: Vec<String> = get(n).into_iter().collect();
            for params in push(n, &id) {
                lines.push(json!({"method": "notifications/tasks", "params": params}).to_string());
            }
            Some(lines.join("\n"))
        }
        _ => None,
    })
}

/// `notifications/tasks` params: the detailed task tagged with subscription `id`.
fn notified(id: &str, sub: &str, status: &str, extra: Value) -> Value {
    let mut t = task(id, status, extra);
    t["_meta"] = json!({"io.modelcontextprotocol/subscriptionId": serde_json::from_str::<Value>(sub).unwrap()});
    t
}

fn text_result(text: &str) -> Value {
    json!({"result": {"content": [{"type": "text", "text": text}]}})
}

#[tokio::test(start_paused = true)]
async fn n47_follow_takes_the_tasks_notification_for_its_task_on_its_stream() {
    let fake = listening(
        &["t-1"],
        |_| get_result("t-1", "working", json!({"pollIntervalMs": 100})),
        |_, sub| {
            vec![
                // Another task's, and one tagged with another stream: ignored.
                notified("t-2", sub, "completed", text_result("other task")),
                notified("t-1", "999", "completed", text_result("other stream")),
                notified("t-1", sub, "completed", text_result("mine")),
            ]
        },
    );
    let client = connect(&fake).await;
    let task = client
        .follow_task(
            &TrackedTask::new("t-1"),
            Duration::from_secs(30),
            &CallOptions::default(),
        )
        .await
        .expect("follow");
    assert_eq!(task.task.status, TaskStatus::Completed);
    let outcome = client.task_tool_outcome("slow", &task).expect("outcome");
    let ToolOutcome::Success(result) = outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(
        serde_json::to_value(&result).unwrap()["content"][0]["text"],
        "mine"
    );
    let requests = fake.requests();
    assert_eq!(
        requests[0],
        (
            "subscriptions/listen".to_owned(),
            format!(r#"{{"_meta":{TASKS_META},"notifications":{{"taskIds":["t-1"]}}}}"#)
        )
    );
    assert_eq!(requests.iter().filter(|(m, _)| m == "tasks/get").count(), 1);
    // The stream is cancelled once the wait is over.
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(fake.notifications(), ["notifications/cancelled"]);
}

#[tokio::test(start_paused = true)]
async fn n47_without_the_task_in_the_acknowledgement_the_wait_polls() {
    let fake = listening(
        &[],
        |n| match n {
            0 => get_result("t-1", "working", json!({"pollIntervalMs": 100})),
            _ => get_result("t-1", "cancelled", json!({})),
        },
        |_, _| Vec::new(),
    );
    let client = connect(&fake).await;
    let task = client
        .follow_task(
            &TrackedTask::new("t-1"),
            Duration::from_secs(30),
            &CallOptions::default(),
        )
        .await
        .expect("follow");
    assert_eq!(task.task.status, TaskStatus::Cancelled);
    let times = fake.times("tasks/get");
    assert_eq!(times.len(), 2);
    assert_eq!(times[1] - times[0], Duration::from_millis(100));
}

#[tokio::test(start_paused = true)]
async fn a_follow_without_notifications_polls_as_a_backstop_and_keeps_its_deadline() {
    let fake = listening(
        &["t-1"],
        |n| match n {
            0 => get_result("t-1", "working", json!({})),
            _ => get_result("t-1", "completed", json!({"result": {"content": []}})),
        },
        |_, _| Vec::new(),
    );
    let client = connect(&fake).await;
    let task = client
        .follow_task(
            &TrackedTask::new("t-1"),
            Duration::from_secs(30),
            &CallOptions::default(),
        )
        .await
        .expect("follow");
    assert_eq!(task.task.status, TaskStatus::Completed);
    let times = fake.times("tasks/get");
    assert_eq!(times[1] - times[0], MAX_POLL_INTERVAL);
    // Still working throughout: the follow ends at its deadline.
    let fake = listening(
        &["t-1"],
        |_| get_result("t-1", "working", json!({})),
        |_, _| Vec::new(),
    );
    let client = connect(&fake).await;
    let start = tokio::time::Instant::now();
    let e = client
        .follow_task(
            &TrackedTask::new("t-1"),
            Duration::from_secs(25),
            &CallOptions::default(),
        )
        .await
        .expect_err("deadline");
    assert!(matches!(e, TaskError::WaitDeadline { .. }), "{e:?}");
    assert_eq!(start.elapsed(), Duration::from_secs(25));
    assert_eq!(fake.times("tasks/get").len(), 3);
}

#[tokio::test(start_paused = true)]
async fn n44_follow_task_gets_the_same_backstop() {
    // Acknowledged, no notification: the backstop (first sighting at the first poll, 0 s,
    // + 2 s + 5 s) cuts the notification wait, and the follow ends at exactly 7 s.
    let fake = listening(
        &["t-1"],
        |_| get_result("t-1", "working", json!({"ttlMs": 2000})),
        |_, _| Vec::new(),
    );
    let client = connect(&fake).await;
    let start = tokio::time::Instant::now();
    let e = client
        .follow_task(
            &TrackedTask::new("t-1"),
            Duration::from_secs(60),
            &CallOptions::default(),
        )
        .await
        .expect_err("ttl");
    assert!(
        matches!(&e, TaskError::TtlExpired { task_id, ttl_ms: 2000, waited, status: TaskStatus::Working }
            if task_id == "t-1" && *waited == Duration::from_secs(7)),
        "{e:?}"
    );
    assert_eq!(start.elapsed(), Duration::from_secs(7));
    assert_eq!(fake.times("tasks/get").len(), 1);
    // A notification (the task still working) lowers ttlMs to 1000: the backstop moves to
    // 6 s.
    let fake = listening(
        &["t-1"],
        |_| get_result("t-1", "working", json!({"ttlMs": 2000})),
        |_, sub| vec![notified("t-1", sub, "working", json!({"ttlMs": 1000}))],
    );
    let client = connect(&fake).await;
    let start = tokio::time::Instant::now();
    let e = client
        .follow_task(
            &TrackedTask::new("t-1"),
            Duration::from_secs(60),
            &CallOptions::default(),
        )
        .await
        .expect_err("ttl");
    assert!(
        matches!(&e, TaskError::TtlExpired { ttl_ms: 1000, waited, status: TaskStatus::Working, .. }
            if *waited == Duration::from_secs(6)),
        "{e:?}"
    );
    assert_eq!(start.elapsed(), Duration::from_secs(6));
    assert_eq!(fake.times("tasks/get").len(), 1);
}

#[tokio::test(start_paused = true)]
async fn n44_a_follow_that_falls_back_to_polling_keeps_the_backstop() {
    // Not acknowledged: the follow polls; a task made with ttlMs 2000 ends at its backstop
    // (7 s after it arrived), measured from its arrival, not from the fallback.
    let fake = listening(
        &[],
        |_| {
            get_result(
                "t-1",
                "working",
                json!({"ttlMs": 2000, "pollIntervalMs": 1000}),
            )
        },
        |_, _| Vec::new(),
    );
    let client = connect(&fake).await;
    let start = tokio::time::Instant::now();
    let mut created = task("t-1", "working", json!({"ttlMs": 2000}));
    created["resultType"] = json!("task");
    let created: strict_mcp::wire::tasks::Task =
        strict_mcp::wire::tasks::read_create_result(&created).expect("task");
    let tracked = TrackedTask::from_task(&created);
    tokio::time::advance(Duration::from_secs(3)).await;
    let e = client
        .follow_task(&tracked, Duration::from_secs(60), &CallOptions::default())
        .await
        .expect_err("ttl");
    // Polls at 3..=6 s (3 s after the arrival); the next would be at the 7 s backstop.
    assert!(
        matches!(&e, TaskError::TtlExpired { ttl_ms: 2000, waited, .. } if *waited == Duration::from_secs(3)),
        "{e:?}"
    );
    assert_eq!(start.elapsed(), Duration::from_secs(6));
    assert_eq!(gaps(&fake), [1000; 3]);
}

#[tokio::test(start_paused = true)]
async fn n44_a_second_follow_on_a_task_tracked_by_id_keeps_its_first_sighting() {
    // Acknowledged, no notification. The first follow polls at 0 s (first sighting) and ends
    // at its 3 s deadline; the second opens a new stream at 3 s, polls once and ends at the
    // 0 + 2 s + 5 s backstop (10 s if it restarted the clock at its own poll).
    let fake = listening(
        &["t-1"],
        |_| get_result("t-1", "working", json!({"ttlMs": 2000})),
        |_, _| Vec::new(),
    );
    let client = connect(&fake).await;
    let tracked = TrackedTask::new("t-1");
    let start = tokio::time::Instant::now();
    let e = client
        .follow_task(&tracked, Duration::from_secs(3), &CallOptions::default())
        .await
        .expect_err("deadline");
    assert!(
        matches!(&e, TaskError::WaitDeadline { task_id, waited, status: TaskStatus::Working }
            if task_id == "t-1" && *waited == Duration::from_secs(3)),
        "{e:?}"
    );
    assert_eq!(tracked.first_seen(), Some(start));
    let e = client
        .follow_task(&tracked, Duration::from_secs(60), &CallOptions::default())
        .await
        .expect_err("ttl");
    assert!(
        matches!(&e, TaskError::TtlExpired { task_id, ttl_ms: 2000, waited, status: TaskStatus::Working }
            if task_id == "t-1" && *waited == Duration::from_secs(4)),
        "{e:?}"
    );
    assert_eq!(start.elapsed(), Duration::from_secs(7));
    let times = fake.times("tasks/get");
    assert_eq!(times.len(), 2);
    assert_eq!(times[1] - times[0], Duration::from_secs(3));
    assert_eq!(fake.times("subscriptions/listen").len(), 2);
}
