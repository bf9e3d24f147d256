//! Ingress matrix: every bound at N and N+1 with its exact code, duplicate keys, ids, parse
//! errors and the envelope rules. Requirement ids in test names: A2, A4, A11, A12, A21, O13,
//! O36, O37, O42, O44, O56, O74, O121, O122.

use strict_mcp::codec::{
    decode, encode, EgressLimits, IngressError, IngressLimits, LineEvent, LineFramer, Rejection,
    ReplyTo,
};
use strict_mcp::wire::jsonrpc::{
    ErrorCode, ErrorResponse, InvalidId, Message, RequestId, Response, SuccessResponse,
};
use strict_mcp::wire::limits;

fn server(frame: &[u8]) -> Result<Message, Rejection> {
    decode(frame, &IngressLimits::SERVER)
}

fn client(frame: &[u8]) -> Result<Message, Rejection> {
    decode(frame, &IngressLimits::CLIENT)
}

fn rejected(frame: &[u8]) -> Rejection {
    match server(frame) {
        Ok(m) => panic!("accepted {:?}: {m:?}", String::from_utf8_lossy(frame)),
        Err(r) => r,
    }
}

fn request(frame: &[u8]) -> strict_mcp::wire::jsonrpc::Request {
    match server(frame) {
        Ok(Message::Request(r)) => r,
        other => panic!("not a request: {other:?}"),
    }
}

/// The exact error reply a server would write for this frame.
fn reply_bytes(frame: &[u8]) -> String {
    let rejection = rejected(frame);
    let response = rejection.to_response().expect("a reply");
    let bytes = encode(
        &Message::Response(Response::Error(response)),
        &EgressLimits::SERVER,
    )
    .expect("encode");
    String::from_utf8(bytes).expect("utf8")
}

fn id(token: &str) -> ReplyTo {
    ReplyTo::Id(RequestId::from_token(token).expect("valid id"))
}

/// A request whose total length is exactly `len`, padded inside a string argument.
fn request_of_len(len: usize) -> Vec<u8> {
    let head =
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"s":""#;
    let tail = br#""}}}"#;
    let mut frame = head.to_vec();
    frame.resize(len - tail.len(), b'x');
    frame.extend_from_slice(tail);
    assert_eq!(frame.len(), len);
    frame
}

fn nested(depth: usize) -> String {
    // params is level 2, so `depth - 2` more arrays inside it reach `depth` levels in total.
    let inner = depth - 2;
    format!(
        r#"{{"jsonrpc":"2.0","id":"d","method":"x","params":{{"a":{}{}}}}}"#,
        "[".repeat(inner),
        "]".repeat(inner)
    )
}

#[test]
fn o36_request_frame_at_bound_accepted_and_one_over_rejected() {
    let at = request_of_len(limits::MAX_REQUEST_FRAME_BYTES);
    assert!(server(&at).is_ok());
    let over = request_of_len(limits::MAX_REQUEST_FRAME_BYTES + 1);
    let r = rejected(&over);
    assert_eq!(r.code(), ErrorCode::InvalidRequest);
    assert_eq!(r.code().code(), -32600);
    assert_eq!(r.reply_to, ReplyTo::NullId);
    assert_eq!(
        r.error,
        IngressError::FrameTooLarge {
            limit: 2_097_152,
            actual: Some(2_097_153)
        }
    );
}

#[test]
fn o39_client_accepts_response_frames_up_to_16mib_plus_reserve() {
    let build = |len: usize| {
        let head = br#"{"jsonrpc":"2.0","id":1,"result":{"s":""#;
        let tail = br#""}}"#;
        let mut f = head.to_vec();
        f.resize(len - tail.len(), b'y');
        f.extend_from_slice(tail);
        f
    };
    let at = build(limits::MAX_CLIENT_INGRESS_FRAME_BYTES);
    assert!(matches!(
        client(&at),
        Ok(Message::Response(Response::Success(_)))
    ));
    let over = build(limits::MAX_CLIENT_INGRESS_FRAME_BYTES + 1);
    let err = client(&over).expect_err("over");
    assert_eq!(err.code().code(), -32600);
    assert!(matches!(err.error, IngressError::FrameTooLarge { .. }));
}

