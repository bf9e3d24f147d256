//! Per-request protocol rules and method dispatch (A-, B-, H-sections).
//!
//! Order of checks for one request: admission (shutdown, O5) → method known and its capability
//! advertised (A14: removed and unknown methods are -32601) → the request's own `_meta`
//! (B1–B5, B9, B12, B14, L3) → method parameters → the registry. Every error is reported through
//! the one [`Cause`] table; every result gets `resultType` (A5) and `serverInfo` (B6), and the
//! cacheable ones `ttlMs`/`cacheScope` (H1).

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::future::{select, Either};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::encode::{encode_result_raw, error_reply};
use super::listen::Opened;
use super::log::RequestLog;
use super::progress::Progress;
use super::publication::ResultParts;
use super::{mrtr, Cause, Outbox, Reply, Server, PROTOCOL_VERSION};
use crate::codec::EgressLimits;
use crate::core::{
    Caller, CancelToken, ClientCapabilities, CompletionRef, CoreError, Invocation, Registry,
};
use crate::machine::subscriptions::{Filter, ServerSupport, SubscriptionId};
use crate::wire::jsonrpc::{Request, RequestId};
use crate::wire::{meta, methods};

/// What one request is answered with.
pub(crate) enum Answer {
    /// A result body (an object without `resultType`/`serverInfo`; both are added here).
    Result {
        body: Members,
        result_type: &'static str,
    },
    /// A tool call result that, if too large, becomes the `result_too_large` failure (O40).
    ToolResult(ResultParts),
    /// A JSON-RPC error.
    Error {
        cause: Cause,
        message: String,
        data: Option<Value>,
    },
    /// Nothing to send (a listen stream the server already ended, or a client cancellation).
    Silent,
    /// A reply already encoded and size-checked (a read whose time-out covers its final size
    /// check, O33).
    Encoded(Reply),
}

impl Answer {
    pub(crate) fn complete(body: Map<String, Value>) -> Answer {
        Answer::Result {
            body: members(body),
            result_type: "complete",
        }
    }

    pub(crate) fn error(cause: Cause, message: impl Into<String>) -> Answer {
        Answer::Error {
            cause,
            message: message.into(),
            data: None,
        }
    }

    pub(crate) fn from_core(e: &CoreError) -> Answer {
        Answer::Error {
            cause: e.cause(),
            message: e.to_string(),
            data: e.data(),
        }
    }
}

/// The checked per-request context.
pub(crate) struct Ctx {
    pub(crate) server: Server,
    pub(crate) caller: Caller,
    pub(crate) registry: Arc<Registry>,
    pub(crate) epoch: crate::machine::Epoch,
    pub(crate) caps: ClientCapabilities,
    pub(crate) progress: Option<Arc<Progress>>,
    /// Present only when the request's `_meta` asked for logging (L2).
    pub(crate) log: Option<Arc<RequestLog>>,
    /// The token handlers observe: fired by client cancellation and by shutdown.
    pub(crate) cancel: CancelToken,
}

impl Ctx {
    /// A fresh invocation context for one core call.
    pub(crate) fn invocation(&self) -> Invocation {
        let inv =
            Invocation::for_request(self.caller.clone(), self.caps.clone(), self.cancel.clone());
        let inv = match &self.log {
            Some(l) => inv.with_log(Arc::clone(l) as Arc<dyn crate::core::LogSink>),
            None => inv,
        };
        match &self.progress {
            Some(p) => inv.with_progress(Arc::clone(p) as Arc<dyn crate::core::ProgressSink>),
            None => inv,
        }
    }

    /// Runs one core invocation, with the pacer told when it starts and ends.
    pub(crate) async fn invoke<F: std::future::Future>(&self, fut: F) -> F::Output {
        if let Some(p) = &self.progress {
            p.started();
        }
        let out = fut.await;
        if let Some(p) = &self.progress {
            p.ended();
        }
        out
    }
}

