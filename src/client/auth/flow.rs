//! Obtaining tokens: authorization code with PKCE `S256` (the user step behind [`UserStep`]),
//! refresh with rotation, and the client credentials grant; RFC 8707 `resource` on every
//! authorization and token request, `state` and RFC 9207 `iss` checked before a code is used.

use std::fmt;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use serde::Deserialize;
use sha2::{Digest as _, Sha256};

use super::discovery::{check_endpoint, AuthorizationServerMetadata};
use super::dpop::{Dpop, NonceFrom};
use super::fetch::{BoxFuture, FetchMethod, FetchRequest, Fetcher};
use super::AuthError;

/// Random bytes in a PKCE verifier: 32 bytes give the 43-character minimum of RFC 7636 §4.1
/// with 256 bits of entropy.
pub const PKCE_VERIFIER_BYTES: usize = 32;

/// Random bytes in a `state` value: 128 bits, unguessable per authorization request.
pub const STATE_BYTES: usize = 16;

/// Largest token endpoint answer read: a token response is a few KiB at most.
pub const MAX_TOKEN_RESPONSE_BYTES: usize = 64 * 1024;

/// A secret string (token, code, verifier, client secret): its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps `value`.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The secret itself, for the one place that must send it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

fn random_token(bytes: usize) -> Result<String, AuthError> {
    let mut buffer = vec![0u8; bytes];
    getrandom::getrandom(&mut buffer).map_err(|_| AuthError::Random)?;
    Ok(URL_SAFE_NO_PAD.encode(buffer))
}

/// A PKCE verifier and its `S256` challenge (RFC 7636 §4.2).
#[derive(Clone, PartialEq, Eq)]
pub struct Pkce {
    verifier: Secret,
    challenge: String,
}

impl Pkce {
    /// A fresh verifier of [`PKCE_VERIFIER_BYTES`] random bytes.
    ///
    /// # Errors
    /// [`AuthError::Random`] when the system's random source fails.
    pub fn generate() -> Result<Pkce, AuthError> {
        Ok(Pkce::from_verifier(Secret::new(random_token(
            PKCE_VERIFIER_BYTES,
        )?)))
    }

    /// The challenge for a given verifier: `BASE64URL(SHA256(verifier))`.
    pub fn from_verifier(verifier: Secret) -> Pkce {
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.expose().as_bytes()));
        Pkce {
            verifier,
            challenge,
        }
    }

    /// The verifier, sent only to the token endpoint.
    pub fn verifier(&self) -> &Secret {
        &self.verifier
    }

    /// The `code_challenge`.
    pub fn challenge(&self) -> &str {
        &self.challenge
    }
}

impl fmt::Debug for Pkce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pkce")
            .field("challenge", &self.challenge)
            .finish_non_exhaustive()
    }
}

/// How the client authenticates at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenAuthMethod {
    /// A public client: `client_id` in the body, no secret.
    None,
    /// HTTP Basic with the form-encoded id and secret (RFC 6749 §2.3.1).
    ClientSecretBasic,
    /// `client_id` and `client_secret` in the body.
    ClientSecretPost,
    /// A signed JWT assertion (RFC 7523 §2.2) in `client_assertion`, signed `ES256` with the
    /// private key in [`ClientCredentials::client_secret`] (PKCS#8 PEM); nothing secret is
    /// sent.
    PrivateKeyJwt,
}

/// How long a private-key JWT client assertion is valid: one token request, with room for
/// clock skew; a captured assertion is useless soon after.
pub const CLIENT_ASSERTION_LIFETIME: Duration = Duration::from_secs(60);

