//! The interaction loop of the initialise era (O126, O127): a handler that asks for input
//! (the core's `input_required`) is served to a legacy client by asking the client itself.
//!
//! One outer request of a legacy session runs as: the core is invoked with the rewritten
//! request; when it answers `input_required`, each of its `inputRequests` is sent to the
//! client as one server-sent request (`elicitation/create`, `sampling/createMessage`,
//! `roots/list`) on the request's own stream, its response is awaited, and then the core is
//! re-entered once with the answers and the sealed `requestState`. The core's continuation
//! ledger bounds the rounds (its interaction limit ends the chain with a final result).
//!
//! # Decisions
//! - **Failure stops the loop**, nothing is retried: a client error to a server-sent request,
//!   a closed session or a full answer table ends the outer call with the X22
//!   `confirmation_required` failure (tools; the other methods keep the modern -32021 error).
//! - **Cancellation** of the outer request (`notifications/cancelled`, a dropped stream)
//!   drops the pending answer slot and tells the client `notifications/cancelled` for the
//!   server-sent request; no answer is dispatched and the outer request gets no reply.
//! - **Discovery stays usable**: the loop waits on its own task; the session serves every
//!   other request meanwhile.
//! - **June (2025-06-18)**: titled single-selects (`oneOf` of `{const, title}`) are lowered to
//!   plain `enum`s and `mode` is dropped; a multi-select (array) or URL elicitation is the
//!   `confirmation_required` failure before anything is sent or recorded.
//! - **Before any pending record**: what the session's lent capabilities cannot cover (the
//!   revision's own limits: June has no multi-select) is checked by the continuation path
//!   itself, with [`may_record`], before it records a chain or a new prompt: the loop runs
//!   each core invocation inside the session's [`Asking`] scope, so the check sees the
//!   revision of the session the request came from, and a modern request (no scope) is never
//!   refused by it. The capability-gated builders (`elicit_form`, `elicit_url`, `sample`,
//!   `list_roots`) already refuse what the lent capabilities lack before any prompt exists.
//! - **November (2025-11-25)**: a URL elicitation gets a fresh adapter-owned
//!   `elicitationId` (128 random bits).
//! - **Progress** is forwarded only when it grows and at least [`PROGRESS_SPACING`] after the
//!   last one forwarded, across every core invocation of the outer call.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tokio::sync::oneshot;

use super::outbox::LegacyOutbox;
use super::translate::Original;
use crate::codec::{encode, EgressLimits};
use crate::core::{Caller, CancelToken, InputRequest};
use crate::server::encode::error_reply;
use crate::server::lock;
use crate::server::{Cause, Outbox, Reply, Server};
use crate::wire::jsonrpc::{Message, Request, RequestId, Response};

/// Server-sent requests of one session awaiting the client's answer at most. Each outer
/// request waits for one answer at a time and a session has a bounded number in flight
/// (HTTP: `max_in_flight_per_session`; stdio: its own in-flight bound), so this is never
/// reached by a well-behaved host; it keeps the table bounded whatever the host does.
pub const MAX_PENDING_ANSWERS: usize = 64;

/// Least time between two progress notifications of one outer call (at most 10 Hz),
/// measured across all of its core invocations.
pub const PROGRESS_SPACING: Duration = Duration::from_millis(100);

/// Random bytes in an adapter-owned `elicitationId` (128 bits).
pub const ELICITATION_ID_BYTES: usize = 16;

/// The 2025-06-18 revision: no URL elicitation, no multi-select, no `mode`.
const JUNE: &str = "2025-06-18";

/// The client's answer to one server-sent request: its result, or `Err` for an error
/// response.
type ClientAnswer = Result<Box<RawValue>, ()>;

/// The answer slot of one server-sent request.
type Slot = oneshot::Sender<ClientAnswer>;

/// One server-sent request to make: `(key, method, params)`.
type Ask = (String, String, Option<Value>);

/// What the session a request came from can be asked: set by [`Interaction::run`] around
/// each core invocation of one of its requests, read by [`may_record`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Asking {
    /// The session's negotiated revision.
    version: &'static str,
}

tokio::task_local! {
    /// The [`Asking`] of the legacy session whose request this task is serving, if any.
    static ASKING: Asking;
}

/// Whether the continuation path may record a prompt asking `requests` (O127, "before any
/// pending record"): `false` when the request being served comes from a legacy session whose
/// revision cannot be asked one of them ([`askable`]); `true` for every modern request.
pub(crate) fn may_record(requests: &BTreeMap<String, InputRequest>) -> bool {
    ASKING
        .try_with(|asking| askable(asking.version, requests))
        .unwrap_or(true)
}

