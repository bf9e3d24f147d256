//! HTTP body ingress in both directions, plus a differential check of the JSON syntax verdict
//! against serde_json. Invariants: no panic; rejected bodies map to one ingress code; accepted
//! bodies re-encode within bounds and decode to the same message; the scanner calls a body
//! valid JSON exactly when serde_json does (except lone surrogate escapes, which we refuse).
#![no_main]

use libfuzzer_sys::fuzz_target;
use strict_mcp::codec::{decode, encode, EgressLimits, IngressError, IngressLimits, ReplyTo};

/// Whether the text contains a `\uD800`–`\uDFFF` escape (we reject those, serde skips them).
fn has_surrogate_escape(data: &[u8]) -> bool {
    data.windows(4).any(|w| {
        w[0] == b'\\'
            && w[1] == b'u'
            && matches!(w[2], b'd' | b'D')
            && matches!(w[3], b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F')
    })
}

fuzz_target!(|data: &[u8]| {
    for limits in [IngressLimits::SERVER, IngressLimits::CLIENT] {
        let result = decode(data, &limits);
        match &result {
            Ok(message) => {
                let again = encode(message, &EgressLimits::SERVER).expect("accepted bodies encode");
                // An error response without an id gains `"id":null`; nothing else grows.
                assert!(again.len() <= data.len() + 10);
                let back = decode(&again, &limits).expect("re-encoded bodies decode");
                // Encoding is a fixed point; raw parts are byte-identical unless a raw line
                // break forced compaction (C1).
                assert_eq!(encode(&back, &EgressLimits::SERVER).as_ref(), Ok(&again));
                if !data.contains(&b'\n') && !data.contains(&b'\r') {
                    assert_eq!(&back, message);
                }
            }
            Err(r) => {
                assert!(matches!(r.code().code(), -32700 | -32600 | -32602));
                // An echoed id is the exact token the peer sent (A4).
                if let ReplyTo::Id(id) = &r.reply_to {
                    let token = id.token().as_bytes();
                    assert!(data.windows(token.len()).any(|w| w == token));
                }
            }
        }
        if std::str::from_utf8(data).is_err() {
            assert!(matches!(
                result,
                Err(ref r) if r.error == IngressError::InvalidUtf8
            ));
            continue;
        }
        let ours = !matches!(
            result,
            Err(ref r) if matches!(r.error, IngressError::Syntax { .. })
        );
        let serde = serde_json::from_slice::<serde::de::IgnoredAny>(data).is_ok();
        if ours != serde {
            assert!(
                !ours && serde && has_surrogate_escape(data),
                "syntax verdict differs from serde_json: ours={ours} serde={serde}"
            );
        }
    }
});
