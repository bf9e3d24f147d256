//! The Tasks extension on the server (`io.modelcontextprotocol/tasks`, SEP-2663): a
//! `tools/call` of a task tool ([`crate::core::tasks::TaskMode`]) may answer
//! `resultType: "task"` and run detached from its request; `tasks/get`, `tasks/update` and
//! `tasks/cancel` read and steer it. State goes through the [`TaskStore`]; the live work (its
//! cancel token and the wake-up `tasks/update` gives it) stays in this process ([`Tasks`]).
//!
//! Decisions where the SEP leaves room:
//! * the work is polled once inline: if it asks for input before it suspends, that round is
//!   answered synchronously through MRTR (no task yet); if an optional task tool finishes at
//!   once, the result is synchronous too; otherwise a task is created and the work goes on;
//! * input asked for inside a task parks it `input_required`; task keys are `"<round>.<key>"`,
//!   so no key is reused over the task's life; the work runs again with every answer so far;
//! * a worker that panics, or a protocol error, leaves the task `failed` (-32603 or the error);
//! * past its TTL a task's work is cancelled and the record purged (-32602 afterwards); a
//!   finished task keeps its result for the retention bound (capped by the TTL);
//! * `notifications/cancelled` only ever cancels requests, never a task: the work holds its own
//!   token, fired by `tasks/cancel`, the TTL and shutdown only.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use futures_util::future::{select, Either};
use futures_util::FutureExt;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::answer::{members_text, Answer};
use super::context::{string_param, Ctx, Params};
use super::mrtr::HandlerOut;
use super::publication::{PartsOutcome, ResultParts};
use super::{lock, Cause, Server};
use crate::core::store::StoreError;
use crate::core::tasks::{TaskLimits, TaskMode, TaskRecord, TaskStore};
use crate::core::{Caller, CancelToken, CoreError};
use crate::wire::tasks::{missing_capability_data, TaskDetail, TaskError, TaskStatus};

/// One run of a task's work (the tool invocation with the answers gathered so far).
pub(crate) type Work = Pin<Box<dyn Future<Output = Result<PartsOutcome, CoreError>> + Send>>;
/// Makes the next run of the work from the answers and the task's own cancel token.
pub(crate) type Remake =
    Arc<dyn Fn(BTreeMap<String, Box<RawValue>>, CancelToken) -> Work + Send + Sync>;

/// How many times a store write is retried after a conflict before it gives up (each retry
/// reloads; two writers per task at most, so a handful suffices).
const CAS_RETRIES: usize = 8;

/// The work of one live task.
#[derive(Clone)]
struct Live {
    cancel: CancelToken,
    wake: Arc<event_listener::Event>,
}

/// The server's task machinery.
pub(crate) struct Tasks {
    store: Arc<dyn TaskStore>,
    limits: TaskLimits,
    live: Mutex<HashMap<String, Live>>,
}

impl Tasks {
    pub(crate) fn new(store: Arc<dyn TaskStore>, limits: TaskLimits) -> Tasks {
        Tasks {
            store,
            limits,
            live: Mutex::new(HashMap::new()),
        }
    }

    /// Tasks whose work is still running (or parked for input) in this process.
    pub(crate) fn running(&self) -> usize {
        lock(&self.live).len()
    }

    /// Purges what is past its deadline and cancels the purged tasks' work.
    async fn sweep(&self, now_ms: u64) {
        if let Ok(gone) = self.store.sweep(now_ms).await {
            let live = lock(&self.live);
            for id in gone {
                if let Some(l) = live.get(&id) {
                    l.cancel.cancel();
                    l.wake.notify(usize::MAX);
                }
            }
        }
        // A shared store drops records at their deadline itself: live work whose record is
        // gone is cancelled too.
        let live: Vec<(String, Live)> = lock(&self.live)
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (id, l) in live {
            if matches!(self.store.load(&id).await, Ok(None)) {
                l.cancel.cancel();
                l.wake.notify(usize::MAX);
            }
        }
    }

    /// The caller's task, after a sweep: `None` for an unknown, purged or foreign one.
    async fn owned(
        &self,
        now_ms: u64,
        owner: &str,
        id: &str,
    ) -> Result<Option<TaskRecord>, Answer> {
        self.sweep(now_ms).await;
        match self.store.load(id).await {
            Ok(Some(r)) if r.owner == owner => Ok(Some(r)),
            Ok(_) => Ok(None),
            Err(_) => Err(Answer::internal_retryable()),
        }
    }

