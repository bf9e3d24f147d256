//! The listen event bus: how `notifications/resources/updated` and the `…/list_changed` events
//! published on one server instance reach the `subscriptions/listen` streams of every other
//! instance (K-section; issue #20).
//!
//! [`EventBus`] is the trait; [`MemoryEventBus`] is the in-process implementation and the
//! default (one per server, which is exactly the single-process behaviour: nobody else is
//! attached). Several servers in one process may share one `MemoryEventBus`; instances in
//! several processes share a networked bus (the Redis pub/sub one in `scale`, feature `redis`).
//!
//! # Contract
//! - Every instance has an [`InstanceId`]. The server delivers its own changes to its own
//!   streams directly (so their order with the acknowledgement is the hub's) and
//!   [`EventBus::publish`]es them; the bus delivers each change to every sink attached under
//!   **another** instance id, never back to its publisher (no duplicate on the publisher).
//! - [`EventBus::attach`] resolves `Ok` only once the sink will receive every change published
//!   after that point: a listen stream is acknowledged after its instance is attached, so a
//!   change published anywhere after the acknowledgement reaches it.
//! - A bus that loses its subscription calls [`BusSink::lost`] on every sink it held and forgets
//!   them; the server then ends every affected stream with a JSON-RPC error (-32603,
//!   `data.reason = "bus_unavailable"`) instead of leaving it silent, and attaches again on the
//!   next listen.
//! - Sinks are held weakly: a dropped server is pruned, never kept alive by the bus.
//!
//! Like [`LedgerStore`](crate::core::store::LedgerStore), the trait is runtime-neutral (boxed
//! `Send` futures); nothing here names a network client.

use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use crate::core::store::StoreFuture;
use crate::machine::subscriptions::Change;

/// Bound of one change on a bus, in bytes of its resource URI: a bus message is this plus a
/// small fixed header. A change over it is refused with [`BusError::TooLarge`] rather than
/// carried (a URI that long is no resource any client subscribed to by hand, and an unbounded
/// message would let one publisher fill every instance's subscription buffer).
pub const MAX_EVENT_URI_BYTES: usize = 8 * 1024;

/// One instance's identity on a bus: its own changes are never delivered back to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InstanceId(pub [u8; 16]);

impl InstanceId {
    /// A random id (128 bits: two instances never share one in practice).
    ///
    /// # Errors
    /// The operating system refused randomness.
    pub fn random() -> Result<InstanceId, getrandom::Error> {
        let mut id = [0; 16];
        getrandom::getrandom(&mut id)?;
        Ok(InstanceId(id))
    }
}

/// Bus failures. The text is for logs, never for clients.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BusError {
    /// The bus cannot carry changes right now (connection lost, refused, closed).
    #[error("event bus unavailable: {0}")]
    Unavailable(String),
    /// The bus did not answer within its time-out.
    #[error("event bus timed out after {0:?}")]
    Timeout(Duration),
    /// The change's URI is over [`MAX_EVENT_URI_BYTES`] (or a received message over the bus's
    /// message bound).
    #[error("event of {0} bytes is over the bus bound")]
    TooLarge(usize),
}

/// Where a bus delivers: one server instance's listen streams.
pub trait BusSink: Send + Sync {
    /// A change another instance published.
    fn deliver(&self, change: &Change);
    /// The bus lost its subscription: changes may have been missed from here on.
    fn lost(&self, error: &BusError);
}

/// The bus listen events travel on between instances. See the module docs for the contract.
pub trait EventBus: Send + Sync {
    /// Sends `change` to every sink attached under another instance id than `from`.
    fn publish(&self, from: InstanceId, change: &Change) -> StoreFuture<'_, Result<(), BusError>>;

    /// Attaches `sink` for `instance` (again after a loss). Resolves once the sink receives
    /// every change published from then on.
    fn attach(
        &self,
        instance: InstanceId,
        sink: Weak<dyn BusSink>,
    ) -> StoreFuture<'_, Result<(), BusError>>;
}

/// Refuses a change whose URI is over [`MAX_EVENT_URI_BYTES`].
///
/// # Errors
/// [`BusError::TooLarge`] with the URI's length.
pub fn check_event(change: &Change) -> Result<(), BusError> {
    match change {
        Change::ResourceUpdated { uri } if uri.len() > MAX_EVENT_URI_BYTES => {
            Err(BusError::TooLarge(uri.len()))
        }
        _ => Ok(()),
    }
}

/// The in-process bus: a list of weakly held sinks; every publish delivers synchronously.
#[derive(Default)]
pub struct MemoryEventBus {
    sinks: Mutex<Vec<(InstanceId, Weak<dyn BusSink>)>>,
}

impl std::fmt::Debug for MemoryEventBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryEventBus")
            .field("sinks", &self.attached())
            .finish()
    }
}

impl MemoryEventBus {
    /// An empty bus.
    #[must_use]
    pub fn new() -> MemoryEventBus {
        MemoryEventBus::default()
    }