/// Serves one request; see [`Server::serve`].
///
/// Exactly one reply per request, whatever panics: handlers are contained by the core, and
/// everything else (the server's own code, listen streams, completion) is caught here. A panic
/// that leaves the request unanswered is answered with -32603 "Internal error" (the private
/// cause is logged, never sent), unless the client cancelled it (C9). Builds with
/// `panic = "abort"` cannot contain panics: there a panic ends the process.
pub(crate) async fn serve_request(
    server: &Server,
    caller: Caller,
    request: Request,
    outbox: Arc<dyn Outbox>,
    client_cancel: CancelToken,
) {
    // C9: once the client cancels, nothing more leaves for this request, whatever still runs.
    let gated = Arc::new(Gated {
        inner: outbox,
        cancel: client_cancel.clone(),
        finished: std::sync::atomic::AtomicBool::new(false),
    });
    let served = futures_util::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(
        serve_admitted(server, caller, &request, &gated, client_cancel),
    ))
    .await;
    if served.is_err() {
        tracing::error!(
            method = request.method.as_str(),
            "the server panicked while serving a request; answered with an internal error"
        );
        if !gated.finished() {
            gated.finish(error_reply(
                &request.id,
                Cause::Internal,
                "Internal error",
                None,
            ));
        }
    }
}

/// Ends an admitted call when its request finished or panicked. A request future dropped
/// unfinished (a host abandoning a stuck task at shutdown) leaves its call counted, so the
/// status keeps reporting that unfinished work (O5).
struct CallEnd<'a> {
    server: &'a Server,
    call: crate::machine::epoch::CallId,
    finished: bool,
}

impl Drop for CallEnd<'_> {
    fn drop(&mut self) {
        if self.finished || std::thread::panicking() {
            self.server.end_call(self.call);
        }
    }
}

async fn serve_admitted(
    server: &Server,
    caller: Caller,
    request: &Request,
    gated: &Arc<Gated>,
    client_cancel: CancelToken,
) {
    let Some((call, epoch, shutdown)) = server.admit() else {
        gated.finish(error_reply(
            &request.id,
            Cause::ShuttingDown,
            "The server is shutting down.",
            None,
        ));
        return;
    };
    let mut end = CallEnd {
        server,
        call,
        finished: false,
    };
    let handler_cancel = CancelToken::new();
    let outbox: Arc<dyn Outbox> = Arc::clone(gated) as Arc<dyn Outbox>;
    // Boxed once: the request's whole state machine is large (every method's arm), and
    // moving it through the selects below would copy all of it each time.
    let work = Box::pin(handle(
        server,
        caller,
        request,
        outbox,
        epoch,
        handler_cancel.clone(),
        client_cancel.clone(),
    ));
    // Shutdown cancels the handler, but the call still answers (e.g. the `cancelled` failure).
    let forward_shutdown = async {
        shutdown.cancelled().await;
        handler_cancel.cancel();
        std::future::pending::<()>().await;
    };
    let work = async {
        futures_util::pin_mut!(work);
        futures_util::pin_mut!(forward_shutdown);
        match select(work, forward_shutdown).await {
            Either::Left((reply, _)) => reply,
            Either::Right(((), _)) => None,
        }
    };
    let cancelled = client_cancel.cancelled();
    futures_util::pin_mut!(work);
    futures_util::pin_mut!(cancelled);
    match select(work, cancelled).await {
        Either::Left((Some(reply), _)) => gated.finish(reply),
        Either::Left(_) => handler_cancel.cancel(),
        // C9, J9: the handler's token fires, the handler gets the one poll that observes it
        // (cooperative clean-up), then it is dropped; nothing more is sent.
        Either::Right(((), mut work)) => {
            handler_cancel.cancel();
            let _ = futures_util::FutureExt::now_or_never(&mut work);
        }
    }
    end.finished = true;
}

/// The outbox one request writes to: refuses everything once the client cancelled the request
/// (C9) and remembers whether the reply went out (so a panic is answered only when it did not).
struct Gated {
    inner: Arc<dyn Outbox>,
    cancel: CancelToken,
    finished: std::sync::atomic::AtomicBool,
}

impl Gated {
    /// Whether the request needs no further reply: it was answered or the client cancelled it.
    fn finished(&self) -> bool {
        self.cancel.is_cancelled() || self.finished.load(std::sync::atomic::Ordering::Acquire)
    }
}

impl Outbox for Gated {
    fn notify(&self, line: String) -> bool {
        !self.cancel.is_cancelled() && self.inner.notify(line)
    }

    fn finish(&self, reply: Reply) {
        // At most one reply (the outbox contract), even if a panic races the normal reply.
        if !self.cancel.is_cancelled()
            && !self
                .finished
                .swap(true, std::sync::atomic::Ordering::AcqRel)
        {
            self.inner.finish(reply);
        }
    }