/// The `client_assertion_type` of a JWT assertion (RFC 7523 §2.2).
const JWT_BEARER_ASSERTION: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// A fresh client assertion for `client_id` at the authorization server `issuer` (its
/// audience): `iss` = `sub` = the client, `iat`, `exp` = `iat` + [`CLIENT_ASSERTION_LIFETIME`]
/// and a random `jti`, signed `ES256` with `pem`.
fn client_assertion(client_id: &str, issuer: &str, pem: &Secret) -> Result<String, AuthError> {
    // The PEM armour (RFC 7468) around the PKCS#8 DER; the DER itself is parsed by the
    // signing library.
    let text = pem.expose().trim();
    let body = text
        .strip_prefix("-----BEGIN PRIVATE KEY-----")
        .and_then(|rest| rest.strip_suffix("-----END PRIVATE KEY-----"))
        .ok_or(AuthError::InvalidSigningKey)?;
    let der: String = body.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    let der = STANDARD
        .decode(der)
        .map_err(|_| AuthError::InvalidSigningKey)?;
    let key = jsonwebtoken::EncodingKey::from_ec_der(&der);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let claims = serde_json::json!({
        "iss": client_id,
        "sub": client_id,
        "aud": issuer,
        "iat": now,
        "exp": now + CLIENT_ASSERTION_LIFETIME.as_secs(),
        "jti": random_token(STATE_BYTES)?,
    });
    let header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
    jsonwebtoken::encode(&header, &claims, &key).map_err(|_| AuthError::InvalidSigningKey)
}

impl TokenAuthMethod {
    /// The RFC 7591 name.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenAuthMethod::None => "none",
            TokenAuthMethod::ClientSecretBasic => "client_secret_basic",
            TokenAuthMethod::ClientSecretPost => "client_secret_post",
            TokenAuthMethod::PrivateKeyJwt => "private_key_jwt",
        }
    }
}

/// The client's identity at the authorization server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientCredentials {
    /// `client_id` (pre-registered, registered, or a Client ID Metadata Document URL).
    pub client_id: String,
    /// The secret, for the two `client_secret_*` methods; for `private_key_jwt` the signing
    /// key (PKCS#8 PEM, P-256).
    pub client_secret: Option<Secret>,
    /// How to authenticate at the token endpoint.
    pub auth_method: TokenAuthMethod,
}

impl ClientCredentials {
    /// A public client (`none`).
    pub fn public(client_id: impl Into<String>) -> Self {
        ClientCredentials {
            client_id: client_id.into(),
            client_secret: None,
            auth_method: TokenAuthMethod::None,
        }
    }

    /// A confidential client authenticating with a private-key JWT (RFC 7523) signed `ES256`
    /// with `pem` (a PKCS#8 PEM P-256 private key).
    pub fn private_key_jwt(client_id: impl Into<String>, pem: impl Into<String>) -> Self {
        ClientCredentials {
            client_id: client_id.into(),
            client_secret: Some(Secret::new(pem)),
            auth_method: TokenAuthMethod::PrivateKeyJwt,
        }
    }

    /// A confidential client using `method` with `secret`.
    pub fn confidential(
        client_id: impl Into<String>,
        secret: impl Into<String>,
        method: TokenAuthMethod,
    ) -> Self {
        ClientCredentials {
            client_id: client_id.into(),
            client_secret: Some(Secret::new(secret)),
            auth_method: method,
        }
    }
}

/// Tokens from the token endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tokens {
    /// The bearer access token.
    pub access_token: Secret,
    /// The refresh token, if one was issued (or kept from before a rotation-less refresh).
    pub refresh_token: Option<Secret>,
    /// When the access token expires, if the server said.
    pub expires_at: Option<Instant>,
    /// The granted scopes, if the server said.
    pub scope: Option<String>,
    /// For a DPoP-bound token (`token_type: DPoP`, RFC 9449 §5): the thumbprint of the key it
    /// is bound to. It is sent only with proofs of that key, and useless without it.
    pub dpop_jkt: Option<String>,
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    token_type: String,
    #[serde(default)]
    expires_in: Option<u64>,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    scope: Option<String>,
}

#[derive(Deserialize)]
struct TokenErrorResponse {
    error: String,
}

/// Longest `error` code kept from an endpoint's error answer; longer ones are cut, so an error
/// message stays one short line.
pub const MAX_ERROR_CODE_CHARS: usize = 64;

fn error_code(code: &str) -> String {
    code.chars()
        .filter(|c| c.is_ascii_graphic())
        .take(MAX_ERROR_CODE_CHARS)
        .collect()
}

/// One authorization request in flight: the URL to send the user to and what its answer is
/// checked against. Its `Debug` never shows the verifier.
#[derive(Debug, Clone)]
pub struct AuthorizationRequest {
    /// The full authorization URL.
    pub url: String,
    /// The `state` sent.
    pub state: String,
    /// The PKCE pair.
    pub pkce: Pkce,
    /// The issuer recorded from the validated metadata (RFC 9207).
    pub issuer: String,
    /// Whether that server promised `iss` in every response.
    pub iss_required: bool,
    /// The `redirect_uri` sent.
    pub redirect_uri: String,
}

