//! The OAuth client (`client::auth`) against a loopback mock MCP server + authorization
//! server (D45): discovery order, PKCE S256, `resource`, `state` / `iss`, refresh with
//! rotation, step-up, attempt bound, client authentication methods, client credentials.
//! Everything listens and dials on 127.0.0.1 only.
#![cfg(feature = "client-auth")]

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use hyper::{Request, Response};
use sha2::{Digest as _, Sha256};
use strict_mcp::client::auth::{
    discover, AuthError, ClientCredentials, ClientIdentity, Fetcher, Grant, HeadlessUserStep,
    LoopbackFetcher, MemoryTokenStore, OAuthClient, OAuthConfig, RegistrationRequest,
    TokenAuthMethod, TokenKey, TokenStore, MAX_AUTHORIZATION_ATTEMPTS, MAX_METADATA_BYTES,
};
use strict_mcp::client::auth::{refusal, Challenge, DpopKey, Secret, Tokens};
use strict_mcp::client::http::{Decorations, HttpError, HttpTransport};
use strict_mcp::client::{ClientError, Refusal, Transport as _, TransportError};
use strict_mcp::wire::jsonrpc::{Message, Request as RpcRequest, RequestId};

/// One request the mock saw.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    query: HashMap<String, String>,
    form: HashMap<String, String>,
    authorization: Option<String>,
    /// The `DPoP` proof header.
    dpop: Option<String>,
}

/// Knobs of the mock.
#[derive(Debug, Clone, Default)]
struct Knobs {
    /// Serve the resource metadata only at the root location.
    prm_root_only: bool,
    /// Leave `resource_metadata` out of the challenge.
    no_header_metadata: bool,
    /// Answer 404 at the RFC 8414 location (OpenID Connect discovery only).
    oidc_only: bool,
    /// The issuer the AS metadata claims (default: the real one).
    claimed_issuer: Option<String>,
    /// Drop `code_challenge_methods_supported`.
    no_pkce: bool,
    /// Redirect with this `iss` instead of the issuer.
    callback_iss: Option<String>,
    /// Scope a valid token needs on /mcp beyond `mcp:basic` (403 insufficient_scope).
    needs_scope: Option<String>,
    /// Refuse every token on /mcp.
    refuse_all: bool,
    /// Publish `resource` as the bare base URL (no path) instead of `{base}/mcp`.
    prm_resource_root: bool,
    /// Publish `resource` as another server's URL.
    prm_resource_other: bool,
    /// Advertise `client_id_metadata_document_supported: true`.
    cimd: bool,
    /// Pad the AS metadata document to this many bytes.
    pad_metadata_to: Option<usize>,
    /// Advertise DPoP (`ES256`); a token request with a proof must carry the nonce
    /// `AS_NONCE` (400 `use_dpop_nonce` first) and gets a `DPoP` token.
    dpop: bool,
}

/// The mock authorization server's DPoP nonce.
const AS_NONCE: &str = "as-nonce-1";

/// The claims of a JWT (not verified: the proof's signature is the unit tests' matter).
fn jwt_claims(jwt: &str) -> serde_json::Value {
    let payload = jwt.split('.').nth(1).unwrap();
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap()
}

#[derive(Default)]
struct Inner {
    seen: Vec<Seen>,
    /// code → (code_challenge, scope, resource)
    codes: HashMap<String, (String, String, String)>,
    /// access token → scope
    access: HashMap<String, String>,
    /// live refresh tokens
    refresh: Vec<String>,
    counter: u32,
}

struct Mock {
    base: String,
    knobs: Knobs,
    inner: Mutex<Inner>,
}

fn parse_form(text: &str) -> HashMap<String, String> {
    form_urlencoded::parse(text.as_bytes())
        .into_owned()
        .collect()
}

fn json(status: u16, value: serde_json::Value) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(value.to_string())))
        .unwrap()
}

fn empty(status: u16) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .body(Full::new(Bytes::new()))
        .unwrap()
}

impl Mock {
    fn as_metadata(&self) -> serde_json::Value {
        let b = &self.base;
        let mut m = serde_json::json!({
            "issuer": self.knobs.claimed_issuer.clone().unwrap_or_else(|| b.clone()),
            "authorization_endpoint": format!("{b}/authorize"),
            "token_endpoint": format!("{b}/token"),
            "registration_endpoint": format!("{b}/register"),
            "code_challenge_methods_supported": ["S256"],
            "authorization_response_iss_parameter_supported": true,
            "scopes_supported": ["mcp:basic", "mcp:write", "offline_access"],
        });
        if self.knobs.cimd {
            m["client_id_metadata_document_supported"] = true.into();
        }
        if self.knobs.dpop {
            m["dpop_signing_alg_values_supported"] = serde_json::json!(["ES256"]);
        }
        if self.knobs.no_pkce {
            m.as_object_mut()
                .unwrap()
                .remove("code_challenge_methods_supported");
        }
        if let Some(size) = self.knobs.pad_metadata_to {
            let base = m.to_string().len() + ",\"pad\":\"\"".len();
            m["pad"] = "x".repeat(size - base).into();
            assert_eq!(m.to_string().len(), size);
        }
        m
    }

