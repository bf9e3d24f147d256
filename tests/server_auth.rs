//! The protected-resource layer in front of the real server (D36, D44; RFC 9728, RFC 6750 §3,
//! RFC 8707, RFC 7662): metadata, every challenge with its exact bytes, the JWT and
//! introspection verifiers with keys made in the test, the key-set fetch bounds, and the
//! verified principal reaching tools and binding continuation state.
#![forbid(unsafe_code)]
#![cfg(feature = "auth")]

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Request, Response, StatusCode};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use p256::pkcs8::EncodePrivateKey as _;
use serde_json::{json, Value};
use tower::{Layer as _, ServiceExt as _};

use strict_mcp::core::{Clock, Invocation, RegistryBuilder, ToolDef};
use strict_mcp::server::auth::{
    AuthBody, AuthConfig, AuthLayer, AuthService, BearerToken, BoxFuture, ClientCredentials,
    DialingFetcher, FetchError, FetchRequest, FetchResponse, Fetcher, HttpFetcher,
    IntrospectionConfigError, IntrospectionVerifier, JwtVerifier, Principal, TokenTyp,
    TokenVerifier, VerifyError, DEFAULT_JWKS_REFETCH_INTERVAL, DEFAULT_LEEWAY,
    MAX_INTROSPECTION_CACHE_ENTRIES, MAX_INTROSPECTION_CACHE_TTL, MAX_JWKS_BYTES, MAX_TOKEN_BYTES,
    METADATA_CORS_ALLOW_HEADERS, METADATA_CORS_MAX_AGE_SECS,
};
use strict_mcp::server::http::{HttpBody, HttpConfig, McpHttp};
use strict_mcp::server::{Server, ServerOptions};

mod support;
use support::auth::{greet, whoami, Empty, WhoAmI};
use support::evidence::{Outcome as Seen, Recorder};

const PV: &str = "2026-07-28";
const RESOURCE: &str = "http://127.0.0.1:8123/mcp";
const ISSUER: &str = "http://127.0.0.1:9000";
const JWKS_URL: &str = "http://127.0.0.1:9000/jwks";
const METADATA_URL: &str = "http://127.0.0.1:8123/.well-known/oauth-protected-resource/mcp";
/// 2026-12-01T00:00:00Z, the test clock's start.
const T0: u64 = 1_796_083_200;

// ---------------------------------------------------------------------------------------------
// Keys, tokens, clock, fetcher

struct TestClock(AtomicU64);
impl TestClock {
    fn new() -> Arc<Self> {
        Arc::new(TestClock(AtomicU64::new(T0 * 1000)))
    }
    fn set_s(&self, s: u64) {
        self.0.store(s * 1000, Ordering::SeqCst);
    }
    fn advance(&self, d: Duration) {
        self.0
            .fetch_add(u64::try_from(d.as_millis()).unwrap(), Ordering::SeqCst);
    }
}
impl Clock for TestClock {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// A P-256 key made in the test, its key id and its public JWK.
struct Key {
    kid: String,
    encoding: EncodingKey,
    jwk: Value,
}

fn new_key(kid: &str) -> Key {
    let secret = loop {
        let mut bytes = [0u8; 32];
        getrandom::getrandom(&mut bytes).unwrap();
        if let Ok(k) = p256::SecretKey::from_slice(&bytes) {
            break k;
        }
    };
    let der = secret.to_pkcs8_der().unwrap();
    let point =
        p256::elliptic_curve::sec1::ToEncodedPoint::to_encoded_point(&secret.public_key(), false);
    let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
    Key {
        kid: kid.to_owned(),
        encoding: EncodingKey::from_ec_der(der.as_bytes()),
        jwk: json!({
            "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": kid,
            "x": b64(point.x().unwrap()), "y": b64(point.y().unwrap()),
        }),
    }
}

fn jwks(keys: &[&Key]) -> Bytes {
    let keys: Vec<Value> = keys.iter().map(|k| k.jwk.clone()).collect();
    Bytes::from(json!({ "keys": keys }).to_string())
}

fn claims(sub: &str, scope: &str) -> Value {
    json!({
        "iss": ISSUER, "sub": sub, "aud": RESOURCE, "scope": scope,
        "iat": T0, "exp": T0 + 3600, "client_id": "test-client",
    })
}

/// A JOSE header typed as an RFC 9068 access token (`typ: at+jwt`), which the verifier
/// requires by default.
fn at_header(alg: Algorithm) -> Header {
    let mut header = Header::new(alg);
    header.typ = Some("at+jwt".into());
    header
}

fn mint(key: &Key, claims: &Value) -> String {
    let mut header = at_header(Algorithm::ES256);
    header.kid = Some(key.kid.clone());
    jsonwebtoken::encode(&header, claims, &key.encoding).unwrap()
}

/// A token with a hand-made header (e.g. `alg: none`) and the given signature part.
fn raw_token(header: &Value, claims: &Value, signature: &str) -> String {
    let b64 = |v: &Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string().as_bytes())
    };
    format!("{}.{}.{signature}", b64(header), b64(claims))
}

/// A fetcher that answers from memory and counts its calls.
#[derive(Clone, Default)]
struct StubFetcher {
    inner: Arc<StubInner>,
}
#[derive(Default)]
struct StubInner {
    calls: AtomicUsize,
    status: Mutex<u16>,
    body: Mutex<Bytes>,
    delay: Mutex<Option<Duration>>,
    seen: Mutex<Vec<FetchRequest>>,
}
impl StubFetcher {
    fn serving(body: Bytes) -> Self {
        let f = StubFetcher::default();
        *f.inner.status.lock().unwrap() = 200;
        *f.inner.body.lock().unwrap() = body;
        f
    }
    fn set_body(&self, body: Bytes) {
        *self.inner.body.lock().unwrap() = body;
    }
    fn calls(&self) -> usize {
        self.inner.calls.load(Ordering::SeqCst)
    }
}
impl Fetcher for StubFetcher {
    fn fetch(&self, request: FetchRequest) -> BoxFuture<'_, Result<FetchResponse, FetchError>> {
        self.inner.calls.fetch_add(1, Ordering::SeqCst);
        let status = *self.inner.status.lock().unwrap();
        let body = self.inner.body.lock().unwrap().clone();
        let delay = *self.inner.delay.lock().unwrap();
        self.inner.seen.lock().unwrap().push(request);
        Box::pin(async move {
            if let Some(d) = delay {
                tokio::time::sleep(d).await;
            }
            Ok(FetchResponse {
                status,
                content_type: Some("application/json".into()),
                body,
            })
        })
    }
}

fn jwt_verifier(fetcher: StubFetcher, clock: Arc<TestClock>) -> JwtVerifier {
    JwtVerifier::builder(RESOURCE)
        .issuer(ISSUER)
        .algorithms([Algorithm::ES256])
        .jwks(JWKS_URL, fetcher)
        .clock(clock)
        .build()
        .unwrap()
}

// ---------------------------------------------------------------------------------------------
// The protected server

fn server() -> Server {
    let registry = RegistryBuilder::new()
        .tool(whoami())
        .tool(ToolDef::typed(
            "delete",
            |inv: Invocation, _i: Empty| async move {
                Ok(WhoAmI {
                    principal: inv.caller().principal().map(str::to_owned),
                    scope: None,
                })
            },
        ))
        .prompt(greet(|name, _| format!("Hello {}", name.get())).argument(
            "style",
            "How to greet.",
            false,
        ))
        .build()
        .unwrap();
    Server::new(registry, ServerOptions::new().mode("direct")).unwrap()
}

fn config() -> AuthConfig {
    AuthConfig::builder(RESOURCE)
        .authorization_server(ISSUER)
        .scopes_supported(["mcp:use"])
        .require_scopes(["mcp:use"])
        .require_for_method("tools/call", ["tools:call"])
        .require_for_name("tools/call", "delete", ["files:write"])
        .scope_implies("files", ["files:read", "files:write"])
        .build()
        .unwrap()
}

type Protected = AuthService<McpHttp<Server>>;

fn protect(verifier: impl TokenVerifier) -> Protected {
    let http = McpHttp::new(
        server(),
        HttpConfig {
            path: Some("/mcp".into()),
            ..HttpConfig::default()
        },
    );
    AuthLayer::new(config(), verifier).layer(http)
}

fn rpc(id: Value, method: &str, mut params: Value) -> String {
    if params.get("_meta").is_none() {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": PV,
            "io.modelcontextprotocol/clientCapabilities": {}
        });
    }
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

fn post(
    token: Option<&str>,
    method: &str,
    name: Option<&str>,
    body: String,
) -> Request<Full<Bytes>> {
    let mut b = Request::post("/mcp")
        .header("host", "127.0.0.1:8123")
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", PV)
        .header("mcp-method", method);
    if let Some(name) = name {
        b = b.header("mcp-name", name);
    }
    if let Some(token) = token {
        b = b.header("authorization", format!("Bearer {token}"));
    }
    b.body(Full::new(Bytes::from(body))).unwrap()
}

