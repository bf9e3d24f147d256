//! Contract evidence for the CLI transport (O91–O105, O115): the built `strict-mcp` binary
//! runs every client subcommand against the conformance fixtures, over stdio (the conformance
//! server binary as its child, O92) and over Streamable HTTP (our server on 127.0.0.1), each
//! answered with a result (positive) and refused by the server with a JSON-RPC error
//! (negative, exit 4, O97).
//!
//! What the CLI sent and how each answer ended is observed by the CLI's own recording
//! transport (`src/cli/tap.rs`): its `--json` lossless records (O96) name the request's method
//! and carry the answer as received, and [`observe`] turns each record into a recorder line.
//! A test never claims an exchange it did not read back from the binary's output.
//!
//! The CLI sends no cursor and always sends its own, valid `_meta`, so the list and
//! discovery refusals come from the real server behind a line filter (`sed`) that spoils
//! exactly that request on its way in ([`spoiling_server`]): the server refuses a request the
//! CLI sent, which is what the negative proof needs.
#![cfg(unix)]
#![forbid(unsafe_code)]

#[path = "../examples/conformance/fixtures.rs"]
mod fixtures;
mod support;
#[path = "../examples/conformance/tasks.rs"]
mod tasks;

use std::collections::BTreeSet;
use std::convert::Infallible;
use std::path::PathBuf;
use std::process::Output;
use std::sync::{Arc, Mutex, PoisonError};

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use serde_json::Value;
use strict_mcp::server::http::{serve, HttpConfig, McpHttp, OnPaths};
use strict_mcp::server::{Server, ServerOptions};
use strict_mcp::wire::methods;
use support::cli::records;
use support::evidence::{Outcome, Recorder, CLI_SUBCOMMANDS};
use support::peers::Http;

/// The contract transport id of the CLI.
const CLI: &str = "cli";

/// The conformance fixtures in direct mode, as the conformance example serves them.
fn fixture_server() -> Server {
    Server::new(
        fixtures::registry(),
        ServerOptions::new()
            .server_info("strict-mcp-conformance", "0.0.0")
            .mode("direct"),
    )
    .expect("server")
}

/// Runs the binary with `args`, bounded by [`support::cli::RUN_BOUND`] (a listen run lasts
/// 1 s).
async fn cli(args: &[String]) -> Output {
    support::cli::run_async(args).await
}

/// How a record's answer ended: every answer kind that carries a JSON-RPC `result` (a page,
/// a tool's own failure, an input request, a listen acknowledgement) is a result; `error` is
/// the server's JSON-RPC error; records that are no answer (digest, change) are none.
fn outcome_of(record: &Value) -> Option<Outcome> {
    match record["kind"].as_str()? {
        "result" | "page" | "tool_error" | "input_required" => {
            assert!(record.get("result").is_some(), "{record}");
            Some(Outcome::Result)
        }
        "listening" => Some(Outcome::Result),
        "error" => {
            assert!(record["error"]["code"].is_i64(), "{record}");
            Some(Outcome::Error)
        }
        _ => None,
    }
}

/// Records every answer the binary reported as an exchange on the `cli` transport, and
/// returns the records.
fn observe(rec: &Recorder, o: &Output) -> Vec<Value> {
    let all = records(o);
    for r in &all {
        if let (Some(outcome), Some(method)) = (outcome_of(r), r["method"].as_str()) {
            rec.observed(CLI, method, outcome);
        }
    }
    all
}

/// The methods a run's records answer, in order of first appearance.
fn methods(records: &[Value]) -> Vec<String> {
    let mut seen = Vec::new();
    for r in records {
        if let Some(m) = r["method"].as_str() {
            if !seen.iter().any(|s| s == m) {
                seen.push(m.to_owned());
            }
        }
    }
    seen
}

