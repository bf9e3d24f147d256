//! Strict/lossless diagnostics: what the client read leniently, and strict mode.
//!
//! The spec asks clients to be lenient where older or sloppy servers differ: a missing
//! `resultType` is `complete`, a missing or negative `ttlMs` is 0 and a missing
//! `cacheScope` is `private`. The client does exactly that by default, and records each
//! such reading as a [`Leniency`] on the client ([`crate::client::Client::diagnostics`]), so a
//! host or a conformance check can see what a server got wrong without the call failing.
//! With [`crate::client::ClientOptions::strict`] every leniency is a typed error instead
//! ([`crate::client::InvalidResult::Lenient`]).

use serde_json::{Map, Value};

use crate::wire::result::Method;

/// The most leniencies the client keeps; older ones are dropped first (and counted), so a
/// long-lived client talking to a sloppy server stays bounded.
pub const MAX_DIAGNOSTICS: usize = 256;

/// One lenient reading of a server's result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Leniency {
    /// The result had no `resultType`; it was read as `complete`.
    #[error("{method} result has no resultType; read as complete")]
    MissingResultType {
        /// The request's method.
        method: String,
    },
    /// A cacheable result had no `ttlMs`; read as 0, immediately stale.
    #[error("{method} result has no ttlMs; read as 0")]
    MissingTtl {
        /// The request's method.
        method: String,
    },
    /// `ttlMs` was negative; read as 0.
    #[error("{method} result has a negative ttlMs {ttl}; read as 0")]
    NegativeTtl {
        /// The request's method.
        method: String,
        /// The value exactly as received.
        ttl: String,
    },
    /// `ttlMs` was not a non-negative integer (a fraction, `null`, a string); read as 0.
    #[error("{method} result has an invalid ttlMs {ttl}; read as 0")]
    InvalidTtl {
        /// The request's method.
        method: String,
        /// The value exactly as received.
        ttl: String,
    },
    /// A cacheable result had no `cacheScope`; read as `private`.
    #[error("{method} result has no cacheScope; read as private")]
    MissingCacheScope {
        /// The request's method.
        method: String,
    },
    /// `cacheScope` was neither `public` nor `private`; read as `private`, which never
    /// shares an entry across credentials.
    #[error("{method} result has an unknown cacheScope {scope}; read as private")]
    UnknownCacheScope {
        /// The request's method.
        method: String,
        /// The value exactly as received.
        scope: String,
    },
}

/// The bounded list of leniencies a client recorded.
#[derive(Debug, Default)]
pub(crate) struct Diagnostics {
    kept: std::collections::VecDeque<Leniency>,
    dropped: u64,
}

impl Diagnostics {
    pub(crate) fn record(&mut self, leniency: Leniency) {
        if self.kept.len() == MAX_DIAGNOSTICS {
            self.kept.pop_front();
            self.dropped += 1;
        }
        self.kept.push_back(leniency);
    }

    pub(crate) fn snapshot(&self) -> (Vec<Leniency>, u64) {
        (self.kept.iter().cloned().collect(), self.dropped)
    }

    pub(crate) fn take(&mut self) -> (Vec<Leniency>, u64) {
        let out = (self.kept.drain(..).collect(), self.dropped);
        self.dropped = 0;
        out
    }
}

/// Finds every leniency `result` needs for `method` and rewrites the result to its lenient
/// reading where the wire decoder would not (a non-integer `ttlMs`, an unknown `cacheScope`).
/// Only complete results are looked at: an `input_required` result carries no cache hints.
pub(crate) fn inspect(method: Method, result: &mut Value) -> Vec<Leniency> {
    let mut found = Vec::new();
    let Some(object) = result.as_object_mut() else {
        return found;
    };
    let name = || method.name().to_owned();
    match object.get("resultType") {
        None => found.push(Leniency::MissingResultType { method: name() }),
        Some(Value::String(s)) if s == "complete" => {}
        // input_required, an unknown value or a non-string: the decoder decides.
        Some(_) => return found,
    }
    if !method.is_cacheable() {
        return found;
    }
    inspect_ttl(object, method, &mut found);
    match object.get("cacheScope") {
        None => found.push(Leniency::MissingCacheScope { method: name() }),
        Some(Value::String(s)) if s == "public" || s == "private" => {}
        Some(other) => {
            found.push(Leniency::UnknownCacheScope {
                method: name(),
                scope: other.to_string(),
            });
            object.insert("cacheScope".into(), Value::from("private"));
        }
    }
    found
}

fn inspect_ttl(object: &mut Map<String, Value>, method: Method, found: &mut Vec<Leniency>) {
    let method = method.name().to_owned();
    match object.get("ttlMs") {
        None => found.push(Leniency::MissingTtl { method }),
        Some(Value::Number(n)) if n.is_u64() => {}
        Some(Value::Number(n)) if n.is_i64() => {
            found.push(Leniency::NegativeTtl {
                method,
                ttl: n.to_string(),
            });
            // The wire decoder reads a negative ttlMs as 0 itself.
        }
        Some(other) => {
            let negative = other.as_f64().is_some_and(|f| f < 0.0);
            let ttl = other.to_string();
            found.push(if negative {
                Leniency::NegativeTtl { method, ttl }
            } else {
                Leniency::InvalidTtl { method, ttl }
            });
            object.insert("ttlMs".into(), Value::from(0u64));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn x2_every_leniency_is_found_and_rewritten() {
        let mut v = json!({"tools": [], "ttlMs": 1.5, "cacheScope": "shared"});
        let found = inspect(Method::ToolsList, &mut v);
        assert_eq!(
            found,
            vec![
                Leniency::MissingResultType {
                    method: "tools/list".into()
                },
                Leniency::InvalidTtl {
                    method: "tools/list".into(),
                    ttl: "1.5".into()
                },
                Leniency::UnknownCacheScope {
                    method: "tools/list".into(),
                    scope: "\"shared\"".into()
                },
            ]
        );
        assert_eq!(v["ttlMs"], json!(0));
        assert_eq!(v["cacheScope"], json!("private"));
        // A complete, well-formed result needs nothing.
        let mut v =
            json!({"resultType": "complete", "tools": [], "ttlMs": 0, "cacheScope": "public"});
        assert!(inspect(Method::ToolsList, &mut v).is_empty());
        // Non-cacheable methods only care about resultType.
        let mut v = json!({"content": []});
        assert_eq!(inspect(Method::ToolsCall, &mut v).len(), 1);
        // input_required is never inspected.
        let mut v = json!({"resultType": "input_required", "requestState": "s"});
        assert!(inspect(Method::ToolsCall, &mut v).is_empty());
    }

    #[test]
    fn x2_diagnostics_keep_at_most_the_bound_and_count_the_rest() {
        let mut d = Diagnostics::default();
        let one = || Leniency::MissingTtl {
            method: "tools/list".into(),
        };
        for _ in 0..MAX_DIAGNOSTICS {
            d.record(one());
        }
        assert_eq!(d.snapshot().0.len(), MAX_DIAGNOSTICS);
        assert_eq!(d.snapshot().1, 0);
        d.record(Leniency::MissingCacheScope {
            method: "tools/list".into(),
        });
        let (kept, dropped) = d.take();
        assert_eq!((kept.len(), dropped), (MAX_DIAGNOSTICS, 1));
        assert!(matches!(
            kept.last(),
            Some(Leniency::MissingCacheScope { .. })
        ));
        assert_eq!(d.take(), (Vec::new(), 0));
    }
}
