//! Compact publication (O11–O20, O51): the three published tools, strict envelopes, the
//! `{value}` / `{failure}` envelopes byte-exact, unavailable tools, MRTR pass-through.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use futures_util::FutureExt as _;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{json, Value};
use strict_mcp::core::descriptor::ContentBlock;
use strict_mcp::core::{
    Access, Caller, ClientCapabilities, CoreError, DynamicOutput, FailureCode, Invocation, Outcome,
    Policy, Registry, RegistryBuilder, ToolDef, ToolFailure,
};
use strict_mcp::server::publication::{CallOutcome, Mode, Publication, TextOutcome};

fn raw(s: &str) -> Box<RawValue> {
    RawValue::from_string(s.to_owned()).unwrap()
}

fn alice() -> Invocation {
    Invocation::new(Caller::new("alice"))
}

/// Every handler here completes without waiting, so the futures are ready at once.
fn ready<T>(fut: impl std::future::Future<Output = T>) -> T {
    fut.now_or_never()
        .expect("future completes without waiting")
}

#[derive(Deserialize, JsonSchema)]
struct AddIn {
    /// First addend.
    a: i64,
    /// Second addend.
    b: i64,
}

#[derive(Serialize, JsonSchema)]
struct AddOut {
    /// The sum.
    sum: i64,
}

#[derive(Deserialize, JsonSchema)]
struct PrefixIn {
    /// Branch name prefix.
    prefix: String,
}

#[derive(Serialize, JsonSchema)]
struct Branches {
    /// Matching branches.
    branches: Vec<String>,
}

struct HideSecret;

impl Policy for HideSecret {
    fn tool(&self, _caller: &Caller, name: &str) -> Access {
        match name {
            "secret" => Access::Hidden,
            "listed_only" => Access::ListOnly,
            _ => Access::Allowed,
        }
    }
}

fn dynamic(name: &str, structured: Option<&'static str>, content: Vec<ContentBlock>) -> ToolDef {
    ToolDef::dynamic(
        name,
        r#"{"type":"object"}"#,
        None,
        move |_inv: Invocation, _args: Box<RawValue>| {
            let content = content.clone();
            async move {
                Ok(DynamicOutput {
                    content,
                    structured: structured.map(raw),
                })
            }
        },
    )
}