    fn transport(&self) -> crate::machine::subscriptions::Transport {
        self.inner.transport()
    }
}

/// Why a timed read or prompt ended without its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Expired;

/// The timer of one timed request: tokio's when a runtime with time enabled is current
/// (paused test clocks included), else the runtime-free helper-thread [`super::Deadline`].
enum Timer {
    Tokio(std::pin::Pin<Box<tokio::time::Sleep>>),
    Thread(super::Deadline, std::time::Instant),
}

impl Timer {
    fn start(limit: std::time::Duration) -> Timer {
        if tokio::runtime::Handle::try_current().is_ok() {
            // A runtime built without `enable_time` panics when a timer is created; that
            // runtime gets the thread fallback instead of a crash.
            if let Ok(sleep) = std::panic::catch_unwind(|| tokio::time::sleep(limit)) {
                return Timer::Tokio(Box::pin(sleep));
            }
        }
        Timer::Thread(
            super::Deadline::start(limit),
            std::time::Instant::now() + limit,
        )
    }

    async fn expired(&mut self) {
        match self {
            Timer::Tokio(sleep) => sleep.as_mut().await,
            Timer::Thread(deadline, _) => deadline.token.cancelled().await,
        }
    }

    fn is_expired(&self) -> bool {
        match self {
            Timer::Tokio(sleep) => tokio::time::Instant::now() >= sleep.deadline(),
            Timer::Thread(deadline, at) => {
                deadline.token.is_cancelled() || std::time::Instant::now() >= *at
            }
        }
    }
}

/// Runs `work` (a read or prompt get, including the conversion and final size check of its
/// result) within `limit` (O33). On expiry `token` (the handler's) fires, the work gets the one
/// poll that lets a cooperative handler observe it, and is dropped. Work that finishes, but
/// only after the deadline (slow synchronous conversion), is expired too.
pub(crate) async fn within<F: std::future::Future>(
    limit: std::time::Duration,
    token: &CancelToken,
    work: F,
) -> Result<F::Output, Expired> {
    let mut timer = Timer::start(limit);
    futures_util::pin_mut!(work);
    let finished = {
        let expired = timer.expired();
        futures_util::pin_mut!(expired);
        match select(work.as_mut(), expired).await {
            Either::Left((out, _)) => Some(out),
            Either::Right(((), _)) => None,
        }
    };
    match finished {
        Some(out) if !timer.is_expired() => Ok(out),
        Some(_) => {
            token.cancel();
            Err(Expired)
        }
        None => {
            token.cancel();
            let _ = futures_util::FutureExt::now_or_never(work.as_mut());
            Err(Expired)
        }
    }
}

/// A result object as its members, each kept as exact JSON text (O29: numbers and strings
/// of tool results are never re-serialised through a float).
pub(crate) type Members = BTreeMap<String, Box<RawValue>>;

/// Members of a `serde_json` object.
pub(crate) fn members(body: Map<String, Value>) -> Members {
    body.into_iter()
        .filter_map(|(k, v)| serde_json::value::to_raw_value(&v).ok().map(|raw| (k, raw)))
        .collect()
}

/// Members of an object given as exact JSON text.
pub(crate) fn members_text(text: &str) -> Option<Members> {
    serde_json::from_str(text).ok()
}

fn raw(text: String) -> Box<RawValue> {
    RawValue::from_string(text)
        .unwrap_or_else(|_| RawValue::from_string("null".to_owned()).expect("null is JSON"))
}

/// An object written from borrowed members in the given order (exact value texts), the way
/// `serde_json` writes a `Members` map.
struct Object<'a>(Vec<(&'a str, &'a RawValue)>);

