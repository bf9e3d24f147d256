//! The skills catalogue of the Skills extension (SEP-2640): a tree of files in which every
//! directory holding a `SKILL.md` is a skill, checked once when built (frontmatter, naming,
//! bounds) and then immutable. [`crate::core::RegistryBuilder::skills`] serves it: every file
//! becomes a static resource, and the registry answers `skills/list`, `skills/get` and
//! `resources/directory/read` from it.
//!
//! A tree is built in memory ([`SkillTree::file`]) or loaded from a directory
//! ([`SkillTree::load_dir`]), which refuses path traversal and symlinks that leave the root
//! and stops at the named bounds below.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::core::descriptor::{Resource, ResourceContents};
use crate::core::resource::{ReadReply, ResourceDef};
use crate::wire::skills::{
    self as wire, digest, is_valid_name, parse_frontmatter, FileEntry, FrontmatterError,
    SkillEntry, SkillResources, DIRECTORY_MIME_TYPE, MANIFEST, MANIFEST_MIME_TYPE,
};

/// Files in one skill, `SKILL.md` included (N23: servers SHOULD NOT serve more).
pub const MAX_FILES_PER_SKILL: usize = wire::MAX_FILES_PER_SKILL;
/// Summed bytes of one skill's files (N23: 16 MiB).
pub const MAX_SKILL_BYTES: u64 = wire::MAX_SKILL_BYTES;
/// Skills in one tree: a catalogue is configuration, and every listing walks it.
pub const MAX_SKILLS: usize = 1024;
/// Files one tree holds, and entries (files and directories) one directory load visits, so a
/// huge or self-referencing tree ends loading with an error instead of exhausting memory or
/// time.
pub const MAX_TREE_ENTRIES: usize = 16_384;
/// Directory levels below the root: a symlink loop inside the root ends here.
pub const MAX_DEPTH: usize = 16;

/// Why a skill tree was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// A path segment is empty, `.`, `..`, or holds `\`, a control character, `%`, `?` or `#`.
    #[error("skill file path {path:?} is not a plain relative path")]
    BadPath {
        /// The offending path.
        path: String,
    },
    /// A symlink under the root resolves outside it.
    #[error("symlink {path:?} leaves the skills root")]
    SymlinkEscape {
        /// The symlink, relative to the root.
        path: String,
    },
    /// The same path was given twice, or a path is both a file and a directory.
    #[error("skill file path {path:?} is given twice or is both a file and a directory")]
    Duplicate {
        /// The offending path.
        path: String,
    },
    /// A `SKILL.md` at the root of the tree: a skill URI needs an authority segment.
    #[error("SKILL.md at the root of the tree: every skill lives in a directory")]
    RootManifest,
    /// A `SKILL.md` whose frontmatter is unusable.
    #[error("{path}: {error}")]
    Frontmatter {
        /// The manifest's path.
        path: String,
        /// What is wrong.
        error: FrontmatterError,
    },
    /// A `SKILL.md` that is not UTF-8.
    #[error("{path}: SKILL.md is not UTF-8")]
    NotText {
        /// The manifest's path.
        path: String,
    },
    /// The frontmatter `name` breaks the naming rules or differs from the directory name.
    #[error("{path}: frontmatter name {name:?} must equal the directory name and be 1-64 characters of a-z 0-9 - (no leading, trailing or doubled hyphen)")]
    BadName {
        /// The manifest's path.
        path: String,
        /// The frontmatter name.
        name: String,
    },
    /// A skill with more than [`MAX_FILES_PER_SKILL`] files.
    #[error("skill {skill:?} has {count} files; at most {MAX_FILES_PER_SKILL} are served")]
    TooManyFiles {
        /// The skill's directory.
        skill: String,
        /// How many it has.
        count: usize,
    },
    /// A skill over [`MAX_SKILL_BYTES`].
    #[error("skill {skill:?} has more than {MAX_SKILL_BYTES} bytes")]
    TooLarge {
        /// The skill's directory.
        skill: String,
    },
    /// More than [`MAX_SKILLS`] skills.
    #[error("more than {MAX_SKILLS} skills")]
    TooManySkills,
    /// More than [`MAX_TREE_ENTRIES`] files and directories.
    #[error("more than {MAX_TREE_ENTRIES} files and directories")]
    TooManyEntries,
    /// Deeper than [`MAX_DEPTH`] directory levels.
    #[error("{path:?} is deeper than {MAX_DEPTH} directory levels")]
    TooDeep {
        /// The offending path.
        path: String,
    },
    /// The tree holds no skill.
    #[error("no SKILL.md in the tree")]
    Empty,
    /// The directory could not be read.
    #[error("{path}: {message}")]
    Io {
        /// The path, relative to the root.
        path: String,
        /// The operating system's message.
        message: String,
    },
}

