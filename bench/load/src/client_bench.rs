//! Shared pieces of the client drivers (`bare_client`, `strict_client`, `rmcp_client`): the
//! command line, the measured window, the closed-loop callers' tallies, the CPU probe of the
//! client process itself and the `RESULT` line `client.sh` turns into a table.
//!
//! ```text
//! DRIVER http  --url http://127.0.0.1:PORT/mcp [--pid SERVER_PID] --conc N [--warmup S] [--measure S] [--label L]
//! DRIVER stdio --conc N [--warmup S] [--measure S] [--label L] -- SERVER_CMD [ARGS...]
//! ```
//!
//! Every driver runs N callers, each doing one `tools/call echo` round trip after the other
//! (closed loop), on the same tokio runtime shape ([`runtime`]). Only calls started after the
//! warm-up and finished before the window ends count. Client CPU is utime+stime of this process
//! (all its threads, not its children) from `/proc/self/stat` at the window's edges.

use std::time::{Duration, Instant};

use crate::process_cpu_us;

/// How long after the window callers and the server get to finish before the driver gives up
/// on them (the run is bounded even when a call hangs).
pub const DRAIN: Duration = Duration::from_secs(5);

/// Most concurrent callers one driver runs.
///
/// Bounds the tasks (and, for HTTP, the connections) a mistyped `--conc` would open.
pub const MAX_CONC: usize = 4096;

/// Longest warm-up or measured window accepted, in seconds.
///
/// Keeps a run bounded: a typo cannot start an hour-long benchmark.
pub const MAX_WINDOW_SECONDS: f64 = 3600.0;

/// Which transport a driver exercises.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// POSTs to a running HTTP server at `url`; its CPU is read when `pid` is given.
    Http {
        /// The endpoint, e.g. `http://127.0.0.1:4000/mcp`.
        url: String,
        /// The server's pid, for its CPU over the window.
        pid: Option<u32>,
    },
    /// Spawns `command` as the server child and talks to it over its stdin/stdout.
    Stdio {
        /// Program and arguments.
        command: Vec<String>,
    },
}

impl Target {
    /// `http` or `stdio`, the transport column of the result.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Target::Http { .. } => "http",
            Target::Stdio { .. } => "stdio",
        }
    }
}

/// A driver's command line.
#[derive(Debug, Clone, PartialEq)]
pub struct Args {
    /// What to talk to.
    pub target: Target,
    /// Concurrent closed-loop callers.
    pub conc: usize,
    /// Time before the window (not counted).
    pub warmup: Duration,
    /// The measured window.
    pub measure: Duration,
    /// The row's label in the table.
    pub label: String,
    /// `--pool`: rmcp's HTTP client with a keep-alive connection pool instead of its default
    /// (which keeps no idle connection); the other drivers refuse it.
    pub pooled: bool,
}

/// Why a command line was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgsError {
    /// No `http` / `stdio` first argument.
    #[error("missing mode: http | stdio")]
    MissingMode,
    /// The first argument is neither `http` nor `stdio`.
    #[error("unknown mode {0}")]
    UnknownMode(String),
    /// A flag this driver does not know.
    #[error("unknown argument {0}")]
    UnknownFlag(String),
    /// A flag without its value, or with one that does not parse.
    #[error("bad or missing value for {0}")]
    BadValue(&'static str),
    /// `--conc` outside `1..=MAX_CONC`.
    #[error("concurrency must be 1..={MAX_CONC}")]
    Concurrency,
    /// `http` without `--url`.
    #[error("http needs --url")]
    MissingUrl,
    /// `stdio` without `-- SERVER_CMD`.
    #[error("stdio needs -- SERVER_CMD")]
    MissingCommand,
}

