//! Fixtures shared by the integration tests (each test file that needs them says
//! `mod support;`).
#![allow(dead_code)]

pub mod harness;

use std::sync::{Mutex, OnceLock};

/// The example binary, built once per test run so a stale binary is never tested.
pub fn example_binary(name: &str) -> std::path::PathBuf {
    static BUILT: OnceLock<Mutex<Vec<String>>> = OnceLock::new();
    let exe = std::env::current_exe().expect("test executable path");
    let profile_dir = exe
        .parent()
        .and_then(std::path::Path::parent)
        .expect("target/<profile>/deps/<test>");
    let path = profile_dir.join("examples").join(name);
    let built = BUILT.get_or_init(|| Mutex::new(Vec::new()));
    let mut built = built
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !built.iter().any(|b| b == name) {
        let mut cargo = std::process::Command::new(env!("CARGO"));
        cargo.args([
            "build",
            "--quiet",
            "--manifest-path",
            concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"),
            "--example",
            name,
        ]);
        // Build where this test binary was built, however that target dir was chosen.
        if let Some(target_dir) = profile_dir.parent() {
            cargo.arg("--target-dir").arg(target_dir);
        }
        if profile_dir.file_name().is_some_and(|p| p == "release") {
            cargo.arg("--release");
        }
        let status = cargo.status().expect("run cargo build");
        assert!(status.success(), "cargo build --example {name} failed");
        built.push(name.to_owned());
    }
    assert!(path.exists(), "{} missing after the build", path.display());
    path
}

/// The echo tool's input, shared by the HTTP tests.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct EchoIn {
    /// Text to echo.
    pub text: String,
}

/// The echo tool's output, shared by the HTTP tests.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct EchoOut {
    /// The same text.
    pub text: String,
}
/// The protected server's catalogue shared by the auth tests (feature `auth`).
pub mod auth;
/// Running the built `strict-mcp` binary, bounded, and reading its output (the CLI tests).
pub mod cli;
/// Contract evidence: per-test records of observed exchanges, and the check over them.
pub mod evidence;
/// Finding the SDK peers, building the conformance server, reading their drivers' steps.
pub mod interop;
/// Capturing what the process-wide `tracing` subscriber writes (the log tests).
pub mod logs;
/// Raw stdio, HTTP and in-memory peers shared by the evidence, equivalence and sweep tests.
pub mod peers;
