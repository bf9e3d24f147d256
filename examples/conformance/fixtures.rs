//! The fixtures the public MCP conformance suite (`modelcontextprotocol/conformance`,
//! `src/scenarios/server/`) drives, built on the transport-free core.
//!
//! Shared by `examples/conformance_server.rs` (which serves them) and
//! `tests/conformance_fixtures.rs` (which checks each one through the registry directly), so
//! the only public items are [`registry`], [`builder`] and the skill texts.
//!
//! Every no-argument fixture is a *dynamic* tool with an explicit, closed, empty input schema:
//! the suite prescribes exact content blocks (text, image, audio, embedded resources), which a
//! typed tool (one JSON text block mirroring `structuredContent`) cannot produce. Dynamic
//! tools are the documented exception for conformance fixtures.
//!
//! Fixtures that ask the client for input (MRTR) only build `inputRequests`; the server
//! seals `requestState`, checks it on the retry and hands the answers to the handler, so the
//! handlers here are pure functions of (declared capabilities, answers).

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{json, Value};
use strict_mcp::core::descriptor::{
    BlobResourceContents, ContentBlock, PromptMessage, ResourceContents, Role,
};
use strict_mcp::core::{
    CoreError, DynamicOutput, FailureCode, InputRequest, Invocation, LogLevel, Outcome, PromptDef,
    PromptError, PromptReply, ReadReply, Registry, RegistryBuilder, ResourceDef, SkillTree, Skills,
    TemplateDef, ToolDef, ToolError, ToolFailure,
};

/// A 1×1 red PNG.
const RED_PIXEL_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";
/// One millisecond of 8 kHz, 8-bit mono silence as a RIFF/WAVE file.
const SILENT_WAV: &str = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";

/// The input schema of every fixture that takes no arguments.
const NO_ARGS: &str = r#"{"type":"object","properties":{},"additionalProperties":false}"#;

/// The `json-schema-2020-12` scenario's schema; served byte-exact in `tools/list`.
const JSON_SCHEMA_2020_12: &str = r##"{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},"contactMethod":{"type":"string","enum":["phone","email"]},"phone":{"type":"string"},"email":{"type":"string"}},"allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],"if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},"then":{"required":["phone"]},"else":{"required":["email"]},"additionalProperties":false}"##;

/// A tool whose `region` argument is mirrored into the `Mcp-Param-Region` HTTP header.
const HEADER_PARAMS: &str = r#"{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region","description":"Deployment region, mirrored into Mcp-Param-Region."},"text":{"type":"string","description":"Text to echo."}},"required":["region","text"],"additionalProperties":false}"#;

/// Time between progress reports. The suite suggests about 50 ms, but the server spaces
/// progress notifications at least 100 ms apart (J5) and would coalesce closer ones, leaving
/// fewer than the three reports the suite counts.
const PROGRESS_SPACING: Duration = Duration::from_millis(150);

/// Completion candidates for `test_prompt_with_arguments`'s `arg1`.
const ARG1_CANDIDATES: [&str; 4] = ["paris", "park", "partial", "zebra"];

/// The conformance registry: every fixture tool, resource, template and prompt.
///
/// # Panics
/// Never for these declarations: a build error here is a bug in a fixture.
// Each includer uses `registry`, `builder` or both.
#[allow(dead_code)]
#[must_use]
pub fn registry() -> Registry {
    builder()
        .build()
        .expect("the conformance fixtures are valid declarations")
}

/// A builder holding every fixture that needs nothing but the core; the server example adds
/// the fixtures that act on the running server (list-changed triggers) before building.
#[must_use]
pub fn builder() -> RegistryBuilder {
    let mut builder = RegistryBuilder::new().template(template());
    for tool in tools() {
        builder = builder.tool(tool);
    }
    for resource in resources() {
        builder = builder.resource(resource);
    }
    for prompt in prompts() {
        builder = builder.prompt(prompt);
    }
    builder.skills(skills())
}

// ---------------------------------------------------------------------------------------
// Content helpers

fn text(text: impl Into<String>) -> Result<DynamicOutput, ToolError> {
    Ok(DynamicOutput {
        content: vec![ContentBlock::text(text)],
        structured: None,
    })
}

fn image() -> ContentBlock {
    ContentBlock::image(RED_PIXEL_PNG, "image/png")
}

fn embedded(uri: &str, mime: &str, body: &str) -> ContentBlock {
    ContentBlock::embedded(ResourceContents::text(uri, body).with_mime_type(mime))
}

