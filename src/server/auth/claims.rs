//! The one claims checker both bundled verifiers use: the JWT verifier on a signed token's
//! payload, the introspection verifier on the authorization server's answer (RFC 7662 §2.2
//! uses the same claim names as RFC 7519).
//!
//! The checks, in this order (the first that fails is the error):
//!
//! 1. `iss`: when [`Need::Required`] it must be present; whenever issuers are configured it
//!    must be one of them (an absent `iss` then is [`VerifyError::WrongIssuer`]);
//! 2. `aud` (a string or an array) must contain this resource's identifier (RFC 8707); an
//!    absent `aud` is refused, so a token minted for no audience is never taken;
//! 3. `exp`: when required it must be present; a token is expired once
//!    `now >= exp + leeway`;
//! 4. `nbf`, when present, makes the token not yet valid while `now + leeway < nbf`;
//! 5. `sub` must be a non-empty string (the principal).

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::{Principal, VerifyError};
use crate::core::Clock;

/// Whether a claim must be present.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Need {
    /// Absent is [`VerifyError::MissingClaim`].
    Required,
    /// Absent is fine; present is still checked.
    Optional,
}

/// The rules of one verifier: who may issue, which audience, how much skew.
pub(crate) struct ClaimRules {
    /// This resource's identifier, the audience a token must name.
    pub(crate) resource: String,
    /// Trusted issuers; empty means any (only the introspection verifier allows that: the
    /// answer comes from the configured endpoint itself).
    pub(crate) issuers: BTreeSet<String>,
    /// Whether `iss` must be present.
    pub(crate) iss: Need,
    /// Whether `exp` must be present.
    pub(crate) exp: Need,
    /// Skew tolerated on `exp` and `nbf`, whole seconds.
    pub(crate) leeway_s: u64,
    /// The clock `exp` and `nbf` are read against.
    pub(crate) clock: Arc<dyn Clock>,
}

impl ClaimRules {
    /// The principal these claims speak for, or why they are refused (see the module docs).
    pub(crate) fn check(&self, object: &Map<String, Value>) -> Result<Principal, VerifyError> {
        let iss = match object.get("iss") {
            None if self.iss == Need::Required => return Err(VerifyError::MissingClaim("iss")),
            None => None,
            Some(Value::String(iss)) => Some(iss.as_str()),
            Some(_) => return Err(VerifyError::MissingClaim("iss")),
        };
        if !self.issuers.is_empty() && !iss.is_some_and(|i| self.issuers.contains(i)) {
            return Err(VerifyError::WrongIssuer);
        }
        let audience_ok = match object.get("aud") {
            Some(Value::String(aud)) => *aud == self.resource,
            Some(Value::Array(auds)) => auds.iter().any(|a| a.as_str() == Some(&self.resource)),
            Some(_) => false,
            None => return Err(VerifyError::MissingClaim("aud")),
        };
        if !audience_ok {
            return Err(VerifyError::WrongAudience);
        }
        let now = self.clock.now_ms() / 1000;
        let exp = match object.get("exp") {
            None if self.exp == Need::Required => return Err(VerifyError::MissingClaim("exp")),
            None => None,
            Some(v) => Some(numeric_date(v).ok_or(VerifyError::MissingClaim("exp"))?),
        };
        if exp.is_some_and(|exp| now >= exp.saturating_add(self.leeway_s)) {
            return Err(VerifyError::Expired);
        }
        if let Some(nbf) = object.get("nbf") {
            let nbf = numeric_date(nbf).ok_or(VerifyError::MissingClaim("nbf"))?;
            if now.saturating_add(self.leeway_s) < nbf {
                return Err(VerifyError::NotYetValid);
            }
        }
        let sub = object
            .get("sub")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or(VerifyError::MissingClaim("sub"))?;
        let mut principal = Principal::new(sub).with_scopes(token_scopes(object));
        if let Some(iss) = iss {
            principal = principal.with_issuer(iss);
        }
        if let Some(client) = object
            .get("client_id")
            .or_else(|| object.get("azp"))
            .and_then(Value::as_str)
        {
            principal = principal.with_client_id(client);
        }
        principal.expires_at = exp;
        Ok(principal)
    }
}

/// A JWT NumericDate (seconds, possibly fractional) as whole seconds, floored; negative or
/// non-numeric is `None`.
fn numeric_date(value: &Value) -> Option<u64> {
    let n = value.as_number()?;
    if let Some(u) = n.as_u64() {
        return Some(u);
    }
    let f = n.as_f64()?;
    if f.is_finite() && f >= 0.0 {
        // Saturating float-to-int conversion; the value is non-negative and finite.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        Some(f.floor() as u64)
    } else {
        None
    }
}

