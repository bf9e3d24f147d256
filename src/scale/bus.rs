//! [`RedisEventBus`]: the listen event bus over Redis pub/sub, shared by every instance.
//!
//! # Messages
//! One channel, `{prefix}events` (the same prefix, URL, credentials and time-outs as the
//! ledger store: [`RedisStoreConfig`]). A message is binary: a version byte, the publishing
//! instance's 16-byte [`InstanceId`], a kind byte, then the resource URI's UTF-8 bytes for a
//! `resources/updated` change. Its size is bounded by [`MAX_BUS_MESSAGE_BYTES`]: a change over
//! the core's [`MAX_EVENT_URI_BYTES`] is refused on publish, and a received message over the
//! bound (or one this crate did not write) is dropped and logged, never delivered.
//!
//! # Publishing
//! [`EventBus::publish`] queues the message at once on a bounded queue
//! ([`DEFAULT_PUBLISH_QUEUE`]) drained in order by one task over a reconnecting multiplexed
//! connection; the returned future reports Redis's answer within the operation time-out. A full
//! queue or a Redis failure is a typed [`BusError`], never a silent drop.
//!
//! # Subscribing
//! The first [`EventBus::attach`] opens a dedicated pub/sub connection, waits for Redis to
//! confirm the `SUBSCRIBE` (so the attached sink receives every later change) and starts the
//! reader task. When that connection is lost (Redis stopped, network cut) the reader calls
//! [`BusSink::lost`] on every sink and forgets them (a subscription that goes silent without
//! closing is caught by a heartbeat, [`DEFAULT_HEARTBEAT`]): the servers end their listen streams with
//! -32603 and attach again on the next listen, which opens a new subscription once Redis answers.
//! Changes are delivered to every sink except the publisher's own.

use std::fmt;
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures_util::StreamExt;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::sync::{mpsc, oneshot, Mutex};

use super::ledger::{RedisStoreConfig, RedisStoreError};
use crate::core::bus::{check_event, BusError, BusSink, EventBus, InstanceId, MAX_EVENT_URI_BYTES};
use crate::core::store::StoreFuture;
use crate::core::CancelToken;
use crate::machine::subscriptions::Change;

/// Version byte of the message format.
const VERSION: u8 = 1;

/// Version, instance id, kind.
const HEADER_LEN: usize = 1 + 16 + 1;

/// Bound of one bus message: the header and the longest URI a change may carry.
pub const MAX_BUS_MESSAGE_BYTES: usize = HEADER_LEN + MAX_EVENT_URI_BYTES;

/// Default bound of changes queued for publishing: a burst of this many is taken at once; past
/// it `publish` fails (`Unavailable`) instead of buffering without bound while Redis is slow.
pub const DEFAULT_PUBLISH_QUEUE: usize = 1024;

/// Default interval of the subscription's heartbeat (a `PING` on the pub/sub connection, answered
/// within the operation time-out): a subscription that went silent without the connection
/// closing (Redis paused or hung, a network cut without a reset) is noticed within this plus the
/// operation time-out and reported lost, never left as a silent listen stream.
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(5);

/// Settings of a [`RedisEventBus`] beyond the shared [`RedisStoreConfig`].
#[derive(Debug, Clone)]
pub struct BusSettings {
    /// Changes queued for publishing at most ([`DEFAULT_PUBLISH_QUEUE`]).
    pub publish_queue: usize,
    /// Interval of the subscription's heartbeat ([`DEFAULT_HEARTBEAT`]).
    pub heartbeat: Duration,
}

impl Default for BusSettings {
    fn default() -> Self {
        BusSettings {
            publish_queue: DEFAULT_PUBLISH_QUEUE,
            heartbeat: DEFAULT_HEARTBEAT,
        }
    }
}

/// The channel's name under the key prefix.
const CHANNEL: &str = "events";

/// Encodes a change as a bus message.
///
/// # Errors
/// [`BusError::TooLarge`] over [`MAX_EVENT_URI_BYTES`].
pub fn encode_event(from: InstanceId, change: &Change) -> Result<Vec<u8>, BusError> {
    check_event(change)?;
    let (kind, uri) = match change {
        Change::ToolsListChanged => (0, ""),
        Change::PromptsListChanged => (1, ""),
        Change::ResourcesListChanged => (2, ""),
        Change::ResourceUpdated { uri } => (3, uri.as_str()),
    };
    let mut out = Vec::with_capacity(HEADER_LEN + uri.len());
    out.push(VERSION);
    out.extend_from_slice(&from.0);
    out.push(kind);
    out.extend_from_slice(uri.as_bytes());
    Ok(out)
}