    /// Sinks attached and still alive.
    #[must_use]
    pub fn attached(&self) -> usize {
        let mut sinks = self.sinks.lock().unwrap_or_else(PoisonError::into_inner);
        sinks.retain(|(_, s)| s.strong_count() > 0);
        sinks.len()
    }

    /// Delivers now; the sinks are called outside the bus's lock (a sink may publish).
    fn deliver(&self, from: InstanceId, change: &Change) {
        let targets: Vec<Arc<dyn BusSink>> = {
            let mut sinks = self.sinks.lock().unwrap_or_else(PoisonError::into_inner);
            sinks.retain(|(_, s)| s.strong_count() > 0);
            sinks
                .iter()
                .filter(|(id, _)| *id != from)
                .filter_map(|(_, s)| s.upgrade())
                .collect()
        };
        for sink in targets {
            sink.deliver(change);
        }
    }
}

impl EventBus for MemoryEventBus {
    fn publish(&self, from: InstanceId, change: &Change) -> StoreFuture<'_, Result<(), BusError>> {
        let result = check_event(change).map(|()| self.deliver(from, change));
        Box::pin(async move { result })
    }

    fn attach(
        &self,
        instance: InstanceId,
        sink: Weak<dyn BusSink>,
    ) -> StoreFuture<'_, Result<(), BusError>> {
        {
            let mut sinks = self.sinks.lock().unwrap_or_else(PoisonError::into_inner);
            sinks.retain(|(id, s)| s.strong_count() > 0 && !(*id == instance && s.ptr_eq(&sink)));
            sinks.push((instance, sink));
        }
        Box::pin(async { Ok(()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Seen {
        changes: Mutex<Vec<Change>>,
        lost: Mutex<Vec<BusError>>,
    }

    impl BusSink for Seen {
        fn deliver(&self, change: &Change) {
            self.changes.lock().unwrap().push(change.clone());
        }
        fn lost(&self, error: &BusError) {
            self.lost.lock().unwrap().push(error.clone());
        }
    }

    fn now<T>(f: StoreFuture<'_, T>) -> T {
        futures_util::FutureExt::now_or_never(f).expect("the memory bus answers on first poll")
    }

    fn updated(uri: &str) -> Change {
        Change::ResourceUpdated {
            uri: uri.to_owned(),
        }
    }

    /// K-section, #20: a change reaches every other instance once, never its publisher.
    #[test]
    fn k2_a_change_reaches_other_instances_and_not_its_publisher() {
        let bus = MemoryEventBus::new();
        let a = Arc::new(Seen::default());
        let b = Arc::new(Seen::default());
        let (ia, ib) = (InstanceId([1; 16]), InstanceId([2; 16]));
        let wa: Weak<dyn BusSink> = Arc::downgrade(&(a.clone() as Arc<dyn BusSink>));
        let wb: Weak<dyn BusSink> = Arc::downgrade(&(b.clone() as Arc<dyn BusSink>));
        now(bus.attach(ia, wa.clone())).unwrap();
        now(bus.attach(ib, wb)).unwrap();
        // Attaching the same sink again does not deliver twice.
        now(bus.attach(ia, wa)).unwrap();
        assert_eq!(bus.attached(), 2);
        now(bus.publish(ia, &updated("a://x"))).unwrap();
        now(bus.publish(ib, &Change::ToolsListChanged)).unwrap();
        assert_eq!(*a.changes.lock().unwrap(), vec![Change::ToolsListChanged]);
        assert_eq!(*b.changes.lock().unwrap(), vec![updated("a://x")]);
        assert!(a.lost.lock().unwrap().is_empty());
    }

    /// A dropped sink is pruned, not kept alive.
    #[test]
    fn a_dropped_sink_is_pruned() {
        let bus = MemoryEventBus::new();
        let a: Arc<dyn BusSink> = Arc::new(Seen::default());
        now(bus.attach(InstanceId([1; 16]), Arc::downgrade(&a))).unwrap();
        assert_eq!(bus.attached(), 1);
        drop(a);
        assert_eq!(bus.attached(), 0);
        now(bus.publish(InstanceId([2; 16]), &Change::ToolsListChanged)).unwrap();
    }

    /// The URI bound: at the bound the change travels, one byte past it is refused.
    #[test]
    fn the_event_bound_at_and_one_past() {
        let bus = MemoryEventBus::new();
        let b = Arc::new(Seen::default());
        let wb: Weak<dyn BusSink> = Arc::downgrade(&(b.clone() as Arc<dyn BusSink>));
        now(bus.attach(InstanceId([2; 16]), wb)).unwrap();
        let at = updated(&"u".repeat(MAX_EVENT_URI_BYTES));
        let past = updated(&"u".repeat(MAX_EVENT_URI_BYTES + 1));
        now(bus.publish(InstanceId([1; 16]), &at)).unwrap();
        assert_eq!(
            now(bus.publish(InstanceId([1; 16]), &past)),
            Err(BusError::TooLarge(MAX_EVENT_URI_BYTES + 1))
        );
        assert_eq!(*b.changes.lock().unwrap(), vec![at]);
    }
}
