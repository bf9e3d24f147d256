//! Generates the wire types from the pinned MCP 2026-07-28 `schema.json` and checks them
//! against the committed snapshot `generated/wire.rs`.
//!
//! The crate always compiles the committed snapshot (so a clone without the schema still
//! builds); this script only *verifies* it:
//!
//! 1. Find the schema: `MCP_SCHEMA_PATH`, else `../shared/schema/2026-07-28/schema.json`
//!    relative to the manifest directory.
//! 2. Absent: one `cargo:warning` and build from the snapshot, unless `CI=true`, where a
//!    missing schema fails the build (CI must prove the snapshot, not trust it).
//! 3. Present: check its SHA-256 against `schema/PIN.toml` (O87), rewrite the schema JSON
//!    (the passes below), run typify, post-process with syn, format with prettyplease and
//!    compare with `generated/wire.rs`. A difference fails the build unless
//!    `MCP_REGENERATE=1`, which rewrites the snapshot.

#[allow(dead_code)]
#[path = "src/wire/pin.rs"]
mod pin;

use std::collections::{BTreeMap, BTreeSet};
use std::env;
use std::fmt;
use std::fs;
use std::path::PathBuf;

use serde_json::{Map, Value};
use syn::visit_mut::VisitMut;

/// Snapshot path, relative to the manifest directory.
const SNAPSHOT: &str = "generated/wire.rs";
/// Default schema location, relative to the manifest directory.
const DEFAULT_SCHEMA: &str = "../shared/schema/2026-07-28/schema.json";

/// Everything that stops the build, typed so each message names its cause.
#[derive(Debug)]
enum BuildError {
    Pin(pin::PinError),
    Io(PathBuf, std::io::Error),
    SchemaJson(serde_json::Error),
    Typify(String),
    Syn(syn::Error),
    MissingInCi(PathBuf),
    Stale { fresh: PathBuf },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Pin(e) => write!(f, "{e}"),
            Self::Io(p, e) => write!(f, "cannot access {}: {e}", p.display()),
            Self::SchemaJson(e) => write!(f, "schema is not valid JSON Schema input: {e}"),
            Self::Typify(e) => write!(f, "typify failed: {e}"),
            Self::Syn(e) => write!(f, "generated code does not parse: {e}"),
            Self::MissingInCi(p) => write!(
                f,
                "CI=true but the pinned schema is missing at {}; set MCP_SCHEMA_PATH \
                 (see schema/README.md)",
                p.display()
            ),
            Self::Stale { fresh } => write!(
                f,
                "{SNAPSHOT} differs from the code generated from the pinned schema \
                 (fresh output: {}). Refresh it with `MCP_REGENERATE=1 cargo build` and commit it.",
                fresh.display()
            ),
        }
    }
}

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), BuildError> {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/wire/pin.rs");
    println!("cargo:rerun-if-changed=schema/PIN.toml");
    println!("cargo:rerun-if-changed={SNAPSHOT}");
    println!("cargo:rerun-if-env-changed=MCP_SCHEMA_PATH");
    println!("cargo:rerun-if-env-changed=MCP_REGENERATE");
    println!("cargo:rerun-if-env-changed=CI");

    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let schema_path = match env::var_os("MCP_SCHEMA_PATH") {
        Some(p) => manifest.join(p),
        None => manifest.join(DEFAULT_SCHEMA),
    };
    let ci = env::var("CI").is_ok_and(|v| v == "true");

    if !schema_path.is_file() {
        // Watching a missing file would make cargo rerun this script on every build; watch
        // its directory instead when that exists, so dropping the schema in is noticed.
        if let Some(dir) = schema_path.parent().filter(|d| d.is_dir()) {
            println!("cargo:rerun-if-changed={}", dir.display());
        }
        if ci {
            return Err(BuildError::MissingInCi(schema_path));
        }
        println!(
            "cargo:warning=MCP schema not found at {}; building from the committed \
             {SNAPSHOT} without verifying it (set MCP_SCHEMA_PATH, see schema/README.md)",
            schema_path.display()
        );
        return Ok(());
    }
    println!("cargo:rerun-if-changed={}", schema_path.display());

    let pin_path = manifest.join("schema/PIN.toml");
    let pin_text = fs::read_to_string(&pin_path).map_err(|e| BuildError::Io(pin_path, e))?;
    let pin = pin::Pin::parse(&pin_text).map_err(BuildError::Pin)?;
    let bytes = fs::read(&schema_path).map_err(|e| BuildError::Io(schema_path.clone(), e))?;
    pin.verify(&bytes).map_err(BuildError::Pin)?;

    let schema: Value = serde_json::from_slice(&bytes).map_err(BuildError::SchemaJson)?;
    let code = generate(schema)?;

    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("set by cargo"));
    let fresh = out_dir.join("wire.rs");
    fs::write(&fresh, &code).map_err(|e| BuildError::Io(fresh.clone(), e))?;

    let snapshot = manifest.join(SNAPSHOT);
    // A checkout that converted line endings is still the same snapshot.
    let committed = fs::read_to_string(&snapshot)
        .unwrap_or_default()
        .replace("\r\n", "\n");
    if committed == code {
        return Ok(());
    }
    if env::var("MCP_REGENERATE").is_ok_and(|v| v == "1") {
        if let Some(dir) = snapshot.parent() {
            fs::create_dir_all(dir).map_err(|e| BuildError::Io(dir.to_path_buf(), e))?;
        }
        fs::write(&snapshot, &code).map_err(|e| BuildError::Io(snapshot.clone(), e))?;
        return Ok(());
    }
    Err(BuildError::Stale { fresh })
}

