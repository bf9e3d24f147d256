//! The descriptors are the generated schema types, member for member (O87, O19).
//!
//! `core::descriptor` re-exports the generated types for its leaf descriptors (`Icon`,
//! `ToolAnnotations`, `Annotations`, `PromptArgument`, `Prompt`), the content blocks
//! (`ContentBlock` and its five kinds), `ResourceContents`, `Resource`, `ResourceTemplate`
//! and `PromptMessage`, and keeps `Tool` and `CallToolResult` for exact bytes (its module
//! doc says why). These tests are what keeps that honest: every fully populated descriptor decodes into
//! the generated type the client decodes into with nothing left in a flattened `extra` map
//! (no misspelt or invented member), and a schema example carrying every member decodes into
//! the descriptor and re-encodes to the same value (no member missing).

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Number, Value};

type Extra = Map<String, Value>;
use strict_mcp::core::descriptor::{
    Annotations, AudioContent, BlobResourceContents, CacheHints, CacheScope, CallToolResult,
    ContentBlock, EmbeddedResource, Icon, IconTheme, ImageContent, Prompt, PromptArgument,
    PromptMessage, Resource, ResourceContents, ResourceTemplate, Role, SchemaShapeError,
    TextContent, TextResourceContents, Tool, ToolAnnotations, ToolInputSchema, ToolOutputSchema,
};
use strict_mcp::wire;

fn meta() -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("k".into(), json!(1));
    m
}

fn icon() -> Icon {
    Icon {
        mime_type: Some("image/png".into()),
        sizes: Some(vec!["48x48".to_owned()].into()),
        theme: Some(IconTheme::Dark),
        ..Icon::new("https://example.com/i.png")
    }
}

fn annotations() -> Annotations {
    Annotations {
        audience: Some(vec![Role::User, Role::Assistant].into()),
        priority: Some(Number::from(0)),
        last_modified: Some("2026-01-12T15:00:58Z".into()),
        ..Default::default()
    }
}

fn resource() -> Resource {
    Resource {
        title: Some("A".into()),
        description: Some("d".into()),
        mime_type: Some("text/plain".into()),
        size: Some(0),
        icons: Some(vec![icon()].into()),
        annotations: Some(annotations()),
        meta: Some(meta().into()),
        ..Resource::new("file:///a.txt", "a")
    }
}

fn blocks() -> Vec<ContentBlock> {
    vec![
        ContentBlock::TextContent(TextContent {
            annotations: Some(annotations()),
            meta: Some(meta().into()),
            ..TextContent::new("t")
        }),
        ContentBlock::ImageContent(ImageContent {
            annotations: Some(annotations()),
            meta: Some(meta().into()),
            ..ImageContent::new("AAA=", "image/png")
        }),
        ContentBlock::AudioContent(AudioContent {
            annotations: Some(annotations()),
            meta: Some(meta().into()),
            ..AudioContent::new("AAA=", "audio/wav")
        }),
        ContentBlock::resource_link(resource()),
        ContentBlock::EmbeddedResource(EmbeddedResource {
            annotations: Some(annotations()),
            meta: Some(meta().into()),
            ..EmbeddedResource::new(ResourceContents::TextResourceContents(
                TextResourceContents {
                    mime_type: Some("text/plain".into()),
                    meta: Some(meta().into()),
                    ..TextResourceContents::new("mem://t", "")
                },
            ))
        }),
        ContentBlock::embedded(ResourceContents::BlobResourceContents(
            BlobResourceContents {
                mime_type: Some("application/octet-stream".into()),
                meta: Some(meta().into()),
                ..BlobResourceContents::new("mem://b", b"")
            },
        )),
    ]
}

/// Decodes `hand`'s bytes (plus `add`, members the descriptor leaves to its envelope) into
/// the generated `G`, which must re-encode to the same value.
fn decode<G: Serialize + DeserializeOwned>(hand: &impl Serialize, add: Value) -> G {
    let mut value = serde_json::to_value(hand).unwrap();
    if let (Value::Object(m), Value::Object(add)) = (&mut value, add) {
        m.extend(add);
    }
    let generated: G = serde_json::from_value(value.clone())
        .unwrap_or_else(|e| panic!("not the generated shape: {e}\n{value}"));
    assert_eq!(serde_json::to_value(&generated).unwrap(), value);
    generated
}

/// A member the generated struct does not name lands in its flattened `extra` map and
/// re-encodes unchanged, so equality alone proves nothing: every `extra` must be empty.
fn no_extra(what: &str, extra: &Extra) {
    assert!(
        extra.is_empty(),
        "{what}: members not in the schema: {extra:?}"
    );
}

