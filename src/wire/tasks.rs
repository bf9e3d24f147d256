//! The Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) on the wire, for both roles.
//!
//! The extension is outside the pinned core schema, so its shapes are written here once: the
//! `Task` handle, the status-specific `DetailedTask` that `tasks/get` and `notifications/tasks`
//! carry, the `CreateTaskResult` a `tools/call` may answer with (`resultType: "task"`), the
//! params of `tasks/get`, `tasks/update` and `tasks/cancel`, and the per-request negotiation
//! check. The server's task state lives elsewhere; this module only knows the shapes.
//!
//! ```
//! use strict_mcp::wire::tasks::{DetailedTask, Task, TaskDetail, TaskStatus};
//! let task = Task {
//!     task_id: "t-1".into(),
//!     status: TaskStatus::Working,
//!     status_message: None,
//!     created_at: "2026-07-28T00:00:00Z".into(),
//!     last_updated_at: "2026-07-28T00:00:00Z".into(),
//!     ttl_ms: Some(60_000),
//!     poll_interval_ms: Some(500),
//! };
//! assert_eq!(
//!     task.create_result_json(),
//!     r#"{"resultType":"task","taskId":"t-1","status":"working","createdAt":"2026-07-28T00:00:00Z","lastUpdatedAt":"2026-07-28T00:00:00Z","ttlMs":60000,"pollIntervalMs":500}"#
//! );
//! let detailed = DetailedTask::read(&serde_json::json!({
//!     "taskId": "t-1", "status": "completed", "createdAt": "a", "lastUpdatedAt": "b",
//!     "ttlMs": null, "result": {"content": []}
//! })).unwrap();
//! assert!(matches!(detailed.detail, TaskDetail::Completed { .. }));
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// The extension's identifier (`capabilities.extensions` key on both roles).
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// `tasks/get`: the task's current `DetailedTask`.
pub const TASKS_GET: &str = "tasks/get";
/// `tasks/update`: input responses for a task in `input_required`.
pub const TASKS_UPDATE: &str = "tasks/update";
/// `tasks/cancel`: ask the server to cancel the task (cooperative).
pub const TASKS_CANCEL: &str = "tasks/cancel";
/// The extension's request methods.
pub const TASK_METHODS: [&str; 3] = [TASKS_GET, TASKS_UPDATE, TASKS_CANCEL];
/// Methods of the 2025-11-25 Tasks design that this extension removed; they do not exist
/// (-32601).
pub const REMOVED_TASK_METHODS: [&str; 2] = ["tasks/result", "tasks/list"];
/// The status notification delivered on `subscriptions/listen` for subscribed task ids.
pub const TASK_STATUS_NOTIFICATION: &str = "notifications/tasks";
/// The `notifications` filter member of `subscriptions/listen` naming the task ids to follow.
pub const LISTEN_TASK_IDS: &str = "taskIds";
/// `resultType` of a `CreateTaskResult` (no other result uses it).
pub const RESULT_TYPE_TASK: &str = "task";

/// Whether a method is one of the extension's requests (`tasks/get|update|cancel`).
#[must_use]
pub fn is_task_method(method: &str) -> bool {
    TASK_METHODS.contains(&method)
}

/// Whether a request's `clientCapabilities` declares the extension: `extensions` holds the
/// extension id with an object value (`{}` is the whole settings object). Anything else,
/// the 2025-11-25 `capabilities.tasks` slot included, declares nothing.
#[must_use]
pub fn declares_tasks(client_capabilities: &Value) -> bool {
    client_capabilities
        .get("extensions")
        .and_then(|e| e.get(TASKS_EXTENSION))
        .is_some_and(Value::is_object)
}

/// The `data` of the -32021 a request gets when the work needs a task and the request did not
/// declare the extension: `{"requiredCapabilities":{"extensions":{TASKS_EXTENSION:{}}}}`.
#[must_use]
pub fn missing_capability_data() -> Value {
    serde_json::json!({ "requiredCapabilities": { "extensions": { TASKS_EXTENSION: {} } } })
}

/// A task's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// The work is running.
    Working,
    /// The work waits for `tasks/update` input.
    InputRequired,
    /// Finished with a result (a tool error with `isError: true` included).
    Completed,
    /// Finished with a JSON-RPC error (or expired).
    Failed,
    /// Cancelled before it finished.
    Cancelled,
}

impl TaskStatus {
    /// Completed, failed and cancelled are terminal: the status never changes again.
    #[must_use]
    pub const fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }

    /// The wire spelling.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }
}

/// `ttlMs` must be present, as an integer or `null`.
fn required_nullable<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Option::<u64>::deserialize(d)
}

