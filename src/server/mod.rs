//! The server adapter: publication, per-request protocol rules, dispatch over the core, and the
//! transport drivers. Protocol rules live here and in the layers below; the drivers
//! (`stdio`, `http`) only move bytes (sans-I/O, see the crate docs).
//!
//! # Life of a request
//!
//! A driver decodes one frame with [`crate::codec::decode`] and calls [`Server::serve`] with the
//! caller, the message, an [`Outbox`] and a [`CancelToken`] it fires when the client cancels.
//! The server admits the call through the epoch machine, checks the request's own `_meta`
//! (nothing is remembered from earlier requests), dispatches it to the registry, binds
//! `input_required` outcomes to the continuation ledger, paces progress, and writes notifications
//! and exactly one encoded reply into the outbox. A request the client cancelled gets no reply:
//! its handler's token fires and nothing more leaves for it. `resources/read` and `prompts/get`
//! run within their time-out ([`ServerOptions::read_timeout`]).
//!
//! # State
//!
//! `requestState` tokens are sealed with the configured key ring. Without one, a random key is
//! drawn when the server is built, so continuation state is then valid only inside this process
//! (a restart or a second instance rejects it as `state_rejected`).

// One concept per module; they import only downwards, in this order (no cycle):
// `encode` ← `answer` ← `context` ← `mrtr` ← the method families (`discover`, `tools`,
// `resources`, `prompts`, `completion`, `listen`) ← `routes` ← `admission`. `deadline`,
// `progress`, `log` and `publication` are leaves; this file owns the server's state and hands
// each module only what it needs through accessors.
mod admission;
mod answer;
pub mod apps;
#[cfg(feature = "auth")]
pub mod auth;
mod completion;
mod context;
mod deadline;
mod discover;
mod encode;
// Test-only fault points (the integration tests arm them); public for them, not for users.
#[doc(hidden)]
pub mod fault;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "legacy")]
pub mod legacy;
mod listen;
pub mod log;
mod mrtr;
pub mod outbox;
mod progress;
mod prompts;
pub mod publication;
mod resources;
mod routes;
mod skills;
#[cfg(feature = "stdio")]
pub mod stdio;
mod tasks;
mod tools;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use serde_json::value::RawValue;

use crate::codec::{EgressLimits, IngressLimits};
use crate::core::bus::{BusError, EventBus, InstanceId, MemoryEventBus};
use crate::core::lifecycle::{route_epoch_effect, EpochRoute};
use crate::core::seal::{KeyRing, SealKey};
use crate::core::store::{LedgerStore, MemoryLedgerStore};
use crate::core::{
    Caller, CancelToken, Clock, MonotonicClock, Registry, SystemClock, SystemMonotonic,
};
use crate::machine::epoch::{CallId, EpochEffect, EpochEvent, Lifecycle, Phase};
use crate::machine::ledger::LedgerConfig;
use crate::machine::{Epoch, Tick};
use crate::wire::jsonrpc::{Message, Notification};

pub use crate::wire::errors::Cause;
pub use apps::{AppCsp, AppPermissions, Apps, AppsError};
pub use outbox::{Outbox, Reply};

/// The only protocol revision this server speaks.
pub const PROTOCOL_VERSION: &str = crate::wire::PROTOCOL_REVISION;

/// Requests one stdio connection serves at once; further lines wait until a slot frees (C-section).
pub const MAX_IN_FLIGHT: usize = 64;

/// Shutdown budget used when stdin reaches EOF and when no other budget is configured.
pub const DEFAULT_SHUTDOWN_BUDGET: Duration = Duration::from_secs(5);

/// Default time-out of one `resources/read` or `prompts/get`: the handler, the
/// conversion of its result and the final size check must finish within it. Override per
/// server with [`ServerOptions::read_timeout`], per item with
/// [`ResourceDef::timeout`](crate::core::ResourceDef::timeout),
/// [`TemplateDef::timeout`](crate::core::TemplateDef::timeout) or
/// [`PromptDef::timeout`](crate::core::PromptDef::timeout).
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Default time-out of one `tools/call` without its own override
/// ([`ToolDef::timeout`](crate::core::ToolDef::timeout)): the handler and the check of its
/// result must finish within it. Long enough for tools that work for minutes (reporting
/// progress), short enough that a hung handler does not hold its slot and its client forever.
/// Override per server with [`ServerOptions::tool_timeout`].
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// Hard maximum of [`ServerOptions::max_request_bytes`], and its default: the 2 MiB a
/// request may have. A server may accept less, never more.
pub const MAX_REQUEST_BYTES: usize = crate::wire::limits::MAX_REQUEST_FRAME_BYTES;

/// Smallest [`ServerOptions::max_request_bytes`]: room for any request's `_meta` (client
/// capabilities, `requestState` tokens) and modest arguments, so a low cap cannot break
/// `server/discover` or continuations.
pub const MIN_REQUEST_BYTES: usize = 16 * 1024;

/// Hard maximum of [`ServerOptions::max_response_bytes`], and its default: the 16 MiB a
/// response may have. A server may send less, never more.
pub const MAX_RESPONSE_BYTES: usize = crate::wire::limits::MAX_RESPONSE_BYTES;

