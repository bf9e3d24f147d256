//! Legacy Streamable HTTP sessions (2025-11-25 `basic/transports`, "Session Management"):
//! an `initialize` starts one under a fresh `Mcp-Session-Id`, bound to the [`Caller`] that
//! sent it; every later request of the session carries the id. Transport-neutral: the HTTP
//! host hands in the two header values and writes the [`Answer`] or serves the request.
//!
//! # Decisions
//! - **Ids** are 128 bits from the operating system's CSPRNG (`getrandom`), written as 32
//!   lowercase hex digits (visible ASCII, as the transport requires).
//! - **Binding:** a session belongs to the principal of the caller that initialised it; a
//!   request of another principal with that id is answered exactly like an unknown id (404),
//!   so ids cannot be probed across principals.
//! - **Bounds** (named, [`LegacyHttpConfig`]): live sessions, idle expiry, and requests in
//!   flight per session. Each request in flight has the host's own bounded notification queue
//!   (`HttpConfig::max_queued_notifications`), so one session's outbox holds at most
//!   `max_in_flight_per_session` × that queue.
//! - **GET stream:** GET on a live session (`Accept: text/event-stream`) opens its standalone
//!   SSE stream, which carries `notifications/resources/updated` for its subscriptions and
//!   the list changes ([`super::notify`]); at most
//!   [`MAX_STREAMS_PER_SESSION`](super::notify::MAX_STREAMS_PER_SESSION) at once (409 past
//!   it). DELETE or expiry ends it. Server-sent requests of the interaction loop travel on
//!   the calling request's own stream, never here.
//! - **No resumption:** `Last-Event-ID` is ignored and SSE events carry no ids; a dropped
//!   stream cancels its request (the transport makes resumability optional).
//! - **Stateless mode** ([`LegacyHttpConfig::stateless`]): `initialize` is answered without a
//!   session id and every legacy request is served on its own at the version its
//!   `MCP-Protocol-Version` header names; no log level is remembered and DELETE is 405.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::era::{has_modern_meta, starts_legacy_session, LATEST_LEGACY_VERSION, LEGACY_VERSIONS};
use super::interact::Interaction;
use super::lifecycle::{Decision, LegacyLink};
use crate::core::{Caller, CancelToken};
use crate::server::encode::error_reply;
use crate::server::lock;
use crate::server::{Cause, Outbox, Reply, Server};
use crate::wire::jsonrpc::{Message, Request, RequestId};
use crate::wire::PROTOCOL_REVISION;

/// Default of [`LegacyHttpConfig::max_sessions`]: a session holds a few hundred bytes, so
/// this caps the table well under a megabyte against an `initialize` flood, while leaving room
/// for many concurrent clients of one server.
pub const DEFAULT_MAX_SESSIONS: usize = 1024;

/// Default of [`LegacyHttpConfig::idle_expiry`]: long enough for a person pausing between
/// tool calls, short enough that abandoned sessions (clients that never DELETE) do not hold
/// the table full for long.
pub const DEFAULT_IDLE_EXPIRY: Duration = Duration::from_secs(30 * 60);

/// Default of [`LegacyHttpConfig::max_in_flight_per_session`]: clients pipeline a handful of
/// requests at most; more from one session is a runaway client taking others' share.
pub const DEFAULT_MAX_IN_FLIGHT_PER_SESSION: usize = 16;

/// Random bytes in one session id (128 bits: not guessable).
pub const SESSION_ID_BYTES: usize = 16;

/// The JSON-RPC code of the 404 for an unknown, ended or foreign session id (the
/// implementation-defined server range; the code other SDKs use for it).
pub const SESSION_NOT_FOUND_CODE: i64 = -32001;

/// The HTTP status of a request refused because its session has too many in flight.
pub const TOO_MANY_IN_FLIGHT_STATUS: u16 = 429;

/// The HTTP status of a GET refused because the session's standalone streams are all open
/// ([`super::notify::MAX_STREAMS_PER_SESSION`]; the status other SDKs use for it).
pub const STREAM_CONFLICT_STATUS: u16 = 409;