/// Why a received message is not delivered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventDecodeError {
    /// Over [`MAX_BUS_MESSAGE_BYTES`].
    #[error("bus message of {0} bytes is over the bound")]
    TooLarge(usize),
    /// Not a message this crate wrote (short, unknown version or kind, not UTF-8, a URI on a
    /// list change).
    #[error("not a strict-mcp bus message")]
    Malformed,
}

/// Decodes a bus message: the publisher and the change.
///
/// # Errors
/// [`EventDecodeError`].
pub fn decode_event(bytes: &[u8]) -> Result<(InstanceId, Change), EventDecodeError> {
    if bytes.len() > MAX_BUS_MESSAGE_BYTES {
        return Err(EventDecodeError::TooLarge(bytes.len()));
    }
    if bytes.len() < HEADER_LEN || bytes[0] != VERSION {
        return Err(EventDecodeError::Malformed);
    }
    let mut from = [0; 16];
    from.copy_from_slice(&bytes[1..17]);
    let rest = &bytes[HEADER_LEN..];
    let change = match (bytes[17], rest.is_empty()) {
        (0, true) => Change::ToolsListChanged,
        (1, true) => Change::PromptsListChanged,
        (2, true) => Change::ResourcesListChanged,
        (3, _) => Change::ResourceUpdated {
            uri: std::str::from_utf8(rest)
                .map_err(|_| EventDecodeError::Malformed)?
                .to_owned(),
        },
        _ => return Err(EventDecodeError::Malformed),
    };
    Ok((InstanceId(from), change))
}

type Publish = (Vec<u8>, oneshot::Sender<Result<(), BusError>>);

/// The subscription side: attached sinks, and the reader's generation while one runs.
#[derive(Default)]
struct Subscribers {
    sinks: Vec<(InstanceId, Weak<dyn BusSink>)>,
    /// The running reader's generation; `None` when no subscription is live.
    live: Option<u64>,
    next: u64,
}

struct Inner {
    client: redis::Client,
    config: RedisStoreConfig,
    channel: String,
    queue: mpsc::Sender<Publish>,
    subscribers: Arc<Mutex<Subscribers>>,
    /// Fired on drop: stops the reader and publisher tasks.
    closed: CancelToken,
    heartbeat: Duration,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.closed.cancel();
    }
}

/// The listen event bus over Redis pub/sub. See the module docs.
#[derive(Clone)]
pub struct RedisEventBus {
    inner: Arc<Inner>,
}

impl fmt::Debug for RedisEventBus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisEventBus")
            .field("config", &self.inner.config)
            .field("channel", &self.inner.channel)
            .finish_non_exhaustive()
    }
}

fn unavailable(e: &redis::RedisError) -> BusError {
    BusError::Unavailable(e.to_string())
}

impl RedisEventBus {
    /// Connects the publishing side (within the connect time-out) and starts its task; the
    /// subscription opens on the first [`EventBus::attach`]. Uses the URL, credentials,
    /// database, prefix and time-outs of `config`.
    ///
    /// # Errors
    /// [`RedisStoreError`] for a bad configuration or a Redis that does not answer.
    pub async fn connect(config: RedisStoreConfig) -> Result<RedisEventBus, RedisStoreError> {
        Self::connect_with(config, BusSettings::default()).await
    }

    /// As [`RedisEventBus::connect`], with its own [`BusSettings`].
    ///
    /// # Errors
    /// As [`RedisEventBus::connect`]; a zero queue or heartbeat is a configuration error.
    pub async fn connect_with(
        config: RedisStoreConfig,
        settings: BusSettings,
    ) -> Result<RedisEventBus, RedisStoreError> {
        let queue = settings.publish_queue;
        if queue == 0 || settings.heartbeat.is_zero() {
            return Err(RedisStoreError::Config(
                "the publish queue and the heartbeat must be positive".into(),
            ));
        }
        let client = redis::Client::open(config.connection_info()?)?;
        let manager_config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(config.connect_timeout))
            .set_response_timeout(Some(config.op_timeout))
            .set_number_of_retries(config.reconnect_retries)
            .set_min_delay(config.backoff_min)
            .set_max_delay(config.backoff_max);
        let conn = tokio::time::timeout(
            config.connect_timeout,
            ConnectionManager::new_with_config(client.clone(), manager_config),
        )
        .await
        .map_err(|_| RedisStoreError::Timeout(config.connect_timeout))??;
        let channel = format!("{}{CHANNEL}", config.prefix);
        let (tx, rx) = mpsc::channel(queue);
        let closed = CancelToken::new();
        tokio::spawn(publisher(
            conn,
            channel.clone(),
            config.op_timeout,
            rx,
            closed.clone(),
        ));
        Ok(RedisEventBus {
            inner: Arc::new(Inner {
                client,
                config,
                channel,
                queue: tx,
                subscribers: Arc::new(Mutex::new(Subscribers::default())),
                closed,
                heartbeat: settings.heartbeat,
            }),
        })
    }

    /// The pub/sub channel's name.
    #[must_use]
    pub fn channel(&self) -> &str {
        &self.inner.channel
    }

    /// Opens the subscription and starts its reader; `subs` is locked by the caller.
    async fn subscribe(&self, subs: &mut Subscribers) -> Result<(), BusError> {
        let config = &self.inner.config;
        let mut pubsub = tokio::time::timeout(config.connect_timeout, async {
            self.inner.client.get_async_pubsub().await
        })
        .await
        .map_err(|_| BusError::Timeout(config.connect_timeout))?
        .map_err(|e| unavailable(&e))?;
        tokio::time::timeout(config.op_timeout, pubsub.subscribe(&self.inner.channel))
            .await
            .map_err(|_| BusError::Timeout(config.op_timeout))?
            .map_err(|e| unavailable(&e))?;
        let generation = subs.next;
        subs.next += 1;
        subs.live = Some(generation);
        let (sink, messages) = pubsub.split();
        tokio::spawn(reader(
            Subscription {
                sink,
                messages,
                heartbeat: self.inner.heartbeat,
                op_timeout: config.op_timeout,
            },
            Arc::clone(&self.inner.subscribers),
            generation,
            self.inner.closed.clone(),
        ));
        Ok(())
    }
}

