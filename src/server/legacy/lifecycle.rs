//! One legacy session's lifecycle (2025-06-18 / 2025-11-25 `basic/lifecycle`): `initialize`
//! with the negotiated version and capabilities, `notifications/initialized`, `ping` and
//! `logging/setLevel`. Everything else a session receives is rewritten by [`super::translate`]
//! and served by the dispatcher.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::era::{has_modern_meta, negotiate, starts_legacy_session};
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
    /// A request of the legacy session, rewritten into a stateless 2026-07-28 request; its
    /// reply is rewritten back for `Original` (see [`LegacyLink::legacy_outbox`]).
    Legacy(Request, Original),
}

/// What the host does with one request.
pub enum Route {
    /// Answered here (a lifecycle method or a refusal): write this reply.
    Answered(Reply),
    /// Hand this request to [`Server::serve`] with this outbox (a translated legacy request
    /// with the outbox that rewrites its replies, or a modern request unchanged).
    Serve(Request, Arc<dyn Outbox>),
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Route::Answered(reply) => f.debug_tuple("Answered").field(reply).finish(),
            Route::Serve(request, _) => f.debug_tuple("Serve").field(request).finish(),
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

    /// Starts a session from `initialize` params, with its reply: the negotiated version, the
    /// server's capabilities from the registry, `serverInfo` and `instructions`. Params without
    /// a string `protocolVersion`, an object `capabilities` and an object `clientInfo` get
    /// -32602 and start nothing.
    pub fn start(
        server: &Server,
        id: &RequestId,
        params: Option<&RawValue>,
    ) -> Result<(LegacySession, Reply), Reply> {
        let invalid = |m: &str| error_reply(id, Cause::InvalidParams, m, None);
        let params: Map<String, Value> = params
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .ok_or_else(|| invalid("initialize params must be an object"))?;
        let requested = params
            .get("protocolVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("protocolVersion must be a string"))?;
        if !params.get("capabilities").is_some_and(Value::is_object) {
            return Err(invalid("capabilities must be an object"));
        }
        if !params.get("clientInfo").is_some_and(Value::is_object) {
            return Err(invalid("clientInfo must be an object"));
        }
        let version = negotiate(requested);
        let session = LegacySession {
            version,
            initialized: false,
            log_level: None,
        };
        let reply = encode(id, &initialize_result(server, version));
        Ok((session, reply))
    }
}

/// The `InitializeResult`: capabilities for what the registry serves (`logging` always:
/// `logging/setLevel` is served).
fn initialize_result(server: &Server, version: &str) -> Value {
    let registry = server.registry();
    let mut caps = Map::new();
    caps.insert("logging".into(), json!({}));
    if registry.has_tools() {
        caps.insert("tools".into(), json!({}));
    }
    if registry.has_resources() || server.apps().is_some() {
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
        caps.insert("prompts".into(), json!({}));
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
}

impl LegacyLink {
    /// The live session, if `initialize` started one.
    #[must_use]
    pub fn session(&self) -> Option<&LegacySession> {
        self.session.as_ref()
    }

    /// Routes one request of this connection. `outbox` is where the host's replies go.
    pub fn route(&mut self, server: &Server, request: Request, outbox: &Arc<dyn Outbox>) -> Route {
        match self.decide(server, request) {
            Decision::Answered(reply) => Route::Answered(reply),
            Decision::Modern(request) => Route::Serve(request, Arc::clone(outbox)),
            Decision::Legacy(request, original) => {
                Route::Serve(request, Self::legacy_outbox(Arc::clone(outbox), original))
            }
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
                match LegacySession::start(server, id, request.params.as_deref()) {
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
            (_, Some(session)) => match translate::to_modern(request, session) {
                Ok((request, original)) => Decision::Legacy(request, original),
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
            }),
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
