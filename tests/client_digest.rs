//! Snapshot digests (O88, O89, O90): the pinned canonical form, golden values, sensitivity to
//! every published field, kind separation, bounds and the owned/borrowed agreement.
//!
//! Golden values were computed by the independent reference implementation in
//! `tests/fixtures/snapshot_digest_v1.py`, not by the code under test.

use serde_json::value::RawValue;
use strict_mcp::client::digest::{
    canonical_json, canonical_snapshot, digest_text, digest_value, Digest, DigestError,
    SnapshotKind, MAX_SNAPSHOT_BYTES, MAX_SNAPSHOT_DEPTH,
};
use strict_mcp::wire::{DiscoverResult, ListToolsResult};

const TOOLS_PAGES: &str = include_str!("fixtures/snapshot_tools_pages.json");

fn hex(kind: SnapshotKind, text: &str) -> String {
    digest_text(kind, text).expect("digest").to_string()
}

/// One tools page with the given fields, for sensitivity tests.
fn page(ttl: &str, scope: &str, tools: &str, meta: &str) -> String {
    format!(
        r#"[{{"tools":[{tools}],"ttlMs":{ttl},"cacheScope":"{scope}","resultType":"complete"{meta}}}]"#
    )
}

const ECHO: &str = r#"{"name":"echo","inputSchema":{"type":"object"}}"#;
const ADD: &str = r#"{"name":"add","inputSchema":{"type":"object"}}"#;

#[test]
fn o89_vector_big_integer_and_number_texts_are_kept_verbatim() {
    let input = r#"{"ttlMs": 18446744073709551617, "cacheScope":"public", "resultType":"complete", "n":[1.50, -0, 1E2, 1.0, 1]}"#;
    assert_eq!(
        canonical_snapshot(SnapshotKind::Discovery, input).unwrap(),
        r#"{"cacheScope":"public","n":[1.50,-0,1E2,1.0,1],"resultType":"complete","ttlMs":18446744073709551617}"#
    );
    assert_eq!(
        hex(SnapshotKind::Discovery, input),
        "87e88cc946160e797244cfa28ac463b6b2f86d86fc15d38605422e4b2f3f28b0"
    );
}

#[test]
fn o89_vector_non_ascii_keys_sort_by_utf16_code_units() {
    // By code point U+FFFF < U+10000; by UTF-16 (0xD800 0xDC00 vs 0xFFFF) it is the reverse.
    let input = r#"{"\uffff":4,"\ud800\udc00":3,"é":2,"z":1,"a":0}"#;
    assert_eq!(
        canonical_snapshot(SnapshotKind::Discovery, input).unwrap(),
        "{\"a\":0,\"z\":1,\"é\":2,\"\u{10000}\":3,\"\u{ffff}\":4}"
    );
    assert_eq!(
        hex(SnapshotKind::Discovery, input),
        "aaf02efce4d4a56e14f76be554557a77a68fd62e81d1e5eeb569c06a773d7864"
    );
}

#[test]
fn o89_vector_string_escapes_follow_rfc8785() {
    let input = r#"{"s":"\u0041\u00e9\n\t\b\f\r\u0001\u001f\"\\\/\u007f\u2028"}"#;
    assert_eq!(
        canonical_snapshot(SnapshotKind::Discovery, input).unwrap(),
        concat!(
            r#"{"s":"Aé\n\t\b\f\r\u0001\u001f\"\\/"#,
            "\u{7f}\u{2028}\"}"
        )
    );
    assert_eq!(
        hex(SnapshotKind::Discovery, input),
        "f3b5121175392e670dc0206206f5adda6a873461f4d5806deee02dac71dc6c43"
    );
}

#[test]
fn o88_o90_golden_two_page_tools_snapshot() {
    assert_eq!(
        canonical_snapshot(SnapshotKind::Tools, TOOLS_PAGES).unwrap(),
        concat!(
            r#"[{"cacheScope":"public","nextCursor":"c1","resultType":"complete","tools":[{"_meta":{"com.example/rank":1},"#,
            r#""inputSchema":{"properties":{"text":{"type":"string"}},"type":"object"},"name":"echo"}],"ttlMs":60000},"#,
            r#"{"_meta":{"com.example/page":2},"cacheScope":"private","resultType":"complete","#,
            r#""tools":[{"inputSchema":{"type":"object"},"name":"add","title":"Add"}],"ttlMs":30000}]"#
        )
    );
    assert_eq!(
        hex(SnapshotKind::Tools, TOOLS_PAGES),
        "c92987e6039ad559857440fb8053b139383f8a44df55ffe551585467c6e692e4"
    );
    assert_eq!(
        hex(SnapshotKind::Prompts, TOOLS_PAGES),
        "96aff1dea8d4ff929e8169e25c0329afaf28f31ec62f1a7641eb3d76b44512df"
    );
}

