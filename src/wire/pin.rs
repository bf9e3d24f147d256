//! The schema pin: which exact `schema.json` the wire types are generated from.
//!
//! This file is compiled twice: as `strict_mcp::wire::pin` (so clients can run the same
//! offline preflight and so the check has unit tests) and by `build.rs` through
//! `#[path]`, which is why it depends only on `std`, `sha2` and `thiserror`.

use sha2::{Digest, Sha256};

/// The pin file shipped with the crate (`schema/PIN.toml`).
pub const PIN_TOML: &str = include_str!("../../schema/PIN.toml");

/// Why a pin file could not be read or a schema does not match it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PinError {
    /// A required `key = "value"` line is missing from the pin file.
    #[error("pin file has no `{key}` entry")]
    MissingKey {
        /// The key that was looked for.
        key: &'static str,
    },
    /// The pinned hash is not 64 lowercase hexadecimal digits.
    #[error("pinned sha256 `{value}` is not 64 lowercase hex digits")]
    MalformedHash {
        /// The value found in the pin file.
        value: String,
    },
    /// The schema bytes hash to something other than the pinned value.
    #[error(
        "schema SHA-256 mismatch: pinned {expected}, found {actual}; \
         use the byte-exact file named in schema/PIN.toml"
    )]
    HashMismatch {
        /// The pinned SHA-256 (lowercase hex).
        expected: String,
        /// The SHA-256 of the bytes that were checked (lowercase hex).
        actual: String,
    },
}

/// The parsed pin: where the schema comes from and what its bytes hash to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    /// Upstream repository, `owner/name`.
    pub repository: String,
    /// Upstream commit that last changed the file.
    pub commit: String,
    /// Path of the file inside the repository.
    pub path: String,
    /// SHA-256 of the file, lowercase hex.
    pub sha256: String,
}

impl Pin {
    /// Reads the `key = "value"` lines of a pin file. Comments (`#`) and blank lines are
    /// skipped; a full TOML parser is not needed for four string keys, and keeping this
    /// dependency-free lets `build.rs` share the code.
    pub fn parse(text: &str) -> Result<Self, PinError> {
        let lookup = |key: &'static str| -> Result<String, PinError> {
            text.lines()
                .map(str::trim)
                .filter(|line| !line.starts_with('#'))
                .filter_map(|line| line.split_once('='))
                .find(|(k, _)| k.trim() == key)
                .map(|(_, v)| v.trim().trim_matches('"').to_owned())
                .ok_or(PinError::MissingKey { key })
        };
        let sha256 = lookup("sha256")?;
        let well_formed = sha256.len() == 64
            && sha256
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if !well_formed {
            return Err(PinError::MalformedHash { value: sha256 });
        }
        Ok(Self {
            repository: lookup("repository")?,
            commit: lookup("commit")?,
            path: lookup("path")?,
            sha256,
        })
    }

    /// The pin shipped with this crate.
    pub fn shipped() -> Result<Self, PinError> {
        Self::parse(PIN_TOML)
    }

    /// Checks that `bytes` are exactly the pinned schema (byte equality via SHA-256).
    pub fn verify(&self, bytes: &[u8]) -> Result<(), PinError> {
        let actual = sha256_hex(bytes);
        if actual == self.sha256 {
            Ok(())
        } else {
            Err(PinError::HashMismatch {
                expected: self.sha256.clone(),
                actual,
            })
        }
    }
}

/// SHA-256 of `bytes` as lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PINNED: &str = "ef70b61f99b6d2e5e3b46863822eab08dff6a45bedc7a08914e0e5b133f40203";

    #[test]
    fn o87_shipped_pin_names_upstream_commit_and_hash() {
        let pin = Pin::shipped().unwrap();
        assert_eq!(
            pin,
            Pin {
                repository: "modelcontextprotocol/modelcontextprotocol".into(),
                commit: "271ecc9a".into(),
                path: "schema/2026-07-28/schema.json".into(),
                sha256: PINNED.into(),
            }
        );
    }

    #[test]
    fn o87_one_modified_byte_is_a_hash_mismatch_naming_both_hashes() {
        let pin = Pin::parse(&format!(
            "repository = \"r\"\ncommit = \"c\"\npath = \"p\"\nsha256 = \"{}\"\n",
            sha256_hex(b"{}")
        ))
        .unwrap();
        assert_eq!(pin.verify(b"{}"), Ok(()));
        let err = pin.verify(b"{ ").unwrap_err();
        assert_eq!(
            err,
            PinError::HashMismatch {
                expected: sha256_hex(b"{}"),
                actual: sha256_hex(b"{ "),
            }
        );
        let text = err.to_string();
        assert!(text.contains(&sha256_hex(b"{}")) && text.contains(&sha256_hex(b"{ ")));
    }

    #[test]
    fn o87_malformed_or_missing_pin_entries_are_typed_errors() {
        assert_eq!(
            Pin::parse("sha256 = \"ABC\""),
            Err(PinError::MalformedHash {
                value: "ABC".into()
            })
        );
        assert_eq!(
            Pin::parse(&format!("sha256 = \"{PINNED}\"")),
            Err(PinError::MissingKey { key: "repository" })
        );
        assert_eq!(
            Pin::parse("# sha256 = \"x\""),
            Err(PinError::MissingKey { key: "sha256" })
        );
    }

    #[test]
    fn sha256_hex_matches_known_vector() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
