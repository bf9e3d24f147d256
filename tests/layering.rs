//! The layers call only downwards (`generated` ← `wire` ← `codec` ← `machine` ← `core` ←
//! `server` / `client`), everything below the roles builds without tokio or hyper, and the two
//! roles never import each other: the rules both need live below both (docs/rules.md).
//! A source scan, so a violation names the file and line.

use std::path::{Path, PathBuf};

/// What each room may not name: higher layers, the other role, and the async runtime.
const RULES: &[(&str, &[&str])] = &[
    (
        "src/wire",
        &[
            "crate::codec",
            "crate::machine",
            "crate::core",
            "crate::server",
            "crate::client",
            "crate::testing",
            "tokio",
            "hyper",
        ],
    ),
    (
        "src/codec",
        &[
            "crate::machine",
            "crate::core",
            "crate::server",
            "crate::client",
            "crate::testing",
            "tokio",
            "hyper",
        ],
    ),
    (
        "src/machine",
        &[
            "crate::core",
            "crate::server",
            "crate::client",
            "crate::testing",
            "tokio",
            "hyper",
        ],
    ),
    (
        "src/core",
        &[
            "crate::server",
            "crate::client",
            "crate::testing",
            "tokio",
            "hyper",
        ],
    ),
    (
        "src/server",
        &["crate::client", "crate::testing", "super::client"],
    ),
    (
        "src/client",
        &["crate::server", "crate::testing", "super::server"],
    ),
];

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn layers_call_only_downwards_and_the_roles_never_import_each_other() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut hits = Vec::new();
    for (room, forbidden) in RULES {
        let dir = root.join(room);
        let mut paths = Vec::new();
        files(&dir, &mut paths);
        assert!(
            !paths.is_empty(),
            "{room} has no sources: the scan is broken"
        );
        for path in paths {
            let text = std::fs::read_to_string(&path).unwrap();
            for (n, line) in text.lines().enumerate() {
                let code = line.trim_start();
                // Doc comments may mention any layer (links included); code may not.
                if code.starts_with("//") {
                    continue;
                }
                for word in *forbidden {
                    if code.contains(word) {
                        hits.push(format!(
                            "{}:{}: `{word}` in {}",
                            path.display(),
                            n + 1,
                            code
                        ));
                    }
                }
            }
        }
    }
    assert!(hits.is_empty(), "layering violations:\n{}", hits.join("\n"));
}

/// The scan catches what it is for (a planted line in a copy of one rule).
#[test]
fn the_layering_scan_sees_a_planted_violation() {
    let planted = "use crate::server::Server;";
    let forbidden = RULES
        .iter()
        .find(|(room, _)| *room == "src/wire")
        .unwrap()
        .1;
    assert!(forbidden.iter().any(|w| planted.contains(w)));
}
