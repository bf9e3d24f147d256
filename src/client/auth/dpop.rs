//! DPoP (RFC 9449): tokens bound to a key only this client holds, so a stolen access token
//! (or refresh token) is useless without it.
//!
//! - [`DpopKey`]: a fresh P-256 key per [`super::OAuthClient`] (RustCrypto `p256`, signed
//!   through `jsonwebtoken`); its public half travels in every proof's `jwk` header, its
//!   RFC 7638 thumbprint is what the authorization server binds the token to (`cnf.jkt`).
//! - [`Dpop`]: the key plus the nonces the servers supplied (RFC 9449 §8 for the
//!   authorization server, §9 for the resource server), one slot each; a proof carries the
//!   latest nonce of the server it goes to.
//! - A proof (`typ: dpop+jwt`, `ES256`) names the method (`htm`), the URL without query and
//!   fragment (`htu`), `iat` and a fresh random `jti`; one for a resource request adds `ath`,
//!   the access token's SHA-256 (§4.2).
//!
//! The client uses DPoP only when the application gave it a key
//! ([`super::OAuthClient::with_dpop`]) and the authorization server lists `ES256` in
//! `dpop_signing_alg_values_supported`; otherwise tokens stay bearer tokens.

use std::fmt;
use std::sync::{Mutex, PoisonError};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use jsonwebtoken::jwk::{Jwk, ThumbprintHash};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use p256::pkcs8::EncodePrivateKey as _;
use sha2::{Digest as _, Sha256};

use super::flow::Secret;
use super::AuthError;
use crate::client::http::valid_dpop_nonce;

/// The `typ` of a DPoP proof (RFC 9449 §4.2).
pub const DPOP_PROOF_TYP: &str = "dpop+jwt";

/// The one proof algorithm this client signs with; the authorization server must list it.
pub const DPOP_ALGORITHM: &str = "ES256";

/// Random bytes in a proof's `jti`: 128 bits, so proofs never repeat (§4.2, §11.1).
pub const DPOP_JTI_BYTES: usize = 16;

/// How many random 32-byte strings key generation tries before giving up: a valid P-256
/// scalar is all but every string (failure odds about 2^-32 each), so more than a few
/// failures means the random source is broken (say, all zeros), not unlucky.
pub const MAX_KEY_GENERATION_TRIES: usize = 4;

/// A DPoP signing key (P-256). Its `Debug` shows only the public thumbprint.
pub struct DpopKey {
    encoding: EncodingKey,
    jwk: Jwk,
    thumbprint: String,
}

impl fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DpopKey")
            .field("jkt", &self.thumbprint)
            .finish_non_exhaustive()
    }
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `htu`: the URL without its query and fragment (RFC 9449 §4.2).
fn htu(url: &str) -> &str {
    url.split(['?', '#']).next().unwrap_or_default()
}

impl DpopKey {
    /// A fresh key from the system's random source.
    ///
    /// # Errors
    /// [`AuthError::Random`] when the random source fails (or yields no valid key within
    /// [`MAX_KEY_GENERATION_TRIES`]).
    pub fn generate() -> Result<DpopKey, AuthError> {
        for _ in 0..MAX_KEY_GENERATION_TRIES {
            let mut bytes = [0u8; 32];
            getrandom::getrandom(&mut bytes).map_err(|_| AuthError::Random)?;
            if let Ok(secret) = p256::SecretKey::from_slice(&bytes) {
                let der = secret.to_pkcs8_der().map_err(|_| AuthError::Random)?;
                return DpopKey::from_pkcs8_der(der.as_bytes());
            }
        }
        Err(AuthError::Random)
    }

    /// A key from a PKCS#8 DER P-256 private key (for an application that keeps its key).
    ///
    /// # Errors
    /// [`AuthError::InvalidSigningKey`] when it is not one.
    pub fn from_pkcs8_der(der: &[u8]) -> Result<DpopKey, AuthError> {
        let encoding = EncodingKey::from_ec_der(der);
        let jwk = Jwk::from_encoding_key(&encoding, Algorithm::ES256)
            .map_err(|_| AuthError::InvalidSigningKey)?;
        let thumbprint = jwk.thumbprint(ThumbprintHash::SHA256);
        Ok(DpopKey {
            encoding,
            jwk,
            thumbprint,
        })
    }

    /// The RFC 7638 SHA-256 thumbprint of the public key: the `jkt` a bound token names.
    pub fn thumbprint(&self) -> &str {
        &self.thumbprint
    }

    /// The public key as a JWK (what each proof's header carries).
    pub fn public_jwk(&self) -> &Jwk {
        &self.jwk
    }

