//! Schema compilation, validation with actionable diagnostics, typed schema derivation and the
//! `x-mcp-header` registration rules.
//!
//! # Exactness and its one limit
//!
//! Arguments are validated as a `serde_json::Value` parsed from the exact argument bytes; the
//! handler and the wire always see the original bytes. Without serde_json's
//! `arbitrary_precision` feature, integers beyond `u64`/`i64` (and all non-integers) become
//! `f64` *for validation only*. Numeric keywords (`minimum`, `maximum`, `multipleOf`, ...)
//! therefore compare such values approximately: integers beyond 2^53 that are not `u64`/`i64`
//! may compare equal to a nearby bound. Numbers beyond the `f64` range (about ±1.8e308)
//! cannot be represented at all and are refused with the diagnostic keyword `number`. Type
//! checks, string, object and array keywords are exact. No defaults are inserted: validation never modifies the instance.
//!
//! # References
//!
//! No `$ref` is ever fetched from the network or the file system: a retriever that
//! refuses everything is installed, so an unresolvable external reference is a compile
//! error. References inside the schema (`#/$defs/...`, `$id`-relative, `$anchor`,
//! `$dynamicRef`/`$dynamicAnchor`) resolve normally.

use std::collections::{BTreeMap, BTreeSet};

use jsonschema::error::ValidationErrorKind;
use jsonschema::{Draft, Retrieve, Uri};
use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::{Map, Value};

use crate::core::error::{Diagnostic, ToolFailure};

/// Maximum nesting of arrays/objects in a validated instance (the codec uses the same bound).
pub const MAX_INSTANCE_DEPTH: usize = 64;
/// Maximum nesting of a registered schema document.
pub const MAX_SCHEMA_DEPTH: usize = 128;
/// Largest accepted schema text (bounded validation cost starts with bounded schemas).
pub const MAX_SCHEMA_BYTES: usize = 1024 * 1024;
/// Longest chain of local `$ref`s followed when diagnostics look up the keys an object allows
/// (bounded work for references, including cyclic ones).
pub const MAX_REF_DEPTH: usize = 32;
/// At most this many diagnostics are reported for one invalid instance.
pub const MAX_DIAGNOSTICS: usize = 16;

/// The 2020-12 meta-schema URI.
pub const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

const KNOWN_DIALECTS: &[(&str, Draft)] = &[
    (DRAFT_2020_12, Draft::Draft202012),
    (
        "https://json-schema.org/draft/2020-12/schema#",
        Draft::Draft202012,
    ),
    ("http://json-schema.org/draft-07/schema#", Draft::Draft7),
    ("http://json-schema.org/draft-07/schema", Draft::Draft7),
    (
        "https://json-schema.org/draft/2019-09/schema",
        Draft::Draft201909,
    ),
    ("http://json-schema.org/draft-06/schema#", Draft::Draft6),
    ("http://json-schema.org/draft-04/schema#", Draft::Draft4),
];

/// Refuses every retrieval: schemas are self-contained.
#[derive(Debug, Clone, Copy)]
struct RefuseRetrieval;

impl Retrieve for RefuseRetrieval {
    fn retrieve(
        &self,
        uri: &Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!("external reference `{}` is not retrieved", uri.as_str()).into())
    }
}

/// A compiled schema together with its exact registered text.
pub struct CompiledSchema {
    raw: Box<serde_json::value::RawValue>,
    value: Value,
    validator: jsonschema::Validator,
    /// Top-level optional properties whose schema names a type and refuses `null`: an explicit
    /// `null` there is read as "absent" by [`CompiledSchema::validate_arguments`].
    null_as_absent: BTreeSet<String>,
}

impl std::fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledSchema")
            .field("raw", &self.raw.get())
            .finish_non_exhaustive()
    }
}

impl CompiledSchema {
    /// Compiles schema text, keeping the text byte-exact.
    ///
    /// A missing `$schema` means 2020-12; draft-07 (and 2019-09, 06, 04) are honoured when
    /// declared; any other `$schema` is refused as an unsupported dialect.
    ///
    /// ```
    /// use strict_mcp::core::schema::CompiledSchema;
    /// let s = CompiledSchema::compile(r#"{"type":"object", "properties":{"n":{"type":"integer"}}}"#).unwrap();
    /// assert_eq!(s.raw().get(), r#"{"type":"object", "properties":{"n":{"type":"integer"}}}"#);
    /// assert!(CompiledSchema::compile(r#"{"$ref":"https://example.com/s.json"}"#).is_err());
    /// ```
    ///
    /// # Errors
    /// A readable reason when the text is not JSON, too deep, of an unsupported dialect or
    /// not a valid schema.
    pub fn compile(text: &str) -> Result<Self, String> {
        if text.len() > MAX_SCHEMA_BYTES {
            return Err(format!("schema text exceeds {MAX_SCHEMA_BYTES} bytes"));
        }
        depth_within(text, MAX_SCHEMA_DEPTH)
            .map_err(|()| format!("schema nesting exceeds {MAX_SCHEMA_DEPTH} levels"))?;
        let raw = serde_json::value::RawValue::from_string(text.to_owned())
            .map_err(|e| format!("schema is not JSON: {e}"))?;
        let value: Value =
            serde_json::from_str(text).map_err(|e| format!("schema is not JSON: {e}"))?;
        let mut options = jsonschema::options().with_retriever(RefuseRetrieval);
        match value.get("$schema") {
            None => options = options.with_draft(Draft::Draft202012),
            Some(Value::String(uri)) => {
                let Some((_, draft)) = KNOWN_DIALECTS.iter().find(|(u, _)| u == uri) else {
                    return Err(format!("JSON Schema dialect not supported: {uri}"));
                };
                options = options.with_draft(*draft);
            }
            Some(_) => return Err("`$schema` must be a string".to_owned()),
        }
        let validator = options
            .build(&value)
            .map_err(|e| format!("invalid schema: {e}"))?;
        let null_as_absent = nullable_optionals(&value);
        Ok(CompiledSchema {
            raw,
            value,
            validator,
            null_as_absent,
        })
    }

    /// Compiles a schema value (used for derived schemas).
    ///
    /// # Errors
    /// As [`CompiledSchema::compile`].
    pub fn compile_value(value: &Value) -> Result<Self, String> {
        Self::compile(&value.to_string())
    }

    /// The exact registered text.
    #[must_use]
    pub fn raw(&self) -> &serde_json::value::RawValue {
        &self.raw
    }

    /// The parsed schema.
    #[must_use]
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// Validates exact instance bytes: parse, depth bound, then validate.
    /// Returns the parsed value on success (never modified: no defaults).
    ///
    /// The depth bound is checked on the parsed value (its containers, not its bytes: a
    /// 1 MiB string is one node, where a byte scan read every byte of it, issue #23's size
    /// curve); serde_json's own recursion limit (128, above [`MAX_INSTANCE_DEPTH`]) bounds the
    /// parse. Text that does not parse is scanned for its depth, so a too-deep malformed text
    /// is still reported as too deep, exactly as when the scan ran first.
    ///
    /// # Errors
    /// Diagnostics naming pointer, keyword, expected type and allowed keys.
    pub fn validate_bytes(&self, bytes: &str) -> Result<Value, Vec<Diagnostic>> {
        let too_deep = || {
            vec![Diagnostic {
                pointer: String::new(),
                keyword: "depth".to_owned(),
                message: format!("value nesting exceeds {MAX_INSTANCE_DEPTH} levels"),
                expected: None,
                allowed_keys: None,
            }]
        };
        let value: Value = match serde_json::from_str(bytes) {
            Ok(value) => value,
            Err(_) if depth_within(bytes, MAX_INSTANCE_DEPTH).is_err() => return Err(too_deep()),
            Err(e) => {
                // serde_json refuses numbers beyond the f64 range (about ±1.8e308): valid JSON
                // the validator cannot represent. Say so instead of calling it malformed.
                let (keyword, message) = if e.to_string().starts_with("number out of range") {
                    (
                        "number",
                        "a number is beyond the range this server can validate (about ±1.8e308)",
                    )
                } else {
                    ("json", "the value is not well-formed JSON")
                };
                return Err(vec![Diagnostic {
                    pointer: String::new(),
                    keyword: keyword.to_owned(),
                    message: message.to_owned(),
                    expected: None,
                    allowed_keys: None,
                }]);
            }
        };
        if deeper_than(&value, MAX_INSTANCE_DEPTH) {
            return Err(too_deep());
        }
        self.validate_value(&value)?;
        Ok(value)
    }

