//! The ledger, the seal and the store together, driven the way the core will drive them:
//! load → transition → compare-and-swap, with tokens sealed and opened on every round.

use std::task::{Context, Poll, Waker};

use strict_mcp::core::seal::{
    open, principal_digest, request_digest, seal, KeyRing, OpenError, SealKey,
};
use strict_mcp::core::store::{LedgerStore, MemoryLedgerStore, StoreError, StoreFuture};
use strict_mcp::machine::ledger::{
    Binding, Chain, ChainFailure, ChainId, ChainRejection, InputMethod, LedgerConfig, LedgerEffect,
    LedgerEvent, Resume, MAX_ROUNDS,
};
use strict_mcp::machine::{Digest, Epoch, Tick};

/// The in-memory store answers on first poll; no runtime needed.
fn ready<T>(mut f: StoreFuture<'_, T>) -> T {
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("in-memory store futures are ready immediately"),
    }
}

struct Core {
    ring: KeyRing,
    store: MemoryLedgerStore,
    nonce: u8,
}

impl Core {
    fn new() -> Core {
        Core {
            ring: KeyRing::new(SealKey::new(1, [42; 32])),
            store: MemoryLedgerStore::new(16),
            nonce: 0,
        }
    }

    fn seal(&mut self, effect: &LedgerEffect) -> String {
        let LedgerEffect::Prompt { state, .. } = effect else {
            panic!("expected a prompt, got {effect:?}")
        };
        self.nonce += 1;
        seal(&self.ring, [self.nonce; 12], state)
    }

    /// One transition on the stored chain: load, handle, swap. Returns the effect, or the
    /// store's conflict when another writer got there first.
    fn step(&self, now: u64, id: ChainId, event: LedgerEvent) -> Result<LedgerEffect, StoreError> {
        let before = ready(self.store.load(id))?.expect("chain is stored");
        let mut after = before.clone();
        let effect = after.handle(Tick(now), event);
        ready(self.store.compare_and_swap(Tick(now), Some(before), after))?;
        Ok(effect)
    }

    fn resume(
        &self,
        token: &str,
        who: Digest,
        request: Digest,
        epoch: Epoch,
        answer: &[u8],
    ) -> LedgerEvent {
        LedgerEvent::Resume(Resume {
            state: open(&self.ring, token).expect("token opens"),
            principal: who,
            method: InputMethod::ToolsCall,
            request,
            serving_epoch: epoch,
            answer: Some(answer.to_vec()),
        })
    }
}

fn start(core: &mut Core, id: ChainId, who: Digest, request: Digest) -> String {
    let binding = Binding {
        principal: who,
        method: InputMethod::ToolsCall,
        request,
    };
    let mut chain = Chain::new(id, binding, Epoch(0), LedgerConfig::default());
    let effect = chain.handle(
        Tick(0),
        LedgerEvent::HandlerAsked {
            prompt: b"{\"input\":{}}".to_vec(),
        },
    );
    ready(core.store.compare_and_swap(Tick(0), None, chain)).unwrap();
    core.seal(&effect)
}

#[test]
fn o54_ten_sealed_rounds_complete_and_the_eleventh_prompt_is_interaction_limit() {
    let mut core = Core::new();
    let alice = principal_digest(b"alice");
    let req = request_digest(InputMethod::ToolsCall, "wizard", b"{}");
    let id = ChainId([1; 16]);
    let mut token = start(&mut core, id, alice, req);
    for round in 1..=MAX_ROUNDS {
        let answer = format!("{{\"action\":\"accept\",\"content\":{{\"step\":{round}}}}}");
        let e = core
            .step(
                u64::from(round),
                id,
                core.resume(&token, alice, req, Epoch(0), answer.as_bytes()),
            )
            .unwrap();
        assert_eq!(e, LedgerEffect::Dispatch { round });
        if round < MAX_ROUNDS {
            let e = core
                .step(
                    u64::from(round),
                    id,
                    LedgerEvent::HandlerAsked {
                        prompt: vec![round],
                    },
                )
                .unwrap();
            token = core.seal(&e);
        }
    }
    let chain = ready(core.store.load(id)).unwrap().unwrap();
    assert_eq!(chain.answers().len(), usize::from(MAX_ROUNDS));
    assert_eq!(
        chain.answers()[9],
        b"{\"action\":\"accept\",\"content\":{\"step\":10}}".to_vec()
    );
    // The handler asks once more instead of completing: the 11th prompt is refused.
    assert_eq!(
        core.step(20, id, LedgerEvent::HandlerAsked { prompt: vec![] })
            .unwrap(),
        LedgerEffect::Failed(ChainFailure::InteractionLimit)
    );
}

