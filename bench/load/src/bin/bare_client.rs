//! The client floor: no MCP library, the least a correct caller does per `tools/call echo`.
//!
//! - `http`: each caller owns one keep-alive HTTP/1.1 connection (hyper `conn::http1` over
//!   hyper-util's `TokioIo`, what `loadgen http` does) and POSTs the request line with the
//!   protocol headers, then parses the JSON body with serde_json and checks id and text.
//! - `stdio`: spawns the server, callers write their request line to its stdin (one `write`
//!   each, under a lock) and wait on a oneshot; one reader task parses every stdout line with
//!   serde_json and hands it to the caller its id names.
//!
//! No `server/discover` is sent: the floor is the round trip itself. See `client_bench` for the
//! command line and the `RESULT` line.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use strict_mcp_load::client_bench::{self, Args, Target, Window};
use strict_mcp_load::{echo_request, is_echo_value, PROTOCOL_VERSION};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::ChildStdin;
use tokio::sync::oneshot;

/// Bytes of child stdout read at once by the reader task.
///
/// The size the bare stdio server reads with: large enough that a burst of 16 answers is one
/// read.
const READ_BUFFER_BYTES: usize = 64 * 1024;

fn main() {
    let args = client_bench::args_or_exit("bare");
    if args.pooled {
        eprintln!("bare_client: --pool is rmcp_client's only");
        std::process::exit(2);
    }
    let rt = client_bench::runtime().expect("tokio runtime");
    match rt.block_on(run(&args)) {
        Ok(line) => println!("{line}"),
        Err(e) => {
            eprintln!("bare_client {}: {e}", args.label);
            std::process::exit(1);
        }
    }
}

async fn run(args: &Args) -> Result<String, String> {
    match &args.target {
        Target::Http { url, pid } => http(args, url, *pid).await,
        Target::Stdio { command } => stdio(args, command).await,
    }
}

// ---------------------------------------------------------------------------------------------
// HTTP

async fn http(args: &Args, url: &str, pid: Option<u32>) -> Result<String, String> {
    let uri: hyper::Uri = url.parse().map_err(|e| format!("bad url: {e}"))?;
    let authority = uri.authority().ok_or("url has no host")?.to_string();
    // One connection up front proves the server answers before the clock starts.
    drop(connect(&authority).await?);
    let window = Window::after(args.warmup, args.measure);
    let shared = Arc::new((uri, authority));
    let callers = client_bench::spawn_callers(
        args.conc,
        window,
        |_| None,
        move |sender: Option<SendRequest<Full<Bytes>>>, seq| {
            let shared = Arc::clone(&shared);
            async move { http_call(sender, &shared.0, &shared.1, seq).await }
        },
    );
    let (tally, client_cpu, server_cpu) = client_bench::measure(window, pid, callers).await;
    Ok(client_bench::report(
        args, tally, window, client_cpu, server_cpu,
    ))
}

async fn connect(authority: &str) -> Result<SendRequest<Full<Bytes>>, String> {
    let stream = tokio::net::TcpStream::connect(authority)
        .await
        .map_err(|e| e.to_string())?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    Ok(sender)
}

/// One round trip on the caller's connection (opened first when it has none); a failed
/// exchange drops the connection so the next call opens a fresh one.
async fn http_call(
    sender: Option<SendRequest<Full<Bytes>>>,
    uri: &hyper::Uri,
    authority: &str,
    seq: u64,
) -> (Option<SendRequest<Full<Bytes>>>, bool) {
    let mut sender = match sender {
        Some(s) => s,
        None => match connect(authority).await {
            Ok(s) => s,
            Err(_) => return (None, false),
        },
    };
    let request = hyper::Request::post(uri.clone())
        .header("host", authority)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", PROTOCOL_VERSION)
        .header("mcp-method", "tools/call")
        .header("mcp-name", "echo")
        .body(Full::new(Bytes::from(echo_request(seq))));
    let Ok(request) = request else {
        return (Some(sender), false);
    };
    let exchange = async {
        sender.ready().await.ok()?;
        let response = sender.send_request(request).await.ok()?;
        let status = response.status();
        let body = response.into_body().collect().await.ok()?.to_bytes();
        Some(status == hyper::StatusCode::OK && json_echo_ok(&body, seq))
    }
    .await;
    match exchange {
        Some(ok) => (Some(sender), ok),
        None => (None, false),
    }
}

fn json_echo_ok(body: &[u8], id: u64) -> bool {
    serde_json::from_slice::<Value>(body).is_ok_and(|v| is_echo_value(&v, id))
}

// ---------------------------------------------------------------------------------------------
// stdio

type Waiters = Mutex<HashMap<u64, oneshot::Sender<Value>>>;

struct Pipe {
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    waiters: Waiters,
}

fn lock(m: &Waiters) -> std::sync::MutexGuard<'_, HashMap<u64, oneshot::Sender<Value>>> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

async fn stdio(args: &Args, command: &[String]) -> Result<String, String> {
    let (program, rest) = command.split_first().ok_or("no server command")?;
    let mut child = tokio::process::Command::new(program)
        .args(rest)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("spawn {program}: {e}"))?;
    let pid = child.id();
    let stdin = child.stdin.take().ok_or("no stdin")?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let pipe = Arc::new(Pipe {
        stdin: tokio::sync::Mutex::new(Some(stdin)),
        waiters: Mutex::new(HashMap::new()),
    });
    let reader = {
        let pipe = Arc::clone(&pipe);
        tokio::spawn(async move {
            let mut lines = BufReader::with_capacity(READ_BUFFER_BYTES, stdout);
            let mut line = String::new();
            loop {
                line.clear();
                match lines.read_line(&mut line).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                let Ok(value) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                let Some(id) = value.get("id").and_then(Value::as_u64) else {
                    continue;
                };
                if let Some(waiter) = lock(&pipe.waiters).remove(&id) {
                    let _ = waiter.send(value);
                }
            }
            // End of output: every caller still waiting fails now, not at the drain.
            lock(&pipe.waiters).clear();
        })
    };
    let window = Window::after(args.warmup, args.measure);
    let callers = client_bench::spawn_callers(args.conc, window, |caller| caller, {
        let pipe = Arc::clone(&pipe);
        move |caller: u64, seq| {
            let pipe = Arc::clone(&pipe);
            async move {
                let id = caller * 1_000_000_000 + seq;
                (caller, stdio_call(&pipe, id).await)
            }
        }
    });
    let (tally, client_cpu, server_cpu) = client_bench::measure(window, pid, callers).await;
    // End of input ends the server; then the reader sees end of output.
    pipe.stdin.lock().await.take();
    let _ = tokio::time::timeout(client_bench::DRAIN, child.wait()).await;
    let _ = child.kill().await;
    reader.abort();
    Ok(client_bench::report(
        args, tally, window, client_cpu, server_cpu,
    ))
}

async fn stdio_call(pipe: &Pipe, id: u64) -> bool {
    let mut line = echo_request(id).into_bytes();
    line.push(b'\n');
    let (tx, rx) = oneshot::channel();
    lock(&pipe.waiters).insert(id, tx);
    {
        let mut stdin = pipe.stdin.lock().await;
        let written = match stdin.as_mut() {
            Some(stdin) => stdin.write_all(&line).await.is_ok(),
            None => false,
        };
        if !written {
            lock(&pipe.waiters).remove(&id);
            return false;
        }
    }
    rx.await.is_ok_and(|v| is_echo_value(&v, id))
}
