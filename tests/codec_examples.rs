//! Every official 2026-07-28 example that is a whole JSON-RPC message (32 of the 129) decodes
//! in the right direction, keeps its `params`/`result`/`error.data` bytes exactly (O44, O121),
//! and re-encodes to one compact line that decodes to the same message (C1).
//!
//! The examples come from `$(dirname MCP_SCHEMA_PATH)/examples`, default
//! `../shared/schema/2026-07-28/examples`. Missing: the test fails under `CI=true` and is
//! skipped (with a message) otherwise.

use std::path::{Path, PathBuf};

use serde_json::value::RawValue;
use serde_json::Value;
use strict_mcp::codec::{decode, encode_line, EgressLimits, IngressLimits, LineEvent, LineFramer};
use strict_mcp::wire::jsonrpc::{Message, Response};

fn examples_dir() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = match std::env::var_os("MCP_SCHEMA_PATH") {
        Some(schema) => root.join(schema).parent()?.join("examples"),
        None => root.join("../shared/schema/2026-07-28/examples"),
    };
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI=true but the examples directory {} is missing",
        dir.display()
    );
    eprintln!("skipped: examples directory {} not found", dir.display());
    None
}

/// Which side receives this example's message.
fn receiver(type_name: &str) -> IngressLimits {
    if type_name.ends_with("Request") || type_name == "CancelledNotification" {
        IngressLimits::SERVER
    } else {
        IngressLimits::CLIENT
    }
}

fn raw_text(raw: Option<&RawValue>) -> Option<&str> {
    raw.map(RawValue::get)
}

#[test]
fn o121_official_message_examples_decode_with_exact_bytes() {
    let Some(dir) = examples_dir() else { return };
    let mut checked = 0;
    let mut types: Vec<_> = std::fs::read_dir(&dir)
        .expect("examples readable")
        .map(|e| e.expect("entry").path())
        .collect();
    types.sort();
    for type_dir in types {
        let type_name = type_dir
            .file_name()
            .and_then(|n| n.to_str())
            .expect("utf8 name")
            .to_owned();
        let mut files: Vec<_> = std::fs::read_dir(&type_dir)
            .expect("type dir readable")
            .map(|e| e.expect("entry").path())
            .collect();
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file).expect("example readable");
            let original: Value = serde_json::from_str(&text).expect("example is JSON");
            if original.get("jsonrpc").is_none() {
                continue;
            }
            let limits = receiver(&type_name);
            let message = decode(text.as_bytes(), &limits)
                .unwrap_or_else(|r| panic!("{}: {r:?}", file.display()));
            // The retained raw part is a verbatim slice of the file and means the same JSON.
            let (member, raw) = match &message {
                Message::Request(r) => ("params", raw_text(r.params.as_deref())),
                Message::Notification(n) => ("params", raw_text(n.params.as_deref())),
                Message::Response(Response::Success(s)) => ("result", Some(s.result.get())),
                Message::Response(Response::Error(e)) => {
                    ("data", raw_text(e.error.data.as_deref()))
                }
            };
            let expected = match member {
                "data" => original.get("error").and_then(|e| e.get("data")),
                other => original.get(other),
            };
            if let Some(raw) = raw {
                assert!(text.contains(raw), "{}: bytes not kept", file.display());
                let reparsed: Value = serde_json::from_str(raw).expect("raw is JSON");
                assert_eq!(Some(&reparsed), expected, "{}", file.display());
            } else {
                assert_eq!(expected, None, "{}: {member} lost", file.display());
            }
            // As a stdio line: one compact line that frames and decodes to the same message.
            let line = encode_line(&message, &EgressLimits::SERVER).expect("encode");
            let mut framer = LineFramer::new(limits.max_frame_bytes);
            let (used, event) = framer.feed(line.as_bytes());
            assert_eq!(used, line.as_bytes().len());
            let Some(LineEvent::Line(frame)) = event else {
                panic!("{}: not one line", file.display())
            };
            let again = decode(&frame, &limits).expect("re-decode");
            assert_eq!(
                std::mem::discriminant(&again),
                std::mem::discriminant(&message)
            );
            let same: Value = serde_json::from_slice(&frame).expect("json");
            assert_eq!(same, original, "{}", file.display());
            checked += 1;
        }
    }
    assert_eq!(
        checked, 32,
        "the pinned schema ships 32 whole-message examples"
    );
}
