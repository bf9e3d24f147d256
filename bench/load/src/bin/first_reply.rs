//! Time to the first stdio reply after spawn (issue #23): spawns each server command in
//! turn (round-robin, so every server sees the same machine load), writes one `tools/call
//! echo` line at once, and times spawn → the first complete reply line on stdout; then closes
//! stdin and waits for the exit. Prints the median and the 10th / 90th percentile per server
//! and the ratio of the medians to the first server's.
//!
//! `first_reply ROUNDS LABEL=COMMAND [LABEL=COMMAND ...]` (a COMMAND is one program path).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Instant;

use strict_mcp_load::{echo_request, is_echo_success};

fn once(program: &str) -> Result<f64, String> {
    let start = Instant::now();
    let mut child = Command::new(program)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("spawn {program}: {e}"))?;
    let mut stdin = child.stdin.take().ok_or("stdin")?;
    stdin
        .write_all(format!("{}\n", echo_request(1)).as_bytes())
        .map_err(|e| e.to_string())?;
    stdin.flush().map_err(|e| e.to_string())?;
    let mut line = String::new();
    BufReader::new(child.stdout.take().ok_or("stdout")?)
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    let ms = start.elapsed().as_secs_f64() * 1e3;
    drop(stdin);
    let _ = child.wait();
    if !is_echo_success(line.trim_end().as_bytes(), 1) {
        return Err(format!("{program}: unexpected first line {line:?}"));
    }
    Ok(ms)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let rounds: usize = args.next().and_then(|r| r.parse().ok()).unwrap_or(30);
    let servers: Vec<(String, String)> = args
        .filter_map(|a| a.split_once('=').map(|(l, c)| (l.to_owned(), c.to_owned())))
        .collect();
    if servers.is_empty() {
        eprintln!("usage: first_reply ROUNDS LABEL=PROGRAM ...");
        std::process::exit(2);
    }
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); servers.len()];
    for _ in 0..rounds {
        for (i, (_, program)) in servers.iter().enumerate() {
            match once(program) {
                Ok(ms) => times[i].push(ms),
                Err(e) => {
                    eprintln!("first_reply: {e}");
                    std::process::exit(1);
                }
            }
        }
    }
    let pct = |v: &[f64], p: f64| v[((p * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
    println!(
        "{rounds} rounds; load average: {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    println!(
        "| server | median ms | p10 ms | p90 ms | median vs {} |",
        servers[0].0
    );
    println!("|---|---:|---:|---:|---:|");
    let mut base = None;
    for ((label, _), v) in servers.iter().zip(times.iter_mut()) {
        v.sort_by(f64::total_cmp);
        let median = pct(v, 0.5);
        let b = *base.get_or_insert(median);
        println!(
            "| {label} | {median:.2} | {:.2} | {:.2} | {:.2} |",
            pct(v, 0.1),
            pct(v, 0.9),
            median / b
        );
    }
}
