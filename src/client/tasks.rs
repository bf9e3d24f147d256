//! The Tasks extension on the client (`io.modelcontextprotocol/tasks`).
//!
//! - Declared per request and only when the host asks: [`Client::call_tool_task`] and the
//!   `tasks/*` methods add `extensions["io.modelcontextprotocol/tasks"]: {}` to that request's
//!   `clientCapabilities`, keeping whatever else the call declares ([`with_tasks`]). Nothing
//!   else declares it, so a plain [`Client::call_tool`] never receives a task: a
//!   `resultType: "task"` there is an invalid result.
//! - A `tools/call` answered with `resultType: "task"` is a [`TaskCall::Task`] carrying the
//!   typed task; any other answer is the usual [`ToolOutcome`].
//! - [`Client::wait_task`] polls `tasks/get` until the task ends or asks for input the host
//!   has not answered yet. It honours the server's `pollIntervalMs`, clamped to
//!   [[`MIN_POLL_INTERVAL`], [`MAX_POLL_INTERVAL`]], and without one backs off from
//!   [`INITIAL_POLL_INTERVAL`] by doubling. Every wait takes a deadline of at most
//!   [`MAX_TASK_WAIT`]: no wait polls forever. [`Client::follow_task`] waits the same way on
//!   `notifications/tasks` from a listen stream.
//! - The task's TTL is a backstop (N44): a wait also ends, with [`TaskError::TtlExpired`],
//!   once the task's latest `ttlMs` plus [`TTL_GRACE`] has passed since this client first
//!   saw it ([`TrackedTask::from_task`], or the first poll of the first wait on a task tracked
//!   by id, kept for every later wait), on this client's monotonic clock, never on the
//!   server's `createdAt`. Every poll and notification refreshes `ttlMs` (it may change);
//!   `null` sets no backstop. A purged task's -32602 is still [`TaskError::UnknownTask`].
//! - Input is answered only by the host, through [`Client::update_task`]; nothing answers on
//!   its own. Keys already answered are remembered per task ([`TrackedTask`]), so a poll that
//!   still shows them does not ask the host twice.
//! - [`Client::cancel_task`] sends `tasks/cancel`; `notifications/cancelled` never cancels a
//!   task.
//! - Over HTTP the transport sets `Mcp-Name` to the `taskId` of every `tasks/*` request.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tokio::time::Instant;

use crate::client::connection::{CallOptions, Client, ListenMsg};
use crate::client::error::{ClientError, InvalidResult, RpcError, RpcErrorKind};
use crate::client::methods::{check_elicit_result, RoundInput, ToolOutcome};
use crate::wire::jsonrpc::{ErrorCode, Notification, RequestId};
use crate::wire::listen;
use crate::wire::meta::SUBSCRIPTION_ID;
use crate::wire::result::{decode_lenient_owned, Method};
use crate::wire::tasks::{
    read_create_result, DetailedTask, Task, TaskDetail, TaskStatus, LISTEN_TASK_IDS,
    TASKS_CANCEL as CANCEL, TASKS_EXTENSION, TASKS_GET as GET, TASKS_UPDATE as UPDATE,
    TASK_STATUS_NOTIFICATION,
};
use crate::wire::{ElicitRequestParams, InputRequest};

/// The first wait between polls when the server gives no `pollIntervalMs`; each further
/// unhinted wait doubles, up to [`MAX_POLL_INTERVAL`].
pub const INITIAL_POLL_INTERVAL: Duration = Duration::from_millis(250);

/// The shortest wait between two polls, whatever `pollIntervalMs` says: a server that hints
/// 0 must not turn the client into a busy loop.
pub const MIN_POLL_INTERVAL: Duration = Duration::from_millis(50);

/// The longest wait between two polls, whatever `pollIntervalMs` says and however far the
/// backoff has grown: a task that ends is seen within this.
pub const MAX_POLL_INTERVAL: Duration = Duration::from_secs(10);

/// The longest one wait may last. A task that runs longer is waited for again by its id
/// (task ids outlive the wait).
pub const MAX_TASK_WAIT: Duration = Duration::from_secs(3600);

/// How long past a task's `ttlMs` a wait keeps going before the TTL ends it
/// ([`TaskError::TtlExpired`]). The TTL is measured on this client's clock from when it first
/// saw the task, which is later than the server's `createdAt` by the network delay, so the
/// task can only expire earlier on the server than here, never later; the grace is for a
/// server that marks an expired task `failed` on its next poll, and for a poll sent just before
/// the expiry: it is allowed to land and report how the task ended.
pub const TTL_GRACE: Duration = Duration::from_secs(5);

/// The most input-request keys one [`TrackedTask`] remembers as answered. Keys are unique
/// over a task's life, so a task that asks for more is refused rather than remembered
/// without bound.
pub const MAX_ANSWERED_KEYS: usize = 1024;

/// How a `tools/call` that declared the extension ended.
#[derive(Debug, Clone)]
pub enum TaskCall {
    /// The server answered at once: success, the tool's own failure, or input required.
    Done(ToolOutcome),
    /// The server made it a task (`resultType: "task"`): the handle; poll or follow it by
    /// its id.
    Task(Task),
}