#[test]
fn o89_prefix_is_version_then_kind_each_nul_terminated() {
    assert_eq!(
        SnapshotKind::ResourceTemplates.prefix(),
        b"strict-mcp/snapshot/v1\0resource-templates\0".to_vec()
    );
    let names: Vec<&str> = SnapshotKind::ALL.iter().map(|k| k.wire_name()).collect();
    assert_eq!(
        names,
        [
            "discovery",
            "tools",
            "resources",
            "resource-templates",
            "resource-read",
            "prompts"
        ]
    );
    // The digest is SHA-256 over exactly prefix || canonical bytes.
    use sha2::{Digest as _, Sha256};
    let text = r#"{"b":1,"a":2}"#;
    let mut hasher = Sha256::new();
    hasher.update(b"strict-mcp/snapshot/v1\0resource-read\0{\"a\":2,\"b\":1}");
    let expected: [u8; 32] = hasher.finalize().into();
    assert_eq!(
        digest_text(SnapshotKind::ResourceRead, text)
            .unwrap()
            .as_bytes(),
        &expected
    );
}

#[test]
fn o90_digest_displays_as_64_lowercase_hex() {
    let digest = digest_text(SnapshotKind::Tools, TOOLS_PAGES).unwrap();
    let text = digest.to_string();
    assert_eq!(text.len(), 64);
    assert!(text
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
    assert_eq!(format!("{digest:?}"), format!("Digest({text})"));
}

#[test]
fn o88_kinds_are_domain_separated() {
    let lists: Vec<String> = [
        SnapshotKind::Tools,
        SnapshotKind::Resources,
        SnapshotKind::ResourceTemplates,
        SnapshotKind::Prompts,
    ]
    .into_iter()
    .map(|k| hex(k, TOOLS_PAGES))
    .collect();
    for (i, a) in lists.iter().enumerate() {
        for b in &lists[i + 1..] {
            assert_ne!(a, b);
        }
    }
    let object = r#"{"contents":[],"ttlMs":0,"cacheScope":"public","resultType":"complete"}"#;
    assert_ne!(
        hex(SnapshotKind::Discovery, object),
        hex(SnapshotKind::ResourceRead, object)
    );
}

#[test]
fn o90_every_published_field_changes_the_digest() {
    let base = hex(SnapshotKind::Tools, &page("60000", "public", ECHO, ""));
    let variants = [
        ("ttlMs", page("60001", "public", ECHO, "")),
        ("cacheScope", page("60000", "private", ECHO, "")),
        (
            "_meta member",
            page("60000", "public", ECHO, r#","_meta":{"com.example/x":1}"#),
        ),
        (
            "entry added",
            page("60000", "public", &format!("{ECHO},{ADD}"), ""),
        ),
    ];
    for (what, text) in &variants {
        assert_ne!(hex(SnapshotKind::Tools, text), base, "{what}");
    }
    // Order of list entries matters.
    assert_ne!(
        hex(
            SnapshotKind::Tools,
            &page("1", "public", &format!("{ECHO},{ADD}"), "")
        ),
        hex(
            SnapshotKind::Tools,
            &page("1", "public", &format!("{ADD},{ECHO}"), "")
        )
    );
    // A _meta member's value, and a number's text (1.0 vs 1), matter.
    assert_ne!(
        hex(
            SnapshotKind::Tools,
            &page("1", "public", ECHO, r#","_meta":{"k":1}"#)
        ),
        hex(
            SnapshotKind::Tools,
            &page("1", "public", ECHO, r#","_meta":{"k":1.0}"#)
        )
    );
    // Page boundaries are part of the snapshot: the same entries paged differently differ.
    let one_page = page("1", "public", &format!("{ECHO},{ADD}"), "");
    let two_pages = format!(
        r#"[{{"tools":[{ECHO}],"nextCursor":"c","ttlMs":1,"cacheScope":"public","resultType":"complete"}},{{"tools":[{ADD}],"ttlMs":1,"cacheScope":"public","resultType":"complete"}}]"#
    );
    assert_ne!(
        hex(SnapshotKind::Tools, &one_page),
        hex(SnapshotKind::Tools, &two_pages)
    );
}

#[test]
fn o90_whitespace_member_order_and_escaping_of_the_input_do_not_matter() {
    let compact = r#"[{"tools":[{"name":"echo","inputSchema":{"type":"object"}}],"ttlMs":5,"cacheScope":"public","resultType":"complete"}]"#;
    let shuffled = "[ {\r\n \"resultType\" : \"complete\",\t\"cacheScope\":\"public\", \"ttlMs\":5,\n \"tools\" : [ { \"inputSchema\":{ \"type\" : \"obj\\u0065ct\" }, \"n\\u0061me\":\"echo\" } ] } ]\n";
    assert_eq!(
        hex(SnapshotKind::Tools, compact),
        hex(SnapshotKind::Tools, shuffled)
    );
}

#[test]
fn o90_owned_and_borrowed_forms_agree() {
    // Typed wire results (owned) against the exact text (borrowed).
    let page_text = r#"{"tools":[{"name":"echo","title":"Echo","inputSchema":{"type":"object","properties":{"n":{"type":"integer"}}},"_meta":{"com.example/rank":7}}],"nextCursor":"c1","ttlMs":60000,"cacheScope":"private","resultType":"complete","_meta":{"com.example/p":"x"}}"#;
    let typed: ListToolsResult = serde_json::from_str(page_text).unwrap();
    let borrowed = digest_text(SnapshotKind::Tools, &format!("[{page_text}]")).unwrap();
    assert_eq!(
        digest_value(SnapshotKind::Tools, &vec![typed.clone()]).unwrap(),
        borrowed
    );
    assert_eq!(
        digest_value(SnapshotKind::Tools, &[typed.clone()][..]).unwrap(),
        borrowed
    );
    assert_eq!(
        digest_value(SnapshotKind::Tools, &Box::new(vec![typed])).unwrap(),
        borrowed
    );
    // Raw pages serialise as their exact text, big integers and number texts included.
    let pages: Vec<&RawValue> = serde_json::from_str(TOOLS_PAGES).unwrap();
    assert_eq!(pages.len(), 2);
    assert_eq!(
        digest_value(SnapshotKind::Tools, &pages).unwrap(),
        digest_text(SnapshotKind::Tools, TOOLS_PAGES).unwrap()
    );

    let discover_text = r#"{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"s","version":"1"},"instructions":"hi","ttlMs":1000,"cacheScope":"public","resultType":"complete"}"#;
    let typed: DiscoverResult = serde_json::from_str(discover_text).unwrap();
    assert_eq!(
        digest_value(SnapshotKind::Discovery, &typed).unwrap(),
        digest_text(SnapshotKind::Discovery, discover_text).unwrap()
    );
}

/// A discovery snapshot whose encoding is exactly `len` bytes.
fn object_of_len(len: usize) -> String {
    let frame = r#"{"pad":""}"#.len();
    format!(r#"{{"pad":"{}"}}"#, "a".repeat(len - frame))
}

#[test]
fn o89_size_bound_at_and_one_past_for_text() {
    let at = object_of_len(MAX_SNAPSHOT_BYTES);
    assert_eq!(at.len(), MAX_SNAPSHOT_BYTES);
    assert!(digest_text(SnapshotKind::Discovery, &at).is_ok());
    let past = object_of_len(MAX_SNAPSHOT_BYTES + 1);
    assert_eq!(
        digest_text(SnapshotKind::Discovery, &past),
        Err(DigestError::TooLarge {
            limit: MAX_SNAPSHOT_BYTES,
            actual: MAX_SNAPSHOT_BYTES + 1
        })
    );
    // The pre-check runs before decoding: an oversized text that is not even JSON is TooLarge.
    let junk = "x".repeat(MAX_SNAPSHOT_BYTES + 1);
    assert!(matches!(
        digest_text(SnapshotKind::Discovery, &junk),
        Err(DigestError::TooLarge { .. })
    ));
}

#[test]
fn o89_size_bound_at_and_one_past_for_typed_values() {
    let at: serde_json::Value = serde_json::from_str(&object_of_len(MAX_SNAPSHOT_BYTES)).unwrap();
    assert!(digest_value(SnapshotKind::Discovery, &at).is_ok());
    let past: serde_json::Value =
        serde_json::from_str(&object_of_len(MAX_SNAPSHOT_BYTES + 1)).unwrap();
    match digest_value(SnapshotKind::Discovery, &past) {
        Err(DigestError::TooLarge { limit, actual }) => {
            assert_eq!(limit, MAX_SNAPSHOT_BYTES);
            assert!(actual > MAX_SNAPSHOT_BYTES);
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
}

fn nested_objects(levels: usize) -> String {
    format!("{}1{}", r#"{"a":"#.repeat(levels), "}".repeat(levels))
}

#[test]
fn o89_depth_bound_at_and_one_past() {
    assert_eq!(MAX_SNAPSHOT_DEPTH, 64);
    assert!(digest_text(SnapshotKind::Discovery, &nested_objects(MAX_SNAPSHOT_DEPTH)).is_ok());
    assert_eq!(
        digest_text(
            SnapshotKind::Discovery,
            &nested_objects(MAX_SNAPSHOT_DEPTH + 1)
        ),
        Err(DigestError::TooDeep { limit: 64 })
    );
    // Arrays count too; a list snapshot's outer array is level 1.
    let arrays = format!(
        "[{}{}]",
        "[".repeat(MAX_SNAPSHOT_DEPTH - 2) + "{}",
        "]".repeat(MAX_SNAPSHOT_DEPTH - 2)
    );
    assert_eq!(
        canonical_json(&arrays).map(|c| c.len()),
        Ok(arrays.len()),
        "64 levels of arrays and an object"
    );
    // Far past the bound (beyond serde_json's own guard): still TooDeep, never a crash.
    assert_eq!(
        digest_text(SnapshotKind::Discovery, &nested_objects(10_000)),
        Err(DigestError::TooDeep { limit: 64 })
    );
}

#[test]
fn o89_duplicate_member_names_are_refused_after_unescaping() {
    for text in [
        r#"{"a":1,"a":2}"#,
        r#"{"a":1,"\u0061":2}"#,
        r#"{"x":{"k":[{"b":1,"b":1}]}}"#,
    ] {
        assert_eq!(
            digest_text(SnapshotKind::Discovery, text),
            Err(DigestError::DuplicateKey),
            "{text}"
        );
    }
}

#[test]
fn o88_shape_of_each_kind_is_checked() {
    let object = r#"{"ttlMs":1}"#;
    for kind in [
        SnapshotKind::Tools,
        SnapshotKind::Resources,
        SnapshotKind::ResourceTemplates,
        SnapshotKind::Prompts,
    ] {
        for text in [object, "[]", "[1]", r#"[{},[]]"#] {
            assert!(
                matches!(
                    digest_text(kind, text),
                    Err(DigestError::Shape { kind: k, .. }) if k == kind
                ),
                "{kind} {text}"
            );
        }
    }
    for kind in [SnapshotKind::Discovery, SnapshotKind::ResourceRead] {
        for text in ["[{}]", "1", r#""s""#, "null"] {
            assert!(
                matches!(digest_text(kind, text), Err(DigestError::Shape { .. })),
                "{kind} {text}"
            );
        }
    }
}

#[test]
fn o89_invalid_json_is_a_typed_syntax_error() {
    for text in [
        "",
        "{",
        r#"{"a":1} x"#,
        r#"{"a":"\ud800"}"#,
        r#"{"a":NaN}"#,
        r#"{"a":01}"#,
        "\u{feff}{}",
    ] {
        assert_eq!(
            digest_text(SnapshotKind::Discovery, text),
            Err(DigestError::Syntax),
            "{text:?}"
        );
    }
    // Messages never echo snapshot bytes.
    let err = digest_text(SnapshotKind::Tools, r#"{"secret":1}"#).unwrap_err();
    assert!(!err.to_string().contains("secret"));
}

#[test]
fn o90_digest_is_a_plain_copyable_value() {
    let a: Digest = digest_text(SnapshotKind::Tools, TOOLS_PAGES).unwrap();
    let b = a;
    assert_eq!(a, b);
    assert_eq!(a.as_bytes().len(), 32);
}