fn call(token: Option<&str>, tool: &str) -> Request<Full<Bytes>> {
    post(
        token,
        "tools/call",
        Some(tool),
        rpc(
            json!(1),
            "tools/call",
            json!({"name": tool, "arguments": {}}),
        ),
    )
}

async fn send(service: &Protected, request: Request<Full<Bytes>>) -> Response<AuthBody<HttpBody>> {
    tokio::time::timeout(Duration::from_secs(10), service.clone().oneshot(request))
        .await
        .expect("answered in time")
        .unwrap()
}

async fn body_text(response: Response<AuthBody<HttpBody>>) -> String {
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(bytes.to_vec()).unwrap()
}

fn challenge(response: &Response<AuthBody<HttpBody>>) -> &str {
    response.headers()["www-authenticate"].to_str().unwrap()
}

/// The status, the challenge and the (empty) body of a refusal.
async fn refusal(response: Response<AuthBody<HttpBody>>) -> (StatusCode, String) {
    let status = response.status();
    let value = challenge(&response).to_owned();
    assert_eq!(
        response
            .headers()
            .get_all("www-authenticate")
            .iter()
            .count(),
        1
    );
    assert!(response.headers().get("content-type").is_none());
    assert_eq!(body_text(response).await, "", "refusals carry no body");
    (status, value)
}

/// Contract evidence (tests/support/evidence.rs): the HTTP server answered `method` with the
/// reply `v` as read (a `result` member or not).
fn seen(rec: &Recorder, method: &str, v: &Value) {
    let outcome = if v.get("result").is_some() {
        Seen::Result
    } else {
        Seen::Error
    };
    rec.observed("http-server", method, outcome);
}

/// Contract evidence: the HTTP server answered the request for `operation` with `status`
/// (2xx a result; a refusal such as 401, 403 or 405 an error).
fn seen_status(rec: &Recorder, operation: &str, status: StatusCode) {
    let outcome = if status.is_success() {
        Seen::Result
    } else {
        Seen::Error
    };
    rec.observed("http-server", operation, outcome);
}

/// The contract operation of the protected resource metadata document.
fn metadata_operation() -> String {
    format!("GET {}", strict_mcp::server::auth::WELL_KNOWN_PREFIX)
}

fn result(text: &str) -> Value {
    let v: Value = serde_json::from_str(text).unwrap_or_else(|_| panic!("json: {text}"));
    v
}

/// A verifier that accepts any token as a fixed principal and counts its calls.
#[derive(Clone)]
struct Fixed {
    principal: Principal,
    calls: Arc<AtomicUsize>,
}
impl TokenVerifier for Fixed {
    fn verify<'a>(&'a self, _t: &'a BearerToken) -> BoxFuture<'a, Result<Principal, VerifyError>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move { Ok(self.principal.clone()) })
    }
}
fn fixed(scopes: &[&str]) -> Fixed {
    Fixed {
        principal: Principal::new("alice").with_scopes(scopes.iter().copied()),
        calls: Arc::new(AtomicUsize::new(0)),
    }
}

// ---------------------------------------------------------------------------------------------
// Metadata (RFC 9728)

#[tokio::test]
async fn d44_protected_resource_metadata_at_both_well_known_paths_exact_bytes() {
    let rec = support::evidence::recorder!();
    let service = protect(fixed(&[]));
    let expected = format!(
        "{{\"resource\":\"{RESOURCE}\",\"authorization_servers\":[\"{ISSUER}\"],\
         \"scopes_supported\":[\"mcp:use\"],\"bearer_methods_supported\":[\"header\"]}}"
    );
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let response = send(&service, Request::get(path).body(Full::default()).unwrap()).await;
        seen_status(&rec, &metadata_operation(), response.status());
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        assert_eq!(response.headers()["content-type"], "application/json");
        assert_eq!(response.headers()["access-control-allow-origin"], "*");
        assert!(response
            .headers()
            .get("access-control-allow-credentials")
            .is_none());
        assert!(response.headers().get("www-authenticate").is_none());
        assert_eq!(body_text(response).await, expected, "{path}");
    }
    // GET (and the CORS preflight) only.
    for method in ["POST", "HEAD", "PUT", "DELETE"] {
        let request = Request::builder()
            .method(method)
            .uri("/.well-known/oauth-protected-resource/mcp")
            .body(Full::default())
            .unwrap();
        let response = send(&service, request).await;
        seen_status(&rec, &metadata_operation(), response.status());
        assert_eq!(
            response.status(),
            StatusCode::METHOD_NOT_ALLOWED,
            "{method}"
        );
        assert_eq!(response.headers()["allow"], "GET, OPTIONS");
        assert!(response
            .headers()
            .get("access-control-allow-origin")
            .is_none());
        assert_eq!(body_text(response).await, "");
    }
    // Near misses are protected like any other path.
    for path in [
        "/.well-known/oauth-protected-resource/other",
        "/.well-known/oauth-protected-resource/",
        "/.well-known/oauth-protected-resource/mcp/x",
    ] {
        let response = send(&service, Request::get(path).body(Full::default()).unwrap()).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{path}");
    }
    let config = config();
    assert_eq!(config.metadata_url(), METADATA_URL);
    assert_eq!(config.metadata_document(), expected.as_bytes());
}

/// A browser client on another origin can read the metadata: the preflight is answered
/// without a token, exactly, and never with credentials.
#[tokio::test]
async fn d44_metadata_cors_preflight_and_no_credentials() {
    let service = protect(fixed(&[]));
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let request = Request::builder()
            .method("OPTIONS")
            .uri(path)
            .header("origin", "https://app.example.com")
            .header("access-control-request-method", "GET")
            .header("access-control-request-headers", "mcp-protocol-version")
            .body(Full::default())
            .unwrap();
        let response = send(&service, request).await;
        assert_eq!(response.status(), StatusCode::NO_CONTENT, "{path}");
        let mut headers: Vec<(String, String)> = response
            .headers()
            .iter()
            .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap().to_owned()))
            .collect();
        headers.sort();
        assert_eq!(
            headers,
            [
                (
                    "access-control-allow-headers".to_owned(),
                    METADATA_CORS_ALLOW_HEADERS.to_owned()
                ),
                (
                    "access-control-allow-methods".to_owned(),
                    "GET, OPTIONS".to_owned()
                ),
                ("access-control-allow-origin".to_owned(), "*".to_owned()),
                (
                    "access-control-max-age".to_owned(),
                    METADATA_CORS_MAX_AGE_SECS.to_string()
                ),
            ],
            "{path}"
        );
        assert_eq!(body_text(response).await, "");
    }
    assert_eq!(METADATA_CORS_MAX_AGE_SECS, 86_400);
    // The protected endpoint itself gets no CORS grant from the layer.
    let response = send(&service, call(None, "whoami")).await;
    assert!(response
        .headers()
        .get("access-control-allow-origin")
        .is_none());
}

// ---------------------------------------------------------------------------------------------
// Challenges (RFC 6750 §3)

#[tokio::test]
async fn d44_missing_token_is_401_with_resource_metadata_and_the_request_scopes() {
    let verifier = fixed(&["mcp:use", "tools:call"]);
    let calls = verifier.calls.clone();
    let service = protect(verifier);
    // tools/call of `delete`: base + method + name scopes.
    let (status, value) = refusal(send(&service, call(None, "delete")).await).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        value,
        format!(
            "Bearer scope=\"files:write mcp:use tools:call\", resource_metadata=\"{METADATA_URL}\""
        )
    );
    // tools/list: the base scope only.
    let list = post(
        None,
        "tools/list",
        None,
        rpc(json!(2), "tools/list", json!({})),
    );
    let (status, value) = refusal(send(&service, list).await).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        value,
        format!("Bearer scope=\"mcp:use\", resource_metadata=\"{METADATA_URL}\"")
    );
    // Another scheme is not a bearer token: the same challenge, no error code.
    let mut basic = call(None, "whoami");
    basic
        .headers_mut()
        .insert("authorization", "Basic YTpi".parse().unwrap());
    let (status, value) = refusal(send(&service, basic).await).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(!value.contains("error="), "{value}");
    assert_eq!(calls.load(Ordering::SeqCst), 0, "no token, no verification");
}

#[tokio::test]
async fn d44_scope_is_omitted_when_the_request_needs_none() {
    let http = McpHttp::new(server(), HttpConfig::default());
    let config = AuthConfig::builder(RESOURCE)
        .authorization_server(ISSUER)
        .build()
        .unwrap();
    let service = AuthLayer::new(config, fixed(&[])).layer(http);
    let (status, value) = refusal(send(&service, call(None, "whoami")).await).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        value,
        format!("Bearer resource_metadata=\"{METADATA_URL}\"")
    );
}

