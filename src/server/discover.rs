//! `server/discover`: supported versions, capabilities that follow the registry
//! served, instructions, cache hints.
//!
//! The body is the generated `DiscoverResult` (`crate::wire`, the type the client decodes
//! into), with the generated `ServerCapabilities` inside; `resultType` and `_meta` are the
//! answer's to add ([`Answer::complete`]).

use serde_json::{Map, Value};

use super::answer::Answer;
use super::context::Ctx;
use super::PROTOCOL_VERSION;
use crate::wire::{
    DiscoverResult, DiscoverResultCacheScope, DiscoverResultResultType, ServerCapabilities,
    ServerCapabilitiesExtensions, ServerCapabilitiesPrompts, ServerCapabilitiesResources,
    ServerCapabilitiesTools,
};

/// `server/discover`: capabilities match what this registry serves.
pub(crate) fn discover(ctx: &Ctx) -> Answer {
    let body = DiscoverResult {
        cache_scope: DiscoverResultCacheScope::Private,
        capabilities: capabilities(ctx),
        instructions: ctx.server.instructions().map(str::to_owned),
        meta: None,
        result_type: DiscoverResultResultType::Complete,
        supported_versions: vec![PROTOCOL_VERSION.to_owned()],
        ttl_ms: 0,
        extra: Map::new(),
    };
    let mut body = match serde_json::to_value(body) {
        Ok(Value::Object(body)) => body,
        // A struct of strings, booleans and maps always serialises to an object; kept total.
        _ => return Answer::internal_retryable(),
    };
    body.remove("resultType");
    Answer::complete(body)
}

/// What this registry serves, as the generated `ServerCapabilities`.
fn capabilities(ctx: &Ctx) -> ServerCapabilities {
    let registry = &ctx.registry;
    let served = registry.has_prompts() || registry.has_resources();
    ServerCapabilities {
        completions: served.then(Map::new),
        experimental: None,
        extensions: extensions(ctx),
        // Every handler may log for requests that ask (L1: declared because it can be emitted).
        logging: Some(Map::new()),
        prompts: registry.has_prompts().then(|| ServerCapabilitiesPrompts {
            list_changed: Some(true),
            extra: Map::new(),
        }),
        resources: if registry.has_resources() {
            Some(ServerCapabilitiesResources {
                list_changed: Some(true),
                subscribe: Some(true),
                extra: Map::new(),
            })
        } else {
            // With only the Apps shell the capability is empty: the shell is readable, never
            // listed or updated.
            ctx.server.apps().map(|_| ServerCapabilitiesResources {
                list_changed: None,
                subscribe: None,
                extra: Map::new(),
            })
        },
        tools: registry.has_tools().then(|| ServerCapabilitiesTools {
            list_changed: Some(true),
            extra: Map::new(),
        }),
        extra: Map::new(),
    }
}

/// The extensions this server has active, each advertised only while it is (B19, O119).
fn extensions(ctx: &Ctx) -> Option<ServerCapabilitiesExtensions> {
    let mut active = std::collections::BTreeMap::new();
    if ctx.server.apps().is_some() {
        active.insert(crate::core::UI_EXTENSION.to_owned(), Map::new());
    }
    // Tasks while a task tool is served (N35: under `extensions`, never a `capabilities.tasks`
    // slot).
    if ctx.registry.has_task_tools() {
        active.insert(crate::wire::tasks::TASKS_EXTENSION.to_owned(), Map::new());
    }
    // Skills while a catalogue is served, with its declaration (directory reads).
    if let Some((id, Value::Object(declaration))) = super::skills::declaration(ctx) {
        active.insert(id.to_owned(), declaration);
    }
    (!active.is_empty()).then_some(ServerCapabilitiesExtensions(active))
}
