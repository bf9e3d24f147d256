//! `strict-mcp tasks …`: the Tasks extension from the command line. Every request declares
//! the extension; a task's input is answered only by `tasks update` (or, for the input a
//! call needs before it becomes a task, by `--responses` / `--interactive` as for
//! `tools call`). A wait always has its `--for` bound.

use std::sync::Arc;
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::{last_reply, print_tool_result, Session};
use crate::cli::args::TasksCommand;
use crate::cli::exit::Exit;
use crate::cli::input::{self, ArgumentSource, Arguments, Responses};
use crate::cli::output::{member, pretty, Records};
use crate::client::tasks::{TaskCall, TaskError, TrackedTask};
use crate::client::{
    CallOptions, Client, ClientError, InvalidResult, Round, ToolOutcome, MAX_TASK_WAIT,
};
use crate::wire::tasks::{DetailedTask, TaskDetail, TaskStatus};

impl Session {
    /// Runs one `tasks …` subcommand.
    pub(super) async fn tasks(
        &mut self,
        command: TasksCommand,
        arguments: Option<Arguments>,
        responses: &Responses,
    ) -> Exit {
        if !self.client.tasks_advertised() {
            eprintln!(
                "warning: the server's discovery does not advertise io.modelcontextprotocol/tasks"
            );
        }
        match command {
            TasksCommand::Call {
                name,
                wait,
                duration,
                ..
            } => {
                let wait = match wait.then(|| wait_for(duration)).transpose() {
                    Ok(w) => w,
                    Err(exit) => return exit,
                };
                self.task_call(&name, arguments, responses, wait).await
            }
            TasksCommand::Get { task_id } => self.task_get(&task_id).await,
            TasksCommand::Wait { task_id, duration } => match wait_for(duration) {
                Ok(wait) => self.task_wait(&TrackedTask::new(task_id), wait).await,
                Err(exit) => exit,
            },
            TasksCommand::Update { task_id, input } => self.task_update(task_id, &input).await,
            TasksCommand::Cancel { task_id } => self.task_cancel(&task_id).await,
        }
    }

    /// Reports a task error: its record is already printed in JSON mode.
    fn fail_task(&mut self, error: &TaskError) -> Exit {
        if let TaskError::Client(e) = error {
            return self.fail(e);
        }
        self.end_progress();
        self.flush();
        eprintln!("error: {error}");
        match error {
            TaskError::WaitDeadline { task_id, .. } => {
                eprintln!("  hint: wait again with `strict-mcp tasks wait {task_id}`");
            }
            TaskError::TtlExpired { task_id, .. } => {
                eprintln!("  hint: the server may have purged it; `strict-mcp tasks get {task_id}` shows whether it still has it");
            }
            _ => {}
        }
        Exit::of_task(error)
    }

    async fn task_call(
        &mut self,
        name: &str,
        arguments: Option<Arguments>,
        responses: &Responses,
        wait: Option<Duration>,
    ) -> Exit {
        // The definition first (Mcp-Name / Mcp-Param-* over HTTP, output schema), as
        // `tools call` does.
        self.flush();
        if let Err(e) = self.client.list_tools(&self.options).await {
            return self.fail(&e);
        }
        self.flush();
        let raw = arguments.map(|a| a.raw);
        let send = async |client: &Client, round, options: &CallOptions| {
            let (call, raw) = client
                .call_tool_task_exact(name, raw.as_deref(), round, options)
                .await
                .map_err(client_error)?;
            Ok((
                match call {
                    TaskCall::Done(ToolOutcome::InputRequired(i)) => {
                        Round::InputRequired(Box::new(i))
                    }
                    done => Round::Complete(done),
                },
                Some(raw),
            ))
        };
        let (call, last) = match self.rounds("tools/call", responses, send).await {
            Ok(done) => done,
            Err(exit) => return exit,
        };
        match call {
            TaskCall::Done(outcome) => {
                if !self.json {
                    if let Some(raw) = &last {
                        print_tool_result(raw);
                    }
                }
                if matches!(outcome, ToolOutcome::Failed(_)) {
                    eprintln!("the tool reported an error (isError: true)");
                    return Exit::ToolError;
                }
                Exit::Success
            }
            TaskCall::Task(task) => {
                if !self.json {
                    out!("task {} {}", task.task_id, task.status.as_str());
                }
                eprintln!(
                    "the server runs the call as task {}; see it with `strict-mcp tasks get {}`",
                    task.task_id, task.task_id
                );
                match wait {
                    Some(wait) => self.task_wait(&TrackedTask::from_task(&task), wait).await,
                    None => Exit::Success,
                }
            }
        }
    }

    async fn task_get(&mut self, task_id: &str) -> Exit {
        self.flush();
        let task = self.client.get_task(task_id, &self.options).await;
        let records = self.flush();
        match task {
            Ok(_) => {
                if !self.json {
                    if let Some(raw) = last_reply(&records, "tasks/get") {
                        out!("{}", pretty(raw.get()));
                    }
                }
                Exit::Success
            }
            Err(e) => self.fail_task(&e),
        }
    }