// ---------------------------------------------------------------------------------------
// Generation
// ---------------------------------------------------------------------------------------

/// Rewrites the schema, runs typify, post-processes and formats. Pure: same input, same
/// output (typify and every pass iterate in sorted order), which the snapshot check needs.
fn generate(mut schema: Value) -> Result<String, BuildError> {
    const_to_enum(&mut schema);
    let number_schemas = plain_numbers(&mut schema);
    pin_result_type(&mut schema);
    any_of_to_one_of_most_specific_first(&mut schema);
    base_result_last(&mut schema);
    hoist_optional_presence(&mut schema);
    retain_unknown_members(&mut schema);
    name_exact_members(&mut schema);

    let mut settings = typify::TypeSpaceSettings::default();
    settings.with_struct_builder(false);
    // Equality on every generated type, so descriptors built from them compare member for
    // member without a hand-written impl per type.
    settings.with_derive("PartialEq".to_owned());
    // Sorted maps: re-encoding is deterministic (HashMap order changes per process).
    settings.with_map_type("::std::collections::BTreeMap");
    for number in number_schemas {
        let object: schemars08::schema::SchemaObject =
            serde_json::from_value(number).map_err(BuildError::SchemaJson)?;
        settings.with_conversion(object, "::serde_json::Number", std::iter::empty());
    }
    json_types_to_serde_json(&mut settings);
    exact_text_types(&mut settings);

    let root: schemars08::schema::RootSchema =
        serde_json::from_value(schema).map_err(BuildError::SchemaJson)?;
    let mut space = typify::TypeSpace::new(&settings);
    space
        .add_root_schema(root)
        .map_err(|e| BuildError::Typify(e.to_string()))?;

    let mut file: syn::File = syn::parse2(space.to_stream()).map_err(BuildError::Syn)?;
    ExplicitNull.visit_file_mut(&mut file);
    let glue: syn::File = syn::parse2(quote::quote! {
        /// `JSONValue` of the schema: any JSON value.
        pub type JsonValue = ::serde_json::Value;
        /// `JSONObject` of the schema: a JSON object.
        pub type JsonObject = ::serde_json::Map<::std::string::String, ::serde_json::Value>;
        /// `JSONArray` of the schema: a JSON array.
        pub type JsonArray = ::std::vec::Vec<::serde_json::Value>;

        /// Reads a present value, `null` included, as `Some`: with `#[serde(default)]` an
        /// absent member stays `None`, so `"x": null` and a missing `x` stay distinct.
        fn deserialize_explicit_null<'de, D, T>(
            deserializer: D,
        ) -> ::std::result::Result<::std::option::Option<T>, D::Error>
        where
            D: ::serde::Deserializer<'de>,
            T: ::serde::Deserialize<'de>,
        {
            <T as ::serde::Deserialize>::deserialize(deserializer)
                .map(::std::option::Option::Some)
        }
    })
    .map_err(BuildError::Syn)?;
    file.items.extend(glue.items);

    Ok(format!(
        "// @generated by build.rs from the pinned MCP 2026-07-28 schema.json (schema/PIN.toml).\n\
         // Do not edit: refresh with `MCP_REGENERATE=1 cargo build`.\n\n{}",
        prettyplease::unparse(&file)
    ))
}

