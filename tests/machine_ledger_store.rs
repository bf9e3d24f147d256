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
