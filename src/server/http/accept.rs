//! The bundled accept loop ([`serve`], [`serve_with`]): loopback listener, connection
//! limit, header read and idle time-outs, refused connections answered 503.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Bytes, Frame, Incoming, SizeHint};
use hyper::{Request, Response, StatusCode};

use crate::codec::{self, EgressLimits};
use crate::wire::errors::Cause;

use super::response::{plain, refusal};
use super::*;

// Accept loop

/// Socket options for every accepted connection: TCP_NODELAY, so small JSON-RPC replies and SSE
/// events are not held back by Nagle's algorithm (users' top latency complaint).
fn prepare_accepted(stream: &tokio::net::TcpStream) -> std::io::Result<()> {
    stream.set_nodelay(true)
}

/// The path [`serve`] answers when [`HttpConfig::path`] is `None` (the conformance suite,
/// the examples and most clients use `/mcp`).
pub const DEFAULT_PATH: &str = "/mcp";

/// Default of [`ServeConfig::header_read_timeout`]: ample for any client on a real network,
/// short enough that connections which never finish their headers do not pile up.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Default of [`ServeConfig::idle_timeout`]: long enough for a client to reuse a connection
/// between bursts of calls, short enough that abandoned connections are reclaimed.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// Default of [`ServeConfig::max_connections`]: far above what one MCP deployment behind
/// [`serve`] needs, far below the file-descriptor limits of common systems.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

/// Most refused connections kept open at once while their 503 is written and the client's
/// request is read away (see [`ServeConfig::refusal_linger`]); past this a refused connection
/// is closed at once, so a connection flood costs no more than this many sockets beyond the
/// limit.
pub const MAX_LINGERING_REFUSALS: usize = 64;

/// Default of [`ServeConfig::refusal_linger`]: how long a refused connection is kept to write
/// its 503 and read what the client sends, so the client sees the refusal rather than a reset.
pub const REFUSAL_LINGER: Duration = Duration::from_secs(1);

/// Longest [`ServeConfig::refusal_linger`]; a longer one is cut to this. A client that reads
/// its 503 and closes ends the linger at once, so only silent clients use all of it, and while
/// [`MAX_LINGERING_REFUSALS`] of them linger every further refused connection is closed without
/// its 503: a refused connection is held no longer than a served one gets by default to send
/// its headers ([`DEFAULT_HEADER_READ_TIMEOUT`]).
pub const MAX_REFUSAL_LINGER: Duration = DEFAULT_HEADER_READ_TIMEOUT;

/// Most bytes read and discarded from a refused connection (see [`REFUSAL_LINGER`]).
const MAX_REFUSAL_DISCARD: usize = 64 * 1024;

/// Settings of the accept loop ([`serve_with`]). A user who mounts [`McpHttp`] behind their
/// own server configures the equivalents there (see the module docs).
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// Time a connection may take to send a request's complete headers, from the moment the
    /// host starts waiting for them; past it the connection is closed without an answer (slow
    /// header senders, connections that never speak). HTTP/1.1 only: hyper also runs this
    /// timer while a kept-alive connection waits for its next request, so an idle HTTP/1.1
    /// connection closes after the shorter of this and [`ServeConfig::idle_timeout`].
    /// Default [`DEFAULT_HEADER_READ_TIMEOUT`].
    pub header_read_timeout: Duration,
    /// Time a connection may stay open with no request in flight (HTTP/1.1 keep-alive, HTTP/2)
    /// before it is closed gracefully. Default [`DEFAULT_IDLE_TIMEOUT`].
    pub idle_timeout: Duration,
    /// Most connections served at once. One more is answered `503 Service Unavailable` with a
    /// JSON-RPC error body (`-32603`, `"id": null`) and `Connection: close`, written as
    /// HTTP/1.1, and closed: the client can read why, and the served connections are not
    /// slowed. Default [`DEFAULT_MAX_CONNECTIONS`].
    pub max_connections: usize,
    /// Most requests in flight at once over all connections (HTTP/2 streams included), from
    /// the moment the path is checked until the response body is done, so open SSE streams
    /// count. One more is answered `503` with `Retry-After: 1` and a JSON-RPC error (`-32603`,
    /// `"id": null`, "Server busy: too many requests in flight") without reaching the service.
    /// Default [`DEFAULT_MAX_REQUESTS_IN_FLIGHT`].
    pub max_requests_in_flight: usize,
    /// Whether a connection may speak HTTP/2 (prior knowledge, `h2c`) besides HTTP/1.1. `true`
    /// (the default, as before this field existed): the first bytes of each connection are
    /// read to tell the two apart. `false`: every connection is HTTP/1.1 from its first byte,
    /// with no version sniffing and no HTTP/2 state; a connection that opens with the HTTP/2
    /// preface is closed without an answer (hyper's HTTP/1.1 server). Streamable HTTP needs
    /// nothing of HTTP/2, so a deployment whose clients all speak HTTP/1.1 (every MCP SDK's
    /// default) may turn it off. Default [`DEFAULT_HTTP2`].
    pub http2: bool,
    /// How long a connection refused at [`ServeConfig::max_connections`] is kept, after its
    /// 503, reading away what the client sends: closing a socket with unread bytes resets it,
    /// and a reset can reach the client before the 503 and hide it. `Duration::ZERO` closes the
    /// connection at once after the 503 (written as far as the socket takes it without waiting:
    /// all of it on a new connection), for a host that would rather free the socket than
    /// explain the refusal. Cut to [`MAX_REFUSAL_LINGER`]. Default [`REFUSAL_LINGER`].
    pub refusal_linger: Duration,
}

