//! `_meta` keys of revision 2026-07-28: the reserved keys (B1, B2, B6, B12, B13) and the
//! key syntax (B9) with its reserved namespaces (B10).
//!
//! Every request carries its protocol version and capabilities in `params._meta` instead of
//! a session, so these keys are protocol, not decoration: they are spelled once, here.
//! A key is `prefix/name` or just `name`:
//!
//! * prefix: dot-separated labels, each starting with a letter, ending with a letter or
//!   digit, with letters, digits and `-` inside; followed by `/`;
//! * name: empty, or starting and ending alphanumeric with alphanumerics, `-`, `_` or `.`
//!   inside.
//!
//! A prefix whose second label is `modelcontextprotocol` or `mcp` belongs to MCP (B10):
//! `io.modelcontextprotocol/`, `dev.mcp/`, `com.mcp.tools/` — but not `com.example.mcp/`.

use serde_json::{Map, Value};

/// The protocol revision a request speaks (B1, required in every request).
pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// The client's capabilities for this request (B1, required; `{}` means none).
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// The client's self-reported `{name, version}` (B2, recommended; never trusted, B7).
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// The server's self-reported `{name, version}` on results (B6).
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// Per-request log level (deprecated logging feature, section L).
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// Marks notifications sent on a `subscriptions/listen` stream (B13).
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// Associates progress notifications with a request (section J).
pub const PROGRESS_TOKEN: &str = "progressToken";
/// W3C Trace Context `traceparent`.
pub const TRACEPARENT: &str = "traceparent";
/// W3C Trace Context `tracestate`.
pub const TRACESTATE: &str = "tracestate";
/// W3C Baggage.
pub const BAGGAGE: &str = "baggage";

/// Every key B12 reserves.
pub const RESERVED_KEYS: [&str; 10] = [
    PROGRESS_TOKEN,
    PROTOCOL_VERSION,
    CLIENT_INFO,
    CLIENT_CAPABILITIES,
    LOG_LEVEL,
    SUBSCRIPTION_ID,
    SERVER_INFO,
    TRACEPARENT,
    TRACESTATE,
    BAGGAGE,
];

/// Second labels that make a prefix MCP's own (B10).
const RESERVED_SECOND_LABELS: [&str; 2] = ["modelcontextprotocol", "mcp"];

/// Why a `_meta` key is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MetaKeyError {
    /// A prefix label breaks the label rule (B9); `label` is the offending label (may be
    /// empty, e.g. `a..b/x` or `/x`).
    #[error("`_meta` key `{key}`: prefix label `{label}` is not a valid label")]
    InvalidPrefixLabel {
        /// The whole key.
        key: String,
        /// The offending label.
        label: String,
    },
    /// The name part breaks the name rule (B9).
    #[error("`_meta` key `{key}`: name `{name}` is not a valid name")]
    InvalidName {
        /// The whole key.
        key: String,
        /// The name part (after the `/`, or the whole key without a prefix).
        name: String,
    },
    /// Caller-supplied metadata used a prefix reserved for MCP (B10).
    #[error("`_meta` key `{0}` uses a prefix reserved for MCP")]
    ReservedPrefix(String),
    /// Caller-supplied metadata used a key the protocol itself sets (B12).
    #[error("`_meta` key `{0}` is reserved by the protocol")]
    ReservedKey(String),
}

/// A syntactically valid `_meta` key, split into its parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetaKey<'a> {
    prefix: Option<&'a str>,
    name: &'a str,
}

impl<'a> MetaKey<'a> {
    /// Checks the key syntax (B9).
    pub fn parse(key: &'a str) -> Result<Self, MetaKeyError> {
        let (prefix, name) = match key.split_once('/') {
            Some((prefix, name)) => (Some(prefix), name),
            None => (None, key),
        };
        if let Some(prefix) = prefix {
            if let Some(label) = prefix.split('.').find(|l| !is_label(l)) {
                return Err(MetaKeyError::InvalidPrefixLabel {
                    key: key.to_owned(),
                    label: label.to_owned(),
                });
            }
        }
        if !is_name(name) {
            return Err(MetaKeyError::InvalidName {
                key: key.to_owned(),
                name: name.to_owned(),
            });
        }
        Ok(Self { prefix, name })
    }