/// A tree of files under one URI prefix; build it with [`SkillTree::file`] or
/// [`SkillTree::load_dir`], check it with [`SkillTree::build`].
#[derive(Debug, Clone, Default)]
pub struct SkillTree {
    files: BTreeMap<String, Arc<[u8]>>,
    problem: Option<SkillError>,
    directory_read: bool,
    scheme: Option<String>,
}

impl SkillTree {
    /// An empty tree (served under `skill://`, without `resources/directory/read`).
    #[must_use]
    pub fn new() -> Self {
        SkillTree::default()
    }

    /// Adds the file at `path` (`/`-separated, relative to the tree's root; its first segment
    /// becomes the URI authority). A bad path is reported by [`SkillTree::build`].
    #[must_use]
    pub fn file(mut self, path: &str, bytes: impl Into<Arc<[u8]>>) -> Self {
        if self.problem.is_none() {
            if let Err(e) = self.insert(path, bytes.into()) {
                self.problem = Some(e);
            }
        }
        self
    }

    /// Serves `resources/directory/read` for the skill directories (declared as
    /// `directoryRead: true`).
    #[must_use]
    pub fn directory_read(mut self, on: bool) -> Self {
        self.directory_read = on;
        self
    }

    /// Serves the files under `<scheme>://` instead of `skill://` (lowercase letters, digits,
    /// `+`, `-`, `.`, starting with a letter; a bad scheme is reported by [`SkillTree::build`]).
    #[must_use]
    pub fn scheme(mut self, scheme: &str) -> Self {
        let ok = scheme
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_lowercase())
            && scheme.bytes().all(|b| {
                b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.')
            });
        if !ok && self.problem.is_none() {
            self.problem = Some(SkillError::BadPath {
                path: format!("{scheme}://"),
            });
        }
        self.scheme = Some(scheme.to_owned());
        self
    }

    fn insert(&mut self, path: &str, bytes: Arc<[u8]>) -> Result<(), SkillError> {
        check_path(path)?;
        if path.split('/').count() > MAX_DEPTH + 1 {
            return Err(SkillError::TooDeep {
                path: path.to_owned(),
            });
        }
        if self.files.len() >= MAX_TREE_ENTRIES {
            return Err(SkillError::TooManyEntries);
        }
        let duplicate = self.files.contains_key(path)
            || self
                .files
                .range(format!("{path}/")..)
                .next()
                .is_some_and(|(k, _)| k.starts_with(&format!("{path}/")))
            || ancestors(path).any(|a| self.files.contains_key(a));
        if duplicate {
            return Err(SkillError::Duplicate {
                path: path.to_owned(),
            });
        }
        self.files.insert(path.to_owned(), bytes);
        Ok(())
    }

    /// Loads every file under `root`. Symlinks are followed only while they resolve inside
    /// `root`; one that leaves it is refused, as are non-UTF-8 names, special files, more than
    /// [`MAX_TREE_ENTRIES`] entries, more than [`MAX_DEPTH`] levels and a file that would put
    /// a skill over [`MAX_SKILL_BYTES`] (checked before it is read).
    ///
    /// # Errors
    /// [`SkillError`] naming the first problem.
    pub fn load_dir(root: impl AsRef<Path>) -> Result<SkillTree, SkillError> {
        let root = root.as_ref();
        let canonical = fs::canonicalize(root).map_err(|e| io_error("", &e))?;
        let mut tree = SkillTree::new();
        let mut visited = 0usize;
        walk(&canonical, &canonical, "", 0, &mut tree, &mut visited)?;
        Ok(tree)
    }

    /// Checks the tree and computes every skill's entry.
    ///
    /// # Errors
    /// The first [`SkillError`] found.
    pub fn build(self) -> Result<Skills, SkillError> {
        if let Some(problem) = self.problem {
            return Err(problem);
        }
        let scheme = self.scheme.unwrap_or_else(|| wire::SCHEME.to_owned());
        let uri_of = |path: &str| format!("{scheme}://{path}");
        let mut skills = Vec::new();
        for (path, bytes) in &self.files {
            let Some(dir) = manifest_dir(path) else {
                continue;
            };
            let Some(dir) = dir else {
                return Err(SkillError::RootManifest);
            };
            let text = std::str::from_utf8(bytes)
                .map_err(|_| SkillError::NotText { path: path.clone() })?;
            let frontmatter = parse_frontmatter(text).map_err(|error| SkillError::Frontmatter {
                path: path.clone(),
                error,
            })?;
            let name = frontmatter
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let last = dir.rsplit('/').next().unwrap_or(dir);
            if !is_valid_name(name) || name != last {
                return Err(SkillError::BadName {
                    path: path.clone(),
                    name: name.to_owned(),
                });
            }
            if skills.len() == MAX_SKILLS {
                return Err(SkillError::TooManySkills);
            }
            let prefix = format!("{dir}/");
            let mut files = Vec::new();
            let mut total = 0u64;
            for (file, bytes) in self.files.range(prefix.clone()..) {
                if !file.starts_with(&prefix) {
                    break;
                }
                total += bytes.len() as u64;
                files.push(FileEntry {
                    uri: uri_of(file),
                    digest: digest(bytes),
                    size: bytes.len() as u64,
                });
            }
            if files.len() > MAX_FILES_PER_SKILL {
                return Err(SkillError::TooManyFiles {
                    skill: dir.to_owned(),
                    count: files.len(),
                });
            }
            if total > MAX_SKILL_BYTES {
                return Err(SkillError::TooLarge {
                    skill: dir.to_owned(),
                });
            }
            // The manifest first, then the other files by path.
            files.sort_by_key(|f| f.uri != uri_of(path));
            skills.push(SkillEntry {
                uri: uri_of(path),
                frontmatter,
                resources: SkillResources::Files(files),
                meta: None,
            });
        }
        if skills.is_empty() {
            return Err(SkillError::Empty);
        }
        let directories = directories(&self.files, &skills, &uri_of);
        Ok(Skills {
            inner: Arc::new(SkillsInner {
                entries: skills,
                files: self.files,
                directories,
                directory_read: self.directory_read,
                scheme,
            }),
        })
    }
}

