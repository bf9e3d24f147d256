//! Issue #23's curves that the request-size and registry curves (`strict_curves`) do not
//! cover: what a server keeps per open `subscriptions/listen` stream and per MRTR chain in
//! flight, and what one event or one sweep over all of them costs. Prints markdown rows.
//!
//! - `strict_scale listen [COUNTS…]` (default `1 100 10000`): for each count, a child
//!   `strict_scale listen-server CAP` (strict-mcp's HTTP host on loopback, the `echo` server of
//!   `strict_echo`, `HttpConfig::max_listen_streams` raised to the count, the accept loop's
//!   connection and in-flight caps above it) and that many idle HTTP/1.1 listen streams
//!   (`toolsListChanged`), each on its own connection, each acknowledged. Reports the server's
//!   RSS before and after (KiB per stream), then five registry replacements (the child swaps
//!   between two prepared registries on a line on its stdin): the wall time from the command
//!   until every stream has read its `notifications/tools/list_changed`, and the server's CPU
//!   for it (`/proc/<pid>/stat`), medians. Needs two file descriptors per stream across the
//!   two processes: run it under `ulimit -n` above the count (the hard limit here is 20 000).
//!   `STRICT_HTTP2=0` serves HTTP/1.1 only (no sniffing of the first bytes). `LISTEN_SERVER_WRAP` (e.g. `valgrind --tool=dhat --dhat-out-file=F`) runs the child
//!   under a profiler.
//! - `strict_scale mrtr [COUNTS…]` (default `1 10000`): in process, a server whose one tool
//!   always asks for input (a form elicitation), its `MemoryLedgerStore` bounded at the count.
//!   Fills the store with that many first rounds (each a chain in flight), reports the RSS
//!   growth per chain and the CPU per first round, then what a full store costs: a sweep with
//!   nothing to drop (until session 10 the scan every refused insert ran; now the store skips
//!   it while no chain can be disposable yet), one more first round refused, and one sweep
//!   after every chain expired (the clock is a settable one).

#[path = "../strict_echo.rs"]
#[allow(dead_code)]
mod strict_echo;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strict_mcp::codec::decode;
use strict_mcp::core::store::{LedgerStore, MemoryLedgerStore};
use strict_mcp::core::{Caller, CancelToken, Clock, Invocation, Outcome, RegistryBuilder, ToolDef};
use strict_mcp::machine::Tick;
use strict_mcp::server::http::{serve_with, HttpConfig, McpHttp, ServeConfig};
use strict_mcp::server::{Outbox, Reply, Server, ServerOptions};
use strict_mcp_load::process_cpu_us;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const PV: &str = strict_mcp_load::PROTOCOL_VERSION;
/// Registry replacements per listen row (the row reports medians).
const CHANGES: usize = 5;
/// Streams opened at once while a row is set up (connect + acknowledgement).
const OPEN_AT_ONCE: usize = 256;
/// The longest any one wait of the harness may take before it gives up with an error.
const WAIT: Duration = Duration::from_secs(120);

/// A `/proc/<pid>/status` field in KiB (`VmRSS`, `VmHWM`).
fn status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
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

// ---------------------------------------------------------------------------------------
// listen

/// The two registries a listen server swaps between: `echo`, and `echo` plus `echo_b`.
fn swap_registry(with_b: bool) -> Result<strict_mcp::core::Registry, Box<dyn std::error::Error>> {
    let mut b = RegistryBuilder::new().tool(
        ToolDef::typed("echo", |_inv: Invocation, input: EchoInput| async move {
            Ok(EchoOutput { text: input.text })
        })
        .description("Sends the given text back."),
    );
    if with_b {
        b = b.tool(ToolDef::typed(
            "echo_b",
            |_inv: Invocation, input: EchoInput| async move { Ok(EchoOutput { text: input.text }) },
        ));
    }
    Ok(b.build()?)
}