    fn challenge(&self, error: Option<&str>, scope: &str) -> String {
        let mut value = String::from("Bearer ");
        if !self.knobs.no_header_metadata {
            value.push_str(&format!(
                "resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\", ",
                self.base
            ));
        }
        if let Some(error) = error {
            value.push_str(&format!("error=\"{error}\", "));
        }
        value.push_str(&format!("scope=\"{scope}\""));
        value
    }

    fn answer(&self, seen: &Seen) -> Response<Full<Bytes>> {
        let b = &self.base;
        let prm = serde_json::json!({
            "resource": if self.knobs.prm_resource_root {
                b.clone()
            } else if self.knobs.prm_resource_other {
                "http://127.0.0.1:1/mcp".to_owned()
            } else {
                format!("{b}/mcp")
            },
            "authorization_servers": [b],
            "scopes_supported": ["mcp:basic"],
        });
        match (seen.method.as_str(), seen.path.as_str()) {
            ("GET", "/.well-known/oauth-protected-resource/mcp") if !self.knobs.prm_root_only => {
                json(200, prm)
            }
            ("GET", "/.well-known/oauth-protected-resource") => json(200, prm),
            ("GET", "/.well-known/oauth-authorization-server") if !self.knobs.oidc_only => {
                json(200, self.as_metadata())
            }
            ("GET", "/.well-known/openid-configuration") => json(200, self.as_metadata()),
            ("GET", "/authorize") => {
                let q = &seen.query;
                let mut inner = self.inner.lock().unwrap();
                inner.counter += 1;
                let code = format!("CODE-{}", inner.counter);
                inner.codes.insert(
                    code.clone(),
                    (
                        q["code_challenge"].clone(),
                        q.get("scope").cloned().unwrap_or_default(),
                        q["resource"].clone(),
                    ),
                );
                let iss = self.knobs.callback_iss.clone().unwrap_or_else(|| b.clone());
                let mut location = form_urlencoded::Serializer::new(String::new());
                location
                    .append_pair("code", &code)
                    .append_pair("state", &q["state"])
                    .append_pair("iss", &iss);
                Response::builder()
                    .status(302)
                    .header(
                        "location",
                        format!("{}?{}", q["redirect_uri"], location.finish()),
                    )
                    .body(Full::new(Bytes::new()))
                    .unwrap()
            }
            ("POST", "/token") => self.token(seen),
            ("POST", "/register") => json(201, serde_json::json!({"client_id": "dyn-1"})),
            ("POST", "/mcp") => {
                let inner = self.inner.lock().unwrap();
                // A DPoP token only with a proof for it (`ath`, RFC 9449 §7.1).
                let token = seen.authorization.as_deref().and_then(|a| {
                    a.strip_prefix("Bearer ").or_else(|| {
                        let token = a.strip_prefix("DPoP ")?;
                        let ath = URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes()));
                        (jwt_claims(seen.dpop.as_deref()?)["ath"] == ath.as_str()).then_some(token)
                    })
                });
                let scope = token.and_then(|t| inner.access.get(t));
                match scope {
                    None => Response::builder()
                        .status(401)
                        .header(
                            "www-authenticate",
                            self.challenge(token.map(|_| "invalid_token"), "mcp:basic"),
                        )
                        .body(Full::new(Bytes::new()))
                        .unwrap(),
                    Some(_) if self.knobs.refuse_all => Response::builder()
                        .status(401)
                        .header(
                            "www-authenticate",
                            self.challenge(Some("invalid_token"), "mcp:basic"),
                        )
                        .body(Full::new(Bytes::new()))
                        .unwrap(),
                    Some(granted) => match &self.knobs.needs_scope {
                        Some(need) if !granted.split(' ').any(|s| s == need) => Response::builder()
                            .status(403)
                            .header(
                                "www-authenticate",
                                self.challenge(Some("insufficient_scope"), need),
                            )
                            .body(Full::new(Bytes::new()))
                            .unwrap(),
                        _ => json(
                            200,
                            serde_json::json!({"jsonrpc": "2.0", "id": 0, "result": {}}),
                        ),
                    },
                }
            }
            _ => empty(404),
        }
    }

    fn token(&self, seen: &Seen) -> Response<Full<Bytes>> {
        let f = &seen.form;
        let mut token_type = "Bearer";
        if let (true, Some(proof)) = (self.knobs.dpop, &seen.dpop) {
            if jwt_claims(proof)["nonce"] != AS_NONCE {
                return Response::builder()
                    .status(400)
                    .header("content-type", "application/json")
                    .header("dpop-nonce", AS_NONCE)
                    .body(Full::new(Bytes::from(r#"{"error":"use_dpop_nonce"}"#)))
                    .unwrap();
            }
            token_type = "DPoP";
        }

        let mut inner = self.inner.lock().unwrap();
        inner.counter += 1;
        let n = inner.counter;
        let scope = match f.get("grant_type").map(String::as_str) {
            Some("authorization_code") => {
                let Some((challenge, scope, resource)) = inner.codes.remove(&f["code"]) else {
                    return json(400, serde_json::json!({"error": "invalid_grant"}));
                };
                let computed =
                    URL_SAFE_NO_PAD.encode(Sha256::digest(f["code_verifier"].as_bytes()));
                if computed != challenge || f.get("resource") != Some(&resource) {
                    return json(400, serde_json::json!({"error": "invalid_grant"}));
                }
                scope
            }
            Some("refresh_token") => {
                let Some(at) = inner.refresh.iter().position(|r| r == &f["refresh_token"]) else {
                    return json(400, serde_json::json!({"error": "invalid_grant"}));
                };
                // Rotation: the used refresh token dies.
                inner.refresh.remove(at);
                "mcp:basic".to_owned()
            }
            Some("client_credentials") => f.get("scope").cloned().unwrap_or_default(),
            _ => return json(400, serde_json::json!({"error": "unsupported_grant_type"})),
        };
        let access = format!("AT-{n}");
        let refresh = format!("RT-{n}");
        inner.access.insert(access.clone(), scope.clone());
        inner.refresh.push(refresh.clone());
        json(
            200,
            serde_json::json!({
                "access_token": access, "token_type": token_type, "expires_in": 3600,
                "refresh_token": refresh, "scope": scope,
            }),
        )
    }

    fn seen(&self) -> Vec<Seen> {
        self.inner.lock().unwrap().seen.clone()
    }

    fn paths(&self) -> Vec<String> {
        self.seen()
            .iter()
            .map(|s| format!("{} {}", s.method, s.path))
            .collect()
    }
}

async fn start(knobs: Knobs) -> Arc<Mock> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let mock = Arc::new(Mock {
        base,
        knobs,
        inner: Mutex::new(Inner::default()),
    });
    let served = Arc::clone(&mock);
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let mock = Arc::clone(&served);
            tokio::spawn(async move {
                let service =
                    hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
                        let mock = Arc::clone(&mock);
                        async move {
                            let method = request.method().to_string();
                            let path = request.uri().path().to_owned();
                            let query = parse_form(request.uri().query().unwrap_or_default());
                            let header = |name: &str| {
                                request
                                    .headers()
                                    .get(name)
                                    .map(|v| v.to_str().unwrap().to_owned())
                            };
                            let authorization = header("authorization");
                            let dpop = header("dpop");
                            let body = request.into_body().collect().await.unwrap().to_bytes();
                            let seen = Seen {
                                method,
                                path,
                                query,
                                form: parse_form(std::str::from_utf8(&body).unwrap()),
                                authorization,
                                dpop,
                            };
                            mock.inner.lock().unwrap().seen.push(seen.clone());
                            Ok::<_, Infallible>(mock.answer(&seen))
                        }
                    });
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            });
        }
    });
    mock
}

