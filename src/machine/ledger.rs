//! The continuation ledger for multi round-trip requests (MRTR): one [`Chain`] per interaction.
//!
//! A chain starts when a handler asks for input and ends completed, failed, expired or
//! invalidated. Each prompt issues a [`RequestState`]: ids and digests that
//! bind the round to the principal, the method, the salient parameters (tool name plus exact
//! argument bytes), the round number, an expiry tick, the serving epoch and the chain id.
//! `core::seal` seals that struct into the opaque `requestState` token; the chain itself lives in
//! a `core::store::LedgerStore`, so the token is only a pointer plus a tamper-proof binding.
//!
//! # Calling-order contract
//!
//! 1. The first handler invocation of a call runs with no chain. When it asks for input, the core
//!    creates `Chain::new(id, binding, epoch, config)` (phase `Running { round: 0 }`) with a fresh
//!    random id and feeds it [`LedgerEvent::HandlerAsked`]; the returned
//!    [`LedgerEffect::Prompt`] is sealed and sent as the `InputRequiredResult`.
//! 2. A retry opens the token and feeds [`LedgerEvent::Resume`] with the *current* caller, request
//!    digest and serving epoch. Only [`LedgerEffect::Dispatch`] allows the core to run the
//!    operation (with [`Chain::answers`]); [`LedgerEffect::DispatchRecovery`] allows only a
//!    recovery-mode invocation (`Invocation::is_recovery()`), whose outcome is *not* fed back.
//! 3. After a `Dispatch`, exactly one of `HandlerAsked`, `HandlerCompleted` or `HandlerFailed`
//!    reports how the handler ended.
//! 4. [`LedgerEvent::EpochBumped`] may arrive at any time (shutdown); resumes also carry the
//!    serving epoch, so a chain that never heard of the bump still refuses old state.
//! 5. Store writes must be compare-and-swap on the previous chain value, so two concurrent
//!    resumes of one round cannot both be dispatched.
//!
//! Why a chain per interaction rather than one ledger object: chains are independent, a shared
//! store can hold them as separate records, and a model can compose as many as it needs.
//!
//! # Example: one round, as the core drives it
//!
//! ```
//! use strict_mcp::core::seal::{open, principal_digest, request_digest, seal, KeyRing, SealKey};
//! use strict_mcp::machine::ledger::*;
//! use strict_mcp::machine::{Epoch, Tick};
//!
//! let ring = KeyRing::new(SealKey::new(1, [7; 32]));
//! let principal = principal_digest(b"alice");
//! let request = request_digest(InputMethod::ToolsCall, "deploy", br#"{"env":"prod"}"#);
//! let binding = Binding { principal, method: InputMethod::ToolsCall, request };
//!
//! // The first invocation asks for input: create the chain and issue round 1.
//! let mut chain = Chain::new(ChainId([1; 16]), binding, Epoch(0), LedgerConfig::default());
//! let LedgerEffect::Prompt { state, .. } =
//!     chain.handle(Tick(0), LedgerEvent::HandlerAsked { prompt: br#"{"input":{}}"#.to_vec() })
//! else { unreachable!() };
//! let token = seal(&ring, [0; 12], &state); // nonce: 12 random bytes from the core
//!
//! // The retry: open the token, then let the chain decide.
//! let resume = Resume {
//!     state: open(&ring, &token).expect("our own token"),
//!     principal,
//!     method: InputMethod::ToolsCall,
//!     request,
//!     serving_epoch: Epoch(0),
//!     answer: Some(br#"{"action":"accept","content":{}}"#.to_vec()),
//! };
//! assert_eq!(chain.handle(Tick(5), LedgerEvent::Resume(resume)), LedgerEffect::Dispatch { round: 1 });
//! assert_eq!(chain.answers().len(), 1); // exact bytes, handed to the handler
//! assert_eq!(chain.handle(Tick(9), LedgerEvent::HandlerCompleted), LedgerEffect::Completed);
//! ```

use super::{Digest, Epoch, Tick};

/// Answers one chain may collect: the 10th answer may complete the operation, and an
/// attempted 11th prompt fails with `interaction_limit`.
pub const MAX_ROUNDS: u8 = 10;

/// Default lifetime of one issued `requestState` ("a short expiry").
pub const DEFAULT_STATE_TTL_MS: u64 = 10 * 60 * 1000;

/// The only methods that may return an `InputRequiredResult`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum InputMethod {
    /// `tools/call`
    ToolsCall,
    /// `resources/read`
    ResourcesRead,
    /// `prompts/get`
    PromptsGet,
}

impl InputMethod {
    /// The JSON-RPC method name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            InputMethod::ToolsCall => "tools/call",
            InputMethod::ResourcesRead => "resources/read",
            InputMethod::PromptsGet => "prompts/get",
        }
    }

    /// Stable one-byte code used inside sealed tokens.
    #[must_use]
    pub const fn code(self) -> u8 {
        match self {
            InputMethod::ToolsCall => 1,
            InputMethod::ResourcesRead => 2,
            InputMethod::PromptsGet => 3,
        }
    }

    /// Inverse of [`InputMethod::code`].
    #[must_use]
    pub const fn from_code(code: u8) -> Option<InputMethod> {
        match code {
            1 => Some(InputMethod::ToolsCall),
            2 => Some(InputMethod::ResourcesRead),
            3 => Some(InputMethod::PromptsGet),
            _ => None,
        }
    }
}

