//! Egress guard: compact single lines (C1), the 16 MiB / 8 KiB reserve preflight (O39), typed
//! TooLarge for the server's `result_too_large` (O40), no partial line on a tripped guard (O41),
//! notification params cap (O42). Each bound at N and N+1.

use serde_json::value::RawValue;
use strict_mcp::codec::{
    check_identity, encode, encode_line, preflight_result, EgressBound, EgressError, EgressLimits,
    LineWriter,
};
use strict_mcp::wire::jsonrpc::{
    ErrorCode, ErrorObject, ErrorResponse, Message, Notification, Request, RequestId, Response,
    SuccessResponse,
};
use strict_mcp::wire::limits;

fn raw(text: String) -> Box<RawValue> {
    RawValue::from_string(text).expect("valid JSON")
}

/// A JSON object of exactly `len` bytes: `{"s":"xxx…"}`.
fn object_of_len(len: usize) -> Box<RawValue> {
    raw(format!("{{\"s\":\"{}\"}}", "x".repeat(len - 8)))
}

fn success(result: Box<RawValue>) -> Message {
    Message::Response(Response::Success(SuccessResponse {
        id: RequestId::integer(1),
        result,
    }))
}

fn progress(params: Box<RawValue>) -> Message {
    Message::Notification(Notification {
        method: "notifications/progress".into(),
        params: Some(params),
    })
}

