//! CORS for browser hosts (`HttpConfig::cors_origins`, off by default) and its agreement with
//! the Origin check (D34): exact response headers for preflights, answers, refusals.
//!
//! The host is driven in process through `McpHttp::handle` with the real protocol server behind
//! it; the real browser test (`tests/apps_browser.rs`) covers the same headers over TCP.
#![forbid(unsafe_code)]
#![cfg(feature = "http")]

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Method, Request, Response, StatusCode};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use strict_mcp::core::{Invocation, RegistryBuilder, ToolDef};
use strict_mcp::server::http::{
    HttpBody, HttpConfig, McpHttp, OriginPolicy, CORS_ALLOWED_HEADERS, CORS_EXPOSED_HEADERS,
    CORS_MAX_AGE_SECONDS,
};
use strict_mcp::server::{Server, ServerOptions};

const PV: &str = "2026-07-28";
const PAGE: &str = "http://127.0.0.1:5173";

#[derive(Deserialize, JsonSchema)]
struct EchoIn {
    text: String,
}

#[derive(Serialize, JsonSchema)]
struct EchoOut {
    text: String,
}

fn host(config: HttpConfig) -> McpHttp<Server> {
    let registry = RegistryBuilder::new()
        .tool(ToolDef::typed(
            "echo",
            |_i: Invocation, i: EchoIn| async move { Ok(EchoOut { text: i.text }) },
        ))
        .build()
        .expect("registry");
    let server = Server::new(
        registry,
        ServerOptions::new().server_info("cors-test", "0.0.1"),
    )
    .expect("server");
    McpHttp::new(server, config)
}

fn cors(origins: &[&str]) -> HttpConfig {
    HttpConfig {
        cors_origins: origins.iter().map(|o| (*o).to_owned()).collect(),
        ..HttpConfig::default()
    }
}

fn list_body() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": PV,
        "io.modelcontextprotocol/clientCapabilities": {}
    }}})
    .to_string()
}

/// A `tools/list` POST with every header a browser client sends, plus `extra`.
fn post(extra: &[(&str, &str)]) -> Request<Full<Bytes>> {
    let mut b = Request::post("http://127.0.0.1:3000/mcp")
        .header("host", "127.0.0.1:3000")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-method", "tools/list")
        .header("mcp-protocol-version", PV);
    for (k, v) in extra {
        b = b.header(*k, *v);
    }
    b.body(Full::new(Bytes::from(list_body()))).unwrap()
}

/// A preflight as Chromium sends it before such a POST.
fn preflight(origin: &str, request_headers: &str) -> Request<Full<Bytes>> {
    Request::builder()
        .method(Method::OPTIONS)
        .uri("http://127.0.0.1:3000/mcp")
        .header("host", "127.0.0.1:3000")
        .header("origin", origin)
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", request_headers)
        .body(Full::new(Bytes::new()))
        .unwrap()
}

/// The CORS-related headers of a response (`access-control-*` and `vary`), in order.
fn cors_headers(r: &Response<HttpBody>) -> Vec<(String, String)> {
    r.headers()
        .iter()
        .filter(|(n, _)| n.as_str().starts_with("access-control-") || n.as_str() == "vary")
        .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap().to_owned()))
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect()
}