fn io_error(path: &str, e: &std::io::Error) -> SkillError {
    SkillError::Io {
        path: path.to_owned(),
        message: e.to_string(),
    }
}

fn walk(
    root: &Path,
    dir: &Path,
    rel: &str,
    depth: usize,
    tree: &mut SkillTree,
    visited: &mut usize,
) -> Result<(), SkillError> {
    if depth > MAX_DEPTH {
        return Err(SkillError::TooDeep {
            path: rel.to_owned(),
        });
    }
    let mut names = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| io_error(rel, &e))? {
        let entry = entry.map_err(|e| io_error(rel, &e))?;
        names.push(entry.file_name());
    }
    names.sort();
    for name in names {
        *visited += 1;
        if *visited > MAX_TREE_ENTRIES {
            return Err(SkillError::TooManyEntries);
        }
        let Some(name) = name.to_str().map(str::to_owned) else {
            return Err(SkillError::BadPath {
                path: format!("{rel}/{}", name.to_string_lossy()),
            });
        };
        let child_rel = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        let path = dir.join(&name);
        let meta = fs::symlink_metadata(&path).map_err(|e| io_error(&child_rel, &e))?;
        let target: PathBuf = if meta.file_type().is_symlink() {
            let resolved = fs::canonicalize(&path).map_err(|e| io_error(&child_rel, &e))?;
            if !resolved.starts_with(root) {
                return Err(SkillError::SymlinkEscape { path: child_rel });
            }
            resolved
        } else {
            path
        };
        let meta = fs::metadata(&target).map_err(|e| io_error(&child_rel, &e))?;
        if meta.is_dir() {
            walk(root, &target, &child_rel, depth + 1, tree, visited)?;
        } else if meta.is_file() {
            if meta.len() > MAX_SKILL_BYTES {
                return Err(SkillError::TooLarge { skill: child_rel });
            }
            let mut bytes = Vec::new();
            fs::File::open(&target)
                .and_then(|f| f.take(MAX_SKILL_BYTES + 1).read_to_end(&mut bytes))
                .map_err(|e| io_error(&child_rel, &e))?;
            if bytes.len() as u64 > MAX_SKILL_BYTES {
                return Err(SkillError::TooLarge { skill: child_rel });
            }
            tree.insert(&child_rel, bytes.into())?;
        } else {
            return Err(SkillError::Io {
                path: child_rel,
                message: "neither a file nor a directory".to_owned(),
            });
        }
    }
    Ok(())
}

