//! `invalid_arguments` diagnostics follow local `$ref`: the allowed keys of a typo inside a
//! referenced object are that object's keys (O13, E23 bound, E24 `$ref`/`$defs`/`$anchor`).

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::value::RawValue;
use strict_mcp::core::schema::{derive_schema, CompiledSchema, Side, MAX_REF_DEPTH};
use strict_mcp::core::{
    Caller, Diagnostic, DynamicOutput, FailureCode, Invocation, RegistryBuilder, ToolDef, ToolReply,
};

/// A recursive type: the portable profile keeps recursive definitions as `$ref`.
#[derive(Deserialize, JsonSchema)]
struct Node {
    /// Label of this node.
    label: String,
    /// Child nodes.
    #[serde(default)]
    children: Vec<Node>,
}

#[derive(Deserialize, JsonSchema)]
struct TreeIn {
    /// The tree to count.
    root: Node,
}

fn diagnostics(reply: ToolReply) -> Vec<Diagnostic> {
    match reply {
        ToolReply::Failure(f) => {
            assert_eq!(f.code, FailureCode::InvalidArguments);
            f.diagnostics.expect("diagnostics")
        }
        other => panic!("expected a failure, got {other:?}"),
    }
}

fn keys(list: &[&str]) -> Option<Vec<String>> {
    Some(list.iter().map(|k| (*k).to_owned()).collect())
}

#[tokio::test]
async fn o13_typed_recursive_struct_typo_lists_the_referenced_objects_keys() {
    let schema = derive_schema::<TreeIn>(Side::Input);
    // The nested struct really is reached through `$ref` (otherwise this test proves nothing).
    let text = schema.to_string();
    assert!(text.contains(r##""$ref":"#/$defs/Node""##), "{text}");
    let tool = ToolDef::typed("count", |_inv: Invocation, t: TreeIn| async move {
        Ok::<_, strict_mcp::core::ToolError>(Count {
            nodes: count(&t.root),
        })
    });
    let registry = RegistryBuilder::new().tool(tool).build().unwrap();
    let args = RawValue::from_string(
        r#"{"root":{"label":"a","children":[{"label":"b","chidlren":[]}]}}"#.to_owned(),
    )
    .unwrap();
    let reply = registry
        .call_tool(Invocation::new(Caller::anonymous()), "count", Some(&args))
        .await
        .unwrap();
    let d = diagnostics(reply);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].pointer, "/root/children/0");
    assert_eq!(d[0].keyword, "additionalProperties");
    assert_eq!(d[0].message, "unexpected properties: chidlren");
    assert_eq!(d[0].allowed_keys, keys(&["children", "label"]));
    // The corrected arguments pass.
    let args = RawValue::from_string(
        r#"{"root":{"label":"a","children":[{"label":"b","children":[]}]}}"#.to_owned(),
    )
    .unwrap();
    let reply = registry
        .call_tool(Invocation::new(Caller::anonymous()), "count", Some(&args))
        .await
        .unwrap();
    match reply {
        ToolReply::Success { structured, .. } => {
            assert_eq!(structured.unwrap().get(), r#"{"nodes":2}"#)
        }
        other => panic!("{other:?}"),
    }
}

fn count(node: &Node) -> u32 {
    u32::from(!node.label.is_empty()) + node.children.iter().map(count).sum::<u32>()
}

#[derive(serde::Serialize, JsonSchema)]
struct Count {
    /// How many nodes.
    nodes: u32,
}

async fn dynamic_diagnostics(schema: &str, args: &str) -> Vec<Diagnostic> {
    let tool = ToolDef::dynamic("t", schema, None, |_i: Invocation, _a| async move {
        Ok(DynamicOutput::default())
    });
    let registry = RegistryBuilder::new().tool(tool).build().unwrap();
    let args = RawValue::from_string(args.to_owned()).unwrap();
    diagnostics(
        registry
            .call_tool(Invocation::new(Caller::anonymous()), "t", Some(&args))
            .await
            .unwrap(),
    )
}

#[tokio::test]
async fn o13_dynamic_defs_and_definitions_refs_list_the_target_keys() {
    for defs in ["$defs", "definitions"] {
        let schema = format!(
            r##"{{"type":"object","properties":{{"top":{{}},"child":{{"$ref":"#/{defs}/Child"}}}},
            "{defs}":{{"Child":{{"type":"object","properties":{{"name":{{"type":"string"}},"size":{{"type":"integer"}}}},"additionalProperties":false}}}}}}"##
        );
        let d = dynamic_diagnostics(&schema, r#"{"child":{"nmae":"x"}}"#).await;
        assert_eq!(d[0].pointer, "/child", "{defs}");
        assert_eq!(d[0].allowed_keys, keys(&["name", "size"]), "{defs}");
    }
}

