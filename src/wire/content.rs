//! Content blocks decoded by their `type` tag.
//!
//! The generated `ContentBlock` is an untagged union, so serde would try each variant in turn
//! and format an error for every miss before the one that fits. Every variant has its own
//! constant `type`, so reading the tag first and decoding only that variant accepts and
//! refuses exactly the same blocks, at the cost of one decode. An unknown `type` fails closed,
//! as the union does; unknown members of a known block stay in its `extra` map (lossless).

use serde_json::Value;

use crate::generated as g;

/// Why a content block was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ContentBlockError {
    /// A block must be a JSON object.
    #[error("content block {index} is not an object")]
    NotAnObject {
        /// The block's position in its list.
        index: usize,
    },
    /// `type` is absent or not a string.
    #[error("content block {index} has no string `type`")]
    MissingType {
        /// The block's position in its list.
        index: usize,
    },
    /// A `type` this revision does not define.
    #[error("content block {index} has unknown type `{type_}`")]
    UnknownType {
        /// The block's position in its list.
        index: usize,
        /// The type as received.
        type_: String,
    },
    /// The block does not match the schema of its `type`.
    #[error("content block {index} (`{type_}`) does not match the schema: {message}")]
    Invalid {
        /// The block's position in its list.
        index: usize,
        /// The block's type.
        type_: &'static str,
        /// serde's description of the mismatch.
        message: String,
    },
}

/// Decodes one block (at `index` of its list) by its `type`.
///
/// # Errors
/// [`ContentBlockError`] for a non-object, a missing or unknown `type`, or a block that does
/// not match its type's schema.
pub fn decode_block(index: usize, value: Value) -> Result<g::ContentBlock, ContentBlockError> {
    fn typed<T: serde::de::DeserializeOwned>(
        index: usize,
        type_: &'static str,
        value: Value,
    ) -> Result<T, ContentBlockError> {
        serde_json::from_value(value).map_err(|e| ContentBlockError::Invalid {
            index,
            type_,
            message: e.to_string(),
        })
    }
    let Value::Object(object) = &value else {
        return Err(ContentBlockError::NotAnObject { index });
    };
    let Some(Value::String(tag)) = object.get("type") else {
        return Err(ContentBlockError::MissingType { index });
    };
    let type_: &'static str = match tag.as_str() {
        "text" => "text",
        "image" => "image",
        "audio" => "audio",
        "resource_link" => "resource_link",
        "resource" => "resource",
        other => {
            return Err(ContentBlockError::UnknownType {
                index,
                type_: other.to_owned(),
            })
        }
    };
    Ok(match type_ {
        "text" => g::ContentBlock::TextContent(typed(index, type_, value)?),
        "image" => g::ContentBlock::ImageContent(typed(index, type_, value)?),
        "audio" => g::ContentBlock::AudioContent(typed(index, type_, value)?),
        "resource_link" => g::ContentBlock::ResourceLink(typed(index, type_, value)?),
        _ => g::ContentBlock::EmbeddedResource(typed(index, type_, value)?),
    })
}

/// Decodes a list of blocks, failing on the first refused one.
///
/// # Errors
/// As [`decode_block`].
pub fn decode_blocks(values: Vec<Value>) -> Result<Vec<g::ContentBlock>, ContentBlockError> {
    values
        .into_iter()
        .enumerate()
        .map(|(index, value)| decode_block(index, value))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The tagged decode accepts and refuses what the generated untagged union does.
    #[test]
    fn e18_o74_tagged_decode_matches_the_untagged_union() {
        let cases = [
            json!({"type": "text", "text": "hi"}),
            json!({"type": "text", "text": "hi", "x-extra": [1, 2]}),
            json!({"type": "image", "data": "aGk=", "mimeType": "image/png"}),
            json!({"type": "audio", "data": "aGk=", "mimeType": "audio/wav"}),
            json!({"type": "resource_link", "uri": "file:///a", "name": "a"}),
            json!({"type": "resource", "resource": {"uri": "file:///a", "text": "t"}}),
            json!({"type": "text"}),
            json!({"type": "image", "data": "aGk="}),
            json!({"type": "video", "url": "x"}),
            json!({"text": "no type"}),
            json!({"type": 3, "text": "t"}),
            json!("text"),
        ];
        for case in cases {
            let untagged = serde_json::from_value::<g::ContentBlock>(case.clone());
            let tagged = decode_block(0, case.clone());
            assert_eq!(untagged.is_ok(), tagged.is_ok(), "{case}");
            if let (Ok(a), Ok(b)) = (untagged, tagged) {
                assert_eq!(
                    serde_json::to_value(a).unwrap(),
                    serde_json::to_value(b).unwrap(),
                    "{case}"
                );
            }
        }
    }

    #[test]
    fn o74_refusals_are_typed_and_name_the_block() {
        assert_eq!(
            decode_blocks(vec![
                json!({"type": "text", "text": "a"}),
                json!({"type": "video"})
            ])
            .unwrap_err(),
            ContentBlockError::UnknownType {
                index: 1,
                type_: "video".into()
            }
        );
        assert_eq!(
            decode_block(2, json!([])).unwrap_err(),
            ContentBlockError::NotAnObject { index: 2 }
        );
        assert_eq!(
            decode_block(0, json!({"text": "t"})).unwrap_err(),
            ContentBlockError::MissingType { index: 0 }
        );
        assert!(matches!(
            decode_block(0, json!({"type": "text", "text": 1})).unwrap_err(),
            ContentBlockError::Invalid {
                index: 0,
                type_: "text",
                ..
            }
        ));
        // Unknown members of a known block are kept (lossless).
        let block = decode_block(0, json!({"type": "text", "text": "a", "x-k": {"n": 1}})).unwrap();
        assert_eq!(
            serde_json::to_value(block).unwrap(),
            json!({"type": "text", "text": "a", "x-k": {"n": 1}})
        );
    }
}
