//! The client core: discovery, request ids, the response router, deadlines and cancellation.
//!
//! One reader task owns the transport's inbound side and routes every response to the request
//! waiting for exactly that id token. When the transport dies, every waiter is released
//! with the same typed cause and every later call fails at once (never hangs).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};

use crate::client::diagnostics::{self, Diagnostics, Leniency};
use crate::client::error::{
    ClientError, ConnectError, InvalidResult, RpcError, RpcErrorKind, TransportError,
};
use crate::client::extensions::{Declarations, ExtensionRegistry};
use crate::client::transport::{Inbound, Transport};
use crate::codec::ReplyTo;
use crate::wire::jsonrpc::{Message, Notification, Request, RequestId, Response};
use crate::wire::logging::LogLevel;
use crate::wire::meta::{OutgoingMeta, SERVER_INFO, SUBSCRIPTION_ID};
use crate::wire::result::{decode_lenient, decode_lenient_owned, CompleteResult, Decoded, Method};
use crate::wire::{methods, DiscoverResult, Implementation, PROTOCOL_REVISION};

/// How long a request waits for its reply unless the call says otherwise.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(30);

/// How many times [`Client::connect`] asks `server/discover` again after a -32022 whose
/// `data.supported` lists the revision this client speaks.
///
/// One: the client speaks a single revision, so a retry can only help against a transient
/// refusal; a server that refuses the version it just listed twice would refuse it forever.
pub const MAX_VERSION_RETRIES: usize = 1;

/// The longest deadline a call may ask for: a forgotten request must still end.
pub const MAX_DEADLINE: Duration = Duration::from_secs(600);

/// How many listen-stream messages wait for the application before the stream is ended as
/// overflowed (reported, never silently dropped).
pub const LISTEN_QUEUE_MESSAGES: usize = 256;

/// The most `notifications/message` one call delivers to its [`LogMessageSink`]; later ones
/// are dropped (and counted in [`Client::dropped_log_messages`]), so a chatty or hostile
/// server cannot flood the host. Equal to the server's own per-request cap.
pub const MAX_LOG_MESSAGES_PER_CALL: usize = 100;

/// One `notifications/message` delivered to the call that asked for it.
#[derive(Debug, Clone, PartialEq)]
pub struct LogMessage {
    /// `level`: at or above the level the call asked for (the log-level order).
    pub level: LogLevel,
    /// `logger`, if given.
    pub logger: Option<String>,
    /// `data`, any JSON.
    pub data: Value,
}

/// Receives a call's log messages until its reply arrives (only with
/// [`CallOptions::log_level`] set).
///
/// Over HTTP a message belongs to the request whose response stream carried it, so
/// concurrent calls each get exactly their own. Over stdio a `notifications/message` names no
/// request (its params are `level`, `logger`, `data` and a `_meta` that defines only a
/// listen stream's `subscriptionId`; it carries no request id or progress token), so a
/// message is attributed to a call only when exactly one call that asked for logs is
/// waiting; while several overlap, their messages are dropped rather than guessed (counted
/// in [`Client::dropped_log_messages`]).
#[derive(Clone)]
pub struct LogMessageSink(pub Arc<dyn Fn(LogMessage) + Send + Sync>);

impl std::fmt::Debug for LogMessageSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LogMessageSink")
    }
}

/// One `notifications/progress` for a call, numbers as the exact texts the server sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// `progress`.
    pub progress: String,
    /// `total`, if given.
    pub total: Option<String>,
    /// `message`, if given.
    pub message: Option<String>,
}

/// Receives a call's progress notifications until its reply arrives.
#[derive(Clone)]
pub struct ProgressSink(pub Arc<dyn Fn(Progress) + Send + Sync>);

impl std::fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProgressSink")
    }
}

/// Per-call settings: deadline, the capabilities this call supports, and `_meta` extras.
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    /// The deadline; [`DEFAULT_DEADLINE`] (or the client's default) when `None`.
    pub deadline: Option<Duration>,
    /// `clientCapabilities` for this call only (none by default).
    pub capabilities: Option<Value>,
    /// Opt this request into `notifications/message` at this level.
    pub log_level: Option<LogLevel>,
    /// `progressToken`, if the caller wants progress; with `on_progress` and no token the
    /// client picks a fresh one.
    pub progress_token: Option<Value>,
    /// Where this call's progress goes; nothing after the reply is delivered.
    pub on_progress: Option<ProgressSink>,
    /// Application `_meta` keys; reserved keys and MCP namespaces are refused.
    pub meta: Vec<(String, Value)>,
    /// Where this call's `notifications/message` go (with [`CallOptions::log_level`]); at
    /// most [`MAX_LOG_MESSAGES_PER_CALL`], only those at or above the level, nothing after
    /// the reply.
    pub on_log: Option<LogMessageSink>,
    /// Overrides [`ClientOptions::retry_header_mismatch`] for this call.
    pub retry_header_mismatch: Option<bool>,
    /// `Some(hard)`: each `notifications/progress` for this call restarts its deadline, but
    /// never past `hard` after the call began; `hard` lies in [deadline,
    /// [`MAX_DEADLINE`]]. A progress token is picked when none is set.
    pub reset_on_progress: Option<Duration>,
}

