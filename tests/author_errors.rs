//! Domain errors in tool handlers (O109): application failure codes beside the built-in ones,
//! `?` on I/O errors, strings and boxed errors (the `internal` failure, cause never sent), and
//! a published failure schema that admits application codes. Exact wire bytes.
#![forbid(unsafe_code)]

use futures_util::FutureExt as _;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use serde_json::value::RawValue;
use strict_mcp::core::schema::CompiledSchema;
use strict_mcp::core::{
    failure_envelope_schema, AppCode, AppCodeError, Caller, FailureCode, Invocation, Registry,
    RegistryBuilder, ToolDef, ToolError, ToolFailure, ToolResultExt, BUILTIN_FAILURE_CODES,
    INTERNAL_MESSAGE, MAX_APP_CODE_LEN,
};
use strict_mcp::server::publication::{Mode, Publication, TextOutcome};

const NOT_FOUND: AppCode = match AppCode::new("not_found") {
    Ok(code) => code,
    Err(_) => panic!("valid at compile time"),
};

#[derive(Deserialize, JsonSchema)]
struct NoteIn {
    /// Which failure to produce.
    kind: String,
}

#[derive(Serialize, JsonSchema)]
struct NoteOut {
    /// The note's text.
    text: String,
}

async fn note(kind: &str) -> Result<NoteOut, ToolError> {
    match kind {
        "app" => Err(ToolFailure::new(NOT_FOUND, "No note has that id.").into()),
        "busy" => {
            let busy = AppCode::new("busy").unwrap().retryable(true);
            Err(ToolFailure::new(busy, "Try again shortly.").into())
        }
        "io" => {
            let bytes = std::fs::read("/nonexistent/secret-path/db.key")?;
            Ok(NoteOut {
                text: bytes.len().to_string(),
            })
        }
        "str" => {
            let r: Result<String, &str> = Err("connection string postgres://u:pw@db");
            Ok(NoteOut { text: r? })
        }
        "boxed" => {
            let r: Result<String, Box<dyn std::error::Error + Send + Sync>> =
                Err("boxed secret".into());
            Ok(NoteOut { text: r? })
        }
        "ext" => {
            let n: u32 = "x".parse().or_internal()?;
            Ok(NoteOut {
                text: n.to_string(),
            })
        }
        "ext_code" => {
            let found: Option<String> = None;
            let text = found.ok_or(()).or_failure(NOT_FOUND, "No such note.")?;
            Ok(NoteOut { text })
        }
        _ => Ok(NoteOut {
            text: "hello".into(),
        }),
    }
}

fn registry() -> Registry {
    RegistryBuilder::new()
        .tool(ToolDef::typed(
            "note",
            |_: Invocation, i: NoteIn| async move { note(&i.kind).await },
        ))
        .build()
        .unwrap()
}

fn call(kind: &str) -> String {
    let params = RawValue::from_string(format!(
        r#"{{"name":"note","arguments":{{"kind":"{kind}"}},"_meta":{{}}}}"#
    ))
    .unwrap();
    let publication = Publication::new(Mode::Direct);
    let outcome = publication
        .call_tool_text(&registry(), Invocation::new(Caller::new("alice")), &params)
        .now_or_never()
        .expect("ready")
        .unwrap();
    match outcome {
        TextOutcome::Complete(text) => text,
        TextOutcome::InputRequired { .. } => panic!("unexpected input_required"),
    }
}

/// The full `tools/call` result of a failure, as the client receives it.
fn failure_result(code: &str, message: &str, retryable: bool) -> String {
    let failure = format!(
        r#"{{"failure":{{"code":"{code}","message":"{message}","retryable":{retryable}}}}}"#
    );
    format!(
        r#"{{"content":[{{"text":{},"type":"text"}}],"isError":true,"structuredContent":{failure}}}"#,
        serde_json::to_string(&failure).unwrap()
    )
}

#[test]
fn o109_application_code_has_exact_wire_bytes() {
    assert_eq!(
        call("app"),
        failure_result("not_found", "No note has that id.", false)
    );
    assert_eq!(
        call("busy"),
        failure_result("busy", "Try again shortly.", true)
    );
    assert_eq!(
        call("ext_code"),
        failure_result("not_found", "No such note.", false)
    );
}

