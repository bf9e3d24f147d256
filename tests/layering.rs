//! The layers call only downwards (`generated` ← `wire` ← `codec` ← `machine` ← `core` ←
//! `server` / `client`), everything below the roles builds without tokio or hyper (except
//! `net`, the outbound HTTP below both roles, which names no other layer), and the two roles
//! never import each other: the rules both need live below both (docs/rules.md).
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
    // Scale-out (`crate::scale`, Redis) plugs in from above through the core's traits: the
    // rules of the ledger and the core stay free of any backing store.
    (
        "src/machine",
        &[
            "crate::core",
            "crate::server",
            "crate::client",
            "crate::testing",
            "crate::scale",
            "redis",
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
            "crate::scale",
            "redis",
            "tokio",
            "hyper",
        ],
    ),
    // Outbound HTTP (the dial policy, TLS, the SSRF-safe fetcher) sits below both roles:
    // the client's transport and both roles' OAuth fetchers use it, it names neither.
    (
        "src/net",
        &[
            "crate::codec",
            "crate::machine",
            "crate::core",
            "crate::server",
            "crate::client",
            "crate::testing",
            "crate::scale",
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

/// The scale-out rule catches a planted store import in the core and the ledger machine.
#[test]
fn the_core_and_machine_never_name_scale_or_redis() {
    for room in ["src/core", "src/machine"] {
        let forbidden = RULES.iter().find(|(r, _)| *r == room).unwrap().1;
        for planted in [
            "use crate::scale::RedisLedgerStore;",
            "let c = redis::Client::open(u);",
        ] {
            assert!(
                forbidden.iter().any(|w| planted.contains(w)),
                "{room}: {planted}"
            );
        }
    }
}

/// The command sits on top of everything: nothing of the library (outside `src/cli/` and the
/// binary in `src/bin/`) may name it, so the library builds and reads without the CLI.
const CLI_PATHS: &[&str] = &["crate::cli", "super::cli", "strict_mcp::cli"];

/// Whether `code` names one of `paths` as a whole path segment (`crate::cli`, not
/// `crate::client`).
fn names_cli(code: &str) -> Option<&'static str> {
    CLI_PATHS.iter().copied().find(|path| {
        let whole = code.match_indices(path).any(|(at, _)| {
            let before = code[..at].chars().next_back();
            let after = code[at + path.len()..].chars().next();
            // `super::super::cli` reaches the command as well; `x::crate::cli` cannot exist.
            let whole_before = match before {
                Some(':') => code[..at].ends_with("super::"),
                Some(c) => !is_ident(c),
                None => true,
            };
            whole_before && !after.is_some_and(is_ident)
        });
        // The group form, `use crate::{cli::x, …}`.
        let prefix = &path[..path.len() - "cli".len()];
        whole || names_sibling(code, prefix, "cli")
    })
}

/// The lines of the library's sources outside the command's rooms that name the command.
fn cli_hits(root: &Path) -> Vec<String> {
    let src = root.join("src");
    let mut paths = Vec::new();
    files(&src, &mut paths);
    assert!(
        paths.len() > 10,
        "src has too few sources: the scan is broken"
    );
    let mut hits = Vec::new();
    for path in paths {
        let rel = path.strip_prefix(&src).unwrap();
        if rel.starts_with("cli") || rel.starts_with("bin") {
            continue;
        }
        let code = code_of_all(&std::fs::read_to_string(&path).unwrap());
        for (n, line) in code.lines().enumerate() {
            if let Some(word) = names_cli(line) {
                hits.push(format!(
                    "{}:{}: `{word}` in {}",
                    path.display(),
                    n + 1,
                    line.trim()
                ));
            }
        }
    }
    hits
}

/// Code of a file without comments, test module included (a test may not reach up either).
fn code_of_all(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn nothing_outside_the_command_names_crate_cli() {
    let hits = cli_hits(Path::new(env!("CARGO_MANIFEST_DIR")));
    assert!(
        hits.is_empty(),
        "the library names the command:\n{}",
        hits.join("\n")
    );
}

/// The CLI scan catches what it is for: a planted import in a copy of the tree, while the
/// client (whose path starts with the same letters) and comments pass.
#[test]
fn the_cli_scan_sees_a_planted_import() {
    assert_eq!(names_cli("use crate::cli::exit::Exit;"), Some("crate::cli"));
    assert_eq!(names_cli("use super::cli;"), Some("super::cli"));
    assert_eq!(
        names_cli("strict_mcp::cli::main()"),
        Some("strict_mcp::cli")
    );
    assert_eq!(
        names_cli("use crate::{wire, cli::exit};"),
        Some("crate::cli")
    );
    assert_eq!(names_cli("use crate::client::Client;"), None);
    assert_eq!(names_cli("use super::super::cli::x;"), Some("super::cli"));
    assert_eq!(names_cli("use crate::clip::X;"), None);
    assert_eq!(code_of_all("let a = 1; // crate::cli"), "let a = 1; ");
    // A planted file in a copy of the tree is found, with its path and line.
    let tmp = std::env::temp_dir().join(format!("layering-cli-{}", std::process::id()));
    let planted = tmp.join("src/core");
    std::fs::create_dir_all(&planted).unwrap();
    std::fs::create_dir_all(tmp.join("src/cli")).unwrap();
    for n in 0..10 {
        std::fs::write(planted.join(format!("m{n}.rs")), "pub fn f() {}\n").unwrap();
    }
    std::fs::write(planted.join("bad.rs"), "//! doc\nuse crate::cli::Exit;\n").unwrap();
    std::fs::write(tmp.join("src/cli/ok.rs"), "use crate::cli::Exit;\n").unwrap();
    let hits = cli_hits(&tmp);
    std::fs::remove_dir_all(&tmp).unwrap();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert!(
        hits[0].ends_with("bad.rs:2: `crate::cli` in use crate::cli::Exit;"),
        "{}",
        hits[0]
    );
}

/// The rooms whose child modules must not import each other in a cycle: one concept per
/// module, each importing only the ones below it, so a newcomer can read a room bottom-up.
const ACYCLIC_ROOMS: &[&str] = &["wire", "codec", "machine", "core", "server", "client"];

/// A room's child modules (files and folders, `mod.rs` excluded) with the source files of each.
fn child_modules(room: &Path) -> Vec<(String, Vec<PathBuf>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(room).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            let mut paths = Vec::new();
            files(&path, &mut paths);
            out.push((name, paths));
        } else if path.extension().is_some_and(|e| e == "rs") && name != "mod" {
            out.push((name, vec![path]));
        }
    }
    out.sort();
    out
}

