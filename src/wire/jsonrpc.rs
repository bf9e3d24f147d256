//! JSON-RPC 2.0 envelope, exact request ids and the MCP error codes.
//!
//! Everything that carries application data (`params`, `result`, `error.data`) is held as
//! [`RawValue`]: the exact bytes the peer sent, never re-encoded, so big integers, exponent
//! spelling and member order survive untouched. The id keeps its exact JSON
//! token, so a reply echoes `1` as `1` and `"1"` as `"1"`.
//!
//! These types are built by [`crate::codec::decode`] (which enforces every bound and the
//! envelope rules) and serialised by [`crate::codec::encode`]. Their `Serialize` impls write the
//! members in a fixed order (`jsonrpc`, `id`, `method`, `params` / `result` / `error`).

use std::fmt;
use std::hash::{Hash, Hasher};

use serde::ser::{SerializeStruct, Serializer};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;

/// The only `jsonrpc` member value this crate reads or writes.
pub const JSONRPC_VERSION: &str = "2.0";

/// Why a JSON token cannot be a request id: ids are strings or integers, nothing else.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidId {
    /// `null` is not an id, even though JSON-RPC 1.0 peers send it.
    #[error("request id is null")]
    Null,
    /// A number with a fraction or an exponent (`1.5`, `1.0`, `1e3`); only integer tokens count.
    #[error("request id is not an integer")]
    NotInteger,
    /// An object, array or boolean.
    #[error("request id is neither a string nor an integer")]
    WrongType,
    /// The token is not valid JSON (only reachable through [`RequestId::from_token`]).
    #[error("request id is not a valid JSON token")]
    Malformed,
}

/// Which of the two legal JSON types an id has; `1` and `"1"` are different ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IdKind {
    /// A JSON string id.
    String,
    /// A JSON integer id of any size (bounded only by [`crate::wire::limits::MAX_ID_BYTES`]).
    Integer,
}

/// A request id kept as its exact JSON token, so the reply echoes the very bytes received.
///
/// Equality and hashing follow JSON meaning within one type: `"\u0061"` equals `"a"`, `-0`
/// equals `0`, but `1` never equals `"1"`. Integers of any size are kept as digits and never
/// coerced to `i64`/`f64` (2^64+1 stays `18446744073709551617`).
#[derive(Clone)]
pub struct RequestId {
    /// The exact token text as it appeared on the wire.
    raw: Box<RawValue>,
    /// String or integer.
    kind: IdKind,
    /// Comparison key: the unescaped string, or the canonical digits of the integer.
    key: Box<str>,
}

impl RequestId {
    /// Builds an id from one JSON token, keeping the token text byte for byte.
    ///
    /// Leading/trailing whitespace is not part of a token and is rejected as malformed.
    pub fn from_token(token: &str) -> Result<Self, InvalidId> {
        let raw = RawValue::from_string(token.to_owned()).map_err(|_| InvalidId::Malformed)?;
        Self::from_raw(raw)
    }

    /// Builds an id from an already validated raw JSON value, keeping its text.
    pub fn from_raw(raw: Box<RawValue>) -> Result<Self, InvalidId> {
        let text = raw.get();
        let (kind, key) = classify_id_token(text)?;
        Ok(Self { raw, kind, key })
    }

    /// A string id; the text is JSON-escaped the way `serde_json` escapes it.
    pub fn string(value: &str) -> Self {
        // Serialising a `&str` with serde_json cannot fail and always yields a valid token.
        let token = serde_json::to_string(value).unwrap_or_else(|_| String::from("\"\""));
        let raw = RawValue::from_string(token).unwrap_or_else(|_| fallback_token());
        Self {
            raw,
            kind: IdKind::String,
            key: value.into(),
        }
    }

    /// An integer id from a signed machine integer (the usual way a client numbers requests).
    pub fn integer(value: i64) -> Self {
        let digits = value.to_string();
        let key: Box<str> = digits.as_str().into();
        let raw = RawValue::from_string(digits).unwrap_or_else(|_| fallback_token());
        Self {
            raw,
            kind: IdKind::Integer,
            key,
        }
    }