#[test]
fn o53_concurrent_resumes_of_one_round_dispatch_once() {
    let mut core = Core::new();
    let alice = principal_digest(b"alice");
    let req = request_digest(InputMethod::ToolsCall, "pay", b"{\"amount\":10}");
    let id = ChainId([2; 16]);
    let token = start(&mut core, id, alice, req);

    // Two retries of the same round load the same record and both compute a dispatch…
    let loaded = ready(core.store.load(id)).unwrap().unwrap();
    let (mut first, mut second) = (loaded.clone(), loaded.clone());
    let ev = core.resume(
        &token,
        alice,
        req,
        Epoch(0),
        b"{\"action\":\"accept\",\"content\":{}}",
    );
    assert_eq!(
        first.handle(Tick(1), ev.clone()),
        LedgerEffect::Dispatch { round: 1 }
    );
    assert_eq!(
        second.handle(Tick(1), ev.clone()),
        LedgerEffect::Dispatch { round: 1 }
    );
    // …but only the first swap wins; the loser must not run the handler.
    ready(
        core.store
            .compare_and_swap(Tick(1), Some(loaded.clone()), first),
    )
    .unwrap();
    assert_eq!(
        ready(core.store.compare_and_swap(Tick(1), Some(loaded), second)),
        Err(StoreError::Conflict)
    );
    // Re-running the transition on the fresh record says why.
    assert_eq!(
        core.step(1, id, ev.clone()).unwrap(),
        LedgerEffect::Rejected(ChainRejection::InFlight)
    );
    // After completion every replay is recovery-only.
    assert_eq!(
        core.step(2, id, LedgerEvent::HandlerCompleted).unwrap(),
        LedgerEffect::Completed
    );
    assert_eq!(
        core.step(3, id, ev).unwrap(),
        LedgerEffect::DispatchRecovery
    );
}

#[test]
fn i7_foreign_principal_other_request_and_foreign_key_are_refused() {
    let mut core = Core::new();
    let alice = principal_digest(b"alice");
    let bob = principal_digest(b"bob");
    let req = request_digest(InputMethod::ToolsCall, "delete", b"{\"id\":1}");
    let id = ChainId([3; 16]);
    let token = start(&mut core, id, alice, req);
    let other = request_digest(InputMethod::ToolsCall, "delete", b"{\"id\":2}");
    assert_eq!(
        core.step(1, id, core.resume(&token, bob, req, Epoch(0), b"{}"))
            .unwrap(),
        LedgerEffect::Rejected(ChainRejection::ForeignPrincipal)
    );
    assert_eq!(
        core.step(1, id, core.resume(&token, alice, other, Epoch(0), b"{}"))
            .unwrap(),
        LedgerEffect::Rejected(ChainRejection::OtherRequest)
    );
    let stranger = KeyRing::new(SealKey::new(1, [0; 32]));
    assert_eq!(open(&stranger, &token), Err(OpenError::Tampered));
    // The legitimate caller is unaffected by the refused attempts.
    assert_eq!(
        core.step(2, id, core.resume(&token, alice, req, Epoch(0), b"{}"))
            .unwrap(),
        LedgerEffect::Dispatch { round: 1 }
    );
}

#[test]
fn o5_epoch_bump_through_the_store_kills_outstanding_state() {
    let mut core = Core::new();
    let alice = principal_digest(b"alice");
    let req = request_digest(InputMethod::ToolsCall, "slow", b"{}");
    let pending = ChainId([4; 16]);
    let token = start(&mut core, pending, alice, req);
    ready(core.store.bump_epoch(Tick(5), Epoch(1))).unwrap();
    // The pending chain was invalidated and dropped: a retry finds nothing to resume, and even a
    // chain that missed the bump refuses the token on its epoch.
    assert_eq!(ready(core.store.load(pending)).unwrap(), None);
    let binding = Binding {
        principal: alice,
        method: InputMethod::ToolsCall,
        request: req,
    };
    let mut missed = Chain::new(pending, binding, Epoch(0), LedgerConfig::default());
    let _ = missed.handle(Tick(0), LedgerEvent::HandlerAsked { prompt: vec![] });
    assert_eq!(
        missed.handle(Tick(6), core.resume(&token, alice, req, Epoch(1), b"{}")),
        LedgerEffect::Rejected(ChainRejection::OldEpoch)
    );
}