/// Parses a driver's arguments (without the program name).
///
/// # Errors
/// [`ArgsError`] for anything it cannot use; nothing is defaulted silently but the window
/// (5 s warm-up, 10 s measured), the concurrency (1) and the label (the driver's name).
pub fn parse_args(driver: &str, args: impl IntoIterator<Item = String>) -> Result<Args, ArgsError> {
    let mut it = args.into_iter();
    let mode = it.next().ok_or(ArgsError::MissingMode)?;
    if mode != "http" && mode != "stdio" {
        return Err(ArgsError::UnknownMode(mode));
    }
    let secs = |v: Option<String>, flag: &'static str| -> Result<Duration, ArgsError> {
        v.and_then(|s| s.parse::<f64>().ok())
            .filter(|s| (0.0..=MAX_WINDOW_SECONDS).contains(s))
            .map(Duration::from_secs_f64)
            .ok_or(ArgsError::BadValue(flag))
    };
    let (mut url, mut pid, mut command) = (None, None, Vec::new());
    let mut conc = 1;
    let mut warmup = Duration::from_secs(5);
    let mut measure = Duration::from_secs(10);
    let mut label = driver.to_owned();
    let mut pooled = false;
    while let Some(flag) = it.next() {
        match flag.as_str() {
            "--url" => url = Some(it.next().ok_or(ArgsError::BadValue("--url"))?),
            "--pid" => {
                pid = Some(
                    it.next()
                        .and_then(|p| p.parse().ok())
                        .ok_or(ArgsError::BadValue("--pid"))?,
                );
            }
            "--conc" => {
                conc = it
                    .next()
                    .and_then(|n| n.parse().ok())
                    .ok_or(ArgsError::BadValue("--conc"))?;
                if !(1..=MAX_CONC).contains(&conc) {
                    return Err(ArgsError::Concurrency);
                }
            }
            "--warmup" => warmup = secs(it.next(), "--warmup")?,
            "--measure" => measure = secs(it.next(), "--measure")?,
            "--label" => label = it.next().ok_or(ArgsError::BadValue("--label"))?,
            "--pool" => pooled = true,
            "--" => command = it.by_ref().collect(),
            other => return Err(ArgsError::UnknownFlag(other.to_owned())),
        }
    }
    let target = if mode == "http" {
        Target::Http {
            url: url.ok_or(ArgsError::MissingUrl)?,
            pid,
        }
    } else {
        if command.is_empty() {
            return Err(ArgsError::MissingCommand);
        }
        Target::Stdio { command }
    };
    Ok(Args {
        target,
        conc,
        warmup,
        measure,
        label,
        pooled,
    })
}

/// Parses the process arguments or exits with status 2 and the reason.
#[must_use]
pub fn args_or_exit(driver: &str) -> Args {
    match parse_args(driver, std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{driver}: {e}");
            std::process::exit(2);
        }
    }
}

/// The runtime every driver runs on: multi-thread, `CLIENT_THREADS` workers (default 2, the
/// load generator's shape), so the three clients differ only in their own code.
///
/// # Errors
/// When tokio cannot start its threads.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    let threads = std::env::var("CLIENT_THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .filter(|&t: &usize| (1..=64).contains(&t))
        .unwrap_or(2);
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
}

/// The measured window: calls sent at or after `start` and answered by `end` count.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    /// End of the warm-up.
    pub start: Instant,
    /// End of the measured window.
    pub end: Instant,
}

impl Window {
    /// The window that starts `warmup` from now and lasts `measure`.
    #[must_use]
    pub fn after(warmup: Duration, measure: Duration) -> Window {
        let now = Instant::now();
        Window {
            start: now + warmup,
            end: now + warmup + measure,
        }
    }

    /// Whether a call sent at `sent` and answered at `done` counts.
    #[must_use]
    pub fn counts(&self, sent: Instant, done: Instant) -> bool {
        sent >= self.start && done <= self.end
    }

    /// Whether callers should start another call.
    #[must_use]
    pub fn open(&self) -> bool {
        Instant::now() < self.end
    }

    /// The instant after which nothing is waited for any more.
    #[must_use]
    pub fn give_up(&self) -> tokio::time::Instant {
        (self.end + DRAIN).into()
    }
}

/// One caller's counted calls.
#[derive(Debug, Default)]
pub struct Tally {
    /// Latency of every counted successful call, µs.
    pub latencies_us: Vec<u32>,
    /// Counted calls that failed (wrong answer, transport error, timeout).
    pub errors: u64,
}