/// Default of [`ServeConfig::http2`]: on, so clients that speak HTTP/2 with prior knowledge
/// keep working as they did before the switch existed.
pub const DEFAULT_HTTP2: bool = true;

/// Default of [`ServeConfig::max_requests_in_flight`]: a few requests per connection at the
/// default connection limit, far more than one server's handlers usually run at once, while
/// still bounding the memory and tasks a burst can claim.
pub const DEFAULT_MAX_REQUESTS_IN_FLIGHT: usize = 4096;

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_requests_in_flight: DEFAULT_MAX_REQUESTS_IN_FLIGHT,
            http2: DEFAULT_HTTP2,
            refusal_linger: REFUSAL_LINGER,
        }
    }
}

/// A service [`serve`] can run: an HTTP service that says which request paths it answers, so
/// the accept loop can keep to one endpoint and answer every other path with a plain 404
/// before the service sees it.
///
/// [`McpHttp`] answers its [`HttpConfig::path`] (or [`DEFAULT_PATH`]); `server::auth`'s
/// `AuthService` answers its inner service's paths plus the Protected Resource Metadata
/// paths. For any other middleware, wrap the stack in [`OnPaths`] and name the paths.
pub trait Endpoint {
    /// The exact request paths this service answers (compared byte for byte, no query).
    fn paths(&self) -> Vec<String>;
}

impl<D: Dispatch> Endpoint for McpHttp<D> {
    fn paths(&self) -> Vec<String> {
        vec![self
            .config()
            .path
            .clone()
            .unwrap_or_else(|| DEFAULT_PATH.to_owned())]
    }
}

#[cfg(feature = "auth")]
impl<S: Endpoint> Endpoint for crate::server::auth::AuthService<S> {
    fn paths(&self) -> Vec<String> {
        let mut paths = self.get_ref().paths();
        for path in self.config().metadata_paths() {
            if !paths.contains(&path) {
                paths.push(path);
            }
        }
        paths
    }
}

/// Any HTTP service (a `tower` middleware stack around [`McpHttp`], say) with the paths
/// [`serve`] should let through to it; every other path is answered 404 by the loop.
///
/// ```
/// use strict_mcp::server::http::{Endpoint, OnPaths};
/// let service = tower::service_fn(|_: hyper::Request<hyper::body::Incoming>| async {
///     Ok::<_, std::convert::Infallible>(hyper::Response::new(String::new()))
/// });
/// let endpoint = OnPaths::new(["/mcp", "/healthz"], service);
/// assert_eq!(endpoint.paths(), ["/mcp", "/healthz"]);
/// ```
#[derive(Debug, Clone)]
pub struct OnPaths<S> {
    paths: Vec<String>,
    service: S,
}

impl<S> OnPaths<S> {
    /// `service`, answering exactly `paths`.
    pub fn new<I, P>(paths: I, service: S) -> Self
    where
        I: IntoIterator<Item = P>,
        P: Into<String>,
    {
        OnPaths {
            paths: paths.into_iter().map(Into::into).collect(),
            service,
        }
    }
}

impl<S> Endpoint for OnPaths<S> {
    fn paths(&self) -> Vec<String> {
        self.paths.clone()
    }
}

impl<S, R> tower::Service<R> for OnPaths<S>
where
    S: tower::Service<R>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.service.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> S::Future {
        self.service.call(request)
    }
}

