//! JSON string escaping on the result path, byte for byte as serde_json writes it, with the
//! plain runs between the bytes that need an escape copied whole. A text without control
//! bytes (one vectorised test) has only `"` and `\` to stop at, found by `memchr2`; any other
//! text has its runs found two words at a time ([`crate::wire::string_run`]).
//!
//! serde_json escapes one byte at a time (≈ 10 instructions per byte under callgrind); a tool
//! result's text is escaped twice (once in `structuredContent`, then that JSON again as the
//! text copy in `content`), which made escaping the largest cost of a large `tools/call`
//! (issue #23, size curve). The output is serde_json's: `"` `\` `\b` `\f` `\n` `\r` `\t` as
//! short escapes, every other byte below 0x20 as `\u00XX` with lowercase hex, and `/`, DEL,
//! U+2028/U+2029 and all other non-ASCII text unescaped (the proptests below and
//! `tests/server_tool_bytes.rs` pin it).
//!
//! Safe code on purpose: the SIMD escapers of the field (`json-escape-simd`, sonic-rs's
//! kernels, evaluated in session 11) load whole registers past the end of the string where
//! that stays inside one page, which AddressSanitizer reports (they need a build feature to
//! stop) and which is outside Rust's rules. The word-at-a-time run finder keeps every read in
//! bounds and measured within the target (`bench/README.md`, session 12); `memchr`'s vector
//! search (already a dependency, fuzzed under AddressSanitizer in every target here) reads
//! only inside the slice it is given, its last block overlapping the one before.
//!
//! [`to_raw_value`] is `serde_json::value::to_raw_value` with long strings escaped this way:
//! the same serializer writes everything else, so every other byte is what serde_json writes.
//! Its output becomes a `RawValue` without a second parse ([`crate::wire::raw`]).

use std::cell::RefCell;
use std::io;

use serde::ser::{self, Serialize, Serializer};
use serde_json::value::RawValue;

use crate::wire::string_run::{plain_run, quote_run, quote_runs_pay};

/// Strings shorter than this are left to serde_json's own escaper. Below it the run finder's
/// fixed cost (a buffer of its own, then one more copy into serde_json's output) is more than
/// the per-byte saving; member names, enum tags and short values stay on serde_json's path.
/// Both paths write the same bytes, so the bound is a speed choice only (tested on both
/// sides for equal output).
pub(crate) const FAST_MIN_STR_BYTES: usize = 64;

/// serde_json's private struct names: a struct serialised under one of them is serde_json's
/// own protocol (`RawValue`, and `Number` under `arbitrary_precision`) and its field is
/// written by serde_json's internal emitters, which accept a plain string only.
const SERDE_JSON_PRIVATE: &str = "$serde_json::private::";

use crate::wire::raw::RAW_VALUE_TOKEN;

/// The capacity to reserve for a string of `len` bytes written by [`write_str`]: the text,
/// its quotes and an eighth more for escapes (a text that needs more grows its buffer once
/// or twice, amortised; every byte may need six, so reserving the worst case would claim
/// six times the memory of every large result).
pub(crate) const fn reserve_for(len: usize) -> usize {
    len.saturating_add(len / 8).saturating_add(2)
}

/// The short escapes serde_json writes; every other control byte is `\u00XX`.
fn short_escape(byte: u8) -> Option<&'static str> {
    Some(match byte {
        b'"' => "\\\"",
        b'\\' => "\\\\",
        0x08 => "\\b",
        0x0c => "\\f",
        b'\n' => "\\n",
        b'\r' => "\\r",
        b'\t' => "\\t",
        _ => return None,
    })
}

/// Appends `s` as a JSON string literal, quotes included, exactly as serde_json writes it.
pub(crate) fn write_str(out: &mut String, s: &str) {
    out.reserve(reserve_for(s.len()));
    out.push('"');
    write_body(out, s);
    out.push('"');
}

