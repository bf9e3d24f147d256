//! Strict reading of JSON objects (envelopes and `tools/call` params) and the result bodies
//! both modes share: the `{"value": …}` / `{"failure": …}` structured envelopes
//! and their `CallToolResult` text.
//!
//! Everything is assembled as JSON *text* around the exact bytes the core produced, so
//! structured results and schemas never pass through a float. The `Map` the public API
//! returns is parsed from that text at the very end (see the precision note in the module
//! documentation of [`super`]).

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::codec::egress::LineBreaks;
#[cfg(doc)]
use crate::core::descriptor::CallToolResult;
use crate::core::descriptor::ContentBlock;
use crate::core::{CoreError, ToolFailure};

/// The members of one JSON object, in wire order, each kept as its exact text.
pub(crate) struct OrderedMembers<'a>(pub(crate) Vec<(String, &'a RawValue)>);

impl<'a> OrderedMembers<'a> {
    /// Reads `raw` as an object. Anything else, or a repeated member name, is -32602.
    pub(crate) fn parse(raw: &'a RawValue, what: &str) -> Result<Self, CoreError> {
        let mut de = serde_json::Deserializer::from_str(raw.get());
        de.deserialize_map(OrderedMembersVisitor)
            .map_err(|e| invalid(format!("{what} must be a JSON object: {e}")))
    }

    /// The member called `key`, if present.
    pub(crate) fn get(&self, key: &str) -> Option<&'a RawValue> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    }

    /// -32602 naming the first member outside `allowed`.
    pub(crate) fn only(&self, allowed: &[&str], what: &str) -> Result<(), CoreError> {
        match self.0.iter().find(|(k, _)| !allowed.contains(&k.as_str())) {
            Some((k, _)) => Err(invalid(format!("unknown field `{k}` in {what}"))),
            None => Ok(()),
        }
    }
}

struct OrderedMembersVisitor;

impl<'de> Visitor<'de> for OrderedMembersVisitor {
    type Value = OrderedMembers<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut members: Vec<(String, &'de RawValue)> = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, &'de RawValue>()? {
            if members.iter().any(|(k, _)| *k == key) {
                return Err(serde::de::Error::custom(format!(
                    "duplicate member name `{key}`"
                )));
            }
            members.push((key, value));
        }
        Ok(OrderedMembers(members))
    }
}

pub(crate) fn invalid(message: impl Into<String>) -> CoreError {
    CoreError::InvalidParams {
        message: message.into(),
    }
}

/// A JSON string member (never `null`, never another type).
pub(crate) fn string_member(raw: &RawValue, field: &str) -> Result<String, CoreError> {
    serde_json::from_str::<String>(raw.get())
        .map_err(|_| invalid(format!("`{field}` must be a string")))
}

/// Whether the exact text is a JSON object.
pub(crate) fn is_object(raw: &RawValue) -> bool {
    raw.get().trim_start().starts_with('{')
}

/// The parsed pieces of `tools/call` params that publication needs.
pub(crate) struct CallParams<'a> {
    pub(crate) name: String,
    pub(crate) arguments: Option<&'a RawValue>,
    pub(crate) input_responses: Option<BTreeMap<String, Box<RawValue>>>,
    pub(crate) continuation: bool,
    /// The policy's answer for `name` when the request already asked it (the HTTP header
    /// check of a direct `tools/call`), so publication does not ask again.
    pub(crate) decided: Option<crate::core::Access>,
}

impl<'a> CallParams<'a> {
    /// Reads `{"name", "arguments"?, "_meta", "inputResponses"?, "requestState"?}`. The
    /// dispatcher owns the rest of the request shape; publication checks what it reads.
    pub(crate) fn parse(params: &'a RawValue) -> Result<Self, CoreError> {
        let members = OrderedMembers::parse(params, "params")?;
        Self::from_members(|key| members.get(key))
    }

