//! What a request is answered with ([`Answer`]) and the one place an answer becomes its reply
//! line: results get `resultType` and `serverInfo`, a too-large tool result becomes
//! the `result_too_large` failure, errors go through the one error encoder. Every method
//! family returns an [`Answer`]; only [`to_reply`] encodes it.

use std::collections::BTreeMap;

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::encode::{encode_result_raw, error_reply};
use super::publication::{Publication, ResultParts};
use super::{Cause, Reply};
use crate::codec::egress::LineBreaks;
use crate::codec::EgressLimits;
use crate::core::{CoreError, FailureCode};
use crate::wire::jsonrpc::RequestId;
use crate::wire::meta;

/// What one request is answered with.
pub(crate) enum Answer {
    /// A result body (an object without `resultType`/`serverInfo`; both are added here).
    Result {
        body: ResultMembers,
        result_type: &'static str,
    },
    /// A tool call result that, if too large, becomes the `result_too_large` failure.
    ToolResult(ResultParts),
    /// A JSON-RPC error.
    Error {
        cause: Cause,
        message: String,
        data: Option<Value>,
    },
    /// Nothing to send (a listen stream the server already ended, or a client cancellation).
    Silent,
    /// A reply already encoded and size-checked (a read whose time-out covers its final size
    /// check).
    Encoded(Reply),
}

impl Answer {
    pub(crate) fn complete(body: Map<String, Value>) -> Answer {
        Answer::Result {
            body: members(body),
            result_type: "complete",
        }
    }

    pub(crate) fn error(cause: Cause, message: impl Into<String>) -> Answer {
        Answer::Error {
            cause,
            message: message.into(),
            data: None,
        }
    }

    /// -32603 with `data: {"retryable": true}`: a failure of the server's own machinery (the
    /// ledger store, randomness, an encoding) that a retry may not meet again.
    pub(crate) fn internal_retryable() -> Answer {
        Answer::Error {
            cause: Cause::Internal,
            message: "Internal error".to_owned(),
            data: Some(json!({ "retryable": true })),
        }
    }

    pub(crate) fn from_core(e: &CoreError) -> Answer {
        Answer::Error {
            cause: e.cause(),
            message: e.to_string(),
            data: e.data(),
        }
    }
}

/// A page of a registry listing (`resources/list`, `resources/templates/list`,
/// `prompts/list`) under `key`, or its error.
pub(crate) fn page<T: serde::Serialize>(
    page: Result<crate::core::Page<T>, CoreError>,
    key: &str,
) -> Answer {
    match page {
        Ok(p) => match members_text(p.to_result(key).get()) {
            Some(body) => Answer::Result {
                body,
                result_type: "complete",
            },
            None => Answer::error(Cause::Internal, "Internal error"),
        },
        Err(e) => Answer::from_core(&e),
    }
}

/// A `CallToolResult` for a failure found after the fact (`result_too_large`, continuation
/// failures), in the pieces every tool result is written from.
pub(crate) fn failure_result(
    publication: &Publication,
    code: FailureCode,
    message: &str,
) -> ResultParts {
    publication
        .failure_result_parts(code, message)
        // Serialising a `ToolFailure` cannot fail; a bare `isError` result keeps this total.
        .unwrap_or_else(|| ResultParts {
            content: "[]".to_owned(),
            structured: None,
            is_error: true,
            meta_member: None,
            line_breaks: LineBreaks::Absent,
        })
}

/// A result object as its members, sorted by name (unlike the wire-ordered
/// `publication::envelope::OrderedMembers`), each kept as exact JSON text (numbers and strings
/// of tool results are never re-serialised through a float).
pub(crate) type ResultMembers = BTreeMap<String, Box<RawValue>>;

/// The members of a `serde_json` object.
pub(crate) fn members(body: Map<String, Value>) -> ResultMembers {
    body.into_iter()
        .filter_map(|(k, v)| serde_json::value::to_raw_value(&v).ok().map(|raw| (k, raw)))
        .collect()
}

/// The members of an object given as exact JSON text.
pub(crate) fn members_text(text: &str) -> Option<ResultMembers> {
    serde_json::from_str(text).ok()
}

