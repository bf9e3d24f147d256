//! [`RedisLedgerStore`]: the continuation ledger in Redis, shared by every instance.
//!
//! # Records
//! One string key per chain, `{prefix}chain:{<hex id>}`: the braces are a Redis Cluster hash
//! tag, so every key of one chain lands in one slot. The value is the 16-byte tag of the store
//! instance that created the chain followed by [`encode_chain`]'s bytes.
//!
//! # Compare-and-swap
//! A Lua script compares the stored chain bytes with the caller's expected chain (the encoding
//! is canonical) and writes the new value and its expiry only on a match; Redis runs scripts
//! atomically, so of two instances resuming one round only the first swap succeeds. The script
//! is sent by EVALSHA with an EVAL fallback when the server does not know it yet.
//!
//! # Expiry
//! Each write sets PEXPIREAT from the chain's own deadline: a pending prompt's expiry, the last
//! token's expiry for a completed or failed chain, plus [`RedisStoreConfig::grace_ms`] (clock
//! skew between instances and Redis). A record with nothing pending (running handler) gets
//! [`RedisStoreConfig::running_ttl_ms`] so a crashed instance cannot pin it forever. A record
//! that expired is absent, and the server refuses a token whose chain is absent: expiry never
//! reads as acceptance. Ticks are wall-clock milliseconds since the Unix epoch (the core's
//! clock), the unit PEXPIREAT takes.
//!
//! # Epochs across instances
//! [`LedgerStore::bump_epoch`] (an instance's shutdown) invalidates only the chains *this*
//! store instance created ([`EpochScope::Instance`], the default): the rest of the fleet keeps
//! serving its rounds. [`RedisLedgerStore::bump_epoch_scoped`] with [`EpochScope::Fleet`] is the
//! operator's fleet-wide invalidation of all outstanding state. Either walks the prefix with
//! SCAN and swaps each affected record through the same script, so a concurrent resume either
//! lands before the bump (and is then invalidated) or sees the invalidated record.
//!
//! # Sweep
//! Redis drops each record at its own deadline, so [`LedgerStore::sweep`] has nothing to do and
//! reports 0; the store is bounded by those deadlines, [`MAX_RECORD_BYTES`] and the operator's
//! `maxmemory`.
//!
//! # Failures
//! Every Redis failure is typed ([`RedisStoreError`]) and reaches the server as
//! [`StoreError::Unavailable`], or [`StoreError::Timeout`] when an operation outlived
//! [`RedisStoreConfig::op_timeout`]. The server answers either as a retryable failure
//! (`state_unavailable`): never as acceptance of the state, never as a dispatch.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{AsyncCommands, IntoConnectionInfo, Script};
use tokio::sync::Semaphore;

use super::record::{decode_chain, encode_chain, RecordCodecError, MAX_RECORD_BYTES};
use crate::core::store::{LedgerStore, StoreError, StoreFuture};
use crate::machine::ledger::{Chain, ChainId, LedgerEvent, Phase};
use crate::machine::{Epoch, Tick};

/// Default per-operation timeout: a ledger read or swap sits on the request path, and a store
/// that does not answer within it is reported unavailable instead of stalling the request.
pub const DEFAULT_OP_TIMEOUT: Duration = Duration::from_secs(2);

/// Added to the per-operation timeout for the connection's own response timeout, so the
/// operation's timeout fires first and is reported as [`RedisStoreError::Timeout`] with its
/// limit; the connection's timeout is the backstop that also makes it reconnect.
const RESPONSE_TIMEOUT_MARGIN: Duration = Duration::from_millis(250);

/// Default timeout of one connection attempt.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// Default bound on operations in flight per store (they share one multiplexed connection);
/// further callers wait, within their operation timeout, for a slot.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 256;

/// Default reconnect attempts after a broken connection, with exponential backoff.
pub const DEFAULT_RECONNECT_RETRIES: usize = 6;

/// Default smallest reconnect backoff.
pub const DEFAULT_BACKOFF_MIN: Duration = Duration::from_millis(50);

/// Default largest reconnect backoff.
pub const DEFAULT_BACKOFF_MAX: Duration = Duration::from_secs(2);

/// Default lifetime of a record whose handler is running: long enough for any handler the
/// server lets run, short enough that an instance that crashed mid-handler does not pin the
/// record forever.
pub const DEFAULT_RUNNING_TTL_MS: u64 = 60 * 60 * 1000;

