//! One pass over a frame that validates RFC 8259 syntax, bounds nesting, finds duplicate member
//! names at any depth and records the spans of the top-level members — without building a tree.
//!
//! Recursion is limited to `max_depth` frames: a container that would open level
//! `max_depth + 1` is noted as too deep and then skipped by an iterative, still validating
//! loop, so the rest of the frame is still checked for syntax (which takes precedence, -32700)
//! and the top-level `id` can still be read for the error reply.
//!
//! Why not a serde `Visitor` over `serde_json`: `deserialize_any` converts every number and
//! fails on valid JSON such as `1e400` (which must pass through byte-exact), and serde
//! exposes no byte offsets, so the envelope would need a second full parse. This scanner checks
//! numbers by grammar only, borrows unescaped member names (no allocation per key), and keeps
//! one shared key stack for duplicate detection. `benches/codec.rs` measures it against a plain
//! `serde_json::Value` parse.

use std::borrow::Cow;

#[cfg(test)]
use crate::wire::string_run::QUOTE_RUN_MIN_TEXT;
use crate::wire::string_run::{plain_run, quote_run, quote_runs_pay};

/// The byte offset where the text stopped being JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    /// Offset into the frame.
    pub offset: usize,
}

/// The JSON type of a value, as far as the envelope rules need it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `{...}`
    Object,
    /// `[...]`
    Array,
    /// `"..."`
    String,
    /// A number without fraction or exponent.
    Integer,
    /// A number with a fraction or an exponent.
    Number,
    /// `true` / `false`
    Bool,
    /// `null`
    Null,
}

/// A violation of a structural bound found while scanning otherwise valid JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Structural {
    /// A container at a level beyond the bound.
    TooDeep,
    /// A repeated member name in an object at this level.
    DuplicateKey { depth: usize },
    /// A member name serde_json reserves for itself ([`SERDE_JSON_RESERVED_KEYS`]).
    ReservedKey { depth: usize },
}

/// Member names that serde_json reads as an instruction, not as data: with its `raw_value`
/// feature (which this crate enables) an object whose member is
/// `"$serde_json::private::RawValue"` deserialises, as a `Value`, to the JSON *inside its
/// string* (`{"$serde_json::private::RawValue":"[1]"}` becomes `[1]`); with
/// `arbitrary_precision` (which any crate in a build can switch on) the `Number` token does
/// the same for numbers. Arguments are validated and handed to handlers through
/// `serde_json::Value`, so such a member would make the server check and act on a value the
/// peer never sent (O13: arguments are validated as sent). Compared after unescaping, as
/// serde_json compares them. Found by the `codec_differential` ASan campaign (session 10).
pub(crate) const SERDE_JSON_RESERVED_KEYS: [&str; 2] = [
    "$serde_json::private::RawValue",
    "$serde_json::private::Number",
];

/// Whether `key` (unescaped) is one of [`SERDE_JSON_RESERVED_KEYS`]; one byte compare for
/// every other name.
#[inline]
fn is_reserved(key: &str) -> bool {
    key.starts_with('$') && SERDE_JSON_RESERVED_KEYS.contains(&key)
}

/// One top-level member's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Member<'a> {
    /// The exact text of the value.
    pub text: &'a str,
    /// Its JSON type.
    pub kind: Kind,
}

/// A top-level member slot: absent, present once, or repeated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Slot<'a> {
    /// Not present.
    #[default]
    Absent,
    /// Present exactly once.
    One(Member<'a>),
    /// Present more than once (also reported as a duplicate key).
    Repeated,
}

impl<'a> Slot<'a> {
    fn set(&mut self, member: Member<'a>) {
        *self = match self {
            Slot::Absent => Slot::One(member),
            Slot::One(_) | Slot::Repeated => Slot::Repeated,
        };
    }
}

/// The JSON-RPC members of a top-level object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct TopMembers<'a> {
    pub jsonrpc: Slot<'a>,
    pub id: Slot<'a>,
    pub method: Slot<'a>,
    pub params: Slot<'a>,
    pub result: Slot<'a>,
    pub error: Slot<'a>,
    /// Some other member name was present.
    pub unknown: bool,
}

