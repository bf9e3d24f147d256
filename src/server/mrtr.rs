//! Multi round-trip requests: the core's `InputRequired` outcome bound to
//! the continuation ledger ([`Chain`]), sealed `requestState` tokens and the [`LedgerStore`].
//!
//! * First call: the handler runs with no chain. If it asks for input, a chain is created under
//!   the serving epoch the call was admitted with, stored, and its state sealed.
//! * Retry (`requestState` present): the token is opened, its chain loaded, and the answer to
//!   the pending round checked before the ledger decides: dispatch with every answer the
//!   chain collected (keyed as the handler asked for them), the same prompt again when answers
//!   are missing, recovery-only dispatch for a completed chain, or rejection
//!   (`state_rejected`: tampered, foreign, other request, old epoch, expired).
//! * Answers without a state answer nothing this server asked (every prompt it issues is
//!   sealed): the handler runs as a first invocation without them.
//! * Failures of the answer or the state are tool failures on `tools/call` and JSON-RPC errors
//!   on `resources/read` and `prompts/get`, except that a rejected state on a
//!   direct-mode `tools/call` is the JSON-RPC error -32602 as well.
//!
//! [`LedgerStore`]: crate::core::store::LedgerStore

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::answer::{failure_result, members, Answer};
use super::context::{Continuation, Ctx};
use super::deadline::{within, Expired};
use super::{Cause, PublishMode};
use crate::core::continuation::{decide_finish, decide_resume, FinishStep, ResumeStep, RoundEnd};
use crate::core::seal::{
    open, principal_digest, random_chain_id, random_nonce, request_digest, seal, KeyRing,
};
use crate::core::store::{LedgerStore, StoreError};
use crate::core::{CancelToken, CoreError, FailureCode, InputRequest, Invocation, Outcome};
use crate::machine::ledger::{
    Binding, Chain, ChainId, InputMethod, LedgerConfig, LedgerEffect, LedgerEvent, RequestState,
    Resume,
};
use crate::machine::{Epoch, Tick};

/// What continuations need of the server: the keys that seal `requestState`, the store the
/// chains live in, and the ledger's limits. Owned by the server, read only here.
pub(crate) struct Continuations {
    /// Replaced whole at run time ([`Continuations::replace_ring`]); each seal or open reads
    /// the ring once.
    ring: std::sync::RwLock<Arc<KeyRing>>,
    store: Arc<dyn LedgerStore>,
    ledger: LedgerConfig,
}

impl Continuations {
    pub(crate) fn new(ring: KeyRing, store: Arc<dyn LedgerStore>, ledger: LedgerConfig) -> Self {
        Continuations {
            ring: std::sync::RwLock::new(Arc::new(ring)),
            store,
            ledger,
        }
    }