    /// Validates tool arguments as [`CompiledSchema::validate_bytes`] does, after reading an
    /// explicit `null` on an optional top-level property as "absent" when that property's
    /// schema names a type other than `null` (`"limit": null` for an `Option<u32>`, which
    /// models often send). The published schema stays null-free; the member is removed from
    /// the arguments the handler receives. Everything else is kept byte for byte (numbers
    /// stay exact); nested objects are not rewritten.
    ///
    /// ```
    /// use strict_mcp::core::schema::CompiledSchema;
    /// let s = CompiledSchema::compile(
    ///     r#"{"type":"object","properties":{"q":{"type":"string"},"limit":{"type":"integer"}},
    ///         "required":["q"],"additionalProperties":false}"#).unwrap();
    /// assert_eq!(s.validate_arguments(r#"{"q":"x","limit":null}"#).unwrap(), r#"{"q":"x"}"#);
    /// assert!(s.validate_arguments(r#"{"q":null}"#).is_err()); // required stays required
    /// ```
    ///
    /// # Errors
    /// As [`CompiledSchema::validate_bytes`].
    pub fn validate_arguments<'a>(
        &self,
        bytes: &'a str,
    ) -> Result<std::borrow::Cow<'a, str>, Vec<Diagnostic>> {
        self.validate_arguments_value(bytes).map(|(text, _)| text)
    }

    /// As [`CompiledSchema::validate_arguments`], also returning the value the schema
    /// checked (parsed once from the returned text), for a typed handler to read instead of
    /// parsing the text again.
    pub(crate) fn validate_arguments_value<'a>(
        &self,
        bytes: &'a str,
    ) -> Result<(std::borrow::Cow<'a, str>, Value), Vec<Diagnostic>> {
        let rewritten = if self.null_as_absent.is_empty() || !bytes.contains("null") {
            None
        } else {
            self.drop_optional_nulls(bytes)
        };
        match rewritten {
            Some(text) => {
                let value = self.validate_bytes(&text)?;
                Ok((std::borrow::Cow::Owned(text), value))
            }
            None => {
                let value = self.validate_bytes(bytes)?;
                Ok((std::borrow::Cow::Borrowed(bytes), value))
            }
        }
    }

    /// The arguments without their `null` members listed in `null_as_absent`; `None` when
    /// nothing is removed or the text is not an object (validation then reports it).
    fn drop_optional_nulls(&self, bytes: &str) -> Option<String> {
        if depth_within(bytes, MAX_INSTANCE_DEPTH).is_err() {
            return None;
        }
        let members: Members<'_> = serde_json::from_str(bytes).ok()?;
        let drop = |(k, v): &(String, &serde_json::value::RawValue)| {
            v.get() == "null" && self.null_as_absent.contains(k)
        };
        if !members.0.iter().any(drop) {
            return None;
        }
        let mut out = String::with_capacity(bytes.len());
        out.push('{');
        for member in members.0.iter().filter(|m| !drop(m)) {
            if out.len() > 1 {
                out.push(',');
            }
            out.push_str(&serde_json::to_string(&member.0).ok()?);
            out.push(':');
            out.push_str(member.1.get());
        }
        out.push('}');
        Some(out)
    }

    /// Validates an instance built in memory (a typed tool's result serialised to a value, not
    /// parsed from text) as [`CompiledSchema::validate_bytes`] validates the parsed text: the
    /// depth bound on its containers, then the schema.
    ///
    /// # Errors
    /// As [`CompiledSchema::validate_bytes`].
    pub(crate) fn validate_instance(&self, value: &Value) -> Result<(), Vec<Diagnostic>> {
        if deeper_than(value, MAX_INSTANCE_DEPTH) {
            return Err(vec![Diagnostic {
                pointer: String::new(),
                keyword: "depth".to_owned(),
                message: format!("value nesting exceeds {MAX_INSTANCE_DEPTH} levels"),
                expected: None,
                allowed_keys: None,
            }]);
        }
        self.validate_value(value)
    }

    /// Validates a parsed instance.
    ///
    /// # Errors
    /// Diagnostics, at most [`MAX_DIAGNOSTICS`].
    pub fn validate_value(&self, value: &Value) -> Result<(), Vec<Diagnostic>> {
        if self.validator.is_valid(value) {
            return Ok(());
        }
        let diags: Vec<Diagnostic> = self
            .validator
            .iter_errors(value)
            .take(MAX_DIAGNOSTICS)
            .map(|e| self.diagnostic(&e))
            .collect();
        Err(diags)
    }

    fn diagnostic(&self, e: &jsonschema::ValidationError<'_>) -> Diagnostic {
        let pointer = e.instance_path().as_str().to_owned();
        let kind = e.kind();
        let keyword = kind.keyword().to_owned();
        // The evaluation path includes every `$ref` taken, so the failing keyword's schema
        // object is found by walking it from the root and following local references.
        let evaluation_path = e.evaluation_path().as_str();
        let parent = evaluation_path
            .rfind('/')
            .map_or("", |i| &evaluation_path[..i]);
        let allowed = |through_applicators: bool| -> Option<Vec<String>> {
            let (node, base) = resolve_evaluation_path(&self.value, parent)?;
            allowed_keys(&self.value, base, node, through_applicators)
        };
        let (message, expected, allowed_keys) = match kind {
            ValidationErrorKind::Type { kind } => {
                let names: Vec<String> = match kind {
                    jsonschema::error::TypeKind::Single(t) => vec![t.to_string()],
                    jsonschema::error::TypeKind::Multiple(set) => {
                        set.iter().map(|t| t.to_string()).collect()
                    }
                };
                let expected = names.join(" or ");
                (
                    format!("expected {expected}, found {}", json_type(e.instance())),
                    Some(expected),
                    None,
                )
            }
            ValidationErrorKind::Required { property } => (
                format!("missing required property {property}"),
                None,
                allowed(true),
            ),
            // `additionalProperties` only admits the `properties` next to it (a `$ref`
            // sibling does not count), `unevaluatedProperties` also those evaluated through
            // `$ref` and the composition keywords.
            ValidationErrorKind::AdditionalProperties { unexpected } => (
                format!("unexpected properties: {}", unexpected.join(", ")),
                None,
                allowed(false),
            ),
            ValidationErrorKind::UnevaluatedProperties { unexpected } => (
                format!("unexpected properties: {}", unexpected.join(", ")),
                None,
                allowed(true),
            ),
            _ => {
                let mut text = e.to_string();
                if text.len() > 200 {
                    let mut cut = 200;
                    while !text.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    text.truncate(cut);
                    text.push('…');
                }
                (text, None, None)
            }
        };
        Diagnostic {
            pointer,
            keyword,
            message,
            expected,
            allowed_keys,
        }
    }
}

