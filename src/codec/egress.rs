//! Guarded encoding of outbound messages: compact single-line JSON that is checked against
//! its bound before a single byte leaves.
//!
//! Encoding writes into a buffer that refuses to grow past the message ceiling, so an oversized
//! result costs at most the ceiling in memory and is reported as [`EgressError::TooLarge`]; the
//! server turns that into the `result_too_large` tool failure. Raw values (`result`,
//! `params`, `error.data`) are written verbatim; if one contains a raw line break (insignificant
//! whitespace of a pretty-printed value) the encoded text is compacted so the line stays one line.

use std::io;

use serde::Serialize;
use serde_json::value::RawValue;

use super::error::{EgressBound, EgressError, Rejection, ReplyTo};
use crate::wire::errors::Cause;
use crate::wire::jsonrpc::{ErrorCode, ErrorObject, ErrorResponse, Message, RequestId, Response};
use crate::wire::limits;

/// The bounds for one direction of outbound traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EgressLimits {
    /// Ceiling for one encoded message (the JSON text, newline excluded).
    pub max_message_bytes: usize,
    /// Part of the ceiling held back from payloads for envelope, id and identity.
    pub reserve_bytes: usize,
    /// Ceiling for notification params.
    pub max_notification_params_bytes: usize,
    /// Ceiling for an encoded request id (256 B).
    pub max_id_bytes: usize,
    /// Ceiling for the encoded server identity (4 KiB).
    pub max_identity_bytes: usize,
}

impl EgressLimits {
    /// What a server emits: 16 MiB responses with an 8 KiB reserve, 8 KiB notification params.
    pub const SERVER: EgressLimits = EgressLimits {
        max_message_bytes: limits::MAX_RESPONSE_BYTES,
        reserve_bytes: limits::RESPONSE_RESERVE_BYTES,
        max_notification_params_bytes: limits::MAX_NOTIFICATION_PARAMS_BYTES,
        max_id_bytes: limits::MAX_ID_BYTES,
        max_identity_bytes: limits::MAX_IDENTITY_BYTES,
    };

    /// What a client emits: requests a conforming server accepts (2 MiB).
    pub const CLIENT: EgressLimits = EgressLimits {
        max_message_bytes: limits::MAX_REQUEST_FRAME_BYTES,
        reserve_bytes: 0,
        max_notification_params_bytes: limits::MAX_NOTIFICATION_PARAMS_BYTES,
        max_id_bytes: limits::MAX_ID_BYTES,
        max_identity_bytes: limits::MAX_IDENTITY_BYTES,
    };

    /// The largest payload (`result`, `params`, `error.data`) a message may carry.
    pub const fn max_payload_bytes(&self) -> usize {
        self.max_message_bytes.saturating_sub(self.reserve_bytes)
    }
}

fn too_large(bound: EgressBound, limit: usize, actual: usize) -> EgressError {
    EgressError::TooLarge {
        bound,
        limit,
        actual,
    }
}

/// Checks a result payload before it is wrapped into a response: at most the ceiling
/// minus the reserve. Call it on a tool's encoded result to decide on `result_too_large` early.
pub fn preflight_result(result: &RawValue, limits: &EgressLimits) -> Result<(), EgressError> {
    let len = result.get().len();
    let limit = limits.max_payload_bytes();
    if len > limit {
        return Err(too_large(EgressBound::ResultPayload, limit, len));
    }
    Ok(())
}

/// Checks the encoded server identity (`serverInfo`) against its share of the reserve.
pub fn check_identity(identity: &RawValue, limits: &EgressLimits) -> Result<(), EgressError> {
    let len = identity.get().len();
    if len > limits.max_identity_bytes {
        return Err(too_large(
            EgressBound::Identity,
            limits.max_identity_bytes,
            len,
        ));
    }
    Ok(())
}

/// Checks the parts of a message whose size the caller controls, before encoding.
fn preflight(message: &Message, limits: &EgressLimits) -> Result<(), EgressError> {
    let payload_limit = limits.max_payload_bytes();
    let check_payload = |raw: Option<&RawValue>| match raw {
        Some(raw) if raw.get().len() > payload_limit => Err(too_large(
            EgressBound::ResultPayload,
            payload_limit,
            raw.get().len(),
        )),
        _ => Ok(()),
    };
    let check_id = |token: Option<&str>| match token {
        Some(t) if t.len() > limits.max_id_bytes => {
            Err(too_large(EgressBound::Id, limits.max_id_bytes, t.len()))
        }
        _ => Ok(()),
    };
    match message {
        Message::Request(r) => {
            check_id(Some(r.id.token()))?;
            check_payload(r.params.as_deref())
        }
        Message::Notification(n) => match n.params.as_deref() {
            Some(p) if p.get().len() > limits.max_notification_params_bytes => Err(too_large(
                EgressBound::NotificationParams,
                limits.max_notification_params_bytes,
                p.get().len(),
            )),
            _ => Ok(()),
        },
        Message::Response(Response::Success(r)) => {
            check_id(Some(r.id.token()))?;
            check_payload(Some(&r.result))
        }
        Message::Response(Response::Error(r)) => {
            check_id(r.id.as_ref().map(|id| id.token()))?;
            check_payload(r.error.data.as_deref())
        }
    }
}

