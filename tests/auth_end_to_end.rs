//! End to end, all on loopback: our OAuth client authorises against our `AuthLayer`-protected
//! server through a local authorization server written here (RFC 8414 metadata, a JWKS,
//! an authorize endpoint that approves and redirects, a token endpoint that checks PKCE and
//! `resource` and issues a signed `at+jwt`), with the loopback-listener user step standing in
//! for the browser's return. Then an MRTR chain runs under the token's principal, and another
//! principal's token cannot continue it (D36, D44, I6, RFC 8252 §7.3).
#![forbid(unsafe_code)]
#![cfg(all(feature = "auth", feature = "client-auth"))]

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use hyper::{Request, Response, StatusCode};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use p256::pkcs8::EncodePrivateKey as _;
use serde_json::{json, Map, Value};
use sha2::Digest as _;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tower::Layer as _;

use strict_mcp::client::auth::{
    ClientCredentials, ClientIdentity, DialingFetcher, Fetcher, Grant, LoopbackUserStep,
    MemoryTokenStore, OAuthClient, OAuthConfig,
};
use strict_mcp::client::http::HttpTransport;
use strict_mcp::client::{CallOptions, Client, ClientOptions, ConnectError, Round, RoundInput};
use strict_mcp::core::RegistryBuilder;
use strict_mcp::server::auth::{AuthConfig, AuthLayer, JwtVerifier};
use strict_mcp::server::http::{HttpConfig, McpHttp};
use strict_mcp::server::{Server, ServerOptions};

mod support;
use support::auth::{greet, whoami};

/// Every exchange of the test is bounded by this.
const STEP: Duration = Duration::from_secs(20);

/// The machine client the authorization server knows (client credentials grant).
const MACHINE_CLIENT: &str = "ts-machine";
/// Its secret (`client_secret_basic`).
const MACHINE_SECRET: &str = "ts-machine-secret";

// ---------------------------------------------------------------------------------------------
// The authorization server

struct AuthServer {
    issuer: String,
    key: EncodingKey,
    jwk: Value,
    /// The subject the next approval is for (who "signed in").
    subject: Mutex<String>,
    /// Codes issued and not yet redeemed: code -> what the token request must match.
    codes: Mutex<HashMap<String, Pending>>,
    issued: AtomicUsize,
}

struct Pending {
    challenge: String,
    redirect_uri: String,
    resource: String,
    client_id: String,
    scope: Option<String>,
    subject: String,
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn form(text: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for (k, v) in form_urlencoded::parse(text.as_bytes()) {
        assert!(
            out.insert(k.into_owned(), v.into_owned()).is_none(),
            "a repeated parameter"
        );
    }
    out
}

fn json_response(status: StatusCode, body: &Value) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body.to_string())));
    *r.status_mut() = status;
    r.headers_mut()
        .insert("content-type", "application/json".parse().unwrap());
    r
}

impl AuthServer {
    fn new(issuer: String) -> Self {
        let secret = loop {
            let mut bytes = [0u8; 32];
            getrandom::getrandom(&mut bytes).unwrap();
            if let Ok(k) = p256::SecretKey::from_slice(&bytes) {
                break k;
            }
        };
        let der = secret.to_pkcs8_der().unwrap();
        let point = p256::elliptic_curve::sec1::ToEncodedPoint::to_encoded_point(
            &secret.public_key(),
            false,
        );
        AuthServer {
            issuer,
            key: EncodingKey::from_ec_der(der.as_bytes()),
            jwk: json!({"kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": "as-1",
                "x": b64(point.x().unwrap()), "y": b64(point.y().unwrap())}),
            subject: Mutex::new("alice".into()),
            codes: Mutex::new(HashMap::new()),
            issued: AtomicUsize::new(0),
        }
    }