/// Builds the authorization URL: `response_type=code`, `client_id`, `redirect_uri`, PKCE
/// `S256`, `state`, `resource` and, when given, `scope`.
///
/// # Errors
/// [`AuthError::PkceUnsupported`] when the server does not advertise `S256` (the client
/// refuses to proceed), [`AuthError::NoAuthorizationEndpoint`], [`AuthError::Random`].
pub fn authorization_request(
    metadata: &AuthorizationServerMetadata,
    client_id: &str,
    redirect_uri: &str,
    resource: &str,
    scope: Option<&str>,
) -> Result<AuthorizationRequest, AuthError> {
    if !metadata.supports_s256() {
        return Err(AuthError::PkceUnsupported);
    }
    let endpoint = metadata
        .authorization_endpoint
        .as_deref()
        .ok_or(AuthError::NoAuthorizationEndpoint)?;
    check_endpoint(endpoint)?;
    let pkce = Pkce::generate()?;
    let state = random_token(STATE_BYTES)?;
    let mut query = form_urlencoded::Serializer::new(String::new());
    query
        .append_pair("response_type", "code")
        .append_pair("client_id", client_id)
        .append_pair("redirect_uri", redirect_uri)
        .append_pair("code_challenge", pkce.challenge())
        .append_pair("code_challenge_method", "S256")
        .append_pair("state", &state)
        .append_pair("resource", resource);
    if let Some(scope) = scope {
        query.append_pair("scope", scope);
    }
    let separator = if endpoint.contains('?') { '&' } else { '?' };
    Ok(AuthorizationRequest {
        url: format!("{endpoint}{separator}{}", query.finish()),
        state,
        pkce,
        issuer: metadata.issuer.clone(),
        iss_required: metadata.authorization_response_iss_parameter_supported == Some(true),
        redirect_uri: redirect_uri.to_owned(),
    })
}

/// Checks the authorization response (the redirect URL the user step captured) and returns
/// its code. `iss` is checked first (RFC 9207 §2.4 as the spec tables it: a present `iss` must
/// equal the recorded issuer exactly; an absent one is refused when the server promised it),
/// so an error response from a mixed-up server is never acted on; then `state`.
///
/// # Errors
/// [`AuthError::CallbackIssuer`], [`AuthError::StateMismatch`],
/// [`AuthError::AuthorizationDenied`] (the server's `error` code), [`AuthError::NoCode`].
pub fn authorization_code(
    request: &AuthorizationRequest,
    callback_url: &str,
) -> Result<Secret, AuthError> {
    let without_fragment = callback_url.split('#').next().unwrap_or_default();
    let query = without_fragment
        .split_once('?')
        .map_or("", |(_, query)| query);
    let (mut iss, mut state, mut code, mut error) = (None, None, None, None);
    for (name, value) in form_urlencoded::parse(query.as_bytes()) {
        let slot = match name.as_ref() {
            "iss" => &mut iss,
            "state" => &mut state,
            "code" => &mut code,
            "error" => &mut error,
            _ => continue,
        };
        if slot.is_some() {
            return Err(AuthError::DuplicateParameter);
        }
        *slot = Some(value.into_owned());
    }
    match iss {
        Some(iss) if iss != request.issuer => return Err(AuthError::CallbackIssuer),
        None if request.iss_required => return Err(AuthError::CallbackIssuer),
        _ => {}
    }
    if state.as_deref() != Some(request.state.as_str()) {
        return Err(AuthError::StateMismatch);
    }
    if let Some(error) = error {
        return Err(AuthError::AuthorizationDenied {
            error: error_code(&error),
        });
    }
    code.map(Secret::new).ok_or(AuthError::NoCode)
}

/// How many times a token request is sent again after the authorization server answered
/// `use_dpop_nonce` with a new nonce (RFC 9449 §8): once, as the RFC has it; a server that
/// refuses the nonce it just supplied is not asked a third time.
pub const MAX_DPOP_NONCE_RETRIES: usize = 1;