    /// Rewrites a task with `change` until the write wins; `change` returns `None` to leave it.
    /// `Ok(None)` when the task is gone or `change` declined.
    async fn rewrite(
        &self,
        id: &str,
        mut change: impl FnMut(&TaskRecord) -> Option<TaskRecord>,
    ) -> Result<Option<TaskRecord>, StoreError> {
        for _ in 0..CAS_RETRIES {
            let Some(current) = self.store.load(id).await? else {
                return Ok(None);
            };
            let Some(next) = change(&current) else {
                return Ok(None);
            };
            match self
                .store
                .compare_and_swap(Some(current), next.clone())
                .await
            {
                Ok(()) => return Ok(Some(next)),
                Err(StoreError::Conflict) => {}
                Err(e) => return Err(e),
            }
        }
        Err(StoreError::Conflict)
    }

    /// The purge time of a task that reaches a terminal status at `now_ms`.
    fn purge_when_done(&self, record: &TaskRecord, now_ms: u64) -> u64 {
        (record.created_ms + record.ttl_ms).min(now_ms + self.limits.result_retention_ms)
    }

    /// The terminal state `detail` for a task, unless it is already terminal (cancel racing
    /// completion: the first write wins).
    async fn finish(
        &self,
        server: &Server,
        id: &str,
        now_ms: u64,
        detail: TaskDetail,
        message: Option<String>,
    ) {
        let done = self
            .rewrite(id, |r| {
                if r.status().is_terminal() {
                    return None;
                }
                let mut next = r.clone();
                next.detail = detail.clone();
                next.status_message = message.clone();
                next.updated_ms = now_ms;
                next.purge_at_ms = self.purge_when_done(r, now_ms);
                Some(next)
            })
            .await;
        match done {
            Ok(Some(record)) => announce(server, &record),
            Ok(None) => {}
            Err(e) => tracing::error!(task = id, error = %e, "task result could not be stored"),
        }
    }

    /// Cancels every live task (shutdown): marks it `cancelled` and fires its token.
    pub(crate) async fn cancel_all(&self, server: &Server, now_ms: u64) {
        let live: Vec<(String, Live)> = lock(&self.live)
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (id, l) in live {
            self.finish(
                server,
                &id,
                now_ms,
                TaskDetail::Cancelled,
                Some("server shutting down".into()),
            )
            .await;
            l.cancel.cancel();
            l.wake.notify(usize::MAX);
        }
    }
}

/// `notifications/tasks` for a task's new state, to the listen streams that follow it.
fn announce(server: &Server, record: &TaskRecord) {
    server.listens().task_status(&record.detailed());
}

/// The ids among `ids` that are the caller's tasks now (a listen's granted `taskIds`).
pub(crate) async fn owned_ids(
    ctx: &Ctx,
    ids: std::collections::BTreeSet<String>,
) -> std::collections::BTreeSet<String> {
    let tasks = ctx.server.tasks();
    let owner = owner_of(&ctx.caller);
    let now = ctx.server.wall_now().0;
    let mut granted = std::collections::BTreeSet::new();
    for id in ids {
        if matches!(tasks.owned(now, &owner, &id).await, Ok(Some(_))) {
            granted.insert(id);
        }
    }
    granted
}

/// The owner key of a caller: its principal, or the anonymous caller.
fn owner_of(caller: &Caller) -> String {
    match caller.principal() {
        Some(p) => format!("principal:{p}"),
        None => "anonymous".to_owned(),
    }
}

/// An unguessable task id: 128 random bits, hex.
fn new_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::getrandom(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The `CallToolResult` a completed task inlines (no related-task `_meta`).
fn result_map(parts: &ResultParts) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert("resultType".into(), json!("complete"));
    map.insert(
        "content".into(),
        serde_json::from_str(&parts.content).unwrap_or_else(|_| json!([])),
    );
    if let Some(s) = parts.structured.as_ref().map(|s| s.text()) {
        if let Ok(v) = serde_json::from_str::<Value>(&s) {
            map.insert("structuredContent".into(), v);
        }
    }
    if parts.is_error {
        map.insert("isError".into(), json!(true));
    }
    map
}

