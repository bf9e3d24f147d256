//! The request-metadata header rules of `wire::headers` (D15–D30) for both roles: what a client
//! must send for a request, and the server's check of those headers against the body.
#![forbid(unsafe_code)]

use serde_json::value::RawValue;
use serde_json::{json, Value};
use strict_mcp::core::{Caller, DynamicOutput, Invocation, RegistryBuilder, ToolDef};
use strict_mcp::wire::headers::{
    check_request_headers, decode_header_value, encode_header_value, param_headers,
    required_headers, HeaderError, Mirrored, ParamHeader, ParamType, RequiredHeaderError,
};

const PV: &str = "2026-07-28";

fn raw(v: &Value) -> Box<RawValue> {
    RawValue::from_string(v.to_string()).unwrap()
}

fn with_meta(mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": PV,
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    params
}

/// The annotated schema most cases use: string, integer, boolean and a nested string.
fn annotations() -> Vec<ParamHeader> {
    param_headers(&json!({"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "count": {"type": "integer", "x-mcp-header": "Count"},
        "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"},
        "opts": {"type": "object", "properties": {
            "tenant": {"type": "string", "x-mcp-header": "Tenant"}
        }}
    }}))
    .unwrap()
}

/// Server check of owned (name, value) pairs.
fn check(
    pairs: &[(String, String)],
    method: &str,
    params: &Value,
    annotations: Option<&[ParamHeader]>,
) -> Result<(), HeaderError> {
    let borrowed: Vec<(&str, &[u8])> = pairs
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_bytes()))
        .collect();
    let raw = raw(params);
    let mirrored = Mirrored::of(Some(&raw));
    check_request_headers(&borrowed[..], method, &mirrored, annotations)
}

fn compute(method: &str, params: &Value, annotations: &[ParamHeader]) -> Vec<(String, String)> {
    required_headers(method, Some(&raw(params)), annotations).unwrap()
}

fn owned(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn d22_param_headers_are_parsed_with_paths_and_types() {
    let a = annotations();
    let got: Vec<(Vec<&str>, &str, ParamType, &str)> = a
        .iter()
        .map(|p| {
            (
                p.path.iter().map(String::as_str).collect(),
                p.name.as_str(),
                p.ty,
                p.key(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                vec!["count"],
                "Count",
                ParamType::Integer,
                "mcp-param-count"
            ),
            (
                vec!["dry"],
                "Dry-Run",
                ParamType::Boolean,
                "mcp-param-dry-run"
            ),
            (
                vec!["opts", "tenant"],
                "Tenant",
                ParamType::String,
                "mcp-param-tenant"
            ),
            (
                vec!["region"],
                "Region",
                ParamType::String,
                "mcp-param-region"
            ),
        ]
    );
}

/// D28: the registry keeps the parsed annotations with the tool (parsed once, at build time)
/// and hands them out per caller-visible tool.
#[test]
fn d28_registry_keeps_parsed_annotations_with_the_tool() {
    let schema =
        r#"{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}"#;
    let registry = RegistryBuilder::new()
        .tool(ToolDef::dynamic(
            "annotated",
            schema,
            None,
            |_i: Invocation, _a: Box<RawValue>| async move { Ok(DynamicOutput::default()) },
        ))
        .tool(ToolDef::dynamic(
            "plain",
            r#"{"type":"object"}"#,
            None,
            |_i: Invocation, _a: Box<RawValue>| async move { Ok(DynamicOutput::default()) },
        ))
        .build()
        .unwrap();
    let caller = Caller::anonymous();
    let got = registry.param_headers(&caller, "annotated").unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(
        (got[0].path.as_slice(), got[0].name.as_str()),
        (&["region".to_owned()][..], "Region")
    );
    assert!(registry.param_headers(&caller, "plain").unwrap().is_empty());
    assert!(registry.param_headers(&caller, "missing").is_err());
}

/// D15–D21, D24: the exact headers a client computes, in order, per the spec's examples.
#[test]
fn d15_d21_required_headers_exact_values() {
    let a = annotations();
    let params = with_meta(json!({"name": "execute_sql", "arguments": {
        "region": "us-west1", "count": 42, "dry": false, "opts": {"tenant": "Hello, 世界"}
    }}));
    assert_eq!(
        compute("tools/call", &params, &a),
        owned(&[
            ("MCP-Protocol-Version", PV),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "execute_sql"),
            ("Mcp-Param-Count", "42"),
            ("Mcp-Param-Dry-Run", "false"),
            ("Mcp-Param-Tenant", "=?base64?SGVsbG8sIOS4lueVjA==?="),
            ("Mcp-Param-Region", "us-west1"),
        ])
    );
    // Null and absent values send no header (D19).
    let params = with_meta(json!({"name": "t", "arguments": {"region": null, "opts": {}}}));
    assert_eq!(
        compute("tools/call", &params, &a),
        owned(&[
            ("MCP-Protocol-Version", PV),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "t"),
        ])
    );
    // resources/read mirrors the URI; tools/list has no Mcp-Name.
    assert_eq!(
        compute(
            "resources/read",
            &with_meta(json!({"uri": "file:///a b"})),
            &[]
        ),
        owned(&[
            ("MCP-Protocol-Version", PV),
            ("Mcp-Method", "resources/read"),
            ("Mcp-Name", "file:///a b"),
        ])
    );
    assert_eq!(
        compute("tools/list", &with_meta(json!({})), &a),
        owned(&[("MCP-Protocol-Version", PV), ("Mcp-Method", "tools/list")])
    );
}