/// What a successful scan found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Scan<'a> {
    /// Type of the top-level value.
    pub top: Kind,
    /// Members when `top` is an object.
    pub members: TopMembers<'a>,
    /// The first structural violation, if any.
    pub structural: Option<Structural>,
}

/// Scans `text` as exactly one JSON value surrounded by optional whitespace.
pub(crate) fn scan(text: &str, max_depth: usize) -> Result<Scan<'_>, SyntaxError> {
    scan_with(text, max_depth, quote_runs_pay(text.as_bytes()))
}

/// [`scan`] with the string-run finder chosen by the caller (tests compare both). Each finder
/// gets its own copy of the scanner (a const parameter), so the short-text path is the
/// `plain_run` scanner it always was, with no choice made per string (that choice cost the
/// 296-byte call of `bench/callgrind-check` about 390 instructions, issue #23).
fn scan_with(text: &str, max_depth: usize, quote_runs: bool) -> Result<Scan<'_>, SyntaxError> {
    if quote_runs {
        scan_by::<true>(text, max_depth)
    } else {
        scan_by::<false>(text, max_depth)
    }
}

/// Room for this many keys on the shared key stack from the start, so a typical request's
/// keys fit in its one allocation (a key goes on once its value is read and leaves with its
/// object): a `tools/call` with arguments and `_meta`, its client info nested, holds at most
/// 8 at once, and growing from empty took two allocations (4, then 8). 16 measured worse on the echo call (`bench/callgrind-check`: 32,158
/// instructions against 31,648 with 8). #23; `tests/codec_alloc.rs` counts the blocks.
const KEY_STACK_START: usize = 8;

fn scan_by<const QUOTE_RUNS: bool>(text: &str, max_depth: usize) -> Result<Scan<'_>, SyntaxError> {
    let mut s = Scanner::<QUOTE_RUNS> {
        text,
        b: text.as_bytes(),
        pos: 0,
        max_depth,
        keys: Vec::with_capacity(KEY_STACK_START),
        members: TopMembers::default(),
        structural: None,
    };
    s.ws();
    let top = s.value(1)?;
    s.ws();
    if s.pos != s.b.len() {
        return Err(s.err());
    }
    Ok(Scan {
        top,
        members: s.members,
        structural: s.structural,
    })
}

/// Objects with at most this many members are checked for duplicates pairwise; larger ones
/// are sorted. Both use the shared key stack, so no allocation per object.
const PAIRWISE_MAX: usize = 8;

/// `QUOTE_RUNS`: whether string ends are found by [`quote_run`]: a text of at least
/// `QUOTE_RUN_MIN_TEXT` bytes without a byte below 0x20 (a long stdio line, a compact body) has
/// only `"` and `\` to stop at inside its strings, found in vector steps; otherwise
/// [`plain_run`] also stops at control bytes (a raw one inside a string is an error).
struct Scanner<'a, const QUOTE_RUNS: bool> {
    text: &'a str,
    b: &'a [u8],
    pos: usize,
    max_depth: usize,
    /// Member names of all currently open objects, innermost last.
    keys: Vec<Cow<'a, str>>,
    members: TopMembers<'a>,
    structural: Option<Structural>,
}

impl<'a, const QUOTE_RUNS: bool> Scanner<'a, QUOTE_RUNS> {
    fn err(&self) -> SyntaxError {
        SyntaxError { offset: self.pos }
    }

