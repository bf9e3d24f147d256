//! One legacy session's lifecycle (2025-06-18 / 2025-11-25 `basic/lifecycle`): `initialize`
//! with the negotiated version and capabilities, `notifications/initialized`, `ping` and
//! `logging/setLevel`. Everything else a session receives is rewritten by [`super::translate`]
//! and served by the dispatcher.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::era::{has_modern_meta, negotiate, starts_legacy_session};
use super::interact::{Interaction, Peer};
use super::notify::{SessionSink, SessionStream, SubscribeError};
use super::outbox::LegacyOutbox;
use super::translate::{self, Original};
use crate::server::encode::{encode_result_raw, error_reply};
use crate::server::{Cause, Outbox, Reply, Server};
use crate::wire::jsonrpc::{Notification, Request, RequestId};
use crate::wire::logging::LogLevel;

/// What the era rule decided for one request ([`LegacyLink::decide`]).
#[derive(Debug)]
pub enum Decision {
    /// Answered here (a lifecycle method or a refusal): write this reply.
    Answered(Reply),
    /// A modern request: serve it unchanged, as without the feature.
    Modern(Request),
    /// A request of the legacy session, rewritten into a stateless 2026-07-28 request, served
    /// by the interaction loop ([`Interaction::run`]), which rewrites its reply back.
    Legacy(Request, Interaction),
}

/// What the host does with one request.
pub enum Route {
    /// Answered here (a lifecycle method or a refusal): write this reply.
    Answered(Reply),
    /// Hand this modern request to [`Server::serve`] with this outbox, unchanged.
    Serve(Request, Arc<dyn Outbox>),
    /// Serve this rewritten legacy request with [`Interaction::run`] and the host's outbox.
    Legacy(Request, Interaction),
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Route::Answered(reply) => f.debug_tuple("Answered").field(reply).finish(),
            Route::Serve(request, _) => f.debug_tuple("Serve").field(request).finish(),
            Route::Legacy(request, _) => f.debug_tuple("Legacy").field(request).finish(),
        }
    }
}

/// The state of one legacy session: what `initialize` negotiated and what `logging/setLevel`
/// chose. Fixed at `initialize` except the log level.
#[derive(Debug, Clone)]
pub struct LegacySession {
    version: &'static str,
    initialized: bool,
    log_level: Option<LogLevel>,
    /// The 2026-07-28 `clientCapabilities` its requests carry (what the client declared at
    /// `initialize` that the interaction loop can serve, O127).
    lent: String,
    /// The client side (server-sent requests awaiting answers); `None` when the session
    /// cannot be asked anything (stateless legacy HTTP).
    peer: Option<Arc<Peer>>,
    /// Subscriptions and the streams session-level notifications go to; `None` when the
    /// session has nowhere to send them (stateless legacy HTTP).
    sink: Option<Arc<SessionSink>>,
}

impl LegacySession {
    /// The negotiated revision.
    #[must_use]
    pub fn version(&self) -> &'static str {
        self.version
    }

    /// Whether the client sent `notifications/initialized`.
    #[must_use]
    pub fn initialized(&self) -> bool {
        self.initialized
    }

    /// The level `logging/setLevel` chose (none: no log messages are sent).
    #[must_use]
    pub fn log_level(&self) -> Option<LogLevel> {
        self.log_level
    }

    /// The 2026-07-28 `clientCapabilities` object the session's requests carry.
    #[must_use]
    pub fn lent_capabilities(&self) -> &str {
        &self.lent
    }

    /// The client side of the session, if it can be asked (see [`Peer`]).
    #[must_use]
    pub fn peer(&self) -> Option<&Arc<Peer>> {
        self.peer.as_ref()
    }

    /// The session's notification side, if it has one (see [`SessionSink`]).
    #[must_use]
    pub fn sink(&self) -> Option<&Arc<SessionSink>> {
        self.sink.as_ref()
    }

    /// Starts a session from `initialize` params, with its reply: the negotiated version, the
    /// server's capabilities from the registry, `serverInfo` and `instructions`. Params without
    /// a string `protocolVersion`, an object `capabilities` and an object `clientInfo` get
    /// -32602 and start nothing. `notifications`: the session can carry session-level
    /// notifications (subscriptions and list changes are declared and served).
    pub fn start(
        server: &Server,
        id: &RequestId,
        params: Option<&RawValue>,
        notifications: bool,
    ) -> Result<(LegacySession, Reply), Reply> {
        let invalid = |m: &str| error_reply(id, Cause::InvalidParams, m, None);
        let params: Map<String, Value> = params
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .ok_or_else(|| invalid("initialize params must be an object"))?;
        let requested = params
            .get("protocolVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("protocolVersion must be a string"))?;
        let Some(declared) = params.get("capabilities").and_then(Value::as_object) else {
            return Err(invalid("capabilities must be an object"));
        };
        if !params.get("clientInfo").is_some_and(Value::is_object) {
            return Err(invalid("clientInfo must be an object"));
        }
        let version = negotiate(requested);
        let session = LegacySession {
            version,
            initialized: false,
            log_level: None,
            lent: lend(version, declared).to_string(),
            peer: Some(Arc::new(Peer::new(version))),
            sink: notifications.then(|| {
                let sink = Arc::new(SessionSink::default());
                server.listens().legacy.register(&sink);
                sink
            }),
        };
        let reply = encode(id, &initialize_result(server, version, notifications));
        Ok((session, reply))
    }
}