/// Calls `f` on every schema object reachable from `value` through schema keywords only,
/// so instance data (`enum`, `const`, `default`, `examples`) is never mistaken for a schema.
fn for_each_schema(value: &mut Value, f: &mut dyn FnMut(&mut Map<String, Value>)) {
    let Value::Object(object) = value else { return };
    f(object);
    for (key, child) in object.iter_mut() {
        match key.as_str() {
            "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" => {
                if let Value::Object(map) = child {
                    for sub in map.values_mut() {
                        for_each_schema(sub, f);
                    }
                }
            }
            "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                if let Value::Array(list) = child {
                    for sub in list {
                        for_each_schema(sub, f);
                    }
                }
            }
            "items"
            | "additionalProperties"
            | "not"
            | "if"
            | "then"
            | "else"
            | "contains"
            | "propertyNames"
            | "additionalItems"
            | "unevaluatedProperties"
            | "unevaluatedItems" => for_each_schema(child, f),
            _ => {}
        }
    }
}

/// Pass 1. typify 0.8 ignores `const`, so wrong tags (`"type": "imagee"`, `"jsonrpc": "1.0"`,
/// a wrong error `code`) would be accepted. A one-value `enum` is the same constraint and
/// typify enforces it.
fn const_to_enum(schema: &mut Value) {
    for_each_schema(schema, &mut |object| {
        if let Some(value) = object.remove("const") {
            object.insert("enum".into(), Value::Array(vec![value]));
        }
    });
}

/// Pass 2. `type: number` becomes `f64` in typify, so `50` re-serialises as `50.0`.
/// `serde_json::Number` keeps integers as integers; its range keywords (`minimum`/`maximum`
/// of `priority` etc.) are dropped because typify's conversion must match the whole schema
/// exactly (range checks belong to the validators, not the wire types). Returns the
/// distinct number schemas to register as conversions.
fn plain_numbers(schema: &mut Value) -> Vec<Value> {
    let mut seen = BTreeSet::new();
    for_each_schema(schema, &mut |object| {
        if object.get("type") == Some(&Value::from("number")) {
            object.remove("minimum");
            object.remove("maximum");
            object.remove("exclusiveMinimum");
            object.remove("exclusiveMaximum");
            seen.insert(Value::Object(object.clone()).to_string());
        }
    });
    seen.into_iter()
        .map(|text| serde_json::from_str(&text).expect("serialised above"))
        .collect()
}

/// Pass 3. Every result has a plain-string `resultType`, and `InputRequiredResult` has no
/// other required member, so an untagged union would read any result as input-required and
/// drop its fields (O124). Pinning the value per type makes the unions decide on it:
/// `input_required` for `InputRequiredResult`, `complete` for every other concrete result.
/// The open base `Result` keeps a free string (extensions may add values, A6).
fn pin_result_type(schema: &mut Value) {
    let Some(Value::Object(defs)) = schema.get_mut("$defs") else {
        return;
    };
    for (name, def) in defs.iter_mut() {
        if !name.ends_with("Result") || name == "Result" {
            continue;
        }
        let Some(Value::Object(rt)) = def.pointer_mut("/properties/resultType") else {
            continue;
        };
        let value = if name == "InputRequiredResult" {
            "input_required"
        } else {
            "complete"
        };
        rt.insert("enum".into(), Value::Array(vec![Value::from(value)]));
    }
}

/// Pass 4. typify turns `anyOf` into a struct of flattened options or an untagged enum in
/// schema order, which misreads variants (an `AudioContent` read as `ImageContent`).
/// `oneOf` gives an enum; ordering `$ref`-only unions by descending number of required
/// members tries the most specific variant first, so an untagged match does not stop at
/// a looser type. The sort is stable, so ties keep schema order.
fn any_of_to_one_of_most_specific_first(schema: &mut Value) {
    let required: BTreeMap<String, usize> = schema
        .get("$defs")
        .and_then(Value::as_object)
        .map(|defs| {
            defs.iter()
                .map(|(name, def)| {
                    let n = def
                        .get("required")
                        .and_then(Value::as_array)
                        .map_or(0, Vec::len);
                    (format!("#/$defs/{name}"), n)
                })
                .collect()
        })
        .unwrap_or_default();
    for_each_schema(schema, &mut |object| {
        let Some(Value::Array(mut variants)) = object.remove("anyOf") else {
            return;
        };
        let refs: Option<Vec<usize>> = variants
            .iter()
            .map(|v| {
                v.get("$ref")
                    .and_then(Value::as_str)
                    .and_then(|r| required.get(r))
                    .copied()
            })
            .collect();
        if let Some(counts) = refs {
            let mut order: Vec<(usize, Value)> = counts.into_iter().zip(variants).collect();
            order.sort_by_key(|entry| std::cmp::Reverse(entry.0));
            variants = order.into_iter().map(|(_, v)| v).collect();
        }
        object.insert("oneOf".into(), Value::Array(variants));
    });
}

