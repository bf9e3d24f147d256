//! Finding the authorization server of a protected MCP server.
//!
//! 1. The `WWW-Authenticate: Bearer` challenge of a 401/403 ([`parse_challenge`]) may name the
//!    Protected Resource Metadata document (`resource_metadata`) and the scopes it wants.
//! 2. Without it, the RFC 9728 well-known locations are tried in the spec's order
//!    ([`protected_resource_candidates`]): the path-inserted one, then the root one.
//! 3. The first listed authorization server's metadata is read from the RFC 8414 and OpenID
//!    Connect discovery locations in the spec's order ([`authorization_server_candidates`]);
//!    the document's `issuer` must equal the issuer it was derived from, exactly.
//!
//! Every URL dialled is `https`, or `http` to a loopback host ([`check_endpoint`]); every
//! body is read under [`MAX_METADATA_BYTES`].

use hyper::Uri;
use serde::Deserialize;

use super::fetch::{FetchRequest, Fetcher};
use super::AuthError;

/// Largest metadata document read: real ones are a few KiB; a bigger answer is refused
/// instead of buffered.
pub const MAX_METADATA_BYTES: usize = 64 * 1024;

/// Longest `WWW-Authenticate` value parsed: a challenge is a handful of short parameters.
pub const MAX_CHALLENGE_BYTES: usize = 8 * 1024;

/// A parsed `Bearer` challenge (RFC 6750 §3, RFC 9728 §5.1).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    /// `resource_metadata`: where the Protected Resource Metadata is.
    pub resource_metadata: Option<String>,
    /// `scope`: the scopes the current operation needs (space-separated).
    pub scope: Option<String>,
    /// `error`, e.g. `invalid_token` or `insufficient_scope`.
    pub error: Option<String>,
}

/// Why a `WWW-Authenticate` value was not read as a Bearer challenge.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChallengeError {
    /// Longer than [`MAX_CHALLENGE_BYTES`].
    #[error("the challenge exceeds {MAX_CHALLENGE_BYTES} bytes")]
    TooLong,
    /// No `Bearer` challenge in the value.
    #[error("no Bearer challenge")]
    NotBearer,
    /// The parameters do not follow the auth-param grammar.
    #[error("the challenge parameters are malformed")]
    Malformed,
}

/// Reads the `Bearer` (or RFC 9449 `DPoP`) challenge of a `WWW-Authenticate` value (RFC 9110
/// §11.6.1 grammar: `Bearer k=v, k="quoted \" v"`). Other schemes listed before it are
/// skipped; parameters of a scheme after it end it.
///
/// # Errors
/// [`ChallengeError`] when the value is too long, has no Bearer challenge or is malformed.
pub fn parse_challenge(value: &str) -> Result<Challenge, ChallengeError> {
    if value.len() > MAX_CHALLENGE_BYTES {
        return Err(ChallengeError::TooLong);
    }
    let mut rest = value;
    let mut in_bearer = false;
    let mut found = false;
    let mut challenge = Challenge::default();
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        if rest.is_empty() {
            break;
        }
        let token_end = rest.find(['=', ',', ' ', '\t']).unwrap_or(rest.len());
        let token = &rest[..token_end];
        if token.is_empty() {
            return Err(ChallengeError::Malformed);
        }
        let after = rest[token_end..].trim_start_matches([' ', '\t']);
        if let Some(value_part) = after.strip_prefix('=') {
            // token68 padding (`abc==`) is not used by Bearer; treat `k=v` as a parameter.
            let value_part = value_part.trim_start_matches([' ', '\t']);
            let (param, remainder) = if let Some(quoted) = value_part.strip_prefix('"') {
                let mut out = String::new();
                let mut chars = quoted.char_indices();
                let mut end = None;
                while let Some((i, c)) = chars.next() {
                    match c {
                        '\\' => match chars.next() {
                            Some((_, escaped)) => out.push(escaped),
                            None => return Err(ChallengeError::Malformed),
                        },
                        '"' => {
                            end = Some(i + 1);
                            break;
                        }
                        c => out.push(c),
                    }
                }
                let end = end.ok_or(ChallengeError::Malformed)?;
                (out, &quoted[end..])
            } else {
                let end = value_part
                    .find([',', ' ', '\t'])
                    .unwrap_or(value_part.len());
                (value_part[..end].to_owned(), &value_part[end..])
            };
            if in_bearer {
                let slot = match token.to_ascii_lowercase().as_str() {
                    "resource_metadata" => Some(&mut challenge.resource_metadata),
                    "scope" => Some(&mut challenge.scope),
                    "error" => Some(&mut challenge.error),
                    _ => None,
                };
                if let Some(slot) = slot {
                    slot.get_or_insert(param);
                }
            }
            rest = remainder;
        } else {
            // A scheme name starts a new challenge.
            if found {
                break;
            }
            // RFC 9449 §7.1: a DPoP challenge carries the same parameters.
            in_bearer = token.eq_ignore_ascii_case("bearer") || token.eq_ignore_ascii_case("dpop");
            found = in_bearer;
            rest = after;
        }
    }
    if found {
        Ok(challenge)
    } else {
        Err(ChallengeError::NotBearer)
    }
}