/// A no-argument tool that always completes with `content`.
fn fixed(name: &str, description: &str, content: fn() -> Vec<ContentBlock>) -> ToolDef {
    ToolDef::dynamic(
        name,
        NO_ARGS,
        None,
        move |_inv: Invocation, _args| async move {
            Ok(DynamicOutput {
                content: content(),
                structured: None,
            })
        },
    )
    .description(description)
}

// ---------------------------------------------------------------------------------------
// Reading answers (`inputResponses`)

fn malformed(key: &str) -> ToolError {
    ToolError::Protocol(CoreError::InvalidParams {
        message: format!("inputResponses.{key} is not a valid answer"),
    })
}

/// How the user answered an elicitation.
enum Elicited {
    /// `action: accept` with its `content` (an empty object when absent).
    Accepted(serde_json::Map<String, Value>),
    /// `decline` or `cancel`.
    Refused(String),
}

/// The answer to the elicitation under `key`: `None` when the client sent none, a -32602
/// error when what it sent is not an `ElicitResult`.
fn elicited(inv: &Invocation, key: &str) -> Result<Option<Elicited>, ToolError> {
    let Some(raw) = inv.input_response(key) else {
        return Ok(None);
    };
    let value: Value = serde_json::from_str(raw.get()).map_err(|_| malformed(key))?;
    match value.get("action").and_then(Value::as_str) {
        Some("accept") => match value.get("content") {
            None => Ok(Some(Elicited::Accepted(serde_json::Map::new()))),
            Some(Value::Object(content)) => Ok(Some(Elicited::Accepted(content.clone()))),
            Some(_) => Err(malformed(key)),
        },
        Some(action @ ("decline" | "cancel")) => Ok(Some(Elicited::Refused(action.to_owned()))),
        _ => Err(malformed(key)),
    }
}

/// The accepted string field `field` of the elicitation under `key`.
fn elicited_string(inv: &Invocation, key: &str, field: &str) -> Result<Answer, ToolError> {
    Ok(match elicited(inv, key)? {
        None => Answer::Missing,
        Some(Elicited::Refused(action)) => Answer::Refused(action),
        Some(Elicited::Accepted(content)) => match content.get(field).and_then(Value::as_str) {
            Some(s) => Answer::Given(s.to_owned()),
            // Accepted without the field the schema requires: ask again.
            None => Answer::Missing,
        },
    })
}

enum Answer {
    Missing,
    Refused(String),
    Given(String),
}

/// The first text of a `CreateMessageResult` (single block or array of blocks).
fn sampled_text(inv: &Invocation, key: &str) -> Result<Option<String>, ToolError> {
    let Some(raw) = inv.input_response(key) else {
        return Ok(None);
    };
    let value: Value = serde_json::from_str(raw.get()).map_err(|_| malformed(key))?;
    let blocks = match value.get("content") {
        Some(Value::Array(blocks)) => blocks.clone(),
        Some(block @ Value::Object(_)) => vec![block.clone()],
        _ => return Err(malformed(key)),
    };
    blocks
        .iter()
        .find(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .and_then(|b| b.get("text").and_then(Value::as_str))
        .map(|t| Some(t.to_owned()))
        .ok_or_else(|| malformed(key))
}

/// The root URIs of a `ListRootsResult`.
fn root_uris(inv: &Invocation, key: &str) -> Result<Option<Vec<String>>, ToolError> {
    let Some(raw) = inv.input_response(key) else {
        return Ok(None);
    };
    let value: Value = serde_json::from_str(raw.get()).map_err(|_| malformed(key))?;
    let roots = value
        .get("roots")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed(key))?;
    roots
        .iter()
        .map(|r| r.get("uri").and_then(Value::as_str).map(str::to_owned))
        .collect::<Option<Vec<_>>>()
        .map(Some)
        .ok_or_else(|| malformed(key))
}

// ---------------------------------------------------------------------------------------
// Input requests

fn one_string_form(field: &str) -> Value {
    json!({
        "type": "object",
        "properties": { field: { "type": "string" } },
        "required": [field],
    })
}

fn ask_name(inv: &Invocation, message: &str) -> Result<InputRequest, ToolError> {
    Ok(inv.elicit_form(message, one_string_form("name"))?)
}