/// The error type a served service or its body may fail with.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Serves `service` on `listener` with [`ServeConfig::default`] until `shutdown` resolves; see
/// [`serve_with`].
///
/// `service` is [`McpHttp`] itself or any `tower::Service` in front of it that implements
/// [`Endpoint`] (`AuthLayer`'s service does; wrap other stacks in [`OnPaths`]). A middleware
/// that authenticates a request sets its [`Caller`] as a request extension; [`McpHttp`] runs
/// the request as that caller (anonymous without one).
///
/// Bind to `127.0.0.1` unless a security design for other interfaces exists.
///
/// ```no_run
/// use std::time::Duration;
/// use strict_mcp::core::{Invocation, RegistryBuilder, ToolDef};
/// use strict_mcp::server::http::{serve, HttpConfig, McpHttp};
/// use strict_mcp::server::{Server, ServerOptions};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Ping {}
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Pong {}
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let registry = RegistryBuilder::new()
///     .tool(ToolDef::typed("ping", |_: Invocation, _: Ping| async { Ok(Pong {}) }))
///     .build()?;
/// let server = Server::new(registry, ServerOptions::new())?;
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8123").await?;
/// let service = McpHttp::new(server.clone(), HttpConfig::default()); // answers on /mcp
/// let stop = async {
///     let _ = tokio::signal::ctrl_c().await;
///     // End listen streams and cancel calls first, then let connections drain.
///     server.shutdown(Duration::from_secs(5)).await;
/// };
/// serve(listener, service, stop).await?;
/// # Ok(())
/// # }
/// ```
///
/// # Errors
/// None today; the `Result` leaves room for listener failures that end the loop.
pub async fn serve<S, B>(
    listener: tokio::net::TcpListener,
    service: S,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()>
where
    S: Endpoint + tower::Service<Request<Incoming>, Response = Response<B>>,
    S: Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    serve_with(listener, service, ServeConfig::default(), shutdown).await
}

/// Serves `service` on `listener` until `shutdown` resolves: one endpoint
/// ([`Endpoint::paths`]; every other path gets a plain 404), TCP_NODELAY on every
/// accepted socket, HTTP/1.1 and HTTP/2 ([`ServeConfig::http2`]), the time-outs and
/// connection limit of `config`, then a graceful close (no new connections or requests;
/// in-flight responses finish, so shut the protocol server down first to end listen streams).
///
/// A middleware in front of [`McpHttp`] that fails (returns an error) or panics is answered
/// `500` with one JSON-RPC `-32603` (`"id": null`); the cause is only logged.
///
/// # Errors
/// None today; the `Result` leaves room for listener failures that end the loop.
pub async fn serve_with<S, B>(
    listener: tokio::net::TcpListener,
    service: S,
    config: ServeConfig,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()>
where
    S: Endpoint + tower::Service<Request<Incoming>, Response = Response<B>>,
    S: Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
    use hyper_util::server::conn::auto::Builder;

    let paths: Arc<[String]> = service.paths().into();
    let in_flight = Arc::new(tokio::sync::Semaphore::new(
        config
            .max_requests_in_flight
            .min(tokio::sync::Semaphore::MAX_PERMITS),
    ));
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut connections = tokio::task::JoinSet::new();
    let mut refusals = tokio::task::JoinSet::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
            Some(_) = refusals.join_next(), if !refusals.is_empty() => continue,
        };
        let (stream, peer): (tokio::net::TcpStream, SocketAddr) = match accepted {
            Ok(pair) => pair,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        while connections.try_join_next().is_some() {}
        if connections.len() >= config.max_connections {
            tracing::warn!(%peer, limit = config.max_connections, "connection refused: at the limit");
            while refusals.try_join_next().is_some() {}
            if refusals.len() < MAX_LINGERING_REFUSALS {
                refusals.spawn(refuse_connection(stream, config.refusal_linger));
            }
            continue;
        }
        if let Err(e) = prepare_accepted(&stream) {
            tracing::debug!(error = %e, %peer, "TCP_NODELAY not set");
        }
        let activity = Arc::new(Activity::new());
        let conn_service = ConnService {
            service: service.clone(),
            paths: paths.clone(),
            activity: activity.clone(),
            in_flight: in_flight.clone(),
            in_flight_max: config.max_requests_in_flight,
        };
        let stop = stop_rx.clone();
        let (header_read_timeout, idle_timeout) = (config.header_read_timeout, config.idle_timeout);
        let http2 = config.http2;
        let header_clock = Arc::new(HeaderClock::new(header_read_timeout));
        let header_timer = HeaderTimer(header_clock.clone());
        connections.spawn(async move {
            // The stop signal and the idle time-out are watched by a task of their own, so
            // this task, woken several times per request, polls one `oneshot` beside the
            // connection instead of a watch receiver and a timer each time (≈ 1.8 k
            // instructions per request, issue #23). It ends with this task.
            let (close_tx, mut close_rx) = tokio::sync::oneshot::channel();
            let _watchdog = AbortOnDrop(tokio::spawn(watch_connection(
                stop,
                activity,
                idle_timeout,
                header_clock,
                peer,
                close_tx,
            )));
            let mut builder = Builder::new(TokioExecutor::new());
            builder
                .http1()
                .timer(header_timer)
                .header_read_timeout(header_read_timeout);
            if http2 {
                builder.http2().timer(TokioTimer::new());
                let first = tokio::select! {
                    biased;
                    _ = &mut close_rx => return,
                    first = FirstBytes::peek(&stream) => first,
                };
                builder = match first {
                    FirstBytes::Http1 => builder.http1_only(),
                    FirstBytes::Http2 => builder.http2_only(),
                    FirstBytes::Unsure => builder,
                };
            } else {
                builder = builder.http1_only();
            }
            let connection = builder.serve_connection(TokioIo::new(stream), conn_service);
            let mut connection = std::pin::pin!(connection);
            tokio::select! {
                biased;
                result = connection.as_mut() => {
                    if let Err(e) = result {
                        tracing::debug!(error = %e, %peer, "connection ended with an error");
                    }
                    return;
                }
                _ = &mut close_rx => {}
            }
            connection.as_mut().graceful_shutdown();
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, %peer, "connection ended with an error");
            }
        });
    }
    drop(listener);
    refusals.abort_all();
    let _ = stop_tx.send(true);
    while connections.join_next().await.is_some() {}
    Ok(())
}

