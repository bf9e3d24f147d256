//! The initialise era against a real peer (feature `legacy`, issue #18): the official
//! TypeScript SDK v2 client in its default version negotiation (which opens with
//! `initialize`) drives the conformance server built with `legacy` over stdio
//! (`interop/node/ts_legacy.mjs`): ping, tools, resources, prompts, the unknown-resource error
//! and the `confirmation_required` failure (X22). A missing peer fails when `CI=true`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

mod support;

use support::evidence::{Outcome, Recorder};
use support::interop::{self, step};

/// The driver: the TypeScript SDK v2 client in its default negotiation.
const DRIVER: &str = "interop/node/ts_legacy.mjs";

/// The peer at `relative`, or `None` after recording the skip (a missing peer fails under CI).
fn peer(rec: &Recorder, relative: &str) -> Option<PathBuf> {
    let found = interop::peer(relative);
    if found.is_none() {
        rec.skip(&format!("{relative} is not installed"));
    }
    found
}

/// The driver's steps that are one request each, with the method the SDK sent for it and
/// how its answer ended when the step succeeded (`connect` is the `initialize` exchange;
/// the unknown-resource step succeeds only on the server's error).
const STEPS: [(&str, &str, Outcome); 10] = [
    ("connect", "initialize", Outcome::Result),
    ("ping", "ping", Outcome::Result),
    ("tools/list", "tools/list", Outcome::Result),
    ("tools/call", "tools/call", Outcome::Result),
    ("resources/list", "resources/list", Outcome::Result),
    ("resources/read", "resources/read", Outcome::Result),
    ("resources/read-unknown", "resources/read", Outcome::Error),
    ("tools/call-needs-input", "tools/call", Outcome::Result),
    ("prompts/list", "prompts/list", Outcome::Result),
    ("prompts/get", "prompts/get", Outcome::Result),
];

/// Contract evidence (transport `legacy-stdio-server`): each step the SDK client reported
/// done, as the exchange it stands for.
fn observe(rec: &Recorder, lines: &[Value]) {
    for line in lines.iter().filter(|l| l["ok"] == true) {
        if let Some((_, method, outcome)) = STEPS.iter().find(|(s, _, _)| line["step"] == *s) {
            rec.observed("legacy-stdio-server", method, *outcome);
        }
    }
}

fn drive(node: &Path, server: &Path) -> Vec<Value> {
    let mut command = Command::new(node);
    command
        .arg(interop::root().join(DRIVER))
        .arg("--")
        .arg(server)
        .arg("--stdio");
    interop::run_driver(command, DRIVER)
}

#[test]
fn b23_typescript_sdk_default_negotiation_over_stdio() {
    let rec = support::evidence::recorder!();
    let Some(node) = peer(&rec, ".interop/node/bin/node") else {
        return;
    };
    let lines = drive(&node, &interop::conformance_server(&["legacy"]));
    observe(&rec, &lines);
    let connect = step(&lines, "connect");
    assert_eq!(connect["era"], "legacy", "{connect}");
    assert_eq!(connect["protocolVersion"], "2025-11-25");
    assert_eq!(
        connect["capabilities"],
        json!({"completions":{},"logging":{},"prompts":{},"resources":{},"tools":{}})
    );
    assert_eq!(step(&lines, "ping")["result"], json!({}));
    let tools = step(&lines, "tools/list")["tools"]
        .as_array()
        .unwrap()
        .clone();
    assert!(tools.contains(&json!("test_simple_text")), "{tools:?}");
    assert_eq!(
        step(&lines, "tools/call")["result"],
        json!({"content":[{"type":"text","text":"This is a simple text response for testing."}]})
    );
    assert_eq!(
        step(&lines, "resources/list")["resources"],
        json!(["test://static-binary", "test://static-text"])
    );
    assert_eq!(
        step(&lines, "resources/read")["result"]["contents"][0]["text"],
        "This is the content of the static text resource."
    );
    assert_eq!(
        step(&lines, "resources/read-unknown")["message"],
        "Resource not found"
    );
    assert_eq!(
        step(&lines, "tools/call-needs-input")["result"]["isError"],
        true
    );
    assert_eq!(
        step(&lines, "prompts/get")["result"]["messages"][0]["content"]["text"],
        "This is a simple prompt for testing."
    );
}