    /// As [`CallParams::parse`], over members someone already read (the server's params map:
    /// the codec has refused repeated member names). The same checks in the same order.
    pub(crate) fn from_members(
        member: impl Fn(&str) -> Option<&'a RawValue>,
    ) -> Result<Self, CoreError> {
        Self::from_name(Self::read_name(member("name")), member)
    }

    /// The `name` member, checked: required, a string.
    pub(crate) fn read_name(raw: Option<&RawValue>) -> Result<String, CoreError> {
        raw.ok_or_else(|| invalid("`name` is required"))
            .and_then(|raw| string_member(raw, "name"))
    }

    /// As [`CallParams::from_members`], with `name` already read by
    /// [`CallParams::read_name`].
    pub(crate) fn from_name(
        name: Result<String, CoreError>,
        member: impl Fn(&str) -> Option<&'a RawValue>,
    ) -> Result<Self, CoreError> {
        let mut call = Self::without_responses(name, member("arguments"), false)?;
        call.input_responses = match member("inputResponses") {
            None => None,
            Some(raw) => Some(
                serde_json::from_str::<BTreeMap<String, Box<RawValue>>>(raw.get())
                    .map_err(|_| invalid("`inputResponses` must be an object"))?,
            ),
        };
        call.continuation = call.input_responses.is_some() || member("requestState").is_some();
        Ok(call)
    }

    /// The params of a call whose continuation members the server read itself (it binds them
    /// to the ledger and hands the answers to the invocation): `name` as read by
    /// [`CallParams::read_name`], `arguments` checked here, `continuation` as the server saw it.
    pub(crate) fn without_responses(
        name: Result<String, CoreError>,
        arguments: Option<&'a RawValue>,
        continuation: bool,
    ) -> Result<Self, CoreError> {
        let name = name?;
        if arguments.is_some_and(|a| !is_object(a)) {
            return Err(invalid("`arguments` must be an object"));
        }
        Ok(CallParams {
            name,
            arguments,
            input_responses: None,
            continuation,
            decided: None,
        })
    }
}

/// The `structuredContent` text of a result: exact text, or a tool's structured value that
/// is sent wrapped as `{"value": <exact inner text>}`. The wrap is written where the text is
/// written (the reply line, the text copy block), never into a string of its own: the value
/// is not copied once more to wrap it (issue #23: one copy of the result per call).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Structured {
    /// The text as sent.
    Text(String),
    /// The exact text of the value the `{"value": …}` envelope holds.
    Value(String),
}

impl Structured {
    const VALUE_HEAD: &'static str = "{\"value\":";
    const VALUE_TAIL: &'static str = "}";

    /// A tool's structured value, to be sent as `{"value": …}` (its text moved, not copied).
    pub(crate) fn value(inner: Box<RawValue>) -> Structured {
        Structured::Value(String::from(Box::<str>::from(inner)))
    }

    /// The text as sent, in the pieces whose concatenation it is.
    pub(crate) fn pieces(&self) -> [&str; 3] {
        match self {
            Structured::Text(text) => [text, "", ""],
            Structured::Value(inner) => [Self::VALUE_HEAD, inner, Self::VALUE_TAIL],
        }
    }

    /// Its length in bytes as sent.
    pub(crate) fn len(&self) -> usize {
        self.pieces().iter().map(|p| p.len()).sum()
    }

    /// The text as sent, in one string (borrowed when it is one already).
    pub(crate) fn text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Structured::Text(text) => std::borrow::Cow::Borrowed(text),
            Structured::Value(_) => std::borrow::Cow::Owned(self.pieces().concat()),
        }
    }
}

/// `{"failure": {code, message, retryable, diagnostics?}}`.
pub(crate) fn failure_envelope(failure: &ToolFailure) -> Result<String, CoreError> {
    let body =
        serde_json::to_string(failure).map_err(|_| CoreError::Internal { retryable: true })?;
    Ok(format!("{{\"failure\":{body}}}"))
}