/// Sends one token request with the client's authentication and reads the answer; with `dpop`
/// it carries a proof (and the server's latest nonce), is sent once more on `use_dpop_nonce`,
/// and may come back DPoP-bound.
async fn token_request(
    fetcher: &dyn Fetcher,
    metadata: &AuthorizationServerMetadata,
    client: &ClientCredentials,
    params: &[(&str, &str)],
    dpop: Option<&Dpop>,
) -> Result<Tokens, AuthError> {
    let endpoint = metadata.token_endpoint.as_str();
    check_endpoint(endpoint)?;
    let mut retries = 0;
    let response = loop {
        let mut request = token_fetch(metadata, client, params)?;
        if let Some(dpop) = dpop {
            let proof = dpop.proof(NonceFrom::AuthorizationServer, "POST", endpoint, None)?;
            request.headers.push(("dpop".into(), proof));
        }
        let response = fetcher
            .fetch(request)
            .await
            .map_err(|source| AuthError::Fetch {
                url: endpoint.to_owned(),
                source,
            })?;
        let Some(dpop) = dpop else {
            break response;
        };
        // RFC 9449 §8.2: any answer may carry the nonce for the next proofs (one that is not
        // a valid nonce is ignored, unless it is the one asked for).
        let fresh = match response.header("dpop-nonce") {
            Some(nonce) => dpop.set_nonce(NonceFrom::AuthorizationServer, nonce),
            None => Ok(false),
        };
        let asks_nonce = response.status == 400
            && serde_json::from_slice::<TokenErrorResponse>(&response.body)
                .is_ok_and(|e| e.error == "use_dpop_nonce");
        if !asks_nonce {
            break response;
        }
        if !fresh? || retries == MAX_DPOP_NONCE_RETRIES {
            return Err(AuthError::DpopNonceRefused);
        }
        retries += 1;
    };
    match response.status {
        200 => {
            let answer: TokenResponse = serde_json::from_slice(&response.body)
                .map_err(|_| AuthError::InvalidTokenResponse)?;
            let dpop_jkt = if answer.token_type.eq_ignore_ascii_case("bearer") {
                None
            } else if answer.token_type.eq_ignore_ascii_case("dpop") {
                // Only a proof's sender can be handed a DPoP token.
                let dpop = dpop.ok_or(AuthError::InvalidTokenResponse)?;
                Some(dpop.key().thumbprint().to_owned())
            } else {
                return Err(AuthError::InvalidTokenResponse);
            };
            if answer.access_token.is_empty() {
                return Err(AuthError::InvalidTokenResponse);
            }
            Ok(Tokens {
                access_token: Secret::new(answer.access_token),
                refresh_token: answer.refresh_token.map(Secret::new),
                expires_at: answer
                    .expires_in
                    .map(|s| Instant::now() + Duration::from_secs(s.min(u64::from(u32::MAX)))),
                scope: answer.scope,
                dpop_jkt,
            })
        }
        400 | 401 => {
            let error = serde_json::from_slice::<TokenErrorResponse>(&response.body)
                .map(|e| error_code(&e.error))
                .unwrap_or_else(|_| "invalid_request".to_owned());
            Err(AuthError::TokenEndpoint { error })
        }
        status => Err(AuthError::Status {
            url: endpoint.to_owned(),
            status,
        }),
    }
}

/// The token request itself, with the client's authentication (a fresh assertion each time).
fn token_fetch(
    metadata: &AuthorizationServerMetadata,
    client: &ClientCredentials,
    params: &[(&str, &str)],
) -> Result<FetchRequest, AuthError> {
    let endpoint = metadata.token_endpoint.as_str();
    let mut body = form_urlencoded::Serializer::new(String::new());
    for (name, value) in params {
        body.append_pair(name, value);
    }
    let mut basic = None;
    match client.auth_method {
        TokenAuthMethod::None => {
            body.append_pair("client_id", &client.client_id);
        }
        TokenAuthMethod::ClientSecretPost => {
            let secret = client.client_secret.as_ref().ok_or(AuthError::NoSecret)?;
            body.append_pair("client_id", &client.client_id)
                .append_pair("client_secret", secret.expose());
        }
        TokenAuthMethod::ClientSecretBasic => {
            let secret = client.client_secret.as_ref().ok_or(AuthError::NoSecret)?;
            let encode =
                |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
            let pair = format!("{}:{}", encode(&client.client_id), encode(secret.expose()));
            basic = Some(format!("Basic {}", STANDARD.encode(pair)));
        }
        TokenAuthMethod::PrivateKeyJwt => {
            let pem = client.client_secret.as_ref().ok_or(AuthError::NoSecret)?;
            let assertion = client_assertion(&client.client_id, &metadata.issuer, pem)?;
            body.append_pair("client_id", &client.client_id)
                .append_pair("client_assertion_type", JWT_BEARER_ASSERTION)
                .append_pair("client_assertion", &assertion);
        }
    }
    let mut request = FetchRequest::post_form(endpoint, body.finish(), MAX_TOKEN_RESPONSE_BYTES);
    debug_assert_eq!(request.method, FetchMethod::Post);
    if let Some(basic) = basic {
        request.headers.push(("authorization".into(), basic));
    }
    Ok(request)
}

