//! Property tests: decode(encode(m)) == m with byte-exact raw parts (O44, O56, O121); params
//! written with arbitrary whitespace come back byte for byte; mutated frames never panic and
//! are either accepted (and then re-encode within bounds) or rejected with one of the ingress
//! codes; frames over the bound are refused as too large (O36).

use proptest::prelude::*;
use serde_json::value::RawValue;
use strict_mcp::codec::{decode, encode, EgressLimits, IngressError, IngressLimits};
use strict_mcp::wire::jsonrpc::{
    ErrorObject, ErrorResponse, Message, Notification, Request, RequestId, Response,
    SuccessResponse,
};

/// Insignificant JSON whitespace, often empty, line breaks included.
fn ws() -> BoxedStrategy<String> {
    prop_oneof![
        4 => Just(String::new()),
        1 => "[ \t\r\n]{1,3}",
    ]
    .boxed()
}

/// Whitespace that may appear inside one stdio line (egress keeps it verbatim).
fn ws_inline() -> BoxedStrategy<String> {
    prop_oneof![
        4 => Just(String::new()),
        1 => "[ \t]{1,3}",
    ]
    .boxed()
}

/// A JSON string token, sometimes with escapes.
fn string_token() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>().prop_map(|s| serde_json::to_string(&s).expect("string")),
        "[a-z]{0,6}".prop_map(|s| format!("\"{}\\u00e9\\n\\\"{s}\\ud83d\\ude00\"", s)),
    ]
}

fn number_token() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        "-?[1-9][0-9]{18,40}",
        "-?(0|[1-9][0-9]{0,5})\\.[0-9]{1,6}([eE][+-]?[0-9]{1,3})?",
        "[1-9][eE][0-9]{3}",
    ]
}

/// Arbitrary JSON text with the given whitespace and unique member names.
fn json_text(ws: fn() -> BoxedStrategy<String>) -> impl Strategy<Value = String> + Clone {
    let leaf = prop_oneof![
        Just("null".to_owned()),
        Just("true".to_owned()),
        Just("false".to_owned()),
        number_token(),
        string_token(),
    ];
    leaf.prop_recursive(5, 48, 6, move |inner| {
        prop_oneof![
            (prop::collection::vec((inner.clone(), ws(), ws()), 0..6)).prop_map(|items| {
                let parts: Vec<String> = items
                    .into_iter()
                    .map(|(v, a, b)| format!("{a}{v}{b}"))
                    .collect();
                format!("[{}]", parts.join(","))
            }),
            object_of(inner, ws),
        ]
    })
}

fn object_of(
    inner: impl Strategy<Value = String> + Clone,
    ws: fn() -> BoxedStrategy<String>,
) -> impl Strategy<Value = String> {
    prop::collection::btree_map("[a-z_/.]{0,8}", (inner, ws(), ws()), 0..6).prop_map(|members| {
        let parts: Vec<String> = members
            .into_iter()
            .map(|(k, (v, a, b))| format!("{a}\"{k}\"{b}:{a}{v}{b}"))
            .collect();
        format!("{{{}}}", parts.join(","))
    })
}

fn params_text(ws: fn() -> BoxedStrategy<String>) -> impl Strategy<Value = String> {
    object_of(json_text(ws), ws)
}

fn id() -> impl Strategy<Value = RequestId> {
    prop_oneof![
        any::<i64>().prop_map(RequestId::integer),
        "-?[1-9][0-9]{18,80}".prop_map(|t| RequestId::from_token(&t).expect("integer")),
        "[ -~]{0,40}".prop_map(|s| RequestId::string(&s)),
        string_token()
            .prop_filter("bounded", |t| t.len() <= 256)
            .prop_map(|t| RequestId::from_token(&t).expect("string")),
    ]
}

fn raw(text: String) -> Box<RawValue> {
    RawValue::from_string(text).expect("generated JSON is valid")
}