/// A complete `CallToolResult` as exact text pieces: the content array and the structured
/// envelope. The server writes the final result (with `resultType` and `_meta`) from these in
/// one pass instead of re-reading a finished body (the pieces are never re-parsed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResultParts {
    /// The `content` array as JSON text.
    pub(crate) content: String,
    /// The `structuredContent` value as exact JSON text, if any.
    pub(crate) structured: Option<Structured>,
    /// Whether the result is a tool failure (`isError: true`; absent otherwise).
    pub(crate) is_error: bool,
    /// One more result `_meta` member, as its exact text `"key":value`, written after
    /// `serverInfo` (its key must sort after it). The Apps shell puts a result's approved
    /// view here.
    pub(crate) meta_member: Option<String>,
    /// Whether `content` or `structured` may hold a raw line break (whitespace of a raw value
    /// a tool passed through), which the reply encoder then compacts away. Found while the
    /// parts are written (the text copy's escape reads every byte of `structured`), so the
    /// finished reply line is not scanned once more (issue #23).
    pub(crate) line_breaks: LineBreaks,
}

impl ResultParts {
    /// The ordered content, then (when there is a structured envelope) a text block holding
    /// the envelope's JSON. `structured` must be one valid JSON value: every caller
    /// builds it from serialised or already validated text.
    pub(crate) fn new(
        content: Vec<ContentBlock>,
        structured: Option<String>,
        is_error: bool,
    ) -> Result<Self, CoreError> {
        Self::with_structured(content, structured.map(Structured::Text), is_error)
    }

    /// [`ResultParts::new`] for structured content that may be a wrapped value.
    pub(crate) fn with_structured(
        content: Vec<ContentBlock>,
        structured: Option<Structured>,
        is_error: bool,
    ) -> Result<Self, CoreError> {
        let Some(text) = &structured else {
            let content = serde_json::to_string(&content)
                .map_err(|_| CoreError::Internal { retryable: true })?;
            let line_breaks = LineBreaks::of(&content);
            return Ok(ResultParts {
                content,
                structured,
                is_error,
                meta_member: None,
                line_breaks,
            });
        };
        debug_assert!(
            serde_json::from_str::<&RawValue>(&text.text()).is_ok(),
            "structured envelope is not JSON: {}",
            text.text()
        );
        // The copy block is written from the borrowed envelope text (no `String` clone), after
        // the other blocks, member for member as `ContentBlock::text` writes
        // (`tests/server_tool_bytes.rs` pins the bytes), the text escaped by `codec::escape`
        // (serde_json's bytes, its plain runs copied whole). Room for it is reserved once the
        // other blocks are written, so the large buffer is not reallocated (a copy of it)
        // unless more than an eighth of the text needs an escape.
        const HEAD: &str = "{\"text\":";
        const TAIL: &str = ",\"type\":\"text\"}]";
        let mut out =
            serde_json::to_string(&content).map_err(|_| CoreError::Internal { retryable: true })?;
        out.pop(); // the array's `]`
                   // The other blocks may carry raw values; the copy below is escaped (no raw breaks).
        let mut line_breaks = LineBreaks::of(&out);
        if !content.is_empty() {
            out.push(',');
        }
        out.reserve(HEAD.len() + crate::codec::escape::reserve_for(text.len()) + TAIL.len());
        out.push_str(HEAD);
        // One string literal of the pieces' concatenation, escaped piece by piece (escaping
        // is per character, so the bytes are those of escaping the whole text at once),
        // straight into the `String`: no UTF-8 check of the copy afterwards.
        // Escaping reads every byte of the structured text, which the reply also carries
        // verbatim: it says whether that text holds a raw line break.
        if crate::codec::escape::write_str_pieces(&mut out, &text.pieces()) {
            line_breaks = LineBreaks::Possible;
        }
        out.push_str(TAIL);
        out.shrink_to_fit();
        let content = out;
        Ok(ResultParts {
            content,
            structured,
            is_error,
            meta_member: None,
            line_breaks,
        })
    }

