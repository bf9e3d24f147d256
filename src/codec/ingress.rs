//! Bounded decoding of one inbound frame (a stdio line without its newline, or an HTTP body).
//!
//! Order of checks, and so precedence of errors:
//! 1. frame length against the direction's bound, before reading a byte;
//! 2. UTF-8, then one scan that validates JSON syntax to the last byte (-32700 wins over any
//!    structural error: a leading BOM, `NaN`, trailing data and lone surrogates are -32700);
//! 3. batch / non-object, depth (64) and duplicate member names at any depth, compared
//!    after unescaping;
//! 4. the JSON-RPC envelope: members, version, id, method, params/result/error.
//!
//! `params`, `result` and `error.data` are kept as the exact bytes received:
//! arguments, `inputResponses`, `_meta` and progress tokens inside them are never re-encoded.

use serde::Deserialize;
use serde_json::value::RawValue;

use super::error::{IngressError, Rejection, ReplyTo};
use super::scan::{self, Kind, Member, Slot, Structural};
use crate::wire::jsonrpc::{
    ErrorObject, ErrorResponse, Message, Notification, Request, RequestId, Response,
    SuccessResponse, JSONRPC_VERSION,
};
use crate::wire::limits;

/// The side that runs the decoder, which fixes what it may receive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// A server decodes requests and client notifications; a response is rejected.
    Server,
    /// A client decodes responses and server notifications; a request is rejected.
    Client,
}

/// The bounds for one direction of traffic; pass [`IngressLimits::SERVER`] or
/// [`IngressLimits::CLIENT`] unless a test needs smaller numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IngressLimits {
    /// Who decodes, and so which message kinds are legal.
    pub role: Role,
    /// Longest frame in bytes (stdio newline not counted).
    pub max_frame_bytes: usize,
    /// Deepest nesting of objects/arrays; the top-level object is level 1.
    pub max_depth: usize,
    /// Longest encoded `id` token.
    pub max_id_bytes: usize,
    /// Longest encoded `method` token.
    pub max_method_bytes: usize,
    /// Longest encoded notification `params`.
    pub max_notification_params_bytes: usize,
}

impl IngressLimits {
    /// What a server accepts from a client: frames up to 2 MiB.
    pub const SERVER: IngressLimits = IngressLimits {
        role: Role::Server,
        max_frame_bytes: limits::MAX_REQUEST_FRAME_BYTES,
        max_depth: limits::MAX_DEPTH,
        max_id_bytes: limits::MAX_ID_BYTES,
        max_method_bytes: limits::MAX_METHOD_BYTES,
        max_notification_params_bytes: limits::MAX_NOTIFICATION_PARAMS_BYTES,
    };

    /// What a client accepts from a server: responses up to 16 MiB plus the 8 KiB reserve.
    pub const CLIENT: IngressLimits = IngressLimits {
        role: Role::Client,
        max_frame_bytes: limits::MAX_CLIENT_INGRESS_FRAME_BYTES,
        max_depth: limits::MAX_DEPTH,
        max_id_bytes: limits::MAX_ID_BYTES,
        max_method_bytes: limits::MAX_METHOD_BYTES,
        max_notification_params_bytes: limits::MAX_NOTIFICATION_PARAMS_BYTES,
    };
}

