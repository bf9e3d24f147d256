//! Exact-text stand-ins for the three schema types whose bytes the server must keep.
//!
//! typify would read a tool's `inputSchema` / `outputSchema` and a result's
//! `structuredContent` into maps (keys re-sorted, numbers through serde_json), while the
//! server publishes registered schemas and tool results byte for byte. `build.rs` replaces
//! the generated `ToolInputSchema`, `ToolOutputSchema` and `CallToolResultStructuredContent`
//! with these types, so the generated `Tool` and `CallToolResult` hold the exact text and
//! server and client share one `Tool`.
//!
//! Each keeps the constraint the generated type enforced when it is decoded: an input
//! schema is an object whose `type` is `"object"`, an output schema is an object, both with
//! a string `$schema` if any; structured content is any JSON value, an explicit `null`
//! included (the generated `CallToolResult` reads it with `deserialize_explicit_null`).
//! Decoding goes through `serde_json::Value` so that it works under the generated untagged
//! unions too (which buffer their input, where a `RawValue` cannot be read); the decoded
//! text is serde_json's writing of that value. Text built by the server (the registry's
//! schemas, a handler's result) is kept as it was given.
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

use std::fmt;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;

/// Why a JSON text is not a tool schema of the required shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchemaShapeError {
    /// The root is not a JSON object.
    NotAnObject,
    /// An input schema's root does not declare `"type": "object"`.
    TypeNotObject,
    /// `$schema` is present but not a string.
    DialectNotAString,
}

impl fmt::Display for SchemaShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::NotAnObject => "the schema is not a JSON object",
            Self::TypeNotObject => "the schema's root does not declare `\"type\": \"object\"`",
            Self::DialectNotAString => "`$schema` is not a string",
        })
    }
}

impl std::error::Error for SchemaShapeError {}

/// The checks of the generated schema structs: an object, `$schema` a string (or `null`,
/// which the generated `Option<String>` read as absent), and for an input schema
/// `type: "object"`.
fn check_shape(value: &Value, input: bool) -> Result<(), SchemaShapeError> {
    let object = value.as_object().ok_or(SchemaShapeError::NotAnObject)?;
    if !matches!(
        object.get("$schema"),
        None | Some(Value::Null | Value::String(_))
    ) {
        return Err(SchemaShapeError::DialectNotAString);
    }
    if input && object.get("type").and_then(Value::as_str) != Some("object") {
        return Err(SchemaShapeError::TypeNotObject);
    }
    Ok(())
}

/// [`check_shape`] on exact text, reading only the two members it checks (the rest is
/// skipped unparsed, so a number past `f64` elsewhere in the schema is no obstacle).
fn parse_checked(raw: &RawValue, input: bool) -> Result<(), SchemaShapeError> {
    #[derive(Deserialize)]
    struct Root<'a> {
        #[serde(rename = "type", default, borrow)]
        type_: Option<&'a RawValue>,
        #[serde(rename = "$schema", default, borrow)]
        schema: Option<&'a RawValue>,
    }
    // A derived struct would also read an array (`["object"]`) positionally.
    if !raw.get().trim_start().starts_with('{') {
        return Err(SchemaShapeError::NotAnObject);
    }
    let root: Root<'_> =
        serde_json::from_str(raw.get()).map_err(|_| SchemaShapeError::NotAnObject)?;
    if let Some(schema) = root.schema {
        serde_json::from_str::<Option<String>>(schema.get())
            .map_err(|_| SchemaShapeError::DialectNotAString)?;
    }
    let is_object =
        |t: &RawValue| serde_json::from_str::<String>(t.get()).is_ok_and(|t| t == "object");
    if input && !root.type_.is_some_and(is_object) {
        return Err(SchemaShapeError::TypeNotObject);
    }
    Ok(())
}

/// Reads any JSON value and keeps it as text; `shape` checks it first.
fn decode_text<'de, D: Deserializer<'de>>(
    deserializer: D,
    shape: impl FnOnce(&Value) -> Result<(), String>,
) -> Result<Box<RawValue>, D::Error> {
    let value = Value::deserialize(deserializer)?;
    shape(&value).map_err(D::Error::custom)?;
    serde_json::value::to_raw_value(&value).map_err(D::Error::custom)
}