impl CallOptions {
    /// Options with this deadline.
    #[must_use]
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Options declaring these client capabilities for the call.
    #[must_use]
    pub fn capabilities(mut self, capabilities: Value) -> Self {
        self.capabilities = Some(capabilities);
        self
    }

    /// Options asking for this call's log messages at `level` and above, delivered to `sink`.
    #[must_use]
    pub fn logs(mut self, level: LogLevel, sink: LogMessageSink) -> Self {
        self.log_level = Some(level);
        self.on_log = Some(sink);
        self
    }
}

/// Client-wide settings.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// `clientInfo` sent with every request.
    pub client_info: Value,
    /// The deadline of calls that set none; at most [`MAX_DEADLINE`].
    pub default_deadline: Duration,
    /// Strict mode: every leniency (a missing `resultType`, a missing or invalid
    /// cache hint) is a typed error instead of a recorded diagnostic. Off by default: the
    /// spec asks clients to be lenient there.
    pub strict: bool,
    /// After a -32020 to `tools/call`, refresh `tools/list` and retry once with a new id.
    /// Off by default: nothing retries on its own. Safe for side effects:
    /// a -32020 is refused before the tool runs.
    pub retry_header_mismatch: bool,
    /// Codecs for extension payloads. Registering advertises nothing.
    pub extensions: ExtensionRegistry,
    /// After a -32022 to `server/discover` whose `data.supported` lists this client's
    /// revision, ask again up to [`MAX_VERSION_RETRIES`] times. On by default: discovery
    /// has no side effect. Off: the -32022 is returned at once.
    pub retry_unsupported_version: bool,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            client_info: serde_json::json!({
                "name": "strict-mcp",
                "version": env!("CARGO_PKG_VERSION"),
            }),
            default_deadline: DEFAULT_DEADLINE,
            strict: false,
            retry_header_mismatch: false,
            extensions: ExtensionRegistry::new(),
            retry_unsupported_version: true,
        }
    }
}

/// What `server/discover` returned, typed and kept on the client.
#[derive(Debug, Clone)]
pub struct Discovery {
    /// The whole result: `supportedVersions`, `capabilities`, `instructions`, `ttlMs`,
    /// `cacheScope`, `_meta`.
    pub result: DiscoverResult,
    /// The server identity from the result's `_meta`, when it sent one.
    pub server_info: Option<Implementation>,
    /// `capabilities.extensions`, each declaration byte-exact and in wire order;
    /// decode one with [`Declarations::decode`] and a codec of [`ClientOptions::extensions`].
    pub extensions: Declarations,
}

/// What a pending request receives.
enum Reply {
    Response(Response),
    Rejected(String),
    Dead(TransportError),
}

/// What a listen stream receives, in arrival order.
pub(crate) enum ListenMsg {
    Notification(Notification),
    Response(Response),
}

struct Pending {
    reply: oneshot::Sender<Reply>,
    /// The call's progress key: its sink is dropped the moment the reply is routed.
    progress: Option<String>,
}

pub(crate) struct ListenSlot {
    pub(crate) tx: mpsc::Sender<ListenMsg>,
    pub(crate) overflowed: Arc<std::sync::atomic::AtomicBool>,
}

#[derive(Default)]
struct State {
    pending: HashMap<String, Pending>,
    /// Progress sinks by the exact JSON text of their token.
    progress: HashMap<String, ProgressSink>,
    listens: HashMap<String, ListenSlot>,
    /// Pending calls that asked for log messages, by request id token.
    logs: HashMap<String, LogSlot>,
    dead: Option<TransportError>,
}

/// The log channel of one pending call.
struct LogSlot {
    threshold: LogLevel,
    sink: Option<LogMessageSink>,
    delivered: usize,
}

pub(crate) struct Shared {
    pub(crate) transport: Arc<dyn Transport>,
    options: ClientOptions,
    next_id: AtomicU64,
    next_token: AtomicU64,
    state: Mutex<State>,
    reader: Mutex<Option<tokio::task::AbortHandle>>,
    pub(crate) output_schemas: Mutex<HashMap<String, OutputSchema>>,
    diagnostics: Mutex<Diagnostics>,
    /// Log messages not delivered: past the per-call cap, ambiguous, or for no call.
    dropped_logs: AtomicU64,
    /// The `_meta` of a call that adds nothing to it (protocol version, empty capabilities,
    /// `clientInfo`), written once.
    static_meta: Box<RawValue>,
}

/// `_meta` as JSON text, checked (an application key may be refused).
fn write_meta(meta: &OutgoingMeta<'_>) -> Result<Box<RawValue>, ClientError> {
    let text = meta
        .write()
        .map_err(|e| ClientError::Request(e.to_string()))?;
    RawValue::from_string(text).map_err(|e| ClientError::Request(e.to_string()))
}

/// A request's params as sent: `_meta` first, then the caller's members in map order, then
/// the one member kept as exact text (tool arguments whose numbers must not pass through
/// `Value`), if any.
struct ParamsOut<'a> {
    meta: &'a RawValue,
    params: &'a Map<String, Value>,
    exact: Option<(&'a str, &'a RawValue)>,
}