/// The 2026-07-28 capabilities a legacy client's declaration stands for: `elicitation` as
/// form (June: form only, whatever else it claims; November: `form` when empty or named,
/// `url` when named), `sampling` as declared, `roots` without `listChanged`.
fn lend(version: &str, declared: &Map<String, Value>) -> Value {
    let mut lent = Map::new();
    if let Some(e) = declared.get("elicitation").and_then(Value::as_object) {
        let mut modes = Map::new();
        let june = version == "2025-06-18";
        if june || e.is_empty() || e.get("form").is_some_and(Value::is_object) {
            modes.insert("form".into(), json!({}));
        }
        if !june && e.get("url").is_some_and(Value::is_object) {
            modes.insert("url".into(), json!({}));
        }
        lent.insert("elicitation".into(), Value::Object(modes));
    }
    if let Some(s) = declared.get("sampling").filter(|s| s.is_object()) {
        lent.insert("sampling".into(), s.clone());
    }
    if declared.get("roots").is_some_and(Value::is_object) {
        lent.insert("roots".into(), json!({}));
    }
    Value::Object(lent)
}

/// The `InitializeResult`: capabilities for what the registry serves (`logging` always:
/// `logging/setLevel` is served). With `notifications` (a session that can carry them) the
/// families announce `listChanged` and resources `subscribe`.
fn initialize_result(server: &Server, version: &str, notifications: bool) -> Value {
    let registry = server.registry();
    let mut caps = Map::new();
    caps.insert("logging".into(), json!({}));
    let family = |extra: &[&str]| {
        let mut m = Map::new();
        if notifications {
            m.insert("listChanged".into(), Value::Bool(true));
            for key in extra {
                m.insert((*key).into(), Value::Bool(true));
            }
        }
        Value::Object(m)
    };
    if registry.has_tools() {
        caps.insert("tools".into(), family(&[]));
    }
    if registry.has_resources() {
        caps.insert("resources".into(), family(&["subscribe"]));
    } else if server.apps().is_some() {
        caps.insert("resources".into(), json!({}));
    }
    if server.apps().is_some() {
        // The Apps specification negotiates the extension in `initialize`.
        caps.insert(
            "extensions".into(),
            json!({ crate::core::UI_EXTENSION: {} }),
        );
    }
    if registry.has_prompts() {
        caps.insert("prompts".into(), family(&[]));
    }
    if registry.has_prompts() || registry.has_resources() {
        caps.insert("completions".into(), json!({}));
    }
    let info: Value = serde_json::from_str(server.info().get()).unwrap_or(Value::Null);
    let mut result = json!({
        "protocolVersion": version,
        "capabilities": caps,
        "serverInfo": info,
    });
    if let Some(text) = server.instructions() {
        result["instructions"] = Value::from(text);
    }
    result
}

/// A result reply; the lifecycle results are small and always within the bound.
fn encode(id: &RequestId, result: &Value) -> Reply {
    let raw = serde_json::value::to_raw_value(result).ok();
    match raw
        .as_deref()
        .map(|r| encode_result_raw(id, r, &crate::codec::EgressLimits::SERVER))
    {
        Some(Ok(line)) => Reply { line, status: 200 },
        _ => error_reply(id, Cause::Internal, "Internal error", None),
    }
}

