//! Rewriting between the eras: a legacy request into the stateless 2026-07-28 request the
//! dispatcher serves, and its reply back into the legacy shape. Only members are moved; every
//! value keeps its exact bytes.

use std::collections::BTreeMap;

use serde_json::value::RawValue;

use super::lifecycle::LegacySession;
use crate::server::encode::error_reply;
use crate::server::{Cause, Reply};
use crate::wire::jsonrpc::{Request, RequestId};
use crate::wire::{meta, PROTOCOL_REVISION};

/// Members of one JSON object, each as its exact text.
type Members = BTreeMap<String, Box<RawValue>>;

/// The legacy request a rewritten one came from: what its reply is rewritten for.
#[derive(Debug, Clone)]
pub struct Original {
    /// The legacy method.
    pub method: String,
    /// The request id, echoed exactly.
    pub id: RequestId,
}

/// Methods of 2026-07-28 only: a legacy session does not have them.
const MODERN_ONLY: [&str; 2] = ["server/discover", "subscriptions/listen"];

/// Result members of 2026-07-28 only: the result kind and the cache hints.
const MODERN_RESULT_MEMBERS: [&str; 3] = ["resultType", "cacheScope", "ttlMs"];

/// The legacy `resources/read` code for an unknown resource (never on the modern path).
pub const LEGACY_RESOURCE_NOT_FOUND: i64 = -32002;

/// The modern request for a legacy one: its params with `_meta` carrying the 2026-07-28
/// version, the capabilities the session lends its calls (what the interaction loop can ask
/// this client; none in stateless mode) and the session's log level; every other member
/// unchanged.
///
/// # Errors
/// The reply to send instead: -32601 for a 2026-07-28-only method, -32602 for params that are
/// not an object or that carry the modern continuation members (a legacy client cannot
/// submit `requestState` / `inputResponses`).
pub fn to_modern(request: Request, session: &LegacySession) -> Result<(Request, Original), Reply> {
    let id = &request.id;
    if MODERN_ONLY.contains(&request.method.as_str()) {
        return Err(error_reply(
            id,
            Cause::MethodNotFound,
            "Method not found",
            None,
        ));
    }
    let mut params: Members = match request.params.as_deref() {
        None => Members::new(),
        Some(raw) => serde_json::from_str(raw.get())
            .map_err(|_| error_reply(id, Cause::InvalidParams, "params must be an object", None))?,
    };
    if params.contains_key("requestState") || params.contains_key("inputResponses") {
        return Err(error_reply(
            id,
            Cause::InvalidParams,
            "requestState and inputResponses are not part of this protocol revision",
            None,
        ));
    }
    let mut meta_members: Members = match params.remove("_meta") {
        None => Members::new(),
        Some(raw) => serde_json::from_str(raw.get())
            .map_err(|_| error_reply(id, Cause::InvalidParams, "_meta must be an object", None))?,
    };
    let text = |s: String| RawValue::from_string(s).ok();
    let version = text(format!("\"{PROTOCOL_REVISION}\""));
    let caps = text(session.lent_capabilities().to_owned());
    let (Some(version), Some(caps)) = (version, caps) else {
        return Err(error_reply(id, Cause::Internal, "Internal error", None));
    };
    meta_members.insert(meta::PROTOCOL_VERSION.to_owned(), version);
    meta_members.insert(meta::CLIENT_CAPABILITIES.to_owned(), caps);
    if let Some(level) = session.log_level() {
        if let Ok(level) = serde_json::value::to_raw_value(level.as_str()) {
            meta_members.insert(meta::LOG_LEVEL.to_owned(), level);
        }
    }
    let rewritten = serde_json::value::to_raw_value(&meta_members)
        .ok()
        .and_then(|m| {
            params.insert("_meta".to_owned(), m);
            serde_json::value::to_raw_value(&params).ok()
        })
        .ok_or_else(|| error_reply(id, Cause::Internal, "Internal error", None))?;
    let original = Original {
        method: request.method.clone(),
        id: request.id.clone(),
    };
    Ok((
        Request {
            id: request.id,
            method: request.method,
            params: Some(rewritten),
        },
        original,
    ))
}

/// The legacy reply for the dispatcher's `line`: a result loses `resultType`, the cache hints
/// and the
/// `serverInfo` member of its `_meta` (an emptied `_meta` goes too); the error for an unknown
/// resource becomes -32002. A line this cannot read is passed on unchanged.
#[must_use]
pub fn to_legacy(original: &Original, line: &str) -> String {
    let Ok(top) = serde_json::from_str::<Members>(line) else {
        return line.to_owned();
    };
    let id = original.id.as_raw().get();
    if let Some(result) = top.get("result") {
        let Some(result) = legacy_result(result) else {
            return line.to_owned();
        };
        return format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#);
    }
    if let Some(error) = top.get("error") {
        if let Some(result) = confirmation_required(original, error) {
            return format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#);
        }
        if let Some(error) = legacy_error(original, error) {
            return format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{error}}}"#);
        }
    }
    line.to_owned()
}