/// D21: the spec's encoding table, and the cases around it.
#[test]
fn d21_value_encoding_table() {
    for (value, encoded) in [
        ("us-west1", "us-west1"),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
        ("tab\there", "=?base64?dGFiCWhlcmU=?="),
        ("inner space", "inner space"),
        ("=?BASE64?x?=", "=?BASE64?x?="),
        ("", ""),
    ] {
        assert_eq!(encode_header_value(value), encoded, "{value:?}");
        assert_eq!(decode_header_value(encoded).as_deref(), Some(value));
    }
}

#[test]
fn d20_required_headers_refuse_values_of_the_wrong_type() {
    let a = annotations();
    for bad in [
        json!({"count": 1.5}),
        json!({"count": "1"}),
        json!({"dry": 1}),
        json!({"region": 7}),
    ] {
        let params = with_meta(json!({"name": "t", "arguments": bad}));
        assert!(
            matches!(
                required_headers("tools/call", Some(&raw(&params)), &a),
                Err(RequiredHeaderError::ParamValue(_))
            ),
            "{bad}"
        );
    }
    // An integral float is an integer to JSON Schema, sent in decimal.
    let params = with_meta(json!({"name": "t", "arguments": {"count": 42.0}}));
    assert!(compute("tools/call", &params, &a).contains(&("Mcp-Param-Count".into(), "42".into())));
    assert_eq!(
        required_headers("tools/list", Some(&raw(&json!({}))), &a),
        Err(RequiredHeaderError::NoProtocolVersion)
    );
}

