//! Progress pacing for one outer call.
//!
//! One [`Pacer`] lives as long as the outer MCP call, across every core invocation that serves it
//! (a legacy adapter loop may re-enter the core several times for one call). It:
//!
//! * enables progress only for a valid token: a JSON string or integer of at most
//!   [`MAX_TOKEN_BYTES`] encoded bytes, echoed in its original JSON text; a missing or
//!   invalid token disables progress silently, never failing the call;
//! * keeps `progress` strictly increasing and an explicit `total: 0` present, by keeping
//!   each number's exact JSON text;
//! * spaces deliveries at least [`MIN_INTERVAL_MS`] apart across all invocations;
//! * sends nothing once the invocation ended.
//!
//! # Coalescing (decision)
//!
//! An update arriving too early is not dropped: it becomes the *pending* update, replacing any
//! earlier pending one (latest value wins). It goes out either when the driver's timer fires at
//! [`Pacer::poll_timeout`] or on the next update after the interval, whichever comes first, and
//! only while the invocation still runs; ending the invocation discards it. There is no
//! background sender and no guaranteed final update: the timer belongs to the invocation's own
//! driver loop and dies with it.
//!
//! # Calling-order contract
//!
//! `Pacer::new(token)` when the call arrives; [`PacerEvent::InvocationStarted`] before each core
//! invocation and [`PacerEvent::InvocationEnded`] after it; [`PacerEvent::Update`] for each update
//! the handler reports; [`PacerEvent::CallEnded`] when the outer call is answered. After that the
//! pacer emits nothing, ever. Problems ([`PacerEffect::Report`]) are reported at most once per
//! invocation with a fixed code and no contents.

use super::Tick;

/// Deliveries are at least this far apart (10 Hz maximum).
pub const MIN_INTERVAL_MS: u64 = 100;

/// Largest accepted encoded `progressToken`.
pub const MAX_TOKEN_BYTES: usize = 256;

/// A valid `progressToken`, kept as its exact JSON text.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ProgressToken(String);

impl ProgressToken {
    /// Validate the token's raw JSON text: a string or an integer (any size), at most
    /// [`MAX_TOKEN_BYTES`] bytes as encoded. Anything else is `None` (progress disabled).
    #[must_use]
    pub fn parse(raw: &str) -> Option<ProgressToken> {
        if raw.is_empty() || raw.len() > MAX_TOKEN_BYTES || raw.trim() != raw {
            return None;
        }
        let valid = if raw.starts_with('"') {
            serde_json::from_str::<String>(raw).is_ok()
        } else {
            is_json_integer(raw)
        };
        valid.then(|| ProgressToken(raw.to_owned()))
    }

    /// The exact JSON text to echo.
    #[must_use]
    pub fn as_json(&self) -> &str {
        &self.0
    }
}

fn is_json_integer(raw: &str) -> bool {
    let digits = raw.strip_prefix('-').unwrap_or(raw);
    !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
}

/// A JSON number kept as exact text, with its value for comparisons.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Number {
    raw: String,
    bits: u64,
}

impl Number {
    /// Parse one JSON number (no surrounding whitespace); non-finite values are rejected.
    #[must_use]
    pub fn parse(raw: &str) -> Option<Number> {
        if raw.trim() != raw {
            return None;
        }
        let value = match serde_json::from_str::<serde_json::Value>(raw) {
            Ok(serde_json::Value::Number(n)) => n.as_f64()?,
            _ => return None,
        };
        value.is_finite().then(|| Number {
            raw: raw.to_owned(),
            bits: value.to_bits(),
        })
    }

    /// A number from a handler's `f64` (shortest round-tripping text); `None` if not finite.
    #[must_use]
    pub fn from_f64(value: f64) -> Option<Number> {
        let n = serde_json::Number::from_f64(value)?;
        Some(Number {
            raw: n.to_string(),
            bits: value.to_bits(),
        })
    }

    /// A number from a handler's integer.
    #[must_use]
    pub fn from_u64(value: u64) -> Number {
        // Exact text; the comparison value is the nearest f64 (see `value`).
        Number {
            raw: value.to_string(),
            bits: (value as f64).to_bits(),
        }
    }

    /// The exact JSON text (so `0`, `0.0` and `1e2` go out as they came in).
    #[must_use]
    pub fn as_json(&self) -> &str {
        &self.raw
    }

