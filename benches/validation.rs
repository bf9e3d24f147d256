//! Cost of argument validation: a small argument object and a 64 KiB one, both through the
//! schema alone and through the whole `Registry::call_tool` path (validation, a no-op
//! handler, no output schema). Run with `cargo bench --bench validation`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use strict_mcp::core::schema::CompiledSchema;
use strict_mcp::core::{Caller, DynamicOutput, Invocation, RegistryBuilder, ToolDef, ToolReply};

const SMALL_SCHEMA: &str = r#"{"type":"object","properties":{"query":{"type":"string","maxLength":200},"limit":{"type":"integer","minimum":1,"maximum":20},"exact":{"type":"boolean"}},"required":["query"],"additionalProperties":false}"#;

const LARGE_SCHEMA: &str = r#"{"type":"object","properties":{"records":{"type":"array","items":{"type":"object","properties":{"id":{"type":"integer","minimum":0},"name":{"type":"string","maxLength":64},"score":{"type":"number"},"tags":{"type":"array","items":{"type":"string"},"maxItems":8}},"required":["id","name"],"additionalProperties":false}}},"required":["records"],"additionalProperties":false}"#;

fn large_args() -> String {
    let mut out = String::from(r#"{"records":["#);
    let mut i = 0u64;
    while out.len() < 64 * 1024 - 120 {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&format!(
            r#"{{"id":{i},"name":"record number {i}","score":{}.5,"tags":["alpha","beta"]}}"#,
            i % 97
        ));
        i += 1;
    }
    out.push_str("]}");
    out
}

fn measure(label: &str, bytes: usize, mut op: impl FnMut()) {
    // Warm up, then run for at least ~1 s.
    for _ in 0..50 {
        op();
    }
    let mut iterations = 0u64;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(1) {
        for _ in 0..20 {
            op();
        }
        iterations += 20;
    }
    let elapsed = start.elapsed();
    let per = elapsed.as_nanos() as f64 / iterations as f64;
    let mib_s = (bytes as f64 / (1024.0 * 1024.0)) / (per / 1e9);
    println!("{label:<44} {bytes:>6} B  {per:>12.0} ns/op  {mib_s:>8.1} MiB/s  ({iterations} iterations)");
}

fn main() {
    let small = r#"{"query":"list open merge requests","limit":5,"exact":false}"#.to_owned();
    let large = large_args();
    assert!(
        large.len() <= 64 * 1024 && large.len() > 63 * 1024,
        "{}",
        large.len()
    );

    let small_schema = CompiledSchema::compile(SMALL_SCHEMA).unwrap();
    let large_schema = CompiledSchema::compile(LARGE_SCHEMA).unwrap();
    assert!(small_schema.validate_bytes(&small).is_ok());
    assert!(large_schema.validate_bytes(&large).is_ok());

    // Breakdown: the Value parse alone (the part that is not schema evaluation).
    measure("parse only: serde_json::Value, small", small.len(), || {
        black_box(serde_json::from_str::<serde_json::Value>(black_box(&small)).is_ok());
    });
    measure("parse only: serde_json::Value, 64 KiB", large.len(), || {
        black_box(serde_json::from_str::<serde_json::Value>(black_box(&large)).is_ok());
    });
    measure("schema: validate_bytes, small", small.len(), || {
        black_box(small_schema.validate_bytes(black_box(&small)).is_ok());
    });
    measure("schema: validate_bytes, 64 KiB", large.len(), || {
        black_box(large_schema.validate_bytes(black_box(&large)).is_ok());
    });
    let bad_small = r#"{"query":"x","limit":50,"extra":1}"#;
    measure(
        "schema: validate_bytes, small, 2 errors",
        bad_small.len(),
        || {
            black_box(small_schema.validate_bytes(black_box(bad_small)).is_err());
        },
    );

    let noop = |schema: &str, name: &str| {
        ToolDef::dynamic(
            name,
            schema,
            None,
            |_i: Invocation, _a: Box<RawValue>| async move { Ok(DynamicOutput::default()) },
        )
    };
    let registry = RegistryBuilder::new()
        .tool(noop(SMALL_SCHEMA, "small"))
        .tool(noop(LARGE_SCHEMA, "large"))
        .build()
        .unwrap();
    let caller = Caller::new("bench");
    let small_raw = RawValue::from_string(small.clone()).unwrap();
    let large_raw = RawValue::from_string(large.clone()).unwrap();
    let call = |name: &str, raw: &RawValue| {
        let reply = futures_util::FutureExt::now_or_never(registry.call_tool(
            Invocation::new(caller.clone()),
            name,
            Some(raw),
        ))
        .unwrap()
        .unwrap();
        assert!(matches!(reply, ToolReply::Success { .. }));
    };
    measure(
        "registry: call_tool (no-op handler), small",
        small.len(),
        || call("small", &small_raw),
    );
    measure(
        "registry: call_tool (no-op handler), 64 KiB",
        large.len(),
        || call("large", &large_raw),
    );
}
