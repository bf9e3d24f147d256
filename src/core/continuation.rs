//! Continuations' decisions as pure functions: what the server does with one retry of a
//! chain ([`decide_resume`]) and with the end of one handler round ([`decide_finish`]), from
//! the stored chain and the event alone (no store, clock or randomness). The server carries
//! the decisions out (`server::mrtr`); `models/combined.rs` checks the same functions.

use crate::machine::ledger::{
    Chain, ChainFailure, ChainRejection, LedgerEffect, LedgerEvent, RequestState, Resume,
};
use crate::machine::Tick;

/// What the server does with one retry, as the ledger decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResumeStep {
    /// `state_rejected` (tampered, foreign, other request, old epoch, expired, unknown): the
    /// ledger's reason, `None` when it answered a retry with something no retry expects.
    Reject(Option<ChainRejection>),
    /// The same prompt again, answers missing; `write` when the chain changed.
    AskAgain {
        /// Whether the chain changed and must be stored before answering.
        write: bool,
        /// The state to seal into the reply.
        state: RequestState,
        /// The pending prompt's exact bytes.
        prompt: Vec<u8>,
    },
    /// Write the chain, then run the handler with every answer it collected.
    Dispatch,
    /// Run the handler in recovery mode for a completed chain; nothing to write.
    Recover,
}

/// The ledger's decision on one retry, from the stored chain alone: the chain as it must be
/// stored afterwards and the step to take. Pure (no store, no clock, no randomness), so a
/// model can check the very decision the server takes.
#[must_use]
pub fn decide_resume(stored: &Chain, now: Tick, resume: Resume) -> (Chain, ResumeStep) {
    let mut chain = stored.clone();
    let step = match chain.handle(now, LedgerEvent::Resume(resume)) {
        LedgerEffect::Rejected(r) => {
            tracing::debug!(?r, "requestState rejected");
            ResumeStep::Reject(Some(r))
        }
        LedgerEffect::Prompt { state, prompt, .. } => ResumeStep::AskAgain {
            write: *stored != chain,
            state,
            prompt,
        },
        LedgerEffect::Dispatch { .. } => ResumeStep::Dispatch,
        LedgerEffect::DispatchRecovery => ResumeStep::Recover,
        // A resume is answered by one of the four above; anything else is a ledger bug,
        // refused like a bad state.
        other @ (LedgerEffect::Completed
        | LedgerEffect::Failed(_)
        | LedgerEffect::Expired
        | LedgerEffect::Invalidated
        | LedgerEffect::Nothing) => {
            tracing::debug!(?other, "unexpected ledger effect on resume");
            ResumeStep::Reject(None)
        }
    };
    (chain, step)
}

/// How one handler round of a chain ended, as the ledger is told it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RoundEnd {
    /// The handler asked for input again: the prompt's exact bytes.
    Asked(Vec<u8>),
    /// The handler completed (its result goes out).
    Completed,
    /// The handler failed (its error goes out).
    Failed,
}

/// What the server answers after one handler round, as the ledger decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FinishStep {
    /// `input_required` with this state sealed and this prompt.
    Prompt {
        /// The state to seal into the reply.
        state: RequestState,
        /// The pending prompt's exact bytes.
        prompt: Vec<u8>,
    },
    /// The handler asked once more than the chain allows: `interaction_limit`.
    InteractionLimit,
    /// The ledger refused the new question (the chain was already settled): `state_rejected`.
    Rejected,
    /// The handler's own answer (its result or its error) goes out; `completed` when the
    /// ledger recorded the chain as completed by it.
    Pass {
        /// Whether the ledger answered `Completed`.
        completed: bool,
    },
    /// The handler asked but the ledger produced no prompt: an internal error.
    Internal,
}