/// Smallest [`ServerOptions::max_response_bytes`]: eight times the 8 KiB reserve for
/// envelope, id and identity, so every listing page and failure still fits.
pub const MIN_RESPONSE_BYTES: usize = 64 * 1024;

/// Default server identity.
pub const DEFAULT_NAME: &str = "mcp";
/// Default server version.
pub const DEFAULT_VERSION: &str = "unreleased";

/// How tools are published.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PublishMode {
    /// Three discovery tools (`search_tools`, `get_tool_details`, `call_tool`): the default.
    Compact,
    /// Every authorised operation as a native tool.
    Direct,
}

impl PublishMode {
    /// The mode's name as [`ServerOptions::mode`] reads it.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            PublishMode::Compact => "compact",
            PublishMode::Direct => "direct",
        }
    }
}

/// So [`ServerOptions::mode`] takes the typed mode as well as its name.
impl From<PublishMode> for String {
    fn from(mode: PublishMode) -> String {
        mode.as_str().to_owned()
    }
}

/// Why a server configuration was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The task limits are out of range (a TTL outside `MIN_TASK_TTL_MS..=MAX_TASK_TTL_MS`,
    /// or no room for one task).
    #[error("task limits out of range: {0:?}")]
    InvalidTaskLimits(crate::core::tasks::TaskLimits),
    /// The mode string is neither `compact`, `direct` nor empty.
    #[error("unknown publication mode `{0}` (expected `compact` or `direct`)")]
    UnknownMode(String),
    /// An option was given twice.
    #[error("option `{0}` was given more than once")]
    Repeated(&'static str),
    /// The server name or version is empty.
    #[error("server identity needs a non-empty name and version")]
    EmptyIdentity,
    /// The encoded identity exceeds its 4 KiB share of the response reserve.
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
    /// A size option lies outside its range (for example
    /// [`MIN_REQUEST_BYTES`]`..=`[`MAX_REQUEST_BYTES`]).
    #[error("option `{option}`: {value} bytes is outside {min} ..= {max}")]
    InvalidLimit {
        /// The option name.
        option: &'static str,
        /// The refused value.
        value: usize,
        /// The smallest accepted value.
        min: usize,
        /// The largest accepted value.
        max: usize,
    },
    /// The Apps shell configuration was refused.
    #[error("apps: {0}")]
    Apps(AppsError),
    /// Apps was enabled together with direct publication (the shell hangs on compact
    /// `call_tool`).
    #[error("apps needs compact publication; it cannot be combined with direct mode")]
    AppsWithDirect,
}

/// Builder of a [`Server`]'s fixed configuration. Every option may be given at most once.
#[derive(Default)]
pub struct ServerOptions {
    info: Option<(String, String)>,
    mode: Option<String>,
    key_ring: Option<KeyRing>,
    store: Option<Arc<dyn LedgerStore>>,
    bus: Option<Arc<dyn EventBus>>,
    shutdown_budget: Option<Duration>,
    instructions: Option<String>,
    state_ttl_ms: Option<u64>,
    read_timeout: Option<Duration>,
    tool_timeout: Option<Duration>,
    max_request_bytes: Option<usize>,
    max_response_bytes: Option<usize>,
    clock: Option<Arc<dyn Clock>>,
    monotonic: Option<Arc<dyn MonotonicClock>>,
    task_store: Option<Arc<dyn crate::core::tasks::TaskStore>>,
    task_limits: Option<crate::core::tasks::TaskLimits>,
    #[cfg(feature = "legacy")]
    legacy_era: Option<bool>,
    #[cfg(feature = "legacy")]
    legacy_http: Option<legacy::LegacyHttpConfig>,
    apps: Option<Apps>,
    repeated: Option<&'static str>,
}

impl std::fmt::Debug for ServerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerOptions")
            .field("info", &self.info)
            .field("mode", &self.mode)
            .field("key_ring", &self.key_ring.is_some())
            .field("store", &self.store.is_some())
            .field("event_bus", &self.bus.is_some())
            .field("shutdown_budget", &self.shutdown_budget)
            .field("instructions", &self.instructions.is_some())
            .field("read_timeout", &self.read_timeout)
            .field("tool_timeout", &self.tool_timeout)
            .field("max_request_bytes", &self.max_request_bytes)
            .field("max_response_bytes", &self.max_response_bytes)
            .field("clock", &self.clock.is_some())
            .field("monotonic_clock", &self.monotonic.is_some())
            .finish_non_exhaustive()
    }
}