fn fetcher() -> Arc<dyn Fetcher> {
    Arc::new(LoopbackFetcher::with_timeout(Duration::from_secs(5)))
}

fn code_client(mock: &Mock, client: ClientCredentials, store: Arc<dyn TokenStore>) -> OAuthClient {
    let fetcher = fetcher();
    let config = OAuthConfig {
        identity: ClientIdentity::registered(client),
        grant: Grant::AuthorizationCode {
            redirect_uri: "http://127.0.0.1:1/callback".into(),
            user_step: Arc::new(HeadlessUserStep::new(Arc::clone(&fetcher))),
        },
        store,
    };
    OAuthClient::new(fetcher, &format!("{}/mcp", mock.base), config).unwrap()
}

fn header_of(client: &OAuthClient) -> Option<String> {
    let mut decorations = Decorations::default();
    (client.decorator())("tools/call", &mut decorations).unwrap();
    decorations
        .headers()
        .iter()
        .find(|(n, _)| n == "authorization")
        .map(|(_, v)| v.to_str().unwrap().to_owned())
}

/// One `server/discover` request through the HTTP transport with the client's decorator:
/// `None` when it goes through, else the status and challenge the transport reported (the
/// client never asks again by itself).
async fn probe(client: &OAuthClient) -> Option<(u16, Option<Challenge>)> {
    let transport = HttpTransport::new(client.server_url(), Some(client.decorator())).unwrap();
    let params = serde_json::value::RawValue::from_string(format!(
        r#"{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"{}"}}}}"#,
        strict_mcp::wire::PROTOCOL_REVISION
    ))
    .unwrap();
    let message = Message::Request(RpcRequest {
        id: RequestId::integer(0),
        method: "server/discover".into(),
        params: Some(params),
    });
    match transport.send(&message).await {
        Ok(_) => None,
        Err(TransportError::Refused(Refusal::Http(error))) => {
            Some(refusal(&error).expect("an authorization refusal"))
        }
        Err(other) => panic!("transport failed: {other}"),
    }
}

