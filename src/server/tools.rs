//! `tools/list` and `tools/call` through the publication layer (compact or direct), plus the
//! continuation binding of `tools/call` (the publication refuses continuations to the compact
//! discovery tools itself).

use serde_json::json;
use serde_json::value::RawValue;

use super::answer::{members_text, Answer};
use super::context::{Continuation, Ctx, Params};
use super::deadline::{within, within_pinned, Expired};
use super::mrtr::{self, HandlerOut};
use super::publication::{CallParams, PartsOutcome};
use super::PublishMode;
use crate::core::tasks::TaskMode;
use crate::core::{CancelToken, CoreError, Invocation};
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
    // The Tasks extension: the server alone decides (no client hint; a legacy `task` param
    // is ignored). Without the per-request declaration a task tool runs synchronously, or
    // -32021 when it always needs a task, before the handler runs.
    // The mode asks no policy; the one policy answer of this request comes later on the call
    // path (O28), except on this refusal, which is the request's only ask (or reuses the host's
    // answer) and is given only for a tool the caller may see.
    let task_mode = ctx.registry.tool_task_mode(&tool);
    let declares = ctx.caps.declares_tasks();
    if task_mode == TaskMode::Required
        && !declares
        && ctx.tool_access.map_or_else(
            || ctx.registry.tool_visible(&ctx.caller, &tool),
            |access| access.is_visible(),
        )
    {
        return super::tasks::missing_extension();
    }
    let as_task = task_mode != TaskMode::Never && declares;
    let tool = &tool;
    mrtr::run(
        ctx,
        InputMethod::ToolsCall,
        target,
        args.as_bytes(),
        continuation,
        |inv, answers| {
            let call = call.as_ref().map_err(Answer::from_core);
            let answers = answers.clone();
            async move {
                let call = call?;
                if as_task {
                    let remake = remake(ctx, call, tool, limit);
                    return super::tasks::start(
                        &ctx.server,
                        &ctx.caller,
                        task_mode,
                        remake,
                        answers,
                    )
                    .await;
                }
                let token = inv.cancel_token().clone();
                let view = inv.view_slot();
                let work = std::pin::pin!(publication.call_tool_parts(&ctx.registry, inv, call));
                let clock = ctx.server.monotonic_clock();
                match within_pinned(&*clock, limit, &token, work).await {
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
                        name: (**tool).to_owned(),
                    })),
                }
            }
        },
    )
    .await
}

/// The work of a task tool's call as an owned, restartable future: each run gets the answers
/// gathered so far and the task's own cancel token (never the request's: the work outlives
/// the request, and `notifications/cancelled` never cancels a task).
fn remake(
    ctx: &Ctx,
    call: &CallParams<'_>,
    tool: &str,
    limit: std::time::Duration,
) -> super::tasks::Remake {
    let server = ctx.server.clone();
    let registry = std::sync::Arc::clone(&ctx.registry);
    let caller = ctx.caller.clone();
    let caps = ctx.caps.clone();
    let name = call.name.clone();
    let arguments: Option<Box<RawValue>> = call.arguments.map(ToOwned::to_owned);
    let continuation = call.continuation;
    let decided = call.decided;
    let tool = tool.to_owned();
    std::sync::Arc::new(move |answers, token: CancelToken| {
        let server = server.clone();
        let registry = std::sync::Arc::clone(&registry);
        let inv = Invocation::for_request(caller.clone(), caps.clone(), token.clone())
            .with_input_responses(answers);
        let name = name.clone();
        let arguments = arguments.clone();
        let tool = tool.clone();
        Box::pin(async move {
            let call = CallParams {
                name,
                arguments: arguments.as_deref(),
                input_responses: None,
                continuation,
                decided,
            };
            let clock = server.monotonic_clock();
            let work = server.publication().call_tool_parts(&registry, inv, &call);
            match within(&*clock, limit, &token, work).await {
                Ok(out) => out,
                Err(Expired) => Err(CoreError::ToolTimedOut { name: tool }),
            }
        })
    })
}

/// The tool a `tools/call` runs, whose time-out bounds it: the target itself in direct mode,
/// `call_tool`'s `name` argument in compact mode (`call_tool` itself when that is not a
/// string; publication then refuses the call).
pub(crate) fn called_tool<'t>(
    mode: PublishMode,
    target: &'t str,
    arguments: Option<&RawValue>,
) -> std::borrow::Cow<'t, str> {
    #[derive(serde::Deserialize)]
    struct Wrapped {
        name: String,
    }
    match (mode, arguments) {
        (PublishMode::Compact, Some(raw)) if target == "call_tool" => {
            serde_json::from_str::<Wrapped>(raw.get())
                .map_or(std::borrow::Cow::Borrowed(target), |w| {
                    std::borrow::Cow::Owned(w.name)
                })
        }
        // Borrowed: a direct call names its tool itself (no copy per request, #23).
        _ => std::borrow::Cow::Borrowed(target),
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