/// Drains the publish queue in order.
async fn publisher(
    mut conn: ConnectionManager,
    channel: String,
    limit: Duration,
    mut rx: mpsc::Receiver<Publish>,
    closed: CancelToken,
) {
    loop {
        let next = tokio::select! {
            next = rx.recv() => next,
            () = closed.cancelled() => None,
        };
        let Some((message, answer)) = next else {
            return;
        };
        let sent = tokio::time::timeout(limit, async {
            redis::cmd("PUBLISH")
                .arg(&channel)
                .arg(message)
                .query_async::<i64>(&mut conn)
                .await
        })
        .await;
        let result = match sent {
            Ok(Ok(_receivers)) => Ok(()),
            Ok(Err(e)) => Err(unavailable(&e)),
            Err(_) => Err(BusError::Timeout(limit)),
        };
        // The publisher may have stopped waiting; the change was handled either way.
        let _ = answer.send(result);
    }
}

/// One live subscription: its connection's two halves and its heartbeat.
struct Subscription {
    sink: redis::aio::PubSubSink,
    messages: redis::aio::PubSubStream,
    heartbeat: Duration,
    op_timeout: Duration,
}

/// Delivers received changes until the subscription ends (the connection closed, or a
/// heartbeat went unanswered within the operation time-out), then reports the loss.
async fn reader(
    sub: Subscription,
    subscribers: Arc<Mutex<Subscribers>>,
    generation: u64,
    closed: CancelToken,
) {
    let Subscription {
        mut sink,
        mut messages,
        heartbeat,
        op_timeout,
    } = sub;
    let mut beat = tokio::time::interval(heartbeat);
    beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The first tick is immediate; the subscription was just confirmed.
    beat.tick().await;
    let why = loop {
        let next = tokio::select! {
            next = messages.next() => next,
            _ = beat.tick() => {
                match tokio::time::timeout(op_timeout, sink.ping::<redis::Value>()).await {
                    Ok(Ok(_)) => continue,
                    Ok(Err(e)) => break format!("heartbeat failed: {e}"),
                    Err(_) => break format!("heartbeat unanswered within {op_timeout:?}"),
                }
            }
            () = closed.cancelled() => return,
        };
        let Some(message) = next else {
            break "the pub/sub connection was lost".to_owned();
        };
        let (from, change) = match decode_event(message.get_payload_bytes()) {
            Ok(event) => event,
            Err(e) => {
                tracing::warn!(error = %e, "bus message dropped");
                continue;
            }
        };
        let targets: Vec<Arc<dyn BusSink>> = {
            let mut subs = subscribers.lock().await;
            subs.sinks.retain(|(_, s)| s.strong_count() > 0);
            subs.sinks
                .iter()
                .filter(|(id, _)| *id != from)
                .filter_map(|(_, s)| s.upgrade())
                .collect()
        };
        for target in targets {
            target.deliver(&change);
        }
    };
    // The connection (both halves) is dropped with this task.
    let lost: Vec<Arc<dyn BusSink>> = {
        let mut subs = subscribers.lock().await;
        if subs.live != Some(generation) {
            return;
        }
        subs.live = None;
        std::mem::take(&mut subs.sinks)
            .into_iter()
            .filter_map(|(_, s)| s.upgrade())
            .collect()
    };
    let error = BusError::Unavailable(why);
    for sink in lost {
        sink.lost(&error);
    }
}

