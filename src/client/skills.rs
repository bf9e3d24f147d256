//! The Skills extension on the client (SEP-2640): `skills/list` with pagination,
//! `skills/get`, `resources/directory/read`, and the verification a host owes a skill
//! before it acts on one.
//!
//! - Nothing is sent unless the server declared the extension in discovery (and
//!   `directoryRead: true` for directory reads); the methods answer
//!   [`SkillError::NotDeclared`] without a request.
//! - Listing never reads a file (no prefetch): the registry a host builds comes from the
//!   entries alone. [`Client::load_skill`] reads the `SKILL.md` when the host loads the
//!   skill, and [`Client::read_skill_file`] a supporting file when the host reads it.
//! - Every file read is checked against the held entry: only listed URIs are read, the byte
//!   length is compared before the digest is computed, the digest is SHA-256 of the raw
//!   bytes, and the fetched `SKILL.md`'s frontmatter is compared field by field with the
//!   entry's. Content that fails is never returned: the caller gets a [`SkillError`] and
//!   recovers by getting the entry again ([`Client::get_skill`]).

use base64::Engine as _;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::client::connection::{CallOptions, Client};
use crate::client::error::{ClientError, InvalidResult, PaginationError};
use crate::client::methods::{MAX_LIST_ITEMS, MAX_LIST_PAGES};
use crate::wire::skills::{
    digest, is_digest, parse_frontmatter, skill_root, DirectoryReadResult, FileEntry,
    FrontmatterError, GetSkillResult, ListSkillsResult, SkillEntry, SkillResources,
    SkillsCapability, DIRECTORY_READ_METHOD, EXTENSION_ID, GET_METHOD, LIST_METHOD,
};

pub use crate::client::error::SkillError;

/// A skill whose `SKILL.md` passed verification: the held entry, the manifest's text and
/// its parsed frontmatter. Supporting files are read through it ([`Client::read_skill_file`]).
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedSkill {
    /// The entry the skill was verified against (the held entry).
    pub entry: SkillEntry,
    /// The verified `SKILL.md` text.
    pub manifest: String,
    /// Its frontmatter (equal to the entry's).
    pub frontmatter: Map<String, Value>,
}

impl LoadedSkill {
    /// The URI of the directory holding the `SKILL.md`, which relative references in it
    /// resolve against.
    #[must_use]
    pub fn root(&self) -> &str {
        skill_root(&self.entry.uri).unwrap_or(&self.entry.uri)
    }

    /// `reference` (a relative path such as `references/FORMS.md`) resolved against
    /// [`LoadedSkill::root`]; `None` when it is absolute, empty or climbs out of the skill.
    #[must_use]
    pub fn resolve(&self, reference: &str) -> Option<String> {
        let reference = reference.strip_prefix("./").unwrap_or(reference);
        let plain = !reference.is_empty()
            && !reference.starts_with('/')
            && !reference.contains("://")
            && reference
                .split('/')
                .all(|s| !s.is_empty() && s != "." && s != "..");
        plain.then(|| format!("{}/{reference}", self.root()))
    }
}

fn invalid(method: &str, reason: impl Into<String>) -> ClientError {
    ClientError::Invalid(InvalidResult::Frame {
        method: method.to_owned(),
        reason: reason.into(),
    })
}

/// Checks that the entry can be loaded (N31): `resources` is an array holding the entry's
/// own `uri`, each URI once, all within the skill, with well-formed digests.
///
/// # Errors
/// [`SkillError::Dynamic`] or [`SkillError::InvalidEntry`].
pub fn check_entry(entry: &SkillEntry) -> Result<&[FileEntry], SkillError> {
    let bad = |reason: String| SkillError::InvalidEntry {
        uri: entry.uri.clone(),
        reason,
    };
    let files = match &entry.resources {
        SkillResources::Dynamic => {
            return Err(SkillError::Dynamic {
                uri: entry.uri.clone(),
            })
        }
        SkillResources::Files(files) => files,
    };
    let root = skill_root(&entry.uri).ok_or_else(|| bad("uri does not end in /SKILL.md".into()))?;
    if !files.iter().any(|f| f.uri == entry.uri) {
        return Err(bad("resources has no entry for the SKILL.md itself".into()));
    }
    let mut seen = std::collections::HashSet::new();
    for f in files {
        if !seen.insert(f.uri.as_str()) {
            return Err(bad(format!("{} is listed twice", f.uri)));
        }
        if f.uri != entry.uri && !f.uri.starts_with(&format!("{root}/")) {
            return Err(bad(format!("{} is outside {root}", f.uri)));
        }
        if !is_digest(&f.digest) {
            return Err(bad(format!("{} has a malformed digest", f.uri)));
        }
    }
    Ok(files)
}