fn message() -> impl Strategy<Value = Message> {
    let method = prop_oneof!["[a-z]{1,12}/[a-zA-Z_]{1,12}", "[^\u{0}]{0,30}"];
    prop_oneof![
        (
            id(),
            method.clone(),
            prop::option::of(params_text(ws_inline))
        )
            .prop_map(|(id, method, p)| {
                Message::Request(Request {
                    id,
                    method,
                    params: p.map(raw),
                })
            }),
        (method, prop::option::of(params_text(ws_inline))).prop_map(|(method, p)| {
            Message::Notification(Notification {
                method,
                params: p.map(raw),
            })
        }),
        (id(), params_text(ws_inline)).prop_map(|(id, r)| {
            Message::Response(Response::Success(SuccessResponse { id, result: raw(r) }))
        }),
        (
            prop::option::of(id()),
            any::<i64>(),
            ".{0,20}",
            prop::option::of(json_text(ws_inline))
        )
            .prop_map(|(id, code, message, data)| {
                Message::Response(Response::Error(ErrorResponse {
                    id,
                    error: ErrorObject {
                        code,
                        message,
                        data: data.map(raw),
                    },
                }))
            }),
    ]
}

fn limits_for(m: &Message) -> IngressLimits {
    match m {
        Message::Response(_) => IngressLimits::CLIENT,
        _ => IngressLimits::SERVER,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn o121_decode_of_encode_is_identity_on_exact_bytes(m in message()) {
        let bytes = encode(&m, &EgressLimits::SERVER).expect("encode");
        let back = decode(&bytes, &limits_for(&m)).expect("decode what we encoded");
        prop_assert_eq!(&back, &m);
        // Raw parts byte-exact (PartialEq compares raw text, asserted explicitly as well).
        if let (Message::Request(a), Message::Request(b)) = (&back, &m) {
            prop_assert_eq!(a.id.token(), b.id.token());
            prop_assert_eq!(a.params.as_deref().map(RawValue::get), b.params.as_deref().map(RawValue::get));
        }
        // Encoding is deterministic: a second round gives the same bytes.
        prop_assert_eq!(encode(&back, &EgressLimits::SERVER).expect("re-encode"), bytes);
    }

    #[test]
    fn o44_params_with_any_whitespace_are_kept_byte_for_byte(
        params in params_text(ws), a in ws(), b in ws(), id in id()
    ) {
        let frame = format!(
            "{a}{{{a}\"id\"{b}:{a}{}{b},\"params\":{b}{params}{a},\"jsonrpc\":\"2.0\",\"method\":\"tools/call\"{b}}}{a}",
            id.token()
        );
        match decode(frame.as_bytes(), &IngressLimits::SERVER) {
            Ok(Message::Request(r)) => {
                prop_assert_eq!(r.params.as_deref().map(RawValue::get), Some(params.as_str()));
                prop_assert_eq!(r.id.token(), id.token());
            }
            other => prop_assert!(false, "unexpected {:?}", other),
        }
    }

    #[test]
    fn mutated_frames_never_panic_and_map_to_one_ingress_code(
        m in message(), edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..4)
    ) {
        let mut bytes = encode(&m, &EgressLimits::SERVER).expect("encode");
        for (at, byte, op) in edits {
            let i = at.index(bytes.len() + 1);
            match op {
                0 if i < bytes.len() => bytes[i] = byte,
                1 => bytes.insert(i, byte),
                _ if i < bytes.len() => { bytes.remove(i); }
                _ => {}
            }
        }
        for limits in [IngressLimits::SERVER, IngressLimits::CLIENT] {
            match decode(&bytes, &limits) {
                Ok(msg) => {
                    let again = encode(&msg, &EgressLimits::SERVER);
                    if let Ok(again) = again {
                        prop_assert!(again.len() <= limits.max_frame_bytes);
                        let back = decode(&again, &limits).expect("re-encoded frames decode");
                        let fixed = encode(&back, &EgressLimits::SERVER).expect("fixed point");
                        prop_assert_eq!(&fixed, &again);
                        if !bytes.contains(&b'\n') && !bytes.contains(&b'\r') {
                            prop_assert_eq!(&back, &msg);
                        }
                    }
                }
                Err(r) => prop_assert!(matches!(r.code().code(), -32700 | -32600 | -32602)),
            }
        }
    }

    #[test]
    fn o36_frames_over_the_bound_are_refused_unread(m in message(), cut in 1usize..64) {
        let bytes = encode(&m, &EgressLimits::SERVER).expect("encode");
        let limits = IngressLimits { max_frame_bytes: bytes.len().saturating_sub(cut), ..limits_for(&m) };
        let r = decode(&bytes, &limits).expect_err("over the bound");
        prop_assert_eq!(r.error, IngressError::FrameTooLarge { limit: limits.max_frame_bytes, actual: Some(bytes.len()) });
    }
}
