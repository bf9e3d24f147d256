//! The server adapter: publication, per-request protocol rules, dispatch over the core, and the
//! transport drivers. Protocol rules live here and in the layers below; the drivers
//! (`stdio`, `http`) only move bytes (sans-I/O, see the crate docs).
//!
//! # Life of a request
//!
//! A driver decodes one frame with [`crate::codec::decode`] and calls [`Server::serve`] with the
//! caller, the message, an [`Outbox`] and a [`CancelToken`] it fires when the client cancels.
//! The server admits the call through the epoch machine, checks the request's own `_meta`
//! (B1–B5: nothing is remembered from earlier requests), dispatches it to the registry, binds
//! `input_required` outcomes to the continuation ledger, paces progress, and writes notifications
//! and exactly one encoded reply into the outbox. A request the client cancelled gets no reply:
//! its handler's token fires and nothing more leaves for it. `resources/read` and `prompts/get`
//! run within their time-out ([`ServerOptions::read_timeout`], O33).
//!
//! # State
//!
//! `requestState` tokens are sealed with the configured key ring. Without one, a random key is
//! drawn when the server is built, so continuation state is then valid only inside this process
//! (a restart or a second instance rejects it as `state_rejected`).

#[cfg(feature = "auth")]
pub mod auth;
mod dispatch;
mod encode;
pub mod fault;
#[cfg(feature = "http")]
pub mod http;
mod listen;
pub mod log;
mod mrtr;
pub mod outbox;
mod progress;
pub mod publication;
#[cfg(feature = "stdio")]
pub mod stdio;
mod tools;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use serde_json::value::RawValue;

use crate::codec::IngressLimits;
use crate::core::seal::{KeyRing, SealKey};
use crate::core::store::{LedgerStore, MemoryLedgerStore};
use crate::core::{Caller, CancelToken, Clock, Registry, SystemClock};
use crate::machine::epoch::{CallId, EpochEffect, EpochEvent, Lifecycle, Phase};
use crate::machine::ledger::LedgerConfig;
use crate::machine::{Epoch, Tick};
use crate::wire::jsonrpc::{Message, Notification};

pub use crate::wire::errors::Cause;
pub use outbox::{Outbox, Reply};

/// The only protocol revision this server speaks (B14).
pub const PROTOCOL_VERSION: &str = crate::wire::PROTOCOL_REVISION;

/// Requests one stdio connection serves at once; further lines wait until a slot frees (C-section).
pub const MAX_IN_FLIGHT: usize = 64;

/// Shutdown budget used when stdin reaches EOF and when no other budget is configured.
pub const DEFAULT_SHUTDOWN_BUDGET: Duration = Duration::from_secs(5);

/// Default time-out of one `resources/read` or `prompts/get` (O33): the handler, the
/// conversion of its result and the final size check must finish within it. Override per
/// server with [`ServerOptions::read_timeout`], per item with
/// [`ResourceDef::timeout`](crate::core::ResourceDef::timeout),
/// [`TemplateDef::timeout`](crate::core::TemplateDef::timeout) or
/// [`PromptDef::timeout`](crate::core::PromptDef::timeout).
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Default server identity (O7).
pub const DEFAULT_NAME: &str = "mcp";
/// Default server version (O7).
pub const DEFAULT_VERSION: &str = "unreleased";

/// How tools are published (O11, O21).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PublishMode {
    /// Three discovery tools (`search_tools`, `get_tool_details`, `call_tool`): the default.
    Compact,
    /// Every authorised operation as a native tool.
    Direct,
}

/// Why a server configuration was refused (O7).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The mode string is neither `compact`, `direct` nor empty.
    #[error("unknown publication mode `{0}` (expected `compact` or `direct`)")]
    UnknownMode(String),
    /// An option was given twice.
    #[error("option `{0}` was given more than once")]
    Repeated(&'static str),
    /// The server name or version is empty.
    #[error("server identity needs a non-empty name and version")]
    EmptyIdentity,
    /// The encoded identity exceeds its 4 KiB share of the response reserve (O39).
    #[error("server identity is larger than 4 KiB when encoded")]
    IdentityTooLarge,
    /// The operating system refused randomness for the default seal key.
    #[error("no randomness available for the default seal key")]
    Entropy,
    /// A time-out option lies outside
    /// [`MIN_TIMEOUT`](crate::core::MIN_TIMEOUT)`..=`[`MAX_TIMEOUT`](crate::core::MAX_TIMEOUT).
    #[error("option `{option}`: {value:?} is outside 1 ms ..= 1 h")]
    InvalidTimeout {
        /// The option name.
        option: &'static str,
        /// The refused value.
        value: Duration,
    },
}