/// The ledger's decision on the end of one handler round, from the chain alone: the chain as
/// it must be stored afterwards and what to answer. Pure, like [`decide_resume`].
#[must_use]
pub fn decide_finish(chain: &Chain, now: Tick, end: &RoundEnd) -> (Chain, FinishStep) {
    let mut next = chain.clone();
    let event = match end {
        RoundEnd::Asked(prompt) => LedgerEvent::HandlerAsked {
            prompt: prompt.clone(),
        },
        RoundEnd::Completed => LedgerEvent::HandlerCompleted,
        RoundEnd::Failed => LedgerEvent::HandlerFailed,
    };
    let effect = next.handle(now, event);
    let asked = matches!(end, RoundEnd::Asked(_));
    let step = match effect {
        LedgerEffect::Prompt { state, prompt, .. } => FinishStep::Prompt { state, prompt },
        LedgerEffect::Failed(ChainFailure::InteractionLimit) => FinishStep::InteractionLimit,
        LedgerEffect::Rejected(_) if asked => FinishStep::Rejected,
        _ if asked => FinishStep::Internal,
        other => FinishStep::Pass {
            completed: other == LedgerEffect::Completed,
        },
    };
    (next, step)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::ledger::{Binding, ChainId, InputMethod, LedgerConfig, MAX_ROUNDS};
    use crate::machine::Digest;
    use crate::machine::Epoch;

    fn asked() -> (Chain, RequestState, Binding) {
        let binding = Binding {
            principal: Digest([1; 32]),
            method: InputMethod::ToolsCall,
            request: Digest([2; 32]),
        };
        let mut chain = Chain::new(
            ChainId([7; 16]),
            binding,
            Epoch(0),
            LedgerConfig::with_ttl(1_000),
        );
        match chain.handle(
            Tick(0),
            LedgerEvent::HandlerAsked {
                prompt: b"{}".to_vec(),
            },
        ) {
            LedgerEffect::Prompt { state, .. } => (chain, state, binding),
            other => panic!("a new chain prompts, got {other:?}"),
        }
    }

    fn retry(state: RequestState, binding: Binding, answer: Option<&[u8]>) -> Resume {
        Resume {
            state,
            principal: binding.principal,
            method: binding.method,
            request: binding.request,
            serving_epoch: Epoch(0),
            answer: answer.map(<[u8]>::to_vec),
        }
    }

    /// the decision the server carries out for one retry, from the chain alone.
    #[test]
    fn i6_o53_resume_decisions_follow_the_ledger() {
        let (chain, state, binding) = asked();
        // The answer to the pending prompt: store the chain, then run the handler.
        let (next, step) = decide_resume(&chain, Tick(1), retry(state, binding, Some(b"{}")));
        assert_eq!(step, ResumeStep::Dispatch);
        assert_ne!(next, chain, "the answered chain is what gets stored");
        // No answer: the same prompt again.
        let (_, step) = decide_resume(&chain, Tick(1), retry(state, binding, None));
        assert!(
            matches!(step, ResumeStep::AskAgain { ref prompt, .. } if prompt == b"{}"),
            "{step:?}"
        );
        // Another principal: rejected.
        let mut thief = retry(state, binding, Some(b"{}"));
        thief.principal = Digest([9; 32]);
        assert_eq!(
            decide_resume(&chain, Tick(1), thief).1,
            ResumeStep::Reject(Some(ChainRejection::ForeignPrincipal))
        );
        // At the end of the state's lifetime: rejected (one millisecond earlier it answered).
        let late = decide_resume(&chain, Tick(1_000), retry(state, binding, Some(b"{}")));
        assert!(
            matches!(late.1, ResumeStep::Reject(Some(_))),
            "{:?}",
            late.1
        );
        let (_, step) = decide_resume(&chain, Tick(999), retry(state, binding, Some(b"{}")));
        assert_eq!(step, ResumeStep::Dispatch);
    }

    /// The decision after a handler round, from the chain alone.
    #[test]
    fn o54_finish_decisions_follow_the_ledger() {
        let (chain, state, binding) = asked();
        let (answered, step) = decide_resume(&chain, Tick(1), retry(state, binding, Some(b"{}")));
        assert_eq!(step, ResumeStep::Dispatch);
        // Completing a dispatched round: the handler's answer goes out, recorded as completed.
        let (done, step) = decide_finish(&answered, Tick(2), &RoundEnd::Completed);
        assert_eq!(step, FinishStep::Pass { completed: true });
        assert_ne!(done, answered, "the completed chain is what gets stored");
        // Failing: the handler's error goes out, not recorded as a completion.
        let (_, step) = decide_finish(&answered, Tick(2), &RoundEnd::Failed);
        assert_eq!(step, FinishStep::Pass { completed: false });
        // Asking again: a new prompt with a new state.
        let (_, step) = decide_finish(&answered, Tick(2), &RoundEnd::Asked(b"[2]".to_vec()));
        assert!(
            matches!(step, FinishStep::Prompt { ref prompt, state: s } if prompt == b"[2]" && s != state),
            "{step:?}"
        );
        // Asking on a completed chain: refused as a rejected state.
        let (_, step) = decide_finish(&done, Tick(3), &RoundEnd::Asked(b"[3]".to_vec()));
        assert_eq!(step, FinishStep::Rejected);
        // The stored chain itself is never changed by a decision.
        let (_, again) = decide_finish(&answered, Tick(2), &RoundEnd::Completed);
        assert_eq!(again, FinishStep::Pass { completed: true });
    }

    /// ten prompts are allowed, the eleventh is `interaction_limit` (at the bound and
    /// one past).
    #[test]
    fn o54_the_eleventh_prompt_is_the_interaction_limit() {
        let (mut chain, mut state, binding) = asked();
        let mut prompts: u8 = 1;
        loop {
            let (next, step) = decide_resume(&chain, Tick(1), retry(state, binding, Some(b"{}")));
            assert_eq!(step, ResumeStep::Dispatch);
            let (next, step) = decide_finish(&next, Tick(1), &RoundEnd::Asked(b"{}".to_vec()));
            match step {
                FinishStep::Prompt { state: s, .. } => {
                    prompts += 1;
                    chain = next;
                    state = s;
                }
                FinishStep::InteractionLimit => break,
                other => panic!("unexpected {other:?}"),
            }
            assert!(
                prompts <= MAX_ROUNDS,
                "more prompts than MAX_ROUNDS were issued"
            );
        }
        assert_eq!(prompts, MAX_ROUNDS);
    }
}
