//! Typed and dynamic tools: registration errors, validation exactness, failures, panics,
//! cancellation, recovery (E5, E19, E21, O13, O106–O110, D22).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use serde_json::value::RawValue;
use strict_mcp::core::descriptor::{ContentBlock, ToolAnnotations};
use strict_mcp::core::{
    BuildError, Caller, CancelToken, ClientCapabilities, CoreError, DynamicOutput, FailureCode,
    Invocation, Outcome, Registry, RegistryBuilder, ToolDef, ToolFailure, ToolReply,
};

fn raw(s: &str) -> Box<RawValue> {
    RawValue::from_string(s.to_owned()).unwrap()
}

fn inv() -> Invocation {
    Invocation::new(Caller::new("alice"))
}

#[derive(Deserialize, JsonSchema)]
struct AddIn {
    /// First addend.
    a: i64,
    /// Second addend.
    b: i64,
    /// Optional label.
    label: Option<String>,
}

#[derive(Serialize, JsonSchema)]
struct AddOut {
    /// The sum.
    sum: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    label: Option<String>,
}

fn add_tool() -> strict_mcp::core::ToolDef {
    ToolDef::typed("add", |_inv: Invocation, i: AddIn| async move {
        Ok(AddOut {
            sum: i.a + i.b,
            label: i.label,
        })
    })
    .description("Adds two integers.")
}

/// Echoes the exact argument bytes back as text and structured content.
fn echo_tool(schema: &str) -> strict_mcp::core::ToolDef {
    ToolDef::dynamic(
        "echo",
        schema,
        None,
        |_inv: Invocation, args: Box<RawValue>| async move {
            Ok(DynamicOutput {
                content: vec![ContentBlock::text(args.get())],
                structured: Some(args),
            })
        },
    )
}

async fn call(reg: &Registry, name: &str, args: &str) -> Result<ToolReply, CoreError> {
    reg.call_tool(inv(), name, Some(&raw(args))).await
}

fn failure(reply: ToolReply) -> ToolFailure {
    match reply {
        ToolReply::Failure(f) => f,
        other => panic!("expected failure, got {other:?}"),
    }
}

fn structured(reply: ToolReply) -> String {
    match reply {
        ToolReply::Success { structured, .. } => structured.unwrap().get().to_owned(),
        other => panic!("expected success, got {other:?}"),
    }
}