/// The child: serves until its stdin closes; `change` swaps the registry (answered `changed`).
async fn listen_server(cap: usize) -> Result<(), Box<dyn std::error::Error>> {
    let server = strict_echo::server()?;
    let service = McpHttp::new(
        server.clone(),
        HttpConfig {
            max_listen_streams: cap,
            ..HttpConfig::default()
        },
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let mut out = tokio::io::stdout();
    out.write_all(format!("{}\n", listener.local_addr()?.port()).as_bytes())
        .await?;
    out.flush().await?;
    let config = ServeConfig {
        max_connections: cap + 16,
        max_requests_in_flight: cap + 64,
        // `STRICT_HTTP2=0`: HTTP/1.1 only, no sniffing of the first bytes (as in strict_http).
        http2: std::env::var("STRICT_HTTP2").as_deref() != Ok("0"),
        ..ServeConfig::default()
    };
    tokio::spawn(serve_with(
        listener,
        service,
        config,
        std::future::pending(),
    ));
    // Prepared before any command, so a change costs the swap and the fan-out only.
    let mut next = [Some(swap_registry(true)?), Some(swap_registry(false)?)];
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut round = 0usize;
    while let Some(line) = lines.next_line().await? {
        if line.trim() == "change" {
            let slot = round % 2;
            let registry = match next[slot].take() {
                Some(r) => r,
                None => swap_registry(slot == 0)?,
            };
            server.replace_registry(registry);
            next[slot] = Some(swap_registry(slot == 0)?);
            round += 1;
            out.write_all(b"changed\n").await?;
            out.flush().await?;
        }
    }
    Ok(())
}

fn listen_body(id: usize) -> String {
    serde_json::json!({
        "jsonrpc": "2.0", "id": format!("l{id}"), "method": "subscriptions/listen",
        "params": {
            "notifications": {"toolsListChanged": true},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": PV,
                "io.modelcontextprotocol/clientCapabilities": {}
            }
        }
    })
    .to_string()
}

/// Opens one stream and waits for its acknowledgement; then counts its list changes.
async fn one_stream(
    port: u16,
    id: usize,
    changes: Arc<AtomicUsize>,
    opened: tokio::sync::mpsc::Sender<Result<(), String>>,
) {
    let fail = |e: String| async {
        let _ = opened.send(Err(e)).await;
    };
    let tcp = match tokio::net::TcpStream::connect(("127.0.0.1", port)).await {
        Ok(t) => t,
        Err(e) => return fail(format!("connect: {e}")).await,
    };
    let (mut send, conn) =
        match hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp)).await {
            Ok(x) => x,
            Err(e) => return fail(format!("handshake: {e}")).await,
        };
    tokio::spawn(conn);
    let request = hyper::Request::post("/mcp")
        .header("host", format!("127.0.0.1:{port}"))
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", PV)
        .header("mcp-method", "subscriptions/listen")
        .body(Full::new(Bytes::from(listen_body(id))))
        .expect("request");
    let response = match send.send_request(request).await {
        Ok(r) => r,
        Err(e) => return fail(format!("request: {e}")).await,
    };
    if response.status() != 200 {
        return fail(format!("status {}", response.status())).await;
    }
    let mut body = response.into_body();
    let mut acked = false;
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else { break };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        let text = String::from_utf8_lossy(&data);
        if !acked && text.contains("notifications/subscriptions/acknowledged") {
            acked = true;
            if opened.send(Ok(())).await.is_err() {
                return;
            }
        }
        let n = text.matches("notifications/tools/list_changed").count();
        if n > 0 {
            changes.fetch_add(n, Ordering::SeqCst);
        }
    }
    if !acked {
        fail("stream ended before its acknowledgement".into()).await;
    }
}

