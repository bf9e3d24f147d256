//! Serving epoch, admission and shutdown.
//!
//! `Serving → Draining → Stopped | CleanupFailed`, and `CleanupFailed → Stopped` once the late
//! work drains. Nothing leads back to `Serving`: a stopped server never restarts, whatever handle
//! a driver obtains later.
//!
//! # Calling-order contract
//!
//! * Before running any request the driver feeds [`EpochEvent::Admit`] with a call id it chose
//!   (unique among active calls) and runs the call only on [`EpochEffect::Admitted`]; the epoch
//!   in that effect is the one the call's `requestState` must carry.
//! * Every admitted call is ended exactly once with [`EpochEvent::CallEnded`], whether it
//!   finished, failed or was cancelled.
//! * [`EpochEvent::Shutdown`] with a budget starts shutdown: admission stops for good, the epoch
//!   is bumped (forward [`EpochEffect::EpochBumped`] to the ledger/store so every outstanding
//!   `requestState` dies), each active call gets [`EpochEffect::Cancel`], and listen streams are
//!   closed ([`EpochEffect::CloseListenStreams`]). The driver then waits until
//!   [`EpochEffect::Stopped`] or, at the deadline from [`Lifecycle::poll_timeout`],
//!   [`Lifecycle::handle_timeout`] yields [`EpochEffect::CleanupFailed`]. [`Lifecycle::status`]
//!   keeps reporting the unfinished calls until they drain.

use std::collections::BTreeSet;

use super::{Epoch, Tick};

/// Driver-chosen id of one admitted call (unique among active calls).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CallId(pub u64);

/// Planted bugs for the stateright models. Compiled only with feature `model`; all off by default.
#[cfg(feature = "model")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct EpochFaults {
    /// Keep admitting calls after shutdown began.
    pub admit_after_shutdown: bool,
}

/// Where the server stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Admitting calls.
    Serving,
    /// Shutdown began; waiting for active calls until `deadline`.
    Draining {
        /// End of the caller's budget.
        deadline: Tick,
    },
    /// Shutdown finished with nothing left running.
    Stopped,
    /// The budget ran out with calls still running; they stay visible in [`Status`] until they
    /// end, and then the phase becomes [`Phase::Stopped`].
    CleanupFailed,
}

/// Snapshot for `Server::status()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Status {
    /// Current phase.
    pub phase: Phase,
    /// Current serving epoch.
    pub epoch: Epoch,
    /// Calls admitted and not yet ended.
    pub active_calls: usize,
}

/// Inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EpochEvent {
    /// A request wants to run.
    Admit(CallId),
    /// An admitted call ended (finished, failed or cancelled).
    CallEnded(CallId),
    /// Start shutdown with this budget in milliseconds.
    Shutdown {
        /// How long to wait for active calls.
        budget_ms: u64,
    },
}

/// Why admission was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// Shutdown has begun; the server never serves again (Q6: e.g. 503 on HTTP).
    ShuttingDown,
    /// The driver reused an id that is still active (a bug in the driver).
    DuplicateCall,
}

/// One thing the driver must do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EpochEffect {
    /// Run the call under this epoch.
    Admitted {
        /// The call.
        call: CallId,
        /// Serving epoch the call runs under.
        epoch: Epoch,
    },
    /// Do not run the call.
    Refused {
        /// The call.
        call: CallId,
        /// Why.
        reason: Refusal,
    },
    /// The serving epoch moved on: forward to the continuation ledger.
    EpochBumped(Epoch),
    /// Cancel this active call.
    Cancel(CallId),
    /// End every open `subscriptions/listen` stream gracefully.
    CloseListenStreams,
    /// Shutdown completed with nothing left running.
    Stopped,
    /// The budget ran out; report `cleanup_failed` with this many calls still running.
    CleanupFailed {
        /// Calls still running.
        unfinished: usize,
    },
    /// Shutdown was requested again; it is already under way (the status says how far).
    AlreadyShuttingDown,
    /// An end for a call that is not active (a bug in the driver, or a duplicate end).
    UnknownCall(CallId),
}

/// Effects of one event, in the order the driver must apply them.
#[must_use = "epoch effects carry admissions, cancellations and shutdown results"]
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct EpochEffects(pub Vec<EpochEffect>);

impl EpochEffects {
    fn one(e: EpochEffect) -> Self {
        EpochEffects(vec![e])
    }
}

/// The serving lifecycle of one server. See the module docs for the calling-order contract.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Lifecycle {
    phase: Phase,
    epoch: Epoch,
    active: BTreeSet<CallId>,
    #[cfg(feature = "model")]
    faults: EpochFaults,
}

impl Default for Lifecycle {
    fn default() -> Self {
        Lifecycle::new(Epoch(0))
    }
}

