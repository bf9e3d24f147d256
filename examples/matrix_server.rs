//! **Test fixture, not a demo**: the stdio server that `tests/stdio_child_process.rs` spawns as
//! a real child process and speaks raw JSON lines to (issue #6, the child-process verification
//! matrix). Its tools exist to make wire behaviour observable from outside the process; none of
//! them is an example of a useful tool.
//!
//! ```sh
//! cargo run --example matrix_server -- [--mode compact|direct] [--shutdown-budget-ms N]
//! ```
//!
//! * `--mode` is handed to [`ServerOptions::mode`] unchanged (default `compact`), so an unknown
//!   mode is refused by the library itself (O7) and the process exits with status 1.
//! * `--shutdown-budget-ms` sets the budget of the shutdown at stdin EOF (O5; default 5 s).
//!
//! Tools:
//!
//! | name | behaviour |
//! |---|---|
//! | `echo` | typed: `{text}` → `{text}` |
//! | `null_value` | dynamic: structured result is the JSON `null` (→ `{"value":null}`, O14) |
//! | `no_structured` | dynamic: content only, no structured result (→ no `structuredContent`) |
//! | `optional` | typed: `{text, note?}` → `{text, note?}`; `note` absent stays absent |
//! | `fail` | typed: always the failure `invalid_arguments` with one diagnostic (O17) |
//! | `ask` | typed, interactive: asks `q1`, `q2`, … one form elicitation per round until `rounds` answers exist (`rounds` absent: forever, so the 11th prompt hits `interaction_limit`, O54) |
//! | `progress` | reports progress 0.5, 0.5 again (not increasing: refused and logged), 2 and 3 of 3, 150 ms apart (J-section, O57–O59) |
//! | `slow` | writes `started:<marker>` to stderr, waits for cancellation, and writes `cancelled:<marker>` to stderr when the handler stops (observed or dropped) |
//! | `stuck` | writes `started:stuck` to stderr and then blocks its thread forever (see below) |
//! | `tool_00` … `tool_44` | fillers for direct-mode paging (45 tools, plus the 9 above) |
//!
//! A resource `mem://readme`, a template `mem://items/{id}` (completion for `id`) and a prompt
//! `greet` (required argument `name`, with completion) make every core method servable.
//!
//! Two handlers ignore cancellation. The core races every *tool* handler against its
//! cancellation token and drops it, so an asynchronous tool can never outlive its call; the
//! only tool that can is one that blocks its thread, which is what `stuck` does. The resource
//! `mem://stuck` writes `started:mem-stuck` to stderr and then awaits forever without looking
//! at its token: resource handlers are not raced, so it keeps its call running past any
//! shutdown budget while staying abortable.
//!
//! stdout carries protocol lines only (C1); diagnostics go to stderr (C4, `RUST_LOG`, default
//! `warn`). Exit status: 0 after a clean shutdown at EOF, 3 with a `cleanup_failed` line on
//! stderr when calls were still running when the budget ran out (O5), 2 for bad flags.

#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use serde_json::value::RawValue;
use strict_mcp::core::descriptor::{ContentBlock, PromptMessage, ResourceContents, Role};
use strict_mcp::core::{
    Caller, Diagnostic, DynamicOutput, FailureCode, Invocation, Outcome, PromptDef, PromptReply,
    ReadReply, Registry, RegistryBuilder, ResourceDef, ResourceError, TemplateDef, ToolDef,
    ToolError, ToolFailure,
};
use strict_mcp::server::{Server, ServerOptions, ShutdownReport};
use tracing_subscriber::EnvFilter;

/// Closed, empty input schema of the dynamic tools.
const NO_ARGS: &str = r#"{"type":"object","properties":{},"additionalProperties":false}"#;

/// Number of filler tools (`tool_00` … `tool_44`).
const FILLERS: usize = 45;

#[derive(Deserialize, JsonSchema)]
struct EchoIn {
    /// Text to echo.
    text: String,
}