/// The way to a token before the first real request: send one, handle its refusal.
async fn authorize(client: &OAuthClient) -> Result<(), AuthError> {
    match probe(client).await {
        Some((status, challenge)) => client.handle(status, challenge.as_ref()).await,
        None => Ok(()),
    }
}

async fn timed<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), future)
        .await
        .expect("bounded")
}

#[tokio::test]
async fn d45_code_flow_pkce_resource_state_iss_end_to_end() {
    let mock = start(Knobs::default()).await;
    let store = Arc::new(MemoryTokenStore::default());
    let client = code_client(
        &mock,
        ClientCredentials::public("public-client"),
        store.clone(),
    );
    assert_eq!(header_of(&client), None);
    timed(authorize(&client)).await.unwrap();
    assert_eq!(header_of(&client).as_deref(), Some("Bearer AT-2"));
    // The probe now goes through.
    assert_eq!(timed(probe(&client)).await, None);
    let b = &mock.base;
    assert_eq!(
        mock.paths(),
        [
            "POST /mcp",
            "GET /.well-known/oauth-protected-resource/mcp",
            "GET /.well-known/oauth-authorization-server",
            "GET /authorize",
            "POST /token",
            "POST /mcp",
        ]
    );
    let seen = mock.seen();
    let authorize = &seen[3].query;
    assert_eq!(authorize["response_type"], "code");
    assert_eq!(authorize["client_id"], "public-client");
    assert_eq!(authorize["code_challenge_method"], "S256");
    assert_eq!(authorize["resource"], format!("{b}/mcp"));
    assert_eq!(authorize["scope"], "mcp:basic");
    assert_eq!(authorize["code_challenge"].len(), 43);
    let token = &seen[4];
    assert_eq!(token.form["grant_type"], "authorization_code");
    assert_eq!(token.form["resource"], format!("{b}/mcp"));
    assert_eq!(token.form["client_id"], "public-client");
    assert_eq!(token.form["redirect_uri"], "http://127.0.0.1:1/callback");
    assert!(!token.form.contains_key("client_secret"));
    assert_eq!(token.authorization, None);
    assert_eq!(seen[5].authorization.as_deref(), Some("Bearer AT-2"));
    let key = TokenKey {
        issuer: b.clone(),
        resource: format!("{b}/mcp"),
    };
    let stored = store.load(&key).unwrap();
    assert_eq!(stored.access_token.expose(), "AT-2");
    assert_eq!(stored.refresh_token.unwrap().expose(), "RT-2");
    // Nothing secret in the client's Debug.
    let shown = format!("{client:?}");
    assert!(
        !shown.contains("AT-2") && !shown.contains("RT-2"),
        "{shown}"
    );
}

#[tokio::test]
async fn d45_discovery_falls_back_in_spec_order() {
    let mock = start(Knobs {
        prm_root_only: true,
        no_header_metadata: true,
        oidc_only: true,
        ..Knobs::default()
    })
    .await;
    let found = timed(discover(
        fetcher().as_ref(),
        &format!("{}/mcp", mock.base),
        None,
    ))
    .await
    .unwrap();
    assert_eq!(found.authorization_server.issuer, mock.base);
    assert_eq!(
        found.resource_metadata_url,
        format!("{}/.well-known/oauth-protected-resource", mock.base)
    );
    assert_eq!(
        mock.paths(),
        [
            "GET /.well-known/oauth-protected-resource/mcp",
            "GET /.well-known/oauth-protected-resource",
            "GET /.well-known/oauth-authorization-server",
            "GET /.well-known/openid-configuration",
        ]
    );
}

#[tokio::test]
async fn d45_issuer_mismatch_refused() {
    let mock = start(Knobs {
        claimed_issuer: Some("http://127.0.0.1:1".into()),
        ..Knobs::default()
    })
    .await;
    let err = timed(discover(
        fetcher().as_ref(),
        &format!("{}/mcp", mock.base),
        None,
    ))
    .await
    .unwrap_err();
    assert_eq!(
        err,
        AuthError::IssuerMismatch {
            expected: mock.base.clone(),
            found: "http://127.0.0.1:1".into()
        }
    );
}

