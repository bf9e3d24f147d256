//! The plain runs of a JSON string body: the bytes up to the first `"`, `\` or control byte
//! (below 0x20), which are the only bytes the scan must look at inside a string and the only
//! ones serde_json escapes when it writes one. One finder for every reader and writer of JSON
//! text: the ingress scan skips the runs (`codec::scan`) and the egress escaper copies them
//! whole (`codec::escape`, for a text with control bytes). Safe code, two 64-bit words per step
//! (issue #23, size curve). Where control bytes cannot be there, two bytes are all a reader
//! looks for and `memchr2` finds them in vector steps: the member splitter ([`super::members`],
//! valid JSON) and the escaper once it has found a text free of them.

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

/// Bytes tested together by [`has_control`]: one comparison per byte and no early exit inside
/// a block, which the compiler turns into vector compares (SSE2, the x86-64 baseline), about
/// 0.015 ns per byte on this project's machine; a block with a control byte ends the test.
const CONTROL_TEST_BLOCK: usize = 32;

/// Whether `b` holds a byte below 0x20. A text without one has only `"` and `\` to stop at
/// inside its strings, and [`quote_run`] finds those faster than [`plain_run`].
#[inline]
fn has_control(b: &[u8]) -> bool {
    let mut blocks = b.chunks_exact(CONTROL_TEST_BLOCK);
    for block in &mut blocks {
        if block.iter().fold(0u8, |seen, &x| seen | u8::from(x < 0x20)) != 0 {
            return true;
        }
    }
    blocks.remainder().iter().any(|&x| x < 0x20)
}

/// Texts shorter than this keep [`plain_run`] even without control bytes: on them the
/// [`has_control`] pass and [`quote_run`]'s calls cost more than its vector steps save
/// (+720 instructions, +2.2 %, on the 296-byte `tools/call` of `bench/callgrind-check`, whose
/// strings are all short). A text of this size pays the pass back with one run of
/// [`QUOTE_RUN_HEAD`] bytes or more.
pub(crate) const QUOTE_RUN_MIN_TEXT: usize = 1024;

/// Whether a reader of `text` should look for string ends with [`quote_run`]: a text of
/// [`QUOTE_RUN_MIN_TEXT`] bytes or more without a control byte.
#[inline]
pub(crate) fn quote_runs_pay(text: &[u8]) -> bool {
    text.len() >= QUOTE_RUN_MIN_TEXT && !has_control(text)
}

/// Bytes [`quote_run`] tests with [`plain_run`]'s word steps before it calls `memchr2`: a run
/// shorter than this (member names, values, JSON text escaped again, the size curve's text
/// with a quote every 64 bytes) costs what `plain_run` costs; only a longer one pays for the
/// call and gains its vector steps. Measured on this project's machine (ns per byte, runs of
/// 8 / 20 / 64 / 1000 bytes, `plain_run` alone 0.419 / 0.219 / 0.114 / 0.081): without a
/// head `memchr2` costs 0.562 / 0.240 / 0.090 / 0.014, with 16 bytes 0.423 / 0.298 / 0.098 /
/// 0.016, with 32 bytes 0.424 / 0.222 / 0.115 / 0.016; in the server the 32-byte head still
/// made the size curve's request 7–18 % slower (a call per 64-byte run); 64 bytes leave it as
/// it was and keep the long-run gain (issue #23, bench/README.md, session 16).
const QUOTE_RUN_HEAD: usize = 4 * PLAIN_RUN_STEP;