/// Why a task call, poll, update or cancel failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum TaskError {
    /// The server knows no such task (-32602): never created, expired and purged, or bound
    /// to another caller.
    #[error("unknown task {task_id:?}: {error}")]
    UnknownTask {
        /// The task id asked for.
        task_id: String,
        /// The server's error (boxed: it is the largest variant).
        error: Box<RpcError>,
    },
    /// The server requires the extension and the request did not declare it (-32021).
    #[error("the tasks extension was not negotiated: {0}")]
    NotNegotiated(Box<RpcError>),
    /// The wait's deadline passed before the task ended or asked for new input.
    #[error("task {task_id:?} was still {} after waiting {waited:?}", status.as_str())]
    WaitDeadline {
        /// The task.
        task_id: String,
        /// How long the wait lasted.
        waited: Duration,
        /// The status of the last poll.
        status: TaskStatus,
    },
    /// The task's own TTL ran out before it ended or asked for new input: this client
    /// first saw it more than its latest `ttlMs` plus [`TTL_GRACE`] ago. The server may
    /// already have purged it (its id would then be unknown); polling on would likely wait
    /// for nothing.
    #[error("task {task_id:?} was still {} after its ttlMs of {ttl_ms} ran out (waited {waited:?})", status.as_str())]
    TtlExpired {
        /// The task.
        task_id: String,
        /// The last `ttlMs` the server reported (it may change over the task's life).
        ttl_ms: u64,
        /// How long the wait lasted.
        waited: Duration,
        /// The status of the last poll or notification.
        status: TaskStatus,
    },
    /// The server's task answer breaks the extension's shapes.
    #[error("invalid {method} result: {reason}")]
    Invalid {
        /// The request's method.
        method: String,
        /// What was wrong.
        reason: String,
    },
    /// Any other failure of the request.
    #[error(transparent)]
    Client(ClientError),
}

impl From<ClientError> for TaskError {
    fn from(e: ClientError) -> Self {
        TaskError::Client(e)
    }
}

/// `options` with the Tasks extension added to its `clientCapabilities.extensions`; every
/// other capability and extension it declares is kept.
///
/// # Errors
/// [`ClientError::Request`] when the capabilities or their `extensions` are not objects.
pub fn with_tasks(options: &CallOptions) -> Result<CallOptions, ClientError> {
    let mut capabilities = match options.capabilities.clone() {
        None => Map::new(),
        Some(Value::Object(c)) => c,
        Some(_) => {
            return Err(ClientError::Request(
                "clientCapabilities must be an object".to_owned(),
            ))
        }
    };
    let extensions = capabilities
        .entry("extensions")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(extensions) = extensions else {
        return Err(ClientError::Request(
            "clientCapabilities.extensions must be an object".to_owned(),
        ));
    };
    extensions.insert(TASKS_EXTENSION.to_owned(), Value::Object(Map::new()));
    let mut out = options.clone();
    out.capabilities = Some(Value::Object(capabilities));
    Ok(out)
}

/// The waits between polls: the server's hint, clamped, else a doubling backoff.
#[derive(Debug, Clone)]
pub struct PollSchedule {
    unhinted: Duration,
}

impl Default for PollSchedule {
    fn default() -> Self {
        PollSchedule {
            unhinted: INITIAL_POLL_INTERVAL,
        }
    }
}

impl PollSchedule {
    /// The wait before the next poll, given the last poll's `pollIntervalMs`.
    pub fn next(&mut self, hint_ms: Option<u64>) -> Duration {
        match hint_ms {
            Some(ms) => Duration::from_millis(ms).clamp(MIN_POLL_INTERVAL, MAX_POLL_INTERVAL),
            None => {
                let wait = self.unhinted;
                self.unhinted = (wait * 2).min(MAX_POLL_INTERVAL);
                wait
            }
        }
    }
}

/// One task the host follows: its id, when this client first saw it (the start of its TTL
/// on this client's clock) and the input keys the host already answered.
///
/// Like the answered keys, the first sighting belongs to this value: a clone copies it as it
/// stands and is not told of a sighting made through the original later (a clone that shared
/// it but not the answered keys would be half one task, half another).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrackedTask {
    task_id: String,
    /// Set once, by [`TrackedTask::from_task`] or the first poll or notification that shows
    /// the task; a `OnceLock` because the waits take `&TrackedTask` and must not restart the
    /// TTL clock (N44) on each wait.
    first_seen: OnceLock<Instant>,
    answered: BTreeSet<String>,
}

impl TrackedTask {
    /// Follows the task with this id, stored earlier: this client has not seen it yet, so
    /// the task's TTL is measured from the first poll of the first wait on this value, and
    /// every later wait keeps that start. A task just created is tracked with
    /// [`TrackedTask::from_task`] instead.
    #[must_use]
    pub fn new(task_id: impl Into<String>) -> Self {
        TrackedTask {
            task_id: task_id.into(),
            first_seen: OnceLock::new(),
            answered: BTreeSet::new(),
        }
    }

    /// Follows the task the server just returned ([`TaskCall::Task`]): its TTL is measured
    /// from now on this client's monotonic clock (never from the server's `createdAt`, which
    /// is another machine's clock). Call it when the task arrives.
    #[must_use]
    pub fn from_task(task: &Task) -> Self {
        TrackedTask {
            first_seen: OnceLock::from(Instant::now()),
            ..TrackedTask::new(task.task_id.clone())
        }
    }

    /// The task id.
    #[must_use]
    pub fn id(&self) -> &str {
        &self.task_id
    }

    /// When this client first saw the task ([`TrackedTask::from_task`], or the first poll of
    /// the first wait); `None` for a task tracked by its id alone and not polled yet.
    #[must_use]
    pub fn first_seen(&self) -> Option<Instant> {
        self.first_seen.get().copied()
    }

    /// The first sighting, set to now if this is it.
    fn seen(&self) -> Instant {
        *self.first_seen.get_or_init(Instant::now)
    }

    /// The input keys answered so far through [`Client::update_task`].
    pub fn answered(&self) -> impl Iterator<Item = &str> {
        self.answered.iter().map(String::as_str)
    }

    /// The input requests of `task` not answered yet (empty unless it is `input_required`),
    /// each `{method, params}` as received.
    #[must_use]
    pub fn outstanding<'t>(&self, task: &'t DetailedTask) -> BTreeMap<&'t str, &'t Value> {
        match &task.detail {
            TaskDetail::InputRequired { input_requests } => input_requests
                .iter()
                .filter(|(key, _)| !self.answered.contains(key.as_str()))
                .map(|(key, request)| (key.as_str(), request))
                .collect(),
            _ => BTreeMap::new(),
        }
    }

    /// Whether a wait ends at `task`: a terminal status, or input required with a key not
    /// answered yet.
    fn settles(&self, task: &DetailedTask) -> bool {
        match task.task.status {
            TaskStatus::Working => false,
            TaskStatus::InputRequired => !self.outstanding(task).is_empty(),
            _ => true,
        }
    }
}

