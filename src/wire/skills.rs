//! The Skills extension (`io.modelcontextprotocol/skills`, SEP-2640) on the wire, shared by
//! both roles: the capability value, the skill entry with its file manifest, the results of
//! `skills/list`, `skills/get` and `resources/directory/read`, the `SKILL.md` frontmatter
//! reader, the naming rule and the digest format.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

/// The extension identifier, the key under `capabilities.extensions`.
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/skills";
/// Enumerates the skills a server serves.
pub const LIST_METHOD: &str = "skills/list";
/// One skill's entry by its `SKILL.md` URI, listed or not.
pub const GET_METHOD: &str = "skills/get";
/// The direct children of a directory resource (only with `directoryRead: true`).
pub const DIRECTORY_READ_METHOD: &str = "resources/directory/read";
/// The extension's request methods (the server routes them only while it serves a catalogue,
/// `resources/directory/read` only with `directoryRead`).
pub const METHODS: [&str; 3] = [LIST_METHOD, GET_METHOD, DIRECTORY_READ_METHOD];
/// The `mimeType` of a directory child that is itself a directory.
pub const DIRECTORY_MIME_TYPE: &str = "inode/directory";
/// The manifest's file name, at the root of every skill directory.
pub const MANIFEST: &str = "SKILL.md";
/// The `mimeType` of the `SKILL.md` resource.
pub const MANIFEST_MIME_TYPE: &str = "text/markdown";
/// The URI scheme a server SHOULD use for skill files.
pub const SCHEME: &str = "skill";
/// The `resources` value of a skill whose files cannot carry stable digests.
pub const DYNAMIC: &str = "dynamic";
/// The prefix of every digest: SHA-256 of the raw bytes, 64 lowercase hex characters follow.
pub const DIGEST_PREFIX: &str = "sha256:";
/// Interoperability limit: `resources` entries of one skill, `SKILL.md` included. Servers
/// SHOULD NOT exceed it; clients MUST accept skills up to it.
pub const MAX_FILES_PER_SKILL: usize = 512;
/// Interoperability limit: the sum of one skill's `size` values (16 MiB). Servers SHOULD NOT
/// exceed it; clients MUST accept skills up to it.
pub const MAX_SKILL_BYTES: u64 = 16 * 1024 * 1024;
/// The longest skill name of the Agent Skills naming rules.
pub const MAX_NAME_LEN: usize = 64;

/// `capabilities.extensions["io.modelcontextprotocol/skills"]`: the settings object itself, no
/// envelope; `{}` means no optional features.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillsCapability {
    /// Whether the server serves `resources/directory/read` (absent: `false`).
    #[serde(
        rename = "directoryRead",
        default,
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub directory_read: bool,
}

/// One file of a skill, with what a client needs to verify it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// The file's resource URI.
    pub uri: String,
    /// `sha256:` + 64 lowercase hex characters over the raw bytes.
    pub digest: String,
    /// The byte length of those same bytes.
    pub size: u64,
}

/// A skill's complete file list, or `"dynamic"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillResources {
    /// Every file of the skill exactly once, `SKILL.md` included.
    Files(Vec<FileEntry>),
    /// The server cannot publish stable digests.
    Dynamic,
}

impl Serialize for SkillResources {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            SkillResources::Files(files) => files.serialize(serializer),
            SkillResources::Dynamic => serializer.serialize_str(DYNAMIC),
        }
    }
}

impl<'de> Deserialize<'de> for SkillResources {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::String(s) if s == DYNAMIC => Ok(SkillResources::Dynamic),
            Value::Array(items) => serde_json::from_value(Value::Array(items))
                .map(SkillResources::Files)
                .map_err(D::Error::custom),
            other => Err(D::Error::custom(format!(
                "resources is neither an array of {{uri, digest, size}} nor \"dynamic\": {other}"
            ))),
        }
    }
}

/// One skill entry, as `skills/list` and `skills/get` carry it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillEntry {
    /// The URI of the skill's `SKILL.md`.
    pub uri: String,
    /// The `SKILL.md` frontmatter as a JSON object, verbatim and complete.
    pub frontmatter: Map<String, Value>,
    /// Every file of the skill, or `"dynamic"`.
    pub resources: SkillResources,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl SkillEntry {
    /// The frontmatter `name`, when a string.
    #[must_use]
    pub fn name(&self) -> Option<&str> {
        self.frontmatter.get("name").and_then(Value::as_str)
    }

    /// The frontmatter `description`, when a string.
    #[must_use]
    pub fn description(&self) -> Option<&str> {
        self.frontmatter.get("description").and_then(Value::as_str)
    }

    /// The manifest entry for `uri`, when the skill lists its files.
    #[must_use]
    pub fn file(&self, uri: &str) -> Option<&FileEntry> {
        match &self.resources {
            SkillResources::Files(files) => files.iter().find(|f| f.uri == uri),
            SkillResources::Dynamic => None,
        }
    }
}