#[tokio::test]
async fn metadata_bound_at_and_past() {
    let at = start(Knobs {
        pad_metadata_to: Some(MAX_METADATA_BYTES),
        ..Knobs::default()
    })
    .await;
    timed(discover(
        fetcher().as_ref(),
        &format!("{}/mcp", at.base),
        None,
    ))
    .await
    .unwrap();
    let past = start(Knobs {
        pad_metadata_to: Some(MAX_METADATA_BYTES + 1),
        ..Knobs::default()
    })
    .await;
    let err = timed(discover(
        fetcher().as_ref(),
        &format!("{}/mcp", past.base),
        None,
    ))
    .await
    .unwrap_err();
    assert!(
        matches!(&err, AuthError::Fetch { source, .. } if *source == strict_mcp::client::auth::FetchError::BodyTooLarge { limit: MAX_METADATA_BYTES }),
        "{err:?}"
    );
}

#[tokio::test]
async fn d45_no_pkce_support_no_code_flow() {
    let mock = start(Knobs {
        no_pkce: true,
        ..Knobs::default()
    })
    .await;
    let client = code_client(
        &mock,
        ClientCredentials::public("c"),
        Arc::new(MemoryTokenStore::default()),
    );
    assert_eq!(
        timed(authorize(&client)).await,
        Err(AuthError::PkceUnsupported)
    );
    assert!(!mock.paths().contains(&"GET /authorize".to_owned()));
}

#[tokio::test]
async fn d45_wrong_callback_iss_never_redeems_code() {
    let mock = start(Knobs {
        callback_iss: Some("http://127.0.0.1:2".into()),
        ..Knobs::default()
    })
    .await;
    let client = code_client(
        &mock,
        ClientCredentials::public("c"),
        Arc::new(MemoryTokenStore::default()),
    );
    assert_eq!(
        timed(authorize(&client)).await,
        Err(AuthError::CallbackIssuer)
    );
    assert!(!mock.paths().contains(&"POST /token".to_owned()));
}

#[tokio::test]
async fn refresh_rotates_and_only_one_is_in_flight() {
    let mock = start(Knobs::default()).await;
    let store = Arc::new(MemoryTokenStore::default());
    let client = Arc::new(code_client(
        &mock,
        ClientCredentials::public("c"),
        store.clone(),
    ));
    timed(authorize(&client)).await.unwrap();
    // The server forgets the access token: a 401 invalid_token for it.
    mock.inner.lock().unwrap().access.clear();
    let (a, b) = tokio::join!(client.handle(401, None), client.handle(401, None));
    a.unwrap();
    b.unwrap();
    let refreshes: Vec<Seen> = mock
        .seen()
        .into_iter()
        .filter(|s| s.path == "/token" && s.form["grant_type"] == "refresh_token")
        .collect();
    assert_eq!(refreshes.len(), 1, "one refresh in flight");
    assert_eq!(refreshes[0].form["refresh_token"], "RT-2");
    assert_eq!(refreshes[0].form["resource"], format!("{}/mcp", mock.base));
    assert_eq!(header_of(&client).as_deref(), Some("Bearer AT-3"));
    let key = TokenKey {
        issuer: mock.base.clone(),
        resource: format!("{}/mcp", mock.base),
    };
    assert_eq!(
        store.load(&key).unwrap().refresh_token.unwrap().expose(),
        "RT-3"
    );
    assert_eq!(timed(probe(&client)).await, None);
}

#[tokio::test]
async fn step_up_requests_challenged_plus_granted_scopes() {
    let mock = start(Knobs {
        needs_scope: Some("mcp:write".into()),
        ..Knobs::default()
    })
    .await;
    let client = code_client(
        &mock,
        ClientCredentials::public("c"),
        Arc::new(MemoryTokenStore::default()),
    );
    timed(authorize(&client)).await.unwrap();
    // The first token has mcp:basic; the server wants mcp:write: 403 insufficient_scope.
    let (status, challenge) = timed(probe(&client)).await.unwrap();
    assert_eq!(status, 403);
    timed(client.handle(status, challenge.as_ref()))
        .await
        .unwrap();
    let authorizes: Vec<Seen> = mock
        .seen()
        .into_iter()
        .filter(|s| s.path == "/authorize")
        .collect();
    assert_eq!(authorizes.len(), 2);
    assert_eq!(authorizes[1].query["scope"], "mcp:basic mcp:write");
    assert_eq!(timed(probe(&client)).await, None);
}

#[tokio::test]
async fn attempts_bounded_at_max_and_reset_on_success() {
    let mock = start(Knobs {
        refuse_all: true,
        ..Knobs::default()
    })
    .await;
    let client = code_client(
        &mock,
        ClientCredentials::public("c"),
        Arc::new(MemoryTokenStore::default()),
    );
    for _ in 0..MAX_AUTHORIZATION_ATTEMPTS {
        timed(authorize(&client)).await.unwrap();
    }
    assert_eq!(
        timed(authorize(&client)).await,
        Err(AuthError::TooManyAttempts {
            limit: MAX_AUTHORIZATION_ATTEMPTS
        })
    );
    client.succeeded().await;
    timed(authorize(&client)).await.unwrap();
}

