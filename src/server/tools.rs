//! `tools/list` and `tools/call` through the publication layer (compact or direct), plus the
//! continuation binding of `tools/call` (the publication refuses continuations to the compact
//! discovery tools itself, O51).

use serde_json::json;
use serde_json::value::RawValue;

use super::answer::{members_text, Answer};
use super::context::{Ctx, Params};
use super::mrtr::{self, HandlerOut};
use super::publication::{CallParams, PartsOutcome};
use super::PublishMode;
use crate::machine::ledger::Method;

/// `tools/list` with cache hints (H1: every page `private`, `ttlMs: 0`).
pub(crate) fn list(ctx: &Ctx, cursor: Option<&str>) -> Answer {
    match ctx
        .server
        .publication()
        .list_tools_text(&ctx.registry, &ctx.caller, cursor)
    {
        Ok(text) => match members_text(&text) {
            Some(mut body) => {
                for (key, value) in [("ttlMs", json!(0)), ("cacheScope", json!("private"))] {
                    if let Ok(raw) = serde_json::value::to_raw_value(&value) {
                        body.insert(key.to_owned(), raw);
                    }
                }
                Answer::Result {
                    body,
                    result_type: "complete",
                }
            }
            None => Answer::error(super::Cause::Internal, "Internal error"),
        },
        Err(e) => Answer::from_core(&e),
    }
}

/// `tools/call`, bound to the ledger. The chain is bound to the exact `name` and `arguments`
/// bytes of the outer request (I7). The params are read once, by the dispatcher; publication
/// checks the members it needs from that map.
pub(crate) async fn call(ctx: &Ctx, params: &Params<'_>) -> Answer {
    let member = |key: &str| params.get(key).map(|raw| &**raw);
    let name = member("name")
        .and_then(|n| serde_json::from_str::<String>(n.get()).ok())
        .unwrap_or_default();
    let args = member("arguments").map_or("", RawValue::get);
    let publication = ctx.server.publication();
    if ctx.server.mode() == PublishMode::Compact
        && matches!(name.as_str(), "search_tools" | "get_tool_details")
    {
        // Discovery never asks for input and refuses continuations itself (O51): no ledger.
        let outcome = match CallParams::from_members(member) {
            Ok(mut call) => {
                let inv = match call.input_responses.take() {
                    Some(responses) => ctx.invocation().with_input_responses(responses),
                    None => ctx.invocation(),
                };
                ctx.invoke(publication.call_tool_parts(&ctx.registry, inv, call))
                    .await
            }
            Err(e) => Err(e),
        };
        return match outcome {
            Ok(PartsOutcome::Complete(parts)) => Answer::ToolResult(parts),
            Ok(PartsOutcome::InputRequired { .. }) => {
                Answer::error(super::Cause::Internal, "Internal error")
            }
            Err(e) => Answer::from_core(&e),
        };
    }
    mrtr::run(
        ctx,
        Method::ToolsCall,
        &name,
        args.as_bytes(),
        params,
        |inv, _answers| {
            // The invocation already carries every answer of the chain (`run` put them
            // there), so publication gets the params without `inputResponses`.
            let call = CallParams::from_members(member).map(|mut call| {
                call.input_responses = None;
                call
            });
            async move {
                let call = call.map_err(|e| Answer::from_core(&e))?;
                match publication.call_tool_parts(&ctx.registry, inv, call).await {
                    Ok(PartsOutcome::Complete(parts)) => {
                        Ok(HandlerOut::Complete(Answer::ToolResult(parts)))
                    }
                    Ok(PartsOutcome::InputRequired { requests }) => Ok(HandlerOut::Input(requests)),
                    Err(e) => Err(Answer::from_core(&e)),
                }
            }
        },
    )
    .await
}
