//! Caller identity, time and cancellation: the three things the core receives from outside.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use event_listener::Event;

/// The identity a request runs under: opaque, cheap to clone, compared by principal id.
///
/// The server builds it from the transport (HTTP request extensions, or the fixed stdio
/// caller); the core hands it to every [`Policy`](crate::core::Policy) decision and binds
/// cursors to it. All anonymous callers share one scope.
///
/// ```
/// use strict_mcp::core::Caller;
/// let a = Caller::new("user:alice");
/// assert_eq!(a, Caller::new("user:alice"));
/// assert_ne!(a, Caller::anonymous());
/// assert_eq!(a.principal(), Some("user:alice"));
/// ```
#[derive(Clone)]
pub struct Caller {
    inner: Arc<CallerInner>,
}

struct CallerInner {
    principal: Option<String>,
    attributes: BTreeMap<String, String>,
}

impl Caller {
    /// A caller with a stable principal id (e.g. the subject of a verified token).
    #[must_use]
    pub fn new(principal: impl Into<String>) -> Self {
        Caller {
            inner: Arc::new(CallerInner {
                principal: Some(principal.into()),
                attributes: BTreeMap::new(),
            }),
        }
    }

    /// The unauthenticated caller.
    #[must_use]
    pub fn anonymous() -> Self {
        Caller {
            inner: Arc::new(CallerInner {
                principal: None,
                attributes: BTreeMap::new(),
            }),
        }
    }

    /// Adds an attribute (e.g. a granted scope or a tenant) for policies to read. Attributes
    /// never take part in equality or cursor binding: those use the principal id only.
    ///
    /// ```
    /// use strict_mcp::core::Caller;
    /// let c = Caller::new("alice").with_attribute("scope", "repo:read");
    /// assert_eq!(c.attribute("scope"), Some("repo:read"));
    /// assert_eq!(c, Caller::new("alice"));
    /// ```
    #[must_use]
    pub fn with_attribute(self, key: impl Into<String>, value: impl Into<String>) -> Self {
        let mut inner = CallerInner {
            principal: self.inner.principal.clone(),
            attributes: self.inner.attributes.clone(),
        };
        inner.attributes.insert(key.into(), value.into());
        Caller {
            inner: Arc::new(inner),
        }
    }

    /// An attribute set by the transport's authentication layer.
    #[must_use]
    pub fn attribute(&self, key: &str) -> Option<&str> {
        self.inner.attributes.get(key).map(String::as_str)
    }

    /// The principal id, `None` for the anonymous caller.
    #[must_use]
    pub fn principal(&self) -> Option<&str> {
        self.inner.principal.as_deref()
    }

    /// Whether this is the anonymous caller.
    #[must_use]
    pub fn is_anonymous(&self) -> bool {
        self.inner.principal.is_none()
    }

    /// Bytes that identify the scope (used to bind cursors); distinct for anonymous.
    pub(crate) fn scope_bytes(&self) -> Vec<u8> {
        match &self.inner.principal {
            None => vec![0],
            Some(p) => {
                let mut v = Vec::with_capacity(p.len() + 1);
                v.push(1);
                v.extend_from_slice(p.as_bytes());
                v
            }
        }
    }
}

impl PartialEq for Caller {
    fn eq(&self, other: &Self) -> bool {
        self.inner.principal == other.inner.principal
    }
}

impl Eq for Caller {}

impl std::hash::Hash for Caller {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.inner.principal.hash(state);
    }
}

impl fmt::Debug for Caller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner.principal {
            None => f.write_str("Caller(anonymous)"),
            Some(p) => write!(f, "Caller({p:?})"),
        }
    }
}

/// A millisecond clock that never goes backwards. The core reads time only through it.
pub trait Clock: Send + Sync + 'static {
    /// Milliseconds since an arbitrary, process-independent origin; non-decreasing.
    fn now_ms(&self) -> u64;
}

/// Wall-clock milliseconds since the Unix epoch, made non-decreasing.
///
/// Wall time (not a process-local `Instant`) is used so cursors minted by one instance expire
/// consistently on another instance that shares the cursor key.
#[derive(Debug, Default)]
pub struct SystemClock {
    last: AtomicU64,
}

impl SystemClock {
    /// A new clock.
    #[must_use]
    pub fn new() -> Self {
        SystemClock::default()
    }
}

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0);
        let prev = self.last.fetch_max(now, Ordering::AcqRel);
        prev.max(now)
    }
}

/// A monotonic millisecond clock for timers that live only inside this process (the machines'
/// `Tick`: shutdown draining, progress pacing, listen streams). Unlike [`Clock`] it is not
/// comparable across processes, and it never jumps when the wall clock is set.
pub trait MonotonicClock: Send + Sync + 'static {
    /// Milliseconds since this clock's start; non-decreasing.
    fn elapsed_ms(&self) -> u64;

    /// A future that completes once [`MonotonicClock::elapsed_ms`] has reached `at_ms`, for a
    /// clock that moves on its own account (a test's virtual clock): the drivers then wait on
    /// it and judge their deadlines by it, so those tests run without sleeping. `None` (the
    /// default) says the clock follows real time: the driver waits the same span on its
    /// runtime's timer. Machines never wait; they are told the time.
    fn wait_until(&self, at_ms: u64) -> Option<WaitUntil<'_>> {
        let _ = at_ms;
        None
    }
}

/// What [`MonotonicClock::wait_until`] returns: completes once the clock reached the time.
pub type WaitUntil<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>>;

/// Milliseconds since the moment it was created, from [`std::time::Instant`].
#[derive(Debug)]
pub struct SystemMonotonic {
    start: Instant,
}

impl SystemMonotonic {
    /// A clock that starts now.
    #[must_use]
    pub fn new() -> Self {
        SystemMonotonic {
            start: Instant::now(),
        }
    }
}

impl Default for SystemMonotonic {
    fn default() -> Self {
        SystemMonotonic::new()
    }
}

impl MonotonicClock for SystemMonotonic {
    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

/// A runtime-neutral cancellation signal shared between the driver and a handler.
///
/// ```
/// use strict_mcp::core::CancelToken;
/// let token = CancelToken::new();
/// let seen = token.clone();
/// assert!(!seen.is_cancelled());
/// token.cancel();
/// assert!(seen.is_cancelled());
/// futures_util::FutureExt::now_or_never(seen.cancelled()).expect("resolved after cancel");
/// ```
#[derive(Clone, Default)]
pub struct CancelToken {
    inner: Arc<CancelInner>,
}

#[derive(Default)]
struct CancelInner {
    flag: AtomicBool,
    event: Event,
}

impl CancelToken {
    /// A token that is not cancelled.
    #[must_use]
    pub fn new() -> Self {
        CancelToken::default()
    }

    /// Signals cancellation to every clone; idempotent.
    pub fn cancel(&self) {
        if !self.inner.flag.swap(true, Ordering::AcqRel) {
            self.inner.event.notify(usize::MAX);
        }
    }

    /// Whether cancellation was signalled.
    #[must_use]
    pub fn is_cancelled(&self) -> bool {
        self.inner.flag.load(Ordering::Acquire)
    }

    /// Resolves once cancellation is signalled.
    pub async fn cancelled(&self) {
        loop {
            if self.is_cancelled() {
                return;
            }
            let listener = self.inner.event.listen();
            if self.is_cancelled() {
                return;
            }
            listener.await;
        }
    }
}

impl fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancelToken")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}