/// Code of a file without comments and without its test module.
fn code_of(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether `code` names the sibling `other` through `prefix` (`super::`, `crate::server::`):
/// as `prefix other` or inside a `prefix{…}` group, at the group's top level.
fn names_sibling(code: &str, prefix: &str, other: &str) -> bool {
    let mut from = 0;
    while let Some(at) = code[from..].find(prefix) {
        let start = from + at;
        let before = code[..start].chars().next_back();
        from = start + prefix.len();
        if before.is_some_and(|c| is_ident(c) || c == ':') {
            continue;
        }
        let rest = &code[from..];
        if let Some(after) = rest.strip_prefix(other) {
            if !after.starts_with(is_ident) {
                return true;
            }
        } else if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0usize;
            let mut word = String::new();
            for c in group.chars() {
                if is_ident(c) {
                    word.push(c);
                    continue;
                }
                if depth == 0 && word == other {
                    return true;
                }
                word.clear();
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    _ => {}
                }
            }
        }
    }
    false
}

/// The import edges between a room's child modules.
fn module_graph(root: &Path, room: &str) -> Vec<(String, Vec<String>)> {
    let base = root.join("src").join(room);
    let modules = child_modules(&base);
    let names: Vec<String> = modules.iter().map(|(n, _)| n.clone()).collect();
    modules
        .iter()
        .map(|(name, paths)| {
            let mut edges = Vec::new();
            for path in paths {
                let code = code_of(&std::fs::read_to_string(path).unwrap());
                let depth = path.strip_prefix(&base).unwrap().components().count() - 1;
                let supers = if path.file_name().is_some_and(|f| f == "mod.rs") {
                    depth
                } else {
                    depth + 1
                };
                let prefix = "super::".repeat(supers);
                let absolute = format!("crate::{room}::");
                for other in names.iter().filter(|o| *o != name) {
                    if (names_sibling(&code, &prefix, other)
                        || names_sibling(&code, &absolute, other))
                        && !edges.contains(other)
                    {
                        edges.push(other.clone());
                    }
                }
            }
            (name.clone(), edges)
        })
        .collect()
}

/// A cycle of the graph as the modules on it, if there is one (depth-first search).
fn find_cycle(graph: &[(String, Vec<String>)]) -> Option<Vec<String>> {
    fn visit(
        graph: &[(String, Vec<String>)],
        node: &str,
        path: &mut Vec<String>,
        done: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_owned());
            return Some(cycle);
        }
        if done.iter().any(|n| n == node) {
            return None;
        }
        path.push(node.to_owned());
        let edges = graph.iter().find(|(n, _)| n == node).map(|(_, e)| e);
        for next in edges.into_iter().flatten() {
            if let Some(cycle) = visit(graph, next, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.push(node.to_owned());
        None
    }
    let mut done = Vec::new();
    graph
        .iter()
        .find_map(|(node, _)| visit(graph, node, &mut Vec::new(), &mut done))
}

#[test]
fn no_room_has_an_import_cycle_between_its_modules() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut cycles = Vec::new();
    for room in ACYCLIC_ROOMS {
        let graph = module_graph(root, room);
        assert!(graph.len() > 2, "{room}: the module scan found no modules");
        if let Some(cycle) = find_cycle(&graph) {
            cycles.push(format!("{room}: {}", cycle.join(" -> ")));
        }
    }
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

