//! The Streamable HTTP request-metadata headers, for both roles and any runtime.
//!
//! Everything here works over header names and raw value bytes, so any HTTP server
//! library or a client can use it:
//!
//! * the header names ([`PROTOCOL_VERSION_HEADER`], [`METHOD_HEADER`], [`NAME_HEADER`],
//!   [`PARAM_HEADER_PREFIX`]) and the base64 sentinel ([`encode_header_value`],
//!   [`decode_header_value`]);
//! * the `x-mcp-header` annotation rules: [`param_headers`] parses a tool's input schema
//!   once into [`ParamHeader`]s, which both roles keep with the tool;
//! * the client side: [`required_headers`], the headers a request must carry;
//! * the server side: [`check_request_headers`], a request's headers against its body,
//!   and the size bound on protocol headers.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use base64::Engine as _;
use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::wire::limits;
use crate::wire::members::Members;
use crate::wire::meta::{json_str, PROTOCOL_VERSION as PROTOCOL_VERSION_KEY};

/// The `MCP-Protocol-Version` header, lower-case, as HTTP/2 spells names.
pub const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";
/// The `Mcp-Method` header.
pub const METHOD_HEADER: &str = "mcp-method";
/// The `Mcp-Name` header.
pub const NAME_HEADER: &str = "mcp-name";
/// Prefix of the `Mcp-Param-{name}` headers.
pub const PARAM_HEADER_PREFIX: &str = "mcp-param-";
/// Prefix that marks a header as a protocol header for the 8 KiB bound.
pub const PROTOCOL_HEADER_PREFIX: &str = "mcp-";
/// Opening marker of a base64-encoded header value; case-sensitive.
pub const BASE64_OPEN: &str = "=?base64?";
/// Closing marker of a base64-encoded header value.
pub const BASE64_CLOSE: &str = "?=";

/// The canonical spelling of a protocol header name, for messages and for clients that send
/// headers as written (names compare case-insensitively).
pub fn display_name(name: &str) -> String {
    match name {
        PROTOCOL_VERSION_HEADER => "MCP-Protocol-Version".to_owned(),
        METHOD_HEADER => "Mcp-Method".to_owned(),
        NAME_HEADER => "Mcp-Name".to_owned(),
        other => match other.strip_prefix(PARAM_HEADER_PREFIX) {
            Some(rest) => format!("Mcp-Param-{rest}"),
            None => other.to_owned(),
        },
    }
}

// ---------------------------------------------------------------------------------------------
// Value encoding (D18, D20, D21, D27)

/// Whether a text must travel base64-encoded: anything outside visible ASCII and space
/// (non-ASCII, CR, LF, tab and other controls), leading or trailing whitespace, or a value
/// that itself looks like the sentinel.
pub fn needs_base64(text: &str) -> bool {
    !text.bytes().all(|b| (0x20..=0x7e).contains(&b))
        || text.starts_with(' ')
        || text.ends_with(' ')
        || (text.starts_with(BASE64_OPEN) && text.ends_with(BASE64_CLOSE))
}

/// The header value that carries `text`: the text itself when it is safe plain
/// ASCII, else `=?base64?{base64 of its UTF-8}?=`.
pub fn encode_header_value(text: &str) -> Cow<'_, str> {
    if needs_base64(text) {
        let b64 = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
        Cow::Owned(format!("{BASE64_OPEN}{b64}{BASE64_CLOSE}"))
    } else {
        Cow::Borrowed(text)
    }
}

/// Decodes a `Mcp-Name` / `Mcp-Param-*` value: `=?base64?…?=` → its UTF-8 text; anything
/// else is taken literally. `None` for a malformed sentinel.
pub fn decode_header_value(value: &str) -> Option<String> {
    decode_header_text(value).map(Cow::into_owned)
}

/// [`decode_header_value`] without a copy for a literal value.
pub fn decode_header_text(value: &str) -> Option<Cow<'_, str>> {
    if value.len() >= BASE64_OPEN.len() + BASE64_CLOSE.len()
        && value.starts_with(BASE64_OPEN)
        && value.ends_with(BASE64_CLOSE)
    {
        let inner = &value[BASE64_OPEN.len()..value.len() - BASE64_CLOSE.len()];
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(inner)
            .ok()?;
        return String::from_utf8(bytes).ok().map(Cow::Owned);
    }
    Some(Cow::Borrowed(value))
}

/// Whether a received header value uses only visible ASCII, space and tab (RFC 9110 field
/// values, without obsolete text), the only bytes a server accepts.
pub fn plain_ascii(value: &[u8]) -> bool {
    value
        .iter()
        .all(|&b| b == b'\t' || (0x20..=0x7e).contains(&b))
}

// ---------------------------------------------------------------------------------------------
// `x-mcp-header` annotations (D22, D24)

/// Largest integer allowed in an `x-mcp-header` integer property (2^53 − 1).
pub const MAX_HEADER_INTEGER: i64 = (1_i64 << 53) - 1;

