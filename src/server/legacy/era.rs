//! Which era a message belongs to: the same rule on stdio and HTTP.
//!
//! An `initialize` that carries no modern `_meta` and arrives without a 2026-07-28
//! `MCP-Protocol-Version` header starts a legacy session; with either it is a modern request
//! (and gets today's -32601 / 404). Every other request is modern unless it belongs to a live
//! legacy session and carries no modern `_meta`.

use std::collections::BTreeMap;

use serde_json::value::RawValue;

use crate::wire::{meta, PROTOCOL_REVISION};

/// The initialise-era revisions served, newest first. 2025-03-26 is not among them: it
/// requires JSON-RPC batches, which this server never accepts (A-section).
pub const LEGACY_VERSIONS: [&str; 2] = ["2025-11-25", "2025-06-18"];

/// The revision offered to a client that asks for one not served: the newest (the
/// 2025-11-25 lifecycle: the server answers with a version it supports).
pub const LATEST_LEGACY_VERSION: &str = LEGACY_VERSIONS[0];

/// The revision a session runs at when the client asks for `requested`.
#[must_use]
pub fn negotiate(requested: &str) -> &'static str {
    LEGACY_VERSIONS
        .iter()
        .copied()
        .find(|v| *v == requested)
        .unwrap_or(LATEST_LEGACY_VERSION)
}

/// Whether request params carry modern `_meta`: a protocol version or client capabilities
/// under the `io.modelcontextprotocol/` keys. Unreadable params count as not modern;
/// the dispatcher answers them either way.
#[must_use]
pub fn has_modern_meta(params: Option<&RawValue>) -> bool {
    let Some(params) = params else { return false };
    let Ok(members) = serde_json::from_str::<BTreeMap<String, &RawValue>>(params.get()) else {
        return false;
    };
    let Some(raw) = members.get("_meta") else {
        return false;
    };
    serde_json::from_str::<BTreeMap<String, &RawValue>>(raw.get()).is_ok_and(|m| {
        m.contains_key(meta::PROTOCOL_VERSION) || m.contains_key(meta::CLIENT_CAPABILITIES)
    })
}

/// whether this request starts a legacy session. `header` is the HTTP
/// `MCP-Protocol-Version` (always `None` on stdio).
#[must_use]
pub fn starts_legacy_session(
    method: &str,
    params: Option<&RawValue>,
    header: Option<&str>,
) -> bool {
    method == "initialize" && header != Some(PROTOCOL_REVISION) && !has_modern_meta(params)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.to_owned()).unwrap()
    }

    #[test]
    fn b23_negotiation_echoes_a_served_version_and_offers_the_newest_otherwise() {
        assert_eq!(negotiate("2025-06-18"), "2025-06-18");
        assert_eq!(negotiate("2025-11-25"), "2025-11-25");
        assert_eq!(negotiate("2025-03-26"), "2025-11-25");
        assert_eq!(negotiate("2026-07-28"), "2025-11-25");
        assert_eq!(negotiate(""), "2025-11-25");
    }

    #[test]
    fn b23_the_era_rule_is_method_meta_and_header() {
        let plain = raw(
            r#"{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}"#,
        );
        assert!(starts_legacy_session("initialize", Some(&plain), None));
        assert!(starts_legacy_session("initialize", None, None));
        assert!(starts_legacy_session(
            "initialize",
            Some(&plain),
            Some("2025-11-25")
        ));
        assert!(!starts_legacy_session(
            "initialize",
            Some(&plain),
            Some("2026-07-28")
        ));
        assert!(!starts_legacy_session("tools/list", Some(&plain), None));
        let modern = raw(r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#);
        assert!(!starts_legacy_session("initialize", Some(&modern), None));
        let caps_only = raw(r#"{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}"#);
        assert!(!starts_legacy_session("initialize", Some(&caps_only), None));
        let other_meta = raw(r#"{"_meta":{"progressToken":1}}"#);
        assert!(starts_legacy_session("initialize", Some(&other_meta), None));
        assert!(starts_legacy_session("initialize", Some(&raw("[1]")), None));
    }
}