fn registry() -> Registry {
    let add = ToolDef::typed("add", |_inv: Invocation, i: AddIn| async move {
        Ok(AddOut { sum: i.a + i.b })
    })
    .title("Add")
    .description("Adds two integers.")
    .keywords(["sum", "plus"]);
    let branches = ToolDef::typed(
        "list_branches",
        |_inv: Invocation, q: PrefixIn| async move {
            if q.prefix.is_empty() {
                return Err(
                    ToolFailure::new(FailureCode::InvalidArguments, "prefix is empty").into(),
                );
            }
            Ok(Branches {
                branches: vec![format!("{}-main", q.prefix)],
            })
        },
    )
    .description("Lists branches by prefix.");
    let secret = ToolDef::typed("secret", |_inv: Invocation, i: AddIn| async move {
        Ok(AddOut { sum: i.a * i.b })
    })
    .description("Multiplies secretly.");
    let listed_only = ToolDef::typed("listed_only", |_inv: Invocation, i: AddIn| async move {
        Ok(AddOut { sum: i.a - i.b })
    });
    RegistryBuilder::new()
        .tool(add)
        .tool(branches)
        .tool(secret)
        .tool(listed_only)
        .tool(dynamic("null_out", Some("null"), vec![]))
        .tool(dynamic(
            "text_only",
            None,
            vec![ContentBlock::text("just words")],
        ))
        .tool(dynamic(
            "exact_numbers",
            Some(r#"{"big":123456789012345678901234567890,"f":1.50,"e":1E+2}"#),
            vec![],
        ))
        .policy(HideSecret)
        .build()
        .unwrap()
}

fn params(name: &str, arguments: &str) -> Box<RawValue> {
    raw(&format!(
        r#"{{"name":"{name}","arguments":{arguments},"_meta":{{}}}}"#
    ))
}

fn call_text(reg: &Registry, name: &str, arguments: &str) -> Result<String, CoreError> {
    let publication = Publication::new(Mode::Compact);
    match ready(publication.call_tool_text(reg, alice(), &params(name, arguments)))? {
        TextOutcome::Complete(text) => Ok(text),
        TextOutcome::InputRequired { .. } => panic!("unexpected input_required"),
    }
}

fn inner(name: &str, arguments: &str) -> String {
    format!(r#"{{"name":"{name}","arguments":{arguments}}}"#)
}

fn unavailable_text() -> &'static str {
    concat!(
        r#"{"content":[{"text":"{\"failure\":{\"code\":\"unavailable_tool\","#,
        r#"\"message\":\"No tool of that name is available to the caller.\",\"retryable\":false}}","type":"text"}],"#,
        r#""isError":true,"structuredContent":{"failure":{"code":"unavailable_tool","#,
        r#""message":"No tool of that name is available to the caller.","retryable":false}}}"#
    )
}

#[test]
fn o11_o16_compact_catalogue_is_exactly_three_tools() {
    let reg = registry();
    let publication = Publication::new(Mode::Compact);
    assert_eq!(publication.mode(), Mode::Compact);
    let list = publication
        .list_tools(&reg, &Caller::new("alice"), None)
        .unwrap();
    assert_eq!(list.keys().collect::<Vec<_>>(), vec!["tools"]);
    let tools = list["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, vec!["search_tools", "get_tool_details", "call_tool"]);
    // Strict input schemas.
    for tool in tools {
        assert_eq!(tool["inputSchema"]["additionalProperties"], json!(false));
        assert_eq!(tool["inputSchema"]["type"], json!("object"));
    }
    assert_eq!(
        tools[0]["inputSchema"]["properties"]["limit"],
        json!({"type":"integer","minimum":1,"maximum":20,"default":5,
               "description":"Most results to return (1 to 20, default 5)."})
    );
    assert_eq!(tools[0]["inputSchema"]["required"], json!(["query"]));
    assert_eq!(tools[1]["inputSchema"]["required"], json!(["name"]));
    assert_eq!(
        tools[2]["inputSchema"]["properties"]["arguments"]["type"],
        json!("object")
    );
    // Output schemas for the discovery tools, none for call_tool (O16).
    assert_eq!(
        tools[0]["outputSchema"]["required"],
        json!(["tools", "truncated"])
    );
    assert_eq!(
        tools[1]["outputSchema"]["$defs"]["failure"]["required"],
        json!(["failure"])
    );
    assert!(!strict_mcp::server::publication::compact_tools_text().contains("$failure"));
    assert!(tools[2].get("outputSchema").is_none());
    // The catalogue is the same for every caller and unchanged by searching (O12).
    let other = publication
        .list_tools(&reg, &Caller::new("bob"), None)
        .unwrap();
    assert_eq!(other, list);
    call_text(&reg, "search_tools", r#"{"query":"add"}"#).unwrap();
    assert_eq!(
        publication
            .list_tools(&reg, &Caller::new("alice"), None)
            .unwrap(),
        list
    );
}

#[test]
fn o21_compact_list_refuses_any_cursor() {
    let reg = registry();
    let err = Publication::new(Mode::Compact)
        .list_tools(&reg, &Caller::new("alice"), Some("abc"))
        .unwrap_err();
    assert_eq!(err, CoreError::InvalidCursor);
    assert_eq!(err.code(), -32602);
}

#[test]
fn o14_o15_success_is_wrapped_as_value_with_text_copy() {
    let reg = registry();
    let text = call_text(&reg, "call_tool", &inner("add", r#"{"a":2,"b":40}"#)).unwrap();
    assert_eq!(
        text,
        r#"{"content":[{"text":"{\"value\":{\"sum\":42}}","type":"text"}],"structuredContent":{"value":{"sum":42}}}"#
    );
    // The Map form carries the same body.
    let publication = Publication::new(Mode::Compact);
    let CallOutcome::Complete(map) = ready(publication.call_tool(
        &reg,
        alice(),
        &params("call_tool", &inner("add", r#"{"a":2,"b":40}"#)),
    ))
    .unwrap() else {
        panic!("expected a complete result");
    };
    assert_eq!(
        Value::Object(map),
        serde_json::from_str::<Value>(&text).unwrap()
    );
}

#[test]
fn o14_explicit_null_stays_present() {
    let reg = registry();
    let text = call_text(&reg, "call_tool", &inner("null_out", "{}")).unwrap();
    assert_eq!(
        text,
        r#"{"content":[{"text":"{\"value\":null}","type":"text"}],"structuredContent":{"value":null}}"#
    );
}

#[test]
fn o14_absent_output_stays_absent() {
    let reg = registry();
    let text = call_text(&reg, "call_tool", &inner("text_only", "{}")).unwrap();
    assert_eq!(text, r#"{"content":[{"text":"just words","type":"text"}]}"#);
}

#[test]
fn o29_result_numbers_keep_their_exact_text() {
    let reg = registry();
    let text = call_text(&reg, "call_tool", &inner("exact_numbers", "{}")).unwrap();
    assert!(
        text.contains(
            r#""structuredContent":{"value":{"big":123456789012345678901234567890,"f":1.50,"e":1E+2}}"#
        ),
        "{text}"
    );
}

#[test]
fn o17_failure_envelope_with_text_copy() {
    let reg = registry();
    let text = call_text(
        &reg,
        "call_tool",
        &inner("list_branches", r#"{"prefix":""}"#),
    )
    .unwrap();
    assert_eq!(
        text,
        concat!(
            r#"{"content":[{"text":"{\"failure\":{\"code\":\"invalid_arguments\","#,
            r#"\"message\":\"prefix is empty\",\"retryable\":false}}","type":"text"}],"#,
            r#""isError":true,"structuredContent":{"failure":{"code":"invalid_arguments","message":"prefix is empty","#,
            r#""retryable":false}}}"#
        )
    );
}

#[test]
fn o17_schema_invalid_arguments_are_a_failure_with_diagnostics() {
    let reg = registry();
    let text = call_text(&reg, "call_tool", &inner("add", r#"{"a":"two","b":40}"#)).unwrap();
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["isError"], json!(true));
    let failure = &body["structuredContent"]["failure"];
    assert_eq!(failure["code"], json!("invalid_arguments"));
    assert_eq!(failure["retryable"], json!(false));
    assert_eq!(
        failure["message"],
        json!("The arguments do not match the tool's input schema.")
    );
    let diagnostics = failure["diagnostics"].as_array().unwrap();
    assert_eq!(diagnostics.len(), 1);
    assert_eq!(diagnostics[0]["pointer"], json!("/a"));
    assert_eq!(diagnostics[0]["keyword"], json!("type"));
    // The text copy is the JSON of the envelope.
    let copy = body["content"].as_array().unwrap().last().unwrap()["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        serde_json::from_str::<Value>(&copy).unwrap(),
        body["structuredContent"]
    );
    // The failure validates against the published failure envelope schema (O17).
    let schema = strict_mcp::core::schema::CompiledSchema::compile(
        strict_mcp::server::publication::failure_envelope_schema_text(),
    )
    .unwrap();
    schema.validate_value(&body["structuredContent"]).unwrap();
}

#[test]
fn o18_missing_unknown_hidden_or_list_only_inner_name_is_unavailable_tool() {
    let reg = registry();
    assert_eq!(
        call_text(&reg, "call_tool", r#"{"arguments":{}}"#).unwrap(),
        unavailable_text()
    );
    assert_eq!(
        call_text(&reg, "call_tool", &inner("nope", "{}")).unwrap(),
        unavailable_text()
    );
    assert_eq!(
        call_text(&reg, "call_tool", &inner("secret", r#"{"a":1,"b":2}"#)).unwrap(),
        unavailable_text()
    );
    let listed = call_text(&reg, "call_tool", &inner("listed_only", r#"{"a":1,"b":2}"#)).unwrap();
    let body: Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(
        body["structuredContent"]["failure"]["code"],
        json!("unavailable_tool")
    );
    assert_eq!(body["isError"], json!(true));
}

#[test]
fn o18_unknown_outer_tool_is_invalid_params() {
    let reg = registry();
    // `add` is registered and visible: the answer says it is reached through `call_tool`.
    let err = call_text(&reg, "add", r#"{"a":1,"b":2}"#).unwrap_err();
    assert_eq!(
        err,
        CoreError::CompactOnly {
            name: "add".to_owned()
        }
    );
    assert_eq!(err.code(), -32602);
    let err = call_text(&reg, "nope", r#"{}"#).unwrap_err();
    assert_eq!(
        err,
        CoreError::UnknownTool {
            name: "nope".to_owned()
        }
    );
    assert_eq!(err.code(), -32602);
}

#[test]
fn o13_o18_malformed_envelopes_are_invalid_params() {
    let reg = registry();
    let cases: &[(&str, &str)] = &[
        ("call_tool", r#"{"name":"add","arguments":{},"extra":1}"#),
        ("call_tool", r#"{"name":"add","arguments":[1]}"#),
        ("call_tool", r#"{"name":"add","arguments":null}"#),
        ("call_tool", r#"{"name":7}"#),
        ("call_tool", r#"{"name":"add","name":"add"}"#),
        ("call_tool", "[]"),
        ("search_tools", r#"{"query":"add","limit":0}"#),
        ("search_tools", r#"{"query":"add","limit":21}"#),
        ("search_tools", r#"{"query":"add","limit":5.0}"#),
        ("search_tools", r#"{"query":"add","limit":"5"}"#),
        ("search_tools", r#"{"query":"add","limit":null}"#),
        ("search_tools", r#"{"query":"add","limit":-1}"#),
        ("search_tools", r#"{"limit":5}"#),
        ("search_tools", r#"{"query":null}"#),
        ("search_tools", r#"{"query":"add","sort":"name"}"#),
        ("search_tools", r#"{"query":"a","query":"b"}"#),
        ("get_tool_details", r#"{}"#),
        ("get_tool_details", r#"{"name":"add","verbose":true}"#),
        ("get_tool_details", r#"{"name":["add"]}"#),
    ];
    for (tool, arguments) in cases {
        let err = call_text(&reg, tool, arguments).unwrap_err();
        assert_eq!(err.code(), -32602, "{tool} {arguments}: {err:?}");
        assert!(
            matches!(err, CoreError::InvalidParams { .. }),
            "{tool} {arguments}: {err:?}"
        );
    }
}

#[test]
fn o12_search_defaults_to_five_and_caps_at_twenty() {
    let mut builder = RegistryBuilder::new();
    for i in 0..25 {
        builder = builder.tool(dynamic(&format!("report_{i:02}"), None, vec![]));
    }
    let reg = builder.build().unwrap();
    let body: Value =
        serde_json::from_str(&call_text(&reg, "search_tools", r#"{"query":"report"}"#).unwrap())
            .unwrap();
    let structured = &body["structuredContent"];
    assert_eq!(structured["tools"].as_array().unwrap().len(), 5);
    assert_eq!(structured["truncated"], json!(true));
    assert_eq!(structured["tools"][0], json!({"name":"report_00"}));
    let body: Value = serde_json::from_str(
        &call_text(&reg, "search_tools", r#"{"query":"report","limit":20}"#).unwrap(),
    )
    .unwrap();
    assert_eq!(
        body["structuredContent"]["tools"].as_array().unwrap().len(),
        20
    );
    assert_eq!(body["structuredContent"]["truncated"], json!(true));
    assert!(body.get("isError").is_none());
}

#[test]
fn o12_search_sees_only_visible_tools_and_runs_no_handler() {
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&runs);
    let counted = ToolDef::dynamic(
        "multiply_counted",
        r#"{"type":"object"}"#,
        None,
        move |_inv: Invocation, _args: Box<RawValue>| {
            counter.fetch_add(1, Ordering::SeqCst);
            async move { Ok(DynamicOutput::default()) }
        },
    )
    .description("Multiplies.");
    let reg = RegistryBuilder::new()
        .tool(counted)
        .tool(
            ToolDef::typed("secret", |_inv: Invocation, i: AddIn| async move {
                Ok(AddOut { sum: i.a * i.b })
            })
            .description("Multiplies secretly."),
        )
        .policy(HideSecret)
        .build()
        .unwrap();
    let text = call_text(&reg, "search_tools", r#"{"query":"multiplies"}"#).unwrap();
    assert_eq!(
        text,
        concat!(
            r#"{"content":[{"text":"{\"tools\":[{\"name\":\"multiply_counted\",\"description\":\"Multiplies.\"}],\"truncated\":false}","type":"text"}],"#,
            r#""structuredContent":{"tools":[{"name":"multiply_counted","description":"Multiplies."}],"truncated":false}}"#
        )
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[test]
fn o13_get_tool_details_returns_the_definition() {
    let reg = registry();
    let body: Value =
        serde_json::from_str(&call_text(&reg, "get_tool_details", r#"{"name":"add"}"#).unwrap())
            .unwrap();
    let tool = &body["structuredContent"]["tool"];
    let keys: Vec<&String> = tool.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        // serde_json maps list keys in sorted order.
        vec![
            "description",
            "inputSchema",
            "name",
            "outputSchema",
            "title"
        ]
    );
    assert_eq!(tool["name"], json!("add"));
    assert_eq!(tool["title"], json!("Add"));
    assert_eq!(tool["description"], json!("Adds two integers."));
    assert_eq!(tool["inputSchema"]["required"], json!(["a", "b"]));
    assert_eq!(tool["outputSchema"]["required"], json!(["sum"]));
    // The result matches the published output schema of get_tool_details.
    let list = Publication::new(Mode::Compact)
        .list_tools(&reg, &Caller::new("alice"), None)
        .unwrap();
    let schema =
        strict_mcp::core::schema::CompiledSchema::compile_value(&list["tools"][1]["outputSchema"])
            .unwrap();
    schema.validate_value(&body["structuredContent"]).unwrap();
    // Unknown and hidden names are the same typed failure, which the schema also admits.
    let unknown = call_text(&reg, "get_tool_details", r#"{"name":"nope"}"#).unwrap();
    let hidden = call_text(&reg, "get_tool_details", r#"{"name":"secret"}"#).unwrap();
    assert_eq!(unknown, unavailable_text());
    assert_eq!(hidden, unknown);
    let failure: Value = serde_json::from_str(&unknown).unwrap();
    schema
        .validate_value(&failure["structuredContent"])
        .unwrap();
}

#[test]
fn o51_discovery_tools_refuse_continuations() {
    let reg = registry();
    let publication = Publication::new(Mode::Compact);
    for (name, arguments) in [
        ("search_tools", r#"{"query":"add"}"#),
        ("get_tool_details", r#"{"name":"add"}"#),
    ] {
        for extra in [r#""inputResponses":{}"#, r#""requestState":"abc""#] {
            let p = raw(&format!(
                r#"{{"name":"{name}","arguments":{arguments},"_meta":{{}},{extra}}}"#
            ));
            let err = ready(publication.call_tool_text(&reg, alice(), &p)).unwrap_err();
            assert_eq!(err.code(), -32602, "{name} {extra}");
        }
    }
}

#[derive(Deserialize, JsonSchema)]
struct DeleteIn {
    /// What to delete.
    item: String,
}

#[derive(Serialize, JsonSchema)]
struct Deleted {
    /// What was deleted.
    deleted: String,
}

fn confirm_registry() -> Registry {
    let tool = ToolDef::typed_interactive("delete", |i: Invocation, d: DeleteIn| async move {
        if i.input_response("confirm").is_some() {
            return Ok(Outcome::Complete(Deleted { deleted: d.item }));
        }
        let ask = i.elicit_form(
            "Really delete?",
            json!({"type":"object","properties":{"ok":{"type":"boolean"}}}),
        )?;
        Ok(Outcome::input("confirm", ask))
    });
    RegistryBuilder::new().tool(tool).build().unwrap()
}

#[test]
fn mrtr_call_tool_passes_input_required_through_and_continues() {
    let reg = confirm_registry();
    let publication = Publication::new(Mode::Compact);
    let caps = ClientCapabilities::from_value(json!({"elicitation": {}}));
    let first = ready(publication.call_tool(
        &reg,
        alice().with_capabilities(caps.clone()),
        &params("call_tool", &inner("delete", r#"{"item":"x"}"#)),
    ))
    .unwrap();
    let CallOutcome::InputRequired { requests } = first else {
        panic!("expected input_required, got {first:?}");
    };
    assert_eq!(requests.keys().collect::<Vec<_>>(), vec!["confirm"]);
    assert_eq!(requests["confirm"].method(), "elicitation/create");
    // The retry carries the outer inputResponses; publication hands them to the invocation.
    let retry = raw(concat!(
        r#"{"name":"call_tool","arguments":{"name":"delete","arguments":{"item":"x"}},"#,
        r#""_meta":{},"inputResponses":{"confirm":{"action":"accept","content":{"ok":true}}},"#,
        r#""requestState":"sealed"}"#
    ));
    let done =
        ready(publication.call_tool_text(&reg, alice().with_capabilities(caps), &retry)).unwrap();
    let TextOutcome::Complete(text) = done else {
        panic!("expected a complete result");
    };
    assert_eq!(
        text,
        r#"{"content":[{"text":"{\"value\":{\"deleted\":\"x\"}}","type":"text"}],"structuredContent":{"value":{"deleted":"x"}}}"#
    );
}

#[test]
fn failure_result_builds_a_complete_body() {
    let publication = Publication::new(Mode::Compact);
    let map = publication.failure_result(FailureCode::ResultTooLarge, "The result is too large.");
    let expected = concat!(
        r#"{"content":[{"text":"{\"failure\":{\"code\":\"result_too_large\","#,
        r#"\"message\":\"The result is too large.\",\"retryable\":false}}","type":"text"}],"#,
        r#""isError":true,"structuredContent":{"failure":{"code":"result_too_large","#,
        r#""message":"The result is too large.","retryable":false}}}"#
    );
    assert_eq!(
        Value::Object(map),
        serde_json::from_str::<Value>(expected).unwrap()
    );
    let internal = publication.failure_result(FailureCode::Internal, "Try again.");
    assert_eq!(
        internal["structuredContent"]["failure"]["retryable"],
        json!(true)
    );
}

#[test]
fn o15_ordered_content_is_kept_and_followed_by_the_envelope_copy() {
    let reg = RegistryBuilder::new()
        .tool(dynamic(
            "report",
            Some(r#"{"rows":2}"#),
            vec![
                ContentBlock::text("first"),
                ContentBlock::text("second"),
                // Not a bare copy of the structured JSON (it differs by a space): kept.
                ContentBlock::text(r#"{"rows": 2}"#),
            ],
        ))
        .build()
        .unwrap();
    assert_eq!(
        call_text(&reg, "call_tool", &inner("report", "{}")).unwrap(),
        concat!(
            r#"{"content":[{"text":"first","type":"text"},{"text":"second","type":"text"},"#,
            r#"{"text":"{\"rows\": 2}","type":"text"},"#,
            r#"{"text":"{\"value\":{\"rows\":2}}","type":"text"}],"#,
            r#""structuredContent":{"value":{"rows":2}}}"#
        )
    );
}

#[test]
fn o13_inner_arguments_reach_the_tool_byte_exact() {
    let echo = ToolDef::dynamic(
        "echo",
        r#"{"type":"object","properties":{"n":{"type":"number"}}}"#,
        None,
        |_inv: Invocation, args: Box<RawValue>| async move {
            Ok(DynamicOutput {
                content: vec![],
                structured: Some(args),
            })
        },
    );
    let reg = RegistryBuilder::new().tool(echo).build().unwrap();
    let text = call_text(
        &reg,
        "call_tool",
        r#"{"name":"echo","arguments":{"n":1.000000000000000000001, "big":98765432109876543210987}}"#,
    )
    .unwrap();
    assert!(
        text.ends_with(
            r#""structuredContent":{"value":{"n":1.000000000000000000001, "big":98765432109876543210987}}}"#
        ),
        "{text}"
    );
}

#[test]
fn o13_duplicate_outer_members_are_invalid_params() {
    let reg = registry();
    let publication = Publication::new(Mode::Compact);
    let p = raw(r#"{"name":"call_tool","name":"search_tools","arguments":{},"_meta":{}}"#);
    let err = ready(publication.call_tool_text(&reg, alice(), &p)).unwrap_err();
    assert!(matches!(err, CoreError::InvalidParams { .. }), "{err:?}");
    let p = raw(r#"{"arguments":{},"_meta":{}}"#);
    let err = ready(publication.call_tool_text(&reg, alice(), &p)).unwrap_err();
    assert_eq!(
        err,
        CoreError::InvalidParams {
            message: "`name` is required".to_owned()
        }
    );
}