/// Whether the OAuth client may dial `url`: `https`, or `http` to a loopback host.
///
/// # Errors
/// [`AuthError::InsecureEndpoint`] otherwise (or for a URL without a host).
pub fn check_endpoint(url: &str) -> Result<Uri, AuthError> {
    let insecure = || AuthError::InsecureEndpoint {
        url: url.to_owned(),
    };
    let uri: Uri = url.parse().map_err(|_| insecure())?;
    let host = uri.host().ok_or_else(insecure)?;
    match uri.scheme_str() {
        Some("https") => Ok(uri),
        Some("http") if is_loopback_host(host) => Ok(uri),
        _ => Err(insecure()),
    }
}

fn is_loopback_host(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// `scheme://authority` and the path without a trailing `/` (empty for the root).
fn origin_and_path(uri: &Uri) -> (String, String) {
    let origin = format!(
        "{}://{}",
        uri.scheme_str().unwrap_or_default().to_ascii_lowercase(),
        uri.authority()
            .map(|a| a.as_str().to_ascii_lowercase())
            .unwrap_or_default()
    );
    let path = uri.path().trim_end_matches('/').to_owned();
    (origin, path)
}

/// The canonical URI of the MCP server at `server_url` (RFC 8707 §2 as the spec uses it):
/// lower-case scheme and host, no query or fragment, no trailing `/`. This is the `resource`
/// parameter of every authorization and token request.
///
/// # Errors
/// [`AuthError::InsecureEndpoint`] as [`check_endpoint`].
pub fn canonical_resource(server_url: &str) -> Result<String, AuthError> {
    let uri = check_endpoint(server_url)?;
    let (origin, path) = origin_and_path(&uri);
    Ok(format!("{origin}{path}"))
}

/// The RFC 9728 §3.1 locations of the server's Protected Resource Metadata, in the order the
/// spec tries them: path-inserted, then root (only the root one when the path is empty).
///
/// # Errors
/// [`AuthError::InsecureEndpoint`] as [`check_endpoint`].
pub fn protected_resource_candidates(server_url: &str) -> Result<Vec<String>, AuthError> {
    let uri = check_endpoint(server_url)?;
    let (origin, path) = origin_and_path(&uri);
    let root = format!("{origin}/.well-known/oauth-protected-resource");
    Ok(if path.is_empty() {
        vec![root]
    } else {
        vec![format!("{root}{path}"), root]
    })
}

/// The authorization server metadata locations for `issuer`, in the spec's order. With a path
/// component: RFC 8414 path-inserted, OpenID Connect path-inserted, OpenID Connect appended;
/// without: RFC 8414, then OpenID Connect.
///
/// # Errors
/// [`AuthError::InsecureEndpoint`] as [`check_endpoint`].
pub fn authorization_server_candidates(issuer: &str) -> Result<Vec<String>, AuthError> {
    let uri = check_endpoint(issuer)?;
    let (origin, path) = origin_and_path(&uri);
    Ok(if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    })
}

/// The fields of an RFC 9728 Protected Resource Metadata document the client uses.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ProtectedResourceMetadata {
    /// The resource identifier.
    pub resource: String,
    /// Issuers of the authorization servers that issue tokens for it.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// The scopes basic use needs.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
}

/// The fields of an RFC 8414 / OpenID Connect discovery document the client uses.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct AuthorizationServerMetadata {
    /// Must equal the issuer the document was looked up for.
    pub issuer: String,
    /// Absent for servers offering only non-interactive grants.
    #[serde(default)]
    pub authorization_endpoint: Option<String>,
    /// Where codes, refresh tokens and client credentials are exchanged.
    pub token_endpoint: String,
    /// RFC 7591 dynamic registration.
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    /// Scopes the server knows (used for `offline_access`).
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    /// PKCE methods; the client refuses to run the code flow without `S256` here.
    #[serde(default)]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// Token endpoint client authentication methods.
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// Grant types the server supports.
    #[serde(default)]
    pub grant_types_supported: Option<Vec<String>>,
    /// RFC 9207: the authorization response always carries `iss`.
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: Option<bool>,
    /// Client ID Metadata Documents are accepted as `client_id`.
    #[serde(default)]
    pub client_id_metadata_document_supported: Option<bool>,
    /// RFC 9449 §5.1: the DPoP proof algorithms the server accepts (DPoP is used only when
    /// it lists [`super::DPOP_ALGORITHM`]).
    #[serde(default)]
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
}