#[test]
fn o37_string_id_of_256_encoded_bytes_accepted_257_rejected() {
    let tok256 = format!("\"{}\"", "i".repeat(254));
    let frame = format!(r#"{{"jsonrpc":"2.0","id":{tok256},"method":"m"}}"#);
    assert_eq!(request(frame.as_bytes()).id.token(), tok256);
    let tok257 = format!("\"{}\"", "i".repeat(255));
    let frame = format!(r#"{{"jsonrpc":"2.0","id":{tok257},"method":"m"}}"#);
    let r = rejected(frame.as_bytes());
    assert_eq!(r.error, IngressError::IdTooLong { limit: 256 });
    assert_eq!(r.code().code(), -32600);
    assert_eq!(r.reply_to, ReplyTo::NullId);
}

#[test]
fn o37_escapes_count_toward_the_id_bound() {
    // 42 escapes of 6 bytes + 2 plain bytes + 2 quotes = 256 encoded bytes, 44 decoded.
    let ok = format!(
        r#"{{"jsonrpc":"2.0","id":"{}aa","method":"m"}}"#,
        r"\u0061".repeat(42)
    );
    assert_eq!(request(ok.as_bytes()).id.as_str(), Some(&*"a".repeat(44)));
    let over = format!(
        r#"{{"jsonrpc":"2.0","id":"{}aaa","method":"m"}}"#,
        r"\u0061".repeat(42)
    );
    assert_eq!(
        rejected(over.as_bytes()).error,
        IngressError::IdTooLong { limit: 256 }
    );
}

#[test]
fn o37_integer_id_of_256_digits_accepted_257_and_400_rejected() {
    let d256 = format!("9{}", "0".repeat(255));
    let frame = format!(r#"{{"jsonrpc":"2.0","id":{d256},"method":"m"}}"#);
    assert_eq!(request(frame.as_bytes()).id.token(), d256);
    for digits in [257, 400] {
        let big = format!("1{}", "0".repeat(digits - 1));
        let frame = format!(r#"{{"jsonrpc":"2.0","id":{big},"method":"m"}}"#);
        let r = rejected(frame.as_bytes());
        assert_eq!(r.error, IngressError::IdTooLong { limit: 256 });
        assert_eq!(r.code().code(), -32600);
    }
}

#[test]
fn o37_method_of_256_encoded_bytes_accepted_257_rejected_with_id() {
    let m256 = "m".repeat(254);
    let frame = format!(r#"{{"jsonrpc":"2.0","id":3,"method":"{m256}"}}"#);
    assert_eq!(request(frame.as_bytes()).method, m256);
    let m257 = "m".repeat(255);
    let frame = format!(r#"{{"jsonrpc":"2.0","id":3,"method":"{m257}"}}"#);
    let r = rejected(frame.as_bytes());
    assert_eq!(r.error, IngressError::MethodTooLong { limit: 256 });
    assert_eq!(r.reply_to, id("3"));
}

#[test]
fn depth_64_accepted_65_rejected_with_id_echoed() {
    assert!(server(nested(64).as_bytes()).is_ok());
    let r = rejected(nested(65).as_bytes());
    assert_eq!(r.error, IngressError::TooDeep { limit: 64 });
    assert_eq!(r.code().code(), -32600);
    assert_eq!(r.reply_to, id("\"d\""));
    // Far deeper than any stack could take, id after the deep part: still read.
    let deep = format!(
        r#"{{"jsonrpc":"2.0","params":{{"a":{}{}}},"method":"x","id":9}}"#,
        "[".repeat(500_000),
        "]".repeat(500_000)
    );
    let r = rejected(deep.as_bytes());
    assert_eq!(r.error, IngressError::TooDeep { limit: 64 });
    assert_eq!(r.reply_to, id("9"));
}

#[test]
fn o42_notification_params_at_8kib_accepted_one_over_rejected_silently() {
    let build = |len: usize| {
        let head = r#"{"progressToken":"t","progress":1,"message":""#;
        let tail = r#""}"#;
        let params = format!("{head}{}{tail}", "z".repeat(len - head.len() - tail.len()));
        assert_eq!(params.len(), len);
        format!(r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{params}}}"#)
    };
    let at = build(limits::MAX_NOTIFICATION_PARAMS_BYTES);
    assert!(matches!(
        client(at.as_bytes()),
        Ok(Message::Notification(_))
    ));
    let over = build(limits::MAX_NOTIFICATION_PARAMS_BYTES + 1);
    let r = client(over.as_bytes()).expect_err("over");
    assert_eq!(
        r.error,
        IngressError::NotificationParamsTooLarge { limit: 8192 }
    );
    assert_eq!(r.code().code(), -32600);
    assert_eq!(
        r.reply_to,
        ReplyTo::Nobody,
        "A11: never answer a notification"
    );
    assert_eq!(r.to_response(), None);
}

#[test]
fn o13_duplicate_key_at_depth_1_is_rejected() {
    let r = rejected(br#"{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}"#);
    assert_eq!(r.error, IngressError::DuplicateKey { depth: 1 });
    assert_eq!(r.code().code(), -32600);
    assert_eq!(r.reply_to, id("1"));
    // A repeated id makes the id unreadable: reply with null.
    let r = rejected(br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"a"}"#);
    assert_eq!(r.reply_to, ReplyTo::NullId);
}

#[test]
fn o13_duplicate_key_at_depth_5_inside_arguments_is_rejected() {
    let frame = br#"{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"t","arguments":{"a":[{"k":1,"k":2}]}}}"#;
    let r = rejected(frame);
    assert_eq!(r.error, IngressError::DuplicateKey { depth: 5 });
    assert_eq!(r.reply_to, id("\"x\""));
}

#[test]
fn o122_escaped_duplicate_keys_compare_unescaped() {
    for frame in [
        &br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1,"\u0061":2}}"#[..],
        br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"k\/":1,"k/":2}}}"#,
        br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"inputResponses":{"\ud83d\ude00":1,"\uD83D\uDE00":2}}}"#,
    ] {
        let r = rejected(frame);
        assert!(matches!(r.error, IngressError::DuplicateKey { .. }), "{r:?}");
        assert_eq!(r.code().code(), -32600);
    }
    // Emoji spelled raw and as a surrogate pair.
    let raw = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"inputResponses\":{\"\\ud83d\\ude00\":1,\"\u{1F600}\":2}}}";
    assert!(matches!(
        rejected(raw.as_bytes()).error,
        IngressError::DuplicateKey { depth: 3 }
    ));
    // Top-level member spelled with an escape is the same member.
    let r = rejected(br#"{"jsonrpc":"2.0","id":1,"\u006dethod":"a","method":"b"}"#);
    assert_eq!(r.error, IngressError::DuplicateKey { depth: 1 });
}

