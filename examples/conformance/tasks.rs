//! The Tasks extension's conformance fixtures (`io.modelcontextprotocol/tasks`): the tools
//! the ten `tasks-*` scenarios name. Only the conformance server registers them (the other
//! fixture users see the core fixtures unchanged). The server decides which calls become
//! tasks (`ToolDef::task`); work that suspends before it finishes runs as a task for a request
//! that declared the extension, and input asked for before any suspension is an MRTR round.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{json, Value};
use strict_mcp::core::descriptor::ContentBlock;
use strict_mcp::core::{
    AppCode, CoreError, DynamicOutput, InputRequest, Invocation, Outcome, ToolDef, ToolError,
    ToolFailure,
};

const NO_ARGS: &str = r#"{"type":"object","properties":{},"additionalProperties":false}"#;

type Interactive = Result<Outcome<DynamicOutput>, ToolError>;

fn text(text: impl Into<String>) -> Result<DynamicOutput, ToolError> {
    Ok(DynamicOutput {
        content: vec![ContentBlock::text(text)],
        structured: None,
    })
}

fn done(body: impl Into<String>) -> Interactive {
    text(body).map(Outcome::Complete)
}

fn malformed(key: &str) -> ToolError {
    ToolError::Protocol(CoreError::InvalidParams {
        message: format!("inputResponses.{key} is not a valid answer"),
    })
}

/// How the user answered an elicitation.
enum Elicited {
    Accepted(serde_json::Map<String, Value>),
    Refused,
}

fn elicited(inv: &Invocation, key: &str) -> Result<Option<Elicited>, ToolError> {
    let Some(raw) = inv.input_response(key) else {
        return Ok(None);
    };
    let value: Value = serde_json::from_str(raw.get()).map_err(|_| malformed(key))?;
    match value.get("action").and_then(Value::as_str) {
        Some("accept") => match value.get("content") {
            None => Ok(Some(Elicited::Accepted(serde_json::Map::new()))),
            Some(Value::Object(content)) => Ok(Some(Elicited::Accepted(content.clone()))),
            Some(_) => Err(malformed(key)),
        },
        Some("decline" | "cancel") => Ok(Some(Elicited::Refused)),
        _ => Err(malformed(key)),
    }
}

enum Answer {
    Missing,
    Refused,
    Given(String),
}

fn elicited_string(inv: &Invocation, key: &str, field: &str) -> Result<Answer, ToolError> {
    Ok(match elicited(inv, key)? {
        None => Answer::Missing,
        Some(Elicited::Refused) => Answer::Refused,
        Some(Elicited::Accepted(content)) => match content.get(field).and_then(Value::as_str) {
            Some(s) => Answer::Given(s.to_owned()),
            None => Answer::Missing,
        },
    })
}

fn ask_name(inv: &Invocation, message: &str) -> Result<InputRequest, ToolError> {
    Ok(inv.elicit_form(
        message,
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
    )?)
}

/// How long `failing_job` and `protocol_error_job` work before they fail (the scenarios say
/// "after ~1s"; long enough that the task is observed while it runs).
const FAILING_JOB_DELAY: Duration = Duration::from_millis(1000);
/// The preparation `confirm_delete` and `multi_input` do before asking, so the call becomes a
/// task that parks `input_required` (input asked before any suspension is an MRTR round).
const TASK_PREPARE: Duration = Duration::from_millis(100);
/// The work `test_tool_with_task` does after the MRTR round, before its result.
const AFTER_INPUT_WORK: Duration = Duration::from_millis(200);
/// The longest `slow_compute` sleeps (its `seconds` argument is capped here).
const SLOW_COMPUTE_MAX_SECONDS: f64 = 600.0;

const GREET_ARGS: &str =
    r#"{"type":"object","properties":{"name":{"type":"string"}},"additionalProperties":false}"#;
const SLOW_COMPUTE_ARGS: &str = r#"{"type":"object","properties":{"seconds":{"type":"number","minimum":0},"label":{"type":"string"}},"additionalProperties":false}"#;
const FILENAME_ARGS: &str =
    r#"{"type":"object","properties":{"filename":{"type":"string"}},"additionalProperties":false}"#;

fn arg<'v>(args: &'v Value, key: &str) -> Option<&'v Value> {
    args.get(key)
}

fn confirm_form(inv: &Invocation, message: String) -> Result<InputRequest, ToolError> {
    Ok(inv.elicit_form(
        &message,
        json!({
            "type": "object",
            "properties": { "confirm": { "type": "boolean" } },
            "required": ["confirm"],
        }),
    )?)
}