#[test]
fn o109_question_mark_on_foreign_errors_is_internal_without_the_cause() {
    for kind in ["io", "str", "boxed", "ext"] {
        let text = call(kind);
        assert_eq!(
            text,
            failure_result("internal", INTERNAL_MESSAGE, true),
            "{kind}"
        );
        for secret in ["secret", "postgres", "nonexistent", "invalid digit"] {
            assert!(!text.contains(secret), "{kind}: {text}");
        }
    }
}

#[test]
fn o109_app_code_names_are_validated_at_the_bound() {
    let at_bound: &'static str = Box::leak("a".repeat(MAX_APP_CODE_LEN).into_boxed_str());
    assert_eq!(AppCode::new(at_bound).unwrap().name(), at_bound);
    let past: &'static str = Box::leak("a".repeat(MAX_APP_CODE_LEN + 1).into_boxed_str());
    assert_eq!(
        AppCode::new(past),
        Err(AppCodeError::TooLong {
            len: MAX_APP_CODE_LEN + 1
        })
    );
    assert_eq!(AppCode::new(""), Err(AppCodeError::Empty));
    assert_eq!(
        AppCode::new("Not_found"),
        Err(AppCodeError::Character { index: 0 })
    );
    assert_eq!(
        AppCode::new("_x"),
        Err(AppCodeError::Character { index: 0 })
    );
    assert_eq!(
        AppCode::new("not-found"),
        Err(AppCodeError::Character { index: 3 })
    );
    assert_eq!(AppCode::new("x9_"), Ok(AppCode::new("x9_").unwrap()));
    for name in BUILTIN_FAILURE_CODES {
        assert_eq!(AppCode::new(name), Err(AppCodeError::Reserved(name)));
        assert_eq!(FailureCode::builtin(name).unwrap().as_str(), name);
    }
    assert!(!NOT_FOUND.is_retryable());
    assert_eq!(FailureCode::from(NOT_FOUND).as_str(), "not_found");
}

#[test]
fn o109_failure_schema_admits_application_codes() {
    let schema = CompiledSchema::compile_value(&failure_envelope_schema()).unwrap();
    let app = ToolFailure::new(NOT_FOUND, "No note has that id.").envelope();
    assert!(schema.validate_value(&app).is_ok());
    for builtin in BUILTIN_FAILURE_CODES {
        let f = json!({"failure": {"code": builtin, "message": "m", "retryable": false}});
        assert!(schema.validate_value(&f).is_ok(), "{builtin}");
    }
    for bad in ["Not_found", "not-found", "", "9x"] {
        let f = json!({"failure": {"code": bad, "message": "m", "retryable": false}});
        assert!(schema.validate_value(&f).is_err(), "{bad:?}");
    }
    let long = "a".repeat(MAX_APP_CODE_LEN + 1);
    let f = json!({"failure": {"code": long, "message": "m", "retryable": false}});
    assert!(schema.validate_value(&f).is_err());
    // The code is one small string schema, not a list of every built-in variant.
    assert_eq!(
        failure_envelope_schema()["properties"]["failure"]["properties"]["code"]["pattern"],
        json!("^[a-z][a-z0-9_]*$")
    );
}

#[derive(Deserialize, JsonSchema)]
struct SearchIn {
    /// What to look for.
    query: String,
    /// Most results.
    limit: Option<u32>,
}

#[derive(Serialize, JsonSchema)]
struct SearchOut {
    /// What the handler received.
    seen: String,
}