/// [`plain_run`] of a text known to hold no byte below 0x20 ([`has_control`] said so): the
/// offset of its first `"` or `\`, or `b.len()`. Past [`QUOTE_RUN_HEAD`] bytes, `memchr2`
/// searches a vector at a time: about five times faster than `plain_run` on long runs, the
/// same on short ones.
#[inline(always)]
pub(crate) fn quote_run(b: &[u8]) -> usize {
    match (b.get(..QUOTE_RUN_HEAD), b.get(QUOTE_RUN_HEAD..)) {
        (Some(head), Some(tail)) => match plain_run(head) {
            QUOTE_RUN_HEAD => {
                QUOTE_RUN_HEAD + memchr::memchr2(b'"', b'\\', tail).unwrap_or(tail.len())
            }
            stop => stop,
        },
        _ => plain_run(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `finder` gives `reference`'s answer on every text of up to `max_len` bytes of `a`s with
    /// one of `bytes` at any offset (and `last` at the end, so a later stop must not hide or
    /// move the first one), and on the plain texts themselves (no stop: the whole length).
    fn agrees_at_every_offset(
        max_len: usize,
        bytes: std::ops::RangeInclusive<u8>,
        last: u8,
        finder: impl Fn(&[u8]) -> usize,
        reference: impl Fn(&[u8]) -> usize,
    ) {
        for len in 0..=max_len {
            let plain = vec![b'a'; len];
            assert_eq!(finder(&plain), len);
            for at in 0..len {
                for byte in bytes.clone() {
                    let mut b = plain.clone();
                    b[at] = byte;
                    if at + 1 < len {
                        b[len - 1] = last;
                    }
                    assert_eq!(
                        finder(&b),
                        reference(&b),
                        "byte {byte:#04x} at {at} of {len}"
                    );
                }
            }
        }
    }

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
        agrees_at_every_offset(2 * PLAIN_RUN_STEP + 7, 0..=255, b'"', plain_run, by_table);
        // Bytes just around each class: 0x1f/0x20, 0x21/0x22/0x23, 0x5b/0x5c/0x5d, high bytes.
        let mixed = "ab\u{7f}\u{e9}\u{20ac}!#[]\u{1f600} ~".as_bytes();
        assert_eq!(plain_run(mixed), mixed.len());
    }

    /// #23: [`quote_run`] agrees with [`plain_run`] on every text without control bytes: a
    /// quote or a backslash at every offset of the first step, past it and in `memchr2`'s
    /// tail, every other byte value at every offset (no stop), and none at all.
    #[test]
    fn quote_run_agrees_with_plain_run_without_controls() {
        let lens = QUOTE_RUN_HEAD + 2 * PLAIN_RUN_STEP + 40;
        agrees_at_every_offset(lens, 0x20..=0xff, b'\\', quote_run, plain_run);
    }

    /// #23: [`has_control`] finds one control byte at every offset of two blocks and the tail
    /// (first, last, at a block bound and one past it), and none in 0x20..=0xff.
    #[test]
    fn has_control_finds_a_control_byte_anywhere() {
        let len = 2 * CONTROL_TEST_BLOCK + 7;
        let all_high: Vec<u8> = (0x20..=0xffu8).collect();
        assert!(!has_control(&all_high));
        assert!(!has_control(b""));
        for at in 0..len {
            for control in [0x00u8, b'\n', b'\r', 0x1f] {
                let mut b = vec![b'a'; len];
                b[at] = control;
                assert!(has_control(&b), "{control:#04x} at {at} of {len}");
                assert!(has_control(&b[..=at]), "{control:#04x} last of {}", at + 1);
            }
            assert!(!has_control(&vec![b' '; at]));
        }
    }

    /// #23: the bound of [`quote_runs_pay`]: a text without control bytes one byte short of
    /// [`QUOTE_RUN_MIN_TEXT`] keeps `plain_run`, at the bound it takes `quote_run`; a control
    /// byte anywhere (first, middle, last) keeps `plain_run` at any length.
    #[test]
    fn quote_runs_pay_from_the_bound_on_text_without_controls() {
        let at = vec![b'a'; QUOTE_RUN_MIN_TEXT];
        assert!(quote_runs_pay(&at));
        assert!(!quote_runs_pay(&at[..QUOTE_RUN_MIN_TEXT - 1]));
        for place in [0, QUOTE_RUN_MIN_TEXT / 2, QUOTE_RUN_MIN_TEXT] {
            let mut b = vec![b'a'; QUOTE_RUN_MIN_TEXT + 1];
            b[place] = b'\t';
            assert!(!quote_runs_pay(&b), "a tab at {place}");
        }
    }
}
