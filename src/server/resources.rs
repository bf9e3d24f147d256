//! `resources/read` (F-section, O32, O33): the `uri` read from the params, the handler run
//! within its time-out through the continuation glue, the final size check inside that
//! time-out. The listings (`resources/list`, `resources/templates/list`) are registry pages
//! routed directly.

use serde_json::Value;

use super::answer::{encode_complete, Answer};
use super::context::{string_param, Continuation, Ctx, Params};
use super::deadline::{within, Expired};
use super::mrtr::{self, HandlerOut};
use crate::core::{CoreError, Outcome};
use crate::machine::ledger::Method;
use crate::wire::jsonrpc::RequestId;

/// `resources/read` with continuations. Each handler invocation runs within the read's
/// time-out, which also covers converting and encoding the result (the final size check, O33);
/// a time-out feeds the ledger like any other handler failure.
pub(crate) async fn read(ctx: &Ctx, params: &Params<'_>, id: &RequestId) -> Result<Answer, Answer> {
    let uri = string_param(params, "uri")?;
    Ok(read_uri(ctx, params, &uri, id).await)
}

async fn read_uri(ctx: &Ctx, params: &Params<'_>, uri: &str, id: &RequestId) -> Answer {
    let limit = ctx
        .registry
        .read_timeout(uri)
        .unwrap_or(ctx.server.read_timeout());
    let continuation = match Continuation::read(params) {
        Ok(c) => c,
        Err(answer) => return answer,
    };
    mrtr::run(
        ctx,
        Method::ResourcesRead,
        uri,
        b"",
        continuation,
        |inv, _| async move {
            let token = inv.cancel_token().clone();
            let read = async {
                match ctx.registry.read_resource(inv, uri).await {
                    Ok(Outcome::Complete(reply)) => match serde_json::to_value(&reply) {
                        // The final size check is the encoding of the whole response (O33); a
                        // read over it fails like one over the contents limit (O32).
                        Ok(Value::Object(body)) => {
                            match encode_complete(ctx.server.info(), id, body) {
                                Ok(reply) => Ok(HandlerOut::Complete(Answer::Encoded(reply))),
                                Err(e) if e.is_too_large() => {
                                    Err(Answer::from_core(&CoreError::ResourceTooLarge {
                                        uri: uri.to_owned(),
                                    }))
                                }
                                Err(_) => Err(Answer::internal_retryable()),
                            }
                        }
                        _ => Err(Answer::internal_retryable()),
                    },
                    Ok(Outcome::InputRequired { requests }) => Ok(HandlerOut::Input(requests)),
                    Err(e) => Err(Answer::from_core(&e)),
                }
            };
            within(limit, &token, read).await.unwrap_or_else(|Expired| {
                Err(Answer::from_core(&CoreError::ReadTimedOut {
                    uri: uri.to_owned(),
                }))
            })
        },
    )
    .await
}
