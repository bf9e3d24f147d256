//! `_meta` keys of revision 2026-07-28: the reserved keys and the
//! key syntax with its reserved namespaces.
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
//! A prefix whose second label is `modelcontextprotocol` or `mcp` belongs to MCP:
//! `io.modelcontextprotocol/`, `dev.mcp/`, `com.mcp.tools/` — but not `com.example.mcp/`.

use std::borrow::Cow;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::errors::Cause;
use super::logging::LogLevel;
use super::members::Members;
use super::PROTOCOL_REVISION;

/// The protocol revision a request speaks (required in every request).
pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// The client's capabilities for this request (required; `{}` means none).
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// The client's self-reported `{name, version}` (recommended; never trusted).
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// The server's self-reported `{name, version}` on results.
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// Per-request log level (deprecated logging feature, section L).
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// Marks notifications sent on a `subscriptions/listen` stream.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// Associates progress notifications with a request (section J).
pub const PROGRESS_TOKEN: &str = "progressToken";
/// W3C Trace Context `traceparent`.
pub const TRACEPARENT: &str = "traceparent";
/// W3C Trace Context `tracestate`.
pub const TRACESTATE: &str = "tracestate";
/// W3C Baggage.
pub const BAGGAGE: &str = "baggage";

/// Every reserved key.
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

/// Second labels that make a prefix MCP's own.
const RESERVED_SECOND_LABELS: [&str; 2] = ["modelcontextprotocol", "mcp"];

/// Why a `_meta` key is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MetaKeyError {
    /// A prefix label breaks the label rule; `label` is the offending label (may be
    /// empty, e.g. `a..b/x` or `/x`).
    #[error("`_meta` key `{key}`: prefix label `{label}` is not a valid label")]
    InvalidPrefixLabel {
        /// The whole key.
        key: String,
        /// The offending label.
        label: String,
    },
    /// The name part breaks the name rule.
    #[error("`_meta` key `{key}`: name `{name}` is not a valid name")]
    InvalidName {
        /// The whole key.
        key: String,
        /// The name part (after the `/`, or the whole key without a prefix).
        name: String,
    },
    /// Caller-supplied metadata used a prefix reserved for MCP.
    #[error("`_meta` key `{0}` uses a prefix reserved for MCP")]
    ReservedPrefix(String),
    /// Caller-supplied metadata used a key the protocol itself sets.
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
    /// Checks the key syntax.
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

    /// Whether the prefix belongs to MCP: its second label is `modelcontextprotocol`
    /// or `mcp`.
    pub fn is_reserved_prefix(&self) -> bool {
        self.prefix
            .and_then(|p| p.split('.').nth(1))
            .is_some_and(|second| RESERVED_SECOND_LABELS.contains(&second))
    }
}

/// A `_meta` prefix label: letter first, letter or digit last, letters, digits or `-` inside.
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

/// A `_meta` key name: empty, or alphanumeric at both ends with alphanumerics, `-`, `_`, `.` inside.
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

/// Checks every key of a received `_meta` object against the syntax. Reserved keys are
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

/// Checks a key that an application asks us to add to outgoing `_meta`: it must
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

/// Why the value of a reserved trace key is refused (`traceparent`, `tracestate` and
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

/// Checks the values of `traceparent`, `tracestate` and `baggage` when present.
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

// ---------------------------------------------------------------------------------------------
// A request's `_meta`: read by servers, written by clients (B1–B5, B9–B14, L3)

/// A JSON string's value (`None` for any other JSON type); unescaped only when it has escapes.
pub(crate) fn json_str(raw: &RawValue) -> Option<Cow<'_, str>> {
    let text = raw.get();
    if !text.starts_with('"') {
        return None;
    }
    if !text.contains('\\') {
        return text.get(1..text.len() - 1).map(Cow::Borrowed);
    }
    serde_json::from_str::<String>(text).ok().map(Cow::Owned)
}

/// What a request's own `_meta` declares (nothing is remembered between requests).
#[derive(Debug, Clone)]
pub struct RequestMeta<'a> {
    /// `clientCapabilities`, a JSON object.
    pub capabilities: Value,
    /// `progressToken` as its exact JSON text, echoed byte for byte (J-section).
    pub progress_token: Option<&'a RawValue>,
    /// The requested `logLevel`, if any.
    pub log_level: Option<LogLevel>,
}