impl serde::Serialize for Object<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, value) in &self.0 {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// Serialises borrowed members (valid JSON by construction: no re-parse).
fn object_raw(object: &Object<'_>) -> Box<RawValue> {
    serde_json::value::to_raw_value(object).unwrap_or_else(|_| raw("{}".to_owned()))
}

/// The result text: `body` with `resultType` and `_meta.serverInfo` set (A5, B6). Members are
/// written once, in key order, without copying or re-checking their texts; only a body that
/// brings its own `_meta` has that member read to merge `serverInfo` into it.
fn with_identity(body: Members, result_type: &str, info: &RawValue) -> Box<RawValue> {
    let result_type = serde_json::value::to_raw_value(result_type)
        .unwrap_or_else(|_| raw("\"complete\"".to_owned()));
    let meta_text = match body.get("_meta") {
        None => object_raw(&Object(vec![(meta::SERVER_INFO, info)])),
        Some(existing) => {
            let mut meta: Members = serde_json::from_str(existing.get()).unwrap_or_default();
            meta.insert(meta::SERVER_INFO.to_owned(), info.to_owned());
            serde_json::value::to_raw_value(&meta).unwrap_or_else(|_| raw("{}".to_owned()))
        }
    };
    let mut members: Vec<(&str, &RawValue)> = Vec::with_capacity(body.len() + 2);
    members.extend(
        body.iter()
            .filter(|(k, _)| k.as_str() != "resultType" && k.as_str() != "_meta")
            .map(|(k, v)| (k.as_str(), &**v)),
    );
    members.push(("resultType", &result_type));
    members.push(("_meta", &meta_text));
    // Keys are unique; the order is the map's (byte order of the key strings).
    members.sort_unstable_by(|a, b| a.0.cmp(b.0));
    object_raw(&Object(members))
}

/// Encodes a complete result with `resultType` and `serverInfo` (A5, B6), checked against the
/// response bound.
pub(crate) fn encode_complete(
    server: &Server,
    id: &RequestId,
    body: Map<String, Value>,
) -> Result<Reply, crate::codec::EgressError> {
    let result = with_identity(members(body), "complete", &server.inner().info);
    encode_result_raw(id, &result).map(|line| Reply { line, status: 200 })
}

/// Turns an answer into the reply: results get `resultType` and `serverInfo` (A5, B6); a
/// too-large tool result becomes the `result_too_large` failure (O40).
fn answer_to_reply(server: &Server, id: &RequestId, answer: Answer) -> Option<Reply> {
    super::fault::point(super::fault::points::REPLY);
    let info = &server.inner().info;
    let encoded = |body: Members, result_type: &str| {
        encode_result_raw(id, &with_identity(body, result_type, info))
    };
    // Tool results are written once from their pieces (no member map, no re-parse).
    let encoded_tool = |parts: &ResultParts| {
        crate::codec::egress::encode_success_text(
            id,
            &parts.complete_text(info),
            &EgressLimits::SERVER,
        )
    };
    match answer {
        Answer::Silent => None,
        Answer::Encoded(reply) => Some(reply),
        Answer::Error {
            cause,
            message,
            data,
        } => Some(error_reply(id, cause, &message, data)),
        Answer::Result { body, result_type } => Some(match encoded(body, result_type) {
            Ok(line) => Reply { line, status: 200 },
            Err(e) => {
                tracing::warn!(error = %e, "result over its bound");
                // Retrying would build the same result again: say so (O32 shape, every method).
                error_reply(
                    id,
                    Cause::Internal,
                    "The result is too large.",
                    Some(json!({ "retryable": false })),
                )
            }
        }),
        Answer::ToolResult(parts) => Some(match encoded_tool(&parts) {
            Ok(line) => Reply { line, status: 200 },
            Err(e) if e.is_too_large() => {
                let failure = super::tools::failure_result(
                    server,
                    crate::core::FailureCode::ResultTooLarge,
                    "The tool result exceeds the response size limit.",
                );
                match encoded_tool(&failure) {
                    Ok(line) => Reply { line, status: 200 },
                    Err(_) => error_reply(id, Cause::Internal, "Internal error", None),
                }
            }
            Err(_) => error_reply(id, Cause::Internal, "Internal error", None),
        }),
    }
}

/// The params object of a request, member by member (exact bytes, borrowed from the
/// request).
pub(crate) type Params<'a> = BTreeMap<String, &'a RawValue>;

fn parse_params(request: &Request) -> Result<Params<'_>, Answer> {
    let Some(raw) = request.params.as_deref() else {
        let e = meta::RequestMetaError::Missing;
        return Err(Answer::error(e.cause(), e.to_string()));
    };
    serde_json::from_str::<Params<'_>>(raw.get())
        .map_err(|_| Answer::error(Cause::InvalidParams, "params must be an object"))
}

