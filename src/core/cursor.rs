//! Opaque, tamper-evident, caller-bound, expiring pagination cursors.
//!
//! A cursor is `base64url(version ‖ list kind ‖ offset ‖ expiry ‖ tag)` where the tag is a
//! truncated HMAC-SHA256 over the payload, the caller's scope and the registry digest. A
//! cursor that was altered, minted for another caller, another list or another registry, or
//! that has expired is refused with -32602.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::core::caller::Caller;
use crate::core::error::CoreError;

type HmacSha256 = Hmac<Sha256>;

const VERSION: u8 = 1;
const PAYLOAD_LEN: usize = 14;
const TAG_LEN: usize = 16;
const DOMAIN: &[u8] = b"strict-mcp/cursor/v1";

/// The server's cursor key (32 bytes). Instances that share it accept each other's cursors.
#[derive(Clone)]
pub struct CursorKey([u8; 32]);

impl std::fmt::Debug for CursorKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorKey(..)")
    }
}

impl CursorKey {
    /// A key from fixed bytes (e.g. from configuration shared by all instances).
    #[must_use]
    pub fn new(bytes: [u8; 32]) -> Self {
        CursorKey(bytes)
    }

    /// A random key: cursors are then valid only in this process.
    ///
    /// # Errors
    /// When the operating system provides no randomness.
    pub fn random() -> Result<Self, getrandom::Error> {
        let mut bytes = [0u8; 32];
        getrandom::getrandom(&mut bytes)?;
        Ok(CursorKey(bytes))
    }

    fn tag(&self, payload: &[u8], caller: &Caller, registry: &[u8; 32]) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.0).expect("HMAC accepts keys of any length");
        mac.update(DOMAIN);
        mac.update(payload);
        let scope = caller.scope_bytes();
        mac.update(&(scope.len() as u64).to_be_bytes());
        mac.update(&scope);
        mac.update(registry);
        mac
    }

    pub(crate) fn mint(
        &self,
        kind: ListKind,
        caller: &Caller,
        registry: &[u8; 32],
        offset: u32,
        expires_ms: u64,
    ) -> String {
        let mut buf = Vec::with_capacity(PAYLOAD_LEN + TAG_LEN);
        buf.push(VERSION);
        buf.push(kind as u8);
        buf.extend_from_slice(&offset.to_be_bytes());
        buf.extend_from_slice(&expires_ms.to_be_bytes());
        let tag = self.tag(&buf, caller, registry).finalize().into_bytes();
        buf.extend_from_slice(&tag[..TAG_LEN]);
        URL_SAFE_NO_PAD.encode(buf)
    }

    pub(crate) fn open(
        &self,
        kind: ListKind,
        caller: &Caller,
        registry: &[u8; 32],
        cursor: &str,
        now_ms: u64,
    ) -> Result<u32, CoreError> {
        let bytes = URL_SAFE_NO_PAD
            .decode(cursor)
            .map_err(|_| CoreError::InvalidCursor)?;
        if bytes.len() != PAYLOAD_LEN + TAG_LEN {
            return Err(CoreError::InvalidCursor);
        }
        let (payload, tag) = bytes.split_at(PAYLOAD_LEN);
        self.tag(payload, caller, registry)
            .verify_truncated_left(tag)
            .map_err(|_| CoreError::InvalidCursor)?;
        if payload[0] != VERSION || payload[1] != kind as u8 {
            return Err(CoreError::InvalidCursor);
        }
        let offset = u32::from_be_bytes(
            payload[2..6]
                .try_into()
                .map_err(|_| CoreError::InvalidCursor)?,
        );
        let expires = u64::from_be_bytes(
            payload[6..14]
                .try_into()
                .map_err(|_| CoreError::InvalidCursor)?,
        );
        if now_ms >= expires {
            return Err(CoreError::InvalidCursor);
        }
        Ok(offset)
    }
}

/// Which list a cursor belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum ListKind {
    /// `tools/list`.
    Tools = 1,
    /// `resources/list`.
    Resources = 2,
    /// `resources/templates/list`.
    Templates = 3,
    /// `prompts/list`.
    Prompts = 4,
    /// `skills/list` (Skills extension).
    Skills = 5,
    /// `resources/directory/read` (Skills extension); the cursor is also bound to the
    /// directory's URI.
    Directory = 6,
}