/// Default margin added to every record deadline, covering clock skew between instances and
/// Redis, so a record is never dropped while some instance could still accept its token.
pub const DEFAULT_GRACE_MS: u64 = 60 * 1000;

/// Default key prefix.
pub const DEFAULT_PREFIX: &str = "strict-mcp:";

/// Keys a SCAN step asks for while walking the prefix for an epoch bump.
const SCAN_COUNT: usize = 256;

/// Swap attempts per record during an epoch bump before it reports a conflict.
const BUMP_CAS_ATTEMPTS: usize = 8;

/// Bytes of the creating instance's tag in front of every record.
const OWNER_LEN: usize = 16;

/// ARGV: 1 = "1" when a previous value is expected, 2 = expected chain bytes, 3 = new chain
/// bytes (empty: delete the record; an encoded chain is never empty), 4 = owner tag for a new
/// record, 5 = PEXPIREAT milliseconds.
const CAS_SCRIPT: &str = r"
local cur = redis.call('GET', KEYS[1])
local owner = ARGV[4]
if ARGV[1] == '0' then
  if cur then return 0 end
else
  if not cur then return 0 end
  if string.sub(cur, 17) ~= ARGV[2] then return 0 end
  owner = string.sub(cur, 1, 16)
end
if ARGV[3] == '' then
  redis.call('DEL', KEYS[1])
  return 1
end
redis.call('SET', KEYS[1], owner .. ARGV[3])
redis.call('PEXPIREAT', KEYS[1], ARGV[5])
return 1
";

/// Which chains an epoch bump invalidates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EpochScope {
    /// Chains this store instance created (one server's shutdown).
    Instance,
    /// Every chain under the prefix (an operator's fleet-wide invalidation).
    Fleet,
}

/// Failures of the Redis store.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RedisStoreError {
    /// The configuration cannot work (bad URL, TLS not compiled in, zero bounds).
    #[error("redis store configuration: {0}")]
    Config(String),
    /// Redis refused or dropped the operation (connection, authentication, script error).
    #[error("redis unavailable: {0}")]
    Unavailable(String),
    /// The operation did not finish within its timeout.
    #[error("redis operation timed out after {0:?}")]
    Timeout(Duration),
    /// The chain's record would exceed [`MAX_RECORD_BYTES`].
    #[error("chain record too large ({0} bytes)")]
    RecordTooLarge(usize),
    /// A stored value is not a record this crate wrote.
    #[error("corrupt ledger record: {0}")]
    Corrupt(String),
}

impl From<RedisStoreError> for StoreError {
    fn from(e: RedisStoreError) -> StoreError {
        match e {
            RedisStoreError::RecordTooLarge(_) => StoreError::Full,
            RedisStoreError::Timeout(limit) => StoreError::Timeout(limit),
            other => StoreError::Unavailable(other.to_string()),
        }
    }
}

impl From<redis::RedisError> for RedisStoreError {
    fn from(e: redis::RedisError) -> RedisStoreError {
        RedisStoreError::Unavailable(e.to_string())
    }
}

/// Configuration of a [`RedisLedgerStore`]. `Debug` never shows a password.
#[derive(Clone)]
pub struct RedisStoreConfig {
    /// `redis://[user[:password]@]host[:port][/db]` or `rediss://…` (feature `redis-tls`).
    pub url: String,
    /// ACL user name, overriding the URL's.
    pub username: Option<String>,
    /// AUTH password, overriding the URL's.
    pub password: Option<String>,
    /// Database number, overriding the URL's.
    pub db: Option<i64>,
    /// Prefix of every key (several deployments may share one Redis).
    pub prefix: String,
    /// Per-operation timeout.
    pub op_timeout: Duration,
    /// Timeout of one connection attempt.
    pub connect_timeout: Duration,
    /// Operations in flight at once.
    pub max_in_flight: usize,
    /// Reconnect attempts after a broken connection.
    pub reconnect_retries: usize,
    /// Smallest reconnect backoff.
    pub backoff_min: Duration,
    /// Largest reconnect backoff.
    pub backoff_max: Duration,
    /// Lifetime of a record whose handler runs.
    pub running_ttl_ms: u64,
    /// Margin added to every record deadline.
    pub grace_ms: u64,
    /// Tag of this instance in the records it creates; random when `None`.
    pub instance: Option<[u8; OWNER_LEN]>,
}