/// Why a request's `_meta` is refused, each with its row of the cause table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestMetaError {
    /// `params` is not an object.
    #[error("params must be an object")]
    ParamsNotObject,
    /// `_meta`, its `protocolVersion` (a string) or its `clientCapabilities` (an object) is
    /// missing or of the wrong type: -32602, HTTP 400.
    #[error("params._meta must carry {PROTOCOL_VERSION} and {CLIENT_CAPABILITIES}")]
    Missing,
    /// The requested revision is not served: -32022 with the supported versions.
    #[error("Unsupported protocol version")]
    UnsupportedVersion {
        /// The version the request asked for.
        requested: String,
    },
    /// A `_meta` key breaks the key syntax.
    #[error(transparent)]
    Key(#[from] MetaKeyError),
    /// A trace key's value breaks W3C Trace Context or Baggage.
    #[error(transparent)]
    Trace(#[from] TraceValueError),
    /// `logLevel` is not one of the RFC 5424 names.
    #[error("Unrecognised logLevel")]
    LogLevel,
}

impl RequestMetaError {
    /// The row of the cause table this refusal is answered with.
    #[must_use]
    pub fn cause(&self) -> Cause {
        match self {
            RequestMetaError::Missing => Cause::MissingMeta,
            RequestMetaError::UnsupportedVersion { .. } => Cause::UnsupportedVersion,
            RequestMetaError::ParamsNotObject
            | RequestMetaError::Key(_)
            | RequestMetaError::Trace(_)
            | RequestMetaError::LogLevel => Cause::InvalidParams,
        }
    }

    /// The error's `data`: the supported and requested versions for an unsupported revision,
    /// nothing otherwise.
    #[must_use]
    pub fn data(&self) -> Option<Value> {
        match self {
            RequestMetaError::UnsupportedVersion { requested } => Some(serde_json::json!({
                "supported": [PROTOCOL_REVISION],
                "requested": requested,
            })),
            _ => None,
        }
    }
}

/// Reads a request's `params._meta` (its exact text, `None` when absent): the protocol version
/// must be [`PROTOCOL_REVISION`], the capabilities an object, every key valid, trace values
/// valid and `logLevel` known. Members are read as borrowed texts; `clientInfo` is never parsed
/// and trace keys only when present.
///
/// # Errors
/// [`RequestMetaError`], whose [`cause`](RequestMetaError::cause) gives code and status.
pub fn read_request_meta(raw: Option<&RawValue>) -> Result<RequestMeta<'_>, RequestMetaError> {
    let raw = raw.ok_or(RequestMetaError::Missing)?;
    read_split_meta(Members::of(raw).as_ref())
}

/// [`read_request_meta`] over `_meta` already split into its members (`None`: absent or not an
/// object), so a server that splits it once for the header check reads the same split here.
pub(crate) fn read_split_meta<'a>(
    members: Option<&Members<'a>>,
) -> Result<RequestMeta<'a>, RequestMetaError> {
    let members = members.ok_or(RequestMetaError::Missing)?;
    let version = members
        .get(PROTOCOL_VERSION)
        .and_then(|raw| json_str(raw))
        .ok_or(RequestMetaError::Missing)?;
    if version != PROTOCOL_REVISION {
        return Err(RequestMetaError::UnsupportedVersion {
            requested: version.into_owned(),
        });
    }
    let capabilities = match members.get(CLIENT_CAPABILITIES) {
        // `{}` (a client that declares nothing) needs no parse.
        Some(caps) if caps.get() == "{}" => Value::Object(Map::new()),
        Some(caps) if caps.get().starts_with('{') => {
            serde_json::from_str::<Value>(caps.get()).map_err(|_| RequestMetaError::Missing)?
        }
        _ => return Err(RequestMetaError::Missing),
    };
    if let Some(e) = members.iter().find_map(|(k, _)| check_meta_key(k).err()) {
        return Err(e.into());
    }
    // Trace keys are rare: only a request that carries one has them read as values.
    let trace: Map<String, Value> = [TRACEPARENT, TRACESTATE, BAGGAGE]
        .into_iter()
        .filter_map(|key| {
            let raw = *members.get(key)?;
            Some((
                key.to_owned(),
                serde_json::from_str(raw.get()).unwrap_or(Value::Null),
            ))
        })
        .collect();
    check_trace_values(&trace)?;
    let log_level = match members.get(LOG_LEVEL) {
        None => None,
        Some(level) => Some(
            json_str(level)
                .as_deref()
                .and_then(LogLevel::parse)
                .ok_or(RequestMetaError::LogLevel)?,
        ),
    };
    Ok(RequestMeta {
        capabilities,
        progress_token: members.get(PROGRESS_TOKEN).copied(),
        log_level,
    })
}

