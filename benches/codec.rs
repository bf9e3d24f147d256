//! Ingress throughput of `codec::decode` against a plain `serde_json::Value` parse of the same
//! bytes, for `tools/call` frames of 1 KiB, 64 KiB and 1 MiB. Target: at most 1.3x the plain
//! parse time. Run: `cargo bench --bench codec`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use strict_mcp::codec::{decode, IngressLimits};

/// A realistic `tools/call` frame of roughly `target` bytes: `_meta`, a tool name and
/// arguments holding an array of records with strings, integers, decimals and nested objects.
fn tools_call(target: usize) -> Vec<u8> {
    let mut rows = Vec::new();
    let mut len = 0;
    let mut i = 0u64;
    while len < target.saturating_sub(400) {
        let row = format!(
            r#"{{"id":{i},"name":"item-{i}","price":{}.{:02},"tags":["a","b\u00e9"],"dim":{{"w":{},"h":{}}},"ok":true}}"#,
            i * 7 % 1000,
            i % 100,
            i % 17,
            i % 23
        );
        len += row.len() + 1;
        rows.push(row);
        i += 1;
    }
    format!(
        r#"{{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{{"name":"bench","version":"1.0.0"}},"io.modelcontextprotocol/clientCapabilities":{{}}}},"name":"ingest","arguments":{{"rows":[{}]}}}}}}"#,
        rows.join(",")
    )
    .into_bytes()
}

/// Seconds per iteration of `a` and of `b`, best of several rounds. The two are measured in
/// alternation so that load from other processes hits both alike.
fn time_pair(mut a: impl FnMut(), mut b: impl FnMut(), iters: u32, rounds: u32) -> (f64, f64) {
    let (mut best_a, mut best_b) = (Duration::MAX, Duration::MAX);
    for _ in 0..rounds {
        let start = Instant::now();
        for _ in 0..iters {
            a();
        }
        best_a = best_a.min(start.elapsed());
        let start = Instant::now();
        for _ in 0..iters {
            b();
        }
        best_b = best_b.min(start.elapsed());
    }
    let per = |d: Duration| d.as_secs_f64() / f64::from(iters);
    (per(best_a), per(best_b))
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing: run quickly then.
    let quick = !std::env::args().any(|a| a == "--bench");
    println!("size      frame_bytes  decode_MB/s  value_MB/s  ratio(decode/value time)");
    for (label, size, iters) in [
        ("1KiB", 1024, 20_000),
        ("64KiB", 64 * 1024, 400),
        ("1MiB", 1024 * 1024, 25),
    ] {
        let frame = tools_call(size);
        assert!(
            decode(&frame, &IngressLimits::SERVER).is_ok(),
            "bench frame must decode"
        );
        let iters = if quick { 1 } else { iters };
        let (t_decode, t_value) = time_pair(
            || {
                let _ = black_box(decode(black_box(&frame), &IngressLimits::SERVER));
            },
            || {
                let _ = black_box(serde_json::from_slice::<serde_json::Value>(black_box(
                    &frame,
                )));
            },
            iters,
            if quick { 1 } else { 15 },
        );
        let mbs = |t: f64| frame.len() as f64 / t / 1e6;
        println!(
            "{label:<9} {:>11}  {:>11.1}  {:>10.1}  {:>6.2}x",
            frame.len(),
            mbs(t_decode),
            mbs(t_value),
            t_decode / t_value
        );
    }
}
