//! Sealing `requestState`: ChaCha20-Poly1305 over the ledger's [`RequestState`].
//!
//! The client must treat `requestState` as opaque but we must treat what comes back as
//! attacker-controlled, so the token is authenticated encryption of a fixed binary layout:
//! ids, digests, round, expiry and epoch, and nothing else: never answers, never argument bytes.
//! The chain record itself stays in the private ledger store; the token is a tamper-proof pointer
//! into it plus the binding the ledger re-checks.
//!
//! Token = base64url (no padding) of `format(1) ‖ key id(4, BE) ‖ nonce(12) ‖ ciphertext+tag`.
//! The 5-byte header is the AEAD's associated data, so a token cannot be re-labelled to another
//! key or format. A [`KeyRing`] holds the current key and optionally the previous one, so tokens
//! issued just before a rotation still open. The nonce is an argument (randomness is an input):
//! the core draws 12 random bytes per token, which is safe for far more tokens than one key
//! should ever seal; rotate keys to stay well inside that.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};
use sha2::{Digest as _, Sha256};

use crate::machine::ledger::{ChainId, InputMethod, RequestState};
use crate::machine::{Digest, Epoch, Tick};

/// Format byte of the current token layout.
const FORMAT: u8 = 1;
const HEADER_LEN: usize = 1 + 4;
/// Bytes of nonce per token (ChaCha20-Poly1305's 96-bit nonce).
pub const NONCE_LEN: usize = 12;
const TAG_LEN: usize = 16;
/// `chain(16) ‖ principal(32) ‖ method(1) ‖ request(32) ‖ round(1) ‖ expires(8) ‖ epoch(8)`.
const PLAINTEXT_LEN: usize = 16 + 32 + 1 + 32 + 1 + 8 + 8;
const TOKEN_BYTES: usize = HEADER_LEN + NONCE_LEN + PLAINTEXT_LEN + TAG_LEN;
/// Encoded length of every token we issue; anything else is rejected before decoding, so a
/// hostile megabyte-long `requestState` costs nothing.
pub const TOKEN_LEN: usize = (TOKEN_BYTES * 4).div_ceil(3);

/// One 256-bit sealing key with its id. `Debug` never shows the key.
#[derive(Clone, PartialEq, Eq)]
pub struct SealKey {
    id: u32,
    key: [u8; 32],
}

impl core::fmt::Debug for SealKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SealKey")
            .field("id", &self.id)
            .field("key", &"<redacted>")
            .finish()
    }
}

impl SealKey {
    /// A key from its id and 32 secret bytes.
    #[must_use]
    pub fn new(id: u32, key: [u8; 32]) -> SealKey {
        SealKey { id, key }
    }

    /// A fresh random key from the OS (used when the server is given no key ring: state is then
    /// valid only for this process).
    pub fn random(id: u32) -> Result<SealKey, getrandom::Error> {
        let mut key = [0u8; 32];
        getrandom::getrandom(&mut key)?;
        Ok(SealKey { id, key })
    }

    /// The key id written into tokens.
    #[must_use]
    pub fn id(&self) -> u32 {
        self.id
    }

    fn cipher(&self) -> ChaCha20Poly1305 {
        ChaCha20Poly1305::new(Key::from_slice(&self.key))
    }
}

/// Current key plus, during a rotation, the previous one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyRing {
    current: SealKey,
    previous: Option<SealKey>,
}

/// Key-ring construction errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyRingError {
    /// Current and previous key share an id, so tokens could not say which key sealed them.
    #[error("current and previous sealing keys have the same id")]
    DuplicateKeyId,
}

impl KeyRing {
    /// A ring with only a current key.
    #[must_use]
    pub fn new(current: SealKey) -> KeyRing {
        KeyRing {
            current,
            previous: None,
        }
    }

    /// A ring that still opens tokens of `previous`.
    pub fn with_previous(current: SealKey, previous: SealKey) -> Result<KeyRing, KeyRingError> {
        if current.id == previous.id {
            return Err(KeyRingError::DuplicateKeyId);
        }
        Ok(KeyRing {
            current,
            previous: Some(previous),
        })
    }

    /// Make `next` current; the old current becomes previous and the old previous is forgotten.
    pub fn rotate(&mut self, next: SealKey) -> Result<(), KeyRingError> {
        if next.id == self.current.id {
            return Err(KeyRingError::DuplicateKeyId);
        }
        self.previous = Some(core::mem::replace(&mut self.current, next));
        Ok(())
    }

    /// The key new tokens are sealed with.
    #[must_use]
    pub fn current(&self) -> &SealKey {
        &self.current
    }

    fn find(&self, id: u32) -> Option<&SealKey> {
        if self.current.id == id {
            Some(&self.current)
        } else {
            self.previous.as_ref().filter(|k| k.id == id)
        }
    }
}

