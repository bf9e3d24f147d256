//! `--progress`: an `indicatif` bar on stderr when stderr is a terminal, one plain line per
//! notification otherwise (so logs and pipes read it as text).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::client::{Progress, ProgressSink};

/// The bar's length in steps: the server's `progress`/`total` are any JSON numbers
/// (fractional, or larger than 64 bits), so the bar shows their ratio at this resolution and
/// prints the exact texts beside it.
pub const BAR_STEPS: u64 = 1000;

/// The bar's template: the exact numbers and message are the bar's message.
const TEMPLATE: &str = "{spinner} [{bar:30}] {msg}";

/// How progress is shown for one run.
#[derive(Debug)]
pub struct ProgressView {
    bar: Option<ProgressBar>,
    /// Whether a notification has arrived (a bar that never moved is not left behind).
    started: Arc<AtomicBool>,
}

/// The bar position of `progress` out of `total`: the ratio in [`BAR_STEPS`] steps, clamped
/// to `0..=BAR_STEPS` (a server may overshoot its total, or send something unparsable).
#[must_use]
pub fn position(progress: &str, total: &str) -> u64 {
    let (Ok(p), Ok(t)) = (progress.parse::<f64>(), total.parse::<f64>()) else {
        return 0;
    };
    if !(p.is_finite() && t.is_finite()) || t <= 0.0 || p <= 0.0 {
        return 0;
    }
    let steps = (p / t).min(1.0) * BAR_STEPS as f64;
    // In 0..=BAR_STEPS by the clamp above, so the cast is exact enough and never wraps.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let steps = steps.floor() as u64;
    steps.min(BAR_STEPS)
}

/// The exact text shown for one notification: `progress[/total][ message]`.
#[must_use]
pub fn label(p: &Progress) -> String {
    let total = p
        .total
        .as_ref()
        .map(|t| format!("/{t}"))
        .unwrap_or_default();
    let message = p
        .message
        .as_ref()
        .map(|m| format!(" {m}"))
        .unwrap_or_default();
    format!("{}{total}{message}", p.progress)
}

impl ProgressView {
    /// A bar when `tty`, plain lines otherwise; the sink to hand the call.
    #[must_use]
    pub fn new(tty: bool) -> (ProgressView, ProgressSink) {
        if !tty {
            let sink = ProgressSink(Arc::new(|p: Progress| {
                eprintln!("progress {}", label(&p));
            }));
            let view = ProgressView {
                bar: None,
                started: Arc::default(),
            };
            return (view, sink);
        }
        let bar = ProgressBar::with_draw_target(Some(BAR_STEPS), ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template(TEMPLATE) {
            bar.set_style(style.progress_chars("=> "));
        }
        let shown = bar.clone();
        let started: Arc<AtomicBool> = Arc::default();
        let seen = Arc::clone(&started);
        let sink = ProgressSink(Arc::new(move |p: Progress| {
            seen.store(true, Ordering::Relaxed);
            shown.set_message(format!("progress {}", label(&p)));
            match &p.total {
                Some(total) => shown.set_position(position(&p.progress, total)),
                None => shown.tick(),
            }
        }));
        let view = ProgressView {
            bar: Some(bar),
            started,
        };
        (view, sink)
    }

    /// Ends the bar before the result is printed: its last state stays on the terminal as
    /// it was (not filled up when the call stopped early); a bar that never moved is
    /// cleared. Nothing to do for plain lines. Idempotent.
    pub fn finish(&self) {
        let Some(bar) = &self.bar else {
            return;
        };
        if bar.is_finished() {
            return;
        }
        if self.started.load(Ordering::Relaxed) {
            bar.abandon();
            // The bar's line is left without an ending; what follows starts below it.
            eprintln!();
        } else {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn o105_bar_position_is_the_clamped_ratio() {
        assert_eq!(position("0", "3"), 0);
        assert_eq!(position("1", "2"), BAR_STEPS / 2);
        assert_eq!(position("0.25", "1.0"), BAR_STEPS / 4);
        // At the total: the full bar; one past it: still the full bar, never more.
        assert_eq!(position("3", "3"), BAR_STEPS);
        assert_eq!(position("4", "3"), BAR_STEPS);
        assert_eq!(position("-1", "3"), 0);
        assert_eq!(position("1", "0"), 0);
        assert_eq!(position("x", "3"), 0);
        assert_eq!(position("1e400", "3"), 0);
    }

    #[test]
    fn o105_label_keeps_the_exact_texts() {
        let p = Progress {
            progress: "1.0".to_owned(),
            total: Some("2.0".to_owned()),
            message: Some("step 1".to_owned()),
        };
        assert_eq!(label(&p), "1.0/2.0 step 1");
        let bare = Progress {
            progress: "123456789012345678901234567890".to_owned(),
            total: None,
            message: None,
        };
        assert_eq!(label(&bare), "123456789012345678901234567890");
    }
}