fn ask_confirm(inv: &Invocation) -> Result<InputRequest, ToolError> {
    Ok(inv.elicit_form(
        "Please confirm",
        json!({
            "type": "object",
            "properties": { "ok": { "type": "boolean" } },
            "required": ["ok"],
        }),
    )?)
}

fn ask_sample(inv: &Invocation, prompt: &str, max_tokens: u32) -> Result<InputRequest, ToolError> {
    Ok(inv.sample(json!({
        "messages": [{ "role": "user", "content": { "type": "text", "text": prompt } }],
        "maxTokens": max_tokens,
    }))?)
}

type Interactive = Result<Outcome<DynamicOutput>, ToolError>;

fn done(body: impl Into<String>) -> Interactive {
    text(body).map(Outcome::Complete)
}

fn interactive<F>(name: &str, description: &str, handler: F) -> ToolDef
where
    F: Fn(&Invocation) -> Interactive + Send + Sync + Copy + 'static,
{
    ToolDef::dynamic_interactive(
        name,
        NO_ARGS,
        None,
        move |inv: Invocation, _args| async move { handler(&inv) },
    )
    .description(description)
}

// ---------------------------------------------------------------------------------------
// Tools

fn tools() -> Vec<ToolDef> {
    vec![
        fixed("test_simple_text", "Returns one text block.", || {
            vec![ContentBlock::text(
                "This is a simple text response for testing.",
            )]
        }),
        ToolDef::dynamic(
            "test_logging_tool",
            NO_ARGS,
            None,
            |inv: Invocation, _args| async move {
                for step in ["started", "processing data", "completed"] {
                    inv.log(
                        LogLevel::Info,
                        Some("test_logging_tool"),
                        json!(format!("Tool execution {step}")),
                    );
                }
                Ok(DynamicOutput {
                    content: vec![ContentBlock::text("Logging test completed")],
                    structured: None,
                })
            },
        )
        .description(
            "Logs three info messages (only when the request asks with _meta logLevel), then answers.",
        ),
        fixed("test_image_content", "Returns one PNG image block.", || {
            vec![image()]
        }),
        fixed("test_audio_content", "Returns one WAV audio block.", || {
            vec![ContentBlock::audio(SILENT_WAV, "audio/wav")]
        }),
        fixed(
            "test_embedded_resource",
            "Returns one embedded text resource.",
            || {
                vec![embedded(
                    "test://embedded-resource",
                    "text/plain",
                    "This is an embedded resource content.",
                )]
            },
        ),
        fixed(
            "test_multiple_content_types",
            "Returns a text, an image and an embedded resource block.",
            || {
                vec![
                    ContentBlock::text("Multiple content types test:"),
                    image(),
                    embedded(
                        "test://mixed-content-resource",
                        "application/json",
                        r#"{"test":"data","value":123}"#,
                    ),
                ]
            },
        ),
        ToolDef::dynamic(
            "test_error_handling",
            NO_ARGS,
            None,
            |_inv: Invocation, _args| async move {
                Err::<DynamicOutput, _>(ToolError::Failure(
                    ToolFailure::new(
                        FailureCode::Internal,
                        "This tool intentionally returns an error for testing",
                    )
                    .retryable(false),
                ))
            },
        )
        .description("Always fails with a tool error (isError: true)."),
        ToolDef::dynamic(
            "test_tool_with_progress",
            NO_ARGS,
            None,
            |inv: Invocation, _args| async move {
                for (i, step) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(PROGRESS_SPACING).await;
                    }
                    inv.report_progress(step, Some(100.0), None);
                }
                text("Progress reported: 0, 50 and 100 of 100.")
            },
        )
        .description("Reports progress 0, 50 and 100 of 100, 150 ms apart, when asked to."),
        ToolDef::dynamic(
            "json_schema_2020_12_tool",
            JSON_SCHEMA_2020_12,
            None,
            |_inv: Invocation, args: Box<RawValue>| async move {
                text(format!("Received: {}", args.get()))
            },
        )
        .description("Tool with JSON Schema 2020-12 features"),
        ToolDef::dynamic(
            "test_header_params",
            HEADER_PARAMS,
            None,
            |_inv: Invocation, args: Box<RawValue>| async move {
                let value: Value = serde_json::from_str(args.get())
                    .map_err(|_| ToolError::Failure(ToolFailure::internal()))?;
                let field = |k: &str| value.get(k).and_then(Value::as_str).unwrap_or_default();
                text(format!("{}: {}", field("region"), field("text")))
            },
        )
        .description("Echoes `<region>: <text>`; `region` travels in the Mcp-Param-Region header."),
        interactive(
            "test_missing_capability",
            "Needs the sampling capability; refused with -32021 when the request lacks it.",
            |inv| {
                let request = ask_sample(inv, "Reply with any short text.", 10)?;
                match sampled_text(inv, "needs_sampling")? {
                    Some(reply) => done(format!("Sampling answered: {reply}")),
                    None => Ok(Outcome::input("needs_sampling", request)),
                }
            },
        ),
        interactive(
            "test_streaming_elicitation",
            "Asks for a name through input_required, never through a server-sent request.",
            |inv| {
                let request = ask_name(inv, "What is your name?")?;
                match elicited_string(inv, "stream_name", "name")? {
                    Answer::Given(name) => done(format!("Hello, {name}!")),
                    Answer::Refused(action) => done(format!("No name given ({action}).")),
                    Answer::Missing => Ok(Outcome::input("stream_name", request)),
                }
            },
        ),
        interactive(
            "test_input_required_result_elicitation",
            "Asks for the user's name (form elicitation), then greets them.",
            |inv| {
                let request = ask_name(inv, "What is your name?")?;
                match elicited_string(inv, "user_name", "name")? {
                    Answer::Given(name) => done(format!("Hello, {name}!")),
                    Answer::Refused(action) => done(format!("No name given ({action}).")),
                    Answer::Missing => Ok(Outcome::input("user_name", request)),
                }
            },
        ),
        interactive(
            "test_input_required_result_sampling",
            "Asks the client's model a question (sampling), then returns its answer.",
            |inv| {
                let request = ask_sample(inv, "What is the capital of France?", 100)?;
                match sampled_text(inv, "capital_question")? {
                    Some(reply) => done(format!("Sampling answered: {reply}")),
                    None => Ok(Outcome::input("capital_question", request)),
                }
            },
        ),
        interactive(
            "test_input_required_result_list_roots",
            "Asks for the client's roots, then lists them.",
            |inv| {
                let request = inv.list_roots()?;
                match root_uris(inv, "client_roots")? {
                    Some(uris) => done(format!("Client roots: {}", uris.join(", "))),
                    None => Ok(Outcome::input("client_roots", request)),
                }
            },
        ),
        interactive(
            "test_input_required_result_request_state",
            "Asks for a confirmation; the retry must echo the sealed requestState.",
            |inv| {
                let request = ask_confirm(inv)?;
                match confirmation(inv, "confirm")? {
                    Some(ok) => done(format!("state-ok: confirmed={ok}")),
                    None => Ok(Outcome::input("confirm", request)),
                }
            },
        ),
        interactive(
            "test_input_required_result_multiple_inputs",
            "Asks for a name, a sampled greeting and the client's roots in one round.",
            multiple_inputs,
        ),
        interactive(
            "test_input_required_result_multi_round",
            "Asks for a name, then a colour, in two rounds.",
            |inv| {
                if let Answer::Given(color) = elicited_string(inv, "step2", "color")? {
                    return done(format!("Both rounds answered; favourite colour: {color}."));
                }
                if let Answer::Given(_) = elicited_string(inv, "step1", "name")? {
                    let request = inv.elicit_form(
                        "Step 2: What is your favorite color?",
                        one_string_form("color"),
                    )?;
                    return Ok(Outcome::input("step2", request));
                }
                Ok(Outcome::input(
                    "step1",
                    ask_name(inv, "Step 1: What is your name?")?,
                ))
            },
        ),
        interactive(
            "test_input_required_result_tampered_state",
            "Asks for a confirmation; a retry with altered requestState is refused.",
            |inv| {
                let request = ask_confirm(inv)?;
                match confirmation(inv, "confirm")? {
                    Some(_) => done("Request state verified."),
                    None => Ok(Outcome::input("confirm", request)),
                }
            },
        ),
        interactive(
            "test_input_required_result_capabilities",
            "Asks only for the kinds of input the request's clientCapabilities declare.",
            declared_only,
        ),
    ]
}