/// Why a token did not open. Every variant reaches the client as `state_rejected`; the variants
/// exist for logs and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// Wrong length, not base64url, or an unknown format byte.
    #[error("malformed requestState")]
    Malformed,
    /// Sealed by a key this ring does not hold.
    #[error("requestState sealed by an unknown key")]
    UnknownKey,
    /// Authentication failed (tampered, or forged under a known key id).
    #[error("requestState failed authentication")]
    Tampered,
}

fn encode_state(s: &RequestState) -> [u8; PLAINTEXT_LEN] {
    let mut out = [0u8; PLAINTEXT_LEN];
    let mut at = 0;
    let mut put = |bytes: &[u8]| {
        out[at..at + bytes.len()].copy_from_slice(bytes);
        at += bytes.len();
    };
    put(&s.chain.0);
    put(&s.principal.0);
    put(&[s.method.code()]);
    put(&s.request.0);
    put(&[s.round]);
    put(&s.expires.0.to_be_bytes());
    put(&s.epoch.0.to_be_bytes());
    out
}

fn decode_state(p: &[u8]) -> Option<RequestState> {
    if p.len() != PLAINTEXT_LEN {
        return None;
    }
    let (chain, rest) = p.split_at(16);
    let (principal, rest) = rest.split_at(32);
    let (method, rest) = rest.split_at(1);
    let (request, rest) = rest.split_at(32);
    let (round, rest) = rest.split_at(1);
    let (expires, epoch) = rest.split_at(8);
    Some(RequestState {
        chain: ChainId(chain.try_into().ok()?),
        principal: Digest(principal.try_into().ok()?),
        method: InputMethod::from_code(method[0])?,
        request: Digest(request.try_into().ok()?),
        round: round[0],
        expires: Tick(u64::from_be_bytes(expires.try_into().ok()?)),
        epoch: Epoch(u64::from_be_bytes(epoch.try_into().ok()?)),
    })
}

/// 12 fresh random nonce bytes from the OS, for [`seal`].
pub fn random_nonce() -> Result<[u8; NONCE_LEN], getrandom::Error> {
    let mut nonce = [0u8; NONCE_LEN];
    getrandom::getrandom(&mut nonce)?;
    Ok(nonce)
}

/// A fresh random chain id from the OS, for `Chain::new` (the machine never draws randomness).
pub fn random_chain_id() -> Result<ChainId, getrandom::Error> {
    let mut id = [0u8; 16];
    getrandom::getrandom(&mut id)?;
    Ok(ChainId(id))
}

/// Seal `state` under the ring's current key with this (random, never reused) nonce.
#[must_use]
pub fn seal(ring: &KeyRing, nonce: [u8; NONCE_LEN], state: &RequestState) -> String {
    let key = ring.current();
    let mut header = [0u8; HEADER_LEN];
    header[0] = FORMAT;
    header[1..].copy_from_slice(&key.id.to_be_bytes());
    let plaintext = encode_state(state);
    // Encryption of a fixed-size buffer into a Vec cannot fail (the only error is a length
    // overflow far beyond 99 bytes), so the fallback below is never taken.
    let ciphertext = key
        .cipher()
        .encrypt(
            Nonce::from_slice(&nonce),
            Payload {
                msg: &plaintext,
                aad: &header,
            },
        )
        .unwrap_or_default();
    let mut raw = Vec::with_capacity(TOKEN_BYTES);
    raw.extend_from_slice(&header);
    raw.extend_from_slice(&nonce);
    raw.extend_from_slice(&ciphertext);
    URL_SAFE_NO_PAD.encode(raw)
}

/// Open a token with whichever ring key sealed it.
pub fn open(ring: &KeyRing, token: &str) -> Result<RequestState, OpenError> {
    if token.len() != TOKEN_LEN {
        return Err(OpenError::Malformed);
    }
    let raw = URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| OpenError::Malformed)?;
    if raw.len() != TOKEN_BYTES || raw[0] != FORMAT {
        return Err(OpenError::Malformed);
    }
    let (header, rest) = raw.split_at(HEADER_LEN);
    let (nonce, ciphertext) = rest.split_at(NONCE_LEN);
    let id = u32::from_be_bytes([header[1], header[2], header[3], header[4]]);
    let key = ring.find(id).ok_or(OpenError::UnknownKey)?;
    let plaintext = key
        .cipher()
        .decrypt(
            Nonce::from_slice(nonce),
            Payload {
                msg: ciphertext,
                aad: header,
            },
        )
        .map_err(|_| OpenError::Tampered)?;
    decode_state(&plaintext).ok_or(OpenError::Tampered)
}

fn framed(hasher: &mut Sha256, bytes: &[u8]) {
    hasher.update((bytes.len() as u64).to_be_bytes());
    hasher.update(bytes);
}

/// Digest of a caller's stable principal id (`core::Caller`), domain-separated so it can never
/// collide with a request digest.
#[must_use]
pub fn principal_digest(principal_id: &[u8]) -> Digest {
    let mut h = Sha256::new();
    framed(&mut h, b"strict-mcp principal v1");
    framed(&mut h, principal_id);
    Digest(h.finalize().into())
}