#[tokio::test]
async fn forbidden_without_insufficient_scope_is_not_retried() {
    let mock = start(Knobs::default()).await;
    let client = code_client(
        &mock,
        ClientCredentials::public("c"),
        Arc::new(MemoryTokenStore::default()),
    );
    assert_eq!(
        timed(client.handle(403, None)).await,
        Err(AuthError::Forbidden)
    );
    assert!(mock.paths().is_empty());
}

#[tokio::test]
async fn client_secret_basic_and_post() {
    let mock = start(Knobs::default()).await;
    let basic = code_client(
        &mock,
        ClientCredentials::confidential("id:1", "s&cret", TokenAuthMethod::ClientSecretBasic),
        Arc::new(MemoryTokenStore::default()),
    );
    timed(authorize(&basic)).await.unwrap();
    let post = code_client(
        &mock,
        ClientCredentials::confidential("id2", "sec2", TokenAuthMethod::ClientSecretPost),
        Arc::new(MemoryTokenStore::default()),
    );
    timed(authorize(&post)).await.unwrap();
    let tokens: Vec<Seen> = mock
        .seen()
        .into_iter()
        .filter(|s| s.path == "/token")
        .collect();
    assert_eq!(tokens.len(), 2);
    // RFC 6749 §2.3.1: id and secret form-encoded before Basic.
    assert_eq!(
        tokens[0].authorization.as_deref(),
        Some(format!("Basic {}", STANDARD.encode("id%3A1:s%26cret")).as_str())
    );
    assert!(!tokens[0].form.contains_key("client_secret"));
    assert!(!tokens[0].form.contains_key("client_id"));
    assert_eq!(tokens[1].authorization, None);
    assert_eq!(tokens[1].form["client_id"], "id2");
    assert_eq!(tokens[1].form["client_secret"], "sec2");
}

#[tokio::test]
async fn client_credentials_grant() {
    let mock = start(Knobs::default()).await;
    let config = OAuthConfig {
        identity: ClientIdentity::registered(ClientCredentials::confidential(
            "svc",
            "svc-secret",
            TokenAuthMethod::ClientSecretPost,
        )),
        grant: Grant::ClientCredentials,
        store: Arc::new(MemoryTokenStore::default()),
    };
    let client = OAuthClient::new(fetcher(), &format!("{}/mcp", mock.base), config).unwrap();
    timed(authorize(&client)).await.unwrap();
    let token = mock
        .seen()
        .into_iter()
        .find(|s| s.path == "/token")
        .unwrap();
    assert_eq!(token.form["grant_type"], "client_credentials");
    assert_eq!(token.form["scope"], "mcp:basic");
    assert_eq!(token.form["resource"], format!("{}/mcp", mock.base));
    assert!(!mock.paths().contains(&"GET /authorize".to_owned()));
    assert_eq!(timed(probe(&client)).await, None);
}

#[tokio::test]
async fn errors_never_show_secrets() {
    let mock = start(Knobs::default()).await;
    let client = code_client(
        &mock,
        ClientCredentials::confidential("id", "CLIENT-SECRET", TokenAuthMethod::ClientSecretBasic),
        Arc::new(MemoryTokenStore::default()),
    );
    timed(authorize(&client)).await.unwrap();
    mock.inner.lock().unwrap().refresh.clear();
    mock.inner.lock().unwrap().access.clear();
    // The refresh is refused (invalid_grant): the client authorizes anew and succeeds.
    timed(client.handle(401, None)).await.unwrap();
    let err = AuthError::TokenEndpoint {
        error: "invalid_grant".into(),
    };
    let text = format!("{err} {err:?} {client:?}");
    assert!(
        !text.contains("CLIENT-SECRET") && !text.contains("AT-") && !text.contains("RT-"),
        "{text}"
    );
}

fn identity_client(mock: &Mock, identity: ClientIdentity) -> OAuthClient {
    let fetcher = fetcher();
    let config = OAuthConfig {
        identity,
        grant: Grant::AuthorizationCode {
            redirect_uri: "http://127.0.0.1:1/callback".into(),
            user_step: Arc::new(HeadlessUserStep::new(Arc::clone(&fetcher))),
        },
        store: Arc::new(MemoryTokenStore::default()),
    };
    OAuthClient::new(fetcher, &format!("{}/mcp", mock.base), config).unwrap()
}

fn registration() -> RegistrationRequest {
    RegistrationRequest {
        client_name: "strict-mcp test".into(),
        redirect_uris: vec!["http://127.0.0.1:1/callback".into()],
        application_type: "native".into(),
    }
}