/// The `ok` field of an accepted confirmation; refusals count as `false`.
fn confirmation(inv: &Invocation, key: &str) -> Result<Option<bool>, ToolError> {
    Ok(match elicited(inv, key)? {
        None => None,
        Some(Elicited::Refused(_)) => Some(false),
        Some(Elicited::Accepted(content)) => match content.get("ok") {
            Some(Value::Bool(ok)) => Some(*ok),
            _ => None,
        },
    })
}

fn multiple_inputs(inv: &Invocation) -> Interactive {
    let name = elicited_string(inv, "user_name", "name")?;
    let greeting = sampled_text(inv, "greeting")?;
    let roots = root_uris(inv, "client_roots")?;
    match (name, greeting, roots) {
        (Answer::Given(name), Some(greeting), Some(roots)) => done(format!(
            "Name: {name}; greeting: {greeting}; roots: {}",
            roots.len()
        )),
        (Answer::Refused(action), _, _) => done(format!("No name given ({action}).")),
        // Any answer missing: ask for all three again, since each round stands alone.
        _ => {
            let mut requests = BTreeMap::new();
            requests.insert("user_name".to_owned(), ask_name(inv, "What is your name?")?);
            requests.insert(
                "greeting".to_owned(),
                ask_sample(inv, "Generate a greeting", 50)?,
            );
            requests.insert("client_roots".to_owned(), inv.list_roots()?);
            Ok(Outcome::InputRequired { requests })
        }
    }
}