    /// The exact token as received (or as built), e.g. `"a\u0062"` or `18446744073709551617`.
    pub fn token(&self) -> &str {
        self.raw.get()
    }

    /// The exact token as a raw JSON value, for embedding into other JSON (`requestId` fields).
    pub fn as_raw(&self) -> &RawValue {
        &self.raw
    }

    /// Whether the id is a JSON string or a JSON integer.
    pub fn kind(&self) -> IdKind {
        self.kind
    }

    /// The unescaped text of a string id; `None` for integer ids.
    pub fn as_str(&self) -> Option<&str> {
        match self.kind {
            IdKind::String => Some(&self.key),
            IdKind::Integer => None,
        }
    }

    /// The value of an integer id that fits `i64`; `None` for strings and larger integers.
    pub fn as_i64(&self) -> Option<i64> {
        match self.kind {
            IdKind::Integer => self.key.parse().ok(),
            IdKind::String => None,
        }
    }
}

/// A valid token for infallible constructors whose serialisation cannot fail; never reached.
fn fallback_token() -> Box<RawValue> {
    RawValue::NULL.to_owned()
}

/// Checks one JSON token as an id and computes its comparison key.
fn classify_id_token(text: &str) -> Result<(IdKind, Box<str>), InvalidId> {
    let bytes = text.as_bytes();
    match bytes.first() {
        Some(b'"') => {
            let value: String = serde_json::from_str(text).map_err(|_| InvalidId::Malformed)?;
            Ok((IdKind::String, value.into_boxed_str()))
        }
        Some(b'-' | b'0'..=b'9') => {
            let digits = bytes.strip_prefix(b"-").unwrap_or(bytes);
            let integer_token = !digits.is_empty()
                && digits.iter().all(u8::is_ascii_digit)
                && (digits == b"0" || digits[0] != b'0');
            if integer_token {
                // `-0` means zero; every other integer token is already canonical.
                let key = if text == "-0" { "0" } else { text };
                Ok((IdKind::Integer, key.into()))
            } else if is_number_syntax(bytes) {
                Err(InvalidId::NotInteger)
            } else {
                Err(InvalidId::Malformed)
            }
        }
        Some(b'n') if text == "null" => Err(InvalidId::Null),
        Some(b'{' | b'[' | b't' | b'f') => Err(InvalidId::WrongType),
        _ => Err(InvalidId::Malformed),
    }
}

/// RFC 8259 number grammar, used to tell `1.5`/`1e999` (numbers, not integers) from garbage.
fn is_number_syntax(bytes: &[u8]) -> bool {
    let mut i = 0;
    if bytes.get(i) == Some(&b'-') {
        i += 1;
    }
    match bytes.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            while bytes.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
        }
        _ => return false,
    }
    if bytes.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while bytes.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    if matches!(bytes.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(bytes.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let start = i;
        while bytes.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    i == bytes.len()
}

impl PartialEq for RequestId {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && self.key == other.key
    }
}

impl Eq for RequestId {}

impl Hash for RequestId {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.kind.hash(state);
        self.key.hash(state);
    }
}

impl fmt::Debug for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RequestId({})", self.raw.get())
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.raw.get())
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.raw.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for RequestId {
    /// Reads an id from a `serde_json` deserializer, keeping its token (e.g. the `requestId`
    /// inside `notifications/cancelled` params).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        RequestId::from_raw(raw).map_err(serde::de::Error::custom)
    }
}

/// The JSON-RPC error codes an MCP 2026-07-28 implementation emits (A.T table).
///
/// HTTP statuses are not part of this type: the server maps an error *cause* to a status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// -32700: the line or body is not parseable JSON (or not UTF-8).
    ParseError,
    /// -32600: valid JSON that is not a valid JSON-RPC message (batch, null id, bounds).
    InvalidRequest,
    /// -32601: unknown method or a method behind a capability the server did not advertise.
    MethodNotFound,
    /// -32602: invalid parameters (missing `_meta`, unknown tool, bad cursor, ...).
    InvalidParams,
    /// -32603: unexpected failure inside the server.
    InternalError,
    /// -32020: an HTTP protocol header is missing, malformed or disagrees with the body.
    HeaderMismatch,
    /// -32021: the request needs a client capability it did not declare.
    MissingRequiredClientCapability,
    /// -32022: the requested protocol version is not supported.
    UnsupportedProtocolVersion,
}