impl AuthorizationServerMetadata {
    /// Whether DPoP proofs signed [`super::DPOP_ALGORITHM`] are advertised.
    pub fn supports_dpop(&self) -> bool {
        self.dpop_signing_alg_values_supported
            .as_ref()
            .is_some_and(|m| m.iter().any(|m| m == super::DPOP_ALGORITHM))
    }

    /// Whether PKCE `S256` is advertised.
    pub fn supports_s256(&self) -> bool {
        self.code_challenge_methods_supported
            .as_ref()
            .is_some_and(|m| m.iter().any(|m| m == "S256"))
    }
}

/// What discovery found for one MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovered {
    /// The `resource` of every authorization and token request: the resource metadata's
    /// identifier exactly as published (checked to identify this server).
    pub resource: String,
    /// Where the resource metadata was read.
    pub resource_metadata_url: String,
    /// The resource metadata.
    pub resource_metadata: ProtectedResourceMetadata,
    /// The chosen authorization server's metadata, `issuer` checked.
    pub authorization_server: AuthorizationServerMetadata,
}

/// Reads one JSON document at `url`: `Ok(None)` for a 4xx (try the next location), an error
/// for anything else that is not a 200 with a valid document.
async fn fetch_document<T: serde::de::DeserializeOwned>(
    fetcher: &dyn Fetcher,
    url: &str,
) -> Result<Option<T>, AuthError> {
    check_endpoint(url)?;
    let response = fetcher
        .fetch(FetchRequest::get(url, MAX_METADATA_BYTES))
        .await
        .map_err(|source| AuthError::Fetch {
            url: url.to_owned(),
            source,
        })?;
    match response.status {
        200 => serde_json::from_slice(&response.body)
            .map(Some)
            .map_err(|_| AuthError::InvalidMetadata {
                url: url.to_owned(),
            }),
        400..=499 => Ok(None),
        status => Err(AuthError::Status {
            url: url.to_owned(),
            status,
        }),
    }
}

/// Discovers the authorization server for the MCP server at `server_url`, given the challenge
/// of its 401 (if it was read). The resource metadata's `resource` must be the server's
/// canonical URI or a path prefix of it on the same origin (RFC 9728 §3.3); the first listed
/// authorization server is used. Its `resource` is then sent as published (a pathless
/// identifier stays without a trailing `/`).
///
/// # Errors
/// [`AuthError`] for an insecure URL, a failed fetch, no document at any location, a
/// resource or issuer mismatch, or a resource that lists no authorization server.
pub async fn discover(
    fetcher: &dyn Fetcher,
    server_url: &str,
    challenge: Option<&Challenge>,
) -> Result<Discovered, AuthError> {
    let resource = canonical_resource(server_url)?;
    let candidates = match challenge.and_then(|c| c.resource_metadata.clone()) {
        Some(url) => vec![url],
        None => protected_resource_candidates(server_url)?,
    };
    let mut found = None;
    for url in &candidates {
        if let Some(document) = fetch_document::<ProtectedResourceMetadata>(fetcher, url).await? {
            found = Some((url.clone(), document));
            break;
        }
    }
    let (resource_metadata_url, resource_metadata) =
        found.ok_or(AuthError::NoMetadata { tried: candidates })?;
    if !resource_covers(&resource_metadata.resource, &resource) {
        return Err(AuthError::ResourceMismatch {
            expected: resource,
            found: resource_metadata.resource,
        });
    }
    let issuer = resource_metadata
        .authorization_servers
        .first()
        .cloned()
        .ok_or(AuthError::NoAuthorizationServer)?;
    let authorization_server = discover_authorization_server(fetcher, &issuer).await?;
    Ok(Discovered {
        resource: resource_metadata.resource.clone(),
        resource_metadata_url,
        resource_metadata,
        authorization_server,
    })
}

/// Reads the metadata of the authorization server `issuer` from the first location that has
/// it, and checks the document's `issuer` equals `issuer` (simple string comparison).
///
/// # Errors
/// As [`discover`].
pub async fn discover_authorization_server(
    fetcher: &dyn Fetcher,
    issuer: &str,
) -> Result<AuthorizationServerMetadata, AuthError> {
    let candidates = authorization_server_candidates(issuer)?;
    for url in &candidates {
        if let Some(document) = fetch_document::<AuthorizationServerMetadata>(fetcher, url).await? {
            if document.issuer != issuer {
                return Err(AuthError::IssuerMismatch {
                    expected: issuer.to_owned(),
                    found: document.issuer,
                });
            }
            check_endpoint(&document.token_endpoint)?;
            if let Some(endpoint) = &document.authorization_endpoint {
                check_endpoint(endpoint)?;
            }
            if let Some(endpoint) = &document.registration_endpoint {
                check_endpoint(endpoint)?;
            }
            return Ok(document);
        }
    }
    Err(AuthError::NoMetadata { tried: candidates })
}

