//! The protocol floor of strict-mcp without any I/O: `decode` one `tools/call` line and
//! `Server::serve` it on a current-thread runtime, many times. Prints the process CPU per
//! request (from `/proc`, like the stdio rows of run.sh), so the stdio host's own share is the
//! difference. Not part of run.sh: `strict_inproc [REQUESTS]`.

#[path = "../strict_echo.rs"]
mod strict_echo;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use strict_mcp::codec::decode;
use strict_mcp::core::{Caller, CancelToken};
use strict_mcp::server::{Outbox, Reply};
use strict_mcp_load::{echo_request, is_echo_success, process_cpu_us};

/// Counts reply bytes; checks the first reply.
#[derive(Default)]
struct Sink {
    bytes: AtomicUsize,
}

impl Outbox for Sink {
    fn notify(&self, _line: String) -> bool {
        true
    }
    fn finish(&self, reply: Reply) {
        if self.bytes.fetch_add(reply.line.len(), Ordering::Relaxed) == 0 {
            assert!(is_echo_success(reply.line.as_bytes(), 0), "{}", reply.line);
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(200_000);
    let server = strict_echo::server()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let limits = server.ingress_limits();
    let caller = Caller::new("load");
    let sink = Arc::new(Sink::default());
    let lines: Vec<String> = (0..n).map(echo_request).collect();
    let pid = std::process::id();
    runtime.block_on(async {
        let cpu0 = process_cpu_us(pid)?;
        let start = Instant::now();
        for line in &lines {
            let message = decode(line.as_bytes(), &limits).expect("decodes");
            let outbox: Arc<dyn Outbox> = sink.clone();
            server
                .serve(caller.clone(), message, outbox, CancelToken::new())
                .await;
        }
        let wall = start.elapsed();
        let cpu = process_cpu_us(pid)? - cpu0;
        println!(
            "{n} requests: {:.1} µs CPU/request, {:.1} µs wall/request, {} reply bytes",
            cpu as f64 / n as f64,
            wall.as_secs_f64() * 1e6 / n as f64,
            sink.bytes.load(Ordering::Relaxed)
        );
        Ok::<_, std::io::Error>(())
    })?;
    Ok(())
}
