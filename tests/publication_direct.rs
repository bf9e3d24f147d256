//! Direct publication (O19–O29): native tools, paging with caller-bound cursors, hidden
//! equals unknown, hints, the `{value}` / `{failure}` output union and its bundling, lazy
//! immutable wrapper plans, content variants.

use std::sync::Arc;

use futures_util::FutureExt as _;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{json, Map, Number, Value};
use strict_mcp::core::descriptor::{
    Annotations, AudioContent, ContentBlock, EmbeddedResource, Resource, ResourceContents, Role,
    TextContent, TextResourceContents, ToolAnnotations,
};
use strict_mcp::core::schema::CompiledSchema;
use strict_mcp::core::{
    Access, Caller, ClientCapabilities, CoreError, CursorKey, DynamicOutput, FailureCode,
    Invocation, Outcome, Policy, Registry, RegistryBuilder, ToolDef, ToolFailure,
};
use strict_mcp::server::publication::{CallOutcome, Mode, Publication, TextOutcome};

fn raw(s: &str) -> Box<RawValue> {
    RawValue::from_string(s.to_owned()).unwrap()
}

fn alice() -> Caller {
    Caller::new("alice")
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

fn add(name: &str) -> ToolDef {
    ToolDef::typed(name, |_inv: Invocation, i: AddIn| async move {
        if i.a < 0 {
            return Err(ToolFailure::new(FailureCode::InvalidArguments, "a is negative").into());
        }
        Ok(AddOut { sum: i.a + i.b })
    })
    .description("Adds two integers.")
}

fn dynamic(name: &str, output: Option<&str>, structured: Option<&'static str>) -> ToolDef {
    ToolDef::dynamic(
        name,
        r#"{"type":"object"}"#,
        output,
        move |_inv: Invocation, _args: Box<RawValue>| async move {
            Ok(DynamicOutput {
                content: vec![],
                structured: structured.map(raw),
            })
        },
    )
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

fn call(
    publication: &Publication,
    reg: &Registry,
    name: &str,
    arguments: &str,
) -> Result<String, CoreError> {
    let params = raw(&format!(
        r#"{{"name":"{name}","arguments":{arguments},"_meta":{{}}}}"#
    ));
    match ready(publication.call_tool_text(reg, Invocation::new(alice()), &params))? {
        TextOutcome::Complete(text) => Ok(text),
        TextOutcome::InputRequired { .. } => panic!("unexpected input_required"),
    }
}

fn forty_five() -> Registry {
    let mut builder = RegistryBuilder::new().cursor_key(CursorKey::new([7; 32]));
    for i in 0..45 {
        builder = builder.tool(add(&format!("tool_{i:02}")));
    }
    builder.build().unwrap()
}

fn names(page: &Map<String, Value>) -> Vec<String> {
    page["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn o21_direct_pages_of_twenty_with_caller_bound_cursors() {
    let reg = forty_five();
    let publication = Publication::new(Mode::Direct);
    let first = publication.list_tools(&reg, &alice(), None).unwrap();
    assert_eq!(names(&first).len(), 20);
    assert_eq!(names(&first)[0], "tool_00");
    assert_eq!(names(&first)[19], "tool_19");
    let c1 = first["nextCursor"].as_str().unwrap().to_owned();
    let second = publication.list_tools(&reg, &alice(), Some(&c1)).unwrap();
    assert_eq!(names(&second).len(), 20);
    assert_eq!(names(&second)[0], "tool_20");
    let c2 = second["nextCursor"].as_str().unwrap().to_owned();
    let third = publication.list_tools(&reg, &alice(), Some(&c2)).unwrap();
    assert_eq!(
        names(&third),
        vec!["tool_40", "tool_41", "tool_42", "tool_43", "tool_44"]
    );
    assert!(third.get("nextCursor").is_none());
    assert_eq!(third.keys().collect::<Vec<_>>(), vec!["tools"]);

    // A tampered cursor, a cursor of another caller and garbage are all -32602.
    let mut bytes = c1.clone().into_bytes();
    bytes[3] = if bytes[3] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(bytes).unwrap();
    for (caller, cursor) in [
        (alice(), tampered.as_str()),
        (Caller::new("bob"), c1.as_str()),
        (alice(), "not-a-cursor"),
    ] {
        let err = publication
            .list_tools(&reg, &caller, Some(cursor))
            .unwrap_err();
        assert_eq!(err, CoreError::InvalidCursor);
        assert_eq!(err.code(), -32602);
    }
}

#[test]
fn o27_o28_wrapper_plans_are_built_lazily_once_and_shared() {
    let reg = forty_five();
    let publication = Publication::new(Mode::Direct);
    assert_eq!(publication.plans_built(), 0);
    let first = publication.list_tools(&reg, &alice(), None).unwrap();
    assert_eq!(publication.plans_built(), 20);
    // Listing again, or for another caller, builds nothing new.
    publication.list_tools(&reg, &alice(), None).unwrap();
    publication
        .list_tools(&reg, &Caller::new("bob"), None)
        .unwrap();
    assert_eq!(publication.plans_built(), 20);
    // A call of a tool not yet listed builds its plan once.
    call(&publication, &reg, "tool_30", r#"{"a":1,"b":2}"#).unwrap();
    assert_eq!(publication.plans_built(), 21);
    call(&publication, &reg, "tool_30", r#"{"a":1,"b":2}"#).unwrap();
    assert_eq!(publication.plans_built(), 21);
    // The same immutable plan every time.
    let a = publication.plan(&reg, &alice(), "tool_30").unwrap();
    let b = publication
        .plan(&reg, &Caller::new("bob"), "tool_30")
        .unwrap();
    assert!(Arc::ptr_eq(&a, &b));
    assert_eq!(
        serde_json::from_str::<Value>(a.definition().get()).unwrap(),
        serde_json::from_str::<Value>(
            &serde_json::to_string(
                &publication
                    .list_tools(&reg, &alice(), Some(first["nextCursor"].as_str().unwrap()))
                    .unwrap()["tools"][10]
            )
            .unwrap()
        )
        .unwrap()
    );
    // A separate publication over the same registry keeps its own cache (O24, O28).
    let other = Publication::new(Mode::Direct);
    assert_eq!(other.plans_built(), 0);
    let c = other.plan(&reg, &alice(), "tool_30").unwrap();
    assert!(!Arc::ptr_eq(&a, &c));
    assert_eq!(other.plans_built(), 1);
}

#[test]
fn o23_o28_hidden_and_unknown_are_identical_and_never_planned() {
    let with_secret = RegistryBuilder::new()
        .tool(add("secret"))
        .tool(add("open"))
        .policy(HideSecret)
        .build()
        .unwrap();
    let without = RegistryBuilder::new().tool(add("open")).build().unwrap();
    let publication = Publication::new(Mode::Direct);
    let hidden = call(&publication, &with_secret, "secret", r#"{"a":1,"b":2}"#).unwrap_err();
    let unknown = call(&publication, &without, "secret", r#"{"a":1,"b":2}"#).unwrap_err();
    assert_eq!(hidden, unknown);
    assert_eq!(hidden.code(), -32602);
    assert_eq!(
        serde_json::to_vec(&hidden.to_error_object()).unwrap(),
        serde_json::to_vec(&unknown.to_error_object()).unwrap()
    );
    assert_eq!(
        names(
            &publication
                .list_tools(&with_secret, &alice(), None)
                .unwrap()
        ),
        vec!["open"]
    );
    // Only `open` got a plan: the hidden tool was never prepared.
    assert_eq!(publication.plans_built(), 1);
    assert_eq!(
        publication
            .plan(&with_secret, &alice(), "secret")
            .unwrap_err(),
        unknown
    );
    assert_eq!(publication.plans_built(), 1);
}

#[test]
fn o23_list_only_tools_are_listed_but_fail_as_unavailable() {
    let reg = RegistryBuilder::new()
        .tool(add("listed_only"))
        .policy(HideSecret)
        .build()
        .unwrap();
    let publication = Publication::new(Mode::Direct);
    assert_eq!(
        names(&publication.list_tools(&reg, &alice(), None).unwrap()),
        vec!["listed_only"]
    );
    let text = call(&publication, &reg, "listed_only", r#"{"a":1,"b":2}"#).unwrap();
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["isError"], json!(true));
    assert_eq!(
        body["structuredContent"]["failure"]["code"],
        json!("unavailable_tool")
    );
}

#[test]
fn o22_definitions_keep_docs_metadata_and_explicit_false_hints() {
    let mut meta = Map::new();
    meta.insert("example/owner".to_owned(), json!("team-a"));
    let hinted = add("hinted")
        .title("Hinted")
        .annotations(ToolAnnotations {
            read_only_hint: Some(false),
            idempotent_hint: Some(true),
            ..Default::default()
        })
        .meta(meta);
    let reg = RegistryBuilder::new()
        .tool(hinted)
        .tool(dynamic("plain", None, None))
        .build()
        .unwrap();
    let publication = Publication::new(Mode::Direct);
    let text = publication.list_tools_text(&reg, &alice(), None).unwrap();
    let hinted_def = publication.plan(&reg, &alice(), "hinted").unwrap();
    let def: Value = serde_json::from_str(hinted_def.definition().get()).unwrap();
    assert_eq!(def["title"], json!("Hinted"));
    assert_eq!(def["description"], json!("Adds two integers."));
    assert_eq!(
        def["annotations"],
        json!({"readOnlyHint": false, "idempotentHint": true})
    );
    assert_eq!(def["_meta"], json!({"example/owner": "team-a"}));
    assert_eq!(def["inputSchema"]["required"], json!(["a", "b"]));
    assert!(text.contains(r#""annotations":{"idempotentHint":true,"readOnlyHint":false}"#));
    // A tool without hints or output schema publishes neither (O22, O26).
    assert!(
        text.contains(r#"{"inputSchema":{"type":"object"},"name":"plain"}"#),
        "{text}"
    );
}

#[test]
fn o24_compact_names_are_ordinary_direct_tools() {
    let reg = RegistryBuilder::new()
        .tool(add("search_tools"))
        .build()
        .unwrap();
    let publication = Publication::new(Mode::Direct);
    assert_eq!(publication.mode(), Mode::Direct);
    assert_eq!(
        names(&publication.list_tools(&reg, &alice(), None).unwrap()),
        vec!["search_tools"]
    );
    assert_eq!(
        call(&publication, &reg, "search_tools", r#"{"a":1,"b":2}"#).unwrap(),
        r#"{"content":[{"text":"{\"value\":{\"sum\":3}}","type":"text"}],"structuredContent":{"value":{"sum":3}}}"#
    );
    // `call_tool` is not a direct tool unless registered.
    assert_eq!(
        call(
            &publication,
            &reg,
            "call_tool",
            r#"{"name":"search_tools"}"#
        )
        .unwrap_err(),
        CoreError::UnknownTool {
            name: "call_tool".to_owned()
        }
    );
}

fn published_output(reg: &Registry, name: &str) -> (Value, CompiledSchema) {
    let publication = Publication::new(Mode::Direct);
    let plan = publication.plan(reg, &alice(), name).unwrap();
    let def: Value = serde_json::from_str(plan.definition().get()).unwrap();
    let schema = CompiledSchema::compile_value(&def["outputSchema"]).unwrap();
    (def, schema)
}

#[test]
fn o25_output_schema_is_the_value_failure_union() {
    let reg = RegistryBuilder::new().tool(add("add")).build().unwrap();
    let (def, schema) = published_output(&reg, "add");
    let out = &def["outputSchema"];
    assert_eq!(out["type"], json!("object"));
    assert_eq!(out["oneOf"].as_array().unwrap().len(), 2);
    assert_eq!(
        out["oneOf"][0]["properties"]["value"],
        json!({"$ref": "#/$defs/value"})
    );
    assert_eq!(out["oneOf"][1], json!({"$ref": "#/$defs/failure"}));
    // The application schema is bundled once, with an identifier added for its own scope.
    assert_eq!(
        out["$defs"]["value"]["$id"],
        json!("urn:strict-mcp:output:add")
    );
    assert_eq!(out["$defs"]["value"]["required"], json!(["sum"]));
    assert!(schema.validate_value(&json!({"value": {"sum": 3}})).is_ok());
    assert!(schema
        .validate_value(&json!({"value": {"sum": "3"}}))
        .is_err());
    assert!(schema.validate_value(&json!({"value": {}})).is_err());
    assert!(schema
        .validate_value(
            &json!({"failure": {"code": "internal", "message": "m", "retryable": true}})
        )
        .is_ok());
    // Application codes are admitted (snake_case); anything else is not a code.
    assert!(schema
        .validate_value(&json!({"failure": {"code": "nope", "message": "m", "retryable": true}}))
        .is_ok());
    assert!(schema
        .validate_value(&json!({"failure": {"code": "No pe", "message": "m", "retryable": true}}))
        .is_err());
    assert!(schema
        .validate_value(
            &json!({"failure": {"code": "internal", "message": "m", "retryable": true,
            "diagnostics": [{"pointer": "/a", "keyword": "type", "message": "m", "extra": 1}]}})
        )
        .is_err());
    assert!(schema.validate_value(&json!({})).is_err());
    assert!(schema
        .validate_value(&json!({"value": {"sum": 3}, "failure": {"code": "internal", "message": "m", "retryable": true}}))
        .is_err());
}

#[test]
fn o26_bundling_keeps_references_identifiers_and_dialects() {
    let local_refs = r##"{"type":"object","$defs":{"n":{"type":"integer"}},"properties":{"n":{"$ref":"#/$defs/n"}},"required":["n"]}"##;
    let with_ids = r#"{"$id":"https://example.com/out.json","type":"object","properties":{"item":{"$ref":"item.json"}},"required":["item"],"$defs":{"item":{"$id":"item.json","type":"string","minLength":2}}}"#;
    let draft7 = r##"{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","definitions":{"flag":{"type":"boolean"}},"properties":{"flag":{"$ref":"#/definitions/flag"}},"required":["flag"]}"##;
    let dynamic_anchor = r##"{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$dynamicAnchor":"node","properties":{"child":{"$dynamicRef":"#node"},"leaf":{"type":"boolean"}},"additionalProperties":false}"##;
    let boolean_parts = r#"{"type":"object","properties":{"anything":true,"nothing":false}}"#;
    let draft7_root_ref = r##"{"$schema":"http://json-schema.org/draft-07/schema#","$ref":"#/definitions/Foo","definitions":{"Foo":{"type":"object","properties":{"x":{"$ref":"#/definitions/Int"}},"required":["x"]},"Int":{"type":"integer"}}}"##;
    let reg = RegistryBuilder::new()
        .tool(dynamic("local_refs", Some(local_refs), Some(r#"{"n":1}"#)))
        .tool(dynamic(
            "with_ids",
            Some(with_ids),
            Some(r#"{"item":"ab"}"#),
        ))
        .tool(dynamic("draft7", Some(draft7), Some(r#"{"flag":true}"#)))
        .tool(dynamic(
            "dyn",
            Some(dynamic_anchor),
            Some(r#"{"leaf":true}"#),
        ))
        .tool(dynamic("booleans", Some(boolean_parts), Some(r#"{}"#)))
        .tool(dynamic(
            "root_ref",
            Some(draft7_root_ref),
            Some(r#"{"x":1}"#),
        ))
        .build()
        .unwrap();
    let cases: &[(&str, Value, Value)] = &[
        ("local_refs", json!({"n": 1}), json!({"n": "1"})),
        ("with_ids", json!({"item": "ab"}), json!({"item": "a"})),
        ("draft7", json!({"flag": true}), json!({"flag": 1})),
        (
            "dyn",
            json!({"child": {"child": {"leaf": true}}}),
            json!({"child": {"child": {"leaf": 1}}}),
        ),
        ("booleans", json!({"anything": [1]}), json!({"nothing": 1})),
        ("root_ref", json!({"x": 1}), json!({"x": "1"})),
    ];
    for (name, good, bad) in cases {
        let (def, schema) = published_output(&reg, name);
        assert!(
            schema.validate_value(&json!({ "value": good })).is_ok(),
            "{name}: {def}"
        );
        assert!(
            schema.validate_value(&json!({ "value": bad })).is_err(),
            "{name}: {def}"
        );
    }
    // The draft-07 wrapper is written in draft-07 and keeps the schema's own identifiers.
    let (draft7_def, _) = published_output(&reg, "draft7");
    assert_eq!(
        draft7_def["outputSchema"]["$schema"],
        json!("http://json-schema.org/draft-07/schema#")
    );
    assert!(draft7_def["outputSchema"]["definitions"]["value"].is_object());
    let (ids_def, _) = published_output(&reg, "with_ids");
    assert_eq!(
        ids_def["outputSchema"]["$defs"]["value"]["$id"],
        json!("https://example.com/out.json")
    );
}

#[test]
fn o29_published_schema_constants_keep_their_exact_text() {
    let output = r#"{"type":"object","properties":{"n":{"const":123456789012345678901234567890},"x":{"maximum":1.50}}}"#;
    let reg = RegistryBuilder::new()
        .tool(dynamic("exact", Some(output), Some(r#"{"x":1}"#)))
        .build()
        .unwrap();
    let publication = Publication::new(Mode::Direct);
    let text = publication.list_tools_text(&reg, &alice(), None).unwrap();
    assert!(
        text.contains(r#""n":{"const":123456789012345678901234567890},"x":{"maximum":1.50}"#),
        "{text}"
    );
}

#[test]
fn o14_o17_direct_calls_use_the_same_envelopes() {
    let reg = RegistryBuilder::new()
        .tool(add("add"))
        .tool(dynamic("nothing", None, None))
        .tool(dynamic("null_out", None, Some("null")))
        .build()
        .unwrap();
    let publication = Publication::new(Mode::Direct);
    assert_eq!(
        call(&publication, &reg, "add", r#"{"a":2,"b":40}"#).unwrap(),
        r#"{"content":[{"text":"{\"value\":{\"sum\":42}}","type":"text"}],"structuredContent":{"value":{"sum":42}}}"#
    );
    assert_eq!(
        call(&publication, &reg, "add", r#"{"a":-1,"b":40}"#).unwrap(),
        concat!(
            r#"{"content":[{"text":"{\"failure\":{\"code\":\"invalid_arguments\","#,
            r#"\"message\":\"a is negative\",\"retryable\":false}}","type":"text"}],"#,
            r#""isError":true,"structuredContent":{"failure":{"code":"invalid_arguments","message":"a is negative","#,
            r#""retryable":false}}}"#
        )
    );
    assert_eq!(
        call(&publication, &reg, "nothing", "{}").unwrap(),
        r#"{"content":[]}"#
    );
    assert_eq!(
        call(&publication, &reg, "null_out", "{}").unwrap(),
        r#"{"content":[{"text":"{\"value\":null}","type":"text"}],"structuredContent":{"value":null}}"#
    );
    // Schema-invalid arguments of a known tool: a failure with diagnostics, which the
    // published union admits (O25).
    let text = call(&publication, &reg, "add", r#"{"a":1}"#).unwrap();
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["isError"], json!(true));
    let failure = &body["structuredContent"]["failure"];
    assert_eq!(failure["code"], json!("invalid_arguments"));
    assert_eq!(failure["diagnostics"][0]["keyword"], json!("required"));
    let (_, schema) = published_output(&reg, "add");
    schema.validate_value(&body["structuredContent"]).unwrap();
    // Arguments that are not an object are a malformed request.
    assert_eq!(
        call(&publication, &reg, "add", "[1,2]").unwrap_err().code(),
        -32602
    );
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

#[test]
fn mrtr_direct_calls_pass_input_required_through() {
    let tool = ToolDef::typed_interactive("delete", |i: Invocation, d: DeleteIn| async move {
        if let Some(answer) = i.input_response("confirm") {
            return Ok(Outcome::Complete(Deleted {
                deleted: format!("{} {}", d.item, answer.get()),
            }));
        }
        let ask = i.elicit_form(
            "Really delete?",
            json!({"type":"object","properties":{"ok":{"type":"boolean"}}}),
        )?;
        Ok(Outcome::input("confirm", ask))
    });
    let reg = RegistryBuilder::new().tool(tool).build().unwrap();
    let publication = Publication::new(Mode::Direct);
    let caps = ClientCapabilities::from_value(json!({"elicitation": {}}));
    let inv = Invocation::new(alice()).with_capabilities(caps.clone());
    let first = ready(publication.call_tool(
        &reg,
        inv,
        &raw(r#"{"name":"delete","arguments":{"item":"x"},"_meta":{}}"#),
    ))
    .unwrap();
    let CallOutcome::InputRequired { requests } = first else {
        panic!("expected input_required, got {first:?}");
    };
    assert_eq!(requests["confirm"].method(), "elicitation/create");
    let retry = raw(concat!(
        r#"{"name":"delete","arguments":{"item":"x"},"_meta":{},"#,
        r#""inputResponses":{"confirm":{"action":"accept"}},"requestState":"s"}"#
    ));
    let inv = Invocation::new(alice()).with_capabilities(caps);
    let CallOutcome::Complete(done) = ready(publication.call_tool(&reg, inv, &retry)).unwrap()
    else {
        panic!("expected a complete result");
    };
    assert_eq!(
        done["structuredContent"],
        json!({"value": {"deleted": "x {\"action\":\"accept\"}"}})
    );
}

#[test]
fn o19_o20_six_content_variants_keep_field_presence() {
    let zero = Annotations {
        audience: Some(vec![Role::User].into()),
        priority: Some(Number::from(0)),
        ..Default::default()
    };
    let mut inner_meta = Map::new();
    inner_meta.insert("side".to_owned(), json!("resource"));
    let mut block_meta = Map::new();
    block_meta.insert("side".to_owned(), json!("block"));
    let mut link = Resource::new("file:///a.txt", "a.txt");
    link.annotations = Some(zero.clone());
    link.meta = Some(block_meta.clone().into());
    let blocks = vec![
        ContentBlock::TextContent(TextContent {
            annotations: Some(zero.clone()),
            ..TextContent::new("")
        }),
        ContentBlock::image("", "image/png"),
        ContentBlock::AudioContent(AudioContent {
            meta: Some(block_meta.clone().into()),
            ..AudioContent::new("AA==", "audio/wav")
        }),
        ContentBlock::resource_link(link),
        ContentBlock::EmbeddedResource(EmbeddedResource {
            meta: Some(block_meta.into()),
            ..EmbeddedResource::new(ResourceContents::TextResourceContents(
                TextResourceContents {
                    meta: Some(inner_meta.into()),
                    ..TextResourceContents::new("mem://t", "")
                },
            ))
        }),
        ContentBlock::EmbeddedResource(EmbeddedResource {
            annotations: Some(zero),
            ..EmbeddedResource::new(
                ResourceContents::blob("mem://b", b"").with_mime_type("application/octet-stream"),
            )
        }),
    ];
    let tool = ToolDef::dynamic(
        "variants",
        r#"{"type":"object"}"#,
        None,
        move |_inv: Invocation, _args: Box<RawValue>| {
            let content = blocks.clone();
            async move {
                Ok(DynamicOutput {
                    content,
                    structured: None,
                })
            }
        },
    );
    let reg = RegistryBuilder::new().tool(tool).build().unwrap();
    let expected = concat!(
        r#"{"content":["#,
        r#"{"annotations":{"audience":["user"],"priority":0},"text":"","type":"text"},"#,
        r#"{"data":"","mimeType":"image/png","type":"image"},"#,
        r#"{"data":"AA==","_meta":{"side":"block"},"mimeType":"audio/wav","type":"audio"},"#,
        r#"{"annotations":{"audience":["user"],"priority":0},"_meta":{"side":"block"},"name":"a.txt","type":"resource_link","uri":"file:///a.txt"},"#,
        r#"{"_meta":{"side":"block"},"resource":{"_meta":{"side":"resource"},"text":"","uri":"mem://t"},"type":"resource"},"#,
        r#"{"annotations":{"audience":["user"],"priority":0},"resource":{"blob":"","mimeType":"application/octet-stream","uri":"mem://b"},"type":"resource"}"#,
        r#"]}"#
    );
    for mode in [Mode::Direct, Mode::Compact] {
        let publication = Publication::new(mode);
        let (name, arguments) = match mode {
            Mode::Direct => ("variants", "{}"),
            Mode::Compact => ("call_tool", r#"{"name":"variants"}"#),
        };
        assert_eq!(
            call(&publication, &reg, name, arguments).unwrap(),
            expected,
            "{mode:?}"
        );
    }
}

#[test]
fn o28_publication_is_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<Publication>();
    let reg = forty_five();
    let publication = Arc::new(Publication::new(Mode::Direct));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let publication = Arc::clone(&publication);
            let reg = reg.clone();
            std::thread::spawn(move || publication.plan(&reg, &alice(), "tool_07").unwrap())
        })
        .collect();
    let plans: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert!(plans.iter().all(|p| Arc::ptr_eq(p, &plans[0])));
    assert_eq!(publication.plans_built(), 1);
}

#[test]
fn o28_a_swapped_registry_with_new_documentation_gets_a_new_plan() {
    let publication = Publication::new(Mode::Direct);
    let old = RegistryBuilder::new().tool(add("add")).build().unwrap();
    let new = RegistryBuilder::new()
        .tool(add("add").description("Adds two integers, now documented better."))
        .build()
        .unwrap();
    assert_eq!(old.digest(), new.digest());
    let before = publication.plan(&old, &alice(), "add").unwrap();
    let after = publication.plan(&new, &alice(), "add").unwrap();
    assert!(!Arc::ptr_eq(&before, &after));
    assert!(after
        .definition()
        .get()
        .contains(r#""description":"Adds two integers, now documented better.""#));
    assert!(before
        .definition()
        .get()
        .contains(r#""description":"Adds two integers.""#));
    assert_eq!(publication.plans_built(), 2);
}

#[test]
fn o22_compact_details_keep_explicit_false_hints() {
    let reg = RegistryBuilder::new()
        .tool(add("hinted").annotations(ToolAnnotations {
            destructive_hint: Some(false),
            ..Default::default()
        }))
        .build()
        .unwrap();
    let publication = Publication::new(Mode::Compact);
    let text = call(
        &publication,
        &reg,
        "get_tool_details",
        r#"{"name":"hinted"}"#,
    )
    .unwrap();
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        body["structuredContent"]["tool"]["annotations"],
        json!({"destructiveHint": false})
    );
    assert!(body["structuredContent"]["tool"].get("title").is_none());
}