/// O127, pure: whether a client of revision `version` can be asked every one of `requests`
/// (the lowering [`adapt`] applies succeeds for each; nothing random is drawn).
#[must_use]
pub(crate) fn askable(version: &str, requests: &BTreeMap<String, InputRequest>) -> bool {
    requests.values().all(|request| {
        if request.method() != "elicitation/create" {
            return true;
        }
        let mut params = request.params().cloned();
        params
            .as_mut()
            .and_then(Value::as_object_mut)
            .is_some_and(|p| lower_elicitation(version, p).is_ok())
    })
}

/// The client side of one legacy session: the server-sent requests awaiting an answer.
#[derive(Debug)]
pub struct Peer {
    version: &'static str,
    next_id: AtomicI64,
    pending: Mutex<HashMap<String, Slot>>,
    closed: AtomicBool,
}

/// Why no answer came.
#[derive(Debug, PartialEq, Eq)]
enum Stop {
    /// The outer request was cancelled (or its stream is gone): send nothing.
    Cancelled,
    /// The client answered with an error, the session ended, or the table is full.
    Failed,
}

impl Peer {
    /// A peer of a session at `version`.
    #[must_use]
    pub fn new(version: &'static str) -> Self {
        Peer {
            version,
            next_id: AtomicI64::new(1),
            pending: Mutex::new(HashMap::new()),
            closed: AtomicBool::new(false),
        }
    }

    /// Server-sent requests awaiting an answer now.
    #[must_use]
    pub fn pending(&self) -> usize {
        lock(&self.pending).len()
    }

    /// A client's response: wakes the request it answers. `false` when it answers nothing
    /// pending (unknown, already answered or cancelled id).
    pub fn answer(&self, response: Response) -> bool {
        let (id, outcome) = match response {
            Response::Success(r) => (r.id.token().to_owned(), Ok(r.result)),
            Response::Error(r) => match r.id {
                Some(id) => (id.token().to_owned(), Err(())),
                None => return false,
            },
        };
        match lock(&self.pending).remove(&id) {
            Some(slot) => {
                // The waiter may be gone (cancelled meanwhile): nothing to do then.
                let _ = slot.send(outcome);
                true
            }
            None => false,
        }
    }

    /// The session ended: every waiting request fails and no new one is sent.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        lock(&self.pending).clear();
    }

    /// Takes an answer slot for a new server-sent request: its id, or `None` when the session
    /// is closed or [`MAX_PENDING_ANSWERS`] are already waiting.
    fn register(&self) -> Option<(RequestId, oneshot::Receiver<ClientAnswer>)> {
        let mut pending = lock(&self.pending);
        if self.closed.load(Ordering::SeqCst) || pending.len() >= MAX_PENDING_ANSWERS {
            return None;
        }
        let id = RequestId::integer(self.next_id.fetch_add(1, Ordering::SeqCst));
        let (tx, rx) = oneshot::channel();
        pending.insert(id.token().to_owned(), tx);
        Some((id, rx))
    }

    fn forget(&self, id: &RequestId) {
        lock(&self.pending).remove(id.token());
    }

    /// Sends one server-sent request through `outbox` and waits for its answer.
    async fn ask(
        &self,
        outbox: &dyn Outbox,
        method: &str,
        params: Option<Value>,
        cancel: &CancelToken,
    ) -> Result<Box<RawValue>, Stop> {
        let (id, rx) = self.register().ok_or(Stop::Failed)?;
        let params = params
            .map(|p| serde_json::value::to_raw_value(&p))
            .transpose()
            .map_err(|_| Stop::Failed)?;
        let message = Message::Request(Request {
            id: id.clone(),
            method: method.to_owned(),
            params,
        });
        let Some(line) = encode(&message, &EgressLimits::SERVER)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
        else {
            self.forget(&id);
            return Err(Stop::Failed);
        };
        if !outbox.notify(line) {
            self.forget(&id);
            return Err(Stop::Cancelled);
        }
        tokio::select! {
            answer = rx => match answer {
                Ok(Ok(result)) => Ok(result),
                // A client error, or the session closed (the slot was dropped).
                Ok(Err(())) | Err(_) => Err(Stop::Failed),
            },
            () = cancel.cancelled() => {
                self.forget(&id);
                // Tell the client to dismiss what it is showing (2025 cancellation).
                let params = format!(
                    r#"{{"requestId":{},"reason":"The request was cancelled."}}"#,
                    id.as_raw().get()
                );
                if let Some(line) = crate::server::encode::encode_notification(
                    crate::wire::methods::CANCELLED,
                    &params,
                ) {
                    outbox.notify(line);
                }
                Err(Stop::Cancelled)
            }
        }
    }
}

