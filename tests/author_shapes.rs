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
        json!([{"role":"user","content":{"type":"text","text":"Review this Rust code."}}])
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
        json!([{"role":"user","content":{"type":"text","text":"Say hello to Ada."}}])
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