/// Tells a connection to close gracefully (`close`) once the accept loop stops or the
/// connection has been idle for `idle`; ends early when the connection ends first (`close`
/// dropped). Meanwhile it keeps the connection's [`HeaderClock`], which fires hyper's
/// header-read time-out.
async fn watch_connection(
    mut stop: tokio::sync::watch::Receiver<bool>,
    activity: Arc<Activity>,
    idle: Duration,
    header_clock: Arc<HeaderClock>,
    peer: SocketAddr,
    mut close: tokio::sync::oneshot::Sender<()>,
) {
    tokio::select! {
        _ = stop.wait_for(|s| *s) => {}
        () = activity.idle_expired(idle) => {
            tracing::debug!(%peer, "idle connection closed");
        }
        never = header_clock.keep() => match never {},
        () = close.closed() => return,
    }
    let _ = close.send(());
}

// ---------------------------------------------------------------------------------------------
// The header-read timer

/// hyper's timer for one HTTP/1.1 connection, which hyper uses for its header-read time-out
/// ([`ServeConfig::header_read_timeout`]) only. hyper arms a new sleep for every request it
/// waits for and drops it once the head is read; with tokio's timer (`TokioTimer`) each of
/// those is a boxed `tokio::time::Sleep` registered in and removed from the runtime's timer
/// wheel, ≈ 1.2 k instructions per request (issue #23). Here a sleep is a deadline in the
/// connection's [`HeaderClock`], which the connection's watchdog task checks on its own
/// schedule: arming, polling and dropping one costs a small box and an uncontended lock. A
/// sleep the clock cannot serve exactly (a second one at once, or a deadline before the
/// watchdog's next look) is tokio's as before, so every sleep fires at its deadline.
#[derive(Clone)]
struct HeaderTimer(Arc<HeaderClock>);

/// The one sleep a [`HeaderTimer`] keeps itself, and when its watchdog looks next.
struct HeaderClock {
    /// hyper's header-read time-out: every sleep hyper arms ends this long after it is armed.
    period: Duration,
    slot: Mutex<HeaderSlot>,
}

struct HeaderSlot {
    /// The watchdog's next look; a sleep due before it is left to tokio's timer.
    look_at: tokio::time::Instant,
    /// The sleep the clock keeps, if any.
    armed: Option<ArmedSleep>,
}

struct ArmedSleep {
    deadline: tokio::time::Instant,
    fired: bool,
    waker: Option<std::task::Waker>,
}

