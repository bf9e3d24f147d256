//! Load generator for the MCP echo servers.
//!
//! ```text
//! loadgen http  --addr 127.0.0.1:PORT --pid PID --conc N [--warmup S] [--measure S] [--label L]
//! loadgen stdio --inflight N [--warmup S] [--measure S] [--label L] -- SERVER_CMD [ARGS...]
//! ```
//!
//! `http`: N keep-alive HTTP/1.1 connections, each sending `tools/call echo` requests one after
//! the other. `stdio`: spawns the server and keeps N requests in flight over its stdin/stdout.
//! Only requests started after the warm-up and finished before the end of the measured window
//! count. Server CPU is read from `/proc/<pid>/stat` at the window's edges. Prints one line:
//! `RESULT label transport conc requests errors req_per_s p50_us p99_us server_cpu_us_per_req
//! server_vmhwm_kib` (the server's peak RSS, `VmHWM` of `/proc/<pid>/status`, read at the
//! window's end; `-` when unreadable).
//! Every loop is bounded by the window (plus a 5 s drain), so the run stops by itself.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use strict_mcp_load::{echo_request, is_echo_success, last_sse_data, process_cpu_us, response_id};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const DRAIN: Duration = Duration::from_secs(5);

struct Args {
    mode: String,
    addr: String,
    path: String,
    pid: Option<u32>,
    conc: usize,
    warmup: Duration,
    measure: Duration,
    label: String,
    command: Vec<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let mode = it.next().ok_or("missing mode: http | stdio")?;
    let mut a = Args {
        mode,
        addr: "127.0.0.1:0".into(),
        path: "/mcp".into(),
        pid: None,
        conc: 1,
        warmup: Duration::from_secs(5),
        measure: Duration::from_secs(10),
        label: String::new(),
        command: Vec::new(),
    };
    let secs = |v: Option<String>| -> Result<Duration, String> {
        v.and_then(|s| s.parse::<f64>().ok())
            .filter(|s| (0.0..=3600.0).contains(s))
            .map(Duration::from_secs_f64)
            .ok_or_else(|| "bad seconds".to_string())
    };
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--addr" => a.addr = it.next().ok_or("--addr needs a value")?,
            "--path" => a.path = it.next().ok_or("--path needs a value")?,
            "--pid" => a.pid = it.next().and_then(|p| p.parse().ok()),
            "--conc" | "--inflight" => {
                a.conc = it
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|&n| (1..=4096).contains(&n))
                    .ok_or("bad concurrency")?;
            }
            "--warmup" => a.warmup = secs(it.next())?,
            "--measure" => a.measure = secs(it.next())?,
            "--label" => a.label = it.next().ok_or("--label needs a value")?,
            "--" => {
                a.command = it.by_ref().collect();
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if a.label.is_empty() {
        a.label = a.mode.clone();
    }
    Ok(a)
}

/// What the measured window produced.
#[derive(Default)]
struct Tally {
    latencies_us: Vec<u32>,
    errors: u64,
}

impl Tally {
    fn merge(&mut self, other: Tally) {
        self.latencies_us.extend(other.latencies_us);
        self.errors += other.errors;
    }
}

/// The measured window: requests sent at or after `start` and answered by `end` count.
#[derive(Clone, Copy)]
struct Window {
    start: Instant,
    end: Instant,
}

impl Window {
    fn counts(&self, sent: Instant, done: Instant) -> bool {
        sent >= self.start && done <= self.end
    }
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("loadgen: {e}");
            std::process::exit(2);
        }
    };
    let threads = std::env::var("LOADGEN_THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(2);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let result = rt.block_on(async {
        match args.mode.as_str() {
            "http" => run_http(&args).await,
            "stdio" => run_stdio(&args).await,
            other => Err(format!("unknown mode {other}")),
        }
    });
    match result {
        Ok(line) => println!("{line}"),
        Err(e) => {
            eprintln!("loadgen {}: {e}", args.label);
            std::process::exit(1);
        }
    }
}