    /// A proof for one request: `method` to `url`, with `ath` for `access_token` and the
    /// server's `nonce` when given.
    ///
    /// # Errors
    /// [`AuthError::Random`] when no `jti` can be drawn, [`AuthError::InvalidSigningKey`]
    /// when signing fails.
    pub fn proof(
        &self,
        method: &str,
        url: &str,
        access_token: Option<&Secret>,
        nonce: Option<&str>,
    ) -> Result<String, AuthError> {
        let mut jti = [0u8; DPOP_JTI_BYTES];
        getrandom::getrandom(&mut jti).map_err(|_| AuthError::Random)?;
        let mut claims = serde_json::json!({
            "jti": URL_SAFE_NO_PAD.encode(jti),
            "htm": method,
            "htu": htu(url),
            "iat": unix_now(),
        });
        if let Some(token) = access_token {
            claims["ath"] = URL_SAFE_NO_PAD
                .encode(Sha256::digest(token.expose().as_bytes()))
                .into();
        }
        if let Some(nonce) = nonce {
            claims["nonce"] = nonce.into();
        }
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some(DPOP_PROOF_TYP.to_owned());
        header.jwk = Some(self.jwk.clone());
        jsonwebtoken::encode(&header, &claims, &self.encoding)
            .map_err(|_| AuthError::InvalidSigningKey)
    }
}

/// Which server a nonce came from (each keeps its own, RFC 9449 §8 and §9).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NonceFrom {
    /// The authorization server's token endpoint (`DPoP-Nonce` on its answer).
    AuthorizationServer,
    /// The MCP server (`DPoP-Nonce` on its 401 `use_dpop_nonce`).
    ResourceServer,
}

/// A [`DpopKey`] with the nonces the servers supplied.
#[derive(Debug)]
pub struct Dpop {
    key: DpopKey,
    nonces: Mutex<[Option<String>; 2]>,
}

impl Dpop {
    /// DPoP with `key`, no nonce known yet.
    pub fn new(key: DpopKey) -> Dpop {
        Dpop {
            key,
            nonces: Mutex::new([None, None]),
        }
    }

    /// The key.
    pub fn key(&self) -> &DpopKey {
        &self.key
    }

    /// The latest nonce `from` supplied.
    pub fn nonce(&self, from: NonceFrom) -> Option<String> {
        self.nonces.lock().unwrap_or_else(PoisonError::into_inner)[from as usize].clone()
    }

    /// Keeps `nonce` for the next proofs to `from`. Returns whether it is new (differs from
    /// the one kept): a server repeating the nonce a proof already carried is not asked again.
    ///
    /// # Errors
    /// [`AuthError::InvalidDpopNonce`] when it is not RFC 9449 §8.1 `1*NQCHAR` within
    /// [`crate::client::http::MAX_DPOP_NONCE_BYTES`] (it would be echoed in every proof).
    pub fn set_nonce(&self, from: NonceFrom, nonce: &str) -> Result<bool, AuthError> {
        if !valid_dpop_nonce(nonce) {
            return Err(AuthError::InvalidDpopNonce);
        }
        let mut nonces = self.nonces.lock().unwrap_or_else(PoisonError::into_inner);
        let slot = &mut nonces[from as usize];
        let new = slot.as_deref() != Some(nonce);
        *slot = Some(nonce.to_owned());
        Ok(new)
    }