#[tokio::test]
async fn dynamic_registration_only_on_opt_in() {
    let mock = start(Knobs::default()).await;
    let none = identity_client(&mock, ClientIdentity::default());
    assert_eq!(
        timed(authorize(&none)).await,
        Err(AuthError::NoClientIdentity)
    );
    assert!(!mock.paths().contains(&"POST /register".to_owned()));
    let opted = identity_client(
        &mock,
        ClientIdentity {
            dynamic_registration: Some(registration()),
            ..ClientIdentity::default()
        },
    );
    timed(authorize(&opted)).await.unwrap();
    let seen = mock.seen();
    let authorize = seen.iter().find(|s| s.path == "/authorize").unwrap();
    assert_eq!(authorize.query["client_id"], "dyn-1");
    assert_eq!(
        mock.paths()
            .iter()
            .filter(|p| *p == "POST /register")
            .count(),
        1
    );
}

#[tokio::test]
async fn client_id_metadata_document_when_supported_else_registration() {
    let url = "https://client.example.com/metadata.json";
    let identity = ClientIdentity {
        metadata_document: Some(url.into()),
        dynamic_registration: Some(registration()),
        ..ClientIdentity::default()
    };
    let cimd = start(Knobs {
        cimd: true,
        ..Knobs::default()
    })
    .await;
    timed(authorize(&identity_client(&cimd, identity.clone())))
        .await
        .unwrap();
    let seen = cimd.seen();
    assert_eq!(
        seen.iter().find(|s| s.path == "/authorize").unwrap().query["client_id"],
        url
    );
    assert_eq!(
        seen.iter().find(|s| s.path == "/token").unwrap().form["client_id"],
        url
    );
    assert!(!cimd.paths().contains(&"POST /register".to_owned()));
    let plain = start(Knobs::default()).await;
    timed(authorize(&identity_client(&plain, identity)))
        .await
        .unwrap();
    assert!(plain.paths().contains(&"POST /register".to_owned()));
}

/// A pathless published identifier is sent exactly as published (no `/mcp`, no trailing `/`);
/// one that names another resource is refused before any authorization server is contacted.
#[tokio::test]
async fn d45_resource_sent_as_published_and_checked() {
    let root = start(Knobs {
        prm_resource_root: true,
        ..Knobs::default()
    })
    .await;
    let client = code_client(
        &root,
        ClientCredentials::public("c"),
        Arc::new(MemoryTokenStore::default()),
    );
    timed(authorize(&client)).await.unwrap();
    let seen = root.seen();
    assert_eq!(
        seen.iter().find(|s| s.path == "/authorize").unwrap().query["resource"],
        root.base
    );
    assert_eq!(
        seen.iter().find(|s| s.path == "/token").unwrap().form["resource"],
        root.base
    );
    let other = start(Knobs {
        prm_resource_other: true,
        ..Knobs::default()
    })
    .await;
    let client = code_client(
        &other,
        ClientCredentials::public("c"),
        Arc::new(MemoryTokenStore::default()),
    );
    assert_eq!(
        timed(authorize(&client)).await,
        Err(AuthError::ResourceMismatch {
            expected: format!("{}/mcp", other.base),
            found: "http://127.0.0.1:1/mcp".into()
        })
    );
    assert!(!other
        .paths()
        .iter()
        .any(|p| p.contains("oauth-authorization-server")));
}

fn header_named(client: &OAuthClient, name: &str) -> Option<String> {
    let mut decorations = Decorations::default();
    (client.decorator())("tools/call", &mut decorations).unwrap();
    decorations
        .headers()
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.to_str().unwrap().to_owned())
}