fn annotations_ok(a: &Option<wire::Annotations>) {
    if let Some(a) = a {
        no_extra("Annotations", &a.extra);
    }
}

fn icons_ok<'a>(icons: impl IntoIterator<Item = &'a wire::Icon>) {
    for i in icons {
        no_extra("Icon", &i.extra);
    }
}

fn block_ok(b: &wire::ContentBlock) {
    match b {
        wire::ContentBlock::TextContent(t) => {
            no_extra("TextContent", &t.extra);
            annotations_ok(&t.annotations);
        }
        wire::ContentBlock::ImageContent(t) => {
            no_extra("ImageContent", &t.extra);
            annotations_ok(&t.annotations);
        }
        wire::ContentBlock::AudioContent(t) => {
            no_extra("AudioContent", &t.extra);
            annotations_ok(&t.annotations);
        }
        wire::ContentBlock::ResourceLink(t) => {
            no_extra("ResourceLink", &t.extra);
            annotations_ok(&t.annotations);
            icons_ok(t.icons.iter().flat_map(|i| i.iter()));
        }
        wire::ContentBlock::EmbeddedResource(t) => {
            no_extra("EmbeddedResource", &t.extra);
            annotations_ok(&t.annotations);
            match &t.resource {
                wire::EmbeddedResourceResource::TextResourceContents(c) => {
                    no_extra("TextResourceContents", &c.extra);
                }
                wire::EmbeddedResourceResource::BlobResourceContents(c) => {
                    no_extra("BlobResourceContents", &c.extra);
                }
            }
        }
    }
}

/// Re-encodes `example` (a schema-valid member set) through the descriptor `H`: a member the
/// descriptor does not know would be dropped silently.
fn lossless<H: Serialize + DeserializeOwned>(example: Value) {
    let hand: H = serde_json::from_value(example.clone()).unwrap();
    assert_eq!(serde_json::to_value(&hand).unwrap(), example);
}

#[test]
fn o87_content_blocks_are_the_generated_content_blocks() {
    let mut seen = Vec::new();
    for block in blocks() {
        let g: wire::ContentBlock = decode(&block, json!({}));
        block_ok(&g);
        seen.push(std::mem::discriminant(&g));
        lossless::<ContentBlock>(serde_json::to_value(&block).unwrap());
    }
    // Each variant decoded as its own generated variant (untagged unions can misclassify).
    let kinds: Vec<&str> = blocks()
        .iter()
        .map(|b| match decode::<wire::ContentBlock>(b, json!({})) {
            wire::ContentBlock::TextContent(_) => "text",
            wire::ContentBlock::ImageContent(_) => "image",
            wire::ContentBlock::AudioContent(_) => "audio",
            wire::ContentBlock::ResourceLink(_) => "resource_link",
            wire::ContentBlock::EmbeddedResource(_) => "resource",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "text",
            "image",
            "audio",
            "resource_link",
            "resource",
            "resource"
        ]
    );
}

#[test]
fn o87_resource_template_and_prompt_are_the_generated_shapes() {
    let r: wire::Resource = decode(&resource(), json!({}));
    no_extra("Resource", &r.extra);
    annotations_ok(&r.annotations);
    icons_ok(r.icons.iter().flat_map(|i| i.iter()));
    lossless::<Resource>(serde_json::to_value(resource()).unwrap());

    let template = ResourceTemplate {
        title: Some("Files".into()),
        description: Some("d".into()),
        mime_type: Some("text/plain".into()),
        icons: Some(vec![icon()].into()),
        annotations: Some(annotations()),
        meta: Some(meta().into()),
        ..ResourceTemplate::new("file:///{path}", "files")
    };
    let t: wire::ResourceTemplate = decode(&template, json!({}));
    no_extra("ResourceTemplate", &t.extra);
    annotations_ok(&t.annotations);
    icons_ok(t.icons.iter().flat_map(|i| i.iter()));
    lossless::<ResourceTemplate>(serde_json::to_value(&template).unwrap());

    let prompt = Prompt {
        title: Some("Greet".into()),
        description: Some("d".into()),
        icons: Some(vec![icon()].into()),
        arguments: Some(
            vec![PromptArgument {
                title: Some("Who".into()),
                description: Some("d".into()),
                required: Some(false),
                ..PromptArgument::new("who")
            }]
            .into(),
        ),
        meta: Some(meta().into()),
        ..Prompt::new("greet")
    };
    let p: wire::Prompt = decode(&prompt, json!({}));
    no_extra("Prompt", &p.extra);
    icons_ok(p.icons.iter().flat_map(|i| i.iter()));
    for a in p.arguments.iter().flat_map(|a| a.iter()) {
        no_extra("PromptArgument", &a.extra);
    }
    lossless::<Prompt>(serde_json::to_value(&prompt).unwrap());

    for block in blocks() {
        let message = PromptMessage::new(Role::Assistant, block);
        let m: wire::PromptMessage = decode(&message, json!({}));
        no_extra("PromptMessage", &m.extra);
        block_ok(&m.content);
        lossless::<PromptMessage>(serde_json::to_value(&message).unwrap());
    }
}

