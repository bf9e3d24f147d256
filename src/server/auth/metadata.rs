//! The resource identifier and its RFC 9728 Protected Resource Metadata document.

use hyper::Uri;
use serde::Serialize;

use super::fetch::is_loopback_host;

/// The well-known path segment of RFC 9728 §3: the metadata of a resource with path `/mcp` is
/// at `/.well-known/oauth-protected-resource/mcp`.
pub const WELL_KNOWN_PREFIX: &str = "/.well-known/oauth-protected-resource";

/// Why a resource identifier is not usable as this server's canonical URI.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResourceError {
    /// Not an absolute URI with a host.
    #[error("not an absolute URI with a host")]
    NotAbsolute,
    /// The scheme is not `https` (or `http` on a loopback host).
    #[error("the scheme must be https (http only on loopback)")]
    Scheme,
    /// A fragment is not allowed (RFC 8707 §2).
    #[error("a resource identifier must not have a fragment")]
    Fragment,
    /// A query is not allowed (RFC 9728 §1.2 discourages it; the well-known URL has none).
    #[error("a resource identifier must not have a query")]
    Query,
    /// The scheme and host must be lowercase, the canonical form tokens name in `aud`.
    #[error("the scheme and host must be lowercase")]
    NotLowercase,
}

/// A checked resource identifier.
#[derive(Debug, Clone)]
pub(crate) struct Resource {
    text: String,
    origin: String,
    /// The path without its terminating slash (`""` for the root).
    path: String,
}

impl Resource {
    pub(crate) fn parse(text: &str) -> Result<Resource, ResourceError> {
        if text.contains('#') {
            return Err(ResourceError::Fragment);
        }
        let uri: Uri = text.parse().map_err(|_| ResourceError::NotAbsolute)?;
        let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
            return Err(ResourceError::NotAbsolute);
        };
        if uri.query().is_some() || text.contains('?') {
            return Err(ResourceError::Query);
        }
        let lower = |s: &str| s.bytes().all(|b| !b.is_ascii_uppercase());
        if !lower(scheme) || !lower(authority.host()) {
            return Err(ResourceError::NotLowercase);
        }
        match scheme {
            "https" => {}
            "http" if is_loopback_host(authority.host()) => {}
            _ => return Err(ResourceError::Scheme),
        }
        let path = uri.path().trim_end_matches('/').to_owned();
        Ok(Resource {
            text: text.to_owned(),
            origin: format!("{scheme}://{authority}"),
            path,
        })
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }

    /// The absolute URL of the metadata document (RFC 9728 §3.1 path insertion).
    pub(crate) fn metadata_url(&self) -> String {
        format!("{}{WELL_KNOWN_PREFIX}{}", self.origin, self.path)
    }

    /// Where the document is served: the path-inserted location, then the root one.
    pub(crate) fn metadata_paths(&self) -> Vec<String> {
        let mut paths = vec![format!("{WELL_KNOWN_PREFIX}{}", self.path)];
        if !self.path.is_empty() {
            paths.push(WELL_KNOWN_PREFIX.to_owned());
        }
        paths
    }

    pub(crate) fn serves_metadata_at(&self, path: &str) -> bool {
        path == WELL_KNOWN_PREFIX
            || path
                .strip_prefix(WELL_KNOWN_PREFIX)
                .is_some_and(|rest| !self.path.is_empty() && rest == self.path)
    }
}

/// An authorization server issuer URL: absolute, `https` (or `http` on loopback), no query or
/// fragment (RFC 8414 §2).
pub(crate) fn check_server_url(url: &str) -> Result<(), ResourceError> {
    if url.contains('#') {
        return Err(ResourceError::Fragment);
    }
    let uri: Uri = url.parse().map_err(|_| ResourceError::NotAbsolute)?;
    let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
        return Err(ResourceError::NotAbsolute);
    };
    if uri.query().is_some() || url.contains('?') {
        return Err(ResourceError::Query);
    }
    if url
        .bytes()
        .any(|b| b == b'"' || b == b'\\' || !b.is_ascii_graphic())
    {
        return Err(ResourceError::NotAbsolute);
    }
    match scheme {
        "https" => Ok(()),
        "http" if is_loopback_host(authority.host()) => Ok(()),
        _ => Err(ResourceError::Scheme),
    }
}