impl ErrorCode {
    /// Every code, for exhaustive table tests and mappings.
    pub const ALL: [ErrorCode; 8] = [
        ErrorCode::ParseError,
        ErrorCode::InvalidRequest,
        ErrorCode::MethodNotFound,
        ErrorCode::InvalidParams,
        ErrorCode::InternalError,
        ErrorCode::HeaderMismatch,
        ErrorCode::MissingRequiredClientCapability,
        ErrorCode::UnsupportedProtocolVersion,
    ];

    /// The integer that goes into `error.code`.
    pub const fn code(self) -> i64 {
        match self {
            ErrorCode::ParseError => -32700,
            ErrorCode::InvalidRequest => -32600,
            ErrorCode::MethodNotFound => -32601,
            ErrorCode::InvalidParams => -32602,
            ErrorCode::InternalError => -32603,
            ErrorCode::HeaderMismatch => -32020,
            ErrorCode::MissingRequiredClientCapability => -32021,
            ErrorCode::UnsupportedProtocolVersion => -32022,
        }
    }

    /// The typed code for an integer read off the wire; `None` for codes this revision does not
    /// define (retired -32002, application codes), which a client still accepts as plain ints.
    pub const fn from_code(code: i64) -> Option<Self> {
        Some(match code {
            -32700 => ErrorCode::ParseError,
            -32600 => ErrorCode::InvalidRequest,
            -32601 => ErrorCode::MethodNotFound,
            -32602 => ErrorCode::InvalidParams,
            -32603 => ErrorCode::InternalError,
            -32020 => ErrorCode::HeaderMismatch,
            -32021 => ErrorCode::MissingRequiredClientCapability,
            -32022 => ErrorCode::UnsupportedProtocolVersion,
            _ => return None,
        })
    }

    /// A default one-sentence message for replies that have nothing more specific.
    pub const fn default_message(self) -> &'static str {
        match self {
            ErrorCode::ParseError => "Parse error",
            ErrorCode::InvalidRequest => "Invalid Request",
            ErrorCode::MethodNotFound => "Method not found",
            ErrorCode::InvalidParams => "Invalid params",
            ErrorCode::InternalError => "Internal error",
            ErrorCode::HeaderMismatch => "Header mismatch",
            ErrorCode::MissingRequiredClientCapability => "Missing required client capability",
            ErrorCode::UnsupportedProtocolVersion => "Unsupported protocol version",
        }
    }
}

/// Compares two optional raw values by their exact text (used by the envelope `PartialEq`s).
fn raw_eq(a: &Option<Box<RawValue>>, b: &Option<Box<RawValue>>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.get() == b.get(),
        (None, None) => true,
        _ => false,
    }
}

/// The `error` member of an error response: integer code, string message, optional data.
#[derive(Debug, Clone)]
pub struct ErrorObject {
    /// The code as an integer: peers may send codes outside [`ErrorCode`] (e.g. retired -32002).
    pub code: i64,
    /// One concise sentence.
    pub message: String,
    /// Optional free-form data, kept byte-exact.
    pub data: Option<Box<RawValue>>,
}

impl ErrorObject {
    /// An error with one of the codes this revision defines and no data.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code: code.code(),
            message: message.into(),
            data: None,
        }
    }

    /// Attaches `data` (e.g. `{"supported":[...],"requested":"..."}` for -32022).
    pub fn with_data(mut self, data: Box<RawValue>) -> Self {
        self.data = Some(data);
        self
    }

    /// The typed code, when it is one this revision defines.
    pub fn error_code(&self) -> Option<ErrorCode> {
        ErrorCode::from_code(self.code)
    }
}