#[test]
fn o106_o110_typed_schema_shape() {
    let reg = RegistryBuilder::new().tool(add_tool()).build().unwrap();
    let tool = reg.tool(&Caller::anonymous(), "add").unwrap();
    let input: serde_json::Value = serde_json::from_str(tool.input_schema.get()).unwrap();
    assert_eq!(
        input["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(input["type"], "object");
    assert_eq!(input["required"], json!(["a", "b"]));
    assert_eq!(input["properties"]["a"]["description"], "First addend.");
    // Option is optional and does not admit null (omitted when None).
    assert_eq!(input["properties"]["label"]["type"], "string");
    let output: serde_json::Value =
        serde_json::from_str(tool.output_schema.as_ref().unwrap().get()).unwrap();
    assert_eq!(
        output["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(output["required"], json!(["sum"]));
}

#[tokio::test]
async fn o107_typed_call_and_text_fallback() {
    let reg = RegistryBuilder::new().tool(add_tool()).build().unwrap();
    match call(&reg, "add", r#"{"a":2,"b":40}"#).await.unwrap() {
        ToolReply::Success {
            content,
            structured,
        } => {
            assert_eq!(structured.unwrap().get(), r#"{"sum":42}"#);
            assert_eq!(content, vec![ContentBlock::text(r#"{"sum":42}"#)]);
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn o13_invalid_arguments_name_pointer_keyword_and_allowed_keys() {
    let reg = RegistryBuilder::new()
        .tool(echo_tool(
            r#"{"type":"object","properties":{"n":{"type":"integer"},"s":{"type":"string"}},"required":["n"],"additionalProperties":false}"#,
        ))
        .build()
        .unwrap();
    let f = failure(call(&reg, "echo", r#"{"n":"x"}"#).await.unwrap());
    assert_eq!(f.code, FailureCode::InvalidArguments);
    assert!(!f.retryable);
    let d = &f.diagnostics.unwrap()[0];
    assert_eq!(d.pointer, "/n");
    assert_eq!(d.keyword, "type");
    assert_eq!(d.expected.as_deref(), Some("integer"));
    assert_eq!(d.message, "expected integer, found string");

    let f = failure(call(&reg, "echo", r#"{"n":1,"zz":2}"#).await.unwrap());
    let d = &f.diagnostics.unwrap()[0];
    assert_eq!(d.pointer, "");
    assert_eq!(d.keyword, "additionalProperties");
    assert_eq!(d.allowed_keys, Some(vec!["n".to_owned(), "s".to_owned()]));
    assert!(!d.message.contains("line"), "{}", d.message);

    let f = failure(call(&reg, "echo", r#"{}"#).await.unwrap());
    let d = &f.diagnostics.unwrap()[0];
    assert_eq!(d.keyword, "required");
    assert_eq!(d.message, "missing required property \"n\"");
}

#[tokio::test]
async fn o13_exact_numbers_survive_validation() {
    let schema = r#"{"type":"object","properties":{"n":{"type":"integer"},"x":{"type":"number"}}}"#;
    let reg = RegistryBuilder::new()
        .tool(echo_tool(schema))
        .build()
        .unwrap();
    for args in [
        r#"{"n":9007199254740993}"#,                     // 2^53 + 1
        r#"{"n":18446744073709551616}"#,                 // u64::MAX + 1
        r#"{"n":-123456789012345678901234567890}"#,      // far beyond i64
        r#"{"x":1.0}"#,                                  // 1.0 stays 1.0
        r#"{"x":1}"#,                                    // 1 stays 1
        r#"{"x":1E2, "n":1}"#,                           // exponent text unchanged
        r#"{"x":0.1000000000000000055511151231257827}"#, // more digits than f64
    ] {
        let out = structured(call(&reg, "echo", args).await.unwrap());
        assert_eq!(out, args);
    }
    // 1.0 is an integer for JSON Schema: accepted, and the handler still sees "1.0".
    assert_eq!(
        structured(call(&reg, "echo", r#"{"n":1.0}"#).await.unwrap()),
        r#"{"n":1.0}"#
    );
}

#[tokio::test]
async fn o13_no_defaults_inserted() {
    let schema = r#"{"type":"object","properties":{"n":{"type":"integer","default":7}}}"#;
    let reg = RegistryBuilder::new()
        .tool(echo_tool(schema))
        .build()
        .unwrap();
    assert_eq!(structured(call(&reg, "echo", "{}").await.unwrap()), "{}");
}

#[tokio::test]
async fn depth_bound_before_validation() {
    let reg = RegistryBuilder::new()
        .tool(echo_tool(r#"{"type":"object"}"#))
        .build()
        .unwrap();
    let deep = format!("{{\"a\":{}1{}}}", "[".repeat(70), "]".repeat(70));
    let f = failure(call(&reg, "echo", &deep).await.unwrap());
    assert_eq!(f.code, FailureCode::InvalidArguments);
    assert_eq!(f.diagnostics.unwrap()[0].keyword, "depth");
    // 63 levels inside the root object are fine.
    let ok = format!("{{\"a\":{}1{}}}", "[".repeat(63), "]".repeat(63));
    assert_eq!(structured(call(&reg, "echo", &ok).await.unwrap()), ok);
}

#[test]
fn o108_bare_array_output_refused() {
    let err = RegistryBuilder::new()
        .tool(ToolDef::typed(
            "list",
            |_i: Invocation, _a: AddIn| async move { Ok(vec![1_u32]) },
        ))
        .build()
        .unwrap_err();
    assert!(
        matches!(&err, BuildError::UnnamedPayload { tool, .. } if tool == "list"),
        "{err}"
    );
    assert!(err.to_string().contains("bare array"), "{err}");
}

#[derive(Serialize, JsonSchema)]
struct Generic {
    items: Vec<String>,
}

#[test]
fn o108_generic_items_refused() {
    let err = RegistryBuilder::new()
        .tool(ToolDef::typed(
            "gen",
            |_i: Invocation, _a: AddIn| async move { Ok(Generic { items: vec![] }) },
        ))
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "tool `gen`: output must be an object that names its payload: a generic `items` key tells the model nothing; name the collection after its contents (output type `core_tools::Generic`)"
    );
}

#[test]
fn e20_invalid_schema_refused_naming_tool() {
    let err = RegistryBuilder::new()
        .tool(echo_tool(
            r#"{"type":"object","properties":{"n":{"type":"integr"}}}"#,
        ))
        .build()
        .unwrap_err();
    match err {
        BuildError::Schema { kind, name, .. } => {
            assert_eq!(kind, "tool input");
            assert_eq!(name, "echo");
        }
        other => panic!("{other}"),
    }
}

#[test]
fn e5_root_must_be_object() {
    let err = RegistryBuilder::new()
        .tool(echo_tool(r#"{"type":"array"}"#))
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("bare array"), "{err}");
}

#[test]
fn e21_no_network_ref_and_e19_unknown_dialect() {
    let err = RegistryBuilder::new()
        .tool(echo_tool(
            r#"{"type":"object","properties":{"a":{"$ref":"https://example.com/x.json"}}}"#,
        ))
        .build()
        .unwrap_err();
    assert!(matches!(err, BuildError::Schema { .. }), "{err}");
    let err = RegistryBuilder::new()
        .tool(echo_tool(
            r#"{"$schema":"https://example.com/my-dialect","type":"object"}"#,
        ))
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("dialect not supported"), "{err}");
}

#[tokio::test]
async fn dynamic_schema_kept_byte_exact_and_dialects_honoured() {
    let draft7 = r#"{"$schema":"http://json-schema.org/draft-07/schema#", "type":"object","properties":{"a":{"type":"array","items":[{"type":"string"}],"additionalItems":false}}}"#;
    let reg = RegistryBuilder::new()
        .tool(echo_tool(draft7))
        .build()
        .unwrap();
    assert_eq!(
        reg.tool(&Caller::anonymous(), "echo")
            .unwrap()
            .input_schema
            .get(),
        draft7
    );
    // draft-07 tuple semantics: a second item is refused.
    let f = failure(call(&reg, "echo", r#"{"a":["x",1]}"#).await.unwrap());
    assert_eq!(f.diagnostics.unwrap()[0].keyword, "additionalItems");
    assert_eq!(
        structured(call(&reg, "echo", r#"{"a":["x"]}"#).await.unwrap()),
        r#"{"a":["x"]}"#
    );
}

#[tokio::test]
async fn dynamic_boolean_id_relative_ref_and_dynamic_ref() {
    let schema = r##"{
      "$schema":"https://json-schema.org/draft/2020-12/schema",
      "$id":"https://example.com/root.json",
      "type":"object",
      "properties":{
        "any": true,
        "never": false,
        "item": {"$ref":"item.json"},
        "tree": {"$ref":"#/$defs/tree"}
      },
      "$defs":{
        "item":{"$id":"item.json","type":"string"},
        "tree":{"$dynamicAnchor":"node","type":"object","properties":{"kids":{"type":"array","items":{"$dynamicRef":"#node"}}}}
      }
    }"##;
    let reg = RegistryBuilder::new()
        .tool(echo_tool(schema))
        .build()
        .unwrap();
    assert_eq!(
        structured(
            call(
                &reg,
                "echo",
                r#"{"any":[1],"item":"s","tree":{"kids":[{"kids":[]}]}}"#
            )
            .await
            .unwrap()
        ),
        r#"{"any":[1],"item":"s","tree":{"kids":[{"kids":[]}]}}"#
    );
    let f = failure(call(&reg, "echo", r#"{"never":1}"#).await.unwrap());
    assert_eq!(f.diagnostics.unwrap()[0].keyword, "falseSchema");
    let f = failure(call(&reg, "echo", r#"{"item":5}"#).await.unwrap());
    assert_eq!(f.diagnostics.unwrap()[0].pointer, "/item");
    let f = failure(
        call(&reg, "echo", r#"{"tree":{"kids":[{"kids":[3]}]}}"#)
            .await
            .unwrap(),
    );
    assert_eq!(f.diagnostics.unwrap()[0].pointer, "/tree/kids/0/kids/0");
}

#[tokio::test]
async fn o107_dynamic_output_validated() {
    let tool = ToolDef::dynamic(
        "bad",
        r#"{"type":"object"}"#,
        Some(r#"{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}"#),
        |_i: Invocation, _a: Box<RawValue>| async move {
            Ok(DynamicOutput {
                content: vec![],
                structured: Some(raw(r#"{"n":"no"}"#)),
            })
        },
    );
    let reg = RegistryBuilder::new().tool(tool).build().unwrap();
    let f = failure(call(&reg, "bad", "{}").await.unwrap());
    assert_eq!(f.code, FailureCode::InvalidResult);
    assert!(!f.retryable);
}

#[tokio::test]
async fn o109_panicking_handler_is_internal_failure_without_message() {
    let tool = ToolDef::typed("boom", |_i: Invocation, _a: AddIn| async move {
        if true {
            panic!("secret database password");
        }
        Ok(AddOut {
            sum: 0,
            label: None,
        })
    });
    let reg = RegistryBuilder::new().tool(tool).build().unwrap();
    let f = failure(call(&reg, "boom", r#"{"a":1,"b":1}"#).await.unwrap());
    assert_eq!(f, ToolFailure::internal());
    assert_eq!(f.code.as_str(), "internal");
    assert!(f.retryable);
    assert!(!f.message.contains("secret"));
}

#[tokio::test]
async fn o109_handler_failure_is_typed() {
    let tool = ToolDef::typed("fail", |_i: Invocation, _a: AddIn| async move {
        Err::<AddOut, _>(
            ToolFailure::new(FailureCode::Internal, "backend down")
                .retryable(false)
                .into(),
        )
    });
    let reg = RegistryBuilder::new().tool(tool).build().unwrap();
    let f = failure(call(&reg, "fail", r#"{"a":1,"b":1}"#).await.unwrap());
    assert_eq!(
        serde_json::to_string(&f).unwrap(),
        r#"{"code":"internal","message":"backend down","retryable":false}"#
    );
    let result = ToolReply::Failure(f).into_call_result().unwrap();
    assert_eq!(
        serde_json::to_string(&result).unwrap(),
        r#"{"content":[{"text":"{\"failure\":{\"code\":\"internal\",\"message\":\"backend down\",\"retryable\":false}}","type":"text"}],"isError":true,"structuredContent":{"failure":{"code":"internal","message":"backend down","retryable":false}}}"#
    );
}

#[tokio::test]
async fn cancellation_ends_the_call_with_cancelled() {
    let tool = ToolDef::dynamic(
        "wait",
        r#"{"type":"object"}"#,
        None,
        |i: Invocation, _a| async move {
            i.cancel_token().cancelled().await;
            futures_util::future::pending::<()>().await;
            Ok(DynamicOutput::default())
        },
    );
    let reg = RegistryBuilder::new().tool(tool).build().unwrap();
    let token = CancelToken::new();
    let inv = Invocation::new(Caller::anonymous()).with_cancel(token.clone());
    let task = tokio::spawn({
        let reg = reg.clone();
        async move { reg.call_tool(inv, "wait", None).await }
    });
    tokio::task::yield_now().await;
    token.cancel();
    let f = failure(task.await.unwrap().unwrap());
    assert_eq!(f.code, FailureCode::Cancelled);
    assert!(f.retryable);
}

#[tokio::test]
async fn recovery_typed_tools_answer_already_completed_unless_opted_in() {
    let runs = Arc::new(AtomicUsize::new(0));
    let r1 = Arc::clone(&runs);
    let plain = ToolDef::typed("plain", move |_i: Invocation, _a: AddIn| {
        r1.fetch_add(1, Ordering::SeqCst);
        async move {
            Ok(AddOut {
                sum: 1,
                label: None,
            })
        }
    });
    let safe = ToolDef::typed("safe", |i: Invocation, _a: AddIn| async move {
        Ok(AddOut {
            sum: if i.is_recovery() { 2 } else { 1 },
            label: None,
        })
    })
    .recovery_safe();
    let reg = RegistryBuilder::new()
        .tool(plain)
        .tool(safe)
        .build()
        .unwrap();
    let replay = || Invocation::new(Caller::anonymous()).with_recovery(true);
    let args = raw(r#"{"a":1,"b":1}"#);
    let f = failure(reg.call_tool(replay(), "plain", Some(&args)).await.unwrap());
    assert_eq!(f.code, FailureCode::AlreadyCompleted);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(
        structured(reg.call_tool(replay(), "safe", Some(&args)).await.unwrap()),
        r#"{"sum":2}"#
    );
}

#[derive(Deserialize, JsonSchema)]
struct Confirm {
    item: String,
}
#[derive(Serialize, JsonSchema)]
struct Deleted {
    deleted: String,
}

#[tokio::test]
async fn o46_ask_for_input_gated_on_capabilities() {
    let tool = ToolDef::typed_interactive("delete", |i: Invocation, c: Confirm| async move {
        if i.input_response("confirm").is_some() {
            return Ok(Outcome::Complete(Deleted { deleted: c.item }));
        }
        let ask = i.elicit_form(
            "Really delete?",
            json!({"type":"object","properties":{"ok":{"type":"boolean"}}}),
        )?;
        Ok(Outcome::input("confirm", ask))
    });
    let reg = RegistryBuilder::new().tool(tool).build().unwrap();
    let args = raw(r#"{"item":"x"}"#);
    // No elicitation capability: -32021 naming the capability.
    let err = reg
        .call_tool(inv(), "delete", Some(&args))
        .await
        .unwrap_err();
    assert_eq!(err.code(), -32021);
    assert_eq!(
        err.to_error_object().to_string(),
        r#"{"code":-32021,"data":{"requiredCapabilities":{"elicitation":{"form":{}}}},"message":"Missing required client capability"}"#
    );
    // Declared: input_required with the request under its key.
    let caps = ClientCapabilities::from_value(json!({"elicitation": {}}));
    let reply = reg
        .call_tool(inv().with_capabilities(caps.clone()), "delete", Some(&args))
        .await
        .unwrap();
    match reply {
        ToolReply::InputRequired { requests } => {
            assert_eq!(
                serde_json::to_string(&requests).unwrap(),
                r#"{"confirm":{"method":"elicitation/create","params":{"message":"Really delete?","mode":"form","requestedSchema":{"properties":{"ok":{"type":"boolean"}},"type":"object"}}}}"#
            );
        }
        other => panic!("{other:?}"),
    }
    // Retry with the answer completes.
    let mut answers = std::collections::BTreeMap::new();
    answers.insert(
        "confirm".to_owned(),
        raw(r#"{"action":"accept","content":{"ok":true}}"#),
    );
    let retry = inv().with_capabilities(caps).with_input_responses(answers);
    assert_eq!(
        structured(reg.call_tool(retry, "delete", Some(&args)).await.unwrap()),
        r#"{"deleted":"x"}"#
    );
}

#[test]
fn o45_capability_modes() {
    let c = ClientCapabilities::from_value(json!({"elicitation": {"url": {}}}));
    assert!(c.supports(strict_mcp::core::ElicitMode::Url));
    assert!(!c.supports(strict_mcp::core::ElicitMode::Form));
    let c = ClientCapabilities::from_value(
        json!({"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}),
    );
    assert!(
        c.supports(strict_mcp::core::ElicitMode::Url)
            && c.supports(strict_mcp::core::ElicitMode::Form)
    );
    assert!(c.sampling() && c.roots());
    let none = ClientCapabilities::from_value(json!({}));
    let i = Invocation::new(Caller::anonymous()).with_capabilities(none);
    assert_eq!(i.sample(json!({})).unwrap_err().code(), -32021);
    assert_eq!(i.list_roots().unwrap_err().code(), -32021);
    assert_eq!(
        i.elicit_url("go", "https://example.com")
            .unwrap_err()
            .code(),
        -32021
    );
}

#[test]
fn o22_hints_absent_stay_absent_false_stays_present() {
    let reg = RegistryBuilder::new()
        .tool(add_tool().annotations(ToolAnnotations {
            read_only_hint: Some(false),
            ..Default::default()
        }))
        .tool(echo_tool(r#"{"type":"object"}"#))
        .build()
        .unwrap();
    let page = reg.list_tools(&Caller::anonymous(), None).unwrap();
    let tools: serde_json::Value = serde_json::from_str(page.to_result("tools").get()).unwrap();
    assert_eq!(
        tools["tools"][0]["annotations"],
        json!({"readOnlyHint": false})
    );
    assert!(tools["tools"][1].get("annotations").is_none());
}

#[test]
fn e6_invalid_and_duplicate_names() {
    let err = RegistryBuilder::new()
        .tool(echo_tool(r#"{"type":"object"}"#))
        .tool(echo_tool(r#"{"type":"object"}"#))
        .build()
        .unwrap_err();
    assert_eq!(err.to_string(), "duplicate tool `echo`");
    let bad = ToolDef::dynamic(
        "has space",
        r#"{"type":"object"}"#,
        None,
        |_i: Invocation, _a| async move { Ok(DynamicOutput::default()) },
    );
    assert!(matches!(
        RegistryBuilder::new().tool(bad).build().unwrap_err(),
        BuildError::InvalidName { .. }
    ));
}

#[tokio::test]
async fn o109_panic_before_the_future_exists_is_caught_too() {
    let tool = ToolDef::dynamic(
        "sync_boom",
        r#"{"type":"object"}"#,
        None,
        |_i: Invocation, _a: Box<RawValue>| {
            if true {
                panic!("private detail");
            }
            async move { Ok(DynamicOutput::default()) }
        },
    );
    let reg = RegistryBuilder::new().tool(tool).build().unwrap();
    assert_eq!(
        failure(call(&reg, "sync_boom", "{}").await.unwrap()),
        ToolFailure::internal()
    );
}

#[derive(Serialize, JsonSchema)]
struct Sloppy {
    value: i64,
    /// Serialised as `null` when None: the schema says "omit it".
    note: Option<String>,
}

#[test]
fn o110_option_output_must_be_omitted_not_null() {
    let tool = ToolDef::typed("sloppy", |_i: Invocation, a: AddIn| async move {
        Ok(Sloppy {
            value: a.a,
            note: a.label,
        })
    });
    let err = RegistryBuilder::new().tool(tool).build().unwrap_err();
    assert_eq!(
        err.to_string(),
        "tool `sloppy`: output must be an object that names its payload: property `note` is an Option that serialises as null; mark it #[serde(skip_serializing_if = \"Option::is_none\")] so None is omitted (output type `core_tools::Sloppy`)"
    );
}

type Report = (u64, Option<u64>, Option<String>);

static LATE: std::sync::Mutex<Option<Invocation>> = std::sync::Mutex::new(None);

#[derive(Default)]
struct Recorder(std::sync::Mutex<Vec<Report>>);
impl strict_mcp::core::ProgressSink for Recorder {
    fn report(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        self.0.lock().unwrap().push((
            progress as u64,
            total.map(|t| t as u64),
            message.map(str::to_owned),
        ));
    }
}

#[tokio::test]
async fn progress_reaches_the_sink_and_is_a_no_op_without_one() {
    let tool = ToolDef::dynamic(
        "work",
        r#"{"type":"object"}"#,
        None,
        |i: Invocation, _a: Box<RawValue>| async move {
            i.report_progress(1.0, Some(2.0), Some("half"));
            i.report_progress(1.0, Some(2.0), Some("repeat: dropped"));
            i.report_progress(f64::NAN, None, Some("NaN: dropped"));
            i.report_progress(1.5, Some(-1.0), Some("negative total: dropped"));
            i.report_progress(2.0, Some(2.0), None);
            // Keep a clone past the end of the call: later reports are dropped.
            LATE.lock().unwrap().replace(i.clone());
            Ok(DynamicOutput::default())
        },
    );
    let reg = RegistryBuilder::new().tool(tool).build().unwrap();
    let sink = Arc::new(Recorder::default());
    let with = Invocation::new(Caller::anonymous()).with_progress(sink.clone());
    assert!(matches!(
        reg.call_tool(with, "work", None).await.unwrap(),
        ToolReply::Success { .. }
    ));
    assert_eq!(
        *sink.0.lock().unwrap(),
        vec![(1, Some(2), Some("half".to_owned())), (2, Some(2), None)]
    );
    LATE.lock()
        .unwrap()
        .take()
        .unwrap()
        .report_progress(3.0, None, Some("late"));
    assert_eq!(sink.0.lock().unwrap().len(), 2);
    let without = Invocation::new(Caller::anonymous());
    assert!(matches!(
        reg.call_tool(without, "work", None).await.unwrap(),
        ToolReply::Success { .. }
    ));
}

#[test]
fn empty_registry_is_an_error() {
    assert_eq!(
        RegistryBuilder::new().build().unwrap_err(),
        BuildError::Empty
    );
}

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Routed {
    /// Target region; mirrored into the `Mcp-Param-Region` header.
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: String,
    /// Not a header.
    weight: f64,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct BadRouted {
    #[schemars(extend("x-mcp-header" = "Weight"))]
    weight: f64,
}

#[test]
fn e8_no_parameters_and_d22_on_typed_tools() {
    let ok = |_i: Invocation, _a: NoArgs| async move {
        Ok(AddOut {
            sum: 0,
            label: None,
        })
    };
    let reg = RegistryBuilder::new()
        .tool(ToolDef::typed("ping", ok))
        .tool(ToolDef::typed(
            "route",
            |_i: Invocation, _a: Routed| async move {
                Ok(AddOut {
                    sum: 0,
                    label: None,
                })
            },
        ))
        .build()
        .unwrap();
    let ping = reg.tool(&Caller::anonymous(), "ping").unwrap();
    let schema: serde_json::Value = serde_json::from_str(ping.input_schema.get()).unwrap();
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["additionalProperties"], false);
    let route = reg.tool(&Caller::anonymous(), "route").unwrap();
    let schema: serde_json::Value = serde_json::from_str(route.input_schema.get()).unwrap();
    assert_eq!(schema["properties"]["region"]["x-mcp-header"], "Region");

    let err = RegistryBuilder::new()
        .tool(ToolDef::typed(
            "bad_route",
            |_i: Invocation, _a: BadRouted| async move {
                Ok(AddOut {
                    sum: 0,
                    label: None,
                })
            },
        ))
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "tool `bad_route`: property `/properties/weight`: invalid x-mcp-header annotation: type `number` is not allowed (only string, integer, boolean)"
    );
}

#[derive(Serialize, JsonSchema)]
struct Decision {
    /// What the user decided.
    decision: String,
}

fn login_schema() -> serde_json::Value {
    json!({"type":"object","properties":{"login":{"type":"string","minLength":2}},"required":["login"]})
}

fn asking_tool() -> ToolDef {
    ToolDef::typed_interactive("ask", |i: Invocation, _c: Confirm| async move {
        match i.form_answer("who", &login_schema())? {
            None => Ok(Outcome::input(
                "who",
                i.elicit_form("Login?", login_schema())?,
            )),
            Some(answer) => Ok(Outcome::Complete(Decision {
                decision: match answer.content {
                    Some(c) => format!("{:?}:{}", answer.action, c["login"].as_str().unwrap()),
                    None => format!("{:?}", answer.action),
                },
            })),
        }
    })
}

async fn answer(reg: &Registry, text: &str) -> ToolReply {
    let mut answers = std::collections::BTreeMap::new();
    answers.insert("who".to_owned(), raw(text));
    let caps = ClientCapabilities::from_value(json!({"elicitation": {}}));
    let inv = inv().with_capabilities(caps).with_input_responses(answers);
    reg.call_tool(inv, "ask", Some(&raw(r#"{"item":"x"}"#)))
        .await
        .unwrap()
}

#[tokio::test]
async fn o49_o50_elicitation_answers_are_checked() {
    let reg = RegistryBuilder::new().tool(asking_tool()).build().unwrap();
    assert_eq!(
        structured(answer(&reg, r#"{"action":"accept","content":{"login":"octo"}}"#).await),
        r#"{"decision":"Accept:octo"}"#
    );
    assert_eq!(
        structured(answer(&reg, r#"{"action":"decline"}"#).await),
        r#"{"decision":"Decline"}"#
    );
    assert_eq!(
        structured(answer(&reg, r#"{"action":"cancel","extra":1}"#).await),
        r#"{"decision":"Cancel"}"#
    );
    for (text, message) in [
        (
            r#"{"action":"accept","content":{"login":"o"}}"#,
            "invalid answer under `who`: the content does not match the requested schema",
        ),
        (
            r#"{"action":"accept"}"#,
            "invalid answer under `who`: `accept` requires an object `content`",
        ),
        (
            r#"{"action":"accept","content":null}"#,
            "invalid answer under `who`: `content` must not be null",
        ),
        (
            r#"{"action":"decline","content":{}}"#,
            "invalid answer under `who`: only `accept` carries `content`",
        ),
        (
            r#"{"action":"maybe"}"#,
            "invalid answer under `who`: `action` must be \"accept\", \"decline\" or \"cancel\"",
        ),
        (
            r#"[1]"#,
            "invalid answer under `who`: the answer must be an object",
        ),
    ] {
        let f = failure(answer(&reg, text).await);
        assert_eq!(f.code, FailureCode::InvalidArguments, "{text}");
        assert_eq!(f.message, message, "{text}");
    }
    let f = failure(answer(&reg, r#"{"action":"accept","content":{"login":"o"}}"#).await);
    let d = &f.diagnostics.unwrap()[0];
    assert_eq!(
        (d.pointer.as_str(), d.keyword.as_str()),
        ("/login", "minLength")
    );
}

#[test]
fn o49_url_answers_carry_no_content() {
    let mut answers = std::collections::BTreeMap::new();
    answers.insert("a".to_owned(), raw(r#"{"action":"accept"}"#));
    answers.insert("b".to_owned(), raw(r#"{"action":"accept","content":{}}"#));
    let inv = Invocation::new(Caller::anonymous()).with_input_responses(answers);
    assert_eq!(
        inv.url_answer("a").unwrap(),
        Some(strict_mcp::core::ElicitAction::Accept)
    );
    assert_eq!(
        inv.url_answer("b").unwrap_err().to_string(),
        "invalid answer under `b`: a URL elicitation answer carries no `content`"
    );
    assert_eq!(inv.url_answer("c").unwrap(), None);
    let as_protocol: CoreError = inv.url_answer("b").unwrap_err().into();
    assert_eq!(as_protocol.code(), -32602);
}

/// A chain of objects `depth` levels deep.
#[derive(Serialize, JsonSchema)]
struct Nest {
    #[serde(skip_serializing_if = "Option::is_none")]
    next: Option<Box<Nest>>,
}

fn nest(depth: usize) -> Nest {
    (1..depth).fold(Nest { next: None }, |inner, _| Nest {
        next: Some(Box::new(inner)),
    })
}

#[derive(Deserialize, JsonSchema)]
struct DepthIn {
    depth: usize,
}

/// A typed result is checked as the value serialised from it (issue #23: no parse of its own
/// text), with the same depth bound as parsed text: 64 levels pass, 65 are `invalid_result`
/// (O107, `MAX_INSTANCE_DEPTH`); an `f32` result, checked from its text, still passes.
#[tokio::test]
async fn o107_typed_result_checked_as_a_value_at_the_depth_bound_and_one_past() {
    #[derive(Serialize, JsonSchema)]
    struct Ratio {
        ratio: f32,
    }
    let reg = RegistryBuilder::new()
        .tool(ToolDef::typed(
            "nest",
            |_i: Invocation, a: DepthIn| async move { Ok(nest(a.depth)) },
        ))
        .tool(ToolDef::typed(
            "ratio",
            |_i: Invocation, _a: DepthIn| async move { Ok(Ratio { ratio: 0.1 }) },
        ))
        .build()
        .unwrap();
    assert_eq!(strict_mcp::core::schema::MAX_INSTANCE_DEPTH, 64);
    let at = structured(call(&reg, "nest", r#"{"depth":64}"#).await.unwrap());
    assert_eq!(at.matches('{').count(), 64, "{at}");
    let past = failure(call(&reg, "nest", r#"{"depth":65}"#).await.unwrap());
    assert_eq!(past.code, FailureCode::InvalidResult);
    assert_eq!(
        structured(call(&reg, "ratio", r#"{"depth":0}"#).await.unwrap()),
        r#"{"ratio":0.1}"#
    );
}