#[derive(Serialize, JsonSchema)]
struct EchoOut {
    /// The same text.
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct OptionalIn {
    /// Text to return.
    text: String,
    /// A note, returned only when given.
    note: Option<String>,
}

#[derive(Serialize, JsonSchema)]
struct OptionalOut {
    /// The same text.
    text: String,
    /// The note, absent when none was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
struct FailIn {
    /// Any reason; the tool refuses it.
    reason: String,
}

#[derive(Serialize, JsonSchema)]
struct FailOut {
    /// Never produced.
    never: bool,
}

#[derive(Deserialize, JsonSchema)]
struct AskIn {
    /// Answers after which the tool completes; absent means it never completes.
    rounds: Option<u32>,
}

#[derive(Serialize, JsonSchema)]
struct AskOut {
    /// How many answers the tool received.
    answered: u32,
}

#[derive(Deserialize, JsonSchema)]
struct SlowIn {
    /// Written to stderr as `started:<marker>` and `cancelled:<marker>`.
    marker: String,
}

#[derive(Serialize, JsonSchema)]
struct SlowOut {
    /// Never produced.
    finished: bool,
}

#[derive(Deserialize, JsonSchema)]
struct StuckIn {}

#[derive(Serialize, JsonSchema)]
struct ProgressOut {
    /// Updates reported.
    steps: u32,
}

/// Time between progress updates: above the server's 100 ms pacing interval (J5, O58), so
/// none is held back.
const PROGRESS_SPACING: Duration = Duration::from_millis(150);

#[derive(Serialize, JsonSchema)]
struct StuckOut {
    /// Never produced.
    finished: bool,
}

/// Writes `cancelled:<marker>` to stderr when the `slow` handler stops, whether it observed
/// its cancellation token or its future was dropped by the host.
struct StopReport(String);

impl Drop for StopReport {
    fn drop(&mut self) {
        eprintln!("cancelled:{}", self.0);
    }
}

fn raw(text: &str) -> Box<RawValue> {
    RawValue::from_string(text.to_owned()).expect("fixture JSON is valid")
}

fn tools() -> Vec<ToolDef> {
    let mut tools = vec![
        ToolDef::typed("echo", |_inv: Invocation, i: EchoIn| async move {
            Ok(EchoOut { text: i.text })
        })
        .description("Echoes text."),
        ToolDef::dynamic("null_value", NO_ARGS, None, |_inv, _args| async move {
            Ok(DynamicOutput {
                content: Vec::new(),
                structured: Some(raw("null")),
            })
        })
        .description("Returns the JSON value null as its structured result."),
        ToolDef::dynamic("no_structured", NO_ARGS, None, |_inv, _args| async move {
            Ok(DynamicOutput {
                content: vec![ContentBlock::text("plain")],
                structured: None,
            })
        })
        .description("Returns one text block and no structured result."),
        ToolDef::typed("optional", |_inv: Invocation, i: OptionalIn| async move {
            Ok(OptionalOut {
                text: i.text,
                note: i.note,
            })
        })
        .description("Returns its text, and its note only when one is given."),
        ToolDef::typed("fail", |_inv: Invocation, i: FailIn| async move {
            Err::<FailOut, ToolError>(
                ToolFailure::new(
                    FailureCode::InvalidArguments,
                    format!("The reason `{}` is not accepted.", i.reason),
                )
                .with_diagnostics(vec![Diagnostic {
                    pointer: "/reason".to_owned(),
                    keyword: "const".to_owned(),
                    message: "no reason is accepted".to_owned(),
                    expected: None,
                    allowed_keys: None,
                }])
                .into(),
            )
        })
        .description("Always fails with a typed failure."),
        ToolDef::typed_interactive("ask", |inv: Invocation, i: AskIn| async move {
            let mut k: u32 = 1;
            loop {
                if i.rounds.is_some_and(|rounds| k > rounds) {
                    return Ok(Outcome::Complete(AskOut { answered: k - 1 }));
                }
                let key = format!("q{k}");
                if inv.input_response(&key).is_none() {
                    let request = inv.elicit_form(
                        &format!("Question {k}?"),
                        json!({"type":"object","properties":{"ok":{"type":"boolean"}}}),
                    )?;
                    return Ok(Outcome::input(key, request));
                }
                k += 1;
            }
        })
        .description("Asks one new question per round until `rounds` answers exist."),
        ToolDef::typed("progress", |inv: Invocation, _i: StuckIn| async move {
            inv.report_progress(0.5, Some(3.0), Some("half"));
            inv.report_progress(0.5, Some(3.0), None);
            tokio::time::sleep(PROGRESS_SPACING).await;
            inv.report_progress(2.0, Some(3.0), None);
            tokio::time::sleep(PROGRESS_SPACING).await;
            inv.report_progress(3.0, Some(3.0), Some("done"));
            Ok(ProgressOut { steps: 3 })
        })
        .description("Reports progress three times when the request asks for it."),
        ToolDef::typed("slow", |inv: Invocation, i: SlowIn| async move {
            eprintln!("started:{}", i.marker);
            let _report = StopReport(i.marker);
            inv.cancel_token().cancelled().await;
            Err::<SlowOut, ToolError>(
                ToolFailure::new(FailureCode::Cancelled, "The call was cancelled.").into(),
            )
        })
        .description("Waits for cancellation and reports it on stderr."),
        ToolDef::typed("stuck", |_inv: Invocation, _i: StuckIn| async move {
            eprintln!("started:stuck");
            // Blocking on purpose: the only way a tool handler can ignore cancellation.
            loop {
                std::thread::park();
            }
            #[allow(unreachable_code)]
            Ok::<StuckOut, ToolError>(StuckOut { finished: true })
        })
        .description("Never ends and ignores cancellation."),
    ];
    for n in 0..FILLERS {
        let name = format!("tool_{n:02}");
        let text = name.clone();
        tools.push(
            ToolDef::dynamic(name, NO_ARGS, None, move |_inv, _args| {
                let text = text.clone();
                async move {
                    Ok(DynamicOutput {
                        content: vec![ContentBlock::text(text)],
                        structured: None,
                    })
                }
            })
            .description(format!("Filler tool {n:02} for direct-mode paging.")),
        );
    }
    tools
}

fn registry() -> Registry {
    let mut builder = RegistryBuilder::new()
        .resource(
            ResourceDef::new("mem://readme", "readme", |_inv, uri| async move {
                Ok(ReadReply::new(vec![ResourceContents::text(
                    uri,
                    "matrix fixture",
                )
                .with_mime_type("text/plain")]))
            })
            .description("A static text resource.")
            .mime_type("text/plain"),
        )
        .resource(
            ResourceDef::new("mem://stuck", "stuck", |_inv, _uri| async move {
                eprintln!("started:mem-stuck");
                std::future::pending::<Result<ReadReply, ResourceError>>().await
            })
            .description("Never ends and ignores cancellation."),
        )
        .template(
            TemplateDef::new(
                "mem://items/{id}",
                "item",
                |_inv, uri, vars: BTreeMap<String, String>| async move {
                    let id = vars.get("id").cloned().unwrap_or_default();
                    Ok(ReadReply::new(vec![ResourceContents::text(
                        uri,
                        format!("item {id}"),
                    )]))
                },
            )
            .description("Items by id.")
            .complete("id", |_caller, partial, _context| {
                ["alpha", "alpine", "beta"]
                    .iter()
                    .filter(|c| c.starts_with(partial))
                    .map(|c| (*c).to_owned())
                    .collect()
            }),
        )
        .prompt(
            PromptDef::new("greet", |_inv, args: BTreeMap<String, String>| async move {
                let name = args.get("name").cloned().unwrap_or_default();
                Ok(Outcome::Complete(PromptReply {
                    description: None,
                    messages: vec![PromptMessage::new(
                        Role::User,
                        ContentBlock::text(format!("Say hello to {name}.")),
                    )],
                }))
            })
            .description("Greets someone.")
            .argument("name", "Whom to greet.", true)
            .complete("name", |_caller, partial, _context| {
                ["ada", "alan", "grace"]
                    .iter()
                    .filter(|c| c.starts_with(partial))
                    .map(|c| (*c).to_owned())
                    .collect()
            }),
        );
    for tool in tools() {
        builder = builder.tool(tool);
    }
    builder.build().expect("the fixture registry builds")
}

fn usage() -> ! {
    eprintln!("usage: matrix_server [--mode compact|direct] [--shutdown-budget-ms N]");
    std::process::exit(2);
}

struct Flags {
    mode: String,
    budget: Option<Duration>,
}

fn flags() -> Flags {
    let mut flags = Flags {
        mode: "compact".to_owned(),
        budget: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let Some(value) = args.next() else { usage() };
        match flag.as_str() {
            "--mode" => flags.mode = value,
            "--shutdown-budget-ms" => match value.parse::<u64>() {
                Ok(ms) => flags.budget = Some(Duration::from_millis(ms)),
                Err(_) => usage(),
            },
            _ => usage(),
        }
    }
    flags
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn")),
        )
        .init();
    let flags = flags();
    let mut options = ServerOptions::new()
        .server_info("strict-mcp-matrix", env!("CARGO_PKG_VERSION"))
        .mode(flags.mode);
    if let Some(budget) = flags.budget {
        options = options.shutdown_budget(budget);
    }
    let server = match Server::new(registry(), options) {
        Ok(server) => server,
        Err(e) => {
            // O7: a refused configuration (e.g. an unknown mode) never starts serving.
            eprintln!("matrix_server: {e}");
            std::process::exit(1);
        }
    };
    // stdio serves one local user; credentials would come from the environment (C16).
    let report = server.run_stdio(Caller::new("local-user")).await?;
    if report != ShutdownReport::Stopped {
        // O5: an abandoned shutdown shows on stderr and in the exit status, never on stdout.
        eprintln!("shutdown: {report}");
        std::process::exit(report.exit_code());
    }
    Ok(())
}