/// The methods [`CLI_SUBCOMMANDS`] says `subcommand` sends.
fn sends(subcommand: &str) -> Vec<String> {
    CLI_SUBCOMMANDS
        .iter()
        .find(|(s, _)| *s == subcommand)
        .unwrap_or_else(|| panic!("{subcommand} is not in CLI_SUBCOMMANDS"))
        .1
        .iter()
        .map(|m| (*m).to_owned())
        .collect()
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| (*a).to_owned()).collect()
}

/// One subcommand run: the subcommand as `CLI_SUBCOMMANDS` names it, its words and the method
/// whose answer it is about.
struct Run {
    subcommand: &'static str,
    args: &'static [&'static str],
    method: &'static str,
}

const fn run(subcommand: &'static str, args: &'static [&'static str], method: &'static str) -> Run {
    Run {
        subcommand,
        args,
        method,
    }
}

/// Every client subcommand, answered by the conformance fixtures.
const ANSWERED: [Run; 12] = [
    run("discover", &["discover"], "server/discover"),
    run("tools list", &["tools", "list"], "tools/list"),
    run(
        "tools call",
        &["tools", "call", "test_simple_text"],
        "tools/call",
    ),
    run("resources list", &["resources", "list"], "resources/list"),
    run(
        "resources templates",
        &["resources", "templates"],
        "resources/templates/list",
    ),
    run(
        "resources read",
        &["resources", "read", "test://static-text"],
        "resources/read",
    ),
    run("prompts list", &["prompts", "list"], "prompts/list"),
    run(
        "prompts get",
        &["prompts", "get", "test_simple_prompt"],
        "prompts/get",
    ),
    run(
        "complete",
        &[
            "complete",
            "--prompt",
            "test_prompt_with_arguments",
            "--argument",
            "arg1",
        ],
        "completion/complete",
    ),
    run(
        "listen",
        &["listen", "--tools", "--for", "1"],
        "subscriptions/listen",
    ),
    run("skills list", &["skills", "list"], "skills/list"),
    run(
        "skills get",
        &["skills", "get", "skill://pdf-processing/SKILL.md"],
        "skills/get",
    ),
];

/// Every client subcommand runs, exits 0, sends exactly the methods `CLI_SUBCOMMANDS` lists
/// for it and gets a result for each (O91, O96, O97).
async fn every_subcommand_answers(server: &[String], rec: &Recorder) {
    let mut proven = BTreeSet::new();
    for r in &ANSWERED {
        let mut args = strings(r.args);
        args.push("--json".into());
        args.extend(server.iter().cloned());
        let o = cli(&args).await;
        let all = observe(rec, &o);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{:?}: {}",
            r.args,
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(methods(&all), sends(r.subcommand), "{:?}: {all:?}", r.args);
        for record in &all {
            if record.get("method").is_some() && record["kind"] != "digest" {
                assert_eq!(outcome_of(record), Some(Outcome::Result), "{record}");
            }
        }
        let answer = all
            .iter()
            .find(|x| x["method"] == r.method)
            .expect("the subcommand's own answer");
        match r.method {
            "server/discover" => assert_eq!(
                answer["result"]["supportedVersions"],
                serde_json::json!(["2026-07-28"])
            ),
            "tools/call" => assert_eq!(answer["result"]["content"][0]["type"], "text"),
            "resources/read" => {
                assert_eq!(answer["result"]["contents"][0]["uri"], "test://static-text");
            }
            "subscriptions/listen" => {
                assert_eq!(answer["effective"]["toolsListChanged"], true, "{answer}");
            }
            "skills/get" => assert_eq!(
                answer["result"]["skill"]["uri"],
                "skill://pdf-processing/SKILL.md"
            ),
            _ => {}
        }
        proven.insert(r.method);
    }
    assert_eq!(proven.len(), ANSWERED.len(), "one run per method");
}

/// `--stdio "<conformance_server> --stdio"`.
fn stdio_server() -> Vec<String> {
    let exe = support::example_binary("conformance_server");
    vec!["--stdio".into(), format!("'{}' --stdio", exe.display())]
}

/// O91, O92, O115: every client subcommand over stdio, answered with a result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o115_cli_stdio_every_method_answers() {
    let rec = support::evidence::recorder!();
    every_subcommand_answers(&stdio_server(), &rec).await;
}