impl serde::Serialize for ParamsOut<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let exact = usize::from(self.exact.is_some());
        let mut map = serializer.serialize_map(Some(self.params.len() + 1 + exact))?;
        map.serialize_entry("_meta", self.meta)?;
        for (key, value) in self.params {
            map.serialize_entry(key, value)?;
        }
        if let Some((key, value)) = self.exact {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// A tool's compiled output schema, or why it could not be compiled.
pub(crate) type OutputSchema = Result<Arc<crate::core::schema::CompiledSchema>, String>;

impl Drop for Shared {
    fn drop(&mut self) {
        if let Some(reader) = lock(&self.reader).take() {
            reader.abort();
        }
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A connected strict client. Cheap to clone; clones share the connection.
#[derive(Clone)]
pub struct Client {
    pub(crate) shared: Arc<Shared>,
    discovery: Arc<Discovery>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("server_info", &self.discovery.server_info)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Connects over `transport`: sends `server/discover` first and accepts the server only
    /// when its `supportedVersions` contains `2026-07-28`. No `initialize`, no
    /// fallback: a failed discovery ends here. Needs a Tokio runtime (spawns the reader).
    ///
    /// # Errors
    /// [`ConnectError`]: the server's versions, the legacy-server message, or the
    /// discovery failure itself.
    pub async fn connect(
        transport: Arc<dyn Transport>,
        options: ClientOptions,
    ) -> Result<Client, ConnectError> {
        if let Err(e) = check_deadline(options.default_deadline) {
            return Err(ConnectError::Discover(Box::new(e)));
        }
        let static_meta = write_meta(&OutgoingMeta {
            client_info: Some(&options.client_info),
            ..OutgoingMeta::default()
        })
        .map_err(|e| ConnectError::Discover(Box::new(e)))?;
        let shared = Arc::new(Shared {
            static_meta,
            transport: Arc::clone(&transport),
            options,
            next_id: AtomicU64::new(1),
            next_token: AtomicU64::new(1),
            state: Mutex::new(State::default()),
            reader: Mutex::new(None),
            output_schemas: Mutex::new(HashMap::new()),
            diagnostics: Mutex::new(Diagnostics::default()),
            dropped_logs: AtomicU64::new(0),
        });
        // A transport that reads in its own task routes each frame there (one hand-off from
        // the reading task to the waiting caller); any other is read by a reader task here.
        let weak = Arc::downgrade(&shared);
        let attached = transport.attach(Box::new(move |frame| {
            if let Some(shared) = weak.upgrade() {
                shared.take(frame);
            }
        }));
        if !attached {
            let reader = tokio::spawn(read_loop(transport, Arc::downgrade(&shared)));
            *lock(&shared.reader) = Some(reader.abort_handle());
        }
        let mut retries = 0;
        let outcome = loop {
            let outcome = shared
                .round_trip_raw(methods::DISCOVER, Map::new(), &CallOptions::default())
                .await
                .and_then(|raw| {
                    let value = parse_result(methods::DISCOVER, &raw)?;
                    let value = shared.lenient(Method::ServerDiscover, value)?;
                    Ok((raw, value))
                });
            // B15: a -32022 that lists our revision as supported is asked again, at most
            // MAX_VERSION_RETRIES times (under a fresh id); one that does not list it is an
            // incompatibility, reported with the server's versions.
            let Err(ClientError::Rpc(e)) = &outcome else {
                break outcome;
            };
            if e.kind != RpcErrorKind::UnsupportedProtocolVersion {
                break outcome;
            }
            let Some(supported) = supported_versions(e.data.as_ref()) else {
                break outcome;
            };
            if !supported.iter().any(|v| v == PROTOCOL_REVISION) {
                return Err(ConnectError::UnsupportedVersions {
                    versions: supported,
                });
            }
            if !shared.options.retry_unsupported_version || retries == MAX_VERSION_RETRIES {
                break outcome;
            }
            retries += 1;
            tracing::debug!(
                "server/discover was refused with -32022 although the server lists {PROTOCOL_REVISION}; asking again"
            );
        };
        let (raw, value) = match outcome {
            Ok(pair) => pair,
            Err(ClientError::Rpc(RpcError {
                kind: RpcErrorKind::Standard(crate::wire::jsonrpc::ErrorCode::MethodNotFound),
                ..
            })) => return Err(ConnectError::LegacyServer),
            Err(e) => return Err(ConnectError::Discover(Box::new(e))),
        };
        let mut discovery = read_discovery(&value)?;
        discovery.extensions = Declarations::from_discovery(raw.get());
        Ok(Client {
            shared,
            discovery: Arc::new(discovery),
        })
    }

    /// What discovery returned.
    #[must_use]
    pub fn discovery(&self) -> &Discovery {
        &self.discovery
    }

    /// Sends one request and decodes its result for `method` (lenient client decoding).
    /// `params` must not contain `_meta`: the client writes it.
    ///
    /// # Errors
    /// Any [`ClientError`] but the convenience ones.
    pub async fn request(
        &self,
        method: Method,
        params: Map<String, Value>,
        options: &CallOptions,
    ) -> Result<Decoded, ClientError> {
        let value = self
            .shared
            .round_trip(method.name(), params, options)
            .await?;
        let value = self.shared.lenient(method, value)?;
        decode_lenient_owned(method, value).map_err(|error| {
            ClientError::Invalid(InvalidResult::Result {
                method: method.name().to_owned(),
                error,
            })
        })
    }

    /// Closes the transport; pending and later calls fail with a transport error.
    pub async fn close(&self) {
        self.shared.transport.close().await;
        self.shared.die(TransportError::Closed);
    }

    /// The error that ended the transport, if it has ended.
    #[must_use]
    pub fn failure(&self) -> Option<TransportError> {
        lock(&self.shared.state).dead.clone()
    }

    /// The leniencies recorded so far, oldest first, at most
    /// [`diagnostics::MAX_DIAGNOSTICS`], and how many older ones were dropped.
    #[must_use]
    pub fn diagnostics(&self) -> (Vec<Leniency>, u64) {
        lock(&self.shared.diagnostics).snapshot()
    }

    /// As [`Client::diagnostics`], and clears them.
    pub fn take_diagnostics(&self) -> (Vec<Leniency>, u64) {
        lock(&self.shared.diagnostics).take()
    }

    /// How many `notifications/message` were not delivered: past
    /// [`MAX_LOG_MESSAGES_PER_CALL`], below the call's level, while several logging calls
    /// overlapped, malformed, or with no logging call waiting.
    #[must_use]
    pub fn dropped_log_messages(&self) -> u64 {
        self.shared.dropped_logs.load(Ordering::Relaxed)
    }

    /// The options this client was connected with.
    #[must_use]
    pub fn options(&self) -> &ClientOptions {
        &self.shared.options
    }

    /// An extension method's result came without `resultType`: read as `complete` and
    /// recorded, or refused in strict mode (as core results are).
    pub(crate) fn lenient_result_type(&self, method: &str) -> Result<(), ClientError> {
        let leniency = Leniency::MissingResultType {
            method: method.to_owned(),
        };
        if self.shared.options.strict {
            return Err(ClientError::Invalid(InvalidResult::Lenient(leniency)));
        }
        tracing::debug!(%leniency, "read leniently");
        lock(&self.shared.diagnostics).record(leniency);
        Ok(())
    }
}

/// `data.supported` of a -32022, when it is a list of strings.
fn supported_versions(data: Option<&Value>) -> Option<Vec<String>> {
    data?
        .get("supported")?
        .as_array()?
        .iter()
        .map(|v| v.as_str().map(str::to_owned))
        .collect()
}

/// A success result's text as JSON.
fn parse_result(method: &str, raw: &RawValue) -> Result<Value, ClientError> {
    serde_json::from_str(raw.get()).map_err(|e| {
        ClientError::Invalid(InvalidResult::Frame {
            method: method.to_owned(),
            reason: e.to_string(),
        })
    })
}

/// Checks the discovery result before and after typing it.
fn read_discovery(value: &Value) -> Result<Discovery, ConnectError> {
    let object = value.as_object();
    let versions = object.and_then(|o| o.get("supportedVersions"));
    match versions {
        Some(Value::Array(list)) => {
            let versions: Vec<String> = list
                .iter()
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect();
            if !versions.iter().any(|v| v == PROTOCOL_REVISION) {
                return Err(ConnectError::UnsupportedVersions { versions });
            }
        }
        // An `initialize` result (protocolVersion + serverInfo, no supportedVersions).
        None if object.is_some_and(|o| o.contains_key("protocolVersion")) => {
            return Err(ConnectError::LegacyServer);
        }
        _ => {}
    }
    let decoded = decode_lenient(Method::ServerDiscover, value).map_err(|error| {
        ConnectError::Discover(Box::new(ClientError::Invalid(InvalidResult::Result {
            method: methods::DISCOVER.to_owned(),
            error,
        })))
    })?;
    let Decoded::Complete(CompleteResult::ServerDiscover(result)) = decoded else {
        return Err(ConnectError::Discover(Box::new(ClientError::Invalid(
            InvalidResult::Frame {
                method: methods::DISCOVER.to_owned(),
                reason: "discovery did not complete".to_owned(),
            },
        ))));
    };
    let server_info = value
        .get("_meta")
        .and_then(|m| m.get(SERVER_INFO))
        .and_then(|v| serde_json::from_value(v.clone()).ok());
    Ok(Discovery {
        result: *result,
        server_info,
        extensions: Declarations::default(),
    })
}

pub(crate) fn check_deadline(deadline: Duration) -> Result<(), ClientError> {
    if deadline.is_zero() || deadline > MAX_DEADLINE {
        return Err(ClientError::Request(format!(
            "deadline {deadline:?} is outside (0, {MAX_DEADLINE:?}]"
        )));
    }
    Ok(())
}

impl Shared {
    /// Applies the lenient readings `method`'s result needs, recording each (or, in strict
    /// mode, refusing the result with the first).
    pub(crate) fn lenient(&self, method: Method, mut value: Value) -> Result<Value, ClientError> {
        let found = diagnostics::inspect(method, &mut value);
        if self.options.strict {
            if let Some(first) = found.into_iter().next() {
                return Err(ClientError::Invalid(InvalidResult::Lenient(first)));
            }
            return Ok(value);
        }
        if !found.is_empty() {
            let mut d = lock(&self.diagnostics);
            for leniency in found {
                tracing::debug!(%leniency, "read leniently");
                d.record(leniency);
            }
        }
        Ok(value)
    }

    /// Releases every waiter with `cause`; later calls fail fast with it.
    fn die(&self, cause: TransportError) {
        let (pending, listens) = {
            let mut state = lock(&self.state);
            if state.dead.is_none() {
                state.dead = Some(cause.clone());
            }
            state.logs.clear();
            (
                std::mem::take(&mut state.pending),
                std::mem::take(&mut state.listens),
            )
        };
        let cause = lock(&self.state).dead.clone().unwrap_or(cause);
        for (_, p) in pending {
            let _ = p.reply.send(Reply::Dead(cause.clone()));
        }
        drop(listens);
    }

    pub(crate) fn dead(&self) -> Option<TransportError> {
        lock(&self.state).dead.clone()
    }

    /// A fresh id: never one that is still pending.
    fn fresh_id(&self, state: &State) -> RequestId {
        loop {
            // Wraps within the non-negative i64 range, so ids stay distinct integers.
            let n = self.next_id.fetch_add(1, Ordering::Relaxed) % i64::MAX.unsigned_abs();
            let id = RequestId::integer(i64::try_from(n).unwrap_or(0));
            if !state.pending.contains_key(id.token()) && !state.listens.contains_key(id.token()) {
                return id;
            }
        }
    }

    /// Builds a request's params: the caller's members plus the `_meta` the client owns.
    pub(crate) fn params(
        &self,
        params: Map<String, Value>,
        options: &CallOptions,
    ) -> Result<Box<RawValue>, ClientError> {
        self.params_exact(params, None, options)
    }

    /// [`Shared::params`] plus one member sent as exact text after the others.
    fn params_exact(
        &self,
        params: Map<String, Value>,
        exact: Option<(&str, &RawValue)>,
        options: &CallOptions,
    ) -> Result<Box<RawValue>, ClientError> {
        if let Some((key, _)) = exact {
            if key == "_meta" || params.contains_key(key) {
                return Err(ClientError::Request(format!(
                    "params would carry `{key}` twice or as `_meta`"
                )));
            }
        }
        if params.contains_key("_meta") {
            return Err(ClientError::Request(
                "params must not contain `_meta`; pass application keys in CallOptions::meta"
                    .to_owned(),
            ));
        }
        // I16, O73: the capabilities a call declares must have the schema's shape (e.g.
        // `elicitation: {form?, url?}`), or the server would judge a request we never meant.
        if let Some(capabilities) = &options.capabilities {
            serde_json::from_value::<crate::wire::ClientCapabilities>(capabilities.clone())
                .map_err(|e| ClientError::Request(format!("invalid clientCapabilities: {e}")))?;
        }
        // The common call (no capabilities, token, level or application keys) reuses the
        // `_meta` written once at connect instead of writing it per request.
        let built;
        let meta: &RawValue = if options.capabilities.is_none()
            && options.progress_token.is_none()
            && options.log_level.is_none()
            && options.meta.is_empty()
        {
            &self.static_meta
        } else {
            let extra: Vec<(&str, Value)> = options
                .meta
                .iter()
                .map(|(k, v)| (k.as_str(), v.clone()))
                .collect();
            built = write_meta(&OutgoingMeta {
                capabilities: options.capabilities.as_ref(),
                client_info: Some(&self.options.client_info),
                progress_token: options.progress_token.as_ref(),
                log_level: options.log_level,
                extra: &extra,
            })?;
            &built
        };
        serde_json::value::to_raw_value(&ParamsOut {
            meta,
            params: &params,
            exact,
        })
        .map_err(|e| ClientError::Request(e.to_string()))
    }

    pub(crate) fn deadline_of(&self, options: &CallOptions) -> Result<Duration, ClientError> {
        let deadline = options.deadline.unwrap_or(self.options.default_deadline);
        check_deadline(deadline)?;
        Ok(deadline)
    }

    /// One request, one reply: the result object as JSON, or the typed failure.
    pub(crate) async fn round_trip(
        self: &Arc<Self>,
        method: &str,
        params: Map<String, Value>,
        options: &CallOptions,
    ) -> Result<Value, ClientError> {
        let raw = self.round_trip_raw(method, params, options).await?;
        parse_result(method, &raw)
    }

    /// [`Shared::round_trip`], the result exactly as received.
    pub(crate) async fn round_trip_raw(
        self: &Arc<Self>,
        method: &str,
        params: Map<String, Value>,
        options: &CallOptions,
    ) -> Result<Box<RawValue>, ClientError> {
        self.round_trip_exact(method, params, None, options).await
    }

    /// [`Shared::round_trip_raw`] with one params member sent as exact text.
    pub(crate) async fn round_trip_exact(
        self: &Arc<Self>,
        method: &str,
        params: Map<String, Value>,
        exact: Option<(&str, &RawValue)>,
        options: &CallOptions,
    ) -> Result<Box<RawValue>, ClientError> {
        let deadline = self.deadline_of(options)?;
        let hard = match options.reset_on_progress {
            None => deadline,
            Some(hard) => {
                check_deadline(hard)?;
                if hard < deadline {
                    return Err(ClientError::Request(format!(
                        "the progress hard maximum {hard:?} is below the deadline {deadline:?}"
                    )));
                }
                hard
            }
        };
        let mut options = std::borrow::Cow::Borrowed(options);
        // J13: progress restarts the deadline; the reader records when the last one came.
        let beat: Option<Arc<Mutex<Option<tokio::time::Instant>>>> =
            options.reset_on_progress.map(|_| Arc::default());
        if let Some(beat) = &beat {
            let user = options.on_progress.clone();
            let beat = Arc::clone(beat);
            options.to_mut().on_progress = Some(ProgressSink(Arc::new(move |p| {
                *lock(&beat) = Some(tokio::time::Instant::now());
                if let Some(user) = &user {
                    (user.0)(p);
                }
            })));
        }
        if options.on_progress.is_some() && options.progress_token.is_none() {
            let n = self.next_token.fetch_add(1, Ordering::Relaxed);
            options.to_mut().progress_token = Some(Value::String(format!("progress-{n}")));
        }
        let params = self.params_exact(params, exact, &options)?;
        let (tx, rx) = oneshot::channel();
        let progress_key = match (&options.on_progress, &options.progress_token) {
            (Some(sink), Some(token)) => Some((token.to_string(), sink.clone())),
            _ => None,
        };
        let id = {
            let mut state = lock(&self.state);
            if let Some(dead) = &state.dead {
                return Err(ClientError::Transport(dead.clone()));
            }
            let id = self.fresh_id(&state);
            state.pending.insert(
                id.token().to_owned(),
                Pending {
                    reply: tx,
                    progress: progress_key.as_ref().map(|(key, _)| key.clone()),
                },
            );
            if let Some((key, sink)) = &progress_key {
                state.progress.insert(key.clone(), sink.clone());
            }
            if let Some(threshold) = options.log_level {
                state.logs.insert(
                    id.token().to_owned(),
                    LogSlot {
                        threshold,
                        sink: options.on_log.clone(),
                        delivered: 0,
                    },
                );
            }
            id
        };
        let mut guard = InFlight {
            shared: self,
            id: id.clone(),
            progress: progress_key.map(|(key, _)| key),
            sent: false,
            done: false,
        };
        let message = Message::Request(Request {
            id,
            method: method.to_owned(),
            params: Some(params),
        });
        // The deadline covers the send too: a blocked pipe must not hang the caller.
        let start = tokio::time::Instant::now();
        let hard = start + hard;
        let mut until = start + deadline;
        let timed_out = |until: tokio::time::Instant| ClientError::Deadline {
            method: method.to_owned(),
            deadline: until - start,
        };
        let Ok(sent) = tokio::time::timeout_at(until, self.transport.send_request(&message)).await
        else {
            return Err(timed_out(until));
        };
        match sent {
            Ok(answer) => {
                guard.sent = true;
                // Read by the transport in this task: routed here, so the reply below is
                // already waiting (no hand-off through the reader task).
                if let Some(answer) = answer {
                    self.route(answer);
                }
            }
            Err(e) => {
                guard.done = true;
                {
                    let mut state = lock(&self.state);
                    state.pending.remove(guard.id.token());
                    state.logs.remove(guard.id.token());
                }
                if e.is_fatal() {
                    self.die(e.clone());
                    return Err(ClientError::Transport(self.dead().unwrap_or(e)));
                }
                return Err(ClientError::Transport(e));
            }
        }
        let mut rx = rx;
        let reply = loop {
            match tokio::time::timeout_at(until, &mut rx).await {
                Ok(Ok(reply)) => break reply,
                // The sender went away without a reply: only `die` does that, after recording
                // why.
                Ok(Err(_)) => break Reply::Dead(self.dead().unwrap_or(TransportError::Closed)),
                Err(_) => {
                    let last = beat.as_ref().and_then(|b| *lock(b));
                    match last.map(|t| (t + deadline).min(hard)) {
                        Some(next) if next > until => until = next,
                        _ => return Err(timed_out(until)),
                    }
                }
            }
        };
        guard.done = true;
        // However the call ended (a refused frame, a dead transport), its log channel closes
        // with it: a stale one would make every later message look ambiguous.
        lock(&self.state).logs.remove(guard.id.token());
        match reply {
            Reply::Dead(cause) => Err(ClientError::Transport(cause)),
            Reply::Rejected(reason) => Err(ClientError::Invalid(InvalidResult::Frame {
                method: method.to_owned(),
                reason,
            })),
            Reply::Response(Response::Error(e)) => {
                Err(ClientError::Rpc(RpcError::from_object(method, &e.error)))
            }
            Reply::Response(Response::Success(s)) => Ok(s.result),
        }
    }

    /// Registers a listen stream under a fresh id and sends its request.
    pub(crate) async fn open_listen(
        self: &Arc<Self>,
        params: Map<String, Value>,
        options: &CallOptions,
    ) -> Result<
        (
            RequestId,
            mpsc::Receiver<ListenMsg>,
            Arc<std::sync::atomic::AtomicBool>,
        ),
        ClientError,
    > {
        let params = self.params(params, options)?;
        let (tx, rx) = mpsc::channel(LISTEN_QUEUE_MESSAGES);
        let overflowed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let id = {
            let mut state = lock(&self.state);
            if let Some(dead) = &state.dead {
                return Err(ClientError::Transport(dead.clone()));
            }
            let id = self.fresh_id(&state);
            state.listens.insert(
                id.token().to_owned(),
                ListenSlot {
                    tx,
                    overflowed: Arc::clone(&overflowed),
                },
            );
            id
        };
        let message = Message::Request(Request {
            id: id.clone(),
            method: methods::LISTEN.to_owned(),
            params: Some(params),
        });
        // Dropped before the send finished (the deadline passed): forget the slot silently,
        // the request never reached the wire.
        let mut unsent = UnsentListen {
            shared: self,
            id: Some(id.clone()),
        };
        if let Err(e) = self.transport.send(&message).await {
            drop(unsent);
            if e.is_fatal() {
                self.die(e.clone());
            }
            return Err(ClientError::Transport(e));
        }
        unsent.id = None;
        Ok((id, rx, overflowed))
    }

    /// Forgets a listen stream and, when it reached the wire, cancels it.
    pub(crate) fn close_listen(self: &Arc<Self>, id: &RequestId, announce: bool) {
        let removed = lock(&self.state).listens.remove(id.token()).is_some();
        if removed && announce {
            self.announce_cancel(id, None);
        }
    }

    /// Sends `notifications/cancelled` for `id` (its exact raw token) in the background.
    fn announce_cancel(self: &Arc<Self>, id: &RequestId, reason: Option<&str>) {
        if !self.transport.announces_cancellation() || self.dead().is_some() {
            return;
        }
        // J14: say why; a caller stops waiting only by its deadline or by dropping the call.
        tracing::debug!(
            id = %id.token(),
            reason = reason.unwrap_or("the caller stopped waiting (deadline passed or call dropped)"),
            "cancelling a request"
        );
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let params = crate::wire::progress::cancelled_params(id, reason);
        let Ok(params) = RawValue::from_string(params) else {
            return;
        };
        let transport = Arc::clone(&self.transport);
        runtime.spawn(async move {
            let message = Message::Notification(Notification {
                method: methods::CANCELLED.to_owned(),
                params: Some(params),
            });
            let _ = transport.send(&message).await;
        });
    }
}

/// A listen slot whose request has not reached the wire yet.
struct UnsentListen<'a> {
    shared: &'a Arc<Shared>,
    id: Option<RequestId>,
}

impl Drop for UnsentListen<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            lock(&self.shared.state).listens.remove(id.token());
        }
    }
}