impl PartialEq for ErrorObject {
    fn eq(&self, other: &Self) -> bool {
        self.code == other.code && self.message == other.message && raw_eq(&self.data, &other.data)
    }
}

impl Eq for ErrorObject {}

impl Serialize for ErrorObject {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("ErrorObject", 3)?;
        s.serialize_field("code", &self.code)?;
        s.serialize_field("message", &self.message)?;
        if let Some(data) = &self.data {
            s.serialize_field("data", data)?;
        }
        s.end()
    }
}

/// A request: it has an id and expects exactly one response.
#[derive(Debug, Clone)]
pub struct Request {
    /// The exact id to echo in the response.
    pub id: RequestId,
    /// The unescaped method name.
    pub method: String,
    /// The exact `params` bytes (an object), if present.
    pub params: Option<Box<RawValue>>,
}

/// A notification: no id, and the receiver never replies to it, not even with an error.
#[derive(Debug, Clone)]
pub struct Notification {
    /// The unescaped method name.
    pub method: String,
    /// The exact `params` bytes (an object), if present.
    pub params: Option<Box<RawValue>>,
}

/// A success response carrying a `result` object.
#[derive(Debug, Clone)]
pub struct SuccessResponse {
    /// The id of the request this answers, exactly as the request spelled it.
    pub id: RequestId,
    /// The exact `result` bytes (an object).
    pub result: Box<RawValue>,
}

/// An error response.
///
/// `id: None` is written as `"id": null` (JSON-RPC 2.0: the id could not be read, e.g. after a
/// parse error or an oversized line); when decoding, an absent id and `null` both become `None`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorResponse {
    /// The id of the request this answers, or `None` when it could not be read.
    pub id: Option<RequestId>,
    /// The error itself.
    pub error: ErrorObject,
}

impl ErrorResponse {
    /// An error response answering `id` (or `null` when the id could not be read).
    pub fn new(id: Option<RequestId>, error: ErrorObject) -> Self {
        Self { id, error }
    }

    /// An error response with one of the defined codes and its default message.
    pub fn from_code(id: Option<RequestId>, code: ErrorCode) -> Self {
        Self::new(id, ErrorObject::new(code, code.default_message()))
    }
}

/// Either kind of response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    /// `result` present.
    Success(SuccessResponse),
    /// `error` present.
    Error(ErrorResponse),
}

impl Response {
    /// The id this response answers (`None` only for an error whose request id was unreadable).
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            Response::Success(r) => Some(&r.id),
            Response::Error(r) => r.id.as_ref(),
        }
    }
}

/// Any single JSON-RPC message (batches do not exist in MCP).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// A request expecting a response.
    Request(Request),
    /// A notification, never answered.
    Notification(Notification),
    /// A response to an earlier request.
    Response(Response),
}

impl PartialEq for Request {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id && self.method == other.method && raw_eq(&self.params, &other.params)
    }
}

impl Eq for Request {}

impl PartialEq for Notification {
    fn eq(&self, other: &Self) -> bool {
        self.method == other.method && raw_eq(&self.params, &other.params)
    }
}

impl Eq for Notification {}

impl PartialEq for SuccessResponse {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id && self.result.get() == other.result.get()
    }
}

impl Eq for SuccessResponse {}

impl Serialize for Request {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Request", 4)?;
        s.serialize_field("jsonrpc", JSONRPC_VERSION)?;
        s.serialize_field("id", &self.id)?;
        s.serialize_field("method", &self.method)?;
        if let Some(params) = &self.params {
            s.serialize_field("params", params)?;
        }
        s.end()
    }
}

impl Serialize for Notification {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Notification", 3)?;
        s.serialize_field("jsonrpc", JSONRPC_VERSION)?;
        s.serialize_field("method", &self.method)?;
        if let Some(params) = &self.params {
            s.serialize_field("params", params)?;
        }
        s.end()
    }
}

