//! Deadlines of the server's own waits: the shutdown budget and the time-out of one read or
//! prompt get. Tokio's timer when a runtime with time enabled is current, otherwise a
//! runtime-free helper thread.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::{select, Either};

use crate::core::{CancelToken, MonotonicClock, WaitUntil};

/// A deadline without an async runtime: one helper thread parks until the budget elapses and
/// then fires the token; dropping the deadline wakes the thread so it ends early. Started by
/// shutdown, and by a timed read when no tokio timer is available; never by the constructor.
pub(crate) struct Deadline {
    pub(crate) token: CancelToken,
    done: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::Thread>,
}

impl Deadline {
    pub(crate) fn start(budget: Duration) -> Deadline {
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

/// Why a timed read or prompt ended without its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Expired;

/// The timer of one timed request: the injected clock's own wait when it has one (a virtual
/// clock, [`MonotonicClock::wait_until`]); else tokio's when a runtime with time enabled is
/// current (paused test clocks included), else the runtime-free helper-thread [`Deadline`].
/// Expiry is judged by the same time source the timer waits on.
enum Timer<'c> {
    Clock {
        wait: WaitUntil<'c>,
        clock: &'c dyn MonotonicClock,
        due: u64,
    },
    Tokio(std::pin::Pin<Box<tokio::time::Sleep>>),
    Thread(Deadline, std::time::Instant),
}

impl<'c> Timer<'c> {
    fn start(clock: &'c dyn MonotonicClock, limit: std::time::Duration) -> Timer<'c> {
        let limit_ms = u64::try_from(limit.as_millis()).unwrap_or(u64::MAX);
        let due = clock.elapsed_ms().saturating_add(limit_ms);
        if let Some(wait) = clock.wait_until(due) {
            return Timer::Clock { wait, clock, due };
        }
        if tokio::runtime::Handle::try_current().is_ok() {
            // A runtime built without `enable_time` panics when a timer is created; that
            // runtime gets the thread fallback instead of a crash.
            if let Ok(sleep) = std::panic::catch_unwind(|| tokio::time::sleep(limit)) {
                return Timer::Tokio(Box::pin(sleep));
            }
        }
        Timer::Thread(Deadline::start(limit), std::time::Instant::now() + limit)
    }

    async fn expired(&mut self) {
        match self {
            Timer::Clock { wait, .. } => wait.as_mut().await,
            Timer::Tokio(sleep) => sleep.as_mut().await,
            Timer::Thread(deadline, _) => deadline.token.cancelled().await,
        }
    }

    fn is_expired(&self) -> bool {
        match self {
            Timer::Clock { clock, due, .. } => clock.elapsed_ms() >= *due,
            Timer::Tokio(sleep) => tokio::time::Instant::now() >= sleep.deadline(),
            Timer::Thread(deadline, at) => {
                deadline.token.is_cancelled() || std::time::Instant::now() >= *at
            }
        }
    }
}

/// Runs `work` (a read or prompt get, including the conversion and final size check of its
/// result) within `limit` on `clock`. On expiry `token` (the handler's) fires, the work
/// gets the one poll that lets a cooperative handler observe it, and is dropped. Work that
/// finishes, but only after the deadline (slow synchronous conversion), is expired too.
pub(crate) async fn within<F: std::future::Future>(
    clock: &dyn MonotonicClock,
    limit: std::time::Duration,
    token: &CancelToken,
    work: F,
) -> Result<F::Output, Expired> {
    within_pinned(clock, limit, token, std::pin::pin!(work)).await
}

/// [`within`] for work its caller has pinned where it lies. An `async fn` keeps a by-value
/// argument and its pinned move as two slots, so `within(.., work)` holds the work twice and
/// copies it once more; `tools/call` passes its handler's work pinned instead (issue #23: one
/// copy of the call's work less per call, `bench/README.md`, session 11).
pub(crate) async fn within_pinned<F: std::future::Future>(
    clock: &dyn MonotonicClock,
    limit: std::time::Duration,
    token: &CancelToken,
    mut work: std::pin::Pin<&mut F>,
) -> Result<F::Output, Expired> {
    let mut timer = Timer::start(clock, limit);
    let finished = {
        let expired = timer.expired();
        futures_util::pin_mut!(expired);
        match select(work.as_mut(), expired).await {
            Either::Left((out, _)) => Some(out),
            Either::Right(((), _)) => None,
        }
    };
    match finished {
        Some(out) if !timer.is_expired() => Ok(out),
        Some(_) => {
            token.cancel();
            Err(Expired)
        }
        None => {
            token.cancel();
            let _ = futures_util::FutureExt::now_or_never(work.as_mut());
            Err(Expired)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock() -> crate::core::SystemMonotonic {
        crate::core::SystemMonotonic::default()
    }

    #[tokio::test]
    async fn o33_work_that_finishes_in_time_keeps_its_result_and_token() {
        let token = CancelToken::new();
        let out = within(
            &clock(),
            std::time::Duration::from_secs(3600),
            &token,
            async { 7 },
        )
        .await;
        assert_eq!(out, Ok(7));
        assert!(!token.is_cancelled());
    }

    #[tokio::test]
    async fn o33_synchronous_conversion_past_the_deadline_counts_as_expired() {
        // The work never yields: only the check after it can notice the deadline passed.
        let token = CancelToken::new();
        let limit = std::time::Duration::from_millis(1);
        let out = within(&clock(), limit, &token, async {
            std::thread::sleep(limit * 20);
            7
        })
        .await;
        assert_eq!(out, Err(Expired));
        assert!(token.is_cancelled());
    }

    #[test]
    fn o33_the_thread_fallback_notices_a_passed_deadline_too() {
        let token = CancelToken::new();
        let limit = std::time::Duration::from_millis(1);
        let clock = clock();
        let work = within(&clock, limit, &token, async {
            std::thread::sleep(limit * 20);
            7
        });
        // No runtime is current: the helper-thread deadline is used; the work never yields.
        let out = futures_util::FutureExt::now_or_never(work).expect("never pending");
        assert_eq!(out, Err(Expired));
        assert!(token.is_cancelled());
    }
}