fn declared_only(inv: &Invocation) -> Interactive {
    let keys = ["capital_question", "user_name", "client_roots"];
    let answered: Vec<&str> = keys
        .into_iter()
        .filter(|k| inv.input_response(k).is_some())
        .collect();
    if !answered.is_empty() {
        return done(format!("Answered: {}", answered.join(", ")));
    }
    let caps = inv.capabilities();
    let mut requests = BTreeMap::new();
    if caps.sampling() {
        requests.insert(
            "capital_question".to_owned(),
            ask_sample(inv, "What is the capital of France?", 100)?,
        );
    }
    if inv.supports(strict_mcp::core::ElicitMode::Form) {
        requests.insert("user_name".to_owned(), ask_name(inv, "What is your name?")?);
    }
    if caps.roots() {
        requests.insert("client_roots".to_owned(), inv.list_roots()?);
    }
    if requests.is_empty() {
        return done("The request declares no input capability; nothing to ask.");
    }
    Ok(Outcome::InputRequired { requests })
}

// ---------------------------------------------------------------------------------------
// Resources

fn resources() -> Vec<ResourceDef> {
    vec![
        ResourceDef::new(
            "test://static-text",
            "static-text",
            |_inv: Invocation, uri: String| async move {
                Ok(ReadReply::new(vec![ResourceContents::text(
                    uri,
                    "This is the content of the static text resource.",
                )
                .with_mime_type("text/plain")]))
            },
        )
        .description("A static text resource.")
        .mime_type("text/plain"),
        ResourceDef::new(
            "test://static-binary",
            "static-binary",
            |_inv: Invocation, uri: String| async move {
                // The constant is already base64: it becomes the `blob` as it is.
                let png = BlobResourceContents {
                    blob: RED_PIXEL_PNG.to_owned(),
                    mime_type: Some("image/png".to_owned()),
                    ..BlobResourceContents::new(uri, b"")
                };
                Ok(ReadReply::new(vec![png.into()]))
            },
        )
        .description("A static binary resource (a 1×1 PNG).")
        .mime_type("image/png"),
    ]
}

