//! Sans-I/O stdio line framing for ingress: feed bytes, pull whole lines.
//!
//! A line longer than the bound is never buffered: once the partial line passes the bound the
//! buffer is dropped, [`LineEvent::Oversized`] is reported once (answer it with -32600 and
//! `"id": null`, see [`crate::codec::Rejection::oversized_line`]) and the rest of that line is
//! skipped up to its newline. The next line is served normally.
//!
//! The newline is not counted in the bound. Empty lines are skipped silently; a `\r` before the
//! newline stays in the frame, where it is JSON whitespace.

use std::borrow::Cow;

/// What the framer produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineEvent {
    /// One complete line without its `\n`: pass it to [`crate::codec::decode`].
    Line(Vec<u8>),
    /// A line exceeded the bound; it is being discarded up to its newline.
    Oversized,
}

/// What [`LineFramer::feed_frame`] produced: as [`LineEvent`], with the line borrowed from the
/// input when it lies whole in it (no copy per line), owned when it was assembled across feeds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame<'a> {
    /// One complete line without its `\n`: pass it to [`crate::codec::decode`].
    Line(Cow<'a, [u8]>),
    /// A line exceeded the bound; it is being discarded up to its newline.
    Oversized,
}

impl From<Frame<'_>> for LineEvent {
    fn from(frame: Frame<'_>) -> Self {
        match frame {
            Frame::Line(line) => LineEvent::Line(line.into_owned()),
            Frame::Oversized => LineEvent::Oversized,
        }
    }
}

/// Splits a byte stream into lines of at most `max_line_bytes`, holding at most that much.
#[derive(Debug, Clone)]
pub struct LineFramer {
    max_line_bytes: usize,
    buf: Vec<u8>,
    discarding: bool,
}

impl LineFramer {
    /// A framer for lines of at most `max_line_bytes` (e.g. `IngressLimits::SERVER.max_frame_bytes`).
    pub fn new(max_line_bytes: usize) -> Self {
        Self {
            max_line_bytes,
            buf: Vec::new(),
            discarding: false,
        }
    }

    /// Consumes a prefix of `input` and returns how many bytes it took plus at most one event.
    ///
    /// Call again with the rest of `input` until it is consumed; every byte is eventually
    /// taken, and memory stays within `max_line_bytes` whatever the input.
    pub fn feed(&mut self, input: &[u8]) -> (usize, Option<LineEvent>) {
        let (used, frame) = self.feed_frame(input);
        (used, frame.map(LineEvent::from))
    }