#[tokio::test]
async fn d44_invalid_token_is_401_invalid_token() {
    let clock = TestClock::new();
    let key = new_key("k1");
    let service = protect(jwt_verifier(StubFetcher::serving(jwks(&[&key])), clock));
    let (status, value) = refusal(send(&service, call(Some("not.a.jwt"), "whoami")).await).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        value,
        format!(
            "Bearer error=\"invalid_token\", scope=\"mcp:use tools:call\", \
             resource_metadata=\"{METADATA_URL}\""
        )
    );
    // A value outside the b64token alphabet is refused without reaching the verifier.
    let mut odd = call(None, "whoami");
    odd.headers_mut()
        .insert("authorization", "Bearer a,b".parse().unwrap());
    let (status, value) = refusal(send(&service, odd).await).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(
        value.starts_with("Bearer error=\"invalid_token\""),
        "{value}"
    );
}

#[tokio::test]
async fn d44_insufficient_scope_is_403_with_every_scope_the_operation_needs() {
    let service = protect(fixed(&["mcp:use", "tools:call"]));
    let (status, value) = refusal(send(&service, call(Some("t"), "delete")).await).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(
        value,
        format!(
            "Bearer error=\"insufficient_scope\", scope=\"files:write mcp:use tools:call\", \
             resource_metadata=\"{METADATA_URL}\""
        )
    );
    // The same token may call a tool that needs only what it has.
    let response = send(&service, call(Some("t"), "whoami")).await;
    assert_eq!(response.status(), StatusCode::OK);
}

