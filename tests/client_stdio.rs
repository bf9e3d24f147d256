//! The client's stdio transport against real child processes (O83, C1, C2, C5, C6, C10, C13).
//!
//! Children are `sh` one-liners or the fixtures in `tests/fixtures/` (`stdio_echo.py` needs
//! `python3` on `PATH`). Process-group checks scan `/proc` themselves and ignore zombies,
//! which linger here because nothing reaps orphans in every container.
#![cfg(unix)]

use std::os::unix::process::ExitStatusExt as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use strict_mcp::client::stdio::{
    CloseReport, CommandSpec, Escalation, FrameSink, Incoming, LineError, ShutdownTimings,
    StdioTransport, TransportError, INBOUND_QUEUE_FRAMES, STDERR_CAPTURE_BYTES,
};
use strict_mcp::codec::IngressError;
use strict_mcp::wire::jsonrpc::{Message, Response};
use strict_mcp::wire::limits::MAX_REQUEST_FRAME_BYTES;

/// Upper bound for any single wait in these tests, so a broken transport fails, never hangs.
const TEST_WAIT: Duration = Duration::from_secs(10);

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn sh(script: &str) -> CommandSpec {
    CommandSpec::new("sh").arg("-c").arg(script)
}

fn echo_server() -> CommandSpec {
    CommandSpec::new("python3").arg(fixture("stdio_echo.py"))
}

fn stubborn_server() -> CommandSpec {
    CommandSpec::new("sh").arg(fixture("stdio_stubborn.sh"))
}

fn fast(timings_ms: (u64, u64, u64)) -> ShutdownTimings {
    ShutdownTimings {
        eof_grace: Duration::from_millis(timings_ms.0),
        term_grace: Duration::from_millis(timings_ms.1),
        kill_wait: Duration::from_millis(timings_ms.2),
    }
}

async fn recv(transport: &StdioTransport) -> Result<Incoming, TransportError> {
    tokio::time::timeout(TEST_WAIT, transport.recv())
        .await
        .expect("recv must not hang")
}

async fn close(transport: &StdioTransport) -> CloseReport {
    tokio::time::timeout(TEST_WAIT, transport.close())
        .await
        .expect("close must not hang")
}

/// Live (non-zombie) processes whose process group is `pgid`, read from `/proc`.
fn live_group_members(pgid: u32) -> Vec<u32> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let rest = &stat[stat.rfind(')').unwrap() + 1..];
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields[2].parse::<u32>() == Ok(pgid) && fields[0] != "Z" && fields[0] != "X" {
            members.push(pid);
        }
    }
    members
}

