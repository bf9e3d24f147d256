//! Task state of the Tasks extension (`io.modelcontextprotocol/tasks`) on the server: the
//! tool-level [`TaskMode`], the bounds, one task's [`TaskRecord`] and the [`TaskStore`] trait
//! with its bounded in-process implementation [`MemoryTaskStore`].
//!
//! Like [`crate::core::store::LedgerStore`], the trait is runtime-neutral (boxed `Send`
//! futures) and writes are compare-and-swap on the whole previous record, so a worker finishing
//! and a `tasks/cancel` racing it cannot both win: the loser reloads, sees a terminal status and
//! leaves it alone. The live work (its cancel token, the wake-up for `tasks/update`) stays in
//! the process that runs it; the store holds only what `tasks/get` answers.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use serde_json::value::RawValue;

use super::store::{StoreError, StoreFuture};
use crate::wire::tasks::{DetailedTask, Task, TaskDetail, TaskStatus};

/// Whether and how a tool runs as a task. The server alone decides; the client sends no hint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskMode {
    /// Never a task (the default): every call answers synchronously.
    #[default]
    Never,
    /// A task when the request declared the extension and the work does not finish at once;
    /// synchronous otherwise.
    Optional,
    /// Always a task: a request that did not declare the extension gets -32021.
    Required,
}

/// Default bound of [`MemoryTaskStore`]: tasks kept at once, terminal ones included. Each holds
/// its final result until purged, so the bound caps memory; past it a new task is refused.
pub const DEFAULT_MAX_TASKS: usize = 1_000;
/// Default time a task stays retrievable from its creation (`ttlMs`): 10 minutes. Past it the
/// work is cancelled and the record purged (later requests get -32602).
pub const DEFAULT_TASK_TTL_MS: u64 = 600_000;
/// Smallest TTL a server may set: 1 s (a task must outlive at least one poll).
pub const MIN_TASK_TTL_MS: u64 = 1_000;
/// Largest TTL a server may set: 24 h (a forgotten task must not pin memory for days).
pub const MAX_TASK_TTL_MS: u64 = 86_400_000;
/// Default time a finished task keeps its result (`completed`, `failed`, `cancelled`) before it
/// is purged, when that comes before its TTL: 5 minutes.
pub const DEFAULT_RESULT_RETENTION_MS: u64 = 300_000;
/// The polling interval suggested to clients (`pollIntervalMs`): 500 ms.
pub const DEFAULT_POLL_INTERVAL_MS: u64 = 500;

/// The bounds of the task machinery, each a named limit (see the constants).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskLimits {
    /// Tasks kept at once.
    pub max_tasks: usize,
    /// `ttlMs` of every task, within [`MIN_TASK_TTL_MS`]`..=`[`MAX_TASK_TTL_MS`].
    pub ttl_ms: u64,
    /// How long a finished task keeps its result (capped by the TTL).
    pub result_retention_ms: u64,
}

impl Default for TaskLimits {
    fn default() -> Self {
        TaskLimits {
            max_tasks: DEFAULT_MAX_TASKS,
            ttl_ms: DEFAULT_TASK_TTL_MS,
            result_retention_ms: DEFAULT_RESULT_RETENTION_MS,
        }
    }
}

impl TaskLimits {
    /// Whether every bound is in its range (a TTL outside `MIN..=MAX`, or no room for one task,
    /// is a configuration error).
    #[must_use]
    pub fn is_valid(&self) -> bool {
        self.max_tasks > 0 && (MIN_TASK_TTL_MS..=MAX_TASK_TTL_MS).contains(&self.ttl_ms)
    }
}

/// One task as stored: who owns it, its status with the members `tasks/get` shows, the
/// answers gathered so far and the keys still outstanding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRecord {
    /// The unguessable id.
    pub id: String,
    /// The owner (a digest of the caller's principal); another principal sees no such task.
    pub owner: String,
    /// Creation, wall-clock milliseconds since the Unix epoch.
    pub created_ms: u64,
    /// Last status change, wall-clock milliseconds.
    pub updated_ms: u64,
    /// The TTL from creation.
    pub ttl_ms: u64,
    /// When the record is purged (creation + TTL, or earlier once finished: retention).
    pub purge_at_ms: u64,
    /// The status and its members (`inputRequests` are the outstanding ones only).
    pub detail: TaskDetail,
    /// A note on the status (`statusMessage`).
    pub status_message: Option<String>,
    /// Input responses received by `tasks/update`, by task key, not yet handed to the work.
    pub responses: BTreeMap<String, String>,
    /// The next input round (task keys are `"<round>.<handler key>"`, never reused).
    pub round: u64,
}

impl TaskRecord {
    /// The status.
    #[must_use]
    pub fn status(&self) -> TaskStatus {
        self.detail.status()
    }

