//! Model of the serving lifecycle (O5, O6): admission, shutdown with a budget, drain or
//! cleanup_failed. `next_state` clones the real `strict_mcp::machine::epoch::Lifecycle` and calls
//! its `handle`/`handle_timeout`; the model only chooses which call arrives or ends, when shutdown
//! starts and how time moves.

#[path = "common/mod.rs"]
mod common;

use stateright::{Checker, Model, Property};
use strict_mcp::machine::epoch::{CallId, EpochEffect, EpochEvent, EpochFaults, Lifecycle, Phase};
use strict_mcp::machine::{Epoch, Tick};

#[derive(Clone, Debug)]
struct EpochModel {
    faults: EpochFaults,
    calls: usize,
    budget: u64,
    max_now: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Call {
    NotArrived,
    Active,
    Ended,
    Refused,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct State {
    server: Lifecycle,
    now: Tick,
    calls: Vec<Call>,
    // ghosts
    shutdown_started: bool,
    admitted_after_shutdown: bool,
    all_active_cancelled: bool,
    cleanup_failed_reported: bool,
    cleanup_failed_without_work: bool,
    drained_after_cleanup_failed: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Action {
    Arrive(usize),
    End(usize),
    Shutdown,
    Advance,
}

impl Model for EpochModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        vec![State {
            server: Lifecycle::with_faults(Epoch(0), self.faults),
            now: Tick(0),
            calls: vec![Call::NotArrived; self.calls],
            shutdown_started: false,
            admitted_after_shutdown: false,
            all_active_cancelled: true,
            cleanup_failed_reported: false,
            cleanup_failed_without_work: false,
            drained_after_cleanup_failed: false,
        }]
    }

    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        for (i, c) in s.calls.iter().enumerate() {
            match c {
                Call::NotArrived => actions.push(Action::Arrive(i)),
                Call::Active => actions.push(Action::End(i)),
                Call::Ended | Call::Refused => {}
            }
        }
        // Shutdown may be requested at any point, also repeatedly.
        actions.push(Action::Shutdown);
        if s.now.0 < self.max_now {
            actions.push(Action::Advance);
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut s = last.clone();
        let effects = match action {
            Action::Arrive(i) => s.server.handle(s.now, EpochEvent::Admit(CallId(i as u64))),
            Action::End(i) => {
                s.calls[i] = Call::Ended;
                s.server
                    .handle(s.now, EpochEvent::CallEnded(CallId(i as u64)))
            }
            Action::Shutdown => {
                let active: Vec<CallId> = s.server.active_calls().collect();
                let fx = s.server.handle(
                    s.now,
                    EpochEvent::Shutdown {
                        budget_ms: self.budget,
                    },
                );
                if !s.shutdown_started {
                    s.shutdown_started = true;
                    let cancelled: Vec<CallId> =
                        fx.0.iter()
                            .filter_map(|e| {
                                if let EpochEffect::Cancel(c) = e {
                                    Some(*c)
                                } else {
                                    None
                                }
                            })
                            .collect();
                    s.all_active_cancelled &= cancelled == active;
                }
                fx
            }
            Action::Advance => {
                s.now = Tick(s.now.0 + 1);
                s.server.handle_timeout(s.now)
            }
        };
        for e in effects.0 {
            match e {
                EpochEffect::Admitted { call, .. } => {
                    s.calls[call.0 as usize] = Call::Active;
                    s.admitted_after_shutdown |= s.shutdown_started;
                }
                EpochEffect::Refused { call, .. } => s.calls[call.0 as usize] = Call::Refused,
                EpochEffect::CleanupFailed { unfinished } => {
                    s.cleanup_failed_reported = true;
                    s.cleanup_failed_without_work |= unfinished == 0;
                }
                EpochEffect::Stopped => s.drained_after_cleanup_failed |= s.cleanup_failed_reported,
                _ => {}
            }
        }
        Some(s)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("O5: no admission after shutdown starts", |_, s: &State| {
                !s.admitted_after_shutdown
            }),
            Property::always("O5: Stopped implies no active call", |_, s: &State| {
                s.server.status().phase != Phase::Stopped || s.server.status().active_calls == 0
            }),
            Property::always(
                "O5: nothing restarts a server that began shutdown",
                |_, s: &State| !s.shutdown_started || !s.server.is_serving(),
            ),
            Property::always(
                "O5: the epoch is bumped exactly once, by shutdown",
                |_, s: &State| {
                    s.server.epoch()
                        == if s.shutdown_started {
                            Epoch(1)
                        } else {
                            Epoch(0)
                        }
                },
            ),
            Property::always("O5: shutdown cancels every active call", |_, s: &State| {
                s.all_active_cancelled
            }),
            Property::always(
                "O5: cleanup_failed only with unfinished work",
                |_, s: &State| !s.cleanup_failed_without_work,
            ),
            Property::always(
                "O5: status counts exactly the admitted, unended calls",
                |_, s: &State| {
                    s.server.status().active_calls
                        == s.calls.iter().filter(|c| **c == Call::Active).count()
                },
            ),
            Property::sometimes("O5: cleanup_failed is reachable", |_, s: &State| {
                s.server.status().phase == Phase::CleanupFailed
            }),
            Property::sometimes("O5: a drain within budget stops", |_, s: &State| {
                s.server.status().phase == Phase::Stopped && !s.cleanup_failed_reported
            }),
            Property::sometimes(
                "O5: unfinished work drains after cleanup_failed",
                |_, s: &State| s.drained_after_cleanup_failed,
            ),
        ]
    }
}

fn model(faults: EpochFaults) -> EpochModel {
    if common::deep() {
        EpochModel {
            faults,
            calls: 4,
            budget: 2,
            max_now: 5,
        }
    } else {
        EpochModel {
            faults,
            calls: 3,
            budget: 1,
            max_now: 3,
        }
    }
}

/// Pinned so an unintended change to the machine or the model shows up as a diff here.
const PINNED_EPOCH_STATES: usize = 532;

#[test]
fn epoch_model_holds_all_properties() {
    let checker = common::explore("epoch", model(EpochFaults::default()));
    checker.assert_properties();
    if !common::deep() {
        assert_eq!(checker.unique_state_count(), PINNED_EPOCH_STATES);
    }
}

#[test]
fn planted_admit_after_shutdown_is_caught() {
    let faults = EpochFaults {
        admit_after_shutdown: true,
    };
    common::hunt(
        "admit_after_shutdown",
        model(faults),
        "O5: no admission after shutdown starts",
    );
}
