//! Model of progress pacing for one outer call (J3–J5, O57–O59). `next_state` clones the real
//! `strict_mcp::machine::pacer::Pacer` and calls `handle`/`handle_timeout`; the model chooses
//! updates, time steps of 50 ms, timer firings and the ends of invocations and of the call.
//! Progress value 2 always carries an explicit `total: 0`, so its survival can be checked.

#[path = "common/mod.rs"]
mod common;

use stateright::{Checker, Model, Property};
use strict_mcp::machine::pacer::{
    Number, Pacer, PacerEffect, PacerEvent, PacerFaults, Update, MIN_INTERVAL_MS,
};
use strict_mcp::machine::Tick;

const STEP_MS: u64 = 50;

#[derive(Clone, Debug)]
struct PacerModel {
    faults: PacerFaults,
    max_now: u64,
    invocations: u8,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct State {
    pacer: Pacer,
    now: Tick,
    started: u8,
    running: bool,
    call_ended: bool,
    // ghosts
    last_delivery: Option<Tick>,
    last_value: Option<u8>,
    delivered_while_not_running: bool,
    too_close: bool,
    not_increasing: bool,
    total_zero_lost: bool,
    timer_delivery: bool,
    second_invocation_delivery: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Action {
    Start,
    Update(u8),
    Timeout,
    Advance,
    EndInvocation,
    EndCall,
}

fn update(p: u8) -> Update {
    Update {
        progress: Number::parse(&p.to_string()).expect("integer"),
        total: (p == 2).then(|| Number::parse("0").expect("zero")),
        message: None,
    }
}

impl Model for PacerModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        vec![State {
            pacer: Pacer::with_faults(Some("\"tok\""), self.faults),
            now: Tick(0),
            started: 0,
            running: false,
            call_ended: false,
            last_delivery: None,
            last_value: None,
            delivered_while_not_running: false,
            too_close: false,
            not_increasing: false,
            total_zero_lost: false,
            timer_delivery: false,
            second_invocation_delivery: false,
        }]
    }

    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        if s.call_ended {
            // The call is over; only stray inputs remain possible, and none may produce output.
            actions.extend([Action::Update(3), Action::Timeout]);
            return;
        }
        if !s.running && s.started < self.invocations {
            actions.push(Action::Start);
        }
        actions.extend([
            Action::Update(1),
            Action::Update(2),
            Action::Update(3),
            Action::Timeout,
        ]);
        if s.now.0 < self.max_now {
            actions.push(Action::Advance);
        }
        if s.running {
            actions.push(Action::EndInvocation);
        }
        actions.push(Action::EndCall);
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut s = last.clone();
        let now = s.now;
        let (effect, by_timer) = match action {
            Action::Start => {
                s.started += 1;
                s.running = true;
                (s.pacer.handle(now, PacerEvent::InvocationStarted), false)
            }
            Action::Update(p) => (s.pacer.handle(now, PacerEvent::Update(update(p))), false),
            Action::Timeout => (s.pacer.handle_timeout(now), true),
            Action::Advance => {
                s.now = Tick(now.0 + STEP_MS);
                (PacerEffect::Ignored, false)
            }
            Action::EndInvocation => {
                s.running = false;
                (s.pacer.handle(now, PacerEvent::InvocationEnded), false)
            }
            Action::EndCall => {
                s.running = false;
                s.call_ended = true;
                (s.pacer.handle(now, PacerEvent::CallEnded), false)
            }
        };
        if let PacerEffect::Deliver(n) = effect {
            let value = n.progress.value() as u8;
            s.delivered_while_not_running |= !s.running;
            s.too_close |= s
                .last_delivery
                .is_some_and(|t| now.saturating_since(t) < MIN_INTERVAL_MS);
            s.not_increasing |= s.last_value.is_some_and(|v| value <= v);
            s.total_zero_lost |= value == 2 && n.total.as_ref().map(Number::as_json) != Some("0");
            s.timer_delivery |= by_timer;
            s.second_invocation_delivery |= s.started == 2;
            s.last_delivery = Some(now);
            s.last_value = Some(value);
        }
        Some(s)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always(
                "J4/O58: no progress after the invocation ends",
                |_, s: &State| !s.delivered_while_not_running,
            ),
            Property::always(
                "J5/O58: deliveries are at least 100 ms apart",
                |_, s: &State| !s.too_close,
            ),
            Property::always(
                "J3: delivered progress strictly increases",
                |_, s: &State| !s.not_increasing,
            ),
            Property::always("O58: an explicit total 0 is kept", |_, s: &State| {
                !s.total_zero_lost
            }),
            Property::always(
                "O58: no pending update survives the invocation",
                |_, s: &State| s.running || s.pacer.poll_timeout().is_none(),
            ),
            Property::sometimes(
                "O58: a coalesced update is delivered by the timer",
                |_, s: &State| s.timer_delivery,
            ),
            Property::sometimes(
                "O58: pacing continues in a later invocation",
                |_, s: &State| s.second_invocation_delivery,
            ),
        ]
    }
}

fn model(faults: PacerFaults) -> PacerModel {
    if common::deep() {
        PacerModel {
            faults,
            max_now: 500,
            invocations: 3,
        }
    } else {
        PacerModel {
            faults,
            max_now: 250,
            invocations: 2,
        }
    }
}

/// Pinned so an unintended change to the machine or the model shows up as a diff here.
const PINNED_PACER_STATES: usize = 3_038;

#[test]
fn pacer_model_holds_all_properties() {
    let checker = common::explore("pacer", model(PacerFaults::default()));
    checker.assert_properties();
    if !common::deep() {
        assert_eq!(checker.unique_state_count(), PINNED_PACER_STATES);
    }
}

#[test]
fn planted_progress_after_end_is_caught() {
    let faults = PacerFaults {
        progress_after_end: true,
    };
    common::hunt(
        "progress_after_end",
        model(faults),
        "J4/O58: no progress after the invocation ends",
    );
}