/// The result of `skills/list` (without `resultType`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListSkillsResult {
    /// This page's entries.
    pub skills: Vec<SkillEntry>,
    /// The cursor of the next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Freshness in milliseconds.
    pub ttl_ms: u64,
    /// `public` or `private`.
    pub cache_scope: String,
}

/// The result of `skills/get` (without `resultType`); it never carries `nextCursor`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetSkillResult {
    /// The entry, echoing the requested URI.
    pub skill: SkillEntry,
    /// Freshness in milliseconds.
    pub ttl_ms: u64,
    /// `public` or `private`.
    pub cache_scope: String,
}

/// One child of a directory resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DirectoryChild {
    /// The child's URI (no trailing slash for a directory).
    pub uri: String,
    /// Its name (the last path segment).
    pub name: String,
    /// [`DIRECTORY_MIME_TYPE`] for a directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Byte length of a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

impl DirectoryChild {
    /// Whether the child is a directory.
    #[must_use]
    pub fn is_directory(&self) -> bool {
        self.mime_type.as_deref() == Some(DIRECTORY_MIME_TYPE)
    }
}

/// The result of `resources/directory/read` (without `resultType`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DirectoryReadResult {
    /// This page's direct children.
    pub resources: Vec<DirectoryChild>,
    /// The cursor of the next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Why a `SKILL.md` has no usable frontmatter.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrontmatterError {
    /// The text does not begin with a `---`-delimited block.
    #[error("SKILL.md does not begin with a ---delimited YAML frontmatter block")]
    NoBlock,
    /// The block is not YAML.
    #[error("SKILL.md frontmatter is not YAML: {0}")]
    Yaml(String),
    /// The block is YAML but not a mapping of string keys.
    #[error("SKILL.md frontmatter is not a mapping")]
    NotMapping,
    /// `name` or `description` is missing, empty or not a string.
    #[error("SKILL.md frontmatter has no non-empty {0}")]
    Missing(&'static str),
}

/// The YAML frontmatter of a `SKILL.md` as a JSON object: an optional byte-order mark, then
/// `---` on the first line, the block, and a line that is `---` (trailing blanks allowed)
/// followed by a line break or the end of the text. `name` and `description` must be
/// non-empty strings.
///
/// ```
/// use strict_mcp::wire::skills::parse_frontmatter;
/// let fm = parse_frontmatter("---\nname: pdf\ndescription: PDFs\n---\nbody\n").unwrap();
/// assert_eq!(serde_json::to_string(&fm).unwrap(), r#"{"description":"PDFs","name":"pdf"}"#);
/// ```
///
/// # Errors
/// [`FrontmatterError`] naming what is wrong.
pub fn parse_frontmatter(text: &str) -> Result<Map<String, Value>, FrontmatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or(FrontmatterError::NoBlock)?;
    let block = closing_delimiter(rest).ok_or(FrontmatterError::NoBlock)?;
    let value: Value =
        serde_yaml_ng::from_str(block).map_err(|e| FrontmatterError::Yaml(e.to_string()))?;
    let Value::Object(map) = value else {
        return Err(FrontmatterError::NotMapping);
    };
    for field in ["name", "description"] {
        match map.get(field) {
            Some(Value::String(s)) if !s.is_empty() => {}
            _ => return Err(FrontmatterError::Missing(field)),
        }
    }
    Ok(map)
}

/// The block before the first line that is `---` (blanks after it allowed), when that line
/// ends the text or is followed by a line break.
fn closing_delimiter(rest: &str) -> Option<&str> {
    let mut start = 0;
    loop {
        let line_end = rest[start..].find('\n').map_or(rest.len(), |i| start + i);
        let line = rest[start..line_end].trim_end_matches('\r');
        if let Some(tail) = line.strip_prefix("---") {
            if tail.bytes().all(|b| b == b' ' || b == b'\t') {
                let block = &rest[..start];
                return Some(
                    block
                        .strip_suffix('\n')
                        .map_or(block, |b| b.strip_suffix('\r').unwrap_or(b)),
                );
            }
        }
        if line_end >= rest.len() {
            return None;
        }
        start = line_end + 1;
    }
}

