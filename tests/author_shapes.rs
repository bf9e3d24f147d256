//! The smaller shapes of a server author's first hour (#22 item 9): prompt handlers of both
//! constructors return the same `PromptReply` (or an `Outcome` to ask for input), messages
//! and arguments are one line each, a resource's declared `mimeType` is echoed in the
//! contents read from it (F-section), and handlers share state through `typed_with` /
//! `new_with` without clones.
#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use strict_mcp::core::descriptor::ResourceContents;
use strict_mcp::core::schema::SchemaProfile;
use strict_mcp::core::{
    Caller, CancelToken, Invocation, Outcome, PromptDef, PromptReply, ReadReply, Registry,
    RegistryBuilder, ResourceDef, TemplateDef, ToolDef,
};
use strict_mcp::server::{Outbox, PublishMode, Reply, Server, ServerOptions};

#[derive(Default)]
struct Collect {
    replies: Mutex<Vec<Reply>>,
}

impl Outbox for Collect {
    fn notify(&self, _line: String) -> bool {
        true
    }
    fn finish(&self, reply: Reply) {
        self.replies.lock().unwrap().push(reply);
    }
}

fn request(method: &str, params: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{{{params},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{"elicitation":{{"form":{{}}}}}}}}}}}}"#
    )
}

async fn serve(server: &Server, line: &str) -> Value {
    let outbox = Arc::new(Collect::default());
    let message = strict_mcp::codec::decode(line.as_bytes(), &server.ingress_limits()).unwrap();
    server
        .serve(
            Caller::anonymous(),
            message,
            outbox.clone(),
            CancelToken::new(),
        )
        .await;
    let replies = outbox.replies.lock().unwrap();
    assert_eq!(replies.len(), 1, "{:?}", *replies);
    serde_json::from_str(&replies[0].line).unwrap()
}

fn server(registry: Registry) -> Server {
    Server::new(registry, ServerOptions::new().mode(PublishMode::Direct)).unwrap()
}

#[derive(Deserialize, JsonSchema)]
struct Review {
    /// The language of the code.
    language: String,
}

