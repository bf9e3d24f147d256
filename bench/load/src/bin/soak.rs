//! Soak harness (issue #23; a harness, not a CI test): millions of requests against
//! strict-mcp's server over Streamable HTTP and stdio with random faults, then checks that
//! nothing was lost, duplicated or leaked.
//!
//! - `soak http REQUESTS [CONNS] [SECONDS]`: the server (`echo`, `slow`) behind the bundled
//!   accept loop (`server::http::serve`) on its own runtime in this process, on 127.0.0.1.
//!   CONNS workers (default 16) each on a keep-alive HTTP/1.1 connection pick per request:
//!   `echo` (90 %), `slow` cut off mid-call by dropping the connection (5 %: a client
//!   disconnect, which cancels the call), `echo` then closing the idle connection (3 %), a
//!   short `slow` that completes (2 %). Every request that still had its client must get
//!   exactly one correct answer (status 200, same id, the echoed text).
//! - `soak stdio REQUESTS [INFLIGHT] [SECONDS]`: children `soak serve-stdio` (the same server
//!   over `Server::run_stdio`), INFLIGHT (default 64) requests pipelined; `echo` (95 %) or
//!   `slow` followed by `notifications/cancelled` (5 %: a mid-call cancellation, answered at
//!   most once). Each child lives for 20 k–200 k requests and then either ends gracefully
//!   (all answered, then its `status` tool must show no call but itself, its fds and RSS are
//!   recorded, stdin closed, exit 0) or is SIGKILLed mid-stream (half of them): what it had
//!   in flight was lost with it and is counted as such.
//!
//! At the end: the HTTP server's `Status` (no active call, no listen stream), its runtime's
//! alive tasks back to the accept loop alone, this process's fds and RSS before and after;
//! any violation makes the exit code 1. RSS after warm-up: sampled at each tenth of the run
//! (by requests, or by the time bound if that comes first) for the HTTP server (this process)
//! and the stdio harness, and at each tenth of every stdio child's life (read from
//! `/proc/PID/status`); each series is printed as a row with its largest deviation from its
//! first sample, flagged beyond `FLAT_PCT` (±5 %, the "flat"), and a flagged server or
//! child series also makes the exit code 1. A wall-clock bound (SECONDS, default 3600) stops the
//! run early; what ran is printed either way. Fixed PRNG seed: runs are reproducible in
//! their choices (not in timing).

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strict_mcp::core::{Caller, Invocation, RegistryBuilder, ToolDef};
use strict_mcp::server::http::{serve, HttpConfig, McpHttp};
use strict_mcp::server::{Server, ServerOptions};
use strict_mcp_load::{echo_request, is_echo_success, is_echo_value, PROTOCOL_VERSION};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

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

#[derive(Deserialize, JsonSchema)]
struct SlowInput {
    /// How long to take, in milliseconds, unless cancelled first.
    ms: u64,
}

#[derive(Deserialize, JsonSchema)]
struct Empty {}

#[derive(Serialize, JsonSchema)]
struct StatusOutput {
    active_calls: usize,
    listen_streams: usize,
    fds: usize,
    rss_kib: u64,
}

fn server() -> Result<Server, Box<dyn std::error::Error>> {
    let me: Arc<std::sync::OnceLock<Server>> = Arc::default();
    let me2 = me.clone();
    let registry = RegistryBuilder::new()
        .tool(ToolDef::typed(
            "echo",
            |_inv: Invocation, input: EchoInput| async move { Ok(EchoOutput { text: input.text }) },
        ))
        .tool(ToolDef::typed(
            "slow",
            |inv: Invocation, input: SlowInput| async move {
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(input.ms)) => {}
                    () = inv.cancel_token().cancelled() => {}
                }
                Ok(EchoOutput {
                    text: strict_mcp_load::ECHO_TEXT.to_owned(),
                })
            },
        ))
        .tool(ToolDef::typed(
            "status",
            move |_inv: Invocation, _i: Empty| {
                let s = me2.get().map(Server::status);
                async move {
                    let s = s.expect("server set");
                    Ok(StatusOutput {
                        active_calls: s.active_calls,
                        listen_streams: s.listen_streams,
                        fds: fds(),
                        rss_kib: rss_kib(),
                    })
                }
            },
        ))
        .build()?;
    let server = Server::new(
        registry,
        ServerOptions::new()
            .server_info("strict-mcp-soak", "0")
            .mode("direct"),
    )?;
    let _ = me.set(server.clone());
    Ok(server)
}

