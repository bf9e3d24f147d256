//! Running the official SDK peers' drivers (`interop/`) against our example servers: finding
//! an installed peer (a missing one is a skip locally and a failure under `CI=true`),
//! building the conformance server example, and reading a driver's JSON step lines.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

use serde_json::{json, Value};

/// The crate root, where `.interop/` and `interop/` live.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Whether this run is CI's (`CI=true` or `CI=1`), where a missing peer fails.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// The peer at `relative` (from `.ci/install-peers`), or `None` after a skip notice when it
/// is not installed locally; under CI a missing peer fails the test.
pub fn peer(relative: &str) -> Option<PathBuf> {
    let path = root().join(relative);
    if path.exists() {
        return Some(path);
    }
    assert!(
        !in_ci(),
        "{} is missing; CI must run .ci/install-peers before the tests",
        path.display()
    );
    eprintln!(
        "skipping: {} is not installed (run .ci/install-peers)",
        path.display()
    );
    None
}

/// Builds the conformance server example with `features` (a no-op when fresh) in this run's
/// target dir and returns its path.
pub fn conformance_server(features: &[&str]) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"));
    let mut cargo = Command::new(env!("CARGO"));
    cargo.args(["build", "--quiet", "--example", "conformance_server"]);
    if !features.is_empty() {
        cargo.args(["--features", &features.join(",")]);
    }
    let status = cargo
        .current_dir(root())
        .env("CARGO_TARGET_DIR", &target)
        .status()
        .expect("cargo runs");
    assert!(
        status.success(),
        "building the conformance server (features {features:?}) failed"
    );
    let binary = target.join("debug/examples/conformance_server");
    assert!(binary.exists(), "{} not built", binary.display());
    binary
}

/// Runs a driver (`command`, running `script`) from the crate root and returns its JSON
/// lines; panics with its output unless it exited 0 and its last line is `done` with `ok`.
pub fn run_driver(mut command: Command, script: &str) -> Vec<Value> {
    let output = command
        .current_dir(root())
        .env("RUST_LOG", "warn")
        .output()
        .expect("driver runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{script} failed ({}):\n{stdout}\n--- stderr ---\n{stderr}",
        output.status
    );
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert_eq!(
        lines.last().map(|l| (&l["step"], &l["ok"])),
        Some((&json!("done"), &json!(true))),
        "{stdout}"
    );
    lines
}

/// The driver's line for step `name`, which must have succeeded.
pub fn step<'a>(lines: &'a [Value], name: &str) -> &'a Value {
    let line = lines
        .iter()
        .find(|l| l["step"] == name)
        .unwrap_or_else(|| panic!("no `{name}` step in {lines:?}"));
    assert_eq!(line["ok"], true, "{line}");
    line
}
