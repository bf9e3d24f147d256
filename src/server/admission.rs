//! One request from arrival to its one reply: admission through the epoch machine, the
//! panic net (exactly one reply whatever panics), the client-cancellation gate, then the
//! method check and the request's own `_meta` that build the
//! [`Ctx`] the route table hands to a method family.

use std::sync::Arc;

use futures_util::future::{select, Either};
use serde_json::json;
use serde_json::value::RawValue;

use super::answer::{to_reply, Answer};
use super::context::{self, check_meta, parse_params, Ctx, HostCheck, Params, ProgressEnd};
use super::encode::error_reply;
use super::log::{RequestLog, COMPLETION_TARGET, MAX_LOGGED_NAME};
use super::progress::Progress;
use super::{routes, Cause, Outbox, PublishMode, Reply, Server, PROTOCOL_VERSION};
use crate::core::{Access, Caller, CancelToken, ClientCapabilities, Registry};
use crate::wire::jsonrpc::Request;
use crate::wire::methods;

/// Serves one request; see [`Server::serve`].
///
/// Exactly one reply per request, whatever panics: handlers are contained by the core, and
/// everything else (the server's own code, listen streams, completion) is caught here. A panic
/// that leaves the request unanswered is answered with -32603 "Internal error" (the private
/// cause is logged, never sent), unless the client cancelled it. Builds with
/// `panic = "abort"` cannot contain panics: there a panic ends the process.
pub(crate) async fn serve_request(
    server: &Server,
    caller: Caller,
    request: Request,
    outbox: Arc<dyn Outbox>,
    client_cancel: CancelToken,
    host: Option<HostCheck>,
) {
    let started = std::time::Instant::now();
    // C9: once the client cancels, nothing more leaves for this request, whatever still runs.
    let gated = Arc::new(Gated {
        inner: outbox,
        cancel: client_cancel.clone(),
        finished: std::sync::atomic::AtomicBool::new(false),
        summary: Summary::default(),
    });
    let served = futures_util::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(
        serve_checked(server, caller, &request, &gated, client_cancel, host),
    ))
    .await;
    if served.is_err() {
        gated.summary.set(Outcome::Panicked, Cause::Internal);
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
    gated.summary.emit(&request, started.elapsed());
}

/// How a request ended, as its completion event reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// A result (a tool result without `isError` included).
    Result,
    /// A tool result with `isError: true` (a tool failure).
    ToolError,
    /// A JSON-RPC error.
    Error,
    /// The client cancelled it: no reply.
    Cancelled,
    /// Nothing was sent (a listen stream that ended without its final result).
    Silent,
    /// The server panicked; answered -32603.
    Panicked,
}

impl Outcome {
    fn as_str(self) -> &'static str {
        match self {
            Outcome::Result => "result",
            Outcome::ToolError => "tool_error",
            Outcome::Error => "error",
            Outcome::Cancelled => "cancelled",
            Outcome::Silent => "silent",
            Outcome::Panicked => "panicked",
        }
    }
}

/// What one request's completion event reports, filled in while it is served.
#[derive(Default)]
struct Summary {
    name: std::sync::OnceLock<String>,
    outcome: std::sync::Mutex<Option<(Outcome, i64)>>,
}

impl Summary {
    fn set(&self, outcome: Outcome, cause: Cause) {
        let code = cause.code().map_or(0, |code| code.code());
        self.set_code(outcome, code);
    }

    fn set_code(&self, outcome: Outcome, code: i64) {
        *super::lock(&self.outcome) = Some((outcome, code));
    }

    /// Records what `answer` will be sent as (before it is encoded).
    fn record(&self, answer: &Answer) {
        match answer {
            Answer::Error { cause, .. } => self.set(Outcome::Error, *cause),
            Answer::ToolResult(parts) if parts.is_error => self.set_code(Outcome::ToolError, 0),
            Answer::Silent => self.set_code(Outcome::Silent, 0),
            Answer::ToolResult(_) | Answer::Result { .. } | Answer::Encoded(_) => {
                self.set_code(Outcome::Result, 0);
            }
        }
    }

    /// The request's `name` (or `uri`), cut to [`MAX_LOGGED_NAME`] bytes.
    fn name_from(&self, server: &Server, method: &str, params: &super::context::Params<'_>) {
        let key = match method {
            methods::RESOURCES_READ => "uri",
            methods::TOOLS_CALL | methods::PROMPTS_GET => "name",
            _ => return,
        };
        let Some(mut name) = params
            .get(key)
            .and_then(|raw| serde_json::from_str::<String>(raw.get()).ok())
        else {
            return;
        };
        if method == methods::TOOLS_CALL {
            if let std::borrow::Cow::Owned(wrapped) =
                super::tools::called_tool(server.mode(), &name, params.get("arguments").copied())
            {
                name = wrapped;
            }
        }
        if name.len() > MAX_LOGGED_NAME {
            let mut end = MAX_LOGGED_NAME;
            while !name.is_char_boundary(end) {
                end -= 1;
            }
            name.truncate(end);
        }
        let _ = self.name.set(name);
    }