fn template() -> TemplateDef {
    TemplateDef::new(
        "test://template/{id}/data",
        "template-data",
        |_inv: Invocation, uri: String, vars: BTreeMap<String, String>| async move {
            let id = vars.get("id").cloned().unwrap_or_default();
            let id_json = serde_json::to_string(&id)
                .map_err(|_| strict_mcp::core::ResourceError::Internal { retryable: false })?;
            let data_json = serde_json::to_string(&format!("Data for ID: {id}"))
                .map_err(|_| strict_mcp::core::ResourceError::Internal { retryable: false })?;
            let body = format!(r#"{{"id":{id_json},"templateTest":true,"data":{data_json}}}"#);
            Ok(ReadReply::new(vec![
                ResourceContents::text(uri, body).with_mime_type("application/json")
            ]))
        },
    )
    .description("JSON data for any id.")
    .mime_type("application/json")
}

// ---------------------------------------------------------------------------------------
// Prompts

fn user(content: ContentBlock) -> PromptMessage {
    PromptMessage::new(Role::User, content)
}

fn reply(messages: Vec<PromptMessage>) -> Result<Outcome<PromptReply>, PromptError> {
    Ok(Outcome::Complete(PromptReply {
        description: None,
        messages,
    }))
}

fn prompts() -> Vec<PromptDef> {
    vec![
        PromptDef::new("test_simple_prompt", |_inv, _args| async move {
            reply(vec![user(ContentBlock::text(
                "This is a simple prompt for testing.",
            ))])
        })
        .description("A prompt without arguments."),
        PromptDef::new(
            "test_prompt_with_arguments",
            |_inv, args: BTreeMap<String, String>| async move {
                let arg = |k: &str| args.get(k).cloned().unwrap_or_default();
                reply(vec![user(ContentBlock::text(format!(
                    "Prompt with arguments: arg1='{}', arg2='{}'",
                    arg("arg1"),
                    arg("arg2")
                )))])
            },
        )
        .description("A prompt with two required arguments.")
        .argument("arg1", "First test argument", true)
        .argument("arg2", "Second test argument", true)
        .complete("arg1", |_caller, partial, _context| {
            ARG1_CANDIDATES
                .iter()
                .filter(|c| c.starts_with(partial))
                .map(|c| (*c).to_owned())
                .collect()
        }),
        PromptDef::new(
            "test_prompt_with_embedded_resource",
            |_inv, args: BTreeMap<String, String>| async move {
                let uri = args.get("resourceUri").cloned().unwrap_or_default();
                reply(vec![
                    user(embedded(
                        &uri,
                        "text/plain",
                        "Embedded resource content for testing.",
                    )),
                    user(ContentBlock::text(
                        "Please process the embedded resource above.",
                    )),
                ])
            },
        )
        .description("A prompt embedding the resource it is given.")
        .argument("resourceUri", "URI of the resource to embed", true),
        PromptDef::new("test_prompt_with_image", |_inv, _args| async move {
            reply(vec![
                user(image()),
                user(ContentBlock::text("Please analyze the image above.")),
            ])
        })
        .description("A prompt with an image."),
        PromptDef::new(
            "test_input_required_result_prompt",
            |inv: Invocation, _args| async move {
                let request = inv
                    .elicit_form(
                        "What context should the prompt use?",
                        one_string_form("context"),
                    )
                    .map_err(PromptError::Protocol)?;
                match elicited_string(&inv, "user_context", "context") {
                    Err(_) => Err(PromptError::InvalidArguments(
                        "inputResponses.user_context is not a valid answer".to_owned(),
                    )),
                    Ok(Answer::Given(context)) => reply(vec![user(ContentBlock::text(format!(
                        "Answer using this context: {context}"
                    )))]),
                    Ok(Answer::Refused(action)) => reply(vec![user(ContentBlock::text(format!(
                        "Answer without extra context (the user chose {action})."
                    )))]),
                    Ok(Answer::Missing) => Ok(Outcome::input("user_context", request)),
                }
            },
        )
        .description("A prompt that first asks the user for context (form elicitation)."),
    ]
}

// ---------------------------------------------------------------------------------------
// Skills extension (SEP-2640): the `sep-2640-skills-*` scenarios need a listed skill with a
// subdirectory whose SKILL.md is also in resources/list (N34), and the directory scenario reads
// the first one listed (by URI), so `pdf-processing` sorts first; a second skill sits two
// segments deep.

/// The `pdf-processing` skill's manifest.
#[allow(dead_code)] // read by tests/conformance_fixtures.rs only
pub const PDF_SKILL_MD: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\nmetadata:\n  version: \"1.0\"\n---\n\n# PDF processing\n\nFill forms as described in [the forms guide](references/FORMS.md).\n";
/// Its supporting file.
#[allow(dead_code)] // read by tests/conformance_fixtures.rs only
pub const PDF_FORMS_MD: &str = "# Forms\n\nFields are filled in document order.\n";
/// The nested-path skill's manifest.
#[allow(dead_code)] // read by tests/conformance_fixtures.rs only
pub const REVIEW_SKILL_MD: &str =
    "---\nname: code-review\ndescription: Review a change for correctness and style\n---\n\nRead the diff twice.\n";

fn skills() -> Skills {
    SkillTree::new()
        .file("pdf-processing/SKILL.md", PDF_SKILL_MD.as_bytes())
        .file(
            "pdf-processing/references/FORMS.md",
            PDF_FORMS_MD.as_bytes(),
        )
        .file("team/code-review/SKILL.md", REVIEW_SKILL_MD.as_bytes())
        .directory_read(true)
        .build()
        .expect("the conformance skills are a valid tree")
}