/// A request between sending and its reply. Dropped early (the caller's future was dropped,
/// or the deadline passed), it forgets the request and, only if it reached the wire,
/// announces the cancellation with the raw id.
struct InFlight<'a> {
    shared: &'a Arc<Shared>,
    id: RequestId,
    /// The progress sink's key, removed however the request ends.
    progress: Option<String>,
    sent: bool,
    done: bool,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if let Some(key) = self.progress.take() {
            lock(&self.shared.state).progress.remove(&key);
        }
        if self.done {
            return;
        }
        let was_pending = {
            let mut state = lock(&self.shared.state);
            state.logs.remove(self.id.token());
            state.pending.remove(self.id.token()).is_some()
        };
        if self.sent && was_pending {
            self.shared.announce_cancel(&self.id, None);
        }
    }
}

/// The reader: routes each inbound frame until the transport ends.
async fn read_loop(transport: Arc<dyn Transport>, shared: Weak<Shared>) {
    loop {
        let inbound = transport.recv().await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let fatal = inbound.as_ref().is_err_and(TransportError::is_fatal);
        shared.take(inbound);
        if fatal {
            return;
        }
    }
}

impl Shared {
    /// One frame or error from the transport: routed, or (fatal) the end of every waiter.
    fn take(&self, inbound: Result<Inbound, TransportError>) {
        match inbound {
            Ok(inbound) => self.route(inbound),
            Err(e) if !e.is_fatal() => {}
            Err(e) => self.die(e),
        }
    }