/// The task handle: what `CreateTaskResult` carries beside `resultType`, and the common part
/// of every `DetailedTask`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// The server-chosen, unguessable id.
    pub task_id: String,
    /// The current status.
    pub status: TaskStatus,
    /// A human-readable note on the status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// ISO 8601 creation time.
    pub created_at: String,
    /// ISO 8601 time of the last status change.
    pub last_updated_at: String,
    /// Milliseconds from `createdAt` the task stays retrievable; `None` is `null` (unbounded).
    /// Always present on the wire.
    #[serde(deserialize_with = "required_nullable")]
    pub ttl_ms: Option<u64>,
    /// The suggested polling interval in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<u64>,
}

impl Task {
    /// The `CreateTaskResult` body: `resultType: "task"` and the handle, flat (no `task`
    /// wrapper, no `result`, `inputRequests` or `requestState`), members in wire order.
    #[must_use]
    pub fn create_result_json(&self) -> String {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Create<'a> {
            result_type: &'static str,
            #[serde(flatten)]
            task: &'a Task,
        }
        serde_json::to_string(&Create {
            result_type: RESULT_TYPE_TASK,
            task: self,
        })
        .unwrap_or_default()
    }
}

/// The JSON-RPC error a `failed` task carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskError {
    /// The JSON-RPC error code.
    pub code: i64,
    /// The message.
    pub message: String,
    /// Optional details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// What a `DetailedTask` adds for its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskDetail {
    /// `working`: nothing.
    Working,
    /// `input_required`: every outstanding request, by key (each `{method, params}`).
    InputRequired {
        /// `inputRequests`, non-empty.
        input_requests: BTreeMap<String, Value>,
    },
    /// `completed`: the original result (for `tools/call`, the `CallToolResult`).
    Completed {
        /// `result`.
        result: Map<String, Value>,
    },
    /// `failed`: the JSON-RPC error.
    Failed {
        /// `error`.
        error: TaskError,
    },
    /// `cancelled`: nothing.
    Cancelled,
}

impl TaskDetail {
    /// The status this detail belongs to.
    #[must_use]
    pub const fn status(&self) -> TaskStatus {
        match self {
            TaskDetail::Working => TaskStatus::Working,
            TaskDetail::InputRequired { .. } => TaskStatus::InputRequired,
            TaskDetail::Completed { .. } => TaskStatus::Completed,
            TaskDetail::Failed { .. } => TaskStatus::Failed,
            TaskDetail::Cancelled => TaskStatus::Cancelled,
        }
    }
}

/// A task with the members of its status: the body of `tasks/get` (with `resultType:
/// "complete"`) and the params of `notifications/tasks`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DetailedTask {
    /// The handle; its `status` equals `detail.status()`.
    pub task: Task,
    /// The status-specific members.
    pub detail: TaskDetail,
}

/// Why a received task shape is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TaskShapeError {
    /// Not an object, or a handle member missing or of the wrong type.
    #[error("malformed task: {0}")]
    Malformed(String),
    /// A status-specific member is missing or has the wrong type.
    #[error("task with status {status} lacks a valid {member}")]
    MissingMember {
        /// The status.
        status: &'static str,
        /// The member (`inputRequests`, `result` or `error`).
        member: &'static str,
    },
    /// A member that belongs to another status (or to no task) is present.
    #[error("task with status {status} must not carry {member}")]
    ForeignMember {
        /// The status.
        status: &'static str,
        /// The member.
        member: &'static str,
    },
    /// `resultType` is not the one this result must have.
    #[error("resultType must be {expected}")]
    ResultType {
        /// The expected value.
        expected: &'static str,
    },
}

/// Members no task shape may carry (the 2025-11-25 names and the MRTR continuation).
const NEVER_ON_TASK: [&str; 4] = ["requestState", "task", "ttl", "pollInterval"];
/// The status-specific members.
const DETAIL_MEMBERS: [&str; 3] = ["inputRequests", "result", "error"];

/// The serialised form of a detailed task: the handle, then its status's members, then the
/// extra members of the context (`resultType` first, `_meta` last), each in wire order.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Shape<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    result_type: Option<&'static str>,
    #[serde(flatten)]
    task: &'a Task,
    #[serde(skip_serializing_if = "Option::is_none")]
    input_requests: Option<&'a BTreeMap<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a TaskError>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<Value>,
}