impl Tally {
    /// Records one call if the window counts it.
    pub fn record(&mut self, window: &Window, sent: Instant, done: Instant, ok: bool) {
        if !window.counts(sent, done) {
            return;
        }
        if ok {
            let us = (done - sent).as_micros().min(u128::from(u32::MAX));
            self.latencies_us
                .push(u32::try_from(us).unwrap_or(u32::MAX));
        } else {
            self.errors += 1;
        }
    }

    fn merge(&mut self, other: Tally) {
        self.latencies_us.extend(other.latencies_us);
        self.errors += other.errors;
    }
}

/// Runs `conc` closed-loop callers: caller `i` starts with `init(i)` as its state and runs
/// `call(state, seq)` for `seq = 1, 2, ...` while the window is open, each call bounded by
/// [`Window::give_up`]. `call` hands the state back with whether the round trip succeeded
/// (a caller's connection, for instance, lives in its state).
pub fn spawn_callers<S, I, F, Fut>(
    conc: usize,
    window: Window,
    init: I,
    call: F,
) -> tokio::task::JoinSet<Tally>
where
    S: Send + 'static,
    I: Fn(u64) -> S,
    F: Fn(S, u64) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = (S, bool)> + Send + 'static,
{
    let mut callers = tokio::task::JoinSet::new();
    for caller in 0..conc as u64 {
        let call = call.clone();
        let mut state = init(caller);
        callers.spawn(async move {
            let mut tally = Tally::default();
            let mut seq = 0u64;
            while window.open() {
                seq += 1;
                let sent = Instant::now();
                let Ok((next, ok)) =
                    tokio::time::timeout_at(window.give_up(), call(state, seq)).await
                else {
                    tally.record(&window, sent, Instant::now(), false);
                    break;
                };
                state = next;
                tally.record(&window, sent, Instant::now(), ok);
            }
            tally
        });
    }
    callers
}

/// CPU (µs) of this process and of `server` across the window; sleeps until its end.
pub async fn cpu_over_window(server: Option<u32>, window: Window) -> (Option<u64>, Option<u64>) {
    let me = std::process::id();
    tokio::time::sleep_until(window.start.into()).await;
    let before = (
        process_cpu_us(me).ok(),
        server.and_then(|p| process_cpu_us(p).ok()),
    );
    tokio::time::sleep_until(window.end.into()).await;
    let after = (
        process_cpu_us(me).ok(),
        server.and_then(|p| process_cpu_us(p).ok()),
    );
    let delta = |a: Option<u64>, b: Option<u64>| Some(a?.saturating_sub(b?));
    (delta(after.0, before.0), delta(after.1, before.1))
}

/// Measures the window while `callers` run, then collects their tallies (aborting any still
/// running at [`Window::give_up`]). Returns the merged tally, the client CPU and the server CPU.
pub async fn measure(
    window: Window,
    server: Option<u32>,
    mut callers: tokio::task::JoinSet<Tally>,
) -> (Tally, Option<u64>, Option<u64>) {
    let (client_cpu, server_cpu) = cpu_over_window(server, window).await;
    let mut tally = Tally::default();
    while let Ok(Some(joined)) =
        tokio::time::timeout_at(window.give_up(), callers.join_next()).await
    {
        if let Ok(t) = joined {
            tally.merge(t);
        }
    }
    callers.abort_all();
    (tally, client_cpu, server_cpu)
}

/// The `RESULT` line: `RESULT label transport conc requests errors req_per_s p50_us p99_us
/// client_cpu_us_per_req server_cpu_us_per_req` (`-` where a CPU figure is missing).
#[must_use]
pub fn report(
    args: &Args,
    mut tally: Tally,
    window: Window,
    client_cpu: Option<u64>,
    server_cpu: Option<u64>,
) -> String {
    tally.latencies_us.sort_unstable();
    let n = tally.latencies_us.len();
    let pct = |p: f64| -> u32 {
        if n == 0 {
            return 0;
        }
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let i = ((p * n as f64).ceil() as usize).clamp(1, n) - 1;
        tally.latencies_us[i]
    };
    let secs = (window.end - window.start).as_secs_f64();
    #[allow(clippy::cast_precision_loss)]
    let per = |cpu: Option<u64>| match cpu {
        Some(c) if n > 0 => format!("{:.1}", c as f64 / n as f64),
        _ => "-".into(),
    };
    #[allow(clippy::cast_precision_loss)]
    let rps = if secs > 0.0 { n as f64 / secs } else { 0.0 };
    format!(
        "RESULT {} {} {} {} {} {:.0} {} {} {} {}",
        args.label,
        args.target.name(),
        args.conc,
        n,
        tally.errors,
        rps,
        pct(0.50),
        pct(0.99),
        per(client_cpu),
        per(server_cpu),
    )
}