    /// Routes one inbound frame to its waiter, stream or sink.
    fn route(&self, inbound: Inbound) {
        match inbound {
            Inbound::Message(Message::Response(response)) => self.route_response(response),
            Inbound::Message(Message::Notification(n)) => self.route_notification(n, None),
            Inbound::OnStream {
                request,
                message: Message::Notification(n),
            } => self.route_notification(n, Some(request.token())),
            Inbound::OnStream { message, .. } => self.route(Inbound::Message(message)),
            // Servers send no requests in this revision; never answered (A12).
            Inbound::Message(Message::Request(r)) => {
                tracing::debug!(method = %r.method, "ignoring a request from the server");
            }
            Inbound::Rejected(rejection) => {
                if let ReplyTo::Id(id) = &rejection.reply_to {
                    let pending = lock(&self.state).pending.remove(id.token());
                    if let Some(p) = pending {
                        let _ = p.reply.send(Reply::Rejected(rejection.error.to_string()));
                        return;
                    }
                }
                tracing::debug!(%rejection, "ignoring a refused frame");
            }
        }
    }

    fn route_response(&self, response: Response) {
        let Some(id) = response.id() else {
            tracing::debug!("ignoring an error response with a null id");
            return;
        };
        let token = id.token().to_owned();
        let mut state = lock(&self.state);
        if let Some(p) = state.pending.remove(&token) {
            if let Some(key) = &p.progress {
                state.progress.remove(key);
            }
            // Log messages are delivered only before the reply (L2).
            state.logs.remove(&token);
            drop(state);
            let _ = p.reply.send(Reply::Response(response));
            return;
        }
        if let Some(slot) = state.listens.get(&token) {
            deliver(slot, ListenMsg::Response(response));
            state.listens.remove(&token);
            return;
        }
        tracing::debug!(id = %token, "ignoring a response to no pending request");
    }