#[tokio::test]
async fn o13_a_ref_into_an_id_subresource_lists_its_keys_not_the_roots() {
    // The keyword location of this error is relative to the `urn:child` resource; looking it
    // up from the document root would name the root's keys.
    let schema = r##"{"type":"object","properties":{"top":{},"child":{"$ref":"urn:child"}},
        "$defs":{"c":{"$id":"urn:child","type":"object","properties":{"name":{"type":"string"}},"additionalProperties":false}}}"##;
    let d = dynamic_diagnostics(schema, r#"{"child":{"nmae":"x"}}"#).await;
    assert_eq!(d[0].pointer, "/child");
    assert_eq!(d[0].allowed_keys, keys(&["name"]));
}

#[tokio::test]
async fn o13_anchor_refs_are_followed() {
    let schema = r##"{"type":"object","properties":{"top":{},"child":{"$ref":"#kid"}},
        "$defs":{"c":{"$anchor":"kid","type":"object","properties":{"name":{"type":"string"}},"additionalProperties":false}}}"##;
    let d = dynamic_diagnostics(schema, r#"{"child":{"nmae":"x"}}"#).await;
    assert_eq!(d[0].allowed_keys, keys(&["name"]));
}

#[tokio::test]
async fn o13_unevaluated_properties_count_keys_evaluated_through_ref_and_all_of() {
    let schema = r##"{"type":"object","properties":{"child":{
        "$ref":"#/$defs/Base","allOf":[{"properties":{"mixin":{}}}],
        "properties":{"own":{}},"unevaluatedProperties":false}},
        "$defs":{"Base":{"type":"object","properties":{"name":{"type":"string"}}}}}"##;
    let d = dynamic_diagnostics(schema, r#"{"child":{"nmae":"x"}}"#).await;
    assert_eq!(d[0].keyword, "unevaluatedProperties");
    assert_eq!(d[0].allowed_keys, keys(&["mixin", "name", "own"]));
}

#[tokio::test]
async fn o13_additional_properties_beside_ref_lists_only_its_own_properties() {
    // `additionalProperties` ignores the properties a sibling `$ref` declares: listing them
    // would tell the model to send keys that are refused.
    let schema = r##"{"type":"object","properties":{"child":{
        "$ref":"#/$defs/Base","properties":{"own":{}},"additionalProperties":false}},
        "$defs":{"Base":{"type":"object","properties":{"name":{"type":"string"}}}}}"##;
    let d = dynamic_diagnostics(schema, r#"{"child":{"own":1,"nmae":"x"}}"#).await;
    assert_eq!(d[0].keyword, "additionalProperties");
    assert_eq!(d[0].allowed_keys, keys(&["own"]));
}

/// A `$ref` chain of `hops` definitions ending in an object with the key `end`.
fn chain_schema(hops: usize) -> String {
    let mut defs = Vec::new();
    for i in 1..hops {
        defs.push(format!(r##""d{i}":{{"$ref":"#/$defs/d{}"}}"##, i + 1));
    }
    defs.push(format!(r#""d{hops}":{{"properties":{{"end":{{}}}}}}"#));
    format!(
        r##"{{"type":"object","properties":{{"child":{{"$ref":"#/$defs/d1","properties":{{"own":{{}}}},"unevaluatedProperties":false}}}},"$defs":{{{}}}}}"##,
        defs.join(",")
    )
}

#[test]
fn e23_reference_chains_are_followed_at_most_max_ref_depth_deep() {
    let check = |hops: usize| {
        let schema = CompiledSchema::compile(&chain_schema(hops)).unwrap();
        let d = schema
            .validate_bytes(r#"{"child":{"nmae":1}}"#)
            .unwrap_err();
        d[0].allowed_keys.clone()
    };
    assert_eq!(check(MAX_REF_DEPTH), keys(&["end", "own"]));
    assert_eq!(check(MAX_REF_DEPTH + 1), keys(&["own"]));
}