/// Random chain id (16 bytes from the core's entropy source; the machine never draws it).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ChainId(pub [u8; 16]);

impl core::fmt::Debug for ChainId {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "ChainId(")?;
        for b in &self.0[..4] {
            write!(f, "{b:02x}")?;
        }
        write!(f, "…)")
    }
}

/// What a chain is bound to for its whole life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Binding {
    /// Digest of the principal that started the chain.
    pub principal: Digest,
    /// The originating method.
    pub method: InputMethod,
    /// Digest of the salient parameters (tool name / URI / prompt name plus exact argument bytes).
    pub request: Digest,
}

/// The content of one `requestState` token, before sealing. Ids and digests only: never answers,
/// never argument bytes (the sealed token is attacker-visible ciphertext).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RequestState {
    /// The chain this round belongs to.
    pub chain: ChainId,
    /// Principal digest the chain is bound to.
    pub principal: Digest,
    /// Originating method.
    pub method: InputMethod,
    /// Digest of the originating request's salient parameters.
    pub request: Digest,
    /// Which prompt this token answers (1-based).
    pub round: u8,
    /// The token is dead from this tick on.
    pub expires: Tick,
    /// Serving epoch the token was issued under.
    pub epoch: Epoch,
}

/// Planted bugs for the stateright models. Compiled only with feature `model`; all off by default.
#[cfg(feature = "model")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LedgerFaults {
    /// Accept state from an older serving epoch.
    pub skip_epoch_check: bool,
    /// Accept a resume from a principal other than the one that started the chain.
    pub skip_principal_check: bool,
    /// Allow an 11th prompt instead of failing with `interaction_limit`.
    pub allow_eleventh_prompt: bool,
    /// Run the operation again when a completed chain is replayed.
    pub rerun_completed_replay: bool,
}

/// Per-chain configuration, copied into the chain so a stored record is self-contained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LedgerConfig {
    /// Lifetime of each issued `requestState`, in milliseconds.
    pub state_ttl_ms: u64,
    /// Planted bugs (model builds only).
    #[cfg(feature = "model")]
    pub faults: LedgerFaults,
}

impl LedgerConfig {
    /// A configuration with this state lifetime. Prefer this over a struct literal: model builds
    /// add a `faults` field that normal builds do not have.
    #[must_use]
    pub fn with_ttl(state_ttl_ms: u64) -> LedgerConfig {
        LedgerConfig {
            state_ttl_ms,
            #[cfg(feature = "model")]
            faults: LedgerFaults::default(),
        }
    }
}

impl Default for LedgerConfig {
    fn default() -> Self {
        LedgerConfig::with_ttl(DEFAULT_STATE_TTL_MS)
    }
}

/// Where a chain stands. Each variant is named for what it waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// A handler invocation is running after `round` answers (0 = the first invocation).
    Running {
        /// Answers collected so far.
        round: u8,
    },
    /// Prompt number `round` was issued and waits for its answer until `expires`.
    AwaitingAnswer {
        /// Prompts issued so far (the pending one included).
        round: u8,
        /// Expiry of the pending prompt's state.
        expires: Tick,
    },
    /// The operation ran to completion; replays get recovery-only dispatch.
    Completed,
    /// The chain failed (handler failure or `interaction_limit`).
    Failed,
    /// The pending prompt expired unanswered.
    Expired,
    /// The serving epoch moved on (shutdown). `running` is true while a handler that started
    /// before the bump has not reported back yet.
    Invalidated {
        /// A handler is still running.
        running: bool,
    },
}

/// Inputs to a chain.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LedgerEvent {
    /// The running handler asks for input; `prompt` is the exact `inputRequests` JSON to send (and
    /// to send again on a pending replay).
    HandlerAsked {
        /// Exact bytes of the prompt.
        prompt: Vec<u8>,
    },
    /// The running handler produced its final result.
    HandlerCompleted,
    /// The running handler failed (or was cancelled).
    HandlerFailed,
    /// A retry arrived carrying a token of this chain.
    Resume(Resume),
    /// The serving epoch is now `0`: live chains of older epochs die.
    EpochBumped(Epoch),
}

/// A retry as seen by the core after opening its `requestState`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Resume {
    /// The opened token.
    pub state: RequestState,
    /// Digest of the principal making *this* request.
    pub principal: Digest,
    /// Method of *this* request.
    pub method: InputMethod,
    /// Salient-parameter digest of *this* request.
    pub request: Digest,
    /// The server's current serving epoch.
    pub serving_epoch: Epoch,
    /// Exact bytes of the answer under the expected `inputResponses` key; `None` when missing
    /// (the same prompt is then sent again).
    pub answer: Option<Vec<u8>>,
}