impl RedisStoreConfig {
    /// Defaults for everything but the URL.
    #[must_use]
    pub fn new(url: impl Into<String>) -> RedisStoreConfig {
        RedisStoreConfig {
            url: url.into(),
            username: None,
            password: None,
            db: None,
            prefix: DEFAULT_PREFIX.to_owned(),
            op_timeout: DEFAULT_OP_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            reconnect_retries: DEFAULT_RECONNECT_RETRIES,
            backoff_min: DEFAULT_BACKOFF_MIN,
            backoff_max: DEFAULT_BACKOFF_MAX,
            running_ttl_ms: DEFAULT_RUNNING_TTL_MS,
            grace_ms: DEFAULT_GRACE_MS,
            instance: None,
        }
    }

    pub(crate) fn connection_info(&self) -> Result<redis::ConnectionInfo, RedisStoreError> {
        if self.url.starts_with("rediss://") && !cfg!(feature = "redis-tls") {
            return Err(RedisStoreError::Config(
                "rediss:// needs the redis-tls feature".into(),
            ));
        }
        if self.max_in_flight == 0 || self.op_timeout.is_zero() {
            return Err(RedisStoreError::Config(
                "max_in_flight and op_timeout must be positive".into(),
            ));
        }
        let info = self
            .url
            .as_str()
            .into_connection_info()
            // The parser's message can quote the URL; keep the password out of it.
            .map_err(|_| RedisStoreError::Config(format!("invalid URL {}", redact(&self.url))))?;
        let mut settings = info.redis_settings().clone();
        if let Some(user) = &self.username {
            settings = settings.set_username(user);
        }
        if let Some(password) = &self.password {
            settings = settings.set_password(password);
        }
        if let Some(db) = self.db {
            settings = settings.set_db(db);
        }
        Ok(info.set_redis_settings(settings))
    }
}

impl fmt::Debug for RedisStoreConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStoreConfig")
            .field("url", &redact(&self.url))
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("db", &self.db)
            .field("prefix", &self.prefix)
            .field("op_timeout", &self.op_timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("max_in_flight", &self.max_in_flight)
            .field("reconnect_retries", &self.reconnect_retries)
            .field("running_ttl_ms", &self.running_ttl_ms)
            .field("grace_ms", &self.grace_ms)
            .finish_non_exhaustive()
    }
}

/// The URL with any password in its user info replaced.
fn redact(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return "<unparsable URL>".into();
    };
    let rest = &url[scheme_end + 3..];
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return url.to_owned();
    };
    let userinfo = &rest[..at];
    let user = match userinfo.find(':') {
        Some(colon) => format!("{}:<redacted>", &userinfo[..colon]),
        None => "<redacted>".to_owned(),
    };
    format!("{}{}{}", &url[..scheme_end + 3], user, &rest[at..])
}

/// The continuation ledger in Redis. See the module docs.
#[derive(Clone)]
pub struct RedisLedgerStore {
    inner: Arc<Inner>,
}

struct Inner {
    conn: ConnectionManager,
    config: RedisStoreConfig,
    instance: [u8; OWNER_LEN],
    cas: Script,
    slots: Semaphore,
}

