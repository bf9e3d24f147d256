//! Allocation bounds of the ingress path, measured with dhat (not assumed): O36 frames over the
//! bound are rejected without allocating, and the stdio framer never holds more than the bound
//! of an oversized line. Own test target because dhat's global allocator must not leak into the
//! other tests (`harness = false`).

use strict_mcp::codec::{decode, IngressError, IngressLimits, LineEvent, LineFramer};
use strict_mcp::wire::jsonrpc::Message;
use strict_mcp::wire::limits::MAX_REQUEST_FRAME_BYTES;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

/// Heap bytes allocated so far (monotonic).
fn total() -> u64 {
    dhat::HeapStats::get().total_bytes
}

/// O36: a frame one byte over the bound is refused before any allocation.
fn oversized_frame_allocates_nothing() {
    let frame = vec![b' '; MAX_REQUEST_FRAME_BYTES + 1];
    let before = total();
    let err = decode(&frame, &IngressLimits::SERVER).expect_err("over the bound");
    let after = total();
    assert_eq!(
        err.error,
        IngressError::FrameTooLarge {
            limit: MAX_REQUEST_FRAME_BYTES,
            actual: Some(MAX_REQUEST_FRAME_BYTES + 1)
        }
    );
    assert_eq!(after - before, 0, "rejecting an oversized frame allocated");
    println!("oversized frame: {} bytes allocated", after - before);
}

/// O36: a 10 MiB line fed in 64 KiB chunks never makes the framer hold more than the bound,
/// and the valid line after it is served.
fn oversized_line_is_never_buffered() {
    let chunk = vec![b'a'; 64 * 1024];
    let mut framer = LineFramer::new(MAX_REQUEST_FRAME_BYTES);
    let base = dhat::HeapStats::get().curr_bytes;
    let mut events = Vec::new();
    for _ in 0..160 {
        let mut input: &[u8] = &chunk;
        while !input.is_empty() {
            let (n, ev) = framer.feed(input);
            input = &input[n..];
            events.extend(ev);
        }
    }
    let mut tail: &[u8] = b"\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n";
    while !tail.is_empty() {
        let (n, ev) = framer.feed(tail);
        tail = &tail[n..];
        events.extend(ev);
    }
    let peak = dhat::HeapStats::get().max_bytes.saturating_sub(base);
    println!(
        "10 MiB oversized line: peak {peak} bytes above baseline (bound {MAX_REQUEST_FRAME_BYTES})"
    );
    assert!(
        peak <= MAX_REQUEST_FRAME_BYTES + 4096,
        "framer peak {peak} exceeds the bound"
    );
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0], LineEvent::Oversized);
    let LineEvent::Line(line) = &events[1] else {
        panic!("valid line not served: {events:?}")
    };
    assert!(matches!(
        decode(line, &IngressLimits::SERVER),
        Ok(Message::Request(_))
    ));
}

/// A frame exactly at the bound decodes with about one copy of its params as extra memory.
fn frame_at_bound_costs_about_one_copy() {
    let head =
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"s":""#;
    let tail = br#""}}}"#;
    let mut frame = Vec::with_capacity(MAX_REQUEST_FRAME_BYTES);
    frame.extend_from_slice(head);
    frame.resize(MAX_REQUEST_FRAME_BYTES - tail.len(), b'x');
    frame.extend_from_slice(tail);
    assert_eq!(frame.len(), MAX_REQUEST_FRAME_BYTES);
    let before_total = total();
    let message = decode(&frame, &IngressLimits::SERVER).expect("frame at the bound");
    let allocated = total() - before_total;
    println!("2 MiB frame: {allocated} bytes allocated in total by decode");
    assert!(matches!(message, Message::Request(_)));
    assert!(
        allocated <= MAX_REQUEST_FRAME_BYTES as u64 + 64 * 1024,
        "decode allocated {allocated} bytes for a {MAX_REQUEST_FRAME_BYTES}-byte frame"
    );
}

fn main() {
    let _profiler = dhat::Profiler::builder().testing().build();
    // The framer check reads the all-time heap peak, so it runs before anything larger exists.
    oversized_line_is_never_buffered();
    oversized_frame_allocates_nothing();
    frame_at_bound_costs_about_one_copy();
    println!("codec_alloc: 3 checks passed");
}