/// O91, O92, O103, O115: every client subcommand over Streamable HTTP, answered with a result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o115_cli_http_every_method_answers() {
    let rec = support::evidence::recorder!();
    let http = Http::start(fixture_server()).await;
    every_subcommand_answers(&["--url".to_owned(), http.url().to_owned()], &rec).await;
}

/// A script that runs the conformance server behind `sed`, which applies `edit` (a sed
/// command) to each request line on its way in: the server then refuses a request exactly as
/// the CLI would have seen it refused by any server.
fn spoiling_server(name: &str, edit: &str) -> (PathBuf, Vec<String>) {
    let dir = std::env::temp_dir().join(format!(
        "strict-mcp-evidence-cli-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let script = dir.join("server.sh");
    let exe = support::example_binary("conformance_server");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nsed -u -e '{edit}' | exec '{}' --stdio\n",
            exe.display()
        ),
    )
    .expect("write the script");
    (
        dir,
        vec!["--stdio".into(), format!("sh '{}'", script.display())],
    )
}

/// A refusal: the subcommand, its words, the refused method, the error code, and the `sed`
/// edit that spoils the request (`None`: the CLI's own request is refused as sent).
struct Refusal {
    subcommand: &'static str,
    args: &'static [&'static str],
    method: &'static str,
    code: i64,
    spoil: Option<&'static str>,
}

/// A bad cursor added to the first request of `method` (a sed command).
macro_rules! bad_cursor {
    ($method:literal) => {
        concat!(
            "/\"method\":\"",
            $method,
            "\"/s/\"params\":{/&\"cursor\":\"not-a-cursor\",/"
        )
    };
}

const REFUSED: [Refusal; 12] = [
    Refusal {
        subcommand: "discover",
        args: &["discover"],
        method: "server/discover",
        code: -32022,
        spoil: Some(
            "/\"method\":\"server\\/discover\"/s/protocolVersion\":\"2026-07-28\"/protocolVersion\":\"1999-01-01\"/",
        ),
    },
    Refusal {
        subcommand: "tools list",
        args: &["tools", "list"],
        method: "tools/list",
        code: -32602,
        spoil: Some(bad_cursor!("tools\\/list")),
    },
    Refusal {
        subcommand: "tools call",
        args: &["tools", "call", "no_such_tool"],
        method: "tools/call",
        code: -32602,
        spoil: None,
    },
    Refusal {
        subcommand: "resources list",
        args: &["resources", "list"],
        method: "resources/list",
        code: -32602,
        spoil: Some(bad_cursor!("resources\\/list")),
    },
    Refusal {
        subcommand: "resources templates",
        args: &["resources", "templates"],
        method: "resources/templates/list",
        code: -32602,
        spoil: Some(bad_cursor!("resources\\/templates\\/list")),
    },
    Refusal {
        subcommand: "resources read",
        args: &["resources", "read", "test://no-such"],
        method: "resources/read",
        code: -32602,
        spoil: None,
    },
    Refusal {
        subcommand: "prompts list",
        args: &["prompts", "list"],
        method: "prompts/list",
        code: -32602,
        spoil: Some(bad_cursor!("prompts\\/list")),
    },
    Refusal {
        subcommand: "prompts get",
        args: &["prompts", "get", "no_such_prompt"],
        method: "prompts/get",
        code: -32602,
        spoil: None,
    },
    Refusal {
        subcommand: "complete",
        args: &[
            "complete",
            "--prompt",
            "no_such_prompt",
            "--argument",
            "arg1",
        ],
        method: "completion/complete",
        code: -32602,
        spoil: None,
    },
    Refusal {
        subcommand: "listen",
        args: &["listen", "--tools", "--for", "1"],
        method: "subscriptions/listen",
        code: -32602,
        spoil: Some("/\"method\":\"subscriptions\\/listen\"/s/\"notifications\":{/\"notifications\":7,\"spoiled\":{/"),
    },
    Refusal {
        subcommand: "skills list",
        args: &["skills", "list"],
        method: "skills/list",
        code: -32602,
        spoil: Some(bad_cursor!("skills\\/list")),
    },
    Refusal {
        subcommand: "skills get",
        args: &["skills", "get", "skill://no-such/SKILL.md"],
        method: "skills/get",
        code: -32602,
        spoil: None,
    },
];

