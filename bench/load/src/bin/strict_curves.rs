//! Costs that grow as the work grows (issue #23), in process, no I/O: decode + `Server::serve`
//! like `strict_inproc`, with the request or the registry scaled. Prints markdown rows; every
//! figure is process CPU per request (from `/proc`) and every ratio is against a baseline
//! measured in the same process right before or after.
//!
//! - `strict_curves size`: `tools/call echo` with a text argument of 100 B … 1.9 MiB (the
//!   result carries it back twice: text content and structured content). Baseline: plain
//!   `serde_json::from_slice::<Value>` of the same request line. Reports CPU per request byte
//!   of both and their ratio (issue target ≤ 2×).
//! - `strict_curves registry`: registries of 10 / 1 000 / 10 000 typed tools; a direct
//!   `tools/call` of one of them, the first `tools/list` page, and compact mode's
//!   `search_tools` (a query every tool matches, and one only one tool matches). Reports CPU
//!   per request and its ratio to the 10-tool row, and the registry build time (O27: every
//!   schema is compiled while the registry is built).
//!
//! - `strict_curves pages`: direct `tools/list` pages 1 / 50 / 500 (the cursor of each page got
//!   by walking the pages before it once) of registries of 1 000 and 10 000 typed tools;
//!   CPU per request and its ratio to page 1 of the same registry (a page must not cost
//!   time linear in its depth: the cursor carries the last name served).
//!
//! - `strict_curves echo-floor`: the size curve's request three ways, in turn in one process:
//!   serde_json's parse (the `size` baseline), the same reply built with serde_json alone and
//!   no checks (parse, structured content and its JSON text, serialise), and strict-mcp.
//!   Ratios of each to the parse and strict-mcp's to that echo: how much of the `size` ratio
//!   any server sending this reply pays, and how much is strict-mcp's own. Last, strict-mcp
//!   against serde_json's parse of every byte it handles (the request and its reply line).
//!
//! `strict_curves size|echo-floor|registry|pages [SECONDS_PER_ROW]` (default 1 s of CPU per row);
//! `CURVES_ONLY=strict` (or `serde`) runs one side of the size curve only, for a profiler;
//! `CURVES_TEXT=plain` sends a text without escapes (base64 data, most prose) instead of one
//! with a quote every 64 bytes.

#[path = "../strict_echo.rs"]
#[allow(dead_code)]
mod strict_echo;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strict_mcp::codec::decode;
use strict_mcp::core::{Caller, CancelToken, Invocation, RegistryBuilder, ToolDef};
use strict_mcp::server::{Outbox, Reply, Server, ServerOptions};
use strict_mcp_load::process_cpu_us;

/// Keeps the first reply of a row to check it, counts the bytes of the rest.
#[derive(Default)]
struct Sink {
    bytes: AtomicUsize,
    first: Mutex<Option<String>>,
}

impl Outbox for Sink {
    fn notify(&self, _line: String) -> bool {
        true
    }
    fn finish(&self, reply: Reply) {
        if self.bytes.fetch_add(reply.line.len(), Ordering::Relaxed) == 0 {
            *self.first.lock().unwrap() = Some(reply.line);
        }
    }
}