impl Serialize for SuccessResponse {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("SuccessResponse", 3)?;
        s.serialize_field("jsonrpc", JSONRPC_VERSION)?;
        s.serialize_field("id", &self.id)?;
        s.serialize_field("result", &self.result)?;
        s.end()
    }
}

impl Serialize for ErrorResponse {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("ErrorResponse", 3)?;
        s.serialize_field("jsonrpc", JSONRPC_VERSION)?;
        s.serialize_field("id", &self.id)?;
        s.serialize_field("error", &self.error)?;
        s.end()
    }
}

impl Serialize for Response {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Response::Success(r) => r.serialize(serializer),
            Response::Error(r) => r.serialize(serializer),
        }
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Message::Request(r) => r.serialize(serializer),
            Message::Notification(n) => n.serialize(serializer),
            Message::Response(r) => r.serialize(serializer),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a4_integer_and_string_ids_differ() {
        let one = RequestId::from_token("1").expect("integer id");
        let one_str = RequestId::from_token("\"1\"").expect("string id");
        assert_ne!(one, one_str);
        assert_eq!(one.kind(), IdKind::Integer);
        assert_eq!(one_str.kind(), IdKind::String);
        assert_eq!(one_str.as_str(), Some("1"));
        assert_eq!(one.as_i64(), Some(1));
    }

    #[test]
    fn a4_escaped_string_id_keeps_token_but_compares_by_value() {
        let escaped = RequestId::from_token(r#""\u0061b""#).expect("string id");
        assert_eq!(escaped.token(), r#""\u0061b""#);
        assert_eq!(escaped, RequestId::string("ab"));
        assert_eq!(
            serde_json::to_string(&escaped).expect("ser"),
            r#""\u0061b""#
        );
    }

    #[test]
    fn a2_big_integer_id_is_kept_exactly() {
        let big = RequestId::from_token("18446744073709551617").expect("big id");
        assert_eq!(big.token(), "18446744073709551617");
        assert_eq!(big.as_i64(), None);
        assert_eq!(
            serde_json::to_string(&big).expect("ser"),
            "18446744073709551617"
        );
        assert_eq!(
            RequestId::from_token("-0").expect("-0"),
            RequestId::integer(0)
        );
    }

    #[test]
    fn a2_rejects_null_fractional_and_structured_ids() {
        let cases = [
            ("null", InvalidId::Null),
            ("1.5", InvalidId::NotInteger),
            ("1.0", InvalidId::NotInteger),
            ("1e3", InvalidId::NotInteger),
            ("{}", InvalidId::WrongType),
            ("[1]", InvalidId::WrongType),
            ("true", InvalidId::WrongType),
            ("01", InvalidId::Malformed),
        ];
        for (token, expected) in cases {
            assert_eq!(
                RequestId::from_token(token).unwrap_err(),
                expected,
                "{token}"
            );
        }
    }

    #[test]
    fn error_codes_round_trip_through_integers() {
        let ints: Vec<i64> = ErrorCode::ALL.iter().map(|c| c.code()).collect();
        assert_eq!(
            ints,
            [-32700, -32600, -32601, -32602, -32603, -32020, -32021, -32022]
        );
        for code in ErrorCode::ALL {
            assert_eq!(ErrorCode::from_code(code.code()), Some(code));
        }
        assert_eq!(ErrorCode::from_code(-32002), None);
        assert_eq!(ErrorCode::from_code(-32023), None);
    }

    #[test]
    fn envelopes_serialise_in_fixed_member_order() {
        let params = RawValue::from_string("{\"b\":1,\"a\":2}".into()).expect("raw");
        let req = Request {
            id: RequestId::from_token("7").expect("id"),
            method: "tools/call".into(),
            params: Some(params),
        };
        assert_eq!(
            serde_json::to_string(&req).expect("ser"),
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"b":1,"a":2}}"#
        );
        let err = ErrorResponse::from_code(None, ErrorCode::InvalidRequest);
        assert_eq!(
            serde_json::to_string(&err).expect("ser"),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}"#
        );
    }
}