/// Checks `bytes` against `file`: the length first (a mismatch fails without hashing), then
/// the digest.
///
/// # Errors
/// [`SkillError::SizeMismatch`] or [`SkillError::DigestMismatch`].
pub fn verify_bytes(file: &FileEntry, bytes: &[u8]) -> Result<(), SkillError> {
    let actual = bytes.len() as u64;
    if actual != file.size {
        return Err(SkillError::SizeMismatch {
            uri: file.uri.clone(),
            expected: file.size,
            actual,
        });
    }
    let computed = digest(bytes);
    if computed != file.digest {
        return Err(SkillError::DigestMismatch {
            uri: file.uri.clone(),
            expected: file.digest.clone(),
            actual: computed,
        });
    }
    Ok(())
}

/// Compares a fetched manifest's frontmatter with the entry's, field by field over the keys
/// of both (N30).
///
/// # Errors
/// [`SkillError::Frontmatter`] or [`SkillError::FrontmatterMismatch`].
pub fn verify_frontmatter(
    entry: &SkillEntry,
    manifest: &str,
) -> Result<Map<String, Value>, SkillError> {
    let fetched = parse_frontmatter(manifest).map_err(|error| SkillError::Frontmatter {
        uri: entry.uri.clone(),
        error,
    })?;
    let mut keys: Vec<&String> = fetched.keys().chain(entry.frontmatter.keys()).collect();
    keys.sort();
    keys.dedup();
    if let Some(field) = keys
        .into_iter()
        .find(|k| fetched.get(*k) != entry.frontmatter.get(*k))
    {
        return Err(SkillError::FrontmatterMismatch {
            uri: entry.uri.clone(),
            field: field.clone(),
        });
    }
    Ok(fetched)
}

fn complete_result<T: DeserializeOwned>(method: &str, value: Value) -> Result<T, ClientError> {
    let Value::Object(mut object) = value else {
        return Err(invalid(method, "the result is not an object"));
    };
    match object.remove("resultType") {
        Some(Value::String(t)) if t == "complete" => {}
        other => {
            return Err(invalid(
                method,
                format!("resultType must be \"complete\", got {other:?}"),
            ))
        }
    }
    serde_json::from_value(Value::Object(object)).map_err(|e| invalid(method, e.to_string()))
}

impl Client {
    /// The server's Skills declaration from discovery, when it made one (an object).
    #[must_use]
    pub fn skills_capability(&self) -> Option<SkillsCapability> {
        let raw = self.discovery().extensions.get(EXTENSION_ID)?;
        serde_json::from_str::<Map<String, Value>>(raw.get())
            .ok()
            .and_then(|m| serde_json::from_value(Value::Object(m)).ok())
    }

    fn skills_declared(&self) -> Result<SkillsCapability, ClientError> {
        self.skills_capability()
            .ok_or(ClientError::Skill(SkillError::NotDeclared))
    }

    /// One page of `skills/list` from `cursor`.
    ///
    /// # Errors
    /// [`SkillError::NotDeclared`] (nothing sent), or any [`ClientError`] of the request.
    pub async fn list_skills_page(
        &self,
        cursor: Option<&str>,
        options: &CallOptions,
    ) -> Result<ListSkillsResult, ClientError> {
        self.skills_declared()?;
        let mut params = Map::new();
        if let Some(c) = cursor {
            params.insert("cursor".into(), Value::String(c.to_owned()));
        }
        let value = self.shared.round_trip(LIST_METHOD, params, options).await?;
        complete_result(LIST_METHOD, value)
    }

    /// Every listed skill, across pages; a repeated cursor or more than
    /// [`MAX_LIST_PAGES`] pages / [`MAX_LIST_ITEMS`] entries ends the walk with a typed error.
    /// No file is read. An empty or partial listing is not proof that the server has no
    /// other skills ([`Client::get_skill`] loads one by URI).
    ///
    /// # Errors
    /// As [`Client::list_skills_page`]; [`ClientError::Pagination`].
    pub async fn list_skills(&self, options: &CallOptions) -> Result<Vec<SkillEntry>, ClientError> {
        let mut skills = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut cursor: Option<String> = None;
        for number in 1..=MAX_LIST_PAGES {
            let page = self.list_skills_page(cursor.as_deref(), options).await?;
            if skills.len() + page.skills.len() > MAX_LIST_ITEMS {
                return Err(ClientError::Pagination(PaginationError::TooManyItems {
                    limit: MAX_LIST_ITEMS,
                }));
            }
            skills.extend(page.skills);
            match page.next_cursor {
                None => return Ok(skills),
                Some(next) => {
                    if !seen.insert(next.clone()) {
                        return Err(ClientError::Pagination(PaginationError::RepeatedCursor {
                            cursor: next,
                            page: number,
                        }));
                    }
                    cursor = Some(next);
                }
            }
        }
        Err(ClientError::Pagination(PaginationError::TooManyPages {
            limit: MAX_LIST_PAGES,
        }))
    }