    /// The value, for comparisons only. Integers beyond 2^53 compare by their nearest `f64`, so
    /// two huge values that differ only past that precision count as "not increasing".
    #[must_use]
    pub fn value(&self) -> f64 {
        f64::from_bits(self.bits)
    }
}

/// One update reported by a handler.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Update {
    /// Progress so far; must exceed every earlier accepted value of this call.
    pub progress: Number,
    /// Optional total; an explicit `0` is kept. Negative totals are invalid.
    pub total: Option<Number>,
    /// Optional human-readable message.
    pub message: Option<String>,
}

/// A `notifications/progress` to send on the call's own stream.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Notification {
    /// The call's token, exact JSON text.
    pub token: ProgressToken,
    /// Exact `progress`.
    pub progress: Number,
    /// Exact `total`, present iff the update had one.
    pub total: Option<Number>,
    /// `message`, if any.
    pub message: Option<String>,
}

/// Safe, content-free problem codes for the server logger.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProgressProblem {
    /// `progress` did not increase.
    NotIncreasing,
    /// `total` was negative.
    InvalidTotal,
    /// An update arrived while no invocation runs.
    NotRunning,
    /// The handler supplied a value that is not a finite JSON number.
    InvalidNumber,
}

impl ProgressProblem {
    /// The fixed code logged.
    #[must_use]
    pub const fn code(self) -> &'static str {
        match self {
            ProgressProblem::NotIncreasing => "progress_not_increasing",
            ProgressProblem::InvalidTotal => "progress_invalid_total",
            ProgressProblem::NotRunning => "progress_not_running",
            ProgressProblem::InvalidNumber => "progress_invalid_number",
        }
    }
}

/// Planted bugs for the stateright models. Compiled only with feature `model`; all off by default.
#[cfg(feature = "model")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PacerFaults {
    /// Keep delivering after the invocation ended.
    pub progress_after_end: bool,
}

/// Inputs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PacerEvent {
    /// A core invocation for this call begins.
    InvocationStarted,
    /// The handler reported an update.
    Update(Update),
    /// The handler reported an update the core could not turn into an [`Update`] (e.g. a
    /// non-finite number); it is reported like any other problem, at most once per invocation.
    Invalid(ProgressProblem),
    /// The core invocation ended (any pending update is discarded).
    InvocationEnded,
    /// The outer call was answered; the pacer is finished for good.
    CallEnded,
}

/// What the driver must do. One per event.
#[must_use = "a pacer effect may be a notification to send"]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PacerEffect {
    /// Send this notification now.
    Deliver(Notification),
    /// Held back as the pending update until this tick (see the module docs).
    Coalesced {
        /// When it may go out.
        until: Tick,
    },
    /// Log this problem once (fixed code, no contents).
    Report(ProgressProblem),
    /// Dropped silently (progress disabled, repeated problem, nothing due).
    Ignored,
}

/// Progress state of one outer call. See the module docs for the calling-order contract.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Pacer {
    token: Option<ProgressToken>,
    running: bool,
    finished: bool,
    last_accepted: Option<u64>,
    last_delivery: Option<Tick>,
    pending: Option<Notification>,
    reported: bool,
    #[cfg(feature = "model")]
    faults: PacerFaults,
}

impl Pacer {
    /// A pacer for a call whose `_meta.progressToken` had this raw JSON text (`None` when
    /// absent). An invalid token silently disables progress.
    #[must_use]
    pub fn new(raw_token: Option<&str>) -> Pacer {
        Pacer {
            token: raw_token.and_then(ProgressToken::parse),
            running: false,
            finished: false,
            last_accepted: None,
            last_delivery: None,
            pending: None,
            reported: false,
            #[cfg(feature = "model")]
            faults: PacerFaults::default(),
        }
    }

    /// A pacer with planted bugs (model builds only).
    #[cfg(feature = "model")]
    #[must_use]
    pub fn with_faults(raw_token: Option<&str>, faults: PacerFaults) -> Pacer {
        Pacer {
            faults,
            ..Pacer::new(raw_token)
        }
    }

    /// True when the call has a valid token.
    #[must_use]
    pub fn is_enabled(&self) -> bool {
        self.token.is_some()
    }

    /// True while a core invocation runs.
    #[must_use]
    pub fn is_running(&self) -> bool {
        self.running
    }