    /// The prefix without its trailing `/`, if any.
    pub fn prefix(&self) -> Option<&'a str> {
        self.prefix
    }

    /// The name part (possibly empty).
    pub fn name(&self) -> &'a str {
        self.name
    }

    /// Whether the prefix belongs to MCP (B10): its second label is `modelcontextprotocol`
    /// or `mcp`.
    pub fn is_reserved_prefix(&self) -> bool {
        self.prefix
            .and_then(|p| p.split('.').nth(1))
            .is_some_and(|second| RESERVED_SECOND_LABELS.contains(&second))
    }
}

/// B9 label: letter first, letter or digit last, letters, digits or `-` inside.
fn is_label(label: &str) -> bool {
    let bytes = label.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphabetic()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || *b == b'-')
        }
        _ => false,
    }
}

/// B9 name: empty, or alphanumeric at both ends with alphanumerics, `-`, `_`, `.` inside.
fn is_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    match (bytes.first(), bytes.last()) {
        (None, _) | (_, None) => true,
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
    }
}

/// Checks every key of a received `_meta` object against the syntax (B9). Reserved keys are
/// allowed here: peers legitimately send them.
pub fn check_meta_keys(meta: &Map<String, Value>) -> Result<(), MetaKeyError> {
    meta.keys().try_for_each(|k| check_meta_key(k))
}

/// [`check_meta_keys`] for one key.
///
/// # Errors
/// As [`MetaKey::parse`].
pub fn check_meta_key(key: &str) -> Result<(), MetaKeyError> {
    // The reserved keys are valid by their spelling (a test checks each), and they are most of
    // what requests carry: only other keys are parsed.
    if RESERVED_KEYS.contains(&key) {
        return Ok(());
    }
    MetaKey::parse(key).map(|_| ())
}

/// Checks a key that an application asks us to add to outgoing `_meta` (B10, B12): it must
/// be valid, outside MCP's reserved prefixes, and not one of the keys the protocol sets.
pub fn check_caller_key(key: &str) -> Result<MetaKey<'_>, MetaKeyError> {
    let parsed = MetaKey::parse(key)?;
    if RESERVED_KEYS.contains(&key) {
        return Err(MetaKeyError::ReservedKey(key.to_owned()));
    }
    if parsed.is_reserved_prefix() {
        return Err(MetaKeyError::ReservedPrefix(key.to_owned()));
    }
    Ok(parsed)
}

/// Why the value of a reserved trace key is refused (B12: `traceparent`, `tracestate` and
/// `baggage` must follow W3C Trace Context and W3C Baggage when present).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TraceValueError {
    /// The value of a trace key is not a JSON string.
    #[error("`_meta` `{0}` is not a string")]
    NotAString(&'static str),
    /// `traceparent` is not `version-traceid-parentid-flags` in lowercase hex, or uses the
    /// invalid version `ff`, or an all-zero trace or parent id.
    #[error("`traceparent` `{0}` is not a W3C traceparent")]
    Traceparent(String),
    /// A `tracestate` or `baggage` list member is not `key=value` with a valid key, or the
    /// list is longer than W3C allows (32 `tracestate` members).
    #[error("`{key}` member `{member}` is not a valid list member")]
    ListMember {
        /// `tracestate` or `baggage`.
        key: &'static str,
        /// The offending member, trimmed.
        member: String,
    },
}

/// Checks the values of `traceparent`, `tracestate` and `baggage` when present (B12).
/// Other keys are not looked at.
pub fn check_trace_values(meta: &Map<String, Value>) -> Result<(), TraceValueError> {
    let text = |key: &'static str| match meta.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.as_str())),
        Some(_) => Err(TraceValueError::NotAString(key)),
    };
    if let Some(value) = text(TRACEPARENT)? {
        if !is_traceparent(value) {
            return Err(TraceValueError::Traceparent(value.to_owned()));
        }
    }
    if let Some(value) = text(TRACESTATE)? {
        check_list(TRACESTATE, value, 32, is_tracestate_key)?;
    }
    if let Some(value) = text(BAGGAGE)? {
        check_list(BAGGAGE, value, usize::MAX, is_token)?;
    }
    Ok(())
}