    async fn handle(&self, request: Request<hyper::body::Incoming>) -> Response<Full<Bytes>> {
        let path = request.uri().path().to_owned();
        let query = request.uri().query().unwrap_or("").to_owned();
        let method = request.method().clone();
        let basic = request
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = request.into_body().collect().await.unwrap().to_bytes();
        match (method.as_str(), path.as_str()) {
            ("GET", "/.well-known/oauth-authorization-server") => json_response(
                StatusCode::OK,
                &json!({
                    "issuer": self.issuer,
                    "authorization_endpoint": format!("{}/authorize", self.issuer),
                    "token_endpoint": format!("{}/token", self.issuer),
                    "jwks_uri": format!("{}/jwks", self.issuer),
                    "response_types_supported": ["code"],
                    "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
                    "code_challenge_methods_supported": ["S256"],
                    "token_endpoint_auth_methods_supported": ["none", "client_secret_basic"],
                    "authorization_response_iss_parameter_supported": true,
                }),
            ),
            ("GET", "/jwks") => json_response(StatusCode::OK, &json!({"keys": [self.jwk]})),
            ("GET", "/authorize") => self.authorize(&form(&query)),
            ("POST", "/token") => {
                let f = form(std::str::from_utf8(&body).unwrap());
                if f.get("grant_type").map(String::as_str) == Some("client_credentials") {
                    self.client_credentials(&f, basic.as_deref())
                } else {
                    self.token(&f)
                }
            }
            _ => json_response(StatusCode::NOT_FOUND, &json!({})),
        }
    }

    /// Approves at once (the user "signed in" as `subject`) and redirects with a code.
    fn authorize(&self, q: &HashMap<String, String>) -> Response<Full<Bytes>> {
        assert_eq!(q["response_type"], "code");
        assert_eq!(q["code_challenge_method"], "S256");
        let mut code = [0u8; 16];
        getrandom::getrandom(&mut code).unwrap();
        let code = b64(&code);
        self.codes.lock().unwrap().insert(
            code.clone(),
            Pending {
                challenge: q["code_challenge"].clone(),
                redirect_uri: q["redirect_uri"].clone(),
                resource: q["resource"].clone(),
                client_id: q["client_id"].clone(),
                scope: q.get("scope").cloned(),
                subject: self.subject.lock().unwrap().clone(),
            },
        );
        let mut location = form_urlencoded::Serializer::new(String::new());
        location
            .append_pair("code", &code)
            .append_pair("state", &q["state"])
            .append_pair("iss", &self.issuer);
        let mut r = Response::new(Full::new(Bytes::new()));
        *r.status_mut() = StatusCode::FOUND;
        r.headers_mut().insert(
            "location",
            format!("{}?{}", q["redirect_uri"], location.finish())
                .parse()
                .unwrap(),
        );
        r
    }

    /// The client credentials grant for the one machine client (`MACHINE_CLIENT`, its secret
    /// by `client_secret_basic`): a token for the `resource` asked for (RFC 8707), subject the
    /// client itself.
    fn client_credentials(
        &self,
        f: &HashMap<String, String>,
        basic: Option<&str>,
    ) -> Response<Full<Bytes>> {
        let refuse = |status, error: &str| json_response(status, &json!({"error": error}));
        let expected = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD
                .encode(format!("{MACHINE_CLIENT}:{MACHINE_SECRET}"))
        );
        if basic != Some(expected.as_str()) {
            return refuse(StatusCode::UNAUTHORIZED, "invalid_client");
        }
        let Some(resource) = f.get("resource") else {
            return refuse(StatusCode::BAD_REQUEST, "invalid_target");
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let claims = json!({
            "iss": self.issuer, "sub": MACHINE_CLIENT, "aud": resource, "scope": "mcp:use",
            "client_id": MACHINE_CLIENT, "iat": now, "exp": now + 600,
        });
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some("as-1".into());
        header.typ = Some("at+jwt".into());
        let token = jsonwebtoken::encode(&header, &claims, &self.key).unwrap();
        self.issued.fetch_add(1, Ordering::SeqCst);
        json_response(
            StatusCode::OK,
            &json!({"access_token": token, "token_type": "Bearer", "expires_in": 600,
                "scope": "mcp:use"}),
        )
    }