    /// `stream`: the id token of the request whose response stream carried `n`, if any.
    fn route_notification(&self, n: Notification, stream: Option<&str>) {
        if n.method == methods::PROGRESS {
            self.route_progress(&n);
            return;
        }
        if n.method == methods::MESSAGE {
            self.route_log(&n, stream);
            return;
        }
        let key = match n.method.as_str() {
            methods::CANCELLED => crate::wire::progress::cancelled_request(n.params.as_deref())
                .map(|id| id.token().to_owned()),
            _ => subscription_id(n.params.as_deref()),
        };
        let Some(key) = key else {
            tracing::debug!(method = %n.method, "notification for no stream");
            return;
        };
        let mut state = lock(&self.state);
        let full = match state.listens.get(&key) {
            Some(slot) => !deliver(slot, ListenMsg::Notification(n)),
            None => false,
        };
        if full {
            state.listens.remove(&key);
        }
    }
}

impl Shared {
    /// Hands a progress notification to its call's sink; malformed or unknown ones are
    /// diagnostics only (never answered).
    fn route_progress(&self, n: &Notification) {
        let Some(params) = n.params.as_deref() else {
            return;
        };
        let Ok(p) = crate::wire::progress::read_progress(params) else {
            tracing::debug!("ignoring malformed progress");
            return;
        };
        let key = serde_json::from_str::<Value>(p.token.get())
            .map(|v| v.to_string())
            .unwrap_or_default();
        let sink = lock(&self.state).progress.get(&key).cloned();
        if let Some(sink) = sink {
            (sink.0)(Progress {
                progress: p.progress.get().to_owned(),
                total: p.total.map(|t| t.get().to_owned()),
                message: p.message,
            });
        }
    }
}

