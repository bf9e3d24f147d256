//! `tools/list` and `tools/call` through the publication layer (compact or direct), plus the
//! continuation binding of `tools/call` (the publication refuses continuations to the compact
//! discovery tools itself).

use serde_json::json;
use serde_json::value::RawValue;

use super::answer::{members_text, Answer};
use super::context::{Continuation, Ctx, Params};
use super::deadline::{within, Expired};
use super::mrtr::{self, HandlerOut};
use super::publication::{CallParams, PartsOutcome};
use super::PublishMode;
use crate::core::CoreError;
use crate::machine::ledger::InputMethod;

/// `tools/list` with cache hints (every page `private`, `ttlMs: 0`).
pub(crate) fn list(ctx: &Ctx, cursor: Option<&str>) -> Answer {
    match ctx
        .server
        .publication()
        .list_tools_text(&ctx.registry, &ctx.caller, cursor)
        .map(|text| super::apps::compact_tools(ctx.server.apps(), text))
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
/// bytes of the outer request. The params are read once, by the dispatcher; the members
/// publication needs are read from that view once, before the first invocation.
pub(crate) async fn call(ctx: &Ctx, params: &Params<'_>) -> Answer {
    let member = |key: &str| params.get(key).map(|raw| &**raw);
    let name = CallParams::read_name(member("name"));
    if ctx.server.mode() == PublishMode::Compact
        && matches!(name.as_deref(), Ok("search_tools" | "get_tool_details"))
    {
        return discovery(ctx, name, member).await;
    }
    let continuation = match Continuation::read(params) {
        Ok(c) => c,
        Err(answer) => return answer,
    };
    let arguments = member("arguments");
    let target = name.as_deref().unwrap_or_default();
    let args = arguments.map_or("", RawValue::get);
    // The invocation carries every answer of the chain (`run` puts them there), so
    // publication gets the params without `inputResponses`. Checked once, reported when the
    // handler would run (a rejected state is answered before a malformed call).
    let call = CallParams::without_responses(name.clone(), arguments, continuation.is_present())
        .map(|call| CallParams {
            decided: ctx.tool_access,
            ..call
        });
    let publication = ctx.server.publication();
    let tool = called_tool(ctx.server.mode(), target, arguments);
    let limit = ctx
        .registry
        .tool_timeout(&tool)
        .unwrap_or(ctx.server.tool_timeout());
    let tool = &tool;
    mrtr::run(
        ctx,
        InputMethod::ToolsCall,
        target,
        args.as_bytes(),
        continuation,
        |inv, _answers| {
            let call = call.as_ref().map_err(Answer::from_core);
            async move {
                let call = call?;
                let token = inv.cancel_token().clone();
                let view = inv.view_slot();
                let work = publication.call_tool_parts(&ctx.registry, inv, call);
                let clock = ctx.server.monotonic_clock();
                match within(&*clock, limit, &token, work).await {
                    Ok(Ok(PartsOutcome::Complete(parts))) => {
                        // Apps implies compact mode: this is `call_tool`'s result.
                        let parts = match ctx.server.apps() {
                            Some(shell) => shell.finish(publication, parts, view.take()),
                            None => parts,
                        };
                        Ok(HandlerOut::Complete(Answer::ToolResult(parts)))
                    }
                    Ok(Ok(PartsOutcome::InputRequired { requests })) => {
                        Ok(HandlerOut::Input(requests))
                    }
                    Ok(Err(e)) => Err(Answer::from_core(&e)),
                    Err(Expired) => Err(Answer::from_core(&CoreError::ToolTimedOut {
                        name: tool.clone(),
                    })),
                }
            }
        },
    )
    .await
}

/// The tool a `tools/call` runs, whose time-out bounds it: the target itself in direct mode,
/// `call_tool`'s `name` argument in compact mode (`call_tool` itself when that is not a
/// string; publication then refuses the call).
pub(crate) fn called_tool(mode: PublishMode, target: &str, arguments: Option<&RawValue>) -> String {
    #[derive(serde::Deserialize)]
    struct Wrapped {
        name: String,
    }
    match (mode, arguments) {
        (PublishMode::Compact, Some(raw)) if target == "call_tool" => {
            serde_json::from_str::<Wrapped>(raw.get())
                .map_or_else(|_| target.to_owned(), |w| w.name)
        }
        _ => target.to_owned(),
    }
}

/// Compact mode's `search_tools` and `get_tool_details`: they never ask for input and refuse
/// continuations themselves, so no ledger.
async fn discovery<'p>(
    ctx: &Ctx,
    name: Result<String, CoreError>,
    member: impl Fn(&str) -> Option<&'p RawValue>,
) -> Answer {
    let outcome = match CallParams::from_name(name, member) {
        Ok(mut call) => {
            let inv = match call.input_responses.take() {
                Some(responses) => ctx.invocation().with_input_responses(responses),
                None => ctx.invocation(),
            };
            ctx.invoke(
                ctx.server
                    .publication()
                    .call_tool_parts(&ctx.registry, inv, &call),
            )
            .await
        }
        Err(e) => Err(e),
    };
    match outcome {
        Ok(PartsOutcome::Complete(parts)) => Answer::ToolResult(parts),
        Ok(PartsOutcome::InputRequired { .. }) => {
            Answer::error(super::Cause::Internal, "Internal error")
        }
        Err(e) => Answer::from_core(&e),
    }
}
