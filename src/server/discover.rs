//! `server/discover`: supported versions, capabilities that follow the registry
//! served, instructions, cache hints.

use serde_json::{json, Map, Value};

use super::answer::Answer;
use super::context::Ctx;
use super::PROTOCOL_VERSION;

/// `server/discover`: capabilities match what this registry serves.
pub(crate) fn discover(ctx: &Ctx) -> Answer {
    let registry = &ctx.registry;
    let mut caps = Map::new();
    if registry.has_tools() {
        caps.insert("tools".into(), json!({ "listChanged": true }));
    }
    if registry.has_resources() {
        caps.insert(
            "resources".into(),
            json!({ "subscribe": true, "listChanged": true }),
        );
    }
    if registry.has_prompts() {
        caps.insert("prompts".into(), json!({ "listChanged": true }));
    }
    if registry.has_prompts() || registry.has_resources() {
        caps.insert("completions".into(), json!({}));
    }
    // Extensions, each while its contract is active (O119).
    let mut extensions = Map::new();
    if let Some((id, value)) = super::skills::declaration(ctx) {
        extensions.insert(id.into(), value);
    }
    if !extensions.is_empty() {
        caps.insert("extensions".into(), Value::Object(extensions));
    }
    // Every handler may log for requests that ask (L1: declared because it can be emitted).
    caps.insert("logging".into(), json!({}));
    let mut body = Map::new();
    body.insert("supportedVersions".into(), json!([PROTOCOL_VERSION]));
    body.insert("capabilities".into(), Value::Object(caps));
    if let Some(text) = ctx.server.instructions() {
        body.insert("instructions".into(), Value::String(text.to_owned()));
    }
    body.insert("ttlMs".into(), json!(0));
    body.insert("cacheScope".into(), json!("private"));
    Answer::complete(body)
}