/// Appends the concatenation of `pieces` as one JSON string literal, quotes included: the
/// same bytes as [`write_str`] of the concatenated text (escaping is per character, and each
/// piece is a whole `str`), without building that text first.
///
/// Returns whether the text held a raw line break (`\n` or `\r`). The envelope's text copy is
/// the escape of the structured text that the reply line also carries verbatim, so this pass
/// tells the reply encoder whether that text needs compacting, and the encoder does not scan
/// the line again (issue #23, size curve).
#[cfg(feature = "server")]
pub(crate) fn write_str_pieces(out: &mut String, pieces: &[&str]) -> bool {
    out.reserve(reserve_for(pieces.iter().map(|p| p.len()).sum()));
    out.push('"');
    let mut line_break = false;
    for piece in pieces {
        line_break |= write_body(out, piece);
    }
    out.push('"');
    line_break
}

/// Appends the escaped body of a string literal (no quotes); returns whether `s` held a raw
/// line break (`\n` or `\r`).
///
/// A long text without control bytes (the common case, and every JSON text escaped as a text
/// copy that carries no raw whitespace) is escaped by [`write_body_quotes`], whose stops
/// `memchr2` finds in vector steps; a short one, or one with control bytes, by
/// [`write_body_runs`] (`quote_runs_pay` decides).
///
/// Written into a `String`, so nothing is validated again: a plain run ends only before an
/// ASCII byte or at the end, which is always a character boundary, and the escapes are ASCII.
/// (Into a byte buffer, each of the result's copies was checked as UTF-8 once more: about 1.4
/// instructions per byte of the size curve, issue #23.)
fn write_body(out: &mut String, s: &str) -> bool {
    if quote_runs_pay(s.as_bytes()) {
        write_body_quotes(out, s);
        false
    } else {
        write_body_runs(out, s)
    }
}

/// [`write_body`] for a text without control bytes: the only stops are `"` and `\`
/// ([`quote_run`]). A backslash followed by `"` or `\` (an escape of JSON text being escaped
/// again, as in the text copy) is written in one step, as the two escapes it is.
fn write_body_quotes(out: &mut String, s: &str) {
    let mut rest = s;
    loop {
        // A run ends before an ASCII byte or at the end: a character boundary.
        let (plain, tail) = rest.split_at(quote_run(rest.as_bytes()));
        out.push_str(plain);
        let (escaped, used) = match tail.as_bytes() {
            [] => break,
            [b'\\', b'"', ..] => ("\\\\\\\"", 2),
            [b'\\', b'\\', ..] => ("\\\\\\\\", 2),
            [b'\\', ..] => ("\\\\", 1),
            _ => ("\\\"", 1),
        };
        out.push_str(escaped);
        rest = tail.get(used..).unwrap_or_default();
    }
}

/// [`write_body`] for any text: plain runs (up to a `"`, `\` or control byte) copied whole.
fn write_body_runs(out: &mut String, s: &str) -> bool {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut line_break = false;
    let mut rest = s;
    loop {
        let (plain, tail) = rest.split_at(plain_run(rest.as_bytes()));
        out.push_str(plain);
        let Some(&byte) = tail.as_bytes().first() else {
            break;
        };
        match short_escape(byte) {
            Some(pair) => {
                line_break |= byte == b'\n' || byte == b'\r';
                out.push_str(pair);
            }
            None => {
                out.push_str("\\u00");
                out.push(char::from(HEX[usize::from(byte >> 4)]));
                out.push(char::from(HEX[usize::from(byte & 0xf)]));
            }
        }
        // The byte is ASCII (a quote, a backslash or a control byte): one character.
        rest = &tail[1..];
    }
    line_break
}

/// `serde_json::value::to_raw_value`, with every string of at least [`FAST_MIN_STR_BYTES`]
/// escaped by [`write_str`]: byte for byte the same text, not parsed again.
pub(crate) fn to_raw_value<T: ?Sized + Serialize>(
    value: &T,
) -> Result<Box<RawValue>, serde_json::Error> {
    let text = Text(RefCell::new(TextParts {
        text: String::new(),
        pending: Vec::with_capacity(128),
    }));
    value.serialize(Fast(&mut serde_json::Serializer::new(&text), &text))?;
    let TextParts { mut text, pending } = text.0.into_inner();
    if text.is_empty() {
        // No long string: the output is serde_json's bytes alone, checked once.
        text = String::from_utf8(pending).map_err(ser::Error::custom)?;
    } else {
        text.push_str(std::str::from_utf8(&pending).map_err(ser::Error::custom)?);
    }
    crate::wire::raw::owned_unchecked(text)
}