    fn note(&mut self, v: Structural) {
        if self.structural.is_none() {
            self.structural = Some(v);
        }
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    #[inline]
    fn expect(&mut self, byte: u8) -> Result<(), SyntaxError> {
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.err())
        }
    }

    /// One value whose container (if it is one) would be at nesting level `depth`.
    fn value(&mut self, depth: usize) -> Result<Kind, SyntaxError> {
        match self.peek() {
            Some(b'{') => {
                if depth > self.max_depth {
                    self.note(Structural::TooDeep);
                    self.skip_container()?;
                } else {
                    self.object(depth)?;
                }
                Ok(Kind::Object)
            }
            Some(b'[') => {
                if depth > self.max_depth {
                    self.note(Structural::TooDeep);
                    self.skip_container()?;
                } else {
                    self.array(depth)?;
                }
                Ok(Kind::Array)
            }
            _ => self.scalar(),
        }
    }

    /// A string, number or literal.
    fn scalar(&mut self) -> Result<Kind, SyntaxError> {
        match self.peek() {
            Some(b'"') => {
                self.pos += 1;
                self.string()?;
                Ok(Kind::String)
            }
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b't') => self.literal(b"true", Kind::Bool),
            Some(b'f') => self.literal(b"false", Kind::Bool),
            Some(b'n') => self.literal(b"null", Kind::Null),
            _ => Err(self.err()),
        }
    }

    fn literal(&mut self, word: &[u8], kind: Kind) -> Result<Kind, SyntaxError> {
        if self.b[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(kind)
        } else {
            Err(self.err())
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        self.pos - start
    }

    /// RFC 8259 number; validated only, never converted (no range errors, exact text kept).
    fn number(&mut self) -> Result<Kind, SyntaxError> {
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.err()),
        }
        let mut kind = Kind::Integer;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(self.err());
            }
            kind = Kind::Number;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.err());
            }
            kind = Kind::Number;
        }
        Ok(kind)
    }

    /// The body of a string after its opening quote, through the closing quote.
    /// Returns whether it contained escapes.
    fn string(&mut self) -> Result<bool, SyntaxError> {
        let mut escaped = false;
        loop {
            // Fast path: skip bytes that need no attention. The text is valid UTF-8 already.
            let rest = &self.b[self.pos..];
            self.pos += if QUOTE_RUNS {
                quote_run(rest)
            } else {
                plain_run(rest)
            };
            match self.peek() {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(escaped);
                }
                Some(b'\\') => {
                    escaped = true;
                    self.pos += 1;
                    self.escape()?;
                }
                // A raw control character or the end of input inside a string.
                _ => return Err(self.err()),
            }
        }
    }

    fn hex4(&mut self) -> Result<u16, SyntaxError> {
        let mut v: u16 = 0;
        for _ in 0..4 {
            let c = self.peek().ok_or_else(|| self.err())?;
            let d = (c as char).to_digit(16).ok_or_else(|| self.err())?;
            v = (v << 4) | d as u16;
            self.pos += 1;
        }
        Ok(v)
    }

    /// One escape after the backslash. Lone surrogates are rejected (I-JSON): they cannot be
    /// decoded to a Rust string, so no later consumer could read the value.
    fn escape(&mut self) -> Result<char, SyntaxError> {
        let c = self.peek().ok_or_else(|| self.err())?;
        self.pos += 1;
        let ch = match c {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let hi = self.hex4()?;
                let code = match hi {
                    0xD800..=0xDBFF => {
                        if !self.b[self.pos..].starts_with(b"\\u") {
                            return Err(self.err());
                        }
                        self.pos += 2;
                        let lo = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&lo) {
                            return Err(self.err());
                        }
                        0x10000 + ((u32::from(hi) - 0xD800) << 10) + (u32::from(lo) - 0xDC00)
                    }
                    0xDC00..=0xDFFF => return Err(self.err()),
                    _ => u32::from(hi),
                };
                char::from_u32(code).ok_or_else(|| self.err())?
            }
            _ => {
                self.pos -= 1;
                return Err(self.err());
            }
        };
        Ok(ch)
    }

    /// A member name after its opening quote, unescaped for comparison.
    fn key(&mut self) -> Result<Cow<'a, str>, SyntaxError> {
        let start = self.pos;
        let escaped = self.string()?;
        let raw = &self.text[start..self.pos - 1];
        if !escaped {
            return Ok(Cow::Borrowed(raw));
        }
        // Decode a second time; only escaped names pay for this.
        let mut out = String::with_capacity(raw.len());
        let end = self.pos;
        self.pos = start;
        loop {
            let run_start = self.pos;
            while let Some(&c) = self.b.get(self.pos) {
                if c == b'"' || c == b'\\' {
                    break;
                }
                self.pos += 1;
            }
            out.push_str(&self.text[run_start..self.pos]);
            if self.peek() == Some(b'\\') {
                self.pos += 1;
                let ch = self.escape()?;
                out.push(ch);
            } else {
                break;
            }
        }
        self.pos = end;
        Ok(Cow::Owned(out))
    }

    fn object(&mut self, depth: usize) -> Result<(), SyntaxError> {
        self.pos += 1; // '{'
        self.ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(());
        }
        let first_key = self.keys.len();
        loop {
            self.expect(b'"')?;
            let key = self.key()?;
            if is_reserved(&key) {
                self.note(Structural::ReservedKey { depth });
            }
            self.ws();
            self.expect(b':')?;
            self.ws();
            let start = self.pos;
            if depth == 1 {
                let kind = self.value(depth + 1)?;
                let member = Member {
                    text: &self.text[start..self.pos],
                    kind,
                };
                match key.as_ref() {
                    "jsonrpc" => self.members.jsonrpc.set(member),
                    "id" => self.members.id.set(member),
                    "method" => self.members.method.set(member),
                    "params" => self.members.params.set(member),
                    "result" => self.members.result.set(member),
                    "error" => self.members.error.set(member),
                    _ => self.members.unknown = true,
                }
            } else {
                self.value(depth + 1)?;
            }
            self.keys.push(key);
            self.ws();
            match self.peek() {
                Some(b',') => {
                    self.pos += 1;
                    self.ws();
                }
                Some(b'}') => {
                    self.pos += 1;
                    break;
                }
                _ => return Err(self.err()),
            }
        }
        if has_duplicates(&mut self.keys[first_key..]) {
            self.note(Structural::DuplicateKey { depth });
        }
        self.keys.truncate(first_key);
        Ok(())
    }

    fn array(&mut self, depth: usize) -> Result<(), SyntaxError> {
        self.pos += 1; // '['
        self.ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            self.value(depth + 1)?;
            self.ws();
            match self.peek() {
                Some(b',') => {
                    self.pos += 1;
                    self.ws();
                }
                Some(b']') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(self.err()),
            }
        }
    }

    /// Validates a container of any depth without recursion (used beyond the depth bound).
    /// The explicit stack holds one byte per open level, so it is bounded by the frame size.
    fn skip_container(&mut self) -> Result<(), SyntaxError> {
        let mut stack: Vec<u8> = Vec::new();
        'value: loop {
            // Expecting a value.
            self.ws();
            match self.peek() {
                Some(open @ (b'{' | b'[')) => {
                    self.pos += 1;
                    self.ws();
                    let close = if open == b'{' { b'}' } else { b']' };
                    if self.peek() == Some(close) {
                        self.pos += 1;
                    } else {
                        stack.push(open);
                        if open == b'{' {
                            self.member_name()?;
                        }
                        continue 'value;
                    }
                }
                _ => {
                    self.scalar()?;
                }
            }
            // After a value: close containers or move to the next element.
            loop {
                let Some(&top) = stack.last() else {
                    return Ok(());
                };
                self.ws();
                match (top, self.peek()) {
                    (_, Some(b',')) => {
                        self.pos += 1;
                        if top == b'{' {
                            self.ws();
                            self.member_name()?;
                        }
                        continue 'value;
                    }
                    (b'{', Some(b'}')) | (b'[', Some(b']')) => {
                        self.pos += 1;
                        stack.pop();
                    }
                    _ => return Err(self.err()),
                }
            }
        }
    }

    /// `"name" :` inside a skipped object.
    fn member_name(&mut self) -> Result<(), SyntaxError> {
        self.expect(b'"')?;
        self.string()?;
        self.ws();
        self.expect(b':')
    }
}