/// Checks one `tasks/update`'s answers against the task's outstanding input requests: at
/// least one answer, each for an outstanding key (a subset is allowed), each answer to an
/// `elicitation/create` an `ElicitResult`.
///
/// # Errors
/// Why the first offending answer (in key order) cannot be sent.
pub fn check_task_answers(
    tracked: &TrackedTask,
    asked: &DetailedTask,
    responses: &Map<String, Value>,
) -> Result<(), String> {
    if responses.is_empty() {
        return Err("no answer to send".to_owned());
    }
    let outstanding = tracked.outstanding(asked);
    for (key, answer) in responses {
        if tracked.answered.contains(key) {
            return Err(format!("input request {key:?} was already answered"));
        }
        let Some(request) = outstanding.get(key.as_str()) else {
            return Err(format!(
                "answer {key:?} matches no outstanding input request"
            ));
        };
        // Each entry is the standalone request it wraps (checked when it was read).
        if let Ok(InputRequest::ElicitRequest(elicit)) =
            serde_json::from_value::<InputRequest>((*request).clone())
        {
            let url = matches!(elicit.params, ElicitRequestParams::UrlParams(_));
            check_elicit_result(answer, url)
                .map_err(|reason| format!("answer {key:?}: {reason}"))?;
        }
    }
    if tracked.answered.len() + responses.len() > MAX_ANSWERED_KEYS {
        return Err(format!(
            "the task asked for more than {MAX_ANSWERED_KEYS} answers"
        ));
    }
    Ok(())
}

/// The deadline a wait may take.
fn check_wait(wait: Duration) -> Result<(), ClientError> {
    if wait.is_zero() || wait > MAX_TASK_WAIT {
        return Err(ClientError::Request(format!(
            "task wait {wait:?} is outside (0, {MAX_TASK_WAIT:?}]"
        )));
    }
    Ok(())
}

/// Where a wait ends: the caller's deadline, or the task's TTL backstop when that comes first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WaitEnd {
    /// The caller's deadline.
    Deadline(Instant),
    /// First seen + `ttlMs` + [`TTL_GRACE`], before the caller's deadline.
    Ttl {
        /// When the backstop falls.
        at: Instant,
        /// The `ttlMs` it was computed from.
        ttl_ms: u64,
    },
}

impl WaitEnd {
    fn at(self) -> Instant {
        match self {
            WaitEnd::Deadline(at) | WaitEnd::Ttl { at, .. } => at,
        }
    }

    /// What is left of the wait at `now`: zero from the end on (the end itself included).
    fn left(self, now: Instant) -> Duration {
        self.at().saturating_duration_since(now)
    }
}

/// Where a wait with the caller's `deadline` ends, for a task this client first saw at
/// `first_seen` (`None`: not yet) whose latest `ttlMs` is `ttl_ms` (`None`: `null`, i.e.
/// unlimited, or not read yet): `min(deadline, first_seen + ttl_ms + grace)`. A tie is the
/// caller's deadline; a backstop past what the clock can hold is no backstop.
fn wait_end(
    first_seen: Option<Instant>,
    ttl_ms: Option<u64>,
    grace: Duration,
    deadline: Instant,
) -> WaitEnd {
    let backstop = first_seen.zip(ttl_ms).and_then(|(seen, ttl_ms)| {
        let after = Duration::from_millis(ttl_ms).checked_add(grace)?;
        Some(WaitEnd::Ttl {
            at: seen.checked_add(after)?,
            ttl_ms,
        })
    });
    match backstop {
        Some(ttl) if ttl.at() < deadline => ttl,
        _ => WaitEnd::Deadline(deadline),
    }
}

/// One wait on one task: when it began, the caller's deadline, what it knows of the task's
/// TTL (refreshed by every poll and notification: `ttlMs` may change over the task's life;
/// the first sighting copied from the [`TrackedTask`], which keeps it across waits) and the
/// task's last status.
#[derive(Debug, Clone)]
struct Wait {
    start: Instant,
    until: Instant,
    first_seen: Option<Instant>,
    ttl_ms: Option<u64>,
    status: TaskStatus,
}

impl Wait {
    /// A wait of `wait` (checked by [`check_wait`]) beginning now.
    fn begin(tracked: &TrackedTask, wait: Duration) -> Self {
        let start = Instant::now();
        Wait {
            start,
            until: start + wait,
            first_seen: tracked.first_seen(),
            ttl_ms: None,
            status: TaskStatus::Working,
        }
    }

    /// Takes in the task a poll or notification just showed, settled or not: a wait that
    /// ends at input the host must answer has seen the task, and the wait after the answer
    /// counts the TTL from that sighting.
    fn saw(&mut self, tracked: &TrackedTask, task: &Task) {
        self.first_seen = Some(tracked.seen());
        self.ttl_ms = task.ttl_ms;
        self.status = task.status;
    }

    fn end(&self) -> WaitEnd {
        wait_end(self.first_seen, self.ttl_ms, TTL_GRACE, self.until)
    }

    /// The error of a wait that reached its end.
    fn over(&self, task_id: &str) -> TaskError {
        let task_id = task_id.to_owned();
        let waited = self.start.elapsed();
        let status = self.status;
        match self.end() {
            WaitEnd::Deadline(_) => TaskError::WaitDeadline {
                task_id,
                waited,
                status,
            },
            WaitEnd::Ttl { ttl_ms, .. } => TaskError::TtlExpired {
                task_id,
                ttl_ms,
                waited,
                status,
            },
        }
    }
}

