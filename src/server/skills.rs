//! The Skills extension's methods (SEP-2640): `skills/list`, `skills/get` and
//! `resources/directory/read`, answered from the registry's skills catalogue. A registry
//! without one does not declare the extension, and its methods (and `resources/directory/read`
//! without `directoryRead`) are unknown (-32601, [`served`]), as on a server that never heard
//! of it.
//! Skill files themselves are read with plain `resources/read`.

use serde_json::{Map, Value};

use super::answer::{page, Answer};
use super::context::{cursor, string_param, Ctx, Params};
use crate::core::descriptor::CacheHints;
use crate::core::{Registry, Skills};
use crate::wire::skills::{DIRECTORY_READ_METHOD, EXTENSION_ID, GET_METHOD, LIST_METHOD};

/// Whether `method` is one of the extension's and the registry serves it (admission answers
/// -32601 otherwise, before any params are read).
pub(crate) fn served(method: &str, registry: &Registry) -> bool {
    match method {
        LIST_METHOD | GET_METHOD => registry.skills().is_some(),
        DIRECTORY_READ_METHOD => registry.skills().is_some_and(Skills::directory_read),
        _ => false,
    }
}

/// The declaration for `capabilities.extensions`, while the registry serves skills.
pub(crate) fn declaration(ctx: &Ctx) -> Option<(&'static str, Value)> {
    let skills = ctx.registry.skills()?;
    let value = serde_json::to_value(skills.capability()).ok()?;
    Some((EXTENSION_ID, value))
}

/// `skills/list {cursor?}`: `{skills, nextCursor?, ttlMs, cacheScope}`.
pub(crate) fn list(ctx: &Ctx, params: &Params<'_>) -> Result<Answer, Answer> {
    Ok(page(
        ctx.registry
            .list_skills(&ctx.caller, cursor(params)?.as_deref()),
        "skills",
    ))
}

/// `skills/get {uri}`: `{skill, ttlMs, cacheScope}`, never a cursor.
pub(crate) fn get(ctx: &Ctx, params: &Params<'_>) -> Result<Answer, Answer> {
    let uri = string_param(params, "uri")?;
    let entry = match ctx.registry.get_skill(&ctx.caller, &uri) {
        Ok(entry) => entry,
        Err(e) => return Ok(Answer::from_core(&e)),
    };
    let (Ok(skill), Ok(Value::Object(hints))) = (
        serde_json::to_value(entry),
        serde_json::to_value(CacheHints::PRIVATE_NO_STORE),
    ) else {
        return Ok(Answer::internal_retryable());
    };
    let mut body = Map::new();
    body.insert("skill".into(), skill);
    body.extend(hints);
    Ok(Answer::complete(body))
}

/// `resources/directory/read {uri, cursor?}`: `{resources, nextCursor?, ttlMs, cacheScope}`.
pub(crate) fn read_directory(ctx: &Ctx, params: &Params<'_>) -> Result<Answer, Answer> {
    let uri = string_param(params, "uri")?;
    Ok(page(
        ctx.registry
            .read_directory(&ctx.caller, &uri, cursor(params)?.as_deref()),
        "resources",
    ))
}