fn report(
    args: &Args,
    transport: &str,
    mut tally: Tally,
    window: Window,
    cpu_us: Option<u64>,
    hwm_kib: Option<u64>,
) -> String {
    tally.latencies_us.sort_unstable();
    let n = tally.latencies_us.len();
    let pct = |p: f64| -> u32 {
        if n == 0 {
            return 0;
        }
        let i = ((p * n as f64).ceil() as usize).clamp(1, n) - 1;
        tally.latencies_us[i]
    };
    let secs = (window.end - window.start).as_secs_f64();
    let cpu = match (cpu_us, n) {
        (Some(c), n) if n > 0 => format!("{:.1}", c as f64 / n as f64),
        _ => "-".into(),
    };
    format!(
        "RESULT {} {} {} {} {} {:.0} {} {} {} {}",
        args.label,
        transport,
        args.conc,
        n,
        tally.errors,
        n as f64 / secs,
        pct(0.50),
        pct(0.99),
        cpu,
        hwm_kib.map_or_else(|| "-".to_owned(), |k| k.to_string())
    )
}

fn cpu_now(pid: Option<u32>) -> Option<u64> {
    pid.and_then(|p| process_cpu_us(p).ok())
}

/// CPU used by `pid` across the window (sleeps until its end).
async fn cpu_over_window(pid: Option<u32>, window: Window) -> Option<u64> {
    tokio::time::sleep_until(window.start.into()).await;
    let before = cpu_now(pid);
    tokio::time::sleep_until(window.end.into()).await;
    let after = cpu_now(pid);
    Some(after?.saturating_sub(before?))
}

// ---------------------------------------------------------------------------------------------
// HTTP

async fn run_http(args: &Args) -> Result<String, String> {
    let now = Instant::now();
    let window = Window {
        start: now + args.warmup,
        end: now + args.warmup + args.measure,
    };
    let uri: hyper::Uri = format!("http://{}{}", args.addr, args.path)
        .parse()
        .map_err(|e| format!("bad address: {e}"))?;
    let mut workers = tokio::task::JoinSet::new();
    for worker in 0..args.conc {
        workers.spawn(http_worker(
            args.addr.clone(),
            uri.clone(),
            worker as u64,
            window,
        ));
    }
    let cpu = cpu_over_window(args.pid, window).await;
    let hwm = vm_hwm_kib(args.pid);
    let mut tally = Tally::default();
    let deadline = tokio::time::Instant::from(window.end + DRAIN);
    while let Ok(Some(joined)) = tokio::time::timeout_at(deadline, workers.join_next()).await {
        if let Ok(t) = joined {
            tally.merge(t);
        }
    }
    workers.abort_all();
    Ok(report(args, "http", tally, window, cpu, hwm))
}

async fn connect(
    addr: &str,
) -> Result<hyper::client::conn::http1::SendRequest<Full<Bytes>>, String> {
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| e.to_string())?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    Ok(sender)
}