/// Whether the metadata's `resource` identifies `canonical` (same origin, path prefix on a
/// segment boundary).
fn resource_covers(advertised: &str, canonical: &str) -> bool {
    let Ok(advertised) = canonical_resource(advertised) else {
        return false;
    };
    canonical == advertised
        || canonical
            .strip_prefix(&advertised)
            .is_some_and(|rest| rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenge_params_quoted_and_bare() {
        let c = parse_challenge(
            r#"Bearer resource_metadata="http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp", scope="a b", error=insufficient_scope"#,
        )
        .unwrap();
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(c.scope.as_deref(), Some("a b"));
        assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
    }

    #[test]
    fn challenge_other_schemes_and_escapes() {
        let c =
            parse_challenge(r#"Basic realm="x", bearer scope="q\"r", DPoP algs="ES256""#).unwrap();
        assert_eq!(c.scope.as_deref(), Some("q\"r"));
        assert_eq!(c.resource_metadata, None);
        assert_eq!(
            parse_challenge(r#"Basic realm="x""#),
            Err(ChallengeError::NotBearer)
        );
        assert_eq!(
            parse_challenge(r#"Bearer scope="open"#),
            Err(ChallengeError::Malformed)
        );
        assert_eq!(parse_challenge("Bearer"), Ok(Challenge::default()));
        // RFC 9449 §7.1: a DPoP challenge is read the same way.
        let c = parse_challenge(
            r#"DPoP error="use_dpop_nonce", resource_metadata="http://127.0.0.1:1/m""#,
        )
        .unwrap();
        assert_eq!(c.error.as_deref(), Some("use_dpop_nonce"));
        assert_eq!(c.resource_metadata.as_deref(), Some("http://127.0.0.1:1/m"));
    }

    #[test]
    fn challenge_bound_at_and_past() {
        let head = "Bearer scope=";
        let at = format!("{head}{}", "a".repeat(MAX_CHALLENGE_BYTES - head.len()));
        assert_eq!(at.len(), MAX_CHALLENGE_BYTES);
        assert!(parse_challenge(&at).is_ok());
        assert_eq!(
            parse_challenge(&format!("{at}a")),
            Err(ChallengeError::TooLong)
        );
    }

    #[test]
    fn prm_locations_in_spec_order() {
        assert_eq!(
            protected_resource_candidates("http://127.0.0.1:5/public/mcp").unwrap(),
            [
                "http://127.0.0.1:5/.well-known/oauth-protected-resource/public/mcp",
                "http://127.0.0.1:5/.well-known/oauth-protected-resource",
            ]
        );
        assert_eq!(
            protected_resource_candidates("https://mcp.example.com/").unwrap(),
            ["https://mcp.example.com/.well-known/oauth-protected-resource"]
        );
    }

    #[test]
    fn as_locations_in_spec_order() {
        assert_eq!(
            authorization_server_candidates("https://auth.example.com/tenant1").unwrap(),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            authorization_server_candidates("https://auth.example.com").unwrap(),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn https_required_except_loopback() {
        assert!(check_endpoint("https://auth.example.com/x").is_ok());
        assert!(check_endpoint("http://localhost:3/x").is_ok());
        assert!(check_endpoint("http://[::1]:3/x").is_ok());
        assert!(check_endpoint("http://127.9.0.1/x").is_ok());
        for bad in [
            "http://auth.example.com/x",
            "http://10.0.0.1/",
            "ftp://127.0.0.1/",
            "/x",
        ] {
            assert!(
                matches!(check_endpoint(bad), Err(AuthError::InsecureEndpoint { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn canonical_resource_form() {
        assert_eq!(
            canonical_resource("HTTPS://MCP.Example.com/Mcp/?q=1#f").unwrap(),
            "https://mcp.example.com/Mcp"
        );
        assert_eq!(
            canonical_resource("https://mcp.example.com/").unwrap(),
            "https://mcp.example.com"
        );
        assert!(resource_covers(
            "https://mcp.example.com",
            "https://mcp.example.com/mcp"
        ));
        assert!(resource_covers(
            "https://mcp.example.com/mcp",
            "https://mcp.example.com/mcp"
        ));
        assert!(!resource_covers(
            "https://mcp.example.com/m",
            "https://mcp.example.com/mcp"
        ));
        assert!(!resource_covers(
            "https://other.example.com",
            "https://mcp.example.com/mcp"
        ));
    }
}