/// The round trip: for every request in the table, the server accepts exactly the headers
/// the client computes, and also with names in other letter cases (D27).
#[test]
fn d15_d30_server_accepts_what_the_client_computes() {
    let a = annotations();
    let table = [
        ("tools/list", json!({})),
        (
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "x"}}),
        ),
        ("tools/call", json!({"name": "naïve tool"})),
        ("tools/call", json!({"name": "=?base64?x?="})),
        ("tools/call", json!({"name": " lead"})),
        ("prompts/get", json!({"name": "greet"})),
        ("resources/read", json!({"uri": "file:///projects/a.json"})),
        ("resources/read", json!({"uri": "file:///ü"})),
        (
            "tools/call",
            json!({"name": "t", "arguments": {
                "region": "eu", "count": -7, "dry": true, "opts": {"tenant": " acme\r\n"}
            }}),
        ),
        (
            "tools/call",
            json!({"name": "t", "arguments": {"count": 9007199254740991_i64}}),
        ),
        (
            "tools/call",
            json!({"name": "t", "arguments": {"region": null, "count": null}}),
        ),
        (
            "tools/call",
            json!({"name": "t", "arguments": {"region": "=?base64?no?="}}),
        ),
        ("tools/call", json!({"name": "t"})),
    ];
    for (method, params) in table {
        let params = with_meta(params);
        let headers = compute(method, &params, &a);
        assert_eq!(
            check(&headers, method, &params, Some(&a)),
            Ok(()),
            "{method} {params}"
        );
        let lower: Vec<(String, String)> = headers
            .iter()
            .map(|(n, v)| (n.to_ascii_lowercase(), v.clone()))
            .collect();
        assert_eq!(
            check(&lower, method, &params, Some(&a)),
            Ok(()),
            "{method} {params}"
        );
    }
}

/// Owned (name, value) header pairs.
type Headers = Vec<(String, String)>;

fn call_params() -> Value {
    with_meta(json!({"name": "t", "arguments": {"region": "eu", "count": 42}}))
}

/// Each rule's violation is refused with its typed error.
#[test]
fn d15_d30_each_violation_is_refused() {
    let a = annotations();
    let params = call_params();
    let good = compute("tools/call", &params, &a);
    let edit = |name: &str, value: Option<&str>| -> Vec<(String, String)> {
        let mut h: Vec<(String, String)> = good
            .iter()
            .filter(|(n, _)| !n.eq_ignore_ascii_case(name))
            .cloned()
            .collect();
        if let Some(v) = value {
            h.push((name.to_owned(), v.to_owned()));
        }
        h
    };
    let cases: Vec<(&str, Headers, HeaderError)> = vec![
        (
            "D15/D33 missing version",
            edit("MCP-Protocol-Version", None),
            HeaderError::Missing("MCP-Protocol-Version".into()),
        ),
        (
            "D15 version differs",
            edit("MCP-Protocol-Version", Some("2025-11-25")),
            HeaderError::Mismatch("MCP-Protocol-Version".into()),
        ),
        (
            "D16 missing method",
            edit("Mcp-Method", None),
            HeaderError::Missing("Mcp-Method".into()),
        ),
        (
            "D16 method differs",
            edit("Mcp-Method", Some("tools/list")),
            HeaderError::Mismatch("Mcp-Method".into()),
        ),
        (
            "D27 values are case-sensitive",
            edit("Mcp-Method", Some("Tools/Call")),
            HeaderError::Mismatch("Mcp-Method".into()),
        ),
        (
            "D17 missing name",
            edit("Mcp-Name", None),
            HeaderError::Missing("Mcp-Name".into()),
        ),
        (
            "D17 name differs",
            edit("Mcp-Name", Some("u")),
            HeaderError::Mismatch("Mcp-Name".into()),
        ),
        (
            "D18 malformed sentinel",
            edit("Mcp-Name", Some("=?base64?***?=")),
            HeaderError::InvalidCharacters("Mcp-Name".into()),
        ),
        (
            "D18 sentinel of another name",
            edit("Mcp-Name", Some("=?base64?dQ==?=")),
            HeaderError::Mismatch("Mcp-Name".into()),
        ),
        (
            "D26 invalid characters",
            edit("Mcp-Name", Some("t\u{e9}")),
            HeaderError::InvalidCharacters("Mcp-Name".into()),
        ),
        (
            "D28 missing param header",
            edit("Mcp-Param-Region", None),
            HeaderError::MissingParam("Mcp-Param-Region".into()),
        ),
        (
            "D28 param differs",
            edit("Mcp-Param-Region", Some("us")),
            HeaderError::Mismatch("Mcp-Param-Region".into()),
        ),
        (
            "D29 integer differs",
            edit("Mcp-Param-Count", Some("43")),
            HeaderError::Mismatch("Mcp-Param-Count".into()),
        ),
        (
            "D29 not a number",
            edit("Mcp-Param-Count", Some("0x2A")),
            HeaderError::Mismatch("Mcp-Param-Count".into()),
        ),
        (
            "D28 header without a body value",
            edit("Mcp-Param-Dry-Run", Some("true")),
            HeaderError::Mismatch("Mcp-Param-Dry-Run".into()),
        ),
        (
            "D30 invalid characters in a param",
            edit("Mcp-Param-Region", Some("e\u{1}u")),
            HeaderError::InvalidCharacters("Mcp-Param-Region".into()),
        ),
        (
            "D30 malformed param sentinel",
            edit("Mcp-Param-Region", Some("=?base64?%?=")),
            HeaderError::InvalidCharacters("Mcp-Param-Region".into()),
        ),
    ];
    for (what, headers, expected) in cases {
        assert_eq!(
            check(&headers, "tools/call", &params, Some(&a)),
            Err(expected),
            "{what}"
        );
    }
    // A repeated header is refused, standard or param.
    let mut twice = good.clone();
    twice.push(("mcp-method".into(), "tools/call".into()));
    assert_eq!(
        check(&twice, "tools/call", &params, Some(&a)),
        Err(HeaderError::Repeated("Mcp-Method".into()))
    );
    let mut twice = good.clone();
    twice.push(("mcp-param-region".into(), "eu".into()));
    assert_eq!(
        check(&twice, "tools/call", &params, Some(&a)),
        Err(HeaderError::Repeated("Mcp-Param-Region".into()))
    );
    // D29: numeric comparison accepts 42.0 for 42; base64 of the value is accepted too (D27).
    assert_eq!(
        check(
            &edit("Mcp-Param-Count", Some("42.0")),
            "tools/call",
            &params,
            Some(&a)
        ),
        Ok(())
    );
    assert_eq!(
        check(
            &edit("Mcp-Param-Region", Some("=?base64?ZXU=?=")),
            "tools/call",
            &params,
            Some(&a)
        ),
        Ok(())
    );
    // Without the tool's annotations (unknown tool, compact mode) params are not checked.
    assert_eq!(
        check(&edit("Mcp-Param-Region", None), "tools/call", &params, None),
        Ok(())
    );
}