    /// Redeems a code once: PKCE S256, the same redirect URI, client and resource (RFC 8707).
    fn token(&self, f: &HashMap<String, String>) -> Response<Full<Bytes>> {
        let refuse = |error: &str| json_response(StatusCode::BAD_REQUEST, &json!({"error": error}));
        if f.get("grant_type").map(String::as_str) != Some("authorization_code") {
            return refuse("unsupported_grant_type");
        }
        let Some(pending) = self.codes.lock().unwrap().remove(&f["code"]) else {
            return refuse("invalid_grant");
        };
        let verifier = f.get("code_verifier").cloned().unwrap_or_default();
        if b64(&sha2::Sha256::digest(verifier.as_bytes())) != pending.challenge
            || f.get("redirect_uri") != Some(&pending.redirect_uri)
            || f.get("client_id") != Some(&pending.client_id)
            || f.get("resource") != Some(&pending.resource)
        {
            return refuse("invalid_grant");
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let scope = pending.scope.clone().unwrap_or_default();
        let claims = json!({
            "iss": self.issuer, "sub": pending.subject, "aud": pending.resource,
            "scope": scope, "client_id": pending.client_id, "iat": now, "exp": now + 600,
        });
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some("as-1".into());
        header.typ = Some("at+jwt".into());
        let token = jsonwebtoken::encode(&header, &claims, &self.key).unwrap();
        self.issued.fetch_add(1, Ordering::SeqCst);
        json_response(
            StatusCode::OK,
            &json!({"access_token": token, "token_type": "Bearer", "expires_in": 600,
                "scope": scope}),
        )
    }
}

/// Serves `handle` on `listener` until the test ends (each connection bounded by the test).
fn serve<F, Fut>(listener: tokio::net::TcpListener, handle: F)
where
    F: Fn(Request<hyper::body::Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = Response<Full<Bytes>>> + Send + 'static,
{
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let handle = handle.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |r| {
                    let handle = handle.clone();
                    async move { Ok::<_, Infallible>(handle(r).await) }
                });
                let _ = tokio::time::timeout(
                    STEP,
                    hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service),
                )
                .await;
            });
        }
    });
}

// ---------------------------------------------------------------------------------------------
// The protected MCP server

fn mcp_server() -> Server {
    let registry = RegistryBuilder::new()
        .tool(whoami())
        .prompt(greet(|answer, inv| {
            // The elicitation answer, `{"action":"accept","content":{"name":…}}`.
            let answer: Value = serde_json::from_str(answer.get()).unwrap_or_default();
            format!(
                "Hello {} from {}",
                answer["content"]["name"].as_str().unwrap_or("?"),
                inv.caller().principal().unwrap_or("nobody")
            )
        }))
        .build()
        .unwrap();
    Server::new(registry, ServerOptions::new().mode("direct")).unwrap()
}

/// Both servers, listening; returns the MCP URL and the authorization server.
async fn start() -> (String, Arc<AuthServer>) {
    let as_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", as_listener.local_addr().unwrap());
    let auth_server = Arc::new(AuthServer::new(issuer.clone()));
    let handler = auth_server.clone();
    serve(as_listener, move |r| {
        let handler = handler.clone();
        async move { handler.handle(r).await }
    });

    let mcp_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = mcp_listener.local_addr().unwrap();
    let resource = format!("http://{addr}/mcp");
    let config = AuthConfig::builder(&resource)
        .authorization_server(&issuer)
        .scopes_supported(["mcp:use"])
        .require_scopes(["mcp:use"])
        .build()
        .unwrap();
    let verifier = JwtVerifier::builder(&resource)
        .issuer(&issuer)
        .jwks(
            format!("{issuer}/jwks"),
            strict_mcp::server::auth::DialingFetcher::for_endpoint(&format!("{issuer}/jwks"))
                .unwrap(),
        )
        .build()
        .unwrap();
    let service = AuthLayer::new(config, verifier).layer(McpHttp::new(
        mcp_server(),
        HttpConfig {
            path: Some("/mcp".into()),
            ..HttpConfig::default()
        },
    ));
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = mcp_listener.accept().await else {
                return;
            };
            let service = service.clone();
            tokio::spawn(async move {
                let _ = tokio::time::timeout(
                    STEP,
                    hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service),
                )
                .await;
            });
        }
    });
    (resource, auth_server)
}

// ---------------------------------------------------------------------------------------------
// The browser

