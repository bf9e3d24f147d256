//! Combined model: one server lifecycle, two concurrent callers with different principals, each
//! running an MRTR chain, one listen stream, and shutdown (with its epoch bump) at any point.
//!
//! Every transition clones and drives the real machines (`Lifecycle`, `Chain`, `Listen`) exactly
//! as a driver would: admit → run → end for each request, `EpochBumped` forwarded to every stored
//! chain, `CloseListenStreams` forwarded to the stream. A caller may also replay its own token
//! after completion, and the other caller may try to use a token that is not theirs.
//! After a shutdown completes, a successor server instance may take over the same store and key
//! ring under the bumped epoch: that is where old `requestState` meets a server that admits
//! requests again, so the epoch check (not admission) is what must refuse it.
//! Chains are bounded to two prompts here; the full ten-answer limit is covered by
//! `models/ledger.rs`.

#[path = "common/mod.rs"]
mod common;

use stateright::{Checker, Model, Property};
use strict_mcp::core::continuation::{
    decide_finish, decide_resume, FinishStep, ResumeStep, RoundEnd,
};
use strict_mcp::core::lifecycle::{route_epoch_effect, EpochRoute};
use strict_mcp::machine::epoch::{CallId, EpochEffect, EpochEvent, EpochFaults, Lifecycle, Phase};
use strict_mcp::machine::ledger::{
    Binding, Chain, ChainId, ChainRejection, InputMethod, LedgerConfig, LedgerEvent, LedgerFaults,
    RequestState, Resume,
};
use strict_mcp::machine::subscriptions::{
    Change, Filter, Listen, ListenEffect, ListenEvent, ServerSupport, SubscriptionId, Transport,
};
use strict_mcp::machine::{Digest, Epoch, Tick};

const CALLERS: usize = 2;
const PRINCIPALS: [Digest; CALLERS] = [Digest([0xA; 32]), Digest([0xB; 32])];
const REQUESTS: [Digest; CALLERS] = [Digest([0x1; 32]), Digest([0x2; 32])];

#[derive(Clone, Debug)]
struct CombinedModel {
    ledger_faults: LedgerFaults,
    epoch_faults: EpochFaults,
    max_prompts: u8,
    max_now: u64,
    ttl: u64,
}

