//! Where continuation chains live between rounds (a private server-side ledger).
//!
//! [`LedgerStore`] is the storage trait; [`MemoryLedgerStore`] is the bounded in-process
//! implementation. The trait is runtime-neutral: methods return boxed `Send` futures, so a shared
//! store (a database, a cache cluster) can implement it with real I/O while the in-memory one
//! answers immediately. No runtime is assumed.
//!
//! Writes are compare-and-swap on the whole previous chain value. That is what makes "the
//! operation runs at most once per round" hold across concurrent retries and across processes:
//! two resumes of one pending round both load the same chain, both compute `Dispatch`, but only
//! the first swap succeeds; the loser gets [`StoreError::Conflict`] and must reload and re-run
//! the ledger transition (which then answers `InFlight` or a recovery dispatch) instead of
//! running the handler.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use crate::machine::ledger::{Chain, ChainId, LedgerEvent};
use crate::machine::{Epoch, Tick};

/// A boxed, `Send` future borrowed from the store.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Default bound of [`MemoryLedgerStore`]: live chains kept at once.
pub const DEFAULT_CAPACITY: usize = 10_000;

/// Store failures.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The stored chain is not the expected one (a concurrent writer won): reload and retry the
    /// transition, never the handler.
    #[error("ledger record changed concurrently")]
    Conflict,
    /// The store is at its bound even after dropping disposable chains.
    #[error("ledger store is full")]
    Full,
    /// A backing store failed (shared implementations only). The text is for logs, never clients.
    /// The state was neither accepted nor rejected: the server answers a retryable failure.
    #[error("ledger store unavailable: {0}")]
    Unavailable(String),
    /// A backing store did not answer within its per-operation time-out (shared
    /// implementations only). Like [`StoreError::Unavailable`], never read as acceptance.
    #[error("ledger store timed out after {0:?}")]
    Timeout(std::time::Duration),
}

impl StoreError {
    /// True for the store's own outages ([`StoreError::Unavailable`], [`StoreError::Timeout`]):
    /// the same request may succeed once the store answers again.
    #[must_use]
    pub fn is_outage(&self) -> bool {
        matches!(self, StoreError::Unavailable(_) | StoreError::Timeout(_))
    }
}

/// Storage for chains. See the module docs for the compare-and-swap contract.
pub trait LedgerStore: Send + Sync {
    /// The chain with this id, if it is still kept.
    fn load(&self, id: ChainId) -> StoreFuture<'_, Result<Option<Chain>, StoreError>>;

    /// Replace the record for `new.id()` only if it currently equals `expected` (`None`: only if
    /// absent). `now` lets a bounded store drop disposable chains to make room.
    fn compare_and_swap(
        &self,
        now: Tick,
        expected: Option<Chain>,
        new: Chain,
    ) -> StoreFuture<'_, Result<(), StoreError>>;

    /// Forward an epoch bump to every kept chain (shutdown) and drop what became disposable.
    /// Chains the store cannot reach still refuse old state, because resumes carry the epoch.
    fn bump_epoch(&self, now: Tick, epoch: Epoch) -> StoreFuture<'_, Result<(), StoreError>>;

    /// Drop every chain that is disposable at `now`; returns how many were dropped.
    fn sweep(&self, now: Tick) -> StoreFuture<'_, Result<usize, StoreError>>;
}

/// Bounded in-memory store: a `Mutex<HashMap>`; every operation completes on first poll.
///
/// A full store refuses a new chain in O(1) while none of its chains can be dropped: it keeps
/// a lower bound of the ticks at which its chains become disposable
/// ([`Chain::disposable_from`]) and looks for disposable chains only once `now` reaches it.
#[derive(Debug)]
pub struct MemoryLedgerStore {
    capacity: usize,
    kept: Mutex<Kept>,
}

/// The chains and what is known about when any of them can be dropped.
#[derive(Debug, Default)]
struct Kept {
    chains: HashMap<ChainId, Chain>,
    /// No kept chain is disposable before this tick; `None`: none is disposable at any tick.
    /// Lowered on every insert and replace (a replaced chain's old, later-or-earlier tick may
    /// linger: the bound stays a bound) and made exact by every scan.
    earliest: Option<Tick>,
    /// Scans of the whole map so far (what the bound saves; read by the tests).
    scans: u64,
}

