//! Snapshots of derived schemas in the portable profile (user need #1, O106, O110, E20).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strict_mcp::core::schema::{derive_schema, CompiledSchema, Side};

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Kind {
    /// A file.
    File,
    /// A directory.
    Dir,
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Owner {
    /// Login name.
    login: String,
}

/// A directory tree node (recursive).
#[derive(Deserialize, Serialize, JsonSchema)]
struct Node {
    name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    children: Vec<Node>,
}

/// Lists entries.
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct ListInput {
    /// Path to list.
    path: String,
    /// Entry kind filter.
    kind: Option<Kind>,
    /// Owner filter.
    owner: Option<Owner>,
    /// Page size.
    limit: Option<u32>,
}

#[derive(Serialize, JsonSchema)]
struct ListOutput {
    /// The tree below `path`.
    tree: Node,
    /// Whether the listing stopped at its limit.
    truncated: bool,
}

#[test]
fn input_schema_snapshot() {
    let schema = derive_schema::<ListInput>(Side::Input);
    assert_eq!(
        serde_json::to_string_pretty(&schema).unwrap(),
        r#"{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "additionalProperties": false,
  "description": "Lists entries.",
  "properties": {
    "kind": {
      "description": "Entry kind filter.",
      "oneOf": [
        {
          "description": "A file.",
          "enum": [
            "file"
          ],
          "type": "string"
        },
        {
          "description": "A directory.",
          "enum": [
            "dir"
          ],
          "type": "string"
        }
      ]
    },
    "limit": {
      "description": "Page size.",
      "format": "uint32",
      "maximum": 4294967295,
      "minimum": 0,
      "type": "integer"
    },
    "owner": {
      "additionalProperties": false,
      "description": "Owner filter.",
      "properties": {
        "login": {
          "description": "Login name.",
          "type": "string"
        }
      },
      "required": [
        "login"
      ],
      "type": "object"
    },
    "path": {
      "description": "Path to list.",
      "type": "string"
    }
  },
  "required": [
    "path"
  ],
  "title": "ListInput",
  "type": "object"
}"#
    );
    CompiledSchema::compile_value(&schema).expect("valid 2020-12 schema");
}

#[test]
fn output_schema_snapshot_keeps_recursive_defs_only() {
    let schema = derive_schema::<ListOutput>(Side::Output);
    assert_eq!(
        schema.to_string(),
        r##"{"$defs":{"Node":{"description":"A directory tree node (recursive).","properties":{"children":{"items":{"$ref":"#/$defs/Node"},"type":"array"},"name":{"type":"string"}},"required":["name"],"type":"object"}},"$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"tree":{"$ref":"#/$defs/Node","description":"The tree below `path`."},"truncated":{"description":"Whether the listing stopped at its limit.","type":"boolean"}},"required":["tree","truncated"],"title":"ListOutput","type":"object"}"##
    );
    let compiled = CompiledSchema::compile_value(&schema).expect("valid 2020-12 schema");
    assert!(compiled
        .validate_bytes(r#"{"tree":{"name":"a","children":[{"name":"b"}]},"truncated":false}"#)
        .is_ok());
    let diags = compiled
        .validate_bytes(r#"{"tree":{"name":"a","children":[{"name":1}]},"truncated":false}"#)
        .unwrap_err();
    assert_eq!(diags[0].pointer, "/tree/children/0/name");
}