async fn body(r: Response<HttpBody>) -> String {
    String::from_utf8(r.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap()
}

/// The headers every answer to a served origin carries.
fn exposed(origin: &str) -> Vec<(String, String)> {
    pairs(&[
        ("access-control-allow-origin", origin),
        (
            "access-control-expose-headers",
            "Mcp-Session-Id, WWW-Authenticate",
        ),
        ("vary", "Origin"),
    ])
}

#[tokio::test]
async fn cors_constants_are_the_documented_ones() {
    assert_eq!(CORS_EXPOSED_HEADERS, "Mcp-Session-Id, WWW-Authenticate");
    assert_eq!(CORS_MAX_AGE_SECONDS, 600);
    assert_eq!(
        CORS_ALLOWED_HEADERS,
        [
            "authorization",
            "content-type",
            "last-event-id",
            "mcp-method",
            "mcp-name",
            "mcp-protocol-version",
            "mcp-session-id"
        ]
    );
}

/// Off by default: no CORS header on any answer, and OPTIONS stays the 405 it always was.
#[tokio::test]
async fn d34_cors_off_by_default_sends_no_cors_header() {
    let http = host(HttpConfig::default());
    assert!(http.config().cors_origins.is_empty());
    let r = http.handle(post(&[("origin", PAGE)])).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(cors_headers(&r), vec![]);
    let r = http.handle(preflight(PAGE, "content-type")).await;
    assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(r.headers()["allow"], "POST");
    assert_eq!(cors_headers(&r), vec![]);
}

/// The preflight of a listed, admitted origin: 204 with exactly these headers, the requested
/// names this endpoint reads echoed lower case in request order (`x-other` is left out, a
/// repeated name appears once), nothing dispatched, no body.
#[tokio::test]
async fn d34_cors_preflight_answers_the_mcp_headers() {
    let http = host(cors(&[PAGE]));
    let r = http
        .handle(preflight(
            PAGE,
            "content-type,mcp-method, Mcp-Name,mcp-protocol-version,mcp-param-region,\
             authorization,last-event-id,mcp-session-id,x-other,MCP-METHOD,mcp-param-",
        ))
        .await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        cors_headers(&r),
        pairs(&[
            ("access-control-allow-origin", PAGE),
            ("access-control-allow-methods", "POST"),
            (
                "access-control-allow-headers",
                "content-type, mcp-method, mcp-name, mcp-protocol-version, mcp-param-region, \
                 authorization, last-event-id, mcp-session-id"
            ),
            ("access-control-max-age", "600"),
            (
                "vary",
                "Origin, Access-Control-Request-Method, Access-Control-Request-Headers"
            ),
        ])
    );
    assert_eq!(r.headers().len(), 5, "{:?}", r.headers());
    assert_eq!(body(r).await, "");
}

/// A preflight that asks for no header gets no allowed-headers entry.
#[tokio::test]
async fn d34_cors_preflight_without_request_headers() {
    let http = host(cors(&[PAGE]));
    let request = Request::builder()
        .method(Method::OPTIONS)
        .uri("/mcp")
        .header("host", "localhost")
        .header("origin", PAGE)
        .header("access-control-request-method", "POST")
        .body(Full::new(Bytes::new()))
        .unwrap();
    let r = http.handle(request).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert!(!r.headers().contains_key("access-control-allow-headers"));
    assert_eq!(r.headers()["access-control-allow-methods"], "POST");
}