/// Builder of a [`Server`]'s fixed configuration. Every option may be given at most once.
#[derive(Default)]
pub struct ServerOptions {
    info: Option<(String, String)>,
    mode: Option<String>,
    key_ring: Option<KeyRing>,
    store: Option<Arc<dyn LedgerStore>>,
    shutdown_budget: Option<Duration>,
    instructions: Option<String>,
    state_ttl_ms: Option<u64>,
    read_timeout: Option<Duration>,
    repeated: Option<&'static str>,
}

impl std::fmt::Debug for ServerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerOptions")
            .field("info", &self.info)
            .field("mode", &self.mode)
            .field("key_ring", &self.key_ring.is_some())
            .field("store", &self.store.is_some())
            .field("shutdown_budget", &self.shutdown_budget)
            .field("instructions", &self.instructions.is_some())
            .field("read_timeout", &self.read_timeout)
            .finish_non_exhaustive()
    }
}

fn set_once<T>(
    slot: &mut Option<T>,
    value: T,
    name: &'static str,
    repeated: &mut Option<&'static str>,
) {
    if slot.is_some() && repeated.is_none() {
        *repeated = Some(name);
    }
    *slot = Some(value);
}

impl ServerOptions {
    /// Default options: identity `mcp`/`unreleased`, compact mode, random seal key, in-memory
    /// ledger, 5 s shutdown budget, no instructions, 30 s read time-out.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The server's own identity, sent as `serverInfo` (B6, O7).
    #[must_use]
    pub fn server_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        set_once(
            &mut self.info,
            (name.into(), version.into()),
            "server_info",
            &mut self.repeated,
        );
        self
    }

    /// Publication mode: `"compact"` or `""` (the default), or `"direct"`.
    #[must_use]
    pub fn mode(mut self, mode: impl Into<String>) -> Self {
        set_once(&mut self.mode, mode.into(), "mode", &mut self.repeated);
        self
    }

    /// Keys that seal `requestState`. Share one ring (and one ledger store) between instances
    /// that must accept each other's continuation state.
    #[must_use]
    pub fn key_ring(mut self, ring: KeyRing) -> Self {
        set_once(&mut self.key_ring, ring, "key_ring", &mut self.repeated);
        self
    }

    /// Where continuation chains live (default: a bounded in-memory store).
    #[must_use]
    pub fn ledger_store(mut self, store: Arc<dyn LedgerStore>) -> Self {
        set_once(&mut self.store, store, "ledger_store", &mut self.repeated);
        self
    }

    /// Budget the stdio host uses for its own shutdown at EOF.
    #[must_use]
    pub fn shutdown_budget(mut self, budget: Duration) -> Self {
        set_once(
            &mut self.shutdown_budget,
            budget,
            "shutdown_budget",
            &mut self.repeated,
        );
        self
    }

    /// `instructions` for `server/discover`.
    #[must_use]
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        set_once(
            &mut self.instructions,
            text.into(),
            "instructions",
            &mut self.repeated,
        );
        self
    }

    /// Time-out of each `resources/read` and `prompts/get` without its own override (default
    /// [`DEFAULT_READ_TIMEOUT`]). It covers the handler, the conversion of its result and the
    /// final size check (O33). On expiry the handler's cancellation token fires and the client
    /// gets -32603 with `data: {"uri": …, "retryable": true}` (`"name"` for a prompt).
    ///
    /// The timer is tokio's when a runtime with time enabled is current (a paused test clock
    /// included); otherwise a helper thread per timed request keeps the bound.
    ///
    /// ```
    /// use std::time::Duration;
    /// use strict_mcp::server::{ConfigError, ServerOptions};
    /// # use strict_mcp::core::{Invocation, ReadReply, RegistryBuilder, ResourceDef};
    /// # let registry = || RegistryBuilder::new().resource(ResourceDef::new("mem://a", "a",
    /// #     |_i: Invocation, _u: String| async move { Ok(ReadReply::new(vec![])) })).build().unwrap();
    /// let zero = strict_mcp::server::Server::new(registry(), ServerOptions::new().read_timeout(Duration::ZERO));
    /// assert!(matches!(zero, Err(ConfigError::InvalidTimeout { option: "read_timeout", .. })));
    /// let ok = strict_mcp::server::Server::new(registry(), ServerOptions::new().read_timeout(Duration::from_secs(5)));
    /// assert_eq!(ok.unwrap().read_timeout(), Duration::from_secs(5));
    /// ```
    #[must_use]
    pub fn read_timeout(mut self, timeout: Duration) -> Self {
        set_once(
            &mut self.read_timeout,
            timeout,
            "read_timeout",
            &mut self.repeated,
        );
        self
    }

    /// Lifetime of one issued `requestState`, in milliseconds (default 10 minutes).
    #[must_use]
    pub fn state_ttl_ms(mut self, ttl: u64) -> Self {
        set_once(
            &mut self.state_ttl_ms,
            ttl,
            "state_ttl_ms",
            &mut self.repeated,
        );
        self
    }
}

