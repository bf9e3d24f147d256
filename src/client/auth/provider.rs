//! [`OAuthClient`]: discovery, the grant, the token store and the HTTP transport's request
//! decorator tied together for one MCP server.
//!
//! The HTTP transport reports a refused request as [`HttpError::Unauthorized`] with its status
//! (401 or 403) and its `WWW-Authenticate` values; [`refusal`] reads the challenge from them
//! and [`OAuthClient::recover`] (or [`OAuthClient::handle`] with the pair) refreshes,
//! authorizes, or steps up (at most [`MAX_AUTHORIZATION_ATTEMPTS`] times until
//! [`OAuthClient::succeeded`]). The decorator sends the new token from the next request on:
//! the caller repeats the refused request, nothing is sent twice behind its back.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Instant;

use super::discovery::{canonical_resource, discover, parse_challenge, Challenge, Discovered};
use super::dpop::{Dpop, DpopKey, NonceFrom};
use super::fetch::Fetcher;
use super::flow::{
    authorization_code, authorization_request, client_credentials, exchange_code, refresh,
    register, ClientCredentials, RegistrationRequest, Secret, TokenAuthMethod, Tokens, UserStep,
};
use super::AuthError;
use crate::client::error::ClientError;
use crate::client::http::HttpError;
use crate::client::http::{Decorations, Decorator, DecoratorError};
use crate::client::transport::{Refusal, TransportError};

/// How many times [`OAuthClient::handle`] runs a grant before a request succeeds: a server
/// that keeps refusing fresh tokens (or keeps asking for more scopes) must not loop the user
/// through the authorization server forever.
pub const MAX_AUTHORIZATION_ATTEMPTS: u32 = 3;

/// Tokens are stored per authorization server and resource: a token is only ever sent to the
/// resource it was issued for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TokenKey {
    /// The issuer that issued the tokens.
    pub issuer: String,
    /// The canonical URI of the MCP server they are for.
    pub resource: String,
}

/// Where tokens live between requests (and, for a persistent store, between runs).
pub trait TokenStore: Send + Sync + 'static {
    /// The tokens stored for `key`.
    fn load(&self, key: &TokenKey) -> Option<Tokens>;
    /// Stores (replaces) the tokens for `key`.
    fn save(&self, key: &TokenKey, tokens: Tokens);
    /// Forgets the tokens for `key`.
    fn remove(&self, key: &TokenKey);
}

/// The default store: in memory, gone with the process.
#[derive(Default)]
pub struct MemoryTokenStore {
    tokens: Mutex<HashMap<TokenKey, Tokens>>,
}

impl fmt::Debug for MemoryTokenStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = self
            .tokens
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        f.debug_struct("MemoryTokenStore")
            .field("entries", &count)
            .finish()
    }
}

impl TokenStore for MemoryTokenStore {
    fn load(&self, key: &TokenKey) -> Option<Tokens> {
        self.tokens
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .cloned()
    }

    fn save(&self, key: &TokenKey, tokens: Tokens) {
        self.tokens
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key.clone(), tokens);
    }

    fn remove(&self, key: &TokenKey) {
        self.tokens
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }
}

/// Which grant obtains a new token.
#[derive(Clone)]
pub enum Grant {
    /// Authorization code with PKCE: the user approves through `user_step`, which returns to
    /// `redirect_uri`.
    AuthorizationCode {
        /// The registered redirect URI.
        redirect_uri: String,
        /// Takes the user to the authorization server and back.
        user_step: Arc<dyn UserStep>,
    },
    /// Client credentials: no user, a confidential client.
    ClientCredentials,
}

impl fmt::Debug for Grant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Grant::AuthorizationCode { redirect_uri, .. } => f
                .debug_struct("AuthorizationCode")
                .field("redirect_uri", redirect_uri)
                .finish_non_exhaustive(),
            Grant::ClientCredentials => f.write_str("ClientCredentials"),
        }
    }
}