/// A segment is plain: not empty, `.` or `..`, and free of `\`, control characters and the
/// URI delimiters `%`, `?`, `#` (so the URI is the path, byte for byte).
fn check_path(path: &str) -> Result<(), SkillError> {
    let bad = path.is_empty()
        || path.split('/').any(|segment| {
            segment.is_empty()
                || segment == "."
                || segment == ".."
                || segment
                    .chars()
                    .any(|c| c.is_control() || matches!(c, '\\' | '%' | '?' | '#' | ' '))
        });
    if bad {
        return Err(SkillError::BadPath {
            path: path.to_owned(),
        });
    }
    Ok(())
}

fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    path.match_indices('/').map(move |(i, _)| &path[..i])
}

/// `Some(Some(dir))` for `<dir>/SKILL.md`, `Some(None)` for a root `SKILL.md`, `None` for any
/// other file.
fn manifest_dir(path: &str) -> Option<Option<&str>> {
    if path == MANIFEST {
        return Some(None);
    }
    path.strip_suffix(MANIFEST)
        .and_then(|d| d.strip_suffix('/'))
        .map(Some)
}

/// A file's `size` member: a slice holds at most `isize::MAX` bytes, which an `i64` holds
/// (the fallback is unreachable and never wraps).
fn byte_size(bytes: &[u8]) -> i64 {
    i64::try_from(bytes.len()).unwrap_or(i64::MAX)
}

/// Every served directory (each skill root and every directory below one) with its direct
/// children, by URI.
fn directories(
    files: &BTreeMap<String, Arc<[u8]>>,
    skills: &[SkillEntry],
    uri_of: &dyn Fn(&str) -> String,
) -> BTreeMap<String, Directory> {
    let roots: Vec<&str> = skills
        .iter()
        .filter_map(|s| wire::skill_root(&s.uri))
        .collect();
    let mut children: BTreeMap<String, BTreeSet<(String, Option<i64>)>> = BTreeMap::new();
    for (path, bytes) in files {
        let uri = uri_of(path);
        let mut child = (uri.clone(), Some(byte_size(bytes)));
        let mut at = uri.as_str();
        while let Some(cut) = at.rfind('/') {
            let parent = &at[..cut];
            if !roots
                .iter()
                .any(|r| parent == *r || parent.starts_with(&format!("{r}/")))
            {
                break;
            }
            children
                .entry(parent.to_owned())
                .or_default()
                .insert(child.clone());
            child = (parent.to_owned(), None);
            at = parent;
        }
    }
    children
        .into_iter()
        .map(|(uri, kids)| {
            let skill = skills
                .iter()
                .filter(|s| {
                    wire::skill_root(&s.uri)
                        .is_some_and(|r| uri == r || uri.starts_with(&format!("{r}/")))
                })
                .max_by_key(|s| s.uri.len())
                .map(|s| s.uri.clone())
                .unwrap_or_default();
            let children = kids
                .into_iter()
                .map(|(child, size)| {
                    let name = child.rsplit('/').next().unwrap_or_default().to_owned();
                    let mut r = Resource::new(child, name);
                    match size {
                        Some(n) => {
                            r.size = Some(n);
                            r.mime_type = Some(mime_of(&r.uri).to_owned());
                        }
                        None => r.mime_type = Some(DIRECTORY_MIME_TYPE.to_owned()),
                    }
                    r
                })
                .collect();
            (uri, Directory { skill, children })
        })
        .collect()
}

/// One served directory.
#[derive(Debug, Clone)]
pub(crate) struct Directory {
    /// The `SKILL.md` URI of the innermost skill holding it (its policy decides).
    pub(crate) skill: String,
    /// Direct children, by URI; subdirectories carry [`DIRECTORY_MIME_TYPE`].
    pub(crate) children: Vec<Resource>,
}