/// What a client puts into one request's `_meta`: the capabilities this
/// call supports, its identity, and optional progress, logging and application keys.
#[derive(Debug, Clone, Default)]
pub struct OutgoingMeta<'a> {
    /// `clientCapabilities` (must be a JSON object).
    pub capabilities: Option<&'a Value>,
    /// `clientInfo` (`{name, version, …}`).
    pub client_info: Option<&'a Value>,
    /// `progressToken`, as the JSON value to send (a string or an integer).
    pub progress_token: Option<&'a Value>,
    /// `logLevel`.
    pub log_level: Option<LogLevel>,
    /// Application keys; none may be reserved or in an MCP namespace.
    pub extra: &'a [(&'a str, Value)],
}

impl OutgoingMeta<'_> {
    /// The `_meta` object as JSON text, `protocolVersion` first.
    ///
    /// # Errors
    /// [`RequestMetaError::Key`] when an application key is invalid, reserved or in an MCP
    /// namespace; [`RequestMetaError::Missing`] when the capabilities are not an object.
    pub fn write(&self) -> Result<String, RequestMetaError> {
        let caps = match self.capabilities {
            None => Value::Object(Map::new()),
            Some(v @ Value::Object(_)) => v.clone(),
            Some(_) => return Err(RequestMetaError::Missing),
        };
        let mut out = String::with_capacity(128);
        out.push_str(&format!(
            "{{{}:{},{}:{}",
            Value::from(PROTOCOL_VERSION),
            Value::from(PROTOCOL_REVISION),
            Value::from(CLIENT_CAPABILITIES),
            caps
        ));
        let mut member = |key: &str, value: &Value| {
            out.push_str(&format!(",{}:{}", Value::from(key), value));
        };
        if let Some(info) = self.client_info {
            member(CLIENT_INFO, info);
        }
        if let Some(token) = self.progress_token {
            member(PROGRESS_TOKEN, token);
        }
        if let Some(level) = self.log_level {
            member(LOG_LEVEL, &Value::from(level.as_str()));
        }
        for (key, value) in self.extra {
            check_caller_key(key)?;
            member(key, value);
        }
        out.push('}');
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta_of(meta: &str) -> Result<(Value, Option<String>, Option<LogLevel>), RequestMetaError> {
        let raw = RawValue::from_string(meta.to_owned()).expect("JSON");
        read_request_meta(Some(&raw)).map(|m| {
            (
                m.capabilities,
                m.progress_token.map(|t| t.get().to_owned()),
                m.log_level,
            )
        })
    }

    #[test]
    fn b1_meta_is_read_once_and_the_progress_token_keeps_its_exact_bytes() {
        let base = format!(
            "\"{}\":\"{PROTOCOL_REVISION}\",\"{}\":{{\"x\":1}}",
            PROTOCOL_VERSION, CLIENT_CAPABILITIES
        );
        let none = meta_of(&format!("{{{base}}}")).expect("valid");
        assert_eq!(none.1, None);
        assert_eq!(none.0, serde_json::json!({ "x": 1 }));
        for token in ["1.0", "1e2", r#""a\u0062""#, "18446744073709551617"] {
            let m = meta_of(&format!("{{{base},\"{}\":{token}}}", PROGRESS_TOKEN)).expect("valid");
            assert_eq!(m.1.as_deref(), Some(token));
        }
        // Still refused: capabilities not an object, a bad key.
        assert!(meta_of(&format!(
            "{{\"{}\":\"{PROTOCOL_REVISION}\",\"{}\":1}}",
            PROTOCOL_VERSION, CLIENT_CAPABILITIES
        ))
        .is_err());
        assert!(meta_of(&format!("{{{base},\"-bad\":1}}")).is_err());
    }

    #[test]
    fn b1_b9_meta_members_are_read_with_escapes_and_only_as_far_as_needed() {
        // An escaped version and an escaped key read as their values.
        let escaped = format!(
            "{{\"io.modelcontextprotocol/protocol\\u0056ersion\":\"{}\",\"{}\":{{}},\"{}\":{{\"n\":1e400}}}}",
            PROTOCOL_REVISION.replace('-', "\\u002d"),
            CLIENT_CAPABILITIES,
            CLIENT_INFO
        );
        let m = meta_of(&escaped).expect("escaped members are the same members");
        assert_eq!(m.0, serde_json::json!({}));
        assert_eq!(m.2, None);
        let base = format!(
            "\"{}\":\"{PROTOCOL_REVISION}\",\"{}\":{{}}",
            PROTOCOL_VERSION, CLIENT_CAPABILITIES
        );
        let refused = |extra: &str| match meta_of(&format!("{{{base},{extra}}}")) {
            Err(e) => e.cause(),
            Ok(_) => panic!("accepted: {extra}"),
        };
        assert_eq!(refused(r#""traceparent":7"#), Cause::InvalidParams);
        assert_eq!(
            refused(r#""traceparent":"00-0-0-00""#),
            Cause::InvalidParams
        );
        assert_eq!(
            refused(r#""io.modelcontextprotocol/logLevel":"loud""#),
            Cause::InvalidParams
        );
        assert_eq!(refused(r#""bad key":1"#), Cause::InvalidParams);
        let m = meta_of(&format!(
            "{{{base},\"io.modelcontextprotocol/logLevel\":\"debug\",\"traceparent\":\"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\"}}"
        ))
        .expect("valid");
        assert_eq!(m.2, Some(LogLevel::Debug));
        // Wrong types of the two required members are "missing" (B1).
        for bad in [
            format!(
                "{{\"{}\":1,\"{}\":{{}}}}",
                PROTOCOL_VERSION, CLIENT_CAPABILITIES
            ),
            format!(
                "{{\"{}\":\"{PROTOCOL_REVISION}\",\"{}\":[]}}",
                PROTOCOL_VERSION, CLIENT_CAPABILITIES
            ),
        ] {
            assert_eq!(
                meta_of(&bad).err(),
                Some(RequestMetaError::Missing),
                "{bad}"
            );
        }
    }

    #[test]
    fn b3_unsupported_version_names_both_versions() {
        let e = meta_of(&format!(
            "{{\"{PROTOCOL_VERSION}\":\"2025-11-25\",\"{CLIENT_CAPABILITIES}\":{{}}}}"
        ))
        .unwrap_err();
        assert_eq!(e.cause(), Cause::UnsupportedVersion);
        assert_eq!(
            e.data(),
            Some(serde_json::json!({"supported": ["2026-07-28"], "requested": "2025-11-25"}))
        );
    }

    #[test]
    fn b1_b2_b11_o73_outgoing_meta_reads_back_and_refuses_reserved_caller_keys() {
        let caps = serde_json::json!({"elicitation": {"form": {}}});
        let info = serde_json::json!({"name": "c", "version": "1"});
        let token = serde_json::json!("p-1");
        let extra = [("com.example/trace", serde_json::json!({"n": 1}))];
        let text = OutgoingMeta {
            capabilities: Some(&caps),
            client_info: Some(&info),
            progress_token: Some(&token),
            log_level: Some(LogLevel::Notice),
            extra: &extra,
        }
        .write()
        .expect("valid");
        assert_eq!(
            text,
            r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"progressToken":"p-1","io.modelcontextprotocol/logLevel":"notice","com.example/trace":{"n":1}}"#
        );
        let (read_caps, read_token, level) = meta_of(&text).expect("the server accepts it");
        assert_eq!(read_caps, caps);
        assert_eq!(read_token.as_deref(), Some(r#""p-1""#));
        assert_eq!(level, Some(LogLevel::Notice));
        // Nothing declared: an empty capabilities object, never an absent one (B1).
        assert_eq!(
            OutgoingMeta::default().write().unwrap(),
            r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#
        );
        for key in [
            "io.modelcontextprotocol/clientInfo",
            "progressToken",
            "dev.mcp/x",
            "io.modelcontextprotocol/other",
            "bad key",
        ] {
            let extra = [(key, Value::Null)];
            let out = OutgoingMeta {
                extra: &extra,
                ..OutgoingMeta::default()
            }
            .write();
            assert!(
                matches!(out, Err(RequestMetaError::Key(_))),
                "{key}: {out:?}"
            );
        }
        let not_object = serde_json::json!([]);
        let out = OutgoingMeta {
            capabilities: Some(&not_object),
            ..OutgoingMeta::default()
        }
        .write();
        assert_eq!(out, Err(RequestMetaError::Missing));
    }
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