impl DetailedTask {
    fn shape(&self, result_type: Option<&'static str>, meta: Option<Value>) -> String {
        let (input_requests, result, error) = match &self.detail {
            TaskDetail::Working | TaskDetail::Cancelled => (None, None, None),
            TaskDetail::InputRequired { input_requests } => (Some(input_requests), None, None),
            TaskDetail::Completed { result } => (None, Some(result), None),
            TaskDetail::Failed { error } => (None, None, Some(error)),
        };
        serde_json::to_string(&Shape {
            result_type,
            task: &self.task,
            input_requests,
            result,
            error,
            meta,
        })
        .unwrap_or_default()
    }

    /// The detailed task alone, as JSON text.
    #[must_use]
    pub fn to_json(&self) -> String {
        self.shape(None, None)
    }

    /// The `tasks/get` result body: `resultType: "complete"` and the detailed task (never
    /// `requestState`).
    #[must_use]
    pub fn get_result_json(&self) -> String {
        self.shape(Some("complete"), None)
    }

    /// Reads a `DetailedTask` (a `tasks/get` result or `notifications/tasks` params). Extra
    /// members (`resultType`, `_meta`) are left to the caller; members of another status are
    /// refused.
    ///
    /// # Errors
    /// [`TaskShapeError`] for a shape that is not a valid detailed task.
    pub fn read(value: &Value) -> Result<DetailedTask, TaskShapeError> {
        let Some(obj) = value.as_object() else {
            return Err(TaskShapeError::Malformed("not an object".into()));
        };
        let task: Task = serde_json::from_value(value.clone())
            .map_err(|e| TaskShapeError::Malformed(e.to_string()))?;
        let status = task.status.as_str();
        for member in NEVER_ON_TASK {
            if obj.contains_key(member) {
                return Err(TaskShapeError::ForeignMember { status, member });
            }
        }
        let own: Option<&'static str> = match task.status {
            TaskStatus::InputRequired => Some("inputRequests"),
            TaskStatus::Completed => Some("result"),
            TaskStatus::Failed => Some("error"),
            TaskStatus::Working | TaskStatus::Cancelled => None,
        };
        for member in DETAIL_MEMBERS {
            if Some(member) != own && obj.contains_key(member) {
                return Err(TaskShapeError::ForeignMember { status, member });
            }
        }
        let missing = |member| TaskShapeError::MissingMember { status, member };
        let detail = match task.status {
            TaskStatus::Working => TaskDetail::Working,
            TaskStatus::Cancelled => TaskDetail::Cancelled,
            TaskStatus::InputRequired => {
                let requests = obj
                    .get("inputRequests")
                    .and_then(Value::as_object)
                    .filter(|m| !m.is_empty() && m.values().all(|r| r.get("method").is_some()))
                    .ok_or_else(|| missing("inputRequests"))?;
                TaskDetail::InputRequired {
                    input_requests: requests
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                }
            }
            TaskStatus::Completed => TaskDetail::Completed {
                result: obj
                    .get("result")
                    .and_then(Value::as_object)
                    .cloned()
                    .ok_or_else(|| missing("result"))?,
            },
            TaskStatus::Failed => TaskDetail::Failed {
                error: obj
                    .get("error")
                    .and_then(|e| serde_json::from_value(e.clone()).ok())
                    .ok_or_else(|| missing("error"))?,
            },
        };
        Ok(DetailedTask { task, detail })
    }

    /// Reads a `tasks/get` result: `resultType: "complete"` and a detailed task.
    ///
    /// # Errors
    /// [`TaskShapeError`] as for [`DetailedTask::read`], or a wrong `resultType`.
    pub fn read_get_result(value: &Value) -> Result<DetailedTask, TaskShapeError> {
        if value.get("resultType").and_then(Value::as_str) != Some("complete") {
            return Err(TaskShapeError::ResultType {
                expected: "complete",
            });
        }
        DetailedTask::read(value)
    }
}

/// Reads a `CreateTaskResult` (`resultType: "task"` and the flat handle).
///
/// # Errors
/// [`TaskShapeError`] for a wrong `resultType`, a malformed handle, or any of `result`,
/// `error`, `inputRequests`, `requestState`, `task`, `ttl`, `pollInterval`.
pub fn read_create_result(value: &Value) -> Result<Task, TaskShapeError> {
    if value.get("resultType").and_then(Value::as_str) != Some(RESULT_TYPE_TASK) {
        return Err(TaskShapeError::ResultType {
            expected: RESULT_TYPE_TASK,
        });
    }
    let task: Task = serde_json::from_value(value.clone())
        .map_err(|e| TaskShapeError::Malformed(e.to_string()))?;
    let status = task.status.as_str();
    for member in NEVER_ON_TASK.iter().chain(&DETAIL_MEMBERS) {
        if value.get(*member).is_some() {
            return Err(TaskShapeError::ForeignMember { status, member });
        }
    }
    Ok(task)
}