/// One raw HTTP/1.1 GET on loopback; returns the status and the `Location` header.
async fn browser_get(url: &str) -> (u16, Option<String>) {
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, target) = rest.split_at(rest.find('/').unwrap());
    let mut stream = tokio::net::TcpStream::connect(authority).await.unwrap();
    let request =
        format!("GET {target} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(STEP, stream.read_to_end(&mut answer))
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text.split(' ').nth(1).unwrap().parse().unwrap();
    let location = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("location: ")
                .or_else(|| l.strip_prefix("Location: "))
        })
        .map(str::to_owned);
    (status, location)
}

/// A loopback user step whose "browser" follows the authorization URL to the redirect and
/// delivers it to the listener, recording each status it saw.
fn loopback_step(seen: Arc<Mutex<Vec<u16>>>) -> Arc<LoopbackUserStep> {
    let step = LoopbackUserStep::bind()
        .unwrap()
        .wait(STEP)
        .on_url(move |url| {
            let url = url.to_owned();
            let seen = seen.clone();
            tokio::spawn(async move {
                let (status, location) = browser_get(&url).await;
                seen.lock().unwrap().push(status);
                let (status, _) = browser_get(&location.expect("a redirect")).await;
                seen.lock().unwrap().push(status);
            });
        });
    Arc::new(step)
}

/// An OAuth client for `url` that authorises through a fresh loopback step.
async fn authorised(url: &str) -> (OAuthClient, Arc<Mutex<Vec<u16>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let step = loopback_step(seen.clone());
    let fetcher: Arc<dyn Fetcher> = Arc::new(DialingFetcher::for_server(url).unwrap());
    let config = OAuthConfig {
        identity: ClientIdentity::registered(ClientCredentials::public("e2e-client")),
        grant: Grant::AuthorizationCode {
            redirect_uri: step.redirect_uri(),
            user_step: step,
        },
        store: Arc::new(MemoryTokenStore::default()),
    };
    let oauth = OAuthClient::new(fetcher, url, config).unwrap();
    // The first connection is refused with 401 and the layer's challenge; that report of the
    // transport is all the client acts on (it asks nothing again by itself).
    let transport = HttpTransport::new(url, Some(oauth.decorator())).unwrap();
    let refused = match Client::connect(Arc::new(transport), ClientOptions::default()).await {
        Err(ConnectError::Discover(inner)) => inner,
        other => panic!("expected the refusal, got {:?}", other.map(|_| ())),
    };
    let recovered = tokio::time::timeout(STEP, oauth.recover(&refused))
        .await
        .expect("authorised in time")
        .expect("authorised");
    assert!(recovered, "a 401 is an authorization refusal");
    (oauth, seen)
}

async fn connect(url: &str, oauth: &OAuthClient) -> Client {
    let transport = HttpTransport::new(url, Some(oauth.decorator())).unwrap();
    tokio::time::timeout(
        STEP,
        Client::connect(Arc::new(transport), ClientOptions::default()),
    )
    .await
    .unwrap()
    .expect("connected with the token")
}

