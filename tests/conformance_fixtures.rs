//! Every conformance fixture checked through the core registry directly: exact content
//! blocks, field presence and absence, input requests and their capability gates.

#![forbid(unsafe_code)]

#[path = "../examples/conformance/fixtures.rs"]
mod fixtures;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::value::RawValue;
use serde_json::{json, Value};
use strict_mcp::core::{
    Caller, ClientCapabilities, CompletionRef, CoreError, Invocation, Outcome, ProgressSink,
    Registry, ToolReply,
};

const RED_PIXEL_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";

fn caps(v: Value) -> ClientCapabilities {
    ClientCapabilities::from_value(v)
}

fn inv(c: Value) -> Invocation {
    Invocation::new(Caller::new("tester")).with_capabilities(caps(c))
}

fn answers(pairs: &[(&str, Value)]) -> BTreeMap<String, Box<RawValue>> {
    pairs
        .iter()
        .map(|(k, v)| {
            (
                (*k).to_owned(),
                RawValue::from_string(v.to_string()).unwrap(),
            )
        })
        .collect()
}

fn all_caps() -> Value {
    json!({"elicitation": {"form": {}}, "sampling": {}, "roots": {}})
}

/// The direct-mode `CallToolResult` JSON of a completed call.
async fn call(reg: &Registry, inv: Invocation, name: &str) -> Value {
    let reply = reg.call_tool(inv, name, None).await.unwrap();
    let result = reply.into_call_result().expect("a complete result");
    serde_json::to_value(result).unwrap()
}

async fn call_with(reg: &Registry, inv: Invocation, name: &str, args: &str) -> Value {
    let args = RawValue::from_string(args.to_owned()).unwrap();
    let reply = reg.call_tool(inv, name, Some(&args)).await.unwrap();
    serde_json::to_value(reply.into_call_result().expect("a complete result")).unwrap()
}

/// `inputRequests` of an input-required call, as JSON.
async fn input_required(reg: &Registry, inv: Invocation, name: &str) -> Value {
    match reg.call_tool(inv, name, None).await.unwrap() {
        ToolReply::InputRequired { requests } => serde_json::to_value(requests).unwrap(),
        other => panic!("expected input_required from {name}, got {other:?}"),
    }
}

async fn error(reg: &Registry, inv: Invocation, name: &str) -> CoreError {
    reg.call_tool(inv, name, None).await.unwrap_err()
}

fn text_result(s: &str) -> Value {
    json!({"content": [{"type": "text", "text": s}]})
}

fn name_form(message: &str) -> Value {
    json!({"method": "elicitation/create", "params": {
        "mode": "form", "message": message,
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}})
}

fn confirm_form() -> Value {
    json!({"method": "elicitation/create", "params": {
        "mode": "form", "message": "Please confirm",
        "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}})
}

fn sampling(text: &str, max_tokens: u32) -> Value {
    json!({"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
        "maxTokens": max_tokens}})
}

fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

fn sampled(text: &str) -> Value {
    json!({"role": "assistant", "content": {"type": "text", "text": text}, "model": "m", "stopReason": "endTurn"})
}

fn roots() -> Value {
    json!({"roots": [{"uri": "file:///test/root", "name": "Test Root"}]})
}

#[test]
fn catalogue_names_and_descriptions() {
    let reg = fixtures::registry();
    let caller = Caller::new("tester");
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = reg.list_tools(&caller, cursor.as_deref()).unwrap();
        tools.extend(page.items);
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "json_schema_2020_12_tool",
            "test_audio_content",
            "test_embedded_resource",
            "test_error_handling",
            "test_header_params",
            "test_image_content",
            "test_input_required_result_capabilities",
            "test_input_required_result_elicitation",
            "test_input_required_result_list_roots",
            "test_input_required_result_multi_round",
            "test_input_required_result_multiple_inputs",
            "test_input_required_result_request_state",
            "test_input_required_result_sampling",
            "test_input_required_result_tampered_state",
            "test_logging_tool",
            "test_missing_capability",
            "test_multiple_content_types",
            "test_simple_text",
            "test_streaming_elicitation",
            "test_tool_with_progress",
        ]
    );
    for t in &tools {
        assert!(
            t.description.as_deref().is_some_and(|d| !d.is_empty()),
            "{}",
            t.name
        );
    }
    let prompts: Vec<_> = reg
        .list_prompts(&caller, None)
        .unwrap()
        .items
        .into_iter()
        .map(|p| (p.name, p.description.is_some()))
        .collect();
    assert_eq!(
        prompts,
        [
            ("test_input_required_result_prompt".to_owned(), true),
            ("test_prompt_with_arguments".to_owned(), true),
            ("test_prompt_with_embedded_resource".to_owned(), true),
            ("test_prompt_with_image".to_owned(), true),
            ("test_simple_prompt".to_owned(), true),
        ]
    );
}