/// How the client identifies itself, tried in this order: pre-registered credentials, a
/// Client ID Metadata Document (when the server advertises support), dynamic registration
/// (only when opted in by giving its request).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientIdentity {
    /// Credentials registered out of band with the authorization server.
    pub registered: Option<ClientCredentials>,
    /// The `https` URL of this client's metadata document, used as `client_id` (public
    /// client) where `client_id_metadata_document_supported` is true.
    pub metadata_document: Option<String>,
    /// Opt-in to RFC 7591 dynamic registration with this request.
    pub dynamic_registration: Option<RegistrationRequest>,
}

impl ClientIdentity {
    /// Pre-registered credentials only.
    pub fn registered(client: ClientCredentials) -> Self {
        ClientIdentity {
            registered: Some(client),
            ..ClientIdentity::default()
        }
    }
}

/// What an [`OAuthClient`] needs besides the server and the fetcher.
#[derive(Debug, Clone)]
pub struct OAuthConfig {
    /// How the client identifies itself.
    pub identity: ClientIdentity,
    /// How new tokens are obtained.
    pub grant: Grant,
    /// Where tokens are kept.
    pub store: Arc<dyn TokenStore>,
}

impl fmt::Debug for dyn TokenStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TokenStore")
    }
}

#[derive(Default)]
struct State {
    discovered: Option<Discovered>,
    attempts: u32,
    granted: Vec<String>,
    /// The client credentials resolved for the discovered issuer.
    client: Option<(String, ClientCredentials)>,
}

/// The OAuth side of one MCP server connection; see the module documentation.
pub struct OAuthClient {
    fetcher: Arc<dyn Fetcher>,
    server_url: String,
    resource: String,
    config: OAuthConfig,
    current: Arc<RwLock<Option<Current>>>,
    state: tokio::sync::Mutex<State>,
    dpop: Option<Arc<Dpop>>,
}

/// The token the decorator sends, and whether it is DPoP-bound.
#[derive(Clone, PartialEq, Eq)]
struct Current {
    token: Secret,
    dpop: bool,
}

impl Current {
    fn of(tokens: &Tokens) -> Current {
        Current {
            token: tokens.access_token.clone(),
            dpop: tokens.dpop_jkt.is_some(),
        }
    }
}

impl fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthClient")
            .field("server_url", &self.server_url)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// The transport's authorization refusal inside a client error, if that is what it is.
pub fn http_refusal(error: &ClientError) -> Option<&HttpError> {
    match error {
        ClientError::Transport(TransportError::Refused(Refusal::Http(
            e @ HttpError::Unauthorized { .. },
        ))) => Some(e),
        _ => None,
    }
}

/// The status and challenge of an [`HttpError::Unauthorized`]: the first `WWW-Authenticate`
/// value that parses as a `Bearer` (or `DPoP`) challenge, `None` in the pair when none does
/// (discovery then uses the well-known locations). `None` for any other error.
pub fn refusal(error: &HttpError) -> Option<(u16, Option<Challenge>)> {
    let HttpError::Unauthorized {
        status,
        www_authenticate,
        ..
    } = error
    else {
        return None;
    };
    let challenge = www_authenticate
        .iter()
        .find_map(|value| parse_challenge(value).ok());
    Some((*status, challenge))
}

fn scopes(value: &str) -> impl Iterator<Item = &str> {
    value.split(' ').filter(|s| !s.is_empty())
}

impl OAuthClient {
    /// An OAuth client for the MCP server at `server_url`, dialling through `fetcher`.
    ///
    /// # Errors
    /// [`AuthError::InsecureEndpoint`] when the server URL is neither `https` nor loopback.
    pub fn new(
        fetcher: Arc<dyn Fetcher>,
        server_url: &str,
        config: OAuthConfig,
    ) -> Result<OAuthClient, AuthError> {
        Ok(OAuthClient {
            fetcher,
            resource: canonical_resource(server_url)?,
            server_url: server_url.to_owned(),
            config,
            current: Arc::new(RwLock::new(None)),
            state: tokio::sync::Mutex::new(State::default()),
            dpop: None,
        })
    }

