//! The `strict-mcp` binary on a pseudo-terminal (rexpect): `--interactive` answers the demo's
//! two-round `confirm` form (O98), the prompts and the final output byte for byte, and the
//! `--progress` bar is drawn only when stderr is a terminal (O105).
#![cfg(unix)]

use std::process::Command;

use rexpect::process::WaitStatus;
use rexpect::session::{spawn_with_options, PtySession};

const EXE: &str = env!("CARGO_BIN_EXE_strict-mcp");

/// Every expectation must be met within this (a debug build on a loaded machine); a hang
/// fails the test instead of blocking it.
const STEP_MS: u64 = 60_000;

fn spawn(args: &[&str]) -> PtySession {
    let mut command = Command::new(EXE);
    command
        .args(args)
        .env("TERM", "xterm")
        .env_remove("NO_COLOR");
    let options = rexpect::reader::Options::new()
        .timeout_ms(Some(STEP_MS))
        .strip_ansi_escape_codes(false);
    spawn_with_options(command, options).expect("spawn strict-mcp on a pty")
}

fn exit_code(session: &PtySession) -> i32 {
    match session.process().wait().expect("wait") {
        WaitStatus::Exited(_, code) => code,
        other => panic!("strict-mcp ended with {other:?}"),
    }
}

#[test]
fn o98_interactive_answers_the_confirm_form_on_a_terminal() {
    let mut s = spawn(&[
        "tools",
        "call",
        "confirm",
        "--demo",
        "--args",
        r#"{"action":"delete the draft"}"#,
        "--interactive",
    ]);
    // Round 1: the form's message, the action question, then the boolean with its default.
    s.exp_string(
        "The server asks: Really delete the draft?\r\nAnswer, decline or cancel? [A/d/c]: ",
    )
    .expect("first question");
    s.send_line("a").expect("answer");
    s.exp_string("Confirm* (yes/no) [false]: ")
        .expect("boolean field with its default");
    s.send_line("y").expect("answer");
    // Round 2 (a fresh request carrying the state): the note.
    s.exp_string(
        "The server asks: Add a note for the record.\r\nAnswer, decline or cancel? [A/d/c]: ",
    )
    .expect("second round");
    s.send_line("").expect("Enter: answer");
    s.exp_string("Note* (text): ").expect("string field");
    s.send_line("looks good").expect("answer");
    // rexpect's pty does not echo what is typed: the result is all that follows.
    let rest = s.exp_eof().expect("end");
    assert_eq!(
        rest,
        "{\r\n  \"action\": \"delete the draft\",\r\n  \"confirmed\": true,\r\n  \
         \"note\": \"looks good\"\r\n}\r\n"
    );
    assert_eq!(exit_code(&s), 0);
}

#[test]
fn o98_interactive_decline_ends_the_call_without_a_note() {
    let mut s = spawn(&[
        "tools",
        "call",
        "confirm",
        "--demo",
        "--args",
        r#"{"action":"x"}"#,
        "--interactive",
    ]);
    s.exp_string("Answer, decline or cancel? [A/d/c]: ")
        .expect("question");
    s.send_line("d").expect("decline");
    let rest = s.exp_eof().expect("end");
    assert_eq!(
        rest,
        "{\r\n  \"action\": \"x\",\r\n  \"confirmed\": false\r\n}\r\n"
    );
    assert_eq!(exit_code(&s), 0);
}

#[test]
fn o105_progress_is_a_bar_on_a_terminal() {
    let mut s = spawn(&[
        "tools",
        "call",
        "count",
        "--demo",
        "--args",
        r#"{"steps":3,"delay_ms":100}"#,
        "--progress",
    ]);
    let all = s.exp_eof().expect("end");
    // indicatif redraws one line in place; its last state is left, then the result below.
    assert!(all.contains("\r\x1b[2K"), "{all:?}");
    assert!(
        all.contains("[==============================] progress 3.0/3.0 step 3"),
        "{all:?}"
    );
    assert!(
        all.contains("[=========>                    ] progress 1.0/3.0 step 1"),
        "{all:?}"
    );
    assert!(
        all.ends_with("\r\n{\r\n  \"counted\": 3\r\n}\r\n"),
        "{all:?}"
    );
    // Not the plain lines of a non-terminal run (tests/cli_stdio.rs asserts those).
    assert!(!all.contains("progress 1.0/3.0 step 1\r\n"), "{all:?}");
    assert_eq!(exit_code(&s), 0);
}