#[tokio::test]
async fn fixed_content_tools() {
    let reg = fixtures::registry();
    let none = json!({});
    assert_eq!(
        call(&reg, inv(none.clone()), "test_simple_text").await,
        text_result("This is a simple text response for testing.")
    );
    assert_eq!(
        call(&reg, inv(none.clone()), "test_image_content").await,
        json!({"content": [{"type": "image", "data": RED_PIXEL_PNG, "mimeType": "image/png"}]})
    );
    let audio = call(&reg, inv(none.clone()), "test_audio_content").await;
    assert_eq!(audio["content"][0]["type"], "audio");
    assert_eq!(audio["content"][0]["mimeType"], "audio/wav");
    let wav = base64_decode(audio["content"][0]["data"].as_str().unwrap());
    assert_eq!(&wav[..4], b"RIFF");
    assert_eq!(&wav[8..12], b"WAVE");
    assert_eq!(
        call(&reg, inv(none.clone()), "test_embedded_resource").await,
        json!({"content": [{"type": "resource", "resource": {
            "uri": "test://embedded-resource", "mimeType": "text/plain",
            "text": "This is an embedded resource content."}}]})
    );
    assert_eq!(
        call(&reg, inv(none.clone()), "test_multiple_content_types").await,
        json!({"content": [
            {"type": "text", "text": "Multiple content types test:"},
            {"type": "image", "data": RED_PIXEL_PNG, "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "test://mixed-content-resource",
                "mimeType": "application/json", "text": "{\"test\":\"data\",\"value\":123}"}}]})
    );
    // The image really is a PNG.
    assert_eq!(&base64_decode(RED_PIXEL_PNG)[..8], b"\x89PNG\r\n\x1a\n");
}

fn base64_decode(s: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(s).unwrap()
}