impl Kept {
    /// Drops every chain disposable at `now`, scanning only when the bound says one may be.
    fn sweep(&mut self, now: Tick) -> usize {
        match self.earliest {
            Some(from) if now.has_reached(from) => self.scan(now),
            _ => 0,
        }
    }

    /// Drops every chain disposable at `now` and makes the bound exact over what is left.
    fn scan(&mut self, now: Tick) -> usize {
        self.scans += 1;
        let before = self.chains.len();
        let mut earliest: Option<Tick> = None;
        self.chains.retain(|_, c| {
            if c.is_disposable(now) {
                return false;
            }
            if let Some(from) = c.disposable_from() {
                earliest = Some(earliest.map_or(from, |e| e.min(from)));
            }
            true
        });
        self.earliest = earliest;
        before - self.chains.len()
    }

    fn insert(&mut self, chain: Chain) {
        if let Some(from) = chain.disposable_from() {
            self.earliest = Some(self.earliest.map_or(from, |e| e.min(from)));
        }
        self.chains.insert(chain.id(), chain);
    }
}

impl Default for MemoryLedgerStore {
    fn default() -> Self {
        MemoryLedgerStore::new(DEFAULT_CAPACITY)
    }
}

impl MemoryLedgerStore {
    /// A store keeping at most `capacity` chains.
    #[must_use]
    pub fn new(capacity: usize) -> MemoryLedgerStore {
        MemoryLedgerStore {
            capacity,
            kept: Mutex::default(),
        }
    }

    /// Chains currently kept.
    #[must_use]
    pub fn len(&self) -> usize {
        self.lock().chains.len()
    }

    /// True when no chain is kept.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        // No code path panics while holding the lock, and every write leaves the map and its
        // bound consistent (the bound is lowered before a chain can need it), so a poisoned
        // store is still consistent.
        self.kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Scans of the whole map so far (tests: a refusal of a full store costs none while nothing
    /// can be dropped).
    #[cfg(test)]
    fn scans(&self) -> u64 {
        self.lock().scans
    }

    fn cas_now(&self, now: Tick, expected: Option<Chain>, new: Chain) -> Result<(), StoreError> {
        let mut kept = self.lock();
        if kept.chains.get(&new.id()) != expected.as_ref() {
            return Err(StoreError::Conflict);
        }
        if expected.is_none() && kept.chains.len() >= self.capacity {
            kept.sweep(now);
            if kept.chains.len() >= self.capacity {
                return Err(StoreError::Full);
            }
        }
        kept.insert(new);
        Ok(())
    }
}

impl LedgerStore for MemoryLedgerStore {
    fn load(&self, id: ChainId) -> StoreFuture<'_, Result<Option<Chain>, StoreError>> {
        let found = self.lock().chains.get(&id).cloned();
        Box::pin(async move { Ok(found) })
    }

