//! The checks on a request's head: `Host`, `Origin`, `Accept`,
//! `Content-Type`, and the size of the protocol headers.

use hyper::header::{self, HeaderMap, HeaderName};

use crate::wire::errors::Cause;
use crate::wire::headers::{self, HeaderKey, HeaderLookup, Lookup};
#[cfg(test)]
use crate::wire::limits;

use super::*;

// Pre-parsed names, so a lookup only hashes (a `&str` key is validated on every call).
pub(super) static PROTOCOL_VERSION_NAME: HeaderName =
    HeaderName::from_static(PROTOCOL_VERSION_HEADER);
static METHOD_NAME: HeaderName = HeaderName::from_static(METHOD_HEADER);
static NAME_NAME: HeaderName = HeaderName::from_static(NAME_HEADER);

// ---------------------------------------------------------------------------------------------
// Host, Origin, Accept, Content-Type

/// The host part of an authority (`host[:port]`, `[v6][:port]`), as written (compare it
/// case-insensitively).
fn host_part(authority: &str) -> Option<&str> {
    let authority = authority.trim();
    let host = if let Some(rest) = authority.strip_prefix('[') {
        let end = rest.find(']')?;
        let after = &rest[end + 1..];
        if !(after.is_empty() || after.starts_with(':')) {
            return None;
        }
        &authority[..end + 2]
    } else {
        match authority.rsplit_once(':') {
            Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
            Some(_) => return None,
            None => authority,
        }
    };
    if host.is_empty() {
        return None;
    }
    Some(host)
}

fn is_loopback_host(host: &str) -> bool {
    ["localhost", "127.0.0.1", "[::1]"]
        .iter()
        .any(|l| l.eq_ignore_ascii_case(host))
}

/// Whether the request's authority passes the policy. A missing authority passes only
/// [`HostPolicy::Any`].
pub fn host_allowed(policy: &HostPolicy, authority: Option<&str>) -> bool {
    if *policy == HostPolicy::Any {
        return true;
    }
    let Some(host) = authority.and_then(host_part) else {
        return false;
    };
    match policy {
        HostPolicy::Loopback => is_loopback_host(host),
        HostPolicy::Allow(list) => list.iter().any(|h| h.eq_ignore_ascii_case(host)),
        HostPolicy::Any => true,
    }
}

/// Checks a present `Origin` against the policy; an absent one is allowed.
pub fn check_origin(policy: &OriginPolicy, headers: &HeaderMap) -> Result<(), Cause> {
    let mut values = headers.get_all(header::ORIGIN).iter();
    let Some(first) = values.next() else {
        return Ok(());
    };
    if values.next().is_some() {
        return Err(Cause::OriginRejected);
    }
    let origin = first.to_str().map_err(|_| Cause::OriginRejected)?;
    if origin_allowed(policy, origin) {
        Ok(())
    } else {
        Err(Cause::OriginRejected)
    }
}

pub(super) fn origin_allowed(policy: &OriginPolicy, origin: &str) -> bool {
    match policy {
        OriginPolicy::None => false,
        OriginPolicy::Allow(list) => list.iter().any(|o| o.eq_ignore_ascii_case(origin)),
        OriginPolicy::Loopback => {
            let rest = origin
                .strip_prefix("http://")
                .or_else(|| origin.strip_prefix("https://"));
            match rest {
                Some(authority) if !authority.contains('/') && !authority.contains('@') => {
                    host_part(authority).is_some_and(is_loopback_host)
                }
                _ => false,
            }
        }
    }
}

/// Which head check refused a request with 403.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Forbidden {
    /// No `Host` header and no authority in the request line.
    HostMissing,
    /// A `Host` (or authority) that [`HttpConfig::hosts`] does not allow.
    Host,
    /// A present `Origin` that [`HttpConfig::origins`] does not allow (or several `Origin`s).
    Origin,
}

/// Most bytes of a refused header value written to the log, so a hostile value cannot flood it.
pub(super) const MAX_LOGGED_HEADER_VALUE: usize = 128;

impl Forbidden {
    /// The 403 body: which check refused, nothing of the server's configuration.
    pub(super) fn body(self) -> &'static str {
        match self {
            Forbidden::HostMissing => {
                "Forbidden: the request names no host (Host header); this server answers only \
                 the host names it is configured for.\n"
            }
            Forbidden::Host => {
                "Forbidden: the Host header names a host this server is not configured to \
                 answer (DNS rebinding protection).\n"
            }
            Forbidden::Origin => {
                "Forbidden: the Origin header names a browser origin this server does not \
                 allow.\n"
            }
        }
    }

    /// The log reason, a stable token.
    fn reason(self) -> &'static str {
        match self {
            Forbidden::HostMissing => "host_missing",
            Forbidden::Host => "host_not_allowed",
            Forbidden::Origin => "origin_not_allowed",
        }
    }
}