/// A buffer that fails instead of growing past `limit` bytes.
struct Bounded {
    buf: Vec<u8>,
    limit: usize,
    /// Size the refused write would have reached (a lower bound on the full message size).
    overflowed_at: Option<usize>,
}

impl io::Write for Bounded {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let wanted = self.buf.len().saturating_add(data.len());
        if wanted > self.limit {
            self.overflowed_at = Some(wanted);
            return Err(io::Error::other("message exceeds its bound"));
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// An encoded error reply: the HTTP status of its cause and the JSON-RPC error response text
/// (compact, no newline), or no body for the causes HTTP answers with a status alone (403, 405).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorReply {
    /// The cause's HTTP status (stdio ignores it).
    pub status: u16,
    /// The encoded error response, if the cause has a JSON-RPC code.
    pub body: Option<String>,
}

/// The only error encoder of both roles: every refusal and error reply is written here, from
/// its typed [`Cause`] (code and status from the one table), through the egress guard. `id` is
/// the request id when it could be read (`None` writes `"id": null`). `data` is written
/// verbatim. An error that does not fit its bounds (an oversized id or `data`) becomes a plain
/// internal error (status 500) with the same id if the id fits, else `null`: an error reply is
/// never lost.
pub fn encode_error(
    id: Option<&RequestId>,
    cause: Cause,
    message: &str,
    data: Option<&RawValue>,
    limits: &EgressLimits,
) -> ErrorReply {
    let status = cause.http_status();
    let Some(code) = cause.code() else {
        return ErrorReply { status, body: None };
    };
    let mut error = ErrorObject::new(code, message);
    if let Some(data) = data {
        error = error.with_data(data.to_owned());
    }
    let message = Message::Response(Response::Error(ErrorResponse::new(id.cloned(), error)));
    match encode(&message, limits) {
        Ok(bytes) => ErrorReply {
            status,
            body: Some(bytes_to_string(bytes)),
        },
        Err(e) => {
            tracing::warn!(error = %e, "error reply over its bound; sent as an internal error");
            let id = id
                .filter(|id| id.token().len() <= limits.max_id_bytes)
                .cloned();
            let fallback = Message::Response(Response::Error(ErrorResponse::from_code(
                id,
                ErrorCode::InternalError,
            )));
            // A fallback of at most ~300 bytes always fits a ceiling of at least 2 MiB.
            let body = encode(&fallback, limits)
                .map(bytes_to_string)
                .unwrap_or_default();
            ErrorReply {
                status: Cause::Internal.http_status(),
                body: Some(body),
            }
        }
    }
}

impl Rejection {
    /// The encoded error reply a server sends for a rejected frame (through
    /// [`encode_error`]), or `None` for notifications.
    pub fn encode_reply(&self, limits: &EgressLimits) -> Option<ErrorReply> {
        let id = match &self.reply_to {
            ReplyTo::Id(id) => Some(id),
            ReplyTo::NullId => None,
            ReplyTo::Nobody => return None,
        };
        Some(encode_error(
            id,
            self.cause(),
            &self.error.to_string(),
            None,
            limits,
        ))
    }
}

/// `encode` writes only valid UTF-8 (serde_json output).
fn bytes_to_string(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Encodes one message as compact JSON, checked against `limits` (no trailing newline).
pub fn encode(message: &Message, limits: &EgressLimits) -> Result<Vec<u8>, EgressError> {
    preflight(message, limits)?;
    let mut out = Bounded {
        buf: Vec::new(),
        limit: limits.max_message_bytes,
        overflowed_at: None,
    };
    let result = message.serialize(&mut serde_json::Serializer::new(&mut out));
    if let Err(e) = result {
        return Err(match out.overflowed_at {
            Some(wanted) => too_large(EgressBound::Message, limits.max_message_bytes, wanted),
            None => EgressError::Encode(e.to_string()),
        });
    }
    let mut buf = out.buf;
    if buf.iter().any(|&b| b == b'\n' || b == b'\r') {
        compact(&mut buf);
    }
    Ok(buf)
}

/// Encodes a success response `{"jsonrpc":"2.0","id":…,"result":…}` straight from the id's
/// exact token and an already valid result, as text (no trailing newline).
///
/// Byte for byte what [`encode`] yields for `Message::Response(Response::Success(..))`, with the
/// same checks in the same order (id bound, payload bound, message bound, then compaction when
/// the result brought a line break), without serialising through serde.
pub fn encode_success(
    id: &RequestId,
    result: &RawValue,
    limits: &EgressLimits,
) -> Result<String, EgressError> {
    encode_success_text(id, result.get(), limits)
}

/// As [`encode_success`], for a result the server itself wrote as text from valid pieces
/// (not re-parsed: the caller guarantees `payload` is one JSON value).
pub(crate) fn encode_success_text(
    id: &RequestId,
    payload: &str,
    limits: &EgressLimits,
) -> Result<String, EgressError> {
    encode_success_pieces(id, &[payload], LineBreaks::Possible, limits)
}

/// What the caller of [`encode_success_pieces`] knows about raw line breaks in its pieces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineBreaks {
    /// A piece may hold a raw `\n` or `\r` (outside strings, as insignificant whitespace): the
    /// line is scanned and compacted if one is there.
    Possible,
    /// No piece holds one: the caller wrote or scanned every byte (a tool result's pieces,
    /// scanned while its text copy was escaped), so the line is not scanned again.
    Absent,
}

impl LineBreaks {
    /// What `text` holds: [`LineBreaks::Possible`] when it has a raw `\n` or `\r`.
    pub(crate) fn of(text: &str) -> LineBreaks {
        if memchr::memchr2(b'\n', b'\r', text.as_bytes()).is_some() {
            LineBreaks::Possible
        } else {
            LineBreaks::Absent
        }
    }
}

/// As [`encode_success_text`], for a result payload given as pieces whose concatenation is
/// one JSON value: written once, straight into the reply line (allocated at its final size),
/// instead of being joined first and copied again. With [`LineBreaks::Absent`] the finished
/// line is not scanned for line breaks (one pass over a large result less, issue #23).
pub(crate) fn encode_success_pieces(
    id: &RequestId,
    pieces: &[&str],
    line_breaks: LineBreaks,
    limits: &EgressLimits,
) -> Result<String, EgressError> {
    const HEAD: &str = "{\"jsonrpc\":\"2.0\",\"id\":";
    const MID: &str = ",\"result\":";
    debug_assert!(
        serde_json::from_str::<&RawValue>(&pieces.concat()).is_ok(),
        "result is not one JSON value: {}",
        pieces.concat()
    );
    debug_assert!(
        line_breaks == LineBreaks::Possible
            || pieces
                .iter()
                .all(|p| LineBreaks::of(p) == LineBreaks::Absent),
        "a piece said to hold no line break holds one"
    );
    let token = id.token();
    if token.len() > limits.max_id_bytes {
        return Err(too_large(EgressBound::Id, limits.max_id_bytes, token.len()));
    }
    let payload_len: usize = pieces.iter().map(|p| p.len()).sum();
    let payload_limit = limits.max_payload_bytes();
    if payload_len > payload_limit {
        return Err(too_large(
            EgressBound::ResultPayload,
            payload_limit,
            payload_len,
        ));
    }
    let total = HEAD.len() + token.len() + MID.len() + payload_len + 1;
    if total > limits.max_message_bytes {
        return Err(too_large(
            EgressBound::Message,
            limits.max_message_bytes,
            total,
        ));
    }
    let mut out = String::with_capacity(total + 1);
    out.push_str(HEAD);
    out.push_str(token);
    out.push_str(MID);
    for piece in pieces {
        out.push_str(piece);
    }
    out.push('}');
    // The id token is a JSON string or integer: neither can hold a raw line break.
    if line_breaks == LineBreaks::Possible && LineBreaks::of(&out) == LineBreaks::Possible {
        let mut buf = out.into_bytes();
        compact(&mut buf);
        // Compaction removes ASCII whitespace only: the text stays UTF-8.
        out = String::from_utf8(buf).map_err(|e| EgressError::Encode(e.to_string()))?;
    }
    Ok(out)
}

/// Removes whitespace outside strings. Only used when a raw value brought a line break: raw
/// line breaks can only be insignificant whitespace (inside strings they are escaped).
fn compact(buf: &mut Vec<u8>) {
    let mut in_string = false;
    let mut escaped = false;
    buf.retain(|&b| {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            true
        } else if b == b'"' {
            in_string = true;
            true
        } else {
            !matches!(b, b' ' | b'\t' | b'\n' | b'\r')
        }
    });
}