    fn compare_and_swap(
        &self,
        now: Tick,
        expected: Option<Chain>,
        new: Chain,
    ) -> StoreFuture<'_, Result<(), StoreError>> {
        let result = self.cas_now(now, expected, new);
        Box::pin(async move { result })
    }

    fn bump_epoch(&self, now: Tick, epoch: Epoch) -> StoreFuture<'_, Result<(), StoreError>> {
        {
            let mut kept = self.lock();
            for chain in kept.chains.values_mut() {
                // Effects are `Invalidated` or `Nothing`; the shutdown path cancels running calls
                // itself, so there is nothing further to send.
                let _ = chain.handle(now, LedgerEvent::EpochBumped(epoch));
            }
            // Every chain changed in place, so the bound no longer holds: a full scan
            // drops what became disposable and recomputes it.
            kept.scan(now);
        }
        Box::pin(async { Ok(()) })
    }

    fn sweep(&self, now: Tick) -> StoreFuture<'_, Result<usize, StoreError>> {
        let dropped = self.lock().sweep(now);
        Box::pin(async move { Ok(dropped) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::ledger::{Binding, InputMethod, LedgerConfig, LedgerEffect, Phase};
    use crate::machine::Digest;
    use std::task::{Context, Poll, Waker};

    /// The in-memory store is ready on first poll, so tests need no runtime.
    fn ready<T>(mut f: StoreFuture<'_, T>) -> T {
        match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(v) => v,
            Poll::Pending => panic!("in-memory store futures must be ready immediately"),
        }
    }

    fn chain(id: u8) -> Chain {
        let binding = Binding {
            principal: Digest([1; 32]),
            method: InputMethod::ToolsCall,
            request: Digest([2; 32]),
        };
        let config = LedgerConfig::with_ttl(100);
        Chain::new(ChainId([id; 16]), binding, Epoch(0), config)
    }

    fn asked(mut c: Chain, now: u64) -> Chain {
        let e = c.handle(Tick(now), LedgerEvent::HandlerAsked { prompt: vec![1] });
        assert!(matches!(e, LedgerEffect::Prompt { .. }));
        c
    }

    #[test]
    fn insert_load_and_compare_and_swap() {
        let s = MemoryLedgerStore::new(4);
        let c = asked(chain(1), 0);
        ready(s.compare_and_swap(Tick(0), None, c.clone())).unwrap();
        assert_eq!(ready(s.load(c.id())).unwrap(), Some(c.clone()));
        assert_eq!(
            ready(s.compare_and_swap(Tick(0), None, c.clone())),
            Err(StoreError::Conflict)
        );
        let mut next = c.clone();
        let _ = next.handle(Tick(1), LedgerEvent::EpochBumped(Epoch(1)));
        ready(s.compare_and_swap(Tick(1), Some(c.clone()), next.clone())).unwrap();
        // A second writer holding the old value loses.
        assert_eq!(
            ready(s.compare_and_swap(Tick(1), Some(c), next)),
            Err(StoreError::Conflict)
        );
        assert_eq!(ready(s.load(ChainId([9; 16]))).unwrap(), None);
    }

    #[test]
    fn bounded_size_sweeps_disposable_chains_before_refusing() {
        let s = MemoryLedgerStore::new(2);
        ready(s.compare_and_swap(Tick(0), None, asked(chain(1), 0))).unwrap();
        ready(s.compare_and_swap(Tick(0), None, asked(chain(2), 0))).unwrap();
        assert_eq!(
            ready(s.compare_and_swap(Tick(50), None, asked(chain(3), 50))),
            Err(StoreError::Full)
        );
        // At tick 100 both pending prompts have expired and are dropped to make room.
        ready(s.compare_and_swap(Tick(100), None, asked(chain(3), 100))).unwrap();
        assert_eq!(s.len(), 1);
    }

    /// A chain whose handler is running: never disposable.
    fn running(id: u8) -> Chain {
        chain(id)
    }

    #[test]
    fn o52_a_full_store_refuses_without_scanning_until_a_chain_can_be_dropped() {
        // At capacity (3 of 3) and one past: the fourth is refused; 1000 refusals before the
        // prompts expire at tick 100 scan nothing.
        let s = MemoryLedgerStore::new(3);
        for id in 1..=3 {
            ready(s.compare_and_swap(Tick(0), None, asked(chain(id), 0))).unwrap();
        }
        assert_eq!(s.len(), 3);
        for now in 0..1000 {
            assert_eq!(
                ready(s.compare_and_swap(Tick(now % 100), None, asked(chain(4), 0))),
                Err(StoreError::Full)
            );
        }
        assert_eq!(s.scans(), 0);
        assert_eq!(ready(s.sweep(Tick(99))).unwrap(), 0);
        assert_eq!(s.scans(), 0);
        // At tick 100 all three can go: one scan drops them and the fourth fits.
        ready(s.compare_and_swap(Tick(100), None, asked(chain(4), 100))).unwrap();
        assert_eq!((s.len(), s.scans()), (1, 1));
    }

    #[test]
    fn o52_a_store_full_of_running_chains_never_scans() {
        let s = MemoryLedgerStore::new(2);
        ready(s.compare_and_swap(Tick(0), None, running(1))).unwrap();
        ready(s.compare_and_swap(Tick(0), None, running(2))).unwrap();
        for now in [0, 1, u64::MAX] {
            assert_eq!(
                ready(s.compare_and_swap(Tick(now), None, running(3))),
                Err(StoreError::Full)
            );
            assert_eq!(ready(s.sweep(Tick(now))).unwrap(), 0);
        }
        assert_eq!(s.scans(), 0);
    }

    #[test]
    fn o52_a_replace_that_moves_expiry_later_costs_one_scan_then_none() {
        let s = MemoryLedgerStore::new(1);
        let first = asked(chain(1), 0); // expires at 100
        ready(s.compare_and_swap(Tick(0), None, first.clone())).unwrap();
        // The same pending round, its expiry moved from 100 to 190 (as a shared store's
        // record could be rewritten; the machine itself moves it through a new round).
        let later = Chain::from_record(crate::machine::ledger::ChainRecord {
            phase: Phase::AwaitingAnswer {
                round: 1,
                expires: Tick(190),
            },
            last_expires: Tick(190),
            ..first.to_record()
        })
        .unwrap();
        ready(s.compare_and_swap(Tick(90), Some(first), later)).unwrap();
        // The bound still says 100: the refusal at 100 scans once, drops nothing, and learns 190.
        assert_eq!(
            ready(s.compare_and_swap(Tick(100), None, chain(2))),
            Err(StoreError::Full)
        );
        assert_eq!(s.scans(), 1);
        for now in 100..190 {
            assert_eq!(
                ready(s.compare_and_swap(Tick(now), None, chain(2))),
                Err(StoreError::Full)
            );
        }
        assert_eq!(s.scans(), 1);
        ready(s.compare_and_swap(Tick(190), None, chain(2))).unwrap();
        assert_eq!((s.len(), s.scans()), (1, 2));
    }

    #[test]
    fn o5_bump_epoch_makes_invalidated_chains_droppable_by_the_next_refusal() {
        let s = MemoryLedgerStore::new(2);
        ready(s.compare_and_swap(Tick(0), None, running(1))).unwrap();
        ready(s.compare_and_swap(Tick(0), None, running(2))).unwrap();
        // Both still run after the bump: kept, not disposable.
        ready(s.bump_epoch(Tick(1), Epoch(1))).unwrap();
        assert_eq!(
            ready(s.compare_and_swap(Tick(1), None, running(3))),
            Err(StoreError::Full)
        );
        // One handler reports back: its invalidated chain is disposable at once.
        let before = ready(s.load(ChainId([1; 16]))).unwrap().unwrap();
        let mut after = before.clone();
        let _ = after.handle(Tick(2), LedgerEvent::HandlerCompleted);
        assert_eq!(after.disposable_from(), Some(Tick::ZERO));
        ready(s.compare_and_swap(Tick(2), Some(before), after)).unwrap();
        ready(s.compare_and_swap(Tick(2), None, running(3))).unwrap();
        assert_eq!(ready(s.load(ChainId([1; 16]))).unwrap(), None);
        assert_eq!(s.len(), 2);
    }

    #[test]
    fn sweep_drops_only_disposable_chains() {
        let s = MemoryLedgerStore::new(8);
        ready(s.compare_and_swap(Tick(0), None, asked(chain(1), 0))).unwrap();
        ready(s.compare_and_swap(Tick(0), None, chain(2))).unwrap(); // running: never dropped
        assert_eq!(ready(s.sweep(Tick(99))).unwrap(), 0);
        assert_eq!(ready(s.sweep(Tick(100))).unwrap(), 1);
        assert_eq!(ready(s.sweep(Tick(u64::MAX))).unwrap(), 0);
        assert!(!s.is_empty());
    }

    #[test]
    fn o5_bump_epoch_invalidates_every_kept_chain() {
        let s = MemoryLedgerStore::new(8);
        ready(s.compare_and_swap(Tick(0), None, asked(chain(1), 0))).unwrap();
        ready(s.compare_and_swap(Tick(0), None, chain(2))).unwrap();
        ready(s.bump_epoch(Tick(1), Epoch(1))).unwrap();
        // The pending chain became disposable and was dropped; the running one is kept,
        // invalidated, until its handler reports back.
        assert_eq!(ready(s.load(ChainId([1; 16]))).unwrap(), None);
        let running = ready(s.load(ChainId([2; 16]))).unwrap().unwrap();
        assert_eq!(running.phase(), Phase::Invalidated { running: true });
    }
}