    /// The handle as the wire shows it (ISO 8601 times, `ttlMs`, `pollIntervalMs`).
    #[must_use]
    pub fn handle(&self) -> Task {
        Task {
            task_id: self.id.clone(),
            status: self.status(),
            status_message: self.status_message.clone(),
            created_at: iso8601(self.created_ms),
            last_updated_at: iso8601(self.updated_ms),
            ttl_ms: Some(self.ttl_ms),
            poll_interval_ms: Some(DEFAULT_POLL_INTERVAL_MS),
        }
    }

    /// What `tasks/get` answers.
    #[must_use]
    pub fn detailed(&self) -> DetailedTask {
        DetailedTask {
            task: self.handle(),
            detail: self.detail.clone(),
        }
    }

    /// The answers gathered for the work's keys (task keys with their round prefix removed).
    #[must_use]
    pub fn handler_answers(&self) -> BTreeMap<String, Box<RawValue>> {
        let mut by_round: Vec<(u64, &str, &String)> = self
            .responses
            .iter()
            .filter_map(|(key, text)| {
                let (round, handler_key) = key.split_once('.')?;
                Some((round.parse().ok()?, handler_key, text))
            })
            .collect();
        // A later round's answer to the same handler key wins.
        by_round.sort_by_key(|(round, _, _)| *round);
        by_round
            .into_iter()
            .filter_map(|(_, key, text)| {
                Some((key.to_owned(), RawValue::from_string(text.clone()).ok()?))
            })
            .collect()
    }
}

/// A record as a shared store keeps it (JSON text; see [`TaskRecord::to_json`]).
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Stored {
    id: String,
    owner: String,
    created_ms: u64,
    updated_ms: u64,
    ttl_ms: u64,
    purge_at_ms: u64,
    task: serde_json::Value,
    responses: BTreeMap<String, String>,
    round: u64,
}

impl TaskRecord {
    /// The record as canonical JSON text (what a shared store such as Redis keeps and compares
    /// byte for byte in its compare-and-swap).
    #[must_use]
    pub fn to_json(&self) -> String {
        let task = serde_json::from_str(&self.detailed().to_json()).unwrap_or_default();
        serde_json::to_string(&Stored {
            id: self.id.clone(),
            owner: self.owner.clone(),
            created_ms: self.created_ms,
            updated_ms: self.updated_ms,
            ttl_ms: self.ttl_ms,
            purge_at_ms: self.purge_at_ms,
            task,
            responses: self.responses.clone(),
            round: self.round,
        })
        .unwrap_or_default()
    }

    /// Reads [`TaskRecord::to_json`]'s text back.
    ///
    /// # Errors
    /// A message when the text is not a stored record.
    pub fn from_json(text: &str) -> Result<TaskRecord, String> {
        let stored: Stored = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let detailed = DetailedTask::read(&stored.task).map_err(|e| e.to_string())?;
        Ok(TaskRecord {
            id: stored.id,
            owner: stored.owner,
            created_ms: stored.created_ms,
            updated_ms: stored.updated_ms,
            ttl_ms: stored.ttl_ms,
            purge_at_ms: stored.purge_at_ms,
            detail: detailed.detail,
            status_message: detailed.task.status_message,
            responses: stored.responses,
            round: stored.round,
        })
    }
}

/// `ms` since the Unix epoch as ISO 8601 UTC with milliseconds (`2026-07-28T00:00:00.000Z`).
#[must_use]
pub fn iso8601(ms: u64) -> String {
    let secs = ms / 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60,
        ms % 1000
    )
}

/// Storage for task records. See the module docs for the compare-and-swap contract.
pub trait TaskStore: Send + Sync {
    /// The record with this id, if it is still kept (a purged one is `None`).
    fn load(&self, id: &str) -> StoreFuture<'_, Result<Option<TaskRecord>, StoreError>>;

    /// Replace the record for `new.id` only if it currently equals `expected` (`None`: only if
    /// absent, which is how a task is created; [`StoreError::Full`] past the bound).
    fn compare_and_swap(
        &self,
        expected: Option<TaskRecord>,
        new: TaskRecord,
    ) -> StoreFuture<'_, Result<(), StoreError>>;

    /// Drop every record whose `purge_at_ms` has passed at `now_ms`; returns their ids.
    fn sweep(&self, now_ms: u64) -> StoreFuture<'_, Result<Vec<String>, StoreError>>;
}

/// The bounded in-process [`TaskStore`].
#[derive(Debug)]
pub struct MemoryTaskStore {
    capacity: usize,
    records: Mutex<HashMap<String, TaskRecord>>,
}

impl Default for MemoryTaskStore {
    fn default() -> Self {
        MemoryTaskStore::new(DEFAULT_MAX_TASKS)
    }
}

impl MemoryTaskStore {
    /// A store that keeps at most `capacity` tasks.
    #[must_use]
    pub fn new(capacity: usize) -> MemoryTaskStore {
        MemoryTaskStore {
            capacity,
            records: Mutex::new(HashMap::new()),
        }
    }

