//! The Skills extension (SEP-2640) across implementations: the strict client against the
//! TypeScript SDK v2 server serving skills (`interop/node/ts_skills_server.mjs`, its
//! `SkillsExtension` catalog, over stdio), and the `strict-mcp skills …` command against our
//! own conformance server (stdio child) and against a server without the extension.
//!
//! The TypeScript peer comes from `.ci/install-peers`; without it the test prints why it
//! skips and passes locally, and fails under `CI=true`. Children are ended when each test
//! ends (the stdio transport's close ends the child's process group; the CLI waits for its
//! own child).
#![forbid(unsafe_code)]
#![cfg(all(unix, feature = "stdio"))]

mod support;

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use strict_mcp::client::skills::SkillError;
use strict_mcp::client::stdio::{CommandSpec, StdioTransport};
use strict_mcp::client::{CallOptions, Client, ClientError, ClientOptions};
use strict_mcp::wire::skills::digest;
use support::interop::{conformance_server, peer, root};

const EXE: &str = env!("CARGO_BIN_EXE_strict-mcp");

/// The whole walk against one peer, start included.
const WALK_DEADLINE: Duration = Duration::from_secs(60);

const TS_PDF: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nFill forms as in references/FORMS.md.\n";
const TS_FORMS: &str = "Fields are filled in document order.\n";

#[tokio::test]
async fn strict_client_against_the_ts_sdk_skills_server() {
    let Some(node) = peer(".interop/node/bin/node") else {
        return;
    };
    let script = root().join("interop/node/ts_skills_server.mjs");
    let spec = CommandSpec::new(&node).arg(&script).current_dir(root());
    let transport = Arc::new(StdioTransport::spawn(&spec).expect("spawn the ts skills server"));
    let walk = async {
        let client = Client::connect(transport.clone(), ClientOptions::default())
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "connect: {e}\n--- server stderr ---\n{}",
                    String::from_utf8_lossy(&transport.stderr_tail())
                )
            });
        let plain = CallOptions::default();
        assert!(client.skills_capability().unwrap().directory_read);
        // One skill per page: the walk follows the peer's cursor.
        let first = client.list_skills_page(None, &plain).await.unwrap();
        assert_eq!(first.skills.len(), 1);
        assert!(first.next_cursor.is_some());
        let skills = client.list_skills(&plain).await.unwrap();
        let uris: Vec<&str> = skills.iter().map(|s| s.uri.as_str()).collect();
        assert_eq!(
            uris,
            [
                "skill://code-review/SKILL.md",
                "skill://pdf-processing/SKILL.md"
            ]
        );
        let entry = client
            .get_skill("skill://pdf-processing/SKILL.md", &plain)
            .await
            .unwrap();
        assert_eq!(&entry, &skills[1]);
        let file = entry.file("skill://pdf-processing/SKILL.md").unwrap();
        assert_eq!(file.digest, digest(TS_PDF.as_bytes()));
        assert_eq!(file.size, TS_PDF.len() as u64);
        let loaded = client.load_skill(&entry, &plain).await.unwrap();
        assert_eq!(loaded.manifest, TS_PDF);
        let forms = loaded.resolve("references/FORMS.md").unwrap();
        let bytes = client
            .read_skill_file(&loaded, &forms, &plain)
            .await
            .unwrap();
        assert_eq!(bytes, TS_FORMS.as_bytes());
        let page = client
            .read_directory_page("skill://pdf-processing", None, &plain)
            .await
            .unwrap();
        assert_eq!(page.resources[0].uri, "skill://pdf-processing/SKILL.md");
        let e = client
            .get_skill("skill://nope/SKILL.md", &plain)
            .await
            .unwrap_err();
        assert!(matches!(&e, ClientError::Rpc(r) if r.code == -32602), "{e}");
        client.close().await;
    };
    tokio::time::timeout(WALK_DEADLINE, walk)
        .await
        .expect("the walk ends within its deadline");
}

fn cli(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(EXE)
        .args(args)
        .output()
        .expect("strict-mcp runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn cli_skills_against_our_conformance_server() {
    let server = conformance_server(&[]);
    let stdio = server.display().to_string();
    let (code, out, err) = cli(&["--stdio", &stdio, "skills", "list"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("NAME"), "{out}");
    assert!(
        lines[1].starts_with("pdf-processing")
            && lines[1].contains("skill://pdf-processing/SKILL.md")
            && lines[1].contains("Extract, fill, and assemble PDF documents"),
        "{out}"
    );
    assert!(lines[2].starts_with("code-review"), "{out}");

    let (code, out, err) = cli(&[
        "--stdio",
        &stdio,
        "skills",
        "load",
        "skill://pdf-processing/SKILL.md",
        "references/FORMS.md",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "# Forms\n\nFields are filled in document order.\n");

    let (code, out, err) = cli(&[
        "--stdio",
        &stdio,
        "--json",
        "skills",
        "get",
        "skill://pdf-processing/SKILL.md",
    ]);
    assert_eq!(code, 0, "{err}");
    let records: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let get = records
        .iter()
        .find(|r| r["method"] == "skills/get")
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(get["kind"], "result");
    assert_eq!(
        get["result"]["skill"]["uri"],
        "skill://pdf-processing/SKILL.md"
    );

    // Unknown skill: the server's -32602 (exit 4); an unlisted file: refused before sending
    // (exit 5).
    let (code, _, err) = cli(&["--stdio", &stdio, "skills", "get", "skill://nope/SKILL.md"]);
    assert_eq!(code, 4, "{err}");
    let (code, _, err) = cli(&[
        "--stdio",
        &stdio,
        "skills",
        "load",
        "skill://pdf-processing/SKILL.md",
        "skill://pdf-processing/secret.md",
    ]);
    assert_eq!(code, 5, "{err}");
    assert!(err.contains("is not listed in the resources"), "{err}");
}

#[test]
fn cli_skills_without_the_extension_sends_nothing() {
    let (code, _, err) = cli(&["--demo", "skills", "list"]);
    assert_eq!(code, 5, "{err}");
    assert!(err.contains(&SkillError::NotDeclared.to_string()), "{err}");
}