// ------------------------------------------------------------------------------------------
// The O(1) refusal of a full store (issue #23) changes no outcome: `MemoryLedgerStore` keeps a
// bound of when its chains become disposable and skips the scan before it; this model is the
// store as it was before, sweeping every chain before every refusal and on every sweep.

mod same_as_sweeping_always {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;
    use strict_mcp::machine::ledger::{ChainRecord, Phase};

    /// The previous `MemoryLedgerStore`, verbatim in behaviour.
    struct SweepAlways {
        capacity: usize,
        map: HashMap<ChainId, Chain>,
    }

    impl SweepAlways {
        fn sweep(&mut self, now: Tick) -> usize {
            let before = self.map.len();
            self.map.retain(|_, c| !c.is_disposable(now));
            before - self.map.len()
        }

        fn cas(
            &mut self,
            now: Tick,
            expected: Option<Chain>,
            new: Chain,
        ) -> Result<(), StoreError> {
            if self.map.get(&new.id()) != expected.as_ref() {
                return Err(StoreError::Conflict);
            }
            if expected.is_none() && self.map.len() >= self.capacity {
                self.sweep(now);
                if self.map.len() >= self.capacity {
                    return Err(StoreError::Full);
                }
            }
            self.map.insert(new.id(), new);
            Ok(())
        }

        fn bump(&mut self, now: Tick, epoch: Epoch) {
            for c in self.map.values_mut() {
                let _ = c.handle(now, LedgerEvent::EpochBumped(epoch));
            }
            self.sweep(now);
        }
    }

    const IDS: u8 = 6;

    /// A chain in any phase, with its deadlines in 0..40 (the ticks `now` ranges over).
    fn any_chain(id: u8, kind: u8, t: u64) -> Chain {
        let (phase, issued, answers) = match kind {
            0 => (Phase::Running { round: 0 }, 0, vec![]),
            1 => (Phase::Running { round: 1 }, 1, vec![b"1".to_vec()]),
            2 => (
                Phase::AwaitingAnswer {
                    round: 1,
                    expires: Tick(t),
                },
                1,
                vec![],
            ),
            3 => (Phase::Completed, 1, vec![b"1".to_vec()]),
            4 => (Phase::Failed, 0, vec![]),
            5 => (Phase::Expired, 1, vec![]),
            6 => (Phase::Invalidated { running: false }, 0, vec![]),
            _ => (Phase::Invalidated { running: true }, 0, vec![]),
        };
        Chain::from_record(ChainRecord {
            id: ChainId([id; 16]),
            binding: Binding {
                principal: Digest([1; 32]),
                method: InputMethod::ToolsCall,
                request: Digest([2; 32]),
            },
            epoch: Epoch(0),
            config: LedgerConfig::with_ttl(7),
            phase,
            issued,
            prompt: b"{}".to_vec(),
            answers,
            last_expires: Tick(t),
        })
        .expect("a consistent record")
    }

    #[derive(Debug, Clone)]
    enum Op {
        /// A first round: insert a new chain (refused when full after a sweep).
        Insert {
            id: u8,
            kind: u8,
            t: u64,
            now: u64,
        },
        /// Replace a kept chain by one in any phase (its disposable tick may move either way).
        Replace {
            id: u8,
            kind: u8,
            t: u64,
            now: u64,
        },
        /// A real transition of a kept chain, written back by compare-and-swap.
        Step {
            id: u8,
            event: u8,
            now: u64,
        },
        /// A writer holding a stale value loses.
        Stale {
            id: u8,
            now: u64,
        },
        Sweep {
            now: u64,
        },
        Bump {
            now: u64,
            epoch: u64,
        },
    }

    fn op() -> impl Strategy<Value = Op> {
        let id = 0..IDS;
        let now = 0u64..40;
        prop_oneof![
            4 => (id.clone(), 0u8..8, 0u64..40, now.clone())
                .prop_map(|(id, kind, t, now)| Op::Insert { id, kind, t, now }),
            2 => (id.clone(), 0u8..8, 0u64..40, now.clone())
                .prop_map(|(id, kind, t, now)| Op::Replace { id, kind, t, now }),
            3 => (id.clone(), 0u8..4, now.clone())
                .prop_map(|(id, event, now)| Op::Step { id, event, now }),
            1 => (id, now.clone()).prop_map(|(id, now)| Op::Stale { id, now }),
            2 => now.clone().prop_map(|now| Op::Sweep { now }),
            1 => (now, 0u64..3).prop_map(|(now, epoch)| Op::Bump { now, epoch }),
        ]
    }