/// Undoes JSON Pointer escaping of one reference token (`~1` is `/`, `~0` is `~`).
fn unescape_token(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// Decodes `%XX` escapes of a URI fragment; `None` for a malformed escape or non-UTF-8 result.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Finds the subschema of `node` (not descending into other schema resources unless
/// `cross` is set) for which `pred` holds; depth-first, bounded by the schema's own depth.
fn find_subschema<'a>(
    node: &'a Value,
    cross: bool,
    pred: &dyn Fn(&Value) -> bool,
) -> Option<&'a Value> {
    fn walk<'a>(
        node: &'a Value,
        top: bool,
        cross: bool,
        pred: &dyn Fn(&Value) -> bool,
        depth: usize,
    ) -> Option<&'a Value> {
        if depth > MAX_SCHEMA_DEPTH {
            return None;
        }
        match node {
            Value::Object(map) => {
                if !top && !cross && map.contains_key("$id") {
                    return None;
                }
                if pred(node) {
                    return Some(node);
                }
                map.iter()
                    .filter(|(k, _)| {
                        !matches!(k.as_str(), "enum" | "const" | "examples" | "default")
                    })
                    .find_map(|(_, v)| walk(v, false, cross, pred, depth + 1))
            }
            Value::Array(items) => items
                .iter()
                .find_map(|v| walk(v, false, cross, pred, depth + 1)),
            _ => None,
        }
    }
    walk(node, true, cross, pred, 0)
}

/// Resolves a reference inside the schema document, returning the target and the schema
/// resource it belongs to. Understood: `#`, JSON Pointer fragments (`#/$defs/...`,
/// `#/definitions/...`, percent-decoded) against `base`, plain-name fragments (`#name`,
/// `$anchor`) inside `base`, and a `$id` of the document given verbatim (optionally with
/// such a fragment). Anything else (relative or external URIs, `$dynamicRef`) gives `None`:
/// no keys are listed rather than possibly wrong ones.
fn resolve_ref<'a>(
    root: &'a Value,
    base: &'a Value,
    reference: &str,
) -> Option<(&'a Value, &'a Value)> {
    let (uri, fragment) = reference.split_once('#').unwrap_or((reference, ""));
    let base = if uri.is_empty() {
        base
    } else {
        let is_resource = |v: &Value| {
            v.get("$id")
                .and_then(Value::as_str)
                .is_some_and(|id| id.trim_end_matches('#') == uri)
        };
        find_subschema(root, true, &is_resource)?
    };
    let fragment = percent_decode(fragment)?;
    let target = if fragment.is_empty() {
        base
    } else if fragment.starts_with('/') {
        base.pointer(&fragment)?
    } else {
        let is_anchor =
            |v: &Value| v.get("$anchor").and_then(Value::as_str) == Some(fragment.as_str());
        find_subschema(base, false, &is_anchor)?
    };
    let base = if target.get("$id").is_some() {
        target
    } else {
        base
    };
    Some((target, base))
}

/// Walks an evaluation path (JSON Schema "evaluationPath", which names every `$ref` taken)
/// from the root schema to the schema object it ends at, returning it with its schema
/// resource. References are followed with [`resolve_ref`]; at most [`MAX_REF_DEPTH`] in a
/// row.
fn resolve_evaluation_path<'a>(root: &'a Value, path: &str) -> Option<(&'a Value, &'a Value)> {
    let mut node = root;
    let mut base = root;
    let mut chained = 0usize;
    for raw in path.split('/').skip(1) {
        let token = unescape_token(raw);
        if token == "$ref" {
            chained += 1;
            if chained > MAX_REF_DEPTH {
                return None;
            }
            let reference = node.get("$ref")?.as_str()?;
            (node, base) = resolve_ref(root, base, reference)?;
        } else {
            chained = 0;
            node = match node {
                Value::Object(map) => map.get(&token)?,
                Value::Array(items) => items.get(token.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        if node.get("$id").is_some() {
            base = node;
        }
    }
    Some((node, base))
}

/// The member names `node` declares under `properties`; with `through_applicators`, also
/// those of the subschemas it applies in place (`$ref`, `allOf`, `anyOf`, `oneOf`), following
/// references (resolved against `base`, the resource `node` belongs to) at most
/// [`MAX_REF_DEPTH`] deep. `None` when nothing declares any.
fn allowed_keys(
    root: &Value,
    base: &Value,
    node: &Value,
    through_applicators: bool,
) -> Option<Vec<String>> {
    fn collect(
        root: &Value,
        base: &Value,
        node: &Value,
        through: bool,
        depth: usize,
        keys: &mut BTreeSet<String>,
        declared: &mut bool,
    ) {
        if let Some(props) = node.get("properties").and_then(Value::as_object) {
            *declared = true;
            keys.extend(props.keys().cloned());
        }
        if !through || depth >= MAX_REF_DEPTH {
            return;
        }
        let base = if node.get("$id").is_some() {
            node
        } else {
            base
        };
        if let Some((target, target_base)) = node
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| resolve_ref(root, base, r))
        {
            collect(
                root,
                target_base,
                target,
                through,
                depth + 1,
                keys,
                declared,
            );
        }
        for keyword in ["allOf", "anyOf", "oneOf"] {
            for branch in node
                .get(keyword)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                collect(root, base, branch, through, depth + 1, keys, declared);
            }
        }
    }
    let mut keys = BTreeSet::new();
    let mut declared = false;
    collect(
        root,
        base,
        node,
        through_applicators,
        0,
        &mut keys,
        &mut declared,
    );
    declared.then(|| keys.into_iter().collect())
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Checks that JSON text nests arrays/objects at most `max` levels deep, without parsing it
/// (brackets inside strings, including escaped quotes, do not count).
///
/// ```
/// use strict_mcp::core::schema::depth_within;
/// assert!(depth_within(r#"[[1]]"#, 2).is_ok());
/// assert!(depth_within(r#"[[[1]]]"#, 2).is_err());
/// assert!(depth_within(r#"["[[[\"[[["]"#, 1).is_ok());
/// ```
///
/// # Errors
/// `Err(())` when the bound is exceeded.
#[allow(clippy::result_unit_err)]
pub fn depth_within(text: &str, max: usize) -> Result<(), ()> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for b in text.bytes() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return Err(());
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// Whether `value` nests containers (arrays, objects) more than `max` levels deep: the depth
/// [`depth_within`] measures on its text (a top-level object is depth 1, a scalar 0).
fn deeper_than(value: &Value, max: usize) -> bool {
    match value {
        Value::Array(items) => max == 0 || items.iter().any(|v| deeper_than(v, max - 1)),
        Value::Object(members) => max == 0 || members.values().any(|v| deeper_than(v, max - 1)),
        _ => false,
    }
}

/// Which side of a tool a derived schema describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Arguments (deserialised by the tool).
    Input,
    /// Structured results (serialised by the tool).
    Output,
}

/// Derives a 2020-12 schema for `T` with an explicit `$schema`, in the portable profile:
///
/// - non-recursive `$defs` are inlined (recursive ones stay as `$ref`), so clients that do not
///   resolve references still see the whole shape;
/// - optional members (`Option` fields, which are not `required`) do not accept `null` (no
///   `null` in `type` arrays or `enum`): the schema says "omit it". Output types therefore
///   mark `Option` fields `#[serde(skip_serializing_if = "Option::is_none")]`; the registry
///   refuses an output type whose `Option` would serialise as `null`;
/// - `const` becomes a one-value `enum`;
/// - integer formats (`int32`, `uint64`, ...) become `minimum`/`maximum`, so the schema refuses
///   what the Rust type cannot hold;
/// - on the input side, plain object schemas get `additionalProperties: false` unless they
///   say otherwise, so a misspelt member is reported (with the allowed keys) instead of being
///   silently ignored; a tool without parameters gets `{"type":"object",
///   "additionalProperties":false}`. Maps (`additionalProperties: {...}`) are untouched.
///
/// ```
/// use schemars::JsonSchema;
/// use strict_mcp::core::schema::{derive_schema, Side};
/// #[derive(JsonSchema, serde::Deserialize)]
/// struct In { /// How many.
///     count: u32, note: Option<String> }
/// let s = derive_schema::<In>(Side::Input);
/// assert_eq!(s["$schema"], "https://json-schema.org/draft/2020-12/schema");
/// assert_eq!(s["required"], serde_json::json!(["count"]));
/// assert_eq!(s["properties"]["note"]["type"], "string");
/// assert_eq!(s["properties"]["count"]["description"], "How many.");
/// ```
#[must_use]
pub fn derive_schema<T: JsonSchema>(side: Side) -> Value {
    derive_schema_with::<T>(side, SchemaProfile::Portable)
}

/// How a derived schema carries a sub-schema that several places use (a type that appears in
/// two fields, say).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SchemaProfile {
    /// Every non-recursive definition inlined where it is used: clients and LLM providers
    /// that do not resolve `$ref` still see the whole shape. The default.
    #[default]
    Portable,
    /// The smallest schema: a definition used more than once stays under `$defs` and every
    /// use is a local `{"$ref": "#/$defs/Name"}` (when that is shorter than repeating it); a
    /// definition used once is still inlined. For clients that resolve local references, as
    /// JSON Schema 2020-12 requires. Everything else is as in [`SchemaProfile::Portable`].
    Shared,
}

