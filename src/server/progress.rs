//! Progress for one request: the core's [`ProgressSink`] wired to the
//! pacer and the request's own outbox (never a listen stream).
//!
//! The server runs no timer: an update the pacer holds back goes out with the next update past
//! the interval, or not at all (no background sender, no guaranteed final update).

use std::sync::{Arc, Mutex};

use super::encode::encode_notification;
use super::{lock, Outbox};
use crate::core::{CancelToken, MonotonicClock, ProgressSink};
use crate::machine::pacer::{Number, Pacer, PacerEffect, PacerEvent, ProgressProblem, Update};
use crate::machine::Tick;

/// The progress channel of one request.
pub(crate) struct Progress {
    pacer: Mutex<Pacer>,
    outbox: Arc<dyn Outbox>,
    /// The request's cancellation: fired when the outbox reports the peer gone.
    gone: CancelToken,
    /// The server's monotonic clock (the pacer's interval is process-local).
    clock: Arc<dyn MonotonicClock>,
}

impl Progress {
    /// `None` unless the request carries a valid token (a bad one disables progress silently).
    pub(crate) fn new(
        raw_token: Option<&str>,
        outbox: Arc<dyn Outbox>,
        gone: CancelToken,
        clock: Arc<dyn MonotonicClock>,
    ) -> Option<Arc<Progress>> {
        let pacer = Pacer::new(raw_token);
        pacer.is_enabled().then(|| {
            Arc::new(Progress {
                pacer: Mutex::new(pacer),
                outbox,
                gone,
                clock,
            })
        })
    }

    fn now(&self) -> Tick {
        Tick(self.clock.elapsed_ms())
    }

    fn event(&self, event: PacerEvent) {
        let effect = lock(&self.pacer).handle(self.now(), event);
        self.apply(effect);
    }

    fn apply(&self, effect: PacerEffect) {
        match effect {
            PacerEffect::Deliver(n) => {
                let params = crate::wire::progress::progress_params(
                    n.token.as_json(),
                    n.progress.as_json(),
                    n.total.as_ref().map(|t| t.as_json()),
                    n.message.as_deref(),
                );
                if let Some(line) = encode_notification(crate::wire::methods::PROGRESS, &params) {
                    if !self.outbox.notify(line) {
                        self.gone.cancel();
                    }
                }
            }
            PacerEffect::Report(problem) => {
                tracing::warn!(code = problem.code(), "progress update refused");
            }
            PacerEffect::Coalesced { .. } | PacerEffect::Ignored => {}
        }
    }

    /// Before each core invocation of the call.
    pub(crate) fn started(&self) {
        self.event(PacerEvent::InvocationStarted);
    }

    /// After each core invocation of the call.
    pub(crate) fn ended(&self) {
        self.event(PacerEvent::InvocationEnded);
    }

    /// The call is answered (or cancelled): nothing more goes out, ever.
    pub(crate) fn finished(&self) {
        self.event(PacerEvent::CallEnded);
    }
}

impl ProgressSink for Progress {
    fn report(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let Some(progress) = Number::from_f64(progress) else {
            self.event(PacerEvent::Invalid(ProgressProblem::InvalidNumber));
            return;
        };
        let total = match total.map(Number::from_f64) {
            None => None,
            Some(Some(t)) => Some(t),
            Some(None) => {
                self.event(PacerEvent::Invalid(ProgressProblem::InvalidNumber));
                return;
            }
        };
        self.event(PacerEvent::Update(Update {
            progress,
            total,
            message: message.map(str::to_owned),
        }));
    }
}
