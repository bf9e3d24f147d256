//! End-to-end number exactness through the real stdio host (O29, E-section): schema
//! constants and result numbers beyond `u64` and beyond `f64`, and `1.0` versus `1`, leave
//! the server with the bytes they came in with — on `tools/list` and `tools/call`, in both
//! publication modes. The raw stdout line is inspected, never a re-encoded parse.

use std::time::Duration;

use serde_json::value::RawValue;
use strict_mcp::core::{Caller, DynamicOutput, Invocation, RegistryBuilder, ToolDef};
use strict_mcp::server::{Server, ServerOptions};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

/// Beyond u64 (2^64 = 18446744073709551616), beyond f64 range, and a float with a trailing zero.
const INPUT_SCHEMA: &str = r#"{"type":"object","properties":{"n":{"type":"integer","maximum":123456789012345678901234567890},"x":{"type":"number","multipleOf":0.10}}}"#;
const OUTPUT_SCHEMA: &str =
    r#"{"type":"object","properties":{"n":{"type":"integer"},"x":{"type":"number"}}}"#;

/// Echoes its exact argument bytes back as structured content (validated against its output
/// schema on the way out).
fn exact_echo() -> ToolDef {
    ToolDef::dynamic(
        "exact_echo",
        INPUT_SCHEMA,
        Some(OUTPUT_SCHEMA),
        |_inv: Invocation, args: Box<RawValue>| async move {
            let text = args.get();
            let inner = text.trim().trim_start_matches('{').trim_end_matches('}');
            let structured = format!("{{{inner}}}");
            Ok(DynamicOutput {
                content: vec![],
                structured: Some(RawValue::from_string(structured).expect("valid JSON")),
            })
        },
    )
}

/// Returns a number no `f64` can hold. It declares no output schema: a schema validator parses
/// numbers to `f64`, so a validated result beyond ±1.8e308 is refused as `invalid_result`
/// (documented limit); unvalidated structured content passes through byte-exact.
fn huge() -> ToolDef {
    ToolDef::dynamic(
        "huge",
        r#"{"type":"object"}"#,
        None,
        |_inv: Invocation, _args: Box<RawValue>| async move {
            Ok(DynamicOutput {
                content: vec![],
                structured: Some(
                    RawValue::from_string(r#"{"big":1e400,"neg":-0.0}"#.to_owned())
                        .expect("valid JSON"),
                ),
            })
        },
    )
}

/// Runs the stdio host over in-memory pipes, sends `lines`, closes stdin and returns stdout.
async fn exchange(mode: &str, lines: &[String]) -> Vec<String> {
    let registry = RegistryBuilder::new()
        .tool(exact_echo())
        .tool(huge())
        .tool(bounded())
        .build()
        .expect("registry builds");
    let server = Server::new(registry, ServerOptions::new().mode(mode)).expect("server builds");
    let (mut client_w, server_r) = tokio::io::duplex(1 << 20);
    let (server_w, client_r) = tokio::io::duplex(1 << 20);
    let run = tokio::spawn(async move {
        server
            .run_stdio_on(Caller::new("alice"), server_r, server_w)
            .await
    });
    for line in lines {
        client_w.write_all(line.as_bytes()).await.unwrap();
        client_w.write_all(b"\n").await.unwrap();
    }
    drop(client_w);
    let mut out = Vec::new();
    let mut reader = BufReader::new(client_r).lines();
    while let Some(line) = tokio::time::timeout(Duration::from_secs(20), reader.next_line())
        .await
        .expect("EOF within 20 s")
        .unwrap()
    {
        out.push(line);
    }
    tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .expect("host returns")
        .unwrap()
        .expect("host ok");
    out
}

fn line_for(out: &[String], id: u32) -> &str {
    let prefix = format!(r#""id":{id},"#);
    out.iter()
        .find(|l| l.contains(&prefix))
        .unwrap_or_else(|| panic!("no reply for id {id} in {out:?}"))
}

#[tokio::test]
async fn o29_direct_list_and_call_keep_numbers_beyond_u64_and_f64_byte_exact() {
    let args = r#"{"n":123456789012345678901234567890,"x":1.0}"#;
    let out = exchange(
        "direct",
        &[
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"_meta":{META}}}}}"#),
            format!(
                r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"exact_echo","arguments":{args},"_meta":{META}}}}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"huge","arguments":{{}},"_meta":{META}}}}}"#
            ),
        ],
    )
    .await;
    let huge = line_for(&out, 3);
    assert!(
        huge.contains(r#""structuredContent":{"value":{"big":1e400,"neg":-0.0}}"#),
        "{huge}"
    );
    let list = line_for(&out, 1);
    assert!(
        list.contains(r#""maximum":123456789012345678901234567890"#),
        "{list}"
    );
    assert!(list.contains(r#""multipleOf":0.10"#), "{list}");
    let call = line_for(&out, 2);
    assert!(
        call.contains(
            r#""structuredContent":{"value":{"n":123456789012345678901234567890,"x":1.0}}"#
        ),
        "{call}"
    );
    assert!(!call.contains("isError"), "{call}");
}

#[tokio::test]
async fn o29_compact_call_tool_keeps_numbers_beyond_u64_and_f64_byte_exact() {
    let inner = r#"{"n":123456789012345678901234567890,"x":1.0}"#;
    let out = exchange(
        "compact",
        &[
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"get_tool_details","arguments":{{"name":"exact_echo"}},"_meta":{META}}}}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"call_tool","arguments":{{"name":"exact_echo","arguments":{inner}}},"_meta":{META}}}}}"#
            ),
        ],
    )
    .await;
    let details = line_for(&out, 1);
    assert!(
        details.contains(r#""maximum":123456789012345678901234567890"#),
        "{details}"
    );
    let call = line_for(&out, 2);
    assert!(
        call.contains(
            r#""structuredContent":{"value":{"n":123456789012345678901234567890,"x":1.0}}"#
        ),
        "{call}"
    );
}

/// Maximum 2^53 + 1: an `f64` cannot tell 2^53 + 1 from 2^53 + 2, so only an exact
/// comparison refuses the second and admits the first.
fn bounded() -> ToolDef {
    ToolDef::dynamic(
        "bounded",
        r#"{"type":"object","properties":{"n":{"type":"integer","maximum":9007199254740993}},"required":["n"]}"#,
        None,
        |_inv: Invocation, args: Box<RawValue>| async move {
            Ok(DynamicOutput {
                content: vec![],
                structured: Some(args),
            })
        },
    )
}

#[tokio::test]
async fn o107_maximum_beyond_2_pow_53_is_compared_exactly_at_the_bound_and_one_past() {
    let call = |id: u32, n: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"bounded","arguments":{{"n":{n}}},"_meta":{META}}}}}"#
        )
    };
    let out = exchange(
        "direct",
        &[call(1, "9007199254740993"), call(2, "9007199254740994")],
    )
    .await;
    let at = line_for(&out, 1);
    assert!(
        at.contains(r#""structuredContent":{"value":{"n":9007199254740993}}"#),
        "{at}"
    );
    assert!(!at.contains("isError"), "{at}");
    let past = line_for(&out, 2);
    assert!(past.contains(r#""isError":true"#), "{past}");
    assert!(past.contains(r#""code":"invalid_arguments""#), "{past}");
    assert!(past.contains(r#""keyword":"maximum""#), "{past}");
}
