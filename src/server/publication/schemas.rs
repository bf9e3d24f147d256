//! The fixed schemas of publication: the three compact tools (interfaces.md, "Compact
//! publication wire format") and the failure envelope; plus the direct-mode output wrapper
//! that bundles an application schema once under a `{value}` / `{failure}` union.
//!
//! The compact tool schemas are publication's own wire contracts, not application tools, so
//! they are written out here (the tools around them are [`Tool`]s written by serde); the failure envelope schema is the core's, derived from
//! `ToolFailure`; application schemas always come from the registry.

use std::sync::OnceLock;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::core::descriptor::{Tool, ToolAnnotations, ToolInputSchema, ToolOutputSchema};
use crate::core::schema::DRAFT_2020_12;
use crate::core::CoreError;

use super::envelope::{invalid, OrderedMembers};

/// The failure envelope schema as JSON text: the core's schema derived from `ToolFailure`
/// (one source of truth for codes and diagnostics), without `$schema` so that it can be
/// bundled into wrappers of any dialect.
///
/// The text is written out here rather than derived at run time: the derivation (schemars
/// walking `ToolFailure` and `Diagnostic`, then writing the value) cost every process about
/// 0.25 M instructions on its first `tools/call`, 4 % of its time to the first stdio reply
/// (issue #23). `the_written_failure_envelope_is_the_derived_one` keeps the two equal byte for
/// byte, so the derivation stays the source of truth: a change to `ToolFailure` fails that
/// test until this text is updated from the derivation.
pub fn failure_envelope_schema_text() -> &'static str {
    FAILURE_ENVELOPE_SCHEMA_TEXT
}

/// [`crate::core::failure_envelope_schema`] without `$schema`, as `serde_json` writes it.
const FAILURE_ENVELOPE_SCHEMA_TEXT: &str = r#"{"additionalProperties":false,"properties":{"failure":{"additionalProperties":false,"description":"A typed tool failure: reported as a result with `isError: true`, never as a panic.","properties":{"code":{"description":"Stable failure code.","maxLength":64,"pattern":"^[a-z][a-z0-9_]*$","type":"string"},"diagnostics":{"description":"Optional structured findings.","items":{"additionalProperties":false,"description":"One machine-readable finding attached to a failure, e.g. a schema violation.","properties":{"allowedKeys":{"description":"The keys allowed at `pointer`, when the failure concerns object members.","items":{"type":"string"},"type":"array"},"expected":{"description":"The expected type(s) when `keyword` is `type`.","type":"string"},"keyword":{"description":"The JSON Schema keyword that failed (`type`, `required`, `additionalProperties`, ...).","type":"string"},"message":{"description":"A human-readable explanation without parser line/column noise.","type":"string"},"pointer":{"description":"JSON Pointer into the arguments (`\"\"` is the whole object).","type":"string"}},"required":["pointer","keyword","message"],"type":"object"},"type":"array"},"message":{"description":"A safe message for the model.","type":"string"},"retryable":{"description":"Whether retrying the same call could succeed.","type":"boolean"}},"required":["code","message","retryable"],"type":"object"}},"required":["failure"],"type":"object"}"#;

/// The compact `tools/list` body as JSON text: exactly three tools, strict input schemas,
/// output schemas for the two discovery tools and none for `call_tool`.
///
/// Each tool is a [`Tool`] written by serde, so its members (and its annotations' members)
/// come in the generated type's order, as every other listed tool; only the schemas, this
/// module's own wire contracts, are literal text.
pub fn compact_tools_text() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| list_text(&compact_tools()))
}

/// [`compact_tools_text`] with `meta` as `call_tool`'s `_meta` (where the Apps shell links
/// its view), written by serde like the rest: `_meta` lands where the generated `Tool` puts
/// it, every other byte is the plain body's.
pub(crate) fn compact_tools_text_with_call_meta(meta: Map<String, Value>) -> String {
    let mut tools = compact_tools();
    for tool in tools.iter_mut().filter(|t| t.name == "call_tool") {
        tool.meta = Some(meta.clone().into());
    }
    list_text(&tools)
}