    /// When the pending update may go out.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Tick> {
        match (&self.pending, self.last_delivery) {
            (Some(_), Some(last)) if self.running => Some(last.saturating_add(MIN_INTERVAL_MS)),
            _ => None,
        }
    }

    fn delivers_after_end(&self) -> bool {
        #[cfg(feature = "model")]
        if self.faults.progress_after_end {
            return true;
        }
        false
    }

    fn is_due(&self, now: Tick) -> bool {
        // Saturating: a clock that went backwards makes the interval look shorter, never longer.
        self.last_delivery
            .is_none_or(|last| now.saturating_since(last) >= MIN_INTERVAL_MS)
    }

    fn deliver(&mut self, now: Tick, n: Notification) -> PacerEffect {
        self.last_delivery = Some(now);
        self.pending = None;
        PacerEffect::Deliver(n)
    }

    fn report(&mut self, problem: ProgressProblem) -> PacerEffect {
        if self.reported {
            return PacerEffect::Ignored;
        }
        self.reported = true;
        PacerEffect::Report(problem)
    }

    /// Send the pending update if it is due; a spurious call does nothing.
    pub fn handle_timeout(&mut self, now: Tick) -> PacerEffect {
        if (!self.running && !self.delivers_after_end()) || !self.is_due(now) {
            return PacerEffect::Ignored;
        }
        match self.pending.take() {
            Some(n) => self.deliver(now, n),
            None => PacerEffect::Ignored,
        }
    }

    /// Apply one event at `now`.
    pub fn handle(&mut self, now: Tick, event: PacerEvent) -> PacerEffect {
        match event {
            PacerEvent::InvocationStarted => {
                if !self.finished {
                    self.running = true;
                    self.reported = false;
                }
                PacerEffect::Ignored
            }
            PacerEvent::InvocationEnded | PacerEvent::CallEnded => {
                self.running = false;
                self.pending = None;
                if event == PacerEvent::CallEnded {
                    self.finished = true;
                }
                PacerEffect::Ignored
            }
            PacerEvent::Update(update) => self.on_update(now, update),
            PacerEvent::Invalid(problem) => {
                if self.token.is_none() {
                    PacerEffect::Ignored
                } else {
                    self.report(problem)
                }
            }
        }
    }

    fn on_update(&mut self, now: Tick, update: Update) -> PacerEffect {
        let Some(token) = self.token.clone() else {
            return PacerEffect::Ignored;
        };
        if !self.running && !self.delivers_after_end() {
            return self.report(ProgressProblem::NotRunning);
        }
        if self
            .last_accepted
            .is_some_and(|bits| update.progress.value() <= f64::from_bits(bits))
        {
            return self.report(ProgressProblem::NotIncreasing);
        }
        if update.total.as_ref().is_some_and(|t| t.value() < 0.0) {
            return self.report(ProgressProblem::InvalidTotal);
        }
        self.last_accepted = Some(update.progress.bits);
        let n = Notification {
            token,
            progress: update.progress,
            total: update.total,
            message: update.message,
        };
        if self.is_due(now) {
            self.deliver(now, n)
        } else {
            self.pending = Some(n);
            let last = self.last_delivery.unwrap_or(now);
            PacerEffect::Coalesced {
                until: last.saturating_add(MIN_INTERVAL_MS),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(s: &str) -> Number {
        Number::parse(s).unwrap()
    }

    fn upd(p: &str) -> PacerEvent {
        PacerEvent::Update(Update {
            progress: num(p),
            total: None,
            message: None,
        })
    }

    fn running(token: &str) -> Pacer {
        let mut p = Pacer::new(Some(token));
        let _ = p.handle(Tick(0), PacerEvent::InvocationStarted);
        p
    }

    fn delivered(e: PacerEffect) -> Notification {
        match e {
            PacerEffect::Deliver(n) => n,
            other => panic!("expected a delivery, got {other:?}"),
        }
    }

    #[test]
    fn o57_x11_token_validity() {
        assert!(ProgressToken::parse("\"abc\"").is_some());
        assert!(
            ProgressToken::parse("123456789012345678901234567890").is_some(),
            "any-size integer"
        );
        assert!(ProgressToken::parse("-7").is_some());
        assert!(ProgressToken::parse("0").is_some());
        for bad in [
            "1.5",
            "1e3",
            "01",
            "-",
            "",
            "true",
            "null",
            "{}",
            "\"unterminated",
            " 1",
            "\"a\" ",
        ] {
            assert!(
                ProgressToken::parse(bad).is_none(),
                "{bad:?} must be invalid"
            );
        }
        let at_limit = format!("\"{}\"", "a".repeat(MAX_TOKEN_BYTES - 2));
        assert!(ProgressToken::parse(&at_limit).is_some());
        let over = format!("\"{}\"", "a".repeat(MAX_TOKEN_BYTES - 1));
        assert!(ProgressToken::parse(&over).is_none());
        // The bound counts encoded bytes: escapes count as written.
        let escaped = format!("\"{}\"", "\\n".repeat(128));
        assert_eq!(escaped.len(), 258);
        assert!(ProgressToken::parse(&escaped).is_none());
    }

    #[test]
    fn o57_invalid_token_disables_progress_silently() {
        let mut p = Pacer::new(Some("1.5"));
        let _ = p.handle(Tick(0), PacerEvent::InvocationStarted);
        assert!(!p.is_enabled());
        assert_eq!(p.handle(Tick(0), upd("1")), PacerEffect::Ignored);
        let mut none = Pacer::new(None);
        let _ = none.handle(Tick(0), PacerEvent::InvocationStarted);
        assert_eq!(none.handle(Tick(0), upd("1")), PacerEffect::Ignored);
    }

    #[test]
    fn o57_token_and_numbers_are_echoed_exactly_and_total_zero_is_kept() {
        let mut p = running("12345678901234567890123");
        let n = delivered(p.handle(
            Tick(0),
            PacerEvent::Update(Update {
                progress: num("1.50"),
                total: Some(num("0")),
                message: Some("m".into()),
            }),
        ));
        assert_eq!(n.token.as_json(), "12345678901234567890123");
        assert_eq!(n.progress.as_json(), "1.50");
        assert_eq!(
            n.total.as_ref().map(Number::as_json),
            Some("0"),
            "O58: explicit total 0 kept"
        );
        assert_eq!(n.message.as_deref(), Some("m"));
    }

    #[test]
    fn j3_o58_progress_must_increase_and_problems_are_reported_once_per_invocation() {
        let mut p = running("\"t\"");
        let _ = delivered(p.handle(Tick(0), upd("5")));
        assert_eq!(
            p.handle(Tick(200), upd("5")),
            PacerEffect::Report(ProgressProblem::NotIncreasing)
        );
        assert_eq!(
            p.handle(Tick(300), upd("4")),
            PacerEffect::Ignored,
            "O59: once per invocation"
        );
        let _ = p.handle(Tick(300), PacerEvent::InvocationEnded);
        let _ = p.handle(Tick(300), PacerEvent::InvocationStarted);
        assert_eq!(
            p.handle(Tick(400), upd("3")),
            PacerEffect::Report(ProgressProblem::NotIncreasing)
        );
        assert_eq!(
            ProgressProblem::NotIncreasing.code(),
            "progress_not_increasing"
        );
    }

    #[test]
    fn negative_total_is_reported() {
        let mut p = running("1");
        let e = p.handle(
            Tick(0),
            PacerEvent::Update(Update {
                progress: num("1"),
                total: Some(num("-1")),
                message: None,
            }),
        );
        assert_eq!(e, PacerEffect::Report(ProgressProblem::InvalidTotal));
    }

    #[test]
    fn j5_o58_deliveries_are_100ms_apart_and_the_latest_value_is_coalesced() {
        let mut p = running("1");
        let _ = delivered(p.handle(Tick(1_000), upd("1")));
        assert_eq!(
            p.handle(Tick(1_010), upd("2")),
            PacerEffect::Coalesced { until: Tick(1_100) }
        );
        assert_eq!(
            p.handle(Tick(1_020), upd("3")),
            PacerEffect::Coalesced { until: Tick(1_100) }
        );
        assert_eq!(p.poll_timeout(), Some(Tick(1_100)));
        assert_eq!(p.handle_timeout(Tick(1_099)), PacerEffect::Ignored);
        let n = delivered(p.handle_timeout(Tick(1_100)));
        assert_eq!(n.progress.as_json(), "3", "latest value wins");
        assert_eq!(p.poll_timeout(), None);
        assert_eq!(
            p.handle_timeout(Tick(1_300)),
            PacerEffect::Ignored,
            "spurious timeout"
        );
    }

    #[test]
    fn pending_update_goes_out_with_the_next_due_update_when_no_timer_fired() {
        let mut p = running("1");
        let _ = delivered(p.handle(Tick(0), upd("1")));
        let _ = p.handle(Tick(50), upd("2"));
        let n = delivered(p.handle(Tick(150), upd("3")));
        assert_eq!(n.progress.as_json(), "3");
        assert_eq!(p.poll_timeout(), None);
    }

    #[test]
    fn o58_spacing_counts_across_invocations_of_one_call() {
        let mut p = running("1");
        let _ = delivered(p.handle(Tick(0), upd("1")));
        let _ = p.handle(Tick(10), PacerEvent::InvocationEnded);
        let _ = p.handle(Tick(20), PacerEvent::InvocationStarted);
        assert_eq!(
            p.handle(Tick(30), upd("2")),
            PacerEffect::Coalesced { until: Tick(100) }
        );
    }

    #[test]
    fn j4_nothing_after_the_invocation_ends() {
        let mut p = running("1");
        let _ = delivered(p.handle(Tick(0), upd("1")));
        let _ = p.handle(Tick(10), upd("2"));
        let _ = p.handle(Tick(20), PacerEvent::InvocationEnded);
        assert_eq!(p.poll_timeout(), None);
        assert_eq!(
            p.handle_timeout(Tick(500)),
            PacerEffect::Ignored,
            "pending update discarded"
        );
        assert_eq!(
            p.handle(Tick(500), upd("3")),
            PacerEffect::Report(ProgressProblem::NotRunning)
        );
        let _ = p.handle(Tick(600), PacerEvent::CallEnded);
        let _ = p.handle(Tick(700), PacerEvent::InvocationStarted);
        assert!(!p.is_running(), "a finished call never runs again");
        assert_eq!(p.poll_timeout(), None);
        assert_eq!(
            p.handle(Tick(800), upd("4")),
            PacerEffect::Ignored,
            "already reported, never delivered"
        );
    }

    #[test]
    fn time_going_backwards_coalesces_instead_of_delivering_early() {
        let mut p = running("1");
        let _ = delivered(p.handle(Tick(1_000), upd("1")));
        assert_eq!(
            p.handle(Tick(10), upd("2")),
            PacerEffect::Coalesced { until: Tick(1_100) }
        );
        assert_eq!(p.handle_timeout(Tick(20)), PacerEffect::Ignored);
        let _ = delivered(p.handle_timeout(Tick(1_100)));
    }

    #[test]
    fn o59_invalid_values_are_reported_once_per_invocation() {
        let mut p = running("1");
        let bad = PacerEvent::Invalid(ProgressProblem::InvalidNumber);
        assert_eq!(
            p.handle(Tick(0), bad.clone()),
            PacerEffect::Report(ProgressProblem::InvalidNumber)
        );
        assert_eq!(p.handle(Tick(0), bad.clone()), PacerEffect::Ignored);
        assert_eq!(p.handle(Tick(0), upd("1")), delivered_effect("1"));
        let mut disabled = Pacer::new(None);
        assert_eq!(
            disabled.handle(Tick(0), bad),
            PacerEffect::Ignored,
            "O57: disabled means silent"
        );
        assert_eq!(
            ProgressProblem::InvalidNumber.code(),
            "progress_invalid_number"
        );
    }

    fn delivered_effect(p: &str) -> PacerEffect {
        PacerEffect::Deliver(Notification {
            token: ProgressToken::parse("1").unwrap(),
            progress: num(p),
            total: None,
            message: None,
        })
    }

    #[test]
    fn numbers_from_handler_values() {
        assert_eq!(
            Number::from_f64(0.5).map(|n| n.as_json().to_owned()),
            Some("0.5".to_owned())
        );
        assert!(Number::from_f64(f64::NAN).is_none());
        assert!(Number::from_f64(f64::INFINITY).is_none());
        assert_eq!(Number::from_u64(u64::MAX).as_json(), "18446744073709551615");
        assert_eq!(Number::from_u64(3).value(), 3.0);
    }

    #[test]
    fn number_parse_rejects_non_numbers() {
        for bad in ["", " 1", "x", "\"1\"", "NaN", "[1]"] {
            assert!(Number::parse(bad).is_none(), "{bad:?}");
        }
        assert_eq!(num("1e2").value(), 100.0);
        assert_eq!(num("1e2").as_json(), "1e2");
    }
}
