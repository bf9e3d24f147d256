//! `RawValue`s of text already known to be valid JSON, made without parsing it again.
//!
//! serde_json's own `RawValue` visitors take the text they are handed as given; fed through
//! serde's `MapDeserializer` under serde_json's private token, they wrap text in a `RawValue`
//! with no second pass. Only for text this crate wrote or already validated: the ingress
//! scan's members, the escaper's output, and the members of a `RawValue` split by
//! [`super::members`] (each member of valid JSON is valid JSON). That second parse was a full
//! pass over every request's `params` and again over its members (issue #23).

use serde::de::value::{
    BorrowedStrDeserializer, MapDeserializer, StrDeserializer, StringDeserializer,
};
use serde::Deserialize;
use serde_json::value::RawValue;

/// serde_json's private name for its raw value type: `RawValue` serialises as a struct, and
/// deserialises as a newtype struct, of this name.
pub(crate) const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// A `Box<RawValue>` holding `text` as given. Only for valid JSON text (see the module).
pub(crate) fn owned_unchecked(text: String) -> Result<Box<RawValue>, serde_json::Error> {
    let entry = std::iter::once((
        StrDeserializer::<serde_json::Error>::new(RAW_VALUE_TOKEN),
        StringDeserializer::<serde_json::Error>::new(text),
    ));
    Box::<RawValue>::deserialize(MapDeserializer::new(entry))
}

/// A `&RawValue` borrowing `text` as given. Only for valid JSON text (see the module).
pub(crate) fn borrowed_unchecked(text: &str) -> Result<&RawValue, serde_json::Error> {
    let entry = std::iter::once((
        StrDeserializer::<serde_json::Error>::new(RAW_VALUE_TOKEN),
        BorrowedStrDeserializer::<serde_json::Error>::new(text),
    ));
    <&RawValue>::deserialize(MapDeserializer::new(entry))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_keep_the_text_byte_for_byte_and_borrow_it() {
        let text = r#"{"a" : [1, 2.50, "\u00e9"], "b":1e400}"#;
        assert_eq!(owned_unchecked(text.to_owned()).unwrap().get(), text);
        let borrowed = borrowed_unchecked(text).unwrap();
        assert_eq!(borrowed.get(), text);
        assert!(std::ptr::eq(borrowed.get(), text), "borrowed, not copied");
    }
}