/// The terminal state of a finished run: a tool result is `completed` (`isError: true`
/// included), except the `internal` failure (a handler that panicked or failed internally),
/// which is the server's own failure and leaves the task `failed` with -32603.
fn finished(parts: &ResultParts) -> TaskDetail {
    let internal = parts.is_error
        && parts
            .structured
            .as_ref()
            .and_then(|s| serde_json::from_str::<Value>(&s.text()).ok())
            .is_some_and(|v| v.pointer("/failure/code") == Some(&json!("internal")));
    if internal {
        TaskDetail::Failed { error: panicked() }
    } else {
        TaskDetail::Completed {
            result: result_map(parts),
        }
    }
}

fn task_error(e: &CoreError) -> TaskError {
    TaskError {
        code: i64::from(e.code()),
        message: e.to_string(),
        data: e.data(),
    }
}

fn panicked() -> TaskError {
    TaskError {
        code: -32603,
        message: "Internal error".into(),
        data: None,
    }
}

/// The -32021 for a task tool called without the extension, or for `tasks/*` without it.
pub(crate) fn missing_extension() -> Answer {
    Answer::Error {
        cause: Cause::MissingCapability,
        message: "Missing required client capability: io.modelcontextprotocol/tasks".into(),
        data: Some(missing_capability_data()),
    }
}

fn unknown_task() -> Answer {
    Answer::error(Cause::InvalidParams, "Unknown or expired taskId")
}

fn body(text: &str, result_type: &'static str) -> Answer {
    match members_text(text) {
        Some(body) => Answer::Result { body, result_type },
        None => Answer::error(Cause::Internal, "Internal error"),
    }
}

/// A `tools/call` of a task tool from a request that declared the extension: the MRTR round,
/// the synchronous result, or the `CreateTaskResult` of a new task whose work goes on.
pub(crate) async fn start(
    server: &Server,
    caller: &Caller,
    mode: TaskMode,
    remake: Remake,
    answers: BTreeMap<String, Box<RawValue>>,
) -> Result<HandlerOut, Answer> {
    let tasks = server.tasks();
    let cancel = CancelToken::new();
    let mut work = remake(answers, cancel.clone());
    let early = AssertUnwind(&mut work).now_or_never();
    let detail = match early {
        None => TaskDetail::Working,
        Some(Err(Panicked)) => TaskDetail::Failed { error: panicked() },
        // Input asked for before the work suspends: finish that round synchronously (MRTR
        // before the task).
        Some(Ok(Ok(PartsOutcome::InputRequired { requests }))) => {
            return Ok(HandlerOut::Input(requests))
        }
        Some(Ok(Ok(PartsOutcome::Complete(parts)))) => {
            if mode != TaskMode::Required {
                return Ok(HandlerOut::Complete(Answer::ToolResult(parts)));
            }
            finished(&parts)
        }
        // A protocol error before the work suspends (unknown tool, bad params) is the
        // request's own error, whatever the mode: no task for it.
        Some(Ok(Err(e))) => return Err(Answer::from_core(&e)),
    };
    let now = server.wall_now().0;
    tasks.sweep(now).await;
    let Some(id) = new_id() else {
        return Err(Answer::error(Cause::Internal, "Internal error"));
    };
    let ttl_ms = tasks.limits.ttl_ms;
    let mut record = TaskRecord {
        id: id.clone(),
        owner: owner_of(caller),
        created_ms: now,
        updated_ms: now,
        ttl_ms,
        purge_at_ms: now + ttl_ms,
        detail,
        status_message: None,
        responses: BTreeMap::new(),
        round: 0,
    };
    if record.status().is_terminal() {
        record.purge_at_ms = tasks.purge_when_done(&record, now);
    }
    match tasks.store.compare_and_swap(None, record.clone()).await {
        Ok(()) => {}
        Err(StoreError::Full) => {
            return Err(Answer::error(
                Cause::Internal,
                "Too many tasks are kept; try again later",
            ))
        }
        Err(_) => return Err(Answer::internal_retryable()),
    }
    // Written before it is answered: a `tasks/get` right after the create resolves (N40).
    if !record.status().is_terminal() {
        let wake = Arc::new(event_listener::Event::new());
        lock(&tasks.live).insert(
            id.clone(),
            Live {
                cancel: cancel.clone(),
                wake: Arc::clone(&wake),
            },
        );
        let work = run(
            server.clone(),
            id.clone(),
            work,
            remake,
            cancel.clone(),
            Arc::clone(&wake),
        );
        // Due from now, not from the spawned task's first poll.
        let due_ms = server.monotonic_clock().elapsed_ms().saturating_add(ttl_ms);
        tokio::spawn(within_ttl(server.clone(), id, due_ms, cancel, wake, work));
    }
    Ok(HandlerOut::Complete(body(
        &serde_json::to_string(&record.handle()).unwrap_or_default(),
        crate::wire::tasks::RESULT_TYPE_TASK,
    )))
}

