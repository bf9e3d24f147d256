//! Stdio ingress: arbitrary bytes, fed in arbitrary chunks through the line framer with a small
//! bound, each line decoded as a server would. Invariants: no panic; the framer never holds more
//! than the bound; accepted frames re-encode within the frame length and decode to the same
//! message; rejected frames map to one ingress code and their reply encodes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strict_mcp::codec::{
    decode, encode, EgressLimits, IngressLimits, LineEvent, LineFramer, Rejection,
};
use strict_mcp::wire::jsonrpc::{Message, Response};

const BOUND: usize = 4096;

fn check_line(line: &[u8], limits: &IngressLimits) {
    assert!(line.len() <= BOUND);
    assert!(!line.contains(&b'\n'));
    match decode(line, limits) {
        Ok(message) => {
            let again = encode(&message, &EgressLimits::SERVER).expect("accepted frames encode");
            assert!(again.len() <= line.len(), "re-encoding grew the frame");
            assert!(!again.contains(&b'\n') && !again.contains(&b'\r'));
            let back = decode(&again, limits).expect("re-encoded frames decode");
            // Encoding is a fixed point; raw parts are byte-identical unless a raw `\r` forced
            // compaction (C1).
            assert_eq!(encode(&back, &EgressLimits::SERVER).as_ref(), Ok(&again));
            if !line.contains(&b'\r') {
                assert_eq!(back, message);
            }
        }
        Err(rejection) => check_rejection(&rejection),
    }
}

fn check_rejection(rejection: &Rejection) {
    assert!(matches!(rejection.code().code(), -32700 | -32600 | -32602));
    if let Some(reply) = rejection.to_response() {
        let bytes = encode(
            &Message::Response(Response::Error(reply)),
            &EgressLimits::SERVER,
        )
        .expect("error replies encode");
        assert!(!bytes.contains(&b'\n'));
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&step, input)) = data.split_first() else {
        return;
    };
    let step = usize::from(step % 64) + 1;
    let limits = IngressLimits {
        max_frame_bytes: BOUND,
        ..IngressLimits::SERVER
    };
    let mut framer = LineFramer::new(BOUND);
    let mut rest = input;
    while !rest.is_empty() {
        let take = rest.len().min(step);
        let (n, event) = framer.feed(&rest[..take]);
        assert!(n > 0 && n <= take);
        rest = &rest[n..];
        assert!(framer.buffered() <= BOUND);
        match event {
            Some(LineEvent::Line(line)) => check_line(&line, &limits),
            Some(LineEvent::Oversized) => check_rejection(&Rejection::oversized_line(BOUND)),
            None => {}
        }
    }
    if let Some(LineEvent::Line(line)) = framer.finish() {
        check_line(&line, &limits);
    }
});
