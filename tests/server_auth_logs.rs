//! Tokens never reach the log (O86, D47): every refusal path of the protected-resource layer
//! and the JWT verifier runs with a TRACE subscriber that records everything, and no token's
//! signature appears in what it wrote. Its own binary, so the global subscriber sees every
//! call site (tracing caches call-site interest process-wide). `cli` brings `tracing-subscriber`.
#![forbid(unsafe_code)]
#![cfg(all(feature = "auth", feature = "cli"))]

mod support;

use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::Arc;

use base64::Engine as _;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::Request;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use p256::pkcs8::EncodePrivateKey as _;
use serde_json::{json, Value};
use tower::{Layer as _, ServiceExt as _};

use strict_mcp::core::{Invocation, RegistryBuilder, ToolDef};
use strict_mcp::server::auth::{
    AuthConfig, AuthLayer, BoxFuture, FetchError, FetchRequest, FetchResponse, Fetcher, JwtVerifier,
};
use strict_mcp::server::http::{HttpConfig, McpHttp};
use strict_mcp::server::{Server, ServerOptions};
use support::logs::Layout;

const RESOURCE: &str = "http://127.0.0.1:8123/mcp";
const ISSUER: &str = "http://127.0.0.1:9000";

struct Key {
    kid: &'static str,
    encoding: EncodingKey,
    jwk: Value,
}

fn new_key(kid: &'static str) -> Key {
    let secret = loop {
        let mut bytes = [0u8; 32];
        getrandom::getrandom(&mut bytes).unwrap();
        if let Ok(k) = p256::SecretKey::from_slice(&bytes) {
            break k;
        }
    };
    let point =
        p256::elliptic_curve::sec1::ToEncodedPoint::to_encoded_point(&secret.public_key(), false);
    let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
    Key {
        kid,
        encoding: EncodingKey::from_ec_der(secret.to_pkcs8_der().unwrap().as_bytes()),
        jwk: json!({"kty": "EC", "crv": "P-256", "kid": kid,
            "x": b64(point.x().unwrap()), "y": b64(point.y().unwrap())}),
    }
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
    header.kid = Some(key.kid.to_owned());
    jsonwebtoken::encode(&header, claims, &key.encoding).unwrap()
}

fn claims(scope: &str) -> Value {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    json!({"iss": ISSUER, "sub": "alice", "aud": RESOURCE, "scope": scope, "exp": now + 600})
}

/// Serves a fixed key set with a switchable status.
struct KeySet {
    body: Bytes,
    status: Arc<AtomicU16>,
}
impl Fetcher for KeySet {
    fn fetch(&self, _r: FetchRequest) -> BoxFuture<'_, Result<FetchResponse, FetchError>> {
        let response = FetchResponse {
            status: self.status.load(Ordering::SeqCst),
            content_type: None,
            body: self.body.clone(),
        };
        Box::pin(async move { Ok(response) })
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Empty {}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Who {
    /// The caller's principal id.
    who: String,
}

#[tokio::test]
async fn o86_tokens_never_appear_in_logs() {
    let logs = support::logs::capture(tracing::Level::TRACE, Layout::Full);

    let key = new_key("k1");
    let status = Arc::new(AtomicU16::new(200));
    let verifier = JwtVerifier::builder(RESOURCE)
        .issuer(ISSUER)
        .algorithms([Algorithm::ES256])
        .jwks(
            "http://127.0.0.1:9000/jwks",
            KeySet {
                body: Bytes::from(json!({"keys": [key.jwk]}).to_string()),
                status: status.clone(),
            },
        )
        .build()
        .unwrap();
    let config = AuthConfig::builder(RESOURCE)
        .authorization_server(ISSUER)
        .require_scopes(["mcp:use"])
        .build()
        .unwrap();
    let registry = RegistryBuilder::new()
        .tool(ToolDef::typed(
            "whoami",
            |inv: Invocation, _i: Empty| async move {
                Ok(Who {
                    who: inv.caller().principal().unwrap_or("").to_owned(),
                })
            },
        ))
        .build()
        .unwrap();
    let server = Server::new(registry, ServerOptions::new().mode("direct")).unwrap();
    let service =
        AuthLayer::new(config, verifier).layer(McpHttp::new(server, HttpConfig::default()));

    let good = mint(&key, &claims("mcp:use"));
    let mut other = claims("mcp:use");
    other["aud"] = json!("https://other.example.com");
    let wrong_aud = mint(&key, &other);
    let no_scope = mint(&key, &claims(""));
    let flip = good.len() - 10;
    let swapped = if &good[flip..=flip] == "A" { "B" } else { "A" };
    let tampered = format!("{}{swapped}{}", &good[..flip], &good[flip + 1..]);
    let unknown = mint(&new_key("k9"), &claims("mcp:use"));
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "whoami", "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string();
    let mut statuses = Vec::new();
    for (token, fetch_status) in [
        (&tampered, 200),
        (&wrong_aud, 200),
        (&no_scope, 200),
        (&good, 200),
        (&unknown, 500),
    ] {
        status.store(fetch_status, Ordering::SeqCst);
        let request = Request::post("/mcp")
            .header("host", "127.0.0.1:8123")
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "whoami")
            .header("authorization", format!("Bearer {token}"))
            .body(Full::new(Bytes::from(body.clone())))
            .unwrap();
        let response = service.clone().oneshot(request).await.unwrap();
        statuses.push(response.status().as_u16());
        let _ = response.into_body().collect().await.unwrap();
    }
    assert_eq!(statuses, [401, 401, 403, 200, 401]);
    let text = logs.text();
    for expected in [
        "bearer token refused reason=the token's signature does not verify",
        "bearer token refused reason=the token was not issued for this resource",
        "bearer token lacks a required scope",
        "bearer token refused reason=no key matches the token",
    ] {
        assert!(text.contains(expected), "{expected:?} not logged: {text}");
    }
    for token in [&tampered, &wrong_aud, &no_scope, &good, &unknown] {
        // Each token's signature part is unique to it.
        let signature = token.rsplit('.').next().unwrap();
        assert!(!text.contains(signature), "a token reached the log: {text}");
    }
}