/// Decodes one frame into a message, or says why not and whom to answer.
///
/// Never panics and never allocates for a frame longer than `limits.max_frame_bytes`.
pub fn decode(frame: &[u8], limits: &IngressLimits) -> Result<Message, Rejection> {
    if frame.len() > limits.max_frame_bytes {
        return Err(Rejection::new(
            IngressError::FrameTooLarge {
                limit: limits.max_frame_bytes,
                actual: Some(frame.len()),
            },
            ReplyTo::NullId,
        ));
    }
    let text = std::str::from_utf8(frame)
        .map_err(|_| Rejection::new(IngressError::InvalidUtf8, ReplyTo::NullId))?;
    let scanned = scan::scan(text, limits.max_depth)
        .map_err(|e| Rejection::new(IngressError::Syntax { offset: e.offset }, ReplyTo::NullId))?;
    match scanned.top {
        Kind::Object => {}
        Kind::Array => return Err(Rejection::new(IngressError::Batch, ReplyTo::NullId)),
        _ => return Err(Rejection::new(IngressError::NotAnObject, ReplyTo::NullId)),
    }
    let m = scanned.members;
    // The id is read for the message; a rejection reads it again for its reply target, so
    // a frame that is accepted pays no copy of it (two allocations per request, #23).
    let id = one(m.id).map(|id| read_id(id, limits));
    let reject = |error: IngressError| Rejection::new(error, reply_target(&m, limits));
    match scanned.structural {
        Some(Structural::TooDeep) => {
            return Err(reject(IngressError::TooDeep {
                limit: limits.max_depth,
            }))
        }
        Some(Structural::DuplicateKey { depth }) => {
            return Err(reject(IngressError::DuplicateKey { depth }))
        }
        Some(Structural::ReservedKey { depth }) => {
            return Err(reject(IngressError::ReservedKey { depth }))
        }
        None => {}
    }
    if m.unknown {
        return Err(reject(IngressError::UnknownMember));
    }
    // Repeats were reported as duplicates above, so every slot is Absent or One from here.
    match one(m.jsonrpc) {
        Some(v)
            if v.kind == Kind::String
                && (v.text == "\"2.0\""
                    || unescape(v.text).as_deref() == Some(JSONRPC_VERSION)) => {}
        _ => return Err(reject(IngressError::BadVersion)),
    }
    if let Some(method) = one(m.method) {
        if one(m.result).is_some() || one(m.error).is_some() {
            return Err(reject(IngressError::AmbiguousEnvelope));
        }
        if method.kind != Kind::String {
            return Err(reject(IngressError::MethodNotString));
        }
        if method.text.len() > limits.max_method_bytes {
            return Err(reject(IngressError::MethodTooLong {
                limit: limits.max_method_bytes,
            }));
        }
        let id = id.transpose().map_err(reject)?;
        if limits.role == Role::Client && id.is_some() {
            return Err(reject(IngressError::UnexpectedRequest));
        }
        let params = match one(m.params) {
            None => None,
            Some(p) if p.kind != Kind::Object => return Err(reject(IngressError::ParamsNotObject)),
            Some(p) => {
                if id.is_none() && p.text.len() > limits.max_notification_params_bytes {
                    return Err(reject(IngressError::NotificationParamsTooLarge {
                        limit: limits.max_notification_params_bytes,
                    }));
                }
                Some(raw(p.text).map_err(reject)?)
            }
        };
        let method = unescape(method.text).ok_or_else(|| reject(IngressError::MethodNotString))?;
        return Ok(match id {
            Some(id) => Message::Request(Request { id, method, params }),
            None => Message::Notification(Notification { method, params }),
        });
    }
    // No method: a response, or nothing at all.
    let (result, error) = (one(m.result), one(m.error));
    if result.is_none() && error.is_none() {
        return Err(reject(IngressError::NotAMessage));
    }
    if limits.role == Role::Server {
        return Err(reject(IngressError::UnexpectedResponse));
    }
    if one(m.params).is_some() {
        return Err(reject(IngressError::UnknownMember));
    }
    match (result, error) {
        (Some(result), None) => {
            let id = id
                .ok_or_else(|| reject(IngressError::MissingResponseId))?
                .map_err(reject)?;
            if result.kind != Kind::Object {
                return Err(reject(IngressError::ResultNotObject));
            }
            let result = raw(result.text).map_err(reject)?;
            Ok(Message::Response(Response::Success(SuccessResponse {
                id,
                result,
            })))
        }
        (None, Some(error)) => {
            // JSON-RPC writes `"id": null` when the id was unreadable; MCP omits it.
            let id = match (one(m.id), id) {
                (Some(raw_id), _) if raw_id.kind == Kind::Null => None,
                (_, id) => id.transpose().map_err(reject)?,
            };
            let error = read_error_object(error).map_err(reject)?;
            Ok(Message::Response(Response::Error(ErrorResponse {
                id,
                error,
            })))
        }
        _ => Err(reject(IngressError::AmbiguousEnvelope)),
    }
}

