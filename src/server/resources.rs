//! `resources/read`: the `uri` read from the params, the handler run
//! within its time-out through the continuation glue, the final size check inside that
//! time-out. The listings (`resources/list`, `resources/templates/list`) are registry pages
//! routed directly.

use serde_json::Value;

use super::answer::{encode_complete, Answer};
use super::context::{string_param, Continuation, Ctx, Params};
use super::mrtr::{self, timed_round};
use crate::core::{CoreError, FailureCode, ReadReply};
use crate::machine::ledger::InputMethod;
use crate::wire::jsonrpc::RequestId;

/// `resources/read` with continuations. The URI is routed once: the route gives both the
/// time-out and the handler. Each handler invocation runs within the read's time-out, which
/// also covers converting and encoding the result (the final size check); a time-out
/// feeds the ledger like any other handler failure.
pub(crate) async fn read(ctx: &Ctx, params: &Params<'_>, id: &RequestId) -> Result<Answer, Answer> {
    let uri = string_param(params, "uri")?;
    // The Apps shell mount: exact bytes, before any application resource or policy. The
    // shell never asks for input, so no `requestState` is valid for it.
    if let Some(shell) = ctx.server.apps().filter(|shell| shell.mounts(&uri)) {
        return Ok(match Continuation::read(params) {
            Err(answer) => answer,
            Ok(c) if c.state.is_some() => mrtr::refuse(
                ctx,
                InputMethod::ResourcesRead,
                FailureCode::StateRejected,
                "The requestState was rejected.",
            ),
            Ok(_) => shell.read(id, &ctx.server.egress_limits()),
        });
    }
    Ok(read_uri(ctx, params, &uri, id).await)
}

async fn read_uri(ctx: &Ctx, params: &Params<'_>, uri: &str, id: &RequestId) -> Answer {
    let route = ctx.registry.route_read(uri);
    let limit = route
        .as_ref()
        .and_then(|route| route.timeout())
        .unwrap_or(ctx.server.read_timeout());
    let continuation = match Continuation::read(params) {
        Ok(c) => c,
        Err(answer) => return answer,
    };
    let route = route.as_ref();
    mrtr::run(
        ctx,
        InputMethod::ResourcesRead,
        uri,
        b"",
        continuation,
        |inv, _| async move {
            let token = inv.cancel_token().clone();
            let work = ctx.registry.read_routed(inv, uri, route);
            let clock = ctx.server.monotonic_clock();
            timed_round(
                &*clock,
                limit,
                &token,
                work,
                |reply| encode_read(ctx, id, uri, &reply),
                || CoreError::ReadTimedOut {
                    uri: uri.to_owned(),
                },
            )
            .await
        },
    )
    .await
}

/// The whole `resources/read` response, encoded once: that encoding is the final size check,
/// and a read over it fails like one over the contents limit.
fn encode_read(ctx: &Ctx, id: &RequestId, uri: &str, reply: &ReadReply) -> Result<Answer, Answer> {
    let Ok(Value::Object(body)) = serde_json::to_value(reply) else {
        return Err(Answer::internal_retryable());
    };
    match encode_complete(ctx.server.info(), id, body, &ctx.server.egress_limits()) {
        Ok(reply) => Ok(Answer::Encoded(reply)),
        Err(e) if e.is_too_large() => Err(Answer::from_core(&CoreError::ResourceTooLarge {
            uri: uri.to_owned(),
        })),
        Err(_) => Err(Answer::internal_retryable()),
    }
}