/// Digest of a request's salient parameters: the method, the target (tool name, resource URI or
/// prompt name) and the exact argument bytes as received. Length framing keeps
/// `("ab", "c")` and `("a", "bc")` apart.
#[must_use]
pub fn request_digest(method: InputMethod, target: &str, argument_bytes: &[u8]) -> Digest {
    let mut h = Sha256::new();
    framed(&mut h, b"strict-mcp request v1");
    framed(&mut h, method.as_str().as_bytes());
    framed(&mut h, target.as_bytes());
    framed(&mut h, argument_bytes);
    Digest(h.finalize().into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> RequestState {
        RequestState {
            chain: ChainId([3; 16]),
            principal: principal_digest(b"alice"),
            method: InputMethod::ToolsCall,
            request: request_digest(InputMethod::ToolsCall, "deploy", b"{\"env\":\"prod\"}"),
            round: 4,
            expires: Tick(123_456),
            epoch: Epoch(2),
        }
    }

    fn ring(id: u32, byte: u8) -> KeyRing {
        KeyRing::new(SealKey::new(id, [byte; 32]))
    }

    #[test]
    fn i6_round_trip_and_fixed_length() {
        let r = ring(1, 7);
        let token = seal(&r, [9; 12], &state());
        assert_eq!(token.len(), TOKEN_LEN);
        assert!(token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        assert_eq!(open(&r, &token), Ok(state()));
    }

    #[test]
    fn i6_foreign_key_and_unknown_key_are_rejected() {
        let token = seal(&ring(1, 7), [0; 12], &state());
        assert_eq!(
            open(&ring(1, 8), &token),
            Err(OpenError::Tampered),
            "same id, other secret"
        );
        assert_eq!(open(&ring(2, 7), &token), Err(OpenError::UnknownKey));
    }

    #[test]
    fn key_rotation_keeps_previous_tokens_for_one_generation() {
        let mut r = ring(1, 1);
        let old = seal(&r, [0; 12], &state());
        r.rotate(SealKey::new(2, [2; 32])).unwrap();
        assert_eq!(open(&r, &old), Ok(state()));
        let newer = seal(&r, [1; 12], &state());
        r.rotate(SealKey::new(3, [3; 32])).unwrap();
        assert_eq!(open(&r, &newer), Ok(state()));
        assert_eq!(
            open(&r, &old),
            Err(OpenError::UnknownKey),
            "two rotations forget key 1"
        );
        assert_eq!(
            r.rotate(SealKey::new(3, [4; 32])),
            Err(KeyRingError::DuplicateKeyId)
        );
        assert_eq!(
            KeyRing::with_previous(SealKey::new(5, [0; 32]), SealKey::new(5, [1; 32])),
            Err(KeyRingError::DuplicateKeyId)
        );
    }

    #[test]
    fn malformed_tokens_are_rejected_before_decryption() {
        let r = ring(1, 7);
        assert_eq!(open(&r, ""), Err(OpenError::Malformed));
        assert_eq!(open(&r, &"A".repeat(10_000)), Err(OpenError::Malformed));
        let token = seal(&r, [0; 12], &state());
        let mut not_b64 = token.clone();
        not_b64.replace_range(0..1, "*");
        assert_eq!(open(&r, &not_b64), Err(OpenError::Malformed));
    }

    #[test]
    fn debug_never_shows_key_bytes() {
        let text = format!("{:?}", ring(1, 0xAB));
        assert!(
            !text.contains("171") && !text.to_lowercase().contains("ab, "),
            "{text}"
        );
        assert!(text.contains("redacted"));
    }

    #[test]
    fn i7_digests_separate_method_target_arguments_and_domains() {
        let a = request_digest(InputMethod::ToolsCall, "ab", b"c");
        assert_ne!(a, request_digest(InputMethod::ToolsCall, "a", b"bc"));
        assert_ne!(a, request_digest(InputMethod::PromptsGet, "ab", b"c"));
        // O44: exact bytes, so whitespace changes the digest.
        assert_ne!(
            request_digest(InputMethod::ToolsCall, "t", b"{\"a\":1}"),
            request_digest(InputMethod::ToolsCall, "t", b"{\"a\": 1}")
        );
        assert_ne!(principal_digest(b"x"), principal_digest(b"y"));
        assert_eq!(principal_digest(b"x"), principal_digest(b"x"));
    }

    #[test]
    fn random_nonces_and_chain_ids_differ() {
        assert_ne!(random_nonce().unwrap(), random_nonce().unwrap());
        assert_ne!(random_chain_id().unwrap(), random_chain_id().unwrap());
    }

    #[test]
    fn random_key_has_requested_id() {
        let k = SealKey::random(42).unwrap();
        assert_eq!(k.id(), 42);
        assert_ne!(k, SealKey::random(42).unwrap());
    }
}