fn meta() -> serde_json::Value {
    serde_json::json!({
        "io.modelcontextprotocol/protocolVersion": strict_mcp_load::PROTOCOL_VERSION,
        "io.modelcontextprotocol/clientInfo": { "name": "strict-mcp-curves", "version": "0" },
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

fn line(id: u64, method: &str, mut params: serde_json::Value) -> String {
    params["_meta"] = meta();
    serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// Serves `line` (with its id rewritten per iteration is not needed: ids may repeat in
/// process) until `budget_us` of CPU are spent (at least `min` times); CPU µs per request.
fn serve_for(
    runtime: &tokio::runtime::Runtime,
    server: &Server,
    line: &str,
    budget_us: u64,
    min: u64,
    check: impl Fn(&str) -> bool,
) -> f64 {
    let limits = server.ingress_limits();
    let caller = Caller::new("curves");
    let sink = Arc::new(Sink::default());
    let pid = std::process::id();
    let (cpu, n) = runtime.block_on(async {
        let cpu0 = process_cpu_us(pid).unwrap();
        let mut n = 0u64;
        loop {
            let message = decode(line.as_bytes(), &limits).expect("decodes");
            let outbox: Arc<dyn Outbox> = sink.clone();
            server
                .serve(caller.clone(), message, outbox, CancelToken::new())
                .await;
            n += 1;
            if n >= min && (n % 8 == 0 || n == min) {
                let used = process_cpu_us(pid).unwrap() - cpu0;
                if used >= budget_us {
                    return (used, n);
                }
            }
        }
    });
    let first = sink.first.lock().unwrap().take().unwrap_or_default();
    assert!(
        check(&first),
        "unexpected reply: {}",
        &first[..first.len().min(400)]
    );
    cpu as f64 / n as f64
}

/// Runs `work` until `budget_us` of process CPU are spent (at least `min` times): CPU µs per run.
fn cpu_per_run(budget_us: u64, min: u64, mut work: impl FnMut()) -> f64 {
    let pid = std::process::id();
    let cpu0 = process_cpu_us(pid).unwrap();
    let mut n = 0u64;
    loop {
        work();
        n += 1;
        if n >= min && (n % 8 == 0 || n == min) {
            let used = process_cpu_us(pid).unwrap() - cpu0;
            if used >= budget_us {
                return used as f64 / n as f64;
            }
        }
    }
}

/// Plain serde_json parse of `line`, for the same budget: CPU µs per parse.
fn parse_for(line: &str, budget_us: u64, min: u64) -> f64 {
    cpu_per_run(budget_us, min, || {
        let v: serde_json::Value = serde_json::from_slice(line.as_bytes()).expect("parses");
        std::hint::black_box(v);
    })
}

/// The reply the size curve's request gets, built the plainest way serde_json allows: the
/// request parsed into a `Value`, the text put back as structured content and as that
/// content's JSON text, the reply serialised. No checks at all (no duplicate keys, no
/// schema, no headers or policy): what any server that sends this reply must at least do.
/// CPU µs per request.
fn serde_echo_for(line: &str, budget_us: u64, min: u64) -> f64 {
    cpu_per_run(budget_us, min, || {
        let mut v: serde_json::Value = serde_json::from_slice(line.as_bytes()).expect("parses");
        let text = v["params"]["arguments"]["text"].take();
        let structured = serde_json::json!({ "text": text });
        let copy = serde_json::to_string(&structured).expect("serialises");
        let reply = serde_json::json!({
            "jsonrpc": "2.0",
            "id": v["id"].take(),
            "result": {
                "content": [{ "type": "text", "text": copy }],
                "structuredContent": structured,
            }
        });
        let bytes = serde_json::to_vec(&reply).expect("serialises");
        std::hint::black_box(bytes);
    })
}

fn ok_result(reply: &str) -> bool {
    reply.contains(r#""result""#) && !reply.contains(r#""isError":true"#)
}

/// The size curve's text sizes, 100 B to 1.9 MiB.
const SIZES: [usize; 6] = [100, 1_000, 10_000, 100_000, 1 << 20, (1 << 20) * 19 / 10];

/// The echo server both size curves serve, and the current-thread runtime they serve it on.
fn echo_server() -> Result<(Server, tokio::runtime::Runtime), Box<dyn std::error::Error>> {
    let server = strict_echo::server()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    Ok((server, runtime))
}

/// The size curve's `tools/call echo` request with a text of `text_bytes` bytes.
fn curve_request(text_bytes: usize) -> String {
    line(
        1,
        "tools/call",
        serde_json::json!({"name": "echo", "arguments": {"text": curve_text(text_bytes)}}),
    )
}

/// The size curve's text of `text_bytes` bytes: printable, with a JSON escape (a quote)
/// every 64 bytes so the parser has work to do; `CURVES_TEXT=plain`: none at all (base64
/// data, most prose).
fn curve_text(text_bytes: usize) -> String {
    let every = if std::env::var("CURVES_TEXT").as_deref() == Ok("plain") {
        usize::MAX
    } else {
        64
    };
    (0..text_bytes)
        .map(|i| {
            if i % every == every - 1 {
                '"'
            } else {
                (b'a' + (i % 26) as u8) as char
            }
        })
        .collect()
}

/// `strict_curves echo-floor`: the size curve against two baselines measured in turn in
/// the same process: serde_json's parse of the request (the `size` target's baseline) and
/// [`serde_echo_for`] (the same reply built with serde_json and no checks).
fn echo_floor(budget_us: u64) -> Result<(), Box<dyn std::error::Error>> {
    let (server, runtime) = echo_server()?;
    println!("| text bytes | serde_json parse µs | serde_json echo µs | strict µs | echo ÷ parse | strict ÷ parse | strict ÷ echo | reply bytes | parse of request + reply µs | strict ÷ that |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for text_bytes in SIZES {
        let req = curve_request(text_bytes);
        let parse = parse_for(&req, budget_us, 3);
        let echo = serde_echo_for(&req, budget_us, 3);
        let reply = std::cell::RefCell::new(String::new());
        let strict = serve_for(&runtime, &server, &req, budget_us, 3, |r| {
            *reply.borrow_mut() = r.to_owned();
            ok_result(r) && r.len() > 2 * text_bytes
        });
        // Every byte the server handles, in and out, parsed by serde_json: the `size`
        // baseline with the reply's bytes counted too.
        let reply = reply.into_inner();
        let both = parse + parse_for(&reply, budget_us, 3);
        println!(
            "| {text_bytes} | {parse:.1} | {echo:.1} | {strict:.1} | {:.2} | {:.2} | {:.2} | {} | {both:.1} | {:.2} |",
            echo / parse,
            strict / parse,
            strict / echo,
            reply.len(),
            strict / both
        );
    }
    Ok(())
}

fn size_curve(budget_us: u64) -> Result<(), Box<dyn std::error::Error>> {
    let (server, runtime) = echo_server()?;
    println!("| text bytes | request bytes | strict µs/req | serde_json parse µs | strict ns/byte | serde_json ns/byte | strict ÷ serde_json |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    for text_bytes in SIZES {
        let req = curve_request(text_bytes);
        // `CURVES_ONLY=strict` or `=serde` runs one side only, for a profiler to see it alone.
        let only = std::env::var("CURVES_ONLY").unwrap_or_default();
        let strict = if only == "serde" {
            f64::NAN
        } else {
            serve_for(&runtime, &server, &req, budget_us, 3, |r| {
                ok_result(r) && r.len() > 2 * text_bytes
            })
        };
        let serde = if only == "strict" {
            f64::NAN
        } else {
            parse_for(&req, budget_us, 3)
        };
        let bytes = req.len() as f64;
        println!(
            "| {text_bytes} | {} | {strict:.1} | {serde:.1} | {:.2} | {:.2} | {:.2} |",
            req.len(),
            strict * 1e3 / bytes,
            serde * 1e3 / bytes,
            strict / serde
        );
    }
    Ok(())
}

#[derive(Deserialize, JsonSchema)]
struct EchoInput {
    /// The text to send back.
    text: String,
}

#[derive(Serialize, JsonSchema)]
struct EchoOutput {
    /// The text that was sent.
    text: String,
}

fn scaled_server(n: usize, mode: &str) -> Result<(Server, f64), Box<dyn std::error::Error>> {
    let start = Instant::now();
    let mut b = RegistryBuilder::new();
    for i in 0..n {
        b =
            b.tool(
                ToolDef::typed(
                    format!("echo_{i:05}"),
                    |_inv: Invocation, input: EchoInput| async move {
                        Ok(EchoOutput { text: input.text })
                    },
                )
                .description(format!("Sends the given text back (copy {i}).")),
            );
    }
    let registry = b.build()?;
    let built_ms = start.elapsed().as_secs_f64() * 1e3;
    let server = Server::new(
        registry,
        ServerOptions::new()
            .server_info("strict-mcp-curves", "0")
            .mode(mode),
    )?;
    Ok((server, built_ms))
}

fn registry_curve(budget_us: u64) -> Result<(), Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    println!("| tools | registry build ms | operation | µs/req | vs 10 tools |");
    println!("|---:|---:|---|---:|---:|");
    let mut base: std::collections::HashMap<&str, f64> = Default::default();
    for n in [10usize, 1_000, 10_000] {
        let (direct, built_ms) = scaled_server(n, "direct")?;
        let (compact, _) = scaled_server(n, "compact")?;
        let target = format!("echo_{:05}", n / 2);
        let ops: [(&str, &Server, String, &dyn Fn(&str) -> bool); 4] = [
            (
                "tools/call (direct)",
                &direct,
                line(
                    1,
                    "tools/call",
                    serde_json::json!({"name": target, "arguments": {"text": "hi"}}),
                ),
                &|r| ok_result(r) && r.contains("hi"),
            ),
            (
                "tools/list first page (direct)",
                &direct,
                line(1, "tools/list", serde_json::json!({})),
                &|r| ok_result(r) && r.contains("echo_00000"),
            ),
            (
                "search_tools, every tool matches (compact)",
                &compact,
                line(
                    1,
                    "tools/call",
                    serde_json::json!({"name": "search_tools", "arguments": {"query": "sends text back"}}),
                ),
                &|r| ok_result(r) && r.contains("echo_0000"),
            ),
            (
                "search_tools, one tool matches (compact)",
                &compact,
                line(
                    1,
                    "tools/call",
                    serde_json::json!({"name": "search_tools", "arguments": {"query": format!("{:05}", n / 2)}}),
                ),
                &|r| ok_result(r) && r.contains(target.as_str()),
            ),
        ];
        for (name, server, req, check) in ops {
            let us = serve_for(&runtime, server, &req, budget_us, 3, check);
            let b = *base.entry(name).or_insert(us);
            println!("| {n} | {built_ms:.0} | {name} | {us:.1} | {:.2} |", us / b);
        }
    }
    Ok(())
}

/// The `nextCursor` of the page before page `page` (`None` for page 1), walking from the
/// first page; `Err` when the list has fewer pages.
fn cursor_of_page(
    runtime: &tokio::runtime::Runtime,
    server: &Server,
    page: usize,
) -> Result<Option<String>, String> {
    let limits = server.ingress_limits();
    let caller = Caller::new("curves");
    let mut cursor: Option<String> = None;
    for k in 1..page {
        let params = match &cursor {
            None => serde_json::json!({}),
            Some(c) => serde_json::json!({ "cursor": c }),
        };
        let req = line(k as u64, "tools/list", params);
        let sink = Arc::new(Sink::default());
        let outbox: Arc<dyn Outbox> = sink.clone();
        let message = decode(req.as_bytes(), &limits).expect("decodes");
        runtime.block_on(server.serve(caller.clone(), message, outbox, CancelToken::new()));
        let reply = sink.first.lock().unwrap().take().unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&reply).map_err(|e| e.to_string())?;
        match v["result"]["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return Err(format!("no page {page}: page {k} is the last")),
        }
    }
    Ok(cursor)
}

fn pages_curve(budget_us: u64) -> Result<(), Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    println!("| tools | page | first tool of the page | µs/req | vs page 1 |");
    println!("|---:|---:|---|---:|---:|");
    for n in [1_000usize, 10_000] {
        let (direct, _) = scaled_server(n, "direct")?;
        let mut base = None;
        for page in [1usize, 50, 500] {
            let Ok(cursor) = cursor_of_page(&runtime, &direct, page) else {
                continue;
            };
            let params = match &cursor {
                None => serde_json::json!({}),
                Some(c) => serde_json::json!({ "cursor": c }),
            };
            let first = format!("echo_{:05}", (page - 1) * 20);
            let req = line(1, "tools/list", params);
            let us = serve_for(&runtime, &direct, &req, budget_us, 3, |r| {
                ok_result(r) && r.contains(&format!(r#""name":"{first}""#))
            });
            let b = *base.get_or_insert(us);
            println!("| {n} | {page} | {first} | {us:.1} | {:.2} |", us / b);
        }
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let what = args.next().unwrap_or_default();
    let secs: f64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(1.0);
    let budget_us = (secs * 1e6) as u64;
    println!(
        "{} UTC; load average: {}",
        std::process::Command::new("date")
            .args(["-u", "+%Y-%m-%d %H:%M"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default(),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    match what.as_str() {
        "size" => size_curve(budget_us),
        "registry" => registry_curve(budget_us),
        "pages" => pages_curve(budget_us),
        "echo-floor" => echo_floor(budget_us),
        _ => {
            eprintln!("usage: strict_curves size|echo-floor|registry|pages [SECONDS_PER_ROW]");
            std::process::exit(2);
        }
    }
}