/// `{"tools":[…]}`.
fn list_text(tools: &[Tool]) -> String {
    // Strings, booleans and exact-text schemas: serialising cannot fail.
    let list = serde_json::to_string(tools).expect("the compact tools serialise");
    format!("{{\"tools\":{list}}}")
}

/// The hints of the two discovery tools: they only read the registry.
fn discovery_hints() -> ToolAnnotations {
    ToolAnnotations {
        read_only_hint: Some(true),
        destructive_hint: Some(false),
        idempotent_hint: Some(true),
        open_world_hint: Some(false),
        ..ToolAnnotations::default()
    }
}

/// One compact tool from its literal texts (valid JSON and object schemas by construction,
/// which `compact_tools_are_the_generated_tool_written_by_serde` checks).
fn compact_tool(
    name: &str,
    title: &str,
    description: &str,
    input: &str,
    output: Option<String>,
    annotations: Option<ToolAnnotations>,
) -> Tool {
    let raw = |text: String| RawValue::from_string(text).expect("a literal JSON schema");
    let input = ToolInputSchema::new(raw(input.to_owned())).expect("an object input schema");
    let mut tool = Tool::new(name, input);
    tool.title = Some(title.to_owned());
    tool.description = Some(description.to_owned());
    tool.output_schema =
        output.map(|o| ToolOutputSchema::new(raw(o)).expect("an object output schema"));
    tool.annotations = annotations;
    tool
}

fn compact_tools() -> [Tool; 3] {
    [
        compact_tool(
            "search_tools",
            "Search tools",
            "Finds tools by words from their name, title, description and keywords. Returns names to pass to get_tool_details and call_tool. Never runs a tool.",
            SEARCH_INPUT,
            Some(SEARCH_OUTPUT.to_owned()),
            Some(discovery_hints()),
        ),
        compact_tool(
            "get_tool_details",
            "Get tool details",
            "Returns one tool's full definition: input schema, output schema and hints. Call it before call_tool.",
            DETAILS_INPUT,
            Some(DETAILS_OUTPUT.replace(FAILURE_SLOT, failure_envelope_schema_text())),
            Some(discovery_hints()),
        ),
        compact_tool(
            "call_tool",
            "Call a tool",
            "Runs one tool by name with its arguments. On success structuredContent is {\"value\": result}; on failure isError is true and structuredContent is {\"failure\": {code, message, retryable, diagnostics?}}.",
            CALL_INPUT,
            None,
            None,
        ),
    ]
}

const FAILURE_SLOT: &str = r#"{"$failure":"slot"}"#;

const SEARCH_INPUT: &str = concat!(
    r#"{"type":"object","properties":{"#,
    r#""query":{"type":"string","description":"Words describing the task."},"#,
    r#""limit":{"type":"integer","minimum":1,"maximum":20,"default":5,"description":"Most results to return (1 to 20, default 5)."}},"#,
    r#""required":["query"],"additionalProperties":false}"#,
);

const SEARCH_OUTPUT: &str = concat!(
    r#"{"type":"object","properties":{"#,
    r#""tools":{"type":"array","items":{"type":"object","properties":{"#,
    r#""name":{"type":"string"},"title":{"type":"string"},"description":{"type":"string"}},"#,
    r#""required":["name"],"additionalProperties":false}},"#,
    r#""truncated":{"type":"boolean","description":"Whether more tools matched than the limit allowed."}},"#,
    r#""required":["tools","truncated"],"additionalProperties":false}"#,
);

const DETAILS_INPUT: &str = concat!(
    r#"{"type":"object","properties":{"#,
    r#""name":{"type":"string","description":"The tool name from search_tools."}},"#,
    r#""required":["name"],"additionalProperties":false}"#,
);

/// The `{tool}` branch or the failure envelope (bundled in place of [`FAILURE_SLOT`]).
const DETAILS_OUTPUT: &str = concat!(
    r#"{"type":"object","oneOf":[{"type":"object","properties":{"#,
    r#""tool":{"type":"object","properties":{"#,
    r#""name":{"type":"string"},"title":{"type":"string"},"description":{"type":"string"},"#,
    r#""inputSchema":{"type":"object"},"outputSchema":{"type":"object"},"#,
    r#""annotations":{"type":"object"},"examples":{"type":"array"}},"#,
    r#""required":["name","inputSchema"],"additionalProperties":false}},"#,
    r#""required":["tool"],"additionalProperties":false},"#,
    r##"{"$ref":"#/$defs/failure"}],"$defs":{"failure":"##,
    r#"{"$failure":"slot"}"#,
    r#"}}"#,
);