    fn emit(&self, request: &Request, latency: std::time::Duration) {
        let (outcome, code) = super::lock(&self.outcome).unwrap_or((Outcome::Silent, 0));
        tracing::info!(
            target: COMPLETION_TARGET,
            method = request.method.as_str(),
            name = self.name.get().map_or("", String::as_str),
            latency_us = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX),
            outcome = outcome.as_str(),
            code,
            "request completed"
        );
    }
}

/// Ends an admitted call when its request finished or panicked. A request future dropped
/// unfinished (a host abandoning a stuck task at shutdown) leaves its call counted, so the
/// status keeps reporting that unfinished work.
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

/// What one parse at arrival produced, read by every later stage of the request.
struct Arrival<'r> {
    /// The registry as of the request's arrival (the policy answer below is for this one).
    registry: Arc<Registry>,
    /// The params, parsed once (the error is answered after the method check).
    params: Result<Params<'r>, Answer>,
    /// The policy's answer for the tool a direct `tools/call` names, when the host asked it.
    tool_access: Option<Access>,
}

/// Parses the params once, runs the host's header check (if any) on that view, then admits.
async fn serve_checked(
    server: &Server,
    caller: Caller,
    request: &Request,
    gated: &Arc<Gated>,
    client_cancel: CancelToken,
    host: Option<HostCheck>,
) {
    let mut arrival = Arrival {
        registry: server.registry(),
        params: parse_params(request),
        tool_access: None,
    };
    if let Some(check) = host {
        let checked = check_host(server, &arrival, &caller, request, &*check);
        // Dropped before the request is served: see [`HostCheck`].
        drop(check);
        match checked {
            Ok(access) => arrival.tool_access = access,
            Err(refusal) => return gated.finish(refusal),
        }
    }
    serve_admitted(server, caller, request, arrival, gated, client_cancel).await;
}

/// The host's header check on the arrival's view. For a direct `tools/call` the
/// policy answers here, once, and the answer travels on with the request.
fn check_host(
    server: &Server,
    arrival: &Arrival<'_>,
    caller: &Caller,
    request: &Request,
    check: &context::HostCheckFn,
) -> Result<Option<Access>, Reply> {
    let mirrored = context::mirrored(arrival.params.as_ref().ok());
    let decision = match (request.method.as_str(), mirrored.name()) {
        ("tools/call", Some(name)) if server.mode() == PublishMode::Direct => {
            arrival.registry.tool_decision(caller, name)
        }
        _ => None,
    };
    let annotations = decision
        .as_ref()
        .and_then(|(_, headers)| headers.as_deref());
    match check(request, &mirrored, annotations) {
        Ok(()) => Ok(decision.map(|(access, _)| access)),
        Err(e) => Err(error_reply(
            &request.id,
            Cause::HeaderMismatch,
            &e.to_string(),
            None,
        )),
    }
}