    /// A proof for `method` to `url` carrying the latest nonce of `from`.
    ///
    /// # Errors
    /// As [`DpopKey::proof`].
    pub fn proof(
        &self,
        from: NonceFrom,
        method: &str,
        url: &str,
        access_token: Option<&Secret>,
    ) -> Result<String, AuthError> {
        let nonce = self.nonce(from);
        self.key.proof(method, url, access_token, nonce.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(proof: &str) -> (serde_json::Value, serde_json::Value) {
        let mut parts = proof.split('.');
        let mut decode = || {
            serde_json::from_slice::<serde_json::Value>(
                &URL_SAFE_NO_PAD.decode(parts.next().unwrap()).unwrap(),
            )
            .unwrap()
        };
        (decode(), decode())
    }

    /// RFC 9449 §4.2: `typ`, `alg`, the public `jwk` (no `d`); `htm`, `htu` without query and
    /// fragment, `iat`, a fresh `jti`, `ath` = BASE64URL(SHA-256(token)), the nonce when
    /// given; the signature verifies with the header's key.
    #[test]
    fn rfc9449_proof_syntax_and_signature() {
        let key = DpopKey::generate().unwrap();
        let token = Secret::new("AT-1");
        let proof = key
            .proof(
                "POST",
                "https://mcp.example.com/mcp?x=1#f",
                Some(&token),
                Some("n-1"),
            )
            .unwrap();
        let (header, claims) = parts(&proof);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["jwk"]["kty"], "EC");
        assert_eq!(header["jwk"]["crv"], "P-256");
        assert!(header["jwk"].get("d").is_none(), "{header}");
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://mcp.example.com/mcp");
        assert_eq!(claims["nonce"], "n-1");
        assert_eq!(
            claims["ath"],
            URL_SAFE_NO_PAD.encode(Sha256::digest(b"AT-1"))
        );
        let now = unix_now();
        let iat = claims["iat"].as_u64().unwrap();
        assert!(iat <= now && now - iat < 5);
        let jwk: Jwk = serde_json::from_value(header["jwk"].clone()).unwrap();
        let decoding = jsonwebtoken::DecodingKey::from_jwk(&jwk).unwrap();
        let mut validation = jsonwebtoken::Validation::new(Algorithm::ES256);
        validation.required_spec_claims.clear();
        validation.validate_exp = false;
        jsonwebtoken::decode::<serde_json::Value>(&proof, &decoding, &validation).unwrap();
        // The thumbprint is RFC 7638's over the public members.
        assert_eq!(jwk.thumbprint(ThumbprintHash::SHA256), key.thumbprint());
        assert_eq!(key.thumbprint().len(), 43);
        // A token request's proof: no ath, no nonce; every proof a new jti.
        let bare = key
            .proof("POST", "https://as.example/token", None, None)
            .unwrap();
        let (_, bare) = parts(&bare);
        assert!(bare.get("ath").is_none() && bare.get("nonce").is_none());
        assert_ne!(bare["jti"], claims["jti"]);
        assert_eq!(
            URL_SAFE_NO_PAD
                .decode(bare["jti"].as_str().unwrap())
                .unwrap()
                .len(),
            DPOP_JTI_BYTES
        );
        // Debug shows the thumbprint only.
        assert_eq!(
            format!("{key:?}"),
            format!("DpopKey {{ jkt: {:?}, .. }}", key.thumbprint())
        );
    }

    /// Nonces are kept per server; a repeated one is not new; one that is not `1*NQCHAR` is a
    /// typed refusal and leaves the kept one in place.
    #[test]
    fn rfc9449_nonces_per_server() {
        let dpop = Dpop::new(DpopKey::generate().unwrap());
        assert_eq!(
            dpop.set_nonce(NonceFrom::AuthorizationServer, "a1"),
            Ok(true)
        );
        assert_eq!(
            dpop.set_nonce(NonceFrom::AuthorizationServer, "a1"),
            Ok(false)
        );
        assert_eq!(dpop.nonce(NonceFrom::ResourceServer), None);
        assert_eq!(dpop.set_nonce(NonceFrom::ResourceServer, "r1"), Ok(true));
        assert_eq!(
            dpop.set_nonce(NonceFrom::ResourceServer, "bad nonce"),
            Err(AuthError::InvalidDpopNonce)
        );
        assert_eq!(dpop.nonce(NonceFrom::ResourceServer).as_deref(), Some("r1"));
        assert_eq!(
            dpop.nonce(NonceFrom::AuthorizationServer).as_deref(),
            Some("a1")
        );
        let proof = dpop
            .proof(
                NonceFrom::ResourceServer,
                "POST",
                "http://127.0.0.1/mcp",
                None,
            )
            .unwrap();
        assert_eq!(parts(&proof).1["nonce"], "r1");
    }

    /// `MAX_DPOP_NONCE_BYTES` at the bound and one past; the NQCHAR set's edges.
    #[test]
    fn dpop_nonce_bound_at_and_past() {
        use crate::client::http::MAX_DPOP_NONCE_BYTES;
        let dpop = Dpop::new(DpopKey::generate().unwrap());
        let at = "n".repeat(MAX_DPOP_NONCE_BYTES);
        assert_eq!(dpop.set_nonce(NonceFrom::ResourceServer, &at), Ok(true));
        assert_eq!(
            dpop.set_nonce(NonceFrom::ResourceServer, &format!("{at}n")),
            Err(AuthError::InvalidDpopNonce)
        );
        assert!(valid_dpop_nonce("!#[]~"));
        for bad in ["", "a b", "a\"b", "a\\b", "caf\u{e9}", "a\tb"] {
            assert!(!valid_dpop_nonce(bad), "{bad:?}");
        }
    }
}