    /// The key ring now in force.
    pub(crate) fn ring(&self) -> Arc<KeyRing> {
        Arc::clone(
            &self
                .ring
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// Swaps in a new key ring (live rotation, #20): later seals use its current key, later
    /// opens accept its current and previous keys.
    pub(crate) fn replace_ring(&self, ring: KeyRing) {
        *self
            .ring
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(ring);
    }

    /// Tells the store the serving epoch moved (shutdown): chains of older epochs are
    /// rejected from now on.
    pub(crate) async fn bump_epoch(&self, now: Tick, epoch: Epoch) {
        if let Err(e) = self.store.bump_epoch(now, epoch).await {
            tracing::warn!(error = %e, "ledger store did not take the epoch bump");
        }
    }
}

/// What one handler invocation produced.
pub(crate) enum HandlerOut {
    /// The final answer.
    Complete(Answer),
    /// The handler asks for client input.
    Input(BTreeMap<String, InputRequest>),
}

/// One timed handler round of a `resources/read` or a `prompts/get`, the one wrapper
/// both families share: `work` runs within `limit` on `clock` and the handler's `token`; a complete result
/// goes through `finish` inside the time-out (its conversion and final size check count); a
/// request for input is passed on; expiry answers `timed_out`'s error.
pub(crate) async fn timed_round<T>(
    clock: &dyn crate::core::MonotonicClock,
    limit: std::time::Duration,
    token: &CancelToken,
    work: impl std::future::Future<Output = Result<Outcome<T>, CoreError>>,
    finish: impl FnOnce(T) -> Result<Answer, Answer>,
    timed_out: impl FnOnce() -> CoreError,
) -> Result<HandlerOut, Answer> {
    let round = async {
        match work.await {
            Ok(Outcome::Complete(reply)) => finish(reply).map(HandlerOut::Complete),
            Ok(Outcome::InputRequired { requests }) => Ok(HandlerOut::Input(requests)),
            Err(e) => Err(Answer::from_core(&e)),
        }
    };
    within(clock, limit, token, round)
        .await
        .unwrap_or_else(|Expired| Err(Answer::from_core(&timed_out())))
}

/// Attempts at a compare-and-swap before giving up with an internal error.
const CAS_ATTEMPTS: usize = 4;

/// A failure of the continuation itself, reported per method: a tool failure on
/// `tools/call`, a JSON-RPC error on `resources/read` and `prompts/get`. A rejected state on a
/// direct-mode `tools/call` is the JSON-RPC error too (the public suite and the spec expect a
/// protocol error there); compact `call_tool` keeps it inside its failure envelope.
pub(crate) fn refuse(ctx: &Ctx, method: InputMethod, code: FailureCode, message: &str) -> Answer {
    let as_error = match method {
        InputMethod::ToolsCall => {
            matches!(
                code,
                FailureCode::StateRejected | FailureCode::StateUnavailable
            ) && ctx.server.mode() == PublishMode::Direct
        }
        InputMethod::ResourcesRead | InputMethod::PromptsGet => true,
    };
    if !as_error {
        return Answer::ToolResult(failure_result(ctx.server.publication(), code, message));
    }
    Answer::Error {
        cause: if code == FailureCode::StateRejected {
            Cause::InvalidParams
        } else {
            Cause::Internal
        },
        message: message.to_owned(),
        data: Some(json!({ "reason": code.as_str(), "retryable": code.default_retryable() })),
    }
}

fn rejected(ctx: &Ctx, method: InputMethod) -> Answer {
    refuse(
        ctx,
        method,
        FailureCode::StateRejected,
        "The requestState was rejected.",
    )
}

fn internal() -> Answer {
    Answer::internal_retryable()
}

/// A store failure. An outage (unavailable, timed out) neither accepts nor rejects the state:
/// it is the retryable `state_unavailable` failure, a JSON-RPC -32603 where [`refuse`] answers
/// errors. Any other store failure (full, conflicts exhausted) is a plain internal error.
fn store_failed(ctx: &Ctx, method: InputMethod, e: &StoreError) -> Answer {
    tracing::warn!(error = %e, "ledger store failed");
    if !e.is_outage() {
        return internal();
    }
    refuse(
        ctx,
        method,
        FailureCode::StateUnavailable,
        "The request state could not be checked right now; retry the call.",
    )
}

/// Runs a method that may ask for input. `target` and `args` are the salient parameters the
/// chain is bound to; `continuation` holds the request's continuation members, read once
/// by the method family.
pub(crate) async fn run<'c, F, Fut>(
    ctx: &'c Ctx,
    method: InputMethod,
    target: &str,
    args: &[u8],
    continuation: Continuation,
    handler: F,
) -> Answer
where
    F: Fn(Invocation, &BTreeMap<String, Box<RawValue>>) -> Fut,
    Fut: Future<Output = Result<HandlerOut, Answer>> + 'c,
{
    // The binding's digests (I7) are computed only when a chain is created or resumed: a
    // call that completes on its first invocation never needs them.
    let binding = || Binding {
        principal: principal_digest(&principal_id(&ctx.caller)),
        method,
        request: request_digest(method, target, args),
    };
    let Some(token) = continuation.state else {
        // No chain yet: the first invocation. Every prompt this server issues is sealed, so
        // answers without a state answer nothing it asked: they are unrecognised entries (X5)
        // and the handler runs without them (and asks again if it needs them). Otherwise a
        // client could skip a confirmation by sending its "accept" up front.
        let none = BTreeMap::new();
        return match ctx.invoke(handler(ctx.invocation(), &none)).await {
            Ok(HandlerOut::Complete(answer)) => answer,
            Err(answer) => answer,
            Ok(HandlerOut::Input(requests)) if !may_record(&requests) => cannot_ask(),
            // Boxed, like `resume` below: a chain's store round trips make these futures
            // large, and unboxed they would size every first invocation's future (the hot
            // path, issue #23) for the rare chain.
            Ok(HandlerOut::Input(requests)) => {
                Box::pin(start_chain(ctx, binding(), &requests)).await
            }
        };
    };
    let responses = continuation.responses.unwrap_or_default();
    Box::pin(resume(ctx, method, binding(), &token, &responses, &handler)).await
}

/// How a compare-and-swap of a chain ended.
enum Written {
    Done,
    /// Someone else wrote the record first: reload and decide again.
    Conflict,
    Failed(StoreError),
}

async fn write(ctx: &Ctx, expected: Option<Chain>, new: Chain) -> Written {
    match cas(ctx, expected, new).await {
        Ok(()) => Written::Done,
        Err(StoreError::Conflict) => Written::Conflict,
        Err(e) => Written::Failed(e),
    }
}

/// A retry with `requestState`: the state opened, its chain loaded, the pending answer checked,
/// then the ledger's decision ([`decide_resume`]) carried out, with compare-and-swap
/// retries.
async fn resume<'c, F, Fut>(
    ctx: &'c Ctx,
    method: InputMethod,
    binding: Binding,
    token: &str,
    responses: &BTreeMap<String, Box<RawValue>>,
    handler: &F,
) -> Answer
where
    F: Fn(Invocation, &BTreeMap<String, Box<RawValue>>) -> Fut,
    Fut: Future<Output = Result<HandlerOut, Answer>> + 'c,
{
    let Ok(state) = open(&ctx.server.continuations().ring(), token) else {
        return rejected(ctx, method);
    };
    for _ in 0..CAS_ATTEMPTS {
        let stored = match load_chain(ctx, method, state.chain).await {
            Ok(chain) => chain,
            Err(answer) => return answer,
        };
        let answer = match pending_answer(stored.prompt(), responses) {
            Ok(a) => a,
            Err(message) => return Answer::error(Cause::InvalidParams, message),
        };
        let retry = Resume {
            state,
            principal: binding.principal,
            method,
            request: binding.request,
            serving_epoch: ctx.epoch,
            answer,
        };
        let (chain, step) = decide_resume(&stored, ctx.server.wall_now(), retry);
        let written = match &step {
            ResumeStep::Reject(_) => return rejected(ctx, method),
            ResumeStep::Recover => return recover(ctx, method, &chain, handler).await,
            ResumeStep::AskAgain { write: false, .. } => Written::Done,
            ResumeStep::AskAgain { write: true, .. } | ResumeStep::Dispatch => {
                write(ctx, Some(stored), chain.clone()).await
            }
        };
        match (written, step) {
            (Written::Conflict, _) => continue,
            (Written::Failed(e), _) => return store_failed(ctx, method, &e),
            (Written::Done, ResumeStep::AskAgain { state, prompt, .. }) => {
                return input_required(ctx, &state, &prompt)
            }
            (Written::Done, ResumeStep::Dispatch) => {
                let answers = merged_answers(chain.answers());
                let inv = ctx.invocation().with_input_responses(answers.clone());
                let out = ctx.invoke(handler(inv, &answers)).await;
                return finish_round(ctx, method, chain, out).await;
            }
            (Written::Done, ResumeStep::Reject(_) | ResumeStep::Recover) => return internal(),
        }
    }
    internal()
}