    /// Tasks kept now.
    #[must_use]
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no task is kept.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, TaskRecord>> {
        self.records
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn cas_now(&self, expected: Option<TaskRecord>, new: TaskRecord) -> Result<(), StoreError> {
        let mut map = self.lock();
        if map.get(&new.id) != expected.as_ref() {
            return Err(StoreError::Conflict);
        }
        if expected.is_none() && map.len() >= self.capacity {
            return Err(StoreError::Full);
        }
        map.insert(new.id.clone(), new);
        Ok(())
    }
}

impl TaskStore for MemoryTaskStore {
    fn load(&self, id: &str) -> StoreFuture<'_, Result<Option<TaskRecord>, StoreError>> {
        let found = self.lock().get(id).cloned();
        Box::pin(async move { Ok(found) })
    }

    fn compare_and_swap(
        &self,
        expected: Option<TaskRecord>,
        new: TaskRecord,
    ) -> StoreFuture<'_, Result<(), StoreError>> {
        let done = self.cas_now(expected, new);
        Box::pin(async move { done })
    }

    fn sweep(&self, now_ms: u64) -> StoreFuture<'_, Result<Vec<String>, StoreError>> {
        let mut map = self.lock();
        let gone: Vec<String> = map
            .values()
            .filter(|r| r.purge_at_ms <= now_ms)
            .map(|r| r.id.clone())
            .collect();
        for id in &gone {
            map.remove(id);
        }
        Box::pin(async move { Ok(gone) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ready<T>(f: StoreFuture<'_, T>) -> T {
        futures_util::FutureExt::now_or_never(f).expect("memory store answers at once")
    }

    fn record(id: &str, purge_at_ms: u64) -> TaskRecord {
        TaskRecord {
            id: id.into(),
            owner: "o".into(),
            created_ms: 0,
            updated_ms: 0,
            ttl_ms: 1000,
            purge_at_ms,
            detail: TaskDetail::Working,
            status_message: None,
            responses: BTreeMap::new(),
            round: 0,
        }
    }

    #[test]
    fn a_record_survives_its_stored_form() {
        let mut r = record("a", 7);
        r.detail = TaskDetail::InputRequired {
            input_requests: [(
                "1.k".to_owned(),
                serde_json::json!({"method": "roots/list"}),
            )]
            .into_iter()
            .collect(),
        };
        r.status_message = Some("waiting".into());
        r.responses.insert("1.j".into(), r#"{"roots":[]}"#.into());
        let text = r.to_json();
        let back = TaskRecord::from_json(&text).unwrap();
        assert_eq!(back, r);
        assert_eq!(back.to_json(), text, "canonical: the same bytes again");
        assert!(TaskRecord::from_json("{}").is_err());
    }

    #[test]
    fn iso8601_formats_utc_with_milliseconds() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(1_785_196_800_123), "2026-07-28T00:00:00.123Z");
        assert_eq!(iso8601(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn store_is_bounded_at_capacity_and_one_past_is_full() {
        let store = MemoryTaskStore::new(2);
        ready(store.compare_and_swap(None, record("a", 10))).unwrap();
        ready(store.compare_and_swap(None, record("b", 10))).unwrap();
        assert_eq!(
            ready(store.compare_and_swap(None, record("c", 10))),
            Err(StoreError::Full)
        );
        // Replacing a kept record is not a new one: allowed at the bound.
        let mut b2 = record("b", 10);
        b2.detail = TaskDetail::Cancelled;
        ready(store.compare_and_swap(Some(record("b", 10)), b2.clone())).unwrap();
        // A stale expectation loses (cancel racing completion).
        assert_eq!(
            ready(store.compare_and_swap(Some(record("b", 10)), record("b", 10))),
            Err(StoreError::Conflict)
        );
        assert_eq!(ready(store.load("b")).unwrap(), Some(b2));
    }

    #[test]
    fn sweep_purges_at_the_deadline_not_before() {
        let store = MemoryTaskStore::new(4);
        ready(store.compare_and_swap(None, record("a", 100))).unwrap();
        assert!(ready(store.sweep(99)).unwrap().is_empty());
        assert_eq!(ready(store.sweep(100)).unwrap(), vec!["a".to_owned()]);
        assert!(store.is_empty());
    }

    #[test]
    fn limits_bound_the_ttl_at_and_past_each_end() {
        let at = |ttl_ms| TaskLimits {
            ttl_ms,
            ..TaskLimits::default()
        };
        assert!(at(MIN_TASK_TTL_MS).is_valid());
        assert!(!at(MIN_TASK_TTL_MS - 1).is_valid());
        assert!(at(MAX_TASK_TTL_MS).is_valid());
        assert!(!at(MAX_TASK_TTL_MS + 1).is_valid());
        assert!(!TaskLimits {
            max_tasks: 0,
            ..TaskLimits::default()
        }
        .is_valid());
    }
}