/// A `tasks/*` failure in the extension's terms.
fn task_error(task_id: &str, e: ClientError) -> TaskError {
    match e {
        ClientError::Rpc(rpc) if rpc.kind == RpcErrorKind::Standard(ErrorCode::InvalidParams) => {
            TaskError::UnknownTask {
                task_id: task_id.to_owned(),
                error: Box::new(rpc),
            }
        }
        ClientError::Rpc(rpc) if rpc.kind == RpcErrorKind::MissingRequiredClientCapability => {
            TaskError::NotNegotiated(Box::new(rpc))
        }
        other => TaskError::Client(other),
    }
}

fn invalid(method: &str, reason: impl Into<String>) -> TaskError {
    TaskError::Invalid {
        method: method.to_owned(),
        reason: reason.into(),
    }
}

/// The `resultType` of a result object: `Ok(None)` when absent.
fn result_type<'v>(method: &str, value: &'v Value) -> Result<Option<&'v str>, TaskError> {
    match value.get("resultType") {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(invalid(method, "resultType is not a string")),
    }
}

/// Reads the acknowledgement of `tasks/update` or `tasks/cancel`: `resultType` `complete`.
fn read_ack(client: &Client, method: &str, value: &Value) -> Result<(), TaskError> {
    if !value.is_object() {
        return Err(invalid(method, "result is not a JSON object"));
    }
    match result_type(method, value)? {
        Some("complete") => Ok(()),
        None => client
            .lenient_result_type(method)
            .map_err(TaskError::Client),
        Some(other) => Err(invalid(
            method,
            format!("resultType {other:?} where only \"complete\" acknowledges"),
        )),
    }
}

/// A follow's listen stream: forgotten, and cancelled on the wire, however the wait ends.
struct ListenGuard<'a> {
    client: &'a Client,
    id: RequestId,
}

impl Drop for ListenGuard<'_> {
    fn drop(&mut self) {
        self.client.shared.close_listen(&self.id, true);
    }
}

/// The params of a stream notification, when its `_meta.subscriptionId` is this stream's.
fn stream_params(n: &Notification, subscription: &str) -> Option<Value> {
    let params: Value = serde_json::from_str(n.params.as_deref()?.get()).ok()?;
    let id = params.get("_meta")?.get(SUBSCRIPTION_ID)?;
    let ours: Value = serde_json::from_str(subscription).ok()?;
    (*id == ours).then_some(params)
}

/// The task ids an acknowledgement lists under `notifications.taskIds`.
fn acknowledged_task_ids(n: &Notification, subscription: &str) -> Option<Vec<String>> {
    let params = stream_params(n, subscription)?;
    let ids = params
        .get("notifications")?
        .get(LISTEN_TASK_IDS)?
        .as_array()?;
    ids.iter().map(|v| v.as_str().map(str::to_owned)).collect()
}

/// The detailed task a `notifications/tasks` carries (its `_meta` aside).
fn notified_task(n: &Notification, subscription: &str) -> Option<DetailedTask> {
    let mut params = stream_params(n, subscription)?;
    params.as_object_mut()?.remove("_meta");
    DetailedTask::read(&params).ok()
}

impl Client {
    /// Whether the server's discovery advertised the Tasks extension.
    #[must_use]
    pub fn tasks_advertised(&self) -> bool {
        self.discovery().extensions.get(TASKS_EXTENSION).is_some()
    }

    /// One round of `tools/call` declaring the Tasks extension: the server may answer at
    /// once ([`TaskCall::Done`], as [`Client::call_tool`]) or make it a task
    /// ([`TaskCall::Task`]).
    ///
    /// # Errors
    /// [`TaskError::Invalid`] for a task result that breaks the extension's shape, or the
    /// request's [`ClientError`].
    pub async fn call_tool_task(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        round: RoundInput,
        options: &CallOptions,
    ) -> Result<TaskCall, TaskError> {
        let mut params = Map::new();
        params.insert("name".into(), Value::String(name.to_owned()));
        if let Some(arguments) = arguments {
            params.insert("arguments".into(), Value::Object(arguments));
        }
        round.write(&mut params);
        let (call, _) = self.send_task_call(name, params, None, options).await?;
        Ok(call)
    }

    /// [`Client::call_tool_task`] with `arguments` sent exactly as given (as
    /// [`Client::call_tool_exact`]), and the result beside its typed reading, byte-exact.
    ///
    /// # Errors
    /// As [`Client::call_tool_task`]; [`ClientError::Request`] for arguments that are not
    /// one JSON object (nothing is sent).
    pub async fn call_tool_task_exact(
        &self,
        name: &str,
        arguments: Option<&RawValue>,
        round: RoundInput,
        options: &CallOptions,
    ) -> Result<(TaskCall, Box<RawValue>), TaskError> {
        if let Some(arguments) = arguments {
            crate::client::methods::check_exact_arguments(arguments)?;
        }
        let mut params = Map::new();
        params.insert("name".into(), Value::String(name.to_owned()));
        round.write(&mut params);
        let exact = arguments.map(|a| ("arguments", a));
        self.send_task_call(name, params, exact, options).await
    }

    /// Sends the `tools/call` (retrying once after -32020 when asked, as `call_tool` does)
    /// and reads either shape.
    async fn send_task_call(
        &self,
        name: &str,
        params: Map<String, Value>,
        exact: Option<(&str, &RawValue)>,
        options: &CallOptions,
    ) -> Result<(TaskCall, Box<RawValue>), TaskError> {
        let options = with_tasks(options)?;
        let method = Method::ToolsCall.name();
        let retry = options
            .retry_header_mismatch
            .unwrap_or(self.options().retry_header_mismatch);
        let first = self
            .shared
            .round_trip_exact(method, params.clone(), exact, &options)
            .await;
        let raw = match first {
            Err(ClientError::Rpc(e)) if retry && e.kind == RpcErrorKind::HeaderMismatch => {
                self.refresh_after_mismatch(name, e, &options).await?;
                self.shared
                    .round_trip_exact(method, params, exact, &options)
                    .await?
            }
            other => other?,
        };
        let value: Value = serde_json::from_str(raw.get()).map_err(|e| {
            ClientError::Invalid(InvalidResult::Frame {
                method: method.to_owned(),
                reason: e.to_string(),
            })
        })?;
        if result_type(method, &value)? == Some("task") {
            let task = read_create_result(&value).map_err(|e| invalid(method, e.to_string()))?;
            return Ok((TaskCall::Task(task), raw));
        }
        let value = self.shared.lenient(Method::ToolsCall, value)?;
        let decoded = decode_lenient_owned(Method::ToolsCall, value).map_err(|error| {
            ClientError::Invalid(InvalidResult::Result {
                method: method.to_owned(),
                error,
            })
        })?;
        Ok((TaskCall::Done(self.tool_outcome(name, decoded)?), raw))
    }

