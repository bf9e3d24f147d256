//! [`RedisTaskStore`]: task state of the Tasks extension in Redis, shared by every instance.
//!
//! One string key per task, `{prefix}task:{<id>}` (braces: a Redis Cluster hash tag). The
//! value is [`TaskRecord::to_json`]'s canonical text. Writes go through a Lua script that
//! compares the stored text with the expected record's text and writes only on a match (absent
//! for a creation), so a worker finishing on one instance and a `tasks/cancel` on another
//! cannot both win. Each write sets PEXPIREAT from the record's `purge_at_ms` plus the grace of
//! [`RedisStoreConfig::grace_ms`]: Redis drops the record at its deadline, so
//! [`TaskStore::sweep`] reports nothing and the server cancels live work whose record is gone.
//! The store is bounded by those deadlines, [`MAX_TASK_RECORD_BYTES`] and the operator's
//! `maxmemory`; the count bound `TaskLimits::max_tasks` applies to the in-memory store only.
//! Failures reach the server as [`StoreError::Unavailable`] or [`StoreError::Timeout`], which
//! it answers as retryable internal errors.

use std::fmt;
use std::sync::Arc;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{AsyncCommands, Script};

use super::ledger::{RedisStoreConfig, RedisStoreError};
use crate::core::store::{StoreError, StoreFuture};
use crate::core::tasks::{TaskRecord, TaskStore};

/// Largest stored task record: 4 MiB (a finished task carries its whole result; past this the
/// write is refused as [`StoreError::Full`]).
pub const MAX_TASK_RECORD_BYTES: usize = 4 * 1024 * 1024;

const CAS_SCRIPT: &str = r"
local cur = redis.call('GET', KEYS[1])
if ARGV[1] == '0' then
  if cur then return 0 end
else
  if not cur then return 0 end
  if cur ~= ARGV[2] then return 0 end
end
redis.call('SET', KEYS[1], ARGV[3])
redis.call('PEXPIREAT', KEYS[1], ARGV[4])
return 1
";

/// Task records in Redis. See the module docs.
#[derive(Clone)]
pub struct RedisTaskStore {
    inner: Arc<Inner>,
}

struct Inner {
    conn: ConnectionManager,
    config: RedisStoreConfig,
    cas: Script,
}

impl fmt::Debug for RedisTaskStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisTaskStore")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl RedisTaskStore {
    /// Connects (within the connect timeout), with the same configuration as the ledger store.
    ///
    /// # Errors
    /// [`RedisStoreError`] when the URL is refused or the server does not answer in time.
    pub async fn connect(config: RedisStoreConfig) -> Result<RedisTaskStore, RedisStoreError> {
        let client = redis::Client::open(config.connection_info()?)?;
        let manager_config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(config.connect_timeout))
            .set_response_timeout(Some(config.op_timeout))
            .set_number_of_retries(config.reconnect_retries)
            .set_min_delay(config.backoff_min)
            .set_max_delay(config.backoff_max);
        let conn = tokio::time::timeout(
            config.connect_timeout,
            ConnectionManager::new_with_config(client, manager_config),
        )
        .await
        .map_err(|_| RedisStoreError::Timeout(config.connect_timeout))??;
        Ok(RedisTaskStore {
            inner: Arc::new(Inner {
                conn,
                config,
                cas: Script::new(CAS_SCRIPT),
            }),
        })
    }

    /// The key of a task's record.
    #[must_use]
    pub fn key(&self, id: &str) -> String {
        format!("{}task:{{{id}}}", self.inner.config.prefix)
    }

    async fn bounded<T>(
        &self,
        op: impl std::future::Future<Output = Result<T, RedisStoreError>>,
    ) -> Result<T, RedisStoreError> {
        let limit = self.inner.config.op_timeout;
        tokio::time::timeout(limit, op)
            .await
            .map_err(|_| RedisStoreError::Timeout(limit))?
    }

    /// Loads a record, typed.
    ///
    /// # Errors
    /// [`RedisStoreError`] for an outage or a record that is not a task record.
    pub async fn load_record(&self, id: &str) -> Result<Option<TaskRecord>, RedisStoreError> {
        let key = self.key(id);
        let mut conn = self.inner.conn.clone();
        let value: Option<String> = self.bounded(async { Ok(conn.get(&key).await?) }).await?;
        value
            .map(|text| TaskRecord::from_json(&text).map_err(RedisStoreError::Corrupt))
            .transpose()
    }

    /// Compare-and-swap, typed: `Ok(false)` when the stored record is not `expected`.
    ///
    /// # Errors
    /// [`RedisStoreError::RecordTooLarge`] past [`MAX_TASK_RECORD_BYTES`], or an outage.
    pub async fn swap_record(
        &self,
        expected: Option<&TaskRecord>,
        new: &TaskRecord,
    ) -> Result<bool, RedisStoreError> {
        let text = new.to_json();
        if text.len() > MAX_TASK_RECORD_BYTES {
            return Err(RedisStoreError::RecordTooLarge(text.len()));
        }
        let expected_text = expected.map(TaskRecord::to_json).unwrap_or_default();
        let deadline = new.purge_at_ms.saturating_add(self.inner.config.grace_ms);
        let key = self.key(&new.id);
        let mut conn = self.inner.conn.clone();
        let swapped: i64 = self
            .bounded(async {
                Ok(self
                    .inner
                    .cas
                    .key(&key)
                    .arg(if expected.is_some() { "1" } else { "0" })
                    .arg(expected_text.as_str())
                    .arg(text.as_str())
                    .arg(deadline)
                    .invoke_async(&mut conn)
                    .await?)
            })
            .await?;
        Ok(swapped == 1)
    }
}

impl TaskStore for RedisTaskStore {
    fn load(&self, id: &str) -> StoreFuture<'_, Result<Option<TaskRecord>, StoreError>> {
        let id = id.to_owned();
        Box::pin(async move { self.load_record(&id).await.map_err(StoreError::from) })
    }

    fn compare_and_swap(
        &self,
        expected: Option<TaskRecord>,
        new: TaskRecord,
    ) -> StoreFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            match self.swap_record(expected.as_ref(), &new).await {
                Ok(true) => Ok(()),
                Ok(false) => Err(StoreError::Conflict),
                Err(e) => Err(StoreError::from(e)),
            }
        })
    }

    fn sweep(&self, _now_ms: u64) -> StoreFuture<'_, Result<Vec<String>, StoreError>> {
        Box::pin(async { Ok(Vec::new()) })
    }
}