async fn http_worker(addr: String, uri: hyper::Uri, worker: u64, window: Window) -> Tally {
    let mut tally = Tally::default();
    let mut sender = None;
    let mut seq = 0u64;
    let host = uri.authority().map(|a| a.to_string()).unwrap_or_default();
    while Instant::now() < window.end {
        let s = match sender.as_mut() {
            Some(s) => s,
            None => match connect(&addr).await {
                Ok(s) => sender.insert(s),
                Err(_) => {
                    if Instant::now() >= window.start {
                        tally.errors += 1;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            },
        };
        seq += 1;
        let id = worker * 1_000_000_000 + seq;
        let request = hyper::Request::post(uri.clone())
            .header("host", &host)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", strict_mcp_load::PROTOCOL_VERSION)
            .header("mcp-method", "tools/call")
            .header("mcp-name", "echo")
            .body(Full::new(Bytes::from(echo_request(id))))
            .expect("request");
        let sent = Instant::now();
        let ok = match send_one(s, request).await {
            Ok((status, sse, body)) => {
                let body = if sse {
                    last_sse_data(&body).unwrap_or_default()
                } else {
                    body.to_vec()
                };
                status == 200 && is_echo_success(&body, id)
            }
            Err(_) => {
                sender = None;
                false
            }
        };
        let done = Instant::now();
        if window.counts(sent, done) {
            if ok {
                let us = (done - sent).as_micros().min(u32::MAX as u128) as u32;
                tally.latencies_us.push(us);
            } else {
                tally.errors += 1;
            }
        }
    }
    tally
}

async fn send_one(
    sender: &mut hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    request: hyper::Request<Full<Bytes>>,
) -> Result<(u16, bool, Bytes), String> {
    sender.ready().await.map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let sse = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok((status, sse, body))
}

// ---------------------------------------------------------------------------------------------
// stdio

async fn run_stdio(args: &Args) -> Result<String, String> {
    let (program, rest) = args
        .command
        .split_first()
        .ok_or("stdio needs -- SERVER_CMD")?;
    let mut child = tokio::process::Command::new(program)
        .args(rest)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("spawn {program}: {e}"))?;
    let pid = child.id();
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let stdout = child.stdout.take().ok_or("no stdout")?;

    let now = Instant::now();
    let window = Window {
        start: now + args.warmup,
        end: now + args.warmup + args.measure,
    };
    let pending: Arc<Mutex<HashMap<u64, Instant>>> = Arc::default();
    let permits = Arc::new(tokio::sync::Semaphore::new(args.conc));
    let outstanding = Arc::new(AtomicU64::new(0));

    let reader = {
        let pending = pending.clone();
        let permits = permits.clone();
        let outstanding = outstanding.clone();
        tokio::spawn(async move {
            let mut tally = Tally::default();
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let done = Instant::now();
                let Some(id) = response_id(line.as_bytes()) else {
                    continue; // a notification or an id-less error
                };
                let Some(sent) = pending.lock().expect("pending").remove(&id) else {
                    continue;
                };
                permits.add_permits(1);
                let ok = is_echo_success(line.as_bytes(), id);
                if window.counts(sent, done) {
                    if ok {
                        let us = (done - sent).as_micros().min(u32::MAX as u128) as u32;
                        tally.latencies_us.push(us);
                    } else {
                        tally.errors += 1;
                    }
                }
                if outstanding.fetch_sub(1, Ordering::AcqRel) == 1 && Instant::now() >= window.end {
                    break;
                }
            }
            tally
        })
    };

    let writer = {
        let pending = pending.clone();
        let outstanding = outstanding.clone();
        tokio::spawn(async move {
            let mut id = 0u64;
            let mut line = Vec::with_capacity(512);
            while Instant::now() < window.end {
                let Ok(Ok(permit)) =
                    tokio::time::timeout_at(window.end.into(), permits.acquire()).await
                else {
                    break;
                };
                permit.forget();
                id += 1;
                line.clear();
                line.extend_from_slice(echo_request(id).as_bytes());
                line.push(b'\n');
                outstanding.fetch_add(1, Ordering::AcqRel);
                pending.lock().expect("pending").insert(id, Instant::now());
                if stdin.write_all(&line).await.is_err() || stdin.flush().await.is_err() {
                    break;
                }
            }
            stdin
        })
    };

    let cpu = cpu_over_window(pid, window).await;
    let hwm = vm_hwm_kib(pid);
    let stdin = writer.await.map_err(|e| e.to_string())?;
    let deadline = tokio::time::Instant::from(window.end + DRAIN);
    // With nothing in flight the reader only ends at end of file: close stdin first. Otherwise
    // it ends when the last answer arrives, and stdin closes after it (so no server gets to
    // cancel an in-flight request because its input ended).
    let stdin = if outstanding.load(Ordering::Acquire) == 0 {
        drop(stdin);
        None
    } else {
        Some(stdin)
    };
    let tally = match tokio::time::timeout_at(deadline, reader).await {
        Ok(Ok(t)) => t,
        _ => return Err("server did not answer every request within the drain".into()),
    };
    drop(stdin);
    if tokio::time::timeout(DRAIN, child.wait()).await.is_err() {
        let _ = child.kill().await;
    }
    Ok(report(args, "stdio", tally, window, cpu, hwm))
}

/// The peak resident set (`VmHWM`, KiB) of process `pid` so far, from `/proc/<pid>/status`.
fn vm_hwm_kib(pid: Option<u32>) -> Option<u64> {
    let pid = pid?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}
