//! `completion/complete` (G-section): the request's `ref`, `argument` and `context` read from
//! its params, then the registry.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::answer::Answer;
use super::context::{Ctx, Params};
use super::Cause;
use crate::core::CompletionRef;

/// `completion/complete` (G-section).
pub(crate) fn complete(ctx: &Ctx, params: &Params<'_>) -> Result<Answer, Answer> {
    super::fault::point(super::fault::points::COMPLETE);
    let bad = |m: &str| Answer::error(Cause::InvalidParams, m.to_owned());
    let reference: Value = params
        .get("ref")
        .and_then(|r| serde_json::from_str(r.get()).ok())
        .ok_or_else(|| bad("ref must be an object"))?;
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let reference = match reference.get("type").and_then(Value::as_str) {
        Some("ref/prompt") => CompletionRef::Prompt {
            name: text(&reference, "name").ok_or_else(|| bad("ref.name must be a string"))?,
        },
        Some("ref/resource") => CompletionRef::Resource {
            uri: text(&reference, "uri").ok_or_else(|| bad("ref.uri must be a string"))?,
        },
        _ => return Err(bad("ref.type must be ref/prompt or ref/resource")),
    };
    let argument: Value = params
        .get("argument")
        .and_then(|r| serde_json::from_str(r.get()).ok())
        .ok_or_else(|| bad("argument must be an object"))?;
    let name = text(&argument, "name").ok_or_else(|| bad("argument.name must be a string"))?;
    let value = text(&argument, "value").ok_or_else(|| bad("argument.value must be a string"))?;
    let context: BTreeMap<String, String> = match params.get("context") {
        None => BTreeMap::new(),
        Some(raw) => {
            let v: Value = serde_json::from_str(raw.get()).map_err(|_| bad("context"))?;
            match v.get("arguments") {
                None => BTreeMap::new(),
                Some(a) => serde_json::from_value(a.clone())
                    .map_err(|_| bad("context.arguments must be an object of strings"))?,
            }
        }
    };
    Ok(
        match ctx
            .registry
            .complete(&ctx.caller, &reference, &name, &value, &context)
        {
            Ok(reply) => {
                let mut body = Map::new();
                body.insert(
                    "completion".into(),
                    serde_json::to_value(reply).unwrap_or(Value::Null),
                );
                Answer::complete(body)
            }
            Err(e) => Answer::from_core(&e),
        },
    )
}