async fn listen_row(n: usize) -> Result<(), Box<dyn std::error::Error>> {
    let exe = std::env::current_exe()?;
    // `LISTEN_SERVER_WRAP="valgrind --tool=dhat --dhat-out-file=F"`: the child runs under that
    // command (a heap profile of the server with its streams open). The RSS and CPU columns
    // are then the wrapper's.
    let wrap: Vec<String> = std::env::var("LISTEN_SERVER_WRAP")
        .map(|w| w.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default();
    let mut command = match wrap.split_first() {
        Some((program, args)) => {
            let mut c = tokio::process::Command::new(program);
            c.args(args).arg(exe);
            c
        }
        None => tokio::process::Command::new(exe),
    };
    let mut child = command
        .args(["listen-server", &n.max(1).to_string()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let pid = child.id().ok_or("child has no pid")?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let mut lines = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
    let port: u16 = tokio::time::timeout(WAIT, lines.next_line())
        .await??
        .ok_or("no port")?
        .trim()
        .parse()?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rss0 = status_kib(pid, "VmRSS:");
    let changes = Arc::new(AtomicUsize::new(0));
    let (tx, mut rx) = tokio::sync::mpsc::channel(OPEN_AT_ONCE);
    let mut open = 0usize;
    let mut acked = 0usize;
    while acked < n {
        while open < n && open - acked < OPEN_AT_ONCE {
            tokio::spawn(one_stream(port, open, changes.clone(), tx.clone()));
            open += 1;
        }
        match tokio::time::timeout(WAIT, rx.recv()).await? {
            Some(Ok(())) => acked += 1,
            Some(Err(e)) => return Err(format!("stream {acked}: {e}").into()),
            None => return Err("streams gone".into()),
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss1 = status_kib(pid, "VmRSS:");
    let mut walls = Vec::new();
    let mut cpus = Vec::new();
    for round in 1..=CHANGES {
        let cpu0 = process_cpu_us(pid)?;
        let t0 = Instant::now();
        stdin.write_all(b"change\n").await?;
        stdin.flush().await?;
        let until = Instant::now() + WAIT;
        while changes.load(Ordering::SeqCst) < round * n {
            if Instant::now() > until {
                return Err(format!(
                    "change {round}: {} of {n} streams told",
                    changes.load(Ordering::SeqCst) - (round - 1) * n
                )
                .into());
            }
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
        walls.push(t0.elapsed().as_secs_f64() * 1e3);
        // The server's CPU for the swap and the fan-out (its `changed` line follows the swap).
        let _ = tokio::time::timeout(WAIT, lines.next_line()).await??;
        tokio::time::sleep(Duration::from_millis(50)).await;
        cpus.push((process_cpu_us(pid)? - cpu0) as f64 / 1e3);
        if changes.load(Ordering::SeqCst) != round * n {
            return Err(format!("change {round}: a stream was told twice").into());
        }
    }
    let hwm = status_kib(pid, "VmHWM:");
    let wall = median(walls);
    let cpu = median(cpus);
    println!(
        "| {n} | {rss0} | {rss1} | {hwm} | {:.1} | {wall:.2} | {cpu:.1} | {:.1} |",
        (rss1 as f64 - rss0 as f64) / n as f64,
        cpu * 1e3 / n as f64
    );
    // The child exits once its stdin closes; a profiler wrapping it writes its profile then.
    drop(stdin);
    if tokio::time::timeout(WAIT, child.wait()).await.is_err() {
        let _ = child.kill().await;
    }
    Ok(())
}

async fn listen_curve(counts: &[usize]) -> Result<(), Box<dyn std::error::Error>> {
    println!("| streams | server RSS before KiB | RSS with streams KiB | VmHWM KiB | KiB per stream | fan-out wall ms (median of {CHANGES}) | server CPU ms per change | server CPU µs per stream |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    for &n in counts {
        listen_row(n).await?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// mrtr

/// A clock the harness moves (the ledger's expiry reads the server's clock).
struct SetClock(AtomicU64);
impl Clock for SetClock {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

#[derive(Default)]
struct Sink {
    first: Mutex<Option<String>>,
}
impl Outbox for Sink {
    fn notify(&self, _line: String) -> bool {
        true
    }
    fn finish(&self, reply: Reply) {
        let mut first = self.first.lock().unwrap();
        if first.is_none() {
            *first = Some(reply.line);
        }
    }
}

#[derive(Deserialize, JsonSchema)]
struct AskInput {}

#[derive(Serialize, JsonSchema)]
struct AskOutput {
    /// Never produced here: the tool always asks.
    done: bool,
}

fn ask_line(id: usize) -> String {
    serde_json::json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {
            "name": "ask", "arguments": {},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": PV,
                "io.modelcontextprotocol/clientInfo": {"name": "strict-scale", "version": "0"},
                "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}
            }
        }
    })
    .to_string()
}

fn mrtr_row(runtime: &tokio::runtime::Runtime, n: usize) -> Result<(), Box<dyn std::error::Error>> {
    let start_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_millis() as u64;
    let clock = Arc::new(SetClock(AtomicU64::new(start_ms)));
    let store = Arc::new(MemoryLedgerStore::new(n));
    let registry = RegistryBuilder::new()
        .tool(ToolDef::typed_interactive(
            "ask",
            |inv: Invocation, _in: AskInput| async move {
                let form = inv.elicit_form(
                    "Continue?",
                    serde_json::json!({"type": "object", "properties": {"ok": {"type": "boolean"}}}),
                )?;
                Ok(Outcome::<AskOutput>::input("ok", form))
            },
        ))
        .build()?;
    let server = Server::new(
        registry,
        ServerOptions::new()
            .server_info("strict-scale", "0")
            .mode("direct")
            .clock(clock.clone())
            .ledger_store(store.clone()),
    )?;
    let limits = server.ingress_limits();
    let caller = Caller::new("scale");
    let lines: Vec<String> = (0..=n + 64).map(ask_line).collect();
    let serve_one = |i: usize, sink: &Arc<Sink>| {
        let message = decode(lines[i].as_bytes(), &limits).expect("decodes");
        let outbox: Arc<dyn Outbox> = sink.clone();
        server.serve(caller.clone(), message, outbox, CancelToken::new())
    };
    let me = std::process::id();
    let rss0 = status_kib(me, "VmRSS:");
    let cpu0 = process_cpu_us(me)?;
    let sink = Arc::new(Sink::default());
    runtime.block_on(async {
        for i in 0..n {
            serve_one(i, &sink).await;
        }
    });
    // Below 1000 chains the fill is too short for the 10 ms CPU tick, the RSS step too
    // small for the allocator's granularity: those cells print "-".
    let fill_us = (process_cpu_us(me)? - cpu0) as f64 / n as f64;
    let measurable = n >= 1000;
    let rss1 = status_kib(me, "VmRSS:");
    let first = sink.first.lock().unwrap().take().unwrap_or_default();
    if !first.contains(r#""resultType":"input_required""#) || store.len() != n {
        return Err(format!("fill: {} chains; first reply {first}", store.len()).into());
    }
    // A full store: one more first round sweeps (nothing is disposable) and is refused.
    let refused_sink = Arc::new(Sink::default());
    // Enough refusals for the 10 ms CPU tick of `/proc` to resolve them.
    let reps = 4000usize;
    let cpu0 = process_cpu_us(me)?;
    let t0 = Instant::now();
    runtime.block_on(async {
        for i in 0..reps {
            serve_one(n + 1 + (i % 64), &refused_sink).await;
        }
    });
    let refused_wall_us = t0.elapsed().as_secs_f64() * 1e6 / reps as f64;
    let refused_cpu_us = (process_cpu_us(me)? - cpu0) as f64 / reps as f64;
    let refused = refused_sink
        .first
        .lock()
        .unwrap()
        .take()
        .unwrap_or_default();
    if store.len() != n || refused.contains("input_required") {
        return Err(format!("at capacity: {} chains; reply {refused}", store.len()).into());
    }
    // The scan alone, with nothing to drop.
    let scans = 200usize;
    let now = Tick(clock.now_ms());
    let t0 = Instant::now();
    for _ in 0..scans {
        let dropped = runtime.block_on(store.sweep(now))?;
        assert_eq!(dropped, 0);
    }
    let scan_us = t0.elapsed().as_secs_f64() * 1e6 / scans as f64;
    // Every chain expired: one sweep drops them all.
    clock.0.fetch_add(
        strict_mcp::machine::ledger::DEFAULT_STATE_TTL_MS + 1,
        Ordering::SeqCst,
    );
    let t0 = Instant::now();
    let dropped = runtime.block_on(store.sweep(Tick(clock.now_ms())))?;
    let expired_us = t0.elapsed().as_secs_f64() * 1e6;
    if dropped != n || !store.is_empty() {
        return Err(format!("expiry sweep dropped {dropped} of {n}").into());
    }
    let (fill, per_chain) = if measurable {
        (
            format!("{fill_us:.1}"),
            format!("{:.2}", (rss1 as f64 - rss0 as f64) / n as f64),
        )
    } else {
        ("-".to_owned(), "-".to_owned())
    };
    println!(
        "| {n} | {fill} | {per_chain} | {refused_cpu_us:.1} | {refused_wall_us:.1} | {scan_us:.1} | {expired_us:.0} | {} |",
        refused.split(r#""message":""#).nth(1).and_then(|m| m.split('"').next()).unwrap_or("?")
    );
    Ok(())
}

fn mrtr_curve(counts: &[usize]) -> Result<(), Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    println!("| chains in flight (store capacity) | CPU µs per first round (filling) | RSS KiB per chain | CPU µs per refused first round at capacity | wall µs per refused first round | wall µs per sweep, nothing to drop | wall µs, one sweep of every chain expired | refusal |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---|");
    for &n in counts {
        mrtr_row(&runtime, n)?;
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let what = args.next().unwrap_or_default();
    let counts: Vec<usize> = args.filter_map(|a| a.parse().ok()).collect();
    if what == "listen-server" {
        let cap = counts.first().copied().unwrap_or(1);
        return tokio::runtime::Runtime::new()?.block_on(listen_server(cap));
    }
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
        "listen" => {
            let counts = if counts.is_empty() {
                vec![1, 100, 10_000]
            } else {
                counts
            };
            tokio::runtime::Runtime::new()?.block_on(listen_curve(&counts))
        }
        "mrtr" => {
            let counts = if counts.is_empty() {
                vec![1, 10_000]
            } else {
                counts
            };
            mrtr_curve(&counts)
        }
        _ => {
            eprintln!("usage: strict_scale listen|mrtr [COUNTS…]");
            std::process::exit(2);
        }
    }
}