/// Bounds and mode of legacy Streamable HTTP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacyHttpConfig {
    /// Live sessions at most; one more `initialize` is answered 503. Default
    /// [`DEFAULT_MAX_SESSIONS`].
    pub max_sessions: usize,
    /// A session unused for longer than this is ended (its id then gets 404). Default
    /// [`DEFAULT_IDLE_EXPIRY`].
    pub idle_expiry: Duration,
    /// Requests of one session in flight at most; one more is answered 429. Default
    /// [`DEFAULT_MAX_IN_FLIGHT_PER_SESSION`].
    pub max_in_flight_per_session: usize,
    /// No sessions at all (deployments behind a plain load balancer). Default `false`.
    pub stateless: bool,
}

impl Default for LegacyHttpConfig {
    fn default() -> Self {
        LegacyHttpConfig {
            max_sessions: DEFAULT_MAX_SESSIONS,
            idle_expiry: DEFAULT_IDLE_EXPIRY,
            max_in_flight_per_session: DEFAULT_MAX_IN_FLIGHT_PER_SESSION,
            stateless: false,
        }
    }
}

/// A response the host writes as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The HTTP status.
    pub status: u16,
    /// A JSON body (`application/json`), or none.
    pub body: Option<String>,
    /// The `Mcp-Session-Id` response header (only on the `initialize` that started one).
    pub session_id: Option<String>,
    /// The `Allow` response header (on a 405).
    pub allow: Option<&'static str>,
}

impl Answer {
    fn json(status: u16, line: String) -> Self {
        Answer {
            status,
            body: Some(line),
            session_id: None,
            allow: None,
        }
    }

    fn empty(status: u16) -> Self {
        Answer {
            status,
            body: None,
            session_id: None,
            allow: None,
        }
    }

    /// A reply of the session itself (a lifecycle answer or a refusal of the era rule), in a
    /// 200 response like every reply to an accepted legacy request.
    fn reply(reply: Reply) -> Self {
        Answer::json(super::outbox::LEGACY_REPLY_STATUS, reply.line)
    }
}

/// The requests of one session in flight, by id text, with a serial number (an id may be
/// reused once its request is done): what `notifications/cancelled` stops.
type Cancels = Mutex<HashMap<String, (u64, CancelToken)>>;

/// Serial numbers of [`Cancels`] entries.
static SERIAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// One legacy request the host serves: run it with [`Call::run`].
pub struct Call {
    interaction: Interaction,
    /// Held until the request is done: the session's in-flight count.
    _token: Arc<()>,
    cancels: Arc<Cancels>,
}

impl std::fmt::Debug for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("interaction", &self.interaction)
            .finish_non_exhaustive()
    }
}

impl Call {
    /// Serves the rewritten `request` (the interaction loop, [`Interaction::run`]) with the
    /// host's `outbox` and `cancel`, which the session's `notifications/cancelled` for this
    /// id fires.
    pub async fn run(
        self,
        server: Server,
        caller: Caller,
        request: Request,
        outbox: Arc<dyn Outbox>,
        cancel: CancelToken,
    ) {
        let key = request.id.token().to_owned();
        let serial = SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        lock(&self.cancels).insert(key.clone(), (serial, cancel.clone()));
        let _forget = Forget {
            cancels: Arc::clone(&self.cancels),
            key,
            serial,
        };
        self.interaction
            .run(server, caller, request, outbox, cancel)
            .await;
    }
}

/// Drops a finished request's entry (only its own: a reused id may have replaced it).
struct Forget {
    cancels: Arc<Cancels>,
    key: String,
    serial: u64,
}

impl Drop for Forget {
    fn drop(&mut self) {
        let mut cancels = lock(&self.cancels);
        if cancels
            .get(&self.key)
            .is_some_and(|(serial, _)| *serial == self.serial)
        {
            cancels.remove(&self.key);
        }
    }
}

/// What the host does with one POSTed message.
pub enum Post {
    /// Not legacy: the modern path, unchanged.
    Modern(Message),
    /// Write this response.
    Answer(Answer),
    /// Serve this rewritten request with [`Call::run`].
    Serve(Request, Call),
}

impl std::fmt::Debug for Post {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Post::Modern(_) => f.write_str("Modern"),
            Post::Answer(answer) => f.debug_tuple("Answer").field(answer).finish(),
            Post::Serve(request, _) => f.debug_tuple("Serve").field(request).finish(),
        }
    }
}

struct Entry {
    principal: Option<String>,
    link: LegacyLink,
    last_seen: Instant,
    /// One clone per request in flight (held by its [`Call`]).
    in_flight: Arc<()>,
    cancels: Arc<Cancels>,
}