    /// Uses DPoP (RFC 9449) with `key` wherever the authorization server lists
    /// [`super::DPOP_ALGORITHM`] in `dpop_signing_alg_values_supported`: token requests carry
    /// a proof, a `DPoP` token is sent as `Authorization: DPoP` with a fresh proof (`ath`
    /// included) on every request, and both servers' `use_dpop_nonce` are answered. A stored
    /// token bound to another key is never sent. Off unless called, since a key that lives
    /// only in this process makes a persisted bound token useless after it.
    #[must_use]
    pub fn with_dpop(mut self, key: DpopKey) -> OAuthClient {
        self.dpop = Some(Arc::new(Dpop::new(key)));
        self
    }

    /// The canonical URI sent as `resource`.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The request decorator for `HttpTransport`: `Authorization: Bearer <token>` on every
    /// request once a token is held, nothing before; for a DPoP-bound token
    /// `Authorization: DPoP <token>` and a fresh `DPoP` proof for this server's URL instead.
    pub fn decorator(&self) -> Decorator {
        let current = Arc::clone(&self.current);
        let dpop = self.dpop.clone();
        let url = self.server_url.clone();
        Arc::new(move |_method: &str, decorations: &mut Decorations| {
            let held = current
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            let Some(held) = held else {
                return Ok(());
            };
            match (&dpop, held.dpop) {
                (Some(dpop), true) => {
                    let proof = dpop
                        .proof(NonceFrom::ResourceServer, "POST", &url, Some(&held.token))
                        .map_err(|e| DecoratorError::Failed(e.to_string()))?;
                    decorations
                        .insert("authorization", &format!("DPoP {}", held.token.expose()))?;
                    decorations.insert("dpop", &proof)?;
                }
                // A bound token without its key is never sent (it is never made current).
                (None, true) => {}
                (_, false) => {
                    decorations
                        .insert("authorization", &format!("Bearer {}", held.token.expose()))?;
                }
            }
            Ok(())
        })
    }

