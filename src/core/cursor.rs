//! Opaque, tamper-evident, caller-bound, expiring pagination cursors.
//!
//! A cursor is `base64url(version ‖ list kind ‖ offset ‖ expiry ‖ tag)` where the tag is a
//! truncated HMAC-SHA256 over the payload, the caller's scope and the registry digest. A
//! cursor that was altered, minted for another caller, another list or another registry, or
//! that has expired is refused with -32602.
//!
//! `tools/list` cursors (version 2) carry the last name served instead of an offset:
//! `base64url(2 ‖ list kind ‖ expiry ‖ name ‖ tag)`, so the next page seeks to that name in
//! the registry's sorted index (O(log n)) instead of walking every earlier visible tool
//! (issue #23). The same tag binds them to the caller, the list and the registry.

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
/// The version of a cursor that carries the last key served ([`CursorKey::mint_after`]).
const VERSION_AFTER: u8 = 2;
/// Version, kind and expiry before the key of a version-2 cursor.
const AFTER_HEAD_LEN: usize = 10;
/// Longest key a version-2 cursor carries: a tool name is at most 128 bytes (the registry
/// refuses longer ones), so 128 keeps every cursor under 208 characters.
pub(crate) const MAX_AFTER_KEY_LEN: usize = 128;

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
        let opened = Opened {
            version: VERSION,
            kind,
            expiry_at: 6,
        };
        let payload = self.checked(&bytes, PAYLOAD_LEN, opened, caller, registry, now_ms)?;
        Ok(u32::from_be_bytes(
            payload[2..6]
                .try_into()
                .map_err(|_| CoreError::InvalidCursor)?,
        ))
    }

    /// The payload of a decoded cursor (`payload_len` bytes, then the tag) once the checks
    /// both versions share have passed, in this order: the tag (so a forged cursor learns
    /// nothing from which check refused it), the version and list kind, then the expiry.
    ///
    /// # Errors
    /// [`CoreError::InvalidCursor`] for a failed check or a payload shorter than its fields.
    fn checked<'b>(
        &self,
        bytes: &'b [u8],
        payload_len: usize,
        opened: Opened,
        caller: &Caller,
        registry: &[u8; 32],
        now_ms: u64,
    ) -> Result<&'b [u8], CoreError> {
        let (payload, tag) = bytes
            .split_at_checked(payload_len)
            .ok_or(CoreError::InvalidCursor)?;
        self.tag(payload, caller, registry)
            .verify_truncated_left(tag)
            .map_err(|_| CoreError::InvalidCursor)?;
        if payload.first() != Some(&opened.version) || payload.get(1) != Some(&(opened.kind as u8))
        {
            return Err(CoreError::InvalidCursor);
        }
        let expires = payload
            .get(opened.expiry_at..opened.expiry_at + 8)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_be_bytes)
            .ok_or(CoreError::InvalidCursor)?;
        if now_ms >= expires {
            return Err(CoreError::InvalidCursor);
        }
        Ok(payload)
    }
}

/// What a cursor of one version must say: its version byte, its list kind, and where in the
/// payload its expiry (8 bytes, big-endian milliseconds) sits.
#[derive(Debug, Clone, Copy)]
struct Opened {
    version: u8,
    kind: ListKind,
    expiry_at: usize,
}

impl CursorKey {
    /// A cursor that resumes after `key` (the last item served), for lists whose order is a
    /// sorted index by key. `key` is 1..=[`MAX_AFTER_KEY_LEN`] bytes; `None` for anything
    /// else (the caller then mints no cursor and fails closed).
    pub(crate) fn mint_after(
        &self,
        kind: ListKind,
        caller: &Caller,
        registry: &[u8; 32],
        key: &str,
        expires_ms: u64,
    ) -> Option<String> {
        if !(1..=MAX_AFTER_KEY_LEN).contains(&key.len()) {
            return None;
        }
        let mut buf = Vec::with_capacity(AFTER_HEAD_LEN + key.len() + TAG_LEN);
        buf.push(VERSION_AFTER);
        buf.push(kind as u8);
        buf.extend_from_slice(&expires_ms.to_be_bytes());
        buf.extend_from_slice(key.as_bytes());
        let tag = self.tag(&buf, caller, registry).finalize().into_bytes();
        buf.extend_from_slice(&tag[..TAG_LEN]);
        Some(URL_SAFE_NO_PAD.encode(buf))
    }