#[test]
fn o99_interactive_declares_form_and_url_and_asks_url_consent() {
    // A fake server that logs what it receives: one URL-mode input round, then a result.
    let dir = std::env::temp_dir().join(format!("strict-mcp-pty-url-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let log = dir.join("received.log");
    let _ = std::fs::remove_file(&log);
    let script = format!(
        r#"read a; printf '%s\n' "$a" >> '{log}'
printf '%s\n' '{{"jsonrpc":"2.0","id":1,"result":{{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{{"tools":{{}}}}}}}}'
read b; printf '%s\n' "$b" >> '{log}'
printf '%s\n' '{{"jsonrpc":"2.0","id":2,"result":{{"resultType":"complete","tools":[{{"name":"t","inputSchema":{{"type":"object"}}}}]}}}}'
read c; printf '%s\n' "$c" >> '{log}'
printf '%s\n' '{{"jsonrpc":"2.0","id":3,"result":{{"resultType":"input_required","inputRequests":{{"login":{{"method":"elicitation/create","params":{{"mode":"url","message":"Sign in first","url":"https://auth.example.test/start?x=1","elicitationId":"e1"}}}}}},"requestState":"st"}}}}'
read d; printf '%s\n' "$d" >> '{log}'
printf '%s\n' '{{"jsonrpc":"2.0","id":4,"result":{{"resultType":"complete","content":[{{"type":"text","text":"signed in"}}]}}}}'
read e
"#,
        log = log.display()
    );
    let script_path = dir.join("fake.sh");
    std::fs::write(&script_path, script).expect("write script");
    let server = format!("sh '{}'", script_path.display());
    let mut s = spawn(&["tools", "call", "t", "--stdio", &server, "--interactive"]);
    s.exp_string(
        "The server asks you to open a URL: Sign in first\r\n  \
         URL: https://auth.example.test/start?x=1\r\n  \
         (strict-mcp does not open it; open it yourself if you agree)\r\n\
         Do you consent to open this URL? [y/N]: ",
    )
    .expect("URL consent question");
    s.send_line("y").expect("consent");
    assert_eq!(s.exp_eof().expect("end"), "signed in\r\n");
    assert_eq!(exit_code(&s), 0);
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .expect("log")
        .lines()
        .map(|l| serde_json::from_str(l).expect("logged JSON"))
        .collect();
    assert_eq!(lines.len(), 4);
    let caps = "io.modelcontextprotocol/clientCapabilities";
    // O99: this mode can honour both elicitation modes, and declares exactly them.
    assert_eq!(
        lines[2]["params"]["_meta"][caps],
        serde_json::json!({"elicitation": {"form": {}, "url": {}}})
    );
    assert_eq!(lines[3]["params"]["requestState"], "st");
    assert_eq!(
        lines[3]["params"]["inputResponses"],
        serde_json::json!({"login": {"action": "accept"}})
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn o97_an_unanswered_terminal_question_exits_6() {
    let mut s = spawn(&[
        "tools",
        "call",
        "confirm",
        "--demo",
        "--args",
        r#"{"action":"x"}"#,
        "--interactive",
    ]);
    s.exp_string("Answer, decline or cancel? [A/d/c]: ")
        .expect("question");
    // Ctrl-D on an empty line: end of input on the terminal.
    s.send_control('d').expect("EOF");
    let rest = s.exp_eof().expect("end");
    assert!(
        rest.contains("error: the terminal closed before \"the action\" was answered\r\n"),
        "{rest:?}"
    );
    // The input request is printed losslessly, then the exit class says why.
    assert!(
        rest.contains("\"resultType\": \"input_required\""),
        "{rest:?}"
    );
    assert!(
        rest.contains("input required: the server asks for more input after 0 answered round(s)"),
        "{rest:?}"
    );
    assert_eq!(exit_code(&s), 6);
}
