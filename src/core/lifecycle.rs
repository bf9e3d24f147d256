//! The epoch machine's effects routed to what the driver does with them, as one pure function
//! ([`route_epoch_effect`]): run or refuse a call, forward the epoch bump to the ledger,
//! cancel a call, feed the listen streams' machines, report the shutdown's end. The server
//! follows the routes (`server::Server::{admit, end_call, shutdown}`); `models/combined.rs`
//! routes the very same effects through the same function, so a wrong route (a listen stream
//! left open at shutdown, an admission after it) fails the model's properties.

use crate::machine::epoch::{CallId, EpochEffect};
use crate::machine::subscriptions::ListenEvent;
use crate::machine::Epoch;

/// What the driver does with one effect of the epoch machine.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EpochRoute {
    /// Run the admitted call under this epoch.
    Run(Epoch),
    /// Answer the call `shutting_down`; it does not run.
    Refuse,
    /// Tell the continuation ledger the serving epoch moved on, so old `requestState` is
    /// refused (I-section).
    ForwardEpoch(Epoch),
    /// Fire this active call's cancellation token.
    CancelCall(CallId),
    /// Feed this event to every open `subscriptions/listen` stream's machine.
    EveryListen(ListenEvent),
    /// The shutdown ended with nothing left running.
    Stopped,
    /// The shutdown budget ran out with this many calls still running (the epoch machine
    /// checks its deadline on every event, so this can follow any step).
    CleanupFailed {
        /// Calls still running.
        unfinished: usize,
    },
    /// The driver ended a call that was not active: log it, it is a bug in the driver.
    EndedTwice(CallId),
    /// Nothing to do: a second shutdown waits like the first.
    Nothing,
}

/// The route of one epoch effect. Pure and exhaustive, so a new effect of the machine is a
/// compile error here rather than a silent `_ => {}` in a driver.
#[must_use]
pub fn route_epoch_effect(effect: EpochEffect) -> EpochRoute {
    match effect {
        EpochEffect::Admitted { epoch, .. } => EpochRoute::Run(epoch),
        EpochEffect::Refused { .. } => EpochRoute::Refuse,
        EpochEffect::EpochBumped(epoch) => EpochRoute::ForwardEpoch(epoch),
        EpochEffect::Cancel(call) => EpochRoute::CancelCall(call),
        EpochEffect::CloseListenStreams => EpochRoute::EveryListen(ListenEvent::ServerClosing),
        EpochEffect::Stopped => EpochRoute::Stopped,
        EpochEffect::CleanupFailed { unfinished } => EpochRoute::CleanupFailed { unfinished },
        EpochEffect::UnknownCall(call) => EpochRoute::EndedTwice(call),
        EpochEffect::AlreadyShuttingDown => EpochRoute::Nothing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::epoch::{EpochEvent, Lifecycle};
    use crate::machine::Tick;

    fn routes(effects: Vec<EpochEffect>) -> Vec<EpochRoute> {
        effects.into_iter().map(route_epoch_effect).collect()
    }

    /// admission runs under the serving epoch; shutdown forwards the bumped epoch,
    /// cancels the active call and feeds every listen stream `ServerClosing`, in that order;
    /// after it admission is refused, the last call's end stops the server, and a second
    /// end of the same call is the driver's bug.
    #[test]
    fn o5_epoch_effects_route_to_the_driver_step_that_needs_them() {
        let mut lifecycle = Lifecycle::default();
        let epoch = lifecycle.epoch();
        let fx = lifecycle.handle(Tick(0), EpochEvent::Admit(CallId(1))).0;
        assert_eq!(routes(fx), [EpochRoute::Run(epoch)]);
        let fx = lifecycle
            .handle(Tick(0), EpochEvent::Shutdown { budget_ms: 10 })
            .0;
        assert_eq!(
            routes(fx),
            [
                EpochRoute::ForwardEpoch(epoch.next()),
                EpochRoute::CancelCall(CallId(1)),
                EpochRoute::EveryListen(ListenEvent::ServerClosing),
            ]
        );
        let fx = lifecycle
            .handle(Tick(0), EpochEvent::Shutdown { budget_ms: 10 })
            .0;
        assert_eq!(routes(fx), [EpochRoute::Nothing]);
        let fx = lifecycle.handle(Tick(1), EpochEvent::Admit(CallId(2))).0;
        assert_eq!(routes(fx), [EpochRoute::Refuse]);
        let fx = lifecycle
            .handle(Tick(2), EpochEvent::CallEnded(CallId(1)))
            .0;
        assert_eq!(routes(fx), [EpochRoute::Stopped]);
        let fx = lifecycle
            .handle(Tick(3), EpochEvent::CallEnded(CallId(1)))
            .0;
        assert_eq!(routes(fx), [EpochRoute::EndedTwice(CallId(1))]);
    }

    /// the budget running out is the shutdown's end, with the unfinished count.
    #[test]
    fn o6_a_draining_time_out_routes_to_cleanup_failed() {
        let mut lifecycle = Lifecycle::default();
        let _ = lifecycle.handle(Tick(0), EpochEvent::Admit(CallId(7)));
        let _ = lifecycle.handle(Tick(0), EpochEvent::Shutdown { budget_ms: 5 });
        let fx = lifecycle.handle_timeout(Tick(5)).0;
        assert_eq!(routes(fx), [EpochRoute::CleanupFailed { unfinished: 1 }]);
    }
}
