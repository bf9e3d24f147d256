//! Progress and cancellation on the wire (J-section), for both roles: the
//! `notifications/progress` params a server writes and a client reads, and the
//! `notifications/cancelled` params a client writes and a server reads. What may be sent when
//! (monotonic progress, pacing, nothing after the reply) is the pacer machine's business
//! ([`crate::machine::pacer`]); this module only knows the shapes.

use serde::Deserialize;
use serde_json::value::RawValue;

use super::jsonrpc::RequestId;

/// The params of one `notifications/progress`: the request's token (its exact JSON text,
/// echoed byte for byte), `progress`, optional `total` (number texts as given) and message.
#[must_use]
pub fn progress_params(
    token: &str,
    progress: &str,
    total: Option<&str>,
    message: Option<&str>,
) -> String {
    let mut params = format!(r#"{{"progressToken":{token},"progress":{progress}"#);
    if let Some(total) = total {
        params.push_str(r#","total":"#);
        params.push_str(total);
    }
    if let Some(message) = message {
        params.push_str(r#","message":"#);
        params.push_str(&serde_json::Value::String(message.to_owned()).to_string());
    }
    params.push('}');
    params
}

/// A received `notifications/progress`, its numbers as exact texts.
#[derive(Debug, Clone)]
pub struct ProgressParams<'a> {
    /// The token's exact JSON text (a string or an integer).
    pub token: &'a RawValue,
    /// `progress`, a JSON number.
    pub progress: &'a RawValue,
    /// `total`, a JSON number, if given.
    pub total: Option<&'a RawValue>,
    /// `message`, if given.
    pub message: Option<String>,
}

/// Why received progress params are refused (a client ignores such a notification and
/// reports it as a diagnostic).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProgressParamsError {
    /// Not an object, or `progressToken` / `progress` missing.
    #[error("progress params need progressToken and progress")]
    Shape,
    /// The token is neither a string nor an integer (S7).
    #[error("progressToken must be a string or an integer")]
    Token,
    /// `progress` or `total` is not a number.
    #[error("progress and total must be numbers")]
    Number,
    /// `message` is not a string.
    #[error("message must be a string")]
    Message,
}

/// Reads received progress params.
///
/// # Errors
/// [`ProgressParamsError`] for a missing member or one of the wrong type.
pub fn read_progress(params: &RawValue) -> Result<ProgressParams<'_>, ProgressParamsError> {
    let m: std::collections::BTreeMap<String, &RawValue> =
        serde_json::from_str(params.get()).map_err(|_| ProgressParamsError::Shape)?;
    let (Some(&token), Some(&progress)) = (m.get("progressToken"), m.get("progress")) else {
        return Err(ProgressParamsError::Shape);
    };
    let total = m.get("total").copied();
    let t = token.get();
    let is_integer = t
        .bytes()
        .enumerate()
        .all(|(i, b)| b.is_ascii_digit() || (i == 0 && b == b'-'))
        && t.bytes().any(|b| b.is_ascii_digit());
    if !(t.starts_with('"') || is_integer) {
        return Err(ProgressParamsError::Token);
    }
    let is_number = |raw: &RawValue| {
        let c = raw.get().as_bytes()[0];
        c == b'-' || c.is_ascii_digit()
    };
    if !is_number(progress) || total.is_some_and(|t| !is_number(t)) {
        return Err(ProgressParamsError::Number);
    }
    let message = match m.get("message") {
        None => None,
        Some(raw) => Some(
            serde_json::from_str::<String>(raw.get()).map_err(|_| ProgressParamsError::Message)?,
        ),
    };
    Ok(ProgressParams {
        token,
        progress,
        total,
        message,
    })
}

/// The params of a `notifications/cancelled` for `id` (its exact JSON text), with an
/// optional reason.
#[must_use]
pub fn cancelled_params(id: &RequestId, reason: Option<&str>) -> String {
    match reason {
        None => format!(r#"{{"requestId":{}}}"#, id.token()),
        Some(reason) => format!(
            r#"{{"requestId":{},"reason":{}}}"#,
            id.token(),
            serde_json::Value::String(reason.to_owned())
        ),
    }
}

/// The request a received `notifications/cancelled` names, or `None` when its params do not
/// name one (such a notification is ignored, never answered).
#[must_use]
pub fn cancelled_request(params: Option<&RawValue>) -> Option<RequestId> {
    #[derive(Deserialize)]
    struct Members {
        #[serde(rename = "requestId")]
        request_id: Option<Box<RawValue>>,
    }
    let m: Members = serde_json::from_str(params?.get()).ok()?;
    RequestId::from_raw(m.request_id?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    #[test]
    fn j5_progress_params_keep_token_and_number_texts() {
        assert_eq!(
            progress_params(r#""t\u0031""#, "1.50", Some("1e2"), Some("half \"way\"")),
            r#"{"progressToken":"t\u0031","progress":1.50,"total":1e2,"message":"half \"way\""}"#
        );
        assert_eq!(
            progress_params("18446744073709551617", "0", None, None),
            r#"{"progressToken":18446744073709551617,"progress":0}"#
        );
        let text = progress_params(r#""t""#, "1.50", Some("3"), Some("m"));
        let text = raw(&text);
        let p = read_progress(&text).unwrap();
        assert_eq!(
            (
                p.token.get(),
                p.progress.get(),
                p.total.map(RawValue::get),
                p.message.as_deref()
            ),
            (r#""t""#, "1.50", Some("3"), Some("m"))
        );
    }

    #[test]
    fn j5_s7_received_progress_of_the_wrong_shape_is_typed() {
        for (text, err) in [
            (r#"{"progress":1}"#, ProgressParamsError::Shape),
            (r#"[]"#, ProgressParamsError::Shape),
            (
                r#"{"progressToken":1.5,"progress":1}"#,
                ProgressParamsError::Token,
            ),
            (
                r#"{"progressToken":null,"progress":1}"#,
                ProgressParamsError::Token,
            ),
            (
                r#"{"progressToken":"t","progress":"1"}"#,
                ProgressParamsError::Number,
            ),
            (
                r#"{"progressToken":"t","progress":1,"total":true}"#,
                ProgressParamsError::Number,
            ),
            (
                r#"{"progressToken":"t","progress":1,"message":3}"#,
                ProgressParamsError::Message,
            ),
        ] {
            assert_eq!(read_progress(&raw(text)).err(), Some(err), "{text}");
        }
        assert!(read_progress(&raw(r#"{"progressToken":-7,"progress":-0.5}"#)).is_ok());
    }

    #[test]
    fn j2_cancelled_params_round_trip_the_exact_id() {
        for id in [r#""a\u0062""#, "18446744073709551617", "0"] {
            let id = RequestId::from_token(id).unwrap();
            let text = cancelled_params(&id, Some("user"));
            let back = cancelled_request(Some(&raw(&text))).unwrap();
            assert_eq!(back.token(), id.token());
        }
        assert_eq!(
            cancelled_params(&RequestId::integer(3), None),
            r#"{"requestId":3}"#
        );
        assert!(cancelled_request(None).is_none());
        assert!(cancelled_request(Some(&raw(r#"{"requestId":null}"#))).is_none());
        assert!(cancelled_request(Some(&raw(r#"{"reason":"x"}"#))).is_none());
    }
}
