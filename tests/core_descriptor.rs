//! Wire shapes of the descriptor structs (E18, F11, G3, O19, O22).

use serde_json::Number;
use strict_mcp::core::descriptor::{
    Annotations, ContentBlock, Resource, ResourceContents, Role, ToolAnnotations,
};

fn roundtrip(block: &ContentBlock, expected: &str) {
    let text = serde_json::to_string(block).unwrap();
    assert_eq!(text, expected);
    let back: ContentBlock = serde_json::from_str(&text).unwrap();
    assert_eq!(&back, block);
}

#[test]
fn o19_all_content_variants_and_presence() {
    let zero = Annotations {
        audience: Some(vec![Role::User, Role::Assistant].into()),
        priority: Some(Number::from(0)),
        ..Default::default()
    };
    roundtrip(
        &ContentBlock::Text {
            text: String::new(),
            annotations: Some(zero.clone()),
            meta: None,
        },
        r#"{"type":"text","text":"","annotations":{"audience":["user","assistant"],"priority":0}}"#,
    );
    roundtrip(
        &ContentBlock::Image {
            data: String::new(),
            mime_type: "image/png".into(),
            annotations: None,
            meta: None,
        },
        r#"{"type":"image","data":"","mimeType":"image/png"}"#,
    );
    roundtrip(
        &ContentBlock::Audio {
            data: "AAA=".into(),
            mime_type: "audio/wav".into(),
            annotations: None,
            meta: None,
        },
        r#"{"type":"audio","data":"AAA=","mimeType":"audio/wav"}"#,
    );
    let mut link = Resource::new("file:///a.txt", "a");
    link.size = Some(0);
    roundtrip(
        &ContentBlock::ResourceLink(Box::new(link)),
        r#"{"type":"resource_link","uri":"file:///a.txt","name":"a","size":0}"#,
    );
    roundtrip(
        &ContentBlock::Resource {
            resource: ResourceContents::text("file:///a.txt", "").with_mime_type("text/plain"),
            annotations: None,
            meta: None,
        },
        r#"{"type":"resource","resource":{"uri":"file:///a.txt","mimeType":"text/plain","text":""}}"#,
    );
    roundtrip(
        &ContentBlock::Resource {
            resource: ResourceContents::blob("mem://b", b""),
            annotations: None,
            meta: None,
        },
        r#"{"type":"resource","resource":{"uri":"mem://b","blob":""}}"#,
    );
}

#[test]
fn priority_decimals_take_the_shortest_form() {
    let block: ContentBlock =
        serde_json::from_str(r#"{"type":"text","text":"x","annotations":{"priority":0.50}}"#)
            .unwrap();
    // Without arbitrary_precision serde_json keeps the value, not the digits: 0.50 → 0.5.
    assert_eq!(
        serde_json::to_string(&block).unwrap(),
        r#"{"type":"text","text":"x","annotations":{"priority":0.5}}"#
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