/// The one exception to the server role's refusal of responses (feature `legacy`, used only
/// by the initialise-era path, `crate::server::legacy`): a client's response to a request the
/// server sent it, which the 2025 revisions allow and 2026-07-28 forbids (A12). The frame is
/// decoded with every other rule of [`decode`] (bounds, duplicates, envelope) as the client
/// role reads responses; anything but a response is refused as it would be there.
///
/// # Errors
/// The rejection [`decode`] gives under `limits` with the client role, or
/// [`IngressError::UnexpectedRequest`] / [`IngressError::NotAMessage`] for a frame that is
/// not a response.
#[cfg(feature = "legacy")]
pub fn decode_client_response(frame: &[u8], limits: &IngressLimits) -> Result<Response, Rejection> {
    let as_client = IngressLimits {
        role: Role::Client,
        ..*limits
    };
    match decode(frame, &as_client)? {
        Message::Response(response) => Ok(response),
        Message::Notification(_) => Err(Rejection::new(IngressError::NotAMessage, ReplyTo::Nobody)),
        Message::Request(_) => Err(Rejection::new(
            IngressError::UnexpectedRequest,
            ReplyTo::NullId,
        )),
    }
}

/// The member's value when it appeared exactly once.
fn one(slot: Slot<'_>) -> Option<Member<'_>> {
    match slot {
        Slot::One(m) => Some(m),
        Slot::Absent | Slot::Repeated => None,
    }
}

/// Whom to answer if the frame is rejected after the syntax check: nobody for a
/// notification (a method and no id member at all), the id when it reads as one (once,
/// within the limits), else `null`.
fn reply_target(m: &scan::TopMembers<'_>, limits: &IngressLimits) -> ReplyTo {
    if let (Slot::Absent, Slot::One(_) | Slot::Repeated) = (m.id, m.method) {
        return ReplyTo::Nobody;
    }
    match one(m.id).map(|id| read_id(id, limits)) {
        Some(Ok(id)) => ReplyTo::Id(id),
        _ => ReplyTo::NullId,
    }
}

/// Checks the id's encoded size and type, keeping its exact token.
fn read_id(id: Member<'_>, limits: &IngressLimits) -> Result<RequestId, IngressError> {
    if id.text.len() > limits.max_id_bytes {
        return Err(IngressError::IdTooLong {
            limit: limits.max_id_bytes,
        });
    }
    RequestId::from_token(id.text).map_err(IngressError::BadId)
}

/// Copies validated JSON text into an owned raw value, byte for byte, without a second parse:
/// the scan validated it to the last byte, and it refuses everything serde_json refuses (the
/// `codec_differential` fuzz target checks that), so `RawValue::from_string`'s own parse could
/// only agree. That parse was a second full pass over every request's `params` (issue #23,
/// size curve).
fn raw(text: &str) -> Result<Box<RawValue>, IngressError> {
    crate::wire::raw::owned_unchecked(text.to_owned())
        .map_err(|_| IngressError::Syntax { offset: 0 })
}

/// Decodes a string token that the scanner already validated.
fn unescape(token: &str) -> Option<String> {
    if token.len() >= 2 && !token.contains('\\') {
        return token.get(1..token.len() - 1).map(str::to_owned);
    }
    serde_json::from_str(token).ok()
}

/// The wire shape of `error`; unknown members are refused, `data: null` stays `null`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WireError {
    code: i64,
    message: String,
    #[serde(default, deserialize_with = "present_raw")]
    data: Option<Box<RawValue>>,
}

/// Keeps an explicit `null` as `Some("null")` instead of serde's default `None`.
fn present_raw<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Box<RawValue>>, D::Error> {
    Box::<RawValue>::deserialize(d).map(Some)
}

fn read_error_object(error: Member<'_>) -> Result<ErrorObject, IngressError> {
    if error.kind != Kind::Object {
        return Err(IngressError::BadErrorObject);
    }
    let wire: WireError =
        serde_json::from_str(error.text).map_err(|_| IngressError::BadErrorObject)?;
    Ok(ErrorObject {
        code: wire.code,
        message: wire.message,
        data: wire.data,
    })
}