fn raw(text: &str) -> Box<RawValue> {
    RawValue::from_string(text.to_owned()).unwrap()
}

/// A fully populated tool whose schemas carry what a map would lose: member order, a number
/// past `f64`'s exact integers and a number written with an exponent.
fn full_tool() -> Tool {
    let input = r#"{"type":"object","properties":{"n":{"type":"integer","maximum":123456789012345678901234567890}},"required":["n"]}"#;
    let output = r#"{"type":"object","properties":{"z":{"type":"number","minimum":1E2}},"$schema":"https://json-schema.org/draft/2020-12/schema"}"#;
    Tool {
        title: Some("Echo".into()),
        description: Some("d".into()),
        icons: Some(vec![icon()].into()),
        output_schema: Some(ToolOutputSchema::new(raw(output)).unwrap()),
        annotations: Some(ToolAnnotations {
            title: Some("Echo".into()),
            read_only_hint: Some(true),
            destructive_hint: Some(false),
            idempotent_hint: Some(true),
            open_world_hint: Some(false),
            ..Default::default()
        }),
        meta: Some(meta().into()),
        ..Tool::new("echo", ToolInputSchema::new(raw(input)).unwrap())
    }
}

#[test]
fn o87_tool_is_the_generated_tool_with_exact_schemas() {
    let tool = full_tool();
    // One type: the descriptor is the generated `Tool` the client decodes into.
    let t: wire::Tool = decode(&tool, json!({}));
    no_extra("Tool", &t.extra);
    icons_ok(t.icons.iter().flat_map(|i| i.iter()));
    no_extra(
        "ToolAnnotations",
        &t.annotations.as_ref().expect("annotations decoded").extra,
    );
    // ToolAnnotations round-trips on its own too (it is also Deserialize).
    lossless::<ToolAnnotations>(serde_json::to_value(tool.annotations.as_ref()).unwrap());
    // The registered bytes are written as registered, members in the generated order.
    assert_eq!(
        serde_json::to_string(&tool).unwrap(),
        concat!(
            r#"{"annotations":{"destructiveHint":false,"idempotentHint":true,"openWorldHint":false,"readOnlyHint":true,"title":"Echo"},"#,
            r#""description":"d","icons":[{"mimeType":"image/png","sizes":["48x48"],"src":"https://example.com/i.png","theme":"dark"}],"#,
            r#""inputSchema":{"type":"object","properties":{"n":{"type":"integer","maximum":123456789012345678901234567890}},"required":["n"]},"#,
            r#""_meta":{"k":1},"name":"echo","#,
            r#""outputSchema":{"type":"object","properties":{"z":{"type":"number","minimum":1E2}},"$schema":"https://json-schema.org/draft/2020-12/schema"},"#,
            r#""title":"Echo"}"#
        )
    );
    // Schemas compare by their text.
    let mut other = full_tool();
    assert_eq!(tool, other);
    other.input_schema =
        ToolInputSchema::new(raw(r#"{"required":["n"],"type":"object"}"#)).unwrap();
    assert_ne!(tool, other);
}

#[test]
fn o87_an_unknown_tool_member_survives_in_extra_and_is_written_back() {
    let text = r#"{"inputSchema":{"type":"object"},"name":"t","x-new":{"a":[1,null]}}"#;
    let tool: Tool = serde_json::from_str(text).unwrap();
    assert_eq!(tool.extra.get("x-new"), Some(&json!({"a": [1, null]})));
    assert_eq!(serde_json::to_string(&tool).unwrap(), text);
}

#[test]
fn o87_a_decoded_tool_is_refused_as_the_generated_schema_types_refused_it() {
    let decode = |input: &str| {
        serde_json::from_str::<Tool>(&format!(r#"{{"name":"t","inputSchema":{input}}}"#))
            .map(|t| t.input_schema.get().to_owned())
            .map_err(|e| e.to_string())
    };
    assert_eq!(
        decode(r#"{"type":"object"}"#).as_deref(),
        Ok(r#"{"type":"object"}"#)
    );
    // Escapes are read, as the generated enum read them.
    assert!(decode(r#"{"type":"obj\u0065ct"}"#).is_ok());
    for bad in [
        r#"{"type":"array"}"#,
        r#"{"properties":{}}"#,
        r#"{"type":["object"]}"#,
        r#"[{"type":"object"}]"#,
        "true",
        "null",
        r#"{"type":"object","$schema":7}"#,
    ] {
        let e = decode(bad).expect_err(bad);
        assert!(e.starts_with("inputSchema: "), "{bad}: {e}");
    }
    // An output schema is any object (a `$schema`, if present, a string).
    let output = |schema: &str| {
        serde_json::from_str::<Tool>(&format!(
            r#"{{"name":"t","inputSchema":{{"type":"object"}},"outputSchema":{schema}}}"#
        ))
        .map(|t| t.output_schema.map(|s| s.get().to_owned()))
    };
    assert_eq!(
        output(r#"{"type":"array"}"#).unwrap().as_deref(),
        Some(r#"{"type":"array"}"#)
    );
    assert_eq!(output("null").unwrap(), None);
    for bad in ["true", "[]", r#"{"$schema":false}"#] {
        assert!(output(bad).is_err(), "{bad}");
    }
    // Built from text: the same checks, typed.
    assert_eq!(
        ToolInputSchema::new(raw(r#"{"type":"string"}"#)),
        Err(SchemaShapeError::TypeNotObject)
    );
    assert_eq!(
        ToolInputSchema::new(raw(r#"["object"]"#)),
        Err(SchemaShapeError::NotAnObject)
    );
    assert_eq!(
        ToolOutputSchema::new(raw(r#"{"$schema":1}"#)),
        Err(SchemaShapeError::DialectNotAString)
    );
    assert!(ToolOutputSchema::new(raw("{}")).is_ok());
}

#[test]
fn o87_call_result_is_the_generated_shape_with_exact_structured_content() {
    let mut server_info = Map::new();
    server_info.insert("x".into(), json!(1));
    let result = CallToolResult {
        content: blocks(),
        is_error: Some(false),
        meta: Some(wire::ResultMetaObject {
            io_modelcontextprotocol_server_info: None,
            extra: server_info,
        }),
        structured_content: Some(raw(r#"{"n":1}"#).into()),
    };
    // `resultType` is written by the envelope, not the descriptor.
    let r: wire::CallToolResult = decode(&result, json!({"resultType": "complete"}));
    no_extra("CallToolResult", &r.extra);
    r.content.iter().for_each(block_ok);

    // Exact bytes: a number past u64 and an exponent stay as written; `null` is a value.
    let exact = |structured: Option<&str>| {
        let result = CallToolResult {
            content: Vec::new(),
            is_error: None,
            meta: None,
            structured_content: structured.map(|s| raw(s).into()),
        };
        serde_json::to_string(&result).unwrap()
    };
    assert_eq!(
        exact(Some("[123456789012345678901234567890,1E2]")),
        r#"{"content":[],"structuredContent":[123456789012345678901234567890,1E2]}"#
    );
    assert_eq!(
        exact(Some("null")),
        r#"{"content":[],"structuredContent":null}"#
    );
    assert_eq!(exact(None), r#"{"content":[]}"#);

    // The client's generated type keeps an explicit `null` apart from an absent member.
    let read = |text: &str| {
        serde_json::from_str::<wire::CallToolResult>(text)
            .unwrap()
            .structured_content
            .map(|s| s.get().to_owned())
    };
    let head = r#"{"content":[],"resultType":"complete""#;
    assert_eq!(
        read(&format!("{head},\"structuredContent\":null}}")).as_deref(),
        Some("null")
    );
    assert_eq!(read(&format!("{head}}}")), None);
}

#[test]
fn o87_generated_enums_keep_the_bytes() {
    assert_eq!(
        serde_json::to_string(&[Role::User, Role::Assistant]).unwrap(),
        r#"["user","assistant"]"#
    );
    assert_eq!(
        serde_json::to_string(&CacheHints::PRIVATE_NO_STORE).unwrap(),
        r#"{"ttlMs":0,"cacheScope":"private"}"#
    );
    let public = CacheHints {
        ttl_ms: 5,
        cache_scope: CacheScope::Public,
    };
    assert_eq!(
        serde_json::to_string(&public).unwrap(),
        r#"{"ttlMs":5,"cacheScope":"public"}"#
    );
    // Wrong tags are refused, as before.
    assert!(serde_json::from_str::<Role>(r#""User""#).is_err());
    assert!(serde_json::from_str::<CacheScope>(r#""shared""#).is_err());
}

/// One unknown member per generated type, at its own level: kept in that type's `extra`,
/// not dropped and not misplaced.
fn with_unknown(mut value: Value, at: &[&str]) -> Value {
    let mut target = &mut value;
    for key in at {
        target = &mut target[*key];
    }
    target
        .as_object_mut()
        .expect("an object")
        .insert("x-unknown".into(), json!({"kept": [1, "two"]}));
    value
}

fn kept(what: &str, extra: &Extra) {
    assert_eq!(
        extra.get("x-unknown"),
        Some(&json!({"kept": [1, "two"]})),
        "{what}: the unknown member is not in extra"
    );
    assert_eq!(extra.len(), 1, "{what}: {extra:?}");
}

/// Every type this crate now takes from the generated code keeps a member it does not name in
/// its flattened `extra` and writes it back (O87, O121): the server's authoring types lose no
/// member a peer or a newer schema adds.
#[test]
fn o87_o121_an_unknown_member_survives_in_extra_and_is_written_back() {
    for (index, block) in blocks().into_iter().enumerate() {
        let value = with_unknown(serde_json::to_value(&block).unwrap(), &[]);
        // Decoded the way the client decodes (by tag), and the way serde would (untagged).
        let decoded = strict_mcp::wire::content::decode_block(index, value.clone()).unwrap();
        let untagged: ContentBlock = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(decoded, untagged);
        assert_ne!(decoded, block, "the unknown member counts in equality");
        assert_eq!(serde_json::to_value(&decoded).unwrap(), value);
        match &decoded {
            ContentBlock::TextContent(b) => kept("TextContent", &b.extra),
            ContentBlock::ImageContent(b) => kept("ImageContent", &b.extra),
            ContentBlock::AudioContent(b) => kept("AudioContent", &b.extra),
            ContentBlock::ResourceLink(b) => kept("ResourceLink", &b.extra),
            ContentBlock::EmbeddedResource(b) => kept("EmbeddedResource", &b.extra),
        }
    }
    // The embedded contents keep theirs one level down, the block's own `extra` stays empty.
    for block in &blocks()[4..] {
        let value = with_unknown(serde_json::to_value(block).unwrap(), &["resource"]);
        let ContentBlock::EmbeddedResource(e) =
            strict_mcp::wire::content::decode_block(0, value.clone()).unwrap()
        else {
            panic!("not an embedded resource: {value}");
        };
        no_extra("EmbeddedResource", &e.extra);
        match &e.resource {
            ResourceContents::TextResourceContents(c) => kept("TextResourceContents", &c.extra),
            ResourceContents::BlobResourceContents(c) => kept("BlobResourceContents", &c.extra),
        }
        assert_eq!(serde_json::to_value(&e).unwrap(), value);
    }

    let value = with_unknown(serde_json::to_value(resource()).unwrap(), &[]);
    let r: Resource = serde_json::from_value(value.clone()).unwrap();
    kept("Resource", &r.extra);
    assert_eq!(serde_json::to_value(&r).unwrap(), value);
    // A link made from it carries the unknown member along.
    let link = serde_json::to_value(ContentBlock::resource_link(r)).unwrap();
    assert_eq!(link["x-unknown"], json!({"kept": [1, "two"]}));
    assert_eq!(link["type"], json!("resource_link"));

    let template = ResourceTemplate::new("file:///{path}", "files");
    let value = with_unknown(serde_json::to_value(&template).unwrap(), &[]);
    let t: ResourceTemplate = serde_json::from_value(value.clone()).unwrap();
    kept("ResourceTemplate", &t.extra);
    assert_ne!(t, template);
    assert_eq!(serde_json::to_value(&t).unwrap(), value);

    let message = PromptMessage::user("hi");
    let value = with_unknown(serde_json::to_value(&message).unwrap(), &[]);
    let m: PromptMessage = serde_json::from_value(value.clone()).unwrap();
    kept("PromptMessage", &m.extra);
    assert_ne!(m, message);
    assert_eq!(serde_json::to_value(&m).unwrap(), value);
    let value = with_unknown(serde_json::to_value(&message).unwrap(), &["content"]);
    let m: PromptMessage = serde_json::from_value(value.clone()).unwrap();
    no_extra("PromptMessage", &m.extra);
    let ContentBlock::TextContent(c) = &m.content else {
        panic!("not text: {value}");
    };
    kept("TextContent", &c.extra);
    assert_eq!(serde_json::to_value(&m).unwrap(), value);
}