/// The answer to a refused `Host` or `Origin`: 403 with a short `text/plain` body naming the
/// check, and an `info` event (target `strict_mcp::http`) with the reason and the refused
/// value (escaped, at most [`MAX_LOGGED_HEADER_VALUE`] bytes) for the operator.
pub(super) fn forbidden(check: Forbidden, value: Option<&str>) -> hyper::Response<HttpBody> {
    let value = value.map(|v| {
        let mut end = v.len().min(MAX_LOGGED_HEADER_VALUE);
        while !v.is_char_boundary(end) {
            end -= 1;
        }
        v[..end].escape_debug().to_string()
    });
    tracing::info!(
        target: "strict_mcp::http",
        reason = check.reason(),
        value = value.as_deref().unwrap_or(""),
        "request refused with 403: configure HttpConfig::hosts / HttpConfig::origins to allow it"
    );
    let mut response = hyper::Response::new(HttpBody::full(check.body().to_owned()));
    *response.status_mut() = hyper::StatusCode::FORBIDDEN;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// `Accept` values that list both types with no parameters.
const COMMON_ACCEPT: [&[u8]; 2] = [
    b"application/json, text/event-stream",
    b"text/event-stream, application/json",
];

/// Whether `Accept` lists both `application/json` and `text/event-stream`.
pub fn accepts_json_and_sse(headers: &HeaderMap) -> bool {
    let values = headers.get_all(header::ACCEPT);
    let mut iter = values.iter();
    if let (Some(only), None) = (iter.next(), iter.next()) {
        // What conforming clients send, byte for byte: no need to parse it.
        if COMMON_ACCEPT.contains(&only.as_bytes()) {
            return true;
        }
    }
    let (mut json, mut sse) = (false, false);
    for value in values.iter() {
        let Ok(value) = value.to_str() else {
            continue;
        };
        for range in value.split(',') {
            let mut parts = range.split(';');
            let media = parts.next().unwrap_or("").trim();
            let refused = parts.any(|p| {
                let p = p.trim();
                p.strip_prefix("q=")
                    .or_else(|| p.strip_prefix("Q="))
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    == Some(0.0)
            });
            if refused {
                continue;
            }
            if media.eq_ignore_ascii_case("application/json") {
                json = true;
            } else if media.eq_ignore_ascii_case("text/event-stream") {
                sse = true;
            }
        }
    }
    json && sse
}

/// Whether the body is declared as `application/json` (parameters such as charset allowed).
pub fn is_json_content_type(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return false;
    };
    // The usual exact value needs no parsing.
    value.as_bytes() == b"application/json"
        || value
            .to_str()
            .ok()
            .map(|v| v.split(';').next().unwrap_or("").trim())
            .is_some_and(|m| m.eq_ignore_ascii_case("application/json"))
}

// ---------------------------------------------------------------------------------------------
// Protocol headers (D15–D30, O38): the rules live in `wire::headers`

/// hyper's header map as the header checks read it; the standard names stay pre-parsed.
pub(super) struct HyperHeaders<'h>(pub(super) &'h HeaderMap);

impl HeaderLookup for HyperHeaders<'_> {
    fn lookup(&self, key: HeaderKey<'_>) -> Lookup<'_> {
        let mut values = match key {
            HeaderKey::ProtocolVersion => self.0.get_all(&PROTOCOL_VERSION_NAME),
            HeaderKey::Method => self.0.get_all(&METHOD_NAME),
            HeaderKey::Name => self.0.get_all(&NAME_NAME),
            HeaderKey::Other(name) => self.0.get_all(name),
        }
        .iter();
        match (values.next(), values.next()) {
            (None, _) => Lookup::Absent,
            (Some(v), None) => Lookup::One(v.as_bytes()),
            (Some(_), Some(_)) => Lookup::Repeated,
        }
    }
}

/// The protocol header bytes of a request: name plus value of every `mcp-*` header.
pub fn protocol_header_bytes(headers: &HeaderMap) -> usize {
    headers::protocol_header_bytes(headers.iter().map(|(n, v)| (n.as_str(), v.as_bytes())))
}