/// The text [`to_raw_value`] writes: serde_json's writer, and where long strings are escaped
/// straight in ([`Fast`]), with no buffer of their own, no copy and no UTF-8 check of them
/// (issue #23, size curve: a 1 MiB result string was escaped into its own buffer, copied
/// into serde_json's, which then doubled to take the closing brace, and checked as UTF-8).
///
/// serde_json's own bytes gather in `pending` and are checked as UTF-8 when a long string is
/// about to be written after them, and at the end: serde_json writes whole characters, so
/// each gathered stretch is UTF-8 on its own; one that is not (none is known) fails the
/// serialisation. A result without long strings is one buffer, checked once, as before.
struct Text(RefCell<TextParts>);

struct TextParts {
    /// Everything before `pending`: settled stretches and long strings escaped in place.
    text: String,
    /// serde_json's bytes since the last long string.
    pending: Vec<u8>,
}

impl TextParts {
    /// Moves `pending` onto the end of `text`.
    fn settle(&mut self) -> Result<(), std::str::Utf8Error> {
        if !self.pending.is_empty() {
            self.text.push_str(std::str::from_utf8(&self.pending)?);
            self.pending.clear();
        }
        Ok(())
    }
}

impl io::Write for &Text {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf).map(|()| buf.len())
    }

    /// serde_json writes everything through `write_all`: one borrow per write, inlined into
    /// serde_json's writes (out of line, each write cost about 40 instructions).
    #[inline(always)]
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.0
            .try_borrow_mut()
            .map_err(|_| io::Error::other("the text is being written"))?
            .pending
            .extend_from_slice(buf);
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// An empty raw fragment, serialised the way `RawValue` is: serde_json writes it verbatim,
/// that is nothing. [`Fast`] serialises one after escaping a long string into the [`Text`]
/// itself, for the serializer's `Ok` (a generic `S::Ok` has no other source).
struct EmptyFragment;

impl Serialize for EmptyFragment {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use ser::SerializeStruct;
        let mut s = serializer.serialize_struct(RAW_VALUE_TOKEN, 1)?;
        s.serialize_field(RAW_VALUE_TOKEN, "")?;
        s.end()
    }
}

/// The serializer methods that take one scalar and only pass it on to the wrapped serializer,
/// for a pass-through wrapper `struct W<S>(S)`: written once for [`Fast`] and for
/// `core::tool`'s f32 guard, which differ only in the methods they write themselves.
macro_rules! forward_scalars {
    ($($method:ident: $ty:ty),* $(,)?) => {$(
        fn $method(self, v: $ty) -> Result<S::Ok, S::Error> {
            self.0.$method(v)
        }
    )*};
}
pub(crate) use forward_scalars;

/// The serializer methods that carry no value or one value to serialise through the wrapper
/// again (`$wrap(value)`, or `$wrap(value, self.$field)` for a wrapper that carries a second
/// field along), for the same pass-through wrappers as [`forward_scalars`].
macro_rules! forward_wrapped {
    ($wrap:ident $(, $field:tt)?) => {
        fn serialize_none(self) -> Result<S::Ok, S::Error> {
            self.0.serialize_none()
        }
        fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result<S::Ok, S::Error> {
            self.0.serialize_some(&$wrap(value $(, self.$field)?))
        }
        fn serialize_unit(self) -> Result<S::Ok, S::Error> {
            self.0.serialize_unit()
        }
        fn serialize_unit_struct(self, name: &'static str) -> Result<S::Ok, S::Error> {
            self.0.serialize_unit_struct(name)
        }
        fn serialize_unit_variant(
            self,
            name: &'static str,
            index: u32,
            variant: &'static str,
        ) -> Result<S::Ok, S::Error> {
            self.0.serialize_unit_variant(name, index, variant)
        }
        fn serialize_newtype_struct<T: ?Sized + Serialize>(
            self,
            name: &'static str,
            value: &T,
        ) -> Result<S::Ok, S::Error> {
            self.0
                .serialize_newtype_struct(name, &$wrap(value $(, self.$field)?))
        }
        fn serialize_newtype_variant<T: ?Sized + Serialize>(
            self,
            name: &'static str,
            index: u32,
            variant: &'static str,
            value: &T,
        ) -> Result<S::Ok, S::Error> {
            self.0.serialize_newtype_variant(
                name,
                index,
                variant,
                &$wrap(value $(, self.$field)?),
            )
        }
    };
}
pub(crate) use forward_wrapped;

