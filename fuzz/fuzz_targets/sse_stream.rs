//! The client's SSE framing: `SseParser::push` fed the input in fuzz-chosen chunks (the first
//! byte seeds the chunk sizes, cutting anywhere, CR/LF pairs included), each event's data then
//! decoded with the client's bounds.
//! Invariants: no panic; chunking never changes the outcome (the same events in the same
//! order, or the same bound hit, as one push of the whole input); every byte is counted in
//! `seen`; no event's data exceeds the frame bound.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strict_mcp::client::http::SseParser;
use strict_mcp::codec::{decode, IngressLimits};
use strict_mcp::wire::limits::MAX_CLIENT_INGRESS_FRAME_BYTES;

fuzz_target!(|data: &[u8]| {
    let Some((&seed, body)) = data.split_first() else {
        return;
    };
    let mut whole = SseParser::default();
    let expected = whole.push(body);
    let mut chunked = SseParser::default();
    let mut events = Vec::new();
    let mut outcome = Ok(());
    let mut state = u32::from(seed) | 1;
    let mut rest = body;
    while !rest.is_empty() {
        // A small LCG: sizes 1..=32 that vary from chunk to chunk.
        state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let size = ((state >> 16) as usize % 32 + 1).min(rest.len());
        let (chunk, tail) = rest.split_at(size);
        rest = tail;
        match chunked.push(chunk) {
            Ok(more) => events.extend(more),
            Err(limit) => {
                outcome = Err(limit);
                break;
            }
        }
    }
    match expected {
        Ok(expected) => {
            assert_eq!(outcome, Ok(()));
            assert_eq!(events, expected);
            assert_eq!(whole.seen, body.len());
            assert_eq!(chunked.seen, body.len());
        }
        Err(limit) => assert_eq!(outcome, Err(limit)),
    }
    for event in &events {
        assert!(event.len() <= MAX_CLIENT_INGRESS_FRAME_BYTES);
        let _ = decode(event, &IngressLimits::CLIENT);
    }
});