/// Where one caller's client stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Caller {
    /// Has not sent its call yet.
    Idle,
    /// A request of this caller is admitted and its handler runs (under this epoch).
    Running(Epoch),
    /// Holds a prompt's token and may retry.
    Prompted,
    /// The call completed or failed; the last token may still be replayed.
    Done,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct State {
    server: Lifecycle,
    now: Tick,
    callers: [Caller; CALLERS],
    chains: [Option<Chain>; CALLERS],
    tokens: [Option<RequestState>; CALLERS],
    stream: Listen,
    stream_log: Vec<ListenEffect>,
    // ghosts
    shutdown_started: bool,
    admitted_after_shutdown: bool,
    foreign_principal_dispatch: bool,
    old_epoch_dispatch: bool,
    completions: [u8; CALLERS],
    mrtr_completions: u8,
    recovery_seen: bool,
    old_epoch_rejected: bool,
    cleanup_failed_seen: bool,
    /// A successor server (new instance, same store and key ring) serves the bumped epoch.
    successor: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Action {
    Call(usize),
    Ask(usize),
    Complete(usize),
    Fail(usize),
    /// Caller `by` retries with caller `owner`'s latest token.
    Retry {
        owner: usize,
        by: usize,
    },
    Shutdown,
    Advance,
    AckStream,
    ToolsChanged,
    NotifyChain(usize),
    StartSuccessor,
}

fn call_id(owner: usize, by: usize) -> CallId {
    CallId((2 * owner + usize::from(owner != by)) as u64)
}

impl CombinedModel {
    /// Routes the epoch machine's effects exactly as the server does
    /// ([`route_epoch_effect`]); `Some` is the epoch of an admitted call.
    fn apply_server(&self, s: &mut State, effects: Vec<EpochEffect>) -> Option<Epoch> {
        let mut admitted = None;
        for e in effects {
            match route_epoch_effect(e) {
                EpochRoute::Run(epoch) => {
                    s.admitted_after_shutdown |= s.shutdown_started;
                    admitted = Some(epoch);
                }
                // Forwarding the bump to stored chains is the model's `NotifyChain` choice, at any
                // later point or never (a shared store may not reach every record): resumes must
                // be refused on the epoch they carry alone.
                EpochRoute::ForwardEpoch(_) => {}
                EpochRoute::EveryListen(event) => {
                    let fx = s.stream.handle(s.now, event);
                    s.stream_log.extend(fx.0);
                }
                EpochRoute::CleanupFailed { .. } => s.cleanup_failed_seen = true,
                // Cancellation is a request; whether the handler honours it is the model's
                // `Fail`/`Complete` choice.
                EpochRoute::CancelCall(_) => {}
                EpochRoute::Refuse
                | EpochRoute::Stopped
                | EpochRoute::EndedTwice(_)
                | EpochRoute::Nothing => {}
                // A route this model does not know yet must not pass unnoticed.
                other => panic!("unmodelled epoch route {other:?}"),
            }
        }
        admitted
    }

    fn admit(&self, s: &mut State, call: CallId) -> Option<Epoch> {
        let fx = s.server.handle(s.now, EpochEvent::Admit(call));
        self.apply_server(s, fx.0)
    }

    fn end(&self, s: &mut State, call: CallId) {
        let fx = s.server.handle(s.now, EpochEvent::CallEnded(call));
        let _ = self.apply_server(s, fx.0);
    }
}

impl Model for CombinedModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let requested = Filter {
            tools_list_changed: true,
            ..Filter::default()
        };
        vec![State {
            server: Lifecycle::with_faults(Epoch(0), self.epoch_faults),
            now: Tick(0),
            callers: [Caller::Idle; CALLERS],
            chains: [None, None],
            tokens: [None, None],
            stream: Listen::new(SubscriptionId("\"l\"".into()), Transport::Stdio, requested),
            stream_log: Vec::new(),
            shutdown_started: false,
            admitted_after_shutdown: false,
            foreign_principal_dispatch: false,
            old_epoch_dispatch: false,
            completions: [0; CALLERS],
            mrtr_completions: 0,
            recovery_seen: false,
            old_epoch_rejected: false,
            cleanup_failed_seen: false,
            successor: false,
        }]
    }

    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        for i in 0..CALLERS {
            match s.callers[i] {
                Caller::Idle => actions.push(Action::Call(i)),
                Caller::Running(_) => {
                    let issued = s.chains[i].as_ref().map_or(0, Chain::prompts_issued);
                    if issued < self.max_prompts {
                        actions.push(Action::Ask(i));
                    }
                    actions.extend([Action::Complete(i), Action::Fail(i)]);
                }
                Caller::Prompted | Caller::Done => {
                    if s.tokens[i].is_some() {
                        for by in 0..CALLERS {
                            if !matches!(s.callers[by], Caller::Running(_)) {
                                actions.push(Action::Retry { owner: i, by });
                            }
                        }
                    }
                }
            }
        }
        if !s.shutdown_started && !s.successor {
            actions.push(Action::Shutdown);
        }
        if !s.successor && s.server.status().phase == Phase::Stopped {
            actions.push(Action::StartSuccessor);
        }
        if s.now.0 < self.max_now {
            actions.push(Action::Advance);
        }
        for (i, chain) in s.chains.iter().enumerate() {
            if chain
                .as_ref()
                .is_some_and(|c| c.epoch() < s.server.epoch() && !c.is_terminal())
            {
                actions.push(Action::NotifyChain(i));
            }
        }
        if s.stream.is_open() && s.stream_log.is_empty() {
            actions.push(Action::AckStream);
        }
        if !s.shutdown_started && s.stream_log.len() < 2 {
            actions.push(Action::ToolsChanged);
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut s = last.clone();
        let now = s.now;
        match action {
            Action::Call(i) => {
                s.callers[i] = match self.admit(&mut s, call_id(i, i)) {
                    Some(epoch) => Caller::Running(epoch),
                    None => Caller::Done,
                };
            }
            Action::Ask(i) => {
                let Caller::Running(epoch) = s.callers[i] else {
                    return None;
                };
                let config = LedgerConfig {
                    state_ttl_ms: self.ttl,
                    faults: self.ledger_faults,
                };
                let binding = Binding {
                    principal: PRINCIPALS[i],
                    method: InputMethod::ToolsCall,
                    request: REQUESTS[i],
                };
                let chain = s.chains[i].get_or_insert_with(|| {
                    Chain::new(ChainId([i as u8; 16]), binding, epoch, config)
                });
                let round = chain.prompts_issued() + 1;
                // The server's own decision on a round's end (`server::mrtr` carries it out).
                let (next, step) = decide_finish(chain, now, &RoundEnd::Asked(vec![round]));
                *chain = next;
                s.callers[i] = match step {
                    FinishStep::Prompt { state, .. } => {
                        s.tokens[i] = Some(state);
                        Caller::Prompted
                    }
                    _ => Caller::Done,
                };
                self.end(&mut s, call_id(i, i));
            }
            Action::Complete(i) => {
                let completed = match s.chains[i].as_mut() {
                    None => true,
                    Some(chain) => {
                        let (next, step) = decide_finish(chain, now, &RoundEnd::Completed);
                        *chain = next;
                        step == FinishStep::Pass { completed: true }
                    }
                };
                if completed {
                    s.completions[i] += 1;
                    if s.chains[i].is_some() {
                        s.mrtr_completions += 1;
                    }
                }
                s.callers[i] = Caller::Done;
                self.end(&mut s, call_id(i, i));
            }
            Action::Fail(i) => {
                if let Some(chain) = s.chains[i].as_mut() {
                    *chain = decide_finish(chain, now, &RoundEnd::Failed).0;
                }
                s.callers[i] = Caller::Done;
                self.end(&mut s, call_id(i, i));
            }
            Action::Retry { owner, by } => {
                let token = s.tokens[owner]?;
                let call = call_id(owner, by);
                let Some(epoch) = self.admit(&mut s, call) else {
                    return Some(s);
                };
                let serving = s.server.epoch();
                let chain = s.chains[owner].as_mut()?;
                let resume = Resume {
                    state: token,
                    principal: PRINCIPALS[by],
                    method: InputMethod::ToolsCall,
                    request: REQUESTS[owner],
                    serving_epoch: serving,
                    answer: Some(vec![token.round]),
                };
                // The server's own decision on a retry (the function `server::mrtr` carries out).
                let (next, step) = decide_resume(chain, now, resume);
                *chain = next;
                match step {
                    ResumeStep::Dispatch => {
                        s.foreign_principal_dispatch |= by != owner;
                        s.old_epoch_dispatch |= token.epoch != serving;
                        if by == owner {
                            s.callers[owner] = Caller::Running(epoch);
                            return Some(s);
                        }
                        // A thief's handler: let it finish at once so the model stays small.
                        let (next, step) = decide_finish(chain, now, &RoundEnd::Completed);
                        *chain = next;
                        if step == (FinishStep::Pass { completed: true }) {
                            s.completions[owner] += 1;
                        }
                    }
                    ResumeStep::Recover => s.recovery_seen = true,
                    ResumeStep::Reject(Some(ChainRejection::OldEpoch)) => {
                        s.old_epoch_rejected = true
                    }
                    // Asked again, or refused for another reason: the call just ends.
                    ResumeStep::AskAgain { .. } | ResumeStep::Reject(_) => {}
                    // A decision this model does not know yet must not pass unnoticed.
                    other => panic!("unmodelled resume decision {other:?}"),
                }
                self.end(&mut s, call);
            }
            Action::Shutdown => {
                s.shutdown_started = true;
                let fx = s.server.handle(now, EpochEvent::Shutdown { budget_ms: 1 });
                let _ = self.apply_server(&mut s, fx.0);
            }
            Action::Advance => {
                s.now = Tick(now.0 + 1);
                for chain in s.chains.iter_mut().flatten() {
                    let _ = chain.handle_timeout(s.now);
                }
                let fx = s.server.handle_timeout(s.now);
                let _ = self.apply_server(&mut s, fx.0);
            }
            Action::StartSuccessor => {
                // The stopped instance stays stopped; a new one takes over its store and keys.
                s.server = Lifecycle::with_faults(s.server.epoch(), self.epoch_faults);
                s.successor = true;
                s.shutdown_started = false;
            }
            Action::NotifyChain(i) => {
                let epoch = s.server.epoch();
                let _ = s.chains[i]
                    .as_mut()?
                    .handle(now, LedgerEvent::EpochBumped(epoch));
            }
            Action::AckStream => {
                let support = ServerSupport {
                    tools_list_changed: true,
                    ..ServerSupport::default()
                };
                let fx = s.stream.handle(now, ListenEvent::Acknowledge(support));
                s.stream_log.extend(fx.0);
            }
            Action::ToolsChanged => {
                let fx = s
                    .stream
                    .handle(now, ListenEvent::Change(Change::ToolsListChanged));
                s.stream_log.extend(fx.0);
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
                "I7: a resumed chain always carries the principal that started it",
                |_, s: &State| !s.foreign_principal_dispatch,
            ),
            Property::always(
                "O5: no dispatch of state from an old serving epoch",
                |_, s: &State| !s.old_epoch_dispatch,
            ),
            Property::always(
                "O53: each call's operation completes at most once",
                |_, s: &State| s.completions.iter().all(|c| *c <= 1),
            ),
            Property::always(
                "K3: no notification precedes the acknowledgement",
                |_, s: &State| {
                    !matches!(
                        s.stream_log.first(),
                        Some(ListenEffect::SendNotification { .. })
                    )
                },
            ),
            Property::always("O6: shutdown closes the listen stream", |_, s: &State| {
                !s.shutdown_started || !s.stream.is_open()
            }),
            Property::sometimes("O54: both callers complete through MRTR", |_, s: &State| {
                s.mrtr_completions == 2
            }),
            Property::sometimes("O5: cleanup_failed is reachable", |_, s: &State| {
                s.cleanup_failed_seen
            }),
            Property::sometimes(
                "O53: recovery-only dispatch is reachable",
                |_, s: &State| s.recovery_seen,
            ),
            Property::sometimes("O5: shutdown kills outstanding state", |_, s: &State| {
                s.old_epoch_rejected
            }),
            Property::sometimes(
                "O6/K10: a listen stream gets its closing result",
                |_, s: &State| {
                    s.stream_log
                        .iter()
                        .any(|e| matches!(e, ListenEffect::SendClosingResult { .. }))
                },
            ),
        ]
    }
}

