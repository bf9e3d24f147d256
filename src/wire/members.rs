//! The top-level members of a JSON object whose text is already valid JSON (a `RawValue`),
//! split without validating it again.
//!
//! A request's `params` reach the server as a `RawValue`: either the ingress scan validated
//! them to the last byte (refusing repeated names at every depth, O3), or serde_json did when
//! the `RawValue` was made. Reading them member by member with serde_json parsed every byte
//! once more, numbers and all, and again for `_meta` inside them; under callgrind that was
//! about 10 k instructions of the 70 k per HTTP `tools/call` and a third of the decode cost
//! of a large argument (issue #23). This splitter only finds where each member's value ends:
//! strings are skipped to their next `"` or `\` by `memchr2`, everything else byte by byte
//! counting brackets. Each value is handed on as a borrowed `RawValue`
//! ([`super::raw::borrowed_unchecked`]: a member of valid JSON is valid JSON).
//!
//! Text that is not valid JSON cannot be a `RawValue`; should some still arrive, the splitter
//! never panics and never reads out of bounds: it answers `None` for anything it does not
//! expect.

use std::borrow::Cow;

use serde_json::value::RawValue;

/// An object's members in order of appearance: names unescaped only when they have escapes,
/// values as their exact text. Looked up by a scan from the end, so a repeated name reads as
/// its last value, as in a map (the codec refuses repeats, O3; a `RawValue` made elsewhere
/// may hold them). Objects on the wire have few members; a lookup is linear in them and no
/// member is looked up more than a fixed number of times per request.
#[derive(Debug, Clone, Default)]
pub(crate) struct Members<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'a> Members<'a> {
    /// The members of `raw`, or `None` when it is not an object.
    pub(crate) fn of(raw: &'a RawValue) -> Option<Members<'a>> {
        split(raw.get())
    }

    /// The value of the member `key` (the last one, if repeated).
    pub(crate) fn get(&self, key: &str) -> Option<&&'a RawValue> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Every member, in order of appearance.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &'a RawValue)> + '_ {
        self.0.iter().map(|(k, v)| (k.as_ref(), *v))
    }

    /// How many members (repeats counted).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }
}

/// Members most request objects fit in without the list growing (`tools/call`: `name`,
/// `arguments`, `_meta`, and a continuation's two), so one allocation holds them.
const MEMBERS_CAPACITY: usize = 6;

fn split(text: &str) -> Option<Members<'_>> {
    let b = text.as_bytes();
    let mut i = ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i = ws(b, i + 1);
    let mut members = Vec::with_capacity(MEMBERS_CAPACITY);
    if b.get(i) == Some(&b'}') {
        return Some(Members(members));
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let (end, escaped) = string_end(b, i + 1)?;
        let key = if escaped {
            Cow::Owned(serde_json::from_str::<String>(text.get(i..=end)?).ok()?)
        } else {
            Cow::Borrowed(text.get(i + 1..end)?)
        };
        i = ws(b, end + 1);
        if b.get(i) != Some(&b':') {
            return None;
        }
        let start = ws(b, i + 1);
        i = value_end(b, start)?;
        let value = super::raw::borrowed_unchecked(text.get(start..i)?).ok()?;
        members.push((key, value));
        i = ws(b, i);
        match b.get(i) {
            Some(b',') => i = ws(b, i + 1),
            Some(b'}') => return Some(Members(members)),
            _ => return None,
        }
    }
}

/// The offset of the first byte at or after `i` that is not JSON whitespace.
#[inline]
fn ws(b: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = b.get(i) {
        i += 1;
    }
    i
}

/// From the first byte of a string's body: the offset of its closing quote, and whether the
/// body has escapes.
///
/// Only `"` and `\` end a stretch here: the text is valid JSON, so a string holds no raw
/// control byte (the ingress scan and serde_json refused those), and `memchr2` finds the two
/// bytes 32 at a time. (The run finder the scan and the escaper need, which also stops at
/// control bytes, took 2.8 instructions per byte of a large argument here; issue #23.)
#[inline]
fn string_end(b: &[u8], mut i: usize) -> Option<(usize, bool)> {
    let mut escaped = false;
    loop {
        i += memchr::memchr2(b'"', b'\\', b.get(i..)?)?;
        match b.get(i)? {
            b'"' => return Some((i, escaped)),
            // Skip the byte after the backslash; a `\u` escape's four hex digits are plain.
            _ => {
                escaped = true;
                i += 2;
            }
        }
    }
}