/// Every answer to a served origin can be read by the page: the result, a refusal of a later
/// step (406), and the origin is echoed as sent (the list compares case-insensitively).
#[tokio::test]
async fn d34_cors_answers_carry_allow_origin_and_exposed_headers() {
    let http = host(cors(&["HTTP://127.0.0.1:5173"]));
    let r = http.handle(post(&[("origin", PAGE)])).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(cors_headers(&r), exposed(PAGE));
    let text = body(r).await;
    assert!(text.contains(r#""name":"call_tool""#), "{text}");

    let mut refused = post(&[("origin", PAGE)]);
    refused.headers_mut().remove("accept");
    let r = http.handle(refused).await;
    assert_eq!(r.status(), StatusCode::NOT_ACCEPTABLE);
    assert_eq!(cors_headers(&r), exposed(PAGE));
}

/// A listed origin the Origin check refuses is a conflict the config names; such a browser
/// gets the 403 with no CORS header, preflight included (the two checks agree).
#[tokio::test]
async fn d34_cors_refused_origin_gets_no_cors_headers() {
    let config = cors(&[PAGE, "https://app.example"]);
    assert_eq!(config.cors_conflicts(), vec!["https://app.example"]);
    let http = host(config);
    let r = http
        .handle(preflight("https://app.example", "content-type"))
        .await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert_eq!(cors_headers(&r), vec![]);
    let r = http
        .handle(post(&[("origin", "https://app.example")]))
        .await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert_eq!(cors_headers(&r), vec![]);
    assert_eq!(
        body(r).await,
        "Forbidden: the Origin header names a browser origin this server does not allow.\n"
    );
    // Two Origin headers are refused by the Origin check, CORS or not.
    let r = http
        .handle(post(&[("origin", PAGE), ("origin", PAGE)]))
        .await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert_eq!(cors_headers(&r), vec![]);
}

/// An origin the Origin check admits but CORS does not list (another loopback port) is served
/// like a non-browser client: no CORS header, so the browser withholds the answer; its
/// OPTIONS is the ordinary 405.
#[tokio::test]
async fn d34_cors_unlisted_admitted_origin_gets_no_cors_headers() {
    let http = host(cors(&[PAGE]));
    let other = "http://127.0.0.1:5174";
    let r = http.handle(post(&[("origin", other)])).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(cors_headers(&r), vec![]);
    let r = http.handle(preflight(other, "content-type")).await;
    assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(cors_headers(&r), vec![]);
}

/// With an explicit Origin allow-list, CORS serves the listed origins that list admits, and an
/// origin the allow-list admits but CORS does not name gets no CORS header.
#[tokio::test]
async fn d34_cors_agrees_with_an_explicit_origin_allow_list() {
    let config = HttpConfig {
        origins: OriginPolicy::Allow(vec!["https://app.example".into(), PAGE.into()]),
        cors_origins: vec!["https://APP.example".into()],
        ..HttpConfig::default()
    };
    assert_eq!(config.cors_conflicts(), Vec::<&str>::new());
    let http = host(config);
    let r = http
        .handle(preflight("https://app.example", "mcp-method"))
        .await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        r.headers()["access-control-allow-origin"],
        "https://app.example"
    );
    assert_eq!(r.headers()["access-control-allow-headers"], "mcp-method");
    let r = http.handle(post(&[("origin", PAGE)])).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(cors_headers(&r), vec![]);
    // OriginPolicy::None refuses every browser: every CORS entry is a conflict.
    let none = HttpConfig {
        origins: OriginPolicy::None,
        cors_origins: vec![PAGE.into()],
        ..HttpConfig::default()
    };
    assert_eq!(none.cors_conflicts(), vec![PAGE]);
    let r = host(none).handle(preflight(PAGE, "mcp-method")).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert_eq!(cors_headers(&r), vec![]);
}

/// A request without Origin (a non-browser client) is untouched by CORS.
#[tokio::test]
async fn d34_cors_request_without_origin_gets_no_cors_headers() {
    let http = host(cors(&[PAGE]));
    let r = http.handle(post(&[])).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(cors_headers(&r), vec![]);
}

/// The preflight is answered after the path check: another path is still a plain 404.
#[tokio::test]
async fn d34_cors_preflight_on_another_path_is_404() {
    let http = host(HttpConfig {
        path: Some("/mcp".into()),
        ..cors(&[PAGE])
    });
    let mut request = preflight(PAGE, "content-type");
    *request.uri_mut() = "http://127.0.0.1:3000/other".parse().unwrap();
    let r = http.handle(request).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert_eq!(r.headers()["access-control-allow-origin"], PAGE);
}

// ---------------------------------------------------------------------------------------------
// Behind the authentication layer (`AuthLayer::with_cors`)

#[cfg(feature = "auth")]
mod behind_auth {
    use super::*;
    use strict_mcp::server::auth::{
        AuthConfig, AuthLayer, BearerToken, BoxFuture, Principal, TokenVerifier, VerifyError,
    };
    use tower::{Layer, ServiceExt};

    /// Accepts the token `good` as subject `ada`.
    struct OneToken;

    impl TokenVerifier for OneToken {
        fn verify<'a>(
            &'a self,
            token: &'a BearerToken,
        ) -> BoxFuture<'a, Result<Principal, VerifyError>> {
            let ok = token.expose() == "good";
            Box::pin(async move {
                if ok {
                    Ok(Principal::new("ada").with_scopes(["mcp"]))
                } else {
                    Err(VerifyError::BadSignature)
                }
            })
        }
    }

    fn layer() -> AuthLayer {
        let config = AuthConfig::builder("http://127.0.0.1:3000/mcp")
            .authorization_server("http://127.0.0.1:9000")
            .build()
            .unwrap();
        AuthLayer::new(config, OneToken)
    }

    async fn call<S, B>(service: &S, request: Request<Full<Bytes>>) -> Response<B>
    where
        S: tower::Service<Request<Full<Bytes>>, Response = Response<B>> + Clone,
        S::Error: std::fmt::Debug,
    {
        service.clone().oneshot(request).await.unwrap()
    }

    fn cors_of<B>(r: &Response<B>) -> Vec<(String, String)> {
        r.headers()
            .iter()
            .filter(|(n, _)| n.as_str().starts_with("access-control-") || n.as_str() == "vary")
            .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap().to_owned()))
            .collect()
    }

    const CHALLENGE: &str = "Bearer resource_metadata=\"http://127.0.0.1:3000/.well-known/oauth-protected-resource/mcp\"";

    /// With the host's config, the preflight passes the layer without a token and gets the
    /// host's 204; the 401 challenge is readable by the page; a token gets the answer.
    #[tokio::test]
    async fn d34_cors_with_auth_preflight_passes_and_challenge_is_readable() {
        let http = cors(&[PAGE]);
        let service = layer().with_cors(http.clone()).layer(host(http));
        let r = call(&service, preflight(PAGE, "authorization, content-type")).await;
        assert_eq!(r.status(), StatusCode::NO_CONTENT);
        assert_eq!(
            r.headers()["access-control-allow-headers"],
            "authorization, content-type"
        );
        assert_eq!(r.headers()["access-control-allow-origin"], PAGE);

        let r = call(&service, post(&[("origin", PAGE)])).await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(r.headers()["www-authenticate"], CHALLENGE);
        assert_eq!(cors_of(&r), exposed(PAGE));

        let r = call(
            &service,
            post(&[("origin", PAGE), ("authorization", "Bearer bad")]),
        )
        .await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(cors_of(&r), exposed(PAGE));

        let r = call(
            &service,
            post(&[("origin", PAGE), ("authorization", "Bearer good")]),
        )
        .await;
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(cors_of(&r), exposed(PAGE));
    }

    /// The layer decides with the host's own rules: an unlisted or refused origin gets no CORS
    /// header on the 401, and its preflight is refused like any tokenless request.
    #[tokio::test]
    async fn d34_cors_with_auth_refused_origins_get_no_cors_headers() {
        let http = cors(&[PAGE, "https://app.example"]);
        let service = layer().with_cors(http.clone()).layer(host(http));
        for origin in ["http://127.0.0.1:5174", "https://app.example"] {
            let r = call(&service, preflight(origin, "content-type")).await;
            assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{origin}");
            assert_eq!(cors_of(&r), vec![], "{origin}");
            let r = call(&service, post(&[("origin", origin)])).await;
            assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{origin}");
            assert_eq!(cors_of(&r), vec![], "{origin}");
        }
    }

    /// Without `with_cors` the layer is as before: a preflight is a tokenless request (401, no
    /// CORS header), even when the host behind lists the origin.
    #[tokio::test]
    async fn d34_cors_auth_without_with_cors_refuses_the_preflight() {
        let service = layer().layer(host(cors(&[PAGE])));
        let r = call(&service, preflight(PAGE, "content-type")).await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(cors_of(&r), vec![]);
    }
}

/// With the initialise era on (feature `legacy`), the preflight also allows the legacy
/// transport's `GET` (its stream) and `DELETE` (session end).
#[cfg(feature = "legacy")]
#[tokio::test]
async fn d34_cors_preflight_allows_the_legacy_methods_when_the_era_is_on() {
    let registry = RegistryBuilder::new()
        .tool(ToolDef::typed(
            "echo",
            |_i: Invocation, i: EchoIn| async move { Ok(EchoOut { text: i.text }) },
        ))
        .build()
        .expect("registry");
    let server = Server::new(registry, ServerOptions::new().legacy_era(true)).expect("server");
    let http = McpHttp::new(server, cors(&[PAGE]));
    let r = http.handle(preflight(PAGE, "mcp-session-id")).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        r.headers()["access-control-allow-methods"],
        "GET, POST, DELETE"
    );
    assert_eq!(
        r.headers()["access-control-allow-headers"],
        "mcp-session-id"
    );
}