/// How a shutdown ended (O5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShutdownReport {
    /// Every call ended within the budget.
    Stopped,
    /// The budget ran out; these calls were still running. [`Server::status`] keeps reporting
    /// them until they end.
    CleanupFailed {
        /// Calls still running at the deadline.
        unfinished: usize,
    },
}

impl ShutdownReport {
    /// The exit status a server process reports for [`ShutdownReport::CleanupFailed`], so a
    /// supervisor can tell an abandoned shutdown from a clean one (O5).
    pub const CLEANUP_FAILED_EXIT_CODE: i32 = 3;

    /// The process exit status for this outcome: 0 when every call ended,
    /// [`Self::CLEANUP_FAILED_EXIT_CODE`] when calls were abandoned.
    ///
    /// ```
    /// use strict_mcp::server::ShutdownReport;
    /// assert_eq!(ShutdownReport::Stopped.exit_code(), 0);
    /// let failed = ShutdownReport::CleanupFailed { unfinished: 2 };
    /// assert_eq!(failed.exit_code(), 3);
    /// assert_eq!(failed.to_string(), "cleanup_failed (2 calls still running)");
    /// ```
    #[must_use]
    pub fn exit_code(&self) -> i32 {
        match self {
            ShutdownReport::Stopped => 0,
            ShutdownReport::CleanupFailed { .. } => Self::CLEANUP_FAILED_EXIT_CODE,
        }
    }
}

impl std::fmt::Display for ShutdownReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShutdownReport::Stopped => f.write_str("stopped"),
            ShutdownReport::CleanupFailed { unfinished } => {
                write!(f, "cleanup_failed ({unfinished} calls still running)")
            }
        }
    }
}

/// Where the server stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerPhase {
    /// Admitting requests.
    Serving,
    /// Shutdown began; waiting for active calls.
    Draining,
    /// Shut down with nothing running.
    Stopped,
    /// Shut down with calls still running past the budget.
    CleanupFailed,
}

/// A snapshot for health checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerStatus {
    /// Phase.
    pub phase: ServerPhase,
    /// Serving epoch (bumped once, by shutdown).
    pub epoch: u64,
    /// Calls admitted and not yet ended.
    pub active_calls: usize,
    /// Open `subscriptions/listen` streams.
    pub listen_streams: usize,
}

/// The MCP server: cheap to clone, shared by every transport that serves it.
#[derive(Clone)]
pub struct Server {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("mode", &self.inner.mode)
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}