proptest::proptest! {
    /// D18–D21, D27: any tool name and any string, integer and boolean argument survive the
    /// round trip (client encoding, server decoding and comparison), and the encoded values
    /// are always safe header text.
    #[test]
    fn d18_d21_round_trip_for_any_values(
        name in "\\PC{0,24}",
        region in proptest::option::of("\\PC{0,32}|[ \\t\\r\\n]{0,3}|=\\?base64\\?.{0,8}\\?="),
        count in proptest::option::of(-9_007_199_254_740_991_i64..=9_007_199_254_740_991),
        dry in proptest::option::of(proptest::bool::ANY),
    ) {
        let a = annotations();
        let mut arguments = serde_json::Map::new();
        if let Some(r) = &region { arguments.insert("region".into(), json!(r)); }
        if let Some(c) = count { arguments.insert("count".into(), json!(c)); }
        if let Some(d) = dry { arguments.insert("dry".into(), json!(d)); }
        let params = with_meta(json!({"name": name, "arguments": arguments}));
        let headers = compute("tools/call", &params, &a);
        for (n, v) in &headers {
            proptest::prop_assert!(
                v.bytes().all(|b| (0x20..=0x7e).contains(&b)) && v.trim() == v,
                "{n}: {v:?}"
            );
        }
        proptest::prop_assert_eq!(check(&headers, "tools/call", &params, Some(&a)), Ok(()));
    }
}