/// `tasks/get` and `tasks/cancel` params (beside `_meta`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdParams {
    /// The task.
    pub task_id: String,
}

/// `tasks/update` params (beside `_meta`): responses keyed as the task's `inputRequests`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateTaskParams {
    /// The task.
    pub task_id: String,
    /// The responses, by `inputRequests` key.
    pub input_responses: BTreeMap<String, Value>,
}

/// The params of `notifications/tasks` on a listen stream: the detailed task tagged with the
/// stream's subscription id (its exact JSON text, as [`crate::wire::listen::SubscriptionId`]).
#[must_use]
pub fn status_notification_params(task: &DetailedTask, subscription_id: &str) -> String {
    let id: Value = serde_json::from_str(subscription_id).unwrap_or(Value::Null);
    task.shape(
        None,
        Some(serde_json::json!({ super::meta::SUBSCRIPTION_ID: id })),
    )
}

/// The most task ids one `subscriptions/listen` may follow (a bound on the per-stream set and on
/// the store look-ups its acknowledgement costs).
pub const MAX_LISTEN_TASK_IDS: usize = 256;

/// Why a listen filter's `taskIds` is refused (-32602).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ListenTaskIdsError {
    /// `notifications.taskIds` is not an array of strings.
    #[error("notifications.taskIds must be an array of strings")]
    NotStrings,
    /// More ids than [`MAX_LISTEN_TASK_IDS`].
    #[error("notifications.taskIds lists more than 256 tasks")]
    TooMany,
}

/// The `taskIds` a listen request's `notifications` filter (its exact JSON text) asks to
/// follow: `None` when absent.
///
/// # Errors
/// [`ListenTaskIdsError`] for a member of the wrong type or past the bound.
pub fn listen_task_ids(
    notifications: &str,
) -> Result<Option<std::collections::BTreeSet<String>>, ListenTaskIdsError> {
    let filter: Value = serde_json::from_str(notifications).unwrap_or(Value::Null);
    let Some(ids) = filter.get(LISTEN_TASK_IDS) else {
        return Ok(None);
    };
    let ids: Vec<String> =
        serde_json::from_value(ids.clone()).map_err(|_| ListenTaskIdsError::NotStrings)?;
    if ids.len() > MAX_LISTEN_TASK_IDS {
        return Err(ListenTaskIdsError::TooMany);
    }
    Ok(Some(ids.into_iter().collect()))
}