    fn current_token(&self) -> Option<Secret> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|c| c.token.clone())
    }

    fn set_current(&self, tokens: &Tokens) {
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Some(Current::of(tokens));
    }

    /// Whether `tokens` can be sent by this client: a bound token only with its own key.
    fn usable(&self, tokens: &Tokens) -> bool {
        match (&tokens.dpop_jkt, &self.dpop) {
            (None, _) => true,
            (Some(jkt), Some(dpop)) => dpop.key().thumbprint() == jkt,
            (Some(_), None) => false,
        }
    }

    /// The MCP server's URL this client authorizes for.
    pub fn server_url(&self) -> &str {
        &self.server_url
    }

    /// Reacts to a failed request: when the transport reported an authorization refusal
    /// ([`HttpError::Unauthorized`], with its status and challenges as they came), it is
    /// handled as [`OAuthClient::handle`] does and `Ok(true)` says to send the request again;
    /// any other failure is `Ok(false)` (nothing to do here). No request is repeated by this
    /// client itself: the transport's report is all it reads.
    ///
    /// # Errors
    /// As [`OAuthClient::handle`].
    pub async fn recover(&self, error: &ClientError) -> Result<bool, AuthError> {
        let Some(http) = http_refusal(error) else {
            return Ok(false);
        };
        let Some((status, challenge)) = refusal(http) else {
            return Ok(false);
        };
        if let (Some(dpop), HttpError::Unauthorized { dpop_nonce, .. }) = (&self.dpop, http) {
            if challenge.as_ref().and_then(|c| c.error.as_deref()) == Some("use_dpop_nonce") {
                return self.resource_nonce(dpop, dpop_nonce.as_deref()).await;
            }
        }
        self.handle(status, challenge.as_ref()).await?;
        Ok(true)
    }

    /// RFC 9449 §9: the MCP server wants its nonce in the proof. Kept, and the request may be
    /// sent again once per new nonce (a repeated nonce is a refusal), within the same attempt
    /// budget as the grants.
    async fn resource_nonce(&self, dpop: &Dpop, nonce: Option<&str>) -> Result<bool, AuthError> {
        let mut state = self.state.lock().await;
        if state.attempts >= MAX_AUTHORIZATION_ATTEMPTS {
            return Err(AuthError::TooManyAttempts {
                limit: MAX_AUTHORIZATION_ATTEMPTS,
            });
        }
        state.attempts += 1;
        let nonce = nonce.ok_or(AuthError::DpopNonceRefused)?;
        if dpop.set_nonce(NonceFrom::ResourceServer, nonce)? {
            Ok(true)
        } else {
            Err(AuthError::DpopNonceRefused)
        }
    }

    /// A request went through: the attempt budget starts over.
    pub async fn succeeded(&self) {
        self.state.lock().await.attempts = 0;
    }

    async fn identify(
        &self,
        metadata: &super::discovery::AuthorizationServerMetadata,
    ) -> Result<ClientCredentials, AuthError> {
        let identity = &self.config.identity;
        if let Some(client) = &identity.registered {
            return Ok(adapt_method(client, metadata));
        }
        if let Some(url) = &identity.metadata_document {
            if metadata.client_id_metadata_document_supported == Some(true) {
                return Ok(ClientCredentials {
                    client_id: url.clone(),
                    client_secret: None,
                    auth_method: TokenAuthMethod::None,
                });
            }
        }
        match &identity.dynamic_registration {
            Some(request) if metadata.registration_endpoint.is_some() => {
                register(self.fetcher.as_ref(), metadata, request).await
            }
            _ => Err(AuthError::NoClientIdentity),
        }
    }

    /// Reacts to a 401 (no or bad token: stored token, else refresh, else a new grant) or a
    /// 403 `insufficient_scope` (step-up: a new grant for the challenged scopes plus those
    /// already granted). Concurrent callers that saw the same token wait for one another, and
    /// only the first refreshes or authorizes.
    ///
    /// # Errors
    /// [`AuthError::TooManyAttempts`] past [`MAX_AUTHORIZATION_ATTEMPTS`]; [`AuthError::Forbidden`]
    /// for a 403 that is not `insufficient_scope`; otherwise whatever discovery or the grant
    /// failed with.
    pub async fn handle(
        &self,
        status: u16,
        challenge: Option<&Challenge>,
    ) -> Result<(), AuthError> {
        let seen = self.current_token();
        let mut state = self.state.lock().await;
        if self.current_token() != seen {
            // Another caller already replaced the token this request was refused with.
            return Ok(());
        }
        let step_up = status == 403;
        if step_up && challenge.and_then(|c| c.error.as_deref()) != Some("insufficient_scope") {
            return Err(AuthError::Forbidden);
        }
        if state.attempts >= MAX_AUTHORIZATION_ATTEMPTS {
            return Err(AuthError::TooManyAttempts {
                limit: MAX_AUTHORIZATION_ATTEMPTS,
            });
        }
        state.attempts += 1;
        // Discovery runs on every refusal: the resource may have moved to another
        // authorization server since the last grant (then the client identifies itself
        // there anew, and tokens of the old issuer are never sent).
        state.discovered =
            Some(discover(self.fetcher.as_ref(), &self.server_url, challenge).await?);
        let Some(found) = state.discovered.clone() else {
            return Err(AuthError::NoAuthorizationServer);
        };
        let metadata = &found.authorization_server;
        let client = match &state.client {
            Some((issuer, client)) if issuer == &metadata.issuer => client.clone(),
            _ => {
                let client = self.identify(metadata).await?;
                state.client = Some((metadata.issuer.clone(), client.clone()));
                client
            }
        };
        let key = TokenKey {
            issuer: metadata.issuer.clone(),
            resource: found.resource.clone(),
        };
        // DPoP where this authorization server takes our proofs.
        let dpop = self.dpop.as_deref().filter(|_| metadata.supports_dpop());
        if !step_up {
            let stored = self.config.store.load(&key);
            if stored.as_ref().is_some_and(|t| !self.usable(t)) {
                // Bound to a key this client does not hold (say, of an earlier run): its
                // refresh token is bound too, so only a new grant helps.
                self.config.store.remove(&key);
            } else if let Some(stored) = stored {
                let unexpired = stored.expires_at.is_none_or(|at| at > Instant::now());
                if seen.as_ref() != Some(&stored.access_token) && unexpired {
                    self.set_current(&stored);
                    return Ok(());
                }
                if let Some(refresh_token) = &stored.refresh_token {
                    match refresh(
                        self.fetcher.as_ref(),
                        metadata,
                        &client,
                        refresh_token,
                        &found.resource,
                        dpop,
                    )
                    .await
                    {
                        Ok(tokens) => {
                            self.set_current(&tokens);
                            self.config.store.save(&key, tokens);
                            return Ok(());
                        }
                        // A refused refresh token is dead: forget it and authorize anew.
                        Err(AuthError::TokenEndpoint { .. }) => self.config.store.remove(&key),
                        Err(other) => return Err(other),
                    }
                }
            }
        }
        // Scope selection: the challenge's scopes, else the resource's scopes_supported, else
        // none; a step-up keeps what was granted before.
        let mut wanted: Vec<String> = Vec::new();
        if step_up {
            wanted.extend(state.granted.iter().cloned());
        }
        match challenge.and_then(|c| c.scope.as_deref()) {
            Some(scope) => wanted.extend(scopes(scope).map(str::to_owned)),
            None if !step_up => {
                wanted.extend(
                    found
                        .resource_metadata
                        .scopes_supported
                        .iter()
                        .flatten()
                        .cloned(),
                );
            }
            None => {}
        }
        let mut unique = Vec::new();
        for scope in wanted {
            if !unique.contains(&scope) {
                unique.push(scope);
            }
        }
        let scope = (!unique.is_empty()).then(|| unique.join(" "));
        let tokens = match &self.config.grant {
            Grant::ClientCredentials => {
                client_credentials(
                    self.fetcher.as_ref(),
                    metadata,
                    &client,
                    &found.resource,
                    scope.as_deref(),
                    dpop,
                )
                .await?
            }
            Grant::AuthorizationCode {
                redirect_uri,
                user_step,
            } => {
                let request = authorization_request(
                    metadata,
                    &client.client_id,
                    redirect_uri,
                    &found.resource,
                    scope.as_deref(),
                )?;
                let callback = user_step.authorize(&request.url, redirect_uri).await?;
                let code = authorization_code(&request, &callback)?;
                exchange_code(
                    self.fetcher.as_ref(),
                    metadata,
                    &client,
                    &request,
                    &code,
                    &found.resource,
                    dpop,
                )
                .await?
            }
        };
        state.granted = match &tokens.scope {
            Some(granted) => scopes(granted).map(str::to_owned).collect(),
            None => unique,
        };
        self.set_current(&tokens);
        self.config.store.save(&key, tokens);
        Ok(())
    }
}

/// A registered confidential client keeps its configured method unless the server lists
/// methods without it; then the first of `client_secret_basic`, `client_secret_post` it lists.
fn adapt_method(
    client: &ClientCredentials,
    metadata: &super::discovery::AuthorizationServerMetadata,
) -> ClientCredentials {
    let mut client = client.clone();
    let Some(supported) = &metadata.token_endpoint_auth_methods_supported else {
        return client;
    };
    if client.client_secret.is_none() || supported.iter().any(|m| m == client.auth_method.as_str())
    {
        return client;
    }
    for method in [
        TokenAuthMethod::ClientSecretBasic,
        TokenAuthMethod::ClientSecretPost,
    ] {
        if supported.iter().any(|m| m == method.as_str()) {
            client.auth_method = method;
            break;
        }
    }
    client
}
