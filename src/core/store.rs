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
#[derive(Debug)]
pub struct MemoryLedgerStore {
    capacity: usize,
    chains: Mutex<HashMap<ChainId, Chain>>,
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
            chains: Mutex::new(HashMap::new()),
        }
    }

    /// Chains currently kept.
    #[must_use]
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// True when no chain is kept.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ChainId, Chain>> {
        // No code path panics while holding the lock, and every write is a single map operation,
        // so a poisoned map is still consistent.
        self.chains
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn sweep_now(map: &mut HashMap<ChainId, Chain>, now: Tick) -> usize {
        let before = map.len();
        map.retain(|_, c| !c.is_disposable(now));
        before - map.len()
    }

    fn cas_now(&self, now: Tick, expected: Option<Chain>, new: Chain) -> Result<(), StoreError> {
        let mut map = self.lock();
        let id = new.id();
        if map.get(&id) != expected.as_ref() {
            return Err(StoreError::Conflict);
        }
        if expected.is_none() && map.len() >= self.capacity {
            Self::sweep_now(&mut map, now);
            if map.len() >= self.capacity {
                return Err(StoreError::Full);
            }
        }
        map.insert(id, new);
        Ok(())
    }
}

impl LedgerStore for MemoryLedgerStore {
    fn load(&self, id: ChainId) -> StoreFuture<'_, Result<Option<Chain>, StoreError>> {
        let found = self.lock().get(&id).cloned();
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
            let mut map = self.lock();
            for chain in map.values_mut() {
                // Effects are `Invalidated` or `Nothing`; the shutdown path cancels running calls
                // itself, so there is nothing further to send.
                let _ = chain.handle(now, LedgerEvent::EpochBumped(epoch));
            }
            Self::sweep_now(&mut map, now);
        }
        Box::pin(async { Ok(()) })
    }

    fn sweep(&self, now: Tick) -> StoreFuture<'_, Result<usize, StoreError>> {
        let dropped = Self::sweep_now(&mut self.lock(), now);
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