/// One complete, checked stdio line (compact JSON plus `\n`); only these reach the pipe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodedLine(Vec<u8>);

impl EncodedLine {
    /// The bytes to write, newline included.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The bytes to write, newline included, without copying.
    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }
}

/// Encodes one message as a stdio line: the whole line is built and checked before the caller
/// writes any of it, so a tripped guard never leaves a partial line.
pub fn encode_line(message: &Message, limits: &EgressLimits) -> Result<EncodedLine, EgressError> {
    let mut buf = encode(message, limits)?;
    buf.push(b'\n');
    Ok(EncodedLine(buf))
}

/// A blocking stdio writer that only ever writes whole, checked lines.
///
/// Async drivers use [`encode_line`] and their own `write_all` the same way.
#[derive(Debug)]
pub struct LineWriter<W> {
    inner: W,
    limits: EgressLimits,
}

impl<W: io::Write> LineWriter<W> {
    /// Wraps a sink (usually stdout) with the given bounds.
    pub fn new(inner: W, limits: EgressLimits) -> Self {
        Self { inner, limits }
    }

    /// Encodes, checks and writes one message. On a guard violation nothing is written; on an
    /// I/O error the transport must be considered failed.
    pub fn send(&mut self, message: &Message) -> Result<(), EgressError> {
        let line = encode_line(message, &self.limits)?;
        self.inner
            .write_all(line.as_bytes())
            .and_then(|()| self.inner.flush())
            .map_err(|e| EgressError::Encode(e.to_string()))
    }