fn legacy_result(result: &RawValue) -> Option<String> {
    let mut members: Members = serde_json::from_str(result.get()).ok()?;
    for modern_only in MODERN_RESULT_MEMBERS {
        members.remove(modern_only);
    }
    if let Some(raw) = members.remove("_meta") {
        let mut m: Members = serde_json::from_str(raw.get()).ok()?;
        m.remove(meta::SERVER_INFO);
        if !m.is_empty() {
            members.insert(
                "_meta".to_owned(),
                serde_json::value::to_raw_value(&m).ok()?,
            );
        }
    }
    serde_json::to_string(&members).ok()
}

/// The message of the `confirmation_required` failure.
pub const CONFIRMATION_REQUIRED_MESSAGE: &str =
    "This tool needs an answer from the user, which this client session cannot provide.";

/// a tool that needs an interaction the session cannot perform (the modern path's
/// -32021, which the 2025 wire does not have) fails as a tool, in the same form as every
/// other direct-mode tool failure: `isError`, the failure envelope as `structuredContent`
/// (it matches the `failure` branch every published output schema carries: a snake_case
/// `code`, `message`, `retryable`) and its JSON as the one text block; `retryable: false`.
fn confirmation_required(original: &Original, error: &RawValue) -> Option<String> {
    if original.method != "tools/call" {
        return None;
    }
    let members: Members = serde_json::from_str(error.get()).ok()?;
    let code: i64 = serde_json::from_str(members.get("code")?.get()).ok()?;
    if code != -32021 {
        return None;
    }
    let failure = serde_json::json!({"failure": {
        "code": "confirmation_required",
        "message": CONFIRMATION_REQUIRED_MESSAGE,
        "retryable": false,
    }});
    let result = serde_json::json!({
        "content": [{"type": "text", "text": failure.to_string()}],
        "structuredContent": failure,
        "isError": true,
    });
    Some(result.to_string())
}

/// Only the unknown-resource error changes (its message and `data.uri` stay); `None` keeps
/// the error as it is.
fn legacy_error(original: &Original, error: &RawValue) -> Option<String> {
    if original.method != "resources/read" {
        return None;
    }
    let members: Members = serde_json::from_str(error.get()).ok()?;
    let code: i64 = serde_json::from_str(members.get("code")?.get()).ok()?;
    let message: String = serde_json::from_str(members.get("message")?.get()).ok()?;
    if code != -32602 || message != "Resource not found" {
        return None;
    }
    // The encoder writes `code` first; only its value changes, every other byte stays.
    let rest = error.get().strip_prefix(r#"{"code":-32602,"#)?;
    Some(format!(r#"{{"code":{LEGACY_RESOURCE_NOT_FOUND},{rest}"#))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn original(method: &str) -> Original {
        Original {
            method: method.to_owned(),
            id: RequestId::integer(7),
        }
    }

    #[test]
    fn a5_b6_a_legacy_result_has_no_result_type_and_no_server_info() {
        let line = r#"{"jsonrpc":"2.0","id":7,"result":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}},"cacheScope":"public","resultType":"complete","tools":[{"n":18446744073709551617}],"ttlMs":5}}"#;
        assert_eq!(
            to_legacy(&original("tools/list"), line),
            r#"{"jsonrpc":"2.0","id":7,"result":{"tools":[{"n":18446744073709551617}]}}"#
        );
        let kept = r#"{"jsonrpc":"2.0","id":7,"result":{"_meta":{"app/x":1,"io.modelcontextprotocol/serverInfo":{}},"resultType":"complete"}}"#;
        assert_eq!(
            to_legacy(&original("tools/list"), kept),
            r#"{"jsonrpc":"2.0","id":7,"result":{"_meta":{"app/x":1}}}"#
        );
    }

    #[test]
    fn o34_x6_only_a_legacy_unknown_resource_becomes_32002() {
        let line = r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Resource not found","data":{"uri":"mem://x"}}}"#;
        assert_eq!(
            to_legacy(&original("resources/read"), line),
            r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32002,"message":"Resource not found","data":{"uri":"mem://x"}}}"#
        );
        assert_eq!(to_legacy(&original("prompts/get"), line), line);
        assert_eq!(to_legacy(&original("tools/call"), line), line);
        let other =
            r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"uri must be a string"}}"#;
        assert_eq!(to_legacy(&original("resources/read"), other), other);
    }

    #[test]
    fn x22_a_tool_needing_an_interaction_fails_as_confirmation_required() {
        let line = r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32021,"message":"Missing required client capability","data":{"requiredCapabilities":{"elicitation":{"form":{}}}}}}"#;
        assert_eq!(
            to_legacy(&original("tools/call"), line),
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"text":"{\"failure\":{\"code\":\"confirmation_required\",\"message\":\"This tool needs an answer from the user, which this client session cannot provide.\",\"retryable\":false}}","type":"text"}],"isError":true,"structuredContent":{"failure":{"code":"confirmation_required","message":"This tool needs an answer from the user, which this client session cannot provide.","retryable":false}}}}"#
        );
        // Not a tool call: the error stays as it is.
        assert_eq!(to_legacy(&original("prompts/get"), line), line);
    }
}
