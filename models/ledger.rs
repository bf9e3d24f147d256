//! Single-chain model of the continuation ledger (O45–O56, I-section, O5 epochs).
//!
//! `next_state` clones the real `strict_mcp::machine::ledger::Chain` and calls its `handle`; the
//! model only chooses events: the handler's outcome, retries with any issued token by either
//! principal for either request with or without an answer, time steps, an epoch bump, and
//! whether/when the chain hears of it. Ghost fields record what the effects revealed so that
//! properties can judge them. All 11 rounds are reachable (10 answers, then the 11th ask).

#[path = "common/mod.rs"]
mod common;

use stateright::{Checker, Model, Property};
use strict_mcp::machine::ledger::{
    Binding, Chain, ChainFailure, ChainId, InputMethod, LedgerConfig, LedgerEffect, LedgerEvent,
    LedgerFaults, Phase, RequestState, Resume, MAX_ROUNDS,
};
use strict_mcp::machine::{Digest, Epoch, Tick};

const PRINCIPALS: [Digest; 2] = [Digest([0xA; 32]), Digest([0xB; 32])];
const REQUESTS: [Digest; 2] = [Digest([0x1; 32]), Digest([0x2; 32])];

#[derive(Clone, Debug)]
struct LedgerModel {
    faults: LedgerFaults,
    ttl: u64,
    max_now: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct State {
    chain: Chain,
    now: Tick,
    serving: Epoch,
    /// Every token issued, in order (what a client could replay).
    tokens: Vec<RequestState>,
    /// A handler invocation is outstanding (initial run or after `Dispatch`).
    handler_running: bool,
    // ghosts
    completions: u8,
    normal_dispatch_after_completion: bool,
    foreign_principal_dispatch: bool,
    old_epoch_dispatch: bool,
    completed_after_max: bool,
    limit_hit: bool,
    recovery_seen: bool,
    pending_replay_seen: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Action {
    Ask,
    Complete,
    Fail,
    Resume {
        token: usize,
        principal: usize,
        request: usize,
        answer: bool,
    },
    Advance,
    BumpEpoch,
    NotifyChain,
}

impl Model for LedgerModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let config = LedgerConfig {
            state_ttl_ms: self.ttl,
            faults: self.faults,
        };
        let binding = Binding {
            principal: PRINCIPALS[0],
            method: InputMethod::ToolsCall,
            request: REQUESTS[0],
        };
        vec![State {
            chain: Chain::new(ChainId([7; 16]), binding, Epoch(0), config),
            now: Tick(0),
            serving: Epoch(0),
            tokens: Vec::new(),
            handler_running: true,
            completions: 0,
            normal_dispatch_after_completion: false,
            foreign_principal_dispatch: false,
            old_epoch_dispatch: false,
            completed_after_max: false,
            limit_hit: false,
            recovery_seen: false,
            pending_replay_seen: false,
        }]
    }

    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        if s.handler_running {
            actions.extend([Action::Ask, Action::Complete, Action::Fail]);
        }
        for token in 0..s.tokens.len() {
            for principal in 0..2 {
                for request in 0..2 {
                    for answer in [true, false] {
                        actions.push(Action::Resume {
                            token,
                            principal,
                            request,
                            answer,
                        });
                    }
                }
            }
        }
        if s.now.0 < self.max_now {
            actions.push(Action::Advance);
        }
        if s.serving == Epoch(0) {
            actions.push(Action::BumpEpoch);
        }
        if s.serving > s.chain.epoch() {
            actions.push(Action::NotifyChain);
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut s = last.clone();
        let now = s.now;
        match action {
            Action::Ask => {
                let round = s.chain.prompts_issued() + 1;
                s.handler_running = false;
                match s.chain.handle(
                    now,
                    LedgerEvent::HandlerAsked {
                        prompt: vec![round],
                    },
                ) {
                    LedgerEffect::Prompt {
                        state,
                        replayed: false,
                        ..
                    } => s.tokens.push(state),
                    LedgerEffect::Failed(ChainFailure::InteractionLimit) => s.limit_hit = true,
                    _ => {}
                }
            }
            Action::Complete => {
                s.handler_running = false;
                if s.chain.handle(now, LedgerEvent::HandlerCompleted) == LedgerEffect::Completed {
                    s.completions += 1;
                    if s.chain.answers().len() == usize::from(MAX_ROUNDS) {
                        s.completed_after_max = true;
                    }
                }
            }
            Action::Fail => {
                s.handler_running = false;
                let _ = s.chain.handle(now, LedgerEvent::HandlerFailed);
            }
            Action::Resume {
                token,
                principal,
                request,
                answer,
            } => {
                let state = s.tokens[token];
                let resume = Resume {
                    state,
                    principal: PRINCIPALS[principal],
                    method: InputMethod::ToolsCall,
                    request: REQUESTS[request],
                    serving_epoch: s.serving,
                    // The answer to round r is the byte r, so exactness can be checked later.
                    answer: answer.then(|| vec![state.round]),
                };
                match s.chain.handle(now, LedgerEvent::Resume(resume)) {
                    LedgerEffect::Dispatch { .. } => {
                        s.handler_running = true;
                        s.foreign_principal_dispatch |= principal != 0;
                        s.old_epoch_dispatch |= state.epoch != s.serving;
                        s.normal_dispatch_after_completion |= s.completions > 0;
                    }
                    LedgerEffect::DispatchRecovery => s.recovery_seen = true,
                    LedgerEffect::Prompt { replayed: true, .. } => s.pending_replay_seen = true,
                    _ => {}
                }
            }
            Action::Advance => {
                s.now = Tick(now.0 + 1);
                let _ = s.chain.handle_timeout(s.now);
            }
            Action::BumpEpoch => s.serving = s.serving.next(),
            Action::NotifyChain => {
                let _ = s.chain.handle(now, LedgerEvent::EpochBumped(s.serving));
            }
        }
        Some(s)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always(
                "O53: the operation runs to completion at most once per chain",
                |_, s: &State| s.completions <= 1,
            ),
            Property::always(
                "O53: a completed chain is never dispatched normally again",
                |_, s: &State| !s.normal_dispatch_after_completion,
            ),
            Property::always(
                "I7: a resumed chain always carries the principal that started it",
                |_, s: &State| !s.foreign_principal_dispatch,
            ),
            Property::always(
                "O5: no dispatch of state from an old serving epoch",
                |_, s: &State| !s.old_epoch_dispatch,
            ),
            Property::always("O54: never more than ten prompts", |_, s: &State| {
                s.tokens.len() <= usize::from(MAX_ROUNDS)
            }),
            Property::always(
                "O56: answers are kept exactly, one per round in order",
                |_, s: &State| {
                    s.chain
                        .answers()
                        .iter()
                        .enumerate()
                        .all(|(i, a)| a.as_slice() == [i as u8 + 1])
                },
            ),
            Property::sometimes("O54: the tenth answer completes", |_, s: &State| {
                s.completed_after_max
            }),
            Property::sometimes(
                "O54: an 11th prompt hits interaction_limit",
                |_, s: &State| s.limit_hit,
            ),
            Property::sometimes(
                "O53: completed replay reaches recovery-only dispatch",
                |_, s: &State| s.recovery_seen,
            ),
            Property::sometimes(
                "O53: pending replay returns the same prompt",
                |_, s: &State| s.pending_replay_seen,
            ),
            Property::sometimes("I7: a pending prompt expires", |_, s: &State| {
                s.chain.phase() == Phase::Expired
            }),
            Property::sometimes(
                "O5: an epoch bump invalidates a live chain",
                |_, s: &State| matches!(s.chain.phase(), Phase::Invalidated { .. }),
            ),
        ]
    }
}

