//! Validates `contracts/mcp-interface.json` (seed-001; O114, O115, O116): the inventory is
//! consistent and every piece of cited evidence is a test that exists.

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

fn contract() -> Value {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("contracts/mcp-interface.json"))
        .expect("contracts/mcp-interface.json is readable");
    serde_json::from_str(&text).expect("the contract is JSON")
}

fn strs<'a>(v: &'a Value, key: &str) -> Vec<&'a str> {
    v.as_array()
        .unwrap_or_else(|| panic!("{key} is an array"))
        .iter()
        .map(|item| {
            item[key]
                .as_str()
                .unwrap_or_else(|| panic!("{key} is a string"))
        })
        .collect()
}

/// O114: revision 2026-07-28, transports `{id, kind, purpose}`, operations
/// `{id, kind, transportId, purpose}`, every operation on a declared transport, no duplicates.
#[test]
fn o114_inventory_is_consistent() {
    let c = contract();
    assert_eq!(c["protocol"]["revision"], "2026-07-28");
    assert!(matches!(c["mode"].as_str(), Some("planning" | "product")));
    let transports = strs(&c["transports"], "id");
    let unique: BTreeSet<_> = transports.iter().collect();
    assert_eq!(unique.len(), transports.len(), "duplicate transport ids");
    for t in c["transports"].as_array().unwrap() {
        assert!(t["kind"].is_string() && t["purpose"].is_string(), "{t}");
    }
    let ops = c["operations"].as_array().unwrap();
    let mut ids = BTreeSet::new();
    for op in ops {
        let id = op["id"].as_str().unwrap();
        assert!(ids.insert(id), "duplicate operation id {id}");
        let tid = op["transportId"].as_str().unwrap();
        assert!(
            transports.contains(&tid),
            "{id} names unknown transport {tid}"
        );
        assert!(op["kind"].is_string() && op["purpose"].is_string(), "{id}");
    }
}

/// O115: exactly one evidence record per transport and operation, no phantom targets; a
/// proven record has positive and negative integration proof; a deferred one says why.
#[test]
fn o115_one_evidence_record_per_target_and_no_phantoms() {
    let c = contract();
    let mut expected = BTreeSet::new();
    for id in strs(&c["transports"], "id") {
        expected.insert(format!("contract-item/mcp_interface/transport/{id}"));
    }
    for id in strs(&c["operations"], "id") {
        expected.insert(format!("contract-item/mcp_interface/operation/{id}"));
    }
    let mut seen = BTreeSet::new();
    for rec in c["evidence"].as_array().unwrap() {
        let target = rec["target"].as_str().unwrap().to_string();
        assert!(
            expected.contains(&target),
            "phantom evidence target {target}"
        );
        assert!(
            seen.insert(target.clone()),
            "two evidence records for {target}"
        );
        assert!(
            !rec["requirements"].as_array().unwrap().is_empty(),
            "{target} links no requirement"
        );
        match rec["status"].as_str() {
            Some("proven") => {
                for polarity in ["positive", "negative"] {
                    let proofs = rec[polarity].as_array().unwrap();
                    assert!(
                        proofs
                            .iter()
                            .any(|p| p["kind"] == "integration-test"
                                || p["kind"] == "end-to-end-test"),
                        "{target}: {polarity} proof needs an integration or end-to-end test"
                    );
                }
            }
            Some("deferred") => assert!(rec["reason"].is_string(), "{target}: no reason"),
            other => panic!("{target}: unknown status {other:?}"),
        }
    }
    let missing: Vec<_> = expected.difference(&seen).collect();
    assert!(missing.is_empty(), "targets without evidence: {missing:?}");
    if c["mode"] == "product" {
        assert!(
            c["evidence"]
                .as_array()
                .unwrap()
                .iter()
                .all(|r| r["status"] == "proven"),
            "product mode with deferred proof"
        );
    }
}

/// Every cited proof is `path::function` and that test function exists in that file.
#[test]
fn o115_every_cited_test_exists() {
    let c = contract();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut checked = 0;
    for rec in c["evidence"].as_array().unwrap() {
        for polarity in ["positive", "negative"] {
            for proof in rec[polarity].as_array().unwrap() {
                let r = proof["ref"].as_str().unwrap();
                let (file, func) = r.split_once("::").expect("ref is path::function");
                let text = std::fs::read_to_string(root.join(file))
                    .unwrap_or_else(|_| panic!("{r}: {file} does not exist"));
                assert!(
                    text.contains(&format!("fn {func}(")),
                    "{r}: no such test function"
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 0, "the contract cites no evidence");
}