/// [`derive_schema`] in the chosen [`SchemaProfile`].
///
/// ```
/// use schemars::JsonSchema;
/// use strict_mcp::core::schema::{derive_schema_with, SchemaProfile, Side};
/// #[derive(JsonSchema, serde::Deserialize)]
/// struct Point { /// Metres east.
///     x: i32, /// Metres north.
///     y: i32 }
/// #[derive(JsonSchema, serde::Deserialize)]
/// struct Route { from: Point, to: Point }
/// let shared = derive_schema_with::<Route>(Side::Input, SchemaProfile::Shared);
/// assert_eq!(shared["properties"]["from"]["$ref"], "#/$defs/Point");
/// assert_eq!(shared["$defs"]["Point"]["required"], serde_json::json!(["x", "y"]));
/// let portable = derive_schema_with::<Route>(Side::Input, SchemaProfile::Portable);
/// assert!(portable.get("$defs").is_none());
/// assert!(shared.to_string().len() < portable.to_string().len());
/// ```
#[must_use]
pub fn derive_schema_with<T: JsonSchema>(side: Side, profile: SchemaProfile) -> Value {
    let settings = SchemaSettings::draft2020_12();
    let settings = match side {
        Side::Input => settings.for_deserialize(),
        Side::Output => settings.for_serialize(),
    };
    let mut value = settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    inline_defs(&mut value, profile);
    strip_optional_null(&mut value);
    if side == Side::Input {
        close_objects(&mut value);
    }
    if let Value::Object(map) = &mut value {
        map.insert(
            "$schema".to_owned(),
            Value::String(DRAFT_2020_12.to_owned()),
        );
    }
    value
}

/// Turns schemars' integer `format` annotations into `minimum`/`maximum`, so the schema refuses
/// exactly what the Rust integer type cannot hold (the deserializer and the schema agree).
fn integer_bounds(map: &mut Map<String, Value>) {
    let Some(Value::String(format)) = map.get("format") else {
        return;
    };
    let (min, max): (Value, Value) = match format.as_str() {
        "int8" => (i8::MIN.into(), i8::MAX.into()),
        "int16" => (i16::MIN.into(), i16::MAX.into()),
        "int32" => (i32::MIN.into(), i32::MAX.into()),
        "int64" => (i64::MIN.into(), i64::MAX.into()),
        "uint8" => (0.into(), u8::MAX.into()),
        "uint16" => (0.into(), u16::MAX.into()),
        "uint32" => (0.into(), u32::MAX.into()),
        "uint64" => (0.into(), u64::MAX.into()),
        "uint" => (0.into(), usize::MAX.into()),
        "int" => (isize::MIN.into(), isize::MAX.into()),
        _ => return,
    };
    map.entry("minimum").or_insert(min);
    map.entry("maximum").or_insert(max);
}

/// Replaces `{"$ref": "#/$defs/X"}` by the definition of `X` when `X` is not recursive and,
/// in the shared profile, not used often enough to be worth sharing. Kept definitions get the
/// same treatment inside, so no reference is left to a definition that was dropped.
fn inline_defs(root: &mut Value, profile: SchemaProfile) {
    let Some(Value::Object(defs)) = root.get("$defs").cloned() else {
        return;
    };
    let mut keep: BTreeSet<String> = defs
        .keys()
        .filter(|name| reaches(&defs, name, name, &mut BTreeSet::new()))
        .cloned()
        .collect();
    if profile == SchemaProfile::Shared {
        keep.extend(worth_sharing(root, &defs));
    }
    // Every inlining step removes one level of non-recursive references; the depth of such
    // references is bounded by the number of definitions.
    let inline = |node: &mut Value, is_root: bool| {
        for _ in 0..=defs.len() {
            if !replace_refs(node, &defs, &keep, is_root) {
                break;
            }
        }
    };
    inline(root, true);
    if let Value::Object(map) = root {
        if keep.is_empty() {
            map.remove("$defs");
        } else if let Some(Value::Object(kept)) = map.get_mut("$defs") {
            kept.retain(|name, _| keep.contains(name));
            for def in kept.values_mut() {
                inline(def, false);
            }
        }
    }
}

/// The definitions used more than once whose sharing makes the schema shorter: each use
/// costs `"$ref":"#/$defs/Name"` instead of the definition's members, and the definition is
/// written once under `$defs`.
fn worth_sharing(root: &Value, defs: &Map<String, Value>) -> BTreeSet<String> {
    let mut refs = Vec::new();
    refs_in(root, &mut refs);
    let mut uses: BTreeMap<&str, usize> = BTreeMap::new();
    for name in refs {
        *uses.entry(name).or_default() += 1;
    }
    uses.into_iter()
        .filter(|&(name, n)| {
            let Some(def) = defs.get(name) else {
                return false;
            };
            let members = def.to_string().len().saturating_sub(2);
            let reference = r##""$ref":"#/$defs/""##.len() + name.len() + 1;
            let entry = name.len() + 4 + members + 1;
            n >= 2 && n * reference + entry < n * members
        })
        .map(|(name, _)| name.to_owned())
        .collect()
}

fn def_ref(node: &Value) -> Option<&str> {
    node.get("$ref")?.as_str()?.strip_prefix("#/$defs/")
}