impl EventBus for RedisEventBus {
    fn publish(&self, from: InstanceId, change: &Change) -> StoreFuture<'_, Result<(), BusError>> {
        // Queued now, in call order; only Redis's answer is awaited.
        let queued = encode_event(from, change).and_then(|message| {
            let (tx, rx) = oneshot::channel();
            self.inner
                .queue
                .try_send((message, tx))
                .map(|()| rx)
                .map_err(|e| match e {
                    mpsc::error::TrySendError::Full(_) => {
                        BusError::Unavailable("the publish queue is full".into())
                    }
                    mpsc::error::TrySendError::Closed(_) => {
                        BusError::Unavailable("the bus is closed".into())
                    }
                })
        });
        // Waiting for the answer is bounded too: twice the operation time-out (the change
        // ahead of this one may take one). Past it the answer is `Timeout`, though the change
        // may still go out later: it is queued.
        let wait = self.inner.config.op_timeout.saturating_mul(2);
        Box::pin(async move {
            let rx = queued?;
            match tokio::time::timeout(wait, rx).await {
                Ok(Ok(result)) => result,
                Ok(Err(_)) => Err(BusError::Unavailable("the bus is closed".into())),
                Err(_) => Err(BusError::Timeout(wait)),
            }
        })
    }

    fn attach(
        &self,
        instance: InstanceId,
        sink: Weak<dyn BusSink>,
    ) -> StoreFuture<'_, Result<(), BusError>> {
        Box::pin(async move {
            let mut subs = self.inner.subscribers.lock().await;
            if subs.live.is_none() {
                self.subscribe(&mut subs).await?;
            }
            subs.sinks
                .retain(|(id, s)| s.strong_count() > 0 && !(*id == instance && s.ptr_eq(&sink)));
            subs.sinks.push((instance, sink));
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// #20: every change kind survives the message format; the publisher's id travels.
    #[test]
    fn events_round_trip() {
        let from = InstanceId([7; 16]);
        for change in [
            Change::ToolsListChanged,
            Change::PromptsListChanged,
            Change::ResourcesListChanged,
            Change::ResourceUpdated {
                uri: "file:///a b/é".into(),
            },
            Change::ResourceUpdated { uri: String::new() },
        ] {
            let bytes = encode_event(from, &change).unwrap();
            assert_eq!(decode_event(&bytes), Ok((from, change)));
        }
        let bytes = encode_event(from, &Change::PromptsListChanged).unwrap();
        let mut expected = vec![1];
        expected.extend_from_slice(&[7; 16]);
        expected.push(1);
        assert_eq!(bytes, expected);
    }

    /// The message bound at the bound and one past; foreign bytes are refused.
    #[test]
    fn the_message_bound_at_and_one_past() {
        let from = InstanceId([1; 16]);
        let at = Change::ResourceUpdated {
            uri: "u".repeat(MAX_EVENT_URI_BYTES),
        };
        let bytes = encode_event(from, &at).unwrap();
        assert_eq!(bytes.len(), MAX_BUS_MESSAGE_BYTES);
        assert_eq!(decode_event(&bytes), Ok((from, at)));
        let past = Change::ResourceUpdated {
            uri: "u".repeat(MAX_EVENT_URI_BYTES + 1),
        };
        assert_eq!(
            encode_event(from, &past),
            Err(BusError::TooLarge(MAX_EVENT_URI_BYTES + 1))
        );
        let mut long = bytes.clone();
        long.push(b'u');
        assert_eq!(
            decode_event(&long),
            Err(EventDecodeError::TooLarge(MAX_BUS_MESSAGE_BYTES + 1))
        );
        assert_eq!(decode_event(&bytes[..17]), Err(EventDecodeError::Malformed));
        let mut version = bytes.clone();
        version[0] = 2;
        assert_eq!(decode_event(&version), Err(EventDecodeError::Malformed));
        let mut list_with_uri = encode_event(from, &Change::ToolsListChanged).unwrap();
        list_with_uri.push(b'x');
        assert_eq!(
            decode_event(&list_with_uri),
            Err(EventDecodeError::Malformed)
        );
        let mut kind = encode_event(from, &Change::ToolsListChanged).unwrap();
        kind[17] = 4;
        assert_eq!(decode_event(&kind), Err(EventDecodeError::Malformed));
        let mut utf8 = encode_event(from, &Change::ResourceUpdated { uri: "a".into() }).unwrap();
        utf8[18] = 0xff;
        assert_eq!(decode_event(&utf8), Err(EventDecodeError::Malformed));
    }
}