/// The task fixtures: `greet` (sync only), `slow_compute` (optional task), `failing_job`
/// (required task, tool error), `protocol_error_job` (required task, the handler panics),
/// `confirm_delete` and `multi_input` (tasks that ask for one and two inputs),
/// `test_tool_with_task` (an MRTR round, then a required task).
#[must_use]
pub fn tools() -> Vec<ToolDef> {
    use strict_mcp::core::tasks::TaskMode;
    vec![
        ToolDef::dynamic(
            "greet",
            GREET_ARGS,
            None,
            |_inv, args: Box<RawValue>| async move {
                let args: Value = serde_json::from_str(args.get()).unwrap_or(Value::Null);
                let name = arg(&args, "name")
                    .and_then(Value::as_str)
                    .unwrap_or("World");
                text(format!("Hello, {name}!"))
            },
        )
        .description("Greets by name; always synchronous."),
        ToolDef::dynamic(
            "slow_compute",
            SLOW_COMPUTE_ARGS,
            None,
            |_inv, args: Box<RawValue>| async move {
                let args: Value = serde_json::from_str(args.get()).unwrap_or(Value::Null);
                let seconds = arg(&args, "seconds")
                    .and_then(Value::as_f64)
                    .unwrap_or(1.0)
                    .clamp(0.0, SLOW_COMPUTE_MAX_SECONDS);
                let label = arg(&args, "label").and_then(Value::as_str).unwrap_or("");
                if seconds > 0.0 {
                    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
                }
                text(format!("Computed {label} after {seconds}s"))
            },
        )
        .description("Sleeps `seconds`, then answers; a task unless it finishes at once.")
        .task(TaskMode::Optional),
        ToolDef::dynamic("failing_job", NO_ARGS, None, |_inv, _args| async move {
            tokio::time::sleep(FAILING_JOB_DELAY).await;
            Err(ToolError::Failure(ToolFailure::new(
                AppCode::new("job_failed").expect("a valid code"),
                "The job failed.",
            )))
        })
        .description("Always a task; ends with a tool error (completed, isError).")
        .task(TaskMode::Required),
        ToolDef::dynamic(
            "protocol_error_job",
            NO_ARGS,
            None,
            |_inv, _args| async move {
                tokio::time::sleep(FAILING_JOB_DELAY).await;
                fail_on_purpose()
            },
        )
        .description("Always a task; its handler panics, so the task ends failed.")
        .task(TaskMode::Required),
        ToolDef::dynamic_interactive(
            "confirm_delete",
            FILENAME_ARGS,
            None,
            |inv: Invocation, args: Box<RawValue>| async move {
                let args: Value = serde_json::from_str(args.get()).unwrap_or(Value::Null);
                let file = arg(&args, "filename")
                    .and_then(Value::as_str)
                    .unwrap_or("the file")
                    .to_owned();
                tokio::time::sleep(TASK_PREPARE).await;
                match confirmation_field(&inv, "confirm")? {
                    Some(true) => done(format!("Deleted {file}.")),
                    Some(false) => done(format!("Kept {file}.")),
                    None => Ok(Outcome::input(
                        "confirm",
                        confirm_form(&inv, format!("Delete {file}?"))?,
                    )),
                }
            },
        )
        .description("A task that asks for one confirmation, then finishes.")
        .task(TaskMode::Optional),
        ToolDef::dynamic_interactive(
            "multi_input",
            NO_ARGS,
            None,
            |inv: Invocation, _args| async move {
                tokio::time::sleep(TASK_PREPARE).await;
                let first = elicited_string(&inv, "first", "name")?;
                let second = elicited_string(&inv, "second", "name")?;
                match (first, second) {
                    (Answer::Given(a), Answer::Given(b)) => done(format!("Got {a} and {b}.")),
                    (first, second) => {
                        let mut requests = BTreeMap::new();
                        if matches!(first, Answer::Missing) {
                            requests.insert("first".to_owned(), ask_name(&inv, "First name?")?);
                        }
                        if matches!(second, Answer::Missing) {
                            requests.insert("second".to_owned(), ask_name(&inv, "Second name?")?);
                        }
                        if requests.is_empty() {
                            return done("An input was refused.");
                        }
                        Ok(Outcome::InputRequired { requests })
                    }
                }
            },
        )
        .description("A task that asks for two inputs at once.")
        .task(TaskMode::Optional),
        ToolDef::dynamic_interactive(
            "test_tool_with_task",
            NO_ARGS,
            None,
            |inv: Invocation, _args| async move {
                match elicited_string(&inv, "user_name", "name")? {
                    Answer::Given(name) => {
                        tokio::time::sleep(AFTER_INPUT_WORK).await;
                        done(format!("Hello, {name}! (finished as a task)"))
                    }
                    Answer::Refused => done("No name given."),
                    Answer::Missing => Ok(Outcome::input(
                        "user_name",
                        ask_name(&inv, "What is your name?")?,
                    )),
                }
            },
        )
        .description("Asks for a name through MRTR, then runs the rest as a task.")
        .task(TaskMode::Required),
    ]
}

/// `protocol_error_job`'s failure: a panic inside the handler.
fn fail_on_purpose() -> Result<DynamicOutput, ToolError> {
    panic!("protocol_error_job fails on purpose")
}

/// The `confirm` field of an accepted elicitation (`false` for a refusal).
fn confirmation_field(inv: &Invocation, key: &str) -> Result<Option<bool>, ToolError> {
    Ok(match elicited(inv, key)? {
        None => None,
        Some(Elicited::Refused) => Some(false),
        Some(Elicited::Accepted(content)) => content.get("confirm").and_then(Value::as_bool),
    })
}