fn refs_in<'a>(node: &'a Value, out: &mut Vec<&'a str>) {
    match node {
        Value::Object(map) => {
            if let Some(name) = def_ref(node) {
                out.push(name);
            }
            map.values().for_each(|v| refs_in(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| refs_in(v, out)),
        _ => {}
    }
}

fn reaches(
    defs: &Map<String, Value>,
    from: &str,
    target: &str,
    seen: &mut BTreeSet<String>,
) -> bool {
    let Some(def) = defs.get(from) else {
        return false;
    };
    let mut refs = Vec::new();
    refs_in(def, &mut refs);
    refs.into_iter().any(|next| {
        next == target || (seen.insert(next.to_owned()) && reaches(defs, next, target, seen))
    })
}

fn replace_refs(
    node: &mut Value,
    defs: &Map<String, Value>,
    recursive: &BTreeSet<String>,
    is_root: bool,
) -> bool {
    let mut changed = false;
    if let Some(name) = def_ref(node).map(str::to_owned) {
        if !recursive.contains(&name) {
            if let (Some(Value::Object(def)), Value::Object(map)) = (defs.get(&name), &mut *node) {
                map.remove("$ref");
                for (k, v) in def {
                    map.entry(k.clone()).or_insert_with(|| v.clone());
                }
                changed = true;
            }
        }
    }
    match node {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                if is_root && key == "$defs" {
                    continue;
                }
                changed |= replace_refs(child, defs, recursive, false);
            }
        }
        Value::Array(items) => {
            for child in items {
                changed |= replace_refs(child, defs, recursive, false);
            }
        }
        _ => {}
    }
    changed
}

/// Adds `additionalProperties: false` to plain object schemas (input side only).
fn close_objects(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let plain = map.get("type") == Some(&Value::String("object".to_owned()))
                && ![
                    "additionalProperties",
                    "unevaluatedProperties",
                    "patternProperties",
                    "allOf",
                    "anyOf",
                    "oneOf",
                    "$ref",
                    "$dynamicRef",
                ]
                .iter()
                .any(|k| map.contains_key(*k));
            if plain {
                map.insert("additionalProperties".to_owned(), Value::Bool(false));
            }
            map.values_mut().for_each(close_objects);
        }
        Value::Array(items) => items.iter_mut().for_each(close_objects),
        _ => {}
    }
}

fn strip_optional_null(value: &mut Value) {
    match value {
        Value::Object(map) => {
            integer_bounds(map);
            if let Some(c) = map.remove("const") {
                map.entry("enum").or_insert(Value::Array(vec![c]));
            }
            let required: BTreeSet<String> = map
                .get("required")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            if let Some(Value::Object(props)) = map.get_mut("properties") {
                for (name, prop) in props.iter_mut() {
                    if !required.contains(name) {
                        drop_null(prop);
                    }
                }
            }
            for v in map.values_mut() {
                strip_optional_null(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_optional_null),
        _ => {}
    }
}

fn drop_null(prop: &mut Value) {
    let Value::Object(map) = prop else { return };
    if let Some(Value::Array(types)) = map.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let t = types.remove(0);
            map.insert("type".to_owned(), t);
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = map.get_mut(key) {
            branches.retain(|b| b != &serde_json::json!({"type": "null"}));
            if branches.len() == 1 {
                let Some(Value::Object(only)) = branches.pop() else {
                    continue;
                };
                map.remove(key);
                for (k, v) in only {
                    map.entry(k).or_insert(v);
                }
            }
        }
    }
    if let Some(Value::Array(values)) = map.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
}

/// Checks the root of a tool schema: an object schema with `type: "object"`.
pub(crate) fn check_object_root(schema: &Value) -> Result<(), String> {
    match schema.get("type") {
        Some(Value::String(t)) if t == "object" => Ok(()),
        Some(Value::String(t)) if t == "array" => {
            Err("root is a bare array; it must be `type: \"object\"`".to_owned())
        }
        _ => Err("root must declare `type: \"object\"`".to_owned()),
    }
}

/// Checks that an output schema names its payload: object root, at least one named
/// property, no generic `items` key.
pub(crate) fn check_named_payload(schema: &Value) -> Result<(), String> {
    check_object_root(schema)?;
    let props = schema
        .get("properties")
        .and_then(Value::as_object)
        .filter(|p| !p.is_empty())
        .ok_or_else(|| "the object has no named properties".to_owned())?;
    if props.contains_key("items") {
        return Err(
            "a generic `items` key tells the model nothing; name the collection after its contents"
                .to_owned(),
        );
    }
    if let Some(name) = required_nullable(schema) {
        return Err(format!(
            "property `{name}` is an Option that serialises as null; mark it \
             #[serde(skip_serializing_if = \"Option::is_none\")] so None is omitted"
        ));
    }
    Ok(())
}

/// Finds a required property that admits `null` anywhere in a derived output schema: the
/// shape of an `Option` field serialised without `skip_serializing_if`.
fn required_nullable(schema: &Value) -> Option<String> {
    match schema {
        Value::Object(map) => {
            if let (Some(Value::Array(required)), Some(Value::Object(props))) =
                (map.get("required"), map.get("properties"))
            {
                for name in required.iter().filter_map(Value::as_str) {
                    if props.get(name).is_some_and(admits_null) {
                        return Some(name.to_owned());
                    }
                }
            }
            map.values().find_map(required_nullable)
        }
        Value::Array(items) => items.iter().find_map(required_nullable),
        _ => None,
    }
}

/// The members of a JSON object in order, values as raw text.
struct Members<'a>(Vec<(String, &'a serde_json::value::RawValue)>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for Members<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Members<'de>, A::Error> {
                let mut members = Vec::new();
                while let Some(entry) =
                    map.next_entry::<String, &'de serde_json::value::RawValue>()?
                {
                    members.push(entry);
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(Visit)
    }
}

/// The top-level properties that are not `required` and whose `type` excludes `null`.
fn nullable_optionals(schema: &Value) -> BTreeSet<String> {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return BTreeSet::new();
    };
    let required: BTreeSet<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    props
        .iter()
        .filter(|(name, prop)| {
            let typed_non_null = match prop.get("type") {
                Some(Value::String(t)) => t != "null",
                Some(Value::Array(types)) => {
                    !types.is_empty() && types.iter().all(|t| t.as_str() != Some("null"))
                }
                _ => false,
            };
            !required.contains(name.as_str()) && typed_non_null && !admits_null(prop)
        })
        .map(|(name, _)| name.clone())
        .collect()
}

fn admits_null(prop: &Value) -> bool {
    let null = Value::String("null".to_owned());
    match prop.get("type") {
        Some(Value::Array(types)) if types.contains(&null) => return true,
        Some(t) if *t == null => return false,
        _ => {}
    }
    ["anyOf", "oneOf"].iter().any(|k| {
        prop.get(*k)
            .and_then(Value::as_array)
            .is_some_and(|branches| branches.iter().any(|b| b.get("type") == Some(&null)))
    })
}

// The `x-mcp-header` rules live with the other header rules; the old path stays.
pub use crate::wire::headers::{check_mcp_headers, HeaderViolation, MAX_HEADER_INTEGER};

/// Why an elicitation `requestedSchema` is not a flat object of primitive properties,
/// the restricted subset of JSON Schema every client can render as a form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FlatSchemaError {
    /// The root is not an object with `type: "object"`.
    #[error("the root must be an object with `type: \"object\"`")]
    RootType,
    /// The root has no `properties` object.
    #[error("the root must have a `properties` object")]
    RootProperties,
    /// The root carries a keyword outside `$schema`, `type`, `properties`, `required`.
    #[error("keyword `{0}` is not allowed at the root")]
    RootKeyword(String),
    /// `$schema` is not a string.
    #[error("`$schema` must be a string")]
    SchemaUri,
    /// `required` is not an array of strings.
    #[error("`required` must be an array of property names")]
    Required,
    /// `required` names something that is not a property (the form could never satisfy it).
    #[error("`required` names `{0}`, which is not a property")]
    RequiredUnknown(String),
    /// One property breaks the rules of its kind.
    #[error("property `{name}`: {problem}")]
    Property {
        /// The property name.
        name: String,
        /// What is wrong with it.
        problem: PropertyProblem,
    },
}