    fn event(kind: u8) -> LedgerEvent {
        match kind {
            0 => LedgerEvent::HandlerAsked {
                prompt: b"{\"input\":{}}".to_vec(),
            },
            1 => LedgerEvent::HandlerCompleted,
            2 => LedgerEvent::HandlerFailed,
            _ => LedgerEvent::EpochBumped(Epoch(1)),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]

        #[test]
        fn o52_a_bounded_store_answers_exactly_as_sweeping_always(
            capacity in 0usize..5,
            ops in proptest::collection::vec(op(), 1..60),
        ) {
            let store = MemoryLedgerStore::new(capacity);
            let mut model = SweepAlways { capacity, map: HashMap::new() };
            for op in ops {
                match op {
                    Op::Insert { id, kind, t, now } => {
                        let c = any_chain(id, kind, t);
                        let got = ready(store.compare_and_swap(Tick(now), None, c.clone()));
                        prop_assert_eq!(got, model.cas(Tick(now), None, c), "{:?}", op);
                    }
                    Op::Replace { id, kind, t, now } => {
                        let Some(old) = model.map.get(&ChainId([id; 16])).cloned() else {
                            continue;
                        };
                        let c = any_chain(id, kind, t);
                        let got =
                            ready(store.compare_and_swap(Tick(now), Some(old.clone()), c.clone()));
                        prop_assert_eq!(got, model.cas(Tick(now), Some(old), c), "{:?}", op);
                    }
                    Op::Step { id, event: e, now } => {
                        let Some(old) = model.map.get(&ChainId([id; 16])).cloned() else {
                            continue;
                        };
                        let mut new = old.clone();
                        let _ = new.handle(Tick(now), event(e));
                        let got =
                            ready(store.compare_and_swap(Tick(now), Some(old.clone()), new.clone()));
                        prop_assert_eq!(got, model.cas(Tick(now), Some(old), new), "{:?}", op);
                    }
                    Op::Stale { id, now } => {
                        let stale = any_chain(id, 0, 0);
                        let new = any_chain(id, 3, 0);
                        if model.map.get(&stale.id()) == Some(&stale) {
                            continue;
                        }
                        let got =
                            ready(store.compare_and_swap(Tick(now), Some(stale.clone()), new.clone()));
                        prop_assert_eq!(&got, &Err(StoreError::Conflict));
                        prop_assert_eq!(got, model.cas(Tick(now), Some(stale), new));
                    }
                    Op::Sweep { now } => {
                        prop_assert_eq!(ready(store.sweep(Tick(now))).unwrap(), model.sweep(Tick(now)));
                    }
                    Op::Bump { now, epoch } => {
                        ready(store.bump_epoch(Tick(now), Epoch(epoch))).unwrap();
                        model.bump(Tick(now), Epoch(epoch));
                    }
                }
                prop_assert_eq!(store.len(), model.map.len());
                for id in 0..IDS {
                    let id = ChainId([id; 16]);
                    prop_assert_eq!(ready(store.load(id)).unwrap(), model.map.get(&id).cloned());
                }
            }
        }
    }

    #[test]
    fn o52_disposable_from_per_phase() {
        // Running chains (also invalidated ones whose handler has not reported) never; an
        // unanswered prompt from its expiry; a finished chain from its last token's expiry;
        // expired and idle invalidated chains at once.
        let want = [
            None,
            None,
            Some(20),
            Some(20),
            Some(20),
            Some(0),
            Some(0),
            None,
        ];
        for (kind, want) in (0u8..).zip(want) {
            let c = any_chain(0, kind, 20);
            assert_eq!(c.disposable_from(), want.map(Tick), "kind {kind}");
            assert_eq!(
                c.is_disposable(Tick(19)),
                want == Some(0),
                "kind {kind} at 19"
            );
            assert_eq!(
                c.is_disposable(Tick(20)),
                want.is_some(),
                "kind {kind} at 20"
            );
        }
    }
}
