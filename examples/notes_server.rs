//! A complete server in one file: what a Rust developer exposing a few functions of their
//! service writes in their first hour.
//!
//! - a typed tool `add` (exact integers in, a typed result out);
//! - `add_note` and `search_notes` (a list with an optional `limit`), sharing one
//!   `Arc<Notes>` through [`ToolDef::typed_with`] — no clones before or inside the closures;
//! - `delete_note`, which asks the user to confirm through an elicitation form first (the
//!   server seals the pending call in `requestState`; nothing is deleted until the user
//!   accepts), and answers the application failure `not_found` for an unknown id;
//! - one resource, `notes://all` (Markdown, `mimeType` echoed in its contents);
//! - one typed prompt, `summarize`.
//!
//! The same server runs over stdio or over HTTP inside an axum router, behind a bearer-token
//! layer that turns the token into the [`Caller`] the server sees:
//!
//! ```sh
//! cargo run --example notes_server -- stdio
//! NOTES_TOKEN=secret cargo run --example notes_server -- http 127.0.0.1:8080
//! cargo test --example notes_server    # the in-process tests below (tower::ServiceExt::oneshot)
//! ```
//!
//! Publication is direct here (four tools, each listed natively); compact mode, the default,
//! suits servers with many tools. The bearer check is a lookup in a fixed table to keep the
//! example short: a real deployment verifies tokens with `server::auth` (JWT or
//! introspection, Protected Resource Metadata, `WWW-Authenticate` challenges).

#![forbid(unsafe_code)]

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use strict_mcp::core::descriptor::ResourceContents;
use strict_mcp::core::{
    AppCode, Caller, Invocation, Outcome, PromptDef, PromptReply, ReadReply, Registry,
    RegistryBuilder, ResourceDef, ToolDef, ToolError, ToolFailure,
};
use strict_mcp::server::http::{HttpConfig, McpHttp};
use strict_mcp::server::{PublishMode, Server, ServerOptions};

/// The application's own failure code for an id that names no note.
const NOT_FOUND: AppCode = match AppCode::new("not_found") {
    Ok(code) => code,
    Err(_) => panic!("not a valid failure code"),
};

/// The state every handler shares.
#[derive(Default)]
struct Notes {
    items: Mutex<BTreeMap<u64, String>>,
}

impl Notes {
    fn insert(&self, text: String) -> u64 {
        let mut items = self.items.lock().unwrap();
        let id = items.keys().next_back().map_or(1, |last| last + 1);
        items.insert(id, text);
        id
    }
}

#[derive(Deserialize, JsonSchema)]
struct AddIn {
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
}

#[derive(Serialize, JsonSchema)]
struct Sum {
    /// `a + b`.
    sum: i64,
}

#[derive(Deserialize, JsonSchema)]
struct NewNote {
    /// The note's text.
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct Search {
    /// Words the note must contain (case-insensitive).
    query: String,
    /// At most this many notes (default 10).
    limit: Option<u32>,
}

#[derive(Serialize, JsonSchema)]
struct Note {
    /// The note's id.
    id: u64,
    /// The note's text.
    text: String,
}

#[derive(Serialize, JsonSchema)]
struct Found {
    /// Matching notes, oldest first.
    notes: Vec<Note>,
}

#[derive(Deserialize, JsonSchema)]
struct Delete {
    /// The id of the note to delete.
    id: u64,
}

#[derive(Serialize, JsonSchema)]
struct Deleted {
    /// The id that was asked for.
    id: u64,
    /// Whether the note is gone (false when the user declined).
    deleted: bool,
}

#[derive(Deserialize, JsonSchema)]
struct Summarize {
    /// What the summary should focus on.
    topic: String,
}

/// The confirmation form `delete_note` sends.
fn confirm_form() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {"confirm": {"type": "boolean", "title": "Delete it?"}},
        "required": ["confirm"],
    })
}

async fn delete_note(
    notes: Arc<Notes>,
    inv: Invocation,
    input: Delete,
) -> Result<Outcome<Deleted>, ToolError> {
    let missing = || ToolFailure::new(NOT_FOUND, "No note has that id.");
    let form = confirm_form();
    let Some(answer) = inv.form_answer("confirm", &form)? else {
        let text = notes.items.lock().unwrap().get(&input.id).cloned();
        let text = text.ok_or_else(missing)?;
        let ask = inv.elicit_form(&format!("Delete the note \"{text}\"?"), form)?;
        return Ok(Outcome::input("confirm", ask));
    };
    let confirmed = answer.confirmed("confirm");
    if confirmed && notes.items.lock().unwrap().remove(&input.id).is_none() {
        return Err(missing().into());
    }
    Ok(Outcome::Complete(Deleted {
        id: input.id,
        deleted: confirmed,
    }))
}