/// What is wrong with one property of a `requestedSchema`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PropertyProblem {
    /// The property schema is not an object.
    #[error("the schema must be an object")]
    NotObject,
    /// `type` is missing or names no primitive kind (objects and `null` included).
    #[error("`type` must be string, number, integer, boolean or array")]
    Kind,
    /// A keyword this kind does not allow (nesting keywords such as `properties` included).
    #[error("keyword `{0}` is not allowed here")]
    Keyword(String),
    /// A keyword's value has the wrong JSON type or range.
    #[error("keyword `{0}` has the wrong type")]
    KeywordType(&'static str),
    /// `format` is not one of email, uri, date, date-time.
    #[error("format `{0}` is not one of email, uri, date, date-time")]
    Format(String),
    /// Both `enum` and `oneOf`: a single-select enum uses one form.
    #[error("`enum` and `oneOf` cannot be combined")]
    EnumAndOneOf,
    /// `enum`, `oneOf` or `items.anyOf` is empty, repeats a value or has a malformed option.
    #[error("the options must be a non-empty list of distinct strings or {{const, title}} pairs")]
    Options,
    /// `enumNames` does not give one string per `enum` value.
    #[error("`enumNames` must give one string per `enum` value")]
    EnumNames,
    /// An array whose `items` are not a string enum (arrays of objects included).
    #[error("`items` must be `{{type: \"string\", enum}}` or `{{anyOf: [{{const, title}}]}}`")]
    Items,
    /// A lower bound above its upper bound.
    #[error("`{0}` exceeds its upper bound")]
    Range(&'static str),
    /// `default` does not fit the property.
    #[error("`default` does not fit the property")]
    Default,
}

/// Keywords every property kind may carry.
const ANNOTATIONS: [&str; 3] = ["type", "title", "description"];

/// Checks an elicitation `requestedSchema` against the elicitation rules: a root `{type: "object", properties,
/// required?, $schema?}` whose properties are each one of string (`minLength`, `maxLength`,
/// `format`, `default`), number or integer (`minimum`, `maximum`, `default`), boolean
/// (`default`), single-select enum (`enum` with optional legacy `enumNames`, or `oneOf` of
/// `{const, title}`), or multi-select enum (array whose `items` are `{type: "string", enum}`
/// or `{anyOf: [{const, title}]}`, plus `minItems`/`maxItems`); each kind may also carry
/// `title` and `description`. Anything else is refused, so no client meets a form it cannot
/// render.
pub(crate) fn check_flat_schema(schema: &Value) -> Result<(), FlatSchemaError> {
    let root = schema
        .as_object()
        .filter(|m| m.get("type").and_then(Value::as_str) == Some("object"))
        .ok_or(FlatSchemaError::RootType)?;
    if let Some(key) = root
        .keys()
        .find(|k| !["$schema", "type", "properties", "required"].contains(&k.as_str()))
    {
        return Err(FlatSchemaError::RootKeyword(key.clone()));
    }
    if root.get("$schema").is_some_and(|s| !s.is_string()) {
        return Err(FlatSchemaError::SchemaUri);
    }
    let props = root
        .get("properties")
        .and_then(Value::as_object)
        .ok_or(FlatSchemaError::RootProperties)?;
    if let Some(required) = root.get("required") {
        let names = required.as_array().ok_or(FlatSchemaError::Required)?;
        for name in names {
            let name = name.as_str().ok_or(FlatSchemaError::Required)?;
            if !props.contains_key(name) {
                return Err(FlatSchemaError::RequiredUnknown(name.to_owned()));
            }
        }
    }
    for (name, prop) in props {
        check_primitive(prop).map_err(|problem| FlatSchemaError::Property {
            name: name.clone(),
            problem,
        })?;
    }
    Ok(())
}

fn check_primitive(prop: &Value) -> Result<(), PropertyProblem> {
    let map = prop.as_object().ok_or(PropertyProblem::NotObject)?;
    for key in ["title", "description"] {
        if map.get(key).is_some_and(|v| !v.is_string()) {
            return Err(PropertyProblem::KeywordType(key));
        }
    }
    let only = |allowed: &[&str]| match map
        .keys()
        .find(|k| !ANNOTATIONS.contains(&k.as_str()) && !allowed.contains(&k.as_str()))
    {
        Some(key) => Err(PropertyProblem::Keyword(key.clone())),
        None => Ok(()),
    };
    match map.get("type").and_then(Value::as_str) {
        Some("string") if map.contains_key("enum") || map.contains_key("oneOf") => {
            only(&["enum", "enumNames", "oneOf", "default"])?;
            let values = match (map.get("enum"), map.get("oneOf")) {
                (Some(_), Some(_)) => return Err(PropertyProblem::EnumAndOneOf),
                (Some(values), None) => {
                    let values = string_options(values)?;
                    if let Some(names) = map.get("enumNames") {
                        let names = names.as_array().ok_or(PropertyProblem::EnumNames)?;
                        if names.len() != values.len() || !names.iter().all(Value::is_string) {
                            return Err(PropertyProblem::EnumNames);
                        }
                    }
                    values
                }
                (None, Some(options)) => {
                    if map.contains_key("enumNames") {
                        return Err(PropertyProblem::Keyword("enumNames".to_owned()));
                    }
                    titled_options(options)?
                }
                (None, None) => Vec::new(),
            };
            match map.get("default") {
                None => Ok(()),
                Some(Value::String(d)) if values.contains(&d.as_str()) => Ok(()),
                Some(_) => Err(PropertyProblem::Default),
            }
        }
        Some("string") => {
            only(&["minLength", "maxLength", "format", "default"])?;
            let min = length(map, "minLength")?;
            let max = length(map, "maxLength")?;
            if let (Some(min), Some(max)) = (min, max) {
                if min > max {
                    return Err(PropertyProblem::Range("minLength"));
                }
            }
            match map.get("format") {
                None => {}
                Some(Value::String(f))
                    if ["email", "uri", "date", "date-time"].contains(&f.as_str()) => {}
                Some(Value::String(f)) => return Err(PropertyProblem::Format(f.clone())),
                Some(_) => return Err(PropertyProblem::KeywordType("format")),
            }
            match map.get("default") {
                None | Some(Value::String(_)) => Ok(()),
                Some(_) => Err(PropertyProblem::Default),
            }
        }
        Some(kind @ ("number" | "integer")) => {
            only(&["minimum", "maximum", "default"])?;
            let bound = |key: &'static str| match map.get(key) {
                None => Ok(None),
                Some(Value::Number(n)) => Ok(n.as_f64()),
                Some(_) => Err(PropertyProblem::KeywordType(key)),
            };
            if let (Some(min), Some(max)) = (bound("minimum")?, bound("maximum")?) {
                if min > max {
                    return Err(PropertyProblem::Range("minimum"));
                }
            }
            match map.get("default") {
                None => Ok(()),
                Some(Value::Number(n)) if kind == "number" || n.is_i64() || n.is_u64() => Ok(()),
                Some(_) => Err(PropertyProblem::Default),
            }
        }
        Some("boolean") => {
            only(&["default"])?;
            match map.get("default") {
                None | Some(Value::Bool(_)) => Ok(()),
                Some(_) => Err(PropertyProblem::Default),
            }
        }
        Some("array") => {
            only(&["items", "minItems", "maxItems", "default"])?;
            let items = map
                .get("items")
                .and_then(Value::as_object)
                .ok_or(PropertyProblem::Items)?;
            let values = match (items.get("type"), items.get("enum"), items.get("anyOf")) {
                (Some(Value::String(t)), Some(values), None)
                    if t == "string" && items.len() == 2 =>
                {
                    string_options(values)?
                }
                (None, None, Some(options)) if items.len() == 1 => titled_options(options)?,
                _ => return Err(PropertyProblem::Items),
            };
            let min = length(map, "minItems")?;
            let max = length(map, "maxItems")?;
            if let (Some(min), Some(max)) = (min, max) {
                if min > max {
                    return Err(PropertyProblem::Range("minItems"));
                }
            }
            match map.get("default") {
                None => Ok(()),
                Some(Value::Array(chosen))
                    if chosen
                        .iter()
                        .all(|c| c.as_str().is_some_and(|c| values.contains(&c))) =>
                {
                    Ok(())
                }
                Some(_) => Err(PropertyProblem::Default),
            }
        }
        _ => Err(PropertyProblem::Kind),
    }
}