/// The stored chain a resume continues: a chain the store no longer has rejects the state; a
/// store failure answers as [`store_failed`] does (retryable on an outage).
async fn load_chain(ctx: &Ctx, method: InputMethod, id: ChainId) -> Result<Chain, Answer> {
    match ctx.server.continuations().store.load(id).await {
        Ok(Some(chain)) => Ok(chain),
        Ok(None) => Err(rejected(ctx, method)),
        Err(e) => Err(store_failed(ctx, method, &e)),
    }
}

/// Recovery-only dispatch of a completed chain: the handler runs once more with every
/// answer and must complete; asking again is `already_completed`.
async fn recover<'c, F, Fut>(
    ctx: &'c Ctx,
    method: InputMethod,
    chain: &Chain,
    handler: &F,
) -> Answer
where
    F: Fn(Invocation, &BTreeMap<String, Box<RawValue>>) -> Fut,
    Fut: Future<Output = Result<HandlerOut, Answer>> + 'c,
{
    let answers = merged_answers(chain.answers());
    let inv = ctx
        .invocation()
        .with_recovery(true)
        .with_input_responses(answers.clone());
    match ctx.invoke(handler(inv, &answers)).await {
        Ok(HandlerOut::Complete(answer)) => answer,
        Err(answer) => answer,
        Ok(HandlerOut::Input(_)) => refuse(
            ctx,
            method,
            FailureCode::AlreadyCompleted,
            "The operation already completed.",
        ),
    }
}