    /// One `tasks/get`: the task's current state (its result inlined once completed).
    ///
    /// # Errors
    /// [`TaskError::UnknownTask`], [`TaskError::NotNegotiated`], [`TaskError::Invalid`], or
    /// the request's [`ClientError`].
    pub async fn get_task(
        &self,
        task_id: &str,
        options: &CallOptions,
    ) -> Result<DetailedTask, TaskError> {
        let value = self.task_request(GET, task_id, None, options).await?;
        match result_type(GET, &value)? {
            Some("complete") => {}
            None => self.lenient_result_type(GET)?,
            Some(other) => {
                return Err(invalid(
                    GET,
                    format!("resultType {other:?} where tasks/get answers \"complete\""),
                ))
            }
        }
        let task = DetailedTask::read(&value).map_err(|e| invalid(GET, e.to_string()))?;
        if task.task.task_id != task_id {
            return Err(invalid(
                GET,
                format!("asked for task {task_id:?}, got {:?}", task.task.task_id),
            ));
        }
        // Each input request is the standalone request it wraps: it must be one.
        if let TaskDetail::InputRequired { input_requests } = &task.detail {
            for (key, request) in input_requests {
                serde_json::from_value::<InputRequest>(request.clone()).map_err(|e| {
                    invalid(GET, format!("input request {key:?} is not a request: {e}"))
                })?;
            }
        }
        Ok(task)
    }

    /// `tasks/update`: sends the host's answers to some or all of `asked`'s outstanding input
    /// requests (checked first with [`check_task_answers`]; nothing is sent when they fail)
    /// and remembers their keys in `tracked`. The task resumes on the server's own time:
    /// poll or follow it again.
    ///
    /// # Errors
    /// [`ClientError::Request`] for answers that cannot be sent, or as [`Client::get_task`].
    pub async fn update_task(
        &self,
        tracked: &mut TrackedTask,
        asked: &DetailedTask,
        responses: Map<String, Value>,
        options: &CallOptions,
    ) -> Result<(), TaskError> {
        if asked.task.task_id != tracked.id() {
            return Err(ClientError::Request(format!(
                "the input requests are task {:?}'s, not {:?}'s",
                asked.task.task_id,
                tracked.id()
            ))
            .into());
        }
        check_task_answers(tracked, asked, &responses).map_err(ClientError::Request)?;
        let keys: Vec<String> = responses.keys().cloned().collect();
        let value = self
            .task_request(
                UPDATE,
                tracked.id(),
                Some(("inputResponses", Value::Object(responses))),
                options,
            )
            .await?;
        read_ack(self, UPDATE, &value)?;
        tracked.answered.extend(keys);
        Ok(())
    }

    /// `tasks/cancel`: asks the server to cancel the task. Cancellation is cooperative; the
    /// task may still end otherwise (poll it to see).
    ///
    /// # Errors
    /// As [`Client::get_task`].
    pub async fn cancel_task(&self, task_id: &str, options: &CallOptions) -> Result<(), TaskError> {
        let value = self.task_request(CANCEL, task_id, None, options).await?;
        read_ack(self, CANCEL, &value)
    }

    /// Polls `tasks/get` until the task ends or asks for input not answered through
    /// `tracked` yet, for at most `wait`, and no longer than the task's TTL backstop: its
    /// latest `ttlMs` plus [`TTL_GRACE`] from when this client first saw it
    /// ([`TrackedTask::from_task`]; for a task tracked by id, the first poll of the first
    /// wait on `tracked`, which every later wait keeps), none when `ttlMs` is `null`. Each
    /// request's own deadline is cut to what is left of the wait, and a poll that would start
    /// past its end is not sent.
    ///
    /// # Errors
    /// [`TaskError::WaitDeadline`] when `wait` runs out first ([`ClientError::Request`] when
    /// it is outside (0, [`MAX_TASK_WAIT`]]), [`TaskError::TtlExpired`] when the TTL backstop
    /// comes first, or any error of [`Client::get_task`] ([`TaskError::UnknownTask`] for a
    /// task the server purged).
    pub async fn wait_task(
        &self,
        tracked: &TrackedTask,
        wait: Duration,
        options: &CallOptions,
    ) -> Result<DetailedTask, TaskError> {
        self.wait_task_with(tracked, wait, options, |_| {}).await
    }

    /// [`Client::wait_task`], showing `on_poll` every state a poll read, the last one
    /// included (a host that prints each poll as it comes).
    ///
    /// # Errors
    /// As [`Client::wait_task`].
    pub async fn wait_task_with(
        &self,
        tracked: &TrackedTask,
        wait: Duration,
        options: &CallOptions,
        on_poll: impl FnMut(&DetailedTask),
    ) -> Result<DetailedTask, TaskError> {
        check_wait(wait)?;
        self.poll_task(tracked, Wait::begin(tracked, wait), options, on_poll)
            .await
    }

