//! The fixtures only the 2025-11-25 server scenarios drive (`.ci/conformance-legacy`): the
//! server example adds them to its registry in a `--features legacy` build. They ask for
//! input exactly as every other fixture does (`input_required`); on the legacy path the
//! server's interaction loop turns each request into a server-sent `sampling/createMessage`
//! or `elicitation/create` and re-enters the handler with the answer (O126).
//!
//! `test_touch_resource` is the one fixture that acts on the running server: it announces an
//! update of the resource it names through [`Server::resource_updated`], the change hook every
//! subscribed legacy session hears (`notifications/resources/updated`); the interop tests use
//! it for their subscription round (`tests/legacy_interop.rs`).

use std::sync::OnceLock;
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{json, Value};
use strict_mcp::core::descriptor::ContentBlock;
use strict_mcp::core::{
    CoreError, DynamicOutput, Invocation, LogLevel, Outcome, RegistryBuilder, ToolDef, ToolError,
    ToolFailure,
};
use strict_mcp::server::Server;

/// `tools-call-with-logging`: the spacing of the three log messages ("~50 ms apart").
const LOG_SPACING: Duration = Duration::from_millis(50);

/// The answer key of every fixture here (each asks one question per round).
const KEY: &str = "input";

const NO_ARGS: &str = r#"{"type":"object","properties":{},"additionalProperties":false}"#;
const PROMPT_ARG: &str =
    r#"{"type":"object","properties":{"prompt":{"type":"string"}},"required":["prompt"]}"#;
const MESSAGE_ARG: &str =
    r#"{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}"#;
const URI_ARG: &str =
    r#"{"type":"object","properties":{"uri":{"type":"string"}},"required":["uri"]}"#;

/// The server `test_touch_resource` announces through ([`attach`]).
static SERVER: OnceLock<Server> = OnceLock::new();

/// Connects the fixtures to the server that serves them; call once, right after `Server::new`
/// (a second call keeps the first server). Before it, `test_touch_resource` fails with
/// `internal`.
pub fn attach(server: Server) {
    let _ = SERVER.set(server);
}

/// Adds the legacy-only fixtures to `builder`.
pub fn with_legacy_fixtures(mut builder: RegistryBuilder) -> RegistryBuilder {
    for tool in tools() {
        builder = builder.tool(tool);
    }
    builder
}

fn text(body: impl Into<String>) -> Result<Outcome<DynamicOutput>, ToolError> {
    Ok(Outcome::Complete(DynamicOutput {
        content: vec![ContentBlock::text(body.into())],
        structured: None,
    }))
}

fn malformed() -> ToolError {
    ToolError::Protocol(CoreError::InvalidParams {
        message: format!("inputResponses.{KEY} is not a valid answer"),
    })
}