impl fmt::Debug for RedisLedgerStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisLedgerStore")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl RedisLedgerStore {
    /// Connects (within the connect timeout). Later connection losses are repaired in the
    /// background with exponential backoff; operations meanwhile fail with typed errors.
    pub async fn connect(config: RedisStoreConfig) -> Result<RedisLedgerStore, RedisStoreError> {
        let info = config.connection_info()?;
        let client = redis::Client::open(info)?;
        let manager_config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(config.connect_timeout))
            .set_response_timeout(Some(
                config.op_timeout.saturating_add(RESPONSE_TIMEOUT_MARGIN),
            ))
            .set_number_of_retries(config.reconnect_retries)
            .set_min_delay(config.backoff_min)
            .set_max_delay(config.backoff_max);
        let conn = tokio::time::timeout(
            config.connect_timeout,
            ConnectionManager::new_with_config(client, manager_config),
        )
        .await
        .map_err(|_| RedisStoreError::Timeout(config.connect_timeout))??;
        let instance = match config.instance {
            Some(tag) => tag,
            None => {
                let mut tag = [0; OWNER_LEN];
                getrandom::getrandom(&mut tag)
                    .map_err(|e| RedisStoreError::Config(format!("no entropy: {e}")))?;
                tag
            }
        };
        Ok(RedisLedgerStore {
            inner: Arc::new(Inner {
                slots: Semaphore::new(config.max_in_flight),
                conn,
                config,
                instance,
                cas: Script::new(CAS_SCRIPT),
            }),
        })
    }

    /// The key of a chain's record.
    #[must_use]
    pub fn key(&self, id: ChainId) -> String {
        let mut hex = String::with_capacity(32);
        for b in id.0 {
            hex.push_str(&format!("{b:02x}"));
        }
        format!("{}chain:{{{hex}}}", self.inner.config.prefix)
    }

    /// Runs `op` under a slot of the in-flight bound and the per-operation timeout.
    async fn bounded<T>(
        &self,
        op: impl std::future::Future<Output = Result<T, RedisStoreError>>,
    ) -> Result<T, RedisStoreError> {
        let limit = self.inner.config.op_timeout;
        tokio::time::timeout(limit, async {
            let _slot = self
                .inner
                .slots
                .acquire()
                .await
                .map_err(|_| RedisStoreError::Unavailable("store closed".into()))?;
            op.await
        })
        .await
        .map_err(|_| RedisStoreError::Timeout(limit))?
    }

    /// Loads a chain, typed.
    pub async fn load_chain(&self, id: ChainId) -> Result<Option<Chain>, RedisStoreError> {
        let key = self.key(id);
        let mut conn = self.inner.conn.clone();
        let value: Option<Vec<u8>> = self.bounded(async { Ok(conn.get(&key).await?) }).await?;
        value.map(|v| decode_value(&v)).transpose()
    }

    /// Compare-and-swap, typed: `Ok(false)` when the stored value is not `expected`.
    pub async fn swap_chain(
        &self,
        now: Tick,
        expected: Option<&Chain>,
        new: &Chain,
    ) -> Result<bool, RedisStoreError> {
        self.swap(now, expected, new, false).await
    }

    /// The script call; `delete` drops the record instead of writing `new` (whose id names it).
    async fn swap(
        &self,
        now: Tick,
        expected: Option<&Chain>,
        new: &Chain,
        delete: bool,
    ) -> Result<bool, RedisStoreError> {
        let new_bytes = if delete {
            Vec::new()
        } else {
            encode_chain(new).map_err(codec_error)?
        };
        let expected_bytes = match expected {
            Some(c) => encode_chain(c).map_err(codec_error)?,
            None => Vec::new(),
        };
        let deadline = self.deadline(now, new);
        let key = self.key(new.id());
        let mut conn = self.inner.conn.clone();
        let swapped: i64 = self
            .bounded(async {
                Ok(self
                    .inner
                    .cas
                    .key(&key)
                    .arg(if expected.is_some() { "1" } else { "0" })
                    .arg(expected_bytes.as_slice())
                    .arg(new_bytes.as_slice())
                    .arg(&self.inner.instance[..])
                    .arg(deadline)
                    .invoke_async(&mut conn)
                    .await?)
            })
            .await?;
        Ok(swapped == 1)
    }

    /// Applies an epoch bump to the chains `scope` selects; returns how many records changed.
    pub async fn bump_epoch_scoped(
        &self,
        now: Tick,
        epoch: Epoch,
        scope: EpochScope,
    ) -> Result<usize, RedisStoreError> {
        let pattern = format!("{}chain:*", glob_escape(&self.inner.config.prefix));
        let mut cursor: u64 = 0;
        let mut changed = 0;
        loop {
            let mut conn = self.inner.conn.clone();
            let (next, keys): (u64, Vec<String>) = self
                .bounded(async {
                    Ok(redis::cmd("SCAN")
                        .arg(cursor)
                        .arg("MATCH")
                        .arg(&pattern)
                        .arg("COUNT")
                        .arg(SCAN_COUNT)
                        .query_async(&mut conn)
                        .await?)
                })
                .await?;
            for key in keys {
                if self.bump_one(now, epoch, scope, &key).await? {
                    changed += 1;
                }
            }
            if next == 0 {
                return Ok(changed);
            }
            cursor = next;
        }
    }

    async fn bump_one(
        &self,
        now: Tick,
        epoch: Epoch,
        scope: EpochScope,
        key: &str,
    ) -> Result<bool, RedisStoreError> {
        for _ in 0..BUMP_CAS_ATTEMPTS {
            let mut conn = self.inner.conn.clone();
            let value: Option<Vec<u8>> = self.bounded(async { Ok(conn.get(key).await?) }).await?;
            let Some(value) = value else {
                return Ok(false);
            };
            if scope == EpochScope::Instance && value.get(..OWNER_LEN) != Some(&self.inner.instance)
            {
                return Ok(false);
            }
            let stored = decode_value(&value)?;
            let mut chain = stored.clone();
            // Effects are `Invalidated` or `Nothing`; running handlers are the shutdown path's.
            let _ = chain.handle(now, LedgerEvent::EpochBumped(epoch));
            if chain == stored {
                return Ok(false);
            }
            // What became disposable is dropped, as the in-memory store does after a bump.
            let delete = chain.is_disposable(now);
            if self.swap(now, Some(&stored), &chain, delete).await? {
                return Ok(true);
            }
        }
        Err(RedisStoreError::Unavailable(
            "epoch bump kept conflicting with concurrent writers".into(),
        ))
    }

    /// PEXPIREAT milliseconds for `chain` written at `now` (module docs, "Expiry").
    fn deadline(&self, now: Tick, chain: &Chain) -> u64 {
        let c = &self.inner.config;
        let base = match chain.phase() {
            Phase::Running { .. } | Phase::Invalidated { running: true } => {
                now.0.saturating_add(c.running_ttl_ms)
            }
            Phase::AwaitingAnswer { expires, .. } => expires.0,
            Phase::Completed | Phase::Failed => chain.to_record().last_expires.0,
            Phase::Expired | Phase::Invalidated { running: false } => now.0,
        };
        // Never in the past (PEXPIREAT would delete at once) and never zero.
        base.max(now.0).saturating_add(c.grace_ms).max(1)
    }
}