async fn serve_admitted(
    server: &Server,
    caller: Caller,
    request: &Request,
    arrival: Arrival<'_>,
    gated: &Arc<Gated>,
    client_cancel: CancelToken,
) {
    let Some((call, epoch, shutdown)) = server.admit() else {
        gated.summary.set(Outcome::Error, Cause::ShuttingDown);
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
    // Boxed once, so the selects below never move it. Small since issue #23 (the large arms
    // of `routes::route` are boxed there, each allocated only for its own method): an idle
    // listen stream holds this for its whole life.
    let work = Box::pin(handle(
        server,
        caller,
        request,
        arrival,
        gated,
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
            gated.summary.set_code(Outcome::Cancelled, 0);
            handler_cancel.cancel();
            let _ = futures_util::FutureExt::now_or_never(&mut work);
        }
    }
    end.finished = true;
}

/// The outbox one request writes to: refuses everything once the client cancelled the request
/// and remembers whether the reply went out (so a panic is answered only when it did not).
struct Gated {
    inner: Arc<dyn Outbox>,
    cancel: CancelToken,
    finished: std::sync::atomic::AtomicBool,
    /// What the request's completion event reports.
    summary: Summary,
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
    fn admitted(&self) {
        self.inner.admitted();
    }
}

/// Whether the method exists and its capability is advertised.
fn method_served(method: &str, registry: &Registry, apps: bool) -> bool {
    use crate::wire::methods::Needs;
    match methods::needs(method) {
        Some(Needs::Nothing) => true,
        Some(Needs::Tools) => registry.has_tools(),
        Some(Needs::Resources) => registry.has_resources() || apps,
        Some(Needs::Prompts) => registry.has_prompts(),
        Some(Needs::Completions) => registry.has_prompts() || registry.has_resources(),
        // Extension methods exist only while their extension is served (O119): the Tasks
        // extension's while a task tool is served, the Skills extension's while skills are.
        None => {
            (crate::wire::tasks::is_task_method(method) && registry.has_task_tools())
                || super::skills::served(method, registry)
        }
    }
}

#[allow(clippy::too_many_arguments)] // one request's parts, each used once below
async fn handle(
    server: &Server,
    caller: Caller,
    request: &Request,
    arrival: Arrival<'_>,
    gated: &Arc<Gated>,
    epoch: crate::machine::Epoch,
    handler_cancel: CancelToken,
    client_cancel: CancelToken,
) -> Option<Reply> {
    let summary = &gated.summary;
    let outbox: Arc<dyn Outbox> = Arc::clone(gated) as Arc<dyn Outbox>;
    super::fault::point(super::fault::points::DISPATCH);
    let Arrival {
        registry,
        params,
        tool_access,
    } = arrival;
    let method = request.method.as_str();
    let checked = if !method_served(method, &registry, server.apps().is_some()) {
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
        params.and_then(|p| check_meta(&p).map(|m| (p, m)))
    };
    let (params, request_meta) = match checked {
        Ok(x) => x,
        Err(answer) => return reply(server, &request.id, answer, summary),
    };
    // Read only for an operator who listens: compact mode's name is inside `arguments`.
    if tracing::enabled!(target: COMPLETION_TARGET, tracing::Level::INFO) {
        summary.name_from(server, method, &params);
    }
    let progress = Progress::new(
        request_meta.progress_token.map(RawValue::get),
        Arc::clone(&outbox),
        client_cancel.clone(),
        server.monotonic_clock(),
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
        tool_access,
    };
    let progress_end = ProgressEnd(progress, log);
    // Every refusal above answered with its own status; from here a silent request may
    // become a stream (the HTTP host's `stream_after`).
    outbox.admitted();
    let answer = routes::route(&ctx, request, &params, &outbox, &client_cancel)
        .await
        .unwrap_or_else(|a| a);
    drop(progress_end);
    reply(server, &request.id, answer, summary)
}

fn reply(
    server: &Server,
    id: &crate::wire::jsonrpc::RequestId,
    answer: Answer,
    summary: &Summary,
) -> Option<Reply> {
    summary.record(&answer);
    to_reply(
        server.info(),
        server.publication(),
        id,
        answer,
        &server.egress_limits(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The most the request future ([`handle`]) may take in the test profile. `serve_admitted`
    /// boxes it once per request (copying it to the heap) and an idle `subscriptions/listen`
    /// stream keeps it for its whole life (issue #23). It was 8,520 bytes (every method's arm
    /// inlined, the core invocation held twice); boxing the large arms in `routes::route` and
    /// a non-`async` `Ctx::invoke` made it 1,528. The bound leaves room for small changes and
    /// fails when a large arm is inlined again.
    const MAX_REQUEST_FUTURE_BYTES: usize = 2048;
    /// The most `tools/call`'s own future (the hot path's one extra allocation) may take in the
    /// test profile: 3,600 bytes measured (7,608 before), so an MRTR chain's store round trips
    /// (`mrtr::run`'s boxed `start_chain`/`resume`) or a doubled invocation fail it.
    const MAX_TOOLS_CALL_FUTURE_BYTES: usize = 4096;

    /// The size of the future `f` returns, without building one (the types name it).
    fn future_size<A, F>(_: impl FnOnce(A) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    #[test]
    fn issue23_the_request_future_stays_small() {
        let handle_bytes = future_size(
            |(s, c, r, a, g, e, h, k): (
                &Server,
                Caller,
                &Request,
                Arrival<'_>,
                &Arc<Gated>,
                crate::machine::Epoch,
                CancelToken,
                CancelToken,
            )| handle(s, c, r, a, g, e, h, k),
        );
        assert!(
            handle_bytes <= MAX_REQUEST_FUTURE_BYTES,
            "handle's future is {handle_bytes} bytes, bound {MAX_REQUEST_FUTURE_BYTES}"
        );
        let call_bytes = future_size(|(ctx, params): (&Ctx, &Params<'_>)| {
            super::super::tools::call(ctx, params)
        });
        assert!(
            call_bytes <= MAX_TOOLS_CALL_FUTURE_BYTES,
            "tools::call's future is {call_bytes} bytes, bound {MAX_TOOLS_CALL_FUTURE_BYTES}"
        );
        // The arms are boxed, so the route's own future is far smaller than its largest arm.
        let route_bytes = future_size(
            |(ctx, r, p, o, c): (&Ctx, &Request, &Params<'_>, &Arc<dyn Outbox>, &CancelToken)| {
                routes::route(ctx, r, p, o, c)
            },
        );
        assert!(
            route_bytes < call_bytes,
            "route's future ({route_bytes} bytes) holds tools::call's ({call_bytes}) inline"
        );
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
            summary: Summary::default(),
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
