//! [`FileTokenStore`]: tokens kept between runs in one file only its owner can read (Unix).
//!
//! - The file is created with mode `0600` and its directory, when missing, with `0700`.
//!   Every write goes to a new temporary file (`0600`, created exclusively) in the same
//!   directory, is flushed to disk and renamed over the old one, so a reader (or a crash)
//!   never sees a half-written file and the mode is never wider, not even for a moment.
//! - An existing file is refused when it is not owned by the user running the process
//!   ([`TokenFileError::Owner`]), when its group or others have any permission bit
//!   ([`TokenFileError::Permissions`]: someone widened it, or it was never ours), when it is
//!   a symbolic link or not a regular file, when it is larger than [`MAX_TOKEN_FILE_BYTES`],
//!   or when it is not the store's JSON document. The store never repairs or overwrites such a
//!   file: the user decides.
//! - Entries are keyed by (issuer, resource), as [`TokenKey`] is. Expiry is kept as Unix
//!   seconds, so it survives the process.
//!
//! [`TokenStore`]'s methods cannot fail, so a failed write is logged (without any token) and
//! kept for [`FileTokenStore::last_error`]; the tokens stay usable in memory for this run.
//! Two processes saving at once do not corrupt the file: the last rename wins.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io::{Read as _, Write as _};
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::flow::{Secret, Tokens};
use super::provider::{TokenKey, TokenStore};

/// Largest token file read or written: a token set is a few KiB, so even hundreds of servers
/// fit, and a file grown past this is refused rather than read into memory.
pub const MAX_TOKEN_FILE_BYTES: u64 = 1024 * 1024;

/// The document format's version.
const FORMAT_VERSION: u32 = 1;

/// Why the token file cannot be used. No variant carries a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenFileError {
    /// A file system operation failed.
    #[error("{path}: {kind}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The system's error kind.
        kind: std::io::ErrorKind,
    },
    /// The file can be read or written by its group or others.
    #[error("{path} is accessible to others (mode {mode:o}); it must be 0600")]
    Permissions {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The file belongs to another user than the one running this process: its tokens are
    /// not this user's, and whoever owns it can change them at will.
    #[error("{path} is owned by uid {owner}, not by this user (uid {user})")]
    Owner {
        /// The file.
        path: PathBuf,
        /// Its owner's uid.
        owner: u32,
        /// This process's real uid.
        user: u32,
    },
    /// The path is a symbolic link or not a regular file.
    #[error("{path} is not a regular file")]
    NotAFile {
        /// The path.
        path: PathBuf,
    },
    /// The file (or the document to write) is larger than [`MAX_TOKEN_FILE_BYTES`].
    #[error("{path} exceeds {MAX_TOKEN_FILE_BYTES} bytes")]
    TooLarge {
        /// The file.
        path: PathBuf,
    },
    /// The file is not a token store document.
    #[error("{path} is not a token store document")]
    Malformed {
        /// The file.
        path: PathBuf,
    },
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Document {
    version: u32,
    tokens: Vec<Entry>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    issuer: String,
    resource: String,
    access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    refresh_token: Option<String>,
    /// Unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scope: Option<String>,
    /// The DPoP key thumbprint a bound token needs (public, not a secret).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dpop_jkt: Option<String>,
}

type Entries = BTreeMap<(String, String), Tokens>;

/// A [`TokenStore`] persisted in one owner-only file; see the module docs.
pub struct FileTokenStore {
    path: PathBuf,
    entries: Mutex<Entries>,
    last_error: Mutex<Option<TokenFileError>>,
}

impl fmt::Debug for FileTokenStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = self
            .entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        f.debug_struct("FileTokenStore")
            .field("path", &self.path)
            .field("entries", &count)
            .finish()
    }
}

fn io_error(path: &Path) -> impl Fn(std::io::Error) -> TokenFileError + '_ {
    move |e| TokenFileError::Io {
        path: path.to_owned(),
        kind: e.kind(),
    }
}