fn raw(text: String) -> Box<RawValue> {
    RawValue::from_string(text)
        .unwrap_or_else(|_| RawValue::from_string("null".to_owned()).expect("null is JSON"))
}

/// An object written from borrowed members in the given order (exact value texts), the way
/// `serde_json` writes a `ResultMembers` map.
struct Object<'a>(Vec<(&'a str, &'a RawValue)>);

impl serde::Serialize for Object<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, value) in &self.0 {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// Serialises borrowed members (valid JSON by construction: no re-parse).
fn object_raw(object: &Object<'_>) -> Box<RawValue> {
    serde_json::value::to_raw_value(object).unwrap_or_else(|_| raw("{}".to_owned()))
}

/// The result text: `body` with `resultType` and `_meta.serverInfo` set. Members are
/// written once, in key order, without copying or re-checking their texts; only a body that
/// brings its own `_meta` has that member read to merge `serverInfo` into it.
pub(crate) fn with_identity(
    body: ResultMembers,
    result_type: &str,
    info: &RawValue,
) -> Box<RawValue> {
    let result_type = serde_json::value::to_raw_value(result_type)
        .unwrap_or_else(|_| raw("\"complete\"".to_owned()));
    let meta_text = match body.get("_meta") {
        None => object_raw(&Object(vec![(meta::SERVER_INFO, info)])),
        Some(existing) => {
            let mut meta: ResultMembers = serde_json::from_str(existing.get()).unwrap_or_default();
            meta.insert(meta::SERVER_INFO.to_owned(), info.to_owned());
            serde_json::value::to_raw_value(&meta).unwrap_or_else(|_| raw("{}".to_owned()))
        }
    };
    let mut members: Vec<(&str, &RawValue)> = Vec::with_capacity(body.len() + 2);
    members.extend(
        body.iter()
            .filter(|(k, _)| k.as_str() != "resultType" && k.as_str() != "_meta")
            .map(|(k, v)| (k.as_str(), &**v)),
    );
    members.push(("resultType", &result_type));
    members.push(("_meta", &meta_text));
    // Keys are unique; the order is the map's (byte order of the key strings).
    members.sort_unstable_by(|a, b| a.0.cmp(b.0));
    object_raw(&Object(members))
}

/// Encodes a complete result with `resultType` and `serverInfo`, checked against the
/// response bound.
pub(crate) fn encode_complete(
    info: &RawValue,
    id: &RequestId,
    body: Map<String, Value>,
    limits: &EgressLimits,
) -> Result<Reply, crate::codec::EgressError> {
    let result = with_identity(members(body), "complete", info);
    encode_result_raw(id, &result, limits).map(|line| Reply { line, status: 200 })
}

/// Turns an answer into the reply: results get `resultType` and `serverInfo`; a
/// too-large tool result becomes the `result_too_large` failure.
/// `info` is the server's encoded identity; `publication` writes the `result_too_large`
/// failure in the server's mode.
pub(crate) fn to_reply(
    info: &RawValue,
    publication: &Publication,
    id: &RequestId,
    answer: Answer,
    limits: &EgressLimits,
) -> Option<Reply> {
    super::fault::point(super::fault::points::REPLY);
    let encoded = |body: ResultMembers, result_type: &str| {
        encode_result_raw(id, &with_identity(body, result_type, info), limits)
    };
    // Tool results are written once from their pieces (no member map, no re-parse).
    let encoded_tool = |parts: &ResultParts| {
        crate::codec::egress::encode_success_pieces(
            id,
            &parts.complete_pieces(info),
            parts.line_breaks(info),
            limits,
        )
    };
    match answer {
        Answer::Silent => None,
        Answer::Encoded(reply) => Some(reply),
        Answer::Error {
            cause,
            message,
            data,
        } => Some(error_reply(id, cause, &message, data)),
        Answer::Result { body, result_type } => Some(match encoded(body, result_type) {
            Ok(line) => Reply { line, status: 200 },
            Err(e) => {
                tracing::warn!(error = %e, "result over its bound");
                // Retrying would build the same result again: say so (O32 shape, every method).
                error_reply(
                    id,
                    Cause::Internal,
                    "The result is too large.",
                    Some(json!({ "retryable": false })),
                )
            }
        }),
        Answer::ToolResult(parts) => Some(match encoded_tool(&parts) {
            Ok(line) => Reply { line, status: 200 },
            Err(e) if e.is_too_large() => {
                let failure = failure_result(
                    publication,
                    FailureCode::ResultTooLarge,
                    "The tool result exceeds the response size limit.",
                );
                match encoded_tool(&failure) {
                    Ok(line) => Reply { line, status: 200 },
                    Err(_) => error_reply(id, Cause::Internal, "Internal error", None),
                }
            }
            Err(_) => error_reply(id, Cause::Internal, "Internal error", None),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The former `with_identity`: insert into the map and serialise it whole.
    fn with_identity_reference(
        mut body: ResultMembers,
        result_type: &str,
        info: &RawValue,
    ) -> String {
        body.insert(
            "resultType".to_owned(),
            raw(Value::String(result_type.to_owned()).to_string()),
        );
        let mut meta: ResultMembers = body
            .get("_meta")
            .and_then(|m| serde_json::from_str(m.get()).ok())
            .unwrap_or_default();
        meta.insert(meta::SERVER_INFO.to_owned(), info.to_owned());
        body.insert(
            "_meta".to_owned(),
            raw(serde_json::to_string(&meta).unwrap_or_else(|_| "{}".to_owned())),
        );
        serde_json::to_string(&body).unwrap_or_else(|_| "{}".to_owned())
    }

    #[test]
    fn a5_b6_o15_tool_results_written_from_parts_match_the_member_map_path() {
        use crate::core::descriptor::ContentBlock;
        let info = raw(r#"{"name":"s\u00e9","version":"1.0"}"#.to_owned());
        let cases = [
            (vec![], None, false),
            (vec![], Some(r#"{"value":null}"#), false),
            (
                vec![ContentBlock::text("a \"quoted\"\nline é")],
                Some(r#"{"value":{"n":1.0,"m":18446744073709551617}}"#),
                false,
            ),
            (
                vec![],
                Some(r#"{"failure":{"code":"x","message":"","retryable":false}}"#),
                true,
            ),
            (vec![ContentBlock::text("")], None, true),
        ];
        for (content, structured, is_error) in cases {
            let parts =
                ResultParts::new(content, structured.map(str::to_owned), is_error).expect("parts");
            let body = parts.body_text();
            let reference =
                with_identity_reference(members_text(&body).expect("object"), "complete", &info);
            assert_eq!(parts.complete_text(&info), reference, "{body}");
            // Absent stays absent: no `isError: false`, no `structuredContent: null`.
            assert_eq!(body.contains("\"isError\""), is_error, "{body}");
            assert_eq!(
                body.contains("\"structuredContent\""),
                structured.is_some(),
                "{body}"
            );
        }
    }

    #[test]
    fn a5_b6_with_identity_writes_the_same_bytes_as_serialising_the_map() {
        let info = raw(r#"{"name":"s\u00e9","version":"1.0"}"#.to_owned());
        for body in [
            "{}",
            r#"{"content":[{"text":"hi","type":"text"}],"isError":false}"#,
            r#"{"structuredContent":{"n":1.0,"m":18446744073709551617},"content":[]}"#,
            r#"{"_meta":{"a.b/c":1,"z":"\u0041"},"content":[]}"#,
            r#"{"_meta":{"io.modelcontextprotocol/serverInfo":0},"x":1}"#,
            r#"{"_meta":[1,2],"x":1}"#,
            r#"{"resultType":"other","\u0000k\"ey\\":1,"é":2,"\u007f":3,"Z":4,"_":5,"a":6}"#,
        ] {
            for result_type in ["complete", "input_required"] {
                let members = members_text(body).expect("object");
                assert_eq!(
                    with_identity(members.clone(), result_type, &info).get(),
                    with_identity_reference(members, result_type, &info),
                    "{body}"
                );
            }
        }
    }
}