fn model(ledger_faults: LedgerFaults, epoch_faults: EpochFaults) -> CombinedModel {
    if common::deep() {
        CombinedModel {
            ledger_faults,
            epoch_faults,
            max_prompts: 3,
            max_now: 3,
            ttl: 2,
        }
    } else {
        CombinedModel {
            ledger_faults,
            epoch_faults,
            max_prompts: 2,
            max_now: 2,
            ttl: 2,
        }
    }
}

/// Pinned so an unintended change to the machines or the model shows up as a diff here.
const PINNED_COMBINED_STATES: usize = 84_774;

#[test]
fn combined_model_holds_all_properties() {
    let checker = common::explore(
        "combined",
        model(LedgerFaults::default(), EpochFaults::default()),
    );
    checker.assert_properties();
    if !common::deep() {
        assert_eq!(checker.unique_state_count(), PINNED_COMBINED_STATES);
    }
}

#[test]
fn combined_planted_skip_principal_check_is_caught() {
    let faults = LedgerFaults {
        skip_principal_check: true,
        ..LedgerFaults::default()
    };
    common::hunt(
        "combined skip_principal_check",
        model(faults, EpochFaults::default()),
        "I7: a resumed chain always carries the principal that started it",
    );
}

#[test]
fn combined_planted_skip_epoch_check_is_caught() {
    let faults = LedgerFaults {
        skip_epoch_check: true,
        ..LedgerFaults::default()
    };
    common::hunt(
        "combined skip_epoch_check",
        model(faults, EpochFaults::default()),
        "O5: no dispatch of state from an old serving epoch",
    );
}

#[test]
fn combined_planted_admit_after_shutdown_is_caught() {
    let faults = EpochFaults {
        admit_after_shutdown: true,
    };
    common::hunt(
        "combined admit_after_shutdown",
        model(LedgerFaults::default(), faults),
        "O5: no admission after shutdown starts",
    );
}