/// The layer keys scopes on `Mcp-Method` / `Mcp-Name`; the host refuses a request whose
/// headers disagree with its body (D26) before dispatch, so lying headers cannot borrow the
/// scopes of a cheaper operation.
#[tokio::test]
async fn d26_lying_method_or_name_headers_never_reach_the_tool() {
    // Enough for `whoami` and for tools/list, not for `delete` (files:write).
    let service = protect(fixed(&["mcp:use", "tools:call"]));
    let delete = rpc(
        json!(9),
        "tools/call",
        json!({"name": "delete", "arguments": {}}),
    );
    for (method, name) in [("tools/call", Some("whoami")), ("tools/list", None)] {
        let response = send(&service, post(Some("t"), method, name, delete.clone())).await;
        assert_eq!(
            response.status(),
            StatusCode::BAD_REQUEST,
            "{method} {name:?}"
        );
        let v = result(&body_text(response).await);
        assert_eq!(v["error"]["code"], -32020, "{v}");
        assert_eq!(v["id"], 9, "{v}");
        assert!(v.get("result").is_none(), "{v}");
    }
    // Honest headers for `delete` meet the scope check instead.
    let (status, _) = refusal(send(&service, call(Some("t"), "delete")).await).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn d44_broader_scope_implies_narrower_ones() {
    let service = protect(fixed(&["mcp:use", "tools:call", "files"]));
    let response = send(&service, call(Some("t"), "delete")).await;
    assert_eq!(response.status(), StatusCode::OK);
    let v = result(&body_text(response).await);
    assert_eq!(
        v["result"]["structuredContent"],
        json!({"value": {"principal": "alice"}}),
        "{v}"
    );
}

#[tokio::test]
async fn d44_scope_callback_adds_finer_requirements() {
    let http = McpHttp::new(server(), HttpConfig::default());
    let config = AuthConfig::builder(RESOURCE)
        .authorization_server(ISSUER)
        .scope_callback(|q| {
            // The token is gone before the callback runs.
            if q.headers.contains_key("authorization") {
                return vec!["token-leaked".to_owned()];
            }
            if q.method == Some("tools/call") && q.principal.subject == "alice" {
                vec!["alice:extra".to_owned()]
            } else {
                Vec::new()
            }
        })
        .build()
        .unwrap();
    let service = AuthLayer::new(config.clone(), fixed(&[])).layer(http.clone());
    let (status, value) = refusal(send(&service, call(Some("t"), "whoami")).await).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(
        value,
        format!("Bearer error=\"insufficient_scope\", scope=\"alice:extra\", resource_metadata=\"{METADATA_URL}\"")
    );
    let service = AuthLayer::new(config, fixed(&["alice:extra"])).layer(http);
    assert_eq!(
        send(&service, call(Some("t"), "whoami")).await.status(),
        StatusCode::OK
    );
}

#[tokio::test]
async fn d45_tokens_only_from_the_authorization_header() {
    let verifier = fixed(&["mcp:use", "tools:call"]);
    let calls = verifier.calls.clone();
    let service = protect(verifier);
    // A token in the query string is refused even with a header token.
    for with_header in [false, true] {
        let mut request = call(with_header.then_some("t"), "whoami");
        *request.uri_mut() = "/mcp?access_token=t".parse().unwrap();
        let (status, value) = refusal(send(&service, request).await).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(
            value,
            format!("Bearer error=\"invalid_request\", resource_metadata=\"{METADATA_URL}\"")
        );
    }
    // Two Authorization headers.
    let mut request = call(Some("t"), "whoami");
    request
        .headers_mut()
        .append("authorization", "Bearer u".parse().unwrap());
    let (status, _) = refusal(send(&service, request).await).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    // The scheme is case-insensitive.
    let mut request = call(None, "whoami");
    request
        .headers_mut()
        .insert("authorization", "bEaReR t".parse().unwrap());
    assert_eq!(send(&service, request).await.status(), StatusCode::OK);
}

#[tokio::test]
async fn token_length_bound_at_and_past_max_token_bytes() {
    let verifier = fixed(&["mcp:use", "tools:call"]);
    let calls = verifier.calls.clone();
    let service = protect(verifier);
    let at = "a".repeat(MAX_TOKEN_BYTES);
    assert_eq!(
        send(&service, call(Some(&at), "whoami")).await.status(),
        StatusCode::OK
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let past = "a".repeat(MAX_TOKEN_BYTES + 1);
    let (status, value) = refusal(send(&service, call(Some(&past), "whoami")).await).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(
        value.starts_with("Bearer error=\"invalid_token\""),
        "{value}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1, "the verifier never saw it");
}

// ---------------------------------------------------------------------------------------------
// The principal reaches the server

#[tokio::test]
async fn d36_the_verified_principal_is_the_caller_a_tool_sees() {
    let rec = support::evidence::recorder!();
    let clock = TestClock::new();
    let key = new_key("k1");
    let service = protect(jwt_verifier(StubFetcher::serving(jwks(&[&key])), clock));
    let token = mint(&key, &claims("user:alice", "mcp:use tools:call"));
    let response = send(&service, call(Some(&token), "whoami")).await;
    assert_eq!(response.status(), StatusCode::OK);
    let v = result(&body_text(response).await);
    seen(&rec, "tools/call", &v);
    assert_eq!(
        v["result"]["structuredContent"],
        json!({"value": {"principal": "user:alice", "scope": "mcp:use tools:call"}}),
        "{v}"
    );
    // Every request is authenticated on its own (D36): the next one without a token is not.
    let (status, _) = refusal(send(&service, call(None, "whoami")).await).await;
    seen_status(&rec, "tools/call", status);
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn i6_request_state_minted_for_one_subject_is_refused_for_another() {
    let rec = support::evidence::recorder!();
    let clock = TestClock::new();
    let key = new_key("k1");
    let service = protect(jwt_verifier(StubFetcher::serving(jwks(&[&key])), clock));
    let alice = mint(&key, &claims("alice", "mcp:use"));
    let bob = mint(&key, &claims("bob", "mcp:use"));
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": PV,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}
    });
    let get = |token: &str, extra: Value| {
        let mut params = json!({"name": "greet", "arguments": {}, "_meta": meta});
        if let Value::Object(extra) = extra {
            params.as_object_mut().unwrap().extend(extra);
        }
        post(
            Some(token),
            "prompts/get",
            Some("greet"),
            rpc(json!(7), "prompts/get", params),
        )
    };
    let first = result(&body_text(send(&service, get(&alice, json!({}))).await).await);
    seen(&rec, "prompts/get", &first);
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let answer = json!({
        "inputResponses": {"name": {"action": "accept", "content": {"name": "Ada"}}},
        "requestState": state,
    });
    // Bob replays Alice's state: refused.
    let stolen = result(&body_text(send(&service, get(&bob, answer.clone())).await).await);
    seen(&rec, "prompts/get", &stolen);
    assert!(stolen.get("result").is_none(), "{stolen}");
    assert_eq!(
        stolen["error"]["message"], "The requestState was rejected.",
        "{stolen}"
    );
    // Alice's own continuation completes.
    let own = result(&body_text(send(&service, get(&alice, answer)).await).await);
    assert_eq!(own["result"]["resultType"], "complete", "{own}");
}

#[tokio::test]
async fn d44_the_token_is_not_forwarded_to_the_inner_service() {
    /// Whether `Authorization` reached the inner service, and the caller's principal there.
    type Seen = Option<(bool, Option<String>)>;
    #[derive(Clone)]
    struct Probe(Arc<Mutex<Seen>>);
    impl tower::Service<Request<Full<Bytes>>> for Probe {
        type Response = Response<Full<Bytes>>;
        type Error = std::convert::Infallible;
        type Future = std::future::Ready<Result<Self::Response, Self::Error>>;
        fn poll_ready(
            &mut self,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Result<(), Self::Error>> {
            std::task::Poll::Ready(Ok(()))
        }
        fn call(&mut self, r: Request<Full<Bytes>>) -> Self::Future {
            let caller = r.extensions().get::<strict_mcp::core::Caller>();
            *self.0.lock().unwrap() = Some((
                r.headers().contains_key("authorization"),
                caller.and_then(|c| c.principal().map(str::to_owned)),
            ));
            std::future::ready(Ok(Response::new(Full::default())))
        }
    }
    let seen = Arc::new(Mutex::new(None));
    let service =
        AuthLayer::new(config(), fixed(&["mcp:use", "tools:call"])).layer(Probe(seen.clone()));
    let response = service.oneshot(call(Some("t"), "whoami")).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        *seen.lock().unwrap(),
        Some((false, Some("alice".to_owned())))
    );
}

// ---------------------------------------------------------------------------------------------
// The JWT verifier

async fn verify(verifier: &JwtVerifier, token: &str) -> Result<Principal, VerifyError> {
    verifier.verify(&BearerToken::new(token)).await
}

#[tokio::test]
async fn d44_jwt_accepts_a_good_token_and_reads_its_principal() {
    let key = new_key("k1");
    let verifier = jwt_verifier(StubFetcher::serving(jwks(&[&key])), TestClock::new());
    let p = verify(&verifier, &mint(&key, &claims("alice", "a b")))
        .await
        .unwrap();
    assert_eq!(p.subject, "alice");
    assert_eq!(p.issuer.as_deref(), Some(ISSUER));
    assert_eq!(p.client_id.as_deref(), Some("test-client"));
    assert_eq!(p.scopes.iter().collect::<Vec<_>>(), ["a", "b"]);
    assert_eq!(p.expires_at, Some(T0 + 3600));
    // `aud` as an array containing this resource is fine too.
    let mut c = claims("alice", "");
    c["aud"] = json!(["https://other.example.com", RESOURCE]);
    assert!(verify(&verifier, &mint(&key, &c)).await.is_ok());
}

#[tokio::test]
async fn d44_audience_confusion_a_token_for_another_resource_is_refused() {
    let key = new_key("k1");
    let verifier = jwt_verifier(StubFetcher::serving(jwks(&[&key])), TestClock::new());
    for aud in [
        json!("http://127.0.0.1:8124/mcp"),
        json!("http://127.0.0.1:8123/mcp/"),
        json!("http://127.0.0.1:8123"),
        json!(["https://other.example.com"]),
        json!([]),
        json!(5),
    ] {
        let mut c = claims("alice", "");
        c["aud"] = aud.clone();
        assert_eq!(
            verify(&verifier, &mint(&key, &c)).await.err(),
            Some(VerifyError::WrongAudience),
            "{aud}"
        );
    }
    let mut c = claims("alice", "");
    c.as_object_mut().unwrap().remove("aud");
    assert_eq!(
        verify(&verifier, &mint(&key, &c)).await.err(),
        Some(VerifyError::MissingClaim("aud"))
    );
    // Through the layer: 401 invalid_token.
    let service = protect(jwt_verifier(
        StubFetcher::serving(jwks(&[&key])),
        TestClock::new(),
    ));
    let mut c = claims("alice", "mcp:use tools:call");
    c["aud"] = json!("https://other.example.com/mcp");
    let (status, value) =
        refusal(send(&service, call(Some(&mint(&key, &c)), "whoami")).await).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(
        value.starts_with("Bearer error=\"invalid_token\""),
        "{value}"
    );
}

#[tokio::test]
async fn d44_issuer_must_be_trusted() {
    let key = new_key("k1");
    let verifier = jwt_verifier(StubFetcher::serving(jwks(&[&key])), TestClock::new());
    let mut c = claims("alice", "");
    c["iss"] = json!("http://127.0.0.1:9001");
    assert_eq!(
        verify(&verifier, &mint(&key, &c)).await.err(),
        Some(VerifyError::WrongIssuer)
    );
    c.as_object_mut().unwrap().remove("iss");
    assert_eq!(
        verify(&verifier, &mint(&key, &c)).await.err(),
        Some(VerifyError::MissingClaim("iss"))
    );
}

#[tokio::test]
async fn d44_expiry_with_the_leeway_at_the_bound_and_one_past() {
    let key = new_key("k1");
    let clock = TestClock::new();
    let verifier = jwt_verifier(StubFetcher::serving(jwks(&[&key])), clock.clone());
    let token = mint(&key, &claims("alice", ""));
    let exp = T0 + 3600;
    let leeway = DEFAULT_LEEWAY.as_secs();
    clock.set_s(exp + leeway - 1);
    assert!(verify(&verifier, &token).await.is_ok(), "inside the leeway");
    clock.set_s(exp + leeway);
    assert_eq!(
        verify(&verifier, &token).await.err(),
        Some(VerifyError::Expired)
    );
    // Without `exp` a token is refused.
    let mut c = claims("alice", "");
    c.as_object_mut().unwrap().remove("exp");
    clock.set_s(T0);
    assert_eq!(
        verify(&verifier, &mint(&key, &c)).await.err(),
        Some(VerifyError::MissingClaim("exp"))
    );
    // Through the layer: an expired token is 401 invalid_token.
    let service = protect(jwt_verifier(
        StubFetcher::serving(jwks(&[&key])),
        clock.clone(),
    ));
    clock.set_s(exp + leeway);
    let mut c = claims("alice", "mcp:use tools:call");
    c["exp"] = json!(exp);
    let (status, value) =
        refusal(send(&service, call(Some(&mint(&key, &c)), "whoami")).await).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(
        value.starts_with("Bearer error=\"invalid_token\""),
        "{value}"
    );
}

#[tokio::test]
async fn d44_not_yet_valid_with_the_leeway_at_the_bound_and_one_past() {
    let key = new_key("k1");
    let clock = TestClock::new();
    let verifier = jwt_verifier(StubFetcher::serving(jwks(&[&key])), clock.clone());
    let nbf = T0 + 600;
    let mut c = claims("alice", "");
    c["nbf"] = json!(nbf);
    let token = mint(&key, &c);
    let leeway = DEFAULT_LEEWAY.as_secs();
    clock.set_s(nbf - leeway);
    assert!(verify(&verifier, &token).await.is_ok(), "inside the leeway");
    clock.set_s(nbf - leeway - 1);
    assert_eq!(
        verify(&verifier, &token).await.err(),
        Some(VerifyError::NotYetValid)
    );
}

#[tokio::test]
async fn d44_tampered_signature_and_payload_are_refused() {
    let key = new_key("k1");
    let verifier = jwt_verifier(StubFetcher::serving(jwks(&[&key])), TestClock::new());
    let token = mint(&key, &claims("alice", "a"));
    let (head_payload, sig) = token.rsplit_once('.').unwrap();
    // Flip one signature character.
    let mut bad_sig: Vec<char> = sig.chars().collect();
    bad_sig[5] = if bad_sig[5] == 'A' { 'B' } else { 'A' };
    let bad_sig: String = bad_sig.into_iter().collect();
    assert_eq!(
        verify(&verifier, &format!("{head_payload}.{bad_sig}"))
            .await
            .err(),
        Some(VerifyError::BadSignature)
    );
    // Swap in another payload (a bigger scope) under the original signature.
    let (head, _) = head_payload.split_once('.').unwrap();
    let forged = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(claims("alice", "admin").to_string());
    assert_eq!(
        verify(&verifier, &format!("{head}.{forged}.{sig}"))
            .await
            .err(),
        Some(VerifyError::BadSignature)
    );
    // A token signed by a key that is not in the set under a known kid.
    let other = new_key("k1");
    assert_eq!(
        verify(&verifier, &mint(&other, &claims("alice", "")))
            .await
            .err(),
        Some(VerifyError::BadSignature)
    );
}

#[tokio::test]
async fn d44_alg_none_and_algorithms_off_the_list_are_refused() {
    let key = new_key("k1");
    let fetcher = StubFetcher::serving(jwks(&[&key]));
    let verifier = jwt_verifier(fetcher.clone(), TestClock::new());
    let c = claims("alice", "admin");
    for alg in ["none", "None", "HS256", "RS256", "ES512", ""] {
        let token = raw_token(&json!({"alg": alg, "kid": "k1"}), &c, "");
        assert_eq!(
            verify(&verifier, &token).await.err(),
            Some(VerifyError::AlgorithmNotAllowed),
            "{alg}"
        );
        let token = raw_token(&json!({"alg": alg, "kid": "k1"}), &c, "c2ln");
        assert_eq!(
            verify(&verifier, &token).await.err(),
            Some(VerifyError::AlgorithmNotAllowed),
            "{alg}"
        );
    }
    assert_eq!(fetcher.calls(), 0, "refused before any key was fetched");
    // A `crit` header is not understood, so refused.
    let token = mint(&key, &c);
    let (_, rest) = token.split_once('.').unwrap();
    let crit = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(json!({"alg": "ES256", "kid": "k1", "crit": ["exp"]}).to_string());
    assert_eq!(
        verify(&verifier, &format!("{crit}.{rest}")).await.err(),
        Some(VerifyError::Malformed)
    );
    // Five parts (a JWE) or two are malformed.
    for t in ["a.b.c.d.e", "a.b", ""] {
        assert_eq!(
            verify(&verifier, t).await.err(),
            Some(VerifyError::Malformed),
            "{t}"
        );
    }
}

#[tokio::test]
async fn d44_hs256_only_with_a_configured_secret_and_never_with_a_key_set_key() {
    let secret = b"a-shared-secret-of-32-bytes-long".to_vec();
    let verifier = JwtVerifier::builder(RESOURCE)
        .issuer(ISSUER)
        .algorithms([Algorithm::HS256])
        .hmac_secret(secret.clone())
        .clock(TestClock::new())
        .build()
        .unwrap();
    let c = claims("alice", "");
    let good = jsonwebtoken::encode(
        &at_header(Algorithm::HS256),
        &c,
        &EncodingKey::from_secret(&secret),
    )
    .unwrap();
    assert_eq!(verify(&verifier, &good).await.unwrap().subject, "alice");
    let wrong = jsonwebtoken::encode(
        &at_header(Algorithm::HS256),
        &c,
        &EncodingKey::from_secret(b"another-secret-of-32-bytes-long!"),
    )
    .unwrap();
    assert_eq!(
        verify(&verifier, &wrong).await.err(),
        Some(VerifyError::BadSignature)
    );

    // Key confusion: an HS256 token "signed" with a published public key is refused by an
    // asymmetric verifier (HS256 is not on its list).
    let key = new_key("k1");
    let asym = jwt_verifier(StubFetcher::serving(jwks(&[&key])), TestClock::new());
    let public = key.jwk.to_string();
    let confused = jsonwebtoken::encode(
        &at_header(Algorithm::HS256),
        &c,
        &EncodingKey::from_secret(public.as_bytes()),
    )
    .unwrap();
    assert_eq!(
        verify(&asym, &confused).await.err(),
        Some(VerifyError::AlgorithmNotAllowed)
    );
}

#[tokio::test]
async fn d44_unknown_kid_refetches_once_per_interval() {
    let k1 = new_key("k1");
    let k2 = new_key("k2");
    let clock = TestClock::new();
    let fetcher = StubFetcher::serving(jwks(&[&k1]));
    let verifier = jwt_verifier(fetcher.clone(), clock.clone());
    assert!(verify(&verifier, &mint(&k1, &claims("a", "")))
        .await
        .is_ok());
    assert_eq!(fetcher.calls(), 1);
    // Cached: no second fetch for a known kid.
    assert!(verify(&verifier, &mint(&k1, &claims("a", "")))
        .await
        .is_ok());
    assert_eq!(fetcher.calls(), 1);
    // Unknown kid right after a fetch: no refetch inside the interval.
    let t2 = mint(&k2, &claims("a", ""));
    assert_eq!(
        verify(&verifier, &t2).await.err(),
        Some(VerifyError::UnknownKey)
    );
    assert_eq!(fetcher.calls(), 1);
    // Once the interval has passed: one refetch, still unknown, refused.
    clock.advance(DEFAULT_JWKS_REFETCH_INTERVAL);
    assert_eq!(
        verify(&verifier, &t2).await.err(),
        Some(VerifyError::UnknownKey)
    );
    assert_eq!(fetcher.calls(), 2);
    // Again within the interval: no fetch at all, however many tokens try.
    for kid in ["k2", "k3", "k4"] {
        let mut header = at_header(Algorithm::ES256);
        header.kid = Some(kid.into());
        let t = jsonwebtoken::encode(&header, &claims("a", ""), &k2.encoding).unwrap();
        assert_eq!(
            verify(&verifier, &t).await.err(),
            Some(VerifyError::UnknownKey)
        );
    }
    assert_eq!(fetcher.calls(), 2);
    // The authorization server rotates in k2; one millisecond short of the interval nothing
    // changes, at the interval the refetch finds it.
    fetcher.set_body(jwks(&[&k1, &k2]));
    clock.advance(DEFAULT_JWKS_REFETCH_INTERVAL - Duration::from_millis(1));
    assert_eq!(
        verify(&verifier, &t2).await.err(),
        Some(VerifyError::UnknownKey)
    );
    assert_eq!(fetcher.calls(), 2);
    clock.advance(Duration::from_millis(1));
    assert_eq!(verify(&verifier, &t2).await.unwrap().subject, "a");
    assert_eq!(fetcher.calls(), 3);
}

#[tokio::test]
async fn d44_key_set_ttl_expires_the_cache() {
    let k1 = new_key("k1");
    let clock = TestClock::new();
    let fetcher = StubFetcher::serving(jwks(&[&k1]));
    let verifier = JwtVerifier::builder(RESOURCE)
        .issuer(ISSUER)
        .algorithms([Algorithm::ES256])
        .jwks(JWKS_URL, fetcher.clone())
        .jwks_ttl(Duration::from_secs(60))
        .clock(clock.clone())
        .build()
        .unwrap();
    let token = mint(&k1, &claims("a", ""));
    assert!(verify(&verifier, &token).await.is_ok());
    clock.advance(Duration::from_secs(59));
    assert!(verify(&verifier, &token).await.is_ok());
    assert_eq!(fetcher.calls(), 1);
    clock.advance(Duration::from_secs(1));
    // Stale: refetched; the key left the set, so the token no longer verifies.
    fetcher.set_body(jwks(&[]));
    assert_eq!(
        verify(&verifier, &token).await.err(),
        Some(VerifyError::UnknownKey)
    );
    assert_eq!(fetcher.calls(), 2);
}

/// On tokio's paused clock (nothing here touches a socket or a process), so the two waits are
/// exact: the first request waits the whole fetch time-out and not one tick of the hour-long
/// fetch, the second does not wait at all (a loaded machine cannot make either fail).
#[tokio::test(start_paused = true)]
async fn d44_slow_key_set_times_out_to_401_not_a_hang() {
    let k1 = new_key("k1");
    let fetcher = StubFetcher::serving(jwks(&[&k1]));
    *fetcher.inner.delay.lock().unwrap() = Some(Duration::from_secs(3600));
    let verifier = JwtVerifier::builder(RESOURCE)
        .issuer(ISSUER)
        .algorithms([Algorithm::ES256])
        .jwks(JWKS_URL, fetcher.clone())
        .fetch_timeout(Duration::from_millis(200))
        .clock(TestClock::new())
        .build()
        .unwrap();
    let service = protect(verifier);
    let token = mint(&k1, &claims("a", "mcp:use tools:call"));
    let started = tokio::time::Instant::now();
    let (status, value) = refusal(send(&service, call(Some(&token), "whoami")).await).await;
    assert_eq!(
        started.elapsed(),
        Duration::from_millis(200),
        "the fetch time-out, exactly"
    );
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(
        value.starts_with("Bearer error=\"invalid_token\""),
        "{value}"
    );
    // The failure is remembered for the interval: the next request does not wait again.
    let started = tokio::time::Instant::now();
    let (status, _) = refusal(send(&service, call(Some(&token), "whoami")).await).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(started.elapsed(), Duration::ZERO, "no second wait");
    assert_eq!(fetcher.calls(), 1);
}

#[tokio::test]
async fn d44_key_set_size_bound_at_and_past_max_jwks_bytes() {
    let k1 = new_key("k1");
    // A document of exactly MAX_JWKS_BYTES (padded with whitespace) is read; one byte more
    // is refused, even from a fetcher that ignores the bound.
    let mut at = jwks(&[&k1]).to_vec();
    at.resize(MAX_JWKS_BYTES, b' ');
    let mut past = at.clone();
    past.push(b' ');
    for (body, ok) in [(at, true), (past, false)] {
        let fetcher = StubFetcher::serving(Bytes::from(body));
        let verifier = jwt_verifier(fetcher, TestClock::new());
        let result = verify(&verifier, &mint(&k1, &claims("a", ""))).await;
        if ok {
            assert!(result.is_ok(), "{result:?}");
        } else {
            assert_eq!(
                result.err(),
                Some(VerifyError::Upstream(FetchError::BodyTooLarge {
                    limit: MAX_JWKS_BYTES
                }))
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The bundled HTTP fetcher against loopback servers

/// A loopback HTTP/1.1 server answering every request with `respond`; counts requests.
async fn loopback(
    respond: impl Fn() -> Response<Full<Bytes>> + Send + Sync + Clone + 'static,
    delay: Option<Duration>,
) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let respond = respond.clone();
            let counter = counter.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |_r| {
                    counter.fetch_add(1, Ordering::SeqCst);
                    let respond = respond.clone();
                    async move {
                        if let Some(d) = delay {
                            tokio::time::sleep(d).await;
                        }
                        Ok::<_, std::convert::Infallible>(respond())
                    }
                });
                let _ = tokio::time::timeout(
                    Duration::from_secs(20),
                    hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service),
                )
                .await;
            });
        }
    });
    (format!("http://{addr}"), hits)
}