const CALL_INPUT: &str = concat!(
    r#"{"type":"object","properties":{"#,
    r#""name":{"type":"string","description":"The tool to run."},"#,
    r#""arguments":{"type":"object","description":"Arguments matching the tool's input schema."}},"#,
    r#""required":["name"],"additionalProperties":false}"#,
);

/// Draft-specific words for the wrapper: the container of bundled schemas and the id key.
struct Dialect {
    uri: String,
    defs: &'static str,
    id: &'static str,
}

fn dialect_of(app: &OrderedMembers<'_>) -> Result<Dialect, CoreError> {
    let uri = match app.get("$schema") {
        None => DRAFT_2020_12.to_owned(),
        Some(raw) => serde_json::from_str::<String>(raw.get())
            .map_err(|_| invalid("output schema `$schema` is not a string"))?,
    };
    let (defs, id) = if uri.contains("draft-04") {
        ("definitions", "id")
    } else if uri.contains("draft-06") || uri.contains("draft-07") {
        ("definitions", "$id")
    } else {
        ("$defs", "$id")
    };
    Ok(Dialect { uri, defs, id })
}

/// The published output schema of a direct tool: an object that is either
/// `{"value": <app>}` or the failure envelope, with the application schema bundled once
/// under the wrapper's definitions and referenced from the `value` branch.
///
/// The application schema keeps its own dialect (the wrapper is written in it), its bytes
/// (numbers and constants exact) and its meaning: an application schema without
/// an identifier gets one (`urn:strict-mcp:output:<tool>`) so that its internal
/// references (`#/$defs/…`, anchors, dynamic anchors) still resolve inside it and not
/// against the wrapper; one with an identifier stays a separate resource as before, so
/// relative references and nested `$id`s resolve as they did. Boolean schemas are bundled
/// as they are. A draft-04/06/07 schema whose root is a `$ref` (its siblings are inert in
/// those drafts) is bundled as `{"$id", "allOf": [{"$ref"}], "definitions"}`, which has
/// the same meaning and keeps the definitions' bytes.
///
/// # Errors
/// -32602 when the application schema is not an object or boolean (the registry already
/// compiled it, so this signals an inconsistent registry).
pub(crate) fn wrap_output_schema(tool: &str, app: &RawValue) -> Result<String, CoreError> {
    let text = app.get().trim();
    let (dialect, bundled) = if text == "true" || text == "false" {
        (
            Dialect {
                uri: DRAFT_2020_12.to_owned(),
                defs: "$defs",
                id: "$id",
            },
            text.to_owned(),
        )
    } else {
        let members = OrderedMembers::parse(app, "output schema")?;
        let dialect = dialect_of(&members)?;
        let id = serde_json::to_string(&format!("urn:strict-mcp:output:{tool}"))
            .map_err(|_| CoreError::Internal { retryable: false })?;
        let bundled = if let (Some(target), "definitions") = (members.get("$ref"), dialect.defs) {
            // Before 2019-09 a `$ref` makes every sibling inert, an identifier included, so
            // an added `$id` would be ignored and `#/definitions/…` would resolve against the
            // wrapper. The equivalent resource keeps the reference and the definitions
            // (exact bytes) under an identifier that counts.
            let mut out = format!(
                "{{\"{}\":{id},\"allOf\":[{{\"$ref\":{}}}]",
                dialect.id,
                target.get()
            );
            if let Some(definitions) = members.get("definitions") {
                out.push_str(",\"definitions\":");
                out.push_str(definitions.get());
            }
            out.push('}');
            out
        } else if members.get(dialect.id).is_some() {
            text.to_owned()
        } else {
            let rest = text[1..].trim_start();
            if members.0.is_empty() {
                format!("{{\"{}\":{id}}}", dialect.id)
            } else {
                format!("{{\"{}\":{id},{rest}", dialect.id)
            }
        };
        (dialect, bundled)
    };
    let schema_uri = serde_json::to_string(&dialect.uri)
        .map_err(|_| CoreError::Internal { retryable: false })?;
    let defs = dialect.defs;
    Ok(format!(
        concat!(
            r#"{{"$schema":{schema},"type":"object","oneOf":["#,
            r##"{{"type":"object","properties":{{"value":{{"$ref":"#/{defs}/value"}}}},"##,
            r#""required":["value"],"additionalProperties":false}},"#,
            r##"{{"$ref":"#/{defs}/failure"}}],"##,
            r#""{defs}":{{"value":{app},"failure":{failure}}}}}"#
        ),
        schema = schema_uri,
        defs = defs,
        app = bundled,
        failure = failure_envelope_schema_text(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::failure_envelope_schema;

    /// The members of the object `text`, in order.
    fn keys(text: &str) -> Vec<String> {
        let raw: &RawValue = serde_json::from_str(text).expect("JSON");
        OrderedMembers::parse(raw, "test")
            .expect("an object")
            .0
            .into_iter()
            .map(|(k, _)| k)
            .collect()
    }

    /// The written-out envelope (issue #23: no derivation before the first reply) is the
    /// derived schema without `$schema`, byte for byte (E15: the published union admits
    /// exactly the envelopes the core produces).
    #[test]
    fn the_written_failure_envelope_is_the_derived_one() {
        let mut derived = failure_envelope_schema();
        let Value::Object(map) = &mut derived else {
            panic!("the derived envelope schema is an object");
        };
        assert_eq!(
            map.remove("$schema"),
            Some(Value::String(DRAFT_2020_12.to_owned()))
        );
        assert_eq!(failure_envelope_schema_text(), derived.to_string());
    }

    #[test]
    fn compact_tools_are_the_generated_tool_written_by_serde() {
        let text = compact_tools_text();
        let list: &RawValue = serde_json::from_str(text).expect("JSON");
        let members = OrderedMembers::parse(list, "list").expect("an object");
        assert_eq!(keys(text), ["tools"]);
        let tools: Vec<&RawValue> =
            serde_json::from_str(members.get("tools").expect("tools").get()).expect("an array");
        let order: Vec<Vec<String>> = tools.iter().map(|t| keys(t.get())).collect();
        // The generated `Tool`'s (alphabetical) member order, absent members omitted.
        let discovery = [
            "annotations",
            "description",
            "inputSchema",
            "name",
            "outputSchema",
            "title",
        ];
        assert_eq!(order[0], discovery);
        assert_eq!(order[1], discovery);
        assert_eq!(order[2], ["description", "inputSchema", "name", "title"]);
        // Every schema is the literal text (the failure envelope bundled in its slot).
        assert!(text.contains(&format!("\"inputSchema\":{SEARCH_INPUT}")));
        assert!(text.contains(&format!("\"outputSchema\":{SEARCH_OUTPUT}")));
        assert!(text.contains(&format!("\"inputSchema\":{DETAILS_INPUT}")));
        assert!(text.contains(&format!("\"inputSchema\":{CALL_INPUT}")));
        assert!(!text.contains(FAILURE_SLOT));
        assert!(text.contains(failure_envelope_schema_text()));
    }

    #[test]
    fn compact_annotations_are_the_generated_tool_annotations_bytes() {
        let generated = serde_json::to_string(&crate::wire::ToolAnnotations {
            read_only_hint: Some(true),
            destructive_hint: Some(false),
            idempotent_hint: Some(true),
            open_world_hint: Some(false),
            ..ToolAnnotations::default()
        })
        .expect("serialises");
        assert_eq!(
            generated,
            r#"{"destructiveHint":false,"idempotentHint":true,"openWorldHint":false,"readOnlyHint":true}"#
        );
        let member = format!("\"annotations\":{generated}");
        assert_eq!(compact_tools_text().matches(&member).count(), 2);
        // No other hint anywhere (the third `"annotations"` is a property of an output schema).
        assert_eq!(compact_tools_text().matches("Hint\"").count(), 8);
    }
}