impl HeaderClock {
    fn new(period: Duration) -> Self {
        HeaderClock {
            period,
            slot: Mutex::new(HeaderSlot {
                // Any sleep hyper arms from now on is due `period` after it is armed, so not
                // before this: the watchdog's first look.
                look_at: later(tokio::time::Instant::now(), period),
                armed: None,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HeaderSlot> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Arms the clock's sleep for `deadline`; `false` when it cannot serve it exactly (one is
    /// armed already, or the watchdog looks only after `deadline`).
    fn arm(&self, deadline: tokio::time::Instant) -> bool {
        let mut slot = self.lock();
        if slot.armed.is_some() || deadline < slot.look_at {
            return false;
        }
        slot.armed = Some(ArmedSleep {
            deadline,
            fired: false,
            waker: None,
        });
        true
    }

    /// Moves the armed sleep to `deadline`; `false` (nothing changed) when the watchdog would
    /// look only after it.
    fn rearm(&self, deadline: tokio::time::Instant) -> bool {
        let mut slot = self.lock();
        if deadline < slot.look_at {
            return false;
        }
        if let Some(armed) = slot.armed.as_mut() {
            armed.deadline = deadline;
            armed.fired = false;
        }
        true
    }

    fn disarm(&self) {
        self.lock().armed = None;
    }

    fn poll_sleep(&self, cx: &mut Context<'_>) -> Poll<()> {
        let mut slot = self.lock();
        let Some(armed) = slot.armed.as_mut() else {
            return Poll::Ready(()); // not reached: a sleep is armed for its whole life
        };
        if armed.fired || armed.deadline <= tokio::time::Instant::now() {
            armed.fired = true;
            return Poll::Ready(());
        }
        if !armed
            .waker
            .as_ref()
            .is_some_and(|w| w.will_wake(cx.waker()))
        {
            armed.waker = Some(cx.waker().clone());
        }
        Poll::Pending
    }

    /// The watchdog's side, for the connection's life: at each look fires the sleep that is
    /// due, then waits for the armed sleep's deadline, or for `period` when none is armed
    /// (a sleep armed meanwhile is due no earlier).
    async fn keep(&self) -> Infallible {
        loop {
            let look_at = self.lock().look_at;
            tokio::time::sleep_until(look_at).await;
            let now = tokio::time::Instant::now();
            let mut slot = self.lock();
            let next = match slot.armed.as_mut() {
                Some(armed) if !armed.fired && armed.deadline > now => armed.deadline,
                Some(armed) => {
                    if !armed.fired {
                        armed.fired = true;
                        if let Some(waker) = armed.waker.take() {
                            waker.wake();
                        }
                    }
                    later(now, self.period)
                }
                None => later(now, self.period),
            };
            slot.look_at = next;
        }
    }
}

/// `at + period`, or about thirty years on when that does not fit in an `Instant` (a
/// configured time-out of `Duration::MAX`): the clock's own arithmetic must never panic in
/// the accept loop, which would stop every connection, not one.
fn later(at: tokio::time::Instant, period: Duration) -> tokio::time::Instant {
    const FAR: Duration = Duration::from_secs(30 * 365 * 86_400);
    at.checked_add(period)
        .or_else(|| at.checked_add(FAR))
        .unwrap_or(at)
}

/// A sleep kept by a [`HeaderClock`].
struct HeaderSleep(Arc<HeaderClock>);

impl Future for HeaderSleep {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.0.poll_sleep(cx)
    }
}

impl hyper::rt::Sleep for HeaderSleep {}

impl Drop for HeaderSleep {
    fn drop(&mut self) {
        self.0.disarm();
    }
}

impl hyper::rt::Timer for HeaderTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        self.sleep_until(self.now() + duration)
    }

    fn sleep_until(&self, deadline: std::time::Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        if self.0.arm(deadline.into()) {
            Box::pin(HeaderSleep(self.0.clone()))
        } else {
            hyper_util::rt::TokioTimer::new().sleep_until(deadline)
        }
    }

    fn now(&self) -> std::time::Instant {
        // tokio's clock, as `TokioTimer` does, so a paused test clock holds for both.
        tokio::time::Instant::now().into_std()
    }

    fn reset(&self, sleep: &mut Pin<Box<dyn hyper::rt::Sleep>>, new_deadline: std::time::Instant) {
        if sleep.as_mut().downcast_mut_pin::<HeaderSleep>().is_some() {
            if !self.0.rearm(new_deadline.into()) {
                *sleep = hyper_util::rt::TokioTimer::new().sleep_until(new_deadline);
            }
        } else {
            hyper_util::rt::TokioTimer::new().reset(sleep, new_deadline);
        }
    }
}

/// HTTP/2's connection preface, which a client speaking HTTP/2 with prior knowledge sends first.
const HTTP2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// What the first bytes of a connection say about its protocol, read without consuming them.
///
/// `hyper_util`'s auto builder tells HTTP/2 from HTTP/1.1 by reading the first bytes and
/// handing them back to hyper as a prefix, so hyper's first read returns only that prefix,
/// the request head is incomplete, and the second read doubles hyper's read buffer to 16 KiB
/// for the connection's life (issue #23: 24.2 against 19.8 KiB of RSS per idle listen
/// stream). Peeked bytes stay in the socket, so hyper reads the whole head at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FirstBytes {
    /// A byte differs from the preface: HTTP/1.1 (the auto builder decides the same).
    Http1,
    /// The whole preface: HTTP/2 with prior knowledge.
    Http2,
    /// A prefix of the preface, nothing yet (end of stream) or a read error: the auto builder
    /// reads on and decides, as before.
    Unsure,
}

impl FirstBytes {
    /// Waits until the connection is readable and classifies what has arrived.
    async fn peek(stream: &tokio::net::TcpStream) -> Self {
        let mut first = [0u8; HTTP2_PREFACE.len()];
        match stream.peek(&mut first).await {
            Ok(n) => Self::of(&first[..n]),
            Err(_) => Self::Unsure,
        }
    }