fn fetch_request(url: String, timeout: Duration) -> FetchRequest {
    FetchRequest {
        method: hyper::Method::GET,
        url,
        headers: Vec::new(),
        body: None,
        max_body: MAX_JWKS_BYTES,
        timeout,
    }
}

/// The JWKS endpoint cases again through `DialingFetcher` (the SSRF-safe fetcher below both
/// roles, its policy fixed from the configured key set URL): a key set is read and used, a
/// slow endpoint times out within the request's time-out, a huge body (declared or chunked)
/// is cut at the bound, and a redirect is refused without being followed.
/// How long the slow loopback key-set endpoint takes to answer: far past the 200 ms fetch
/// time-outs below. A fetch that ends sooner did not wait for it; the bound is the behaviour
/// (time out instead of waiting), with the whole delay as the margin for a loaded machine.
const SLOW_ENDPOINT_DELAY: Duration = Duration::from_secs(15);

#[tokio::test]
async fn d47_dialing_fetcher_key_set_slow_huge_and_redirecting() {
    let k1 = new_key("k1");
    let body = jwks(&[&k1]);
    let (base, hits) = loopback(move || Response::new(Full::new(body.clone())), None).await;
    let url = format!("{base}/jwks");
    let verifier = JwtVerifier::builder(RESOURCE)
        .issuer(ISSUER)
        .algorithms([Algorithm::ES256])
        .jwks(&url, DialingFetcher::for_endpoint(&url).unwrap())
        .clock(TestClock::new())
        .build()
        .unwrap();
    let principal = verify(&verifier, &mint(&k1, &claims("a", "")))
        .await
        .unwrap();
    assert_eq!(principal.subject, "a");
    assert_eq!(hits.load(Ordering::SeqCst), 1);

    let (slow, _) = loopback(|| Response::new(Full::default()), Some(SLOW_ENDPOINT_DELAY)).await;
    let started = std::time::Instant::now();
    let fetcher = DialingFetcher::for_endpoint(&format!("{slow}/jwks")).unwrap();
    let result = fetcher
        .fetch(fetch_request(
            format!("{slow}/jwks"),
            Duration::from_millis(200),
        ))
        .await;
    assert_eq!(result.err(), Some(FetchError::Timeout));
    assert!(
        started.elapsed() < SLOW_ENDPOINT_DELAY,
        "did not wait for the endpoint"
    );

    let huge = Bytes::from(vec![b' '; MAX_JWKS_BYTES + 1]);
    let (big, _) = loopback(move || Response::new(Full::new(huge.clone())), None).await;
    let fetcher = DialingFetcher::for_endpoint(&format!("{big}/jwks")).unwrap();
    let result = fetcher
        .fetch(fetch_request(format!("{big}/jwks"), Duration::from_secs(5)))
        .await;
    assert_eq!(
        result.err(),
        Some(FetchError::BodyTooLarge {
            limit: MAX_JWKS_BYTES
        })
    );

    let (target, target_hits) = loopback(|| Response::new(Full::default()), None).await;
    let location = format!("{target}/jwks");
    let (moved, moved_hits) = loopback(
        move || {
            Response::builder()
                .status(302)
                .header("location", location.clone())
                .body(Full::default())
                .unwrap()
        },
        None,
    )
    .await;
    let fetcher = DialingFetcher::for_endpoint(&format!("{moved}/jwks")).unwrap();
    let result = fetcher
        .fetch(fetch_request(
            format!("{moved}/jwks"),
            Duration::from_secs(5),
        ))
        .await;
    assert_eq!(result.err(), Some(FetchError::Redirect(302)));
    assert_eq!(moved_hits.load(Ordering::SeqCst), 1);
    assert_eq!(target_hits.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn d47_http_fetcher_reads_a_key_set_from_loopback() {
    let k1 = new_key("k1");
    let body = jwks(&[&k1]);
    let (base, hits) = loopback(move || Response::new(Full::new(body.clone())), None).await;
    let verifier = JwtVerifier::builder(RESOURCE)
        .issuer(ISSUER)
        .algorithms([Algorithm::ES256])
        .jwks(format!("{base}/jwks"), HttpFetcher::new())
        .clock(TestClock::new())
        .build()
        .unwrap();
    assert_eq!(
        verify(&verifier, &mint(&k1, &claims("a", "")))
            .await
            .unwrap()
            .subject,
        "a"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn d47_http_fetcher_slow_endpoint_times_out() {
    let (base, _) = loopback(|| Response::new(Full::default()), Some(SLOW_ENDPOINT_DELAY)).await;
    let started = std::time::Instant::now();
    let result = HttpFetcher::new()
        .fetch(fetch_request(
            format!("{base}/jwks"),
            Duration::from_millis(200),
        ))
        .await;
    assert_eq!(result.err(), Some(FetchError::Timeout));
    assert!(
        started.elapsed() < SLOW_ENDPOINT_DELAY,
        "did not wait for the endpoint"
    );
}

#[tokio::test]
async fn d47_http_fetcher_huge_body_is_cut_at_the_bound() {
    // Declared length past the bound, and a chunked stream past it.
    let huge = Bytes::from(vec![b' '; MAX_JWKS_BYTES + 1]);
    let (base, _) = loopback(move || Response::new(Full::new(huge.clone())), None).await;
    let result = HttpFetcher::new()
        .fetch(fetch_request(
            format!("{base}/jwks"),
            Duration::from_secs(5),
        ))
        .await;
    assert_eq!(
        result.err(),
        Some(FetchError::BodyTooLarge {
            limit: MAX_JWKS_BYTES
        })
    );

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (mut s, _) = listener.accept().await.unwrap();
        let mut buf = [0u8; 4096];
        let _ = s.read(&mut buf).await;
        let _ = s
            .write_all(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
            .await;
        let chunk = format!("{:x}\r\n{}\r\n", 16 * 1024, " ".repeat(16 * 1024));
        // Far more than the bound, if anyone kept reading.
        for _ in 0..1024 {
            if s.write_all(chunk.as_bytes()).await.is_err() {
                return;
            }
        }
    });
    let result = HttpFetcher::new()
        .fetch(fetch_request(
            format!("http://{addr}/jwks"),
            Duration::from_secs(5),
        ))
        .await;
    assert_eq!(
        result.err(),
        Some(FetchError::BodyTooLarge {
            limit: MAX_JWKS_BYTES
        })
    );
}

#[tokio::test]
async fn d47_http_fetcher_does_not_follow_redirects() {
    let (target, target_hits) = loopback(|| Response::new(Full::default()), None).await;
    let location = format!("{target}/jwks");
    let (base, hits) = loopback(
        move || {
            Response::builder()
                .status(302)
                .header("location", location.clone())
                .body(Full::default())
                .unwrap()
        },
        None,
    )
    .await;
    let result = HttpFetcher::new()
        .fetch(fetch_request(
            format!("{base}/jwks"),
            Duration::from_secs(5),
        ))
        .await;
    assert_eq!(result.err(), Some(FetchError::Redirect(302)));
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    // Through the layer: a key set behind a redirect leaves the token unverifiable (401).
    let key = new_key("k1");
    let verifier = JwtVerifier::builder(RESOURCE)
        .issuer(ISSUER)
        .algorithms([Algorithm::ES256])
        .jwks(format!("{base}/jwks"), HttpFetcher::new())
        .clock(TestClock::new())
        .build()
        .unwrap();
    let service = protect(verifier);
    let token = mint(&key, &claims("a", "mcp:use tools:call"));
    let (status, value) = refusal(send(&service, call(Some(&token), "whoami")).await).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(
        value.starts_with("Bearer error=\"invalid_token\""),
        "{value}"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 2);
    assert_eq!(
        target_hits.load(Ordering::SeqCst),
        0,
        "the redirect was not followed"
    );
}

// ---------------------------------------------------------------------------------------------
// The introspection verifier (RFC 7662)

fn introspector(answer: Value, clock: Arc<TestClock>) -> (IntrospectionVerifier, StubFetcher) {
    let fetcher = StubFetcher::serving(Bytes::from(answer.to_string()));
    let verifier = IntrospectionVerifier::builder(
        RESOURCE,
        "http://127.0.0.1:9000/introspect",
        fetcher.clone(),
    )
    .credentials(ClientCredentials::new("mcp-server", "s3cr3t"))
    .issuer(ISSUER)
    .clock(clock)
    .build()
    .unwrap();
    (verifier, fetcher)
}

#[tokio::test]
async fn d44_introspection_active_token_for_this_resource() {
    let answer = json!({
        "active": true, "sub": "alice", "aud": RESOURCE, "iss": ISSUER,
        "scope": "mcp:use tools:call", "exp": T0 + 60, "client_id": "c1",
    });
    let (verifier, fetcher) = introspector(answer, TestClock::new());
    let p = verifier
        .verify(&BearerToken::new("opaque+tok/en="))
        .await
        .unwrap();
    assert_eq!(p.subject, "alice");
    assert_eq!(p.client_id.as_deref(), Some("c1"));
    assert_eq!(p.scopes.len(), 2);
    let seen = fetcher.inner.seen.lock().unwrap();
    let request = &seen[0];
    assert_eq!(request.method, hyper::Method::POST);
    assert_eq!(request.url, "http://127.0.0.1:9000/introspect");
    assert_eq!(
        request.body.as_deref(),
        Some(&b"token=opaque%2Btok%2Fen%3D&token_type_hint=access_token"[..])
    );
    let header = |name: &str| {
        request
            .headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.to_str().unwrap().to_owned())
    };
    assert_eq!(
        header("content-type").as_deref(),
        Some("application/x-www-form-urlencoded")
    );
    // base64("mcp-server:s3cr3t")
    assert_eq!(
        header("authorization").as_deref(),
        Some("Basic bWNwLXNlcnZlcjpzM2NyM3Q=")
    );
    // Neither the token nor the credentials show in the request's Debug.
    let shown = format!("{request:?}");
    assert!(
        !shown.contains("opaque") && !shown.contains("bWNw"),
        "{shown}"
    );
}

#[tokio::test]
async fn d44_introspection_refusals() {
    let clock = TestClock::new();
    let good =
        json!({"active": true, "sub": "alice", "aud": RESOURCE, "iss": ISSUER, "exp": T0 + 60});
    let with = |k: &str, v: Value| {
        let mut a = good.clone();
        a[k] = v;
        a
    };
    let without = |k: &str| {
        let mut a = good.clone();
        a.as_object_mut().unwrap().remove(k);
        a
    };
    for (answer, expected) in [
        (with("active", json!(false)), VerifyError::Inactive),
        (with("active", json!("true")), VerifyError::Inactive),
        (json!({"active": false}), VerifyError::Inactive),
        (
            with("aud", json!("https://other.example.com/mcp")),
            VerifyError::WrongAudience,
        ),
        (without("aud"), VerifyError::MissingClaim("aud")),
        (
            with("iss", json!("http://127.0.0.1:9999")),
            VerifyError::WrongIssuer,
        ),
        (without("sub"), VerifyError::MissingClaim("sub")),
        (
            with("exp", json!(T0 - DEFAULT_LEEWAY.as_secs())),
            VerifyError::Expired,
        ),
    ] {
        let (verifier, _) = introspector(answer.clone(), clock.clone());
        assert_eq!(
            verifier.verify(&BearerToken::new("t")).await.err(),
            Some(expected),
            "{answer}"
        );
    }
    // At the leeway bound it is still valid.
    let (verifier, _) = introspector(with("exp", json!(T0 - DEFAULT_LEEWAY.as_secs() + 1)), clock);
    assert!(verifier.verify(&BearerToken::new("t")).await.is_ok());
}

#[tokio::test]
async fn d44_introspection_through_the_layer_reaches_the_tool() {
    let answer = json!({
        "active": true, "sub": "svc", "aud": [RESOURCE], "iss": ISSUER,
        "scope": "mcp:use tools:call",
    });
    let (verifier, _) = introspector(answer, TestClock::new());
    let service = protect(verifier);
    let response = send(&service, call(Some("opaque"), "whoami")).await;
    assert_eq!(response.status(), StatusCode::OK);
    let v = result(&body_text(response).await);
    assert_eq!(
        v["result"]["structuredContent"]["value"]["principal"], "svc",
        "{v}"
    );
}

/// The nbf check is the shared claims checker's, so introspection answers get it too.
#[tokio::test]
async fn d44_introspection_not_yet_valid_at_the_leeway_bound_and_one_past() {
    let clock = TestClock::new();
    let leeway = DEFAULT_LEEWAY.as_secs();
    let answer = |nbf: u64| json!({"active": true, "sub": "alice", "aud": RESOURCE, "iss": ISSUER, "nbf": nbf});
    let (at_bound, _) = introspector(answer(T0 + leeway), clock.clone());
    assert!(at_bound.verify(&BearerToken::new("t")).await.is_ok());
    let (past, _) = introspector(answer(T0 + leeway + 1), clock);
    assert_eq!(
        past.verify(&BearerToken::new("t")).await.err(),
        Some(VerifyError::NotYetValid)
    );
}

// ---------------------------------------------------------------------------------------------
// RFC 9068 `typ`

fn typed(key: &Key, typ: Option<&str>) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(key.kid.clone());
    header.typ = typ.map(str::to_owned);
    jsonwebtoken::encode(&header, &claims("alice", ""), &key.encoding).unwrap()
}

#[tokio::test]
async fn rfc9068_typ_at_jwt_is_required_by_default() {
    let key = new_key("k1");
    let fetcher = StubFetcher::serving(jwks(&[&key]));
    let verifier = jwt_verifier(fetcher.clone(), TestClock::new());
    for typ in ["at+jwt", "application/at+jwt", "AT+JWT"] {
        assert!(
            verify(&verifier, &typed(&key, Some(typ))).await.is_ok(),
            "{typ}"
        );
    }
    let calls = fetcher.calls();
    // `JWT` (what ID tokens and most libraries default to), a made-up type and no `typ` at
    // all are refused, before any key is looked up.
    for typ in [Some("JWT"), Some("id_token+jwt"), None] {
        assert_eq!(
            verify(&verifier, &typed(&key, typ)).await.err(),
            Some(VerifyError::NotAnAccessToken),
            "{typ:?}"
        );
    }
    assert_eq!(fetcher.calls(), calls);
    // Through the layer: 401 invalid_token, like every other refusal.
    let service = protect(jwt_verifier(
        StubFetcher::serving(jwks(&[&key])),
        TestClock::new(),
    ));
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(key.kid.clone());
    let untyped = jsonwebtoken::encode(
        &header,
        &claims("alice", "mcp:use tools:call"),
        &key.encoding,
    )
    .unwrap();
    let (status, value) = refusal(send(&service, call(Some(&untyped), "whoami")).await).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(
        value.starts_with("Bearer error=\"invalid_token\""),
        "{value}"
    );
}

#[tokio::test]
async fn rfc9068_typ_absent_is_taken_only_when_configured() {
    let key = new_key("k1");
    let verifier = JwtVerifier::builder(RESOURCE)
        .issuer(ISSUER)
        .algorithms([Algorithm::ES256])
        .jwks(JWKS_URL, StubFetcher::serving(jwks(&[&key])))
        .token_typ(TokenTyp::AtJwtOrAbsent)
        .clock(TestClock::new())
        .build()
        .unwrap();
    assert!(verify(&verifier, &typed(&key, None)).await.is_ok());
    assert!(verify(&verifier, &typed(&key, Some("at+jwt")))
        .await
        .is_ok());
    assert_eq!(
        verify(&verifier, &typed(&key, Some("JWT"))).await.err(),
        Some(VerifyError::NotAnAccessToken)
    );
}

/// The plain-`JWT` opt-in, both ways: the default refuses `typ: JWT` (before any key is looked
/// up), `TokenTyp::AtJwtOrPlainJwt` takes it, and the other checks still hold under it (a
/// `JWT`-typed token for another audience is refused).
#[tokio::test]
async fn rfc9068_typ_plain_jwt_only_when_opted_in() {
    let key = new_key("k1");
    let default = jwt_verifier(StubFetcher::serving(jwks(&[&key])), TestClock::new());
    assert_eq!(
        verify(&default, &typed(&key, Some("JWT"))).await.err(),
        Some(VerifyError::NotAnAccessToken)
    );
    let opted = JwtVerifier::builder(RESOURCE)
        .issuer(ISSUER)
        .algorithms([Algorithm::ES256])
        .jwks(JWKS_URL, StubFetcher::serving(jwks(&[&key])))
        .token_typ(TokenTyp::AtJwtOrPlainJwt)
        .clock(TestClock::new())
        .build()
        .unwrap();
    for typ in [Some("JWT"), Some("application/jwt"), Some("at+jwt"), None] {
        assert!(verify(&opted, &typed(&key, typ)).await.is_ok(), "{typ:?}");
    }
    assert_eq!(
        verify(&opted, &typed(&key, Some("id_token+jwt")))
            .await
            .err(),
        Some(VerifyError::NotAnAccessToken)
    );
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(key.kid.clone());
    let mut other = claims("alice", "");
    other["aud"] = json!("https://other.example/mcp");
    // Header::new types it `JWT`, the JOSE default.
    assert_eq!(header.typ.as_deref(), Some("JWT"));
    let other = jsonwebtoken::encode(&header, &other, &key.encoding).unwrap();
    assert_eq!(
        verify(&opted, &other).await.err(),
        Some(VerifyError::WrongAudience)
    );
}

// ---------------------------------------------------------------------------------------------
// The introspection answer cache

fn caching_introspector(
    answer: &Value,
    ttl: Duration,
    clock: Arc<TestClock>,
) -> (IntrospectionVerifier, StubFetcher) {
    let fetcher = StubFetcher::serving(Bytes::from(answer.to_string()));
    let verifier = IntrospectionVerifier::builder(
        RESOURCE,
        "http://127.0.0.1:9000/introspect",
        fetcher.clone(),
    )
    .issuer(ISSUER)
    .cache_ttl(ttl)
    .clock(clock)
    .build()
    .unwrap();
    (verifier, fetcher)
}

fn active(exp: u64) -> Value {
    json!({"active": true, "sub": "alice", "aud": RESOURCE, "iss": ISSUER, "exp": exp})
}

#[tokio::test]
async fn d44_introspection_is_not_cached_by_default() {
    let (verifier, fetcher) = introspector(active(T0 + 600), TestClock::new());
    for _ in 0..3 {
        assert!(verifier.verify(&BearerToken::new("t")).await.is_ok());
    }
    assert_eq!(fetcher.calls(), 3);
}

#[tokio::test]
async fn d44_introspection_cache_holds_for_the_ttl_and_not_one_ms_more() {
    let clock = TestClock::new();
    let ttl = Duration::from_secs(60);
    let (verifier, fetcher) = caching_introspector(&active(T0 + 600), ttl, clock.clone());
    let token = BearerToken::new("t");
    assert_eq!(verifier.verify(&token).await.unwrap().subject, "alice");
    clock.advance(ttl - Duration::from_millis(1));
    assert_eq!(verifier.verify(&token).await.unwrap().subject, "alice");
    assert_eq!(fetcher.calls(), 1, "a hit inside the TTL asks nobody");
    // Another token is its own entry.
    assert!(verifier.verify(&BearerToken::new("u")).await.is_ok());
    assert_eq!(fetcher.calls(), 2);
    clock.advance(Duration::from_millis(1));
    // The TTL is over: asked again, and the answer now says revoked.
    fetcher.set_body(Bytes::from(json!({"active": false}).to_string()));
    assert_eq!(
        verifier.verify(&token).await.err(),
        Some(VerifyError::Inactive)
    );
    assert_eq!(fetcher.calls(), 3);
    // A refusal is never cached: the next answer is asked for again.
    fetcher.set_body(Bytes::from(active(T0 + 600).to_string()));
    assert!(verifier.verify(&token).await.is_ok());
    assert_eq!(fetcher.calls(), 4);
}

#[tokio::test]
async fn d44_introspection_cache_never_outlives_the_tokens_exp() {
    let clock = TestClock::new();
    let exp = T0 + 10;
    let (verifier, fetcher) =
        caching_introspector(&active(exp), Duration::from_secs(300), clock.clone());
    let token = BearerToken::new("t");
    assert!(verifier.verify(&token).await.is_ok());
    clock.set_s(exp);
    clock.0.fetch_sub(1, Ordering::SeqCst);
    assert!(verifier.verify(&token).await.is_ok());
    assert_eq!(fetcher.calls(), 1, "cached until 1 ms before exp");
    clock.set_s(exp);
    // At exp the entry is gone; the token itself is still inside its leeway, so the fresh
    // answer is taken, but it was asked for.
    assert!(verifier.verify(&token).await.is_ok());
    assert_eq!(fetcher.calls(), 2);
    // An answer that is only valid by the leeway (exp passed) is used but never cached.
    assert!(verifier.verify(&token).await.is_ok());
    assert_eq!(fetcher.calls(), 3);
}

#[tokio::test]
async fn d44_introspection_cache_ttl_bound_at_and_past_the_maximum() {
    let build = |ttl: Duration| {
        IntrospectionVerifier::builder(RESOURCE, "http://127.0.0.1:9000/i", StubFetcher::default())
            .cache_ttl(ttl)
            .build()
            .err()
    };
    assert_eq!(build(MAX_INTROSPECTION_CACHE_TTL), None);
    assert_eq!(
        build(MAX_INTROSPECTION_CACHE_TTL + Duration::from_millis(1)),
        Some(IntrospectionConfigError::CacheTtl)
    );
}

#[tokio::test]
async fn d44_introspection_cache_size_bound_at_and_past_max_entries() {
    let clock = TestClock::new();
    // Token i lapses at T0 + 100 + i, so token 0 is the one that lapses soonest.
    let (verifier, fetcher) =
        caching_introspector(&active(T0 + 100), Duration::from_secs(300), clock.clone());
    for i in 0..MAX_INTROSPECTION_CACHE_ENTRIES as u64 {
        fetcher.set_body(Bytes::from(active(T0 + 100 + i).to_string()));
        assert!(verifier
            .verify(&BearerToken::new(format!("t{i}")))
            .await
            .is_ok());
    }
    let filled = fetcher.calls();
    assert_eq!(filled, MAX_INTROSPECTION_CACHE_ENTRIES);
    // At the bound every token is still cached.
    for i in [0, MAX_INTROSPECTION_CACHE_ENTRIES - 1] {
        assert!(verifier
            .verify(&BearerToken::new(format!("t{i}")))
            .await
            .is_ok());
    }
    assert_eq!(fetcher.calls(), filled);
    // One past: the newcomer is cached and the soonest to lapse (t0) made room.
    fetcher.set_body(Bytes::from(active(T0 + 5000).to_string()));
    assert!(verifier.verify(&BearerToken::new("new")).await.is_ok());
    assert!(verifier.verify(&BearerToken::new("new")).await.is_ok());
    assert!(verifier.verify(&BearerToken::new("t1")).await.is_ok());
    assert_eq!(fetcher.calls(), filled + 1);
    assert!(verifier.verify(&BearerToken::new("t0")).await.is_ok());
    assert_eq!(fetcher.calls(), filled + 2, "t0 was evicted");
}

// ---------------------------------------------------------------------------------------------
// Secrets stay out of diagnostics

#[tokio::test]
async fn o86_tokens_never_appear_in_errors_or_debug() {
    let secret_token = "eyJzZWNyZXQiOiJ0b2tlbiJ9.c2VjcmV0LXBheWxvYWQ.c2lnbmF0dXJl";
    let token = BearerToken::new(secret_token);
    assert!(!format!("{token:?}").contains("eyJ"));
    let key = new_key("k1");
    let verifier = jwt_verifier(StubFetcher::serving(jwks(&[&key])), TestClock::new());
    let err = verifier.verify(&token).await.unwrap_err();
    assert!(!format!("{err} {err:?}").contains("eyJ"), "{err:?}");
    assert!(!format!("{verifier:?}").contains("eyJ"));
    let (introspection, _) = introspector(json!({"active": false}), TestClock::new());
    let err = introspection.verify(&token).await.unwrap_err();
    assert!(!format!("{err} {err:?}").contains("eyJ"), "{err:?}");
    let shown = format!("{introspection:?}");
    assert!(!shown.contains("s3cr3t"), "{shown}");
    // A refusal's challenge never echoes the token.
    let service = protect(jwt_verifier(
        StubFetcher::serving(jwks(&[&key])),
        TestClock::new(),
    ));
    let response = send(&service, call(Some(secret_token), "whoami")).await;
    assert!(!challenge(&response).contains("eyJ"));
}

// ---------------------------------------------------------------------------------------------
// End to end over loopback TCP

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d44_end_to_end_over_tcp_metadata_challenge_and_call() {
    let key = new_key("k1");
    let service = protect(jwt_verifier(
        StubFetcher::serving(jwks(&[&key])),
        TestClock::new(),
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        for _ in 0..3 {
            let (stream, _) = listener.accept().await.unwrap();
            let service = service.clone();
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .pool_max_idle_per_host(0)
        .build_http::<Full<Bytes>>();
    let with_host = |mut r: Request<Full<Bytes>>, path: &str| {
        *r.uri_mut() = format!("http://{addr}{path}").parse().unwrap();
        r.headers_mut()
            .insert("host", "127.0.0.1:8123".parse().unwrap());
        r
    };
    let metadata = client
        .request(with_host(
            Request::get("/").body(Full::default()).unwrap(),
            "/.well-known/oauth-protected-resource/mcp",
        ))
        .await
        .unwrap();
    assert_eq!(metadata.status(), StatusCode::OK);
    let doc: Value =
        serde_json::from_slice(&metadata.into_body().collect().await.unwrap().to_bytes()).unwrap();
    assert_eq!(doc["resource"], RESOURCE);
    let refused = client
        .request(with_host(call(None, "whoami"), "/mcp"))
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    assert!(refused.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .contains(&format!("resource_metadata=\"{METADATA_URL}\"")));
    let token = mint(&key, &claims("tcp-user", "mcp:use tools:call"));
    let ok = client
        .request(with_host(call(Some(&token), "whoami"), "/mcp"))
        .await
        .unwrap();
    assert_eq!(ok.status(), StatusCode::OK);
    let v: Value =
        serde_json::from_slice(&ok.into_body().collect().await.unwrap().to_bytes()).unwrap();
    assert_eq!(
        v["result"]["structuredContent"]["value"]["principal"],
        "tcp-user"
    );
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .unwrap()
        .unwrap();
}