/// B1–B5, B9, B12, B14, L3 (the rules: [`meta::read_request_meta`]).
fn check_meta<'p>(params: &Params<'p>) -> Result<meta::RequestMeta<'p>, Answer> {
    meta::read_request_meta(params.get("_meta").copied()).map_err(|e| Answer::Error {
        cause: e.cause(),
        message: e.to_string(),
        data: e.data(),
    })
}

/// Whether the method exists and its capability is advertised (A14).
fn method_served(method: &str, registry: &Registry) -> bool {
    use crate::wire::methods::Needs;
    match methods::needs(method) {
        Some(Needs::Nothing) => true,
        Some(Needs::Tools) => registry.has_tools(),
        Some(Needs::Resources) => registry.has_resources(),
        Some(Needs::Prompts) => registry.has_prompts(),
        Some(Needs::Completions) => registry.has_prompts() || registry.has_resources(),
        None => false,
    }
}

async fn handle(
    server: &Server,
    caller: Caller,
    request: &Request,
    outbox: Arc<dyn Outbox>,
    epoch: crate::machine::Epoch,
    handler_cancel: CancelToken,
    client_cancel: CancelToken,
) -> Option<Reply> {
    super::fault::point(super::fault::points::DISPATCH);
    let registry = server.registry();
    let method = request.method.as_str();
    let checked = if !method_served(method, &registry) {
        Err(if methods::is_removed(method) {
            Answer::Error {
                cause: Cause::MethodNotFound,
                message: format!("Method not found: {method} was removed in {PROTOCOL_VERSION}"),
                data: Some(json!({ "supported": [PROTOCOL_VERSION] })),
            }
        } else {
            Answer::error(Cause::MethodNotFound, "Method not found")
        })
    } else {
        parse_params(request).and_then(|p| check_meta(&p).map(|m| (p, m)))
    };
    let (params, request_meta) = match checked {
        Ok(x) => x,
        Err(answer) => return answer_to_reply(server, &request.id, answer),
    };
    let progress = Progress::new(
        request_meta.progress_token.map(RawValue::get),
        Arc::clone(&outbox),
        client_cancel.clone(),
    );
    // Never on a listen stream (L2, D41): listen has no handler, so it never logs.
    let log = request_meta
        .log_level
        .map(|level| RequestLog::new(level, Arc::clone(&outbox), client_cancel.clone()));
    let ctx = Ctx {
        server: server.clone(),
        caller,
        registry,
        epoch,
        caps: ClientCapabilities::from_value(request_meta.capabilities),
        progress: progress.clone(),
        log: log.clone(),
        cancel: handler_cancel,
    };
    let progress_end = ProgressEnd(progress, log);
    let answer = route(&ctx, request, &params, &outbox, &client_cancel)
        .await
        .unwrap_or_else(|a| a);
    drop(progress_end);
    answer_to_reply(server, &request.id, answer)
}

async fn route(
    ctx: &Ctx,
    request: &Request,
    params: &Params<'_>,
    outbox: &Arc<dyn Outbox>,
    client_cancel: &CancelToken,
) -> Result<Answer, Answer> {
    let caller = &ctx.caller;
    Ok(match request.method.as_str() {
        "server/discover" => discover(ctx),
        "tools/list" => super::tools::list(ctx, cursor(params)?.as_deref()),
        "tools/call" => super::tools::call(ctx, params).await,
        "resources/list" => page(
            ctx.registry
                .list_resources(caller, cursor(params)?.as_deref()),
            "resources",
        ),
        "resources/templates/list" => page(
            ctx.registry
                .list_resource_templates(caller, cursor(params)?.as_deref()),
            "resourceTemplates",
        ),
        "prompts/list" => page(
            ctx.registry
                .list_prompts(caller, cursor(params)?.as_deref()),
            "prompts",
        ),
        "resources/read" => {
            let uri = string_param(params, "uri")?;
            mrtr::read_resource(ctx, params, &uri, &request.id).await
        }
        "prompts/get" => {
            let name = string_param(params, "name")?;
            let arguments = match params.get("arguments") {
                None => BTreeMap::new(),
                Some(raw) => {
                    serde_json::from_str::<BTreeMap<String, String>>(raw.get()).map_err(|_| {
                        Answer::error(
                            Cause::InvalidParams,
                            "arguments must be an object of strings",
                        )
                    })?
                }
            };
            let arg_bytes = params.get("arguments").map_or("", |r| r.get()).to_owned();
            mrtr::get_prompt(ctx, params, &name, arguments, &arg_bytes).await
        }
        "completion/complete" => complete(ctx, params)?,
        "subscriptions/listen" => listen(ctx, request, params, outbox, client_cancel).await?,
        _ => Answer::error(Cause::MethodNotFound, "Method not found"),
    })
}