fn use_dpop_nonce(nonce: Option<&str>) -> ClientError {
    ClientError::Transport(TransportError::Refused(Refusal::Http(
        HttpError::Unauthorized {
            status: 401,
            www_authenticate: vec![r#"DPoP error="use_dpop_nonce""#.into()],
            dropped: 0,
            dpop_nonce: nonce.map(str::to_owned),
        },
    )))
}

/// RFC 9449 end to end against the mock: the token request carries a proof for the token
/// endpoint, is sent once more with the authorization server's nonce after `use_dpop_nonce`,
/// and yields a DPoP token; every MCP request then carries `Authorization: DPoP` and a fresh
/// proof for the MCP URL with `ath`, which the mock checks (the probe goes through). The
/// resource server's `use_dpop_nonce` is answered once per new nonce.
#[tokio::test]
async fn rfc9449_dpop_token_request_nonce_and_bound_requests() {
    let mock = start(Knobs {
        dpop: true,
        ..Knobs::default()
    })
    .await;
    let key = DpopKey::generate().unwrap();
    let jkt = key.thumbprint().to_owned();
    let store = Arc::new(MemoryTokenStore::default());
    let client = code_client(&mock, ClientCredentials::public("c"), store.clone()).with_dpop(key);
    timed(authorize(&client)).await.unwrap();
    let b = &mock.base;
    let tokens: Vec<Seen> = mock
        .seen()
        .into_iter()
        .filter(|s| s.path == "/token")
        .collect();
    assert_eq!(tokens.len(), 2, "sent again once, with the nonce");
    let first = jwt_claims(tokens[0].dpop.as_deref().unwrap());
    let second = jwt_claims(tokens[1].dpop.as_deref().unwrap());
    assert_eq!(first["htm"], "POST");
    assert_eq!(first["htu"], format!("{b}/token"));
    assert!(first.get("nonce").is_none() && first.get("ath").is_none());
    assert_eq!(second["nonce"], AS_NONCE);
    assert_ne!(first["jti"], second["jti"]);
    // The token is bound: DPoP scheme, a proof per request, never Bearer.
    let access = header_named(&client, "authorization").unwrap();
    assert!(access.starts_with("DPoP AT-"), "{access}");
    let token = access.strip_prefix("DPoP ").unwrap();
    let proof = jwt_claims(&header_named(&client, "dpop").unwrap());
    assert_eq!(proof["htm"], "POST");
    assert_eq!(proof["htu"], format!("{b}/mcp"));
    assert_eq!(
        proof["ath"],
        URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes()))
    );
    let again = jwt_claims(&header_named(&client, "dpop").unwrap());
    assert_ne!(proof["jti"], again["jti"], "a fresh proof per request");
    assert_eq!(timed(probe(&client)).await, None);
    let stored = store
        .load(&TokenKey {
            issuer: b.clone(),
            resource: format!("{b}/mcp"),
        })
        .unwrap();
    assert_eq!(stored.dpop_jkt.as_deref(), Some(jkt.as_str()));
    // The resource server's nonce: kept and put in the next proofs; the same one again is a
    // refusal, and no nonce at all is one too.
    assert_eq!(
        timed(client.recover(&use_dpop_nonce(Some("rs-1")))).await,
        Ok(true)
    );
    assert_eq!(
        jwt_claims(&header_named(&client, "dpop").unwrap())["nonce"],
        "rs-1"
    );
    assert_eq!(
        timed(client.recover(&use_dpop_nonce(Some("rs-1")))).await,
        Err(AuthError::DpopNonceRefused)
    );
    client.succeeded().await;
    assert_eq!(
        timed(client.recover(&use_dpop_nonce(None))).await,
        Err(AuthError::DpopNonceRefused)
    );
}

/// DPoP is used only where both sides take it: without `with_dpop` the same server issues a
/// bearer token (no proof is sent); with a key but a server that does not list `ES256`, no
/// proof either. A stored token bound to another key is never sent: a new grant replaces it.
#[tokio::test]
async fn rfc9449_dpop_only_when_both_sides_take_it_and_only_with_its_key() {
    let mock = start(Knobs {
        dpop: true,
        ..Knobs::default()
    })
    .await;
    let plain = code_client(
        &mock,
        ClientCredentials::public("c"),
        Arc::new(MemoryTokenStore::default()),
    );
    timed(authorize(&plain)).await.unwrap();
    assert!(header_of(&plain).unwrap().starts_with("Bearer "));
    assert!(mock.seen().iter().all(|s| s.dpop.is_none()));

    let no_dpop_server = start(Knobs::default()).await;
    let keyed = code_client(
        &no_dpop_server,
        ClientCredentials::public("c"),
        Arc::new(MemoryTokenStore::default()),
    )
    .with_dpop(DpopKey::generate().unwrap());
    timed(authorize(&keyed)).await.unwrap();
    assert!(header_of(&keyed).unwrap().starts_with("Bearer "));
    assert_eq!(header_named(&keyed, "dpop"), None);
    assert!(no_dpop_server.seen().iter().all(|s| s.dpop.is_none()));

    // A token bound to a key of an earlier run.
    let b = &mock.base;
    let key = TokenKey {
        issuer: b.clone(),
        resource: format!("{b}/mcp"),
    };
    let store = Arc::new(MemoryTokenStore::default());
    store.save(
        &key,
        Tokens {
            access_token: Secret::new("OLD-BOUND"),
            refresh_token: Some(Secret::new("OLD-REFRESH")),
            expires_at: None,
            scope: None,
            dpop_jkt: Some("another-key-thumbprint".into()),
        },
    );
    let fresh = code_client(&mock, ClientCredentials::public("c"), store.clone())
        .with_dpop(DpopKey::generate().unwrap());
    let before = mock.seen().len();
    timed(authorize(&fresh)).await.unwrap();
    let access = header_named(&fresh, "authorization").unwrap();
    assert!(access.starts_with("DPoP AT-"), "{access}");
    let later: Vec<Seen> = mock.seen().into_iter().skip(before).collect();
    assert!(later.iter().any(|s| s.path == "/authorize"), "a new grant");
    assert!(
        later.iter().all(|s| !s.form.contains_key("refresh_token")),
        "the bound refresh token is not used"
    );
    assert_ne!(store.load(&key).unwrap().access_token.expose(), "OLD-BOUND");
}
