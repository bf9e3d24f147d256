//! The `strict-mcp` binary against its demo server over stdio (and small fake servers written
//! in `sh`): every subcommand, every exit code, the lossless records, MRTR through a response
//! file, and Ctrl-C / time-out leaving no child behind (O91–O105).
#![cfg(unix)]

#[path = "support/cli.rs"]
mod cli;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use cli::{code, records, run_with_stdin, stderr, stdout, wait_bounded, EXE, RUN_BOUND};
use serde_json::{json, Value};

/// One run whose stdin is a pipe closed at once (as every run here was before the runs moved
/// to `support/cli.rs`).
fn run(args: &[&str]) -> Output {
    run_with_stdin(args, None)
}

fn kinds(records: &[Value]) -> Vec<(String, String)> {
    records
        .iter()
        .map(|r| {
            (
                r["kind"].as_str().unwrap_or_default().to_owned(),
                r["method"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("strict-mcp-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write file");
    path.display().to_string()
}

/// The demo server as an explicit `--stdio` command line.
fn demo_cmd(extra: &str) -> String {
    format!("'{EXE}' demo serve {extra}")
}

#[test]
fn o91_readme_first_command_prints_the_sum() {
    let o = run(&[
        "tools",
        "call",
        "--demo",
        "add",
        "--args",
        r#"{"a":2,"b":3}"#,
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o), "{\n  \"sum\": 5\n}\n");
}

#[test]
fn o93_big_integers_travel_byte_exact_both_ways() {
    let o = run(&[
        "tools",
        "call",
        "add",
        "--demo",
        "--json",
        "--args",
        r#"{"a":123456789012345678901234567890,"b":-1}"#,
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let line = stdout(&o)
        .lines()
        .find(|l| l.contains(r#""method":"tools/call""#))
        .expect("call record")
        .to_owned();
    assert!(
        line.contains(r#""structuredContent":{"value":{"sum":123456789012345678901234567889}}"#),
        "{line}"
    );
}

#[test]
fn o93_duplicate_keys_and_non_objects_are_usage_errors() {
    let o = run(&[
        "tools",
        "call",
        "add",
        "--demo",
        "--args",
        r#"{"a":1,"a":2}"#,
    ]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("duplicate member name"),
        "{}",
        stderr(&o)
    );
    assert!(o.stdout.is_empty());
    let o = run(&["tools", "call", "add", "--demo", "--args", "[1,2]"]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("must be a JSON object"),
        "{}",
        stderr(&o)
    );
    let o = run(&["tools", "call", "add", "--demo", "--args", "{"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("not valid JSON"), "{}", stderr(&o));
}

#[test]
fn o93_arguments_from_file_and_stdin() {
    let dir = temp_dir("args");
    let file = write(&dir, "args.json", r#"{"a": 40, "b": 2}"#);
    let o = run(&["tools", "call", "add", "--demo", "--args-file", &file]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o), "{\n  \"sum\": 42\n}\n");
    let o = run_with_stdin(
        &["tools", "call", "upper", "--demo", "--args", "-"],
        Some(r#"{"text":"abc"}"#),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o), "{\n  \"text\": \"ABC\"\n}\n");
    let dup = write(&dir, "dup.json", r#"{"text":"a","text":"b"}"#);
    let o = run(&["tools", "call", "upper", "--demo", "--args-file", &dup]);
    assert_eq!(code(&o), 2);
    // Both sources at once is clap's usage error.
    let o = run(&[
        "tools",
        "call",
        "upper",
        "--demo",
        "--args",
        "{}",
        "--args-file",
        &dup,
    ]);
    assert_eq!(code(&o), 2);
}

#[test]
fn o96_json_records_are_raw_ordered_pages() {
    let o = run(&["tools", "list", "--demo", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let recs = records(&o);
    assert_eq!(
        kinds(&recs),
        vec![
            ("result".to_owned(), "server/discover".to_owned()),
            ("page".to_owned(), "tools/list".to_owned())
        ]
    );
    assert_eq!(
        recs[0]["result"]["supportedVersions"],
        serde_json::json!(["2026-07-28"])
    );
    let page = &recs[1];
    assert_eq!(page["page"], 1);
    assert!(page.get("error").is_none());
    let result = &page["result"];
    // The whole result: cache hints, _meta and every tool's schemas are kept.
    assert_eq!(result["resultType"], "complete");
    assert!(result.get("ttlMs").is_some() && result.get("cacheScope").is_some());
    assert!(result["_meta"]["io.modelcontextprotocol/serverInfo"].is_object());
    let names: Vec<&str> = result["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["add", "confirm", "count", "upper"]);
    assert!(result["tools"][0]["inputSchema"]["properties"]["a"].is_object());
    assert!(result["tools"][0]["outputSchema"].is_object());
}

#[test]
fn o95_pagination_followed_unless_single_page() {
    let server = demo_cmd("--page-size 3");
    let o = run(&["tools", "list", "--stdio", &server, "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let recs = records(&o);
    let pages: Vec<&Value> = recs.iter().filter(|r| r["kind"] == "page").collect();
    assert_eq!(pages.len(), 2);
    assert_eq!(
        (pages[0]["page"].as_u64(), pages[1]["page"].as_u64()),
        (Some(1), Some(2))
    );
    assert_eq!(
        pages[0]["result"]["tools"].as_array().map(Vec::len),
        Some(3)
    );
    assert!(pages[0]["result"]["nextCursor"].is_string());
    assert_eq!(
        pages[1]["result"]["tools"].as_array().map(Vec::len),
        Some(1)
    );
    assert!(pages[1]["result"].get("nextCursor").is_none());

    let o = run(&["tools", "list", "--stdio", &server, "--single-page"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("count") && !out.contains("upper"), "{out}");
    assert!(out.contains("(more: nextCursor \""), "{out}");
}

#[test]
fn o97_exit_codes_per_outcome_class() {
    // 1: the tool's own failure (schema-invalid arguments are a tool failure here).
    let o = run(&[
        "tools",
        "call",
        "add",
        "--demo",
        "--args",
        r#"{"a":"x","b":1}"#,
    ]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("\"invalid_arguments\""),
        "{}",
        stdout(&o)
    );
    // 2: no server chosen, two servers chosen, clap's own error.
    assert_eq!(code(&run(&["tools", "list"])), 2);
    assert_eq!(
        code(&run(&[
            "tools",
            "list",
            "--demo",
            "--url",
            "http://127.0.0.1:9/mcp"
        ])),
        2
    );
    assert_eq!(code(&run(&["tools", "frobnicate"])), 2);
    // 3: the server cannot start.
    let o = run(&["tools", "list", "--stdio", "/nonexistent/strict-mcp-server"]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    // 4: a JSON-RPC error (unknown tool: the name is never rewritten).
    let o = run(&["tools", "call", "nope", "--demo"]);
    assert_eq!(code(&o), 4);
    assert!(stderr(&o).contains("-32602"), "{}", stderr(&o));
}

/// A fake server in `sh`: answers discovery with `discover`, then `tools/list` with `list`.
fn fake_server(dir: &Path, discover: &str, list: &str) -> String {
    let script = format!(
        "read a\nprintf '%s\\n' '{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{discover}}}'\n\
         read b\nprintf '%s\\n' '{{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{list}}}'\nread c\n"
    );
    let path = write(dir, "fake.sh", &script);
    format!("sh '{path}'")
}

#[test]
fn o97_unrecognised_result_type_is_exit_5_and_recorded_raw() {
    let dir = temp_dir("bogus");
    let server = fake_server(
        &dir,
        r#"{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}}}"#,
        r#"{"resultType":"bogus","tools":[]}"#,
    );
    let o = run(&["tools", "list", "--stdio", &server, "--json"]);
    assert_eq!(code(&o), 5, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("unrecognised resultType `bogus`"),
        "{}",
        stderr(&o)
    );
    let last = stdout(&o).lines().last().unwrap_or_default().to_owned();
    assert_eq!(
        last,
        r#"{"kind":"page","method":"tools/list","page":1,"result":{"resultType":"bogus","tools":[]}}"#
    );
}

#[test]
fn o94_server_without_2026_07_28_lists_its_versions() {
    let dir = temp_dir("versions");
    let server = fake_server(
        &dir,
        r#"{"supportedVersions":["2025-11-25","2025-06-18"],"capabilities":{}}"#,
        "{}",
    );
    let o = run(&["discover", "--stdio", &server]);
    assert_eq!(code(&o), 4);
    let err = stderr(&o);
    assert!(err.contains(r#"["2025-11-25", "2025-06-18"]"#), "{err}");
    assert!(err.contains("2026-07-28"), "{err}");
}

#[test]
fn o98_responses_file_answers_two_rounds() {
    let dir = temp_dir("mrtr");
    let file = write(
        &dir,
        "responses.json",
        r#"{"rounds": [
            {"confirm": {"action": "accept", "content": {"confirm": true}}},
            {"note": {"action": "accept", "content": {"note": "ship it"}}}
        ]}"#,
    );
    let args = r#"{"action":"deploy"}"#;
    let o = run(&[
        "tools",
        "call",
        "confirm",
        "--demo",
        "--args",
        args,
        "--responses",
        &file,
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "{\n  \"action\": \"deploy\",\n  \"confirmed\": true,\n  \"note\": \"ship it\"\n}\n"
    );
    let o = run(&[
        "tools",
        "call",
        "confirm",
        "--demo",
        "--args",
        args,
        "--responses",
        &file,
        "--json",
    ]);
    let recs = records(&o);
    let calls: Vec<&str> = recs
        .iter()
        .filter(|r| r["method"] == "tools/call")
        .map(|r| r["kind"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(calls, ["input_required", "input_required", "result"]);
    // Each round asked something new, under its own sealed state.
    let states: Vec<&str> = recs
        .iter()
        .filter(|r| r["kind"] == "input_required")
        .map(|r| r["result"]["requestState"].as_str().expect("requestState"))
        .collect();
    assert_eq!(states.len(), 2);
    assert_ne!(states[0], states[1]);
}

#[test]
fn o98_rounds_running_out_print_the_input_request_and_exit_6() {
    let dir = temp_dir("mrtr-short");
    let one = write(
        &dir,
        "one.json",
        r#"{"rounds":[{"confirm":{"action":"accept","content":{"confirm":true}}}]}"#,
    );
    let o = run(&[
        "tools",
        "call",
        "confirm",
        "--demo",
        "--args",
        r#"{"action":"x"}"#,
        "--responses",
        &one,
        "--json",
    ]);
    assert_eq!(code(&o), 6, "{}", stderr(&o));
    let recs = records(&o);
    let last = recs.last().expect("a record");
    assert_eq!(last["kind"], "input_required");
    assert_eq!(last["result"]["resultType"], "input_required");
    assert_eq!(
        last["result"]["inputRequests"]["note"]["method"],
        "elicitation/create"
    );
    assert!(last["result"]["requestState"].is_string());
    // Bad responses files are usage errors.
    let bad = write(&dir, "bad.json", r#"{"rounds":{}}"#);
    let o = run(&["tools", "call", "confirm", "--demo", "--responses", &bad]);
    assert_eq!(code(&o), 2);
    let dup = write(&dir, "dup.json", r#"{"rounds":[],"rounds":[]}"#);
    assert_eq!(
        code(&run(&[
            "tools",
            "call",
            "confirm",
            "--demo",
            "--responses",
            &dup
        ])),
        2
    );
}

#[test]
fn o98_response_rounds_bound_at_and_past_the_limit() {
    let dir = temp_dir("mrtr-bound");
    let round = r#"{"confirm":{"action":"decline"}}"#;
    let rounds = |n: usize| format!(r#"{{"rounds":[{}]}}"#, vec![round; n].join(","));
    // MAX_RESPONSE_ROUNDS = the client's MAX_DRIVEN_ROUNDS = 10.
    let at = write(&dir, "at.json", &rounds(10));
    let o = run(&[
        "tools",
        "call",
        "confirm",
        "--demo",
        "--args",
        r#"{"action":"x"}"#,
        "--responses",
        &at,
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("\"confirmed\": false"),
        "{}",
        stdout(&o)
    );
    let past = write(&dir, "past.json", &rounds(11));
    let o = run(&[
        "tools",
        "call",
        "confirm",
        "--demo",
        "--args",
        r#"{"action":"x"}"#,
        "--responses",
        &past,
    ]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("at most 10 rounds"), "{}", stderr(&o));
}

#[test]
fn o99_non_interactive_declares_no_elicitation() {
    let o = run(&[
        "tools",
        "call",
        "confirm",
        "--demo",
        "--args",
        r#"{"action":"x"}"#,
    ]);
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("-32021"), "{err}");
    assert!(
        err.contains(r#""requiredCapabilities":{"elicitation":{"form":{}}}"#),
        "{err}"
    );
    assert!(err.contains("--responses FILE"), "{err}");
}

#[test]
fn o101_server_stderr_is_diagnostics_not_failure() {
    let server = format!("sh -c 'echo warming-up >&2; exec \"$0\" demo serve' '{EXE}'");
    let o = run(&[
        "tools",
        "call",
        "add",
        "--stdio",
        &server,
        "--args",
        r#"{"a":1,"b":1}"#,
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o), "{\n  \"sum\": 2\n}\n");
    assert!(stderr(&o).contains("  | warming-up"), "{}", stderr(&o));
}

#[test]
fn o92_env_and_cwd_reach_the_child() {
    let dir = temp_dir("envcwd");
    let server =
        format!("sh -c 'echo \"var=$DEMO_VAR dir=$(pwd)\" >&2; exec \"$0\" demo serve' '{EXE}'");
    let o = run(&[
        "discover",
        "--stdio",
        &server,
        "--env",
        "DEMO_VAR=hello",
        "--cwd",
        &dir.display().to_string(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let canonical = dir.canonicalize().expect("canonical");
    assert!(
        stderr(&o).contains(&format!("var=hello dir={}", canonical.display())),
        "{}",
        stderr(&o)
    );
    assert_eq!(code(&run(&["discover", "--demo", "--env", "=x"])), 2);
}

#[test]
fn o91_discover_resources_prompts_complete() {
    let o = run(&["discover", "--demo"]);
    assert_eq!(code(&o), 0);
    let out = stdout(&o);
    assert!(out.starts_with("server: strict-mcp-demo "), "{out}");
    assert!(out.contains("versions: 2026-07-28\n"), "{out}");

    let o = run(&["resources", "list", "--demo"]);
    assert_eq!(
        stdout(&o),
        "URI            NAME    MIME TYPE\ndemo://readme  readme  text/plain\n"
    );
    let o = run(&["resources", "templates", "--demo"]);
    assert_eq!(
        stdout(&o),
        "URI TEMPLATE            NAME      MIME TYPE\ndemo://greeting/{name}  greeting  text/plain\n"
    );
    let o = run(&["resources", "read", "demo://greeting/Bob", "--demo"]);
    assert_eq!((code(&o), stdout(&o)), (0, "Hello, Bob!\n".to_owned()));
    let o = run(&["resources", "read", "demo://nothing", "--demo"]);
    assert_eq!(code(&o), 4, "{}", stderr(&o));

    let o = run(&["prompts", "list", "--demo"]);
    assert!(stdout(&o).contains("greet  name*"), "{}", stdout(&o));
    let o = run(&[
        "prompts",
        "get",
        "greet",
        "--demo",
        "--args",
        r#"{"name":"Ada"}"#,
    ]);
    assert_eq!(
        (code(&o), stdout(&o)),
        (0, "user: Say hello to Ada.\n".to_owned())
    );

    let o = run(&[
        "complete",
        "--demo",
        "--prompt",
        "greet",
        "--argument",
        "name",
        "--value",
        "a",
    ]);
    assert_eq!((code(&o), stdout(&o)), (0, "Ada\nAlan\n".to_owned()));
    let o = run(&[
        "complete",
        "--demo",
        "--template",
        "demo://greeting/{name}",
        "--argument",
        "name",
        "--value",
        "g",
    ]);
    assert_eq!((code(&o), stdout(&o)), (0, "Grace\n".to_owned()));
}

#[test]
fn o105_digest_is_stable_and_recorded() {
    let digest = |o: &Output| {
        stdout(o)
            .lines()
            .find_map(|l| l.strip_prefix("digest: ").map(str::to_owned))
            .expect("digest line")
    };
    let a = run(&["tools", "list", "--demo", "--digest"]);
    let b = run(&["tools", "list", "--demo", "--digest"]);
    assert_eq!(digest(&a).len(), 64);
    assert_eq!(digest(&a), digest(&b));
    let o = run(&["tools", "list", "--demo", "--digest", "--json"]);
    let recs = records(&o);
    let last = recs.last().expect("record");
    assert_eq!(last["kind"], "digest");
    assert_eq!(last["digest"].as_str(), Some(digest(&a).as_str()));
}

#[test]
fn o105_progress_and_log_level_on_stderr() {
    let o = run(&[
        "tools",
        "call",
        "count",
        "--demo",
        "--args",
        r#"{"steps":2,"delay_ms":300}"#,
        "--progress",
        "--log-level",
        "info",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o), "{\n  \"counted\": 2\n}\n");
    let err = stderr(&o);
    // Not a terminal: plain lines.
    assert!(err.contains("progress 1.0/2.0 step 1\n"), "{err}");
    assert!(err.contains("[server info count] {\"step\":1}\n"), "{err}");
    assert!(!err.contains('\r'), "{err}");
}

#[test]
fn o91_compact_mode_never_rewrites_names() {
    let server = demo_cmd("--mode compact");
    let o = run(&["tools", "list", "--stdio", &server]);
    let out = stdout(&o);
    assert!(
        out.contains("search_tools") && out.contains("call_tool"),
        "{out}"
    );
    assert!(!out.contains("\nadd "), "{out}");
    let o = run(&[
        "tools",
        "call",
        "add",
        "--stdio",
        &server,
        "--args",
        r#"{"a":1,"b":2}"#,
    ]);
    assert_eq!(code(&o), 4, "{}", stderr(&o));
}

#[test]
fn listen_opens_and_ends_after_its_duration() {
    let o = run(&["listen", "--demo", "--tools", "--for", "1", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let recs = records(&o);
    let listening = recs
        .iter()
        .find(|r| r["kind"] == "listening")
        .expect("listening record");
    assert_eq!(
        listening["effective"],
        serde_json::json!({"toolsListChanged": true})
    );
    assert_eq!(code(&run(&["listen", "--demo", "--for", "0"])), 2);
}

#[test]
fn help_version_and_completions() {
    let o = run(&["--help"]);
    assert_eq!(code(&o), 0);
    let help = stdout(&o);
    for line in [
        "  0    success",
        "  6    input required",
        "  130  interrupted",
        "--responses FILE",
    ] {
        assert!(help.contains(line), "{line:?} missing from --help");
    }
    let o = run(&["--version"]);
    assert_eq!(
        stdout(&o),
        format!("strict-mcp {}\n", env!("CARGO_PKG_VERSION"))
    );
    let o = run(&["completions", "bash"]);
    assert_eq!(code(&o), 0);
    assert!(
        stdout(&o).contains("_strict__mcp()"),
        "bash completion function"
    );
}

#[test]
fn demo_http_refuses_non_loopback_addresses() {
    let o = run(&["demo", "serve", "--http", "0.0.0.0:0"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("loopback"), "{}", stderr(&o));
}

/// Whether `pid` is still a live (non-zombie) process.
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or_default().trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
    }
}

/// Starts a long `count` call whose server writes its pid to a file; returns the CLI child,
/// the server's pid and a reader of the CLI's stderr.
fn long_call(dir: &Path, extra: &[&str]) -> (Child, u32, BufReader<std::process::ChildStderr>) {
    let pidfile = dir.join("server.pid");
    let server = format!(
        "sh -c 'echo $$ > \"$1\"; exec \"$0\" demo serve' '{EXE}' '{}'",
        pidfile.display()
    );
    let mut args = vec![
        "tools",
        "call",
        "count",
        "--stdio",
        &server,
        "--progress",
        "--args",
        r#"{"steps":100,"delay_ms":200}"#,
    ];
    args.extend_from_slice(extra);
    let mut child = Command::new(EXE)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut err = BufReader::new(child.stderr.take().expect("stderr"));
    // The call is running once its first progress line arrives.
    let mut line = String::new();
    let start = Instant::now();
    while !line.starts_with("progress ") {
        line.clear();
        assert!(
            err.read_line(&mut line).expect("stderr") > 0,
            "no progress before EOF"
        );
        assert!(start.elapsed() < RUN_BOUND, "no progress");
    }
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .expect("pid file")
        .trim()
        .parse()
        .expect("pid");
    assert!(alive(pid));
    (child, pid, err)
}

fn assert_gone(pid: u32) {
    let start = Instant::now();
    while alive(pid) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "server {pid} outlived the CLI"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn o102_ctrl_c_cancels_and_leaves_no_child() {
    let dir = temp_dir("sigint");
    let (child, pid, mut err) = long_call(&dir, &[]);
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).expect("stderr");
    let o = wait_bounded(child);
    assert_eq!(code(&o), 130, "{rest}");
    assert!(
        rest.contains("interrupted: 1 cancellation(s) sent"),
        "{rest}"
    );
    assert_gone(pid);
}

#[test]
fn o102_timeout_cancels_and_leaves_no_child() {
    let dir = temp_dir("timeout");
    let (child, pid, mut err) = long_call(&dir, &["--timeout", "2"]);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).expect("stderr");
    let o = wait_bounded(child);
    assert_eq!(code(&o), 3, "{rest}");
    assert!(rest.contains("no reply to tools/call within 2s"), "{rest}");
    assert_gone(pid);
}

#[test]
fn timeout_bounds_at_and_past_the_limit() {
    // 600 s (MAX_DEADLINE) is accepted, 601 and 0 are usage errors.
    let o = run(&[
        "tools",
        "call",
        "add",
        "--demo",
        "--timeout",
        "600",
        "--args",
        r#"{"a":1,"b":1}"#,
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        code(&run(&["tools", "list", "--demo", "--timeout", "601"])),
        2
    );
    assert_eq!(
        code(&run(&["tools", "list", "--demo", "--timeout", "0"])),
        2
    );
}

#[test]
fn demo_add_digit_bound_at_and_past_the_limit() {
    // MAX_ADD_DIGITS = 300.
    let at = format!(r#"{{"a":{},"b":0}}"#, "9".repeat(300));
    let o = run(&["tools", "call", "add", "--demo", "--json", "--args", &at]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains(&format!(r#"{{"sum":{}}}"#, "9".repeat(300))));
    let past = format!(r#"{{"a":1{},"b":0}}"#, "0".repeat(300));
    let o = run(&["tools", "call", "add", "--demo", "--args", &past]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
}

#[test]
fn o98_retries_use_fresh_ids_same_arguments_and_the_exact_state_on_the_wire() {
    // A fake server that logs what it receives: one input round, then a result.
    let dir = temp_dir("wire");
    let log = dir.join("received.log");
    let state = r#"opaque/state+1=\u00e9"#;
    let script = format!(
        r#"read a; printf '%s\n' "$a" >> '{log}'
printf '%s\n' '{{"jsonrpc":"2.0","id":1,"result":{{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{{"tools":{{}}}}}}}}'
read b; printf '%s\n' "$b" >> '{log}'
printf '%s\n' '{{"jsonrpc":"2.0","id":2,"result":{{"resultType":"complete","tools":[{{"name":"t","inputSchema":{{"type":"object"}}}}]}}}}'
read c; printf '%s\n' "$c" >> '{log}'
printf '%s\n' '{{"jsonrpc":"2.0","id":3,"result":{{"resultType":"input_required","inputRequests":{{"q":{{"method":"elicitation/create","params":{{"mode":"form","message":"?","requestedSchema":{{"type":"object","properties":{{}}}}}}}}}},"requestState":"{state}"}}}}'
read d; printf '%s\n' "$d" >> '{log}'
printf '%s\n' '{{"jsonrpc":"2.0","id":4,"result":{{"resultType":"complete","content":[{{"type":"text","text":"done"}}]}}}}'
read e
"#,
        log = log.display()
    );
    let server = format!("sh '{}'", write(&dir, "fake.sh", &script));
    let responses = write(
        &dir,
        "r.json",
        r#"{"rounds":[{"q":{"action":"accept","content":{}}}]}"#,
    );
    let args = r#"{"n":123456789012345678901234567890}"#;
    let o = run(&[
        "tools",
        "call",
        "t",
        "--stdio",
        &server,
        "--args",
        args,
        "--responses",
        &responses,
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o), "done\n");
    let lines: Vec<Value> = std::fs::read_to_string(&log)
        .expect("log")
        .lines()
        .map(|l| serde_json::from_str(l).expect("logged JSON"))
        .collect();
    assert_eq!(lines.len(), 4);
    let (first, retry) = (&lines[2], &lines[3]);
    assert_eq!(
        (first["method"].as_str(), retry["method"].as_str()),
        (Some("tools/call"), Some("tools/call"))
    );
    assert_ne!(first["id"], retry["id"], "every retry has a fresh id");
    assert_eq!(first["params"]["name"], "t");
    assert_eq!(retry["params"]["name"], "t");
    // Arguments byte-exact in both rounds (checked on the raw lines, not the parsed values).
    let raw = std::fs::read_to_string(&log).expect("log");
    let raw_lines: Vec<&str> = raw.lines().collect();
    assert!(
        raw_lines[2].contains(r#""arguments":{"n":123456789012345678901234567890}"#),
        "{}",
        raw_lines[2]
    );
    assert!(
        raw_lines[3].contains(r#""arguments":{"n":123456789012345678901234567890}"#),
        "{}",
        raw_lines[3]
    );
    assert!(first["params"].get("requestState").is_none());
    assert_eq!(retry["params"]["requestState"], "opaque/state+1=\u{e9}");
    assert_eq!(
        retry["params"]["inputResponses"],
        serde_json::json!({"q": {"action": "accept", "content": {}}})
    );
    // O99: elicitation declared because a response file can answer forms; never URL mode.
    let caps = &first["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"];
    assert_eq!(caps, &serde_json::json!({"elicitation": {"form": {}}}));
    // Without a response file nothing is declared.
    let o = run(&["tools", "call", "t", "--stdio", &server, "--args", args]);
    assert_eq!(code(&o), 6, "{}", stderr(&o));
    let raw = std::fs::read_to_string(&log).expect("log");
    let last_call: Value =
        serde_json::from_str(raw.lines().nth(6).expect("second run's call")).expect("json");
    assert_eq!(
        last_call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"],
        serde_json::json!({})
    );
}

#[test]
fn check_passes_on_the_demo_over_stdio_with_evidence() {
    let o = run(&[
        "check",
        "--demo",
        "--json",
        "--mrtr-tool",
        "confirm",
        "--mrtr-args",
        r#"{"action":"audit"}"#,
    ]);
    assert_eq!(code(&o), 0, "{}\n{}", stdout(&o), stderr(&o));
    let recs = records(&o);
    let rules: Vec<(&str, &str, &str, bool, Option<i64>)> = recs
        .iter()
        .map(|r| {
            assert_eq!(r["kind"], "check");
            (
                r["rule"].as_str().unwrap_or_default(),
                r["class"].as_str().unwrap_or_default(),
                r["requirement"].as_str().unwrap_or_default(),
                r["pass"].as_bool().unwrap_or_default(),
                r["answer"]["code"].as_i64(),
            )
        })
        .collect();
    assert_eq!(
        rules,
        vec![
            ("discover-offers-2026-07-28", "must", "B16", true, None),
            (
                "unsupported-version-is-32022",
                "must",
                "B14",
                true,
                Some(-32022)
            ),
            ("unknown-method-is-32601", "must", "A14", true, Some(-32601)),
            ("batch-rejected", "must", "A21", true, Some(-32600)),
            (
                "duplicate-keys-rejected",
                "policy",
                "O36",
                true,
                Some(-32600)
            ),
            (
                "id-over-256-bytes-rejected",
                "policy",
                "O37",
                true,
                Some(-32600)
            ),
            (
                "method-over-256-bytes-rejected",
                "policy",
                "O37",
                true,
                Some(-32600)
            ),
            ("pages-chain", "must", "E4", true, None),
            ("list-cache-hints", "must", "H1", true, None),
            ("input-schema-is-object", "must", "E5", true, None),
            ("schema-dialect-2020-12", "policy", "E19", true, None),
            (
                "invalid-cursor-is-32602",
                "should",
                "E4",
                true,
                Some(-32602)
            ),
            ("tampered-state-refused", "must", "X21", true, Some(-32602)),
            ("missing-meta-is-32602", "must", "B3", true, Some(-32602)),
            ("initialize-is-unknown", "must", "A14", true, Some(-32601)),
            (
                "frame-over-2-mib-rejected",
                "policy",
                "O36",
                true,
                Some(-32600)
            ),
        ]
    );
    let o = run(&["check", "--demo"]);
    assert!(stdout(&o).starts_with("RULE "), "{}", stdout(&o));
}

#[test]
fn check_exit_7_when_a_must_rule_fails_and_loopback_only() {
    // A server that answers every line with the same discovery result, always as id 1.
    let dir = temp_dir("check-fake");
    let script = "while read l; do printf '%s\\n' '{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"resultType\":\"complete\",\"supportedVersions\":[\"2026-07-28\"],\"capabilities\":{}}}'; done\n";
    let server = format!("sh '{}'", write(&dir, "yes.sh", script));
    let o = run(&["check", "--stdio", &server, "--json", "--timeout", "1"]);
    assert_eq!(code(&o), 7, "{}", stderr(&o));
    let recs = records(&o);
    assert_eq!(recs[0]["pass"], true);
    let failed: Vec<&str> = recs
        .iter()
        .filter(|r| r["pass"] == false)
        .map(|r| r["rule"].as_str().unwrap_or_default())
        .collect();
    assert!(
        failed.contains(&"unsupported-version-is-32022"),
        "{failed:?}"
    );
    assert!(failed.contains(&"batch-rejected"), "{failed:?}");
    // Its answers carry id 1 only: an answer to another id is never taken for this probe's.
    assert_eq!(
        recs[1]["answer"],
        serde_json::json!({"result": false, "none": "timed out"})
    );
    // Remote hosts are refused before any connection (nothing is dialled).
    let o = run(&["check", "--url", "http://example.invalid/mcp"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("--allow-remote"), "{}", stderr(&o));
    assert_eq!(code(&run(&["check"])), 2);
}

#[test]
fn check_skipped_notification_bound_at_and_past_the_limit() {
    // MAX_SKIPPED_LINES = 64 lines read per answer: 63 notifications then the response is
    // found; 64 notifications push the response past the bound.
    let dir = temp_dir("check-skip");
    let server = |n: usize| {
        let script = format!(
            "while read l; do i=0; while [ $i -lt {n} ]; do printf '%s\\n' '{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{{\"level\":\"info\",\"data\":1}}}}'; i=$((i+1)); done; \
             printf '%s\\n' '{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{\"resultType\":\"complete\",\"supportedVersions\":[\"2026-07-28\"],\"capabilities\":{{}}}}}}'; done\n"
        );
        format!("sh '{}'", write(&dir, &format!("skip{n}.sh"), &script))
    };
    let first = |o: &Output| records(o).first().cloned().expect("first record");
    let o = run(&["check", "--stdio", &server(63), "--json", "--timeout", "5"]);
    assert_eq!(first(&o)["pass"], true, "{}", stdout(&o));
    let o = run(&["check", "--stdio", &server(64), "--json", "--timeout", "5"]);
    let r = first(&o);
    assert_eq!(r["pass"], false, "{}", stdout(&o));
    assert_eq!(r["answer"]["none"], "no response among the lines read");
}

/// A pager in `sh`: every request answered by its id; `tools/list` pages carry a fresh
/// cursor until the page with id `last` (the audit's pages are ids 100, 101, …); an invalid
/// cursor is -32602; anything else gets a discovery result.
fn pager(dir: &Path, last: usize) -> String {
    let script = format!(
        r#"while read l; do
  id=$(printf '%s' "$l" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p'); [ -z "$id" ] && id=null
  case "$l" in
    *not-a-cursor*) printf '{{"jsonrpc":"2.0","id":%s,"error":{{"code":-32602,"message":"bad cursor"}}}}\n' "$id";;
    *'"tools/list"'*) next=''; [ "$id" -lt {last} ] && next=',"nextCursor":"c'$id'"'
      printf '{{"jsonrpc":"2.0","id":%s,"result":{{"resultType":"complete","ttlMs":0,"cacheScope":"public","tools":[]%s}}}}\n' "$id" "$next";;
    *) printf '{{"jsonrpc":"2.0","id":%s,"result":{{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{{}}}}}}\n' "$id";;
  esac
done
"#
    );
    format!("sh '{}'", write(dir, &format!("pager{last}.sh"), &script))
}

/// The record of `rule` in a check run.
fn verdict_of(o: &Output, rule: &str) -> Value {
    records(o)
        .into_iter()
        .find(|r| r["rule"] == rule)
        .unwrap_or_else(|| panic!("no verdict {rule}: {}", stdout(o)))
}

#[test]
fn e4_check_pages_chain_at_max_pages_and_one_past() {
    // check::MAX_PAGES = 50: a list that ends on its 50th page passes, one of 51 pages fails.
    let dir = temp_dir("check-pages");
    let o = run(&["check", "--stdio", &pager(&dir, 149), "--json"]);
    let at = verdict_of(&o, "pages-chain");
    assert_eq!(at["pass"], true, "{at}");
    assert_eq!(
        at["request"],
        "tools/list, following nextCursor (50 page(s))"
    );
    assert_eq!(verdict_of(&o, "list-cache-hints")["pass"], true);
    assert_eq!(verdict_of(&o, "invalid-cursor-is-32602")["pass"], true);
    let o = run(&["check", "--stdio", &pager(&dir, 150), "--json"]);
    let past = verdict_of(&o, "pages-chain");
    assert_eq!(past["pass"], false, "{past}");
    assert_eq!(past["answer"]["note"], "no last page within 50 pages");
    assert_eq!(code(&o), 7);
    // A tool that does not ask for input cannot show state integrity: reported, not passed.
    let o = run(&[
        "check",
        "--stdio",
        &pager(&dir, 100),
        "--json",
        "--mrtr-tool",
        "t",
    ]);
    let m = verdict_of(&o, "tampered-state-refused");
    assert_eq!(m["pass"], false);
    assert_eq!(
        m["answer"]["note"],
        "the tool did not answer input_required with a requestState"
    );
    // The demo paged one tool at a time chains its 4 pages.
    let o = run(&["check", "--stdio", &demo_cmd("--page-size 1"), "--json"]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    assert_eq!(
        verdict_of(&o, "pages-chain")["request"],
        "tools/list, following nextCursor (4 page(s))"
    );
    // X21 without --mrtr-tool: confirm (readOnlyHint: true) is picked from the listed tools.
    let picked = verdict_of(&o, "tampered-state-refused");
    assert_eq!(picked["pass"], true, "{picked}");
    assert_eq!(picked["answer"]["code"], -32602);
    assert!(
        picked["request"]
            .as_str()
            .is_some_and(|r| r.starts_with("tools/call confirm retried") && r.contains("picked")),
        "{picked}"
    );
}

#[test]
fn x21_check_without_a_drivable_tool_says_so_and_skips_the_rule() {
    // The pager's tools carry no readOnlyHint: none is called on a guess.
    let dir = temp_dir("check-no-mrtr");
    let o = run(&["check", "--stdio", &pager(&dir, 2), "--json"]);
    assert!(
        records(&o)
            .iter()
            .all(|r| r["rule"] != "tampered-state-refused"),
        "{}",
        stdout(&o)
    );
    assert!(
        stderr(&o).contains("tampered-state-refused (X21) not run"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn o98_interactive_needs_a_terminal_and_excludes_responses() {
    let args = [
        "tools",
        "call",
        "confirm",
        "--demo",
        "--args",
        r#"{"action":"x"}"#,
    ];
    let o = run(&[&args[..], &["--interactive"]].concat());
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("--interactive asks on the terminal: stdin must be one"),
        "{}",
        stderr(&o)
    );
    let dir = temp_dir("interactive-responses");
    let file = write(&dir, "r.json", r#"{"rounds": []}"#);
    let o = run(&[&args[..], &["--interactive", "--responses", &file]].concat());
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("cannot be used with"), "{}", stderr(&o));
}

#[test]
fn h1_e5_e19_x21_check_reports_what_each_rule_found() {
    // A server whose list breaks every list rule and whose tool takes any requestState.
    let dir = temp_dir("check-faults");
    let script = r#"while read l; do
  id=$(printf '%s' "$l" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p'); [ -z "$id" ] && id=null
  case "$l" in
    *requestState*) printf '{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","content":[]}}\n' "$id";;
    *'"tools/call"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"resultType":"input_required","inputRequests":{"ok":{"method":"elicitation/create","params":{}}},"requestState":"abcdef"}}\n' "$id";;
    *'"tools/list"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","ttlMs":-1,"cacheScope":"public","nextCursor":"same","tools":[{"name":"t","inputSchema":{"$schema":"http://json-schema.org/draft-07/schema#","type":"string"}}]}}\n' "$id";;
    *) printf '{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{}}}\n' "$id";;
  esac
done
"#;
    let server = format!("sh '{}'", write(&dir, "faults.sh", script));
    let o = run(&["check", "--stdio", &server, "--json", "--mrtr-tool", "t"]);
    assert_eq!(code(&o), 7);
    let note = |rule: &str| {
        let v = verdict_of(&o, rule);
        assert_eq!(v["pass"], false, "{v}");
        v["answer"]["note"].as_str().unwrap_or_default().to_owned()
    };
    assert_eq!(note("pages-chain"), "page 2 repeats an earlier cursor");
    assert_eq!(
        note("list-cache-hints"),
        "page 1: ttlMs is -1, not a number >= 0"
    );
    assert_eq!(
        note("input-schema-is-object"),
        "tool t: inputSchema is not an object schema with type \"object\""
    );
    assert_eq!(
        note("schema-dialect-2020-12"),
        "tool t: inputSchema declares $schema \"http://json-schema.org/draft-07/schema#\""
    );
    assert_eq!(note("invalid-cursor-is-32602"), "not refused with -32602");
    assert_eq!(
        note("tampered-state-refused"),
        "a tampered requestState was not refused"
    );
    // The classes decide the exit: only SHOULD/policy failures pass without --strict.
    assert_eq!(verdict_of(&o, "invalid-cursor-is-32602")["class"], "should");
    assert_eq!(verdict_of(&o, "schema-dialect-2020-12")["class"], "policy");
}

/// The keys of a bench record, in order (serde_json sorts them).
fn bench_keys(r: &Value) -> Vec<String> {
    let mut keys: Vec<String> = r.as_object().expect("object").keys().cloned().collect();
    keys.extend(
        r["latency_ms"]
            .as_object()
            .expect("latency")
            .keys()
            .map(|k| format!("latency_ms.{k}")),
    );
    keys
}

#[test]
fn bench_over_stdio_counts_requests_and_tool_errors() {
    let o = run(&[
        "bench",
        "--demo",
        "--tool",
        "add",
        "--args",
        r#"{"a":2,"b":3}"#,
        "--duration",
        "0.5",
        "--warmup",
        "0.1",
        "--in-flight",
        "2",
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let r = &records(&o)[0];
    assert_eq!(
        bench_keys(r),
        [
            "connections",
            "duration_s",
            "errors",
            "in_flight",
            "kind",
            "latency_ms",
            "requests",
            "rps",
            "tool",
            "warmup_s",
            "latency_ms.max",
            "latency_ms.p50",
            "latency_ms.p90",
            "latency_ms.p99"
        ]
    );
    assert_eq!(
        (&r["kind"], &r["tool"], &r["in_flight"], &r["errors"]),
        (&json!("bench"), &json!("add"), &json!(2), &json!(0))
    );
    assert!(r["requests"].as_u64().unwrap_or_default() > 0, "{r}");
    let l = &r["latency_ms"];
    assert!(l["p50"].as_f64() <= l["p99"].as_f64() && l["p99"].as_f64() <= l["max"].as_f64());
    // Every call fails (arguments the schema refuses): each is counted as an error.
    let o = run(&[
        "bench",
        "--demo",
        "--tool",
        "add",
        "--args",
        r#"{"a":"x"}"#,
        "--duration",
        "0.3",
        "--warmup",
        "0",
        "--json",
    ]);
    let r = &records(&o)[0];
    assert!(r["errors"].as_u64().unwrap_or_default() > 0, "{r}");
    assert_eq!(r["errors"], r["requests"]);
    // The human view.
    let o = run(&[
        "bench",
        "--demo",
        "--tool",
        "add",
        "--args",
        r#"{"a":1,"b":1}"#,
        "--duration",
        "0.2",
        "--warmup",
        "0",
    ]);
    assert!(stdout(&o).contains("req/s"), "{}", stdout(&o));
    assert!(stdout(&o).contains("p99"), "{}", stdout(&o));
}

#[test]
fn bench_bounds_one_past_are_usage_errors() {
    // bench::MAX_CONNECTIONS = 64, MAX_IN_FLIGHT = 256, MAX_DURATION = 600 s, MAX_WARMUP =
    // 60 s (each accepted at the bound: the unit test `plan_bounds_at_and_one_past`).
    for (flag, past) in [
        ("--connections", "65"),
        ("--in-flight", "257"),
        ("--duration", "600.001"),
        ("--warmup", "60.001"),
        ("--duration", "0"),
        ("--duration", "NaN"),
    ] {
        let o = run(&["bench", "--demo", "--tool", "add", flag, past]);
        assert_eq!(code(&o), 2, "{flag} {past}: {}", stderr(&o));
        assert!(stderr(&o).contains(flag), "{}", stderr(&o));
    }
    let o = run(&[
        "bench",
        "--url",
        "http://example.invalid/mcp",
        "--tool",
        "add",
    ]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("--allow-remote"), "{}", stderr(&o));
    // A server that cannot start is a transport failure.
    let o = run(&["bench", "--stdio", "/nonexistent/server", "--tool", "add"]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
}