    /// Whether the reply written from [`ResultParts::complete_pieces`] may hold a raw line
    /// break: one of the parts' own, or one in `server_info` or the extra `_meta` member (both
    /// short, scanned here).
    pub(crate) fn line_breaks(&self, server_info: &RawValue) -> LineBreaks {
        let others = [Some(server_info.get()), self.meta_member.as_deref()];
        if self.line_breaks == LineBreaks::Absent
            && others
                .into_iter()
                .flatten()
                .all(|text| LineBreaks::of(text) == LineBreaks::Absent)
        {
            LineBreaks::Absent
        } else {
            LineBreaks::Possible
        }
    }

    /// The body as the public API returns it: `{"content", "isError"?,
    /// "structuredContent"?}` (the generated member order, which [`CallToolResult`] writes).
    pub(crate) fn body_text(&self) -> String {
        let mut out = String::with_capacity(self.len_hint());
        out.push_str("{\"content\":");
        out.push_str(&self.content);
        if self.is_error {
            out.push_str(",\"isError\":true");
        }
        if let Some(structured) = &self.structured {
            out.push_str(",\"structuredContent\":");
            for piece in structured.pieces() {
                out.push_str(piece);
            }
        }
        out.push('}');
        out
    }

    /// The result as sent: the body plus `resultType: "complete"` and `_meta` holding
    /// `serverInfo`, members in key byte order, as every other result is written.
    #[cfg(test)]
    pub(crate) fn complete_text(&self, server_info: &RawValue) -> String {
        self.complete_pieces(server_info).concat()
    }

    /// [`ResultParts::complete_text`] as the pieces whose concatenation it is (the reply
    /// encoder writes them straight into the reply line: the content and structured texts
    /// are copied once).
    pub(crate) fn complete_pieces<'a>(&'a self, server_info: &'a RawValue) -> Vec<&'a str> {
        let mut out: Vec<&str> = Vec::with_capacity(16);
        out.push("{\"_meta\":{\"");
        out.push(crate::wire::meta::SERVER_INFO);
        out.push("\":");
        out.push(server_info.get());
        if let Some(member) = &self.meta_member {
            out.push(",");
            out.push(member);
        }
        out.push("},\"content\":");
        out.push(&self.content);
        if self.is_error {
            out.push(",\"isError\":true");
        }
        out.push(",\"resultType\":\"complete\"");
        if let Some(structured) = &self.structured {
            out.push(",\"structuredContent\":");
            out.extend(structured.pieces().into_iter().filter(|p| !p.is_empty()));
        }
        out.push("}");
        out
    }

    fn len_hint(&self) -> usize {
        self.content.len() + self.structured.as_ref().map_or(0, Structured::len) + 48
    }
}

/// A complete `CallToolResult` in pieces: the ordered content, then (when there is a
/// structured envelope) a text block holding the envelope's JSON.
pub(crate) fn result_parts(
    content: Vec<ContentBlock>,
    structured: Option<String>,
    is_error: bool,
) -> Result<ResultParts, CoreError> {
    ResultParts::new(content, structured, is_error)
}

/// The `Map` form of a result body built as text.
pub(crate) fn to_map(text: &str) -> Result<Map<String, Value>, CoreError> {
    serde_json::from_str(text).map_err(|e| {
        tracing::error!(error = %e, "publication built a result body that is not an object");
        CoreError::Internal { retryable: false }
    })
}

/// A failure result: `isError: true`, the failure envelope and its text copy. Core failures
/// carry no content of their own, so the copy is the only block.
pub(crate) fn failure_text(failure: &ToolFailure) -> Result<String, CoreError> {
    failure_parts(failure).map(|parts| parts.body_text())
}

