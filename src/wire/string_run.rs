//! The plain runs of a JSON string body: the bytes up to the first `"`, `\` or control byte
//! (below 0x20), which are the only bytes the scan must look at inside a string and the only
//! ones serde_json escapes when it writes one. One finder for every reader and writer of JSON
//! text: the ingress scan skips the runs (`codec::scan`), the egress escaper copies them whole
//! (`codec::escape`) and the member splitter skips them ([`super::members`]). Safe code, two
//! 64-bit words per step (issue #23, size curve).

/// Byte classes for the tail shorter than a step: true = ends the plain run (`"`, `\`,
/// control byte).
pub(crate) static STRING_STOP: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// Bytes of a string body tested per step of [`plain_run`]: two 64-bit words. A word at a time
/// measured 3.7 instructions per byte under callgrind on a text with an escape every 64 bytes
/// (the `strict_curves size` text), two words 2.6, the byte table alone 6.1.
const PLAIN_RUN_STEP: usize = 16;

/// The bytes of `word` (little-endian) that end a plain run — `"`, `\` or below 0x20 — as
/// their high bits. Exact for the lowest marked byte, which is all [`plain_run`] reads: a
/// subtraction borrows into a higher byte only from a byte that is itself marked.
#[inline(always)]
fn run_stops(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let quote = word ^ (ONES * u64::from(b'"'));
    let backslash = word ^ (ONES * u64::from(b'\\'));
    let control = word.wrapping_sub(ONES * 0x20) & !word;
    (control | (quote.wrapping_sub(ONES) & !quote) | (backslash.wrapping_sub(ONES) & !backslash))
        & HIGH
}

/// The length of the plain run at the start of `b`: the offset of its first `"`, `\` or byte
/// below 0x20, or `b.len()`. Sixteen bytes a step in safe code (two words, see
/// [`run_stops`]), the tail through [`STRING_STOP`]; the same answer as the table alone
/// (`plain_run_agrees_with_the_byte_table` tests it at every offset and byte).
#[inline]
pub(crate) fn plain_run(b: &[u8]) -> usize {
    let mut chunks = b.chunks_exact(PLAIN_RUN_STEP);
    let mut base = 0;
    for chunk in &mut chunks {
        let (lo, hi) = chunk.split_at(PLAIN_RUN_STEP / 2);
        let word = |half: &[u8]| {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(half);
            run_stops(u64::from_le_bytes(bytes))
        };
        let (lo, hi) = (word(lo), word(hi));
        if lo != 0 {
            return base + (lo.trailing_zeros() / 8) as usize;
        }
        if hi != 0 {
            return base + PLAIN_RUN_STEP / 2 + (hi.trailing_zeros() / 8) as usize;
        }
        base += PLAIN_RUN_STEP;
    }
    base + chunks
        .remainder()
        .iter()
        .position(|&c| STRING_STOP[c as usize])
        .unwrap_or(chunks.remainder().len())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The word-at-a-time run finder stops where the byte table stops, for every byte value
    /// at every offset of two steps and the tail (a stop byte before, at and after each word
    /// boundary), and at the end when there is none.
    #[test]
    fn plain_run_agrees_with_the_byte_table() {
        let by_table = |b: &[u8]| {
            b.iter()
                .position(|&c| STRING_STOP[c as usize])
                .unwrap_or(b.len())
        };
        for len in 0..=2 * PLAIN_RUN_STEP + 7 {
            let plain = vec![b'a'; len];
            assert_eq!(plain_run(&plain), len);
            for at in 0..len {
                for byte in 0..=255u8 {
                    let mut b = plain.clone();
                    b[at] = byte;
                    // A later stop must not hide or move the first one.
                    if at + 1 < len {
                        b[len - 1] = b'"';
                    }
                    assert_eq!(
                        plain_run(&b),
                        by_table(&b),
                        "byte {byte:#04x} at {at} of {len}"
                    );
                }
            }
        }
        // Bytes just around each class: 0x1f/0x20, 0x21/0x22/0x23, 0x5b/0x5c/0x5d, high bytes.
        let mixed = "ab\u{7f}\u{e9}\u{20ac}!#[]\u{1f600} ~".as_bytes();
        assert_eq!(plain_run(mixed), mixed.len());
    }
}
