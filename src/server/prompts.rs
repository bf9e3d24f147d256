//! `prompts/get`: `name` and `arguments` read from the params, the handler
//! run within its time-out through the continuation glue. `prompts/list` is a registry page
//! routed directly.

use std::collections::BTreeMap;

use serde_json::Value;

use super::answer::Answer;
use super::context::{string_param, Continuation, Ctx, Params};
use super::mrtr::{self, timed_round};
use super::Cause;
use crate::core::{CoreError, PromptReply};
use crate::machine::ledger::InputMethod;

/// `prompts/get` with continuations, bounded like a read (the same default time-out, or the
/// prompt's own).
pub(crate) async fn get(ctx: &Ctx, params: &Params<'_>) -> Result<Answer, Answer> {
    let name = string_param(params, "name")?;
    let arguments = match params.get("arguments") {
        None => BTreeMap::new(),
        Some(raw) => serde_json::from_str::<BTreeMap<String, String>>(raw.get()).map_err(|_| {
            Answer::error(
                Cause::InvalidParams,
                "arguments must be an object of strings",
            )
        })?,
    };
    let arg_bytes = params.get("arguments").map_or("", |r| r.get());
    Ok(get_named(ctx, params, &name, arguments, arg_bytes).await)
}

async fn get_named(
    ctx: &Ctx,
    params: &Params<'_>,
    name: &str,
    arguments: BTreeMap<String, String>,
    arg_bytes: &str,
) -> Answer {
    let limit = ctx
        .registry
        .prompt_timeout(name)
        .unwrap_or(ctx.server.read_timeout());
    let continuation = match Continuation::read(params) {
        Ok(c) => c,
        Err(answer) => return answer,
    };
    mrtr::run(
        ctx,
        InputMethod::PromptsGet,
        name,
        arg_bytes.as_bytes(),
        continuation,
        |inv, _| {
            let arguments = arguments.clone();
            async move {
                let token = inv.cancel_token().clone();
                let work = ctx.registry.get_prompt(inv, name, arguments);
                let clock = ctx.server.monotonic_clock();
                timed_round(&*clock, limit, &token, work, encode_prompt, || {
                    CoreError::PromptTimedOut {
                        name: name.to_owned(),
                    }
                })
                .await
            }
        },
    )
    .await
}

/// A `prompts/get` result as the answer's body.
fn encode_prompt(reply: PromptReply) -> Result<Answer, Answer> {
    match serde_json::to_value(&reply) {
        Ok(Value::Object(body)) => Ok(Answer::complete(body)),
        _ => Err(Answer::error(Cause::Internal, "Internal error")),
    }
}