impl Shared {
    /// Hands a `notifications/message` to the call it belongs to, if its level is at or above
    /// that call's threshold and the call's cap is not reached. It belongs to the request
    /// whose response stream carried it (HTTP); otherwise (stdio: the message names no
    /// request) to the one waiting call that asked for logs, and to none while several wait.
    fn route_log(&self, n: &Notification, stream: Option<&str>) {
        let dropped = || {
            self.dropped_logs.fetch_add(1, Ordering::Relaxed);
        };
        let Some(message) = n.params.as_deref().and_then(read_log_message) else {
            tracing::debug!("ignoring a malformed log message");
            dropped();
            return;
        };
        let sink = {
            let mut state = lock(&self.state);
            let slot = match stream {
                Some(owner) => state.logs.get_mut(owner),
                None => {
                    let mut slots = state.logs.values_mut();
                    match (slots.next(), slots.next()) {
                        (Some(slot), None) => Some(slot),
                        _ => None,
                    }
                }
            };
            let Some(slot) = slot else {
                drop(state);
                tracing::debug!("log message for no single waiting call");
                dropped();
                return;
            };
            if message.level < slot.threshold || slot.delivered >= MAX_LOG_MESSAGES_PER_CALL {
                None
            } else {
                slot.delivered += 1;
                slot.sink.clone()
            }
        };
        match sink {
            Some(sink) => (sink.0)(message),
            None => dropped(),
        }
    }
}

