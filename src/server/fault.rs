//! Test-only fault points: a test arms a named point and the server panics when it reaches it,
//! to prove that a panic anywhere in the server's own code still gives exactly one reply.
//!
//! Compiled only under `cfg(test)` or the `fault-injection` feature (which `cargo test` turns on
//! for the integration tests); in every other build [`point`] is an empty inline function.
//! Points are armed process-wide, so tests that arm one hold `exclusive()` while they run.

/// Where the server can be made to panic (the names a test arms).
pub mod points {
    /// In the dispatcher, after admission and before the method is routed.
    pub const DISPATCH: &str = "dispatch";
    /// While encoding a request's reply.
    pub const REPLY: &str = "reply";
    /// In a `subscriptions/listen` stream, after its acknowledgement was sent.
    pub const LISTEN_AFTER_ACK: &str = "listen-after-ack";
    /// In the completion path (`completion/complete`), before the registry is asked.
    pub const COMPLETE: &str = "complete";
}

#[cfg(any(test, feature = "fault-injection"))]
mod armed {
    use std::sync::{Mutex, MutexGuard, PoisonError};

    static ARMED: Mutex<Option<&'static str>> = Mutex::new(None);
    static EXCLUSIVE: Mutex<()> = Mutex::new(());

    /// Panics if `name` is armed (the point stays armed until [`disarm`]).
    pub fn point(name: &'static str) {
        let armed = *ARMED.lock().unwrap_or_else(PoisonError::into_inner);
        if armed == Some(name) {
            panic!("fault injected at {name}");
        }
    }

    /// Arms `name`; only one point is armed at a time.
    pub fn arm(name: &'static str) {
        *ARMED.lock().unwrap_or_else(PoisonError::into_inner) = Some(name);
    }

    /// Disarms every point.
    pub fn disarm() {
        *ARMED.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// Serialises the tests that arm points (held for the test's duration).
    pub fn exclusive() -> MutexGuard<'static, ()> {
        EXCLUSIVE.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(any(test, feature = "fault-injection"))]
pub use armed::{arm, disarm, exclusive, point};

/// Does nothing: fault points exist only in test builds.
#[cfg(not(any(test, feature = "fault-injection")))]
#[inline(always)]
pub fn point(_name: &'static str) {}