/// A violation of the `x-mcp-header` rules: the property pointer and the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderViolation {
    /// JSON Pointer of the annotated subschema inside the input schema.
    pub property: String,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for HeaderViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "property `{}`: {}", self.property, self.reason)
    }
}

impl std::error::Error for HeaderViolation {}

/// The JSON type an annotated property declares (only these three are allowed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParamType {
    /// `"type": "string"`.
    String,
    /// `"type": "integer"`.
    Integer,
    /// `"type": "boolean"`.
    Boolean,
}

/// One parsed `x-mcp-header` annotation of a tool's input schema, kept with the tool so no
/// request re-parses the schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamHeader {
    /// The property path inside `arguments` (the chain of `properties` keys).
    pub path: Vec<String>,
    /// The annotation's value as declared (`Region` → `Mcp-Param-Region`).
    pub name: String,
    /// The declared type.
    pub ty: ParamType,
    /// The header name in lower case (`mcp-param-region`), for lookups.
    key: String,
}

impl ParamHeader {
    /// The header name in lower case, e.g. `mcp-param-region`.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The header name as sent, e.g. `Mcp-Param-Region`.
    pub fn header_name(&self) -> String {
        format!("Mcp-Param-{}", self.name)
    }

    /// The value at this annotation's path in `arguments`; `None` when absent or null (no
    /// header is sent or expected).
    pub fn value_in<'v>(&self, arguments: &'v Value) -> Option<&'v Value> {
        self.path
            .iter()
            .try_fold(arguments, |v, key| v.get(key))
            .filter(|v| !v.is_null())
    }
}

/// Checks every `x-mcp-header` annotation in an input schema and returns the header
/// names by property pointer.
///
/// Rules: the value is a non-empty RFC 9110 token; names are unique case-insensitively; the
/// property is `string`, `integer` or `boolean` (never `number`), integers bounded within
/// ±(2^53−1) when bounds or values are declared; the annotated property is reachable from
/// the root only through `properties` chains (never via `items`, combinators, conditionals,
/// `$ref` or `$defs`).
///
/// # Errors
/// The first violation found, in document order.
pub fn check_mcp_headers(schema: &Value) -> Result<BTreeMap<String, String>, HeaderViolation> {
    Ok(param_headers(schema)?
        .into_iter()
        .map(|p| (pointer_of(&p.path), p.name))
        .collect())
}

/// Parses and checks every `x-mcp-header` annotation in an input schema, in property
/// pointer order. Registries call this once per tool, when it is registered or listed.
///
/// # Errors
/// The first violation found, in document order (see [`check_mcp_headers`] for the rules).
pub fn param_headers(schema: &Value) -> Result<Vec<ParamHeader>, HeaderViolation> {
    let mut found = BTreeMap::new();
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    walk_headers(schema, "", true, true, &mut found, &mut seen)?;
    Ok(found
        .into_iter()
        .map(|(pointer, (name, ty))| ParamHeader {
            path: property_path(&pointer),
            key: format!("{PARAM_HEADER_PREFIX}{}", name.to_ascii_lowercase()),
            name,
            ty,
        })
        .collect())
}

/// `["a", "b/c"]` → `/properties/a/properties/b~1c`.
fn pointer_of(path: &[String]) -> String {
    path.iter()
        .map(|seg| format!("/properties/{}", seg.replace('~', "~0").replace('/', "~1")))
        .collect()
}

/// `/properties/a/properties/b~1c` → `["a", "b/c"]`.
pub fn property_path(pointer: &str) -> Vec<String> {
    pointer
        .split('/')
        .skip(1)
        .collect::<Vec<_>>()
        .chunks(2)
        .filter_map(|pair| pair.get(1))
        .map(|seg| seg.replace("~1", "/").replace("~0", "~"))
        .collect()
}

type Found = BTreeMap<String, (String, ParamType)>;