fn mime_of(uri: &str) -> &'static str {
    let ext = uri.rsplit_once('.').map(|(_, e)| e).unwrap_or_default();
    match ext {
        "md" => MANIFEST_MIME_TYPE,
        "txt" => "text/plain",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "py" => "text/x-python",
        "sh" => "text/x-shellscript",
        "js" => "text/javascript",
        "html" => "text/html",
        "csv" => "text/csv",
        "png" => "image/png",
        "pdf" => "application/pdf",
        _ => "application/octet-stream",
    }
}

struct SkillsInner {
    entries: Vec<SkillEntry>,
    files: BTreeMap<String, Arc<[u8]>>,
    directories: BTreeMap<String, Directory>,
    directory_read: bool,
    scheme: String,
}

/// A checked, immutable skills catalogue (cheap to clone).
#[derive(Clone)]
pub struct Skills {
    inner: Arc<SkillsInner>,
}

impl std::fmt::Debug for Skills {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Skills")
            .field("skills", &self.inner.entries.len())
            .field("files", &self.inner.files.len())
            .finish_non_exhaustive()
    }
}

impl Skills {
    /// Every skill's entry, by `SKILL.md` URI.
    #[must_use]
    pub fn entries(&self) -> &[SkillEntry] {
        &self.inner.entries
    }

    /// The entry whose `SKILL.md` is `uri`.
    #[must_use]
    pub fn entry(&self, uri: &str) -> Option<&SkillEntry> {
        self.inner.entries.iter().find(|e| e.uri == uri)
    }

    /// Whether `resources/directory/read` is served.
    #[must_use]
    pub fn directory_read(&self) -> bool {
        self.inner.directory_read
    }

    /// The capability value the server declares.
    #[must_use]
    pub fn capability(&self) -> wire::SkillsCapability {
        wire::SkillsCapability {
            directory_read: self.inner.directory_read,
        }
    }

    pub(crate) fn directory(&self, uri: &str) -> Option<&Directory> {
        self.inner.directories.get(uri)
    }

    /// The bytes hashed into the registry digest: every entry's URI and file digests.
    pub(crate) fn digest_input(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for e in &self.inner.entries {
            out.extend_from_slice(e.uri.as_bytes());
            out.push(0);
            if let SkillResources::Files(files) = &e.resources {
                for f in files {
                    out.extend_from_slice(f.digest.as_bytes());
                }
            }
            out.push(0);
        }
        out
    }

    /// One static resource per file: `SKILL.md` as `text/markdown` named and described by
    /// its frontmatter, other files named by their path; text when UTF-8, else a blob.
    pub(crate) fn resources(&self) -> Vec<ResourceDef> {
        let scheme = &self.inner.scheme;
        self.inner
            .files
            .iter()
            .filter(|(path, _)| self.owns(path))
            .map(|(path, bytes)| {
                let uri = format!("{scheme}://{path}");
                let manifest = self.entry(&uri).map(|e| {
                    (
                        e.name().unwrap_or_default().to_owned(),
                        e.description().unwrap_or_default().to_owned(),
                    )
                });
                let mime = if manifest.is_some() {
                    MANIFEST_MIME_TYPE
                } else {
                    mime_of(path)
                };
                let body = Arc::clone(bytes);
                let name = manifest
                    .as_ref()
                    .map_or_else(|| path.clone(), |(n, _)| n.clone());
                let def = ResourceDef::new(uri, name, move |_inv, uri: String| {
                    let body = Arc::clone(&body);
                    async move {
                        let item = match std::str::from_utf8(&body) {
                            Ok(text) => ResourceContents::text(uri, text),
                            Err(_) => ResourceContents::blob(uri, &body),
                        };
                        Ok(ReadReply::new(vec![item.with_mime_type(mime)]))
                    }
                })
                .mime_type(mime)
                .size(bytes.len() as u64);
                match manifest {
                    Some((_, description)) => def.description(description),
                    None => def,
                }
            })
            .collect()
    }

    /// Whether `path` lies in some skill (files outside every skill are not served).
    fn owns(&self, path: &str) -> bool {
        let uri = format!("{}://{path}", self.inner.scheme);
        self.inner
            .entries
            .iter()
            .any(|e| wire::skill_root(&e.uri).is_some_and(|r| uri.starts_with(&format!("{r}/"))))
    }