#[tokio::test]
async fn no_argument_tools_refuse_arguments() {
    let reg = fixtures::registry();
    let result = call_with(&reg, inv(json!({})), "test_simple_text", r#"{"x":1}"#).await;
    assert_eq!(result["isError"], true);
    assert_eq!(
        result["structuredContent"]["failure"]["code"],
        "invalid_arguments"
    );
}

#[tokio::test]
async fn error_handling_is_a_tool_error() {
    let reg = fixtures::registry();
    let result = call(&reg, inv(json!({})), "test_error_handling").await;
    let failure = json!({"failure": {"code": "internal",
        "message": "This tool intentionally returns an error for testing", "retryable": false}});
    assert_eq!(
        result,
        json!({"content": [{"type": "text", "text": failure.to_string()}],
               "structuredContent": failure, "isError": true})
    );
}

#[derive(Default)]
struct Recorder(Mutex<Vec<(f64, Option<f64>)>>);

impl ProgressSink for Recorder {
    fn report(&self, progress: f64, total: Option<f64>, _message: Option<&str>) {
        self.0.lock().unwrap().push((progress, total));
    }
}

#[tokio::test]
async fn progress_reports_three_steps() {
    let reg = fixtures::registry();
    let sink = Arc::new(Recorder::default());
    let started = std::time::Instant::now();
    let result = call(
        &reg,
        inv(json!({})).with_progress(sink.clone()),
        "test_tool_with_progress",
    )
    .await;
    assert!(started.elapsed() >= std::time::Duration::from_millis(300));
    assert_eq!(
        result,
        text_result("Progress reported: 0, 50 and 100 of 100.")
    );
    assert_eq!(
        *sink.0.lock().unwrap(),
        [
            (0.0, Some(100.0)),
            (50.0, Some(100.0)),
            (100.0, Some(100.0))
        ]
    );
    // Without a sink (no progressToken) it still completes.
    assert_eq!(
        call(&reg, inv(json!({})), "test_tool_with_progress").await,
        text_result("Progress reported: 0, 50 and 100 of 100.")
    );
}

#[tokio::test]
async fn json_schema_2020_12_is_served_byte_exact_and_enforced() {
    let reg = fixtures::registry();
    let tool = reg
        .tool(&Caller::new("tester"), "json_schema_2020_12_tool")
        .unwrap();
    let schema: Value = serde_json::from_str(tool.input_schema.get()).unwrap();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(schema["$defs"]["address"]["$anchor"], "addressDef");
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(
        schema["allOf"],
        json!([{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}])
    );
    assert_eq!(schema["then"], json!({"required": ["phone"]}));
    assert_eq!(schema["else"], json!({"required": ["email"]}));
    assert!(tool.input_schema.get().starts_with(r#"{"$schema":"#));

    let ok = r#"{"name":"Ada","contactMethod":"phone","phone":"123"}"#;
    assert_eq!(
        call_with(&reg, inv(json!({})), "json_schema_2020_12_tool", ok).await,
        text_result(&format!("Received: {ok}"))
    );
    // if/then: contactMethod phone without a phone number is refused.
    let bad = r#"{"contactMethod":"phone","email":"a@b.c"}"#;
    let refused = call_with(&reg, inv(json!({})), "json_schema_2020_12_tool", bad).await;
    assert_eq!(refused["isError"], true);
    assert_eq!(
        refused["structuredContent"]["failure"]["code"],
        "invalid_arguments"
    );
}

#[tokio::test]
async fn header_params_tool_declares_region_header() {
    let reg = fixtures::registry();
    let tool = reg
        .tool(&Caller::new("tester"), "test_header_params")
        .unwrap();
    let schema: Value = serde_json::from_str(tool.input_schema.get()).unwrap();
    assert_eq!(schema["properties"]["region"]["x-mcp-header"], "Region");
    assert_eq!(
        call_with(
            &reg,
            inv(json!({})),
            "test_header_params",
            r#"{"region":"eu-west","text":"hi"}"#
        )
        .await,
        text_result("eu-west: hi")
    );
}

#[tokio::test]
async fn missing_capability_is_refused_then_served() {
    let reg = fixtures::registry();
    let err = error(
        &reg,
        inv(json!({"elicitation": {}})),
        "test_missing_capability",
    )
    .await;
    assert_eq!(err.code(), -32021);
    assert_eq!(
        err.data(),
        Some(json!({"requiredCapabilities": {"sampling": {}}}))
    );
    let asked = input_required(
        &reg,
        inv(json!({"sampling": {}})),
        "test_missing_capability",
    )
    .await;
    assert_eq!(
        asked,
        json!({"needs_sampling": sampling("Reply with any short text.", 10)})
    );
    let answered = inv(json!({"sampling": {}}))
        .with_input_responses(answers(&[("needs_sampling", sampled("ok"))]));
    assert_eq!(
        call(&reg, answered, "test_missing_capability").await,
        text_result("Sampling answered: ok")
    );
}

#[tokio::test]
async fn streaming_elicitation_round_trip() {
    let reg = fixtures::registry();
    assert_eq!(
        error(&reg, inv(json!({})), "test_streaming_elicitation")
            .await
            .code(),
        -32021
    );
    let form = json!({"elicitation": {"form": {}}});
    assert_eq!(
        input_required(&reg, inv(form.clone()), "test_streaming_elicitation").await,
        json!({"stream_name": name_form("What is your name?")})
    );
    let answered =
        inv(form).with_input_responses(answers(&[("stream_name", accept(json!({"name": "Bo"})))]));
    assert_eq!(
        call(&reg, answered, "test_streaming_elicitation").await,
        text_result("Hello, Bo!")
    );
}

#[tokio::test]
async fn elicitation_round_trip_refusal_and_wrong_key() {
    let reg = fixtures::registry();
    let form = json!({"elicitation": {}});
    let name = "test_input_required_result_elicitation";
    assert_eq!(
        input_required(&reg, inv(form.clone()), name).await,
        json!({"user_name": name_form("What is your name?")})
    );
    let answered = inv(form.clone())
        .with_input_responses(answers(&[("user_name", accept(json!({"name": "Alice"})))]));
    assert_eq!(
        call(&reg, answered, name).await,
        text_result("Hello, Alice!")
    );
    let declined = inv(form.clone())
        .with_input_responses(answers(&[("user_name", json!({"action": "decline"}))]));
    assert_eq!(
        call(&reg, declined, name).await,
        text_result("No name given (decline).")
    );
    // A wrong key is not an error: the fixture asks again.
    let wrong = inv(form.clone())
        .with_input_responses(answers(&[("wrong_key", accept(json!({"data": "wrong"})))]));
    assert_eq!(
        input_required(&reg, wrong, name).await,
        json!({"user_name": name_form("What is your name?")})
    );
    // A malformed answer is -32602.
    let malformed =
        inv(form).with_input_responses(answers(&[("user_name", json!({"action": "maybe"}))]));
    assert_eq!(error(&reg, malformed, name).await.code(), -32602);
    // Without the capability: -32021, never an input request.
    assert_eq!(error(&reg, inv(json!({})), name).await.code(), -32021);
}

#[tokio::test]
async fn sampling_round_trip() {
    let reg = fixtures::registry();
    let name = "test_input_required_result_sampling";
    let c = json!({"sampling": {}});
    assert_eq!(
        input_required(&reg, inv(c.clone()), name).await,
        json!({"capital_question": sampling("What is the capital of France?", 100)})
    );
    let answered = inv(c.clone()).with_input_responses(answers(&[(
        "capital_question",
        sampled("The capital of France is Paris."),
    )]));
    assert_eq!(
        call(&reg, answered, name).await,
        text_result("Sampling answered: The capital of France is Paris.")
    );
    // Array-of-blocks content is read too.
    let array = inv(c).with_input_responses(answers(&[(
        "capital_question",
        json!({"role": "assistant", "content": [{"type": "text", "text": "Paris"}], "model": "m"}),
    )]));
    assert_eq!(
        call(&reg, array, name).await,
        text_result("Sampling answered: Paris")
    );
    assert_eq!(
        error(&reg, inv(json!({"roots": {}})), name).await.data(),
        Some(json!({"requiredCapabilities": {"sampling": {}}}))
    );
}

#[tokio::test]
async fn list_roots_round_trip() {
    let reg = fixtures::registry();
    let name = "test_input_required_result_list_roots";
    let c = json!({"roots": {"listChanged": true}});
    assert_eq!(
        input_required(&reg, inv(c.clone()), name).await,
        json!({"client_roots": {"method": "roots/list"}})
    );
    let answered = inv(c).with_input_responses(answers(&[("client_roots", roots())]));
    assert_eq!(
        call(&reg, answered, name).await,
        text_result("Client roots: file:///test/root")
    );
    assert_eq!(error(&reg, inv(json!({})), name).await.code(), -32021);
}

#[tokio::test]
async fn request_state_and_tampered_state_confirmations() {
    let reg = fixtures::registry();
    let c = json!({"elicitation": {"form": {}}});
    for name in [
        "test_input_required_result_request_state",
        "test_input_required_result_tampered_state",
    ] {
        assert_eq!(
            input_required(&reg, inv(c.clone()), name).await,
            json!({"confirm": confirm_form()})
        );
    }
    let ok = || {
        inv(c.clone()).with_input_responses(answers(&[("confirm", accept(json!({"ok": true})))]))
    };
    assert_eq!(
        call(&reg, ok(), "test_input_required_result_request_state").await,
        text_result("state-ok: confirmed=true")
    );
    assert_eq!(
        call(&reg, ok(), "test_input_required_result_tampered_state").await,
        text_result("Request state verified.")
    );
}

#[tokio::test]
async fn multiple_inputs_in_one_round() {
    let reg = fixtures::registry();
    let name = "test_input_required_result_multiple_inputs";
    let expected = json!({
        "client_roots": {"method": "roots/list"},
        "greeting": sampling("Generate a greeting", 50),
        "user_name": name_form("What is your name?"),
    });
    assert_eq!(input_required(&reg, inv(all_caps()), name).await, expected);
    // Partial answers: all three are asked again.
    let partial = inv(all_caps())
        .with_input_responses(answers(&[("user_name", accept(json!({"name": "Alice"})))]));
    assert_eq!(input_required(&reg, partial, name).await, expected);
    let full = inv(all_caps()).with_input_responses(answers(&[
        ("user_name", accept(json!({"name": "Alice"}))),
        ("greeting", sampled("Hello there!")),
        ("client_roots", roots()),
    ]));
    assert_eq!(
        call(&reg, full, name).await,
        text_result("Name: Alice; greeting: Hello there!; roots: 1")
    );
    // One missing capability refuses the whole round.
    assert_eq!(
        error(&reg, inv(json!({"elicitation": {}, "sampling": {}})), name)
            .await
            .data(),
        Some(json!({"requiredCapabilities": {"roots": {}}}))
    );
}

#[tokio::test]
async fn multi_round_asks_step1_then_step2() {
    let reg = fixtures::registry();
    let name = "test_input_required_result_multi_round";
    let c = json!({"elicitation": {}});
    assert_eq!(
        input_required(&reg, inv(c.clone()), name).await,
        json!({"step1": name_form("Step 1: What is your name?")})
    );
    let round2 = inv(c.clone())
        .with_input_responses(answers(&[("step1", accept(json!({"name": "Alice"})))]));
    assert_eq!(
        input_required(&reg, round2, name).await,
        json!({"step2": {"method": "elicitation/create", "params": {
            "mode": "form", "message": "Step 2: What is your favorite color?",
            "requestedSchema": {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}}}})
    );
    let round3 =
        inv(c).with_input_responses(answers(&[("step2", accept(json!({"color": "blue"})))]));
    assert_eq!(
        call(&reg, round3, name).await,
        text_result("Both rounds answered; favourite colour: blue.")
    );
}

#[tokio::test]
async fn capabilities_fixture_asks_only_for_declared_kinds() {
    let reg = fixtures::registry();
    let name = "test_input_required_result_capabilities";
    assert_eq!(
        input_required(&reg, inv(json!({"sampling": {}})), name).await,
        json!({"capital_question": sampling("What is the capital of France?", 100)})
    );
    let keys = |v: Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(
        keys(input_required(&reg, inv(json!({"elicitation": {}, "roots": {}})), name).await),
        ["client_roots", "user_name"]
    );
    assert_eq!(
        keys(input_required(&reg, inv(all_caps()), name).await),
        ["capital_question", "client_roots", "user_name"]
    );
    // URL-only elicitation does not allow a form.
    assert_eq!(
        call(&reg, inv(json!({"elicitation": {"url": {}}})), name).await,
        text_result("The request declares no input capability; nothing to ask.")
    );
    let answered = inv(json!({"sampling": {}}))
        .with_input_responses(answers(&[("capital_question", sampled("Paris"))]));
    assert_eq!(
        call(&reg, answered, name).await,
        text_result("Answered: capital_question")
    );
}

#[tokio::test]
async fn resources_and_template() {
    let reg = fixtures::registry();
    let caller = Caller::new("tester");
    let listed = serde_json::to_value(reg.list_resources(&caller, None).unwrap().items).unwrap();
    assert_eq!(
        listed,
        json!([
            {"uri": "skill://pdf-processing/SKILL.md", "name": "pdf-processing",
             "description": "Extract, fill, and assemble PDF documents", "mimeType": "text/markdown",
             "size": fixtures::PDF_SKILL_MD.len()},
            {"uri": "skill://pdf-processing/references/FORMS.md",
             "name": "pdf-processing/references/FORMS.md", "mimeType": "text/markdown",
             "size": fixtures::PDF_FORMS_MD.len()},
            {"uri": "skill://team/code-review/SKILL.md", "name": "code-review",
             "description": "Review a change for correctness and style", "mimeType": "text/markdown",
             "size": fixtures::REVIEW_SKILL_MD.len()},
            {"uri": "test://static-binary", "name": "static-binary",
             "description": "A static binary resource (a 1×1 PNG).", "mimeType": "image/png"},
            {"uri": "test://static-text", "name": "static-text",
             "description": "A static text resource.", "mimeType": "text/plain"}])
    );
    let templates =
        serde_json::to_value(reg.list_resource_templates(&caller, None).unwrap().items).unwrap();
    assert_eq!(
        templates,
        json!([{"uriTemplate": "test://template/{id}/data", "name": "template-data",
                "description": "JSON data for any id.", "mimeType": "application/json"}])
    );
    let read = |uri: &'static str| {
        let reg = reg.clone();
        async move {
            match reg.read_resource(inv(json!({})), uri).await.unwrap() {
                Outcome::Complete(r) => serde_json::to_value(r).unwrap(),
                Outcome::InputRequired { .. } => panic!("no input expected"),
            }
        }
    };
    assert_eq!(
        read("test://static-text").await,
        json!({"contents": [{"uri": "test://static-text", "mimeType": "text/plain",
            "text": "This is the content of the static text resource."}],
            "ttlMs": 0, "cacheScope": "private"})
    );
    assert_eq!(
        read("test://static-binary").await["contents"],
        json!([{"uri": "test://static-binary", "mimeType": "image/png", "blob": RED_PIXEL_PNG}])
    );
    assert_eq!(
        read("test://template/123/data").await["contents"],
        json!([{"uri": "test://template/123/data", "mimeType": "application/json",
            "text": "{\"id\":\"123\",\"templateTest\":true,\"data\":\"Data for ID: 123\"}"}])
    );
    let missing = reg
        .read_resource(
            inv(json!({})),
            "test://nonexistent-resource-for-conformance-testing",
        )
        .await
        .unwrap_err();
    assert_eq!(missing.code(), -32602);
    assert_eq!(
        missing.data(),
        Some(json!({"uri": "test://nonexistent-resource-for-conformance-testing"}))
    );
}

async fn prompt(reg: &Registry, inv: Invocation, name: &str, args: &[(&str, &str)]) -> Value {
    let args = args
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    match reg.get_prompt(inv, name, args).await.unwrap() {
        Outcome::Complete(r) => serde_json::to_value(r).unwrap(),
        Outcome::InputRequired { requests } => json!({"inputRequests": requests}),
    }
}

fn user_text(s: &str) -> Value {
    json!({"role": "user", "content": {"type": "text", "text": s}})
}

#[tokio::test]
async fn prompts_exact_messages() {
    let reg = fixtures::registry();
    assert_eq!(
        prompt(&reg, inv(json!({})), "test_simple_prompt", &[]).await,
        json!({"messages": [user_text("This is a simple prompt for testing.")]})
    );
    assert_eq!(
        prompt(
            &reg,
            inv(json!({})),
            "test_prompt_with_arguments",
            &[("arg1", "testValue1"), ("arg2", "testValue2")]
        )
        .await,
        json!({"messages": [user_text("Prompt with arguments: arg1='testValue1', arg2='testValue2'")]})
    );
    let missing = reg
        .get_prompt(
            inv(json!({})),
            "test_prompt_with_arguments",
            [("arg1".to_owned(), "x".to_owned())].into(),
        )
        .await
        .unwrap_err();
    assert_eq!(missing.code(), -32602);
    assert_eq!(
        prompt(
            &reg,
            inv(json!({})),
            "test_prompt_with_embedded_resource",
            &[("resourceUri", "test://example-resource")]
        )
        .await,
        json!({"messages": [
            {"role": "user", "content": {"type": "resource", "resource": {
                "uri": "test://example-resource", "mimeType": "text/plain",
                "text": "Embedded resource content for testing."}}},
            user_text("Please process the embedded resource above.")]})
    );
    assert_eq!(
        prompt(&reg, inv(json!({})), "test_prompt_with_image", &[]).await,
        json!({"messages": [
            {"role": "user", "content": {"type": "image", "data": RED_PIXEL_PNG, "mimeType": "image/png"}},
            user_text("Please analyze the image above.")]})
    );
}

#[tokio::test]
async fn prompt_with_input_required() {
    let reg = fixtures::registry();
    let name = "test_input_required_result_prompt";
    let c = json!({"elicitation": {}});
    assert_eq!(
        prompt(&reg, inv(c.clone()), name, &[]).await,
        json!({"inputRequests": {"user_context": {"method": "elicitation/create", "params": {
            "mode": "form", "message": "What context should the prompt use?",
            "requestedSchema": {"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]}}}}})
    );
    let answered = inv(c).with_input_responses(answers(&[(
        "user_context",
        accept(json!({"context": "test context"})),
    )]));
    assert_eq!(
        prompt(&reg, answered, name, &[]).await,
        json!({"messages": [user_text("Answer using this context: test context")]})
    );
    let err = reg
        .get_prompt(inv(json!({})), name, BTreeMap::new())
        .await
        .unwrap_err();
    assert_eq!(err.code(), -32021);
}

#[test]
fn completion_on_arg1() {
    let reg = fixtures::registry();
    let caller = Caller::new("tester");
    let reference = CompletionRef::Prompt {
        name: "test_prompt_with_arguments".to_owned(),
    };
    let reply = reg
        .complete(&caller, &reference, "arg1", "par", &BTreeMap::new())
        .unwrap();
    assert_eq!(
        serde_json::to_value(reply).unwrap(),
        json!({"values": ["paris", "park", "partial"]})
    );
    let none = reg
        .complete(&caller, &reference, "arg2", "par", &BTreeMap::new())
        .unwrap();
    assert_eq!(serde_json::to_value(none).unwrap(), json!({"values": []}));
    assert_eq!(
        reg.complete(&caller, &reference, "arg3", "", &BTreeMap::new())
            .unwrap_err()
            .code(),
        -32602
    );
}

// ---------------------------------------------------------------------------------------
// End to end through the server's stdio host: the fixtures that need the server itself
// (list-changed triggers) and the ones whose guarantees the server adds (sealed state).

#[path = "../examples/conformance/triggers.rs"]
mod triggers;

mod served {
    use std::sync::Arc;

    use serde_json::{json, Value};
    use strict_mcp::core::Caller;
    use strict_mcp::server::{Server, ServerOptions};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

    use super::{fixtures, triggers};

    /// The conformance server exactly as the example builds it, on in-memory stdio.
    pub struct Served {
        to_server: DuplexStream,
        from_server: Lines<BufReader<DuplexStream>>,
        next_id: u64,
    }

    pub fn meta(caps: Value) -> Value {
        json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": caps,
        })
    }

    impl Served {
        pub fn start() -> Served {
            let catalogue = Arc::new(triggers::Catalogue::default());
            let server = Server::new(
                triggers::registry(&catalogue, fixtures::builder),
                ServerOptions::new().mode("direct"),
            )
            .unwrap();
            catalogue.attach(server.clone());
            let (to_server, server_in) = tokio::io::duplex(1 << 20);
            let (server_out, from_server) = tokio::io::duplex(1 << 20);
            tokio::spawn(async move {
                server
                    .run_stdio_on(Caller::new("tester"), server_in, server_out)
                    .await
            });
            Served {
                to_server,
                from_server: BufReader::new(from_server).lines(),
                next_id: 0,
            }
        }

        /// Sends a request and returns its id.
        pub async fn send(&mut self, method: &str, params: Value) -> u64 {
            self.next_id += 1;
            let line =
                json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params});
            self.to_server
                .write_all(format!("{line}\n").as_bytes())
                .await
                .unwrap();
            self.next_id
        }

        pub async fn next(&mut self) -> Value {
            let line = tokio::time::timeout(
                std::time::Duration::from_secs(10),
                self.from_server.next_line(),
            )
            .await
            .expect("a line within 10 s")
            .unwrap()
            .expect("the server is still writing");
            serde_json::from_str(&line).unwrap()
        }

        /// Reads until the response to `id`, returning it and everything seen before it.
        pub async fn reply(&mut self, id: u64) -> (Value, Vec<Value>) {
            let mut before = Vec::new();
            loop {
                let message = self.next().await;
                if message["id"] == json!(id) && message.get("method").is_none() {
                    return (message, before);
                }
                before.push(message);
            }
        }

        pub async fn call(&mut self, params: Value) -> Value {
            let id = self.send("tools/call", params).await;
            self.reply(id).await.0
        }
    }
}

#[tokio::test]
async fn trigger_tool_change_announces_on_listen_stream() {
    let mut s = served::Served::start();
    let listen = s
        .send(
            "subscriptions/listen",
            json!({"_meta": served::meta(json!({})),
                   "notifications": {"toolsListChanged": true, "promptsListChanged": true}}),
        )
        .await;
    let ack = s.next().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        json!(listen)
    );

    let id = s
        .send(
            "tools/call",
            json!({"_meta": served::meta(json!({})), "name": "test_trigger_tool_change", "arguments": {}}),
        )
        .await;
    let (reply, before) = s.reply(id).await;
    assert_eq!(
        reply["result"]["content"],
        json!([{"type": "text", "text": "test_dynamic_tool added."}])
    );
    let mut seen = before;
    // The announcement may come before or after the call's own reply.
    if !seen
        .iter()
        .any(|m| m["method"] == "notifications/tools/list_changed")
    {
        seen.push(s.next().await);
    }
    let changed = seen
        .iter()
        .find(|m| m["method"] == "notifications/tools/list_changed")
        .expect("tools/list_changed on the listen stream");
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        json!(listen)
    );

    let called = s
        .call(
            json!({"_meta": served::meta(json!({})), "name": "test_dynamic_tool", "arguments": {}}),
        )
        .await;
    assert_eq!(
        called["result"]["content"],
        json!([{"type": "text", "text": "This tool was added at run time."}])
    );
    // A second trigger removes it again.
    let removed = s
        .call(json!({"_meta": served::meta(json!({})), "name": "test_trigger_tool_change", "arguments": {}}))
        .await;
    assert_eq!(
        removed["result"]["content"],
        json!([{"type": "text", "text": "test_dynamic_tool removed."}])
    );
}

#[tokio::test]
async fn trigger_prompt_change_toggles_the_prompt() {
    let mut s = served::Served::start();
    let get = |m: Value| json!({"_meta": m, "name": "test_dynamic_prompt"});
    let id = s.send("prompts/get", get(served::meta(json!({})))).await;
    assert_eq!(s.reply(id).await.0["error"]["code"], -32602);
    let added = s
        .call(json!({"_meta": served::meta(json!({})), "name": "test_trigger_prompt_change", "arguments": {}}))
        .await;
    assert_eq!(
        added["result"]["content"],
        json!([{"type": "text", "text": "test_dynamic_prompt added."}])
    );
    let id = s.send("prompts/get", get(served::meta(json!({})))).await;
    assert_eq!(
        s.reply(id).await.0["result"]["messages"],
        json!([{"role": "user", "content": {"type": "text", "text": "This prompt was added at run time."}}])
    );
}

#[tokio::test]
async fn request_state_round_trip_and_tampering_through_the_server() {
    let mut s = served::Served::start();
    let caps = json!({"elicitation": {"form": {}}});
    for tool in [
        "test_input_required_result_request_state",
        "test_input_required_result_tampered_state",
    ] {
        let params = json!({"_meta": served::meta(caps.clone()), "name": tool, "arguments": {}});
        let first = s.call(params.clone()).await;
        assert_eq!(first["result"]["resultType"], "input_required", "{first}");
        assert_eq!(
            first["result"]["inputRequests"],
            json!({"confirm": confirm_form()})
        );
        let state = first["result"]["requestState"]
            .as_str()
            .expect("sealed requestState")
            .to_owned();

        let mut tampered = params.clone();
        tampered["inputResponses"] = json!({"confirm": accept(json!({"ok": true}))});
        tampered["requestState"] = json!(format!("{state}x"));
        let refused = s.call(tampered).await;
        // X21: on a direct-mode tools/call a rejected state is the JSON-RPC error -32602 with
        // the reason, as the public suite's tampered-state check expects; no result at all.
        assert!(refused.get("result").is_none(), "{refused}");
        assert_eq!(
            refused["error"],
            json!({"code": -32602, "message": "The requestState was rejected.",
                "data": {"reason": "state_rejected", "retryable": false}}),
            "{refused}"
        );

        let mut retry = params;
        retry["inputResponses"] = json!({"confirm": accept(json!({"ok": true}))});
        retry["requestState"] = json!(state);
        let done = s.call(retry).await;
        let expected = if tool.ends_with("request_state") {
            "state-ok: confirmed=true"
        } else {
            "Request state verified."
        };
        assert_eq!(
            done["result"]["content"],
            json!([{"type": "text", "text": expected}]),
            "{done}"
        );
    }
}

#[tokio::test]
async fn progress_reaches_the_client_three_times() {
    let mut s = served::Served::start();
    let mut meta = served::meta(json!({}));
    meta["progressToken"] = json!("progress-test-1");
    let id = s
        .send(
            "tools/call",
            json!({"_meta": meta, "name": "test_tool_with_progress", "arguments": {}}),
        )
        .await;
    let (reply, before) = s.reply(id).await;
    let progress: Vec<&Value> = before
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| &m["params"])
        .collect();
    assert_eq!(
        progress,
        [
            &json!({"progressToken": "progress-test-1", "progress": 0.0, "total": 100.0}),
            &json!({"progressToken": "progress-test-1", "progress": 50.0, "total": 100.0}),
            &json!({"progressToken": "progress-test-1", "progress": 100.0, "total": 100.0}),
        ]
    );
    assert_eq!(
        reply["result"]["content"],
        json!([{"type": "text", "text": "Progress reported: 0, 50 and 100 of 100."}])
    );
}

/// L1, L2, L3, L4: `test_logging_tool` emits `notifications/message` only for a request whose
/// `_meta` asks with `logLevel`, only at or above that level, on that request's own stream and
/// before its reply; an unknown level is -32602; discover declares `logging`.
#[tokio::test]
async fn logging_tool_logs_only_when_asked_and_at_or_above_the_level() {
    let mut s = served::Served::start();
    let call = |meta: Value| json!({"_meta": meta, "name": "test_logging_tool", "arguments": {}});
    let with_level = |level: &str| {
        let mut meta = served::meta(json!({}));
        meta["io.modelcontextprotocol/logLevel"] = json!(level);
        meta
    };
    let done = json!([{"type": "text", "text": "Logging test completed"}]);

    let id = s.send("tools/call", call(served::meta(json!({})))).await;
    let (reply, before) = s.reply(id).await;
    assert!(before.is_empty(), "not asked, yet logged: {before:?}");
    assert_eq!(reply["result"]["content"], done);

    let id = s.send("tools/call", call(with_level("info"))).await;
    let (reply, before) = s.reply(id).await;
    let message = |data: &str| {
        json!({"jsonrpc": "2.0", "method": "notifications/message",
               "params": {"level": "info", "logger": "test_logging_tool", "data": data}})
    };
    assert_eq!(
        before,
        vec![
            message("Tool execution started"),
            message("Tool execution processing data"),
            message("Tool execution completed"),
        ]
    );
    assert_eq!(reply["result"]["content"], done);

    let id = s.send("tools/call", call(with_level("warning"))).await;
    let (reply, before) = s.reply(id).await;
    assert!(before.is_empty(), "info is below warning: {before:?}");
    assert_eq!(reply["result"]["content"], done);

    let id = s.send("tools/call", call(with_level("verbose"))).await;
    let (reply, before) = s.reply(id).await;
    assert!(before.is_empty());
    assert_eq!(reply["error"]["code"], -32602);

    let id = s
        .send("server/discover", json!({"_meta": served::meta(json!({}))}))
        .await;
    let (reply, _) = s.reply(id).await;
    assert_eq!(reply["result"]["capabilities"]["logging"], json!({}));
}

/// N34: the conformance Skills scenarios read the first listed skill's root, which must have a
/// subdirectory, and find its `SKILL.md` through `resources/list`.
#[test]
fn n34_the_first_listed_skill_has_a_subdirectory_and_a_listed_manifest() {
    let reg = fixtures::registry();
    let caller = Caller::new("tester");
    let skills = reg.list_skills(&caller, None).unwrap().items;
    assert_eq!(skills[0].uri, "skill://pdf-processing/SKILL.md");
    assert!(reg.skills().unwrap().directory_read());
    let children = reg
        .read_directory(&caller, "skill://pdf-processing", None)
        .unwrap()
        .items;
    assert!(children
        .iter()
        .any(|r| r.uri == "skill://pdf-processing/references"
            && r.mime_type.as_deref() == Some("inode/directory")));
    let listed = reg.list_resources(&caller, None).unwrap().items;
    assert!(listed.iter().any(|r| r.uri == skills[0].uri));
}