    async fn task_wait(&mut self, tracked: &TrackedTask, wait: Duration) -> Exit {
        self.flush();
        // Each poll's answer is printed (and dropped from the tap) as it arrives: a long wait
        // must not run past the tap's record bound and lose the last state.
        let client = self.client.clone();
        let tap = Arc::clone(&self.tap);
        let json = self.json;
        let mut printer = std::mem::take(&mut self.records);
        let mut last: Option<Box<RawValue>> = None;
        let task = client
            .wait_task_with(tracked, wait, &self.options, |_| {
                let (records, dropped) = tap.drain();
                if dropped > 0 {
                    eprintln!("warning: {dropped} answers were not kept (record bound)");
                }
                if json {
                    printer.emit(&records);
                }
                if let Some(raw) = last_reply(&records, "tasks/get") {
                    last = Some(raw);
                }
            })
            .await;
        self.records = printer;
        let task = match task {
            Ok(task) => task,
            Err(e) => return self.fail_task(&e),
        };
        if let Some(raw) = last_reply(&self.flush(), "tasks/get") {
            last = Some(raw);
        }
        self.settled(tracked, &task, last.as_deref())
    }

    /// Prints a settled task and returns the exit of its state.
    fn settled(&self, tracked: &TrackedTask, task: &DetailedTask, raw: Option<&RawValue>) -> Exit {
        let id = tracked.id();
        match task.task.status {
            TaskStatus::Completed => {
                let result = raw.and_then(|r| member(r, "result"));
                if !self.json {
                    if let Some(result) = &result {
                        print_tool_result(result);
                    }
                }
                let is_error = matches!(
                    &task.detail,
                    TaskDetail::Completed { result } if result.get("isError") == Some(&Value::Bool(true))
                );
                if is_error {
                    eprintln!("task {id} completed; the tool reported an error (isError: true)");
                    return Exit::ToolError;
                }
                Exit::Success
            }
            TaskStatus::Failed => {
                if let TaskDetail::Failed { error } = &task.detail {
                    eprintln!("task {id} failed: error {}: {}", error.code, error.message);
                }
                Exit::Protocol
            }
            TaskStatus::Cancelled => {
                eprintln!("task {id} was cancelled");
                Exit::TaskCancelled
            }
            TaskStatus::InputRequired => {
                let outstanding: Vec<&str> = tracked.outstanding(task).into_keys().collect();
                if !self.json {
                    if let Some(asked) = raw.and_then(|r| member(r, "inputRequests")) {
                        out!("{}", pretty(asked.get()));
                    }
                }
                eprintln!(
                    "task {id} needs input ({}); answer with `strict-mcp tasks update {id} --input JSON`",
                    outstanding.join(", ")
                );
                Exit::InputRequired
            }
            TaskStatus::Working => Exit::TaskPending,
        }
    }

    async fn task_update(&mut self, task_id: String, input: &str) -> Exit {
        let source = if input == "-" {
            ArgumentSource::Stdin
        } else {
            ArgumentSource::Inline(input.to_owned())
        };
        let answers = match input::read_arguments(&source) {
            Ok(a) => a.map,
            Err(e) => {
                eprintln!("error: --input: {e}");
                return Exit::Usage;
            }
        };
        self.flush();
        // The task's outstanding requests first: only those may be answered.
        let asked = match self.client.get_task(&task_id, &self.options).await {
            Ok(asked) => asked,
            Err(e) => return self.fail_task(&e),
        };
        let mut tracked = TrackedTask::new(task_id);
        let keys: Vec<String> = answers.keys().cloned().collect();
        let sent = self
            .client
            .update_task(&mut tracked, &asked, answers, &self.options)
            .await;
        self.flush();
        match sent {
            Ok(()) => {
                if self.json {
                    Records::emit_value(&json!({
                        "kind": "task_update", "taskId": tracked.id(), "answered": keys,
                    }));
                } else {
                    out!("answered {} of task {}", keys.join(", "), tracked.id());
                }
                Exit::Success
            }
            Err(e) => self.fail_task(&e),
        }
    }

    async fn task_cancel(&mut self, task_id: &str) -> Exit {
        self.flush();
        let sent = self.client.cancel_task(task_id, &self.options).await;
        self.flush();
        match sent {
            Ok(()) => {
                if !self.json {
                    out!("cancellation of task {task_id} requested");
                }
                eprintln!(
                    "cancellation is cooperative: `strict-mcp tasks get {task_id}` shows how it ended"
                );
                Exit::Success
            }
            Err(e) => self.fail_task(&e),
        }
    }
}

/// `--for SECS` as a wait, within the client's bound.
fn wait_for(seconds: u64) -> Result<Duration, Exit> {
    let wait = Duration::from_secs(seconds);
    if wait.is_zero() || wait > MAX_TASK_WAIT {
        eprintln!(
            "error: --for must be 1 to {} seconds",
            MAX_TASK_WAIT.as_secs()
        );
        return Err(Exit::Usage);
    }
    Ok(wait)
}

/// A task call's failure in the terms of the MRTR driver (a `tools/call` has no unknown task
/// and no wait).
fn client_error(e: TaskError) -> ClientError {
    match e {
        TaskError::Client(e) => e,
        TaskError::Invalid { method, reason } => {
            ClientError::Invalid(InvalidResult::Frame { method, reason })
        }
        other => ClientError::Request(other.to_string()),
    }
}