pub(crate) struct Inner {
    registry: RwLock<Arc<Registry>>,
    /// `{"name":…,"version":…}`, encoded once.
    info: Box<RawValue>,
    instructions: Option<String>,
    mode: PublishMode,
    publication: publication::Publication,
    ring: KeyRing,
    store: Arc<dyn LedgerStore>,
    ledger: LedgerConfig,
    clock: SystemClock,
    lifecycle: Mutex<Lifecycle>,
    next_call: AtomicU64,
    /// Shutdown cancellation of every admitted call.
    calls: Mutex<HashMap<CallId, CancelToken>>,
    /// Signalled whenever a call ends.
    ended: event_listener::Event,
    listens: listen::Hub,
    budget: Duration,
    /// Time-out of reads and prompt gets without their own override (O33).
    pub(crate) read_timeout: Duration,
    stdio_started: std::sync::atomic::AtomicBool,
}

/// Locks a mutex; every critical section here is a single map or machine step, so a poisoned
/// lock still holds consistent data.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Server {
    /// Fixes the whole configuration. Starts no listener, thread or task (O1).
    ///
    /// # Errors
    /// [`ConfigError`] for an unknown mode, a repeated option, an empty or oversized identity,
    /// or when no randomness is available for the default seal key.
    pub fn new(registry: Registry, options: ServerOptions) -> Result<Server, ConfigError> {
        if let Some(name) = options.repeated {
            return Err(ConfigError::Repeated(name));
        }
        let mode = match options.mode.as_deref() {
            None | Some("" | "compact") => PublishMode::Compact,
            Some("direct") => PublishMode::Direct,
            Some(other) => return Err(ConfigError::UnknownMode(other.to_owned())),
        };
        let (name, version) = options
            .info
            .unwrap_or_else(|| (DEFAULT_NAME.to_owned(), DEFAULT_VERSION.to_owned()));
        if name.is_empty() || version.is_empty() {
            return Err(ConfigError::EmptyIdentity);
        }
        let info = serde_json::value::to_raw_value(&serde_json::json!({
            "name": name,
            "version": version,
        }))
        .map_err(|_| ConfigError::IdentityTooLarge)?;
        crate::codec::check_identity(&info, &crate::codec::EgressLimits::SERVER)
            .map_err(|_| ConfigError::IdentityTooLarge)?;
        let ring = match options.key_ring {
            Some(ring) => ring,
            None => KeyRing::new(SealKey::random(1).map_err(|_| ConfigError::Entropy)?),
        };
        let read_timeout = options.read_timeout.unwrap_or(DEFAULT_READ_TIMEOUT);
        if !crate::core::timeout_in_range(read_timeout) {
            return Err(ConfigError::InvalidTimeout {
                option: "read_timeout",
                value: read_timeout,
            });
        }
        let ledger = LedgerConfig::with_ttl(
            options
                .state_ttl_ms
                .unwrap_or(crate::machine::ledger::DEFAULT_STATE_TTL_MS),
        );
        Ok(Server {
            inner: Arc::new(Inner {
                registry: RwLock::new(Arc::new(registry)),
                info,
                instructions: options.instructions,
                mode,
                publication: tools::publication(mode),
                ring,
                store: options
                    .store
                    .unwrap_or_else(|| Arc::new(MemoryLedgerStore::default())),
                ledger,
                clock: SystemClock::new(),
                lifecycle: Mutex::new(Lifecycle::new(Epoch(0))),
                next_call: AtomicU64::new(1),
                calls: Mutex::new(HashMap::new()),
                ended: event_listener::Event::new(),
                listens: listen::Hub::default(),
                budget: options.shutdown_budget.unwrap_or(DEFAULT_SHUTDOWN_BUDGET),
                read_timeout,
                stdio_started: std::sync::atomic::AtomicBool::new(false),
            }),
        })
    }

    /// Serves one decoded message from `caller`. Everything it produces goes to `outbox`:
    /// notifications, then exactly one reply for a request; nothing at all for a notification,
    /// a response, or a request cancelled through `cancel` (J9, C9).
    pub async fn serve(
        &self,
        caller: Caller,
        message: Message,
        outbox: Arc<dyn Outbox>,
        cancel: CancelToken,
    ) {
        match message {
            Message::Request(request) => {
                dispatch::serve_request(self, caller, request, outbox, cancel).await;
            }
            // A11: never answered. Cancellation is routed by the driver through
            // [`Server::cancelled_request`]; any other notification means nothing here.
            Message::Notification(_) | Message::Response(_) => {}
        }
    }

    /// For a `notifications/cancelled`, the exact JSON text of the `requestId` it cancels.
    /// `None` for any other notification and for malformed ones (ignored silently, J10).
    #[must_use]
    pub fn cancelled_request(notification: &Notification) -> Option<String> {
        if notification.method != crate::wire::methods::CANCELLED {
            return None;
        }
        crate::wire::progress::cancelled_request(notification.params.as_deref())
            .map(|id| id.token().to_owned())
    }

    /// The registry currently served.
    #[must_use]
    pub fn registry(&self) -> Arc<Registry> {
        Arc::clone(
            &self
                .inner
                .registry
                .read()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// Swaps in a new registry atomically and announces `tools`, `prompts` and `resources`
    /// `list_changed` on every listen stream whose filter asks for it.
    pub fn replace_registry(&self, registry: Registry) {
        *self
            .inner
            .registry
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Arc::new(registry);
        use crate::machine::subscriptions::Change;
        for change in [
            Change::ToolsListChanged,
            Change::PromptsListChanged,
            Change::ResourcesListChanged,
        ] {
            self.inner
                .listens
                .change(self.now(), &change, &self.inner.info);
        }
    }

    /// Announces `notifications/resources/updated` for `uri` on listen streams subscribed to it.
    pub fn resource_updated(&self, uri: &str) {
        let change = crate::machine::subscriptions::Change::ResourceUpdated {
            uri: uri.to_owned(),
        };
        self.inner
            .listens
            .change(self.now(), &change, &self.inner.info);
    }

    /// Stops admission for good, invalidates every outstanding `requestState` (epoch bump),
    /// cancels active calls, ends listen streams gracefully, and waits for active calls within
    /// `budget` (O5, O6).
    pub async fn shutdown(&self, budget: Duration) -> ShutdownReport {
        let budget_ms = u64::try_from(budget.as_millis()).unwrap_or(u64::MAX);
        let effects = lock(&self.inner.lifecycle)
            .handle(self.now(), EpochEvent::Shutdown { budget_ms })
            .0;
        for effect in effects {
            match effect {
                EpochEffect::EpochBumped(epoch) => {
                    if let Err(e) = self.inner.store.bump_epoch(self.now(), epoch).await {
                        tracing::warn!(error = %e, "ledger store did not take the epoch bump");
                    }
                }
                EpochEffect::Cancel(call) => {
                    if let Some(token) = lock(&self.inner.calls).get(&call) {
                        token.cancel();
                    }
                }
                EpochEffect::CloseListenStreams => {
                    self.inner.listens.close_all(self.now(), &self.inner.info);
                }
                EpochEffect::Stopped => return ShutdownReport::Stopped,
                EpochEffect::CleanupFailed { unfinished } => {
                    return ShutdownReport::CleanupFailed { unfinished }
                }
                _ => {}
            }
        }
        self.wait_drained(budget).await
    }

    async fn wait_drained(&self, budget: Duration) -> ShutdownReport {
        let deadline = Deadline::start(budget);
        loop {
            let listener = self.inner.ended.listen();
            let status = self.status();
            match status.phase {
                ServerPhase::Stopped => return ShutdownReport::Stopped,
                ServerPhase::CleanupFailed => {
                    return ShutdownReport::CleanupFailed {
                        unfinished: status.active_calls,
                    }
                }
                ServerPhase::Serving | ServerPhase::Draining => {}
            }
            if deadline.token.is_cancelled() {
                let effects = lock(&self.inner.lifecycle).handle_timeout(Tick(u64::MAX)).0;
                for effect in effects {
                    if let EpochEffect::CleanupFailed { unfinished } = effect {
                        return ShutdownReport::CleanupFailed { unfinished };
                    }
                }
                let active = self.status().active_calls;
                return if active == 0 {
                    ShutdownReport::Stopped
                } else {
                    ShutdownReport::CleanupFailed { unfinished: active }
                };
            }
            let timeout = deadline.token.cancelled();
            futures_util::pin_mut!(timeout);
            futures_util::future::select(listener, timeout).await;
        }
    }

    /// A snapshot of phase, epoch and unfinished work.
    #[must_use]
    pub fn status(&self) -> ServerStatus {
        let s = lock(&self.inner.lifecycle).status();
        ServerStatus {
            phase: match s.phase {
                Phase::Serving => ServerPhase::Serving,
                Phase::Draining { .. } => ServerPhase::Draining,
                Phase::Stopped => ServerPhase::Stopped,
                Phase::CleanupFailed => ServerPhase::CleanupFailed,
            },
            epoch: s.epoch.0,
            active_calls: s.active_calls,
            listen_streams: self.inner.listens.len(),
        }
    }

    /// Ingress bounds for requests to this server (O36, O37).
    #[must_use]
    pub fn ingress_limits(&self) -> IngressLimits {
        IngressLimits::SERVER
    }

    /// The publication mode fixed at construction.
    #[must_use]
    pub fn mode(&self) -> PublishMode {
        self.inner.mode
    }

    /// The time-out of reads and prompt gets without their own override.
    #[must_use]
    pub fn read_timeout(&self) -> Duration {
        self.inner.read_timeout
    }

    /// The budget the stdio host uses at EOF.
    #[must_use]
    pub fn shutdown_budget(&self) -> Duration {
        self.inner.budget
    }

    pub(crate) fn now(&self) -> Tick {
        Tick(self.inner.clock.now_ms())
    }

    pub(crate) fn inner(&self) -> &Inner {
        &self.inner
    }

    /// Admits one call: `Some((id, epoch, shutdown token))`, or `None` once shutdown began.
    pub(crate) fn admit(&self) -> Option<(CallId, Epoch, CancelToken)> {
        let call = CallId(self.inner.next_call.fetch_add(1, Ordering::Relaxed));
        let token = CancelToken::new();
        let mut lifecycle = lock(&self.inner.lifecycle);
        let effects = lifecycle.handle(self.now(), EpochEvent::Admit(call)).0;
        for effect in effects {
            if let EpochEffect::Admitted { epoch, .. } = effect {
                lock(&self.inner.calls).insert(call, token.clone());
                return Some((call, epoch, token));
            }
        }
        None
    }

    /// Ends an admitted call (exactly once).
    pub(crate) fn end_call(&self, call: CallId) {
        lock(&self.inner.calls).remove(&call);
        let effects = lock(&self.inner.lifecycle)
            .handle(self.now(), EpochEvent::CallEnded(call))
            .0;
        for effect in effects {
            if let EpochEffect::UnknownCall(c) = effect {
                tracing::error!(call = c.0, "call ended twice");
            }
        }
        self.inner.ended.notify(usize::MAX);
    }

    /// Marks the stdio host as started; false when it already ran (O4).
    #[cfg(feature = "stdio")]
    pub(crate) fn claim_stdio(&self) -> bool {
        !self.inner.stdio_started.swap(true, Ordering::AcqRel)
    }
}

/// A deadline without an async runtime: one helper thread parks until the budget elapses and
/// then fires the token; dropping the deadline wakes the thread so it ends early. Started by
/// shutdown, and by a timed read when no tokio timer is available; never by the constructor
/// (O1).
struct Deadline {
    token: CancelToken,
    done: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::Thread>,
}

impl Deadline {
    fn start(budget: Duration) -> Deadline {
        let token = CancelToken::new();
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let fire = token.clone();
        let stop = Arc::clone(&done);
        let started = std::time::Instant::now();
        let spawned = std::thread::Builder::new()
            .name("mcp-deadline".to_owned())
            .spawn(move || {
                while let Some(left) = budget.checked_sub(started.elapsed()) {
                    if left.is_zero() || stop.load(Ordering::Acquire) {
                        break;
                    }
                    std::thread::park_timeout(left);
                }
                fire.cancel();
            });
        let thread = match spawned {
            Ok(handle) => Some(handle.thread().clone()),
            Err(_) => {
                // Without a timer thread the budget cannot be waited for: report at once.
                token.cancel();
                None
            }
        };
        Deadline {
            token,
            done,
            thread,
        }
    }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Release);
        if let Some(thread) = &self.thread {
            thread.unpark();
        }
    }
}
