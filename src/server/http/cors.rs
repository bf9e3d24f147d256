//! Cross-origin resource sharing for browser MCP hosts ([`HttpConfig::cors_origins`], off by
//! default).
//!
//! A browser page on one origin that calls this endpoint on another needs two things from the
//! server: an answer to its preflight (`OPTIONS` with `Access-Control-Request-Method`, sent
//! because MCP requests carry `Content-Type: application/json` and the `Mcp-*` headers), and
//! `Access-Control-Allow-Origin` on every response so the page may read it. Without
//! `cors_origins` the host sends neither, and an `OPTIONS` request is answered 405 as before.
//!
//! # Agreement with the Origin check
//!
//! An origin gets CORS headers only when it is listed in `cors_origins` **and** the Origin
//! check ([`HttpConfig::origins`]) admits it: the Origin check runs first, so a refused origin
//! is answered 403 with no `Access-Control-*` header at all, preflight included. A listed origin
//! that the Origin check refuses can never be served; [`HttpConfig::cors_conflicts`] names such
//! entries and [`McpHttp::new`](super::McpHttp::new) logs a warning for each, so the operator
//! widens [`HttpConfig::origins`] rather than wondering why the browser is refused. An origin
//! the Origin check admits but `cors_origins` does not list (with the default loopback policy,
//! any other loopback port) is served as a non-browser request would be, without CORS headers,
//! so the browser withholds the answer from the page.
//!
//! # What is sent
//!
//! - Preflight (listed, admitted origin; `OPTIONS` with `Access-Control-Request-Method`): 204,
//!   no body, `Access-Control-Allow-Origin` (the origin as sent), `Access-Control-Allow-Methods`
//!   (`POST`; `GET, POST, DELETE` when the legacy era's sessions are served),
//!   `Access-Control-Allow-Headers` (the requested names this endpoint reads, see
//!   [`CORS_ALLOWED_HEADERS`] and `Mcp-Param-*`; others are left out and the browser refuses the
//!   request), `Access-Control-Max-Age` ([`CORS_MAX_AGE_SECONDS`]) and `Vary`. The preflight
//!   never reaches the dispatcher.
//! - Every other response to such an origin: `Access-Control-Allow-Origin`,
//!   `Access-Control-Expose-Headers` ([`CORS_EXPOSED_HEADERS`]) and `Vary: Origin`.
//! - Never `Access-Control-Allow-Credentials`: the endpoint keeps no cookies or sessions of its
//!   own; a browser client sends its token in `Authorization`, which needs only the
//!   allowed-headers entry. Never `*`: the origin is echoed, so one list governs both checks.
//!
//! # Behind the authentication layer
//!
//! [`AuthLayer`](crate::server::auth::AuthLayer) runs before this host and refuses a request
//! without a token, and a preflight never carries one. Give the layer the same configuration
//! with `AuthLayer::with_cors(http_config.clone())`: it then hands a preflight from a served origin to
//! the host unauthenticated (the host answers it without dispatching anything), and puts the
//! answer headers above on its own 401 / 403 / 400 refusals, so the page can read the
//! `WWW-Authenticate` challenge and start its OAuth flow.

use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Response, StatusCode};

use super::guards::origin_allowed;
use super::response::plain;
use super::{HttpBody, HttpConfig, PARAM_HEADER_PREFIX};

/// Request headers (lower case) a preflight admits besides `Mcp-Param-*`: the mirrored MCP
/// headers, the token, the body's type, and the two the legacy transport reads.
pub const CORS_ALLOWED_HEADERS: &[&str] = &[
    "authorization",
    "content-type",
    "last-event-id",
    "mcp-method",
    "mcp-name",
    "mcp-protocol-version",
    "mcp-session-id",
];

/// Response headers a browser client may read beyond the CORS-safelisted ones: the legacy
/// session id and the bearer challenge of an authentication layer.
pub const CORS_EXPOSED_HEADERS: &str = "Mcp-Session-Id, WWW-Authenticate";

/// How long a browser may cache a preflight answer: ten minutes, so a host page does not pay a
/// preflight per call, yet a narrowed `cors_origins` takes effect soon (Chromium caps the value
/// at two hours anyway).
pub const CORS_MAX_AGE_SECONDS: u32 = 600;

const REQUEST_METHOD: &str = "access-control-request-method";
const REQUEST_HEADERS: &str = "access-control-request-headers";

