//! The instance depth bound (`MAX_INSTANCE_DEPTH`, 64) of `CompiledSchema::validate_bytes`,
//! now measured on the parsed value instead of a byte scan before the parse (issue #23's size
//! curve: the scan read every byte of a 1 MiB string): the same answers as before at the
//! bound, one past it, past serde_json's own recursion limit (128) and for malformed text.

use serde_json::Value;
use strict_mcp::core::schema::{CompiledSchema, MAX_INSTANCE_DEPTH};

fn schema() -> CompiledSchema {
    CompiledSchema::compile(r#"{"type":"object"}"#).unwrap()
}

/// `{"a":[[…1…]]}` with `depth` containers in all (the root object counts).
fn nested_arrays(depth: usize) -> String {
    format!(
        "{{\"a\":{}1{}}}",
        "[".repeat(depth - 1),
        "]".repeat(depth - 1)
    )
}

/// `{"a":{"a":…{}…}}` with `depth` objects.
fn nested_objects(depth: usize) -> String {
    format!(
        "{}{}",
        "{\"a\":".repeat(depth - 1),
        "{}".to_owned() + &"}".repeat(depth - 1)
    )
}

fn keyword(text: &str) -> Option<String> {
    schema()
        .validate_bytes(text)
        .err()
        .map(|d| d[0].keyword.clone())
}

#[test]
fn the_depth_bound_holds_at_64_and_refuses_65_for_arrays_and_objects() {
    assert_eq!(MAX_INSTANCE_DEPTH, 64);
    for make in [nested_arrays as fn(usize) -> String, nested_objects] {
        let at = make(MAX_INSTANCE_DEPTH);
        let value: Value = schema().validate_bytes(&at).unwrap();
        assert_eq!(value.to_string(), at);
        assert_eq!(
            keyword(&make(MAX_INSTANCE_DEPTH + 1)).as_deref(),
            Some("depth")
        );
    }
}

#[test]
fn past_serde_jsons_recursion_limit_is_still_a_depth_failure() {
    assert_eq!(keyword(&nested_arrays(200)).as_deref(), Some("depth"));
    assert_eq!(keyword(&nested_objects(129)).as_deref(), Some("depth"));
}

#[test]
fn malformed_text_is_too_deep_when_its_brackets_are_and_malformed_otherwise() {
    // Unclosed, 70 levels: reported as too deep, as when the scan ran before the parse.
    let deep = format!("{{\"a\":{}", "[".repeat(69));
    assert_eq!(keyword(&deep).as_deref(), Some("depth"));
    // Unclosed, 3 levels: malformed.
    assert_eq!(keyword(r#"{"a":[["#).as_deref(), Some("json"));
}

#[test]
fn brackets_inside_strings_never_count_and_a_long_string_passes() {
    let text = format!(r#"{{"a":"{}\"{}"}}"#, "[".repeat(100), "{".repeat(100));
    assert!(schema().validate_bytes(&text).is_ok());
    let long = format!(r#"{{"a":"{}"}}"#, "x".repeat(1 << 20));
    assert!(schema().validate_bytes(&long).is_ok());
}