    fn of(bytes: &[u8]) -> Self {
        if bytes.iter().zip(HTTP2_PREFACE).any(|(a, b)| a != b) {
            Self::Http1
        } else if bytes.len() == HTTP2_PREFACE.len() {
            Self::Http2
        } else {
            Self::Unsure
        }
    }
}

/// Aborts a task when dropped: a connection's watchdog ends with its connection.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Answers a connection over the limit: a 503 with a JSON-RPC error (`"id": null`), then the
/// write side closed and what the client sends read away, all within `linger` (cut to
/// [`MAX_REFUSAL_LINGER`]), so its pending request does not turn the close into a reset that
/// hides the answer.
async fn refuse_connection(mut stream: tokio::net::TcpStream, linger: Duration) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    let reply = codec::encode_error(
        None,
        Cause::Overloaded,
        "Server busy: too many connections",
        None,
        &EgressLimits::SERVER,
    );
    let body = reply.body.unwrap_or_default();
    let head = format!(
        "HTTP/1.1 {} Service Unavailable\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n",
        reply.status,
        body.len()
    );
    let _ = tokio::time::timeout(linger.min(MAX_REFUSAL_LINGER), async {
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body.as_bytes()).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 4096];
        let mut discarded = 0;
        while discarded < MAX_REFUSAL_DISCARD {
            match stream.read(&mut sink).await? {
                0 => break,
                n => discarded += n,
            }
        }
        Ok::<_, std::io::Error>(())
    })
    .await;
}

/// Requests in flight on one connection and since when it has had none, for the idle
/// time-out. Nothing is signalled per request: the watchdog rechecks when its deadline comes.
struct Activity {
    state: Mutex<(usize, tokio::time::Instant)>,
}

impl Activity {
    fn new() -> Self {
        Activity {
            state: Mutex::new((0, tokio::time::Instant::now())),
        }
    }

    fn lock(&self) -> MutexGuard<'_, (usize, tokio::time::Instant)> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn begin(self: &Arc<Self>) -> Busy {
        self.lock().0 += 1;
        Busy(self.clone())
    }

    /// Resolves once the connection has had no request in flight for `idle`. While requests
    /// run it wakes once per `idle` to look again.
    async fn idle_expired(&self, idle: Duration) {
        let mut deadline = tokio::time::Instant::now() + idle;
        loop {
            tokio::time::sleep_until(deadline).await;
            let (in_flight, since) = *self.lock();
            if in_flight > 0 {
                deadline = tokio::time::Instant::now() + idle;
            } else if since + idle <= tokio::time::Instant::now() {
                return;
            } else {
                deadline = since + idle;
            }
        }
    }
}

/// One request in flight, from the service call until its response body is done or dropped.
struct Busy(Arc<Activity>);

impl Drop for Busy {
    fn drop(&mut self) {
        let mut s = self.0.lock();
        s.0 = s.0.saturating_sub(1);
        if s.0 == 0 {
            s.1 = tokio::time::Instant::now();
        }
    }
}

/// The per-connection service of [`serve_with`]: the path check and activity tracking around
/// the served service.
struct ConnService<S> {
    service: S,
    paths: Arc<[String]>,
    activity: Arc<Activity>,
    in_flight: Arc<tokio::sync::Semaphore>,
    /// [`ServeConfig::max_requests_in_flight`], for the log.
    in_flight_max: usize,
}

/// A response body that keeps its request counted as in flight until it is done: the loop's
/// own answer (404, 500) or the served service's.
struct TrackedBody<B> {
    body: Served<B>,
    _busy: (Busy, Option<tokio::sync::OwnedSemaphorePermit>),
}

enum Served<B> {
    Own(HttpBody),
    Inner(Pin<Box<B>>),
}

impl<B> Body for TrackedBody<B>
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match &mut self.get_mut().body {
            Served::Own(body) => Pin::new(body)
                .poll_frame(cx)
                .map(|f| f.map(|f| f.map_err(|never| match never {}))),
            Served::Inner(body) => body.as_mut().poll_frame(cx).map_err(Into::into),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.body {
            Served::Own(body) => body.is_end_stream(),
            Served::Inner(body) => body.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.body {
            Served::Own(body) => body.size_hint(),
            Served::Inner(body) => body.size_hint(),
        }
    }
}