fn cursor(params: &Params<'_>) -> Result<Option<String>, Answer> {
    match params.get("cursor") {
        None => Ok(None),
        Some(raw) => serde_json::from_str::<String>(raw.get())
            .map(Some)
            .map_err(|_| Answer::error(Cause::InvalidParams, "cursor must be a string")),
    }
}

pub(crate) fn string_param(params: &Params<'_>, name: &str) -> Result<String, Answer> {
    params
        .get(name)
        .and_then(|raw| serde_json::from_str::<String>(raw.get()).ok())
        .ok_or_else(|| Answer::error(Cause::InvalidParams, format!("{name} must be a string")))
}

fn page<T: serde::Serialize>(page: Result<crate::core::Page<T>, CoreError>, key: &str) -> Answer {
    match page {
        Ok(p) => match members_text(p.to_result(key).get()) {
            Some(body) => Answer::Result {
                body,
                result_type: "complete",
            },
            None => Answer::error(Cause::Internal, "Internal error"),
        },
        Err(e) => Answer::from_core(&e),
    }
}

/// `server/discover` (B16, B18): capabilities match what this registry serves.
fn discover(ctx: &Ctx) -> Answer {
    let registry = &ctx.registry;
    let mut caps = Map::new();
    if registry.has_tools() {
        caps.insert("tools".into(), json!({ "listChanged": true }));
    }
    if registry.has_resources() {
        caps.insert(
            "resources".into(),
            json!({ "subscribe": true, "listChanged": true }),
        );
    }
    if registry.has_prompts() {
        caps.insert("prompts".into(), json!({ "listChanged": true }));
    }
    if registry.has_prompts() || registry.has_resources() {
        caps.insert("completions".into(), json!({}));
    }
    // Every handler may log for requests that ask (L1: declared because it can be emitted).
    caps.insert("logging".into(), json!({}));
    let mut body = Map::new();
    body.insert("supportedVersions".into(), json!([PROTOCOL_VERSION]));
    body.insert("capabilities".into(), Value::Object(caps));
    if let Some(text) = &ctx.server.inner().instructions {
        body.insert("instructions".into(), Value::String(text.clone()));
    }
    body.insert("ttlMs".into(), json!(0));
    body.insert("cacheScope".into(), json!("private"));
    Answer::complete(body)
}

/// `completion/complete` (G-section).
fn complete(ctx: &Ctx, params: &Params<'_>) -> Result<Answer, Answer> {
    super::fault::point(super::fault::points::COMPLETE);
    let bad = |m: &str| Answer::error(Cause::InvalidParams, m.to_owned());
    let reference: Value = params
        .get("ref")
        .and_then(|r| serde_json::from_str(r.get()).ok())
        .ok_or_else(|| bad("ref must be an object"))?;
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let reference = match reference.get("type").and_then(Value::as_str) {
        Some("ref/prompt") => CompletionRef::Prompt {
            name: text(&reference, "name").ok_or_else(|| bad("ref.name must be a string"))?,
        },
        Some("ref/resource") => CompletionRef::Resource {
            uri: text(&reference, "uri").ok_or_else(|| bad("ref.uri must be a string"))?,
        },
        _ => return Err(bad("ref.type must be ref/prompt or ref/resource")),
    };
    let argument: Value = params
        .get("argument")
        .and_then(|r| serde_json::from_str(r.get()).ok())
        .ok_or_else(|| bad("argument must be an object"))?;
    let name = text(&argument, "name").ok_or_else(|| bad("argument.name must be a string"))?;
    let value = text(&argument, "value").ok_or_else(|| bad("argument.value must be a string"))?;
    let context: BTreeMap<String, String> = match params.get("context") {
        None => BTreeMap::new(),
        Some(raw) => {
            let v: Value = serde_json::from_str(raw.get()).map_err(|_| bad("context"))?;
            match v.get("arguments") {
                None => BTreeMap::new(),
                Some(a) => serde_json::from_value(a.clone())
                    .map_err(|_| bad("context.arguments must be an object of strings"))?,
            }
        }
    };
    Ok(
        match ctx
            .registry
            .complete(&ctx.caller, &reference, &name, &value, &context)
        {
            Ok(reply) => {
                let mut body = Map::new();
                body.insert(
                    "completion".into(),
                    serde_json::to_value(reply).unwrap_or(Value::Null),
                );
                Answer::complete(body)
            }
            Err(e) => Answer::from_core(&e),
        },
    )
}