    /// The key a [`CursorKey::mint_after`] cursor resumes after, once its tag, version, list
    /// kind and expiry are checked.
    ///
    /// # Errors
    /// [`CoreError::InvalidCursor`] for anything else (an offset cursor included).
    pub(crate) fn open_after(
        &self,
        kind: ListKind,
        caller: &Caller,
        registry: &[u8; 32],
        cursor: &str,
        now_ms: u64,
    ) -> Result<String, CoreError> {
        // Checked before decoding, so an oversized cursor costs no allocation.
        if cursor.len() > (AFTER_HEAD_LEN + MAX_AFTER_KEY_LEN + TAG_LEN).div_ceil(3) * 4 {
            return Err(CoreError::InvalidCursor);
        }
        let bytes = URL_SAFE_NO_PAD
            .decode(cursor)
            .map_err(|_| CoreError::InvalidCursor)?;
        let key_len = bytes
            .len()
            .checked_sub(AFTER_HEAD_LEN + TAG_LEN)
            .ok_or(CoreError::InvalidCursor)?;
        if !(1..=MAX_AFTER_KEY_LEN).contains(&key_len) {
            return Err(CoreError::InvalidCursor);
        }
        let opened = Opened {
            version: VERSION_AFTER,
            kind,
            expiry_at: 2,
        };
        let payload = self.checked(
            &bytes,
            AFTER_HEAD_LEN + key_len,
            opened,
            caller,
            registry,
            now_ms,
        )?;
        String::from_utf8(payload[AFTER_HEAD_LEN..].to_vec()).map_err(|_| CoreError::InvalidCursor)
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

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: [u8; 32] = [7; 32];

    fn key() -> CursorKey {
        CursorKey::new([5; 32])
    }

    /// O21, issue #23: a `tools/list` cursor carries the last name served, bound like an
    /// offset cursor to the caller, the list, the registry and its expiry.
    #[test]
    fn o21_an_after_cursor_round_trips_and_is_bound() {
        let alice = Caller::new("alice");
        let c = key()
            .mint_after(ListKind::Tools, &alice, &DIGEST, "t00019", 1_000)
            .unwrap();
        let open = |k: &CursorKey, kind, who: &Caller, digest: &[u8; 32], now| {
            k.open_after(kind, who, digest, &c, now)
        };
        assert_eq!(
            open(&key(), ListKind::Tools, &alice, &DIGEST, 999).unwrap(),
            "t00019"
        );
        let refused = Err(CoreError::InvalidCursor);
        assert_eq!(
            open(&key(), ListKind::Tools, &alice, &DIGEST, 1_000),
            refused
        );
        assert_eq!(open(&key(), ListKind::Prompts, &alice, &DIGEST, 0), refused);
        assert_eq!(
            open(&key(), ListKind::Tools, &Caller::new("bob"), &DIGEST, 0),
            refused
        );
        assert_eq!(open(&key(), ListKind::Tools, &alice, &[8; 32], 0), refused);
        assert_eq!(
            open(
                &CursorKey::new([6; 32]),
                ListKind::Tools,
                &alice,
                &DIGEST,
                0
            ),
            refused
        );
    }

    /// O21: an offset cursor round-trips and is bound to the caller, the list, the registry,
    /// the key and its expiry (the last millisecond before it opens, the expiry itself does
    /// not); every one-byte change and a cursor one byte short or long are refused. The
    /// checks are the ones after cursors share ([`CursorKey::checked`]).
    #[test]
    fn o21_an_offset_cursor_round_trips_and_is_bound() {
        let alice = Caller::new("alice");
        let c = key().mint(ListKind::Prompts, &alice, &DIGEST, 40, 1_000);
        let open = |cursor: &str, kind, who: &Caller, digest: &[u8; 32], now| {
            key().open(kind, who, digest, cursor, now)
        };
        assert_eq!(open(&c, ListKind::Prompts, &alice, &DIGEST, 999), Ok(40));
        let refused = Err(CoreError::InvalidCursor);
        assert_eq!(open(&c, ListKind::Prompts, &alice, &DIGEST, 1_000), refused);
        assert_eq!(open(&c, ListKind::Tools, &alice, &DIGEST, 0), refused);
        let bob = Caller::new("bob");
        assert_eq!(open(&c, ListKind::Prompts, &bob, &DIGEST, 0), refused);
        assert_eq!(open(&c, ListKind::Prompts, &alice, &[8; 32], 0), refused);
        assert_eq!(
            CursorKey::new([6; 32]).open(ListKind::Prompts, &alice, &DIGEST, &c, 0),
            refused
        );
        let bytes = URL_SAFE_NO_PAD.decode(&c).unwrap();
        assert_eq!(bytes.len(), PAYLOAD_LEN + TAG_LEN);
        for at in 0..bytes.len() {
            let mut changed = bytes.clone();
            changed[at] ^= 1;
            let changed = URL_SAFE_NO_PAD.encode(&changed);
            assert_eq!(
                open(&changed, ListKind::Prompts, &alice, &DIGEST, 0),
                refused,
                "byte {at}"
            );
        }
        let short = URL_SAFE_NO_PAD.encode(&bytes[..bytes.len() - 1]);
        let long = URL_SAFE_NO_PAD.encode([&bytes[..], &[0]].concat());
        for cursor in [short, long, String::new()] {
            assert_eq!(
                open(&cursor, ListKind::Prompts, &alice, &DIGEST, 0),
                refused
            );
        }
    }

    /// An offset cursor is never read as an after cursor, nor the reverse, even where the
    /// lengths coincide (a 4-byte name makes both 30 bytes, under the same tag).
    #[test]
    fn o21_offset_and_after_cursors_do_not_cross() {
        let alice = Caller::new("alice");
        let offset = key().mint(ListKind::Tools, &alice, &DIGEST, 20, 1_000);
        let after = key()
            .mint_after(ListKind::Tools, &alice, &DIGEST, "abcd", 1_000)
            .unwrap();
        assert_eq!(offset.len(), after.len());
        assert_eq!(
            key().open_after(ListKind::Tools, &alice, &DIGEST, &offset, 0),
            Err(CoreError::InvalidCursor)
        );
        assert_eq!(
            key().open(ListKind::Tools, &alice, &DIGEST, &after, 0),
            Err(CoreError::InvalidCursor)
        );
    }

    /// The key bound: 128 bytes (the longest tool name) is minted and opened; 129 is not
    /// minted, and a cursor text longer than the longest valid one is refused before it is
    /// decoded. An empty key is never minted.
    #[test]
    fn the_after_key_is_bounded_at_128_bytes_and_one_past() {
        let alice = Caller::new("alice");
        let at = "n".repeat(MAX_AFTER_KEY_LEN);
        let c = key()
            .mint_after(ListKind::Tools, &alice, &DIGEST, &at, 1_000)
            .unwrap();
        assert_eq!(c.len(), 206);
        assert_eq!(
            key()
                .open_after(ListKind::Tools, &alice, &DIGEST, &c, 0)
                .unwrap(),
            at
        );
        let past = "n".repeat(MAX_AFTER_KEY_LEN + 1);
        assert_eq!(
            key().mint_after(ListKind::Tools, &alice, &DIGEST, &past, 1_000),
            None
        );
        assert_eq!(
            key().mint_after(ListKind::Tools, &alice, &DIGEST, "", 1_000),
            None
        );
        let long = format!("{c}AAAA");
        assert_eq!(
            key().open_after(ListKind::Tools, &alice, &DIGEST, &long, 0),
            Err(CoreError::InvalidCursor)
        );
        assert_eq!(
            key().open_after(ListKind::Tools, &alice, &DIGEST, "", 0),
            Err(CoreError::InvalidCursor)
        );
    }
}