impl Lifecycle {
    /// A serving lifecycle starting at `epoch`.
    #[must_use]
    pub fn new(epoch: Epoch) -> Lifecycle {
        Lifecycle {
            phase: Phase::Serving,
            epoch,
            active: BTreeSet::new(),
            #[cfg(feature = "model")]
            faults: EpochFaults::default(),
        }
    }

    /// A lifecycle with planted bugs (model builds only).
    #[cfg(feature = "model")]
    #[must_use]
    pub fn with_faults(epoch: Epoch, faults: EpochFaults) -> Lifecycle {
        Lifecycle {
            faults,
            ..Lifecycle::new(epoch)
        }
    }

    /// Current snapshot.
    #[must_use]
    pub fn status(&self) -> Status {
        Status {
            phase: self.phase,
            epoch: self.epoch,
            active_calls: self.active.len(),
        }
    }

    /// Current serving epoch.
    #[must_use]
    pub fn epoch(&self) -> Epoch {
        self.epoch
    }

    /// True while new calls are admitted.
    #[must_use]
    pub fn is_serving(&self) -> bool {
        self.phase == Phase::Serving
    }

    /// The calls still running.
    pub fn active_calls(&self) -> impl Iterator<Item = CallId> + '_ {
        self.active.iter().copied()
    }

    /// The shutdown deadline while draining.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Tick> {
        match self.phase {
            Phase::Draining { deadline } => Some(deadline),
            _ => None,
        }
    }

    /// Fire the shutdown deadline if due; a spurious call does nothing.
    pub fn handle_timeout(&mut self, now: Tick) -> EpochEffects {
        match self.phase {
            Phase::Draining { deadline } if now.has_reached(deadline) => {
                self.phase = Phase::CleanupFailed;
                EpochEffects::one(EpochEffect::CleanupFailed {
                    unfinished: self.active.len(),
                })
            }
            _ => EpochEffects::default(),
        }
    }

    fn admits_while_stopping(&self) -> bool {
        #[cfg(feature = "model")]
        if self.faults.admit_after_shutdown {
            return true;
        }
        false
    }

    /// Apply one event at `now`.
    pub fn handle(&mut self, now: Tick, event: EpochEvent) -> EpochEffects {
        let mut out = self.handle_timeout(now);
        match event {
            EpochEvent::Admit(call) => {
                let effect = if self.phase != Phase::Serving && !self.admits_while_stopping() {
                    EpochEffect::Refused {
                        call,
                        reason: Refusal::ShuttingDown,
                    }
                } else if !self.active.insert(call) {
                    EpochEffect::Refused {
                        call,
                        reason: Refusal::DuplicateCall,
                    }
                } else {
                    EpochEffect::Admitted {
                        call,
                        epoch: self.epoch,
                    }
                };
                out.0.push(effect);
            }
            EpochEvent::CallEnded(call) => {
                if !self.active.remove(&call) {
                    out.0.push(EpochEffect::UnknownCall(call));
                } else if self.active.is_empty() {
                    match self.phase {
                        Phase::Draining { .. } | Phase::CleanupFailed => {
                            self.phase = Phase::Stopped;
                            out.0.push(EpochEffect::Stopped);
                        }
                        Phase::Serving | Phase::Stopped => {}
                    }
                }
            }
            EpochEvent::Shutdown { budget_ms } => {
                if self.phase != Phase::Serving {
                    out.0.push(EpochEffect::AlreadyShuttingDown);
                    return out;
                }
                self.epoch = self.epoch.next();
                out.0.push(EpochEffect::EpochBumped(self.epoch));
                out.0
                    .extend(self.active.iter().map(|&c| EpochEffect::Cancel(c)));
                out.0.push(EpochEffect::CloseListenStreams);
                if self.active.is_empty() {
                    self.phase = Phase::Stopped;
                    out.0.push(EpochEffect::Stopped);
                } else {
                    self.phase = Phase::Draining {
                        deadline: now.saturating_add(budget_ms),
                    };
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admitted(l: &mut Lifecycle, now: u64, id: u64) -> Epoch {
        match l
            .handle(Tick(now), EpochEvent::Admit(CallId(id)))
            .0
            .as_slice()
        {
            [EpochEffect::Admitted { epoch, .. }] => *epoch,
            other => panic!("expected admission, got {other:?}"),
        }
    }

    #[test]
    fn o5_serving_admits_under_the_current_epoch() {
        let mut l = Lifecycle::new(Epoch(3));
        assert_eq!(admitted(&mut l, 0, 1), Epoch(3));
        assert_eq!(
            l.status(),
            Status {
                phase: Phase::Serving,
                epoch: Epoch(3),
                active_calls: 1
            }
        );
        assert_eq!(
            l.handle(Tick(0), EpochEvent::Admit(CallId(1))).0,
            vec![EpochEffect::Refused {
                call: CallId(1),
                reason: Refusal::DuplicateCall
            }]
        );
    }

    #[test]
    fn o5_shutdown_bumps_epoch_cancels_active_calls_and_closes_listen_streams() {
        let mut l = Lifecycle::default();
        let _ = admitted(&mut l, 0, 1);
        let _ = admitted(&mut l, 0, 2);
        let fx = l.handle(Tick(10), EpochEvent::Shutdown { budget_ms: 100 });
        assert_eq!(
            fx.0,
            vec![
                EpochEffect::EpochBumped(Epoch(1)),
                EpochEffect::Cancel(CallId(1)),
                EpochEffect::Cancel(CallId(2)),
                EpochEffect::CloseListenStreams,
            ]
        );
        assert_eq!(l.poll_timeout(), Some(Tick(110)));
        assert_eq!(
            l.status().phase,
            Phase::Draining {
                deadline: Tick(110)
            }
        );
    }

    #[test]
    fn o5_no_admission_after_shutdown_starts_and_nothing_restarts() {
        let mut l = Lifecycle::default();
        let _ = l.handle(Tick(0), EpochEvent::Shutdown { budget_ms: 5 });
        assert_eq!(l.status().phase, Phase::Stopped);
        assert_eq!(
            l.handle(Tick(1), EpochEvent::Admit(CallId(9))).0,
            vec![EpochEffect::Refused {
                call: CallId(9),
                reason: Refusal::ShuttingDown
            }]
        );
        assert_eq!(
            l.handle(Tick(2), EpochEvent::Shutdown { budget_ms: 5 }).0,
            vec![EpochEffect::AlreadyShuttingDown]
        );
        assert_eq!(
            l.epoch(),
            Epoch(1),
            "a repeated shutdown does not bump again"
        );
        assert!(!l.is_serving());
    }

    #[test]
    fn o5_drain_within_budget_stops() {
        let mut l = Lifecycle::default();
        let _ = admitted(&mut l, 0, 1);
        let _ = l.handle(Tick(0), EpochEvent::Shutdown { budget_ms: 100 });
        assert_eq!(
            l.handle(Tick(50), EpochEvent::CallEnded(CallId(1))).0,
            vec![EpochEffect::Stopped]
        );
        assert_eq!(
            l.status(),
            Status {
                phase: Phase::Stopped,
                epoch: Epoch(1),
                active_calls: 0
            }
        );
        assert_eq!(l.poll_timeout(), None);
        assert_eq!(l.handle_timeout(Tick(1_000)).0, vec![]);
    }

    #[test]
    fn o5_budget_exhausted_reports_cleanup_failed_and_status_shows_unfinished_work_until_drained() {
        let mut l = Lifecycle::default();
        let _ = admitted(&mut l, 0, 1);
        let _ = admitted(&mut l, 0, 2);
        let _ = l.handle(Tick(0), EpochEvent::Shutdown { budget_ms: 100 });
        assert_eq!(l.handle_timeout(Tick(99)).0, vec![]);
        assert_eq!(
            l.handle_timeout(Tick(100)).0,
            vec![EpochEffect::CleanupFailed { unfinished: 2 }]
        );
        assert_eq!(
            l.status(),
            Status {
                phase: Phase::CleanupFailed,
                epoch: Epoch(1),
                active_calls: 2
            }
        );
        assert_eq!(
            l.handle(Tick(200), EpochEvent::CallEnded(CallId(1))).0,
            vec![]
        );
        assert_eq!(l.status().active_calls, 1);
        assert_eq!(
            l.handle(Tick(300), EpochEvent::CallEnded(CallId(2))).0,
            vec![EpochEffect::Stopped]
        );
        assert_eq!(l.status().phase, Phase::Stopped);
    }

    #[test]
    fn time_going_backwards_does_not_fire_the_deadline_early() {
        let mut l = Lifecycle::default();
        let _ = admitted(&mut l, 1_000, 1);
        let _ = l.handle(Tick(1_000), EpochEvent::Shutdown { budget_ms: 10 });
        assert_eq!(l.handle_timeout(Tick(0)).0, vec![]);
        assert_eq!(
            l.status().phase,
            Phase::Draining {
                deadline: Tick(1_010)
            }
        );
        let mut far = Lifecycle::default();
        let _ = admitted(&mut far, 0, 1);
        let _ = far.handle(Tick(u64::MAX - 1), EpochEvent::Shutdown { budget_ms: 10 });
        assert_eq!(far.poll_timeout(), Some(Tick(u64::MAX)));
    }

    #[test]
    fn unknown_call_end_is_reported_not_fatal() {
        let mut l = Lifecycle::default();
        assert_eq!(
            l.handle(Tick(0), EpochEvent::CallEnded(CallId(4))).0,
            vec![EpochEffect::UnknownCall(CallId(4))]
        );
        assert!(l.is_serving());
    }
}