/// Redeems an authorization code (with the verifier and `resource`; with `dpop`, a proof).
///
/// # Errors
/// As the token endpoint fails: [`AuthError::TokenEndpoint`], [`AuthError::Status`],
/// [`AuthError::InvalidTokenResponse`], [`AuthError::Fetch`].
pub async fn exchange_code(
    fetcher: &dyn Fetcher,
    metadata: &AuthorizationServerMetadata,
    client: &ClientCredentials,
    request: &AuthorizationRequest,
    code: &Secret,
    resource: &str,
    dpop: Option<&Dpop>,
) -> Result<Tokens, AuthError> {
    token_request(
        fetcher,
        metadata,
        client,
        &[
            ("grant_type", "authorization_code"),
            ("code", code.expose()),
            ("redirect_uri", &request.redirect_uri),
            ("code_verifier", request.pkce.verifier().expose()),
            ("resource", resource),
        ],
        dpop,
    )
    .await
}

/// Refreshes; a rotated refresh token replaces the old one, and the old one is kept when the
/// server issues none.
///
/// # Errors
/// As [`exchange_code`].
pub async fn refresh(
    fetcher: &dyn Fetcher,
    metadata: &AuthorizationServerMetadata,
    client: &ClientCredentials,
    refresh_token: &Secret,
    resource: &str,
    dpop: Option<&Dpop>,
) -> Result<Tokens, AuthError> {
    let mut tokens = token_request(
        fetcher,
        metadata,
        client,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token.expose()),
            ("resource", resource),
        ],
        dpop,
    )
    .await?;
    if tokens.refresh_token.is_none() {
        tokens.refresh_token = Some(refresh_token.clone());
    }
    Ok(tokens)
}

/// The client credentials grant (no user): for confidential machine clients.
///
/// # Errors
/// As [`exchange_code`].
pub async fn client_credentials(
    fetcher: &dyn Fetcher,
    metadata: &AuthorizationServerMetadata,
    client: &ClientCredentials,
    resource: &str,
    scope: Option<&str>,
    dpop: Option<&Dpop>,
) -> Result<Tokens, AuthError> {
    let mut params = vec![("grant_type", "client_credentials"), ("resource", resource)];
    if let Some(scope) = scope {
        params.push(("scope", scope));
    }
    token_request(fetcher, metadata, client, &params, dpop).await
}

/// Largest registration endpoint answer read.
pub const MAX_REGISTRATION_RESPONSE_BYTES: usize = 64 * 1024;

/// What the client registers about itself (RFC 7591 §2) when dynamic registration is opted in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistrationRequest {
    /// `client_name`.
    pub client_name: String,
    /// `redirect_uris`.
    pub redirect_uris: Vec<String>,
    /// `application_type`: `native` for CLIs and desktop apps, `web` for hosted clients.
    pub application_type: String,
}

#[derive(Deserialize)]
struct RegistrationResponse {
    client_id: String,
    #[serde(default)]
    client_secret: Option<String>,
    #[serde(default)]
    token_endpoint_auth_method: Option<String>,
}

