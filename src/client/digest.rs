//! Snapshot digests: a stable identity for what a server published.
//!
//! A host that caches or compares discovery, tools, resources, resource-templates,
//! resource-read or prompts snapshots needs one value that changes whenever anything the server
//! sent changes, and only then. [`digest_text`] and [`digest_value`] compute it.
//!
//! # The canonical form (version 1)
//!
//! So that another implementation can reproduce a digest, the hashed bytes are pinned here:
//!
//! ```text
//! digest    = lowercase-hex( SHA-256( prefix || canonical(snapshot) ) )
//! prefix    = "strict-mcp/snapshot/v1" 0x00 <kind> 0x00
//! kind      = "discovery" | "tools" | "resources" | "resource-templates"
//!           | "resource-read" | "prompts"
//! ```
//!
//! The prefix separates digest versions and snapshot kinds, so the same text hashed as two
//! kinds (or under a future version) never collides.
//!
//! `snapshot` is the JSON value as the server sent it:
//! - **discovery** and **resource-read**: the `result` object of the response;
//! - **tools**, **resources**, **resource-templates**, **prompts**: a JSON array of the
//!   `result` objects of every page, in the order they were fetched (a single-page list is a
//!   one-element array). Pages are kept whole rather than merged into one entry list, because
//!   each page carries its own `ttlMs`, `cacheScope`, `nextCursor` and `_meta`: merging would
//!   have to pick or drop some of them, and the digest must cover all of them losslessly. The
//!   digest therefore identifies exactly what was fetched, paging included.
//!
//! `canonical(value)` is RFC 8785 (JCS) with one deliberate change for numbers:
//! - no whitespace anywhere;
//! - object members sorted by their names compared as sequences of UTF-16 code units (after
//!   unescaping); a name that occurs twice in one object is refused;
//! - strings written with only these escapes: `\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, and
//!   `\u00xx` (lowercase hex) for the other characters below U+0020; everything else, non-ASCII
//!   included, is written as its UTF-8 bytes (so `"\u0041"` becomes `"A"`);
//! - `true`, `false`, `null` as themselves;
//! - **numbers as their exact text on the wire** (`1.50` stays `1.50`, `1.0` and `1` differ,
//!   `18446744073709551617` is kept): MCP passes values through losslessly, so a change in a
//!   number's text is a change in what the server published, and no number ever goes through
//!   `f64` (which would round big integers).
//!
//! # Bounds
//!
//! The snapshot's encoded text is checked against [`MAX_SNAPSHOT_BYTES`] before it is decoded
//! at all; nesting is bounded by [`MAX_SNAPSHOT_DEPTH`]. Both fail with a typed
//! [`DigestError`]. Canonicalising reads each container's text once per enclosing level (serde
//! keeps number texts only through `RawValue`), so work is bounded by size times depth.
//!
//! ```
//! use strict_mcp::client::digest::{digest_text, SnapshotKind};
//!
//! let a = digest_text(SnapshotKind::Tools, r#"[{"tools":[],"ttlMs":0,"cacheScope":"public","resultType":"complete"}]"#).unwrap();
//! let b = digest_text(SnapshotKind::Tools, r#"[ { "resultType":"complete", "cacheScope":"public", "ttlMs":0, "tools":[] } ]"#).unwrap();
//! assert_eq!(a, b);
//! assert_eq!(a.to_string().len(), 64);
//! ```

use std::fmt;
use std::io;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use sha2::{Digest as _, Sha256};

/// Largest encoded snapshot accepted (8 MiB), checked before any decoding.
///
/// Threat: a hostile or runaway server whose snapshot would make canonicalisation (which holds
/// the whole text plus its canonical copy) exhaust client memory or CPU.
pub const MAX_SNAPSHOT_BYTES: usize = 8 * 1024 * 1024;

/// Deepest nesting of arrays and objects in a snapshot; the outermost value is level 1.
///
/// Threat: stack exhaustion in the recursive canonicaliser. 64 is the wire's own bound
/// ([`crate::wire::limits::MAX_DEPTH`]): a result sits one level below its message, and a list
/// snapshot adds one array level back, so every snapshot of legal messages fits.
pub const MAX_SNAPSHOT_DEPTH: usize = crate::wire::limits::MAX_DEPTH;

/// The version tag of the canonical form, the first part of the hashed prefix.
pub const DIGEST_VERSION: &str = "strict-mcp/snapshot/v1";

/// Which kind of snapshot is hashed; its wire name goes into the prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SnapshotKind {
    /// A `server/discover` result (an object).
    Discovery,
    /// The pages of a `tools/list` (an array of result objects).
    Tools,
    /// The pages of a `resources/list` (an array of result objects).
    Resources,
    /// The pages of a `resources/templates/list` (an array of result objects).
    ResourceTemplates,
    /// A `resources/read` result (an object).
    ResourceRead,
    /// The pages of a `prompts/list` (an array of result objects).
    Prompts,
}