/// A task's work bounded by its TTL on the server's monotonic clock (`due_ms`, taken when
/// the task was created), so no work outlives its
/// task even when no task request arrives to sweep it: when the TTL passes first, the work's
/// token fires, the work gets one poll to observe it and is dropped, the task leaves the
/// running count, and a sweep purges what is due (a record purged at its wall-clock deadline
/// answers -32602 from then on, as a swept one does).
async fn within_ttl(
    server: Server,
    id: String,
    due_ms: u64,
    cancel: CancelToken,
    wake: Arc<event_listener::Event>,
    work: impl Future<Output = ()>,
) {
    let clock = server.monotonic_clock();
    let left = std::time::Duration::from_millis(due_ms.saturating_sub(clock.elapsed_ms()));
    if super::deadline::within(&*clock, left, &cancel, work)
        .await
        .is_err()
    {
        wake.notify(usize::MAX);
        let tasks = server.tasks();
        tasks.sweep(server.wall_now().0).await;
        lock(&tasks.live).remove(&id);
    }
}

/// A panic caught while the work ran.
struct Panicked;

/// Polls the work with panics caught (a panicking worker leaves its task failed).
struct AssertUnwind<'a>(&'a mut Work);

impl Future for AssertUnwind<'_> {
    type Output = Result<Result<PartsOutcome, CoreError>, Panicked>;
    fn poll(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let work = &mut *self.0;
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work.as_mut().poll(cx))) {
            Ok(std::task::Poll::Ready(out)) => std::task::Poll::Ready(Ok(out)),
            Ok(std::task::Poll::Pending) => std::task::Poll::Pending,
            Err(_) => std::task::Poll::Ready(Err(Panicked)),
        }
    }
}

/// A task's work, detached from the request that created it.
async fn run(
    server: Server,
    id: String,
    mut work: Work,
    remake: Remake,
    cancel: CancelToken,
    wake: Arc<event_listener::Event>,
) {
    let tasks = server.tasks();
    loop {
        let outcome = AssertUnwind(&mut work).await;
        let now = server.wall_now().0;
        match outcome {
            Err(Panicked) => {
                tracing::error!(task = %id, "task worker panicked");
                tasks
                    .finish(
                        &server,
                        &id,
                        now,
                        TaskDetail::Failed { error: panicked() },
                        None,
                    )
                    .await;
                break;
            }
            Ok(Err(e)) => {
                let message = Some(e.to_string());
                tasks
                    .finish(
                        &server,
                        &id,
                        now,
                        TaskDetail::Failed {
                            error: task_error(&e),
                        },
                        message,
                    )
                    .await;
                break;
            }
            Ok(Ok(PartsOutcome::Complete(parts))) => {
                let detail = if cancel.is_cancelled() {
                    TaskDetail::Cancelled
                } else {
                    finished(&parts)
                };
                tasks.finish(&server, &id, now, detail, None).await;
                break;
            }
            Ok(Ok(PartsOutcome::InputRequired { requests })) => {
                let Some(answers) = park(&server, &id, requests, &cancel, &wake).await else {
                    break;
                };
                work = remake(answers, cancel.clone());
            }
        }
    }
    lock(&tasks.live).remove(&id);
}

