//! Differential: the codec against `serde_json` on every input both accept. `http_body` already
//! compares the two parsers' syntax verdicts; this target compares what they *read*.
//!
//! Invariants, for each side's limits (server and client): when `decode` accepts a body and
//! `serde_json` parses it too, the message the codec decoded, re-encoded, is the same JSON value
//! serde_json read (members, strings after unescaping, numbers, nesting), except the one thing
//! the codec adds on purpose (`"id": null` on an error response that had no id); the method,
//! the id's token and the params' raw text are the input's own bytes. When serde_json refuses a
//! body, the codec refuses it too (it is never the more lenient of the two), except for numbers
//! beyond f64's range, which the codec keeps as exact text on purpose.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use strict_mcp::codec::{decode, encode, EgressLimits, IngressLimits};
use strict_mcp::wire::jsonrpc::Message;

fuzz_target!(|data: &[u8]| {
    let theirs = serde_json::from_slice::<Value>(data);
    for limits in [IngressLimits::SERVER, IngressLimits::CLIENT] {
        let ours = decode(data, &limits);
        let (Ok(message), Ok(theirs)) = (&ours, &theirs) else {
            if let Err(e) = &theirs {
                // serde_json refuses a number beyond f64's range ("number out of range"); the
                // codec keeps numbers as their exact text (lossless wire), so it accepts the
                // JSON grammar there on purpose. Found by the first ASan campaign.
                if !e.to_string().starts_with("number out of range") {
                    assert!(ours.is_err(), "the codec accepted what serde_json refuses: {e}");
                }
            }
            continue;
        };
        let again = encode(message, &EgressLimits::SERVER).expect("accepted bodies encode");
        let read: Value = serde_json::from_slice(&again).expect("our encoding is JSON");
        let mut expected = theirs.clone();
        if let (Message::Response(_), Some(obj)) = (message, expected.as_object_mut()) {
            obj.entry("id").or_insert(Value::Null);
        }
        assert_eq!(
            read, expected,
            "the codec read a different value than serde_json"
        );
        if let Message::Request(request) = message {
            assert_eq!(Some(request.method.as_str()), theirs["method"].as_str());
            if let Some(params) = &request.params {
                let raw: Value = serde_json::from_str(params.get()).expect("params are JSON");
                assert_eq!(raw, theirs["params"]);
            }
        }
    }
});