impl HttpConfig {
    /// The entries of [`HttpConfig::cors_origins`] that the Origin check
    /// ([`HttpConfig::origins`]) refuses: a browser on such an origin is answered 403 whatever
    /// CORS says, so each is a configuration mistake.
    pub fn cors_conflicts(&self) -> Vec<&str> {
        self.cors_origins
            .iter()
            .filter(|o| !origin_allowed(&self.origins, o))
            .map(String::as_str)
            .collect()
    }
}

/// The request's `Origin` when CORS serves it: exactly one value, listed in `cors_origins` and
/// admitted by the Origin check. `None` at once when CORS is off.
pub(super) fn served_origin(config: &HttpConfig, headers: &HeaderMap) -> Option<HeaderValue> {
    if config.cors_origins.is_empty() {
        return None;
    }
    let mut values = headers.get_all(header::ORIGIN).iter();
    let (Some(origin), None) = (values.next(), values.next()) else {
        return None;
    };
    let text = origin.to_str().ok()?;
    let listed = config
        .cors_origins
        .iter()
        .any(|o| o.eq_ignore_ascii_case(text));
    (listed && origin_allowed(&config.origins, text)).then(|| origin.clone())
}

/// The preflight answer, when `headers` are a preflight's from an origin CORS serves.
pub(super) fn preflight(
    config: &HttpConfig,
    headers: &HeaderMap,
    legacy_methods: bool,
) -> Option<Response<HttpBody>> {
    if !headers.contains_key(REQUEST_METHOD) {
        return None;
    }
    let origin = served_origin(config, headers)?;
    let mut response = plain(StatusCode::NO_CONTENT);
    let h = response.headers_mut();
    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static(if legacy_methods {
            "GET, POST, DELETE"
        } else {
            "POST"
        }),
    );
    let allowed = allowed_request_headers(headers);
    if !allowed.is_empty() {
        if let Ok(value) = HeaderValue::from_str(&allowed.join(", ")) {
            h.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, value);
        }
    }
    h.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from(CORS_MAX_AGE_SECONDS),
    );
    h.insert(
        header::VARY,
        HeaderValue::from_static(
            "Origin, Access-Control-Request-Method, Access-Control-Request-Headers",
        ),
    );
    Some(response)
}

/// The names of `Access-Control-Request-Headers` this endpoint reads, lower case, in request
/// order, each once. The list is no longer than the request's own header, which hyper bounds.
fn allowed_request_headers(headers: &HeaderMap) -> Vec<String> {
    let mut allowed: Vec<String> = Vec::new();
    for value in headers.get_all(REQUEST_HEADERS) {
        let Ok(value) = value.to_str() else {
            continue;
        };
        for name in value.split(',') {
            let name = name.trim().to_ascii_lowercase();
            let known = CORS_ALLOWED_HEADERS.contains(&name.as_str())
                || (name.len() > PARAM_HEADER_PREFIX.len()
                    && name.starts_with(PARAM_HEADER_PREFIX)
                    && header::HeaderName::from_bytes(name.as_bytes()).is_ok());
            if known && !allowed.contains(&name) {
                allowed.push(name);
            }
        }
    }
    allowed
}

/// Adds the headers of an actual (non-preflight) response for a served origin.
pub(super) fn expose(response: &mut Response<HttpBody>, origin: HeaderValue) {
    expose_headers(response.headers_mut(), origin);
}

/// [`expose`] on a header map.
fn expose_headers(h: &mut HeaderMap, origin: HeaderValue) {
    if h.contains_key(header::ACCESS_CONTROL_ALLOW_ORIGIN) {
        return;
    }
    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    h.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static(CORS_EXPOSED_HEADERS),
    );
    h.append(header::VARY, HeaderValue::from_static("Origin"));
}

/// The authentication layer's view of the host's CORS rules
/// ([`AuthLayer::with_cors`](crate::server::auth::AuthLayer::with_cors)): exactly the
/// host's own decision and headers.
#[cfg(feature = "auth")]
impl crate::server::auth::BrowserCors for HttpConfig {
    fn serves(&self, request: &HeaderMap) -> bool {
        served_origin(self, request).is_some()
    }

    fn expose(&self, request: &HeaderMap, response: &mut HeaderMap) {
        if let Some(origin) = served_origin(self, request) {
            expose_headers(response, origin);
        }
    }
}