impl SnapshotKind {
    /// Every kind, for callers that iterate.
    pub const ALL: [SnapshotKind; 6] = [
        SnapshotKind::Discovery,
        SnapshotKind::Tools,
        SnapshotKind::Resources,
        SnapshotKind::ResourceTemplates,
        SnapshotKind::ResourceRead,
        SnapshotKind::Prompts,
    ];

    /// The name written into the prefix.
    pub const fn wire_name(self) -> &'static str {
        match self {
            SnapshotKind::Discovery => "discovery",
            SnapshotKind::Tools => "tools",
            SnapshotKind::Resources => "resources",
            SnapshotKind::ResourceTemplates => "resource-templates",
            SnapshotKind::ResourceRead => "resource-read",
            SnapshotKind::Prompts => "prompts",
        }
    }

    /// Whether the snapshot is the array of a list's pages (else a single result object).
    pub const fn is_list(self) -> bool {
        !matches!(self, SnapshotKind::Discovery | SnapshotKind::ResourceRead)
    }

    /// The domain-separation prefix: `strict-mcp/snapshot/v1 \0 <kind> \0`.
    pub fn prefix(self) -> Vec<u8> {
        let mut prefix = Vec::with_capacity(DIGEST_VERSION.len() + 2 + 20);
        prefix.extend_from_slice(DIGEST_VERSION.as_bytes());
        prefix.push(0);
        prefix.extend_from_slice(self.wire_name().as_bytes());
        prefix.push(0);
        prefix
    }
}

impl fmt::Display for SnapshotKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.wire_name())
    }
}

/// Why a snapshot could not be digested. Messages never contain snapshot bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DigestError {
    /// The encoded snapshot exceeds [`MAX_SNAPSHOT_BYTES`]; it was not decoded.
    #[error("snapshot of {actual} bytes exceeds the {limit}-byte limit")]
    TooLarge {
        /// The bound.
        limit: usize,
        /// The encoded size (a lower bound when encoding stopped at the bound).
        actual: usize,
    },
    /// The text is not exactly one JSON value (or a string holds a lone surrogate).
    #[error("snapshot is not valid JSON")]
    Syntax,
    /// Arrays/objects nest deeper than [`MAX_SNAPSHOT_DEPTH`].
    #[error("snapshot nests deeper than {limit} levels")]
    TooDeep {
        /// The bound.
        limit: usize,
    },
    /// An object names the same member twice (compared after unescaping).
    #[error("duplicate member name in a snapshot object")]
    DuplicateKey,
    /// The snapshot is not the shape its kind requires (an object, or a non-empty array of
    /// page objects for list kinds).
    #[error("a {kind} snapshot must be {expected}")]
    Shape {
        /// The kind asked for.
        kind: SnapshotKind,
        /// What that kind requires.
        expected: &'static str,
    },
    /// The typed value could not be serialised.
    #[error("snapshot could not be encoded: {0}")]
    Encode(String),
}

/// A snapshot digest: SHA-256 over the prefix and the canonical form.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest([u8; 32]);

impl Digest {
    /// The 32 raw bytes.
    pub const fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Display for Digest {
    /// 64 lowercase hex characters.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in self.0 {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({self})")
    }
}

/// Digests a snapshot given as its exact JSON text (the borrowed form).
pub fn digest_text(kind: SnapshotKind, text: &str) -> Result<Digest, DigestError> {
    let canonical = canonical_snapshot(kind, text)?;
    let mut hasher = Sha256::new();
    hasher.update(kind.prefix());
    hasher.update(canonical.as_bytes());
    Ok(Digest(hasher.finalize().into()))
}

/// Digests a typed snapshot (the owned form), e.g. a `wire::DiscoverResult` or a
/// `Vec<wire::ListToolsResult>` of pages; `&RawValue` pages serialise as their exact text.
///
/// The value is encoded into a buffer that stops at [`MAX_SNAPSHOT_BYTES`], then digested as
/// [`digest_text`] would digest that encoding, so both forms of one snapshot agree.
pub fn digest_value<T: Serialize + ?Sized>(
    kind: SnapshotKind,
    value: &T,
) -> Result<Digest, DigestError> {
    let mut sink = BoundedSink::default();
    if let Err(err) = serde_json::to_writer(&mut sink, value) {
        if let Some(actual) = sink.overflowed_at {
            return Err(DigestError::TooLarge {
                limit: MAX_SNAPSHOT_BYTES,
                actual,
            });
        }
        return Err(DigestError::Encode(err.to_string()));
    }
    // serde_json writes valid UTF-8; a failure here would be a serialiser bug, reported typed.
    let text = String::from_utf8(sink.buf).map_err(|_| DigestError::Syntax)?;
    digest_text(kind, &text)
}

/// The canonical form of a snapshot after the size and shape checks (no prefix).
///
/// Exposed so hosts and other implementations can check their bytes against ours.
pub fn canonical_snapshot(kind: SnapshotKind, text: &str) -> Result<String, DigestError> {
    if text.len() > MAX_SNAPSHOT_BYTES {
        return Err(DigestError::TooLarge {
            limit: MAX_SNAPSHOT_BYTES,
            actual: text.len(),
        });
    }
    let root: &RawValue = serde_json::from_str(text).map_err(map_json_error)?;
    check_shape(kind, root)?;
    let mut out = String::with_capacity(root.get().len());
    write_canonical(root, 1, &mut out)?;
    Ok(out)
}

