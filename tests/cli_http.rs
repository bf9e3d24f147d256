//! The `strict-mcp` binary against its demo server over Streamable HTTP on loopback (O92,
//! O103, O104): list, exact call, MRTR chain, headers through the decorator and never printed.
#![cfg(unix)]

#[path = "support/cli.rs"]
mod cli;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cli::{code, run, stderr, stdout, EXE, RUN_BOUND};
use serde_json::Value;

/// The demo HTTP server, stopped (SIGINT, then kill) when dropped.
struct DemoHttp {
    child: Child,
    url: String,
}

impl DemoHttp {
    fn start() -> DemoHttp {
        DemoHttp::start_with(&[])
    }

    /// The demo over HTTP with extra `demo serve` flags.
    fn start_with(extra: &[&str]) -> DemoHttp {
        let mut child = Command::new(EXE)
            .args(["demo", "serve", "--http", "127.0.0.1:0"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn demo");
        let url = cli::listening_url(&mut child);
        DemoHttp { child, url }
    }
}

impl Drop for DemoHttp {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn o92_http_list_call_and_exact_numbers() {
    let demo = DemoHttp::start();
    let o = run(&["tools", "list", "--url", &demo.url]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).starts_with("NAME "), "{}", stdout(&o));
    assert!(stdout(&o).contains("\nadd "), "{}", stdout(&o));

    let o = run(&[
        "tools",
        "call",
        "add",
        "--url",
        &demo.url,
        "--json",
        "--args",
        r#"{"a":18446744073709551616,"b":18446744073709551616}"#,
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    let kinds: Vec<String> = out
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("record");
            format!(
                "{} {}",
                v["kind"].as_str().unwrap_or_default(),
                v["method"].as_str().unwrap_or_default()
            )
        })
        .collect();
    // O103: the definition is fetched before the call.
    assert_eq!(
        kinds,
        [
            "result server/discover",
            "page tools/list",
            "result tools/call"
        ]
    );
    assert!(
        out.contains(r#""structuredContent":{"value":{"sum":36893488147419103232}}"#),
        "{out}"
    );
}

#[test]
fn o98_http_responses_chain_and_exit_codes() {
    let demo = DemoHttp::start();
    let dir = std::env::temp_dir().join(format!("strict-mcp-cli-http-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("responses.json");
    std::fs::write(
        &file,
        r#"{"rounds":[{"confirm":{"action":"accept","content":{"confirm":true}}},{"note":{"action":"accept","content":{"note":"over http"}}}]}"#,
    )
    .expect("write");
    let o = run(&[
        "tools",
        "call",
        "confirm",
        "--url",
        &demo.url,
        "--args",
        r#"{"action":"x"}"#,
        "--responses",
        &file.display().to_string(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("\"note\": \"over http\""),
        "{}",
        stdout(&o)
    );

    let o = run(&[
        "tools",
        "call",
        "add",
        "--url",
        &demo.url,
        "--args",
        r#"{"a":1,"a":1}"#,
    ]);
    assert_eq!(code(&o), 2);
    let o = run(&["tools", "call", "nope", "--url", &demo.url]);
    assert_eq!(code(&o), 4, "{}", stderr(&o));
    let o = run(&[
        "tools",
        "call",
        "add",
        "--url",
        &demo.url,
        "--args",
        r#"{"a":true,"b":1}"#,
    ]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
}

#[test]
fn o104_headers_go_through_the_decorator_and_are_never_printed() {
    let demo = DemoHttp::start();
    let secret = "Bearer s3cr3t-token-value";
    let auth = format!("Authorization: {secret}");
    let o = run(&[
        "tools",
        "call",
        "add",
        "--url",
        &demo.url,
        "--header",
        &auth,
        "--json",
        "--args",
        r#"{"a":1,"b":2}"#,
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!stdout(&o).contains("s3cr3t") && !stderr(&o).contains("s3cr3t"));
    // Protocol headers belong to the transport: refused up front, value not echoed.
    let o = run(&[
        "tools",
        "list",
        "--url",
        &demo.url,
        "--header",
        "Mcp-Method: s3cr3t",
    ]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("mcp-method"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("s3cr3t"), "{}", stderr(&o));
    // --header without --url is a usage error.
    assert_eq!(
        code(&run(&["tools", "list", "--demo", "--header", "X-A: b"])),
        2
    );
    // A URL the transport cannot use.
    assert_eq!(
        code(&run(&["tools", "list", "--url", "ftp://127.0.0.1/mcp"])),
        2
    );
}

#[test]
fn o97_http_server_gone_is_a_transport_failure() {
    let url = {
        let demo = DemoHttp::start();
        demo.url.clone()
    };
    let o = run(&["discover", "--url", &url, "--timeout", "5"]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
}

#[test]
fn check_passes_on_the_demo_over_http_with_status_evidence() {
    let demo = DemoHttp::start();
    let o = run(&[
        "check",
        "--url",
        &demo.url,
        "--json",
        "--mrtr-tool",
        "confirm",
        "--mrtr-args",
        r#"{"action":"audit"}"#,
    ]);
    assert_eq!(code(&o), 0, "{}\n{}", stdout(&o), stderr(&o));
    let evidence: Vec<String> = stdout(&o)
        .lines()
        .map(|l| {
            let r: Value = serde_json::from_str(l).expect("record");
            assert_eq!(r["pass"], true, "{l}");
            format!(
                "{} {} {}",
                r["rule"].as_str().unwrap_or_default(),
                r["answer"]["status"],
                r["answer"]["code"]
            )
        })
        .collect();
    assert_eq!(
        evidence,
        [
            "discover-offers-2026-07-28 200 null",
            "unsupported-version-is-32022 400 -32022",
            "unknown-method-is-32601 404 -32601",
            "batch-rejected 400 -32600",
            "duplicate-keys-rejected 400 -32600",
            "id-over-256-bytes-rejected 400 -32600",
            "method-over-256-bytes-rejected 400 -32600",
            "foreign-host-refused 403 null",
            "foreign-origin-is-403 403 null",
            "method-header-mismatch-is-32020 400 -32020",
            "pages-chain 200 null",
            "list-cache-hints 200 null",
            "input-schema-is-object 200 null",
            "schema-dialect-2020-12 200 null",
            "invalid-cursor-is-32602 200 -32602",
            "tampered-state-refused 200 -32602",
            "missing-meta-is-32602 400 -32602",
            "initialize-is-unknown 404 -32601",
            "frame-over-2-mib-rejected 413 -32600",
        ]
    );
    // --strict changes nothing when every rule holds.
    assert_eq!(code(&run(&["check", "--url", &demo.url, "--strict"])), 0);
}

#[test]
fn x21_d19_check_picks_the_mrtr_tool_and_sends_its_param_headers_over_http() {
    // No --mrtr-tool: the demo's confirm is the one tool annotated readOnlyHint: true; its
    // `action` is mirrored into Mcp-Param-Action, which the server requires (-32020
    // otherwise), so the first round only asks for input when the header is sent.
    let demo = DemoHttp::start();
    let o = run(&["check", "--url", &demo.url, "--json"]);
    assert_eq!(code(&o), 0, "{}\n{}", stdout(&o), stderr(&o));
    let rule = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("record"))
        .find(|r| r["rule"] == "tampered-state-refused")
        .expect("the MRTR rule ran without --mrtr-tool");
    assert_eq!(rule["pass"], true, "{rule}");
    assert_eq!(rule["answer"]["status"], 200);
    assert_eq!(rule["answer"]["code"], -32602);
    assert_eq!(
        rule["request"],
        "tools/call confirm retried with a tampered requestState (picked from tools/list: \
         readOnlyHint, arguments {\"action\":\"x\"})"
    );
}

#[test]
fn bench_over_http_with_several_connections() {
    let demo = DemoHttp::start();
    let o = run(&[
        "bench",
        "--url",
        &demo.url,
        "--tool",
        "upper",
        "--args",
        r#"{"text":"a"}"#,
        "--connections",
        "2",
        "--in-flight",
        "2",
        "--duration",
        "0.5",
        "--warmup",
        "0.1",
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    let r: Value = serde_json::from_str(stdout(&o).trim()).expect("one record");
    assert_eq!(r["kind"], "bench");
    assert_eq!(r["connections"], 2);
    assert_eq!(r["errors"], 0, "{r}");
    assert!(r["requests"].as_u64().unwrap_or_default() > 0, "{r}");
    assert!(r["rps"].as_f64().unwrap_or_default() > 0.0, "{r}");
    // An unknown tool: every call is a JSON-RPC error, counted.
    let o = run(&[
        "bench",
        "--url",
        &demo.url,
        "--tool",
        "nope",
        "--duration",
        "0.2",
        "--warmup",
        "0",
        "--json",
    ]);
    let r: Value = serde_json::from_str(stdout(&o).trim()).expect("one record");
    assert!(r["errors"].as_u64().unwrap_or_default() > 0, "{r}");
    assert_eq!(r["errors"], r["requests"]);
}

/// O60: `demo serve --app` serves the demo app's shell (compact mode), and `--cors-origin`
/// answers that page origin's preflight; the shell is read back through the CLI.
#[test]
fn o60_demo_app_serves_its_shell_and_answers_cors() {
    let page = "http://127.0.0.1:5173";
    let demo = DemoHttp::start_with(&["--app", "--cors-origin", page]);
    let o = run(&[
        "resources",
        "read",
        "ui://strict-mcp-demo/app",
        "--url",
        &demo.url,
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("<!doctype html>"), "{out}");
    assert!(out.contains("<title>strict-mcp demo app</title>"), "{out}");

    let authority = demo
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp");
    let mut tcp = std::net::TcpStream::connect(authority).expect("connect");
    tcp.set_read_timeout(Some(RUN_BOUND)).unwrap();
    use std::io::{Read, Write};
    write!(
        tcp,
        "OPTIONS /mcp HTTP/1.1\r\nHost: {authority}\r\nOrigin: {page}\r\n\
         Access-Control-Request-Method: POST\r\n\
         Access-Control-Request-Headers: content-type, mcp-method\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    tcp.read_to_string(&mut answer).unwrap();
    let answer = answer.to_ascii_lowercase();
    assert!(answer.starts_with("http/1.1 204"), "{answer}");
    assert!(
        answer.contains(&format!("access-control-allow-origin: {page}\r\n")),
        "{answer}"
    );
    assert!(
        answer.contains("access-control-allow-headers: content-type, mcp-method\r\n"),
        "{answer}"
    );
}

/// `--app` with an explicit direct mode, a non-loopback `--cors-origin` and `--cors-origin`
/// without `--http` are usage errors (exit 2), each saying why.
#[test]
fn o60_demo_app_flags_refuse_direct_mode_and_foreign_origins() {
    for (args, says) in [
        (
            &["demo", "serve", "--app", "--mode", "direct"][..],
            "--mode compact",
        ),
        (
            &[
                "demo",
                "serve",
                "--http",
                "127.0.0.1:0",
                "--cors-origin",
                "https://app.example",
            ][..],
            "loopback browser origins only",
        ),
        (
            &["demo", "serve", "--cors-origin", "http://127.0.0.1:5173"][..],
            "--cors-origin needs --http",
        ),
    ] {
        let o = run(args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
}