/// The legacy side of one connection (a stdio run, or later one HTTP session): no session
/// until a legacy `initialize`.
#[derive(Debug, Default)]
pub struct LegacyLink {
    session: Option<LegacySession>,
    /// A link without session-level notifications (stateless legacy HTTP).
    quiet: bool,
    /// The connection itself carries the session's notifications (stdio), attached once.
    attached: bool,
}

impl LegacyLink {
    /// The live session, if `initialize` started one.
    #[must_use]
    pub fn session(&self) -> Option<&LegacySession> {
        self.session.as_ref()
    }

    /// A link whose `initialize` starts a session without session-level notifications
    /// (stateless legacy HTTP: nothing outlives a request).
    #[must_use]
    pub fn quiet() -> Self {
        LegacyLink {
            quiet: true,
            ..LegacyLink::default()
        }
    }

    /// Routes one request of this connection. `outbox` is where the host's replies go; it
    /// also carries the session's notifications (stdio).
    pub fn route(&mut self, server: &Server, request: Request, outbox: &Arc<dyn Outbox>) -> Route {
        let decision = self.decide(server, request);
        if !self.attached {
            if let Some(sink) = self.session.as_ref().and_then(|s| s.sink.as_ref()) {
                sink.attach_connection(Arc::new(Connection(Arc::clone(outbox))));
                self.attached = true;
            }
        }
        match decision {
            Decision::Answered(reply) => Route::Answered(reply),
            Decision::Modern(request) => Route::Serve(request, Arc::clone(outbox)),
            Decision::Legacy(request, interaction) => Route::Legacy(request, interaction),
        }
    }

    /// The era rule for one request of this connection, the same for every host: a
    /// lifecycle method is answered here, a request of the live session is rewritten, and
    /// everything else (modern `_meta`, the switch off, no session yet) stays modern.
    pub fn decide(&mut self, server: &Server, request: Request) -> Decision {
        let modern = has_modern_meta(request.params.as_deref());
        if !server.legacy_era() || modern {
            return Decision::Modern(request);
        }
        let id = &request.id;
        match (request.method.as_str(), &mut self.session) {
            ("initialize", None) => {
                debug_assert!(starts_legacy_session(
                    &request.method,
                    request.params.as_deref(),
                    None
                ));
                match LegacySession::start(server, id, request.params.as_deref(), !self.quiet) {
                    Ok((session, reply)) => {
                        self.session = Some(session);
                        Decision::Answered(reply)
                    }
                    Err(reply) => Decision::Answered(reply),
                }
            }
            ("initialize", Some(_)) => Decision::Answered(error_reply(
                id,
                Cause::InvalidRequest,
                "The session is already initialized.",
                None,
            )),
            // Ping is allowed before and during the session (basic/utilities/ping).
            ("ping", _) => Decision::Answered(encode(id, &json!({}))),
            // Before `initialize` a request without modern `_meta` is the dispatcher's to
            // refuse, exactly as without the feature.
            (_, None) => Decision::Modern(request),
            ("logging/setLevel", Some(session)) => Decision::Answered(set_level(session, &request)),
            ("resources/subscribe" | "resources/unsubscribe", Some(session))
                if session.sink.is_some() =>
            {
                Decision::Answered(subscription(session, &request))
            }
            (_, Some(session)) => match translate::to_modern(request, session) {
                Ok((request, original)) => {
                    Decision::Legacy(request, Interaction::new(original, session.peer.clone()))
                }
                Err(reply) => Decision::Answered(reply),
            },
        }
    }

    /// The outbox that rewrites the replies of a [`Decision::Legacy`] request before they
    /// reach the host's `inner`.
    #[must_use]
    pub fn legacy_outbox(inner: Arc<dyn Outbox>, original: Original) -> Arc<dyn Outbox> {
        Arc::new(LegacyOutbox::new(inner, original))
    }