/// One outer request of a legacy session, as the loop serves it.
pub struct Interaction {
    original: Original,
    /// `None`: the session cannot answer server-sent requests (stateless legacy HTTP).
    peer: Option<Arc<Peer>>,
}

impl std::fmt::Debug for Interaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interaction")
            .field("original", &self.original)
            .field("interactive", &self.peer.is_some())
            .finish()
    }
}

impl Interaction {
    /// The loop for the legacy request `original`; `peer` is the session's client side.
    #[must_use]
    pub fn new(original: Original, peer: Option<Arc<Peer>>) -> Self {
        Interaction { original, peer }
    }

    /// The legacy request this serves.
    #[must_use]
    pub fn original(&self) -> &Original {
        &self.original
    }

    /// Serves the rewritten `request`: everything goes to the host's `outbox`, the final reply
    /// in the legacy shape; nothing when `cancel` fires first.
    pub async fn run(
        self,
        server: Server,
        caller: Caller,
        mut request: Request,
        outbox: Arc<dyn Outbox>,
        cancel: CancelToken,
    ) {
        let legacy = LegacyOutbox::new(Arc::clone(&outbox), self.original.clone());
        let pace = Arc::new(Mutex::new(Pace::default()));
        loop {
            let capture = Arc::new(Capture {
                inner: Arc::clone(&outbox),
                pace: Arc::clone(&pace),
                reply: Mutex::new(None),
            });
            let served = server.serve(
                caller.clone(),
                Message::Request(Request {
                    id: request.id.clone(),
                    method: request.method.clone(),
                    params: request.params.clone(),
                }),
                Arc::clone(&capture) as Arc<dyn Outbox>,
                cancel.clone(),
            );
            match &self.peer {
                Some(peer) => {
                    ASKING
                        .scope(
                            Asking {
                                version: peer.version,
                            },
                            served,
                        )
                        .await;
                }
                // Stateless legacy HTTP lends no capabilities: every builder refuses already.
                None => served.await,
            }
            let Some(reply) = lock(&capture.reply).take() else {
                return; // cancelled: no reply at all
            };
            let (Some(peer), Some(pending)) = (&self.peer, InputRequired::read(&reply.line)) else {
                legacy.finish(reply);
                return;
            };
            let Ok(asks) = adapt(peer.version, pending.requests) else {
                legacy.finish(cannot_perform(&request.id));
                return;
            };
            let mut answers = BTreeMap::new();
            for (key, method, params) in asks {
                match peer.ask(&*outbox, &method, params, &cancel).await {
                    Ok(result) => {
                        answers.insert(key, result);
                    }
                    Err(Stop::Cancelled) => return,
                    Err(Stop::Failed) => {
                        legacy.finish(cannot_perform(&request.id));
                        return;
                    }
                }
            }
            match continued(&request, &answers, &pending.state) {
                Some(next) => request = next,
                None => {
                    legacy.finish(error_reply(
                        &request.id,
                        Cause::Internal,
                        "Internal error",
                        None,
                    ));
                    return;
                }
            }
        }
    }
}

/// The modern -32021 error: on `tools/call` the legacy outbox turns it into the X22
/// `confirmation_required` tool failure; the other methods keep it.
fn cannot_perform(id: &RequestId) -> Reply {
    error_reply(
        id,
        Cause::MissingCapability,
        "Missing required client capability",
        None,
    )
}

/// What an `input_required` result asks.
struct InputRequired {
    /// `(key, request)` in key order.
    requests: Vec<(String, Value)>,
    state: String,
}

impl InputRequired {
    /// The `input_required` result in `line`, if it is one.
    fn read(line: &str) -> Option<InputRequired> {
        let top: BTreeMap<String, Box<RawValue>> = serde_json::from_str(line).ok()?;
        let result: Map<String, Value> = serde_json::from_str(top.get("result")?.get()).ok()?;
        if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
            return None;
        }
        let state = result.get("requestState")?.as_str()?.to_owned();
        let requests = result.get("inputRequests")?.as_object()?;
        Some(InputRequired {
            requests: requests
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            state,
        })
    }
}