/// Why an input was refused. All but [`ChainRejection::Misuse`] reach the client as `state_rejected`:
/// a tool failure inside compact `call_tool`, the JSON-RPC error -32602 on a direct
/// `tools/call`, `resources/read` and `prompts/get`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChainRejection {
    /// The token names another chain than the record it was looked up with.
    ForeignChain,
    /// A different principal than the one that started the chain.
    ForeignPrincipal,
    /// A different method or different salient parameters.
    OtherRequest,
    /// Issued under an older serving epoch.
    OldEpoch,
    /// Expired.
    Expired,
    /// A handler for this chain is running right now (concurrent duplicate retry).
    InFlight,
    /// A round this chain never issued.
    UnknownRound,
    /// The chain already failed.
    AlreadyFailed,
    /// The driver broke the calling-order contract (a bug in our code, never the peer's).
    Misuse(&'static str),
}

impl ChainRejection {
    /// The failure code the core answers with.
    #[must_use]
    pub const fn failure_code(self) -> &'static str {
        match self {
            ChainRejection::Misuse(_) => "internal",
            _ => "state_rejected",
        }
    }
}

/// How a chain failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChainFailure {
    /// The handler asked for an 11th prompt.
    InteractionLimit,
    /// The handler itself failed.
    Handler,
}

impl ChainFailure {
    /// The failure code the core answers with.
    #[must_use]
    pub const fn failure_code(self) -> Option<&'static str> {
        match self {
            ChainFailure::InteractionLimit => Some("interaction_limit"),
            ChainFailure::Handler => None,
        }
    }
}

/// What the driver must do after an event. Exactly one per event.
#[must_use = "a ledger effect tells the core what to send or run"]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LedgerEffect {
    /// Answer with an `InputRequiredResult`: seal `state`, send `prompt`. `replayed` is true when
    /// this repeats the pending prompt instead of issuing a new round.
    Prompt {
        /// Token content to seal.
        state: RequestState,
        /// Exact prompt bytes.
        prompt: Vec<u8>,
        /// A repeat of the pending prompt.
        replayed: bool,
    },
    /// Run the operation with the answers collected so far ([`Chain::answers`]).
    Dispatch {
        /// Number of answers the invocation receives.
        round: u8,
    },
    /// Run the handler in recovery-only mode: it must not repeat side effects.
    DispatchRecovery,
    /// The operation completed; send its result.
    Completed,
    /// The chain failed; send this failure.
    Failed(ChainFailure),
    /// The pending prompt expired (from `handle_timeout`).
    Expired,
    /// An epoch bump killed this chain.
    Invalidated,
    /// The input was refused; the chain is unchanged.
    Rejected(ChainRejection),
    /// Nothing to do.
    Nothing,
}

/// One MRTR interaction. See the module docs for the calling-order contract.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Chain {
    id: ChainId,
    binding: Binding,
    epoch: Epoch,
    config: LedgerConfig,
    phase: Phase,
    /// Prompts issued so far.
    issued: u8,
    /// Exact bytes of the latest prompt (sent again on a pending replay).
    prompt: Vec<u8>,
    /// Exact answer bytes, in round order; never re-serialized.
    answers: Vec<Vec<u8>>,
    /// Expiry of the latest issued token: after it no token of this chain can be accepted.
    last_expires: Tick,
}

impl Chain {
    /// A chain whose first handler invocation is running (phase `Running { round: 0 }`).
    /// `epoch` is the serving epoch the call was admitted under.
    #[must_use]
    pub fn new(id: ChainId, binding: Binding, epoch: Epoch, config: LedgerConfig) -> Chain {
        Chain {
            id,
            binding,
            epoch,
            config,
            phase: Phase::Running { round: 0 },
            issued: 0,
            prompt: Vec::new(),
            answers: Vec::new(),
            last_expires: Tick::ZERO,
        }
    }

    /// The chain id.
    #[must_use]
    pub fn id(&self) -> ChainId {
        self.id
    }

    /// What the chain is bound to.
    #[must_use]
    pub fn binding(&self) -> &Binding {
        &self.binding
    }

    /// Serving epoch the chain was started under.
    #[must_use]
    pub fn epoch(&self) -> Epoch {
        self.epoch
    }

    /// Current phase.
    #[must_use]
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// Prompts issued so far.
    #[must_use]
    pub fn prompts_issued(&self) -> u8 {
        self.issued
    }

    /// Exact bytes of the latest prompt (what a pending replay sends again). The server reads
    /// it to learn which `inputResponses` keys the pending round expects.
    #[must_use]
    pub fn prompt(&self) -> &[u8] {
        &self.prompt
    }

    /// Exact answer bytes collected so far, one per round in order.
    #[must_use]
    pub fn answers(&self) -> &[Vec<u8>] {
        &self.answers
    }

    /// True once the chain can never dispatch or prompt again.
    #[must_use]
    pub fn is_terminal(&self) -> bool {
        matches!(
            self.phase,
            Phase::Completed
                | Phase::Failed
                | Phase::Expired
                | Phase::Invalidated { running: false }
        )
    }