/// Parks the task `input_required` with the work's requests under fresh task keys and waits
/// until `tasks/update` answered them all; `None` when the task ended meanwhile.
async fn park(
    server: &Server,
    id: &str,
    requests: BTreeMap<String, crate::core::InputRequest>,
    cancel: &CancelToken,
    wake: &event_listener::Event,
) -> Option<BTreeMap<String, Box<RawValue>>> {
    let tasks = server.tasks();
    let now = server.wall_now().0;
    let parked = tasks
        .rewrite(id, |r| {
            if r.status().is_terminal() {
                return None;
            }
            let mut next = r.clone();
            next.round += 1;
            let input_requests = requests
                .iter()
                .map(|(k, req)| {
                    (
                        format!("{}.{k}", next.round),
                        serde_json::to_value(req).unwrap_or(Value::Null),
                    )
                })
                .collect();
            next.detail = TaskDetail::InputRequired { input_requests };
            next.updated_ms = now;
            Some(next)
        })
        .await;
    match parked {
        Ok(Some(record)) => announce(server, &record),
        _ => return None,
    }
    loop {
        let listener = wake.listen();
        match tasks.store.load(id).await {
            Ok(Some(r)) if r.status() == TaskStatus::Working => return Some(r.handler_answers()),
            Ok(Some(r)) if r.status() == TaskStatus::InputRequired => {}
            _ => return None,
        }
        if cancel.is_cancelled() {
            return None;
        }
        match select(listener, Box::pin(cancel.cancelled())).await {
            Either::Left(_) => {}
            Either::Right(_) => return None,
        }
    }
}

/// `tasks/get`, `tasks/update`, `tasks/cancel` (all `resultType: "complete"`).
pub(crate) async fn route(ctx: &Ctx, method: &str, params: &Params<'_>) -> Answer {
    if !ctx.caps.declares_tasks() {
        return missing_extension();
    }
    let id = match string_param(params, "taskId") {
        Ok(id) => id,
        Err(answer) => return answer,
    };
    let server = &ctx.server;
    let tasks = server.tasks();
    let owner = owner_of(&ctx.caller);
    let now = server.wall_now().0;
    let record = match tasks.owned(now, &owner, &id).await {
        Ok(Some(r)) => r,
        Ok(None) => return unknown_task(),
        Err(answer) => return answer,
    };
    match method {
        crate::wire::tasks::TASKS_GET => body(&record.detailed().to_json(), "complete"),
        crate::wire::tasks::TASKS_UPDATE => update(ctx, tasks, &id, params, now).await,
        _ => cancel(server, tasks, &id, now).await,
    }
}

async fn update(ctx: &Ctx, tasks: &Tasks, id: &str, params: &Params<'_>, now: u64) -> Answer {
    let responses: BTreeMap<String, Box<RawValue>> = match params
        .get("inputResponses")
        .map(|raw| serde_json::from_str(raw.get()))
    {
        Some(Ok(r)) => r,
        _ => {
            return Answer::error(Cause::InvalidParams, "inputResponses must be an object");
        }
    };
    let written = tasks
        .rewrite(id, |r| {
            let TaskDetail::InputRequired { input_requests } = &r.detail else {
                return None;
            };
            // Unknown or already answered keys are ignored (the update is still acked).
            let mut left = input_requests.clone();
            let mut next = r.clone();
            let mut took = false;
            for (key, value) in &responses {
                if left.remove(key).is_some() {
                    next.responses.insert(key.clone(), value.get().to_owned());
                    took = true;
                }
            }
            if !took {
                return None;
            }
            next.detail = if left.is_empty() {
                TaskDetail::Working
            } else {
                TaskDetail::InputRequired {
                    input_requests: left,
                }
            };
            next.updated_ms = now;
            Some(next)
        })
        .await;
    match written {
        Ok(Some(record)) => {
            announce(&ctx.server, &record);
            if let Some(l) = lock(&tasks.live).get(id) {
                l.wake.notify(usize::MAX);
            }
            Answer::complete(Map::new())
        }
        Ok(None) => Answer::complete(Map::new()),
        Err(_) => Answer::internal_retryable(),
    }
}

async fn cancel(server: &Server, tasks: &Tasks, id: &str, now: u64) -> Answer {
    // Terminal tasks get the same empty ack (idempotent).
    tasks
        .finish(
            server,
            id,
            now,
            TaskDetail::Cancelled,
            Some("cancelled by the client".into()),
        )
        .await;
    if let Some(l) = lock(&tasks.live).get(id) {
        l.cancel.cancel();
        l.wake.notify(usize::MAX);
    }
    Answer::complete(Map::new())
}