    /// As [`LineFramer::feed`], without copying a line that lies whole in `input`.
    pub fn feed_frame<'a>(&mut self, input: &'a [u8]) -> (usize, Option<Frame<'a>>) {
        let newline = memchr::memchr(b'\n', input);
        let chunk_end = newline.unwrap_or(input.len());
        let consumed = newline.map_or(input.len(), |i| i + 1);
        if self.discarding {
            if newline.is_some() {
                self.discarding = false;
            }
            return (consumed, None);
        }
        let chunk = &input[..chunk_end];
        if self.buf.len().saturating_add(chunk.len()) > self.max_line_bytes {
            self.buf = Vec::new();
            // Still inside the long line unless its newline is in this input.
            self.discarding = newline.is_none();
            return (consumed, Some(Frame::Oversized));
        }
        if newline.is_none() {
            self.grow_within_bound(chunk.len());
            self.buf.extend_from_slice(chunk);
            return (consumed, None);
        }
        let line = if self.buf.is_empty() {
            Cow::Borrowed(chunk)
        } else {
            let mut line = std::mem::take(&mut self.buf);
            line.extend_from_slice(chunk);
            Cow::Owned(line)
        };
        if line.is_empty() {
            return (consumed, None);
        }
        (consumed, Some(Frame::Line(line)))
    }

    /// Reserves room for `extra` more bytes, doubling like `Vec` but never past the bound, so
    /// the buffer's capacity (not just its length) stays within `max_line_bytes`.
    fn grow_within_bound(&mut self, extra: usize) {
        let needed = self.buf.len() + extra;
        if needed > self.buf.capacity() {
            let target = needed
                .max(self.buf.capacity().saturating_mul(2))
                .max(64)
                .min(self.max_line_bytes);
            self.buf.reserve_exact(target - self.buf.len());
        }
    }

    /// End of input: a final line without a newline is still delivered.
    pub fn finish(&mut self) -> Option<LineEvent> {
        self.discarding = false;
        let line = std::mem::take(&mut self.buf);
        (!line.is_empty()).then_some(LineEvent::Line(line))
    }

    /// Bytes currently held for an incomplete line (never more than the bound).
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(framer: &mut LineFramer, mut input: &[u8]) -> Vec<LineEvent> {
        let mut out = Vec::new();
        while !input.is_empty() {
            let (n, ev) = framer.feed(input);
            assert!(n > 0, "framer must make progress");
            input = &input[n..];
            out.extend(ev);
        }
        out
    }

    #[test]
    fn splits_lines_across_chunks_and_skips_empty_lines() {
        let mut f = LineFramer::new(16);
        let mut events = run(&mut f, b"{\"a\"");
        events.extend(run(&mut f, b":1}\n\n[2]\r\n"));
        assert_eq!(
            events,
            vec![
                LineEvent::Line(b"{\"a\":1}".to_vec()),
                LineEvent::Line(b"[2]\r".to_vec())
            ]
        );
        assert_eq!(f.finish(), None);
    }

    #[test]
    fn o36_line_at_bound_passes_and_one_over_is_discarded_once() {
        let mut f = LineFramer::new(4);
        assert_eq!(
            run(&mut f, b"abcd\nabcde\nxy\n"),
            vec![
                LineEvent::Line(b"abcd".to_vec()),
                LineEvent::Oversized,
                LineEvent::Line(b"xy".to_vec())
            ]
        );
        let mut f = LineFramer::new(4);
        let mut events = Vec::new();
        for byte in b"abcdefghij\nok\n" {
            events.extend(run(&mut f, &[*byte]));
            assert!(f.buffered() <= 4);
        }
        assert_eq!(
            events,
            vec![LineEvent::Oversized, LineEvent::Line(b"ok".to_vec())]
        );
    }

    #[test]
    fn c1_a_line_whole_in_the_input_is_borrowed_and_a_line_across_feeds_is_owned() {
        let mut f = LineFramer::new(16);
        let input = b"[1]\n{\"a\"";
        let (used, frame) = f.feed_frame(input);
        assert_eq!(used, 4);
        assert!(matches!(frame, Some(Frame::Line(Cow::Borrowed(b"[1]")))));
        assert_eq!(f.feed_frame(&input[4..]), (4, None));
        let (used, frame) = f.feed_frame(b":1}\r\n\n");
        assert_eq!(used, 5);
        let expected: Cow<'_, [u8]> = Cow::Owned(b"{\"a\":1}\r".to_vec());
        assert!(matches!(&frame, Some(Frame::Line(Cow::Owned(_)))));
        assert_eq!(frame, Some(Frame::Line(expected)));
        // The empty line is skipped; the framer holds nothing.
        assert_eq!(f.feed_frame(b"\n"), (1, None));
        assert_eq!(f.buffered(), 0);
        let (used, frame) = f.feed_frame(b"0123456789abcdefg\n");
        assert_eq!((used, frame), (18, Some(Frame::Oversized)));
    }

    #[test]
    fn final_line_without_newline_is_delivered() {
        let mut f = LineFramer::new(8);
        assert!(run(&mut f, b"{}").is_empty());
        assert_eq!(f.finish(), Some(LineEvent::Line(b"{}".to_vec())));
    }
}
