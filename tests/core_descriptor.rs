//! Wire shapes of the descriptor structs (E18, F11, G3, O19, O22).

use serde_json::Number;
use strict_mcp::core::descriptor::{
    Annotations, ContentBlock, Resource, ResourceContents, Role, TextContent, ToolAnnotations,
};
use strict_mcp::wire::content::{decode_block, ContentBlockError};

fn roundtrip(block: &ContentBlock, expected: &str) {
    let text = serde_json::to_string(block).unwrap();
    assert_eq!(text, expected);
    let back = decode_block(0, serde_json::from_str(&text).unwrap()).unwrap();
    assert_eq!(&back, block);
}

/// Every block kind, with the presence of empty and zero members (O19). The generated types
/// write their members in the schema's (alphabetical) order, so `type` comes last; the bytes
/// changed deliberately from the hand-written `{"type":"text","text":…}` order (X: JSON
/// objects are unordered and the schema is the spec's shape).
#[test]
fn o19_all_content_variants_and_presence() {
    let zero = Annotations {
        audience: Some(vec![Role::User, Role::Assistant].into()),
        priority: Some(Number::from(0)),
        ..Default::default()
    };
    roundtrip(
        &ContentBlock::TextContent(TextContent {
            annotations: Some(zero.clone()),
            ..TextContent::new("")
        }),
        r#"{"annotations":{"audience":["user","assistant"],"priority":0},"text":"","type":"text"}"#,
    );
    roundtrip(
        &ContentBlock::image("", "image/png"),
        r#"{"data":"","mimeType":"image/png","type":"image"}"#,
    );
    roundtrip(
        &ContentBlock::audio("AAA=", "audio/wav"),
        r#"{"data":"AAA=","mimeType":"audio/wav","type":"audio"}"#,
    );
    let mut link = Resource::new("file:///a.txt", "a");
    link.size = Some(0);
    roundtrip(
        &ContentBlock::resource_link(link),
        r#"{"name":"a","size":0,"type":"resource_link","uri":"file:///a.txt"}"#,
    );
    roundtrip(
        &ContentBlock::embedded(
            ResourceContents::text("file:///a.txt", "").with_mime_type("text/plain"),
        ),
        r#"{"resource":{"mimeType":"text/plain","text":"","uri":"file:///a.txt"},"type":"resource"}"#,
    );
    roundtrip(
        &ContentBlock::embedded(ResourceContents::blob("mem://b", b"")),
        r#"{"resource":{"blob":"","uri":"mem://b"},"type":"resource"}"#,
    );
}

/// A block decoded through the tag-first decoder equals the authored one, and a `type` this
/// revision does not define is a typed refusal naming the block (E18, O74).
#[test]
fn e18_o74_blocks_decode_by_their_tag_into_the_authored_value() {
    let blocks = [
        ContentBlock::text("t"),
        ContentBlock::image("AAA=", "image/png"),
        ContentBlock::audio("AAA=", "audio/wav"),
        ContentBlock::resource_link(Resource::new("file:///a", "a")),
        ContentBlock::embedded(ResourceContents::text("mem://t", "x")),
        ContentBlock::embedded(ResourceContents::blob("mem://b", b"\x00")),
    ];
    for (index, block) in blocks.iter().enumerate() {
        let value = serde_json::to_value(block).unwrap();
        assert_eq!(&decode_block(index, value).unwrap(), block);
    }
    assert_eq!(
        decode_block(3, serde_json::json!({"type": "video", "text": "t"})).unwrap_err(),
        ContentBlockError::UnknownType {
            index: 3,
            type_: "video".to_owned()
        }
    );
    // Equality sees every member: kinds, annotations and unknown members all count.
    assert_ne!(
        ContentBlock::text("t"),
        ContentBlock::image("t", "image/png")
    );
    let mut annotated = TextContent::new("t");
    annotated.annotations = Some(Annotations::default());
    assert_ne!(
        ContentBlock::TextContent(annotated),
        ContentBlock::text("t")
    );
    let mut extra = TextContent::new("t");
    extra.extra.insert("x-k".to_owned(), serde_json::json!(1));
    assert_ne!(ContentBlock::TextContent(extra), ContentBlock::text("t"));
    assert_eq!(ContentBlock::text("t").as_text(), Some("t"));
    assert_eq!(ContentBlock::image("t", "image/png").as_text(), None);
}

#[test]
fn priority_decimals_take_the_shortest_form() {
    let block: ContentBlock =
        serde_json::from_str(r#"{"type":"text","text":"x","annotations":{"priority":0.50}}"#)
            .unwrap();
    // Without arbitrary_precision serde_json keeps the value, not the digits: 0.50 → 0.5.
    assert_eq!(
        serde_json::to_string(&block).unwrap(),
        r#"{"annotations":{"priority":0.5},"text":"x","type":"text"}"#
    );
}

#[test]
fn o22_all_hints_false_stay_present() {
    let a = ToolAnnotations {
        read_only_hint: Some(false),
        destructive_hint: Some(false),
        idempotent_hint: Some(false),
        open_world_hint: Some(false),
        ..Default::default()
    };
    // The generated type's member order (the schema's, alphabetical).
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        r#"{"destructiveHint":false,"idempotentHint":false,"openWorldHint":false,"readOnlyHint":false}"#
    );
    assert!(!a.is_empty());
    assert!(ToolAnnotations::default().is_empty());
    assert_eq!(
        serde_json::to_string(&ToolAnnotations::default()).unwrap(),
        "{}"
    );
}