/// Registers the client at the server's `registration_endpoint` (RFC 7591) as a public client
/// (`token_endpoint_auth_method: none`); a server that issues a secret anyway gets it back
/// with the method it names (`client_secret_basic` when it names none).
///
/// # Errors
/// [`AuthError::RegistrationUnsupported`] without an endpoint; [`AuthError::Status`],
/// [`AuthError::InvalidRegistration`], [`AuthError::Fetch`].
pub async fn register(
    fetcher: &dyn Fetcher,
    metadata: &AuthorizationServerMetadata,
    request: &RegistrationRequest,
) -> Result<ClientCredentials, AuthError> {
    let endpoint = metadata
        .registration_endpoint
        .as_deref()
        .ok_or(AuthError::RegistrationUnsupported)?;
    check_endpoint(endpoint)?;
    let body = serde_json::json!({
        "client_name": request.client_name,
        "redirect_uris": request.redirect_uris,
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": request.application_type,
    });
    let fetch = FetchRequest {
        method: FetchMethod::Post,
        url: endpoint.to_owned(),
        headers: vec![
            ("accept".into(), "application/json".into()),
            ("content-type".into(), "application/json".into()),
        ],
        body: Some(body.to_string().into_bytes()),
        max_body: MAX_REGISTRATION_RESPONSE_BYTES,
    };
    let response = fetcher
        .fetch(fetch)
        .await
        .map_err(|source| AuthError::Fetch {
            url: endpoint.to_owned(),
            source,
        })?;
    if response.status != 200 && response.status != 201 {
        return Err(AuthError::Status {
            url: endpoint.to_owned(),
            status: response.status,
        });
    }
    let answer: RegistrationResponse =
        serde_json::from_slice(&response.body).map_err(|_| AuthError::InvalidRegistration)?;
    let auth_method = match (
        answer.client_secret.is_some(),
        answer.token_endpoint_auth_method.as_deref(),
    ) {
        (false, None | Some("none")) => TokenAuthMethod::None,
        (true, None | Some("client_secret_basic")) => TokenAuthMethod::ClientSecretBasic,
        (true, Some("client_secret_post")) => TokenAuthMethod::ClientSecretPost,
        _ => return Err(AuthError::InvalidRegistration),
    };
    Ok(ClientCredentials {
        client_id: answer.client_id,
        client_secret: answer.client_secret.map(Secret::new),
        auth_method,
    })
}

/// The user's part of the code flow: take the user to `url` and return the redirect URL the
/// authorization server sent back to `redirect_uri` (query included).
pub trait UserStep: Send + Sync + 'static {
    /// Performs the step.
    fn authorize<'a>(
        &'a self,
        url: &'a str,
        redirect_uri: &'a str,
    ) -> BoxFuture<'a, Result<String, AuthError>>;
}

/// A user step with no user, for tests and automated environments: it fetches the
/// authorization URL and takes the `Location` of the redirect it answers (an authorization
/// server that approves without interaction, as test servers do).
#[derive(Clone)]
pub struct HeadlessUserStep {
    fetcher: std::sync::Arc<dyn Fetcher>,
}

impl fmt::Debug for HeadlessUserStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HeadlessUserStep").finish_non_exhaustive()
    }
}

impl HeadlessUserStep {
    /// A step dialling through `fetcher`.
    pub fn new(fetcher: std::sync::Arc<dyn Fetcher>) -> Self {
        HeadlessUserStep { fetcher }
    }
}

/// Largest body read from the authorization endpoint by [`HeadlessUserStep`]: only its
/// `Location` matters.
pub const MAX_AUTHORIZE_PAGE_BYTES: usize = 16 * 1024;