fn walk_headers(
    node: &Value,
    pointer: &str,
    reachable: bool,
    is_root: bool,
    found: &mut Found,
    seen: &mut BTreeMap<String, String>,
) -> Result<(), HeaderViolation> {
    let Value::Object(map) = node else {
        return Ok(());
    };
    if let Some(annotation) = map.get("x-mcp-header") {
        let fail = |reason: String| HeaderViolation {
            property: pointer.to_owned(),
            reason,
        };
        if !reachable || is_root {
            return Err(fail(
                "only properties reached from the root through `properties` may carry it"
                    .to_owned(),
            ));
        }
        let Value::String(name) = annotation else {
            return Err(fail("the header name must be a string".to_owned()));
        };
        if name.is_empty() || !name.bytes().all(is_tchar) {
            return Err(fail(format!(
                "header name {name:?} is not a non-empty RFC 9110 token"
            )));
        }
        let lower = name.to_ascii_lowercase();
        if let Some(other) = seen.get(&lower) {
            return Err(fail(format!(
                "header name {name:?} repeats the one at {other} (names are case-insensitive)"
            )));
        }
        let ty = check_header_type(map).map_err(fail)?;
        seen.insert(lower, pointer.to_owned());
        found.insert(pointer.to_owned(), (name.clone(), ty));
    }
    for (key, child) in map {
        let escaped = key.replace('~', "~0").replace('/', "~1");
        let base = format!("{pointer}/{escaped}");
        if key == "properties" {
            if let Value::Object(props) = child {
                for (name, sub) in props {
                    let p = format!("{base}/{}", name.replace('~', "~0").replace('/', "~1"));
                    walk_headers(sub, &p, reachable, false, found, seen)?;
                }
            }
        } else if matches!(child, Value::Object(_) | Value::Array(_))
            && key != "enum"
            && key != "const"
            && key != "examples"
            && key != "default"
        {
            walk_any(child, &base, found, seen)?;
        }
    }
    Ok(())
}

fn walk_any(
    node: &Value,
    pointer: &str,
    found: &mut Found,
    seen: &mut BTreeMap<String, String>,
) -> Result<(), HeaderViolation> {
    match node {
        Value::Object(_) => walk_headers(node, pointer, false, false, found, seen),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk_any(item, &format!("{pointer}/{i}"), found, seen)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn check_header_type(map: &Map<String, Value>) -> Result<ParamType, String> {
    let ty = match map.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(_) => return Err("the property must have exactly one type".to_owned()),
        None => return Err("the property must declare `type`".to_owned()),
    };
    match ty {
        "string" => Ok(ParamType::String),
        "boolean" => Ok(ParamType::Boolean),
        "integer" => {
            for key in ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"] {
                if let Some(v) = map.get(key) {
                    if !within_header_range(v) {
                        return Err(format!("integer `{key}` is outside ±(2^53−1)"));
                    }
                }
            }
            if let Some(Value::Array(values)) = map.get("enum") {
                if !values.iter().all(within_header_range) {
                    return Err("integer `enum` value outside ±(2^53−1)".to_owned());
                }
            }
            if let Some(v) = map.get("const") {
                if !within_header_range(v) {
                    return Err("integer `const` outside ±(2^53−1)".to_owned());
                }
            }
            Ok(ParamType::Integer)
        }
        other => Err(format!(
            "type `{other}` is not allowed (only string, integer, boolean)"
        )),
    }
}

fn within_header_range(v: &Value) -> bool {
    match v {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                (-MAX_HEADER_INTEGER..=MAX_HEADER_INTEGER).contains(&i)
            } else if n.as_u64().is_some() {
                false
            } else {
                n.as_f64()
                    .is_some_and(|f| f.abs() <= 9_007_199_254_740_991.0)
            }
        }
        _ => false,
    }
}

// ---------------------------------------------------------------------------------------------
// The mirrored body fields

/// The parts of a request's `params` the headers mirror (and a server span reads), borrowed
/// from the body and read in one lenient pass: a member of the wrong shape reads as absent
/// without hiding the others (the server answers malformed shapes with -32602 itself).
#[derive(Default, Deserialize)]
pub struct Mirrored<'a> {
    #[serde(default, borrow)]
    name: Text<'a>,
    #[serde(default, borrow)]
    uri: Text<'a>,
    #[serde(default, borrow, rename = "taskId")]
    task_id: Text<'a>,
    #[serde(default, borrow)]
    arguments: Option<&'a RawValue>,
    #[serde(default, borrow, rename = "_meta")]
    meta: MetaProbe<'a>,
}

impl fmt::Debug for Mirrored<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mirrored")
            .field("name", &self.name())
            .field("uri", &self.uri())
            .field("protocol_version", &self.protocol_version())
            .finish_non_exhaustive()
    }
}

#[derive(Default, Deserialize)]
struct MetaFields<'a> {
    #[serde(default, borrow, rename = "io.modelcontextprotocol/protocolVersion")]
    protocol_version: Text<'a>,
    #[serde(default, borrow)]
    traceparent: Text<'a>,
    #[serde(default, borrow)]
    tracestate: Text<'a>,
}

/// A member that counts only when it is a string (borrowed unless it has escapes); any other
/// JSON value reads as absent, as the server judges shapes.
#[derive(Default)]
struct Text<'a>(Option<Cow<'a, str>>);