    /// The poll loop of `wait`: until the task settles or the wait's end (the caller's
    /// deadline or the TTL backstop) comes.
    async fn poll_task(
        &self,
        tracked: &TrackedTask,
        mut wait: Wait,
        options: &CallOptions,
        mut on_poll: impl FnMut(&DetailedTask),
    ) -> Result<DetailedTask, TaskError> {
        let per_request = self.shared.deadline_of(options)?;
        let mut schedule = PollSchedule::default();
        loop {
            let end = wait.end();
            let left = end.left(Instant::now());
            // A sleep that woke at or past the end (a loaded machine) sends no poll: a
            // zero deadline would be refused as a request error instead of ending the wait.
            if left.is_zero() {
                return Err(wait.over(tracked.id()));
            }
            let poll = options.clone().deadline(per_request.min(left));
            let task = match self.get_task(tracked.id(), &poll).await {
                Err(TaskError::Client(ClientError::Deadline { .. }))
                    if Instant::now() >= end.at() =>
                {
                    return Err(wait.over(tracked.id()))
                }
                other => other?,
            };
            on_poll(&task);
            wait.saw(tracked, &task.task);
            if tracked.settles(&task) {
                return Ok(task);
            }
            let pause = schedule.next(task.task.poll_interval_ms);
            // The next poll would start at or past the end: nothing more can be learned.
            if Instant::now() + pause >= wait.end().at() {
                return Err(wait.over(tracked.id()));
            }
            tokio::time::sleep(pause).await;
        }
    }

    /// Waits like [`Client::wait_task`], on `notifications/tasks` instead of a poll schedule:
    /// opens `subscriptions/listen` for the task's id, reads the task once after the
    /// acknowledgement (a change before it would be missed otherwise), then takes each
    /// notification for that id, with a `tasks/get` every [`MAX_POLL_INTERVAL`] as a backstop.
    /// When the server refuses the listen request, acknowledges without the id, or ends the
    /// stream, the rest of the wait polls. The stream is cancelled when the wait ends. The
    /// task's TTL ends it as it ends [`Client::wait_task`], with the latest `ttlMs` of a poll
    /// or a notification.
    ///
    /// # Errors
    /// As [`Client::wait_task`].
    pub async fn follow_task(
        &self,
        tracked: &TrackedTask,
        wait: Duration,
        options: &CallOptions,
    ) -> Result<DetailedTask, TaskError> {
        check_wait(wait)?;
        let mut wait = Wait::begin(tracked, wait);
        let declared = with_tasks(options)?;
        let mut params = Map::new();
        params.insert(
            "notifications".into(),
            serde_json::json!({ LISTEN_TASK_IDS: [tracked.id()] }),
        );
        // No TTL is known before the first poll: the caller's deadline bounds the opening.
        let opened =
            tokio::time::timeout_at(wait.until, self.shared.open_listen(params, &declared))
                .await
                .map_err(|_| wait.over(tracked.id()))?;
        let (id, mut rx, _overflowed) = opened?;
        let _stream = ListenGuard {
            client: self,
            id: id.clone(),
        };
        let subscription = id.token().to_owned();
        // The acknowledgement first: it says whether this task's notifications will come.
        let acknowledged = loop {
            match tokio::time::timeout_at(wait.until, rx.recv()).await {
                Err(_) => return Err(wait.over(tracked.id())),
                Ok(Some(ListenMsg::Notification(n))) if n.method == listen::ACKNOWLEDGED => {
                    break acknowledged_task_ids(&n, &subscription)
                        .is_some_and(|ids| ids.iter().any(|t| t == tracked.id()));
                }
                // Nothing else may come before the acknowledgement.
                Ok(Some(ListenMsg::Notification(n))) => {
                    tracing::debug!(method = %n.method, "ignoring a notification before the acknowledgement");
                }
                Ok(Some(ListenMsg::Response(_)) | None) => break false,
            }
        };
        if !acknowledged {
            tracing::debug!(
                task = tracked.id(),
                "no task notifications; polling instead"
            );
            return self.poll_task(tracked, wait, options, |_| {}).await;
        }
        let per_request = self.shared.deadline_of(options)?;
        loop {
            let end = wait.end();
            let left = end.left(Instant::now());
            if left.is_zero() {
                return Err(wait.over(tracked.id()));
            }
            let task = self
                .get_task(
                    tracked.id(),
                    &options.clone().deadline(per_request.min(left)),
                )
                .await;
            let task = match task {
                Err(TaskError::Client(ClientError::Deadline { .. }))
                    if Instant::now() >= end.at() =>
                {
                    return Err(wait.over(tracked.id()))
                }
                other => other?,
            };
            wait.saw(tracked, &task.task);
            if tracked.settles(&task) {
                return Ok(task);
            }
            let mut backstop = (Instant::now() + MAX_POLL_INTERVAL).min(wait.end().at());
            loop {
                match tokio::time::timeout_at(backstop, rx.recv()).await {
                    // The backstop (or the wait's end): poll again.
                    Err(_) => break,
                    Ok(Some(ListenMsg::Notification(n)))
                        if n.method == TASK_STATUS_NOTIFICATION =>
                    {
                        match notified_task(&n, &subscription) {
                            Some(task) if task.task.task_id == tracked.id() => {
                                wait.saw(tracked, &task.task);
                                if tracked.settles(&task) {
                                    return Ok(task);
                                }
                                // A lowered ttlMs brings the end closer.
                                backstop = backstop.min(wait.end().at());
                            }
                            _ => tracing::debug!(
                                "ignoring a task notification for another task or malformed"
                            ),
                        }
                    }
                    Ok(Some(ListenMsg::Notification(_))) => {}
                    // The stream ended: the rest of the wait polls.
                    Ok(Some(ListenMsg::Response(_)) | None) => {
                        return self.poll_task(tracked, wait, options, |_| {}).await;
                    }
                }
            }
            if Instant::now() >= wait.end().at() {
                return Err(wait.over(tracked.id()));
            }
        }
    }