/// As [`failure_text`], in pieces.
pub(crate) fn failure_parts(failure: &ToolFailure) -> Result<ResultParts, CoreError> {
    result_parts(Vec::new(), Some(failure_envelope(failure)?), true)
}

/// The content and `{"value": …}` envelope text of an application tool's success, in
/// either mode.
///
/// A structured result is wrapped as `{"value": …}` (explicit `null` included); no structured
/// result means no `structuredContent` and no copy. Typed core tools end their content with a
/// plain text block holding exactly the unwrapped JSON (their own text fallback); that block is
/// replaced by the copy of the envelope instead of sending the same data twice.
pub(crate) fn success_parts(
    mut content: Vec<ContentBlock>,
    structured: Option<Box<RawValue>>,
) -> (Vec<ContentBlock>, Option<Structured>) {
    let Some(structured) = structured else {
        return (content, None);
    };
    // Only a bare text block is the fallback copy: one the tool annotated or gave metadata
    // (or any member of its own) is content in its own right and stays.
    let own_copy = matches!(
        content.last(),
        Some(ContentBlock::TextContent(t))
            if t.text == structured.get()
                && t.annotations.is_none()
                && t.meta.is_none()
                && t.extra.is_empty()
    );
    if own_copy {
        content.pop();
    }
    (content, Some(Structured::value(structured)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// #23: a tool's value wrapped as `{"value": …}` where it is written gives the same result
    /// pieces, body and text copy block as the wrap written into a string of its own
    /// (E15: the envelope is what the published schema admits, byte for byte).
    #[test]
    fn issue23_a_wrapped_value_writes_as_its_envelope_text() {
        for inner in [
            r#"{"text":"a\"b\\c\n\u0001é€😀","n":1.10,"big":18446744073709551617}"#,
            "null",
            r#""""#,
            "[]",
        ] {
            let raw = RawValue::from_string(inner.to_owned()).unwrap();
            let wrapped = Structured::value(raw);
            let envelope = format!("{{\"value\":{inner}}}");
            assert_eq!(wrapped.pieces().concat(), envelope);
            assert_eq!(wrapped.len(), envelope.len());
            assert_eq!(wrapped.text(), envelope);
            let content = vec![ContentBlock::text("before")];
            let by_value =
                ResultParts::with_structured(content.clone(), Some(wrapped), false).unwrap();
            let by_text = ResultParts::new(content, Some(envelope.clone()), false).unwrap();
            assert_eq!(by_value.content, by_text.content, "{inner}");
            assert_eq!(by_value.body_text(), by_text.body_text(), "{inner}");
            let info = RawValue::from_string(r#"{"name":"s","version":"1"}"#.to_owned()).unwrap();
            assert_eq!(
                by_value.complete_text(&info),
                by_text.complete_text(&info),
                "{inner}"
            );
            // The copy block holds the envelope's text, escaped once more.
            let copy = format!(
                r#"[{{"text":"before","type":"text"}},{{"text":{},"type":"text"}}]"#,
                serde_json::to_string(&envelope).unwrap()
            );
            assert_eq!(by_value.content, copy, "{inner}");
        }
    }

    /// A success's own text fallback (a bare text block equal to the value) is dropped and the
    /// value kept for the wrap; an annotated or different block stays.
    #[test]
    fn success_parts_drops_only_the_bare_fallback_and_wraps_the_value() {
        let raw = || RawValue::from_string(r#"{"sum":5}"#.to_owned()).unwrap();
        let (content, structured) =
            success_parts(vec![ContentBlock::text(r#"{"sum":5}"#)], Some(raw()));
        assert!(content.is_empty());
        assert_eq!(
            structured,
            Some(Structured::Value(r#"{"sum":5}"#.to_owned()))
        );
        let other = vec![ContentBlock::text("five")];
        let (content, _) = success_parts(other.clone(), Some(raw()));
        assert_eq!(content, other);
        assert_eq!(success_parts(other.clone(), None), (other, None));
    }
}