/// The params of a `notifications/message`: `level` and `data` required, `logger` optional;
/// anything else (an unknown level, a missing `data`, a non-string `logger`) is `None`.
fn read_log_message(params: &RawValue) -> Option<LogMessage> {
    let mut p: Map<String, Value> = serde_json::from_str(params.get()).ok()?;
    let level = match p.get("level")? {
        Value::String(level) => LogLevel::parse(level)?,
        _ => return None,
    };
    let logger = match p.remove("logger") {
        None => None,
        Some(Value::String(logger)) => Some(logger),
        Some(_) => return None,
    };
    Some(LogMessage {
        level,
        logger,
        data: p.remove("data")?,
    })
}

/// Queues a stream message; `false` when the stream overflowed (and is then dropped).
fn deliver(slot: &ListenSlot, msg: ListenMsg) -> bool {
    match slot.tx.try_send(msg) {
        Ok(()) => true,
        Err(mpsc::error::TrySendError::Closed(_)) => true,
        Err(mpsc::error::TrySendError::Full(_)) => {
            slot.overflowed.store(true, Ordering::Relaxed);
            false
        }
    }
}

/// The exact JSON text of `params._meta.subscriptionId`, the stream key.
fn subscription_id(params: Option<&RawValue>) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct P<'a> {
        #[serde(rename = "_meta", borrow)]
        meta: Option<&'a RawValue>,
    }
    let p: P<'_> = serde_json::from_str(params?.get()).ok()?;
    let meta: HashMap<String, Box<RawValue>> = serde_json::from_str(p.meta?.get()).ok()?;
    meta.get(SUBSCRIPTION_ID).map(|raw| raw.get().to_owned())
}
