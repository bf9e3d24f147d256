//! `strict-mcp bench`: a closed-loop load test of one tool. Each connection (its own HTTP
//! transport, or its own stdio child) runs `--in-flight` callers that call the tool again as
//! soon as the previous call ends; calls that start after the warm-up are measured.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use crate::cli::args::{BenchArgs, Global};
use crate::cli::check::{http_target, CheckError};
use crate::cli::exit::Exit;
use crate::cli::input::{self, ArgumentSource};
use crate::cli::output::Records;
use crate::cli::session::{self, Failure};
use crate::client::{CallOptions, Client, ClientOptions, RoundInput, ToolOutcome, MAX_DEADLINE};

/// The most connections one run opens: each stdio connection is a child process, and a load
/// test must not turn into a fork bomb or exhaust the machine's ports.
pub const MAX_CONNECTIONS: usize = 64;

/// The most calls in flight on one connection: enough to saturate a loopback server, few
/// enough that the run's own tasks stay small.
pub const MAX_IN_FLIGHT: usize = 256;

/// The longest measured duration: a bench is a bounded run, not a soak test.
pub const MAX_DURATION: Duration = Duration::from_secs(600);

/// The longest warm-up.
pub const MAX_WARMUP: Duration = Duration::from_secs(60);

/// The most latency samples kept (4 MiB); past it, a uniform reservoir sample stands in for
/// all calls, so memory stays bounded however fast the server is.
pub const MAX_SAMPLES: usize = 1 << 20;

/// A checked plan of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Connections opened.
    pub connections: usize,
    /// Callers per connection.
    pub in_flight: usize,
    /// Measured time.
    pub duration: Duration,
    /// Unmeasured time before it.
    pub warmup: Duration,
}

/// Why a plan was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// A count or time was zero or over its bound.
    #[error("{flag} must be {min} to {max}")]
    OutOfRange {
        /// The flag.
        flag: &'static str,
        /// The least value.
        min: u64,
        /// The greatest value.
        max: u64,
    },
}

impl Plan {
    /// Checks the flags against the bounds.
    ///
    /// # Errors
    /// [`PlanError::OutOfRange`] naming the flag.
    pub fn new(
        connections: usize,
        in_flight: usize,
        duration: Duration,
        warmup: Duration,
    ) -> Result<Plan, PlanError> {
        let range = |flag, value: u64, min, max| {
            if (min..=max).contains(&value) {
                Ok(())
            } else {
                Err(PlanError::OutOfRange { flag, min, max })
            }
        };
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        range(
            "--connections",
            connections as u64,
            1,
            MAX_CONNECTIONS as u64,
        )?;
        range("--in-flight", in_flight as u64, 1, MAX_IN_FLIGHT as u64)?;
        range(
            "--duration (milliseconds)",
            ms(duration),
            1,
            ms(MAX_DURATION),
        )?;
        range("--warmup (milliseconds)", ms(warmup), 0, ms(MAX_WARMUP))?;
        Ok(Plan {
            connections,
            in_flight,
            duration,
            warmup,
        })
    }
}

/// Latencies and counts of the measured calls.
#[derive(Debug, Default)]
struct Stats {
    ok: u64,
    errors: u64,
    max: Duration,
    samples: Vec<Duration>,
    seen: u64,
    rng: u64,
}

impl Stats {
    fn record(&mut self, latency: Duration, ok: bool) {
        if ok {
            self.ok += 1;
        } else {
            self.errors += 1;
        }
        self.max = self.max.max(latency);
        self.seen += 1;
        if self.samples.len() < MAX_SAMPLES {
            self.samples.push(latency);
            return;
        }
        // Reservoir sampling (xorshift; statistical only).
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let j = usize::try_from(self.rng % self.seen).unwrap_or(usize::MAX);
        if let Some(slot) = self.samples.get_mut(j) {
            *slot = latency;
        }
    }
}

/// The `q`-quantile (nearest rank) of sorted `samples`.
fn quantile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

