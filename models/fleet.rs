//! Fleet model (#20): two server instances sharing one continuation store with
//! compare-and-swap, the client sending the same `requestState` to both at once and replaying
//! it afterwards.
//!
//! Each instance runs the server's resume loop (`server::mrtr::resume`) step by step, with the
//! interleaving point where a shared store has it: **load** the record, then decide with the
//! server's own pure function `core::continuation::decide_resume` and **compare-and-swap** the
//! decision against the loaded value; a lost swap reloads (at most [`CAS_ATTEMPTS`] times, as
//! the server does). A dispatched handler ends with `decide_finish`, swapped the same way. The
//! store is one record with the contract of `LedgerStore::compare_and_swap`; the model's only
//! planted bug is a store *without* that compare (a blind write), which must be caught.
//!
//! Checked: at most one dispatch of the round across both instances (O53), recovery-only
//! dispatch for replays of the completed chain, and (reachability) the race itself: both
//! instances decide `Dispatch` from the same loaded record and one loses the swap.

#[path = "common/mod.rs"]
mod common;

use stateright::{Checker, Model, Property};
use strict_mcp::core::continuation::{
    decide_finish, decide_resume, FinishStep, ResumeStep, RoundEnd,
};
use strict_mcp::machine::ledger::{
    Binding, Chain, ChainId, InputMethod, LedgerConfig, LedgerEffect, LedgerEvent, RequestState,
    Resume,
};
use strict_mcp::machine::{Digest, Epoch, Tick};

const SERVERS: usize = 2;
const PRINCIPAL: Digest = Digest([0xA; 32]);
const REQUEST: Digest = Digest([0x1; 32]);
/// Swap attempts per resume. `server::mrtr` allows 4 (`CAS_ATTEMPTS`); 3 keep the model small
/// and are already more than two instances need (a lost swap means the other instance's write
/// landed, and the reload sees it).
const CAS_ATTEMPTS: u8 = 3;

#[derive(Clone, Debug)]
struct FleetModel {
    /// Requests the client sends to each instance with the one token (the first is the
    /// concurrent resume, the rest are replays).
    requests: u8,
    /// Planted bug: the store writes without comparing.
    blind_store: bool,
}

