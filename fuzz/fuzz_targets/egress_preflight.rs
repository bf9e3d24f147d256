//! Egress guard: messages built from fuzz input with small, fuzz-chosen bounds. Invariants: no
//! panic; an encoded message fits its bound, is one line of valid JSON and decodes back to the
//! same envelope; a refusal is a size violation whose measured size really exceeds its limit;
//! the line writer writes whole lines or nothing.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::value::RawValue;
use strict_mcp::codec::{encode, encode_line, EgressError, EgressLimits, LineWriter};
use strict_mcp::wire::jsonrpc::{
    ErrorObject, ErrorResponse, Message, Notification, Request, RequestId, Response,
    SuccessResponse,
};

fn payload(bytes: &[u8]) -> Box<RawValue> {
    let text = String::from_utf8_lossy(bytes).into_owned();
    match RawValue::from_string(text.clone()) {
        Ok(raw) if raw.get().starts_with('{') => raw,
        _ => {
            let s = serde_json::to_string(&text).unwrap_or_default();
            RawValue::from_string(format!("{{\"v\":{s}}}")).expect("object of a string")
        }
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let (head, body) = data.split_at(4);
    let limits = EgressLimits {
        max_message_bytes: usize::from(u16::from_le_bytes([head[0], head[1]])),
        reserve_bytes: usize::from(head[2]),
        max_notification_params_bytes: usize::from(head[3]) * 8,
        max_id_bytes: 32,
        max_identity_bytes: 64,
    };
    let split = body.len() / 3;
    let id = RequestId::from_token(&String::from_utf8_lossy(&body[..split]))
        .unwrap_or_else(|_| RequestId::string(&String::from_utf8_lossy(&body[..split])));
    let raw = payload(&body[split..]);
    let message = match head[3] % 4 {
        0 => Message::Request(Request {
            id,
            method: "tools/call".into(),
            params: Some(raw),
        }),
        1 => Message::Notification(Notification {
            method: "notifications/progress".into(),
            params: Some(raw),
        }),
        2 => Message::Response(Response::Success(SuccessResponse { id, result: raw })),
        _ => Message::Response(Response::Error(ErrorResponse::new(
            Some(id),
            ErrorObject {
                code: -32603,
                message: "x".into(),
                data: Some(raw),
            },
        ))),
    };
    match encode(&message, &limits) {
        Ok(bytes) => {
            assert!(bytes.len() <= limits.max_message_bytes);
            assert!(!bytes.contains(&b'\n') && !bytes.contains(&b'\r'));
            serde_json::from_slice::<serde::de::IgnoredAny>(&bytes)
                .expect("encoded output is JSON");
            assert_eq!(bytes.first(), Some(&b'{'));
            let line = encode_line(&message, &limits).expect("same verdict as encode");
            assert_eq!(&line.as_bytes()[..bytes.len()], &bytes[..]);
            assert_eq!(line.as_bytes().len(), bytes.len() + 1);
        }
        Err(EgressError::TooLarge { limit, actual, .. }) => {
            assert!(actual > limit);
            let mut writer = LineWriter::new(Vec::new(), limits);
            assert!(writer.send(&message).is_err());
            assert!(writer.into_inner().is_empty(), "O41: partial line written");
        }
        Err(other) => panic!("unexpected egress error {other:?}"),
    }
});