    /// True when a store may drop this record at `now`: nothing is running and no token of it
    /// can still be accepted (its fate after that is decided by the token alone).
    #[must_use]
    pub fn is_disposable(&self, now: Tick) -> bool {
        self.disposable_from()
            .is_some_and(|from| now.has_reached(from))
    }

    /// The first tick at which [`Chain::is_disposable`] holds, `None` while it holds at no tick
    /// (a handler is running). Once reached it holds at every later tick, so a store that knows
    /// the earliest of these over its chains can skip looking for disposable ones before it.
    #[must_use]
    pub fn disposable_from(&self) -> Option<Tick> {
        match self.phase {
            Phase::Running { .. } | Phase::Invalidated { running: true } => None,
            // An unanswered prompt past its expiry can only ever be rejected.
            Phase::AwaitingAnswer { expires, .. } => Some(expires),
            Phase::Invalidated { running: false } | Phase::Expired => Some(Tick::ZERO),
            Phase::Completed | Phase::Failed => Some(self.last_expires),
        }
    }

    /// The next deadline: the pending prompt's expiry.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Tick> {
        match self.phase {
            Phase::AwaitingAnswer { expires, .. } => Some(expires),
            _ => None,
        }
    }

    /// Fire the expiry if it is due. A spurious call does nothing.
    pub fn handle_timeout(&mut self, now: Tick) -> LedgerEffect {
        match self.phase {
            Phase::AwaitingAnswer { expires, .. } if now.has_reached(expires) => {
                self.phase = Phase::Expired;
                LedgerEffect::Expired
            }
            _ => LedgerEffect::Nothing,
        }
    }

    /// Apply one event at `now`.
    pub fn handle(&mut self, now: Tick, event: LedgerEvent) -> LedgerEffect {
        // A due expiry is applied first so that every decision below sees a consistent phase.
        let _ = self.handle_timeout(now);
        match event {
            LedgerEvent::HandlerAsked { prompt } => self.on_asked(now, prompt),
            LedgerEvent::HandlerCompleted => {
                self.on_handler_end(LedgerEffect::Completed, Phase::Completed)
            }
            LedgerEvent::HandlerFailed => {
                self.on_handler_end(LedgerEffect::Failed(ChainFailure::Handler), Phase::Failed)
            }
            LedgerEvent::Resume(resume) => self.on_resume(now, resume),
            LedgerEvent::EpochBumped(epoch) => self.on_epoch(epoch),
        }
    }

    fn limit(&self) -> u8 {
        #[cfg(feature = "model")]
        if self.config.faults.allow_eleventh_prompt {
            return MAX_ROUNDS + 1;
        }
        MAX_ROUNDS
    }

    fn checks_principal(&self) -> bool {
        #[cfg(feature = "model")]
        if self.config.faults.skip_principal_check {
            return false;
        }
        true
    }

    fn checks_epoch(&self) -> bool {
        #[cfg(feature = "model")]
        if self.config.faults.skip_epoch_check {
            return false;
        }
        true
    }

    fn reruns_completed(&self) -> bool {
        #[cfg(feature = "model")]
        if self.config.faults.rerun_completed_replay {
            return true;
        }
        false
    }

    fn current_state(&self) -> RequestState {
        RequestState {
            chain: self.id,
            principal: self.binding.principal,
            method: self.binding.method,
            request: self.binding.request,
            round: self.issued,
            expires: self.last_expires,
            epoch: self.epoch,
        }
    }

    fn on_asked(&mut self, now: Tick, prompt: Vec<u8>) -> LedgerEffect {
        match self.phase {
            Phase::Running { round } => {
                if round >= self.limit() {
                    // O54: the 11th prompt is never issued.
                    self.phase = Phase::Failed;
                    return LedgerEffect::Failed(ChainFailure::InteractionLimit);
                }
                let expires = now.saturating_add(self.config.state_ttl_ms);
                self.issued = round + 1;
                self.last_expires = expires;
                self.prompt = prompt;
                self.phase = Phase::AwaitingAnswer {
                    round: self.issued,
                    expires,
                };
                LedgerEffect::Prompt {
                    state: self.current_state(),
                    prompt: self.prompt.clone(),
                    replayed: false,
                }
            }
            Phase::Invalidated { running: true } => {
                // The epoch died while the handler ran: no new round may be issued under it.
                self.phase = Phase::Invalidated { running: false };
                LedgerEffect::Rejected(ChainRejection::OldEpoch)
            }
            _ => LedgerEffect::Rejected(ChainRejection::Misuse(
                "handler event while no handler runs",
            )),
        }
    }

    fn on_handler_end(&mut self, effect: LedgerEffect, next: Phase) -> LedgerEffect {
        match self.phase {
            Phase::Running { .. } => {
                self.phase = next;
                effect
            }
            Phase::Invalidated { running: true } => {
                // The call was admitted before shutdown; its own result is still delivered, but
                // the chain stays dead for every later replay.
                self.phase = Phase::Invalidated { running: false };
                effect
            }
            _ => LedgerEffect::Rejected(ChainRejection::Misuse(
                "handler event while no handler runs",
            )),
        }
    }

    fn on_epoch(&mut self, epoch: Epoch) -> LedgerEffect {
        if epoch <= self.epoch {
            return LedgerEffect::Nothing;
        }
        match self.phase {
            Phase::Running { .. } => {
                self.phase = Phase::Invalidated { running: true };
                LedgerEffect::Invalidated
            }
            Phase::AwaitingAnswer { .. } => {
                self.phase = Phase::Invalidated { running: false };
                LedgerEffect::Invalidated
            }
            // Terminal chains stay as they are: their tokens fail the epoch check on replay.
            _ => LedgerEffect::Nothing,
        }
    }

    fn on_resume(&mut self, now: Tick, r: Resume) -> LedgerEffect {
        let s = r.state;
        if s.chain != self.id {
            return LedgerEffect::Rejected(ChainRejection::ForeignChain);
        }
        // Binding checks come before anything phase-related so a foreign caller learns nothing
        // about the chain's progress.
        if self.checks_principal()
            && (r.principal != self.binding.principal || s.principal != self.binding.principal)
        {
            return LedgerEffect::Rejected(ChainRejection::ForeignPrincipal);
        }
        if r.method != self.binding.method
            || s.method != self.binding.method
            || r.request != self.binding.request
            || s.request != self.binding.request
        {
            return LedgerEffect::Rejected(ChainRejection::OtherRequest);
        }
        if matches!(self.phase, Phase::Invalidated { .. })
            || (self.checks_epoch()
                && (s.epoch != r.serving_epoch || self.epoch != r.serving_epoch))
        {
            return LedgerEffect::Rejected(ChainRejection::OldEpoch);
        }
        if now.has_reached(s.expires) {
            return LedgerEffect::Rejected(ChainRejection::Expired);
        }
        if s.round == 0 || s.round > self.issued {
            return LedgerEffect::Rejected(ChainRejection::UnknownRound);
        }
        match self.phase {
            Phase::AwaitingAnswer { round, .. } => match r.answer {
                Some(answer) if s.round == round => {
                    self.answers.push(answer);
                    self.phase = Phase::Running { round };
                    LedgerEffect::Dispatch { round }
                }
                // A missing answer (X5) or a replay of an earlier, already answered round: the
                // operation does not run; the pending prompt goes out again unchanged (O53).
                _ => LedgerEffect::Prompt {
                    state: self.current_state(),
                    prompt: self.prompt.clone(),
                    replayed: true,
                },
            },
            Phase::Running { .. } => LedgerEffect::Rejected(ChainRejection::InFlight),
            Phase::Completed => {
                if self.reruns_completed() {
                    let round = self.issued;
                    self.phase = Phase::Running { round };
                    return LedgerEffect::Dispatch { round };
                }
                LedgerEffect::DispatchRecovery
            }
            Phase::Failed => LedgerEffect::Rejected(ChainRejection::AlreadyFailed),
            Phase::Expired => LedgerEffect::Rejected(ChainRejection::Expired),
            Phase::Invalidated { .. } => LedgerEffect::Rejected(ChainRejection::OldEpoch),
        }
    }
}