/// Pass 5. The open base `Result` accepts every result, so in `ServerResult` it must be
/// the last alternative: it only catches results of advertised extensions.
fn base_result_last(schema: &mut Value) {
    let Some(Value::Array(variants)) = schema.pointer_mut("/$defs/ServerResult/oneOf") else {
        return;
    };
    let base = Value::from("#/$defs/Result");
    if let Some(i) = variants.iter().position(|v| v.get("$ref") == Some(&base)) {
        let result = variants.remove(i);
        variants.push(result);
    }
}

/// Pass 6. typify gives optional arrays and property-less objects `skip_serializing_if =
/// is_empty`, so `roots: {}` (a declared capability) or `"tools": []` vanish on re-encode.
/// Moving such a property into its own `$defs` entry makes it `Option<Newtype>`, which
/// keeps absent, empty and non-empty apart. Names are `<Parent><Property>`, with a numeric
/// suffix on clashes; definitions are visited in sorted order, so names are deterministic.
fn hoist_optional_presence(schema: &mut Value) {
    let Some(Value::Object(defs)) = schema.get_mut("$defs") else {
        return;
    };
    let mut taken: BTreeSet<String> = defs.keys().cloned().collect();
    let mut hoisted: Vec<(String, Value)> = Vec::new();
    let names: Vec<String> = defs.keys().cloned().collect();
    for name in names {
        let def = defs.get_mut(&name).expect("listed above");
        hoist_in(def, &name, &mut taken, &mut hoisted);
    }
    while let Some((name, mut def)) = hoisted.pop() {
        let mut nested = Vec::new();
        hoist_in(&mut def, &name, &mut taken, &mut nested);
        hoisted.extend(nested);
        defs.insert(name, def);
    }
}

fn hoist_in(
    schema: &mut Value,
    prefix: &str,
    taken: &mut BTreeSet<String>,
    out: &mut Vec<(String, Value)>,
) {
    let Value::Object(object) = schema else {
        return;
    };
    let required: BTreeSet<String> = object
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    if let Some(Value::Object(props)) = object.get_mut("properties") {
        for (prop, sub) in props.iter_mut() {
            let child = format!("{prefix}{}", pascal(prop));
            if !required.contains(prop) && needs_presence(sub) {
                let mut name = child.clone();
                let mut n = 2;
                while taken.contains(&name) {
                    name = format!("{child}{n}");
                    n += 1;
                }
                taken.insert(name.clone());
                let moved = std::mem::replace(
                    sub,
                    serde_json::json!({ "$ref": format!("#/$defs/{name}") }),
                );
                out.push((name, moved));
            } else {
                hoist_in(sub, &child, taken, out);
            }
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(sub) = object.get_mut(key) {
            hoist_in(sub, prefix, taken, out);
        }
    }
    for key in ["oneOf", "anyOf", "allOf"] {
        if let Some(Value::Array(list)) = object.get_mut(key) {
            for sub in list {
                hoist_in(sub, prefix, taken, out);
            }
        }
    }
}

/// An inline array, or an inline object without declared properties (a capability flag
/// such as `roots: {"properties": {}}` or a free map).
fn needs_presence(schema: &Value) -> bool {
    let ty = schema.get("type").and_then(Value::as_str);
    let no_properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty);
    ty == Some("array") || (ty == Some("object") && no_properties)
}

fn pascal(name: &str) -> String {
    name.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            let first = chars.next().map(|c| c.to_ascii_uppercase());
            first.into_iter().chain(chars).collect::<String>()
        })
        .collect()
}

/// Pass 7. Objects without `additionalProperties` drop unknown members in typify's structs,
/// so an unknown `_meta` key or a newer field would vanish on re-encode. The schema leaves
/// them open (JSON Schema's default), so say so explicitly: typify then adds a flattened
/// `extra` map.
fn retain_unknown_members(schema: &mut Value) {
    for_each_schema(schema, &mut |object| {
        if object.contains_key("properties") && !object.contains_key("additionalProperties") {
            object.insert("additionalProperties".into(), Value::Object(Map::new()));
        }
    });
}