/// The server's layering reads downwards as its `mod.rs` says: the dispatcher's pieces each
/// import only what sits below them.
#[test]
fn server_modules_import_only_downwards() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let graph = module_graph(root, "server");
    let edges = |name: &str| {
        graph
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, e)| e.clone())
            .unwrap_or_else(|| panic!("no server module `{name}`"))
    };
    // Leaves: nothing of the dispatcher's above them.
    for leaf in [
        "encode",
        "deadline",
        "progress",
        "log",
        "publication",
        "outbox",
    ] {
        for upper in ["admission", "routes", "context", "answer", "mrtr", "tools"] {
            assert!(
                !edges(leaf).contains(&upper.to_owned()),
                "{leaf} imports {upper}"
            );
        }
    }
    // The route table is imported by admission alone; admission by nobody.
    for (name, e) in &graph {
        assert!(
            !e.contains(&"admission".to_owned()),
            "{name} imports admission"
        );
        if name != "admission" {
            assert!(!e.contains(&"routes".to_owned()), "{name} imports routes");
        }
    }
    assert!(edges("admission").contains(&"routes".to_owned()));
    assert!(edges("routes").contains(&"tools".to_owned()));
}

/// The scan and the search see what they are for: every form of a sibling import, and a
/// planted cycle.
#[test]
fn the_cycle_scan_sees_imports_and_a_planted_cycle() {
    assert!(names_sibling(
        "use super::answer::Answer;",
        "super::",
        "answer"
    ));
    assert!(names_sibling(
        "use super::{lock, answer};",
        "super::",
        "answer"
    ));
    assert!(names_sibling(
        "use super::{encode::{a, b}, answer::X};",
        "super::",
        "answer"
    ));
    assert!(!names_sibling(
        "use super::{encode::{answer}};",
        "super::",
        "answer"
    ));
    assert!(!names_sibling(
        "use super::answers::A;",
        "super::",
        "answer"
    ));
    assert!(!names_sibling(
        "use super::super::answer::A;",
        "super::",
        "answer"
    ));
    assert!(names_sibling(
        "crate::server::answer::to_reply(x)",
        "crate::server::",
        "answer"
    ));
    let planted = vec![
        ("a".to_owned(), vec!["b".to_owned()]),
        ("b".to_owned(), vec!["c".to_owned()]),
        ("c".to_owned(), vec!["a".to_owned()]),
        ("d".to_owned(), vec![]),
    ];
    assert_eq!(
        find_cycle(&planted),
        Some(
            vec!["a", "b", "c", "a"]
                .into_iter()
                .map(str::to_owned)
                .collect()
        )
    );
    assert_eq!(find_cycle(&planted[3..]), None);
    assert_eq!(
        code_of("use super::x; // super::y\n#[cfg(test)]\nuse super::z;"),
        "use super::x; "
    );
}

/// A12, C3, M6: the codec's guards hold on the modern path; their only exceptions (a client's
/// response decoded by the server role, a request the server sends) belong to the
/// initialise-era path (feature `legacy`, O126): `decode_client_response` is defined behind
/// the feature and named only under `src/server/legacy/`, and only that module builds a
/// request message; the module itself is compiled only with the feature.
#[test]
fn the_codec_guard_exceptions_live_on_the_legacy_path_only() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ingress = std::fs::read_to_string(root.join("src/codec/ingress.rs")).unwrap();
    let lines: Vec<&str> = ingress.lines().collect();
    let def = lines
        .iter()
        .position(|l| l.starts_with("pub fn decode_client_response("))
        .expect("the exception is defined in the codec");
    assert_eq!(lines[def - 1].trim(), "#[cfg(feature = \"legacy\")]");
    let server_mod = std::fs::read_to_string(root.join("src/server/mod.rs")).unwrap();
    assert!(
        server_mod.contains("#[cfg(feature = \"legacy\")]\npub mod legacy;"),
        "src/server/legacy is compiled only with the feature"
    );
    let legacy_room = root.join("src/server/legacy");
    let mut paths = Vec::new();
    files(&root.join("src"), &mut paths);
    let mut hits = Vec::new();
    for path in paths {
        if path.starts_with(&legacy_room) || path.ends_with("src/codec/ingress.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            // Anywhere: the response exception. In the server: building a request message.
            let in_server = path.starts_with(root.join("src/server"));
            let builds_request = [
                "Message::Request(Request {",
                "Message::Request(RpcRequest {",
                "Message::Request(crate::wire::jsonrpc::Request {",
            ]
            .iter()
            .any(|w| code.contains(w));
            if code.contains("decode_client_response") || (in_server && builds_request) {
                hits.push(format!("{}:{}: {code}", path.display(), n + 1));
            }
        }
    }
    assert!(
        hits.is_empty(),
        "guard exceptions outside src/server/legacy:\n{}",
        hits.join("\n")
    );
}
