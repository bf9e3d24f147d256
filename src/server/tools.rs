//! `tools/list` and `tools/call` through the publication layer (compact or direct), plus the
//! continuation binding of `tools/call` (the publication refuses continuations to the compact
//! discovery tools itself, O51).

use std::collections::BTreeMap;

use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::dispatch::{members_text, Members};
use super::dispatch::{Answer, Ctx, Params};
use super::mrtr::{self, HandlerOut};
use super::publication::{Mode, Publication, TextOutcome};
use super::{PublishMode, Server};
use crate::core::FailureCode;
use crate::machine::ledger::Method;

/// The publication for a server's mode.
pub(crate) fn publication(mode: PublishMode) -> Publication {
    Publication::new(match mode {
        PublishMode::Compact => Mode::Compact,
        PublishMode::Direct => Mode::Direct,
    })
}

/// A `CallToolResult` body for a failure found after the fact (`result_too_large`, continuation
/// failures).
pub(crate) fn failure_result(server: &Server, code: FailureCode, message: &str) -> Members {
    let text = server
        .inner()
        .publication
        .failure_result_text(code, message);
    members_text(&text).unwrap_or_default()
}

/// `tools/list` with cache hints (H1: every page `private`, `ttlMs: 0`).
pub(crate) fn list(ctx: &Ctx, cursor: Option<&str>) -> Answer {
    match ctx
        .server
        .inner()
        .publication
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
/// bytes of the outer request (I7).
pub(crate) async fn call(ctx: &Ctx, params: &Params, raw_params: &RawValue) -> Answer {
    let name = params
        .get("name")
        .and_then(|n| serde_json::from_str::<String>(n.get()).ok())
        .unwrap_or_default();
    let args = params.get("arguments").map_or("", |a| a.get()).to_owned();
    if ctx.server.inner().mode == PublishMode::Compact
        && matches!(name.as_str(), "search_tools" | "get_tool_details")
    {
        // Discovery never asks for input and refuses continuations itself (O51): no ledger.
        let outcome = ctx
            .invoke(ctx.server.inner().publication.call_tool_text(
                &ctx.registry,
                ctx.invocation(),
                raw_params,
            ))
            .await;
        return match outcome {
            Ok(TextOutcome::Complete(text)) => tool_result(&text),
            Ok(TextOutcome::InputRequired { .. }) => {
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
        |inv, answers| {
            // The handler sees every answer of its chain: the params it gets carry them as
            // `inputResponses` (the publication hands that member to the invocation).
            let responses = answers_text(answers);
            let params_text = with_responses(params, raw_params, responses.as_ref());
            async move {
                let Some(params_text) = params_text else {
                    return Err(Answer::error(super::Cause::Internal, "Internal error"));
                };
                match ctx
                    .server
                    .inner()
                    .publication
                    .call_tool_text(&ctx.registry, inv, &params_text)
                    .await
                {
                    Ok(TextOutcome::Complete(text)) => Ok(HandlerOut::Complete(tool_result(&text))),
                    Ok(TextOutcome::InputRequired { requests }) => Ok(HandlerOut::Input(requests)),
                    Err(e) => Err(Answer::from_core(&e)),
                }
            }
        },
    )
    .await
}

/// A complete `CallToolResult` given as exact text.
fn tool_result(text: &str) -> Answer {
    match members_text(text) {
        Some(body) => Answer::ToolResult(body),
        None => Answer::error(super::Cause::Internal, "Internal error"),
    }
}

/// The answers as one object text (`None`: no answers).
fn answers_text(answers: &BTreeMap<String, Box<RawValue>>) -> Option<String> {
    if answers.is_empty() {
        return None;
    }
    let mut out = String::from("{");
    for (i, (key, value)) in answers.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&Value::String(key.clone()).to_string());
        out.push(':');
        out.push_str(value.get());
    }
    out.push('}');
    Some(out)
}

/// The params bytes with `inputResponses` replaced by the chain's answers; every other member
/// keeps its exact bytes.
fn with_responses(
    params: &Params,
    raw: &RawValue,
    responses: Option<&String>,
) -> Option<Box<RawValue>> {
    let Some(responses) = responses else {
        return Some(raw.to_owned());
    };
    let mut members: BTreeMap<&str, &str> =
        params.iter().map(|(k, v)| (k.as_str(), v.get())).collect();
    members.insert("inputResponses", responses);
    let mut out = String::from("{");
    for (i, (k, v)) in members.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&Value::String((*k).to_owned()).to_string());
        out.push(':');
        out.push_str(v);
    }
    out.push('}');
    RawValue::from_string(out).ok()
}