/// One instance's place in the resume loop.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Pc {
    /// Waiting for the client's next request; `left` requests still to come.
    Idle { left: u8 },
    /// About to load the record (`tries` swaps left).
    Loading { left: u8, tries: u8 },
    /// Loaded this record and decides next.
    Loaded { left: u8, tries: u8, stored: Chain },
    /// Its handler runs with the chain it wrote.
    Running { left: u8, chain: Chain },
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct State {
    store: Chain,
    token: RequestState,
    servers: [Pc; SERVERS],
    // ghosts
    dispatches: u8,
    recoveries: u8,
    conflicts: u8,
    /// Both instances held a `Dispatch` decision from the same loaded record.
    raced: bool,
    completed: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Action {
    Send(usize),
    Load(usize),
    Decide(usize),
    Complete(usize),
    Fail(usize),
}

fn resume(token: RequestState) -> Resume {
    Resume {
        state: token,
        principal: PRINCIPAL,
        method: InputMethod::ToolsCall,
        request: REQUEST,
        serving_epoch: Epoch(0),
        answer: Some(b"{}".to_vec()),
    }
}

impl FleetModel {
    /// `LedgerStore::compare_and_swap` on the one record: `true` when it wrote.
    fn swap(&self, s: &mut State, expected: &Chain, new: Chain) -> bool {
        if self.blind_store || s.store == *expected {
            s.store = new;
            true
        } else {
            s.conflicts += 1;
            false
        }
    }

    /// Both instances loaded the same record and the ledger answers `Dispatch` for it.
    fn both_would_dispatch(s: &State) -> bool {
        let loaded: Vec<&Chain> = s
            .servers
            .iter()
            .filter_map(|pc| match pc {
                Pc::Loaded { stored, .. } => Some(stored),
                _ => None,
            })
            .collect();
        loaded.len() == SERVERS
            && loaded[0] == loaded[1]
            && decide_resume(loaded[0], Tick(1), resume(s.token)).1 == ResumeStep::Dispatch
    }

    fn finish(&self, s: &mut State, i: usize, end: &RoundEnd) {
        let Pc::Running { left, chain } = s.servers[i].clone() else {
            return;
        };
        // The server's `finish_round`: swap the decision; on a conflict, reload and decide again.
        let mut chain = chain;
        for _ in 0..CAS_ATTEMPTS {
            let (next, step) = decide_finish(&chain, Tick(1), end);
            if self.swap(s, &chain, next) {
                if step == (FinishStep::Pass { completed: true }) {
                    s.completed = true;
                }
                break;
            }
            chain = s.store.clone();
        }
        s.servers[i] = Pc::Idle { left };
    }
}

impl Model for FleetModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let binding = Binding {
            principal: PRINCIPAL,
            method: InputMethod::ToolsCall,
            request: REQUEST,
        };
        let mut chain = Chain::new(
            ChainId([1; 16]),
            binding,
            Epoch(0),
            LedgerConfig::with_ttl(1_000),
        );
        // The first round asked (on either instance): the record is stored, the token issued.
        let LedgerEffect::Prompt { state, .. } = chain.handle(
            Tick(0),
            LedgerEvent::HandlerAsked {
                prompt: b"{}".to_vec(),
            },
        ) else {
            panic!("a new chain prompts");
        };
        vec![State {
            store: chain,
            token: state,
            servers: [
                Pc::Idle {
                    left: self.requests,
                },
                Pc::Idle {
                    left: self.requests,
                },
            ],
            dispatches: 0,
            recoveries: 0,
            conflicts: 0,
            raced: false,
            completed: false,
        }]
    }

    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        for (i, pc) in s.servers.iter().enumerate() {
            match pc {
                Pc::Idle { left } if *left > 0 => actions.push(Action::Send(i)),
                Pc::Idle { .. } => {}
                Pc::Loading { .. } => actions.push(Action::Load(i)),
                Pc::Loaded { .. } => actions.push(Action::Decide(i)),
                Pc::Running { .. } => actions.extend([Action::Complete(i), Action::Fail(i)]),
            }
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut s = last.clone();
        match action {
            Action::Send(i) => {
                let Pc::Idle { left } = s.servers[i] else {
                    return None;
                };
                s.servers[i] = Pc::Loading {
                    left: left - 1,
                    tries: CAS_ATTEMPTS,
                };
            }
            Action::Load(i) => {
                let Pc::Loading { left, tries } = s.servers[i] else {
                    return None;
                };
                s.servers[i] = Pc::Loaded {
                    left,
                    tries,
                    stored: s.store.clone(),
                };
                s.raced |= Self::both_would_dispatch(&s);
            }
            Action::Decide(i) => {
                let Pc::Loaded {
                    left,
                    tries,
                    stored,
                } = s.servers[i].clone()
                else {
                    return None;
                };
                // The server's own decision on a retry, from the record it loaded.
                let (chain, step) = decide_resume(&stored, Tick(1), resume(s.token));
                s.servers[i] = match step {
                    ResumeStep::Reject(_) | ResumeStep::AskAgain { write: false, .. } => {
                        Pc::Idle { left }
                    }
                    ResumeStep::Recover => {
                        s.recoveries += 1;
                        Pc::Idle { left }
                    }
                    ResumeStep::AskAgain { write: true, .. } | ResumeStep::Dispatch => {
                        let dispatch = step == ResumeStep::Dispatch;
                        if self.swap(&mut s, &stored, chain.clone()) {
                            if dispatch {
                                s.dispatches += 1;
                                Pc::Running { left, chain }
                            } else {
                                Pc::Idle { left }
                            }
                        } else if tries > 1 {
                            Pc::Loading {
                                left,
                                tries: tries - 1,
                            }
                        } else {
                            // CAS attempts exhausted: an internal error, nothing dispatched.
                            Pc::Idle { left }
                        }
                    }
                    // A decision this model does not know yet must not pass unnoticed.
                    other => panic!("unmodelled resume decision {other:?}"),
                };
            }
            Action::Complete(i) => self.finish(&mut s, i, &RoundEnd::Completed),
            Action::Fail(i) => self.finish(&mut s, i, &RoundEnd::Failed),
        }
        Some(s)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always(
                "O53: the round is dispatched at most once across both instances",
                |_, s: &State| s.dispatches <= 1,
            ),
            Property::sometimes(
                "#20: both instances decide Dispatch from the same record",
                |_, s: &State| s.raced,
            ),
            Property::sometimes("#20: a compare-and-swap is lost", |_, s: &State| {
                s.conflicts > 0
            }),
            Property::sometimes("O53: the round completes", |_, s: &State| s.completed),
            Property::sometimes(
                "O53: a replay of the completed chain is recovery-only",
                |_, s: &State| s.completed && s.recoveries > 0,
            ),
        ]
    }
}

fn model(blind_store: bool) -> FleetModel {
    FleetModel {
        requests: if common::deep() { 5 } else { 3 },
        blind_store,
    }
}

/// Pinned so an unintended change to the machines or the model shows up as a diff here.
const PINNED_FLEET_STATES: usize = 785;

#[test]
fn fleet_model_dispatches_each_round_at_most_once() {
    let checker = common::explore("fleet", model(false));
    checker.assert_properties();
    if !common::deep() {
        assert_eq!(checker.unique_state_count(), PINNED_FLEET_STATES);
    }
}

#[test]
fn fleet_planted_store_without_compare_is_caught() {
    common::hunt(
        "fleet blind_store",
        model(true),
        "O53: the round is dispatched at most once across both instances",
    );
}
