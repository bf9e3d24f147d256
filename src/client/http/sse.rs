//! Request-scoped SSE framing: an incremental parser with bounded line and event
//! buffers. Pure bytes in, event data out, so it can be fuzzed without a network.
#![forbid(unsafe_code)]

use crate::wire::limits::MAX_CLIENT_INGRESS_FRAME_BYTES;

/// Longest single SSE line kept while assembling an event: one `data:` line may carry a whole
/// message, so the frame bound plus room for the field name.
///
/// Threat: a server streaming one endless line to exhaust client memory.
pub const MAX_SSE_LINE_BYTES: usize = MAX_CLIENT_INGRESS_FRAME_BYTES + 16;

/// An incremental SSE parser with bounded line and event buffers.
#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
    /// Bytes consumed so far.
    pub seen: usize,
    skip_lf: bool,
}

impl SseParser {
    /// Feeds bytes; returns the data of every event they complete.
    ///
    /// # Errors
    /// The bound exceeded: a line over [`MAX_SSE_LINE_BYTES`] or an event's data over
    /// [`MAX_CLIENT_INGRESS_FRAME_BYTES`].
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<Vec<u8>>, usize> {
        let mut events = Vec::new();
        for &b in bytes {
            self.seen += 1;
            if self.skip_lf {
                self.skip_lf = false;
                if b == b'\n' {
                    continue;
                }
            }
            if b == b'\r' || b == b'\n' {
                self.skip_lf = b == b'\r';
                if let Some(event) = self.end_line()? {
                    events.push(event);
                }
                continue;
            }
            if self.line.len() >= MAX_SSE_LINE_BYTES {
                return Err(MAX_SSE_LINE_BYTES);
            }
            self.line.push(b);
        }
        Ok(events)
    }

    fn end_line(&mut self) -> Result<Option<Vec<u8>>, usize> {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            if !self.has_data {
                return Ok(None);
            }
            self.has_data = false;
            return Ok(Some(std::mem::take(&mut self.data)));
        }
        if line[0] == b':' {
            return Ok(None);
        }
        let (field, value) = match line.iter().position(|&c| c == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (&line[..], &[][..]),
        };
        if field == b"data" {
            let extra = usize::from(self.has_data);
            if self.data.len() + extra + value.len() > MAX_CLIENT_INGRESS_FRAME_BYTES {
                return Err(MAX_CLIENT_INGRESS_FRAME_BYTES);
            }
            if self.has_data {
                self.data.push(b'\n');
            }
            self.data.extend_from_slice(value);
            self.has_data = true;
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn d11_sse_comments_skipped_data_lines_joined_crlf_and_lf() {
        let mut p = SseParser::default();
        let events = p
            .push(b": keep-alive\n\nevent: message\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n")
            .expect("parse");
        assert_eq!(events, vec![b"{\"a\":\n1}".to_vec()]);
        // Split across chunks, including between CR and LF.
        let mut p = SseParser::default();
        assert!(p.push(b"data: x\r").expect("a").is_empty());
        assert!(p.push(b"\n").expect("b").is_empty());
        assert_eq!(p.push(b"\r\n").expect("c"), vec![b"x".to_vec()]);
    }

    #[test]
    fn d47_sse_line_bound_at_and_one_past() {
        let mut p = SseParser::default();
        let line = vec![b'a'; MAX_SSE_LINE_BYTES];
        assert!(p.push(&line).is_ok());
        assert_eq!(p.push(b"a"), Err(MAX_SSE_LINE_BYTES));
    }

    #[test]
    fn d47_sse_event_bound_at_and_one_past() {
        let mut p = SseParser::default();
        let mut at = b"data: ".to_vec();
        at.extend(std::iter::repeat_n(b'x', MAX_CLIENT_INGRESS_FRAME_BYTES));
        at.extend_from_slice(b"\n\n");
        let events = p.push(&at).expect("at the bound");
        assert_eq!(events[0].len(), MAX_CLIENT_INGRESS_FRAME_BYTES);
        let mut p = SseParser::default();
        let mut past = b"data: ".to_vec();
        past.extend(std::iter::repeat_n(
            b'x',
            MAX_CLIENT_INGRESS_FRAME_BYTES + 1,
        ));
        past.extend_from_slice(b"\n");
        assert_eq!(p.push(&past), Err(MAX_CLIENT_INGRESS_FRAME_BYTES));
    }
}