/// Granted scopes: the space-separated `scope` claim (RFC 9068 / RFC 8693), else an `scp`
/// array or string (a common alternative).
fn token_scopes(object: &Map<String, Value>) -> Vec<String> {
    match object.get("scope").or_else(|| object.get("scp")) {
        Some(Value::String(s)) => s
            .split(' ')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::atomic::{AtomicU64, Ordering};

    struct At(AtomicU64);
    impl Clock for At {
        fn now_ms(&self) -> u64 {
            self.0.load(Ordering::SeqCst)
        }
    }

    const NOW: u64 = 1_000_000;
    const RESOURCE: &str = "https://mcp.example.com/mcp";
    const ISSUER: &str = "https://auth.example.com";

    fn rules(iss: Need, exp: Need, issuers: &[&str]) -> ClaimRules {
        ClaimRules {
            resource: RESOURCE.into(),
            issuers: issuers.iter().map(|s| (*s).to_owned()).collect(),
            iss,
            exp,
            leeway_s: 30,
            clock: Arc::new(At(AtomicU64::new(NOW * 1000))),
        }
    }

    fn object(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("object")
    }

    #[test]
    fn numeric_dates_floor_and_refuse_negatives() {
        assert_eq!(numeric_date(&json!(10)), Some(10));
        assert_eq!(numeric_date(&json!(10.9)), Some(10));
        assert_eq!(numeric_date(&json!(-1)), None);
        assert_eq!(numeric_date(&json!("10")), None);
    }

    #[test]
    fn scopes_come_from_scope_or_scp() {
        assert_eq!(token_scopes(&object(json!({"scope": "a  b"}))), ["a", "b"]);
        assert_eq!(
            token_scopes(&object(json!({"scp": ["a", 1, "c"]}))),
            ["a", "c"]
        );
        assert!(token_scopes(&object(json!({}))).is_empty());
    }

    /// The rules both verifiers share, one table: each claim's refusal and its variant.
    #[test]
    fn d44_one_claims_checker_for_both_verifiers() {
        let good = json!({"iss": ISSUER, "aud": RESOURCE, "sub": "alice", "exp": NOW + 60,
            "azp": "c1", "scope": "a b"});
        let strict = rules(Need::Required, Need::Required, &[ISSUER]);
        let p = strict.check(&object(good.clone())).expect("good");
        assert_eq!(p.subject, "alice");
        assert_eq!(p.issuer.as_deref(), Some(ISSUER));
        assert_eq!(p.client_id.as_deref(), Some("c1"));
        assert_eq!(p.expires_at, Some(NOW + 60));
        assert_eq!(p.scopes.len(), 2);
        let with = |k: &str, v: Value| {
            let mut a = good.clone();
            a[k] = v;
            object(a)
        };
        let without = |k: &str| {
            let mut a = object(good.clone());
            a.remove(k);
            a
        };
        for (claims, expected) in [
            (without("iss"), VerifyError::MissingClaim("iss")),
            (with("iss", json!(7)), VerifyError::MissingClaim("iss")),
            (with("iss", json!("https://evil")), VerifyError::WrongIssuer),
            (without("aud"), VerifyError::MissingClaim("aud")),
            (
                with("aud", json!("https://x/mcp")),
                VerifyError::WrongAudience,
            ),
            (
                with("aud", json!(["https://x/mcp"])),
                VerifyError::WrongAudience,
            ),
            (with("aud", json!(1)), VerifyError::WrongAudience),
            (without("exp"), VerifyError::MissingClaim("exp")),
            (with("exp", json!("soon")), VerifyError::MissingClaim("exp")),
            // Expired at exp + leeway exactly; valid one second before.
            (with("exp", json!(NOW - 30)), VerifyError::Expired),
            (with("nbf", json!(NOW + 31)), VerifyError::NotYetValid),
            (with("nbf", json!(-5)), VerifyError::MissingClaim("nbf")),
            (without("sub"), VerifyError::MissingClaim("sub")),
            (with("sub", json!("")), VerifyError::MissingClaim("sub")),
        ] {
            assert_eq!(strict.check(&claims).err(), Some(expected), "{claims:?}");
        }
        assert!(strict.check(&with("exp", json!(NOW - 29))).is_ok());
        assert!(strict.check(&with("nbf", json!(NOW + 30))).is_ok());

        // The introspection shape: iss and exp optional, but checked when present, and a
        // configured issuer still needs an `iss` that names it.
        let lenient = rules(Need::Optional, Need::Optional, &[]);
        let bare = lenient
            .check(&object(json!({"aud": [RESOURCE], "sub": "svc"})))
            .expect("bare");
        assert_eq!((bare.issuer, bare.expires_at), (None, None));
        assert_eq!(
            lenient.check(&with("exp", json!(NOW - 30))).err(),
            Some(VerifyError::Expired)
        );
        let pinned = rules(Need::Optional, Need::Optional, &[ISSUER]);
        assert_eq!(
            pinned.check(&without("iss")).err(),
            Some(VerifyError::WrongIssuer)
        );
        assert!(pinned.check(&without("exp")).is_ok());
    }
}