/// serde_json's raw-value token: a `Value` read from `{TOKEN: "[1]"}` is `[1]`.
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

#[test]
fn o13_serde_json_reserved_member_names_are_rejected_at_any_depth() {
    // What the token does to a plain serde_json read: the value the peer sent is not the one
    // a `Value`-based check would see. This is why the codec refuses it.
    let smuggled: serde_json::Value =
        serde_json::from_str(&format!(r#"{{"{RAW_VALUE_TOKEN}":"[1,2]"}}"#)).expect("serde_json");
    assert_eq!(smuggled, serde_json::json!([1, 2]));

    let in_arguments = format!(
        r#"{{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{{"name":"echo","arguments":{{"text":{{"{RAW_VALUE_TOKEN}":"\"hi\""}}}}}}}}"#
    );
    let r = rejected(in_arguments.as_bytes());
    assert_eq!(r.error, IngressError::ReservedKey { depth: 4 });
    assert_eq!(r.code().code(), -32600);
    assert_eq!(r.reply_to, id("\"x\""));
    assert_eq!(
        r.error.to_string(),
        "member name reserved by the JSON library"
    );
    // The arbitrary_precision token, at the top level (reserved is reported before unknown).
    let r =
        rejected(br#"{"jsonrpc":"2.0","id":1,"method":"m","$serde_json::private::Number":"1"}"#);
    assert_eq!(r.error, IngressError::ReservedKey { depth: 1 });
    // Compared after unescaping, as serde_json compares: `\u0024` is `$`.
    let r = rejected(br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"\u0024serde_json::private::RawValue":"1"}}"#);
    assert_eq!(r.error, IngressError::ReservedKey { depth: 2 });
    // A client refuses it in a result too (the input the ASan campaign found, cut down).
    let r = client(format!(r#"{{"jsonrpc":"2.0","id":"listen-1","result":{{"resultType":"complete","_":{{"{RAW_VALUE_TOKEN}":"liste-2"}}}}}}"#).as_bytes())
        .expect_err("reserved");
    assert_eq!(r.error, IngressError::ReservedKey { depth: 3 });
    // Near misses are ordinary member names.
    for name in [
        "$serde_json::private::RawValu",
        "$serde_json::private::RawValueX",
        "serde_json::private::RawValue",
        "$",
    ] {
        let frame = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"{name}":"1"}}}}"#);
        assert!(server(frame.as_bytes()).is_ok(), "{name}");
    }
}