    /// The outcome of a completed task of tool `tool`: its inlined `result` read as that
    /// tool's `tools/call` result would be (the tool's own failure kept apart, and
    /// `structuredContent` checked against the output schema from the last
    /// [`Client::list_tools`]).
    ///
    /// # Errors
    /// [`ClientError::Request`] when the task is not completed; [`TaskError::Invalid`] when
    /// its result is not a complete `CallToolResult`.
    pub fn task_tool_outcome(
        &self,
        tool: &str,
        task: &DetailedTask,
    ) -> Result<ToolOutcome, TaskError> {
        let TaskDetail::Completed { result } = &task.detail else {
            return Err(ClientError::Request(format!(
                "task {:?} is {}, not completed",
                task.task.task_id,
                task.task.status.as_str()
            ))
            .into());
        };
        let mut object = result.clone();
        // The inlined result is the original CallToolResult; `resultType` on it is optional.
        match object.get("resultType") {
            None => {
                object.insert("resultType".into(), Value::from("complete"));
            }
            Some(Value::String(s)) if s == "complete" => {}
            Some(other) => {
                return Err(invalid(
                    GET,
                    format!("the task's result has resultType {other}"),
                ))
            }
        }
        let decoded = decode_lenient_owned(Method::ToolsCall, Value::Object(object))
            .map_err(|e| invalid(GET, format!("the task's result: {e}")))?;
        Ok(self.tool_outcome(tool, decoded)?)
    }

