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
use crate::wire::members::Members;
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
/// request; split once, without a second parse: [`crate::wire::members`]), and its `_meta`
/// split once too: the header check's [`Mirrored`] view and the `_meta` rules
/// ([`check_meta`]) read the same split instead of each splitting it again (#23).
#[derive(Debug, Clone, Default)]
pub(crate) struct Params<'a> {
    members: Members<'a>,
    /// `_meta`'s members; `None` when `_meta` is absent or not an object.
    meta: Option<Members<'a>>,
}

impl<'a> Params<'a> {
    /// The members of `raw` and of its `_meta`, or `None` when `raw` is not an object.
    pub(crate) fn of(raw: &'a RawValue) -> Option<Params<'a>> {
        let members = Members::of(raw)?;
        let meta = members.get("_meta").and_then(|meta| Members::of(meta));
        Some(Params { members, meta })
    }
}

impl<'a> std::ops::Deref for Params<'a> {
    type Target = Members<'a>;

    fn deref(&self) -> &Members<'a> {
        &self.members
    }
}

/// A host's check of a request's mirrored headers, run on the view of the one
/// parse of its params ([`parse_params`]; [`Mirrored::default`] when that parse failed, and the
/// dispatcher answers the params error), with the published `x-mcp-header` annotations of the
/// tool a direct `tools/call` names. `Err` is the refusal's message (400, -32600).
///
/// Owned, and dropped as soon as it has run: an HTTP host's check holds the request's
/// header map, whose values are slices of hyper's read buffer, and a long-lived request
/// (a listen stream) must not keep that buffer alive beside the one hyper reads into next.
pub(crate) type HostCheck = Box<HostCheckFn>;

/// The check itself ([`HostCheck`]).
pub(crate) type HostCheckFn = dyn Fn(&Request, &Mirrored<'_>, Option<&[ParamHeader]>) -> Result<(), HeaderError>
    + Send
    + Sync;

/// The mirrored members of the one parse of the params (empty when it failed).
pub(crate) fn mirrored<'p>(params: Option<&Params<'p>>) -> Mirrored<'p> {
    match params {
        Some(params) => Mirrored::from_split(|key| params.get(key).copied(), params.meta.as_ref()),
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
    meta::read_split_meta(params.meta.as_ref()).map_err(|e| Answer::Error {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    /// #23: `_meta` is split once, with the params; the header view and the `_meta` rules read
    /// that split and see what splitting `_meta` on their own saw (D15, D17, B-section).
    #[test]
    fn issue23_meta_split_once_serves_the_header_view_and_the_meta_rules() {
        let text = r#"{"name":"echo","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}"#;
        let params_raw = raw(text);
        let params = Params::of(&params_raw).unwrap();
        let meta = params.meta.as_ref().expect("_meta split");
        assert_eq!(
            meta.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            [
                "io.modelcontextprotocol/protocolVersion",
                "io.modelcontextprotocol/clientCapabilities",
                "traceparent"
            ]
        );
        assert_eq!(mirrored(Some(&params)).name(), Some("echo"));
        // The `_meta` rules over the shared split answer as `read_request_meta` does.
        let checked = check_meta(&params).map_err(|_| ()).unwrap();
        let own = meta::read_request_meta(params.get("_meta").copied()).unwrap();
        assert_eq!(checked.capabilities, own.capabilities);
        assert_eq!(checked.progress_token.map(RawValue::get), None);
    }

    /// The header view over the shared split is the view `Mirrored::of` reads from the text,
    /// for every shape of params and `_meta` (D15, D17).
    #[test]
    fn issue23_d15_d17_mirrored_over_the_shared_split_reads_as_of_reads() {
        use crate::wire::headers::{mirrored_view, MIRRORED_SHAPES};
        for text in MIRRORED_SHAPES {
            let params_raw = raw(text);
            let params = Params::of(&params_raw).unwrap();
            assert_eq!(
                mirrored_view(&mirrored(Some(&params))),
                mirrored_view(&Mirrored::of(Some(&params_raw))),
                "{text}"
            );
        }
        assert_eq!(
            mirrored_view(&mirrored(None)),
            mirrored_view(&Mirrored::default())
        );
    }

    /// `_meta` absent, `null`, an array or a string: no split, and the `_meta` rules answer
    /// -32602 "missing _meta" exactly as before the shared split.
    #[test]
    fn issue23_meta_not_an_object_has_no_split_and_is_missing() {
        for meta in ["", r#","_meta":null"#, r#","_meta":[]"#, r#","_meta":"x""#] {
            let params_raw = raw(&format!(r#"{{"name":"echo"{meta}}}"#));
            let params = Params::of(&params_raw).unwrap();
            assert!(params.meta.is_none(), "{meta}");
            match check_meta(&params) {
                Err(Answer::Error { cause, .. }) => assert_eq!(cause, Cause::MissingMeta, "{meta}"),
                _ => panic!("{meta}: not refused as missing"),
            }
            assert!(matches!(
                meta::read_request_meta(params.get("_meta").copied()),
                Err(meta::RequestMetaError::Missing)
            ));
        }
        // Params that are not an object have no members at all.
        assert!(Params::of(&raw("[1]")).is_none());
    }
}