fn model(faults: LedgerFaults) -> LedgerModel {
    if common::deep() {
        LedgerModel {
            faults,
            ttl: 3,
            max_now: 5,
        }
    } else {
        LedgerModel {
            faults,
            ttl: 1,
            max_now: 2,
        }
    }
}

#[test]
fn ledger_model_holds_all_properties() {
    let checker = common::explore("ledger", model(LedgerFaults::default()));
    checker.assert_properties();
    if !common::deep() {
        assert_eq!(checker.unique_state_count(), PINNED_LEDGER_STATES);
    }
}

/// Pinned so an unintended change to the machine or the model shows up as a diff here.
const PINNED_LEDGER_STATES: usize = 10_419;

#[test]
fn planted_skip_epoch_check_is_caught() {
    let faults = LedgerFaults {
        skip_epoch_check: true,
        ..LedgerFaults::default()
    };
    common::hunt(
        "skip_epoch_check",
        model(faults),
        "O5: no dispatch of state from an old serving epoch",
    );
}

#[test]
fn planted_skip_principal_check_is_caught() {
    let faults = LedgerFaults {
        skip_principal_check: true,
        ..LedgerFaults::default()
    };
    common::hunt(
        "skip_principal_check",
        model(faults),
        "I7: a resumed chain always carries the principal that started it",
    );
}

#[test]
fn planted_eleventh_prompt_is_caught() {
    let faults = LedgerFaults {
        allow_eleventh_prompt: true,
        ..LedgerFaults::default()
    };
    common::hunt(
        "allow_eleventh_prompt",
        model(faults),
        "O54: never more than ten prompts",
    );
}

#[test]
fn planted_rerun_on_completed_replay_is_caught() {
    let faults = LedgerFaults {
        rerun_completed_replay: true,
        ..LedgerFaults::default()
    };
    common::hunt(
        "rerun_completed_replay",
        model(faults),
        "O53: the operation runs to completion at most once per chain",
    );
}