/// The string argument `name` (the input schema requires it).
fn arg(args: &RawValue, name: &str) -> String {
    serde_json::from_str::<Value>(args.get())
        .ok()
        .and_then(|v| v.get(name).and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_default()
}

/// The answer under [`KEY`] as JSON, if the client sent one.
fn answer(inv: &Invocation) -> Result<Option<Value>, ToolError> {
    inv.input_response(KEY)
        .map(|raw| serde_json::from_str(raw.get()).map_err(|_| malformed()))
        .transpose()
}

/// `Elicitation completed: action=…, content={…}` for an `ElicitResult`.
fn elicitation_text(prefix: &str, result: &Value) -> String {
    let action = result.get("action").and_then(Value::as_str).unwrap_or("");
    let content = result.get("content").cloned().unwrap_or_else(|| json!({}));
    format!("{prefix}: action={action}, content={content}")
}

/// A tool that asks one form elicitation with `schema` and reports the answer.
fn form_tool(
    name: &'static str,
    description: &'static str,
    input: &'static str,
    message: fn(&RawValue) -> String,
    schema: fn() -> Value,
    prefix: &'static str,
) -> ToolDef {
    ToolDef::dynamic_interactive(name, input, None, move |inv: Invocation, args| async move {
        match answer(&inv)? {
            Some(result) => text(elicitation_text(prefix, &result)),
            None => Ok(Outcome::input(
                KEY,
                inv.elicit_form(&message(&args), schema())?,
            )),
        }
    })
    .description(description)
}

fn tools() -> Vec<ToolDef> {
    vec![
        ToolDef::dynamic(
            "test_touch_resource",
            URI_ARG,
            None,
            |_inv: Invocation, args| async move {
                let Some(server) = SERVER.get() else {
                    return Err(ToolError::Failure(ToolFailure::internal()));
                };
                let uri = arg(&args, "uri");
                server.resource_updated(&uri);
                Ok(DynamicOutput {
                    content: vec![ContentBlock::text(format!("Touched {uri}"))],
                    structured: None,
                })
            },
        )
        .description("Announces an update of the resource `uri` (notifications/resources/updated to every session subscribed to it)."),
        ToolDef::dynamic(
            "test_tool_with_logging",
            NO_ARGS,
            None,
            |inv: Invocation, _args| async move {
                for (i, step) in ["started", "processing", "completed"].iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(LOG_SPACING).await;
                    }
                    inv.log(
                        LogLevel::Info,
                        Some("test_tool_with_logging"),
                        json!(format!("Tool execution {step}")),
                    );
                }
                Ok(DynamicOutput {
                    content: vec![ContentBlock::text("Logging test completed")],
                    structured: None,
                })
            },
        )
        .description("Logs three info messages 50 ms apart (at the session's log level), then answers."),
        ToolDef::dynamic_interactive(
            "test_sampling",
            PROMPT_ARG,
            None,
            |inv: Invocation, args| async move {
                let Some(result) = answer(&inv)? else {
                    let request = inv.sample(json!({
                        "messages": [{"role": "user", "content": {"type": "text", "text": arg(&args, "prompt")}}],
                        "maxTokens": 100,
                    }))?;
                    return Ok(Outcome::input(KEY, request));
                };
                let reply = result
                    .get("content")
                    .and_then(|c| c.get("text"))
                    .and_then(Value::as_str)
                    .ok_or_else(malformed)?;
                text(format!("LLM response: {reply}"))
            },
        )
        .description("Asks the client's model (sampling) with the given prompt, then returns its reply."),
        form_tool(
            "test_elicitation",
            "Asks the user for a username and an email (form elicitation), then reports the answer.",
            MESSAGE_ARG,
            |args| arg(args, "message"),
            || {
                json!({
                    "type": "object",
                    "properties": {
                        "username": {"type": "string", "description": "User's response"},
                        "email": {"type": "string", "description": "User's email address"},
                    },
                    "required": ["username", "email"],
                })
            },
            "User response",
        ),
        form_tool(
            "test_elicitation_sep1034_defaults",
            "Asks a form whose every primitive field has a default (SEP-1034).",
            NO_ARGS,
            |_| "Please review the defaults".to_owned(),
            || {
                json!({
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "default": "John Doe"},
                        "age": {"type": "integer", "default": 30},
                        "score": {"type": "number", "default": 95.5},
                        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                        "verified": {"type": "boolean", "default": true},
                    },
                })
            },
            "Elicitation completed",
        ),
        form_tool(
            "test_elicitation_sep1330_enums",
            "Asks a form with the five enum shapes of SEP-1330 (two of them multi-select).",
            NO_ARGS,
            |_| "Please choose".to_owned(),
            || {
                json!({
                    "type": "object",
                    "properties": {
                        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                        "titledSingle": {"type": "string", "oneOf": [
                            {"const": "value1", "title": "First Option"},
                            {"const": "value2", "title": "Second Option"},
                            {"const": "value3", "title": "Third Option"},
                        ]},
                        "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                            "enumNames": ["Option One", "Option Two", "Option Three"]},
                        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                        "titledMulti": {"type": "array", "items": {"anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"},
                        ]}},
                    },
                })
            },
            "Elicitation completed",
        ),
    ]
}
