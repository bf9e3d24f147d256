//! `strict-mcp tasks …` (the Tasks extension from the command line) against the TypeScript
//! SDK v2 Tasks server (`interop/node/ts_tasks_server.mjs`) over Streamable HTTP on loopback:
//! call, get, wait, update, cancel, their JSON records and exit codes (0, 1, 2, 4, 6, 8, 9).
//! Requirement ids: N12, N36, N41–N44, I15 (a task's input is answered only by
//! `tasks update`). The node peer missing is a skip locally and a failure under `CI=true`.
#![cfg(unix)]

#[path = "support/cli.rs"]
mod cli;
#[path = "support/interop.rs"]
mod interop;

use std::process::{Child, Command, Output, Stdio};

use cli::{code, records, stderr, stdout};

/// The TS Tasks server, killed by its pid and reaped when dropped.
struct TasksServer {
    child: Child,
    url: String,
}

impl TasksServer {
    fn start() -> Option<TasksServer> {
        let node = interop::peer(".interop/node/bin/node")?;
        interop::peer("interop/node/node_modules/@modelcontextprotocol/ext-tasks/package.json")?;
        let mut child = Command::new(node)
            .args(["interop/node/ts_tasks_server.mjs", "--http", "0"])
            .current_dir(interop::root())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn the ts tasks server");
        let url = cli::listening_url(&mut child);
        Some(TasksServer { child, url })
    }
}

impl Drop for TasksServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One CLI run against the server at `url`.
fn run(url: &str, args: &[&str]) -> Output {
    let all: Vec<&str> = ["--url", url]
        .into_iter()
        .chain(args.iter().copied())
        .collect();
    cli::run(&all)
}

/// `tasks call NAME --args ARGS` without waiting: the new task's id, from the human line
/// `task <id> <status>`.
fn start_task(url: &str, name: &str, args: &str, status: &str) -> String {
    let o = run(url, &["tasks", "call", name, "--args", args]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    let line = out
        .lines()
        .find(|l| l.starts_with("task "))
        .expect("task line");
    let parts: Vec<&str> = line.split(' ').collect();
    assert_eq!(parts.len(), 3, "{line}");
    assert_eq!(parts[2], status, "{line}");
    parts[1].to_owned()
}

#[test]
fn n12_call_then_wait_prints_the_records_and_exits_by_the_tasks_end() {
    let Some(server) = TasksServer::start() else {
        return;
    };
    let url = server.url.as_str();
    // JSON mode: the task record for tools/call, then every poll, the last one completed.
    let o = run(
        url,
        &[
            "--json",
            "tasks",
            "call",
            "slow",
            "--args",
            r#"{"ms":150}"#,
            "--wait",
            "--for",
            "30",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let lines = records(&o);
    let call = lines
        .iter()
        .find(|l| l["method"] == "tools/call")
        .expect("the call's record");
    assert_eq!(call["kind"], "task");
    assert_eq!(call["result"]["resultType"], "task");
    let last = lines.last().expect("records");
    assert_eq!(last["method"], "tasks/get");
    assert_eq!(last["result"]["status"], "completed");
    assert_eq!(last["result"]["result"]["content"][0]["text"], "slept 150");
    // A tool that is never a task prints its result as `tools call` does.
    let o = run(url, &["tasks", "call", "quick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o), "quick\n");
    // A failed task exits 4 with its JSON-RPC error.
    let o = run(url, &["tasks", "call", "broken", "--wait"]);
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("error -32603: broken on purpose"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn i15_n42_input_is_answered_only_by_tasks_update() {
    let Some(server) = TasksServer::start() else {
        return;
    };
    let url = server.url.as_str();
    let id = start_task(url, "ask", "{}", "input_required");
    // Waiting shows the input request and exits 6; nothing is answered.
    let o = run(url, &["tasks", "wait", &id]);
    assert_eq!(code(&o), 6, "{}", stderr(&o));
    assert!(stdout(&o).contains("\"confirm\""), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("needs input (confirm)"),
        "{}",
        stderr(&o)
    );
    // Still waiting for input: `get` exits 0 with the state.
    let o = run(url, &["tasks", "get", &id]);
    assert_eq!(code(&o), 0);
    assert!(
        stdout(&o).contains("\"status\": \"input_required\""),
        "{}",
        stdout(&o)
    );
    // An answer to no outstanding request is a usage error, and is not sent.
    let o = run(
        url,
        &[
            "tasks",
            "update",
            &id,
            "--input",
            r#"{"other":{"action":"accept"}}"#,
        ],
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let o = run(
        url,
        &[
            "tasks",
            "update",
            &id,
            "--input",
            r#"{"confirm":{"action":"accept","content":{"ok":true}}}"#,
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o), format!("answered confirm of task {id}\n"));
    let o = run(url, &["tasks", "wait", &id]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o), "confirmed: true\n");
}

#[test]
fn n43_n44_cancel_pending_and_unknown_tasks_have_their_exit_codes() {
    let Some(server) = TasksServer::start() else {
        return;
    };
    let url = server.url.as_str();
    // 60 s: still working when the cancel below comes, however loaded the machine.
    let id = start_task(url, "slow", r#"{"ms":60000}"#, "working");
    // Still running when --for runs out: 9, with the hint to wait again.
    let o = run(url, &["tasks", "wait", &id, "--for", "1"]);
    assert_eq!(code(&o), 9, "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("strict-mcp tasks wait {id}")),
        "{}",
        stderr(&o)
    );
    let o = run(url, &["tasks", "cancel", &id]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = run(url, &["tasks", "wait", &id]);
    assert_eq!(code(&o), 8, "{}", stderr(&o));
    // An unknown task is the server's -32602: 4.
    let o = run(url, &["tasks", "get", "no-such-task"]);
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("unknown task \"no-such-task\""),
        "{}",
        stderr(&o)
    );
    // Every wait has its bound: 0 and 3601 seconds are usage errors.
    for bad in ["0", "3601"] {
        let o = run(url, &["tasks", "wait", &id, "--for", bad]);
        assert_eq!(code(&o), 2, "--for {bad}: {}", stderr(&o));
    }
}