macro_rules! exact_text {
    ($name:ident) => {
        impl $name {
            /// The exact JSON text.
            #[must_use]
            pub fn get(&self) -> &str {
                self.0.get()
            }

            /// The exact JSON text as a [`RawValue`].
            #[must_use]
            pub fn as_raw(&self) -> &RawValue {
                &self.0
            }

            /// The owned [`RawValue`].
            #[must_use]
            pub fn into_raw(self) -> Box<RawValue> {
                self.0
            }
        }

        /// Compares the exact text: the same schema written differently is a different one.
        impl PartialEq for $name {
            fn eq(&self, other: &Self) -> bool {
                self.0.get() == other.0.get()
            }
        }

        impl Eq for $name {}

        /// Writes the exact text.
        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                self.0.serialize(serializer)
            }
        }
    };
}

/// A tool's `inputSchema`: a JSON Schema object with `"type": "object"` at its root, kept as
/// its exact text.
///
/// ```
/// use serde_json::value::RawValue;
/// use strict_mcp::wire::{SchemaShapeError, ToolInputSchema};
/// let ok = RawValue::from_string(r#"{"type":"object","properties":{"n":{"maximum":123456789012345678901234567890}}}"#.into()).unwrap();
/// assert_eq!(ToolInputSchema::new(ok).unwrap().get(),
///     r#"{"type":"object","properties":{"n":{"maximum":123456789012345678901234567890}}}"#);
/// let array = RawValue::from_string(r#"{"type":"array"}"#.into()).unwrap();
/// assert_eq!(ToolInputSchema::new(array), Err(SchemaShapeError::TypeNotObject));
/// ```
#[derive(Debug, Clone)]
pub struct ToolInputSchema(Box<RawValue>);

impl ToolInputSchema {
    /// The schema `raw`, checked as the generated type checked it on decode.
    ///
    /// # Errors
    /// [`SchemaShapeError`] when `raw` is not an object with `"type": "object"` or its
    /// `$schema` is not a string.
    pub fn new(raw: Box<RawValue>) -> Result<Self, SchemaShapeError> {
        parse_checked(&raw, true)?;
        Ok(Self(raw))
    }
}

exact_text!(ToolInputSchema);

impl<'de> Deserialize<'de> for ToolInputSchema {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        decode_text(deserializer, |v| {
            check_shape(v, true).map_err(|e| format!("inputSchema: {e}"))
        })
        .map(Self)
    }
}

/// A tool's `outputSchema`: a JSON Schema object, kept as its exact text.
#[derive(Debug, Clone)]
pub struct ToolOutputSchema(Box<RawValue>);

impl ToolOutputSchema {
    /// The schema `raw`, checked as the generated type checked it on decode.
    ///
    /// # Errors
    /// [`SchemaShapeError`] when `raw` is not an object or its `$schema` is not a string.
    pub fn new(raw: Box<RawValue>) -> Result<Self, SchemaShapeError> {
        parse_checked(&raw, false)?;
        Ok(Self(raw))
    }

    /// A schema the registry compiled, as registered: a boolean schema is bundled by the
    /// direct wrapper as it is, so the registry does not refuse one here.
    pub(crate) fn registered(raw: Box<RawValue>) -> Self {
        Self(raw)
    }
}

exact_text!(ToolOutputSchema);

impl<'de> Deserialize<'de> for ToolOutputSchema {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        decode_text(deserializer, |v| {
            check_shape(v, false).map_err(|e| format!("outputSchema: {e}"))
        })
        .map(Self)
    }
}

/// A tool result's `structuredContent`: any JSON value, kept as its exact text; `null` is a
/// value (`Some(null)`), distinct from an absent member (`None`).
///
/// ```
/// use serde_json::value::RawValue;
/// use strict_mcp::wire::StructuredContent;
/// let n = StructuredContent::from(RawValue::from_string("12345678901234567890123".into()).unwrap());
/// assert_eq!(serde_json::to_string(&n).unwrap(), "12345678901234567890123");
/// ```
#[derive(Debug, Clone)]
pub struct StructuredContent(Box<RawValue>);

impl From<Box<RawValue>> for StructuredContent {
    fn from(raw: Box<RawValue>) -> Self {
        Self(raw)
    }
}

exact_text!(StructuredContent);

impl<'de> Deserialize<'de> for StructuredContent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        decode_text(deserializer, |_| Ok(())).map(Self)
    }
}