impl FileTokenStore {
    /// Opens the store at `path`, reading it when it exists (it is created on the first save).
    ///
    /// # Errors
    /// [`TokenFileError`] when the file exists but is not safe or not readable as a store.
    pub fn open(path: impl Into<PathBuf>) -> Result<Self, TokenFileError> {
        let path = path.into();
        let entries = match fs::symlink_metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Entries::new(),
            Err(e) => return Err(io_error(&path)(e)),
            Ok(meta) if !meta.file_type().is_file() => {
                return Err(TokenFileError::NotAFile { path })
            }
            Ok(_) => read(&path, rustix::process::getuid().as_raw())?,
        };
        Ok(FileTokenStore {
            path,
            entries: Mutex::new(entries),
            last_error: Mutex::new(None),
        })
    }

    /// The file's path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Why the last save or remove could not be written, if it could not.
    #[must_use]
    pub fn last_error(&self) -> Option<TokenFileError> {
        self.last_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn update(&self, change: impl FnOnce(&mut Entries)) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        change(&mut entries);
        let outcome = write(&self.path, &entries);
        if let Err(e) = &outcome {
            tracing::warn!(error = %e, "the token file was not written");
        }
        *self
            .last_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = outcome.err();
    }
}

impl TokenStore for FileTokenStore {
    fn load(&self, key: &TokenKey) -> Option<Tokens> {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&(key.issuer.clone(), key.resource.clone()))
            .cloned()
    }

    fn save(&self, key: &TokenKey, tokens: Tokens) {
        self.update(|entries| {
            entries.insert((key.issuer.clone(), key.resource.clone()), tokens);
        });
    }

    fn remove(&self, key: &TokenKey) {
        self.update(|entries| {
            entries.remove(&(key.issuer.clone(), key.resource.clone()));
        });
    }
}

/// Reads and checks an existing store file, which `user` (a uid) must own.
fn read(path: &Path, user: u32) -> Result<Entries, TokenFileError> {
    let file = fs::File::open(path).map_err(io_error(path))?;
    // Judged on the opened file itself, so a swap after the first look changes nothing.
    let meta = file.metadata().map_err(io_error(path))?;
    if !meta.is_file() {
        return Err(TokenFileError::NotAFile {
            path: path.to_owned(),
        });
    }
    let owner = std::os::unix::fs::MetadataExt::uid(&meta);
    if owner != user {
        return Err(TokenFileError::Owner {
            path: path.to_owned(),
            owner,
            user,
        });
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(TokenFileError::Permissions {
            path: path.to_owned(),
            mode,
        });
    }
    let mut bytes = Vec::new();
    file.take(MAX_TOKEN_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io_error(path))?;
    if bytes.len() as u64 > MAX_TOKEN_FILE_BYTES {
        return Err(TokenFileError::TooLarge {
            path: path.to_owned(),
        });
    }
    let malformed = || TokenFileError::Malformed {
        path: path.to_owned(),
    };
    let document: Document = serde_json::from_slice(&bytes).map_err(|_| malformed())?;
    if document.version != FORMAT_VERSION {
        return Err(malformed());
    }
    let mut entries = Entries::new();
    for entry in document.tokens {
        let tokens = Tokens {
            access_token: Secret::new(entry.access_token),
            refresh_token: entry.refresh_token.map(Secret::new),
            expires_at: entry.expires_at.map(instant_from_unix),
            scope: entry.scope,
            dpop_jkt: entry.dpop_jkt,
        };
        if entries
            .insert((entry.issuer, entry.resource), tokens)
            .is_some()
        {
            // Two entries for one key: which one is meant is unknowable.
            return Err(malformed());
        }
    }
    Ok(entries)
}