/// The live sessions of one server.
#[derive(Default)]
pub struct Sessions {
    config: LegacyHttpConfig,
    table: Mutex<HashMap<String, Entry>>,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions")
            .field("config", &self.config)
            .field("live", &lock(&self.table).len())
            .finish()
    }
}

/// A 128-bit id from the OS CSPRNG as lowercase hex.
fn fresh_id() -> Option<String> {
    let mut bytes = [0u8; SESSION_ID_BYTES];
    getrandom::getrandom(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The error body for a refusal with an optional id (`null` when the message had none).
fn refusal(id: Option<&RequestId>, cause: Cause, message: &str) -> String {
    match id {
        Some(id) => error_reply(id, cause, message, None).line,
        None => crate::codec::encode_error(
            None,
            cause,
            message,
            None,
            &crate::codec::EgressLimits::SERVER,
        )
        .body
        .unwrap_or_default(),
    }
}

fn not_found(id: Option<&RequestId>) -> Answer {
    let id = id.map_or_else(|| "null".to_owned(), |i| i.as_raw().get().to_owned());
    Answer::json(
        404,
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":{SESSION_NOT_FOUND_CODE},"message":"Session not found"}}}}"#
        ),
    )
}

fn message_id(message: &Message) -> Option<&RequestId> {
    match message {
        Message::Request(r) => Some(&r.id),
        _ => None,
    }
}

fn message_is_modern(message: &Message) -> bool {
    match message {
        Message::Request(r) => has_modern_meta(r.params.as_deref()),
        Message::Notification(n) => has_modern_meta(n.params.as_deref()),
        Message::Response(_) => false,
    }
}

impl Sessions {
    /// An empty table with these bounds.
    #[must_use]
    pub fn new(config: LegacyHttpConfig) -> Self {
        Sessions {
            config,
            table: Mutex::new(HashMap::new()),
        }
    }

    /// The bounds and mode.
    #[must_use]
    pub fn config(&self) -> &LegacyHttpConfig {
        &self.config
    }

    /// Live sessions now (expired ones not yet swept included).
    #[must_use]
    pub fn len(&self) -> usize {
        lock(&self.table).len()
    }

    /// Whether no session is live.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// One POSTed message. `session_id` and `version` are the `Mcp-Session-Id` and
    /// `MCP-Protocol-Version` header values (`Some("")`-free: an unreadable value is passed
    /// as it is and matches nothing).
    pub fn post(
        &self,
        server: &Server,
        caller: &Caller,
        session_id: Option<&str>,
        version: Option<&str>,
        message: Message,
    ) -> Post {
        self.post_at(Instant::now(), server, caller, session_id, version, message)
    }

    /// [`Sessions::post`] at a given instant (idle expiry is measured against it).
    pub fn post_at(
        &self,
        now: Instant,
        server: &Server,
        caller: &Caller,
        session_id: Option<&str>,
        version: Option<&str>,
        message: Message,
    ) -> Post {
        // A 2026-07-28 header, or modern `_meta`, is the modern path whatever else is sent
        // (B23); so is everything when the switch is off.
        if !server.legacy_era() || version == Some(PROTOCOL_REVISION) || message_is_modern(&message)
        {
            return Post::Modern(message);
        }
        let message = match message {
            Message::Request(request)
                if starts_legacy_session(&request.method, request.params.as_deref(), version) =>
            {
                return self.initialize(now, server, caller, request);
            }
            other => other,
        };
        match session_id {
            Some(id) if !self.config.stateless => self.in_session(now, server, caller, id, message),
            // Without a session id only a request that names a legacy revision in its header
            // is legacy; the rest stays modern (D37/D38 and the modern checks apply).
            _ if version.is_none() => Post::Modern(message),
            _ if self.config.stateless => Self::stateless(server, version, message),
            _ => Post::Answer(Answer::json(
                400,
                refusal(
                    message_id(&message),
                    Cause::InvalidRequest,
                    "Mcp-Session-Id header is required",
                ),
            )),
        }
    }

    fn initialize(&self, now: Instant, server: &Server, caller: &Caller, request: Request) -> Post {
        let id = request.id.clone();
        let mut link = if self.config.stateless {
            LegacyLink::quiet()
        } else {
            LegacyLink::default()
        };
        let reply = match link.decide(server, request) {
            Decision::Answered(reply) => reply,
            // `initialize` without modern `_meta` is always answered by the lifecycle.
            Decision::Modern(request) => return Post::Modern(Message::Request(request)),
            Decision::Legacy(..) => {
                return Post::Answer(Answer::json(
                    500,
                    refusal(Some(&id), Cause::Internal, "Internal error"),
                ))
            }
        };
        if link.session().is_none() || self.config.stateless {
            // Refused params start nothing; stateless mode never issues an id.
            return Post::Answer(Answer::reply(reply));
        }
        let mut table = lock(&self.table);
        let expiry = self.config.idle_expiry;
        table.retain(|_, e| {
            let live = now.saturating_duration_since(e.last_seen) <= expiry;
            if !live {
                e.link.close();
            }
            live
        });
        if table.len() >= self.config.max_sessions {
            return Post::Answer(Answer::json(
                Cause::Overloaded.http_status(),
                refusal(
                    Some(&id),
                    Cause::Overloaded,
                    "too many legacy sessions; try again later",
                ),
            ));
        }
        let Some(session_id) = fresh_id().filter(|s| !table.contains_key(s)) else {
            return Post::Answer(Answer::json(
                500,
                refusal(Some(&id), Cause::Internal, "Internal error"),
            ));
        };
        table.insert(
            session_id.clone(),
            Entry {
                principal: caller.principal().map(str::to_owned),
                link,
                last_seen: now,
                in_flight: Arc::new(()),
                cancels: Arc::default(),
            },
        );
        let mut answer = Answer::reply(reply);
        answer.session_id = Some(session_id);
        Post::Answer(answer)
    }

    fn in_session(
        &self,
        now: Instant,
        server: &Server,
        caller: &Caller,
        session_id: &str,
        message: Message,
    ) -> Post {
        let mut table = lock(&self.table);
        let Some(entry) = self.live(&mut table, now, caller, session_id) else {
            return Post::Answer(not_found(message_id(&message)));
        };
        entry.last_seen = now;
        let request = match message {
            Message::Request(request) => request,
            Message::Notification(notification) => {
                entry.link.notification(server, &notification);
                // 2025 cancellation: the request stops and sends no reply.
                if let Some(id) = crate::server::Server::cancelled_request(&notification) {
                    if let Some((_, cancel)) = lock(&entry.cancels).get(&id) {
                        cancel.cancel();
                    }
                }
                return Post::Answer(Answer::empty(202));
            }
            // The server-role codec never lets a response through; kept total.
            Message::Response(_) => return Post::Answer(Answer::empty(202)),
        };
        let in_flight = Arc::strong_count(&entry.in_flight) - 1;
        if in_flight >= self.config.max_in_flight_per_session {
            return Post::Answer(Answer::json(
                TOO_MANY_IN_FLIGHT_STATUS,
                refusal(
                    Some(&request.id),
                    Cause::InvalidRequest,
                    "too many requests in flight for this session",
                ),
            ));
        }
        let token = Arc::clone(&entry.in_flight);
        match entry.link.decide(server, request) {
            Decision::Answered(reply) => Post::Answer(Answer::reply(reply)),
            Decision::Modern(request) => Post::Modern(Message::Request(request)),
            Decision::Legacy(request, interaction) => Post::Serve(
                request,
                Call {
                    interaction,
                    _token: token,
                    cancels: Arc::clone(&entry.cancels),
                },
            ),
        }
    }

    /// A POSTed client response to a request the server sent (the server-role codec refused
    /// the frame as `rejection`): 202 when it answers a pending request of the caller's live
    /// session, 400 when it answers nothing pending, 404 for an unknown session. `None`: not
    /// the legacy path's (another refusal, no session id, stateless mode, the switch off);
    /// the host answers the rejection then.
    pub fn client_response(
        &self,
        server: &Server,
        caller: &Caller,
        session_id: Option<&str>,
        frame: &[u8],
        rejection: &crate::codec::Rejection,
        limits: &crate::codec::IngressLimits,
    ) -> Option<Answer> {
        if !server.legacy_era()
            || self.config.stateless
            || rejection.error != crate::codec::IngressError::UnexpectedResponse
        {
            return None;
        }
        let session_id = session_id?;
        let now = Instant::now();
        let mut table = lock(&self.table);
        let Some(entry) = self.live(&mut table, now, caller, session_id) else {
            return Some(not_found(None));
        };
        entry.last_seen = now;
        if let Err(r) = crate::codec::ingress::decode_client_response(frame, limits) {
            return Some(Answer::json(
                400,
                refusal(None, r.cause(), &r.error.to_string()),
            ));
        }
        match entry.link.client_response(server, frame, rejection, limits) {
            Some(true) => Some(Answer::empty(202)),
            _ => Some(Answer::json(
                400,
                refusal(
                    None,
                    Cause::InvalidRequest,
                    "the response answers no pending request of this session",
                ),
            )),
        }
    }

    /// A GET on `session_id`: attaches `stream` as the session's standalone stream, which
    /// then carries its subscriptions' updates and list changes. `Err`: 404 for an unknown,
    /// ended or foreign session, 409 when [`MAX_STREAMS_PER_SESSION`] are open already, 405 in
    /// stateless mode (no sessions).
    ///
    /// [`MAX_STREAMS_PER_SESSION`]: super::notify::MAX_STREAMS_PER_SESSION
    pub fn open_stream(
        &self,
        server: &Server,
        caller: &Caller,
        session_id: &str,
        stream: Arc<dyn super::notify::SessionStream>,
    ) -> Result<(), Answer> {
        if !server.legacy_era() || self.config.stateless {
            let mut answer = Answer::empty(405);
            answer.allow = Some("POST");
            return Err(answer);
        }
        let now = Instant::now();
        let mut table = lock(&self.table);
        let Some(entry) = self.live(&mut table, now, caller, session_id) else {
            return Err(not_found(None));
        };
        entry.last_seen = now;
        let Some(sink) = entry.link.session().and_then(|s| s.sink()) else {
            return Err(not_found(None));
        };
        if sink.attach(stream) {
            Ok(())
        } else {
            Err(Answer::json(
                STREAM_CONFLICT_STATUS,
                refusal(
                    None,
                    Cause::InvalidRequest,
                    "a standalone stream is already open for this session",
                ),
            ))
        }
    }

    /// The entry for `session_id` if it is live and `caller`'s; an expired one is removed.
    fn live<'t>(
        &self,
        table: &'t mut HashMap<String, Entry>,
        now: Instant,
        caller: &Caller,
        session_id: &str,
    ) -> Option<&'t mut Entry> {
        let expired = table
            .get(session_id)
            .is_some_and(|e| now.saturating_duration_since(e.last_seen) > self.config.idle_expiry);
        if expired {
            if let Some(entry) = table.remove(session_id) {
                entry.link.close();
            }
            return None;
        }
        table
            .get_mut(session_id)
            .filter(|e| e.principal.as_deref() == caller.principal())
    }

    fn stateless(server: &Server, version: Option<&str>, message: Message) -> Post {
        let version = LEGACY_VERSIONS
            .iter()
            .copied()
            .find(|v| Some(*v) == version)
            .unwrap_or(LATEST_LEGACY_VERSION);
        let request = match message {
            Message::Request(request) => request,
            _ => return Post::Answer(Answer::empty(202)),
        };
        match LegacyLink::established(version).decide(server, request) {
            Decision::Answered(reply) => Post::Answer(Answer::reply(reply)),
            Decision::Modern(request) => Post::Modern(Message::Request(request)),
            Decision::Legacy(request, interaction) => Post::Serve(
                request,
                Call {
                    interaction,
                    _token: Arc::new(()),
                    cancels: Arc::default(),
                },
            ),
        }
    }

    /// A non-POST request carrying `session_id`: DELETE ends the session (204), other methods
    /// are 405 (GET is [`Sessions::open_stream`]'s); an unknown or foreign id is 404. `None`:
    /// not the legacy path's (stateless mode, or the switch off), the modern 405 applies.
    pub fn other_method(
        &self,
        server: &Server,
        caller: &Caller,
        method: &str,
        session_id: &str,
    ) -> Option<Answer> {
        self.other_method_at(Instant::now(), server, caller, method, session_id)
    }

    /// [`Sessions::other_method`] at a given instant.
    pub fn other_method_at(
        &self,
        now: Instant,
        server: &Server,
        caller: &Caller,
        method: &str,
        session_id: &str,
    ) -> Option<Answer> {
        if !server.legacy_era() || self.config.stateless {
            return None;
        }
        let mut table = lock(&self.table);
        if self.live(&mut table, now, caller, session_id).is_none() {
            return Some(not_found(None));
        }
        if method == "DELETE" {
            if let Some(entry) = table.remove(session_id) {
                entry.link.close();
            }
            return Some(Answer::empty(204));
        }
        let mut answer = Answer::empty(405);
        answer.allow = Some("GET, POST, DELETE");
        Some(answer)
    }
}
