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

/// #23: an accepted request allocates what the message keeps (the id's token and its
/// comparison key, the method and the params) and the scanner's key stack, once. The reply
/// target of a rejection is read only when there is one (it was cloned for every frame: two
/// more blocks per request), and the key stack starts with room for a request's keys (it
/// grew once for this frame: one more). 8 blocks before, 5 now.
fn accepted_request_allocates_only_what_it_keeps() {
    let frame = concat!(
        r#"{"jsonrpc":"2.0","id":"r-1","method":"tools/call","params":{"name":"t","#,
        r#""arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"#,
        r#""2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"#,
        r#""io.modelcontextprotocol/clientCapabilities":{}}}}"#
    )
    .as_bytes();
    let before = dhat::HeapStats::get().total_blocks;
    let message = decode(frame, &IngressLimits::SERVER).expect("a request");
    let blocks = dhat::HeapStats::get().total_blocks - before;
    println!("accepted request: {blocks} blocks allocated by decode");
    assert!(matches!(message, Message::Request(_)));
    assert_eq!(
        blocks, 5,
        "decode allocated {blocks} blocks for a request that keeps 4 (and one key stack)"
    );
    // A4: a rejection still answers the id it read.
    let rejected = decode(
        br#"{"jsonrpc":"1.0","id":"r-2","method":"tools/call"}"#,
        &IngressLimits::SERVER,
    )
    .expect_err("a bad version");
    assert_eq!(rejected.error, IngressError::BadVersion);
    assert_eq!(
        rejected.reply_to,
        strict_mcp::codec::ReplyTo::Id(
            strict_mcp::wire::jsonrpc::RequestId::from_token(r#""r-2""#).unwrap()
        )
    );
}

/// `KEY_STACK_START` at its bound and one past. A key goes on the stack once its value is
/// read and leaves with its object, so at the end of these params the stack holds the three
/// top-level keys before them and the params' own: 3 + 5 = 8 fit in the first allocation,
/// 3 + 6 = 9 grow it once.
fn key_stack_holds_its_start_and_grows_one_past() {
    let frame = |members: usize| {
        let params: Vec<String> = (0..members).map(|i| format!(r#""k{i}":0"#)).collect();
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{{}}}}}"#,
            params.join(",")
        )
    };
    let blocks = |text: &str| {
        let before = dhat::HeapStats::get().total_blocks;
        let message = decode(text.as_bytes(), &IngressLimits::SERVER).expect("a request");
        let blocks = dhat::HeapStats::get().total_blocks - before;
        assert!(matches!(message, Message::Request(_)));
        blocks
    };
    // The id's token and key, the method and the params: 4; the key stack: 1, or 2 grown.
    assert_eq!(blocks(&frame(5)), 5, "8 keys on the stack");
    assert_eq!(blocks(&frame(6)), 6, "9 keys on the stack");
    println!("key stack: 8 keys in one block, 9 in two");
}

fn main() {
    let _profiler = dhat::Profiler::builder().testing().build();
    // The framer check reads the all-time heap peak, so it runs before anything larger exists.
    oversized_line_is_never_buffered();
    oversized_frame_allocates_nothing();
    frame_at_bound_costs_about_one_copy();
    accepted_request_allocates_only_what_it_keeps();
    key_stack_holds_its_start_and_grows_one_past();
    println!("codec_alloc: 5 checks passed");
}