/// O97, O115: every client subcommand refused by the server: the refused method's error
/// record carries the server's code, everything before it was answered, and the exit code is
/// 4 (JSON-RPC/MCP error).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o115_cli_every_method_refused() {
    let rec = support::evidence::recorder!();
    for (i, r) in REFUSED.iter().enumerate() {
        let (dir, server) = match r.spoil {
            Some(edit) => {
                let (dir, server) = spoiling_server(&format!("{i}"), edit);
                (Some(dir), server)
            }
            None => (None, stdio_server()),
        };
        let mut args = strings(r.args);
        args.push("--json".into());
        args.extend(server);
        let o = cli(&args).await;
        let all = observe(&rec, &o);
        assert_eq!(
            o.status.code(),
            Some(4),
            "{:?}: {all:?} {}",
            r.args,
            String::from_utf8_lossy(&o.stderr)
        );
        let (last, before) = all.split_last().expect("records");
        assert_eq!(
            (last["kind"].as_str(), last["method"].as_str()),
            (Some("error"), Some(r.method)),
            "{:?}: {all:?}",
            r.args
        );
        assert_eq!(last["error"]["code"], r.code, "{last}");
        // Every earlier exchange was answered, except that a version refusal (-32022) may
        // come twice: `Client::connect` retries it once with a version the server listed
        // (B15, MAX_VERSION_RETRIES = 1), and the spoiling filter spoils the retry too.
        let retried = before
            .iter()
            .filter(|b| {
                b["kind"] == "error" && b["method"] == r.method && b["error"]["code"] == r.code
            })
            .count();
        assert!(r.code == -32022 && retried <= 1 || retried == 0, "{all:?}");
        let errors = before.iter().filter(|b| b["kind"] == "error").count();
        assert_eq!(errors, retried, "{all:?}");
        for b in before.iter().filter(|b| b["kind"] != "error") {
            assert_eq!(outcome_of(b), Some(Outcome::Result), "{b}");
        }
        let sent = sends(r.subcommand);
        assert!(
            methods(&all).iter().all(|m| sent.contains(m)),
            "{:?}: {all:?} beyond {sent:?}",
            r.args
        );
        if let Some(dir) = dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// `check` and `bench`: what they send, seen by a spy in front of the server

/// The most bytes of one request body or one answer the spy reads: the server's own frame
/// bound is 2 MiB, and `check` sends one probe of 2 MiB + 1 byte to test it.
const SPY_MAX_BYTES: usize = 4 * 1024 * 1024;

/// What the spy saw: each request's method and how its answer ended.
type Seen = Arc<Mutex<Vec<(String, Outcome)>>>;

/// The demo server (direct mode), as `strict-mcp demo serve` runs it: it has the `confirm`
/// tool `check --mrtr-tool` needs and the `upper` tool `bench` calls.
fn demo_server() -> Server {
    Server::new(
        strict_mcp::cli::demo::registry(strict_mcp::cli::demo::DEFAULT_PAGE_SIZE)
            .expect("demo registry"),
        ServerOptions::new()
            .server_info("strict-mcp-demo", "0.0.0")
            .mode("direct"),
    )
    .expect("server")
}

/// The answer in `body` (one JSON message, or SSE events) to the request with `id`.
fn answer_to(body: &[u8], id: &Value) -> Option<Outcome> {
    let text = String::from_utf8_lossy(body);
    let messages: Vec<Value> = match serde_json::from_str::<Value>(&text) {
        Ok(m) => vec![m],
        Err(_) => text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect(),
    };
    messages.iter().find_map(|m| {
        if m.get("id") != Some(id) || m.get("method").is_some() {
            None
        } else if m.get("result").is_some() {
            Some(Outcome::Result)
        } else if m.get("error").is_some() {
            Some(Outcome::Error)
        } else {
            None
        }
    })
}

/// Serves `server` on 127.0.0.1 at `/mcp` behind a spy: each POST body is read, passed on to
/// `McpHttp` unchanged, and its answer read back and passed on unchanged; a body that is one
/// request (an object with an id and a method) answered under that id is recorded on `rec`
/// as a `cli` exchange and pushed to the returned list. Batches, unreadable bodies and
/// refusals that carry no JSON-RPC answer to the id are passed on and not recorded.
async fn spied(server: Server, rec: &Arc<Recorder>) -> (String, Seen) {
    let mcp = McpHttp::new(
        server,
        HttpConfig {
            path: Some("/mcp".into()),
            ..HttpConfig::default()
        },
    );
    let seen: Seen = Arc::new(Mutex::new(Vec::new()));
    let service = tower::service_fn({
        let rec = Arc::clone(rec);
        let seen = Arc::clone(&seen);
        move |req: hyper::Request<Incoming>| {
            let (mcp, rec, seen) = (mcp.clone(), Arc::clone(&rec), Arc::clone(&seen));
            async move {
                let (parts, body) = req.into_parts();
                let sent = Limited::new(body, SPY_MAX_BYTES)
                    .collect()
                    .await
                    .map(|b| b.to_bytes())
                    .unwrap_or_default();
                let request = serde_json::from_slice::<Value>(&sent).ok().and_then(|v| {
                    Some((v.get("id")?.clone(), v.get("method")?.as_str()?.to_owned()))
                });
                let res = tower::ServiceExt::oneshot(
                    mcp,
                    hyper::Request::from_parts(parts, Full::new(sent)),
                )
                .await?;
                let (parts, body) = res.into_parts();
                let answer = Limited::new(body, SPY_MAX_BYTES)
                    .collect()
                    .await
                    .map(|b| b.to_bytes())
                    .unwrap_or_default();
                if let Some((id, method)) = request {
                    if let Some(outcome) = answer_to(&answer, &id) {
                        rec.observed(CLI, &method, outcome);
                        seen.lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .push((method, outcome));
                    }
                }
                Ok::<_, Infallible>(hyper::Response::from_parts(parts, Full::new(answer)))
            }
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    tokio::spawn(serve(
        listener,
        OnPaths::new(["/mcp"], service),
        std::future::pending(),
    ));
    (url, seen)
}

fn seen(list: &Seen) -> Vec<(String, Outcome)> {
    list.lock().unwrap_or_else(PoisonError::into_inner).clone()
}

/// The routed methods of `seen`, in order of first appearance.
fn routed(seen: &[(String, Outcome)]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (m, _) in seen {
        if methods::needs(m).is_some() && !out.contains(m) {
            out.push(m.clone());
        }
    }
    out
}

fn count(seen: &[(String, Outcome)], method: &str, outcome: Outcome) -> usize {
    seen.iter()
        .filter(|(m, o)| m == method && *o == outcome)
        .count()
}

/// O115 (and O91, O97 for `check`): `strict-mcp check --mrtr-tool` over HTTP sends exactly
/// the routed methods its `CLI_SUBCOMMANDS` row lists, in that order, and beyond them only
/// its deliberate probes of methods no 2026-07-28 server has (`initialize`, an unknown
/// method, a method name over the 256-byte bound); every rule holds against our server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o115_cli_check_sends_what_its_row_says() {
    let rec = support::evidence::recorder!();
    let (url, list) = spied(demo_server(), &rec).await;
    let o = cli(&strings(&[
        "check",
        "--url",
        &url,
        "--json",
        "--mrtr-tool",
        "confirm",
        "--mrtr-args",
        r#"{"action":"audit"}"#,
    ]))
    .await;
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    for verdict in records(&o) {
        assert_eq!(verdict["pass"], true, "{verdict}");
    }
    let seen = seen(&list);
    assert_eq!(routed(&seen), sends("check"), "{seen:?}");
    let unrouted: BTreeSet<String> = seen
        .iter()
        .filter(|(m, _)| methods::needs(m).is_none())
        .map(|(m, _)| {
            if m.len() > strict_mcp::wire::limits::MAX_METHOD_BYTES {
                "<over the method bound>".to_owned()
            } else {
                m.clone()
            }
        })
        .collect();
    assert_eq!(
        unrouted,
        [
            "initialize",
            "strict-mcp/no-such-method",
            "<over the method bound>"
        ]
        .iter()
        .map(|m| (*m).to_owned())
        .collect::<BTreeSet<_>>()
    );
    // Both polarities of each routed method: discovery and its -32022 refusal, the pages and
    // the invalid cursor, the MRTR round's input request and the tampered state refused.
    for method in sends("check") {
        assert!(
            count(&seen, &method, Outcome::Result) > 0,
            "{method}: {seen:?}"
        );
        assert!(
            count(&seen, &method, Outcome::Error) > 0,
            "{method}: {seen:?}"
        );
    }
}

/// O115: `strict-mcp bench` over HTTP discovers, lists the tools once per connection (O103)
/// and then sends only `tools/call`, one per request it reports; a tool the server does not
/// have makes every call an error, each counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o115_cli_bench_sends_what_its_row_says() {
    let rec = support::evidence::recorder!();
    let (url, list) = spied(demo_server(), &rec).await;
    let bench = |tool: &str, args: &str| {
        strings(&[
            "bench",
            "--url",
            &url,
            "--tool",
            tool,
            "--args",
            args,
            "--connections",
            "2",
            "--in-flight",
            "1",
            "--duration",
            "0.3",
            "--warmup",
            "0",
            "--json",
        ])
    };
    let o = cli(&bench("upper", r#"{"text":"a"}"#)).await;
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let report = records(&o).pop().expect("the bench record");
    assert_eq!(report["kind"], "bench", "{report}");
    assert_eq!(report["errors"], 0, "{report}");
    let requests = report["requests"].as_u64().expect("requests");
    assert!(requests > 0, "{report}");
    let ok = seen(&list);
    assert_eq!(routed(&ok), sends("bench"), "{ok:?}");
    assert_eq!(count(&ok, "server/discover", Outcome::Result), 2, "{ok:?}");
    assert_eq!(count(&ok, "tools/list", Outcome::Result), 2, "{ok:?}");
    let calls = count(&ok, "tools/call", Outcome::Result);
    // Calls still in flight when the window closed are answered but not reported.
    assert!(
        calls as u64 >= requests && calls as u64 <= requests + 2,
        "{calls} calls for {report}"
    );
    assert_eq!(
        ok.len(),
        4 + calls,
        "only the row's methods, all answered: {ok:?}"
    );
    list.lock().unwrap_or_else(PoisonError::into_inner).clear();
    let o = cli(&bench("nope", "{}")).await;
    let report = records(&o).pop().expect("the bench record");
    let failed = seen(&list);
    assert_eq!(routed(&failed), sends("bench"), "{failed:?}");
    let errors = count(&failed, "tools/call", Outcome::Error);
    assert!(errors > 0, "{failed:?}");
    assert_eq!(
        count(&failed, "tools/call", Outcome::Result),
        0,
        "{failed:?}"
    );
    assert!(
        report["errors"]
            .as_u64()
            .is_some_and(|e| e > 0 && e as usize <= errors),
        "{report}"
    );
    assert_eq!(report["errors"], report["requests"], "{report}");
}

// ---------------------------------------------------------------------------------------------
// The Tasks extension's methods through the `tasks` subcommands (issue #21)

/// The conformance fixtures with the Tasks extension's tools, as the conformance example
/// serves them. Over HTTP one server outlives the runs, so a task one run starts is there for
/// the next.
fn tasks_server() -> Server {
    let mut builder = fixtures::builder();
    for tool in tasks::tools() {
        builder = builder.tool(tool);
    }
    Server::new(
        builder.build().expect("the fixtures are valid"),
        ServerOptions::new()
            .server_info("strict-mcp-conformance", "0.0.0")
            .mode("direct"),
    )
    .expect("server")
}

/// One `--json` run against `url`: its output and its records (observed on `rec`).
async fn run_at(rec: &Recorder, url: &str, args: &[&str]) -> (Output, Vec<Value>) {
    let mut all = strings(args);
    all.push("--json".into());
    all.extend(["--url".to_owned(), url.to_owned()]);
    let o = cli(&all).await;
    let records = observe(rec, &o);
    (o, records)
}

/// The last answer of `method` in a run's records.
fn answer_of<'a>(records: &'a [Value], method: &str) -> &'a Value {
    records
        .iter()
        .rev()
        .find(|r| r["method"] == method)
        .unwrap_or_else(|| panic!("no {method} answer in {records:?}"))
}

/// A `--responses` file with no rounds: it makes the CLI declare elicitation (O98), which
/// `confirm_delete` asks through once it runs as a task (answered by `tasks update`).
fn no_rounds() -> PathBuf {
    let path = std::env::temp_dir().join(format!(
        "strict-mcp-evidence-cli-no-rounds-{}.json",
        std::process::id()
    ));
    std::fs::write(&path, r#"{"rounds": []}"#).expect("write the responses file");
    path
}

/// `tasks call TOOL --args ARGS --responses <no rounds>`, which the server makes a task: its
/// id (exit 0, O97).
async fn call_task(rec: &Recorder, url: &str, tool: &str, args: &str) -> String {
    let responses = no_rounds();
    let responses = responses.to_str().expect("a UTF-8 temp path");
    let (o, all) = run_at(
        rec,
        url,
        &[
            "tasks",
            "call",
            tool,
            "--args",
            args,
            "--responses",
            responses,
        ],
    )
    .await;
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let call = answer_of(&all, "tools/call");
    assert_eq!(call["kind"], "task", "{call}");
    call["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned()
}

/// `tasks wait ID` until the task asks for input (exit 6): its outstanding request keys.
async fn wait_for_input(rec: &Recorder, url: &str, id: &str) -> Vec<String> {
    let (o, all) = run_at(rec, url, &["tasks", "wait", id, "--for", "10"]).await;
    assert_eq!(
        o.status.code(),
        Some(6),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let asked = answer_of(&all, "tasks/get");
    assert_eq!(asked["result"]["status"], "input_required", "{asked}");
    asked["result"]["inputRequests"]
        .as_object()
        .expect("inputRequests")
        .keys()
        .cloned()
        .collect()
}

/// Accepts every key with `{"confirm": true}`, as `--input` takes it.
fn confirm_all(keys: &[String]) -> String {
    let answers: serde_json::Map<String, Value> = keys
        .iter()
        .map(|k| {
            (
                k.clone(),
                serde_json::json!({"action": "accept", "content": {"confirm": true}}),
            )
        })
        .collect();
    Value::Object(answers).to_string()
}

/// O91, O97, O115, N41–N43: `tasks get`, `tasks cancel` and `tasks update` over Streamable
/// HTTP, each answered with a result and sending exactly its `CLI_SUBCOMMANDS` row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o115_cli_http_tasks_answer() {
    let rec = support::evidence::recorder!();
    let http = Http::start(tasks_server()).await;
    let url = http.url().to_owned();
    let slow = call_task(&rec, &url, "slow_compute", r#"{"seconds":30}"#).await;
    for (subcommand, method) in [("get", "tasks/get"), ("cancel", "tasks/cancel")] {
        let (o, all) = run_at(&rec, &url, &["tasks", subcommand, &slow]).await;
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(methods(&all), sends(&format!("tasks {subcommand}")));
        assert_eq!(outcome_of(answer_of(&all, method)), Some(Outcome::Result));
    }
    let asking = call_task(&rec, &url, "confirm_delete", r#"{"filename":"a.txt"}"#).await;
    let keys = wait_for_input(&rec, &url, &asking).await;
    let input = confirm_all(&keys);
    let (o, all) = run_at(&rec, &url, &["tasks", "update", &asking, "--input", &input]).await;
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(methods(&all), sends("tasks update"));
    let ack = answer_of(&all, "tasks/update");
    assert_eq!(outcome_of(ack), Some(Outcome::Result));
    assert_eq!(ack["result"]["resultType"], "complete", "N42: {ack}");
}

/// Serves `server` on 127.0.0.1 at `/mcp` behind a filter that takes the Tasks extension's
/// declaration out of every `tasks/update` body on its way in (and passes everything else on
/// unchanged): the server then refuses the CLI's update as it refuses any undeclared one
/// (-32021, N36), the refusal the negative proof needs. Its URL.
async fn undeclaring_updates(server: Server) -> String {
    let mcp = McpHttp::new(
        server,
        HttpConfig {
            path: Some("/mcp".into()),
            ..HttpConfig::default()
        },
    );
    let service = tower::service_fn(move |req: hyper::Request<Incoming>| {
        let mcp = mcp.clone();
        async move {
            let (mut parts, body) = req.into_parts();
            let mut sent = Limited::new(body, SPY_MAX_BYTES)
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            if let Ok(mut v) = serde_json::from_slice::<Value>(&sent) {
                if v["method"] == "tasks/update" {
                    let caps =
                        &mut v["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"];
                    if let Some(ext) = caps.get_mut("extensions").and_then(Value::as_object_mut) {
                        ext.remove(strict_mcp::wire::tasks::TASKS_EXTENSION);
                    }
                    sent = v.to_string().into();
                    parts.headers.remove(hyper::header::CONTENT_LENGTH);
                }
            }
            let res =
                tower::ServiceExt::oneshot(mcp, hyper::Request::from_parts(parts, Full::new(sent)))
                    .await?;
            Ok::<_, Infallible>(res)
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    tokio::spawn(serve(
        listener,
        OnPaths::new(["/mcp"], service),
        std::future::pending(),
    ));
    url
}

/// O97, O115, N36: `tasks get` and `tasks cancel` of an unknown task are refused -32602, and
/// an update the server sees undeclared is refused -32021; each exits 4.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o115_cli_tasks_refused() {
    let rec = support::evidence::recorder!();
    let http = Http::start(tasks_server()).await;
    for (subcommand, method) in [("get", "tasks/get"), ("cancel", "tasks/cancel")] {
        let (o, all) = run_at(&rec, http.url(), &["tasks", subcommand, "no-such-task"]).await;
        assert_eq!(
            o.status.code(),
            Some(4),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(methods(&all), sends(&format!("tasks {subcommand}")));
        let refused = answer_of(&all, method);
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
    }
    let url = undeclaring_updates(tasks_server()).await;
    let asking = call_task(&rec, &url, "confirm_delete", r#"{"filename":"a.txt"}"#).await;
    let keys = wait_for_input(&rec, &url, &asking).await;
    let input = confirm_all(&keys);
    let (o, all) = run_at(&rec, &url, &["tasks", "update", &asking, "--input", &input]).await;
    assert_eq!(
        o.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(methods(&all), sends("tasks update"));
    assert_eq!(
        outcome_of(answer_of(&all, "tasks/get")),
        Some(Outcome::Result)
    );
    let refused = answer_of(&all, "tasks/update");
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
}