#[test]
fn o74_client_rejects_duplicate_keys_in_results() {
    let r = client(br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","resultType":"input_required"}}"#)
        .expect_err("dup");
    assert_eq!(r.error, IngressError::DuplicateKey { depth: 2 });
}

#[test]
fn a4_ids_accepted_and_echoed_exactly() {
    for token in [
        "0",
        "-1",
        "9223372036854775808",
        "18446744073709551617",
        "\"1\"",
        r#""\u0031""#,
        "\"\"",
    ] {
        let frame = format!(r#"{{"jsonrpc":"2.0","id":{token},"method":"tools/list"}}"#);
        let req = request(frame.as_bytes());
        assert_eq!(req.id.token(), token);
        let reply = Message::Response(Response::Success(SuccessResponse {
            id: req.id,
            result: serde_json::value::RawValue::from_string("{}".into()).expect("raw"),
        }));
        let bytes = encode(&reply, &EgressLimits::SERVER).expect("encode");
        assert_eq!(
            String::from_utf8(bytes).expect("utf8"),
            format!(r#"{{"jsonrpc":"2.0","id":{token},"result":{{}}}}"#)
        );
    }
    let s = request(br#"{"jsonrpc":"2.0","id":"1","method":"m"}"#).id;
    let n = request(br#"{"jsonrpc":"2.0","id":1,"method":"m"}"#).id;
    assert_ne!(s, n, "A4: \"1\" is not 1");
    assert_eq!(s.as_str(), Some("1"));
}

#[test]
fn a2_null_fractional_and_structured_ids_are_invalid_requests() {
    for (token, why) in [
        ("null", InvalidId::Null),
        ("1.5", InvalidId::NotInteger),
        ("1.0", InvalidId::NotInteger),
        ("1e2", InvalidId::NotInteger),
        ("{}", InvalidId::WrongType),
        ("[]", InvalidId::WrongType),
        ("true", InvalidId::WrongType),
    ] {
        let frame = format!(r#"{{"jsonrpc":"2.0","id":{token},"method":"m"}}"#);
        let r = rejected(frame.as_bytes());
        assert_eq!(r.error, IngressError::BadId(why), "{token}");
        assert_eq!(r.code().code(), -32600);
        assert_eq!(r.reply_to, ReplyTo::NullId);
    }
    assert_eq!(
        reply_bytes(br#"{"jsonrpc":"2.0","id":null,"method":"m"}"#),
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request id: request id is null"}}"#
    );
}

#[test]
fn a1_parse_errors_are_32700_with_null_id() {
    let cases: [&[u8]; 9] = [
        b"\xff{}",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\xc3\x28\"}",
        br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":NaN}}"#,
        br#"{"jsonrpc":"2.0","id":1,"method":"m"} x"#,
        br#"{"jsonrpc":"2.0","id":1,"method":"m"}{}"#,
        b"\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}",
        b"",
        br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"\ud800"}}"#,
        br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1,"a":2} trailing"#,
    ];
    for frame in cases {
        let r = rejected(frame);
        assert_eq!(
            r.code(),
            ErrorCode::ParseError,
            "{:?}",
            String::from_utf8_lossy(frame)
        );
        assert_eq!(r.code().code(), -32700);
        assert_eq!(r.reply_to, ReplyTo::NullId);
    }
    assert_eq!(
        reply_bytes(b"\xef\xbb\xbf{}"),
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"message is not valid JSON"}}"#
    );
    assert_eq!(rejected(b"\xff").error, IngressError::InvalidUtf8);
}

#[test]
fn a21_batches_are_invalid_requests() {
    for frame in [&b"[]"[..], br#"[{"jsonrpc":"2.0","id":1,"method":"m"}]"#] {
        let r = rejected(frame);
        assert_eq!(r.error, IngressError::Batch);
        assert_eq!(r.code().code(), -32600);
    }
    assert_eq!(
        reply_bytes(b"[]"),
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"batches are not supported"}}"#
    );
    assert_eq!(rejected(b"42").error, IngressError::NotAnObject);
}

