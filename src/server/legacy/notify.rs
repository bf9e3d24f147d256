//! Session-level notifications of the initialise era: `resources/subscribe` /
//! `resources/unsubscribe`, `notifications/resources/updated` for subscribed URIs and the
//! three `list_changed` notifications, delivered outside any request (2025-11-25
//! `server/resources`, "Subscriptions"; `basic/transports`, "Listening for Messages from the
//! Server").
//!
//! Every change the server announces (its own `resource_updated` / `replace_registry` /
//! `publish_change`, and other instances' through the event bus) reaches [`Fanout::change`]
//! next to the modern listen streams; each live legacy session's [`SessionSink`] turns it
//! into one notification on one of its streams: stdout on stdio, the standalone GET stream
//! on legacy HTTP (none open: the notification is dropped, as the transport allows).
//!
//! # Bounds
//! [`MAX_SUBSCRIPTIONS_PER_SESSION`] URIs of at most [`MAX_SUBSCRIPTION_URI_BYTES`] each, and
//! [`MAX_STREAMS_PER_SESSION`] standalone streams.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, Weak};

use serde_json::{json, Value};

use crate::server::encode::encode_notification;
use crate::server::lock;
use crate::wire::listen::Change;

/// Resource URIs one session may be subscribed to at once: enough for a client watching
/// every resource of a large catalogue page, small enough that a session's table stays a
/// few hundred kilobytes at worst.
pub const MAX_SUBSCRIPTIONS_PER_SESSION: usize = 256;

/// Longest subscribable URI in bytes: the event bus's own bound, so every update the bus can
/// carry can be subscribed to and nothing longer is kept.
pub const MAX_SUBSCRIPTION_URI_BYTES: usize = crate::core::bus::MAX_EVENT_URI_BYTES;

/// Standalone (GET) streams one legacy HTTP session may hold open. One, as other SDKs do:
/// every notification goes to exactly one stream anyway, and a second GET while the first is
/// open is a client bug or a leaked connection (409; a reconnect after the old stream closed
/// is accepted).
pub const MAX_STREAMS_PER_SESSION: usize = 1;

/// Where a session's notifications can go.
pub trait SessionStream: Send + Sync {
    /// Sends one notification line; `false` when the stream is gone.
    fn send(&self, line: String) -> bool;
    /// Whether the stream can still carry anything.
    fn is_open(&self) -> bool;
    /// Ends the stream (the session ended).
    fn close(&self);
}

/// Why a subscription was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubscribeError {
    /// [`MAX_SUBSCRIPTIONS_PER_SESSION`] URIs are subscribed already.
    Full,
    /// The URI is longer than [`MAX_SUBSCRIPTION_URI_BYTES`].
    TooLong,
}

/// The notification side of one legacy session.
#[derive(Default)]
pub struct SessionSink {
    subscriptions: Mutex<BTreeSet<String>>,
    streams: Mutex<Vec<Arc<dyn SessionStream>>>,
}

impl std::fmt::Debug for SessionSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionSink")
            .field("subscriptions", &lock(&self.subscriptions).len())
            .field("streams", &lock(&self.streams).len())
            .finish()
    }
}

impl SessionSink {
    /// Subscribes to `uri` (idempotent).
    ///
    /// # Errors
    /// [`SubscribeError`] past a bound.
    pub fn subscribe(&self, uri: &str) -> Result<(), SubscribeError> {
        if uri.len() > MAX_SUBSCRIPTION_URI_BYTES {
            return Err(SubscribeError::TooLong);
        }
        let mut subscriptions = lock(&self.subscriptions);
        if !subscriptions.contains(uri) && subscriptions.len() >= MAX_SUBSCRIPTIONS_PER_SESSION {
            return Err(SubscribeError::Full);
        }
        subscriptions.insert(uri.to_owned());
        Ok(())
    }

    /// Ends the subscription to `uri` (nothing to end is fine).
    pub fn unsubscribe(&self, uri: &str) {
        lock(&self.subscriptions).remove(uri);
    }

    /// Subscribed URIs now.
    #[must_use]
    pub fn subscriptions(&self) -> usize {
        lock(&self.subscriptions).len()
    }

    /// Adds a stream; `false` when [`MAX_STREAMS_PER_SESSION`] open ones are attached already.
    pub fn attach(&self, stream: Arc<dyn SessionStream>) -> bool {
        let mut streams = lock(&self.streams);
        streams.retain(|s| s.is_open());
        if streams.len() >= MAX_STREAMS_PER_SESSION {
            return false;
        }
        streams.push(stream);
        true
    }

    /// Adds the session's own connection (stdio: stdout), which no bound limits.
    pub fn attach_connection(&self, stream: Arc<dyn SessionStream>) {
        lock(&self.streams).push(stream);
    }

    /// The session ended: every stream closes, nothing more is sent.
    pub fn close(&self) {
        for stream in lock(&self.streams).drain(..) {
            stream.close();
        }
        lock(&self.subscriptions).clear();
    }