/// The server-sent requests for `requests` at `version`: `(key, method, params)`. `Err`:
/// the client of this revision cannot be asked one of them (O127).
fn adapt(version: &str, requests: Vec<(String, Value)>) -> Result<Vec<Ask>, ()> {
    let mut out = Vec::with_capacity(requests.len());
    for (key, request) in requests {
        let method = request
            .get("method")
            .and_then(Value::as_str)
            .ok_or(())?
            .to_owned();
        let mut params = request.get("params").cloned();
        if method == "elicitation/create" {
            let p = params.as_mut().and_then(Value::as_object_mut).ok_or(())?;
            adapt_elicitation(version, p)?;
        }
        out.push((key, method, params));
    }
    Ok(out)
}

/// O127 for one `elicitation/create`'s params: [`lower_elicitation`], then a November URL
/// gets its fresh adapter-owned `elicitationId`.
fn adapt_elicitation(version: &str, params: &mut Map<String, Value>) -> Result<(), ()> {
    lower_elicitation(version, params)?;
    if version != JUNE && params.get("mode").and_then(Value::as_str) == Some("url") {
        params.insert(
            "elicitationId".to_owned(),
            Value::String(fresh_elicitation_id().ok_or(())?),
        );
    }
    Ok(())
}

/// The revision's lowering of one `elicitation/create`'s params, deterministic: June drops
/// `mode` and lowers titled single-selects to plain enums; `Err` when June is asked a URL or a
/// multi-select (or a `oneOf` option without `const`). November is unchanged.
fn lower_elicitation(version: &str, params: &mut Map<String, Value>) -> Result<(), ()> {
    let url = params.get("mode").and_then(Value::as_str) == Some("url");
    if version == JUNE {
        if url {
            return Err(()); // June never uses URL mode
        }
        params.remove("mode");
        let properties = params
            .get_mut("requestedSchema")
            .and_then(|s| s.get_mut("properties"))
            .and_then(Value::as_object_mut);
        for property in properties.into_iter().flat_map(|p| p.values_mut()) {
            let Some(property) = property.as_object_mut() else {
                continue;
            };
            if property.get("type").and_then(Value::as_str) == Some("array") {
                return Err(()); // multi-select needs November
            }
            if let Some(Value::Array(options)) = property.remove("oneOf") {
                let values: Option<Vec<Value>> =
                    options.iter().map(|o| o.get("const").cloned()).collect();
                property.insert("enum".to_owned(), Value::Array(values.ok_or(())?));
            }
        }
    }
    Ok(())
}