/// `subscriptions/listen` (K-section): acknowledgement first, then tagged notifications until
/// the client cancels (no reply) or the server shuts down (closing result).
async fn listen(
    ctx: &Ctx,
    request: &Request,
    params: &Params<'_>,
    outbox: &Arc<dyn Outbox>,
    client_cancel: &CancelToken,
) -> Result<Answer, Answer> {
    let filter = params
        .get("notifications")
        .ok_or(crate::wire::listen::FilterError::Missing)
        .and_then(|raw| Filter::read(raw.get()))
        .map_err(|e| Answer::error(Cause::InvalidParams, e.to_string()))?;
    let registry = &ctx.registry;
    let support = ServerSupport {
        tools_list_changed: registry.has_tools(),
        prompts_list_changed: registry.has_prompts(),
        resources_list_changed: registry.has_resources(),
        resources_subscribe: registry.has_resources(),
    };
    let hub = &ctx.server.inner().listens;
    let Opened { key, closed } = hub.open(
        ctx.server.now(),
        SubscriptionId(request.id.token().to_owned()),
        filter,
        support,
        Arc::clone(outbox),
        &ctx.server.inner().info,
    );
    // However this future ends (client cancellation may drop it), the stream leaves the hub.
    let _guard = StreamGuard { ctx, key };
    super::fault::point(super::fault::points::LISTEN_AFTER_ACK);
    let client = client_cancel.cancelled();
    let server_closed = closed.cancelled();
    let shutdown = ctx.cancel.cancelled();
    futures_util::pin_mut!(client);
    futures_util::pin_mut!(server_closed);
    futures_util::pin_mut!(shutdown);
    let ended = select(client, server_closed);
    if let Either::Right(((), _)) = select(ended, shutdown).await {
        // Shutdown reached this call before the stream was registered for `close_all`.
        hub.server_closing(ctx.server.now(), key, &ctx.server.inner().info);
    }
    Ok(Answer::Silent)
}

/// Removes a listen stream from the hub when its request ends; a stream the server already
/// closed is gone and this does nothing.
struct StreamGuard<'a> {
    ctx: &'a Ctx,
    key: u64,
}

impl Drop for StreamGuard<'_> {
    fn drop(&mut self) {
        self.ctx
            .server
            .inner()
            .listens
            .client_closed(self.ctx.server.now(), self.key);
    }
}

/// Ends a request's progress and log channel however the request ends (J4, C9, L2).
struct ProgressEnd(Option<Arc<Progress>>, Option<Arc<RequestLog>>);