fn search_call(arguments: &str) -> String {
    let registry = RegistryBuilder::new()
        .tool(ToolDef::typed(
            "search",
            |_: Invocation, i: SearchIn| async move {
                Ok(SearchOut {
                    seen: format!("{}:{:?}", i.query, i.limit),
                })
            },
        ))
        .tool(ToolDef::dynamic(
            "raw",
            r#"{"type":"object","properties":{"n":{"type":"integer"},"m":{"type":"integer"}},"additionalProperties":false}"#,
            None,
            |_: Invocation, args: Box<RawValue>| async move {
                Ok(strict_mcp::core::DynamicOutput {
                    content: vec![strict_mcp::core::descriptor::ContentBlock::text(args.get())],
                    structured: None,
                })
            },
        ))
        .build()
        .unwrap();
    let params = RawValue::from_string(format!(r#"{{"name":{arguments},"_meta":{{}}}}"#)).unwrap();
    let publication = Publication::new(Mode::Direct);
    match publication
        .call_tool_text(&registry, Invocation::new(Caller::new("alice")), &params)
        .now_or_never()
        .expect("ready")
        .unwrap()
    {
        TextOutcome::Complete(text) => text,
        TextOutcome::InputRequired { .. } => panic!("unexpected input_required"),
    }
}

/// O6 (issue item 6): an explicit `null` on an optional property is read as absent; the
/// published schema stays null-free, required properties still refuse `null`, and the raw
/// arguments a dynamic tool receives lose only that member (exact numbers kept).
#[test]
fn e8_explicit_null_on_an_optional_property_is_absent() {
    let ok = search_call(r#""search","arguments":{"query":"x","limit":null}"#);
    assert!(ok.contains(r#""seen":"x:None""#), "{ok}");
    assert!(!ok.contains("isError"), "{ok}");
    let refused = search_call(r#""search","arguments":{"query":null}"#);
    assert!(
        refused.contains(r#"\"code\":\"invalid_arguments\""#),
        "{refused}"
    );
    let raw = search_call(r#""raw","arguments":{"n":null,"m":123456789012345678901234567890}"#);
    assert!(
        raw.starts_with(
            r#"{"content":[{"text":"{\"m\":123456789012345678901234567890}","type":"text"}]"#
        ),
        "{raw}"
    );
    let schema =
        strict_mcp::core::schema::derive_schema::<SearchIn>(strict_mcp::core::schema::Side::Input);
    assert_eq!(schema["properties"]["limit"]["type"], json!("integer"));
    assert!(!schema.to_string().contains("null"), "{schema}");
}

struct HideSecret;

impl strict_mcp::core::Policy for HideSecret {
    fn tool(&self, _caller: &Caller, name: &str) -> strict_mcp::core::Access {
        if name == "secret" {
            strict_mcp::core::Access::Hidden
        } else {
            strict_mcp::core::Access::Allowed
        }
    }
}

fn native_compact_call(registry: &Registry, name: &str) -> strict_mcp::core::CoreError {
    let params = RawValue::from_string(format!(
        r#"{{"name":"{name}","arguments":{{}},"_meta":{{}}}}"#
    ))
    .unwrap();
    let outcome = Publication::new(Mode::Compact)
        .call_tool_text(registry, Invocation::new(Caller::new("alice")), &params)
        .now_or_never()
        .expect("ready");
    match outcome {
        Err(e) => e,
        Ok(_) => panic!("a native call in compact mode is an error"),
    }
}

/// O18, O23 (issue item 1): in compact mode a native `tools/call` of a tool the caller may
/// see says it is reached through `call_tool`; a hidden tool's answer stays byte-identical to
/// an unknown one's.
#[test]
fn o23_compact_native_call_of_a_visible_tool_points_at_call_tool() {
    let registry = RegistryBuilder::new()
        .tool(ToolDef::typed(
            "note",
            |_: Invocation, i: NoteIn| async move { note(&i.kind).await },
        ))
        .tool(ToolDef::typed(
            "secret",
            |_: Invocation, i: NoteIn| async move { note(&i.kind).await },
        ))
        .policy(HideSecret)
        .build()
        .unwrap();
    let visible = native_compact_call(&registry, "note");
    assert_eq!(
        visible.to_error_object().to_string(),
        r#"{"code":-32602,"message":"Unknown tool: note. This server publishes its tools in compact mode: call `call_tool` with {\"name\": \"note\", \"arguments\": {...}} (find tools with `search_tools`)"}"#
    );
    let hidden = native_compact_call(&registry, "secret").to_error_object();
    let without = RegistryBuilder::new()
        .tool(ToolDef::typed(
            "note",
            |_: Invocation, i: NoteIn| async move { note(&i.kind).await },
        ))
        .build()
        .unwrap();
    let unknown = native_compact_call(&without, "secret").to_error_object();
    assert_eq!(hidden.to_string(), unknown.to_string());
    assert_eq!(
        unknown.to_string(),
        r#"{"code":-32602,"message":"Unknown tool: secret"}"#
    );
}

/// O108 (issue item 9): the unnamed-payload refusal still fires at registry build, and its
/// message names the Rust output type so the author knows what to wrap.
#[test]
fn o108_unnamed_payload_message_names_the_output_type() {
    let err = RegistryBuilder::new()
        .tool(ToolDef::typed(
            "list",
            |_: Invocation, _: NoteIn| async move { Ok(vec![1_u32]) },
        ))
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "tool `list`: output must be an object that names its payload: root is a bare array; \
         it must be `type: \"object\"` (output type `alloc::vec::Vec<u32>`)"
    );
}
