//! Issue #14's acceptance audit: every client-side requirement ([C]) of sections A–L and
//! O71–O90 of `../shared/spec/REQUIREMENTS.md` is cited by its exact id in a test (a file
//! under `tests/`, or the `#[cfg(test)]` part of a file under `src/`), or is listed in
//! [`NOT_CITED`] with the reason no test of this library can prove it.
//!
//! The list is checked both ways: an uncited id that is not listed fails, and so does a listed
//! id that a test now cites (the reason no longer holds, so the entry goes). A citation is the
//! id, in any case, not preceded by a letter or digit and not followed by a digit: `c10_…`,
//! `(C10, O83)` and `O83:` cite; `C100`, `sha1c10` and a range such as `B9–B12` do not cite
//! the ids inside it. This file itself is not scanned.
#![forbid(unsafe_code)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// [C] ids no test cites, each with why. Host duties are marked [C,H]: the library exposes
/// what a host needs, and the duty itself (rendering, confirming, asking) is the host's.
const NOT_CITED: &[(&str, &str)] = &[
    ("B25", "dual-era probing; this client speaks only 2026-07-28 and never probes (O71)"),
    ("B27", "[C,H] icon rendering is the host's"),
    (
        "C12",
        "no restart by design: a dead stdio child fails every call fast with its exit status \
         and a side-effecting call is never replayed; restarting is the host's decision",
    ),
    ("C15", "no TCP or Unix-socket transport is offered"),
    ("C16", "the stdio transport has no auth layer at all; credentials come from the environment the host passes"),
    ("C17", "MAY: stdio has no header layer, so there is nothing to ignore or observe"),
    ("D39", "dual-era HTTP fallback; this client never falls back to initialize (O71, O72)"),
    ("D40", "SHOULD NOT: the deprecated HTTP+SSE transport is not implemented"),
    ("E26", "[C,H] a human in the loop is the host's"),
    ("G13", "debouncing completion requests is a UI concern; the library sends what it is asked"),
    ("H10", "the library keeps no cache; a host that caches gets the typed hints and listen stream"),
    ("H12", "the library keeps no cache to serve stale entries from"),
    ("I21", "[C,H] pre-filling and validating form answers is the host's"),
    ("I23", "[C,H] showing the asking server and the decline/cancel choice is the host's"),
    ("I24", "[C,H] URL-mode consent and display is the host's"),
    ("I27", "[C,H] manual retry and cancel controls are the host's"),
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The [C] ids of sections A–L and O71–O90.
fn client_ids(requirements: &str) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    let mut section = None;
    for line in requirements.lines() {
        if let Some(rest) = line.strip_prefix("## ") {
            section = rest
                .split_once(". ")
                .map(|(letter, _)| letter.to_owned())
                .filter(|l| l.len() == 1);
            continue;
        }
        let Some(rest) = line.trim_start().strip_prefix("- **") else {
            continue;
        };
        let Some((id, text)) = rest.split_once("**") else {
            continue;
        };
        let (letter, number) = id.split_at(1);
        if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let in_scope = match letter {
            "O" => number.parse::<u32>().is_ok_and(|n| (71..=90).contains(&n)),
            l => section.as_deref() == Some(l) && ("A"..="L").contains(&l),
        };
        if in_scope && scopes_include_client(text) {
            ids.insert(id.to_owned());
        }
    }
    ids
}

/// Whether a scope group such as `[C]`, `[S,C]` or `[C,H]` names the client library.
fn scopes_include_client(text: &str) -> bool {
    text.split('[').skip(1).any(|group| {
        let Some((inner, _)) = group.split_once(']') else {
            return false;
        };
        let tokens: Vec<&str> = inner.split(',').map(str::trim).collect();
        tokens.iter().all(|t| matches!(*t, "S" | "C" | "CLI" | "H")) && tokens.contains(&"C")
    })
}

/// Whether `text` cites `id` (see the module docs).
fn cites(text: &str, id: &str) -> bool {
    let (hay, needle) = (text.as_bytes(), id.as_bytes());
    (0..hay.len().saturating_sub(needle.len() - 1)).any(|at| {
        hay[at..at + needle.len()].eq_ignore_ascii_case(needle)
            && (at == 0 || !hay[at - 1].is_ascii_alphanumeric())
            && hay
                .get(at + needle.len())
                .is_none_or(|b| !b.is_ascii_digit())
    })
}

/// The test text of every `.rs` file under `dir`: all of a file under `tests/`, the part of a
/// file under `src/` from its first `#[cfg(test)]` on.
fn test_texts(dir: &Path, whole: bool, out: &mut Vec<(PathBuf, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            test_texts(&path, whole, out);
        } else if path.extension().is_some_and(|e| e == "rs")
            && path.file_name().is_some_and(|n| n != "client_citations.rs")
        {
            let text = std::fs::read_to_string(&path).expect("read source");
            let text = if whole {
                text
            } else {
                match text.find("#[cfg(test)]") {
                    Some(at) => text[at..].to_owned(),
                    None => continue,
                }
            };
            out.push((path, text));
        }
    }
}

#[test]
fn o71_o90_every_client_requirement_is_cited_by_a_test_or_listed_with_its_reason() {
    let requirements = std::fs::read_to_string(root().join("../shared/spec/REQUIREMENTS.md"))
        .expect("../shared/spec/REQUIREMENTS.md is readable");
    let ids = client_ids(&requirements);
    // The revision's A–L client rules plus O71–O90: a parser that finds far fewer is broken.
    assert!(ids.len() >= 120, "only {} [C] ids found", ids.len());
    let mut texts = Vec::new();
    test_texts(&root().join("tests"), true, &mut texts);
    test_texts(&root().join("src"), false, &mut texts);
    let uncited: BTreeSet<&str> = ids
        .iter()
        .map(String::as_str)
        .filter(|id| !texts.iter().any(|(_, text)| cites(text, id)))
        .collect();
    let listed: BTreeSet<&str> = NOT_CITED.iter().map(|(id, _)| *id).collect();
    let missing: Vec<_> = uncited.difference(&listed).collect();
    let stale: Vec<_> = listed.difference(&uncited).collect();
    assert!(
        missing.is_empty(),
        "[C] requirements no test cites (cite them, or list them in NOT_CITED with a reason): {missing:?}"
    );
    assert!(
        stale.is_empty(),
        "NOT_CITED lists ids that are cited now, or that are no [C] requirement of A-L/O71-O90: {stale:?}"
    );
    assert_eq!(NOT_CITED.len(), listed.len(), "NOT_CITED lists an id twice");
}

#[test]
fn the_audit_reads_scopes_and_citations_exactly() {
    let text = "## B. x\n- **B9** MUST [S,C] a\n- **B10** MUST [S] b\n- **B11** MUST [C,H] c\n\
                ## C. y\n- **B12** MUST [C] wrong section\n- **C1** SHOULD [CLI] d\n\
                ## O. z\n- **O70** MUST [C] e\n- **O71** MUST [C] f\n- **O90** MUST [C] g\n- **O91** MUST [C] h\n";
    assert_eq!(
        client_ids(text).into_iter().collect::<Vec<_>>(),
        ["B11", "B9", "O71", "O90"]
    );
    assert!(cites("fn c10_close()", "C10"));
    assert!(cites("// (C10, O83)", "O83"));
    assert!(cites("C10", "C10"));
    assert!(!cites("C100", "C10"));
    assert!(!cites("sha1c10", "C10"));
    assert!(!cites("B9–B12", "B10"));
}