impl UserStep for HeadlessUserStep {
    fn authorize<'a>(
        &'a self,
        url: &'a str,
        redirect_uri: &'a str,
    ) -> BoxFuture<'a, Result<String, AuthError>> {
        Box::pin(async move {
            let endpoint = url.split('?').next().unwrap_or_default().to_owned();
            check_endpoint(url)?;
            let response = self
                .fetcher
                .fetch(FetchRequest::get(url, MAX_AUTHORIZE_PAGE_BYTES))
                .await
                .map_err(|source| AuthError::Fetch {
                    url: endpoint.clone(),
                    source,
                })?;
            match response.header("location") {
                Some(location) if (300..400).contains(&response.status) => {
                    if location == redirect_uri
                        || location
                            .strip_prefix(redirect_uri)
                            .is_some_and(|rest| rest.starts_with('?'))
                    {
                        Ok(location.to_owned())
                    } else {
                        Err(AuthError::UnexpectedRedirect)
                    }
                }
                _ => Err(AuthError::Status {
                    url: endpoint,
                    status: response.status,
                }),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7523 §3: signed ES256 by the client's key, `iss` = `sub` = the client, `aud` the
    /// issuer, valid for [`CLIENT_ASSERTION_LIFETIME`], a fresh `jti` each time.
    #[test]
    fn rfc7523_private_key_jwt_assertion_names_the_client_and_the_issuer() {
        use p256::elliptic_curve::sec1::ToEncodedPoint as _;
        use p256::pkcs8::EncodePrivateKey as _;
        let secret = loop {
            let mut bytes = [0u8; 32];
            getrandom::getrandom(&mut bytes).unwrap();
            if let Ok(k) = p256::SecretKey::from_slice(&bytes) {
                break k;
            }
        };
        let der = STANDARD.encode(secret.to_pkcs8_der().unwrap().as_bytes());
        let lines: Vec<&str> = der
            .as_bytes()
            .chunks(64)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        let pem = format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            lines.join("\n")
        );
        let pem = Secret::new(pem);
        let assertion = client_assertion("cid", "https://as.example.com", &pem).unwrap();
        let point = secret.public_key().to_encoded_point(false);
        let key = jsonwebtoken::DecodingKey::from_ec_components(
            &URL_SAFE_NO_PAD.encode(point.x().unwrap()),
            &URL_SAFE_NO_PAD.encode(point.y().unwrap()),
        )
        .unwrap();
        let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::ES256);
        validation.set_audience(&["https://as.example.com"]);
        validation.set_issuer(&["cid"]);
        let claims = jsonwebtoken::decode::<serde_json::Value>(&assertion, &key, &validation)
            .unwrap()
            .claims;
        assert_eq!(claims["sub"], "cid");
        let (iat, exp) = (
            claims["iat"].as_u64().unwrap(),
            claims["exp"].as_u64().unwrap(),
        );
        assert_eq!(exp - iat, CLIENT_ASSERTION_LIFETIME.as_secs());
        let again = client_assertion("cid", "https://as.example.com", &pem).unwrap();
        let again = jsonwebtoken::decode::<serde_json::Value>(&again, &key, &validation)
            .unwrap()
            .claims;
        assert_ne!(claims["jti"], again["jti"]);
        assert_eq!(
            client_assertion("cid", "https://as.example.com", &Secret::new("not a key")).err(),
            Some(AuthError::InvalidSigningKey)
        );
        assert_eq!(TokenAuthMethod::PrivateKeyJwt.as_str(), "private_key_jwt");
        assert!(
            !format!("{:?}", ClientCredentials::private_key_jwt("c", "PEM-TEXT"))
                .contains("PEM-TEXT")
        );
    }

    fn metadata() -> AuthorizationServerMetadata {
        serde_json::from_value(serde_json::json!({
            "issuer": "https://as.example.com",
            "authorization_endpoint": "https://as.example.com/authorize",
            "token_endpoint": "https://as.example.com/token",
            "code_challenge_methods_supported": ["S256"],
        }))
        .unwrap()
    }

    #[test]
    fn pkce_s256_matches_rfc7636_appendix_b() {
        let pkce = Pkce::from_verifier(Secret::new("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"));
        assert_eq!(
            pkce.challenge(),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        let fresh = Pkce::generate().unwrap();
        assert_eq!(fresh.verifier().expose().len(), 43);
        assert_ne!(fresh, Pkce::generate().unwrap());
        assert!(!format!("{fresh:?}").contains(fresh.verifier().expose()));
    }

    #[test]
    fn authorization_url_carries_pkce_state_resource_scope() {
        let request = authorization_request(
            &metadata(),
            "client-1",
            "http://127.0.0.1:9/cb",
            "https://mcp.example.com/mcp",
            Some("a b"),
        )
        .unwrap();
        let (base, query) = request.url.split_once('?').unwrap();
        assert_eq!(base, "https://as.example.com/authorize");
        let pairs: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes())
            .into_owned()
            .collect();
        let expected = [
            ("response_type", "code"),
            ("client_id", "client-1"),
            ("redirect_uri", "http://127.0.0.1:9/cb"),
            ("code_challenge", request.pkce.challenge()),
            ("code_challenge_method", "S256"),
            ("state", request.state.as_str()),
            ("resource", "https://mcp.example.com/mcp"),
            ("scope", "a b"),
        ];
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        assert_eq!(pairs, expected);
        assert!(!request.url.contains(request.pkce.verifier().expose()));
        assert!(!format!("{request:?}").contains(request.pkce.verifier().expose()));
    }

    #[test]
    fn no_s256_no_flow() {
        let mut m = metadata();
        m.code_challenge_methods_supported = None;
        assert_eq!(
            authorization_request(&m, "c", "http://127.0.0.1/cb", "https://r", None).unwrap_err(),
            AuthError::PkceUnsupported
        );
        m.code_challenge_methods_supported = Some(vec!["plain".into()]);
        assert_eq!(
            authorization_request(&m, "c", "http://127.0.0.1/cb", "https://r", None).unwrap_err(),
            AuthError::PkceUnsupported
        );
    }

    fn request(iss_required: bool) -> AuthorizationRequest {
        let mut m = metadata();
        m.authorization_response_iss_parameter_supported = Some(iss_required);
        authorization_request(&m, "c", "http://127.0.0.1/cb", "https://r", None).unwrap()
    }

    #[test]
    fn callback_iss_table_rfc9207() {
        let iss = "https%3A%2F%2Fas.example.com";
        for required in [true, false] {
            let r = request(required);
            let s = &r.state;
            let ok = authorization_code(
                &r,
                &format!("http://127.0.0.1/cb?code=C1&state={s}&iss={iss}"),
            );
            assert_eq!(ok.unwrap().expose(), "C1");
            let wrong = format!(
                "http://127.0.0.1/cb?code=C1&state={s}&iss=https%3A%2F%2Fas.example.com%2F"
            );
            assert_eq!(
                authorization_code(&r, &wrong),
                Err(AuthError::CallbackIssuer)
            );
            // A mismatched issuer's error is not acted on.
            let wrong_error =
                format!("http://127.0.0.1/cb?error=access_denied&state={s}&iss=https%3A%2F%2Fevil");
            assert_eq!(
                authorization_code(&r, &wrong_error),
                Err(AuthError::CallbackIssuer)
            );
            let absent = authorization_code(&r, &format!("http://127.0.0.1/cb?code=C1&state={s}"));
            if required {
                assert_eq!(absent, Err(AuthError::CallbackIssuer));
            } else {
                assert_eq!(absent.unwrap().expose(), "C1");
            }
        }
    }

    #[test]
    fn callback_state_error_duplicates() {
        let r = request(false);
        assert_eq!(
            authorization_code(&r, "http://127.0.0.1/cb?code=C1&state=other"),
            Err(AuthError::StateMismatch)
        );
        assert_eq!(
            authorization_code(&r, "http://127.0.0.1/cb?code=C1"),
            Err(AuthError::StateMismatch)
        );
        let s = &r.state;
        assert_eq!(
            authorization_code(
                &r,
                &format!("http://127.0.0.1/cb?error=access_denied&state={s}")
            ),
            Err(AuthError::AuthorizationDenied {
                error: "access_denied".into()
            })
        );
        assert_eq!(
            authorization_code(&r, &format!("http://127.0.0.1/cb?state={s}")),
            Err(AuthError::NoCode)
        );
        assert_eq!(
            authorization_code(&r, &format!("http://127.0.0.1/cb?code=a&code=b&state={s}")),
            Err(AuthError::DuplicateParameter)
        );
    }

    #[test]
    fn error_code_bound_at_and_past() {
        let at = "e".repeat(MAX_ERROR_CODE_CHARS);
        assert_eq!(error_code(&at), at);
        assert_eq!(error_code(&format!("{at}x")), at);
        assert_eq!(error_code("bad\ncode"), "badcode");
    }

    #[test]
    fn secrets_do_not_debug() {
        let tokens = Tokens {
            access_token: Secret::new("AT-SECRET"),
            refresh_token: Some(Secret::new("RT-SECRET")),
            expires_at: None,
            scope: Some("a".into()),
            dpop_jkt: None,
        };
        let client =
            ClientCredentials::confidential("id", "CS-SECRET", TokenAuthMethod::ClientSecretBasic);
        let shown = format!("{tokens:?} {client:?}");
        assert!(!shown.contains("SECRET"), "{shown}");
    }
}