    /// `skills/get`: the entry of the skill whose `SKILL.md` is `uri`; the answer must echo
    /// `uri` and carry no `nextCursor`.
    ///
    /// # Errors
    /// [`SkillError::NotDeclared`] (nothing sent); [`ClientError::Rpc`] (-32602 for a skill
    /// the server does not serve); [`ClientError::Invalid`] for a result that does not echo
    /// the URI or carries a cursor.
    pub async fn get_skill(
        &self,
        uri: &str,
        options: &CallOptions,
    ) -> Result<SkillEntry, ClientError> {
        self.skills_declared()?;
        let mut params = Map::new();
        params.insert("uri".into(), Value::String(uri.to_owned()));
        let value = self.shared.round_trip(GET_METHOD, params, options).await?;
        if value.get("nextCursor").is_some() {
            return Err(invalid(
                GET_METHOD,
                "a skills/get result carries no nextCursor",
            ));
        }
        let result: GetSkillResult = complete_result(GET_METHOD, value)?;
        if result.skill.uri != uri {
            return Err(invalid(
                GET_METHOD,
                format!("the entry's uri {} does not echo {uri}", result.skill.uri),
            ));
        }
        Ok(result.skill)
    }

    /// One page of `resources/directory/read` for the directory `uri`.
    ///
    /// # Errors
    /// [`SkillError::NotDeclared`] / [`SkillError::DirectoryReadNotDeclared`] (nothing
    /// sent), or any [`ClientError`] of the request.
    pub async fn read_directory_page(
        &self,
        uri: &str,
        cursor: Option<&str>,
        options: &CallOptions,
    ) -> Result<DirectoryReadResult, ClientError> {
        if !self.skills_declared()?.directory_read {
            return Err(ClientError::Skill(SkillError::DirectoryReadNotDeclared));
        }
        let mut params = Map::new();
        params.insert("uri".into(), Value::String(uri.to_owned()));
        if let Some(c) = cursor {
            params.insert("cursor".into(), Value::String(c.to_owned()));
        }
        let value = self
            .shared
            .round_trip(DIRECTORY_READ_METHOD, params, options)
            .await?;
        complete_result(DIRECTORY_READ_METHOD, value)
    }

    /// Loads the skill `entry` describes: checks the entry, reads its `SKILL.md`, verifies
    /// size, digest and frontmatter. Only this reads the manifest.
    ///
    /// # Errors
    /// [`ClientError::Skill`] when the entry or the content fails (the content is dropped),
    /// or any [`ClientError`] of the read.
    pub async fn load_skill(
        &self,
        entry: &SkillEntry,
        options: &CallOptions,
    ) -> Result<LoadedSkill, ClientError> {
        let files = check_entry(entry).map_err(ClientError::Skill)?;
        let file = files.iter().find(|f| f.uri == entry.uri).ok_or_else(|| {
            ClientError::Skill(SkillError::NotListed {
                skill: entry.uri.clone(),
                uri: entry.uri.clone(),
            })
        })?;
        let bytes = self.read_verified(file, options).await?;
        let manifest = String::from_utf8(bytes).map_err(|_| {
            ClientError::Skill(SkillError::Frontmatter {
                uri: entry.uri.clone(),
                error: FrontmatterError::NoBlock,
            })
        })?;
        let frontmatter = verify_frontmatter(entry, &manifest).map_err(ClientError::Skill)?;
        Ok(LoadedSkill {
            entry: entry.clone(),
            manifest,
            frontmatter,
        })
    }

    /// Reads the file `uri` of a loaded skill: only a URI the held entry lists, and only
    /// content that matches its size and digest.
    ///
    /// # Errors
    /// [`SkillError::NotListed`] (nothing sent), a verification [`SkillError`], or any
    /// [`ClientError`] of the read.
    pub async fn read_skill_file(
        &self,
        skill: &LoadedSkill,
        uri: &str,
        options: &CallOptions,
    ) -> Result<Vec<u8>, ClientError> {
        let file = skill.entry.file(uri).ok_or_else(|| {
            ClientError::Skill(SkillError::NotListed {
                skill: skill.entry.uri.clone(),
                uri: uri.to_owned(),
            })
        })?;
        self.read_verified(file, options).await
    }

    async fn read_verified(
        &self,
        file: &FileEntry,
        options: &CallOptions,
    ) -> Result<Vec<u8>, ClientError> {
        let mut params = Map::new();
        params.insert("uri".into(), Value::String(file.uri.clone()));
        let method = "resources/read";
        let value = self.shared.round_trip(method, params, options).await?;
        let contents: Vec<Value> =
            match complete_result::<Map<String, Value>>(method, value)?.remove("contents") {
                Some(Value::Array(items)) => items,
                _ => return Err(invalid(method, "contents must be an array")),
            };
        let item = contents
            .iter()
            .find(|c| c.get("uri").and_then(Value::as_str) == Some(file.uri.as_str()))
            .ok_or_else(|| {
                ClientError::Skill(SkillError::NoContent {
                    uri: file.uri.clone(),
                })
            })?;
        let bytes = match (item.get("text"), item.get("blob")) {
            (Some(Value::String(text)), None) => text.clone().into_bytes(),
            (None, Some(Value::String(blob))) => base64::engine::general_purpose::STANDARD
                .decode(blob)
                .map_err(|e| invalid(method, format!("blob is not base64: {e}")))?,
            _ => return Err(invalid(method, "a content item has either text or blob")),
        };
        verify_bytes(file, &bytes).map_err(ClientError::Skill)?;
        Ok(bytes)
    }
}