/// Checks the 8 KiB bound on protocol headers.
///
/// # Errors
/// [`HeaderError::TooLarge`] past the bound.
pub fn check_protocol_header_size(headers: &HeaderMap) -> Result<(), HeaderError> {
    headers::check_protocol_header_size(headers.iter().map(|(n, v)| (n.as_str(), v.as_bytes())))
}

// ---------------------------------------------------------------------------------------------
// Tracing

#[cfg(test)]
mod tests {
    use hyper::header::HeaderValue;

    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    /// Operability: every accepted socket gets TCP_NODELAY (the accept loop calls this).
    #[test]
    fn d3_accept_needs_both_types_by_name() {
        assert!(accepts_json_and_sse(&headers(&[(
            "accept",
            "application/json, text/event-stream"
        )])));
        assert!(accepts_json_and_sse(&headers(&[
            ("accept", "Application/JSON;q=0.9"),
            ("accept", "text/event-stream")
        ])));
        assert!(!accepts_json_and_sse(&headers(&[(
            "accept",
            "application/json"
        )])));
        assert!(!accepts_json_and_sse(&headers(&[("accept", "*/*")])));
        assert!(!accepts_json_and_sse(&headers(&[(
            "accept",
            "application/json, text/event-stream;q=0"
        )])));
        assert!(!accepts_json_and_sse(&HeaderMap::new()));
        // The common exact values, and a repeated header that is not one of them.
        assert!(accepts_json_and_sse(&headers(&[(
            "accept",
            "text/event-stream, application/json"
        )])));
        assert!(!accepts_json_and_sse(&headers(&[
            ("accept", "application/json, text/event-stream;q=0"),
            ("accept", "application/json")
        ])));
    }

    #[test]
    fn d35_host_policy() {
        let l = HostPolicy::Loopback;
        assert!(host_allowed(&l, Some("127.0.0.1:8080")));
        assert!(host_allowed(&l, Some("LOCALHOST")));
        assert!(host_allowed(&l, Some("[::1]:3000")));
        assert!(!host_allowed(&l, Some("evil.example:8080")));
        assert!(!host_allowed(&l, Some("127.0.0.1.evil.example")));
        assert!(!host_allowed(&l, Some("localhost:abc")));
        assert!(!host_allowed(&l, None));
        let a = HostPolicy::Allow(vec!["mcp.example.com".into()]);
        assert!(host_allowed(&a, Some("MCP.example.com:443")));
        assert!(!host_allowed(&a, Some("127.0.0.1")));
        assert!(host_allowed(&HostPolicy::Any, None));
    }

    #[test]
    fn d34_origin_policy() {
        let l = OriginPolicy::Loopback;
        assert_eq!(check_origin(&l, &HeaderMap::new()), Ok(()));
        assert_eq!(
            check_origin(&l, &headers(&[("origin", "http://localhost:5173")])),
            Ok(())
        );
        assert_eq!(
            check_origin(&l, &headers(&[("origin", "https://127.0.0.1")])),
            Ok(())
        );
        for bad in [
            "https://evil.example",
            "null",
            "http://localhost.evil.example",
            "file://localhost",
            "http://user@localhost",
        ] {
            assert_eq!(
                check_origin(&l, &headers(&[("origin", bad)])),
                Err(Cause::OriginRejected),
                "{bad}"
            );
        }
        let a = OriginPolicy::Allow(vec!["https://app.example".into()]);
        assert_eq!(
            check_origin(&a, &headers(&[("origin", "https://app.example")])),
            Ok(())
        );
        assert_eq!(
            check_origin(&a, &headers(&[("origin", "http://localhost")])),
            Err(Cause::OriginRejected)
        );
        assert_eq!(
            check_origin(
                &OriginPolicy::None,
                &headers(&[("origin", "http://localhost")])
            ),
            Err(Cause::OriginRejected)
        );
    }

    #[test]
    fn o38_protocol_header_size_counts_mcp_headers_only() {
        let h = headers(&[
            ("mcp-method", "tools/list"),
            ("authorization", "Bearer xyz"),
        ]);
        assert_eq!(protocol_header_bytes(&h), 20);
        let big = "a".repeat(limits::MAX_PROTOCOL_HEADER_BYTES - "mcp-param-x".len());
        let ok = headers(&[("mcp-param-x", &big)]);
        assert_eq!(check_protocol_header_size(&ok), Ok(()));
        let over = headers(&[("mcp-param-x", &format!("{big}a"))]);
        assert_eq!(
            check_protocol_header_size(&over),
            Err(HeaderError::TooLarge {
                limit: 8192,
                actual: 8193
            })
        );
    }
}