fn codec_error(e: RecordCodecError) -> RedisStoreError {
    match e {
        RecordCodecError::TooLarge(n) => RedisStoreError::RecordTooLarge(n),
        other => RedisStoreError::Corrupt(other.to_string()),
    }
}

fn decode_value(value: &[u8]) -> Result<Chain, RedisStoreError> {
    if value.len() < OWNER_LEN || value.len() > OWNER_LEN + MAX_RECORD_BYTES {
        return Err(RedisStoreError::Corrupt(format!(
            "record of {} bytes",
            value.len()
        )));
    }
    decode_chain(&value[OWNER_LEN..]).map_err(|e| RedisStoreError::Corrupt(e.to_string()))
}

/// Escapes SCAN's glob metacharacters in a literal prefix.
fn glob_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        if matches!(ch, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(ch);
    }
    out
}

impl LedgerStore for RedisLedgerStore {
    fn load(&self, id: ChainId) -> StoreFuture<'_, Result<Option<Chain>, StoreError>> {
        Box::pin(async move { Ok(self.load_chain(id).await?) })
    }

    fn compare_and_swap(
        &self,
        now: Tick,
        expected: Option<Chain>,
        new: Chain,
    ) -> StoreFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            if self.swap_chain(now, expected.as_ref(), &new).await? {
                Ok(())
            } else {
                Err(StoreError::Conflict)
            }
        })
    }

    fn bump_epoch(&self, now: Tick, epoch: Epoch) -> StoreFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            self.bump_epoch_scoped(now, epoch, EpochScope::Instance)
                .await?;
            Ok(())
        })
    }

    fn sweep(&self, _now: Tick) -> StoreFuture<'_, Result<usize, StoreError>> {
        // Redis expires every record at its own deadline (module docs, "Sweep").
        Box::pin(async { Ok(0) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_hides_passwords_only() {
        assert_eq!(
            redact("redis://app:s3cret@127.0.0.1:6380/2"),
            "redis://app:<redacted>@127.0.0.1:6380/2"
        );
        assert_eq!(redact("rediss://s3cret@h/0"), "rediss://<redacted>@h/0");
        assert_eq!(redact("redis://127.0.0.1:6380/"), "redis://127.0.0.1:6380/");
        assert_eq!(redact("nonsense"), "<unparsable URL>");
    }

    #[test]
    fn glob_escape_keeps_the_prefix_literal() {
        assert_eq!(glob_escape("a*b?[c]\\"), "a\\*b\\?\\[c\\]\\\\");
    }
}