impl<S, B> hyper::service::Service<Request<Incoming>> for ConnService<S>
where
    S: tower::Service<Request<Incoming>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response<TrackedBody<B>>;
    type Error = Infallible;
    type Future =
        Pin<Box<dyn Future<Output = Result<Response<TrackedBody<B>>, Infallible>> + Send>>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        let busy = self.activity.begin();
        let own = |response: Response<HttpBody>, busy| {
            response.map(|body| TrackedBody {
                body: Served::Own(body),
                _busy: busy,
            })
        };
        if !self.paths.iter().any(|p| p == request.uri().path()) {
            return Box::pin(std::future::ready(Ok(own(
                plain(StatusCode::NOT_FOUND),
                (busy, None),
            ))));
        }
        let Ok(permit) = self.in_flight.clone().try_acquire_owned() else {
            tracing::warn!(
                limit = self.in_flight_max,
                "request refused: too many requests in flight"
            );
            let mut response = refusal(
                Cause::Overloaded,
                None,
                "Server busy: too many requests in flight",
            );
            response.headers_mut().insert(
                hyper::header::RETRY_AFTER,
                hyper::header::HeaderValue::from_static("1"),
            );
            return Box::pin(std::future::ready(Ok(own(response, (busy, None)))));
        };
        let busy = (busy, Some(permit));
        let service = self.service.clone();
        Box::pin(async move {
            use futures_util::FutureExt as _;
            use tower::ServiceExt as _;
            let answer = std::panic::AssertUnwindSafe(service.oneshot(request))
                .catch_unwind()
                .await;
            let response = match answer {
                Ok(Ok(response)) => response.map(|body| TrackedBody {
                    body: Served::Inner(Box::pin(body)),
                    _busy: busy,
                }),
                Ok(Err(e)) => {
                    let e: BoxError = e.into();
                    tracing::error!(error = %e, "served HTTP service failed");
                    own(refusal(Cause::Internal, None, "Internal error"), busy)
                }
                Err(_) => {
                    tracing::error!("served HTTP service panicked");
                    own(refusal(Cause::Internal, None, "Internal error"), busy)
                }
            };
            Ok(response)
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Fault points (tests only; see `crate::server::fault`)

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::rt::Timer as _;

    /// #23: the first bytes decide the protocol as the auto builder would, without consuming
    /// them: any byte off the preface is HTTP/1.1, the whole preface HTTP/2, and a prefix of
    /// it (or nothing) is left to the auto builder.
    #[test]
    fn first_bytes_tell_http1_from_the_http2_preface() {
        assert_eq!(FirstBytes::of(b""), FirstBytes::Unsure);
        for n in 1..HTTP2_PREFACE.len() {
            assert_eq!(
                FirstBytes::of(&HTTP2_PREFACE[..n]),
                FirstBytes::Unsure,
                "{n}"
            );
            let mut off = HTTP2_PREFACE[..n].to_vec();
            off[n - 1] ^= 0x20;
            assert_eq!(FirstBytes::of(&off), FirstBytes::Http1, "{n}");
        }
        assert_eq!(FirstBytes::of(HTTP2_PREFACE), FirstBytes::Http2);
        assert_eq!(FirstBytes::of(b"PO"), FirstBytes::Http1);
        assert_eq!(FirstBytes::of(b"POST /mcp HTTP/1.1\r\n"), FirstBytes::Http1);
        assert_eq!(FirstBytes::of(b"PRI * HTTP/1.1\r\n"), FirstBytes::Http1);
    }

    /// Operability: every accepted socket gets TCP_NODELAY (the accept loop calls this).
    #[test]
    fn accepted_sockets_get_tcp_nodelay() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let _client = tokio::net::TcpStream::connect(addr).await.unwrap();
            let (stream, _) = listener.accept().await.unwrap();
            assert!(
                !stream.nodelay().unwrap(),
                "off before, so the test can fail"
            );
            prepare_accepted(&stream).unwrap();
            assert!(stream.nodelay().unwrap());
        });
    }

    /// How long [`refuse_connection`] with `linger` holds a client that stays silent, on a
    /// paused clock (only the linger's timer moves it), and what the client reads: the 503,
    /// then the end of the stream.
    async fn lingered(linger: Duration) -> (Duration, String) {
        use tokio::io::AsyncReadExt as _;

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut client = tokio::net::TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (stream, _) = listener.accept().await.unwrap();
        let start = tokio::time::Instant::now();
        refuse_connection(stream, linger).await;
        let held = start.elapsed();
        let mut answer = Vec::new();
        client.read_to_end(&mut answer).await.unwrap();
        (held, String::from_utf8(answer).unwrap())
    }

    /// Issue #23: a refused connection lingers for the configured time exactly, not at all
    /// for zero (the 503 is still written whole), and at most `MAX_REFUSAL_LINGER`: at the
    /// bound, one timer tick past it and at `Duration::MAX` (no overflow).
    #[test]
    fn refused_connections_linger_as_configured_up_to_the_maximum() {
        paused().block_on(async {
            assert_eq!(MAX_REFUSAL_LINGER, Duration::from_secs(10));
            let past = MAX_REFUSAL_LINGER + Duration::from_millis(1);
            for (linger, held) in [
                (REFUSAL_LINGER, REFUSAL_LINGER),
                (Duration::from_millis(50), Duration::from_millis(50)),
                (Duration::ZERO, Duration::ZERO),
                (MAX_REFUSAL_LINGER, MAX_REFUSAL_LINGER),
                (past, MAX_REFUSAL_LINGER),
                (Duration::MAX, MAX_REFUSAL_LINGER),
            ] {
                let (took, answer) = lingered(linger).await;
                assert_eq!(took, held, "linger {linger:?}");
                assert!(
                    answer.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
                    "{answer}"
                );
                assert!(
                    answer.ends_with(
                        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Server busy: too many connections"}}"#
                    ),
                    "{answer}"
                );
            }
        });
    }

    fn paused() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap()
    }

    fn is_ready(sleep: &mut Pin<Box<dyn hyper::rt::Sleep>>) -> bool {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        sleep.as_mut().poll(&mut cx).is_ready()
    }

    /// Issue #23: the header-read sleep kept by the connection's clock fires at its deadline,
    /// not a millisecond before, and wakes the connection task that polled it.
    #[test]
    fn header_clock_fires_its_sleep_at_the_deadline() {
        paused().block_on(async {
            const PERIOD: Duration = Duration::from_secs(10);
            let clock = Arc::new(HeaderClock::new(PERIOD));
            let timer = HeaderTimer(clock.clone());
            let watchdog = tokio::spawn({
                let clock = clock.clone();
                async move { match clock.keep().await {} }
            });
            // Armed 3 s in, as hyper does once it waits for a request's head.
            tokio::time::sleep(Duration::from_secs(3)).await;
            let armed_at = tokio::time::Instant::now();
            let mut sleep = timer.sleep_until((armed_at + PERIOD).into_std());
            assert!(sleep.as_mut().downcast_mut_pin::<HeaderSleep>().is_some());
            let (woken_tx, woken_rx) = tokio::sync::oneshot::channel();
            let task = tokio::spawn(async move {
                std::future::poll_fn(|cx| sleep.as_mut().poll(cx)).await;
                let _ = woken_tx.send(tokio::time::Instant::now());
            });
            tokio::time::sleep(PERIOD - Duration::from_millis(1)).await;
            assert!(!task.is_finished(), "fired before its deadline");
            assert_eq!(woken_rx.await.unwrap(), armed_at + PERIOD);
            watchdog.abort();
        });
    }

    /// A header-read time-out too large for an `Instant` makes a clock that never fires
    /// instead of a panic in the accept loop.
    #[test]
    fn header_clock_takes_a_time_out_of_duration_max() {
        paused().block_on(async {
            let clock = Arc::new(HeaderClock::new(Duration::MAX));
            let now = tokio::time::Instant::now();
            assert!(clock.lock().look_at > now + Duration::from_secs(365 * 86_400));
            assert_eq!(
                later(now, Duration::from_secs(5)),
                now + Duration::from_secs(5)
            );
        });
    }

    /// Issue #23: a sleep the clock cannot serve exactly is tokio's: a second one while the
    /// first is armed, one due before the watchdog's next look, and a reset to such a deadline;
    /// a reset to a later deadline stays on the clock.
    #[test]
    fn header_clock_leaves_what_it_cannot_time_exactly_to_tokio() {
        paused().block_on(async {
            const PERIOD: Duration = Duration::from_secs(10);
            let clock = Arc::new(HeaderClock::new(PERIOD));
            let timer = HeaderTimer(clock.clone());
            let now = timer.now();

            let mut first = timer.sleep_until(now + PERIOD);
            assert!(first.as_mut().downcast_mut_pin::<HeaderSleep>().is_some());
            let mut second = timer.sleep_until(now + PERIOD);
            assert!(second.as_mut().downcast_mut_pin::<HeaderSleep>().is_none());
            drop(second);

            timer.reset(&mut first, now + PERIOD + Duration::from_secs(1));
            assert!(first.as_mut().downcast_mut_pin::<HeaderSleep>().is_some());
            timer.reset(&mut first, now + PERIOD - Duration::from_millis(1));
            assert!(first.as_mut().downcast_mut_pin::<HeaderSleep>().is_none());
            // The replaced sleep left the clock free again.
            let mut third = timer.sleep_until(now + PERIOD);
            assert!(third.as_mut().downcast_mut_pin::<HeaderSleep>().is_some());
            drop(third);

            // Due before the watchdog's first look (`PERIOD` after the clock was made): tokio's,
            // and it fires on time without the watchdog.
            let mut early = timer.sleep(PERIOD - Duration::from_millis(1));
            assert!(early.as_mut().downcast_mut_pin::<HeaderSleep>().is_none());
            assert!(!is_ready(&mut early));
            tokio::time::sleep(PERIOD - Duration::from_millis(1)).await;
            assert!(is_ready(&mut early));
            assert!(is_ready(&mut first));
        });
    }
}