    /// The notification for `change`, if this session wants it, on one open stream.
    fn change(&self, change: &Change) {
        let (method, params) = match change {
            Change::ToolsListChanged => ("notifications/tools/list_changed", None),
            Change::PromptsListChanged => ("notifications/prompts/list_changed", None),
            Change::ResourcesListChanged => ("notifications/resources/list_changed", None),
            Change::ResourceUpdated { uri } => {
                if !lock(&self.subscriptions).contains(uri) {
                    return;
                }
                (
                    "notifications/resources/updated",
                    Some(json!({ "uri": uri })),
                )
            }
        };
        let params = params.unwrap_or_else(|| Value::Object(serde_json::Map::new()));
        let Some(line) = encode_notification(method, &params.to_string()) else {
            return;
        };
        let mut streams = lock(&self.streams);
        streams.retain(|s| s.is_open());
        // Exactly one stream carries each notification (the first that takes it).
        for stream in streams.iter() {
            if stream.send(line.clone()) {
                return;
            }
        }
    }
}

/// Every live legacy session of one server, held weakly (a session ends by being dropped).
#[derive(Default)]
pub struct Fanout {
    sinks: Mutex<Vec<Weak<SessionSink>>>,
}

impl std::fmt::Debug for Fanout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fanout")
            .field("sessions", &lock(&self.sinks).len())
            .finish()
    }
}

impl Fanout {
    /// Registers a session's sink.
    pub fn register(&self, sink: &Arc<SessionSink>) {
        let mut sinks = lock(&self.sinks);
        sinks.retain(|s| s.strong_count() > 0);
        sinks.push(Arc::downgrade(sink));
    }

    /// A change the server announces: to every live session that wants it.
    pub fn change(&self, change: &Change) {
        let live: Vec<Arc<SessionSink>> = {
            let mut sinks = lock(&self.sinks);
            sinks.retain(|s| s.strong_count() > 0);
            sinks.iter().filter_map(Weak::upgrade).collect()
        };
        for sink in live {
            sink.change(change);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[derive(Default)]
    struct Seen {
        lines: Mutex<Vec<String>>,
        closed: AtomicBool,
    }

    impl SessionStream for Seen {
        fn send(&self, line: String) -> bool {
            if self.closed.load(Ordering::SeqCst) {
                return false;
            }
            lock(&self.lines).push(line);
            true
        }
        fn is_open(&self) -> bool {
            !self.closed.load(Ordering::SeqCst)
        }
        fn close(&self) {
            self.closed.store(true, Ordering::SeqCst);
        }
    }

    #[test]
    fn subscriptions_are_bounded_at_max_and_one_past() {
        let sink = SessionSink::default();
        for i in 0..MAX_SUBSCRIPTIONS_PER_SESSION {
            sink.subscribe(&format!("mem://{i}")).unwrap();
        }
        assert_eq!(sink.subscribe("mem://one-past"), Err(SubscribeError::Full));
        // Re-subscribing to a held URI is not a new one.
        sink.subscribe("mem://0").unwrap();
        sink.unsubscribe("mem://0");
        sink.subscribe("mem://one-past").unwrap();
        assert_eq!(sink.subscriptions(), MAX_SUBSCRIPTIONS_PER_SESSION);
        let at = "m".repeat(MAX_SUBSCRIPTION_URI_BYTES);
        let past = "m".repeat(MAX_SUBSCRIPTION_URI_BYTES + 1);
        sink.unsubscribe("mem://1");
        sink.subscribe(&at).unwrap();
        assert_eq!(sink.subscribe(&past), Err(SubscribeError::TooLong));
    }

    #[test]
    fn streams_are_bounded_at_max_and_a_closed_one_frees_its_place() {
        let sink = SessionSink::default();
        let first = Arc::new(Seen::default());
        for _ in 0..MAX_STREAMS_PER_SESSION {
            assert!(sink.attach(Arc::clone(&first) as Arc<dyn SessionStream>));
        }
        let second = Arc::new(Seen::default());
        assert!(!sink.attach(Arc::clone(&second) as Arc<dyn SessionStream>));
        first.close();
        assert!(sink.attach(Arc::clone(&second) as Arc<dyn SessionStream>));
    }

    #[test]
    fn updates_only_for_subscribed_uris_list_changes_always_one_stream_each() {
        let fanout = Fanout::default();
        let sink = Arc::new(SessionSink::default());
        fanout.register(&sink);
        let a = Arc::new(Seen::default());
        let b = Arc::new(Seen::default());
        sink.attach_connection(Arc::clone(&a) as Arc<dyn SessionStream>);
        sink.attach_connection(Arc::clone(&b) as Arc<dyn SessionStream>);
        sink.subscribe("mem://w").unwrap();
        fanout.change(&Change::ResourceUpdated {
            uri: "mem://other".into(),
        });
        fanout.change(&Change::ResourceUpdated {
            uri: "mem://w".into(),
        });
        fanout.change(&Change::ToolsListChanged);
        assert_eq!(
            *lock(&a.lines),
            [
                r#"{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"mem://w"}}"#,
                r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}"#,
            ]
        );
        assert!(lock(&b.lines).is_empty(), "each notification on one stream");
        sink.unsubscribe("mem://w");
        fanout.change(&Change::ResourceUpdated {
            uri: "mem://w".into(),
        });
        assert_eq!(lock(&a.lines).len(), 2, "unsubscribed: nothing more");
        drop(sink);
        fanout.change(&Change::ToolsListChanged);
        assert_eq!(lock(&a.lines).len(), 2, "a dropped session gets nothing");
    }
}