#[test]
fn o39_result_payload_at_16mib_minus_reserve_passes_one_over_is_too_large() {
    let at = object_of_len(limits::MAX_RESULT_PAYLOAD_BYTES);
    assert_eq!(at.get().len(), 16 * 1024 * 1024 - 8 * 1024);
    assert_eq!(preflight_result(&at, &EgressLimits::SERVER), Ok(()));
    let bytes = encode(&success(at), &EgressLimits::SERVER).expect("fits");
    assert!(bytes.len() <= limits::MAX_RESPONSE_BYTES);
    assert!(bytes.starts_with(br#"{"jsonrpc":"2.0","id":1,"result":{"s":"xxx"#));

    let over = object_of_len(limits::MAX_RESULT_PAYLOAD_BYTES + 1);
    let expected = EgressError::TooLarge {
        bound: EgressBound::ResultPayload,
        limit: 16_769_024,
        actual: 16_769_025,
    };
    assert_eq!(
        preflight_result(&over, &EgressLimits::SERVER),
        Err(expected.clone())
    );
    let err = encode(&success(over), &EgressLimits::SERVER).expect_err("too large");
    assert_eq!(err, expected);
    assert!(
        err.is_too_large(),
        "O40: the server's cue for result_too_large"
    );
    assert_eq!(err.code(), ErrorCode::InternalError);
}

#[test]
fn o39_whole_message_bound_at_n_and_n_plus_1() {
    let message = success(raw(r#"{"resultType":"complete","content":[]}"#.into()));
    let len = encode(&message, &EgressLimits::SERVER)
        .expect("encode")
        .len();
    let exact = EgressLimits {
        max_message_bytes: len,
        reserve_bytes: 0,
        ..EgressLimits::SERVER
    };
    assert_eq!(encode(&message, &exact).expect("at bound").len(), len);
    let tight = EgressLimits {
        max_message_bytes: len - 1,
        ..exact
    };
    assert!(matches!(
        encode(&message, &tight),
        Err(EgressError::TooLarge {
            bound: EgressBound::Message,
            limit,
            actual,
        }) if limit == len - 1 && actual > limit
    ));
    // Regression (found by egress_preflight): the reported size exceeds the limit even when
    // the refused write is a large chunk far from the limit's edge.
    let big = success(raw(format!("{{\"s\":\"{}\"}}", "x".repeat(1000))));
    let small = EgressLimits {
        max_message_bytes: 40,
        reserve_bytes: 0,
        ..EgressLimits::SERVER
    };
    let err = encode(
        &big,
        &EgressLimits {
            max_message_bytes: 2000,
            ..small
        },
    )
    .map(|b| b.len());
    assert_eq!(err, Ok(1042));
    match encode(&big, &small) {
        Err(EgressError::TooLarge {
            limit: 40, actual, ..
        }) => assert!(actual > 40),
        other => panic!("expected TooLarge, got {other:?}"),
    }
}

#[test]
fn o42_notification_params_at_8kib_pass_one_over_is_too_large() {
    let at = progress(object_of_len(limits::MAX_NOTIFICATION_PARAMS_BYTES));
    assert!(encode(&at, &EgressLimits::SERVER).is_ok());
    let over = progress(object_of_len(limits::MAX_NOTIFICATION_PARAMS_BYTES + 1));
    assert_eq!(
        encode(&over, &EgressLimits::SERVER),
        Err(EgressError::TooLarge {
            bound: EgressBound::NotificationParams,
            limit: 8192,
            actual: 8193
        })
    );
}

#[test]
fn o39_identity_at_4kib_passes_one_over_is_too_large() {
    assert_eq!(
        check_identity(&object_of_len(4096), &EgressLimits::SERVER),
        Ok(())
    );
    assert_eq!(
        check_identity(&object_of_len(4097), &EgressLimits::SERVER),
        Err(EgressError::TooLarge {
            bound: EgressBound::Identity,
            limit: 4096,
            actual: 4097
        })
    );
}

#[test]
fn o39_egress_id_at_256_passes_257_is_too_large() {
    let reply = |digits: usize| {
        let id = RequestId::from_token(&format!("1{}", "0".repeat(digits - 1))).expect("id");
        Message::Response(Response::Error(ErrorResponse::from_code(
            Some(id),
            ErrorCode::InternalError,
        )))
    };
    assert!(encode(&reply(256), &EgressLimits::SERVER).is_ok());
    assert!(matches!(
        encode(&reply(257), &EgressLimits::SERVER),
        Err(EgressError::TooLarge {
            bound: EgressBound::Id,
            limit: 256,
            actual: 257
        })
    ));
}

#[test]
fn o41_tripped_guard_writes_nothing_and_good_line_is_whole() {
    let mut writer = LineWriter::new(Vec::new(), EgressLimits::SERVER);
    let over = progress(object_of_len(limits::MAX_NOTIFICATION_PARAMS_BYTES + 1));
    assert!(writer.send(&over).is_err());
    let small = progress(raw(r#"{"progressToken":1,"progress":2}"#.into()));
    writer.send(&small).expect("send");
    assert_eq!(
        writer.into_inner(),
        b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":2}}\n"
    );
}

#[test]
fn c1_pretty_raw_values_are_compacted_to_one_line_and_strings_keep_escapes() {
    let pretty = raw("{\n  \"text\": \"line1\\nline2 \\\" x\",\r\n  \"n\": [1, 2]\n}".into());
    let line = encode_line(&success(pretty), &EgressLimits::SERVER).expect("line");
    assert_eq!(
        line.as_bytes(),
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"text\":\"line1\\nline2 \\\" x\",\"n\":[1,2]}}\n"
    );
    // Without a raw line break the bytes stay exactly as given (spaces included).
    let spaced = raw(r#"{"a": 1E2 , "b":"c d"}"#.into());
    let line = encode_line(&success(spaced), &EgressLimits::SERVER).expect("line");
    assert_eq!(
        line.as_bytes(),
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\": 1E2 , \"b\":\"c d\"}}\n"
    );
    // Newlines inside typed strings are escaped by the serializer.
    let err = ErrorResponse::new(
        None,
        ErrorObject::new(ErrorCode::InvalidParams, "two\nlines"),
    );
    let line = encode_line(
        &Message::Response(Response::Error(err)),
        &EgressLimits::SERVER,
    )
    .expect("line");
    assert_eq!(
        line.into_bytes(),
        b"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32602,\"message\":\"two\\nlines\"}}\n"
    );
}

#[test]
fn o36_client_requests_bounded_to_what_servers_accept() {
    let request = |len: usize| {
        Message::Request(Request {
            id: RequestId::string("r"),
            method: "tools/call".into(),
            params: Some(object_of_len(len)),
        })
    };
    assert!(encode(&request(1024), &EgressLimits::CLIENT).is_ok());
    assert!(matches!(
        encode(
            &request(limits::MAX_REQUEST_FRAME_BYTES),
            &EgressLimits::CLIENT
        ),
        Err(EgressError::TooLarge {
            bound: EgressBound::Message,
            ..
        })
    ));
}

/// `encode_success` is byte-identical to `encode` of the same success response, and refuses
/// exactly what `encode` refuses (same bound), at every edge.
mod encode_success_matches_encode {
    use super::*;
    use strict_mcp::codec::egress::encode_success;

    fn both(id: &RequestId, result: &RawValue, limits: &EgressLimits) {
        let message = Message::Response(Response::Success(SuccessResponse {
            id: id.clone(),
            result: result.to_owned(),
        }));
        let reference = encode(&message, limits);
        let direct = encode_success(id, result, limits);
        match (reference, direct) {
            (Ok(a), Ok(b)) => assert_eq!(a, b.into_bytes()),
            (
                Err(EgressError::TooLarge {
                    bound: ba,
                    limit: la,
                    ..
                }),
                Err(EgressError::TooLarge {
                    bound: bb,
                    limit: lb,
                    ..
                }),
            ) => assert_eq!((ba, la), (bb, lb)),
            (a, b) => panic!("encode {a:?} vs encode_success {b:?}"),
        }
    }

    #[test]
    fn numeric_string_and_escaped_ids() {
        let result = raw(r#"{"content":[{"type":"text","text":"hé\n"}],"isError":false}"#.into());
        for token in [
            "1",
            "-0",
            "18446744073709551617",
            r#""1""#,
            r#""a\u0062""#,
            r#""é \" \\""#,
        ] {
            both(
                &RequestId::from_token(token).expect("id"),
                &result,
                &EgressLimits::SERVER,
            );
        }
    }

    #[test]
    fn results_with_line_breaks_are_compacted_the_same_way() {
        let id = RequestId::integer(7);
        for text in [
            "{\n  \"a\": 1,\r\n  \"b\": \"x\\ny\"\n}",
            "{\"s\":\"a b\",\n\"t\" : [1, 2]}",
            "{\"q\":\"\\\\\",\n\"r\":\"\\\"\"}",
        ] {
            both(&id, &raw(text.into()), &EgressLimits::SERVER);
        }
        let out = encode_success(
            &id,
            &raw("{\n\"a\": \"b c\"\n}".into()),
            &EgressLimits::SERVER,
        )
        .expect("fits");
        assert_eq!(out, r#"{"jsonrpc":"2.0","id":7,"result":{"a":"b c"}}"#);
    }

    #[test]
    fn result_payload_at_the_bound_and_one_past() {
        let limits = EgressLimits::SERVER;
        let id = RequestId::integer(1);
        let at = object_of_len(limits.max_payload_bytes());
        both(&id, &at, &limits);
        assert!(encode_success(&id, &at, &limits).is_ok());
        let over = object_of_len(limits.max_payload_bytes() + 1);
        both(&id, &over, &limits);
        assert!(matches!(
            encode_success(&id, &over, &limits),
            Err(EgressError::TooLarge {
                bound: EgressBound::ResultPayload,
                ..
            })
        ));
    }

    #[test]
    fn whole_message_at_the_bound_and_one_past() {
        // No reserve: the whole-message bound is the one that trips.
        let limits = EgressLimits {
            max_message_bytes: 200,
            reserve_bytes: 0,
            ..EgressLimits::SERVER
        };
        let id = RequestId::integer(1);
        let envelope = r#"{"jsonrpc":"2.0","id":1,"result":}"#.len();
        let at = object_of_len(200 - envelope);
        both(&id, &at, &limits);
        assert_eq!(encode_success(&id, &at, &limits).expect("fits").len(), 200);
        let over = object_of_len(200 - envelope + 1);
        both(&id, &over, &limits);
        assert!(matches!(
            encode_success(&id, &over, &limits),
            Err(EgressError::TooLarge {
                bound: EgressBound::Message,
                ..
            })
        ));
    }

    #[test]
    fn id_at_the_bound_and_one_past() {
        let limits = EgressLimits::SERVER;
        let result = raw(r#"{"ok":true}"#.into());
        let at = RequestId::from_token(&format!("\"{}\"", "i".repeat(limits.max_id_bytes - 2)))
            .expect("id");
        assert_eq!(at.token().len(), limits.max_id_bytes);
        both(&at, &result, &limits);
        assert!(encode_success(&at, &result, &limits).is_ok());
        let over = RequestId::from_token(&format!("\"{}\"", "i".repeat(limits.max_id_bytes - 1)))
            .expect("id");
        both(&over, &result, &limits);
        assert!(matches!(
            encode_success(&over, &result, &limits),
            Err(EgressError::TooLarge {
                bound: EgressBound::Id,
                ..
            })
        ));
    }
}

/// The one error encoder (issue "one refusal path"): code and status from the cause table, id
/// echoed exactly or `null`, `data` verbatim, no body for status-only causes.
#[test]
fn a4_a9_encode_error_writes_the_cause_table_row() {
    use strict_mcp::codec::encode_error;
    use strict_mcp::wire::errors::Cause;
    let id = RequestId::from_token("\"a\\u0062\"").expect("id");
    let data = raw(r#"{"n":1.50,"big":18446744073709551617}"#.to_owned());
    let reply = encode_error(
        Some(&id),
        Cause::UnsupportedVersion,
        "Unsupported protocol version",
        Some(&data),
        &EgressLimits::SERVER,
    );
    assert_eq!(reply.status, 400);
    assert_eq!(
        reply.body.as_deref(),
        Some(
            r#"{"jsonrpc":"2.0","id":"a\u0062","error":{"code":-32022,"message":"Unsupported protocol version","data":{"n":1.50,"big":18446744073709551617}}}"#
        )
    );
    let reply = encode_error(
        None,
        Cause::Parse,
        "Parse error",
        None,
        &EgressLimits::SERVER,
    );
    assert_eq!(reply.status, 400);
    assert_eq!(
        reply.body.as_deref(),
        Some(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#)
    );
    for cause in [
        Cause::OriginRejected,
        Cause::HostRejected,
        Cause::MethodNotAllowed,
    ] {
        let reply = encode_error(None, cause, "x", None, &EgressLimits::SERVER);
        assert_eq!((reply.status, reply.body), (cause.http_status(), None));
    }
}

/// O39: an error whose `data` is over the payload bound (limit + 1) is never lost: it becomes a
/// plain internal error with the same id; at the bound it is sent as is.
#[test]
fn o39_encode_error_over_its_bound_falls_back_to_an_internal_error() {
    use strict_mcp::codec::encode_error;
    use strict_mcp::wire::errors::Cause;
    let limits = EgressLimits::SERVER;
    let id = RequestId::integer(7);
    let limit = limits.max_payload_bytes();
    let at = object_of_len(limit);
    let reply = encode_error(Some(&id), Cause::InvalidParams, "m", Some(&at), &limits);
    assert_eq!(reply.status, 200);
    assert!(reply.body.expect("body").ends_with("}}}"));
    let past = object_of_len(limit + 1);
    let reply = encode_error(Some(&id), Cause::InvalidParams, "m", Some(&past), &limits);
    assert_eq!(reply.status, 500);
    assert_eq!(
        reply.body.as_deref(),
        Some(r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"Internal error"}}"#)
    );
    // An id over its bound is replaced by null in the fallback.
    let long =
        RequestId::from_token(&format!("\"{}\"", "i".repeat(limits::MAX_ID_BYTES))).expect("id");
    let reply = encode_error(Some(&long), Cause::InvalidParams, "m", None, &limits);
    assert_eq!(
        reply.body.as_deref(),
        Some(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}"#)
    );
}