/// Every tool, the resource and the prompt, over one shared `Notes`.
fn registry(notes: &Arc<Notes>) -> Registry {
    RegistryBuilder::new()
        .tool(
            ToolDef::typed("add", |_: Invocation, i: AddIn| async move {
                let sum =
                    i.a.checked_add(i.b)
                        .ok_or("the sum does not fit in 64 bits")?;
                Ok(Sum { sum })
            })
            .description("Adds two integers."),
        )
        .tool(
            ToolDef::typed_with(
                "add_note",
                notes,
                |notes, _: Invocation, n: NewNote| async move {
                    let id = notes.insert(n.text.clone());
                    Ok(Note { id, text: n.text })
                },
            )
            .description("Stores a note and returns it with its id."),
        )
        .tool(
            ToolDef::typed_with(
                "search_notes",
                notes,
                |notes, _: Invocation, s: Search| async move {
                    let words = s.query.to_lowercase();
                    let limit = usize::try_from(s.limit.unwrap_or(10)).unwrap_or(usize::MAX);
                    let found = notes
                        .items
                        .lock()
                        .unwrap()
                        .iter()
                        .filter(|(_, text)| text.to_lowercase().contains(&words))
                        .take(limit)
                        .map(|(&id, text)| Note {
                            id,
                            text: text.clone(),
                        })
                        .collect();
                    Ok(Found { notes: found })
                },
            )
            .description("Finds notes containing the query."),
        )
        .tool(
            ToolDef::typed_interactive_with("delete_note", notes, delete_note)
                .description("Deletes a note after the user confirms."),
        )
        .resource(
            ResourceDef::new_with(
                "notes://all",
                "all notes",
                notes,
                |notes, _: Invocation, uri| async move {
                    let items = notes.items.lock().unwrap();
                    let text: String = items
                        .iter()
                        .map(|(id, t)| format!("- {id}: {t}\n"))
                        .collect();
                    Ok(ReadReply::new(vec![ResourceContents::text(uri, text)]))
                },
            )
            .mime_type("text/markdown"),
        )
        .prompt(
            PromptDef::typed("summarize", |_: Invocation, s: Summarize| async move {
                Ok(PromptReply::user(format!(
                    "Read the resource notes://all and summarise what it says about {}.",
                    s.topic
                )))
            })
            .description("Summarises the notes on one topic."),
        )
        .build()
        .expect("the registry is valid")
}

fn server(notes: &Arc<Notes>) -> Server {
    let options = ServerOptions::new()
        .server_info("notes", env!("CARGO_PKG_VERSION"))
        .mode(PublishMode::Direct);
    Server::new(registry(notes), options).expect("the options are valid")
}

/// Bearer tokens and the principal each stands for.
type Tokens = Arc<HashMap<String, String>>;

/// The auth layer: a known bearer token becomes the request's [`Caller`] (the server reads it
/// from the request's extensions); anything else is answered 401 before the server sees it.
async fn bearer(State(tokens): State<Tokens>, mut request: Request, next: Next) -> Response {
    let principal = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .and_then(|token| tokens.get(token))
        .cloned();
    match principal {
        Some(principal) => {
            request.extensions_mut().insert(Caller::new(principal));
            next.run(request).await
        }
        None => (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
        )
            .into_response(),
    }
}

