//! Running the built `strict-mcp` binary in the CLI tests (cli_http, cli_stdio, cli_tasks,
//! cli_interop, evidence_cli): one run, bounded, with both pipes read while it runs, and the
//! readers of its exit code, output and `--json` records.
//!
//! A test that needs only this says `#[path = "support/cli.rs"] mod cli;` (or uses
//! `support::cli` when it has `mod support;`).
#![allow(dead_code)]

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The binary under test, as cargo built it for this test run.
pub const EXE: &str = env!("CARGO_BIN_EXE_strict-mcp");

/// The longest a single CLI run may take before it counts as hung. Only a hang stopper: no
/// test asserts how fast a run is, so a loaded machine cannot fail one.
pub const RUN_BOUND: Duration = Duration::from_secs(60);

/// How often a run is looked at while it has not ended (a poll, not a bound).
const POLL: Duration = Duration::from_millis(20);

/// The binary with `args`, stdout and stderr piped, and `NO_COLOR` unset (the colour choice
/// is the tests' own, never the developer's environment).
pub fn command<I, S>(args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut command = Command::new(EXE);
    command
        .args(args)
        .env_remove("NO_COLOR")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Waits for `child` within [`RUN_BOUND`] (killed and a panic past it). Both pipes are read
/// while the child runs: output past the pipe buffer (the bash completion script is over
/// 64 KiB) would otherwise block the child until the bound.
pub fn wait_bounded(mut child: Child) -> Output {
    fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut buf);
            }
            buf
        })
    }
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return Output {
                status,
                stdout: stdout.join().expect("stdout reader"),
                stderr: stderr.join().expect("stderr reader"),
            };
        }
        if start.elapsed() > RUN_BOUND {
            let _ = child.kill();
            let _ = child.wait();
            panic!("strict-mcp did not finish within {RUN_BOUND:?}");
        }
        std::thread::sleep(POLL);
    }
}

/// One run with `args` and `stdin` as its whole input (none: stdin at EOF at once).
pub fn run_with_stdin(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = command(args)
        .stdin(Stdio::piped())
        .spawn()
        .expect("spawn strict-mcp");
    let mut input = child.stdin.take().expect("stdin");
    if let Some(text) = stdin {
        input.write_all(text.as_bytes()).expect("write stdin");
    }
    drop(input);
    wait_bounded(child)
}

/// One run with `args` and no input.
pub fn run(args: &[&str]) -> Output {
    let child = command(args)
        .stdin(Stdio::null())
        .spawn()
        .expect("spawn strict-mcp");
    wait_bounded(child)
}

/// One run with `args` and no input, on the tokio runtime (killed when dropped), bounded by
/// [`RUN_BOUND`].
pub async fn run_async<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S> + std::fmt::Debug + Clone,
    S: AsRef<OsStr>,
{
    let child = tokio::process::Command::from(command(args.clone()))
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn strict-mcp");
    tokio::time::timeout(RUN_BOUND, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("strict-mcp {args:?} did not finish within {RUN_BOUND:?}"))
        .expect("strict-mcp output")
}

/// The exit code (a run ended by a signal has none: that fails the test).
pub fn code(o: &Output) -> i32 {
    o.status.code().expect("exit code")
}

/// Standard output, which must be UTF-8.
pub fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("utf-8 stdout")
}

/// Standard error, lossily (only ever shown or searched).
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The `--json` records, one per stdout line; a line that is not JSON fails the test.
pub fn records(o: &Output) -> Vec<Value> {
    stdout(o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("record {l:?}: {e}")))
        .collect()
}

/// How long a server child may take to print its listening line before it counts as hung:
/// only a hang stopper (the read used to have no bound at all).
pub const LISTEN_BOUND: Duration = Duration::from_secs(60);

/// The URL of a loopback HTTP server child from its first stdout line,
/// `{"listening":"http://127.0.0.1:PORT/mcp"}` (as `strict-mcp demo serve --http` and the node
/// peers print it). Its stdout is taken and closed after that line, as before the helper. A
/// child that prints nothing within [`LISTEN_BOUND`] is killed and fails the test.
pub fn listening_url(child: &mut Child) -> String {
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let read = std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line);
        let _ = tx.send(read.map(|_| line));
    });
    let Ok(read) = rx.recv_timeout(LISTEN_BOUND) else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("no listening line within {LISTEN_BOUND:?}");
    };
    let line = read.expect("listening line");
    let v: Value = serde_json::from_str(&line).expect("listening JSON");
    let url = v["listening"].as_str().expect("url").to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    url
}