    /// Gives back the sink.
    pub fn into_inner(self) -> W {
        self.inner
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A payload of exactly `len` bytes: a JSON string of `len - 2` letters.
    fn payload(len: usize) -> String {
        format!("\"{}\"", "a".repeat(len - 2))
    }

    /// The pieces encoder writes what the one-text encoder writes for their concatenation, and
    /// keeps its bounds on the pieces' total: `max_payload_bytes` passes, one past it is
    /// `ResultPayload` too large; over the whole message it is `Message` too large (O39).
    #[test]
    fn o39_success_pieces_match_the_joined_text_at_the_bound_and_one_past() {
        let limits = EgressLimits {
            max_message_bytes: 200,
            reserve_bytes: 50,
            ..EgressLimits::SERVER
        };
        let id = RequestId::from_token("7").expect("integer id");
        let at = payload(limits.max_payload_bytes());
        let (head, tail) = at.split_at(40);
        let joined = encode_success_text(&id, &at, &limits).expect("at the bound");
        assert_eq!(
            encode_success_pieces(&id, &[head, "", tail], LineBreaks::Absent, &limits)
                .expect("at the bound"),
            joined
        );
        assert_eq!(
            joined,
            format!("{{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{at}}}")
        );

        let past = payload(limits.max_payload_bytes() + 1);
        let (head, tail) = past.split_at(40);
        match encode_success_pieces(&id, &[head, tail], LineBreaks::Absent, &limits) {
            Err(EgressError::TooLarge {
                bound: EgressBound::ResultPayload,
                limit,
                actual,
            }) => assert_eq!((limit, actual), (150, 151)),
            other => panic!("one past the payload bound: {other:?}"),
        }

        // No reserve: the payload fits its bound but the message does not.
        let tight = EgressLimits {
            reserve_bytes: 0,
            ..limits
        };
        let whole = payload(200 - "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":}".len());
        let (head, tail) = whole.split_at(10);
        assert!(encode_success_pieces(&id, &[head, tail], LineBreaks::Absent, &tight).is_ok());
        let over = payload(whole.len() + 1);
        let (head, tail) = over.split_at(10);
        assert!(matches!(
            encode_success_pieces(&id, &[head, tail], LineBreaks::Absent, &tight),
            Err(EgressError::TooLarge {
                bound: EgressBound::Message,
                ..
            })
        ));
        // A raw line break in a piece is compacted as in one text, when the caller says one
        // may be there; spaces without a break stay as given either way.
        assert_eq!(
            encode_success_pieces(&id, &["{\"a\":\n", "1}"], LineBreaks::Possible, &limits)
                .unwrap(),
            encode_success_text(&id, "{\"a\":\n1}", &limits).unwrap()
        );
        assert_eq!(
            encode_success_text(&id, "{\"a\":\n1}", &limits).unwrap(),
            "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"a\":1}}"
        );
        for line_breaks in [LineBreaks::Possible, LineBreaks::Absent] {
            assert_eq!(
                encode_success_pieces(&id, &["{\"a\": ", "1}"], line_breaks, &limits).unwrap(),
                "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"a\": 1}}"
            );
        }
    }
}
