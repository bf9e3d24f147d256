//! The fixed schemas of publication: the three compact tools (interfaces.md, "Compact
//! publication wire format") and the failure envelope; plus the direct-mode output wrapper
//! that bundles an application schema once under a `{value}` / `{failure}` union (O25, O26).
//!
//! These are publication's own wire contracts, not application tools, so they are written
//! out here; application schemas always come from the registry (O106).

use serde_json::value::RawValue;

use crate::core::schema::DRAFT_2020_12;
use crate::core::CoreError;

use super::envelope::{invalid, Members};

/// `failure` object: stable code, message, retryable flag and optional diagnostics.
pub const FAILURE_ENVELOPE_SCHEMA: &str = concat!(
    r#"{"type":"object","properties":{"failure":{"type":"object","properties":{"#,
    r#""code":{"type":"string","enum":["unavailable_tool","invalid_arguments","result_too_large","#,
    r#""interaction_limit","state_rejected","already_completed","invalid_result","cancelled","internal"]},"#,
    r#""message":{"type":"string"},"retryable":{"type":"boolean"},"#,
    r#""diagnostics":{"type":"array","items":{"type":"object","properties":{"#,
    r#""pointer":{"type":"string"},"keyword":{"type":"string"},"message":{"type":"string"},"#,
    r#""expected":{"type":"string"},"allowedKeys":{"type":"array","items":{"type":"string"}}},"#,
    r#""required":["pointer","keyword","message"],"additionalProperties":false}}},"#,
    r#""required":["code","message","retryable"],"additionalProperties":false}},"#,
    r#""required":["failure"],"additionalProperties":false}"#
);

/// The compact `tools/list` body (O11, O16): exactly three tools, strict input schemas,
/// output schemas for the two discovery tools and none for `call_tool`.
pub const COMPACT_TOOLS: &str = concat!(
    r#"{"tools":["#,
    // search_tools
    r#"{"name":"search_tools","title":"Search tools","#,
    r#""description":"Finds tools by words from their name, title, description and keywords. Returns names to pass to get_tool_details and call_tool. Never runs a tool.","#,
    r#""inputSchema":{"type":"object","properties":{"#,
    r#""query":{"type":"string","description":"Words describing the task."},"#,
    r#""limit":{"type":"integer","minimum":1,"maximum":20,"default":5,"description":"Most results to return (1 to 20, default 5)."}},"#,
    r#""required":["query"],"additionalProperties":false},"#,
    r#""outputSchema":{"type":"object","properties":{"#,
    r#""tools":{"type":"array","items":{"type":"object","properties":{"#,
    r#""name":{"type":"string"},"title":{"type":"string"},"description":{"type":"string"}},"#,
    r#""required":["name"],"additionalProperties":false}},"#,
    r#""truncated":{"type":"boolean","description":"Whether more tools matched than the limit allowed."}},"#,
    r#""required":["tools","truncated"],"additionalProperties":false},"#,
    r#""annotations":{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false}},"#,
    // get_tool_details
    r#"{"name":"get_tool_details","title":"Get tool details","#,
    r#""description":"Returns one tool's full definition: input schema, output schema and hints. Call it before call_tool.","#,
    r#""inputSchema":{"type":"object","properties":{"#,
    r#""name":{"type":"string","description":"The tool name from search_tools."}},"#,
    r#""required":["name"],"additionalProperties":false},"#,
    r#""outputSchema":{"type":"object","oneOf":[{"type":"object","properties":{"#,
    r#""tool":{"type":"object","properties":{"#,
    r#""name":{"type":"string"},"title":{"type":"string"},"description":{"type":"string"},"#,
    r#""inputSchema":{"type":"object"},"outputSchema":{"type":"object"},"#,
    r#""annotations":{"type":"object"},"examples":{"type":"array"}},"#,
    r#""required":["name","inputSchema"],"additionalProperties":false}},"#,
    r#""required":["tool"],"additionalProperties":false},"#,
    r##"{"$ref":"#/$defs/failure"}],"$defs":{"failure":"##,
    // FAILURE_ENVELOPE_SCHEMA, repeated literally because concat! takes literals only.
    r#"{"type":"object","properties":{"failure":{"type":"object","properties":{"#,
    r#""code":{"type":"string","enum":["unavailable_tool","invalid_arguments","result_too_large","#,
    r#""interaction_limit","state_rejected","already_completed","invalid_result","cancelled","internal"]},"#,
    r#""message":{"type":"string"},"retryable":{"type":"boolean"},"#,
    r#""diagnostics":{"type":"array","items":{"type":"object","properties":{"#,
    r#""pointer":{"type":"string"},"keyword":{"type":"string"},"message":{"type":"string"},"#,
    r#""expected":{"type":"string"},"allowedKeys":{"type":"array","items":{"type":"string"}}},"#,
    r#""required":["pointer","keyword","message"],"additionalProperties":false}}},"#,
    r#""required":["code","message","retryable"],"additionalProperties":false}},"#,
    r#""required":["failure"],"additionalProperties":false}"#,
    r#"}},"#,
    r#""annotations":{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false}},"#,
    // call_tool
    r#"{"name":"call_tool","title":"Call a tool","#,
    r#""description":"Runs one tool by name with its arguments. On success structuredContent is {\"value\": result}; on failure isError is true and structuredContent is {\"failure\": {code, message, retryable, diagnostics?}}.","#,
    r#""inputSchema":{"type":"object","properties":{"#,
    r#""name":{"type":"string","description":"The tool to run."},"#,
    r#""arguments":{"type":"object","description":"Arguments matching the tool's input schema."}},"#,
    r#""required":["name"],"additionalProperties":false}}"#,
    r#"]}"#
);

/// Draft-specific words for the wrapper: the container of bundled schemas and the id key.
struct Dialect {
    uri: String,
    defs: &'static str,
    id: &'static str,
}

fn dialect_of(app: &Members<'_>) -> Result<Dialect, CoreError> {
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
/// under the wrapper's definitions and referenced from the `value` branch (O25).
///
/// The application schema keeps its own dialect (the wrapper is written in it), its bytes
/// (numbers and constants exact, O29) and its meaning (O26): an application schema without
/// an identifier gets one (`urn:strict-mcp:output:<tool>`) so that its internal
/// references (`#/$defs/…`, anchors, dynamic anchors) still resolve inside it and not
/// against the wrapper; one with an identifier stays a separate resource as before, so
/// relative references and nested `$id`s resolve as they did. Boolean schemas are bundled
/// as they are.
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
        let members = Members::parse(app, "output schema")?;
        let dialect = dialect_of(&members)?;
        let bundled = if members.get(dialect.id).is_some() {
            text.to_owned()
        } else {
            let id = serde_json::to_string(&format!("urn:strict-mcp:output:{tool}"))
                .map_err(|_| CoreError::Internal { retryable: false })?;
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
        failure = FAILURE_ENVELOPE_SCHEMA,
    ))
}