/// The Agent Skills naming rule: 1–[`MAX_NAME_LEN`] characters of `a-z0-9-`, no hyphen at the
/// start, at the end or doubled.
///
/// ```
/// use strict_mcp::wire::skills::is_valid_name;
/// assert!(is_valid_name("pdf-processing"));
/// assert!(!is_valid_name("pdf--processing") && !is_valid_name("-pdf") && !is_valid_name("Pdf"));
/// ```
#[must_use]
pub fn is_valid_name(name: &str) -> bool {
    (1..=MAX_NAME_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// `sha256:` + 64 lowercase hex characters over `bytes`.
///
/// ```
/// use strict_mcp::wire::skills::digest;
/// assert_eq!(digest(b""), "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
/// ```
#[must_use]
pub fn digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let mut out = String::with_capacity(DIGEST_PREFIX.len() + 64);
    out.push_str(DIGEST_PREFIX);
    for b in hash {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// Whether `s` is `sha256:` + exactly 64 lowercase hex characters.
#[must_use]
pub fn is_digest(s: &str) -> bool {
    s.strip_prefix(DIGEST_PREFIX).is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// The skill root of a manifest URI: the URI without `/SKILL.md` (no trailing slash).
#[must_use]
pub fn skill_root(manifest_uri: &str) -> Option<&str> {
    manifest_uri
        .strip_suffix(MANIFEST)
        .and_then(|r| r.strip_suffix('/'))
        .filter(|r| !r.is_empty() && !r.ends_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn n13_capability_is_the_settings_object_itself() {
        assert_eq!(
            serde_json::to_string(&SkillsCapability::default()).unwrap(),
            "{}"
        );
        assert_eq!(
            serde_json::to_string(&SkillsCapability {
                directory_read: true
            })
            .unwrap(),
            r#"{"directoryRead":true}"#
        );
        let read: SkillsCapability = serde_json::from_str(r#"{"x":1}"#).unwrap();
        assert!(!read.directory_read);
    }

    #[test]
    fn n22_resources_is_an_array_or_dynamic_and_nothing_else() {
        let files: SkillResources =
            serde_json::from_str(r#"[{"uri":"skill://a/SKILL.md","digest":"sha256:00","size":3}]"#)
                .unwrap();
        assert_eq!(
            serde_json::to_string(&files).unwrap(),
            r#"[{"uri":"skill://a/SKILL.md","digest":"sha256:00","size":3}]"#
        );
        assert_eq!(
            serde_json::from_str::<SkillResources>(r#""dynamic""#).unwrap(),
            SkillResources::Dynamic
        );
        assert_eq!(
            serde_json::to_string(&SkillResources::Dynamic).unwrap(),
            r#""dynamic""#
        );
        for bad in [
            r#""static""#,
            "null",
            "{}",
            r#"[{"uri":"u","digest":"d","size":-1}]"#,
        ] {
            assert!(
                serde_json::from_str::<SkillResources>(bad).is_err(),
                "{bad}"
            );
        }
        let missing = serde_json::from_str::<SkillEntry>(
            r#"{"uri":"skill://a/SKILL.md","frontmatter":{"name":"a","description":"d"}}"#,
        );
        assert!(missing.is_err());
    }

    #[test]
    fn n16_frontmatter_block_rules() {
        let fm = parse_frontmatter(
            "\u{feff}---\r\nname: a\r\ndescription: \"b: c\"\r\nmetadata:\r\n  k: 1\r\n---  \r\nbody",
        )
        .unwrap();
        assert_eq!(
            serde_json::to_string(&fm).unwrap(),
            r#"{"description":"b: c","metadata":{"k":1},"name":"a"}"#
        );
        // Closing delimiter at the very end of the text.
        assert!(parse_frontmatter("---\nname: a\ndescription: b\n---").is_ok());
        assert_eq!(
            parse_frontmatter("name: a\n"),
            Err(FrontmatterError::NoBlock)
        );
        assert_eq!(
            parse_frontmatter("---\nname: a\ndescription: b\n"),
            Err(FrontmatterError::NoBlock)
        );
        // `----` is not the delimiter.
        assert_eq!(
            parse_frontmatter("---\nname: a\ndescription: b\n----\n"),
            Err(FrontmatterError::NoBlock)
        );
        assert_eq!(
            parse_frontmatter("---\n- a\n---\n"),
            Err(FrontmatterError::NotMapping)
        );
        assert_eq!(
            parse_frontmatter("---\nname: a\ndescription: ''\n---\n"),
            Err(FrontmatterError::Missing("description"))
        );
        assert_eq!(
            parse_frontmatter("---\nname: 7\ndescription: d\n---\n"),
            Err(FrontmatterError::Missing("name"))
        );
        assert!(matches!(
            parse_frontmatter("---\nname: [\n---\n"),
            Err(FrontmatterError::Yaml(_))
        ));
    }

    #[test]
    fn n17_naming_rule_at_the_length_bound_and_one_past() {
        let at = "a".repeat(MAX_NAME_LEN);
        assert!(is_valid_name(&at));
        assert!(!is_valid_name(&format!("{at}a")));
        assert!(!is_valid_name(""));
        assert!(is_valid_name("a1-b2"));
        for bad in ["a_b", "a.b", "a--b", "a-", "-a", "A"] {
            assert!(!is_valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn n22_digest_format() {
        let d = digest(b"abc");
        assert_eq!(
            d,
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(is_digest(&d));
        assert!(!is_digest(&d.to_uppercase()));
        assert!(!is_digest(&d[..d.len() - 1]));
        assert!(!is_digest(&format!("{d}0")));
        assert!(!is_digest(&d.replacen("sha256:", "sha512:", 1)));
    }

    #[test]
    fn n17_skill_root_strips_the_manifest() {
        assert_eq!(skill_root("skill://a/b/SKILL.md"), Some("skill://a/b"));
        assert_eq!(skill_root("skill://a/bSKILL.md"), None);
        assert_eq!(skill_root("/SKILL.md"), None);
        assert_eq!(skill_root("skill://a//SKILL.md"), None);
    }
}
