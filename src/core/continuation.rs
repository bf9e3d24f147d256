//! Continuations' decisions as pure functions: what the server does with one retry of a
//! chain, from the stored chain and the retry alone (no store, clock or randomness). The server
//! carries the decision out (`server::mrtr`); `models/combined.rs` checks the same function.

use crate::machine::ledger::{Chain, LedgerEffect, LedgerEvent, Rejection, RequestState, Resume};
use crate::machine::Tick;

/// What the server does with one retry, as the ledger decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResumeStep {
    /// `state_rejected` (tampered, foreign, other request, old epoch, expired, unknown): the
    /// ledger's reason, `None` when it answered a retry with something no retry expects.
    Reject(Option<Rejection>),
    /// The same prompt again, answers missing (X5, O53); `write` when the chain changed.
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
    /// Run the handler in recovery mode for a completed chain (O53); nothing to write.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::ledger::{Binding, ChainId, LedgerConfig, Method};
    use crate::machine::Digest;
    use crate::machine::Epoch;

    fn asked() -> (Chain, RequestState, Binding) {
        let binding = Binding {
            principal: Digest([1; 32]),
            method: Method::ToolsCall,
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

    /// I6, O53, X5: the decision the server carries out for one retry, from the chain alone.
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
            ResumeStep::Reject(Some(Rejection::ForeignPrincipal))
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
}