    /// Sends one `tasks/*` request for `task_id`, declaring the extension.
    async fn task_request(
        &self,
        method: &str,
        task_id: &str,
        extra: Option<(&str, Value)>,
        options: &CallOptions,
    ) -> Result<Value, TaskError> {
        let options = with_tasks(options)?;
        let mut params = Map::new();
        params.insert("taskId".into(), Value::String(task_id.to_owned()));
        if let Some((key, value)) = extra {
            params.insert(key.into(), value);
        }
        self.shared
            .round_trip(method, params, &options)
            .await
            .map_err(|e| task_error(task_id, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn n44_poll_hints_are_clamped_at_both_bounds_and_one_past() {
        let mut s = PollSchedule::default();
        assert_eq!(s.next(Some(0)), MIN_POLL_INTERVAL);
        assert_eq!(s.next(Some(49)), MIN_POLL_INTERVAL);
        assert_eq!(s.next(Some(50)), Duration::from_millis(50));
        assert_eq!(s.next(Some(51)), Duration::from_millis(51));
        assert_eq!(s.next(Some(10_000)), MAX_POLL_INTERVAL);
        assert_eq!(s.next(Some(10_001)), MAX_POLL_INTERVAL);
        assert_eq!(s.next(Some(u64::MAX)), MAX_POLL_INTERVAL);
    }

    #[test]
    fn unhinted_polls_double_from_the_initial_wait_up_to_the_maximum() {
        let mut s = PollSchedule::default();
        let waits: Vec<u128> = (0..8).map(|_| s.next(None).as_millis()).collect();
        assert_eq!(waits, [250, 500, 1000, 2000, 4000, 8000, 10_000, 10_000]);
        // A hint in between does not reset or advance the backoff.
        assert_eq!(s.next(Some(300)), Duration::from_millis(300));
        assert_eq!(s.next(None), MAX_POLL_INTERVAL);
    }

    #[test]
    fn every_wait_has_a_deadline_within_the_bound() {
        assert!(check_wait(MAX_TASK_WAIT).is_ok());
        assert!(check_wait(Duration::from_millis(1)).is_ok());
        assert!(check_wait(MAX_TASK_WAIT + Duration::from_millis(1)).is_err());
        assert!(check_wait(Duration::ZERO).is_err());
    }

    const HOUR: Duration = Duration::from_secs(3600);

    #[test]
    fn n44_the_ttl_backstop_falls_at_first_seen_plus_ttl_plus_grace_and_one_past_it_is_over() {
        let seen = Instant::now();
        let deadline = seen + HOUR;
        let end = wait_end(Some(seen), Some(2000), TTL_GRACE, deadline);
        let at = seen + Duration::from_millis(2000) + TTL_GRACE;
        assert_eq!(end, WaitEnd::Ttl { at, ttl_ms: 2000 });
        assert_eq!(end.left(seen), Duration::from_millis(2000) + TTL_GRACE);
        assert_eq!(
            end.left(at - Duration::from_millis(1)),
            Duration::from_millis(1)
        );
        // At the bound the wait is over, and one past it too.
        assert_eq!(end.left(at), Duration::ZERO);
        assert_eq!(end.left(at + Duration::from_millis(1)), Duration::ZERO);
        // The grace is a parameter of the arithmetic, not hidden in it.
        assert_eq!(
            wait_end(Some(seen), Some(2000), Duration::ZERO, deadline),
            WaitEnd::Ttl {
                at: seen + Duration::from_millis(2000),
                ttl_ms: 2000
            }
        );
    }

    #[test]
    fn n44_the_earlier_of_the_callers_deadline_and_the_ttl_backstop_ends_the_wait() {
        let seen = Instant::now();
        // The backstop at the caller's deadline: the deadline (a tie is not the TTL's).
        let ttl = HOUR - TTL_GRACE;
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap();
        let deadline = seen + HOUR;
        assert_eq!(
            wait_end(Some(seen), Some(ttl_ms), TTL_GRACE, deadline),
            WaitEnd::Deadline(deadline)
        );
        // One millisecond before it: the TTL.
        assert_eq!(
            wait_end(Some(seen), Some(ttl_ms - 1), TTL_GRACE, deadline),
            WaitEnd::Ttl {
                at: deadline - Duration::from_millis(1),
                ttl_ms: ttl_ms - 1
            }
        );
        // One millisecond past it: the deadline.
        assert_eq!(
            wait_end(Some(seen), Some(ttl_ms + 1), TTL_GRACE, deadline),
            WaitEnd::Deadline(deadline)
        );
    }

    #[test]
    fn n44_no_backstop_for_a_null_ttl_an_unseen_task_or_a_ttl_past_the_clock() {
        let seen = Instant::now();
        let deadline = seen + HOUR;
        // ttlMs null: unlimited.
        assert_eq!(
            wait_end(Some(seen), None, TTL_GRACE, deadline),
            WaitEnd::Deadline(deadline)
        );
        // Not seen yet (tracked by id, before the first poll).
        assert_eq!(
            wait_end(None, Some(2000), TTL_GRACE, deadline),
            WaitEnd::Deadline(deadline)
        );
        // Huge ttlMs values neither overflow nor end the wait.
        for huge in [u64::MAX, u64::MAX - 1, u64::MAX / 1000, 1 << 53] {
            assert_eq!(
                wait_end(Some(seen), Some(huge), TTL_GRACE, deadline),
                WaitEnd::Deadline(deadline),
                "{huge}"
            );
            assert_eq!(
                wait_end(Some(seen), Some(huge), Duration::MAX, deadline),
                WaitEnd::Deadline(deadline),
                "{huge}"
            );
        }
    }

    #[test]
    fn n44_a_zero_ttl_leaves_only_the_grace() {
        let seen = Instant::now();
        let end = wait_end(Some(seen), Some(0), TTL_GRACE, seen + HOUR);
        assert_eq!(
            end,
            WaitEnd::Ttl {
                at: seen + TTL_GRACE,
                ttl_ms: 0
            }
        );
        assert_eq!(end.left(seen), TTL_GRACE);
        assert_eq!(end.left(seen + TTL_GRACE), Duration::ZERO);
    }

    fn working(ttl_ms: Option<u64>) -> Task {
        Task {
            task_id: "t-1".into(),
            status: TaskStatus::Working,
            status_message: None,
            created_at: "2026-07-28T00:00:00Z".into(),
            last_updated_at: "2026-07-28T00:00:00Z".into(),
            ttl_ms,
            poll_interval_ms: None,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn n44_the_latest_ttl_counts_raised_or_lowered_between_polls() {
        let tracked = TrackedTask::from_task(&working(Some(2000)));
        let seen = tracked.first_seen().unwrap();
        let mut wait = Wait::begin(&tracked, HOUR);
        // Before any poll no TTL is known: the caller's deadline.
        assert_eq!(wait.end(), WaitEnd::Deadline(seen + HOUR));
        wait.saw(&tracked, &working(Some(2000)));
        let first = seen + Duration::from_millis(2000) + TTL_GRACE;
        assert_eq!(wait.end().at(), first);
        // Raised: measured from the same first sighting, not from the poll that raised it.
        tokio::time::advance(Duration::from_secs(6)).await;
        wait.saw(&tracked, &working(Some(60_000)));
        let raised = seen + Duration::from_millis(60_000) + TTL_GRACE;
        assert_eq!(
            wait.end(),
            WaitEnd::Ttl {
                at: raised,
                ttl_ms: 60_000
            }
        );
        assert_eq!(wait.end().left(Instant::now()), raised - Instant::now());
        // Lowered below what has passed: over at once, with the lowered value.
        wait.saw(&tracked, &working(Some(1000)));
        assert_eq!(wait.end().left(Instant::now()), Duration::ZERO);
        match wait.over("t-1") {
            TaskError::TtlExpired {
                task_id,
                ttl_ms,
                waited,
                status,
            } => {
                assert_eq!(
                    (task_id.as_str(), ttl_ms, waited, status),
                    ("t-1", 1000, Duration::from_secs(6), TaskStatus::Working)
                );
            }
            other => panic!("{other:?}"),
        }
        // Back to null: no backstop, the caller's deadline again.
        wait.saw(&tracked, &working(None));
        assert_eq!(wait.end(), WaitEnd::Deadline(seen + HOUR));
        assert!(matches!(
            wait.over("t-1"),
            TaskError::WaitDeadline { waited, .. } if waited == Duration::from_secs(6)
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn n44_a_task_tracked_by_id_is_first_seen_at_its_first_poll() {
        let tracked = TrackedTask::new("t-1");
        assert_eq!(tracked.first_seen(), None);
        let mut wait = Wait::begin(&tracked, HOUR);
        tokio::time::advance(Duration::from_secs(3)).await;
        let polled = Instant::now();
        wait.saw(&tracked, &working(Some(2000)));
        assert_eq!(
            wait.end().at(),
            polled + Duration::from_millis(2000) + TTL_GRACE
        );
        // A later poll does not move the first sighting.
        tokio::time::advance(Duration::from_secs(1)).await;
        wait.saw(&tracked, &working(Some(2000)));
        assert_eq!(
            wait.end().at(),
            polled + Duration::from_millis(2000) + TTL_GRACE
        );
        // The tracked task keeps it: a later wait starts from it before its own first poll
        // and its polls do not move it either.
        assert_eq!(tracked.first_seen(), Some(polled));
        let mut again = Wait::begin(&tracked, HOUR);
        assert_eq!(again.first_seen, Some(polled));
        tokio::time::advance(Duration::from_secs(1)).await;
        again.saw(&tracked, &working(Some(2000)));
        assert_eq!(
            again.end().at(),
            polled + Duration::from_millis(2000) + TTL_GRACE
        );
        assert_eq!(tracked.first_seen(), Some(polled));
    }

    #[test]
    fn n36_the_declaration_is_added_beside_what_the_call_declares() {
        let plain = with_tasks(&CallOptions::default()).unwrap();
        assert_eq!(
            plain.capabilities.unwrap().to_string(),
            r#"{"extensions":{"io.modelcontextprotocol/tasks":{}}}"#
        );
        let options = CallOptions::default().capabilities(serde_json::json!({
            "elicitation": {"form": {}},
            "extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html"]}}
        }));
        let both = with_tasks(&options).unwrap();
        assert_eq!(
            both.capabilities.unwrap().to_string(),
            r#"{"elicitation":{"form":{}},"extensions":{"io.modelcontextprotocol/tasks":{},"io.modelcontextprotocol/ui":{"mimeTypes":["text/html"]}}}"#
        );
        for bad in [serde_json::json!([]), serde_json::json!({"extensions": 1})] {
            assert!(matches!(
                with_tasks(&CallOptions::default().capabilities(bad)),
                Err(ClientError::Request(_))
            ));
        }
    }
}