/// The HTTP app: the MCP endpoint at `/mcp` behind the bearer layer. `HttpConfig::default()`
/// answers loopback `Host`s only; list public names in `HttpConfig::hosts` to serve them.
fn app(server: Server, tokens: Tokens) -> Router {
    Router::new()
        .route_service("/mcp", McpHttp::new(server, HttpConfig::default()))
        .layer(middleware::from_fn_with_state(tokens, bearer))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let notes = Arc::new(Notes::default());
    notes.insert("Buy milk".to_owned());
    let server = server(&notes);
    let mut args = std::env::args().skip(1);
    match args.next().as_deref() {
        Some("stdio") => {
            // Protocol bytes only on stdout; the exit status says whether shutdown was clean.
            let report = server.run_stdio(Caller::new("local-user")).await?;
            std::process::exit(report.exit_code());
        }
        Some("http") => {
            let addr = args.next().unwrap_or_else(|| "127.0.0.1:8080".to_owned());
            let token = std::env::var("NOTES_TOKEN").unwrap_or_else(|_| "dev-token".to_owned());
            let tokens = Arc::new(HashMap::from([(token, "alice".to_owned())]));
            let listener = tokio::net::TcpListener::bind(&addr).await?;
            eprintln!("notes: MCP endpoint http://{addr}/mcp (Authorization: Bearer …)");
            axum::serve(listener, app(server, tokens)).await?;
        }
        _ => {
            eprintln!("usage: notes_server stdio | notes_server http [ADDR]");
            std::process::exit(2);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use http_body_util::BodyExt as _;
    use serde_json::Value;
    use tower::ServiceExt as _;

    const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}"#;

    fn app_with_notes() -> (Router, Arc<Notes>) {
        let notes = Arc::new(Notes::default());
        notes.insert("Buy milk".to_owned());
        notes.insert("Call the plumber".to_owned());
        let tokens = Arc::new(HashMap::from([("t0k3n".to_owned(), "alice".to_owned())]));
        (app(server(&notes), tokens), notes)
    }

    /// POSTs one request with every header the transport requires; returns status and body.
    async fn post(app: &Router, token: Option<&str>, name: &str, body: Value) -> (u16, Value) {
        let method = body["method"].as_str().unwrap().to_owned();
        let mut request = axum::http::Request::post("/mcp")
            .header("host", "127.0.0.1")
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method)
            .header("mcp-name", name);
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        let request = request.body(Body::from(body.to_string())).unwrap();
        let response = app.clone().oneshot(request).await.unwrap();
        let status = response.status().as_u16();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap()
        };
        (status, body)
    }

    fn call(id: u64, name: &str, arguments: Value) -> Value {
        json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{
            "name":name,"arguments":arguments,"_meta":serde_json::from_str::<Value>(META).unwrap()}})
    }

    #[tokio::test]
    async fn a_request_without_a_known_token_never_reaches_the_server() {
        let (app, _) = app_with_notes();
        let body = call(1, "add", json!({"a":2,"b":3}));
        assert_eq!(
            post(&app, None, "add", body.clone()).await,
            (401, Value::Null)
        );
        assert_eq!(
            post(&app, Some("wrong"), "add", body).await,
            (401, Value::Null)
        );
    }

    #[tokio::test]
    async fn tools_resource_and_prompt_answer_through_the_router() {
        let (app, _) = app_with_notes();
        let token = Some("t0k3n");
        let (status, v) = post(&app, token, "add", call(1, "add", json!({"a":2,"b":3}))).await;
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["result"]["structuredContent"], json!({"value":{"sum":5}}));
        // `limit: null` reads as absent (optional input).
        let search = call(2, "search_notes", json!({"query":"MILK","limit":null}));
        let (_, v) = post(&app, token, "search_notes", search).await;
        assert_eq!(
            v["result"]["structuredContent"],
            json!({"value":{"notes":[{"id":1,"text":"Buy milk"}]}})
        );
        let read = json!({"jsonrpc":"2.0","id":3,"method":"resources/read","params":{
            "uri":"notes://all","_meta":serde_json::from_str::<Value>(META).unwrap()}});
        let (_, v) = post(&app, token, "notes://all", read).await;
        assert_eq!(
            v["result"]["contents"],
            json!([{"uri":"notes://all","mimeType":"text/markdown",
                    "text":"- 1: Buy milk\n- 2: Call the plumber\n"}])
        );
        let get = json!({"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{
            "name":"summarize","arguments":{"topic":"errands"},
            "_meta":serde_json::from_str::<Value>(META).unwrap()}});
        let (_, v) = post(&app, token, "summarize", get).await;
        assert_eq!(
            v["result"]["messages"][0]["content"]["text"],
            json!("Read the resource notes://all and summarise what it says about errands.")
        );
    }

    #[tokio::test]
    async fn delete_asks_first_and_deletes_only_after_the_user_confirms() {
        let (app, notes) = app_with_notes();
        let token = Some("t0k3n");
        let (_, v) = post(
            &app,
            token,
            "delete_note",
            call(1, "delete_note", json!({"id":2})),
        )
        .await;
        assert_eq!(v["result"]["resultType"], json!("input_required"), "{v}");
        assert_eq!(
            v["result"]["inputRequests"]["confirm"]["params"]["message"],
            json!("Delete the note \"Call the plumber\"?")
        );
        assert_eq!(notes.items.lock().unwrap().len(), 2, "nothing deleted yet");
        let state = v["result"]["requestState"].as_str().unwrap().to_owned();
        let mut retry = call(2, "delete_note", json!({"id":2}));
        retry["params"]["inputResponses"] =
            json!({"confirm":{"action":"accept","content":{"confirm":true}}});
        retry["params"]["requestState"] = json!(state);
        let (_, v) = post(&app, token, "delete_note", retry).await;
        assert_eq!(
            v["result"]["structuredContent"],
            json!({"value":{"id":2,"deleted":true}}),
            "{v}"
        );
        assert_eq!(notes.items.lock().unwrap().len(), 1);
        // An unknown id is the application failure, not a protocol error.
        let (_, v) = post(
            &app,
            token,
            "delete_note",
            call(3, "delete_note", json!({"id":9})),
        )
        .await;
        assert_eq!(v["result"]["isError"], json!(true));
        assert_eq!(
            v["result"]["structuredContent"],
            json!({"failure":{"code":"not_found","message":"No note has that id.","retryable":false}})
        );
    }
}