/// serde_json's writing serializer with long strings escaped by [`write_str`] straight into
/// the [`Text`] it writes to; everything else, at every depth, is passed to it unchanged (each
/// nested value goes through [`Each`]). Only ever wraps the `&mut serde_json::Serializer`
/// writing into that same `Text` (see [`to_raw_value`]): serde_json writes every byte before a
/// value when it gets to the value (no buffering, and nothing is written after a string), so
/// a string escaped into the text lands exactly where serde_json would have written it.
struct Fast<'t, S>(S, &'t Text);

/// A nested value serialised through [`Fast`].
struct Each<'a, 't, T: ?Sized>(&'a T, &'t Text);

impl<T: ?Sized + Serialize> Serialize for Each<'_, '_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(Fast(serializer, self.1))
    }
}

/// A compound of [`Fast`]: members go through [`Each`], except inside serde_json's private
/// structs (a `RawValue` member), which get the plain compound.
struct Compound<'t, C> {
    inner: C,
    plain: bool,
    text: &'t Text,
}

impl<'t, S: Serializer> Serializer for Fast<'t, S> {
    type Ok = S::Ok;
    type Error = S::Error;
    type SerializeSeq = Compound<'t, S::SerializeSeq>;
    type SerializeTuple = Compound<'t, S::SerializeTuple>;
    type SerializeTupleStruct = Compound<'t, S::SerializeTupleStruct>;
    type SerializeTupleVariant = Compound<'t, S::SerializeTupleVariant>;
    type SerializeMap = Compound<'t, S::SerializeMap>;
    type SerializeStruct = Compound<'t, S::SerializeStruct>;
    type SerializeStructVariant = Compound<'t, S::SerializeStructVariant>;

    fn serialize_str(self, v: &str) -> Result<S::Ok, S::Error> {
        if v.len() < FAST_MIN_STR_BYTES {
            return self.0.serialize_str(v);
        }
        {
            let mut parts = self
                .1
                 .0
                .try_borrow_mut()
                .map_err(|_| ser::Error::custom("the text is being written"))?;
            parts.settle().map_err(ser::Error::custom)?;
            write_str(&mut parts.text, v);
        }
        EmptyFragment.serialize(self.0)
    }
    forward_scalars!(
        serialize_bool: bool,
        serialize_i8: i8,
        serialize_i16: i16,
        serialize_i32: i32,
        serialize_i64: i64,
        serialize_i128: i128,
        serialize_u8: u8,
        serialize_u16: u16,
        serialize_u32: u32,
        serialize_u64: u64,
        serialize_u128: u128,
        serialize_f32: f32,
        serialize_f64: f64,
        serialize_char: char,
        serialize_bytes: &[u8],
    );
    forward_wrapped!(Each, 1);
    fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq, S::Error> {
        let text = self.1;
        self.0.serialize_seq(len).map(|c| Compound::each(c, text))
    }
    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple, S::Error> {
        let text = self.1;
        self.0.serialize_tuple(len).map(|c| Compound::each(c, text))
    }
    fn serialize_tuple_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleStruct, S::Error> {
        let text = self.1;
        self.0
            .serialize_tuple_struct(name, len)
            .map(|c| Compound::each(c, text))
    }
    fn serialize_tuple_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleVariant, S::Error> {
        let text = self.1;
        self.0
            .serialize_tuple_variant(name, index, variant, len)
            .map(|c| Compound::each(c, text))
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap, S::Error> {
        let text = self.1;
        self.0.serialize_map(len).map(|c| Compound::each(c, text))
    }
    fn serialize_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStruct, S::Error> {
        let (plain, text) = (name.starts_with(SERDE_JSON_PRIVATE), self.1);
        self.0
            .serialize_struct(name, len)
            .map(|inner| Compound { inner, plain, text })
    }
    fn serialize_struct_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStructVariant, S::Error> {
        let text = self.1;
        self.0
            .serialize_struct_variant(name, index, variant, len)
            .map(|c| Compound::each(c, text))
    }
    fn collect_str<T: ?Sized + std::fmt::Display>(self, value: &T) -> Result<S::Ok, S::Error> {
        self.0.collect_str(value)
    }
    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

impl<'t, C> Compound<'t, C> {
    fn each(inner: C, text: &'t Text) -> Self {
        Compound {
            inner,
            plain: false,
            text,
        }
    }
}

/// The compounds whose one method takes a value: each element or field goes through [`Each`].
macro_rules! each_value {
    ($($trait:ident :: $method:ident),* $(,)?) => {$(
        impl<C: ser::$trait> ser::$trait for Compound<'_, C> {
            type Ok = C::Ok;
            type Error = C::Error;
            fn $method<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), C::Error> {
                self.inner.$method(&Each(value, self.text))
            }
            fn end(self) -> Result<C::Ok, C::Error> {
                self.inner.end()
            }
        }
    )*};
}