/// The `echo` arguments every client sends, as a JSON object.
#[must_use]
pub fn echo_arguments() -> serde_json::Map<String, serde_json::Value> {
    let mut args = serde_json::Map::new();
    args.insert("text".into(), serde_json::Value::from(crate::ECHO_TEXT));
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(words: &[&str]) -> Result<Args, ArgsError> {
        parse_args("d", words.iter().map(|w| (*w).to_owned()))
    }

    #[test]
    fn parses_http_and_stdio() {
        let a = parse(&[
            "http",
            "--url",
            "http://127.0.0.1:1/mcp",
            "--pid",
            "7",
            "--conc",
            "16",
        ])
        .expect("http");
        assert_eq!(
            a.target,
            Target::Http {
                url: "http://127.0.0.1:1/mcp".into(),
                pid: Some(7)
            }
        );
        assert_eq!((a.conc, a.label.as_str()), (16, "d"));
        let s = parse(&["stdio", "--warmup", "0.5", "--", "srv", "-x"]).expect("stdio");
        assert_eq!(
            s.target,
            Target::Stdio {
                command: vec!["srv".into(), "-x".into()]
            }
        );
        assert_eq!(s.warmup, Duration::from_millis(500));
    }

    #[test]
    fn concurrency_bound_is_enforced() {
        let at = MAX_CONC.to_string();
        let past = (MAX_CONC + 1).to_string();
        assert_eq!(
            parse(&["stdio", "--conc", &at, "--", "x"]).map(|a| a.conc),
            Ok(MAX_CONC)
        );
        assert_eq!(
            parse(&["stdio", "--conc", &past, "--", "x"]),
            Err(ArgsError::Concurrency)
        );
        assert_eq!(
            parse(&["stdio", "--conc", "0", "--", "x"]),
            Err(ArgsError::Concurrency)
        );
    }

    #[test]
    fn window_bound_is_enforced() {
        let at = MAX_WINDOW_SECONDS.to_string();
        let past = (MAX_WINDOW_SECONDS + 1.0).to_string();
        assert!(parse(&["stdio", "--measure", &at, "--", "x"]).is_ok());
        assert_eq!(
            parse(&["stdio", "--measure", &past, "--", "x"]),
            Err(ArgsError::BadValue("--measure"))
        );
    }

    #[test]
    fn refuses_incomplete_command_lines() {
        assert_eq!(parse(&[]), Err(ArgsError::MissingMode));
        assert_eq!(parse(&["tcp"]), Err(ArgsError::UnknownMode("tcp".into())));
        assert_eq!(parse(&["http"]), Err(ArgsError::MissingUrl));
        assert_eq!(parse(&["stdio"]), Err(ArgsError::MissingCommand));
        assert_eq!(
            parse(&["stdio", "--x"]),
            Err(ArgsError::UnknownFlag("--x".into()))
        );
    }

    #[test]
    fn report_counts_only_the_window() {
        let window = Window::after(Duration::ZERO, Duration::from_secs(2));
        let mut tally = Tally::default();
        let before = window
            .start
            .checked_sub(Duration::from_millis(1))
            .expect("instant");
        tally.record(&window, before, window.start, true); // sent in the warm-up
        tally.record(
            &window,
            window.start,
            window.end + Duration::from_millis(1),
            true,
        ); // late
        tally.record(
            &window,
            window.start,
            window.start + Duration::from_micros(10),
            true,
        );
        tally.record(
            &window,
            window.start,
            window.start + Duration::from_micros(30),
            true,
        );
        tally.record(&window, window.start, window.start, false);
        let args = parse(&["stdio", "--conc", "2", "--label", "x", "--", "s"]).expect("args");
        assert_eq!(
            report(&args, tally, window, Some(100), None),
            "RESULT x stdio 2 2 1 1 10 30 50.0 -"
        );
    }
}