/// Writes the whole store: a fresh `0600` temporary file in the same directory, synced, then
/// renamed over `path`.
fn write(path: &Path, entries: &Entries) -> Result<(), TokenFileError> {
    let document = Document {
        version: FORMAT_VERSION,
        tokens: entries
            .iter()
            .map(|((issuer, resource), t)| Entry {
                issuer: issuer.clone(),
                resource: resource.clone(),
                access_token: t.access_token.expose().to_owned(),
                refresh_token: t.refresh_token.as_ref().map(|s| s.expose().to_owned()),
                expires_at: t.expires_at.map(unix_from_instant),
                scope: t.scope.clone(),
                dpop_jkt: t.dpop_jkt.clone(),
            })
            .collect(),
    };
    let mut bytes =
        serde_json::to_vec_pretty(&document).map_err(|_| TokenFileError::Malformed {
            path: path.to_owned(),
        })?;
    bytes.push(b'\n');
    if bytes.len() as u64 > MAX_TOKEN_FILE_BYTES {
        return Err(TokenFileError::TooLarge {
            path: path.to_owned(),
        });
    }
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
        _ => PathBuf::from("."),
    };
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(io_error(&dir))?;
    // Refuse to replace what is not ours to replace (a link, a directory, a widened file).
    match fs::symlink_metadata(path) {
        Ok(meta) if !meta.file_type().is_file() => {
            return Err(TokenFileError::NotAFile {
                path: path.to_owned(),
            })
        }
        Ok(meta) if meta.permissions().mode() & 0o077 != 0 => {
            return Err(TokenFileError::Permissions {
                path: path.to_owned(),
                mode: meta.permissions().mode() & 0o777,
            })
        }
        _ => {}
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut nonce = [0u8; 8];
    getrandom::getrandom(&mut nonce).map_err(|_| TokenFileError::Io {
        path: dir.clone(),
        kind: std::io::ErrorKind::Other,
    })?;
    let nonce: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
    let temp = dir.join(format!(".{name}.{}.{nonce}.tmp", std::process::id()));
    let written = (|| {
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)?;
        file.write_all(&bytes)?;
        file.sync_all()?;
        fs::rename(&temp, path)
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&temp);
        return Err(io_error(path)(e));
    }
    // Make the rename itself durable; a failure here leaves a correct file, so it is ignored.
    if let Ok(d) = fs::File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

fn unix_from_instant(at: Instant) -> u64 {
    let now = Instant::now();
    let wall = if at >= now {
        SystemTime::now() + (at - now)
    } else {
        SystemTime::now()
            .checked_sub(now - at)
            .unwrap_or(UNIX_EPOCH)
    };
    wall.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn instant_from_unix(secs: u64) -> Instant {
    let wall = UNIX_EPOCH + Duration::from_secs(secs);
    let now = Instant::now();
    match wall.duration_since(SystemTime::now()) {
        Ok(ahead) => now.checked_add(ahead).unwrap_or(now),
        // Already past: as far back as the monotonic clock allows, which reads as expired.
        Err(behind) => now.checked_sub(behind.duration()).unwrap_or(now),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store file in a fresh owner-only directory below the system's temporary directory.
    fn store_file(name: &str) -> PathBuf {
        let mut random = [0u8; 8];
        getrandom::getrandom(&mut random).unwrap();
        let dir = std::env::temp_dir().join(format!(
            "strict-mcp-store-{name}-{}",
            u64::from_le_bytes(random)
        ));
        fs::DirBuilder::new().mode(0o700).create(&dir).unwrap();
        let path = dir.join("tokens.json");
        fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .unwrap()
            .write_all(br#"{"version":1,"tokens":[]}"#)
            .unwrap();
        path
    }

    /// The token file must belong to the user running the process: the owner is judged on the
    /// opened file, for the process's real uid, and another uid is a typed refusal that names
    /// both (no token read).
    #[test]
    fn a_token_file_owned_by_another_user_is_refused() {
        let path = store_file("owner");
        let me = rustix::process::getuid().as_raw();
        assert_eq!(read(&path, me).unwrap().len(), 0);
        let other = me.wrapping_add(1);
        assert_eq!(
            read(&path, other).unwrap_err(),
            TokenFileError::Owner {
                path: path.clone(),
                owner: me,
                user: other,
            }
        );
        // Through the public constructor the file is ours, so it opens.
        assert!(FileTokenStore::open(&path).is_ok());
        fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }
}