fn is_lower_hex(s: &str, len: usize) -> bool {
    s.len() == len
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// W3C traceparent: `vv-<32 hex>-<16 hex>-ff`. Version `00` has exactly these four fields;
/// later versions may append fields after another `-`, which are accepted unread.
fn is_traceparent(value: &str) -> bool {
    let mut parts = value.split('-');
    let (Some(version), Some(trace_id), Some(parent_id), Some(flags)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let rest_ok = if version == "00" {
        parts.next().is_none()
    } else {
        true
    };
    is_lower_hex(version, 2)
        && version != "ff"
        && is_lower_hex(trace_id, 32)
        && trace_id.bytes().any(|b| b != b'0')
        && is_lower_hex(parent_id, 16)
        && parent_id.bytes().any(|b| b != b'0')
        && is_lower_hex(flags, 2)
        && rest_ok
}

/// Comma-separated `key=value` members; empty members (from `a=1,,b=2`) are allowed, as
/// W3C lists permit them. The value is only required to be non-empty.
fn check_list(
    key: &'static str,
    value: &str,
    max_members: usize,
    valid_key: fn(&str) -> bool,
) -> Result<(), TraceValueError> {
    let members: Vec<&str> = value
        .split(',')
        .map(|m| m.trim_matches([' ', '\t']))
        .filter(|m| !m.is_empty())
        .collect();
    for member in &members {
        let ok = member.split_once('=').is_some_and(|(k, v)| {
            valid_key(k.trim_end_matches([' ', '\t'])) && !v.trim().is_empty()
        });
        if !ok {
            return Err(TraceValueError::ListMember {
                key,
                member: (*member).to_owned(),
            });
        }
    }
    if members.len() > max_members {
        return Err(TraceValueError::ListMember {
            key,
            member: members[max_members].to_owned(),
        });
    }
    Ok(())
}

/// tracestate key: `simple-key` or `tenant@system`, lowercase letters first, then
/// lowercase letters, digits, `_ - * /`; at most 256 characters.
fn is_tracestate_key(key: &str) -> bool {
    let part = |s: &str, first_may_be_digit: bool| {
        let b = s.as_bytes();
        !b.is_empty()
            && (b[0].is_ascii_lowercase() || (first_may_be_digit && b[0].is_ascii_digit()))
            && b.iter().all(|c| {
                c.is_ascii_lowercase()
                    || c.is_ascii_digit()
                    || matches!(c, b'_' | b'-' | b'*' | b'/')
            })
    };
    key.len() <= 256
        && match key.split_once('@') {
            Some((tenant, system)) => part(tenant, true) && part(system, false),
            None => part(key, false),
        }
}

/// HTTP token (RFC 9110 `tchar`), the baggage key syntax.
fn is_token(key: &str) -> bool {
    !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn b12_reserved_keys_are_valid_keys_and_refused_from_callers() {
        for key in RESERVED_KEYS {
            assert!(MetaKey::parse(key).is_ok(), "{key}");
            assert_eq!(
                check_caller_key(key),
                Err(MetaKeyError::ReservedKey(key.to_owned()))
            );
        }
    }

    #[test]
    fn b9_valid_keys_split_into_prefix_and_name() {
        let cases = [
            ("progressToken", None, "progressToken"),
            (
                "io.modelcontextprotocol/protocolVersion",
                Some("io.modelcontextprotocol"),
                "protocolVersion",
            ),
            ("com.example/", Some("com.example"), ""),
            ("", None, ""),
            ("a/b", Some("a"), "b"),
            ("x-1.y2/a_b.c-d", Some("x-1.y2"), "a_b.c-d"),
            ("9lives", None, "9lives"),
        ];
        for (key, prefix, name) in cases {
            let parsed = MetaKey::parse(key).unwrap();
            assert_eq!((parsed.prefix(), parsed.name()), (prefix, name), "{key}");
        }
    }

    #[test]
    fn b9_invalid_labels_are_typed_errors() {
        for (key, label) in [
            ("1com.example/x", "1com"),
            ("com-.example/x", "com-"),
            ("com..example/x", ""),
            ("/x", ""),
            ("com.ex_ample/x", "ex_ample"),
            ("com.exämple/x", "exämple"),
        ] {
            assert_eq!(
                MetaKey::parse(key),
                Err(MetaKeyError::InvalidPrefixLabel {
                    key: key.into(),
                    label: label.into()
                })
            );
        }
    }

    #[test]
    fn b9_invalid_names_are_typed_errors() {
        for (key, name) in [
            ("-x", "-x"),
            ("x_", "x_"),
            ("com.example/a b", "a b"),
            ("com.example/a/b", "a/b"),
            ("_private", "_private"),
        ] {
            assert_eq!(
                MetaKey::parse(key),
                Err(MetaKeyError::InvalidName {
                    key: key.into(),
                    name: name.into()
                })
            );
        }
    }

    #[test]
    fn b10_second_label_mcp_or_modelcontextprotocol_is_reserved() {
        for key in [
            "io.modelcontextprotocol/custom",
            "dev.mcp/x",
            "com.mcp.tools/x",
        ] {
            assert_eq!(
                check_caller_key(key),
                Err(MetaKeyError::ReservedPrefix(key.into()))
            );
        }
        for key in ["com.example.mcp/x", "mcp/x", "com.example/trace"] {
            assert!(check_caller_key(key).is_ok(), "{key}");
        }
    }

    #[test]
    fn b9_received_meta_objects_are_checked_key_by_key() {
        let ok =
            json!({PROTOCOL_VERSION: "2026-07-28", CLIENT_CAPABILITIES: {}, "com.example/x": 1});
        assert_eq!(check_meta_keys(ok.as_object().unwrap()), Ok(()));
        let bad = json!({PROTOCOL_VERSION: "2026-07-28", "bad key": 1});
        assert_eq!(
            check_meta_keys(bad.as_object().unwrap()),
            Err(MetaKeyError::InvalidName {
                key: "bad key".into(),
                name: "bad key".into()
            })
        );
    }

    #[test]
    fn b12_w3c_trace_values_are_checked_when_present() {
        let ok = json!({
            TRACEPARENT: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            TRACESTATE: "rojo=00f067aa0ba902b7, congo@t61rcWkgMzE=x",
            BAGGAGE: "userId=alice, isProduction=false;p=1",
        });
        // `congo@t61rcWkgMzE` has an upper-case system part: not a valid tracestate key.
        assert_eq!(
            check_trace_values(ok.as_object().unwrap()),
            Err(TraceValueError::ListMember {
                key: TRACESTATE,
                member: "congo@t61rcWkgMzE=x".into()
            })
        );
        let ok = json!({
            TRACEPARENT: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            TRACESTATE: "rojo=00f067aa0ba902b7,congo@t61=x",
            BAGGAGE: "userId=alice, isProduction=false;p=1",
        });
        assert_eq!(check_trace_values(ok.as_object().unwrap()), Ok(()));
        assert_eq!(check_trace_values(&Map::new()), Ok(()));
    }

    #[test]
    fn b12_malformed_traceparent_values_are_typed_errors() {
        for bad in [
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        ] {
            let meta = json!({ TRACEPARENT: bad });
            assert_eq!(
                check_trace_values(meta.as_object().unwrap()),
                Err(TraceValueError::Traceparent(bad.into())),
                "{bad}"
            );
        }
        let future =
            json!({ TRACEPARENT: "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra" });
        assert_eq!(check_trace_values(future.as_object().unwrap()), Ok(()));
        let not_string = json!({ BAGGAGE: 5 });
        assert_eq!(
            check_trace_values(not_string.as_object().unwrap()),
            Err(TraceValueError::NotAString(BAGGAGE))
        );
        let no_value = json!({ BAGGAGE: "a=1,b" });
        assert_eq!(
            check_trace_values(no_value.as_object().unwrap()),
            Err(TraceValueError::ListMember {
                key: BAGGAGE,
                member: "b".into()
            })
        );
    }

    #[test]
    fn b12_tracestate_has_at_most_32_members() {
        let members: Vec<String> = (0..33).map(|i| format!("k{i}=v")).collect();
        let meta = json!({ TRACESTATE: members[..32].join(",") });
        assert_eq!(check_trace_values(meta.as_object().unwrap()), Ok(()));
        let meta = json!({ TRACESTATE: members.join(",") });
        assert_eq!(
            check_trace_values(meta.as_object().unwrap()),
            Err(TraceValueError::ListMember {
                key: TRACESTATE,
                member: "k32=v".into()
            })
        );
    }
}