fn fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count())
        .unwrap_or(0)
}

/// `VmRSS` of this process.
fn rss_kib() -> u64 {
    vm_rss_kib("/proc/self/status")
}

/// `VmRSS` of another process (a stdio child), 0 once it is gone.
fn rss_kib_of(pid: u32) -> u64 {
    vm_rss_kib(&format!("/proc/{pid}/status"))
}

/// The `VmRSS:` line of a `/proc/<pid>/status` file in KiB, 0 when the file or line is missing.
fn vm_rss_kib(status_path: &str) -> u64 {
    std::fs::read_to_string(status_path)
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

/// How far RSS after warm-up may move over a run and still count as flat (issue #23: "RSS
/// after warm-up flat (±5 %) over 10 million requests").
const FLAT_PCT: f64 = 5.0;

/// Number of RSS samples over a run or a child's life: one at each tenth (the first, at 10 %,
/// is the post-warm-up reference).
const SAMPLES: u64 = 10;

/// One RSS sample: requests sent so far, seconds since the start, `VmRSS` KiB.
type Sample = (u64, f64, u64);

/// The largest deviation (percent, signed) of any sample from the first one.
fn max_deviation(samples: &[Sample]) -> f64 {
    let Some(&(_, _, first)) = samples.first() else {
        return 0.0;
    };
    samples
        .iter()
        .map(|&(_, _, r)| (r as f64 - first as f64) * 100.0 / first.max(1) as f64)
        .fold(0.0, |m: f64, d| if d.abs() > m.abs() { d } else { m })
}

/// The series as one printable row and whether it stayed within [`FLAT_PCT`].
fn series_row(label: &str, samples: &[Sample]) -> (String, bool) {
    let dev = max_deviation(samples);
    let flat = dev.abs() <= FLAT_PCT;
    let points: Vec<String> = samples
        .iter()
        .map(|(n, t, r)| format!("{r}@{n}/{t:.0}s"))
        .collect();
    (
        format!(
            "{label} RSS KiB@requests/seconds: {}; max deviation from the first sample {dev:+.1} %{}",
            points.join(" "),
            if flat {
                String::new()
            } else {
                format!(" FLAG: beyond ±{FLAT_PCT} %")
            }
        ),
        flat,
    )
}

/// Samples this process's RSS at each tenth of the run, by requests sent (`sent` against
/// `total`) or by the time bound, whichever comes first, until `stop`; a last sample when
/// stopped if the tenth was not reached.
fn sample_self(
    sent: &AtomicU64,
    total: u64,
    start: Instant,
    bound: Duration,
    stop: &AtomicBool,
) -> Vec<Sample> {
    let mut samples = Vec::new();
    let mut k = 1;
    loop {
        let n = sent.load(Ordering::Relaxed);
        let t = start.elapsed();
        let stopping = stop.load(Ordering::Relaxed);
        if k <= SAMPLES && (n >= total * k / SAMPLES || t >= bound * k as u32 / SAMPLES as u32) {
            samples.push((n, t.as_secs_f64(), rss_kib()));
            k += 1;
        } else if stopping {
            if samples.last().map(|s| s.0) != Some(n) {
                samples.push((n, t.as_secs_f64(), rss_kib()));
            }
            return samples;
        } else {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// xorshift64*: reproducible choices without a dependency (not for anything secret).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn call_line(id: u64, tool: &str, arguments: serde_json::Value) -> String {
    serde_json::json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {
            "name": tool, "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
                "io.modelcontextprotocol/clientInfo": { "name": "strict-mcp-soak", "version": "0" },
                "io.modelcontextprotocol/clientCapabilities": {}
            }
        }
    })
    .to_string()
}