/// Feeds how a dispatched handler ended back into its chain and answers accordingly.
async fn finish_round(
    ctx: &Ctx,
    method: InputMethod,
    mut chain: Chain,
    out: Result<HandlerOut, Answer>,
) -> Answer {
    // A new prompt the client cannot be asked is never recorded: the round failed.
    let out = match out {
        Ok(HandlerOut::Input(requests)) if !may_record(&requests) => Err(cannot_ask()),
        other => other,
    };
    let end = match &out {
        Ok(HandlerOut::Input(requests)) => match serde_json::to_vec(requests) {
            Ok(bytes) => RoundEnd::Asked(bytes),
            Err(_) => return internal(),
        },
        Ok(HandlerOut::Complete(_)) => RoundEnd::Completed,
        Err(_) => RoundEnd::Failed,
    };
    for _ in 0..CAS_ATTEMPTS {
        let (next, step) = decide_finish(&chain, ctx.server.wall_now(), &end);
        match cas(ctx, Some(chain.clone()), next).await {
            Ok(()) => {}
            Err(StoreError::Conflict) => {
                // Someone else wrote the record (an epoch bump): apply the event to the fresh one.
                match ctx.server.continuations().store.load(chain.id()).await {
                    Ok(Some(fresh)) => {
                        chain = fresh;
                        continue;
                    }
                    Ok(None) => return internal(),
                    Err(e) => return unrecorded(&e, out),
                }
            }
            Err(e) => return unrecorded(&e, out),
        }
        return match (step, out) {
            (FinishStep::Prompt { state, prompt }, _) => input_required(ctx, &state, &prompt),
            (FinishStep::InteractionLimit, _) => refuse(
                ctx,
                method,
                FailureCode::InteractionLimit,
                "The interaction needed more than ten answers.",
            ),
            (FinishStep::Rejected, _) => rejected(ctx, method),
            (FinishStep::Pass { .. }, Ok(HandlerOut::Complete(answer)) | Err(answer)) => answer,
            (FinishStep::Pass { .. } | FinishStep::Internal, _) => internal(),
        };
    }
    internal()
}

/// The round already ran when the store failed to record how it ended: that cannot be undone,
/// so this is not the retryable `state_unavailable` (a retry would find the round in flight).
/// A handler's own answer is still the truth and goes out; the record stays "running" until
/// its backstop lifetime, so a replay is refused, never run again. A new prompt that could not
/// be recorded is a non-retryable internal error.
fn unrecorded(e: &StoreError, out: Result<HandlerOut, Answer>) -> Answer {
    tracing::warn!(error = %e, "ledger store did not record how a dispatched round ended");
    match out {
        Ok(HandlerOut::Complete(answer)) | Err(answer) => answer,
        Ok(HandlerOut::Input(_)) => Answer::Error {
            cause: Cause::Internal,
            message: "Internal error".to_owned(),
            data: Some(json!({ "retryable": false })),
        },
    }
}

/// Whether a prompt asking `requests` may be recorded (O127, "before any pending record"): a
/// legacy session's request whose revision cannot be asked one of them is refused first
/// ([`crate::server::legacy::interact::may_record`]); without the feature every prompt may.
fn may_record(requests: &BTreeMap<String, InputRequest>) -> bool {
    #[cfg(feature = "legacy")]
    return crate::server::legacy::interact::may_record(requests);
    #[cfg(not(feature = "legacy"))]
    {
        let _ = requests;
        true
    }
}

/// The refusal of a prompt the client cannot be asked: -32021, which a legacy `tools/call`
/// answers as the `confirmation_required` tool failure (X22).
fn cannot_ask() -> Answer {
    Answer::error(
        Cause::MissingCapability,
        "Missing required client capability",
    )
}

/// The first prompt of a new chain.
async fn start_chain(
    ctx: &Ctx,
    binding: Binding,
    requests: &BTreeMap<String, InputRequest>,
) -> Answer {
    let method = binding.method;
    let Ok(prompt) = serde_json::to_vec(requests) else {
        return internal();
    };
    let Ok(id) = random_chain_id() else {
        return internal();
    };
    let mut chain = Chain::new(id, binding, ctx.epoch, ctx.server.continuations().ledger);
    match chain.handle(ctx.server.wall_now(), LedgerEvent::HandlerAsked { prompt }) {
        LedgerEffect::Prompt { state, prompt, .. } => match cas(ctx, None, chain).await {
            Ok(()) => input_required(ctx, &state, &prompt),
            Err(e) => store_failed(ctx, method, &e),
        },
        // A new chain answers its first question with a prompt; anything else is a ledger bug.
        LedgerEffect::Dispatch { .. }
        | LedgerEffect::DispatchRecovery
        | LedgerEffect::Completed
        | LedgerEffect::Failed(_)
        | LedgerEffect::Expired
        | LedgerEffect::Invalidated
        | LedgerEffect::Rejected(_)
        | LedgerEffect::Nothing => internal(),
    }
}