/// A non-negative integer keyword (`minLength`, `maxItems`, …), when present.
fn length(map: &Map<String, Value>, key: &'static str) -> Result<Option<u64>, PropertyProblem> {
    match map.get(key) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or(PropertyProblem::KeywordType(key)),
    }
}

/// `enum` values: a non-empty array of distinct strings.
fn string_options(values: &Value) -> Result<Vec<&str>, PropertyProblem> {
    let values = values.as_array().ok_or(PropertyProblem::Options)?;
    let mut out = Vec::with_capacity(values.len());
    for v in values {
        let v = v.as_str().ok_or(PropertyProblem::Options)?;
        if out.contains(&v) {
            return Err(PropertyProblem::Options);
        }
        out.push(v);
    }
    if out.is_empty() {
        return Err(PropertyProblem::Options);
    }
    Ok(out)
}

/// `oneOf` / `anyOf` options: a non-empty array of `{const, title}` string pairs with distinct
/// values.
fn titled_options(options: &Value) -> Result<Vec<&str>, PropertyProblem> {
    let options = options.as_array().ok_or(PropertyProblem::Options)?;
    let mut out = Vec::with_capacity(options.len());
    for option in options {
        let option = option.as_object().ok_or(PropertyProblem::Options)?;
        let (Some(Value::String(value)), Some(Value::String(_)), 2) =
            (option.get("const"), option.get("title"), option.len())
        else {
            return Err(PropertyProblem::Options);
        };
        if out.contains(&value.as_str()) {
            return Err(PropertyProblem::Options);
        }
        out.push(value.as_str());
    }
    if out.is_empty() {
        return Err(PropertyProblem::Options);
    }
    Ok(out)
}

/// The JSON Schema (2020-12) of the failure envelope `{"failure": {...}}`, derived from
/// [`ToolFailure`]: the publication layer references it next to an application's output
/// schema, and every envelope the core produces validates against it.
///
/// ```
/// use strict_mcp::core::{failure_envelope_schema, FailureCode, ToolFailure};
/// use strict_mcp::core::schema::CompiledSchema;
/// let schema = CompiledSchema::compile_value(&failure_envelope_schema()).unwrap();
/// let envelope = ToolFailure::new(FailureCode::StateRejected, "expired").envelope();
/// assert!(schema.validate_value(&envelope).is_ok());
/// assert!(schema.validate_value(&serde_json::json!({"failure": {"code": "nope"}})).is_err());
/// ```
#[must_use]
pub fn failure_envelope_schema() -> Value {
    let mut inner = derive_schema::<ToolFailure>(Side::Output);
    if let Value::Object(map) = &mut inner {
        map.remove("$schema");
        map.remove("title");
    }
    serde_json::json!({
        "$schema": DRAFT_2020_12,
        "type": "object",
        "properties": { "failure": inner },
        "required": ["failure"],
        "additionalProperties": false,
    })
}

#[cfg(test)]
mod flat_schema_tests {
    //! one accept and at least one refusal per rule of the flat `requestedSchema`.

    use super::{check_flat_schema, FlatSchemaError, PropertyProblem};
    use serde_json::{json, Value};

    /// A root holding one property `p`.
    fn one(prop: Value) -> Value {
        json!({"type": "object", "properties": {"p": prop}})
    }

    fn accepts(prop: Value) {
        let schema = one(prop);
        assert_eq!(check_flat_schema(&schema), Ok(()), "{schema}");
    }

    fn refuses(prop: Value, problem: PropertyProblem) {
        let schema = one(prop);
        assert_eq!(
            check_flat_schema(&schema),
            Err(FlatSchemaError::Property {
                name: "p".to_owned(),
                problem
            }),
            "{schema}"
        );
    }

    fn keyword(k: &str) -> PropertyProblem {
        PropertyProblem::Keyword(k.to_owned())
    }