async fn wait_for_members(pgid: u32, at_least: usize) -> Vec<u32> {
    let start = Instant::now();
    loop {
        let members = live_group_members(pgid);
        if members.len() >= at_least || start.elapsed() > TEST_WAIT {
            return members;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn wait_for_no_members(pgid: u32) -> Vec<u32> {
    let start = Instant::now();
    loop {
        let members = live_group_members(pgid);
        if members.is_empty() || start.elapsed() > TEST_WAIT {
            return members;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn success(incoming: Incoming) -> (String, String) {
    match incoming {
        Incoming::Message(Message::Response(Response::Success(s))) => {
            (s.id.token().to_owned(), s.result.get().to_owned())
        }
        other => panic!("expected a success response, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c2_o83_a_request_line_round_trips_with_its_exact_id() {
    let transport = StdioTransport::spawn(&echo_server()).unwrap();
    let line = b"{\"jsonrpc\":\"2.0\",\"id\":18446744073709551617,\"method\":\"tools/list\",\"params\":{\"_meta\":{}}}\n";
    transport.send(line).await.unwrap();
    let (id, result) = success(recv(&transport).await.unwrap());
    assert_eq!(id, "18446744073709551617");
    assert_eq!(
        result,
        format!(
            r#"{{"resultType":"complete","bytes":{},"method":"tools/list"}}"#,
            line.len() - 1
        )
    );
    let report = close(&transport).await;
    assert_eq!(report.escalation, Escalation::None);
    assert_eq!(report.status.and_then(|s| s.code()), Some(0));
    assert!(report.group_ended);
    assert!(transport.stderr_tail().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c6_o83_concurrent_sends_of_100_kib_lines_never_interleave() {
    const TASKS: usize = 8;
    const PER_TASK: usize = 8;
    let transport = Arc::new(StdioTransport::spawn(&echo_server()).unwrap());
    let mut senders = Vec::new();
    for task in 0..TASKS {
        let transport = Arc::clone(&transport);
        senders.push(tokio::spawn(async move {
            let mut lengths = Vec::new();
            for n in 0..PER_TASK {
                let id = task * 1000 + n;
                let pad = "x".repeat(100 * 1024 + id);
                let line = format!(
                    "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"pad\":\"{pad}\"}}}}\n"
                );
                transport.send(line.as_bytes()).await.unwrap();
                lengths.push((id, line.len() - 1));
            }
            lengths
        }));
    }
    // Read concurrently with the writers so neither pipe fills up.
    let mut replies = std::collections::BTreeMap::new();
    while replies.len() < TASKS * PER_TASK {
        let (id, result) = success(recv(&transport).await.unwrap());
        let value: serde_json::Value = serde_json::from_str(&result).unwrap();
        replies.insert(
            id.parse::<usize>().unwrap(),
            value["bytes"].as_u64().unwrap(),
        );
    }
    let mut expected = std::collections::BTreeMap::new();
    for sender in senders {
        for (id, len) in sender.await.unwrap() {
            expected.insert(id, len as u64);
        }
    }
    assert_eq!(replies, expected);
    assert!(
        transport.stderr_tail().is_empty(),
        "the child saw a bad line"
    );
    let report = close(&transport).await;
    assert_eq!(report.status.and_then(|s| s.code()), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c5_stderr_over_the_bound_keeps_only_the_newest_bytes() {
    const LINES: usize = 10_000;
    let script = format!(
        "i=0; while [ $i -lt {LINES} ]; do printf 'line %05d\\n' $i >&2; i=$((i+1)); done; \
         printf '{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{{}}}}\\n'; exec cat >/dev/null"
    );
    let transport = StdioTransport::spawn(&sh(&script)).unwrap();
    let expected: Vec<u8> = (0..LINES)
        .flat_map(|i| format!("line {i:05}\n").into_bytes())
        .collect();
    assert!(expected.len() > STDERR_CAPTURE_BYTES);
    // stderr is not a failure signal: the protocol line still arrives.
    assert!(matches!(
        recv(&transport).await.unwrap(),
        Incoming::Message(Message::Notification(_))
    ));
    let start = Instant::now();
    while !transport.stderr_tail().ends_with(b"line 09999\n") && start.elapsed() < TEST_WAIT {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let tail = transport.stderr_tail();
    assert_eq!(tail.len(), STDERR_CAPTURE_BYTES);
    assert_eq!(tail, expected[expected.len() - STDERR_CAPTURE_BYTES..]);
    assert_eq!(
        transport.stderr_dropped(),
        (expected.len() - STDERR_CAPTURE_BYTES) as u64
    );
    close(&transport).await;
}

/// The last "wrote N" the child logged to stderr.
fn last_written(transport: &StdioTransport) -> usize {
    let tail = String::from_utf8(transport.stderr_tail()).unwrap();
    tail.lines()
        .rev()
        .find_map(|l| l.strip_prefix("wrote ").and_then(|n| n.parse().ok()))
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o86_an_unread_server_is_held_back_at_the_inbound_queue_bound() {
    // 200 KiB lines: more than the pipe plus one read chunk can hold, so once the queue is full
    // and the reader holds the next frame, the child blocks inside the line after it.
    const LINES: usize = 40;
    let script = format!(
        "i=1; while [ $i -le {LINES} ]; do \
           printf '{{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{{\"p\":\"' $i; \
           head -c 204800 /dev/zero | tr '\\000' a; printf '\"}}}}\\n'; \
           echo \"wrote $i\" >&2; i=$((i+1)); done; exec cat >/dev/null"
    );
    let transport = StdioTransport::spawn(&sh(&script)).unwrap();
    // Wait until the child has filled the queue and then stopped making progress (a slow
    // machine may pause it earlier, so a plateau below the bound does not count).
    let mut seen = 0;
    let start = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let now = last_written(&transport);
        if (now == seen && now > INBOUND_QUEUE_FRAMES) || start.elapsed() > TEST_WAIT {
            break;
        }
        seen = now;
    }
    // The queue holds its bound and the reader one more frame: the child got no further.
    let held = last_written(&transport);
    assert!(
        (INBOUND_QUEUE_FRAMES + 1..=INBOUND_QUEUE_FRAMES + 2).contains(&held),
        "child wrote {held} lines while nothing was received"
    );
    // Receiving frees the child; every line arrives whole and in order.
    for i in 1..=LINES {
        let (id, result) = success(recv(&transport).await.unwrap());
        assert_eq!(id, i.to_string());
        assert_eq!(result.len(), 204800 + r#"{"p":""}"#.len());
    }
    let start = Instant::now();
    while last_written(&transport) < LINES && start.elapsed() < TEST_WAIT {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(last_written(&transport), LINES);
    close(&transport).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c13_child_exit_releases_every_waiter_with_its_exit_status() {
    let transport = Arc::new(StdioTransport::spawn(&sh("read line; exit 7")).unwrap());
    let waiters: Vec<_> = (0..2)
        .map(|_| {
            let transport = Arc::clone(&transport);
            tokio::spawn(async move { recv(&transport).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(50)).await;
    transport
        .send(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1}}\n")
        .await
        .unwrap();
    for waiter in waiters {
        let err = waiter.await.unwrap().unwrap_err();
        assert_eq!(err.exit_status().and_then(|s| s.code()), Some(7), "{err:?}");
    }
    // From now on every call fails fast with the same error.
    let line = b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\"}\n";
    let err = transport.send(line).await.unwrap_err();
    assert_eq!(err.exit_status().and_then(|s| s.code()), Some(7), "{err:?}");
    let err = recv(&transport).await.unwrap_err();
    assert_eq!(err.exit_status().and_then(|s| s.code()), Some(7), "{err:?}");
    let report = close(&transport).await;
    assert_eq!(report.escalation, Escalation::None);
    assert_eq!(report.status.and_then(|s| s.code()), Some(7));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c13_a_sender_blocked_on_a_full_pipe_is_released_when_the_child_exits() {
    // The child never reads, so the pipe fills and the write blocks until the exit.
    let transport = StdioTransport::spawn(&sh("sleep 0.3; exit 5")).unwrap();
    let pad = "x".repeat(MAX_REQUEST_FRAME_BYTES - 200);
    let line = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{{\"p\":\"{pad}\"}}}}\n"
    );
    let err = tokio::time::timeout(TEST_WAIT, transport.send(line.as_bytes()))
        .await
        .expect("send must be released")
        .unwrap_err();
    assert_eq!(err.exit_status().and_then(|s| s.code()), Some(5), "{err:?}");
    close(&transport).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c13_every_sender_to_a_child_that_closed_stdin_gets_its_exit_status() {
    // stdin is closed at once, the exit follows 300 ms later: the broken pipe is reported as
    // the exit, to the sender that hit it and to those queued behind it.
    let transport = Arc::new(StdioTransport::spawn(&sh("exec 0<&-; sleep 0.3; exit 6")).unwrap());
    tokio::time::sleep(Duration::from_millis(50)).await;
    let senders: Vec<_> = (0..3)
        .map(|_| {
            let transport = Arc::clone(&transport);
            tokio::spawn(async move {
                let line = b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\"}\n";
                tokio::time::timeout(TEST_WAIT, transport.send(line))
                    .await
                    .unwrap()
            })
        })
        .collect();
    for sender in senders {
        let err = sender.await.unwrap().unwrap_err();
        assert_eq!(err.exit_status().and_then(|s| s.code()), Some(6), "{err:?}");
    }
    close(&transport).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c10_o83_no_orphan_after_close_when_the_server_ignores_eof_and_term_and_forks() {
    let transport =
        StdioTransport::spawn(&stubborn_server().shutdown(fast((300, 300, 2000)))).unwrap();
    let pgid = transport.process_group();
    // The ready notification comes after the grandchild was started.
    assert!(matches!(
        recv(&transport).await.unwrap(),
        Incoming::Message(Message::Notification(n)) if n.method == "notifications/message"
    ));
    let members = wait_for_members(pgid, 2).await;
    assert!(members.len() >= 2, "shell and grandchild: {members:?}");
    let start = Instant::now();
    let report = close(&transport).await;
    assert!(
        start.elapsed() >= Duration::from_millis(600),
        "both graces were waited"
    );
    assert_eq!(report.escalation, Escalation::Killed);
    assert_eq!(report.status.and_then(|s| s.signal()), Some(9));
    assert!(report.group_ended);
    assert_eq!(live_group_members(pgid), Vec::<u32>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c10_sigterm_reaches_the_whole_group_of_a_child_that_honours_it() {
    let transport = StdioTransport::spawn(
        &sh("sleep 1000 & printf '{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\\n'; wait")
            .shutdown(fast((200, 2000, 2000))),
    )
    .unwrap();
    let pgid = transport.process_group();
    recv(&transport).await.unwrap();
    assert!(wait_for_members(pgid, 2).await.len() >= 2);
    let report = close(&transport).await;
    assert_eq!(report.escalation, Escalation::Terminated);
    assert_eq!(report.status.and_then(|s| s.signal()), Some(15));
    assert!(report.group_ended);
    assert_eq!(live_group_members(pgid), Vec::<u32>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c10_c11_eof_grace_at_and_past_the_time_the_child_needs() {
    // The child exits 200 ms after EOF: within a 2 s grace nothing is signalled…
    let script = "cat >/dev/null; sleep 0.2; exit 4";
    let transport = StdioTransport::spawn(&sh(script).shutdown(fast((2000, 2000, 2000)))).unwrap();
    let report = close(&transport).await;
    assert_eq!(report.escalation, Escalation::None);
    assert_eq!(report.status.and_then(|s| s.code()), Some(4));
    // …with a 50 ms grace the group gets SIGTERM.
    let transport = StdioTransport::spawn(&sh(script).shutdown(fast((50, 2000, 2000)))).unwrap();
    let report = close(&transport).await;
    assert_eq!(report.escalation, Escalation::Terminated);
    assert_eq!(report.status.and_then(|s| s.signal()), Some(15));
    assert!(report.group_ended);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o83_dropping_the_transport_kills_the_whole_group() {
    let transport = StdioTransport::spawn(&stubborn_server()).unwrap();
    let pgid = transport.process_group();
    recv(&transport).await.unwrap();
    assert!(wait_for_members(pgid, 2).await.len() >= 2);
    drop(transport);
    assert_eq!(wait_for_no_members(pgid).await, Vec::<u32>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o83_calls_after_close_fail_fast_and_close_is_idempotent() {
    let transport = Arc::new(StdioTransport::spawn(&echo_server()).unwrap());
    let waiter = {
        let transport = Arc::clone(&transport);
        tokio::spawn(async move { recv(&transport).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    let first = close(&transport).await;
    assert_eq!(waiter.await.unwrap().unwrap_err(), TransportError::Closed);
    let line = b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\"}\n";
    assert_eq!(transport.send(line).await, Err(TransportError::Closed));
    assert_eq!(recv(&transport).await.unwrap_err(), TransportError::Closed);
    assert_eq!(close(&transport).await, first);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c1_invalid_oversized_and_illegal_inbound_lines_are_diagnostics() {
    let script = "printf 'not json\\n'; head -c 17000000 /dev/zero | tr '\\000' a; \
                  printf '\\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\\n'; \
                  printf '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"sampling/createMessage\"}\\n'; \
                  exec cat >/dev/null";
    let transport = StdioTransport::spawn(&sh(script)).unwrap();
    let mut causes = Vec::new();
    for _ in 0..4 {
        causes.push(match recv(&transport).await.unwrap() {
            Incoming::Rejected(rejection) => format!("{:?}", rejection.error),
            Incoming::Message(Message::Notification(n)) => n.method,
            other => panic!("unexpected {other:?}"),
        });
    }
    assert!(causes[0].starts_with("Syntax"), "{causes:?}");
    assert_eq!(
        causes[1],
        format!(
            "{:?}",
            IngressError::FrameTooLarge {
                limit: strict_mcp::codec::IngressLimits::CLIENT.max_frame_bytes,
                actual: None
            }
        )
    );
    assert_eq!(causes[2], "notifications/message");
    assert_eq!(causes[3], format!("{:?}", IngressError::UnexpectedRequest));
    close(&transport).await;
}

fn request_of_len(len: usize) -> Vec<u8> {
    let frame = r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"p":""}}"#.len();
    let mut line = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"p":"{}"}}}}"#,
        "x".repeat(len - frame)
    )
    .into_bytes();
    assert_eq!(line.len(), len);
    line.push(b'\n');
    line
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c2_o36_send_refuses_bad_lines_before_writing_and_takes_one_at_the_bound() {
    let transport = StdioTransport::spawn(&echo_server()).unwrap();
    let refused = |err: TransportError| match err {
        TransportError::Line(line) => line,
        other => panic!("expected a refused line, got {other:?}"),
    };
    let ok = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}\n";
    assert_eq!(
        refused(transport.send(&ok[..ok.len() - 1]).await.unwrap_err()),
        LineError::MissingNewline
    );
    assert_eq!(
        refused(
            transport
                .send(b"{\"jsonrpc\":\"2.0\",\n\"method\":\"m\"}\n")
                .await
                .unwrap_err()
        ),
        LineError::EmbeddedNewline
    );
    assert_eq!(
        refused(
            transport
                .send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n")
                .await
                .unwrap_err()
        ),
        LineError::NotARequest(IngressError::UnexpectedResponse)
    );
    assert!(matches!(
        refused(transport.send(b"[1]\n").await.unwrap_err()),
        LineError::NotARequest(IngressError::Batch)
    ));
    let past = request_of_len(MAX_REQUEST_FRAME_BYTES + 1);
    assert_eq!(
        refused(transport.send(&past).await.unwrap_err()),
        LineError::TooLarge {
            limit: MAX_REQUEST_FRAME_BYTES,
            actual: MAX_REQUEST_FRAME_BYTES + 1
        }
    );
    // Nothing was written: the child (which exits on a bad line) answers the next ones.
    transport
        .send(&request_of_len(MAX_REQUEST_FRAME_BYTES))
        .await
        .unwrap();
    let (_, result) = success(recv(&transport).await.unwrap());
    assert!(
        result.contains(&format!("\"bytes\":{MAX_REQUEST_FRAME_BYTES}")),
        "{result}"
    );
    // A typed response is refused too (C2).
    let response: Message = strict_mcp::codec::decode(
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}",
        &strict_mcp::codec::IngressLimits::CLIENT,
    )
    .unwrap();
    assert_eq!(
        refused(transport.send_message(&response).await.unwrap_err()),
        LineError::NotARequest(IngressError::UnexpectedResponse)
    );
    let request: Message =
        strict_mcp::codec::decode(ok, &strict_mcp::codec::IngressLimits::SERVER).unwrap();
    transport.send_message(&request).await.unwrap();
    assert_eq!(success(recv(&transport).await.unwrap()).0, "1");
    assert!(transport.stderr_tail().is_empty());
    close(&transport).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawn_passes_env_and_cwd_and_no_shell() {
    let dir = std::env::temp_dir();
    let script = r#"printf '{"jsonrpc":"2.0","method":"x","params":{"v":"%s","d":"%s","gone":"%s"}}\n' "$FOO" "$(pwd -P)" "${HOME:-}"; exec cat >/dev/null"#;
    let spec = sh(script)
        .env("FOO", "bar $HOME")
        .env_remove("HOME")
        .current_dir(&dir);
    let transport = StdioTransport::spawn(&spec).unwrap();
    let params = match recv(&transport).await.unwrap() {
        Incoming::Message(Message::Notification(n)) => n.params.unwrap().get().to_owned(),
        other => panic!("unexpected {other:?}"),
    };
    let dir = std::fs::canonicalize(dir).unwrap();
    assert_eq!(
        params,
        format!(r#"{{"v":"bar $HOME","d":"{}","gone":""}}"#, dir.display())
    );
    close(&transport).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawn_failure_is_a_typed_error() {
    let err =
        StdioTransport::spawn(&CommandSpec::new("/nonexistent/strict-mcp-server")).unwrap_err();
    assert_eq!(
        err,
        TransportError::Spawn {
            kind: std::io::ErrorKind::NotFound
        }
    );
}

#[test]
fn spawn_outside_a_runtime_is_a_typed_error() {
    assert_eq!(
        StdioTransport::spawn(&echo_server()).unwrap_err(),
        TransportError::NoRuntime
    );
}

// ---------------------------------------------------------------------------------------------
// attach_sink: frames handed over from the stdout reader itself (no queue, no second task)

type Seen = Arc<std::sync::Mutex<Vec<Result<Incoming, TransportError>>>>;

/// A sink that keeps what it gets; `notify` is woken on every call.
fn keeping_sink(seen: &Seen, notify: &Arc<tokio::sync::Notify>) -> FrameSink {
    let (seen, notify) = (Arc::clone(seen), Arc::clone(notify));
    Box::new(move |frame| {
        seen.lock().unwrap().push(frame);
        notify.notify_one();
    })
}

/// Waits until the sink has `n` calls (bounded by [`TEST_WAIT`]).
async fn wait_for_calls(seen: &Seen, notify: &tokio::sync::Notify, n: usize) {
    let start = Instant::now();
    while seen.lock().unwrap().len() < n {
        assert!(
            start.elapsed() < TEST_WAIT,
            "sink got {} of {n} calls",
            seen.lock().unwrap().len()
        );
        let _ = tokio::time::timeout(Duration::from_millis(50), notify.notified()).await;
    }
}

fn id_of(frame: &Result<Incoming, TransportError>) -> String {
    match frame {
        Ok(Incoming::Message(Message::Response(Response::Success(s)))) => s.id.token().to_owned(),
        other => panic!("expected a success response, got {other:?}"),
    }
}

/// C13, O83: frames the reader queued before the sink came are handed over first, in order, then
/// each later one; the sink's last call is the child's exit status, and nothing follows it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c13_o83_an_attached_sink_gets_queued_frames_first_then_new_ones_then_the_exit() {
    // Three replies at once (queued while nobody takes them), two more once a line arrives.
    let script = "for i in 1 2 3; do printf '{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{}}\\n' $i; done; \
                  read line; \
                  for i in 4 5; do printf '{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{}}\\n' $i; done; \
                  exit 3";
    let transport = StdioTransport::spawn(&sh(script)).unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let seen: Seen = Arc::default();
    let notify = Arc::new(tokio::sync::Notify::new());
    assert!(transport.attach_sink(keeping_sink(&seen, &notify)));
    wait_for_calls(&seen, &notify, 3).await;
    transport
        .send(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1}}\n")
        .await
        .unwrap();
    wait_for_calls(&seen, &notify, 6).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    assert_eq!(seen.len(), 6, "nothing follows the final error: {seen:?}");
    let ids: Vec<String> = seen[..5].iter().map(id_of).collect();
    assert_eq!(ids, ["1", "2", "3", "4", "5"]);
    match &seen[5] {
        Err(e) => assert_eq!(e.exit_status().and_then(|s| s.code()), Some(3), "{e:?}"),
        other => panic!("expected the exit, got {other:?}"),
    }
    // Frames went to the sink, so `recv` has nothing to give; a second sink is refused.
    assert_eq!(
        recv(&transport).await.unwrap_err(),
        TransportError::Attached
    );
    let notify2 = Arc::new(tokio::sync::Notify::new());
    assert!(!transport.attach_sink(keeping_sink(&Arc::default(), &notify2)));
    close(&transport).await;
}

/// `recv` first decides for the queue: a later sink is refused and `recv` keeps working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sink_is_refused_once_recv_took_the_frames() {
    let transport = StdioTransport::spawn(&echo_server()).unwrap();
    let line =
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":{}}}\n";
    transport.send(line).await.unwrap();
    assert_eq!(success(recv(&transport).await.unwrap()).0, "1");
    let notify = Arc::new(tokio::sync::Notify::new());
    assert!(!transport.attach_sink(keeping_sink(&Arc::default(), &notify)));
    transport.send(line).await.unwrap();
    assert_eq!(success(recv(&transport).await.unwrap()).0, "1");
    close(&transport).await;
}

/// C10, O83: close() releases an attached sink with `Closed` at once, not after the grace
/// periods of a child that ignores EOF and SIGTERM; the group still ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c10_o83_close_releases_an_attached_sink_with_closed_before_escalating() {
    // The EOF grace is the bound the release must beat: 2 s (not 300 ms) so that a loaded
    // machine's scheduling cannot look like a late release.
    const EOF_GRACE_MS: u64 = 2000;
    let command = stubborn_server().shutdown(fast((EOF_GRACE_MS, 300, 1000)));
    let transport = Arc::new(StdioTransport::spawn(&command).unwrap());
    let seen: Seen = Arc::default();
    let notify = Arc::new(tokio::sync::Notify::new());
    assert!(transport.attach_sink(keeping_sink(&seen, &notify)));
    // The "ready" log line.
    wait_for_calls(&seen, &notify, 1).await;
    let closing = {
        let transport = Arc::clone(&transport);
        tokio::spawn(async move { close(&transport).await })
    };
    let start = Instant::now();
    wait_for_calls(&seen, &notify, 2).await;
    // Events first: the close is still under way and nothing was killed yet (the shell and
    // its grandchild are alive; they ignore EOF and SIGTERM, so only SIGKILL ends them).
    assert!(!closing.is_finished(), "released before the close ended");
    let alive = live_group_members(transport.process_group());
    assert!(alive.len() >= 2, "released before the kill: {alive:?}");
    assert!(
        start.elapsed() < Duration::from_millis(EOF_GRACE_MS),
        "released only after {:?}",
        start.elapsed()
    );
    assert!(matches!(
        seen.lock().unwrap()[1],
        Err(TransportError::Closed)
    ));
    let report = closing.await.unwrap();
    assert_eq!(report.escalation, Escalation::Killed);
    assert!(report.group_ended);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        seen.lock().unwrap().len(),
        2,
        "nothing after the final error"
    );
}
