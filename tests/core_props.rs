//! Property tests: exact bytes through validation, schema/deserializer agreement, policy
//! isolation, cursor tamper evidence (O13, O21, O23, O106).

use std::collections::BTreeMap;

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use strict_mcp::core::schema::{derive_schema, CompiledSchema, Side};
use strict_mcp::core::{
    Access, Caller, CoreError, CursorKey, DynamicOutput, Invocation, Policy, RegistryBuilder,
    ToolDef, ToolReply,
};

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    futures_util::FutureExt::now_or_never(f).expect("handlers in these tests never wait")
}

fn echo() -> ToolDef {
    ToolDef::dynamic(
        "echo",
        r#"{"type":"object","properties":{"v":{"type":["integer","number"]}},"required":["v"]}"#,
        None,
        |_i: Invocation, args: Box<RawValue>| async move {
            Ok(DynamicOutput {
                content: vec![],
                structured: Some(args),
            })
        },
    )
}

/// JSON number text: integers of up to 46 digits, decimals, exponents, signs (magnitudes stay
/// within the f64 range; beyond it see `numbers_beyond_f64_are_refused_clearly`).
fn number_text() -> impl Strategy<Value = String> {
    (
        any::<bool>(),
        "[1-9][0-9]{0,45}|0",
        proptest::option::of("[0-9]{1,30}"),
        proptest::option::of((
            prop_oneof![Just("e"), Just("E")],
            prop_oneof![Just(""), Just("+"), Just("-")],
            "[0-9]{1,2}",
        )),
    )
        .prop_map(|(neg, int, frac, exp)| {
            let mut s = String::new();
            if neg {
                s.push('-');
            }
            s.push_str(&int);
            if let Some(f) = frac {
                s.push('.');
                s.push_str(&f);
            }
            if let Some((e, sign, digits)) = exp {
                s.push_str(e);
                s.push_str(sign);
                s.push_str(&digits);
            }
            s
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// O13, O29: whatever number text the client sends reaches the handler byte for byte.
    #[test]
    fn exact_number_bytes_reach_the_handler(n in number_text(), ws in "[ \n\t]{0,2}") {
        let reg = RegistryBuilder::new().tool(echo()).build().unwrap();
        let args = format!("{{{ws}\"v\"{ws}:{ws}{n}{ws}}}");
        let raw = RawValue::from_string(args.clone()).unwrap();
        let reply = block_on(reg.call_tool(Invocation::new(Caller::anonymous()), "echo", Some(&raw))).unwrap();
        match reply {
            ToolReply::Success { structured, .. } => {
                let got = structured.unwrap().get().to_owned();
                prop_assert_eq!(got, args);
            }
            other => prop_assert!(false, "unexpected {:?}", other),
        }
    }
}

#[test]
fn int32_bounds_come_from_the_rust_type() {
    let schema = CompiledSchema::compile_value(&derive_schema::<Agree>(Side::Input)).unwrap();
    let text = r#"{"small":1,"signed":4000000000,"flag":true,"name":"n","list":[1]}"#;
    assert!(serde_json::from_str::<Agree>(text).is_err());
    let diags = schema.validate_bytes(text).unwrap_err();
    assert_eq!(diags[0].pointer, "/signed");
    assert_eq!(diags[0].keyword, "maximum");
}

/// `deny_unknown_fields` makes serde as strict as the derived input schema, which closes
/// input objects (`additionalProperties: false`) whether or not the type asks for it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Agree {
    small: u8,
    signed: i32,
    flag: bool,
    name: String,
    note: Option<String>,
    list: Vec<u16>,
}

fn any_json() -> impl Strategy<Value = Value> {
    prop_oneof![
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::Bool),
        1 => (-70_000i64..70_000).prop_map(|i| json!(i)),
        3 => (-3_000_000_000i64..5_000_000_000).prop_map(|i| json!(i)),
        1 => Just(json!(1.5)),
        1 => "[a-z]{0,4}".prop_map(Value::String),
        1 => proptest::collection::vec((0u32..70_000).prop_map(|i| json!(i)), 0..3).prop_map(Value::Array),
        1 => Just(json!(["x"])),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// O106, user need #5: the derived input schema and the deserializer accept exactly the
    /// same objects (integer formats become bounds, `Option` means "omit", not `null`).
    #[test]
    fn derived_schema_agrees_with_deserializer(
        edits in proptest::collection::vec(
            (
                prop_oneof![Just("small"), Just("signed"), Just("flag"), Just("name"), Just("note"), Just("list"), Just("other")],
                proptest::option::of(any_json()),
            ),
            0..3,
        )
    ) {
        let schema = CompiledSchema::compile_value(&derive_schema::<Agree>(Side::Input)).unwrap();
        // Start from a valid object and change, add or remove up to two members.
        let mut object = json!({"small": 1, "signed": -1, "flag": true, "name": "n", "list": [1]});
        for (key, value) in edits {
            match value {
                Some(v) => { object[key] = v; }
                None => { object.as_object_mut().unwrap().remove(key); }
            }
        }
        let text = object.to_string();
        let by_schema = schema.validate_bytes(&text).is_ok();
        let mut by_serde = serde_json::from_str::<Agree>(&text).is_ok();
        // serde accepts `null` for an Option; the published schema says "omit it instead".
        if by_serde && object.get("note") == Some(&Value::Null) {
            by_serde = false;
        }
        prop_assert_eq!(by_schema, by_serde, "{}", text);
    }
}

/// Each tool belongs to one owner; only the owner sees it.
struct Owners(BTreeMap<String, String>);
impl Policy for Owners {
    fn tool(&self, caller: &Caller, name: &str) -> Access {
        if self.0.get(name).map(String::as_str) == caller.principal() {
            Access::Allowed
        } else {
            Access::Hidden
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// O3, O23: caller A never lists, finds or invokes B's tools, and the refusal is the
    /// same bytes as for a name that does not exist.
    #[test]
    fn policy_isolation(owners in proptest::collection::vec(0usize..3, 1..12)) {
        let people = ["a", "b", "c"];
        let mut map = BTreeMap::new();
        let mut builder = RegistryBuilder::new();
        for (i, owner) in owners.iter().enumerate() {
            let name = format!("tool{i}");
            map.insert(name.clone(), people[*owner].to_owned());
            builder = builder.tool(echo_named(&name));
        }
        let reg = builder.policy(Owners(map.clone())).build().unwrap();
        for who in people {
            let caller = Caller::new(who);
            let listed: Vec<String> = reg.list_tools(&caller, None).unwrap().items.into_iter().map(|t| t.name).collect();
            let expected: Vec<String> = map.iter().filter(|(_, o)| o.as_str() == who).map(|(n, _)| n.clone()).collect();
            prop_assert_eq!(&listed, &expected);
            let found: Vec<String> = reg.search_tools(&caller, "tool", Some(20)).unwrap().tools.into_iter().map(|h| h.name).collect();
            prop_assert!(found.iter().all(|n| expected.contains(n)));
            for (name, owner) in &map {
                let result = block_on(reg.call_tool(Invocation::new(caller.clone()), name, None));
                if owner == who {
                    let ok = matches!(result, Ok(ToolReply::Success { .. }));
                    prop_assert!(ok, "owner call failed");
                } else {
                    let err = result.unwrap_err();
                    prop_assert_eq!(err, CoreError::UnknownTool { name: name.clone() });
                }
            }
        }
    }

    /// O21: flipping any bit of a cursor makes it invalid.
    #[test]
    fn any_bit_flip_invalidates_a_cursor(byte in 0usize..40, bit in 0u8..6) {
        let mut builder = RegistryBuilder::new().cursor_key(CursorKey::new([1; 32]));
        for i in 0..25 {
            builder = builder.tool(echo_named(&format!("t{i:02}")));
        }
        let reg = builder.build().unwrap();
        let caller = Caller::new("a");
        let cursor = reg.list_tools(&caller, None).unwrap().next_cursor.unwrap();
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let mut bytes = cursor.clone().into_bytes();
        let i = byte % bytes.len();
        let pos = ALPHABET.iter().position(|c| *c == bytes[i]).unwrap();
        bytes[i] = ALPHABET[pos ^ (1 << bit)];
        let altered = String::from_utf8(bytes).unwrap();
        prop_assume!(altered != cursor);
        prop_assert_eq!(reg.list_tools(&caller, Some(&altered)).unwrap_err(), CoreError::InvalidCursor);
    }
}

fn echo_named(name: &str) -> ToolDef {
    ToolDef::dynamic(
        name,
        r#"{"type":"object"}"#,
        None,
        |_i: Invocation, _a: Box<RawValue>| async move { Ok(DynamicOutput::default()) },
    )
}

#[test]
fn numbers_beyond_f64_are_refused_clearly() {
    let reg = RegistryBuilder::new().tool(echo()).build().unwrap();
    let raw = RawValue::from_string(r#"{"v":1e400}"#.to_owned()).unwrap();
    let reply =
        block_on(reg.call_tool(Invocation::new(Caller::anonymous()), "echo", Some(&raw))).unwrap();
    match reply {
        ToolReply::Failure(f) => {
            let d = &f.diagnostics.unwrap()[0];
            assert_eq!(d.keyword, "number");
            assert_eq!(
                d.message,
                "a number is beyond the range this server can validate (about ±1.8e308)"
            );
        }
        other => panic!("{other:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// F3: a URI rendered from a template reads back with the same variables.
    #[test]
    fn template_variables_round_trip(x in "[a-z0-9.~-]{1,12}", y in "[a-zA-Z0-9_]{1,12}") {
        use strict_mcp::core::{Outcome, ReadReply, TemplateDef};
        use strict_mcp::core::descriptor::ResourceContents;
        let reg = RegistryBuilder::new()
            .template(TemplateDef::new(
                "mem://a/{x}/b{y}",
                "t",
                |_i: Invocation, uri: String, vars: BTreeMap<String, String>| async move {
                    Ok(ReadReply::new(vec![ResourceContents::text(uri, format!("{}|{}", vars["x"], vars["y"]))]))
                },
            ))
            .build()
            .unwrap();
        let uri = format!("mem://a/{x}/b{y}");
        let reply = block_on(reg.read_resource(Invocation::new(Caller::anonymous()), &uri)).unwrap();
        let Outcome::Complete(reply) = reply else { panic!("no input requested") };
        prop_assert_eq!(reply.contents, vec![ResourceContents::text(uri, format!("{x}|{y}"))]);
    }
}

fn nested() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        "[\\[\\]{}\"\\\\a-z]{0,6}".prop_map(Value::String),
        (0i64..10).prop_map(|i| json!(i)),
    ];
    leaf.prop_recursive(12, 64, 3, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            proptest::collection::btree_map("[\\[{\"a-c]{1,3}", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn depth(v: &Value) -> usize {
    match v {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// The byte scanner that guards validation measures the same depth as the parsed tree,
    /// whatever brackets and escapes the strings contain.
    #[test]
    fn depth_scanner_matches_the_tree(v in nested()) {
        let text = v.to_string();
        let d = depth(&v);
        prop_assert!(strict_mcp::core::schema::depth_within(&text, d).is_ok(), "{}", text);
        if d > 0 {
            prop_assert!(strict_mcp::core::schema::depth_within(&text, d - 1).is_err(), "{}", text);
        }
    }
}

fn any_code() -> impl Strategy<Value = strict_mcp::core::FailureCode> {
    use strict_mcp::core::FailureCode::*;
    prop_oneof![
        Just(UnavailableTool),
        Just(InvalidArguments),
        Just(ResultTooLarge),
        Just(InteractionLimit),
        Just(StateRejected),
        Just(AlreadyCompleted),
        Just(InvalidResult),
        Just(Cancelled),
        Just(Internal),
    ]
}

proptest! {
    /// O17: every failure envelope validates against the published failure schema, and the
    /// wire code string is the stable one.
    #[test]
    fn failure_envelopes_match_their_schema(
        code in any_code(),
        message in ".{0,20}",
        retryable in any::<bool>(),
        diags in proptest::option::of(proptest::collection::vec(("[/a-z0-9]{0,8}", "[a-z]{1,8}", proptest::option::of("[a-z]{1,6}"), proptest::option::of(proptest::collection::vec("[a-z]{1,4}", 0..3))), 0..3)),
    ) {
        use strict_mcp::core::{failure_envelope_schema, Diagnostic, ToolFailure};
        let schema = CompiledSchema::compile_value(&failure_envelope_schema()).unwrap();
        let mut failure = ToolFailure::new(code, message).retryable(retryable);
        if let Some(d) = diags {
            failure = failure.with_diagnostics(d.into_iter().map(|(pointer, keyword, expected, allowed_keys)| Diagnostic {
                pointer, message: format!("{keyword} failed"), keyword, expected, allowed_keys,
            }).collect());
        }
        let envelope = failure.envelope();
        prop_assert!(schema.validate_value(&envelope).is_ok(), "{}", envelope);
        prop_assert_eq!(envelope["failure"]["code"].as_str().unwrap(), code.as_str());
    }
}