/// 128 bits from the OS CSPRNG as lowercase hex.
fn fresh_elicitation_id() -> Option<String> {
    let mut bytes = [0u8; ELICITATION_ID_BYTES];
    getrandom::getrandom(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The request re-entering the core: the same params plus the answers and the state.
fn continued(
    request: &Request,
    answers: &BTreeMap<String, Box<RawValue>>,
    state: &str,
) -> Option<Request> {
    let mut params: BTreeMap<String, Box<RawValue>> = match request.params.as_deref() {
        Some(p) => serde_json::from_str(p.get()).ok()?,
        None => BTreeMap::new(),
    };
    params.insert(
        "inputResponses".to_owned(),
        serde_json::value::to_raw_value(answers).ok()?,
    );
    params.insert(
        "requestState".to_owned(),
        serde_json::value::to_raw_value(state).ok()?,
    );
    Some(Request {
        id: request.id.clone(),
        method: request.method.clone(),
        params: Some(serde_json::value::to_raw_value(&params).ok()?),
    })
}

/// Progress of one outer call so far.
#[derive(Default)]
struct Pace {
    last: Option<(f64, Instant)>,
}

impl Pace {
    /// Whether a progress notification at `progress` may go now.
    fn admit(&mut self, progress: f64, now: Instant) -> bool {
        match self.last {
            Some((p, at))
                if progress <= p || now.saturating_duration_since(at) < PROGRESS_SPACING =>
            {
                false
            }
            _ => {
                self.last = Some((progress, now));
                true
            }
        }
    }
}

/// The outbox of one core invocation: notifications go on (progress paced across the outer
/// call), the reply is kept for the loop.
struct Capture {
    inner: Arc<dyn Outbox>,
    pace: Arc<Mutex<Pace>>,
    reply: Mutex<Option<Reply>>,
}

/// The `progress` of a `notifications/progress` line; `None` for any other line.
fn progress_of(line: &str) -> Option<f64> {
    let n: BTreeMap<String, Box<RawValue>> = serde_json::from_str(line).ok()?;
    let method: String = serde_json::from_str(n.get("method")?.get()).ok()?;
    if method != crate::wire::methods::PROGRESS {
        return None;
    }
    let params: Map<String, Value> = serde_json::from_str(n.get("params")?.get()).ok()?;
    params.get("progress").and_then(Value::as_f64)
}

impl Outbox for Capture {
    fn notify(&self, line: String) -> bool {
        if let Some(progress) = progress_of(&line) {
            if !lock(&self.pace).admit(progress, Instant::now()) {
                return true;
            }
        }
        self.inner.notify(line)
    }

    fn finish(&self, reply: Reply) {
        *lock(&self.reply) = Some(reply);
    }

    fn transport(&self) -> crate::machine::subscriptions::Transport {
        self.inner.transport()
    }

    fn admitted(&self) {
        self.inner.admitted();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn o127_june_lowers_titled_single_selects_and_drops_mode() {
        let mut p = json!({"mode": "form", "message": "m", "requestedSchema": {"type": "object", "properties": {
            "t": {"type": "string", "title": "T", "oneOf": [{"const": "a", "title": "A"}, {"const": "b", "title": "B"}]},
            "u": {"type": "string", "enum": ["x"]}
        }}});
        adapt_elicitation(JUNE, p.as_object_mut().unwrap()).unwrap();
        assert_eq!(
            p,
            json!({"message": "m", "requestedSchema": {"type": "object", "properties": {
                "t": {"type": "string", "title": "T", "enum": ["a", "b"]},
                "u": {"type": "string", "enum": ["x"]}
            }}})
        );
    }

    #[test]
    fn o127_multi_select_and_url_need_november() {
        let multi = json!({"message": "m", "requestedSchema": {"type": "object", "properties": {
            "m": {"type": "array", "items": {"type": "string", "enum": ["a"]}}
        }}});
        let mut june = multi.clone();
        assert_eq!(
            adapt_elicitation(JUNE, june.as_object_mut().unwrap()),
            Err(())
        );
        let mut november = multi.clone();
        adapt_elicitation("2025-11-25", november.as_object_mut().unwrap()).unwrap();
        assert_eq!(november, multi);
        let url = json!({"mode": "url", "message": "m", "url": "https://example.com/x"});
        let mut june = url.clone();
        assert_eq!(
            adapt_elicitation(JUNE, june.as_object_mut().unwrap()),
            Err(())
        );
    }

    #[test]
    fn o127_askable_is_the_pure_pre_record_check_of_each_revision() {
        use crate::core::{ClientCapabilities, Invocation};
        let inv =
            Invocation::new(Caller::anonymous()).with_capabilities(ClientCapabilities::from_value(
                json!({"elicitation": {"form": {}, "url": {}}, "roots": {}}),
            ));
        let one = |request: InputRequest| BTreeMap::from([("input".to_owned(), request)]);
        let single = one(inv
            .elicit_form(
                "m",
                json!({"type": "object", "properties": {"t": {"type": "string",
                "oneOf": [{"const": "a", "title": "A"}]}}}),
            )
            .unwrap());
        let multi = one(inv
            .elicit_form(
                "m",
                json!({"type": "object", "properties": {"m": {"type": "array",
                "items": {"type": "string", "enum": ["a"]}}}}),
            )
            .unwrap());
        let url = one(inv.elicit_url("m", "https://example.com/x").unwrap());
        let roots = one(inv.list_roots().unwrap());
        for asks in [&single, &roots] {
            assert!(askable(JUNE, asks));
            assert!(askable("2025-11-25", asks));
        }
        for asks in [&multi, &url] {
            assert!(!askable(JUNE, asks), "June cannot be asked {asks:?}");
            assert!(askable("2025-11-25", asks));
        }
        // One request June cannot be asked refuses the whole round.
        let mut both = single.clone();
        both.extend(multi.into_values().map(|r| ("other".to_owned(), r)));
        assert!(!askable(JUNE, &both));
        // Outside a legacy session's scope (a modern request) nothing is refused.
        assert!(may_record(&both));
    }

    #[tokio::test]
    async fn o127_may_record_reads_the_scope_of_the_session_being_served() {
        use crate::core::{ClientCapabilities, Invocation};
        let inv = Invocation::new(Caller::anonymous())
            .with_capabilities(ClientCapabilities::from_value(json!({"elicitation": {}})));
        let multi = BTreeMap::from([(
            "input".to_owned(),
            inv.elicit_form(
                "m",
                json!({"type": "object", "properties": {"m": {"type": "array",
                "items": {"type": "string", "enum": ["a"]}}}}),
            )
            .unwrap(),
        )]);
        let june = ASKING.scope(Asking { version: JUNE }, async { may_record(&multi) });
        assert!(!june.await);
        let november = ASKING.scope(
            Asking {
                version: "2025-11-25",
            },
            async { may_record(&multi) },
        );
        assert!(november.await);
    }

    #[test]
    fn o127_november_urls_get_fresh_adapter_owned_ids() {
        let url = json!({"mode": "url", "message": "m", "url": "https://example.com/x"});
        let mut a = url.clone();
        let mut b = url.clone();
        adapt_elicitation("2025-11-25", a.as_object_mut().unwrap()).unwrap();
        adapt_elicitation("2025-11-25", b.as_object_mut().unwrap()).unwrap();
        let id_a = a["elicitationId"].as_str().unwrap().to_owned();
        let id_b = b["elicitationId"].as_str().unwrap();
        assert_eq!(id_a.len(), 2 * ELICITATION_ID_BYTES);
        assert!(id_a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(id_a, id_b);
        a.as_object_mut().unwrap().remove("elicitationId");
        assert_eq!(a, url);
    }

    #[test]
    fn o126_the_answer_table_is_bounded_at_max_pending_answers() {
        let peer = Peer::new("2025-11-25");
        let mut held = Vec::new();
        for _ in 0..MAX_PENDING_ANSWERS {
            held.push(peer.register().expect("within the bound"));
        }
        assert_eq!(peer.pending(), MAX_PENDING_ANSWERS);
        assert!(peer.register().is_none(), "one past the bound is refused");
        // An answer frees its slot; an answer to nothing pending is reported as such.
        let (id, _) = &held[0];
        let answer = |id: &RequestId| {
            Response::Success(crate::wire::jsonrpc::SuccessResponse {
                id: id.clone(),
                result: RawValue::from_string("{}".to_owned()).unwrap(),
            })
        };
        assert!(peer.answer(answer(id)));
        assert!(!peer.answer(answer(id)));
        assert!(peer.register().is_some());
        peer.close();
        assert_eq!(peer.pending(), 0);
        assert!(peer.register().is_none(), "a closed session sends nothing");
    }

    #[test]
    fn o126_progress_is_monotonic_and_at_most_10_hz_across_invocations() {
        let mut pace = Pace::default();
        let t0 = Instant::now();
        assert!(pace.admit(1.0, t0));
        assert!(!pace.admit(2.0, t0 + PROGRESS_SPACING - Duration::from_millis(1)));
        assert!(pace.admit(2.0, t0 + PROGRESS_SPACING));
        // Not growing: dropped even after the spacing (a re-entered core restarts at 0).
        assert!(!pace.admit(0.0, t0 + 3 * PROGRESS_SPACING));
        assert!(!pace.admit(2.0, t0 + 3 * PROGRESS_SPACING));
        assert!(pace.admit(2.5, t0 + 3 * PROGRESS_SPACING));
    }

    #[test]
    fn o126_input_required_is_read_and_continued_with_answers_and_state() {
        let line = r#"{"jsonrpc":"2.0","id":3,"result":{"inputRequests":{"input":{"method":"roots/list"}},"requestState":"tok","resultType":"input_required"}}"#;
        let pending = InputRequired::read(line).unwrap();
        assert_eq!(pending.state, "tok");
        assert_eq!(
            pending.requests,
            vec![("input".to_owned(), json!({"method": "roots/list"}))]
        );
        assert!(InputRequired::read(
            r#"{"jsonrpc":"2.0","id":3,"result":{"content":[],"resultType":"complete"}}"#
        )
        .is_none());
        let request = Request {
            id: RequestId::integer(3),
            method: "tools/call".to_owned(),
            params: Some(
                RawValue::from_string(r#"{"name":"t","arguments":{"n":1.50}}"#.to_owned()).unwrap(),
            ),
        };
        let mut answers = BTreeMap::new();
        answers.insert(
            "input".to_owned(),
            RawValue::from_string(r#"{"roots":[]}"#.to_owned()).unwrap(),
        );
        let next = continued(&request, &answers, "tok").unwrap();
        assert_eq!(
            next.params.unwrap().get(),
            r#"{"arguments":{"n":1.50},"inputResponses":{"input":{"roots":[]}},"name":"t","requestState":"tok"}"#
        );
    }
}
