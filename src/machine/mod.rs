//! Pure state machines: owned state + event → new state + effects. No clock, no I/O.
//!
//! Every machine here follows one shape so that the server drivers and the stateright models
//! (`models/`, feature `model`) can drive the very same code:
//!
//! * `handle(&mut self, now, event) -> Effects` applies one input. The returned value is
//!   `#[must_use]` data describing what the driver has to do (send, dispatch, cancel…); a rejected
//!   input is a typed effect, never a panic.
//! * `handle_timeout(&mut self, now)` fires whatever deadline is due; a spurious wake-up does
//!   nothing.
//! * `poll_timeout(&self) -> Option<Tick>` is the only source of deadlines: the driver re-arms one
//!   timer whenever this value changes.
//!
//! Time is a [`Tick`] handed in by the driver. Machines never read a clock and never draw random
//! numbers: chain ids and nonces arrive as event data. Which clock a driver feeds depends on what
//! the machine's deadlines must survive:
//!
//! * **Monotonic** milliseconds since the driver started (the server's
//!   `ServerOptions::monotonic_clock`, default `std::time::Instant`) for timers that live only
//!   inside one process: the epoch machine's draining deadline, the pacer's interval, listen
//!   streams. They never jump when the wall clock is set.
//! * **Wall-clock** milliseconds since the Unix epoch (`ServerOptions::clock`, default
//!   `SystemClock`) for the continuation ledger: a `requestState` and its chain must expire at
//!   the same moment on every instance that shares the ledger store and after a restart, so
//!   their expiry is an absolute time.
//!
//! A driver reads the clock once per wake-up and takes every deadline from the machine's
//! `poll_timeout` (the server's shutdown waits for the epoch machine's draining deadline and
//! then calls `handle_timeout` with the current time, never a made-up one).
//! Time going backwards is absorbed with saturating arithmetic (every elapsed-time computation goes
//! through [`Tick::saturating_since`]), so a confused clock can delay a deadline but never panic
//! or fire one early.

pub mod epoch;
pub mod ledger;
pub mod pacer;
pub mod subscriptions;

/// Milliseconds on the clock the driver feeds this machine: monotonic since the driver
/// started for process-local timers, or since the Unix epoch for the ledger (see the module
/// docs).
///
/// A plain count rather than `std::time::Instant` so that models can enumerate it and tests can
/// pin it; the driver converts once per wake-up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Tick(pub u64);

impl Tick {
    /// The driver's start.
    pub const ZERO: Tick = Tick(0);

    /// `self + ms`, clamped at the far future instead of overflowing.
    #[must_use]
    pub const fn saturating_add(self, ms: u64) -> Tick {
        Tick(self.0.saturating_add(ms))
    }

    /// Milliseconds elapsed since `earlier`; zero when the clock went backwards.
    #[must_use]
    pub const fn saturating_since(self, earlier: Tick) -> u64 {
        self.0.saturating_sub(earlier.0)
    }

    /// True once `deadline` has been reached (a deadline is due at its own tick).
    #[must_use]
    pub const fn has_reached(self, deadline: Tick) -> bool {
        self.0 >= deadline.0
    }
}

/// The serving epoch: bumped exactly once, by shutdown. Every `requestState` names the epoch
/// it was issued under, and a state from an older epoch is dead.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Epoch(pub u64);

impl Epoch {
    /// The next epoch (saturating: an epoch counter never wraps back onto a live value).
    #[must_use]
    pub const fn next(self) -> Epoch {
        Epoch(self.0.saturating_add(1))
    }
}

/// A SHA-256 digest (principal, request). Computed by `core::seal`; the machines only compare.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Digest(pub [u8; 32]);

impl core::fmt::Debug for Digest {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // Eight hex digits identify a digest in logs and counterexamples without flooding them.
        write!(f, "Digest(")?;
        for b in &self.0[..4] {
            write!(f, "{b:02x}")?;
        }
        write!(f, "…)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_arithmetic_saturates_when_time_goes_backwards() {
        assert_eq!(Tick(5).saturating_since(Tick(9)), 0);
        assert_eq!(Tick(9).saturating_since(Tick(5)), 4);
        assert_eq!(Tick(u64::MAX).saturating_add(10), Tick(u64::MAX));
        assert!(Tick(10).has_reached(Tick(10)));
        assert!(!Tick(9).has_reached(Tick(10)));
    }

    #[test]
    fn epoch_next_never_wraps() {
        assert_eq!(Epoch(u64::MAX).next(), Epoch(u64::MAX));
        assert_eq!(Epoch(0).next(), Epoch(1));
    }
}