    /// A link whose session is already live at `version` (stateless legacy HTTP: no
    /// `initialize` precedes the request, so nothing is negotiated and no log level is set).
    #[must_use]
    pub fn established(version: &'static str) -> Self {
        LegacyLink {
            session: Some(LegacySession {
                version,
                initialized: true,
                log_level: None,
                lent: "{}".to_owned(),
                peer: None,
                sink: None,
            }),
            quiet: true,
            attached: false,
        }
    }

    /// A client's response to a request the server sent (the codec refused it as `rejection`
    /// under the server role): `None` when it is not this path's (no interactive session, the
    /// switch off, another refusal), the host answers the rejection then; otherwise whether it
    /// answered a pending server-sent request.
    pub fn client_response(
        &self,
        server: &Server,
        frame: &[u8],
        rejection: &crate::codec::Rejection,
        limits: &crate::codec::IngressLimits,
    ) -> Option<bool> {
        if !server.legacy_era() || rejection.error != crate::codec::IngressError::UnexpectedResponse
        {
            return None;
        }
        let peer = self.session.as_ref()?.peer.as_ref()?;
        let response = crate::codec::ingress::decode_client_response(frame, limits).ok()?;
        Some(peer.answer(response))
    }

    /// The connection ended: every pending server-sent request fails, every stream closes.
    pub fn close(&self) {
        if let Some(peer) = self.session.as_ref().and_then(|s| s.peer.as_ref()) {
            peer.close();
        }
        if let Some(sink) = self.session.as_ref().and_then(|s| s.sink.as_ref()) {
            sink.close();
        }
    }

    /// A notification of this connection: `notifications/initialized` completes the
    /// handshake. Cancellation is the host's (the same shape in both eras); anything else
    /// means nothing here.
    pub fn notification(&mut self, server: &Server, notification: &Notification) {
        if !server.legacy_era() || notification.method != "notifications/initialized" {
            return;
        }
        if let Some(session) = &mut self.session {
            session.initialized = true;
        }
    }
}

/// The connection itself as a session stream (stdio): notifications go out as lines.
struct Connection(Arc<dyn Outbox>);

impl SessionStream for Connection {
    fn send(&self, line: String) -> bool {
        self.0.notify(line)
    }
    fn is_open(&self) -> bool {
        true
    }
    fn close(&self) {}
}

/// `resources/subscribe` / `resources/unsubscribe`: `{"uri": …}`; `{}` on success.
fn subscription(session: &LegacySession, request: &Request) -> Reply {
    let invalid = |m: &str| error_reply(&request.id, Cause::InvalidParams, m, None);
    let Some(sink) = session.sink.as_ref() else {
        return error_reply(&request.id, Cause::MethodNotFound, "Method not found", None);
    };
    let uri = request
        .params
        .as_deref()
        .and_then(|p| serde_json::from_str::<BTreeMap<String, Value>>(p.get()).ok())
        .and_then(|p| p.get("uri").and_then(Value::as_str).map(str::to_owned));
    let Some(uri) = uri else {
        return invalid("uri must be a string");
    };
    if request.method == "resources/unsubscribe" {
        sink.unsubscribe(&uri);
        return encode(&request.id, &json!({}));
    }
    match sink.subscribe(&uri) {
        Ok(()) => encode(&request.id, &json!({})),
        Err(SubscribeError::TooLong) => invalid(&format!(
            "uri exceeds the {}-byte limit",
            super::notify::MAX_SUBSCRIPTION_URI_BYTES
        )),
        Err(SubscribeError::Full) => invalid(&format!(
            "this session already holds {} subscriptions",
            super::notify::MAX_SUBSCRIPTIONS_PER_SESSION
        )),
    }
}

/// `logging/setLevel`: `{"level": …}` with one of the eight RFC 5424 names.
fn set_level(session: &mut LegacySession, request: &Request) -> Reply {
    let level = request
        .params
        .as_deref()
        .and_then(|p| serde_json::from_str::<BTreeMap<String, Value>>(p.get()).ok())
        .and_then(|p| {
            p.get("level")
                .and_then(Value::as_str)
                .and_then(LogLevel::parse)
        });
    match level {
        Some(level) => {
            session.log_level = Some(level);
            encode(&request.id, &json!({}))
        }
        None => error_reply(
            &request.id,
            Cause::InvalidParams,
            "level must be one of debug, info, notice, warning, error, critical, alert, emergency",
            None,
        ),
    }
}