#[derive(Default)]
struct Counts {
    sent: AtomicU64,
    answered_ok: AtomicU64,
    client_gone: AtomicU64,
    cancelled: AtomicU64,
    cancelled_answered: AtomicU64,
    lost_with_child: AtomicU64,
    reconnects: AtomicU64,
    children: AtomicU64,
    kills: AtomicU64,
    violations: AtomicU64,
}

impl Counts {
    fn violation(&self, what: &str) {
        if self.violations.fetch_add(1, Ordering::Relaxed) < 20 {
            eprintln!("VIOLATION: {what}");
        }
    }
    fn print(&self, label: &str, secs: f64) {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        println!(
            "{label}: {} requests in {secs:.0} s ({:.0}/s): {} answered correctly, {} client gone \
             mid-call, {} cancelled mid-call ({} of them answered), {} lost with a killed child; \
             {} reconnects, {} children ({} killed); violations {}",
            g(&self.sent),
            g(&self.sent) as f64 / secs,
            g(&self.answered_ok),
            g(&self.client_gone),
            g(&self.cancelled),
            g(&self.cancelled_answered),
            g(&self.lost_with_child),
            g(&self.reconnects),
            g(&self.children),
            g(&self.kills),
            g(&self.violations)
        );
    }
}

// ------------------------------------------------------------------------------------------
// HTTP

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

async fn connect(addr: std::net::SocketAddr) -> Option<Sender> {
    let stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    stream.set_nodelay(true).ok()?;
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .ok()?;
    tokio::spawn(conn);
    Some(sender)
}