#[tokio::test]
async fn g_prompt_constructors_share_one_reply_shape_and_one_line_arguments() {
    let registry = RegistryBuilder::new()
        .prompt(PromptDef::typed(
            "review",
            |_: Invocation, a: Review| async move {
                Ok(PromptReply::user(format!(
                    "Review this {} code.",
                    a.language
                )))
            },
        ))
        .prompt(
            PromptDef::new(
                "greet",
                |_: Invocation, args: BTreeMap<String, String>| async move {
                    Ok(PromptReply::user(format!("Say hello to {}.", args["name"]))
                        .description("A greeting"))
                },
            )
            .required("name", "Who to greet.")
            .optional("tone", "How to greet."),
        )
        // An Outcome still works where input is needed first.
        .prompt(PromptDef::new(
            "ask",
            |inv: Invocation, _args: BTreeMap<String, String>| async move {
                let form = inv.elicit_form("Who?", json!({"type":"object","properties":{}}))?;
                Ok(Outcome::input("who", form))
            },
        ))
        .build()
        .unwrap();
    let server = server(registry);
    let got = serve(
        &server,
        &request(
            "prompts/get",
            r#""name":"review","arguments":{"language":"Rust"}"#,
        ),
    )
    .await;
    assert_eq!(
        got["result"]["messages"],
        json!([{"role":"user","content":{"text":"Review this Rust code.","type":"text"}}])
    );
    assert!(got["result"].get("description").is_none(), "{got}");
    let got = serve(
        &server,
        &request(
            "prompts/get",
            r#""name":"greet","arguments":{"name":"Ada"}"#,
        ),
    )
    .await;
    assert_eq!(got["result"]["description"], json!("A greeting"));
    assert_eq!(
        got["result"]["messages"],
        json!([{"role":"user","content":{"text":"Say hello to Ada.","type":"text"}}])
    );
    let got = serve(&server, &request("prompts/get", r#""name":"ask""#)).await;
    assert_eq!(
        got["result"]["resultType"],
        json!("input_required"),
        "{got}"
    );
    let listed = serve(&server, &request("prompts/list", "").replace("{,", "{")).await;
    let greet = listed["result"]["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "greet")
        .unwrap()
        .clone();
    assert_eq!(
        greet["arguments"],
        json!([
            {"name":"name","description":"Who to greet.","required":true},
            {"name":"tone","description":"How to greet.","required":false}
        ])
    );
}

#[tokio::test]
async fn f_the_declared_mime_type_is_echoed_in_contents_that_name_none() {
    let registry = RegistryBuilder::new()
        .resource(
            ResourceDef::new(
                "mem://plain",
                "plain",
                |_: Invocation, uri: String| async move {
                    Ok(ReadReply::new(vec![ResourceContents::text(uri, "hi")]))
                },
            )
            .mime_type("text/markdown"),
        )
        .resource(
            ResourceDef::new(
                "mem://own",
                "own",
                |_: Invocation, uri: String| async move {
                    Ok(ReadReply::new(vec![
                        ResourceContents::text(uri, "{}").with_mime_type("application/json"),
                        ResourceContents::text("mem://own/part", "p"),
                    ]))
                },
            )
            .mime_type("text/plain"),
        )
        .resource(ResourceDef::new(
            "mem://untyped",
            "untyped",
            |_: Invocation, uri: String| async move {
                Ok(ReadReply::new(vec![ResourceContents::blob(uri, b"\x00")]))
            },
        ))
        .template(
            TemplateDef::new(
                "mem://notes/{id}",
                "note",
                |_: Invocation, uri: String, _vars| async move {
                    Ok(ReadReply::new(vec![ResourceContents::blob(uri, b"ab")]))
                },
            )
            .mime_type("application/octet-stream"),
        )
        .build()
        .unwrap();
    let server = server(registry);
    let read = |uri: &str| request("resources/read", &format!(r#""uri":"{uri}""#));
    let got = serve(&server, &read("mem://plain")).await;
    assert_eq!(
        got["result"]["contents"],
        json!([{"uri":"mem://plain","mimeType":"text/markdown","text":"hi"}])
    );
    // The handler's own type wins; contents of another URI are left as written.
    let got = serve(&server, &read("mem://own")).await;
    assert_eq!(
        got["result"]["contents"],
        json!([{"uri":"mem://own","mimeType":"application/json","text":"{}"},
               {"uri":"mem://own/part","text":"p"}])
    );
    // Nothing declared, nothing added.
    let got = serve(&server, &read("mem://untyped")).await;
    assert_eq!(
        got["result"]["contents"],
        json!([{"uri":"mem://untyped","blob":"AA=="}])
    );
    let got = serve(&server, &read("mem://notes/7")).await;
    assert_eq!(
        got["result"]["contents"],
        json!([{"uri":"mem://notes/7","mimeType":"application/octet-stream","blob":"YWI="}])
    );
}

#[derive(Default)]
struct Notes {
    items: Mutex<Vec<String>>,
}

#[derive(Deserialize, JsonSchema)]
struct AddNote {
    /// The note.
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct Nothing {}

#[derive(Serialize, JsonSchema)]
struct Count {
    /// Notes stored.
    count: usize,
}

#[tokio::test]
async fn handlers_share_state_through_typed_with_and_new_with() {
    let notes = Arc::new(Notes::default());
    let registry = RegistryBuilder::new()
        .tool(ToolDef::typed_with(
            "add_note",
            &notes,
            |notes, _: Invocation, a: AddNote| async move {
                let mut items = notes.items.lock().unwrap();
                items.push(a.text);
                Ok(Count { count: items.len() })
            },
        ))
        .tool(ToolDef::typed_with(
            "count_notes",
            &notes,
            |notes, _: Invocation, _: Nothing| async move {
                Ok(Count {
                    count: notes.items.lock().unwrap().len(),
                })
            },
        ))
        .resource(ResourceDef::new_with(
            "mem://notes",
            "notes",
            &notes,
            |notes, _: Invocation, uri| async move {
                Ok(ReadReply::new(vec![ResourceContents::text(
                    uri,
                    notes.items.lock().unwrap().join("\n"),
                )]))
            },
        ))
        .build()
        .unwrap();
    let server = server(registry);
    let call = |name: &str, args: &str| {
        request(
            "tools/call",
            &format!(r#""name":"{name}","arguments":{args}"#),
        )
    };
    for (i, text) in ["one", "two"].into_iter().enumerate() {
        let got = serve(
            &server,
            &call("add_note", &format!(r#"{{"text":"{text}"}}"#)),
        )
        .await;
        assert_eq!(
            got["result"]["structuredContent"],
            json!({"value":{"count": i + 1}}),
            "{got}"
        );
    }
    let got = serve(&server, &call("count_notes", "{}")).await;
    assert_eq!(
        got["result"]["structuredContent"],
        json!({"value":{"count":2}})
    );
    let got = serve(
        &server,
        &request("resources/read", r#""uri":"mem://notes""#),
    )
    .await;
    assert_eq!(got["result"]["contents"][0]["text"], json!("one\ntwo"));
    // The test's handle, the two tools' and the resource's: no hidden copies per call.
    assert_eq!(Arc::strong_count(&notes), 4);
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Point {
    /// Metres east of the origin.
    x: i32,
    /// Metres north of the origin.
    y: i32,
    /// What is there.
    label: String,
}

#[derive(Deserialize, JsonSchema)]
struct Route {
    /// Where the route starts.
    from: Point,
    /// Where it ends.
    to: Point,
}

#[derive(Serialize, JsonSchema)]
struct Leg {
    /// The start, as given.
    start: Point,
    /// The end, as given.
    end: Point,
    /// Manhattan distance in metres.
    metres: u32,
}

fn leg_tool(profile: SchemaProfile) -> ToolDef {
    ToolDef::typed("leg", |_: Invocation, r: Route| async move {
        let metres = (r.to.x - r.from.x).unsigned_abs() + (r.to.y - r.from.y).unsigned_abs();
        Ok(Leg {
            start: r.from,
            end: r.to,
            metres,
        })
    })
    .schema_profile(profile)
}

/// The published `tools/list` entry of `leg` in `profile`.
async fn published_leg(profile: SchemaProfile) -> (Server, Value) {
    let server = server(
        RegistryBuilder::new()
            .tool(leg_tool(profile))
            .build()
            .unwrap(),
    );
    let listed = serve(&server, &request("tools/list", "").replace("{,", "{")).await;
    let tool = listed["result"]["tools"][0].clone();
    (server, tool)
}

const SHARED_INPUT: &str = r##"{"$defs":{"Point":{"additionalProperties":false,"properties":{"label":{"description":"What is there.","type":"string"},"x":{"description":"Metres east of the origin.","format":"int32","maximum":2147483647,"minimum":-2147483648,"type":"integer"},"y":{"description":"Metres north of the origin.","format":"int32","maximum":2147483647,"minimum":-2147483648,"type":"integer"}},"required":["x","y","label"],"type":"object"}},"$schema":"https://json-schema.org/draft/2020-12/schema","additionalProperties":false,"properties":{"from":{"$ref":"#/$defs/Point","description":"Where the route starts."},"to":{"$ref":"#/$defs/Point","description":"Where it ends."}},"required":["from","to"],"title":"Route","type":"object"}"##;
const SHARED_OUTPUT: &str = r##"{"$defs":{"failure":{"additionalProperties":false,"properties":{"failure":{"additionalProperties":false,"description":"A typed tool failure: reported as a result with `isError: true`, never as a panic.","properties":{"code":{"description":"Stable failure code.","maxLength":64,"pattern":"^[a-z][a-z0-9_]*$","type":"string"},"diagnostics":{"description":"Optional structured findings.","items":{"additionalProperties":false,"description":"One machine-readable finding attached to a failure, e.g. a schema violation.","properties":{"allowedKeys":{"description":"The keys allowed at `pointer`, when the failure concerns object members.","items":{"type":"string"},"type":"array"},"expected":{"description":"The expected type(s) when `keyword` is `type`.","type":"string"},"keyword":{"description":"The JSON Schema keyword that failed (`type`, `required`, `additionalProperties`, ...).","type":"string"},"message":{"description":"A human-readable explanation without parser line/column noise.","type":"string"},"pointer":{"description":"JSON Pointer into the arguments (`\"\"` is the whole object).","type":"string"}},"required":["pointer","keyword","message"],"type":"object"},"type":"array"},"message":{"description":"A safe message for the model.","type":"string"},"retryable":{"description":"Whether retrying the same call could succeed.","type":"boolean"}},"required":["code","message","retryable"],"type":"object"}},"required":["failure"],"type":"object"},"value":{"$defs":{"Point":{"properties":{"label":{"description":"What is there.","type":"string"},"x":{"description":"Metres east of the origin.","format":"int32","maximum":2147483647,"minimum":-2147483648,"type":"integer"},"y":{"description":"Metres north of the origin.","format":"int32","maximum":2147483647,"minimum":-2147483648,"type":"integer"}},"required":["x","y","label"],"type":"object"}},"$id":"urn:strict-mcp:output:leg","$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"end":{"$ref":"#/$defs/Point","description":"The end, as given."},"metres":{"description":"Manhattan distance in metres.","format":"uint32","maximum":4294967295,"minimum":0,"type":"integer"},"start":{"$ref":"#/$defs/Point","description":"The start, as given."}},"required":["start","end","metres"],"title":"Leg","type":"object"}},"$schema":"https://json-schema.org/draft/2020-12/schema","oneOf":[{"additionalProperties":false,"properties":{"value":{"$ref":"#/$defs/value"}},"required":["value"],"type":"object"},{"$ref":"#/$defs/failure"}],"type":"object"}"##;

#[tokio::test]
async fn item7_shared_profile_publishes_repeated_sub_schemas_once_under_defs() {
    let (server, shared) = published_leg(SchemaProfile::Shared).await;
    let (_, portable) = published_leg(SchemaProfile::Portable).await;
    let input = &shared["inputSchema"];
    let output = &shared["outputSchema"];
    // Snapshots: a release cannot change the published schemas silently.
    assert_eq!(input.to_string(), SHARED_INPUT);
    assert_eq!(output.to_string(), SHARED_OUTPUT);
    // The portable profile of user-needs #1 holds: 2020-12, explicit `$schema`, root object,
    // valid against the meta-schema.
    assert_eq!(
        input["$schema"],
        json!("https://json-schema.org/draft/2020-12/schema")
    );
    assert_eq!(input["type"], json!("object"));
    assert_eq!(output["type"], json!("object"));
    for schema in [
        input,
        output,
        &portable["inputSchema"],
        &portable["outputSchema"],
    ] {
        jsonschema::meta::validate(schema).unwrap();
    }
    // Smaller than the inlined form, which has no `$defs` of its own.
    assert!(portable["inputSchema"].get("$defs").is_none());
    assert!(input.to_string().len() < portable["inputSchema"].to_string().len());
    assert!(output.to_string().len() < portable["outputSchema"].to_string().len());
    // Arguments are still checked through the references.
    let call = |args: &str| request("tools/call", &format!(r#""name":"leg","arguments":{args}"#));
    let ok = serve(
        &server,
        &call(r#"{"from":{"x":0,"y":0,"label":"home"},"to":{"x":3,"y":-4,"label":"work"}}"#),
    )
    .await;
    assert_eq!(
        ok["result"]["structuredContent"]["value"]["metres"],
        json!(7),
        "{ok}"
    );
    let bad = serve(
        &server,
        &call(r#"{"from":{"x":"0","y":0,"label":"home"},"to":{"x":3,"y":-4,"label":"work"}}"#),
    )
    .await;
    assert_eq!(bad["result"]["isError"], json!(true), "{bad}");
    let failure = &bad["result"]["structuredContent"]["failure"];
    assert_eq!(failure["code"], json!("invalid_arguments"));
    assert_eq!(
        failure["diagnostics"][0]["pointer"],
        json!("/from/x"),
        "{failure}"
    );
}