/// RFC 9728 §2 fields this server publishes, in this order.
#[derive(Serialize)]
struct Document<'a> {
    resource: &'a str,
    authorization_servers: &'a [String],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    scopes_supported: &'a [String],
    /// Only the `Authorization` header (never a form body or the query string).
    bearer_methods_supported: [&'static str; 1],
    #[serde(skip_serializing_if = "Option::is_none")]
    resource_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    resource_documentation: Option<&'a str>,
}

pub(crate) fn document(
    resource: &Resource,
    authorization_servers: &[String],
    scopes_supported: &[String],
    resource_name: Option<&str>,
    resource_documentation: Option<&str>,
) -> Vec<u8> {
    let doc = Document {
        resource: resource.as_str(),
        authorization_servers,
        scopes_supported,
        bearer_methods_supported: ["header"],
        resource_name,
        resource_documentation,
    };
    // Serialising borrowed strings and slices cannot fail.
    serde_json::to_vec(&doc).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_insertion_follows_rfc9728() {
        let r = Resource::parse("https://mcp.example.com/server/mcp").expect("valid");
        assert_eq!(
            r.metadata_url(),
            "https://mcp.example.com/.well-known/oauth-protected-resource/server/mcp"
        );
        assert_eq!(
            r.metadata_paths(),
            [
                "/.well-known/oauth-protected-resource/server/mcp",
                "/.well-known/oauth-protected-resource"
            ]
        );
        assert!(r.serves_metadata_at("/.well-known/oauth-protected-resource/server/mcp"));
        assert!(r.serves_metadata_at("/.well-known/oauth-protected-resource"));
        assert!(!r.serves_metadata_at("/.well-known/oauth-protected-resource/mcp"));
        assert!(!r.serves_metadata_at("/.well-known/oauth-protected-resource/"));

        // A terminating slash after the host is removed before insertion (RFC 9728 §3.1).
        for root in ["https://mcp.example.com", "https://mcp.example.com/"] {
            let r = Resource::parse(root).expect("valid");
            assert_eq!(
                r.metadata_url(),
                "https://mcp.example.com/.well-known/oauth-protected-resource"
            );
            assert_eq!(
                r.metadata_paths(),
                ["/.well-known/oauth-protected-resource"]
            );
            assert!(!r.serves_metadata_at("/.well-known/oauth-protected-resourcex"));
        }
        let r = Resource::parse("https://mcp.example.com:8443/mcp").expect("valid");
        assert_eq!(
            r.metadata_url(),
            "https://mcp.example.com:8443/.well-known/oauth-protected-resource/mcp"
        );
    }

    #[test]
    fn non_canonical_resources_are_refused() {
        for (text, err) in [
            ("mcp.example.com", ResourceError::NotAbsolute),
            ("/mcp", ResourceError::NotAbsolute),
            ("https://mcp.example.com#frag", ResourceError::Fragment),
            ("https://mcp.example.com/mcp?x=1", ResourceError::Query),
            ("http://mcp.example.com/mcp", ResourceError::Scheme),
            ("ftp://127.0.0.1/mcp", ResourceError::Scheme),
            ("https://MCP.example.com/mcp", ResourceError::NotLowercase),
        ] {
            assert_eq!(Resource::parse(text).err(), Some(err), "{text}");
        }
        assert!(Resource::parse("http://127.0.0.1:8080/mcp").is_ok());
        assert!(Resource::parse("http://localhost/mcp").is_ok());
    }

    #[test]
    fn authorization_server_urls_are_checked() {
        assert!(check_server_url("https://auth.example.com").is_ok());
        assert!(check_server_url("https://auth.example.com/tenant1").is_ok());
        assert!(check_server_url("http://127.0.0.1:9000").is_ok());
        assert_eq!(
            check_server_url("http://auth.example.com"),
            Err(ResourceError::Scheme)
        );
        assert_eq!(
            check_server_url("https://auth.example.com?x"),
            Err(ResourceError::Query)
        );
        assert_eq!(check_server_url("auth"), Err(ResourceError::NotAbsolute));
    }
}