fn post(addr: std::net::SocketAddr, tool: &str, body: String) -> hyper::Request<Full<Bytes>> {
    hyper::Request::post(format!("http://{addr}/mcp"))
        .header("host", format!("{addr}"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", PROTOCOL_VERSION)
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .body(Full::new(Bytes::from(body)))
        .expect("request")
}

async fn exchange(
    sender: &mut Sender,
    request: hyper::Request<Full<Bytes>>,
) -> Option<(u16, Bytes)> {
    sender.ready().await.ok()?;
    let response = sender.send_request(request).await.ok()?;
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.ok()?.to_bytes();
    Some((status, body))
}

async fn http_worker(
    addr: std::net::SocketAddr,
    worker: u64,
    budget: Arc<AtomicU64>,
    deadline: Instant,
    counts: Arc<Counts>,
) {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (worker + 1).wrapping_mul(0xA24B_AED4_963E_E407));
    let mut sender: Option<Sender> = None;
    let mut seq = 0u64;
    loop {
        if Instant::now() >= deadline
            || budget
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| b.checked_sub(1))
                .is_err()
        {
            return;
        }
        if sender.is_none() {
            sender = connect(addr).await;
            counts.reconnects.fetch_add(1, Ordering::Relaxed);
            if sender.is_none() {
                counts.violation("connect failed");
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        }
        let s = sender.as_mut().expect("connected");
        seq += 1;
        let id = worker * 10_000_000_000 + seq;
        counts.sent.fetch_add(1, Ordering::Relaxed);
        let roll = rng.below(100);
        if roll < 5 {
            // A slow call whose client goes away mid-call.
            let req = post(
                addr,
                "slow",
                call_line(id, "slow", serde_json::json!({"ms": 200})),
            );
            let cut = Duration::from_millis(1 + rng.below(10));
            let _ = tokio::time::timeout(cut, exchange(s, req)).await;
            sender = None;
            counts.client_gone.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let (tool, body) = if roll < 7 {
            ("slow", call_line(id, "slow", serde_json::json!({"ms": 1})))
        } else {
            ("echo", echo_request(id))
        };
        match exchange(s, post(addr, tool, body)).await {
            Some((200, body)) if is_echo_success(&body, id) => {
                counts.answered_ok.fetch_add(1, Ordering::Relaxed);
            }
            Some((status, body)) => {
                counts.violation(&format!(
                    "http id {id}: status {status}, body {}",
                    String::from_utf8_lossy(&body[..body.len().min(300)])
                ));
            }
            None => {
                counts.violation(&format!("http id {id}: no answer on a live connection"));
                sender = None;
            }
        }
        if (7..10).contains(&roll) {
            sender = None; // disconnect between requests
        }
    }
}

fn run_http(requests: u64, conns: u64, secs: u64) -> Result<bool, Box<dyn std::error::Error>> {
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let client_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let server = server()?;
    let (addr, stop_tx, run) = server_rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let service = McpHttp::new(
            server.clone(),
            HttpConfig {
                path: Some("/mcp".into()),
                ..HttpConfig::default()
            },
        );
        let run = tokio::spawn(serve(listener, service, async {
            let _ = stop_rx.await;
        }));
        Ok::<_, std::io::Error>((addr, stop_tx, run))
    })?;
    let counts = Arc::new(Counts::default());
    let start = Instant::now();
    let deadline = start + Duration::from_secs(secs);
    // Warm-up: 2 % of the budget (at least 10 k), then the baseline figures.
    let warm = (requests / 50).max(10_000).min(requests);
    let phase = |n: u64, counts: Arc<Counts>| {
        let budget = Arc::new(AtomicU64::new(n));
        client_rt.block_on(async {
            let mut set = tokio::task::JoinSet::new();
            for w in 0..conns {
                set.spawn(http_worker(
                    addr,
                    w,
                    budget.clone(),
                    deadline,
                    counts.clone(),
                ));
            }
            while set.join_next().await.is_some() {}
        });
    };
    phase(warm, Arc::new(Counts::default()));
    std::thread::sleep(Duration::from_millis(500));
    let (fds0, rss0) = (fds(), rss_kib());
    let tasks0 = server_rt.metrics().num_alive_tasks();
    let stop = AtomicBool::new(false);
    let samples = std::thread::scope(|scope| {
        let sampler = scope.spawn(|| {
            sample_self(
                &counts.sent,
                requests,
                Instant::now(),
                deadline.saturating_duration_since(Instant::now()),
                &stop,
            )
        });
        phase(requests, counts.clone());
        stop.store(true, Ordering::Relaxed);
        sampler.join().expect("sampler")
    });
    let secs_run = start.elapsed().as_secs_f64();
    // Everything the clients started has ended; the server must come back to idle.
    let idle_by = Instant::now() + Duration::from_secs(10);
    let (mut status, mut tasks);
    loop {
        status = server.status();
        tasks = server_rt.metrics().num_alive_tasks();
        if (status.active_calls == 0 && status.listen_streams == 0 && tasks <= tasks0)
            || Instant::now() > idle_by
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let (fds1, rss1) = (fds(), rss_kib());
    counts.print("http", secs_run);
    println!(
        "http end: status active_calls={} listen_streams={}; server runtime alive tasks {tasks0} after warm-up, {tasks} at the end; \
         fds {fds0} -> {fds1}; RSS {rss0} KiB -> {rss1} KiB ({:+.1} %)",
        status.active_calls, status.listen_streams, (rss1 as f64 - rss0 as f64) * 100.0 / rss0.max(1) as f64
    );
    // The server runs in this process: its RSS is this process's (the client side's share is
    // its 16–64 connections' buffers, allocated during warm-up).
    let (row, flat) = series_row("http server (this process)", &samples);
    println!("{row}");
    let mut ok = counts.violations.load(Ordering::Relaxed) == 0 && flat;
    if status.active_calls != 0 || status.listen_streams != 0 {
        eprintln!("VIOLATION: server not idle at the end");
        ok = false;
    }
    if tasks > tasks0 {
        eprintln!(
            "VIOLATION: {} server tasks more than after warm-up",
            tasks - tasks0
        );
        ok = false;
    }
    if fds1 > fds0 {
        eprintln!("VIOLATION: {} fds more than after warm-up", fds1 - fds0);
        ok = false;
    }
    let _ = stop_tx.send(());
    server_rt.block_on(async {
        let _ = tokio::time::timeout(Duration::from_secs(5), run).await;
    });
    Ok(ok)
}

// ------------------------------------------------------------------------------------------
// stdio

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Echo,
    Cancelled,
    Status,
}

