//! Reply and notification encoding for the server: every line a request's outbox receives is
//! written here, through the egress guard ([`crate::codec::egress`]); errors through the one
//! error encoder, [`crate::codec::encode_error`]. A leaf module: the dispatcher and the
//! progress, log and listen channels all write through it.

use serde_json::value::RawValue;
use serde_json::Value;

use super::{Cause, Reply};
use crate::codec::{encode, EgressLimits};
use crate::wire::jsonrpc::{Message, Notification, RequestId};

/// An error reply to a request (through the one encoder, [`crate::codec::encode_error`]). The
/// message and data are safe, caller-facing values.
pub(crate) fn error_reply(
    id: &RequestId,
    cause: Cause,
    message: &str,
    data: Option<Value>,
) -> Reply {
    let data = data.and_then(|d| serde_json::value::to_raw_value(&d).ok());
    let reply = crate::codec::encode_error(
        Some(id),
        cause,
        message,
        data.as_deref(),
        &EgressLimits::SERVER,
    );
    Reply {
        // Every cause a request is answered with has a code; the encoder's fallback is an
        // internal error, so a body is always there.
        line: reply.body.unwrap_or_default(),
        status: reply.status,
    }
}

/// Encodes a success response around an already encoded result object.
pub(crate) fn encode_result(
    id: &RequestId,
    result: &str,
) -> Result<String, crate::codec::EgressError> {
    let raw = RawValue::from_string(result.to_owned())
        .map_err(|e| crate::codec::EgressError::Encode(e.to_string()))?;
    encode_result_raw(id, &raw, &EgressLimits::SERVER)
}

/// Encodes a success response around a result that is already a valid JSON value, within
/// `limits` (the server's configured response cap).
pub(crate) fn encode_result_raw(
    id: &RequestId,
    result: &RawValue,
    limits: &EgressLimits,
) -> Result<String, crate::codec::EgressError> {
    crate::codec::egress::encode_success(id, result, limits)
}

/// Encodes a server notification; over its bound it is dropped with a warning.
pub(crate) fn encode_notification(method: &str, params: &str) -> Option<String> {
    let params = RawValue::from_string(params.to_owned()).ok()?;
    let message = Message::Notification(Notification {
        method: method.to_owned(),
        params: Some(params),
    });
    match encode(&message, &EgressLimits::SERVER) {
        Ok(bytes) => String::from_utf8(bytes).ok(),
        Err(e) => {
            tracing::warn!(method, error = %e, "notification dropped");
            None
        }
    }
}