    #[test]
    fn i19_root_is_an_object_with_properties_and_optional_required_and_schema() {
        let ok = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "required": ["a"],
        });
        assert_eq!(check_flat_schema(&ok), Ok(()));
        assert_eq!(
            check_flat_schema(&json!({"type": "object", "properties": {}})),
            Ok(())
        );
        for bad in [
            json!({"properties": {}}),
            json!({"type": "string", "properties": {}}),
            json!(["type", "object"]),
            json!(null),
        ] {
            assert_eq!(
                check_flat_schema(&bad),
                Err(FlatSchemaError::RootType),
                "{bad}"
            );
        }
        assert_eq!(
            check_flat_schema(&json!({"type": "object"})),
            Err(FlatSchemaError::RootProperties)
        );
        assert_eq!(
            check_flat_schema(&json!({"type": "object", "properties": []})),
            Err(FlatSchemaError::RootProperties)
        );
        assert_eq!(
            check_flat_schema(
                &json!({"type": "object", "properties": {}, "additionalProperties": false})
            ),
            Err(FlatSchemaError::RootKeyword(
                "additionalProperties".to_owned()
            ))
        );
        assert_eq!(
            check_flat_schema(&json!({"$schema": 7, "type": "object", "properties": {}})),
            Err(FlatSchemaError::SchemaUri)
        );
    }

    #[test]
    fn i19_required_lists_property_names() {
        for bad in [json!("a"), json!([1]), json!([null])] {
            let schema =
                json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": bad});
            assert_eq!(
                check_flat_schema(&schema),
                Err(FlatSchemaError::Required),
                "{schema}"
            );
        }
        let schema =
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]});
        assert_eq!(
            check_flat_schema(&schema),
            Err(FlatSchemaError::RequiredUnknown("b".to_owned()))
        );
    }

    #[test]
    fn i19_every_kind_may_carry_title_and_description_as_strings() {
        accepts(json!({"type": "boolean", "title": "OK?", "description": "Tick to agree."}));
        refuses(
            json!({"type": "boolean", "title": 1}),
            PropertyProblem::KeywordType("title"),
        );
        refuses(
            json!({"type": "string", "description": ["x"]}),
            PropertyProblem::KeywordType("description"),
        );
    }

    #[test]
    fn i19_string_with_lengths_format_and_default() {
        accepts(json!({"type": "string"}));
        accepts(json!({"type": "string", "minLength": 0, "maxLength": 0}));
        accepts(json!({"type": "string", "minLength": 1, "maxLength": 64, "default": "x"}));
        for format in ["email", "uri", "date", "date-time"] {
            accepts(json!({"type": "string", "format": format}));
        }
        refuses(
            json!({"type": "string", "format": "ipv4"}),
            PropertyProblem::Format("ipv4".to_owned()),
        );
        refuses(
            json!({"type": "string", "format": 1}),
            PropertyProblem::KeywordType("format"),
        );
        refuses(
            json!({"type": "string", "minLength": -1}),
            PropertyProblem::KeywordType("minLength"),
        );
        refuses(
            json!({"type": "string", "maxLength": "5"}),
            PropertyProblem::KeywordType("maxLength"),
        );
        refuses(
            json!({"type": "string", "minLength": 1.5}),
            PropertyProblem::KeywordType("minLength"),
        );
        refuses(
            json!({"type": "string", "minLength": 3, "maxLength": 2}),
            PropertyProblem::Range("minLength"),
        );
        refuses(
            json!({"type": "string", "default": 1}),
            PropertyProblem::Default,
        );
        refuses(
            json!({"type": "string", "pattern": "^a"}),
            keyword("pattern"),
        );
        refuses(json!({"type": "string", "minimum": 1}), keyword("minimum"));
    }

    #[test]
    fn i19_number_and_integer_with_bounds_and_default() {
        accepts(json!({"type": "number", "minimum": -1.5, "maximum": 2.5, "default": 0.5}));
        accepts(json!({"type": "integer", "minimum": 1, "maximum": 1, "default": 1}));
        refuses(
            json!({"type": "integer", "default": 1.5}),
            PropertyProblem::Default,
        );
        refuses(
            json!({"type": "number", "default": "1"}),
            PropertyProblem::Default,
        );
        refuses(
            json!({"type": "number", "minimum": "0"}),
            PropertyProblem::KeywordType("minimum"),
        );
        refuses(
            json!({"type": "integer", "maximum": null}),
            PropertyProblem::KeywordType("maximum"),
        );
        refuses(
            json!({"type": "number", "minimum": 2, "maximum": 1}),
            PropertyProblem::Range("minimum"),
        );
        refuses(
            json!({"type": "number", "multipleOf": 2}),
            keyword("multipleOf"),
        );
        refuses(
            json!({"type": "integer", "exclusiveMinimum": 0}),
            keyword("exclusiveMinimum"),
        );
    }

    #[test]
    fn i19_boolean_with_default() {
        accepts(json!({"type": "boolean", "default": false}));
        refuses(
            json!({"type": "boolean", "default": "false"}),
            PropertyProblem::Default,
        );
        refuses(json!({"type": "boolean", "const": true}), keyword("const"));
    }

    #[test]
    fn i19_single_select_enum_untitled_titled_and_legacy() {
        accepts(json!({"type": "string", "enum": ["a", "b"], "default": "b"}));
        accepts(json!({"type": "string", "oneOf": [{"const": "a", "title": "A"}], "default": "a"}));
        accepts(json!({"type": "string", "enum": ["a", "b"], "enumNames": ["A", "B"]}));
        refuses(
            json!({"type": "string", "enum": ["a"], "oneOf": [{"const": "a", "title": "A"}]}),
            PropertyProblem::EnumAndOneOf,
        );
        for options in [json!([]), json!(["a", "a"]), json!([1]), json!("a")] {
            refuses(
                json!({"type": "string", "enum": options}),
                PropertyProblem::Options,
            );
        }
        for options in [
            json!([]),
            json!([{"const": "a"}]),
            json!([{"const": "a", "title": 1}]),
            json!([{"const": "a", "title": "A", "extra": 1}]),
            json!([{"const": "a", "title": "A"}, {"const": "a", "title": "B"}]),
        ] {
            refuses(
                json!({"type": "string", "oneOf": options}),
                PropertyProblem::Options,
            );
        }
        refuses(
            json!({"type": "string", "enum": ["a", "b"], "enumNames": ["A"]}),
            PropertyProblem::EnumNames,
        );
        refuses(
            json!({"type": "string", "enum": ["a"], "enumNames": [1]}),
            PropertyProblem::EnumNames,
        );
        refuses(
            json!({"type": "string", "oneOf": [{"const": "a", "title": "A"}], "enumNames": ["A"]}),
            keyword("enumNames"),
        );
        refuses(
            json!({"type": "string", "enum": ["a"], "default": "z"}),
            PropertyProblem::Default,
        );
        refuses(
            json!({"type": "string", "enum": ["a"], "format": "email"}),
            keyword("format"),
        );
        // An enum of another type is no single-select enum.
        refuses(json!({"type": "number", "enum": [1, 2]}), keyword("enum"));
    }

    #[test]
    fn i19_multi_select_enum_untitled_and_titled() {
        accepts(json!({
            "type": "array",
            "items": {"type": "string", "enum": ["a", "b", "c"]},
            "minItems": 1, "maxItems": 2, "default": ["a"],
        }));
        accepts(json!({
            "type": "array",
            "items": {"anyOf": [{"const": "a", "title": "A"}, {"const": "b", "title": "B"}]},
        }));
        refuses(
            json!({"type": "array", "items": {"type": "string", "enum": ["a"]}, "minItems": 2, "maxItems": 1}),
            PropertyProblem::Range("minItems"),
        );
        refuses(
            json!({"type": "array", "items": {"type": "string", "enum": ["a"]}, "maxItems": -1}),
            PropertyProblem::KeywordType("maxItems"),
        );
        refuses(
            json!({"type": "array", "items": {"type": "string", "enum": ["a"]}, "default": ["z"]}),
            PropertyProblem::Default,
        );
        refuses(
            json!({"type": "array", "items": {"type": "string", "enum": ["a"]}, "default": "a"}),
            PropertyProblem::Default,
        );
        refuses(
            json!({"type": "array", "items": {"type": "string", "enum": ["a"]}, "uniqueItems": true}),
            keyword("uniqueItems"),
        );
        // Free strings, objects, nested arrays, a missing `items`: not a multi-select enum.
        for items in [
            json!({"type": "string"}),
            json!({"type": "object", "properties": {"x": {"type": "string"}}}),
            json!({"type": "array", "items": {"type": "string", "enum": ["a"]}}),
            json!({"type": "number", "enum": [1]}),
            json!({"type": "string", "enum": ["a"], "title": "x"}),
            json!({"anyOf": [{"const": "a", "title": "A"}], "type": "string"}),
            json!(["a"]),
        ] {
            refuses(
                json!({"type": "array", "items": items}),
                PropertyProblem::Items,
            );
        }
        refuses(json!({"type": "array"}), PropertyProblem::Items);
        refuses(
            json!({"type": "array", "items": {"anyOf": []}}),
            PropertyProblem::Options,
        );
    }

    #[test]
    fn i19_nested_objects_and_non_primitive_kinds_are_refused() {
        for prop in [
            json!({"type": "object", "properties": {"x": {"type": "string"}}}),
            json!({"type": "null"}),
            json!({"type": ["string", "null"]}),
            json!({"properties": {"x": {"type": "string"}}}),
            json!({"$ref": "#/$defs/x"}),
            json!({}),
        ] {
            refuses(prop, PropertyProblem::Kind);
        }
        refuses(json!(true), PropertyProblem::NotObject);
        refuses(json!("string"), PropertyProblem::NotObject);
        // Nesting keywords on a primitive kind are refused as keywords.
        refuses(
            json!({"type": "string", "properties": {}}),
            keyword("properties"),
        );
        refuses(
            json!({"type": "boolean", "items": {"type": "string"}}),
            keyword("items"),
        );
    }

    #[test]
    fn i19_the_failing_property_is_named() {
        let schema = json!({"type": "object", "properties": {
            "fine": {"type": "string"},
            "nested": {"type": "object", "properties": {}},
        }});
        let err = check_flat_schema(&schema).unwrap_err();
        assert_eq!(
            err.to_string(),
            "property `nested`: `type` must be string, number, integer, boolean or array"
        );
    }
}
