//! The checked context of one admitted request ([`Ctx`]) and its params as borrowed members
//! ([`Params`]), which every later stage reads instead of parsing the params again.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::value::RawValue;

use super::answer::Answer;
use super::log::RequestLog;
use super::progress::Progress;
use super::{Cause, Server};
use crate::core::{Caller, CancelToken, ClientCapabilities, Invocation, Registry};
use crate::wire::headers::{HeaderError, Mirrored, ParamHeader};
use crate::wire::jsonrpc::Request;
use crate::wire::meta;

/// The checked per-request context.
pub(crate) struct Ctx {
    pub(crate) server: Server,
    pub(crate) caller: Caller,
    pub(crate) registry: Arc<Registry>,
    pub(crate) epoch: crate::machine::Epoch,
    pub(crate) caps: ClientCapabilities,
    pub(crate) progress: Option<Arc<Progress>>,
    /// Present only when the request's `_meta` asked for logging.
    pub(crate) log: Option<Arc<RequestLog>>,
    /// The token handlers observe: fired by client cancellation and by shutdown.
    pub(crate) cancel: CancelToken,
    /// The policy's answer for the tool a direct `tools/call` names, when the HTTP header
    /// check already asked it for this request ([`HostCheck`]); `None` over stdio.
    pub(crate) tool_access: Option<crate::core::Access>,
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

    /// Runs one core invocation, with the pacer told when it starts and ends. Every caller
    /// awaits it at once, so telling the pacer on creation is telling it on the first poll.
    /// Not an `async fn` on purpose (issue #23): that state machine would hold `fut` twice,
    /// as its argument and as its awaitee, doubling the request future's largest part.
    pub(crate) fn invoke<'a, F: std::future::Future + 'a>(
        &'a self,
        fut: F,
    ) -> impl std::future::Future<Output = F::Output> + 'a {
        if let Some(p) = &self.progress {
            p.started();
        }
        futures_util::FutureExt::map(fut, move |out| {
            if let Some(p) = &self.progress {
                p.ended();
            }
            out
        })
    }
}

/// The params object of a request, member by member (exact bytes, borrowed from the
/// request; split once, without a second parse: [`crate::wire::members`]).
pub(crate) type Params<'a> = crate::wire::members::Members<'a>;

/// A host's check of a request's mirrored headers, run on the view of the one
/// parse of its params ([`parse_params`]; [`Mirrored::default`] when that parse failed, and the
/// dispatcher answers the params error), with the published `x-mcp-header` annotations of the
/// tool a direct `tools/call` names. `Err` is the refusal's message (400, -32600).
pub(crate) type HostCheck<'a> = &'a (dyn Fn(&Request, &Mirrored<'_>, Option<&[ParamHeader]>) -> Result<(), HeaderError>
         + Send
         + Sync);

/// The mirrored members of the one parse of the params (empty when it failed).
pub(crate) fn mirrored<'p>(params: Option<&Params<'p>>) -> Mirrored<'p> {
    match params {
        Some(params) => Mirrored::from_members(|key| params.get(key).copied()),
        None => Mirrored::default(),
    }
}

pub(crate) fn parse_params(request: &Request) -> Result<Params<'_>, Answer> {
    let Some(raw) = request.params.as_deref() else {
        let e = meta::RequestMetaError::Missing;
        return Err(Answer::error(e.cause(), e.to_string()));
    };
    Params::of(raw).ok_or_else(|| Answer::error(Cause::InvalidParams, "params must be an object"))
}

/// The continuation members of a request that may answer `input_required` (I-section),
/// read once from its params by the method family that binds it to the ledger.
pub(crate) struct Continuation {
    /// `inputResponses`, when present.
    pub(crate) responses: Option<BTreeMap<String, Box<RawValue>>>,
    /// `requestState`, when present.
    pub(crate) state: Option<String>,
}

impl Continuation {
    /// Reads `inputResponses` (an object) and `requestState` (a string), in that order.
    pub(crate) fn read(params: &Params<'_>) -> Result<Continuation, Answer> {
        let responses = match params.get("inputResponses") {
            None => None,
            Some(raw) => Some(
                serde_json::from_str::<BTreeMap<String, Box<RawValue>>>(raw.get()).map_err(
                    |_| Answer::error(Cause::InvalidParams, "inputResponses must be an object"),
                )?,
            ),
        };
        let state = match params.get("requestState") {
            None => None,
            Some(raw) => Some(serde_json::from_str::<String>(raw.get()).map_err(|_| {
                Answer::error(Cause::InvalidParams, "requestState must be a string")
            })?),
        };
        Ok(Continuation { responses, state })
    }

    /// Whether the request carries either member (a continuation attempt).
    pub(crate) fn is_present(&self) -> bool {
        self.responses.is_some() || self.state.is_some()
    }
}

/// The request's `_meta` checks (the rules: [`meta::read_request_meta`]).
pub(crate) fn check_meta<'p>(params: &Params<'p>) -> Result<meta::RequestMeta<'p>, Answer> {
    meta::read_request_meta(params.get("_meta").copied()).map_err(|e| Answer::Error {
        cause: e.cause(),
        message: e.to_string(),
        data: e.data(),
    })
}

/// The optional `cursor` of a list request.
pub(crate) fn cursor(params: &Params<'_>) -> Result<Option<String>, Answer> {
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

/// Ends a request's progress and log channel however the request ends.
pub(crate) struct ProgressEnd(
    pub(crate) Option<Arc<Progress>>,
    pub(crate) Option<Arc<RequestLog>>,
);

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