impl Text<'_> {
    fn get(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

/// `_meta` when it is an object; any other JSON value reads as an empty one.
#[derive(Default)]
struct MetaProbe<'a>(MetaFields<'a>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Text<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Text<'a>, E> {
                Ok(Text(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E>(self, v: &str) -> Result<Text<'a>, E> {
                Ok(Text(Some(Cow::Owned(v.to_owned()))))
            }
            fn visit_string<E>(self, v: String) -> Result<Text<'a>, E> {
                Ok(Text(Some(Cow::Owned(v))))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Text<'a>, E> {
                Ok(Text(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Text<'a>, E> {
                Ok(Text(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Text<'a>, E> {
                Ok(Text(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Text<'a>, E> {
                Ok(Text(None))
            }
            fn visit_unit<E>(self) -> Result<Text<'a>, E> {
                Ok(Text(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Text<'a>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Text(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Text<'a>, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Text(None))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for MetaProbe<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = MetaProbe<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<MetaProbe<'a>, A::Error> {
                let d = serde::de::value::MapAccessDeserializer::new(map);
                MetaFields::deserialize(d).map(MetaProbe)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<MetaProbe<'a>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(MetaProbe::default())
            }
            fn visit_str<E>(self, _: &str) -> Result<MetaProbe<'a>, E> {
                Ok(MetaProbe::default())
            }
            fn visit_bool<E>(self, _: bool) -> Result<MetaProbe<'a>, E> {
                Ok(MetaProbe::default())
            }
            fn visit_i64<E>(self, _: i64) -> Result<MetaProbe<'a>, E> {
                Ok(MetaProbe::default())
            }
            fn visit_u64<E>(self, _: u64) -> Result<MetaProbe<'a>, E> {
                Ok(MetaProbe::default())
            }
            fn visit_f64<E>(self, _: f64) -> Result<MetaProbe<'a>, E> {
                Ok(MetaProbe::default())
            }
            fn visit_unit<E>(self) -> Result<MetaProbe<'a>, E> {
                Ok(MetaProbe::default())
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

impl<'a> Mirrored<'a> {
    /// Reads the mirrored members of `params` (absent or unreadable params read as empty).
    pub fn of(params: Option<&'a RawValue>) -> Mirrored<'a> {
        params
            .and_then(|params| serde_json::from_str::<Mirrored<'a>>(params.get()).ok())
            .unwrap_or_default()
    }

    /// The same view over params someone already split into members (the server's one
    /// parse, so the header check and the dispatcher read the same bytes): each member is read
    /// as leniently as [`Mirrored::of`] reads it.
    pub fn from_members(member: impl Fn(&str) -> Option<&'a RawValue>) -> Mirrored<'a> {
        let meta = member("_meta").and_then(Members::of);
        Self::from_split(member, meta.as_ref())
    }

    /// [`Mirrored::from_members`] with `_meta` already split (`None`: absent or not an object),
    /// so the server splits it once for this view and for the request's `_meta` rules (#23).
    pub(crate) fn from_split(
        member: impl Fn(&str) -> Option<&'a RawValue>,
        meta: Option<&Members<'a>>,
    ) -> Mirrored<'a> {
        // Strings are read as `json_str` reads them and `_meta` is split without a parse
        // (`wire::members`): the same view as the derive's, at a fraction of its cost (#23).
        let text = |key: &str| Text(member(key).and_then(json_str));
        let meta = meta
            .map(|meta| {
                let text = |key: &str| Text(meta.get(key).and_then(|raw| json_str(raw)));
                MetaFields {
                    protocol_version: text(PROTOCOL_VERSION_KEY),
                    traceparent: text("traceparent"),
                    tracestate: text("tracestate"),
                }
            })
            .unwrap_or_default();
        Mirrored {
            name: text("name"),
            uri: text("uri"),
            task_id: text("taskId"),
            // `null` reads as absent, as serde reads an `Option` (`Mirrored::of`).
            arguments: member("arguments").filter(|raw| raw.get() != "null"),
            meta: MetaProbe(meta),
        }
    }

    /// `params.name`, when a string.
    pub fn name(&self) -> Option<&str> {
        self.name.get()
    }

    /// `params.uri`, when a string.
    pub fn uri(&self) -> Option<&str> {
        self.uri.get()
    }

    /// `params.taskId`, when a string (the Tasks extension's `tasks/*` requests).
    pub fn task_id(&self) -> Option<&str> {
        self.task_id.get()
    }

    /// `params.arguments`, as its exact text.
    pub fn arguments(&self) -> Option<&'a RawValue> {
        self.arguments
    }

    /// `params._meta["io.modelcontextprotocol/protocolVersion"]`, when a string.
    pub fn protocol_version(&self) -> Option<&str> {
        self.meta.0.protocol_version.get()
    }

    /// `params._meta.traceparent`, when a string.
    pub fn traceparent(&self) -> Option<&str> {
        self.meta.0.traceparent.get()
    }

    /// `params._meta.tracestate`, when a string.
    pub fn tracestate(&self) -> Option<&str> {
        self.meta.0.tracestate.get()
    }

    /// The body value `method` mirrors into `Mcp-Name`: `Some(None)` when the method
    /// needs one but the body lacks it; `None` when the method has no `Mcp-Name`.
    pub fn name_source(&self, method: &str) -> Option<Option<&str>> {
        match method {
            "tools/call" | "prompts/get" => Some(self.name()),
            "resources/read" => Some(self.uri()),
            // The Tasks extension mirrors `params.taskId` (SEP-2663 routing headers).
            m if crate::wire::tasks::is_task_method(m) => Some(self.task_id()),
            _ => None,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Client side: the headers a request must carry

/// Why the headers of a request could not be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequiredHeaderError {
    /// `params._meta` names no protocol version to mirror.
    #[error("the request carries no protocol version in its _meta to mirror")]
    NoProtocolVersion,
    /// An annotated argument holds a value its declared type cannot carry: the arguments
    /// do not match the tool's input schema.
    #[error("argument for header {0} is not a value of its declared type")]
    ParamValue(String),
}

/// The headers a request must carry, as (name as sent, value) pairs in a fixed
/// order: `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` where the method has one, then one
/// `Mcp-Param-*` per annotation whose value is present and non-null. `annotations` are those of
/// the tool a `tools/call` names (ignored for other methods).
///
/// # Errors
/// [`RequiredHeaderError::NoProtocolVersion`] when `_meta` lacks the version;
/// [`RequiredHeaderError::ParamValue`] when an annotated value has the wrong type.
pub fn required_headers(
    method: &str,
    params: Option<&RawValue>,
    annotations: &[ParamHeader],
) -> Result<Vec<(String, String)>, RequiredHeaderError> {
    let mirrored = Mirrored::of(params);
    let version = mirrored
        .protocol_version()
        .ok_or(RequiredHeaderError::NoProtocolVersion)?;
    let mut out = vec![
        (display_name(PROTOCOL_VERSION_HEADER), version.to_owned()),
        (display_name(METHOD_HEADER), method.to_owned()),
    ];
    if let Some(Some(name)) = mirrored.name_source(method) {
        out.push((
            display_name(NAME_HEADER),
            encode_header_value(name).into_owned(),
        ));
    }
    if method == "tools/call" && !annotations.is_empty() {
        let arguments: Option<Value> = mirrored
            .arguments()
            .and_then(|a| serde_json::from_str(a.get()).ok());
        if let Some(arguments) = &arguments {
            for param in annotations {
                let Some(value) = param.value_in(arguments) else {
                    continue;
                };
                let text = param_text(param.ty, value)
                    .ok_or_else(|| RequiredHeaderError::ParamValue(param.header_name()))?;
                out.push((param.header_name(), encode_header_value(&text).into_owned()));
            }
        }
    }
    Ok(out)
}

/// The text of an annotated value: strings as they are, integers in decimal, booleans as
/// `true`/`false`. `None` when the value is not of the declared type.
fn param_text(ty: ParamType, value: &Value) -> Option<String> {
    match (ty, value) {
        (ParamType::String, Value::String(s)) => Some(s.clone()),
        (ParamType::Boolean, Value::Bool(b)) => Some(b.to_string()),
        (ParamType::Integer, Value::Number(n)) => {
            if let Some(i) = n.as_i64() {
                Some(i.to_string())
            } else if let Some(u) = n.as_u64() {
                Some(u.to_string())
            } else {
                // An integral float (`42.0`) is an integer to JSON Schema.
                let f = n.as_f64()?;
                (f.fract() == 0.0 && f.abs() <= MAX_HEADER_INTEGER as f64)
                    .then(|| format!("{}", f as i64))
            }
        }
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Server side: the headers against the body

/// Why the protocol headers of a request were refused (-32020, HTTP 400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderError {
    /// A required header is absent.
    #[error("Header mismatch: required header {0} is missing")]
    Missing(String),
    /// A header appears more than once.
    #[error("Header mismatch: header {0} appears more than once")]
    Repeated(String),
    /// A header value has characters outside visible ASCII, space and tab, or a malformed
    /// base64 sentinel.
    #[error("Header mismatch: header {0} contains invalid characters")]
    InvalidCharacters(String),
    /// A header value disagrees with the body.
    #[error("Header mismatch: header {0} does not match the request body")]
    Mismatch(String),
    /// The body carries an annotated value but its `Mcp-Param-*` header is absent.
    #[error("Header mismatch: header {0} is missing but the body carries its value")]
    MissingParam(String),
    /// The protocol headers together exceed the bound.
    #[error("Header mismatch: protocol headers total {actual} bytes, over the {limit}-byte limit")]
    TooLarge {
        /// The bound.
        limit: usize,
        /// The measured size.
        actual: usize,
    },
}

/// Which header a lookup asks for; the standard three are named so a host can keep them
/// pre-parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderKey<'k> {
    /// `MCP-Protocol-Version`.
    ProtocolVersion,
    /// `Mcp-Method`.
    Method,
    /// `Mcp-Name`.
    Name,
    /// Any other header, by its lower-case name (e.g. `mcp-param-region`).
    Other(&'k str),
}

impl HeaderKey<'_> {
    /// The lower-case header name.
    pub fn as_str(&self) -> &str {
        match self {
            HeaderKey::ProtocolVersion => PROTOCOL_VERSION_HEADER,
            HeaderKey::Method => METHOD_HEADER,
            HeaderKey::Name => NAME_HEADER,
            HeaderKey::Other(name) => name,
        }
    }
}

/// What a request carries for one header name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup<'a> {
    /// No such header.
    Absent,
    /// Exactly one value, as raw bytes.
    One(&'a [u8]),
    /// More than one value (refused: a mirrored header has one value).
    Repeated,
}

/// A request's headers as the checks read them; names compare case-insensitively.
pub trait HeaderLookup {
    /// The value(s) of one header.
    fn lookup(&self, key: HeaderKey<'_>) -> Lookup<'_>;
}

/// Plain (name, value) pairs, e.g. from any HTTP stack.
impl HeaderLookup for [(&str, &[u8])] {
    fn lookup(&self, key: HeaderKey<'_>) -> Lookup<'_> {
        let name = key.as_str();
        let mut found = Lookup::Absent;
        for (n, v) in self {
            if n.eq_ignore_ascii_case(name) {
                if found != Lookup::Absent {
                    return Lookup::Repeated;
                }
                found = Lookup::One(v);
            }
        }
        found
    }
}

/// The protocol header bytes of a request: name plus value of every `mcp-*` header.
pub fn protocol_header_bytes<'h>(pairs: impl IntoIterator<Item = (&'h str, &'h [u8])>) -> usize {
    pairs
        .into_iter()
        .filter(|(name, _)| {
            name.len() >= PROTOCOL_HEADER_PREFIX.len()
                && name.as_bytes()[..PROTOCOL_HEADER_PREFIX.len()]
                    .eq_ignore_ascii_case(PROTOCOL_HEADER_PREFIX.as_bytes())
        })
        .map(|(name, value)| name.len() + value.len())
        .sum()
}

/// Checks the 8 KiB bound on protocol headers.
///
/// # Errors
/// [`HeaderError::TooLarge`] past the bound.
pub fn check_protocol_header_size<'h>(
    pairs: impl IntoIterator<Item = (&'h str, &'h [u8])>,
) -> Result<(), HeaderError> {
    let actual = protocol_header_bytes(pairs);
    if actual > limits::MAX_PROTOCOL_HEADER_BYTES {
        return Err(HeaderError::TooLarge {
            limit: limits::MAX_PROTOCOL_HEADER_BYTES,
            actual,
        });
    }
    Ok(())
}

/// The single value of one standard header, checked for invalid characters.
fn single<'h>(
    headers: &'h (impl HeaderLookup + ?Sized),
    key: HeaderKey<'_>,
) -> Result<Option<&'h str>, HeaderError> {
    match headers.lookup(key) {
        Lookup::Absent => Ok(None),
        Lookup::Repeated => Err(HeaderError::Repeated(display_name(key.as_str()))),
        Lookup::One(bytes) => {
            if !plain_ascii(bytes) {
                return Err(HeaderError::InvalidCharacters(display_name(key.as_str())));
            }
            std::str::from_utf8(bytes)
                .map(Some)
                .map_err(|_| HeaderError::InvalidCharacters(display_name(key.as_str())))
        }
    }
}

/// Checks the mirrored headers of one request against its body. `params` are the
/// annotations of the tool a `tools/call` names, when the server publishes it with them.
///
/// # Errors
/// The first disagreement, as a [`HeaderError`] (answered -32020, HTTP 400).
pub fn check_request_headers(
    headers: &(impl HeaderLookup + ?Sized),
    method: &str,
    mirrored: &Mirrored<'_>,
    params: Option<&[ParamHeader]>,
) -> Result<(), HeaderError> {
    let version = single(headers, HeaderKey::ProtocolVersion)?
        .ok_or_else(|| HeaderError::Missing(display_name(PROTOCOL_VERSION_HEADER)))?;
    // A body without a readable protocolVersion is the server's -32602 (missing meta).
    if let Some(body_version) = mirrored.protocol_version() {
        if version != body_version {
            return Err(HeaderError::Mismatch(display_name(PROTOCOL_VERSION_HEADER)));
        }
    }
    let header_method = single(headers, HeaderKey::Method)?
        .ok_or_else(|| HeaderError::Missing(display_name(METHOD_HEADER)))?;
    if header_method != method {
        return Err(HeaderError::Mismatch(display_name(METHOD_HEADER)));
    }
    if let Some(source) = mirrored.name_source(method) {
        let header = single(headers, HeaderKey::Name)?;
        match (header, source) {
            (None, Some(_)) => return Err(HeaderError::Missing(display_name(NAME_HEADER))),
            (Some(h), Some(body)) => {
                let decoded = decode_header_text(h)
                    .ok_or_else(|| HeaderError::InvalidCharacters(display_name(NAME_HEADER)))?;
                if decoded != body {
                    return Err(HeaderError::Mismatch(display_name(NAME_HEADER)));
                }
            }
            // The body lacks the field: the server answers -32602.
            (_, None) => {}
        }
    }
    if method == "tools/call" {
        if let Some(params) = params.filter(|p| !p.is_empty()) {
            check_param_headers(headers, mirrored, params)?;
        }
    }
    Ok(())
}

fn check_param_headers(
    headers: &(impl HeaderLookup + ?Sized),
    mirrored: &Mirrored<'_>,
    params: &[ParamHeader],
) -> Result<(), HeaderError> {
    let arguments: Option<Value> = mirrored
        .arguments()
        .and_then(|a| serde_json::from_str(a.get()).ok());
    for param in params {
        let body = arguments.as_ref().and_then(|args| param.value_in(args));
        let header = match headers.lookup(HeaderKey::Other(param.key())) {
            Lookup::Absent => None,
            Lookup::One(v) => Some(v),
            Lookup::Repeated => return Err(HeaderError::Repeated(param.header_name())),
        };
        match (header, body) {
            (None, None) => {}
            (None, Some(_)) => return Err(HeaderError::MissingParam(param.header_name())),
            (Some(_), None) => return Err(HeaderError::Mismatch(param.header_name())),
            (Some(h), Some(body)) => {
                if !plain_ascii(h) {
                    return Err(HeaderError::InvalidCharacters(param.header_name()));
                }
                let text = std::str::from_utf8(h)
                    .ok()
                    .and_then(decode_header_text)
                    .ok_or_else(|| HeaderError::InvalidCharacters(param.header_name()))?;
                if !param_matches(&text, body) {
                    return Err(HeaderError::Mismatch(param.header_name()));
                }
            }
        }
    }
    Ok(())
}

/// Compares a decoded header value with the body value: strings exactly,
/// booleans as `true`/`false`, numbers numerically (`42` equals `42.0`).
pub fn param_matches(header: &str, body: &Value) -> bool {
    match body {
        Value::String(s) => header == s,
        Value::Bool(b) => header == if *b { "true" } else { "false" },
        Value::Number(n) => {
            if header.trim() != header || header.is_empty() {
                return false;
            }
            let Ok(h) = serde_json::from_str::<serde_json::Number>(header) else {
                return false;
            };
            match (h.as_i64(), n.as_i64()) {
                (Some(a), Some(b)) => a == b,
                _ => match (h.as_f64(), n.as_f64()) {
                    (Some(a), Some(b)) => a == b,
                    _ => false,
                },
            }
        }
        _ => false,
    }
}

/// Params of every shape the mirrored view must read alike however it was split: escaped and
/// non-string names, `_meta` of the wrong type or with members of the wrong type, explicit
/// `null`s, empty objects (D15, D17). Shared by the tests of each split.
#[cfg(test)]
pub(crate) const MIRRORED_SHAPES: [&str; 7] = [
    r#"{"name":"a\u0062","uri":[1,{"x":2}],"arguments":{"k":[1]},"_meta":5}"#,
    r#"{"name":7,"_meta":{"x":{"y":[]},"io.modelcontextprotocol/protocolVersion":"2026-07-28","traceparent":1}}"#,
    r#"{"uri":"file:///a","_meta":{"io.modelcontextprotocol/protocolVersion":true}}"#,
    r#"{"taskId":"t-\"1","_meta":{"traceparent":"00-ab","tracestate":"k=v","io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#,
    r#"{"name":"","uri":null,"taskId":{},"arguments":null,"_meta":[]}"#,
    r#"{"_meta":{}}"#,
    "{}",
];

/// Everything a [`Mirrored`] view reads, owned, for comparing two views.
#[cfg(test)]
pub(crate) fn mirrored_view(m: &Mirrored<'_>) -> [Option<String>; 7] {
    let own = |s: Option<&str>| s.map(str::to_owned);
    [
        own(m.name()),
        own(m.uri()),
        own(m.task_id()),
        m.arguments().map(|a| a.get().to_owned()),
        own(m.protocol_version()),
        own(m.traceparent()),
        own(m.tracestate()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mirrored_of(
        params: &str,
    ) -> (
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
    ) {
        let raw: Box<RawValue> = serde_json::from_str(params).unwrap();
        let p = Mirrored::of(Some(&raw));
        (
            p.name().map(str::to_owned),
            p.uri().map(str::to_owned),
            p.arguments().map(|a| a.get().to_owned()),
            p.protocol_version().map(str::to_owned),
        )
    }

    /// The header checks read the body leniently: a member of the wrong shape
    /// reads as absent without hiding the others, and escaped strings are unescaped.
    #[test]
    fn d15_d17_mirrored_reads_members_leniently_in_one_pass() {
        assert_eq!(
            mirrored_of(r#"{"name":"a\u0062","uri":[1,{"x":2}],"arguments":{"k":[1]},"_meta":5}"#),
            (Some("ab".into()), None, Some(r#"{"k":[1]}"#.into()), None)
        );
        assert_eq!(
            mirrored_of(
                r#"{"name":7,"_meta":{"x":{"y":[]},"io.modelcontextprotocol/protocolVersion":"2026-07-28","traceparent":1}}"#
            ),
            (None, None, None, Some("2026-07-28".into()))
        );
        assert_eq!(
            mirrored_of(
                r#"{"uri":"file:///a","_meta":{"io.modelcontextprotocol/protocolVersion":true}}"#
            ),
            (None, Some("file:///a".into()), None, None)
        );
        assert_eq!(mirrored_of("{}"), (None, None, None, None));
    }

    /// The server's view over its one split of the params (`from_members`) is the view
    /// `Mirrored::of` reads from the text, member for member, for every shape (D15, D17).
    #[test]
    fn d15_d17_mirrored_from_members_reads_as_of_reads() {
        for params in MIRRORED_SHAPES {
            let raw: Box<RawValue> = serde_json::from_str(params).unwrap();
            let members = Members::of(&raw).unwrap();
            let split = Mirrored::from_members(|key| members.get(key).copied());
            assert_eq!(
                mirrored_view(&split),
                mirrored_view(&Mirrored::of(Some(&raw))),
                "{params}"
            );
        }
    }

    #[test]
    fn n12_n46_tasks_requests_mirror_their_task_id_into_mcp_name() {
        let raw: Box<RawValue> = serde_json::from_str(
            r#"{"taskId":"t-1","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#,
        )
        .unwrap();
        for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
            assert_eq!(
                required_headers(method, Some(&raw), &[]).unwrap(),
                [
                    ("MCP-Protocol-Version".to_owned(), "2026-07-28".to_owned()),
                    ("Mcp-Method".to_owned(), method.to_owned()),
                    ("Mcp-Name".to_owned(), "t-1".to_owned()),
                ]
            );
            let mirrored = Mirrored::of(Some(&raw));
            let sent = |name: &'static [u8]| {
                vec![
                    ("mcp-protocol-version", &b"2026-07-28"[..]),
                    ("mcp-method", method.as_bytes()),
                    ("mcp-name", name),
                ]
            };
            assert_eq!(
                check_request_headers(&sent(b"t-1")[..], method, &mirrored, None),
                Ok(())
            );
            assert_eq!(
                check_request_headers(&sent(b"t-2")[..], method, &mirrored, None),
                Err(HeaderError::Mismatch("Mcp-Name".to_owned()))
            );
            let without = &sent(b"t-1")[..2];
            assert_eq!(
                check_request_headers(without, method, &mirrored, None),
                Err(HeaderError::Missing("Mcp-Name".to_owned()))
            );
        }
        // Other methods never read taskId.
        assert_eq!(
            required_headers("tools/list", Some(&raw), &[])
                .unwrap()
                .len(),
            2
        );
    }

    #[test]
    fn property_paths_follow_properties_chains() {
        assert_eq!(property_path("/properties/a"), ["a"]);
        assert_eq!(
            property_path("/properties/a/properties/b~1c~0d"),
            ["a", "b/c~d"]
        );
        assert_eq!(
            pointer_of(&["a".to_owned(), "b/c~d".to_owned()]),
            "/properties/a/properties/b~1c~0d"
        );
    }
    #[test]
    fn d18_d27_base64_sentinel() {
        assert_eq!(
            decode_header_value("=?base64?SGVsbG8sIOS4lueVjA==?=").as_deref(),
            Some("Hello, 世界")
        );
        assert_eq!(decode_header_value("us-west1").as_deref(), Some("us-west1"));
        assert_eq!(
            decode_header_value("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=").as_deref(),
            Some("=?base64?literal?=")
        );
        assert_eq!(decode_header_value("=?base64?***?="), None);
        // Markers are case-sensitive: an upper-case marker is a literal value.
        assert_eq!(
            decode_header_value("=?BASE64?SGk=?=").as_deref(),
            Some("=?BASE64?SGk=?=")
        );
    }

    #[test]
    fn d29_numeric_comparison() {
        assert!(param_matches("42", &serde_json::json!(42)));
        assert!(param_matches("42.0", &serde_json::json!(42)));
        assert!(param_matches("-7", &serde_json::json!(-7)));
        assert!(!param_matches("43", &serde_json::json!(42)));
        assert!(!param_matches("0x2A", &serde_json::json!(42)));
        assert!(!param_matches(" 42", &serde_json::json!(42)));
        assert!(param_matches("true", &serde_json::json!(true)));
        assert!(!param_matches("True", &serde_json::json!(true)));
        assert!(param_matches("Us-West", &serde_json::json!("Us-West")));
        assert!(!param_matches("us-west", &serde_json::json!("Us-West")));
        assert!(!param_matches("{}", &serde_json::json!({})));
    }
}