each_value!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field,
);

impl<C: ser::SerializeMap> ser::SerializeMap for Compound<'_, C> {
    type Ok = C::Ok;
    type Error = C::Error;
    /// Keys are written by serde_json's key serializer, which takes plain strings only.
    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Result<(), C::Error> {
        self.inner.serialize_key(key)
    }
    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), C::Error> {
        self.inner.serialize_value(&Each(value, self.text))
    }
    fn end(self) -> Result<C::Ok, C::Error> {
        self.inner.end()
    }
}

/// The fields of a struct go through [`Each`]; those of serde_json's private structs are
/// written plainly.
impl<C: ser::SerializeStruct> ser::SerializeStruct for Compound<'_, C> {
    type Ok = C::Ok;
    type Error = C::Error;
    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), C::Error> {
        if self.plain {
            self.inner.serialize_field(key, value)
        } else {
            self.inner.serialize_field(key, &Each(value, self.text))
        }
    }
    fn skip_field(&mut self, key: &'static str) -> Result<(), C::Error> {
        self.inner.skip_field(key)
    }
    fn end(self) -> Result<C::Ok, C::Error> {
        self.inner.end()
    }
}

impl<C: ser::SerializeStructVariant> ser::SerializeStructVariant for Compound<'_, C> {
    type Ok = C::Ok;
    type Error = C::Error;
    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), C::Error> {
        self.inner.serialize_field(key, &Each(value, self.text))
    }
    fn skip_field(&mut self, key: &'static str) -> Result<(), C::Error> {
        self.inner.skip_field(key)
    }
    fn end(self) -> Result<C::Ok, C::Error> {
        self.inner.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn escaped(s: &str) -> String {
        let mut out = "x".to_owned();
        write_str(&mut out, s);
        out.remove(0);
        out
    }

    fn same_as_serde_json(s: &str) {
        let want = serde_json::to_string(s).expect("a str serialises");
        assert_eq!(escaped(s), want, "write_str {s:?}");
        let raw = to_raw_value(s).expect("a str serialises");
        assert_eq!(raw.get(), want, "to_raw_value {s:?}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        /// Arbitrary strings: every scalar value, any length proptest picks.
        #[test]
        fn escapes_arbitrary_strings_as_serde_json(s in any::<String>()) {
            same_as_serde_json(&s);
        }

        /// Every ASCII control, the short escapes, `/`, DEL, U+2028/2029 and multibyte text,
        /// long enough to cross the run finder's 8- and 16-byte steps at every offset.
        #[test]
        fn escapes_controls_and_multibyte_as_serde_json(
            s in "[\\x00-\\x7f\"\\\\/\u{2028}\u{2029}\u{e9}\u{20ac}\u{1f600}]{0,300}"
        ) {
            same_as_serde_json(&s);
        }

        /// Long runs of one escaped byte between plain text.
        #[test]
        fn escapes_long_runs_as_serde_json(
            pre in "[a-z]{0,200}",
            c in "[\\x00-\\x20\"\\\\\\x7f]",
            n in 0usize..200,
            post in "[a-z\\x00-\\x1f\u{e9}]{0,70}",
        ) {
            same_as_serde_json(&format!("{pre}{}{post}", c.repeat(n)));
        }

        /// #23: a text escaped in pieces (the `{"value": …}` wrap of a result around its
        /// value, never concatenated) is serde_json's literal of the whole text, wherever the
        /// text is cut (at character boundaries, empty pieces included).
        #[cfg(feature = "server")]
        #[test]
        fn pieces_escape_as_the_concatenated_text(
            s in "[\\x00-\\x7f\"\\\\\u{e9}\u{20ac}\u{1f600}]{0,200}",
            cuts in proptest::collection::vec(0usize..=200, 0..4),
        ) {
            let mut cuts: Vec<usize> = cuts
                .into_iter()
                .map(|c| c.min(s.len()))
                .filter(|&c| s.is_char_boundary(c))
                .collect();
            cuts.sort_unstable();
            let mut pieces = Vec::new();
            let mut at = 0;
            for cut in cuts {
                pieces.push(&s[at..cut]);
                at = cut;
            }
            pieces.push(&s[at..]);
            let mut out = String::new();
            let line_break = write_str_pieces(&mut out, &pieces);
            prop_assert_eq!(out, serde_json::to_string(&s).expect("a str serialises"));
            // #23: the pass reports the text's raw line breaks (the reply line is not
            // scanned for them again).
            prop_assert_eq!(line_break, s.contains(['\n', '\r']));
        }

        /// #23, O121: text without control bytes escaped by `write_body_quotes` (quotes and
        /// backslashes only, a backslash and the `"` or `\` after it in one step): dense
        /// quotes and backslashes, escaped JSON written again as a text copy, cut anywhere (a
        /// pair split between two pieces is written as its two escapes), and through
        /// `write_str_pieces`, which takes that path from `QUOTE_RUN_MIN_TEXT` bytes on.
        #[cfg(feature = "server")]
        #[test]
        fn text_without_controls_escapes_as_serde_json(
            s in "[ -~\"\\\\\u{e9}\u{20ac}\u{1f600}]{0,1400}",
            cuts in proptest::collection::vec(0usize..=1400, 0..4),
        ) {
            let json = serde_json::to_string(&s).expect("a str serialises");
            for text in [s.as_str(), json.as_str()] {
                prop_assert!(!text.bytes().any(|b| b < 0x20));
                let want = serde_json::to_string(text).expect("a str serialises");
                let mut cuts: Vec<usize> = cuts
                    .iter()
                    .map(|&c| c.min(text.len()))
                    .filter(|&c| text.is_char_boundary(c))
                    .collect();
                cuts.sort_unstable();
                let mut out = String::from("\"");
                let mut at = 0;
                for cut in cuts.into_iter().chain([text.len()]) {
                    write_body_quotes(&mut out, &text[at..cut]);
                    at = cut;
                }
                out.push('"');
                prop_assert_eq!(&out, &want);
                let mut whole = String::new();
                prop_assert!(!write_str_pieces(&mut whole, &[text]));
                prop_assert_eq!(&whole, &want);
            }
        }
    }

    /// A buffer reserved with [`reserve_for`] holds a text with up to an eighth of its bytes
    /// escaped to two without growing (the envelope's copy block relies on it); denser escapes
    /// grow it and still write serde_json's bytes.
    #[test]
    fn reserve_for_holds_a_text_with_an_eighth_escaped() {
        let eighth: String = (0..4096)
            .map(|i| if i % 16 == 0 { '"' } else { 'a' })
            .collect();
        for s in ["", "a", "\"", &"a".repeat(4096), &eighth] {
            let mut out = String::with_capacity(3 + reserve_for(s.len()));
            out.push_str("[1,");
            let before = out.as_ptr();
            write_str(&mut out, s);
            assert_eq!(out.as_ptr(), before, "reallocated for {} bytes", s.len());
            assert_eq!(out[3..], serde_json::to_string(s).unwrap());
        }
        let dense = "\u{1}".repeat(1000);
        let mut out = String::with_capacity(reserve_for(dense.len()));
        write_str(&mut out, &dense);
        assert_eq!(out, serde_json::to_string(&dense).unwrap());
    }

    /// Issue #23: serde_json's gathered bytes are checked when they are settled: a stretch that is not
    /// UTF-8 is an error, never text (serde_json writes none, so this is the guard only).
    #[test]
    fn settling_checks_the_gathered_bytes() {
        let mut parts = TextParts {
            text: "[".to_owned(),
            pending: b"1,\"\xc3\xa9\",".to_vec(),
        };
        parts.settle().unwrap();
        assert_eq!(
            (parts.text.as_str(), parts.pending.len()),
            ("[1,\"\u{e9}\",", 0)
        );
        parts.pending.extend_from_slice(b"\"\xc3");
        assert!(parts.settle().is_err());
        assert_eq!(parts.text, "[1,\"\u{e9}\",");
    }

    /// O121, issue #23: long strings between serde_json's own bytes, first, last and back to
    /// back, at every depth: the structured text is serde_json's, byte for byte.
    #[test]
    fn long_strings_land_where_serde_json_writes_them() {
        let long = |c: char| format!("{}\"{c}", c.to_string().repeat(FAST_MIN_STR_BYTES));
        let (a, b) = (long('a'), long('b'));
        for value in [
            serde_json::json!(a),
            serde_json::json!([a, b]),
            serde_json::json!([1, a, "s", b, null]),
            serde_json::json!({ "k": a, "l": [b, { "m": a }], "n": 1 }),
            serde_json::json!([[[a]], b]),
        ] {
            assert_eq!(
                to_raw_value(&value).unwrap().get(),
                serde_json::to_string(&value).unwrap()
            );
        }
    }

    #[test]
    fn every_ascii_byte_alone_and_inside_a_block() {
        for b in 0u8..0x80 {
            let c = char::from(b);
            same_as_serde_json(&c.to_string());
            same_as_serde_json(&format!("{}{c}{}", "x".repeat(33), "y".repeat(40)));
        }
        assert_eq!(
            escaped("\u{7f}/\u{2028}\u{2029}"),
            "\"\u{7f}/\u{2028}\u{2029}\""
        );
        assert_eq!(escaped("\u{1}\u{1f}"), "\"\\u0001\\u001f\"");
    }

    /// Below the bound serde_json escapes, at it and one past it [`write_str`] does: the
    /// same bytes either way, in a value and inside a structure.
    #[test]
    fn fast_bound_gives_the_same_bytes_on_both_sides() {
        for len in [
            FAST_MIN_STR_BYTES - 1,
            FAST_MIN_STR_BYTES,
            FAST_MIN_STR_BYTES + 1,
        ] {
            let s: String = (0..len)
                .map(|i| if i % 7 == 0 { '"' } else { 'a' })
                .collect();
            assert_eq!(s.len(), len);
            same_as_serde_json(&s);
            let nested = serde_json::json!({ "k": [s.clone(), { "inner": s }] });
            assert_eq!(
                to_raw_value(&nested).unwrap().get(),
                serde_json::to_string(&nested).unwrap()
            );
        }
    }

    /// Everything around the strings is serde_json's: map keys (long ones too, through its key
    /// serializer), options, enums, numbers, a `RawValue` member kept verbatim.
    #[test]
    fn structures_are_written_as_serde_json_writes_them() {
        #[derive(serde::Serialize)]
        enum E {
            Unit,
            New(String),
            Tuple(String, u8),
            Struct { s: String },
        }
        #[derive(serde::Serialize)]
        struct Out {
            text: String,
            none: Option<String>,
            some: Option<String>,
            raw: Box<RawValue>,
            map: BTreeMap<String, String>,
            list: Vec<E>,
            n: (u128, i8, f64, f32, char),
            bytes: Vec<u8>,
        }
        let long = format!("{}\"\\\n\u{2028}é", "w".repeat(100));
        let out = Out {
            text: long.clone(),
            none: None,
            some: Some(long.clone()),
            raw: RawValue::from_string(format!("[1.10, {:?}]", "r".repeat(80))).unwrap(),
            map: BTreeMap::from([(long.clone(), long.clone()), ("k".into(), "v".into())]),
            list: vec![
                E::Unit,
                E::New(long.clone()),
                E::Tuple(long.clone(), 7),
                E::Struct { s: long.clone() },
            ],
            n: (u128::MAX, -1, 0.1, 1.5, '"'),
            bytes: vec![0, 255],
        };
        assert_eq!(
            to_raw_value(&out).unwrap().get(),
            serde_json::to_string(&out).unwrap()
        );
    }
}