/// Whether a slice of member names holds a repeat. May reorder the slice.
fn has_duplicates(keys: &mut [Cow<'_, str>]) -> bool {
    if keys.len() <= PAIRWISE_MAX {
        for i in 1..keys.len() {
            if keys[..i].contains(&keys[i]) {
                return true;
            }
        }
        false
    } else {
        keys.sort_unstable();
        keys.windows(2).any(|w| w[0] == w[1])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ok(text: &str) -> Scan<'_> {
        scan(text, 64).expect("valid JSON")
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        /// #23, O121: the scan finds the same verdict (value, members, structural findings,
        /// or the error's offset) with either string-run finder, on long texts without
        /// control bytes that are valid (strings of every escape, long runs) or broken
        /// anywhere (an unterminated string, a bad escape, a lone surrogate, a cut).
        #[test]
        fn quote_runs_scan_as_plain_runs(
            strings in proptest::collection::vec("[ -~\u{e9}\u{1f600}]{0,300}", 1..8),
            cut in any::<prop::sample::Index>(),
            damage in 0usize..6,
        ) {
            let members: Vec<String> = strings
                .iter()
                .enumerate()
                .map(|(i, v)| format!("\"k{i}\":{}", serde_json::to_string(v).unwrap()))
                .collect();
            let mut text = format!("{{\"jsonrpc\":\"2.0\",{}}}", members.join(","));
            while text.len() < QUOTE_RUN_MIN_TEXT {
                text.insert_str(1, "\"pad\":\"0123456789abcdef\\\"0123456789\",");
            }
            let at = cut.index(text.len());
            let at = (0..=at).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
            match damage {
                0 => {}
                1 => text.truncate(at),
                2 => text.insert_str(at, "\\q"),
                3 => text.insert_str(at, "\\ud800"),
                4 => text.insert(at, '"'),
                _ => text.insert(at, '\\'),
            }
            prop_assert!(!text.bytes().any(|b| b < 0x20));
            prop_assert_eq!(scan_with(&text, 64, true), scan_with(&text, 64, false));
            if text.len() >= QUOTE_RUN_MIN_TEXT {
                prop_assert!(quote_runs_pay(text.as_bytes()));
            }
        }
    }

    #[test]
    fn accepts_rfc8259_values_and_reports_kinds() {
        assert_eq!(ok("{}").top, Kind::Object);
        assert_eq!(
            ok(" [1, 2.5, -0, 1e400, \"x\", true, false, null] ").top,
            Kind::Array
        );
        assert_eq!(ok("-12").top, Kind::Integer);
        assert_eq!(ok("1.0").top, Kind::Number);
        assert_eq!(ok("\"\\ud83d\\ude00\"").top, Kind::String);
    }

    #[test]
    fn rejects_invalid_json() {
        for bad in [
            "",
            " ",
            "{",
            "}",
            "[1,]",
            "{\"a\":1,}",
            "{\"a\" 1}",
            "01",
            "1.",
            "1e",
            "-",
            "+1",
            "NaN",
            "Infinity",
            "nul",
            "\"\t\"",
            "\"\\x\"",
            "\"\\ud800\"",
            "\"\\udc00\"",
            "\"\\ud800\\u0041\"",
            "{} x",
            "{}{}",
            "\u{feff}{}",
            "'a'",
            "{a:1}",
        ] {
            assert!(scan(bad, 64).is_err(), "accepted {bad:?}");
        }
    }

    #[test]
    fn o13_duplicates_found_at_any_depth_after_unescaping() {
        let s = ok(r#"{"a":1,"\u0061":2}"#);
        assert_eq!(s.structural, Some(Structural::DuplicateKey { depth: 1 }));
        let s = ok(r#"{"p":{"q":[{"r":{"x":1,"k":1,"k":2}}]}}"#);
        assert_eq!(s.structural, Some(Structural::DuplicateKey { depth: 5 }));
        let many: Vec<String> = (0..20).map(|i| format!("\"k{i}\":{i}")).collect();
        let text = format!("{{{},\"k7\":0}}", many.join(","));
        assert_eq!(
            ok(&text).structural,
            Some(Structural::DuplicateKey { depth: 1 })
        );
        let text = format!("{{{}}}", many.join(","));
        assert_eq!(ok(&text).structural, None);
        // Same name in sibling objects is fine.
        assert_eq!(ok(r#"{"a":{"x":1},"b":{"x":1}}"#).structural, None);
    }

    #[test]
    fn depth_bound_is_exact_and_skipping_still_validates() {
        let nest = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert_eq!(scan(&nest(64), 64).expect("64").structural, None);
        assert_eq!(
            scan(&nest(65), 64).expect("65").structural,
            Some(Structural::TooDeep)
        );
        let deep = format!("{{\"id\":1,\"x\":{}}}", nest(100_000));
        let s = scan(&deep, 64).expect("deep but valid");
        assert_eq!(s.structural, Some(Structural::TooDeep));
        assert!(matches!(s.members.id, Slot::One(_)));
        let broken = format!("{{\"x\":{}", nest(100));
        assert!(scan(&broken, 64).is_err());
        assert!(scan(
            &format!("{}{{\"a\" 1}}{}", "[".repeat(70), "]".repeat(70)),
            64
        )
        .is_err());
    }
}
