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

/// Best-of-rounds seconds per iteration of `f`.
fn time(mut f: impl FnMut(), iters: u32) -> f64 {
    let mut best = Duration::MAX;
    for _ in 0..7 {
        let start = Instant::now();
        for _ in 0..iters {
            f();
        }
        best = best.min(start.elapsed());
    }
    best.as_secs_f64() / f64::from(iters)
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
        assert!(decode(&frame, &IngressLimits::SERVER).is_ok(), "bench frame must decode");
        let iters = if quick { 1 } else { iters };
        let t_decode = time(
            || {
                let _ = black_box(decode(black_box(&frame), &IngressLimits::SERVER));
            },
            iters,
        );
        let t_value = time(
            || {
                let _ = black_box(serde_json::from_slice::<serde_json::Value>(black_box(
                    &frame,
                )));
            },
            iters,
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