/// The acknowledgement params of a listen stream that follows tasks: as
/// [`crate::wire::listen::acknowledged_params`], with the granted `taskIds` in the filter.
#[must_use]
pub fn acknowledged_params_with_tasks(
    id: &crate::wire::listen::SubscriptionId,
    filter: &crate::wire::listen::Filter,
    task_ids: &std::collections::BTreeSet<String>,
) -> String {
    let mut notifications: Map<String, Value> =
        serde_json::from_str(&filter.to_json()).unwrap_or_default();
    notifications.insert(
        LISTEN_TASK_IDS.into(),
        Value::Array(task_ids.iter().cloned().map(Value::String).collect()),
    );
    format!(
        r#"{{"notifications":{},"_meta":{{"{}":{}}}}}"#,
        Value::Object(notifications),
        super::meta::SUBSCRIPTION_ID,
        id.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn handle(status: TaskStatus) -> Task {
        Task {
            task_id: "t".into(),
            status,
            status_message: None,
            created_at: "c".into(),
            last_updated_at: "u".into(),
            ttl_ms: None,
            poll_interval_ms: None,
        }
    }

    #[test]
    fn n39_create_result_is_flat_with_ttl_null_present() {
        assert_eq!(
            handle(TaskStatus::Working).create_result_json(),
            r#"{"resultType":"task","taskId":"t","status":"working","createdAt":"c","lastUpdatedAt":"u","ttlMs":null}"#
        );
        let back = read_create_result(&json!({"resultType":"task","taskId":"t","status":"working","createdAt":"c","lastUpdatedAt":"u","ttlMs":null})).unwrap();
        assert_eq!(back, handle(TaskStatus::Working));
        // ttlMs is required (integer or null), never absent.
        assert!(matches!(
            read_create_result(
                &json!({"resultType":"task","taskId":"t","status":"working","createdAt":"c","lastUpdatedAt":"u"})
            ),
            Err(TaskShapeError::Malformed(_))
        ));
        for extra in ["result", "requestState", "inputRequests", "task", "ttl"] {
            let mut v = json!({"resultType":"task","taskId":"t","status":"working","createdAt":"c","lastUpdatedAt":"u","ttlMs":1});
            v[extra] = json!({});
            assert!(
                matches!(
                    read_create_result(&v),
                    Err(TaskShapeError::ForeignMember { .. })
                ),
                "{extra}"
            );
        }
        assert!(matches!(
            read_create_result(&json!({"resultType":"complete"})),
            Err(TaskShapeError::ResultType { expected: "task" })
        ));
    }

    #[test]
    fn n41_detailed_task_members_follow_the_status() {
        let failed = DetailedTask {
            task: handle(TaskStatus::Failed),
            detail: TaskDetail::Failed {
                error: TaskError {
                    code: -32603,
                    message: "boom".into(),
                    data: None,
                },
            },
        };
        let text = failed.get_result_json();
        assert_eq!(
            text,
            r#"{"resultType":"complete","taskId":"t","status":"failed","createdAt":"c","lastUpdatedAt":"u","ttlMs":null,"error":{"code":-32603,"message":"boom"}}"#
        );
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(DetailedTask::read_get_result(&v).unwrap(), failed);
        // A completed task without result, a working task with a result, input_required
        // with an empty map: refused.
        let bad = [
            json!({"taskId":"t","status":"completed","createdAt":"c","lastUpdatedAt":"u","ttlMs":null}),
            json!({"taskId":"t","status":"working","createdAt":"c","lastUpdatedAt":"u","ttlMs":null,"result":{}}),
            json!({"taskId":"t","status":"input_required","createdAt":"c","lastUpdatedAt":"u","ttlMs":null,"inputRequests":{}}),
            json!({"taskId":"t","status":"working","createdAt":"c","lastUpdatedAt":"u","ttlMs":null,"requestState":"x"}),
        ];
        for v in bad {
            assert!(DetailedTask::read(&v).is_err(), "{v}");
        }
        assert!(DetailedTask::read_get_result(
            &json!({"resultType":"task","taskId":"t","status":"working","createdAt":"c","lastUpdatedAt":"u","ttlMs":null})
        )
        .is_err());
    }

    #[test]
    fn n36_declaration_needs_an_object_under_extensions() {
        assert!(declares_tasks(
            &json!({"extensions":{"io.modelcontextprotocol/tasks":{}}})
        ));
        assert!(!declares_tasks(
            &json!({"extensions":{"io.modelcontextprotocol/tasks":true}})
        ));
        // The 2025-11-25 capability slot is not a declaration (N35).
        assert!(!declares_tasks(&json!({"tasks":{"requests":{}}})));
        assert!(!declares_tasks(&json!({})));
        assert_eq!(
            missing_capability_data().to_string(),
            r#"{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}"#
        );
    }

    #[test]
    fn n47_listen_task_ids_are_bounded_at_and_past_the_limit() {
        assert_eq!(listen_task_ids(r#"{"toolsListChanged":true}"#), Ok(None));
        assert_eq!(
            listen_task_ids(r#"{"taskIds":[1]}"#),
            Err(ListenTaskIdsError::NotStrings)
        );
        let ids = |n: usize| {
            let list: Vec<String> = (0..n).map(|i| format!("t{i}")).collect();
            json!({ "taskIds": list }).to_string()
        };
        assert_eq!(
            listen_task_ids(&ids(MAX_LISTEN_TASK_IDS))
                .unwrap()
                .unwrap()
                .len(),
            MAX_LISTEN_TASK_IDS
        );
        assert_eq!(
            listen_task_ids(&ids(MAX_LISTEN_TASK_IDS + 1)),
            Err(ListenTaskIdsError::TooMany)
        );
        let filter = crate::wire::listen::Filter {
            tools_list_changed: true,
            ..Default::default()
        };
        let granted = ["b".to_owned(), "a".to_owned()].into_iter().collect();
        assert_eq!(
            acknowledged_params_with_tasks(
                &crate::wire::listen::SubscriptionId("7".into()),
                &filter,
                &granted
            ),
            r#"{"notifications":{"taskIds":["a","b"],"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":7}}"#
        );
    }

    #[test]
    fn n47_notification_params_carry_the_subscription_id() {
        let t = DetailedTask {
            task: handle(TaskStatus::Cancelled),
            detail: TaskDetail::Cancelled,
        };
        assert_eq!(
            status_notification_params(&t, "\"s\""),
            r#"{"taskId":"t","status":"cancelled","createdAt":"c","lastUpdatedAt":"u","ttlMs":null,"_meta":{"io.modelcontextprotocol/subscriptionId":"s"}}"#
        );
    }
}