/// One connection's callers, until `end`; calls that start at `measure_from` or later count.
async fn drive(
    client: Client,
    tool: Arc<(String, Map<String, Value>)>,
    plan: Plan,
    measure_from: Instant,
    end: Instant,
    stats: Arc<Mutex<Stats>>,
) {
    let mut callers = tokio::task::JoinSet::new();
    for _ in 0..plan.in_flight {
        let client = client.clone();
        let tool = Arc::clone(&tool);
        let stats = Arc::clone(&stats);
        callers.spawn(async move {
            let options = CallOptions::default();
            while Instant::now() < end {
                let start = Instant::now();
                let outcome = client
                    .call_tool(&tool.0, Some(tool.1.clone()), RoundInput::first(), &options)
                    .await;
                let ok = matches!(outcome, Ok(ToolOutcome::Success(_)));
                if start >= measure_from {
                    stats
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .record(start.elapsed(), ok);
                }
            }
        });
    }
    while callers.join_next().await.is_some() {}
}

/// Runs `bench` and prints its record.
pub async fn run(global: &Global, args: &BenchArgs) -> Exit {
    match bench(global, args).await {
        Ok(exit) => exit,
        Err(f) => {
            eprintln!("error: {}", f.message);
            f.exit
        }
    }
}

async fn bench(global: &Global, args: &BenchArgs) -> Result<Exit, Failure> {
    let usage = |e: &dyn std::fmt::Display| Failure {
        exit: Exit::Usage,
        message: e.to_string(),
    };
    if global.timeout == 0 || Duration::from_secs(global.timeout) > MAX_DEADLINE {
        return Err(usage(&format!(
            "--timeout must be 1 to {} seconds",
            MAX_DEADLINE.as_secs()
        )));
    }
    // Checked before the conversion, which panics on NaN, negatives and overflow.
    let secs = |flag: &str, x: f64| {
        if x.is_finite() && (0.0..=1e6).contains(&x) {
            Ok(Duration::from_secs_f64(x))
        } else {
            Err(usage(&format!("{flag} must be a number of seconds")))
        }
    };
    let plan = Plan::new(
        args.connections,
        args.in_flight,
        secs("--duration", args.duration)?,
        secs("--warmup", args.warmup)?,
    )
    .map_err(|e| usage(&e))?;
    if let Some(url) = &global.url {
        match http_target(url, args.allow_remote) {
            Ok(_) => {}
            Err(CheckError::Remote(host)) => {
                return Err(usage(&format!(
                    "--url: {host} is not a loopback host; pass --allow-remote to load it"
                )))
            }
            // Other URL faults are reported by the transport, as for every subcommand.
            Err(_) => {}
        }
    }
    let arguments = input::read_arguments(&ArgumentSource::Inline(args.args.clone()))
        .map_err(|e| usage(&e))?
        .map;
    let client_options = ClientOptions {
        default_deadline: Duration::from_secs(global.timeout),
        ..ClientOptions::default()
    };
    let mut clients = Vec::new();
    let mut children = Vec::new();
    let mut failure = None;
    for _ in 0..plan.connections {
        let (transport, stdio) = match session::transport(global) {
            Ok(t) => t,
            Err(f) => {
                failure = Some(f);
                break;
            }
        };
        children.extend(stdio);
        match Client::connect(transport, client_options.clone()).await {
            // O103: the definition first (HTTP headers, output schema).
            Ok(client) => match client.list_tools(&CallOptions::default()).await {
                Ok(_) => clients.push(client),
                Err(e) => {
                    failure = Some(Failure {
                        exit: Exit::Protocol,
                        message: e.to_string(),
                    });
                    client.close().await;
                    break;
                }
            },
            Err(e) => {
                failure = Some(Failure {
                    exit: Exit::of_connect(&e),
                    message: e.to_string(),
                });
                break;
            }
        }
    }
    let result = match failure {
        Some(f) => Err(f),
        None => Ok(measure(global, args, plan, &clients, arguments).await),
    };
    for c in &clients {
        c.close().await;
    }
    drop(children);
    result
}