/// `value` (or `max`, the default, when unset) if it lies in `min..=max`.
fn limit_in_range(
    option: &'static str,
    value: Option<usize>,
    min: usize,
    max: usize,
) -> Result<usize, ConfigError> {
    let value = value.unwrap_or(max);
    if (min..=max).contains(&value) {
        Ok(value)
    } else {
        Err(ConfigError::InvalidLimit {
            option,
            value,
            min,
            max,
        })
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
    /// ledger, 5 s shutdown budget, no instructions, 30 s read time-out, 10 min tool time-out,
    /// 2 MiB requests and 16 MiB responses.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The server's own identity, sent as `serverInfo`.
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

    /// Publication mode: [`PublishMode::Compact`] (the default) or [`PublishMode::Direct`];
    /// the strings `"compact"`, `""` and `"direct"` are accepted too (command-line flags).
    ///
    /// ```
    /// use strict_mcp::server::{PublishMode, ServerOptions};
    /// let _typed = ServerOptions::new().mode(PublishMode::Direct);
    /// let _text = ServerOptions::new().mode("direct");
    /// ```
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

    /// The bus listen events travel on between instances (default: a private in-memory bus,
    /// so changes reach this server's own streams only). Give every instance the same bus
    /// (a shared [`MemoryEventBus`] in one process, the Redis one across processes) and a
    /// change published on one reaches the matching listen streams of all.
    #[must_use]
    pub fn event_bus(mut self, bus: Arc<dyn EventBus>) -> Self {
        set_once(&mut self.bus, bus, "event_bus", &mut self.repeated);
        self
    }

    /// Where continuation chains live (default: a bounded in-memory store).
    #[must_use]
    pub fn ledger_store(mut self, store: Arc<dyn LedgerStore>) -> Self {
        set_once(&mut self.store, store, "ledger_store", &mut self.repeated);
        self
    }

    /// Where task state of the Tasks extension lives (default: the bounded in-memory
    /// [`MemoryTaskStore`](crate::core::tasks::MemoryTaskStore), sized by the task limits'
    /// `max_tasks`). Tasks are served only while a tool is registered with
    /// [`ToolDef::task`](crate::core::ToolDef::task).
    #[must_use]
    pub fn task_store(mut self, store: Arc<dyn crate::core::tasks::TaskStore>) -> Self {
        set_once(
            &mut self.task_store,
            store,
            "task_store",
            &mut self.repeated,
        );
        self
    }

    /// The bounds of the Tasks extension: tasks kept at once, `ttlMs`, result retention
    /// (defaults: [`TaskLimits::default`](crate::core::tasks::TaskLimits)). Out-of-range limits
    /// are [`ConfigError::InvalidTaskLimits`].
    #[must_use]
    pub fn task_limits(mut self, limits: crate::core::tasks::TaskLimits) -> Self {
        set_once(
            &mut self.task_limits,
            limits,
            "task_limits",
            &mut self.repeated,
        );
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
    /// final size check. On expiry the handler's cancellation token fires and the client
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

    /// Time-out of each `tools/call` of a tool without its own override (default
    /// [`DEFAULT_TOOL_TIMEOUT`]). It covers the handler and the check of its result. On expiry
    /// the handler's cancellation token fires and the client gets -32603 "Tool call timed
    /// out" with `data: {"name": …, "retryable": true}`. Same range and timer as
    /// [`ServerOptions::read_timeout`]. Compact mode's `search_tools` and `get_tool_details`
    /// are not bounded by it (they never run a handler of yours).
    ///
    /// ```
    /// use std::time::Duration;
    /// use strict_mcp::server::{ConfigError, ServerOptions, DEFAULT_TOOL_TIMEOUT};
    /// # use strict_mcp::core::{Invocation, ReadReply, RegistryBuilder, ResourceDef};
    /// # let registry = || RegistryBuilder::new().resource(ResourceDef::new("mem://a", "a",
    /// #     |_i: Invocation, _u: String| async move { Ok(ReadReply::new(vec![])) })).build().unwrap();
    /// let server = |o| strict_mcp::server::Server::new(registry(), o);
    /// assert_eq!(server(ServerOptions::new()).unwrap().tool_timeout(), DEFAULT_TOOL_TIMEOUT);
    /// let long = server(ServerOptions::new().tool_timeout(Duration::from_secs(3600)));
    /// assert_eq!(long.unwrap().tool_timeout(), Duration::from_secs(3600));
    /// let over = server(ServerOptions::new().tool_timeout(Duration::from_secs(3601)));
    /// assert!(matches!(over, Err(ConfigError::InvalidTimeout { option: "tool_timeout", .. })));
    /// ```
    #[must_use]
    pub fn tool_timeout(mut self, timeout: Duration) -> Self {
        set_once(
            &mut self.tool_timeout,
            timeout,
            "tool_timeout",
            &mut self.repeated,
        );
        self
    }

    /// Largest request accepted, in bytes: one stdio line or one HTTP body (default and hard
    /// maximum [`MAX_REQUEST_BYTES`], 2 MiB; at least [`MIN_REQUEST_BYTES`]). A longer
    /// HTTP body is answered 413 with -32600 and nothing past the cap is buffered; a longer
    /// stdio line is answered -32600 and skipped.
    ///
    /// ```
    /// use strict_mcp::server::{ConfigError, ServerOptions, MAX_REQUEST_BYTES, MIN_REQUEST_BYTES};
    /// # use strict_mcp::core::{Invocation, ReadReply, RegistryBuilder, ResourceDef};
    /// # let registry = || RegistryBuilder::new().resource(ResourceDef::new("mem://a", "a",
    /// #     |_i: Invocation, _u: String| async move { Ok(ReadReply::new(vec![])) })).build().unwrap();
    /// let server = |n| strict_mcp::server::Server::new(registry(), ServerOptions::new().max_request_bytes(n));
    /// assert_eq!(server(MIN_REQUEST_BYTES).unwrap().ingress_limits().max_frame_bytes, MIN_REQUEST_BYTES);
    /// assert!(matches!(server(MIN_REQUEST_BYTES - 1), Err(ConfigError::InvalidLimit { .. })));
    /// assert!(matches!(server(MAX_REQUEST_BYTES + 1), Err(ConfigError::InvalidLimit { .. })));
    /// ```
    #[must_use]
    pub fn max_request_bytes(mut self, bytes: usize) -> Self {
        set_once(
            &mut self.max_request_bytes,
            bytes,
            "max_request_bytes",
            &mut self.repeated,
        );
        self
    }

    /// Largest response sent, in bytes, the JSON-RPC envelope included (default and hard
    /// maximum [`MAX_RESPONSE_BYTES`], 16 MiB; at least [`MIN_RESPONSE_BYTES`]). 8 KiB of it
    /// stay reserved for envelope, id and identity. A tool result over it becomes the
    /// `result_too_large` failure; a resource read over it -32603 "Resource too large".
    #[must_use]
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        set_once(
            &mut self.max_response_bytes,
            bytes,
            "max_response_bytes",
            &mut self.repeated,
        );
        self
    }

    /// The wall clock (default [`SystemClock`]): milliseconds since the Unix epoch, read for
    /// what must hold across restarts and instances, the expiry of `requestState` and of the
    /// ledger's chains. Inject one to test expiry without waiting.
    #[must_use]
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        set_once(&mut self.clock, clock, "clock", &mut self.repeated);
        self
    }

    /// The monotonic clock of the machines' timers (default [`SystemMonotonic`]): the shutdown
    /// deadline, progress pacing and listen streams, which live only inside this process.
    #[must_use]
    pub fn monotonic_clock(mut self, clock: Arc<dyn MonotonicClock>) -> Self {
        set_once(
            &mut self.monotonic,
            clock,
            "monotonic_clock",
            &mut self.repeated,
        );
        self
    }

    /// Serve the initialise era too (feature `legacy`; default off): an `initialize` without
    /// modern `_meta` starts a legacy session of revision 2025-06-18 or 2025-11-25 instead of
    /// getting -32601. See [`legacy`].
    #[cfg(feature = "legacy")]
    #[must_use]
    pub fn legacy_era(mut self, on: bool) -> Self {
        set_once(&mut self.legacy_era, on, "legacy_era", &mut self.repeated);
        self
    }

    /// Bounds and mode of legacy Streamable HTTP sessions (feature `legacy`; default
    /// [`legacy::LegacyHttpConfig::default`]). See [`legacy::sessions`].
    #[cfg(feature = "legacy")]
    #[must_use]
    pub fn legacy_http(mut self, config: legacy::LegacyHttpConfig) -> Self {
        set_once(
            &mut self.legacy_http,
            config,
            "legacy_http",
            &mut self.repeated,
        );
        self
    }

    /// Enables the MCP Apps shell (default: off): compact `call_tool` links the shell
    /// `apps.uri`, `resources/read` of that URI returns `apps.html`, and results may select one
    /// of `apps.views` ([`Invocation::show_view`](crate::core::Invocation::show_view)). See
    /// [`apps`] for the wire. [`Server::new`] refuses a configuration
    /// the module does not accept ([`ConfigError::Apps`]) and Apps with direct mode, in
    /// either option order ([`ConfigError::AppsWithDirect`]).
    #[must_use]
    pub fn apps(mut self, apps: Apps) -> Self {
        set_once(&mut self.apps, apps, "apps", &mut self.repeated);
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

/// How a shutdown ended.
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
    /// supervisor can tell an abandoned shutdown from a clean one.
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
    /// Tasks (Tasks extension) whose work is still running or parked for input here.
    pub running_tasks: usize,
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

struct Inner {
    registry: RwLock<Arc<Registry>>,
    /// `{"name":…,"version":…}`, encoded once.
    info: Box<RawValue>,
    instructions: Option<String>,
    mode: PublishMode,
    publication: publication::Publication,
    continuations: mrtr::Continuations,
    /// The Tasks extension's state and live work.
    tasks: tasks::Tasks,
    /// Wall-clock milliseconds: `requestState` and ledger expiry.
    clock: Arc<dyn Clock>,
    /// Monotonic milliseconds: the machines' timers.
    monotonic: Arc<dyn MonotonicClock>,
    lifecycle: Mutex<Lifecycle>,
    next_call: AtomicU64,
    /// Shutdown cancellation of every admitted call.
    calls: Mutex<HashMap<CallId, CancelToken>>,
    /// Signalled whenever a call ends.
    ended: event_listener::Event,
    listens: listen::Hub,
    /// The listen event bus, this instance's id on it, and the sink it delivers to.
    bus: BusLink,
    budget: Duration,
    /// Time-out of reads and prompt gets without their own override.
    read_timeout: Duration,
    /// Time-out of tool calls without their own override.
    tool_timeout: Duration,
    /// Request bounds, with the configured request cap.
    ingress: IngressLimits,
    /// Response bounds, with the configured response cap.
    egress: EgressLimits,
    stdio_started: std::sync::atomic::AtomicBool,
    /// Whether `initialize` starts a legacy session ([`ServerOptions::legacy_era`]).
    #[cfg(feature = "legacy")]
    legacy_era: bool,
    /// The legacy Streamable HTTP sessions ([`ServerOptions::legacy_http`]).
    #[cfg(feature = "legacy")]
    legacy_sessions: legacy::Sessions,
    /// The Apps shell, when enabled ([`ServerOptions::apps`]).
    apps: Option<apps::Shell>,
}

/// Locks a mutex; every critical section here is a single map or machine step, so a poisoned
/// lock still holds consistent data.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Server {
    /// Fixes the whole configuration. Starts no listener, thread or task.
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
        let tool_timeout = options.tool_timeout.unwrap_or(DEFAULT_TOOL_TIMEOUT);
        if !crate::core::timeout_in_range(tool_timeout) {
            return Err(ConfigError::InvalidTimeout {
                option: "tool_timeout",
                value: tool_timeout,
            });
        }
        let ingress = IngressLimits {
            max_frame_bytes: limit_in_range(
                "max_request_bytes",
                options.max_request_bytes,
                MIN_REQUEST_BYTES,
                MAX_REQUEST_BYTES,
            )?,
            ..IngressLimits::SERVER
        };
        let egress = EgressLimits {
            max_message_bytes: limit_in_range(
                "max_response_bytes",
                options.max_response_bytes,
                MIN_RESPONSE_BYTES,
                MAX_RESPONSE_BYTES,
            )?,
            ..EgressLimits::SERVER
        };
        let apps = match options.apps {
            None => None,
            Some(_) if mode == PublishMode::Direct => return Err(ConfigError::AppsWithDirect),
            Some(apps) => Some(apps::Shell::new(apps, &info, &egress).map_err(ConfigError::Apps)?),
        };
        let ledger = LedgerConfig::with_ttl(
            options
                .state_ttl_ms
                .unwrap_or(crate::machine::ledger::DEFAULT_STATE_TTL_MS),
        );
        let task_limits = options.task_limits.unwrap_or_default();
        if !task_limits.is_valid() {
            return Err(ConfigError::InvalidTaskLimits(task_limits));
        }
        let task_store = options.task_store.unwrap_or_else(|| {
            Arc::new(crate::core::tasks::MemoryTaskStore::new(
                task_limits.max_tasks,
            ))
        });
        let instance = InstanceId::random().map_err(|_| ConfigError::Entropy)?;
        let (bus, shared_bus) = match options.bus {
            Some(bus) => (bus, true),
            None => (Arc::new(MemoryEventBus::new()) as Arc<dyn EventBus>, false),
        };
        Ok(Server {
            inner: Arc::new_cyclic(|weak: &std::sync::Weak<Inner>| Inner {
                registry: RwLock::new(Arc::new(registry)),
                info,
                instructions: options.instructions,
                mode,
                publication: publication::Publication::new(match mode {
                    PublishMode::Compact => publication::Mode::Compact,
                    PublishMode::Direct => publication::Mode::Direct,
                }),
                continuations: mrtr::Continuations::new(
                    ring,
                    options
                        .store
                        .unwrap_or_else(|| Arc::new(MemoryLedgerStore::default())),
                    ledger,
                ),
                tasks: tasks::Tasks::new(task_store, task_limits),
                clock: options
                    .clock
                    .unwrap_or_else(|| Arc::new(SystemClock::new())),
                monotonic: options
                    .monotonic
                    .unwrap_or_else(|| Arc::new(SystemMonotonic::new())),
                lifecycle: Mutex::new(Lifecycle::new(Epoch(0))),
                next_call: AtomicU64::new(1),
                calls: Mutex::new(HashMap::new()),
                ended: event_listener::Event::new(),
                listens: listen::Hub::default(),
                bus: BusLink::new(bus, shared_bus, instance, weak.clone()),
                budget: options.shutdown_budget.unwrap_or(DEFAULT_SHUTDOWN_BUDGET),
                read_timeout,
                tool_timeout,
                ingress,
                egress,
                stdio_started: std::sync::atomic::AtomicBool::new(false),
                #[cfg(feature = "legacy")]
                legacy_era: options.legacy_era.unwrap_or(false),
                #[cfg(feature = "legacy")]
                legacy_sessions: legacy::Sessions::new(options.legacy_http.unwrap_or_default()),
                apps,
            }),
        })
    }

    /// Serves one decoded message from `caller`. Everything it produces goes to `outbox`:
    /// notifications, then exactly one reply for a request; nothing at all for a notification,
    /// a response, or a request cancelled through `cancel`.
    pub async fn serve(
        &self,
        caller: Caller,
        message: Message,
        outbox: Arc<dyn Outbox>,
        cancel: CancelToken,
    ) {
        match message {
            Message::Request(request) => {
                admission::serve_request(self, caller, request, outbox, cancel, None).await;
            }
            // A11: never answered. Cancellation is routed by the driver through
            // [`Server::cancelled_request`]; any other notification means nothing here.
            Message::Notification(_) | Message::Response(_) => {}
        }
    }

    /// Serves one request as [`Server::serve`] does, after a host's check of its mirrored
    /// headers (HTTP) on the server's own parse of the params; a refusal is the
    /// request's one reply.
    #[cfg(feature = "http")]
    pub(crate) async fn serve_checked(
        &self,
        caller: Caller,
        request: crate::wire::jsonrpc::Request,
        outbox: Arc<dyn Outbox>,
        cancel: CancelToken,
        check: context::HostCheck,
    ) {
        admission::serve_request(self, caller, request, outbox, cancel, Some(check)).await;
    }

    /// For a `notifications/cancelled`, the exact JSON text of the `requestId` it cancels.
    /// `None` for any other notification and for malformed ones (ignored silently).
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

    /// Announces `notifications/resources/updated` for `uri` on listen streams subscribed to it:
    /// this server's at once, and every other instance's on a shared
    /// [`ServerOptions::event_bus`] (handed to the bus now, in call order; a bus failure is
    /// logged). [`Server::publish_change`] is the same with the bus's answer awaited.
    pub fn resource_updated(&self, uri: &str) {
        let change = crate::machine::subscriptions::Change::ResourceUpdated {
            uri: uri.to_owned(),
        };
        self.inner
            .listens
            .change(self.now(), &change, &self.inner.info);
        self.inner.bus.forward(change);
    }

    /// Publishes `change` to the listen streams of every instance: this server's own streams at
    /// once, the others' through the [`ServerOptions::event_bus`]. `replace_registry` announces
    /// its list changes on this server only (each instance swaps its own registry); an operator
    /// who swapped the whole fleet announces it once through here.
    ///
    /// # Errors
    /// [`BusError`] when the bus did not take the change (this server's streams have it
    /// anyway), [`BusError::TooLarge`] (and nothing delivered) for a URI over
    /// [`MAX_EVENT_URI_BYTES`](crate::core::bus::MAX_EVENT_URI_BYTES).
    pub async fn publish_change(
        &self,
        change: crate::machine::subscriptions::Change,
    ) -> Result<(), BusError> {
        crate::core::bus::check_event(&change)?;
        self.inner
            .listens
            .change(self.now(), &change, &self.inner.info);
        self.inner
            .bus
            .bus
            .publish(self.inner.bus.instance, &change)
            .await
    }

    /// Replaces the key ring that seals and opens `requestState`, without a restart. Tokens
    /// sealed under a key the new ring still holds (as current or previous) keep opening, so
    /// the documented two-step rotation works live: first give every instance a ring whose
    /// previous key is the old current one, then (once no token under the oldest key can be
    /// live) drop it. A token sealed under a key the new ring lacks is `state_rejected`.
    pub fn replace_key_ring(&self, ring: KeyRing) {
        self.inner.continuations.replace_ring(ring);
    }

    /// Stops admission for good, invalidates every outstanding `requestState` (epoch bump),
    /// cancels active calls, ends listen streams gracefully, and waits for active calls within
    /// `budget`.
    pub async fn shutdown(&self, budget: Duration) -> ShutdownReport {
        let budget_ms = u64::try_from(budget.as_millis()).unwrap_or(u64::MAX);
        // Running tasks end `cancelled` (their work is told to stop; Status counts them until
        // it has).
        self.inner.tasks.cancel_all(self, self.wall_now().0).await;
        let effects = lock(&self.inner.lifecycle)
            .handle(self.now(), EpochEvent::Shutdown { budget_ms })
            .0;
        for effect in effects {
            if let Some(report) = self.apply_epoch_effect(effect).await {
                return report;
            }
        }
        self.wait_drained().await
    }

    /// Carries out one effect of the epoch machine's shutdown or time-out; `Some` when it
    /// ends the shutdown.
    async fn apply_epoch_effect(&self, effect: EpochEffect) -> Option<ShutdownReport> {
        match route_epoch_effect(effect) {
            EpochRoute::ForwardEpoch(epoch) => {
                self.inner
                    .continuations
                    .bump_epoch(self.wall_now(), epoch)
                    .await;
            }
            EpochRoute::CancelCall(call) => {
                if let Some(token) = lock(&self.inner.calls).get(&call) {
                    token.cancel();
                }
            }
            EpochRoute::EveryListen(event) => {
                self.inner
                    .listens
                    .feed_all(self.now(), &event, &self.inner.info);
            }
            EpochRoute::Stopped => return Some(ShutdownReport::Stopped),
            EpochRoute::CleanupFailed { unfinished } => {
                return Some(ShutdownReport::CleanupFailed { unfinished })
            }
            EpochRoute::EndedTwice(call) => tracing::error!(call = call.0, "call ended twice"),
            // A second shutdown waits like the first; admission routes answer admissions,
            // which neither a shutdown nor a time-out is.
            EpochRoute::Nothing | EpochRoute::Run(_) | EpochRoute::Refuse => {}
        }
        None
    }

    /// Waits until the last call ends or the epoch machine's draining deadline
    /// ([`Lifecycle::poll_timeout`]) passes on the monotonic clock, then reports: on the
    /// clock's own wait when it has one ([`MonotonicClock::wait_until`]), else on one timer,
    /// re-armed only when the deadline changes or fired early by the clock's reckoning.
    async fn wait_drained(&self) -> ShutdownReport {
        let mut timer: Option<(Tick, deadline::Deadline)> = None;
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
            let Some(due) = lock(&self.inner.lifecycle).poll_timeout() else {
                // Not draining (shutdown never began): nothing to wait for.
                return ShutdownReport::Stopped;
            };
            let now = self.now();
            if now.has_reached(due) {
                let effects = lock(&self.inner.lifecycle).handle_timeout(now).0;
                for effect in effects {
                    if let Some(report) = self.apply_epoch_effect(effect).await {
                        return report;
                    }
                }
                continue;
            }
            // A clock that moves on its own account (a test's virtual clock) is waited on
            // directly, so the budget passes when that clock reaches the deadline.
            let clock = Arc::clone(&self.inner.monotonic);
            if let Some(reached) = clock.wait_until(due.0) {
                futures_util::future::select(listener, reached).await;
                continue;
            }
            let stale = match &timer {
                Some((armed, deadline)) => *armed != due || deadline.token.is_cancelled(),
                None => true,
            };
            if stale {
                let left = Duration::from_millis(due.saturating_since(now));
                timer = Some((due, deadline::Deadline::start(left)));
            }
            let Some((_, deadline)) = &timer else {
                continue;
            };
            let fired = deadline.token.cancelled();
            futures_util::pin_mut!(fired);
            futures_util::future::select(listener, fired).await;
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
            running_tasks: self.inner.tasks.running(),
        }
    }

    /// Ingress bounds for requests to this server, with the configured
    /// [`ServerOptions::max_request_bytes`].
    #[must_use]
    pub fn ingress_limits(&self) -> IngressLimits {
        self.inner.ingress
    }

    /// Egress bounds of this server's responses, with the configured
    /// [`ServerOptions::max_response_bytes`].
    #[must_use]
    pub fn egress_limits(&self) -> EgressLimits {
        self.inner.egress
    }

    /// The `x-mcp-header` annotations of the tool `name` as this server publishes it to
    /// `caller` (what the HTTP host checks a `tools/call`'s headers against). Compact mode
    /// lists only its three discovery tools, none annotated.
    pub(crate) fn published_param_headers(
        &self,
        caller: &Caller,
        name: &str,
    ) -> Option<Arc<[crate::wire::headers::ParamHeader]>> {
        match self.mode() {
            PublishMode::Direct => self.registry().param_headers(caller, name).ok(),
            PublishMode::Compact => None,
        }
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

    /// The time-out of tool calls without their own override.
    #[must_use]
    pub fn tool_timeout(&self) -> Duration {
        self.inner.tool_timeout
    }

    /// The budget the stdio host uses at EOF.
    #[must_use]
    pub fn shutdown_budget(&self) -> Duration {
        self.inner.budget
    }

    /// Now on the monotonic clock: what the epoch, pacer and listen machines are fed.
    pub(crate) fn now(&self) -> Tick {
        Tick(self.inner.monotonic.elapsed_ms())
    }

    /// Now on the wall clock: what the ledger and its store are fed (expiry that must hold
    /// across restarts and instances).
    pub(crate) fn wall_now(&self) -> Tick {
        Tick(self.inner.clock.now_ms())
    }

    /// The monotonic clock, for per-request machines (the progress pacer).
    pub(crate) fn monotonic_clock(&self) -> Arc<dyn MonotonicClock> {
        Arc::clone(&self.inner.monotonic)
    }

    /// `{"name":…,"version":…}` as encoded once.
    pub(crate) fn info(&self) -> &RawValue {
        &self.inner.info
    }

    /// `instructions` for `server/discover`.
    pub(crate) fn instructions(&self) -> Option<&str> {
        self.inner.instructions.as_deref()
    }

    /// How tools appear on the wire in this server's mode.
    pub(crate) fn publication(&self) -> &publication::Publication {
        &self.inner.publication
    }

    /// The Apps shell, when enabled.
    pub(crate) fn apps(&self) -> Option<&apps::Shell> {
        self.inner.apps.as_ref()
    }

    /// The open listen streams.
    pub(crate) fn listens(&self) -> &listen::Hub {
        &self.inner.listens
    }

    /// Attaches this instance to its event bus (once, again after a loss) and returns the
    /// attachment's generation: a stream opened under it must be ended if the generation
    /// moved on meanwhile ([`Server::bus_generation`]).
    pub(crate) async fn attach_bus(&self) -> Result<u64, BusError> {
        self.inner.bus.attach().await
    }

    /// The current bus attachment generation (bumped by every loss).
    pub(crate) fn bus_generation(&self) -> u64 {
        self.inner.bus.generation.load(Ordering::SeqCst)
    }

    /// Sealing keys, ledger store and limits of continuation chains.
    pub(crate) fn tasks(&self) -> &tasks::Tasks {
        &self.inner.tasks
    }

    pub(crate) fn continuations(&self) -> &mrtr::Continuations {
        &self.inner.continuations
    }

    /// Admits one call: `Some((id, epoch, shutdown token))`, or `None` once shutdown began.
    pub(crate) fn admit(&self) -> Option<(CallId, Epoch, CancelToken)> {
        let call = CallId(self.inner.next_call.fetch_add(1, Ordering::Relaxed));
        let token = CancelToken::new();
        let mut lifecycle = lock(&self.inner.lifecycle);
        let effects = lifecycle.handle(self.now(), EpochEvent::Admit(call)).0;
        for effect in effects {
            match route_epoch_effect(effect) {
                EpochRoute::Run(epoch) => {
                    lock(&self.inner.calls).insert(call, token.clone());
                    return Some((call, epoch, token));
                }
                EpochRoute::Refuse => return None,
                // The draining deadline passed on this event: `wait_drained` reads the phase.
                EpochRoute::CleanupFailed { .. } => {}
                // Not answers to an admission.
                EpochRoute::ForwardEpoch(_)
                | EpochRoute::CancelCall(_)
                | EpochRoute::EveryListen(_)
                | EpochRoute::Stopped
                | EpochRoute::EndedTwice(_)
                | EpochRoute::Nothing => {}
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
            match route_epoch_effect(effect) {
                EpochRoute::EndedTwice(call) => {
                    tracing::error!(call = call.0, "call ended twice");
                }
                // The last call of a draining server ended, or the draining deadline passed
                // on this event: `wait_drained` reads the phase.
                EpochRoute::Stopped | EpochRoute::CleanupFailed { .. } => {}
                EpochRoute::Run(_)
                | EpochRoute::Refuse
                | EpochRoute::ForwardEpoch(_)
                | EpochRoute::CancelCall(_)
                | EpochRoute::EveryListen(_)
                | EpochRoute::Nothing => {}
            }
        }
        self.inner.ended.notify(usize::MAX);
    }

    /// Whether this server serves the initialise era ([`ServerOptions::legacy_era`]).
    #[cfg(feature = "legacy")]
    #[must_use]
    pub fn legacy_era(&self) -> bool {
        self.inner.legacy_era
    }

    /// The legacy Streamable HTTP sessions of this server.
    #[cfg(feature = "legacy")]
    #[must_use]
    pub fn legacy_sessions(&self) -> &legacy::Sessions {
        &self.inner.legacy_sessions
    }

    /// Marks the stdio host as started; false when it already ran.
    #[cfg(feature = "stdio")]
    pub(crate) fn claim_stdio(&self) -> bool {
        !self.inner.stdio_started.swap(true, Ordering::AcqRel)
    }
}

/// A server's place on its listen event bus: the bus, this instance's id, the sink the bus
/// delivers to, and whether (under which generation) the sink is attached.
struct BusLink {
    bus: Arc<dyn EventBus>,
    /// False for the private default bus, where nobody else listens: nothing is forwarded.
    shared: bool,
    instance: InstanceId,
    sink: Arc<dyn crate::core::bus::BusSink>,
    /// Generation of the current attachment; bumped by every loss.
    generation: AtomicU64,
    /// The generation that is attached, if any (`u64::MAX`: none).
    attached: AtomicU64,
    /// Serialises attach attempts.
    attaching: tokio::sync::Mutex<()>,
}

/// What the bus delivers to: the server's hub, held weakly (the bus never keeps a server).
struct HubSink {
    inner: std::sync::Weak<Inner>,
}

impl crate::core::bus::BusSink for HubSink {
    fn deliver(&self, change: &crate::machine::subscriptions::Change) {
        if let Some(inner) = self.inner.upgrade() {
            let now = Tick(inner.monotonic.elapsed_ms());
            inner.listens.change(now, change, &inner.info);
        }
    }

    fn lost(&self, error: &BusError) {
        let Some(inner) = self.inner.upgrade() else {
            return;
        };
        tracing::warn!(%error, "listen event bus lost; ending listen streams");
        // Bump first: a stream opened under the old generation from here on sees the bump
        // after it is registered and ends itself; one registered before is ended here.
        inner.bus.generation.fetch_add(1, Ordering::SeqCst);
        inner.bus.attached.store(u64::MAX, Ordering::SeqCst);
        inner.listens.fail_all(error);
    }
}

impl BusLink {
    fn new(
        bus: Arc<dyn EventBus>,
        shared: bool,
        instance: InstanceId,
        inner: std::sync::Weak<Inner>,
    ) -> BusLink {
        BusLink {
            bus,
            shared,
            instance,
            sink: Arc::new(HubSink { inner }),
            generation: AtomicU64::new(0),
            attached: AtomicU64::new(u64::MAX),
            attaching: tokio::sync::Mutex::new(()),
        }
    }

    async fn attach(&self) -> Result<u64, BusError> {
        if !self.shared {
            return Ok(self.generation.load(Ordering::SeqCst));
        }
        let _one = self.attaching.lock().await;
        let generation = self.generation.load(Ordering::SeqCst);
        if self.attached.load(Ordering::SeqCst) == generation {
            return Ok(generation);
        }
        self.bus
            .attach(self.instance, Arc::downgrade(&self.sink))
            .await?;
        self.attached.store(generation, Ordering::SeqCst);
        Ok(generation)
    }

    /// Hands a local change to a shared bus (the bus takes it in call order); the outcome is
    /// awaited on the current runtime and logged when it failed.
    fn forward(&self, change: crate::machine::subscriptions::Change) {
        if !self.shared {
            return;
        }
        let bus = Arc::clone(&self.bus);
        let instance = self.instance;
        let report = |result: Result<(), BusError>| {
            if let Err(error) = result {
                tracing::warn!(%error, "listen event not published on the bus");
            }
        };
        // The bus takes the change when `publish` is called; only its answer may be pending.
        let mut sent = Box::pin(async move { bus.publish(instance, &change).await });
        match futures_util::FutureExt::now_or_never(&mut sent) {
            Some(result) => report(result),
            None => match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    runtime.spawn(async move { report(sent.await) });
                }
                Err(_) => tracing::warn!("no runtime to await the bus's answer; not awaited"),
            },
        }
    }
}