/// Pass 8. The schema's recursive `JSONValue` union cannot represent floats or `null` and
/// typify renders it as a nest of enums; `serde_json` types are exact stand-ins. The keys
/// are typify's *sanitised* names (`JsonValue`, not `JSONValue`, which would silently
/// match nothing); replaced types are not emitted, so `generate` adds `pub type` aliases.
fn json_types_to_serde_json(settings: &mut typify::TypeSpaceSettings) {
    settings.with_replacement("JsonValue", "::serde_json::Value", std::iter::empty());
    settings.with_replacement(
        "JsonObject",
        "::serde_json::Map<::std::string::String, ::serde_json::Value>",
        std::iter::empty(),
    );
    settings.with_replacement(
        "JsonArray",
        "::std::vec::Vec<::serde_json::Value>",
        std::iter::empty(),
    );
}

/// Pass 9. typify replaces only named types (`$defs` entries), so the three member schemas
/// that must become exact-text types move into `$defs` under the names typify would give
/// them: a `Tool`'s `inputSchema` and `outputSchema` (`ToolInputSchema`,
/// `ToolOutputSchema`) and a `CallToolResult`'s `structuredContent`
/// (`CallToolResultStructuredContent`), replaced in [`exact_text_types`]. The sampling
/// `ToolResultContent` keeps its `serde_json::Value`.
fn name_exact_members(schema: &mut Value) {
    for (owner, member, name) in [
        ("Tool", "inputSchema", "ToolInputSchema"),
        ("Tool", "outputSchema", "ToolOutputSchema"),
        (
            "CallToolResult",
            "structuredContent",
            "CallToolResultStructuredContent",
        ),
    ] {
        let pointer = format!("/$defs/{owner}/properties/{member}");
        let reference = serde_json::json!({ "$ref": format!("#/$defs/{name}") });
        let Some(moved) = schema
            .pointer_mut(&pointer)
            .map(|p| std::mem::replace(p, reference))
        else {
            continue;
        };
        if let Some(Value::Object(defs)) = schema.get_mut("$defs") {
            defs.insert(name.into(), moved);
        }
    }
}

/// Pass 10. The server publishes registered tool schemas and tool results byte for byte,
/// which the generated maps cannot hold; these three are replaced by the hand-written
/// exact-text types of `src/generated/exact.rs` (which check what the generated structs
/// checked on decode). Keys are typify's sanitised names, as in [`json_types_to_serde_json`].
fn exact_text_types(settings: &mut typify::TypeSpaceSettings) {
    for (generated, exact) in [
        ("ToolInputSchema", "ToolInputSchema"),
        ("ToolOutputSchema", "ToolOutputSchema"),
        ("CallToolResultStructuredContent", "StructuredContent"),
    ] {
        settings.with_replacement(
            generated,
            format!("crate::generated::exact::{exact}"),
            std::iter::empty(),
        );
    }
}

/// Pass 11 (after typify). `Option<serde_json::Value>` reads `"x": null` as `None` and then
/// omits it, losing an explicit `null` (e.g. error `data: null`). Adding
/// `deserialize_with = "deserialize_explicit_null"` to such fields keeps it as
/// `Some(Value::Null)`; the same for a tool result's exact `structuredContent`
/// (`Some` of the text `null`).
struct ExplicitNull;

impl VisitMut for ExplicitNull {
    fn visit_field_mut(&mut self, field: &mut syn::Field) {
        let ty = &field.ty;
        let text = quote::quote!(#ty).to_string().replace(' ', "");
        let explicit = [
            "::serde_json::Value",
            "crate::generated::exact::StructuredContent",
        ];
        if explicit.iter().any(|inner| {
            text == format!("::std::option::Option<{inner}>") || text == format!("Option<{inner}>")
        }) {
            let has_default = field.attrs.iter().any(|a| {
                a.path().is_ident("serde") && quote::quote!(#a).to_string().contains("default")
            });
            let attr: syn::Attribute = if has_default {
                syn::parse_quote!(#[serde(deserialize_with = "deserialize_explicit_null")])
            } else {
                syn::parse_quote!(#[serde(default, deserialize_with = "deserialize_explicit_null")])
            };
            field.attrs.push(attr);
        }
        syn::visit_mut::visit_field_mut(self, field);
    }
}