async fn measure(
    global: &Global,
    args: &BenchArgs,
    plan: Plan,
    clients: &[Client],
    arguments: Map<String, Value>,
) -> Exit {
    let stats = Arc::new(Mutex::new(Stats {
        rng: 0x9E37_79B9_7F4A_7C15,
        ..Stats::default()
    }));
    let tool = Arc::new((args.tool.clone(), arguments));
    let begin = Instant::now();
    let measure_from = begin + plan.warmup;
    let end = measure_from + plan.duration;
    let mut connections = tokio::task::JoinSet::new();
    for client in clients {
        connections.spawn(drive(
            client.clone(),
            Arc::clone(&tool),
            plan.clone(),
            measure_from,
            end,
            Arc::clone(&stats),
        ));
    }
    // A call in flight at the end is bounded by the per-request --timeout.
    let drain = end + Duration::from_secs(global.timeout);
    let joined = tokio::time::timeout_at(drain.into(), async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if joined.is_err() {
        connections.abort_all();
    }
    let window = end
        .min(Instant::now())
        .saturating_duration_since(measure_from);
    let mut stats = std::mem::take(&mut *stats.lock().unwrap_or_else(PoisonError::into_inner));
    stats.samples.sort_unstable();
    let requests = stats.ok + stats.errors;
    #[allow(clippy::cast_precision_loss)]
    let rps = if window.is_zero() {
        0.0
    } else {
        (requests as f64 / window.as_secs_f64() * 10.0).round() / 10.0
    };
    let record = json!({
        "kind": "bench",
        "tool": args.tool,
        "connections": plan.connections,
        "in_flight": plan.in_flight,
        "warmup_s": plan.warmup.as_secs_f64(),
        "duration_s": plan.duration.as_secs_f64(),
        "requests": requests,
        "errors": stats.errors,
        "rps": rps,
        "latency_ms": {
            "p50": ms(quantile(&stats.samples, 0.50)),
            "p90": ms(quantile(&stats.samples, 0.90)),
            "p99": ms(quantile(&stats.samples, 0.99)),
            "max": ms(stats.max),
        },
    });
    if global.json {
        Records::emit_value(&record);
    } else {
        out!(
            "{} x{} connection(s) x{} in flight, {:.1} s measured after {:.1} s warm-up",
            args.tool,
            plan.connections,
            plan.in_flight,
            plan.duration.as_secs_f64(),
            plan.warmup.as_secs_f64()
        );
        out!("requests  {requests}  errors {}", stats.errors);
        out!("req/s     {rps}");
        let l = &record["latency_ms"];
        out!(
            "latency   p50 {} ms  p90 {} ms  p99 {} ms  max {} ms",
            l["p50"],
            l["p90"],
            l["p99"],
            l["max"]
        );
    }
    Exit::Success
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_bounds_at_and_one_past() {
        let s = Duration::from_secs;
        assert!(Plan::new(MAX_CONNECTIONS, MAX_IN_FLIGHT, MAX_DURATION, MAX_WARMUP).is_ok());
        assert_eq!(
            Plan::new(MAX_CONNECTIONS + 1, 1, s(1), s(0)),
            Err(PlanError::OutOfRange {
                flag: "--connections",
                min: 1,
                max: 64
            })
        );
        assert!(matches!(
            Plan::new(1, MAX_IN_FLIGHT + 1, s(1), s(0)),
            Err(PlanError::OutOfRange {
                flag: "--in-flight",
                ..
            })
        ));
        assert!(Plan::new(1, 1, MAX_DURATION + Duration::from_millis(1), s(0)).is_err());
        assert!(Plan::new(1, 1, s(1), MAX_WARMUP + Duration::from_millis(1)).is_err());
        assert!(Plan::new(0, 1, s(1), s(0)).is_err());
        assert!(Plan::new(1, 0, s(1), s(0)).is_err());
        assert!(Plan::new(1, 1, Duration::ZERO, s(0)).is_err());
    }

    #[test]
    fn samples_stay_bounded_past_max_samples() {
        let mut stats = Stats {
            rng: 1,
            ..Stats::default()
        };
        for n in 0..=MAX_SAMPLES {
            stats.record(Duration::from_micros(n as u64 % 1000), n % 2 == 0);
        }
        assert_eq!(stats.samples.len(), MAX_SAMPLES);
        assert_eq!(stats.seen, MAX_SAMPLES as u64 + 1);
        assert_eq!(stats.ok + stats.errors, MAX_SAMPLES as u64 + 1);
    }

    #[test]
    fn quantiles_are_nearest_rank() {
        let d: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(quantile(&d, 0.5), Duration::from_millis(50));
        assert_eq!(quantile(&d, 0.99), Duration::from_millis(99));
        assert_eq!(quantile(&[], 0.5), Duration::ZERO);
        assert_eq!(ms(Duration::from_micros(1500)), 1.5);
    }
}
