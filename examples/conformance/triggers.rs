//! Fixtures that act on the running server: `test_trigger_tool_change` and
//! `test_trigger_prompt_change` each toggle one catalogue entry (`test_dynamic_tool`,
//! `test_dynamic_prompt`) and swap the new registry in with [`Server::replace_registry`], which
//! announces `list_changed` on every listen stream that asked for it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use strict_mcp::core::descriptor::{ContentBlock, PromptMessage, Role};
use strict_mcp::core::{
    DynamicOutput, Invocation, Outcome, PromptDef, PromptReply, Registry, RegistryBuilder, ToolDef,
    ToolError, ToolFailure,
};
use strict_mcp::server::Server;

const NO_ARGS: &str = r#"{"type":"object","properties":{},"additionalProperties":false}"#;

/// The mutable part of the catalogue and the server it is served by.
#[derive(Default)]
pub struct Catalogue {
    server: OnceLock<Server>,
    tool_present: AtomicBool,
    prompt_present: AtomicBool,
    /// Serialises toggle + rebuild + swap so two triggers cannot interleave.
    swap: Mutex<()>,
}

impl std::fmt::Debug for Catalogue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalogue")
            .field("tool_present", &self.tool_present.load(Ordering::Relaxed))
            .field(
                "prompt_present",
                &self.prompt_present.load(Ordering::Relaxed),
            )
            .finish_non_exhaustive()
    }
}

impl Catalogue {
    /// Connects the catalogue to the server that serves it; call once, right after
    /// `Server::new`. Triggers called before that fail with `internal`.
    pub fn attach(&self, server: Server) {
        // A second attach keeps the first server: the catalogue belongs to exactly one.
        let _ = self.server.set(server);
    }
}

/// The full registry: `base` (the pure fixtures) plus the triggers and the toggled entries.
///
/// # Panics
/// Never for these declarations: a build error here is a bug in a fixture.
pub fn registry(catalogue: &Arc<Catalogue>, base: fn() -> RegistryBuilder) -> Registry {
    let mut builder = base()
        .tool(trigger(
            catalogue,
            base,
            "test_trigger_tool_change",
            "Adds or removes `test_dynamic_tool` and announces tools/list_changed.",
            Which::Tool,
        ))
        .tool(trigger(
            catalogue,
            base,
            "test_trigger_prompt_change",
            "Adds or removes `test_dynamic_prompt` and announces prompts/list_changed.",
            Which::Prompt,
        ));
    if catalogue.tool_present.load(Ordering::Acquire) {
        builder = builder.tool(
            ToolDef::dynamic(
                "test_dynamic_tool",
                NO_ARGS,
                None,
                |_inv, _args| async move {
                    Ok(DynamicOutput {
                        content: vec![ContentBlock::text("This tool was added at run time.")],
                        structured: None,
                    })
                },
            )
            .description("Present after an odd number of test_trigger_tool_change calls."),
        );
    }
    if catalogue.prompt_present.load(Ordering::Acquire) {
        builder = builder.prompt(
            PromptDef::new("test_dynamic_prompt", |_inv, _args| async move {
                Ok(Outcome::Complete(PromptReply {
                    description: None,
                    messages: vec![PromptMessage::new(
                        Role::User,
                        ContentBlock::text("This prompt was added at run time."),
                    )],
                }))
            })
            .description("Present after an odd number of test_trigger_prompt_change calls."),
        );
    }
    builder
        .build()
        .expect("the conformance fixtures are valid declarations")
}

#[derive(Clone, Copy)]
enum Which {
    Tool,
    Prompt,
}

fn trigger(
    catalogue: &Arc<Catalogue>,
    base: fn() -> RegistryBuilder,
    name: &str,
    description: &str,
    which: Which,
) -> ToolDef {
    let catalogue = Arc::clone(catalogue);
    ToolDef::dynamic(name, NO_ARGS, None, move |_inv: Invocation, _args| {
        let catalogue = Arc::clone(&catalogue);
        async move {
            let Some(server) = catalogue.server.get() else {
                return Err(ToolError::Failure(ToolFailure::internal()));
            };
            let _guard = catalogue
                .swap
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let (flag, entry) = match which {
                Which::Tool => (&catalogue.tool_present, "test_dynamic_tool"),
                Which::Prompt => (&catalogue.prompt_present, "test_dynamic_prompt"),
            };
            let present = !flag.load(Ordering::Acquire);
            flag.store(present, Ordering::Release);
            server.replace_registry(registry(&catalogue, base));
            let verb = if present { "added" } else { "removed" };
            Ok(DynamicOutput {
                content: vec![ContentBlock::text(format!("{entry} {verb}."))],
                structured: None,
            })
        }
    })
    .description(description)
}