impl Drop for ProgressEnd {
    fn drop(&mut self) {
        if let Some(p) = &self.0 {
            p.finished();
        }
        if let Some(l) = &self.1 {
            l.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The former `with_identity`: insert into the map and serialise it whole.
    fn with_identity_reference(mut body: Members, result_type: &str, info: &RawValue) -> String {
        body.insert(
            "resultType".to_owned(),
            raw(Value::String(result_type.to_owned()).to_string()),
        );
        let mut meta: Members = body
            .get("_meta")
            .and_then(|m| serde_json::from_str(m.get()).ok())
            .unwrap_or_default();
        meta.insert(meta::SERVER_INFO.to_owned(), info.to_owned());
        body.insert(
            "_meta".to_owned(),
            raw(serde_json::to_string(&meta).unwrap_or_else(|_| "{}".to_owned())),
        );
        serde_json::to_string(&body).unwrap_or_else(|_| "{}".to_owned())
    }

    #[test]
    fn a5_b6_o15_tool_results_written_from_parts_match_the_member_map_path() {
        use crate::core::descriptor::ContentBlock;
        let info = raw(r#"{"name":"s\u00e9","version":"1.0"}"#.to_owned());
        let cases = [
            (vec![], None, false),
            (vec![], Some(r#"{"value":null}"#), false),
            (
                vec![ContentBlock::text("a \"quoted\"\nline é")],
                Some(r#"{"value":{"n":1.0,"m":18446744073709551617}}"#),
                false,
            ),
            (
                vec![],
                Some(r#"{"failure":{"code":"x","message":"","retryable":false}}"#),
                true,
            ),
            (vec![ContentBlock::text("")], None, true),
        ];
        for (content, structured, is_error) in cases {
            let parts =
                ResultParts::new(content, structured.map(str::to_owned), is_error).expect("parts");
            let body = parts.body_text();
            let reference =
                with_identity_reference(members_text(&body).expect("object"), "complete", &info);
            assert_eq!(parts.complete_text(&info), reference, "{body}");
            // Absent stays absent: no `isError: false`, no `structuredContent: null`.
            assert_eq!(body.contains("\"isError\""), is_error, "{body}");
            assert_eq!(
                body.contains("\"structuredContent\""),
                structured.is_some(),
                "{body}"
            );
        }
    }

    #[test]
    fn a5_b6_with_identity_writes_the_same_bytes_as_serialising_the_map() {
        let info = raw(r#"{"name":"s\u00e9","version":"1.0"}"#.to_owned());
        for body in [
            "{}",
            r#"{"content":[{"type":"text","text":"hi"}],"isError":false}"#,
            r#"{"structuredContent":{"n":1.0,"m":18446744073709551617},"content":[]}"#,
            r#"{"_meta":{"a.b/c":1,"z":"\u0041"},"content":[]}"#,
            r#"{"_meta":{"io.modelcontextprotocol/serverInfo":0},"x":1}"#,
            r#"{"_meta":[1,2],"x":1}"#,
            r#"{"resultType":"other","\u0000k\"ey\\":1,"é":2,"\u007f":3,"Z":4,"_":5,"a":6}"#,
        ] {
            for result_type in ["complete", "input_required"] {
                let members = members_text(body).expect("object");
                assert_eq!(
                    with_identity(members.clone(), result_type, &info).get(),
                    with_identity_reference(members, result_type, &info),
                    "{body}"
                );
            }
        }
    }

    #[tokio::test]
    async fn o33_work_that_finishes_in_time_keeps_its_result_and_token() {
        let token = CancelToken::new();
        let out = within(std::time::Duration::from_secs(3600), &token, async { 7 }).await;
        assert_eq!(out, Ok(7));
        assert!(!token.is_cancelled());
    }

    #[tokio::test]
    async fn o33_synchronous_conversion_past_the_deadline_counts_as_expired() {
        // The work never yields: only the check after it can notice the deadline passed.
        let token = CancelToken::new();
        let limit = std::time::Duration::from_millis(1);
        let out = within(limit, &token, async {
            std::thread::sleep(limit * 20);
            7
        })
        .await;
        assert_eq!(out, Err(Expired));
        assert!(token.is_cancelled());
    }

    #[test]
    fn o33_the_thread_fallback_notices_a_passed_deadline_too() {
        let token = CancelToken::new();
        let limit = std::time::Duration::from_millis(1);
        let work = within(limit, &token, async {
            std::thread::sleep(limit * 20);
            7
        });
        // No runtime is current: the helper-thread deadline is used; the work never yields.
        let out = futures_util::FutureExt::now_or_never(work).expect("never pending");
        assert_eq!(out, Err(Expired));
        assert!(token.is_cancelled());
    }

    #[test]
    fn c9_a_gated_outbox_sends_nothing_after_the_client_cancelled() {
        #[derive(Default)]
        struct Count(std::sync::Mutex<(usize, usize)>);
        impl Outbox for Count {
            fn notify(&self, _line: String) -> bool {
                self.0.lock().unwrap().0 += 1;
                true
            }
            fn finish(&self, _reply: Reply) {
                self.0.lock().unwrap().1 += 1;
            }
        }
        let inner = Arc::new(Count::default());
        let cancel = CancelToken::new();
        let gated = Gated {
            inner: inner.clone(),
            cancel: cancel.clone(),
            finished: std::sync::atomic::AtomicBool::new(false),
        };
        let reply = || Reply {
            line: String::new(),
            status: 200,
        };
        assert!(gated.notify(String::new()));
        gated.finish(reply());
        cancel.cancel();
        assert!(!gated.notify(String::new()));
        gated.finish(reply());
        assert_eq!(*inner.0.lock().unwrap(), (1, 1));
    }
}