/// The canonical form of any JSON text (no kind, no prefix, no shape check), bounded alike.
pub fn canonical_json(text: &str) -> Result<String, DigestError> {
    if text.len() > MAX_SNAPSHOT_BYTES {
        return Err(DigestError::TooLarge {
            limit: MAX_SNAPSHOT_BYTES,
            actual: text.len(),
        });
    }
    let root: &RawValue = serde_json::from_str(text).map_err(map_json_error)?;
    let mut out = String::with_capacity(root.get().len());
    write_canonical(root, 1, &mut out)?;
    Ok(out)
}

fn check_shape(kind: SnapshotKind, root: &RawValue) -> Result<(), DigestError> {
    let text = root.get();
    if !kind.is_list() {
        return if text.starts_with('{') {
            Ok(())
        } else {
            Err(DigestError::Shape {
                kind,
                expected: "a result object",
            })
        };
    }
    let expected = "a non-empty array of page result objects";
    if !text.starts_with('[') {
        return Err(DigestError::Shape { kind, expected });
    }
    let pages: Vec<&RawValue> = serde_json::from_str(text).map_err(map_json_error)?;
    if pages.is_empty() || pages.iter().any(|page| !page.get().starts_with('{')) {
        return Err(DigestError::Shape { kind, expected });
    }
    Ok(())
}

/// serde_json's own nesting guard (128) lies above ours, so it only fires for inputs far past
/// our bound; it is still a depth failure, not a syntax one.
fn map_json_error(err: serde_json::Error) -> DigestError {
    if err.to_string().starts_with("recursion limit exceeded") {
        DigestError::TooDeep {
            limit: MAX_SNAPSHOT_DEPTH,
        }
    } else {
        DigestError::Syntax
    }
}

/// Writes the canonical form of one value whose text serde_json has already validated.
///
/// `depth` is the nesting level this value would open if it is a container.
fn write_canonical(value: &RawValue, depth: usize, out: &mut String) -> Result<(), DigestError> {
    let text = value.get();
    match text.as_bytes().first() {
        Some(b'{') => {
            if depth > MAX_SNAPSHOT_DEPTH {
                return Err(DigestError::TooDeep {
                    limit: MAX_SNAPSHOT_DEPTH,
                });
            }
            let Members(mut members) = serde_json::from_str(text).map_err(map_json_error)?;
            members.sort_by(|(a, _), (b, _)| a.encode_utf16().cmp(b.encode_utf16()));
            if members.windows(2).any(|pair| pair[0].0 == pair[1].0) {
                return Err(DigestError::DuplicateKey);
            }
            out.push('{');
            for (i, (name, member)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(name, out);
                out.push(':');
                write_canonical(member, depth + 1, out)?;
            }
            out.push('}');
        }
        Some(b'[') => {
            if depth > MAX_SNAPSHOT_DEPTH {
                return Err(DigestError::TooDeep {
                    limit: MAX_SNAPSHOT_DEPTH,
                });
            }
            let items: Vec<&RawValue> = serde_json::from_str(text).map_err(map_json_error)?;
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, depth + 1, out)?;
            }
            out.push(']');
        }
        Some(b'"') => {
            let string: String = serde_json::from_str(text).map_err(map_json_error)?;
            write_string(&string, out);
        }
        // Numbers keep their exact wire text; literals are their own canonical form. serde_json
        // has validated the token and the raw slice carries no surrounding whitespace.
        Some(_) => out.push_str(text),
        None => return Err(DigestError::Syntax),
    }
    Ok(())
}

/// RFC 8785 string serialisation: the short escapes, `\u00xx` for other controls, raw UTF-8.
fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                out.push_str(&format!("\\u{:04x}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// An object's members in document order, names unescaped, values as their raw text.
struct Members<'a>(Vec<(String, &'a RawValue)>);

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MembersVisitor;

        impl<'de> Visitor<'de> for MembersVisitor {
            type Value = Members<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut members = Vec::new();
                while let Some(name) = map.next_key::<String>()? {
                    let value: &'de RawValue = map.next_value()?;
                    members.push((name, value));
                }
                Ok(Members(members))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, _seq: A) -> Result<Self::Value, A::Error> {
                Err(de::Error::custom("expected an object"))
            }
        }

        deserializer.deserialize_map(MembersVisitor)
    }
}

/// A write sink that refuses to grow past [`MAX_SNAPSHOT_BYTES`], so encoding an oversized
/// typed snapshot costs at most the bound in memory ("encode, then pre-check").
#[derive(Default)]
struct BoundedSink {
    buf: Vec<u8>,
    /// The length the buffer would have reached when it refused a write.
    overflowed_at: Option<usize>,
}

impl io::Write for BoundedSink {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let wanted = self.buf.len().saturating_add(data.len());
        if wanted > MAX_SNAPSHOT_BYTES {
            self.overflowed_at = Some(wanted);
            return Err(io::Error::other("snapshot exceeds the size limit"));
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