/// Every field of a [`Chain`], in the open: what a shared store serialises between rounds.
///
/// [`Chain::from_record`] checks the invariants the machine relies on, so a record read back
/// from outside the process (possibly corrupted) cannot produce a chain the machine never could.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ChainRecord {
    /// The chain id.
    pub id: ChainId,
    /// What the chain is bound to.
    pub binding: Binding,
    /// Serving epoch the chain was started under.
    pub epoch: Epoch,
    /// Per-chain configuration.
    pub config: LedgerConfig,
    /// Current phase.
    pub phase: Phase,
    /// Prompts issued so far.
    pub issued: u8,
    /// Exact bytes of the latest prompt.
    pub prompt: Vec<u8>,
    /// Exact answer bytes, in round order.
    pub answers: Vec<Vec<u8>>,
    /// Expiry of the latest issued token.
    pub last_expires: Tick,
}

/// A [`ChainRecord`] that no sequence of events could have produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("inconsistent chain record: {0}")]
pub struct RecordError(pub &'static str);

impl Chain {
    /// All fields, for serialisation by a shared store.
    #[must_use]
    pub fn to_record(&self) -> ChainRecord {
        ChainRecord {
            id: self.id,
            binding: self.binding,
            epoch: self.epoch,
            config: self.config,
            phase: self.phase,
            issued: self.issued,
            prompt: self.prompt.clone(),
            answers: self.answers.clone(),
            last_expires: self.last_expires,
        }
    }

    /// Rebuilds a chain from [`Chain::to_record`]'s output, refusing records that break the
    /// machine's invariants (round counts beyond [`MAX_ROUNDS`], more answers than prompts).
    pub fn from_record(r: ChainRecord) -> Result<Chain, RecordError> {
        if r.issued > MAX_ROUNDS {
            return Err(RecordError("more prompts than the round limit"));
        }
        if r.answers.len() > usize::from(r.issued) {
            return Err(RecordError("more answers than prompts"));
        }
        match r.phase {
            Phase::Running { round } if usize::from(round) != r.answers.len() => {
                return Err(RecordError("running round differs from the answers kept"));
            }
            Phase::AwaitingAnswer { round, .. }
                if round != r.issued || r.answers.len() + 1 != usize::from(round) =>
            {
                return Err(RecordError("pending round differs from the prompts issued"));
            }
            _ => {}
        }
        Ok(Chain {
            id: r.id,
            binding: r.binding,
            epoch: r.epoch,
            config: r.config,
            phase: r.phase,
            issued: r.issued,
            prompt: r.prompt,
            answers: r.answers,
            last_expires: r.last_expires,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALICE: Digest = Digest([1; 32]);
    const BOB: Digest = Digest([2; 32]);
    const REQ: Digest = Digest([7; 32]);
    const OTHER_REQ: Digest = Digest([8; 32]);
    const ID: ChainId = ChainId([9; 16]);
    const TTL: u64 = 1_000;

    fn chain() -> Chain {
        let config = LedgerConfig::with_ttl(TTL);
        Chain::new(
            ID,
            Binding {
                principal: ALICE,
                method: InputMethod::ToolsCall,
                request: REQ,
            },
            Epoch(0),
            config,
        )
    }

    fn ask(c: &mut Chain, now: u64) -> RequestState {
        match c.handle(
            Tick(now),
            LedgerEvent::HandlerAsked {
                prompt: b"{\"input\":1}".to_vec(),
            },
        ) {
            LedgerEffect::Prompt {
                state,
                replayed: false,
                ..
            } => state,
            other => panic!("expected a new prompt, got {other:?}"),
        }
    }

    fn resume(state: RequestState, answer: Option<&[u8]>) -> LedgerEvent {
        LedgerEvent::Resume(Resume {
            state,
            principal: ALICE,
            method: InputMethod::ToolsCall,
            request: REQ,
            serving_epoch: Epoch(0),
            answer: answer.map(<[u8]>::to_vec),
        })
    }

    #[test]
    fn i7_o52_first_prompt_binds_principal_request_round_expiry_epoch_and_chain() {
        let mut c = chain();
        let s = ask(&mut c, 100);
        assert_eq!(
            s,
            RequestState {
                chain: ID,
                principal: ALICE,
                method: InputMethod::ToolsCall,
                request: REQ,
                round: 1,
                expires: Tick(100 + TTL),
                epoch: Epoch(0),
            }
        );
        assert_eq!(
            c.phase(),
            Phase::AwaitingAnswer {
                round: 1,
                expires: Tick(1_100)
            }
        );
        assert_eq!(c.poll_timeout(), Some(Tick(1_100)));
    }

    #[test]
    fn o56_answer_bytes_are_kept_exactly_and_dispatched() {
        let mut c = chain();
        let s = ask(&mut c, 0);
        let exact =
            b"{\"action\":\"accept\",\"content\":{\"n\":12345678901234567890123, \"x\" : 1.0e0}}";
        assert_eq!(
            c.handle(Tick(1), resume(s, Some(exact))),
            LedgerEffect::Dispatch { round: 1 }
        );
        assert_eq!(c.answers(), &[exact.to_vec()]);
        assert_eq!(
            c.handle(Tick(2), LedgerEvent::HandlerCompleted),
            LedgerEffect::Completed
        );
        assert_eq!(c.phase(), Phase::Completed);
    }

    #[test]
    fn i7_foreign_principal_is_rejected_even_with_a_valid_token() {
        let mut c = chain();
        let s = ask(&mut c, 0);
        let mut ev = resume(s, Some(b"{}"));
        if let LedgerEvent::Resume(r) = &mut ev {
            r.principal = BOB;
        }
        assert_eq!(
            c.handle(Tick(1), ev),
            LedgerEffect::Rejected(ChainRejection::ForeignPrincipal)
        );
        assert!(matches!(c.phase(), Phase::AwaitingAnswer { .. }));
    }

    #[test]
    fn i7_other_request_is_rejected() {
        let mut c = chain();
        let s = ask(&mut c, 0);
        let mut ev = resume(s, Some(b"{}"));
        if let LedgerEvent::Resume(r) = &mut ev {
            r.request = OTHER_REQ;
        }
        assert_eq!(
            c.handle(Tick(1), ev.clone()),
            LedgerEffect::Rejected(ChainRejection::OtherRequest)
        );
        if let LedgerEvent::Resume(r) = &mut ev {
            r.request = REQ;
            r.method = InputMethod::PromptsGet;
        }
        assert_eq!(
            c.handle(Tick(1), ev),
            LedgerEffect::Rejected(ChainRejection::OtherRequest)
        );
    }

    #[test]
    fn i7_expired_state_is_rejected_and_the_chain_expires() {
        let mut c = chain();
        let s = ask(&mut c, 0);
        assert_eq!(
            c.handle(Tick(TTL), resume(s, Some(b"{}"))),
            LedgerEffect::Rejected(ChainRejection::Expired)
        );
        assert_eq!(c.phase(), Phase::Expired);
        assert!(c.is_disposable(Tick(TTL)));
    }

    #[test]
    fn handle_timeout_is_spurious_safe_and_fires_when_due() {
        let mut c = chain();
        let _ = ask(&mut c, 0);
        assert_eq!(c.handle_timeout(Tick(TTL - 1)), LedgerEffect::Nothing);
        assert_eq!(c.handle_timeout(Tick(TTL)), LedgerEffect::Expired);
        assert_eq!(c.handle_timeout(Tick(TTL + 5)), LedgerEffect::Nothing);
        assert_eq!(c.poll_timeout(), None);
    }

    #[test]
    fn time_going_backwards_never_expires_early_or_panics() {
        let mut c = chain();
        let s = ask(&mut c, 500);
        // The clock jumps back to 0: nothing fires, the answer is still accepted.
        assert_eq!(c.handle_timeout(Tick(0)), LedgerEffect::Nothing);
        assert_eq!(
            c.handle(Tick(0), resume(s, Some(b"{}"))),
            LedgerEffect::Dispatch { round: 1 }
        );
        // An expiry at the far future saturates instead of overflowing.
        let mut far = chain();
        let s = ask(&mut far, u64::MAX - 1);
        assert_eq!(s.expires, Tick(u64::MAX));
    }

    #[test]
    fn o5_old_epoch_state_is_rejected_even_if_the_chain_missed_the_bump() {
        let mut c = chain();
        let s = ask(&mut c, 0);
        let mut ev = resume(s, Some(b"{}"));
        if let LedgerEvent::Resume(r) = &mut ev {
            r.serving_epoch = Epoch(1);
        }
        assert_eq!(
            c.handle(Tick(1), ev),
            LedgerEffect::Rejected(ChainRejection::OldEpoch)
        );
    }

    #[test]
    fn o5_epoch_bump_invalidates_pending_and_running_chains() {
        let mut c = chain();
        let s = ask(&mut c, 0);
        assert_eq!(
            c.handle(Tick(1), LedgerEvent::EpochBumped(Epoch(1))),
            LedgerEffect::Invalidated
        );
        assert_eq!(
            c.handle(Tick(2), resume(s, Some(b"{}"))),
            LedgerEffect::Rejected(ChainRejection::OldEpoch)
        );
        assert!(c.is_terminal());

        let mut running = chain();
        let s = ask(&mut running, 0);
        assert_eq!(
            running.handle(Tick(1), resume(s, Some(b"{}"))),
            LedgerEffect::Dispatch { round: 1 }
        );
        assert_eq!(
            running.handle(Tick(2), LedgerEvent::EpochBumped(Epoch(1))),
            LedgerEffect::Invalidated
        );
        assert!(
            !running.is_disposable(Tick(2)),
            "a running handler keeps the record alive"
        );
        // The handler may not open a new round under the dead epoch…
        assert_eq!(
            running.handle(Tick(3), LedgerEvent::HandlerAsked { prompt: vec![] }),
            LedgerEffect::Rejected(ChainRejection::OldEpoch)
        );
        assert_eq!(running.phase(), Phase::Invalidated { running: false });
        // …and a stale bump does nothing.
        assert_eq!(
            running.handle(Tick(4), LedgerEvent::EpochBumped(Epoch(0))),
            LedgerEffect::Nothing
        );
    }

    #[test]
    fn o5_handler_admitted_before_the_bump_still_delivers_its_result() {
        let mut c = chain();
        let s = ask(&mut c, 0);
        let _ = c.handle(Tick(1), resume(s, Some(b"{}")));
        let _ = c.handle(Tick(2), LedgerEvent::EpochBumped(Epoch(1)));
        assert_eq!(
            c.handle(Tick(3), LedgerEvent::HandlerCompleted),
            LedgerEffect::Completed
        );
        assert_eq!(c.phase(), Phase::Invalidated { running: false });
    }

    #[test]
    fn o53_pending_replay_without_answer_returns_the_same_prompt() {
        let mut c = chain();
        let s = ask(&mut c, 0);
        let again = c.handle(Tick(1), resume(s, None));
        assert_eq!(
            again,
            LedgerEffect::Prompt {
                state: s,
                prompt: b"{\"input\":1}".to_vec(),
                replayed: true
            }
        );
        assert!(c.answers().is_empty());
    }

    #[test]
    fn o53_replay_of_an_answered_round_returns_the_pending_prompt_without_running() {
        let mut c = chain();
        let s1 = ask(&mut c, 0);
        let _ = c.handle(Tick(1), resume(s1, Some(b"1")));
        let s2 = ask(&mut c, 2);
        assert_eq!(
            c.handle(Tick(3), resume(s1, Some(b"1"))),
            LedgerEffect::Prompt {
                state: s2,
                prompt: b"{\"input\":1}".to_vec(),
                replayed: true
            }
        );
        assert_eq!(c.answers().len(), 1);
    }

    #[test]
    fn concurrent_duplicate_resume_is_in_flight() {
        let mut c = chain();
        let s = ask(&mut c, 0);
        assert_eq!(
            c.handle(Tick(1), resume(s, Some(b"1"))),
            LedgerEffect::Dispatch { round: 1 }
        );
        assert_eq!(
            c.handle(Tick(1), resume(s, Some(b"1"))),
            LedgerEffect::Rejected(ChainRejection::InFlight)
        );
    }

    #[test]
    fn o53_completed_replay_enters_recovery_only_dispatch_forever() {
        let mut c = chain();
        let s = ask(&mut c, 0);
        let _ = c.handle(Tick(1), resume(s, Some(b"1")));
        let _ = c.handle(Tick(2), LedgerEvent::HandlerCompleted);
        for t in 3..6 {
            assert_eq!(
                c.handle(Tick(t), resume(s, Some(b"1"))),
                LedgerEffect::DispatchRecovery
            );
        }
        assert_eq!(c.phase(), Phase::Completed);
        // Recovery outcomes are not fed back; doing so is a contract violation, not a transition.
        assert!(matches!(
            c.handle(Tick(7), LedgerEvent::HandlerCompleted),
            LedgerEffect::Rejected(ChainRejection::Misuse(_))
        ));
        assert!(
            !c.is_disposable(Tick(TTL - 1)),
            "kept while its last token can still be replayed"
        );
        assert!(c.is_disposable(Tick(TTL)));
    }

    #[test]
    fn o54_tenth_answer_may_complete() {
        let mut c = chain();
        for round in 1..=MAX_ROUNDS {
            let s = ask(&mut c, u64::from(round));
            assert_eq!(s.round, round);
            let answer = [round];
            assert_eq!(
                c.handle(Tick(u64::from(round)), resume(s, Some(&answer))),
                LedgerEffect::Dispatch { round }
            );
        }
        assert_eq!(c.answers().len(), usize::from(MAX_ROUNDS));
        assert_eq!(
            c.handle(Tick(20), LedgerEvent::HandlerCompleted),
            LedgerEffect::Completed
        );
    }

    #[test]
    fn o54_eleventh_prompt_is_interaction_limit() {
        let mut c = chain();
        for round in 1..=MAX_ROUNDS {
            let s = ask(&mut c, 0);
            let _ = c.handle(Tick(0), resume(s, Some(&[round])));
        }
        assert_eq!(
            c.handle(Tick(1), LedgerEvent::HandlerAsked { prompt: vec![] }),
            LedgerEffect::Failed(ChainFailure::InteractionLimit)
        );
        assert_eq!(c.phase(), Phase::Failed);
        assert_eq!(
            ChainFailure::InteractionLimit.failure_code(),
            Some("interaction_limit")
        );
    }

    #[test]
    fn failed_chain_rejects_replays_and_unknown_rounds_are_rejected() {
        let mut c = chain();
        let s = ask(&mut c, 0);
        let mut forged = s;
        forged.round = 2;
        assert_eq!(
            c.handle(Tick(1), resume(forged, Some(b"1"))),
            LedgerEffect::Rejected(ChainRejection::UnknownRound)
        );
        let _ = c.handle(Tick(1), resume(s, Some(b"1")));
        assert_eq!(
            c.handle(Tick(2), LedgerEvent::HandlerFailed),
            LedgerEffect::Failed(ChainFailure::Handler)
        );
        assert_eq!(
            c.handle(Tick(3), resume(s, Some(b"1"))),
            LedgerEffect::Rejected(ChainRejection::AlreadyFailed)
        );
    }

    #[test]
    fn foreign_chain_token_is_rejected() {
        let mut c = chain();
        let mut s = ask(&mut c, 0);
        s.chain = ChainId([0; 16]);
        assert_eq!(
            c.handle(Tick(1), resume(s, Some(b"1"))),
            LedgerEffect::Rejected(ChainRejection::ForeignChain)
        );
    }

    #[test]
    fn handler_events_without_a_running_handler_are_misuse() {
        let mut c = chain();
        let _ = ask(&mut c, 0);
        assert!(matches!(
            c.handle(Tick(1), LedgerEvent::HandlerCompleted),
            LedgerEffect::Rejected(ChainRejection::Misuse(_))
        ));
        assert!(matches!(
            c.handle(Tick(1), LedgerEvent::HandlerFailed),
            LedgerEffect::Rejected(ChainRejection::Misuse(_))
        ));
        assert!(matches!(
            c.handle(Tick(1), LedgerEvent::HandlerAsked { prompt: vec![] }),
            LedgerEffect::Rejected(ChainRejection::Misuse(_))
        ));
        assert_eq!(ChainRejection::Misuse("x").failure_code(), "internal");
        assert_eq!(ChainRejection::OldEpoch.failure_code(), "state_rejected");
    }

    #[test]
    fn method_codes_round_trip() {
        for m in [
            InputMethod::ToolsCall,
            InputMethod::ResourcesRead,
            InputMethod::PromptsGet,
        ] {
            assert_eq!(InputMethod::from_code(m.code()), Some(m));
        }
        assert_eq!(InputMethod::from_code(0), None);
        assert_eq!(InputMethod::ToolsCall.as_str(), "tools/call");
    }
}