/// From the first byte of a value: the offset just past it.
fn value_end(b: &[u8], i: usize) -> Option<usize> {
    match b.get(i)? {
        b'"' => string_end(b, i + 1).map(|(end, _)| end + 1),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = i;
            loop {
                match b.get(i)? {
                    b'"' => i = string_end(b, i + 1)?.0,
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        // A number or a literal runs to the next delimiter.
        _ => {
            let len = b[i..]
                .iter()
                .position(|c| matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                .unwrap_or(b.len() - i);
            (len > 0).then_some(i + len)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    /// What serde_json reads as the members, for comparison: names and exact value texts,
    /// in order, repeats kept.
    fn by_serde(text: &str) -> Option<Vec<(String, String)>> {
        struct Ordered(Vec<(String, Box<RawValue>)>);
        impl<'de> serde::Deserialize<'de> for Ordered {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> serde::de::Visitor<'de> for V {
                    type Value = Ordered;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str("an object")
                    }
                    fn visit_map<A: serde::de::MapAccess<'de>>(
                        self,
                        mut map: A,
                    ) -> Result<Ordered, A::Error> {
                        let mut out = Vec::new();
                        while let Some(entry) = map.next_entry()? {
                            out.push(entry);
                        }
                        Ok(Ordered(out))
                    }
                }
                d.deserialize_map(V)
            }
        }
        let members = serde_json::from_str::<Ordered>(text).ok()?.0;
        Some(
            members
                .into_iter()
                .map(|(k, v)| (k, v.get().to_owned()))
                .collect(),
        )
    }

    fn by_split(text: &str) -> Option<Vec<(String, String)>> {
        let raw = raw(text);
        let members = Members::of(&raw)?;
        Some(
            members
                .iter()
                .map(|(k, v)| (k.to_owned(), v.get().to_owned()))
                .collect(),
        )
    }

    /// Every shape a member's value can take, with whitespace everywhere JSON allows it,
    /// escaped names, strings holding brackets, quotes and commas, and numbers at the end of
    /// a container: the split agrees with serde_json member for member, byte for byte.
    #[test]
    fn splits_as_serde_json_reads() {
        let long = "x".repeat(100);
        let cases = [
            "{}".to_owned(),
            " { } ".to_owned(),
            r#"{"a":1}"#.to_owned(),
            "{\n\t\"a\" :\r 1.5e-3 , \"b\":-0}".to_owned(),
            r#"{"name":"echo","arguments":{"text":"hi"},"_meta":{"k":[1,{"x":null}]}}"#.to_owned(),
            r#"{"s":"a\"b\\c}]{[,","t":true,"f":false,"n":null}"#.to_owned(),
            r#"{"\u0061b\n":"\ud83d\ude00","q\"":[]}"#.to_owned(),
            r#"{"deep":[[[[{"a":["}"]}]]]],"after":1e400}"#.to_owned(),
            format!(r#"{{"long":"{long}\"{long}","n":12345678901234567890123}}"#),
            r#"{"a":1,"a":2}"#.to_owned(),
        ];
        for text in &cases {
            assert_eq!(by_split(text), by_serde(text), "{text}");
            assert!(by_split(text).is_some(), "{text}");
        }
    }

    /// JSON text of any shape: escaped and long strings (past a run step), big and
    /// exponent numbers, nesting, and whitespace wherever JSON allows it.
    fn json_text() -> impl Strategy<Value = String> {
        let ws = || prop::sample::select(vec!["", " ", "\n\t", "\r \n"]);
        let string = prop_oneof![
            any::<String>().prop_map(|s| serde_json::to_string(&s).unwrap()),
            "[a-z\\[\\]{},:]{0,40}".prop_map(|s| format!("\"{s}\\\"\\u00e9\\\\{s}\"")),
        ];
        let leaf = prop_oneof![
            Just("null".to_owned()),
            Just("true".to_owned()),
            any::<i64>().prop_map(|n| n.to_string()),
            "-?(0|[1-9][0-9]{0,30})(\\.[0-9]{1,4})?([eE][+-]?[0-9]{1,3})?",
            string.clone(),
        ];
        leaf.prop_recursive(4, 40, 5, move |inner| {
            let member = (string.clone(), ws(), ws(), inner.clone(), ws());
            prop_oneof![
                prop::collection::vec((ws(), inner, ws()), 0..5).prop_map(|items| {
                    let items: Vec<String> = items
                        .into_iter()
                        .map(|(a, v, b)| format!("{a}{v}{b}"))
                        .collect();
                    format!("[{}]", items.join(","))
                }),
                prop::collection::vec(member, 0..5).prop_map(|members| {
                    let members: Vec<String> = members
                        .into_iter()
                        .map(|(k, a, b, v, c)| format!("{a}{k}{b}:{c}{v}{a}"))
                        .collect();
                    format!("{{{}}}", members.join(","))
                }),
            ]
        })
    }

    proptest! {
        /// Any object serde_json reads, the split reads the same, member for member and byte
        /// for byte; anything else that is JSON is `None`.
        #[test]
        fn any_json_splits_as_serde_json_reads(text in json_text()) {
            prop_assert_eq!(by_split(&text), by_serde(&text));
        }
    }

    /// At the list's first capacity and one past it (the list grows), every member is kept.
    #[test]
    fn at_members_capacity_and_one_past() {
        for n in [MEMBERS_CAPACITY, MEMBERS_CAPACITY + 1] {
            let text = format!(
                "{{{}}}",
                (0..n)
                    .map(|i| format!("\"k{i}\":{i}"))
                    .collect::<Vec<_>>()
                    .join(",")
            );
            let raw = raw(&text);
            let members = Members::of(&raw).unwrap();
            assert_eq!(members.len(), n);
            assert_eq!(
                members.get(&format!("k{}", n - 1)).unwrap().get(),
                (n - 1).to_string()
            );
        }
    }

    /// Values are borrowed from the object's text, not copied.
    #[test]
    fn values_borrow_the_text() {
        let raw = raw(r#"{"arguments":{"text":"hi"}}"#);
        let members = Members::of(&raw).unwrap();
        let value = members.get("arguments").unwrap().get();
        assert_eq!(value, r#"{"text":"hi"}"#);
        let offset = value.as_ptr() as usize - raw.get().as_ptr() as usize;
        assert_eq!(offset, 13);
    }

    /// Anything but an object is `None`; a repeated name reads as its last value.
    #[test]
    fn non_objects_and_repeats() {
        for text in ["[]", "\"{}\"", "1", "null", " [ {} ] "] {
            assert!(Members::of(&raw(text)).is_none(), "{text}");
        }
        let raw = raw(r#"{"a":1,"b":2,"a":3}"#);
        let members = Members::of(&raw).unwrap();
        assert_eq!(members.get("a").unwrap().get(), "3");
        assert_eq!(members.len(), 3);
        assert!(members.get("c").is_none());
    }

    /// O121, issue #23: strings whose stretches end just before, at and just past 16 and 32
    /// bytes (the run finder's step and `memchr2`'s vector), with a quote, an escape or
    /// nothing there, in names and values, split as serde_json reads them.
    #[test]
    fn stretches_around_16_and_32_bytes_split_as_serde_json_reads() {
        for len in (14..=18).chain(30..=34) {
            for tail in ["", "\\\"", "\\n", "\\u00e9x", "\\\\"] {
                let body = format!("{}{tail}{}", "a".repeat(len), "b".repeat(len));
                for text in [
                    format!(r#"{{"{body}":1,"k":"{body}"}}"#),
                    format!(r#"{{"k":["{body}",{{"m":"{body}"}}],"z":"{body}"}}"#),
                ] {
                    assert_eq!(by_split(&text), by_serde(&text), "{text}");
                    assert!(by_split(&text).is_some(), "{text}");
                }
            }
        }
    }

    /// Text that is not JSON (it cannot come from a `RawValue`, but the splitter must not
    /// trust that with a panic): every prefix of an object and a few broken ones give `None`
    /// or a split, never a panic or an out-of-bounds read.
    #[test]
    fn broken_text_never_panics() {
        let text = r#"{"a":[1,{"b":"c\"}"}],"d":"\u00e9","e":tru}"#;
        for end in 0..text.len() {
            let _ = split(&text[..end]);
        }
        for broken in [
            "{\"a\"",
            "{\"a\":",
            "{\"a\":}",
            "{\"a\" 1}",
            "{\"a\":1,}",
            "{\"a\":\"\u{1}\"}",
            "{\"a\":\"x\\",
            "{\"a\":]}",
            "{1:2}",
            "{\"a\":1 \"b\":2}",
        ] {
            let _ = split(broken);
        }
        assert!(split("{\"a\":1,}").is_none());
        assert!(split("{\"a\" 1}").is_none());
    }
}
