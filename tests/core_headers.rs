//! `x-mcp-header` registration rules (D22) for typed and dynamic tools.

use serde_json::value::RawValue;
use strict_mcp::core::schema::check_mcp_headers;
use strict_mcp::core::{BuildError, DynamicOutput, Invocation, RegistryBuilder, ToolDef};

fn build(schema: &str) -> Result<(), BuildError> {
    let tool = ToolDef::dynamic(
        "t",
        schema,
        None,
        |_i: Invocation, _a: Box<RawValue>| async move { Ok(DynamicOutput::default()) },
    );
    RegistryBuilder::new().tool(tool).build().map(|_| ())
}

fn violation(schema: &str) -> (String, String) {
    match build(schema).unwrap_err() {
        BuildError::McpHeader {
            tool,
            property,
            reason,
        } => {
            assert_eq!(tool, "t");
            (property, reason)
        }
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn d22_valid_annotations_accepted_and_reported() {
    let schema = r#"{"type":"object","properties":{
        "region":{"type":"string","x-mcp-header":"Region"},
        "opts":{"type":"object","properties":{"dry":{"type":"boolean","x-mcp-header":"Dry-Run"}}},
        "n":{"type":"integer","maximum":9007199254740991,"x-mcp-header":"N"}}}"#;
    assert!(build(schema).is_ok());
    let found = check_mcp_headers(&serde_json::from_str(schema).unwrap()).unwrap();
    let pairs: Vec<(&str, &str)> = found
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        pairs,
        [
            ("/properties/n", "N"),
            ("/properties/opts/properties/dry", "Dry-Run"),
            ("/properties/region", "Region")
        ]
    );
}

#[test]
fn d22_name_must_be_token() {
    let (p, r) = violation(
        r#"{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"has space"}}}"#,
    );
    assert_eq!(p, "/properties/a");
    assert_eq!(
        r,
        "header name \"has space\" is not a non-empty RFC 9110 token"
    );
    let (_, r) =
        violation(r#"{"type":"object","properties":{"a":{"type":"string","x-mcp-header":""}}}"#);
    assert!(r.contains("non-empty"), "{r}");
    let (_, r) = violation(
        r#"{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"a\u0001"}}}"#,
    );
    assert!(r.contains("token"), "{r}");
}

#[test]
fn d22_names_unique_case_insensitively() {
    let (p, r) = violation(
        r#"{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Region"},"b":{"type":"string","x-mcp-header":"REGION"}}}"#,
    );
    assert_eq!(p, "/properties/b");
    assert_eq!(
        r,
        "header name \"REGION\" repeats the one at /properties/a (names are case-insensitive)"
    );
}

#[test]
fn d22_only_string_integer_boolean() {
    let (p, r) =
        violation(r#"{"type":"object","properties":{"x":{"type":"number","x-mcp-header":"X"}}}"#);
    assert_eq!(p, "/properties/x");
    assert_eq!(
        r,
        "type `number` is not allowed (only string, integer, boolean)"
    );
    let (_, r) = violation(
        r#"{"type":"object","properties":{"x":{"type":["string","null"],"x-mcp-header":"X"}}}"#,
    );
    assert_eq!(r, "the property must have exactly one type");
    let (_, r) = violation(
        r#"{"type":"object","properties":{"x":{"type":"integer","maximum":9007199254740992,"x-mcp-header":"X"}}}"#,
    );
    assert_eq!(r, "integer `maximum` is outside ±(2^53−1)");
}

#[test]
fn d22_only_through_properties_chains() {
    for (schema, pointer) in [
        (
            r#"{"type":"object","properties":{"l":{"type":"array","items":{"type":"string","x-mcp-header":"L"}}}}"#,
            "/properties/l/items",
        ),
        (
            r#"{"type":"object","anyOf":[{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}]}"#,
            "/anyOf/0/properties/a",
        ),
        (
            r##"{"type":"object","$defs":{"d":{"type":"string","x-mcp-header":"D"}},"properties":{"a":{"$ref":"#/$defs/d"}}}"##,
            "/$defs/d",
        ),
        (
            r#"{"type":"object","if":{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}}"#,
            "/if/properties/a",
        ),
        (r#"{"type":"object","x-mcp-header":"Root"}"#, ""),
    ] {
        let (p, r) = violation(schema);
        assert_eq!(p, pointer, "{schema}");
        assert_eq!(
            r,
            "only properties reached from the root through `properties` may carry it"
        );
    }
}