fn elicitation() -> CallOptions {
    CallOptions {
        capabilities: Some(json!({"elicitation": {"form": {}}})),
        ..CallOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d44_our_client_authorises_against_our_layer_through_the_loopback_step() {
    let (url, auth_server) = start().await;
    // Without a token the server refuses: the client has something to authorise for.
    let bare = HttpTransport::new(&url, None).unwrap();
    assert!(Client::connect(Arc::new(bare), ClientOptions::default())
        .await
        .is_err());

    let (oauth, seen) = authorised(&url).await;
    // The browser saw the approval redirect (302) and the listener's page (200).
    assert_eq!(*seen.lock().unwrap(), [302, 200]);
    assert_eq!(auth_server.issued.load(Ordering::SeqCst), 1);
    let client = connect(&url, &oauth).await;
    let outcome = client
        .call("whoami", Some(Map::new()), &CallOptions::default())
        .await
        .unwrap();
    let text = format!("{outcome:?}");
    assert!(
        text.contains("alice") && text.contains("mcp:use"),
        "the tool ran as the token's subject with its scope: {text}"
    );
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn i6_an_mrtr_chain_is_bound_to_the_tokens_principal_end_to_end() {
    let (url, auth_server) = start().await;
    let (alice, _) = authorised(&url).await;
    *auth_server.subject.lock().unwrap() = "bob".into();
    let (bob, _) = authorised(&url).await;
    assert_eq!(auth_server.issued.load(Ordering::SeqCst), 2);
    let alice_client = connect(&url, &alice).await;
    let bob_client = connect(&url, &bob).await;

    let first = alice_client
        .get_prompt_round("greet", None, RoundInput::first(), &elicitation())
        .await
        .unwrap();
    let Round::InputRequired(asked) = first else {
        panic!("the prompt asks for input first: {first:?}");
    };
    let mut answer = Map::new();
    answer.insert(
        "name".into(),
        json!({"action": "accept", "content": {"name": "Ada"}}),
    );
    let next = RoundInput::try_answer(&asked.result, answer).unwrap();

    // Bob holds a valid token of his own, but Alice's continuation is not his.
    let stolen = bob_client
        .get_prompt_round("greet", None, next.clone(), &elicitation())
        .await;
    let refused = format!("{:?}", stolen.expect_err("refused for another principal"));
    assert!(refused.contains("requestState"), "{refused}");

    // Alice's own continuation completes, still as Alice.
    let done = alice_client
        .get_prompt_round("greet", None, next, &elicitation())
        .await
        .unwrap();
    let Round::Complete(result) = done else {
        panic!("complete after the answer: {done:?}");
    };
    let shown = format!("{result:?}");
    assert!(shown.contains("Hello Ada from alice"), "{shown}");
    alice_client.close().await;
    bob_client.close().await;
}

// ---------------------------------------------------------------------------------------------
// The command line: `--oauth`

/// A fresh directory for the command's config, removed on drop.
struct ConfigHome(std::path::PathBuf);
impl Drop for ConfigHome {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `strict-mcp tools call whoami --oauth …` with its config in `home`; when the command
/// prints an authorization URL, plays the browser. Returns the exit code and stdout.
async fn cli_whoami(url: &str, home: &std::path::Path) -> (Option<i32>, String, Vec<u16>) {
    use tokio::io::AsyncBufReadExt as _;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_strict-mcp"))
        .args(["tools", "call", "whoami", "--args", "{}", "--url", url])
        .args([
            "--oauth",
            "--oauth-client-id",
            "e2e-client",
            "--timeout",
            "20",
        ])
        .env("XDG_CONFIG_HOME", home)
        .env_remove("NO_COLOR")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let browsed = tokio::spawn(async move {
        let mut seen = Vec::new();
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if line.starts_with("http://127.0.0.1:") {
                let (status, location) = browser_get(&line).await;
                seen.push(status);
                let (status, _) = browser_get(&location.expect("a redirect")).await;
                seen.push(status);
            }
        }
        seen
    });
    let output = tokio::time::timeout(STEP, child.wait_with_output())
        .await
        .expect("the command ends in time")
        .unwrap();
    let seen = browsed.await.unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        seen,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_oauth_authorises_once_and_keeps_the_token_in_a_0600_file() {
    use std::os::unix::fs::PermissionsExt as _;
    let (url, auth_server) = start().await;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let home = ConfigHome(std::env::temp_dir().join(format!(
        "strict-mcp-cli-oauth-{}-{nanos}",
        std::process::id()
    )));

    let (code, stdout, seen) = cli_whoami(&url, &home.0).await;
    assert_eq!(code, Some(0), "{stdout}");
    assert!(stdout.contains("alice"), "{stdout}");
    assert_eq!(seen, [302, 200], "one trip through the browser");
    assert_eq!(auth_server.issued.load(Ordering::SeqCst), 1);
    let file = home.0.join("strict-mcp/tokens.json");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let dir_mode = std::fs::metadata(home.0.join("strict-mcp"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(dir_mode, 0o700);

    // The second run uses the stored token: no browser, no new token.
    let (code, stdout, seen) = cli_whoami(&url, &home.0).await;
    assert_eq!(code, Some(0), "{stdout}");
    assert!(stdout.contains("alice"), "{stdout}");
    assert!(seen.is_empty(), "{seen:?}");
    assert_eq!(auth_server.issued.load(Ordering::SeqCst), 1);
}

/// D44 interop: the TypeScript SDK v2 client (`@modelcontextprotocol/client`, pinned in
/// `interop/node`) authorises against our protected server with its own OAuth provider
/// (`ClientCredentialsProvider`): it reads our 401 challenge, our Protected Resource Metadata
/// and the test's authorization server metadata, obtains a token for our resource and calls
/// `whoami`, which runs as the token's subject. The node process is bounded by `STEP` and
/// killed on drop; with `CI=true` a missing peer fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d44_the_typescript_sdk_client_authorises_against_our_layer() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let node = root.join(".interop/node/bin/node");
    let script = root.join("interop/node/ts_oauth_client.mjs");
    let sdk = root.join("interop/node/node_modules/@modelcontextprotocol/client/package.json");
    if !node.exists() || !sdk.exists() {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
        assert!(
            !ci,
            "TypeScript peer missing under CI=true (run .ci/install-peers)"
        );
        eprintln!("SKIP: the TypeScript peer is not installed (run .ci/install-peers)");
        return;
    }
    let (url, auth_server) = start().await;
    let issuer = auth_server.issuer.clone();
    let output = tokio::time::timeout(
        STEP,
        tokio::process::Command::new(&node)
            .arg(&script)
            .args([&url, MACHINE_CLIENT, MACHINE_SECRET, &issuer, "whoami"])
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the TypeScript client finished in time")
    .expect("node ran");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let line: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(line["ok"], true, "{line}");
    // The typed tool's output, as this server wraps it (`value`).
    let text = line["result"]["structuredContent"]["value"].clone();
    assert_eq!(
        text,
        json!({"principal": MACHINE_CLIENT, "scope": "mcp:use"}),
        "{line}"
    );
    assert_eq!(auth_server.issued.load(Ordering::SeqCst), 1);
}

/// D44 interop, the other way: our client (`OAuthClient` through `DialingFetcher` and the
/// loopback user step) authorises against a protected server built from the TypeScript SDK
/// v2's own auth support (`interop/node/ts_protected_server.mjs`: `requireBearerAuth`,
/// `buildOAuthProtectedResourceMetadata`, tokens verified against the test authorization
/// server's JWKS), then calls its `whoami`, which sees our token's client and scope. The node
/// process is bounded by `STEP` and killed on drop; with `CI=true` a missing peer fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d44_our_client_authorises_against_a_typescript_sdk_protected_server() {
    use tokio::io::AsyncBufReadExt as _;
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let node = root.join(".interop/node/bin/node");
    let sdk = root.join("interop/node/node_modules/@modelcontextprotocol/server/package.json");
    if !node.exists() || !sdk.exists() {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
        assert!(
            !ci,
            "TypeScript peer missing under CI=true (run .ci/install-peers)"
        );
        eprintln!("SKIP: the TypeScript peer is not installed (run .ci/install-peers)");
        return;
    }
    let (_, auth_server) = start().await;
    let mut child = tokio::process::Command::new(&node)
        .arg(root.join("interop/node/ts_protected_server.mjs"))
        .arg(&auth_server.issuer)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node started");
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(STEP, lines.next_line())
        .await
        .expect("the TypeScript server listened in time")
        .unwrap()
        .expect("a listening line");
    let listening: Value = serde_json::from_str(&first).unwrap();
    let url = listening["listening"].as_str().unwrap().to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");

    let (oauth, seen) = authorised(&url).await;
    assert_eq!(*seen.lock().unwrap(), [302, 200]);
    let client = connect(&url, &oauth).await;
    let outcome = client
        .call("whoami", Some(Map::new()), &CallOptions::default())
        .await
        .unwrap();
    let text = format!("{outcome:?}");
    assert!(text.contains("e2e-client mcp:use"), "{text}");
    assert_eq!(auth_server.issued.load(Ordering::SeqCst), 1);
    client.close().await;
    child.kill().await.unwrap();
}