    /// The frontmatter of the skill `uri`, as served.
    #[must_use]
    pub fn frontmatter(&self, uri: &str) -> Option<&Map<String, Value>> {
        self.entry(uri).map(|e| &e.frontmatter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PDF: &str = "---\nname: pdf-processing\ndescription: PDFs\n---\nbody\n";

    fn tree() -> SkillTree {
        SkillTree::new()
            .file("pdf-processing/SKILL.md", PDF.as_bytes())
            .file("pdf-processing/references/FORMS.md", &b"forms\n"[..])
    }

    #[test]
    fn n22_entry_lists_every_file_once_manifest_first() {
        let skills = tree().file("README.md", &b"stray"[..]).build().unwrap();
        let entry = &skills.entries()[0];
        assert_eq!(
            serde_json::to_string(entry).unwrap(),
            format!(
                r#"{{"uri":"skill://pdf-processing/SKILL.md","frontmatter":{{"description":"PDFs","name":"pdf-processing"}},"resources":[{{"uri":"skill://pdf-processing/SKILL.md","digest":"{}","size":{}}},{{"uri":"skill://pdf-processing/references/FORMS.md","digest":"{}","size":6}}]}}"#,
                digest(PDF.as_bytes()),
                PDF.len(),
                digest(b"forms\n")
            )
        );
        // A stray file outside every skill is not served.
        let uris: Vec<String> = skills
            .resources()
            .iter()
            .map(|r| r.uri().to_owned())
            .collect();
        assert_eq!(
            uris,
            [
                "skill://pdf-processing/SKILL.md",
                "skill://pdf-processing/references/FORMS.md"
            ]
        );
    }

    #[test]
    fn n27_directories_list_direct_children() {
        let skills = tree().directory_read(true).build().unwrap();
        let root = skills.directory("skill://pdf-processing").unwrap();
        assert_eq!(root.skill, "skill://pdf-processing/SKILL.md");
        assert_eq!(
            serde_json::to_string(&root.children).unwrap(),
            format!(
                r#"[{{"mimeType":"text/markdown","name":"SKILL.md","size":{},"uri":"skill://pdf-processing/SKILL.md"}},{{"mimeType":"inode/directory","name":"references","uri":"skill://pdf-processing/references"}}]"#,
                PDF.len()
            )
        );
        assert!(skills
            .directory("skill://pdf-processing/references")
            .is_some());
        assert!(skills
            .directory("skill://pdf-processing/SKILL.md")
            .is_none());
        assert!(skills.directory("skill:/").is_none());
    }

    #[test]
    fn n17_nested_skills_count_in_the_parent_and_stand_alone() {
        let nested = "---\nname: child\ndescription: c\n---\n";
        let skills = tree()
            .file("pdf-processing/child/SKILL.md", nested.as_bytes())
            .build()
            .unwrap();
        assert_eq!(skills.entries().len(), 2);
        let parent = skills.entry("skill://pdf-processing/SKILL.md").unwrap();
        assert!(parent
            .file("skill://pdf-processing/child/SKILL.md")
            .is_some());
        let child = skills
            .entry("skill://pdf-processing/child/SKILL.md")
            .unwrap();
        assert_eq!(child.name(), Some("child"));
        assert_eq!(
            skills
                .directory("skill://pdf-processing/child")
                .unwrap()
                .skill,
            "skill://pdf-processing/child/SKILL.md"
        );
    }

    #[test]
    fn n16_n17_manifest_checks() {
        let e = SkillTree::new()
            .file("a/SKILL.md", &b"no frontmatter"[..])
            .build()
            .unwrap_err();
        assert_eq!(
            e,
            SkillError::Frontmatter {
                path: "a/SKILL.md".into(),
                error: FrontmatterError::NoBlock
            }
        );
        let e = SkillTree::new()
            .file("a/SKILL.md", &b"---\nname: b\ndescription: d\n---\n"[..])
            .build()
            .unwrap_err();
        assert!(matches!(e, SkillError::BadName { name, .. } if name == "b"));
        let e = SkillTree::new()
            .file("A/SKILL.md", &b"---\nname: A\ndescription: d\n---\n"[..])
            .build()
            .unwrap_err();
        assert!(matches!(e, SkillError::BadName { .. }));
        assert_eq!(
            SkillTree::new()
                .file("SKILL.md", PDF.as_bytes())
                .build()
                .unwrap_err(),
            SkillError::RootManifest
        );
        assert_eq!(
            SkillTree::new()
                .file("a/x.md", &b"x"[..])
                .build()
                .unwrap_err(),
            SkillError::Empty
        );
        assert!(matches!(
            SkillTree::new()
                .file("a/SKILL.md", &[0xff, 0xfe][..])
                .build(),
            Err(SkillError::NotText { .. })
        ));
    }

    #[test]
    fn traversal_and_odd_paths_are_refused() {
        for bad in [
            "../x/SKILL.md",
            "a/../SKILL.md",
            "./a",
            "/a",
            "a//b",
            "a/",
            "a\\b",
            "a/b%2e",
            "a/b?c",
            "a/b#c",
            "a/b c",
            "",
        ] {
            assert_eq!(
                tree().file(bad, &b"x"[..]).build().unwrap_err(),
                SkillError::BadPath { path: bad.into() },
                "{bad}"
            );
        }
        assert_eq!(
            tree()
                .file("pdf-processing/references", &b"x"[..])
                .build()
                .unwrap_err(),
            SkillError::Duplicate {
                path: "pdf-processing/references".into()
            }
        );
        assert_eq!(
            tree()
                .file("pdf-processing/SKILL.md/x", &b"x"[..])
                .build()
                .unwrap_err(),
            SkillError::Duplicate {
                path: "pdf-processing/SKILL.md/x".into()
            }
        );
        assert!(matches!(
            tree().scheme("Skill").build(),
            Err(SkillError::BadPath { .. })
        ));
    }

    #[test]
    fn n23_files_per_skill_at_the_bound_and_one_past() {
        let mut at = tree();
        for i in 0..MAX_FILES_PER_SKILL - 2 {
            at = at.file(&format!("pdf-processing/f{i}"), &b""[..]);
        }
        assert!(at.clone().build().is_ok());
        assert_eq!(
            at.file("pdf-processing/one-more", &b""[..])
                .build()
                .unwrap_err(),
            SkillError::TooManyFiles {
                skill: "pdf-processing".into(),
                count: MAX_FILES_PER_SKILL + 1
            }
        );
    }

    #[test]
    fn n23_skill_bytes_at_the_bound_and_one_past() {
        let rest = MAX_SKILL_BYTES as usize - PDF.len();
        let at = SkillTree::new()
            .file("pdf-processing/SKILL.md", PDF.as_bytes())
            .file("pdf-processing/big", vec![b'x'; rest]);
        assert!(at.build().is_ok());
        let past = SkillTree::new()
            .file("pdf-processing/SKILL.md", PDF.as_bytes())
            .file("pdf-processing/big", vec![b'x'; rest + 1]);
        assert_eq!(
            past.build().unwrap_err(),
            SkillError::TooLarge {
                skill: "pdf-processing".into()
            }
        );
    }

    #[test]
    fn skill_count_at_the_bound_and_one_past() {
        let manifest = |i: usize| format!("---\nname: s{i}\ndescription: d\n---\n");
        let mut at = SkillTree::new();
        for i in 0..MAX_SKILLS {
            at = at.file(&format!("s{i}/SKILL.md"), manifest(i).as_bytes());
        }
        assert_eq!(at.clone().build().unwrap().entries().len(), MAX_SKILLS);
        let past = at.file(
            &format!("s{MAX_SKILLS}/SKILL.md"),
            manifest(MAX_SKILLS).as_bytes(),
        );
        assert_eq!(past.build().unwrap_err(), SkillError::TooManySkills);
    }

    #[test]
    fn depth_at_the_bound_and_one_past() {
        let deep = |levels: usize| {
            let dirs: Vec<String> = (0..levels).map(|i| format!("d{i}")).collect();
            format!("pdf-processing/{}", dirs.join("/"))
        };
        // MAX_DEPTH directory levels below the root, then the file.
        assert!(tree()
            .file(&format!("{}/f", deep(MAX_DEPTH - 1)), &b""[..])
            .build()
            .is_ok());
        let past = format!("{}/f", deep(MAX_DEPTH));
        assert_eq!(
            tree().file(&past, &b""[..]).build().unwrap_err(),
            SkillError::TooDeep { path: past }
        );
    }

    #[test]
    fn tree_entries_at_the_bound_and_one_past() {
        let mut at = tree();
        for i in 0..MAX_TREE_ENTRIES - 2 {
            at = at.file(&format!("x/f{i}"), &b""[..]);
        }
        assert!(at.clone().build().is_ok());
        assert_eq!(
            at.file("x/last", &b""[..]).build().unwrap_err(),
            SkillError::TooManyEntries
        );
    }
}