struct Life {
    pending: Mutex<HashMap<u64, Kind>>,
    status: Mutex<Option<serde_json::Value>>,
}

#[allow(clippy::too_many_arguments)] // one child's whole life; the run's state is passed in
async fn child_life(
    exe: &std::path::Path,
    first_id: u64,
    n: u64,
    inflight: usize,
    kill_at: Option<u64>,
    counts: &Arc<Counts>,
    rng: &mut Rng,
    deadline: Instant,
) -> Result<(Option<(u64, u64, u64, u64)>, Vec<Sample>), String> {
    let born = Instant::now();
    let mut child = tokio::process::Command::new(exe)
        .arg("serve-stdio")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| e.to_string())?;
    counts.children.fetch_add(1, Ordering::Relaxed);
    let pid = child.id().ok_or("child pid")?;
    // The child's RSS at each tenth of its life (the first is after its warm-up).
    let step = (n / SAMPLES).max(1);
    let mut samples: Vec<Sample> = Vec::with_capacity(SAMPLES as usize);
    let mut stdin = child.stdin.take().ok_or("stdin")?;
    let stdout = child.stdout.take().ok_or("stdout")?;
    let life = Arc::new(Life {
        pending: Mutex::default(),
        status: Mutex::default(),
    });
    let slots = Arc::new(tokio::sync::Semaphore::new(inflight));
    let reader = {
        let life = life.clone();
        let counts = counts.clone();
        let slots = slots.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::with_capacity(1 << 16, stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else {
                    counts.violation(&format!("stdio: unparsable line {line}"));
                    continue;
                };
                let Some(id) = v.get("id").and_then(serde_json::Value::as_u64) else {
                    continue; // a notification
                };
                let kind = life.pending.lock().unwrap().remove(&id);
                match kind {
                    Some(Kind::Echo) => {
                        if is_echo_value(&v, id) {
                            counts.answered_ok.fetch_add(1, Ordering::Relaxed);
                        } else {
                            counts.violation(&format!("stdio id {id}: wrong answer {line}"));
                        }
                        slots.add_permits(1);
                    }
                    Some(Kind::Cancelled) => {
                        counts.cancelled_answered.fetch_add(1, Ordering::Relaxed);
                    }
                    Some(Kind::Status) => {
                        *life.status.lock().unwrap() =
                            v.pointer("/result/structuredContent/value").cloned();
                        slots.add_permits(1);
                    }
                    None => counts.violation(&format!(
                        "stdio id {id}: answer to nothing pending (duplicate?)"
                    )),
                }
            }
        })
    };
    let mut batch = Vec::with_capacity(1 << 16);
    let mut id = first_id;
    let mut sent_here = 0u64;
    while sent_here < n && Instant::now() < deadline {
        if Some(sent_here) == kill_at {
            break;
        }
        let permit = slots.acquire().await.map_err(|e| e.to_string())?;
        permit.forget();
        id += 1;
        sent_here += 1;
        counts.sent.fetch_add(1, Ordering::Relaxed);
        if sent_here.is_multiple_of(step) && samples.len() < SAMPLES as usize {
            samples.push((sent_here, born.elapsed().as_secs_f64(), rss_kib_of(pid)));
        }
        if rng.below(100) < 5 {
            life.pending.lock().unwrap().insert(id, Kind::Cancelled);
            batch
                .extend_from_slice(call_line(id, "slow", serde_json::json!({"ms": 50})).as_bytes());
            batch.push(b'\n');
            stdin.write_all(&batch).await.map_err(|e| e.to_string())?;
            batch.clear();
            tokio::time::sleep(Duration::from_micros(rng.below(2000))).await;
            let cancel = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id, "reason": "soak"}});
            batch.extend_from_slice(cancel.to_string().as_bytes());
            batch.push(b'\n');
            counts.cancelled.fetch_add(1, Ordering::Relaxed);
            slots.add_permits(1); // a cancelled call may stay unanswered
        } else {
            life.pending.lock().unwrap().insert(id, Kind::Echo);
            batch.extend_from_slice(echo_request(id).as_bytes());
            batch.push(b'\n');
        }
        if slots.available_permits() == 0 || batch.len() > 32 * 1024 {
            stdin.write_all(&batch).await.map_err(|e| e.to_string())?;
            batch.clear();
        }
    }
    stdin.write_all(&batch).await.map_err(|e| e.to_string())?;
    stdin.flush().await.map_err(|e| e.to_string())?;
    if kill_at.is_some() && sent_here < n {
        child.start_kill().map_err(|e| e.to_string())?;
        let _ = child.wait().await;
        let _ = reader.await;
        counts.kills.fetch_add(1, Ordering::Relaxed);
        let lost = life
            .pending
            .lock()
            .unwrap()
            .values()
            .filter(|k| **k == Kind::Echo)
            .count();
        counts
            .lost_with_child
            .fetch_add(lost as u64, Ordering::Relaxed);
        return Ok((None, samples));
    }
    // Graceful end: every echo answered, then the status, then stdin closed.
    let all_in = Instant::now() + Duration::from_secs(30);
    while life
        .pending
        .lock()
        .unwrap()
        .values()
        .any(|k| *k == Kind::Echo)
    {
        if Instant::now() > all_in {
            counts.violation("stdio: echoes unanswered 30 s after the last was sent");
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Cancelled calls end within their 50 ms; let them.
    tokio::time::sleep(Duration::from_millis(100)).await;
    id += 1;
    life.pending.lock().unwrap().insert(id, Kind::Status);
    stdin
        .write_all(format!("{}\n", call_line(id, "status", serde_json::json!({}))).as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    stdin.flush().await.map_err(|e| e.to_string())?;
    let got = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = life.status.lock().unwrap().take() {
            break s;
        }
        if Instant::now() > got {
            return Err("no status answer".into());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    drop(stdin);
    let exit = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .map_err(|_| "child did not exit after stdin closed")?
        .map_err(|e| e.to_string())?;
    let _ = reader.await;
    if !exit.success() {
        counts.violation(&format!("stdio child exited with {exit}"));
    }
    // The status call itself is the one active call.
    if status["active_calls"] != 1 || status["listen_streams"] != 0 {
        counts.violation(&format!("stdio child not idle at its end: {status}"));
    }
    Ok((
        Some((
            status["fds"].as_u64().unwrap_or(0),
            status["rss_kib"].as_u64().unwrap_or(0),
            sent_here,
            id,
        )),
        samples,
    ))
}

/// A gracefully ended child: requests it served, its fds and RSS KiB at its end.
type Graceful = (u64, u64, u64);

/// A printed RSS series and whether it stayed flat.
type Row = (String, bool);

/// The children of a stdio run, one after another, until `requests` or `deadline`: per
/// graceful child (requests, its fds and RSS at its end), and per child its RSS row.
fn run_children(
    rt: &tokio::runtime::Runtime,
    exe: &std::path::Path,
    requests: u64,
    inflight: usize,
    deadline: Instant,
    counts: &Arc<Counts>,
) -> Result<(Vec<Graceful>, Vec<Row>), String> {
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    let mut next_id = 0u64;
    let mut graceful = Vec::new();
    let mut rows = Vec::new();
    rt.block_on(async {
        while counts.sent.load(Ordering::Relaxed) < requests && Instant::now() < deadline {
            let left = requests - counts.sent.load(Ordering::Relaxed);
            let n = (20_000 + rng.below(180_000)).min(left);
            let kill_at = (rng.below(2) == 0 && n > 10).then(|| rng.below(n));
            let child = rows.len() + 1;
            let (end, samples) = child_life(
                exe, next_id, n, inflight, kill_at, counts, &mut rng, deadline,
            )
            .await?;
            let how = match end {
                Some((fds, rss, sent, last)) => {
                    graceful.push((sent, fds, rss));
                    next_id = last + 1;
                    "ended"
                }
                None => {
                    next_id += n + 1;
                    "killed"
                }
            };
            rows.push(series_row(
                &format!("stdio child {child} ({how})"),
                &samples,
            ));
        }
        Ok::<_, String>(())
    })?;
    Ok((graceful, rows))
}

fn run_stdio(
    requests: u64,
    inflight: usize,
    secs: u64,
) -> Result<bool, Box<dyn std::error::Error>> {
    let exe = std::env::current_exe()?;
    // Built before the first fd count: its signal driver opens tokio's process-wide signal
    // pipe, which stays open for the process's life.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let counts = Arc::new(Counts::default());
    let start = Instant::now();
    let deadline = start + Duration::from_secs(secs);
    let (fds0, rss0) = (fds(), rss_kib());
    let stop = AtomicBool::new(false);
    let (run, harness_samples) = std::thread::scope(|scope| {
        let sampler = scope.spawn(|| {
            sample_self(
                &counts.sent,
                requests,
                start,
                Duration::from_secs(secs),
                &stop,
            )
        });
        let run = run_children(&rt, &exe, requests, inflight, deadline, &counts);
        stop.store(true, Ordering::Relaxed);
        (run, sampler.join().expect("sampler"))
    });
    let (graceful, rows) = run?;
    let secs_run = start.elapsed().as_secs_f64();
    counts.print("stdio", secs_run);
    let (fds1, rss1) = (fds(), rss_kib());
    let lives: Vec<String> = graceful
        .iter()
        .map(|(n, f, r)| format!("{n} req: {f} fds, {r} KiB"))
        .collect();
    println!(
        "stdio children ended gracefully (requests, the child's fds and RSS at its end): {}",
        lives.join("; ")
    );
    for (row, _) in &rows {
        println!("{row}");
    }
    let not_flat = rows.iter().filter(|(_, flat)| !flat).count();
    println!(
        "stdio children: {} of {} beyond ±{FLAT_PCT} % of their post-warm-up RSS",
        not_flat,
        rows.len()
    );
    // The harness's own memory (its pending maps and line buffers): reported, not the product.
    let (row, _) = series_row("stdio harness", &harness_samples);
    println!("{row}");
    println!("stdio harness: fds {fds0} -> {fds1}; RSS {rss0} KiB -> {rss1} KiB");
    let mut ok = counts.violations.load(Ordering::Relaxed) == 0 && not_flat == 0;
    if fds1 > fds0 {
        eprintln!(
            "VIOLATION: harness holds {} more fds (a child's pipes leaked)",
            fds1 - fds0
        );
        ok = false;
    }
    Ok(ok)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize, default: u64| args.get(i).and_then(|s| s.parse().ok()).unwrap_or(default);
    let ok = match args.first().map(String::as_str) {
        Some("serve-stdio") => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()?;
            rt.block_on(async {
                server()?
                    .run_stdio(Caller::new("soak"))
                    .await
                    .map(|_| ())
                    .map_err(Into::<Box<dyn std::error::Error>>::into)
            })?;
            return Ok(());
        }
        Some("http") => run_http(num(1, 1_000_000), num(2, 16), num(3, 3600))?,
        Some("stdio") => run_stdio(num(1, 1_000_000), num(2, 64) as usize, num(3, 3600))?,
        _ => {
            eprintln!("usage: soak http|stdio REQUESTS [CONNS|INFLIGHT] [SECONDS]");
            std::process::exit(2);
        }
    };
    println!(
        "{} UTC; load average: {}",
        String::from_utf8_lossy(
            &std::process::Command::new("date")
                .args(["-u", "+%Y-%m-%d %H:%M"])
                .output()?
                .stdout
        )
        .trim(),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}
