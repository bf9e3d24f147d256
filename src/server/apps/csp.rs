//! The origin rules of the Apps shell's CSP lists: each entry is one origin,
//! `scheme://host[:port]`, nothing more.

use std::net::{Ipv4Addr, Ipv6Addr};

/// Schemes of `resourceDomains`, `frameDomains` and `baseUriDomains` entries.
pub(super) const WEB_SCHEMES: &[&str] = &["http", "https"];

/// Schemes of `connectDomains` entries: the web schemes and WebSockets.
pub(super) const CONNECT_SCHEMES: &[&str] = &["http", "https", "ws", "wss"];

/// Longest DNS name (RFC 1035 §2.3.4, without the trailing dot).
const MAX_HOST_BYTES: usize = 253;

/// Longest DNS label (RFC 1035 §2.3.4).
const MAX_LABEL_BYTES: usize = 63;

/// Why one entry is not an origin, for the configuration error.
pub(super) fn check_origin(entry: &str, schemes: &[&str]) -> Result<(), &'static str> {
    let Some((scheme, rest)) = entry.split_once("://") else {
        return Err("not scheme://host");
    };
    if !schemes.contains(&scheme) {
        return Err("scheme not allowed in this list");
    }
    if rest.is_empty() {
        return Err("no host");
    }
    // Anything past the authority (path, query, fragment), credentials, and the characters of
    // CSP expressions (`'self'`, `;` separators, spaces, `,`) are refused outright.
    if let Some(c) = rest.chars().find(|c| {
        matches!(
            c,
            '/' | '?' | '#' | '@' | '\'' | ';' | ',' | '"' | '\\' | '%'
        ) || c.is_whitespace()
            || c.is_control()
    }) {
        return Err(match c {
            '/' | '?' | '#' => "a path, query or fragment",
            '@' => "credentials",
            _ => "a CSP expression or forbidden character",
        });
    }
    let (host, port) = split_port(rest)?;
    if let Some(port) = port {
        check_port(port)?;
    }
    if host == "*" {
        return Err("a bare wildcard");
    }
    if let Some(inner) = host.strip_prefix('[') {
        let literal = inner.strip_suffix(']').ok_or("an invalid host")?;
        return literal
            .parse::<Ipv6Addr>()
            .map(|_| ())
            .map_err(|_| "an invalid host");
    }
    match host.strip_prefix("*.") {
        Some(domain) => check_domain(domain, true),
        None if host.parse::<Ipv4Addr>().is_ok() => Ok(()),
        None => check_domain(host, false),
    }
}

/// `host` and the text after its port colon, if any (an IPv6 literal keeps its colons).
fn split_port(rest: &str) -> Result<(&str, Option<&str>), &'static str> {
    if rest.starts_with('[') {
        return match rest.find(']') {
            Some(end) if end + 1 == rest.len() => Ok((rest, None)),
            Some(end) => match rest[end + 1..].strip_prefix(':') {
                Some(port) => Ok((&rest[..=end], Some(port))),
                None => Err("an invalid host"),
            },
            None => Err("an invalid host"),
        };
    }
    Ok(match rest.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (rest, None),
    })
}

fn check_port(port: &str) -> Result<(), &'static str> {
    if port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()) {
        return Err("an invalid port");
    }
    match port.parse::<u32>() {
        Ok(1..=65_535) => Ok(()),
        _ => Err("an invalid port"),
    }
}

/// A DNS name of LDH labels; the last label not all digits (that would be a malformed
/// IPv4 address). A wildcard's remainder (`*.example.com` → `example.com`) follows the same
/// rules and may not itself contain `*`.
fn check_domain(name: &str, wildcard: bool) -> Result<(), &'static str> {
    let bad = if wildcard {
        "an invalid wildcard host"
    } else if name.contains('*') {
        "a wildcard that is not a leading `*.` label"
    } else {
        "an invalid host"
    };
    if name.is_empty() || name.len() > MAX_HOST_BYTES {
        return Err(bad);
    }
    let labels: Vec<&str> = name.split('.').collect();
    let ldh = |label: &&str| {
        !label.is_empty()
            && label.len() <= MAX_LABEL_BYTES
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    if !labels.iter().all(ldh) {
        return Err(bad);
    }
    if labels
        .last()
        .is_some_and(|last| last.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(bad);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn o67_origins() {
        for ok in [
            "https://example.com",
            "http://localhost:8080",
            "https://*.example.com",
            "https://127.0.0.1:1",
            "https://[::1]:65535",
            "https://a-b.c9.example",
        ] {
            assert_eq!(check_origin(ok, WEB_SCHEMES), Ok(()), "{ok}");
        }
        assert_eq!(
            check_origin("wss://rt.example.com", CONNECT_SCHEMES),
            Ok(())
        );
        for (bad, why) in [
            ("wss://rt.example.com", "scheme not allowed in this list"),
            ("ftp://example.com", "scheme not allowed in this list"),
            ("example.com", "not scheme://host"),
            ("https://", "no host"),
            ("https://example.com/", "a path, query or fragment"),
            ("https://example.com/x", "a path, query or fragment"),
            ("https://example.com?q", "a path, query or fragment"),
            ("https://u:p@example.com", "credentials"),
            ("https://*", "a bare wildcard"),
            ("https://example.com:0", "an invalid port"),
            ("https://example.com:65536", "an invalid port"),
            ("https://example.com:", "an invalid port"),
            ("https://example.com:+80", "an invalid port"),
            ("https://exa_mple.com", "an invalid host"),
            ("https://-a.com", "an invalid host"),
            ("https://a..com", "an invalid host"),
            ("https://1.2.3", "an invalid host"),
            (
                "https://a.*.com",
                "a wildcard that is not a leading `*.` label",
            ),
            ("https://*.*.com", "an invalid wildcard host"),
            ("https://[::1", "an invalid host"),
            ("https://[zz]", "an invalid host"),
            ("https://'self'", "a CSP expression or forbidden character"),
            (
                "https://a.com b.com",
                "a CSP expression or forbidden character",
            ),
            ("https://a.com;", "a CSP expression or forbidden character"),
        ] {
            assert_eq!(check_origin(bad, WEB_SCHEMES), Err(why), "{bad}");
        }
        // The host bound: 253 bytes pass, 254 do not (labels of 63, 63, 63 and 61/62).
        let host = |last: usize| {
            format!(
                "https://{}.{}.{}.{}",
                "a".repeat(63),
                "b".repeat(63),
                "c".repeat(63),
                "d".repeat(last)
            )
        };
        assert_eq!(host(61).len() - "https://".len(), MAX_HOST_BYTES);
        assert_eq!(check_origin(&host(61), WEB_SCHEMES), Ok(()));
        assert_eq!(check_origin(&host(62), WEB_SCHEMES), Err("an invalid host"));
        // The label bound: 63 bytes pass, 64 do not.
        let label = |n| format!("https://{}.com", "a".repeat(n));
        assert_eq!(check_origin(&label(MAX_LABEL_BYTES), WEB_SCHEMES), Ok(()));
        assert!(check_origin(&label(MAX_LABEL_BYTES + 1), WEB_SCHEMES).is_err());
    }
}