async fn cas(ctx: &Ctx, expected: Option<Chain>, new: Chain) -> Result<(), StoreError> {
    ctx.server
        .continuations()
        .store
        .compare_and_swap(ctx.server.wall_now(), expected, new)
        .await
}

/// `{resultType: "input_required", inputRequests, requestState}` (both present; no
/// cache hints).
fn input_required(ctx: &Ctx, state: &RequestState, prompt: &[u8]) -> Answer {
    let Ok(nonce) = random_nonce() else {
        return internal();
    };
    let token = seal(&ctx.server.continuations().ring(), nonce, state);
    let Ok(requests) = serde_json::from_slice::<Value>(prompt) else {
        return internal();
    };
    let mut body = Map::new();
    body.insert("inputRequests".into(), requests);
    body.insert("requestState".into(), Value::String(token));
    Answer::Result {
        body: members(body),
        result_type: "input_required",
    }
}

/// The principal id a chain is bound to; the anonymous caller has its own marker.
fn principal_id(caller: &crate::core::Caller) -> Vec<u8> {
    match caller.principal() {
        Some(p) => {
            let mut v = b"principal:".to_vec();
            v.extend_from_slice(p.as_bytes());
            v
        }
        None => b"anonymous".to_vec(),
    }
}

/// Every answer of the chain, keyed as the handler asked (later rounds win on a reused key).
fn merged_answers(answers: &[Vec<u8>]) -> BTreeMap<String, Box<RawValue>> {
    let mut merged = BTreeMap::new();
    for answer in answers {
        if let Ok(map) = serde_json::from_slice::<BTreeMap<String, Box<RawValue>>>(answer) {
            merged.extend(map);
        }
    }
    merged
}

/// The answer to the pending prompt as exact bytes (`{key: answer, …}` for exactly the keys the
/// prompt asked, extra keys ignored), `None` when any is missing, or a malformed-answer
/// message (checked before dispatch).
fn pending_answer(
    prompt: &[u8],
    responses: &BTreeMap<String, Box<RawValue>>,
) -> Result<Option<Vec<u8>>, String> {
    let Ok(requests) = serde_json::from_slice::<BTreeMap<String, Value>>(prompt) else {
        // A chain with no pending prompt (completed, failed): no answer is expected.
        return Ok(None);
    };
    if requests.is_empty() {
        return Ok(None);
    }
    let mut out = String::from("{");
    for (i, (key, request)) in requests.iter().enumerate() {
        let Some(raw) = responses.get(key) else {
            return Ok(None);
        };
        check_answer(key, request, raw)?;
        if i > 0 {
            out.push(',');
        }
        out.push_str(&Value::String(key.clone()).to_string());
        out.push(':');
        out.push_str(raw.get());
    }
    out.push('}');
    Ok(Some(out.into_bytes()))
}

/// The checks of one answer against the request it answers.
fn check_answer(key: &str, request: &Value, raw: &RawValue) -> Result<(), String> {
    let answer: Value =
        serde_json::from_str(raw.get()).map_err(|_| format!("inputResponses.{key} is not JSON"))?;
    let Some(obj) = answer.as_object() else {
        return Err(format!("inputResponses.{key} must be an object"));
    };
    if request.get("method").and_then(Value::as_str) != Some("elicitation/create") {
        return Ok(());
    }
    let url_mode = request
        .get("params")
        .and_then(|p| p.get("mode"))
        .and_then(Value::as_str)
        == Some("url");
    let content = obj.get("content");
    match obj.get("action").and_then(Value::as_str) {
        Some("accept") if !url_mode => match content {
            Some(Value::Object(_)) => Ok(()),
            _ => Err(format!(
                "inputResponses.{key}: a form accept needs an object content"
            )),
        },
        Some("accept" | "decline" | "cancel") => match content {
            None => Ok(()),
            Some(_) => Err(format!(
                "inputResponses.{key}: this action carries no content"
            )),
        },
        _ => Err(format!(
            "inputResponses.{key}.action must be accept, decline or cancel"
        )),
    }
}