#[test]
fn o13_envelope_shape_errors() {
    let cases: [(&[u8], IngressError, ReplyTo); 9] = [
        (
            br#"{"id":1,"method":"m"}"#,
            IngressError::BadVersion,
            id("1"),
        ),
        (
            br#"{"jsonrpc":"1.0","id":1,"method":"m"}"#,
            IngressError::BadVersion,
            id("1"),
        ),
        (
            br#"{"jsonrpc":2.0,"id":1,"method":"m"}"#,
            IngressError::BadVersion,
            id("1"),
        ),
        (
            br#"{"jsonrpc":"2.0","id":1,"method":"m","extra":0}"#,
            IngressError::UnknownMember,
            id("1"),
        ),
        (
            br#"{"jsonrpc":"2.0","id":1,"method":7}"#,
            IngressError::MethodNotString,
            id("1"),
        ),
        (
            br#"{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}"#,
            IngressError::ParamsNotObject,
            id("1"),
        ),
        (
            br#"{"jsonrpc":"2.0","id":1}"#,
            IngressError::NotAMessage,
            id("1"),
        ),
        (
            br#"{"jsonrpc":"2.0","id":1,"method":"m","result":{}}"#,
            IngressError::AmbiguousEnvelope,
            id("1"),
        ),
        (
            br#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            IngressError::UnexpectedResponse,
            id("1"),
        ),
    ];
    for (frame, error, reply) in cases {
        let r = rejected(frame);
        assert_eq!((r.error.clone(), r.reply_to.clone()), (error, reply));
    }
    assert_eq!(
        rejected(br#"{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}"#)
            .code()
            .code(),
        -32602
    );
}

#[test]
fn a12_client_side_envelope_rules() {
    let r =
        client(br#"{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage"}"#).expect_err("req");
    assert_eq!(r.error, IngressError::UnexpectedRequest);
    let r = client(br#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}"#)
        .expect_err("both");
    assert_eq!(r.error, IngressError::AmbiguousEnvelope);
    assert_eq!(r.code().code(), -32600);
    let r = client(br#"{"jsonrpc":"2.0","result":{}}"#).expect_err("no id");
    assert_eq!(r.error, IngressError::MissingResponseId);
    let r = client(br#"{"jsonrpc":"2.0","id":1,"result":[]}"#).expect_err("array");
    assert_eq!(r.error, IngressError::ResultNotObject);
    let r = client(br#"{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"m"}}"#)
        .expect_err("code");
    assert_eq!(r.error, IngressError::BadErrorObject);
    let r = client(br#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","x":1}}"#)
        .expect_err("x");
    assert_eq!(r.error, IngressError::BadErrorObject);
}

#[test]
fn a9_error_responses_keep_id_code_and_exact_data() {
    let m = client(br#"{"jsonrpc":"2.0","id":"q","error":{"code":-32002,"message":"gone","data":{"uri":"x","n":1E2}}}"#)
        .expect("error response");
    let Message::Response(Response::Error(ErrorResponse { id, error })) = m else {
        panic!("not an error response")
    };
    assert_eq!(id.map(|i| i.token().to_owned()), Some("\"q\"".to_owned()));
    assert_eq!(error.code, -32002);
    assert_eq!(error.error_code(), None);
    assert_eq!(
        error.data.as_deref().map(|d| d.get()),
        Some(r#"{"uri":"x","n":1E2}"#)
    );
    for frame in [
        &br#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"p"}}"#[..],
        br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"p","data":null}}"#,
    ] {
        let Ok(Message::Response(Response::Error(e))) = client(frame) else {
            panic!("rejected")
        };
        assert_eq!(e.id, None);
    }
    let Ok(Message::Response(Response::Error(e))) =
        client(br#"{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"p","data":null}}"#)
    else {
        panic!("rejected")
    };
    assert_eq!(e.error.data.as_deref().map(|d| d.get()), Some("null"));
}

#[test]
fn o44_o56_o121_params_bytes_are_kept_exactly() {
    let params = "{ \"_meta\" : {\"progressToken\": 18446744073709551617},\n\t\"name\":\"t\",\"arguments\":{\"x\":1E2,\"y\":1.50,\"z\":\"\\u00e9\",\"w\":-0.0},\"inputResponses\":{\"k\":{\"n\":1e400}} }";
    let frame = format!(r#"{{"params":{params},"method":"tools/call","id":7,"jsonrpc":"2.0"}}"#);
    let req = request(frame.as_bytes());
    assert_eq!(req.params.as_deref().map(|p| p.get()), Some(params));
    assert_eq!(req.method, "tools/call");
}

#[test]
fn a11_malformed_notifications_get_no_reply() {
    let r =
        rejected(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"a":1,"a":1}}"#);
    assert_eq!(r.reply_to, ReplyTo::Nobody);
    assert_eq!(r.to_response(), None);
    let n =
        server(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#);
    assert!(matches!(n, Ok(Message::Notification(_))));
}

#[test]
fn o36_oversized_stdio_line_answered_once_and_next_line_served() {
    let bound = 64;
    let mut framer = LineFramer::new(bound);
    let limits = IngressLimits {
        max_frame_bytes: bound,
        ..IngressLimits::SERVER
    };
    let valid = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let mut input = vec![b' '; 1000];
    input[0] = b'{';
    input.push(b'\n');
    input.extend_from_slice(valid);
    input.push(b'\n');
    let mut replies = Vec::new();
    let mut served = Vec::new();
    let mut rest: &[u8] = &input;
    while !rest.is_empty() {
        let (n, event) = framer.feed(&rest[..rest.len().min(7)]);
        rest = &rest[n..];
        match event {
            Some(LineEvent::Oversized) => replies.push(
                Rejection::oversized_line(bound)
                    .to_response()
                    .expect("reply with null id"),
            ),
            Some(LineEvent::Line(line)) => served.push(decode(&line, &limits).expect("valid")),
            None => {}
        }
        assert!(framer.buffered() <= bound);
    }
    assert_eq!(replies.len(), 1);
    let bytes = encode(
        &Message::Response(Response::Error(replies.remove(0))),
        &EgressLimits::SERVER,
    )
    .expect("encode");
    assert_eq!(
        String::from_utf8(bytes).expect("utf8"),
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"message exceeds the 64-byte frame limit"}}"#
    );
    assert_eq!(served.len(), 1);
    assert!(matches!(&served[0], Message::Request(r) if r.method == "tools/list"));
}
