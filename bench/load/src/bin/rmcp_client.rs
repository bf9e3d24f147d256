//! rmcp 3.11's client as the driver. `serve_with_lifecycle` with
//! `ClientLifecycleMode::Discover { preferred_versions: [2026-07-28] }` is rmcp's stateless
//! start: one `server/discover`, no `initialize`, and every later request carries the
//! per-request metadata. Then every caller runs `Peer::call_tool("echo")` on a clone of the
//! one peer and checks the echoed text in the typed result.
//!
//! - `http`: rmcp's `StreamableHttpClientTransport::from_uri`, its reqwest client, whose
//!   default keeps no idle connection (`pool_max_idle_per_host(0)`, so every POST opens a
//!   connection); with `--pool` the same transport gets a default `reqwest::Client`
//!   (keep-alive pool), which is the comparable shape to the other drivers.
//! - `stdio`: rmcp's `TokioChildProcess` with the server as its child.
//!
//! See `client_bench` for the command line and the `RESULT` line.

use rmcp::model::{CallToolRequestParams, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{Peer, RoleClient};
use strict_mcp_load::client_bench::{self, Args, Target, Window};
use strict_mcp_load::ECHO_TEXT;

fn main() {
    let args = client_bench::args_or_exit("rmcp");
    let rt = client_bench::runtime().expect("tokio runtime");
    match rt.block_on(run(&args)) {
        Ok(line) => println!("{line}"),
        Err(e) => {
            eprintln!("rmcp_client {}: {e}", args.label);
            std::process::exit(1);
        }
    }
}

fn lifecycle() -> ClientLifecycleMode {
    ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    }
}

async fn run(args: &Args) -> Result<String, String> {
    let (running, pid): (RunningService<RoleClient, ()>, Option<u32>) = match &args.target {
        Target::Http { url, pid } => {
            // At least as many POSTs in flight as callers (rmcp's default is 16).
            let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                .max_concurrent_requests(args.conc);
            let transport = if args.pooled {
                StreamableHttpClientTransport::with_client(reqwest::Client::new(), config)
            } else {
                StreamableHttpClientTransport::from_config(config)
            };
            let running =
                ().serve_with_lifecycle(transport, lifecycle())
                    .await
                    .map_err(|e| format!("connect: {e}"))?;
            (running, *pid)
        }
        Target::Stdio { command } => {
            if args.pooled {
                return Err("--pool is for http".into());
            }
            let (program, rest) = command.split_first().ok_or("no server command")?;
            let mut cmd = tokio::process::Command::new(program);
            cmd.args(rest);
            let child = TokioChildProcess::new(cmd).map_err(|e| format!("spawn: {e}"))?;
            let pid = child.id();
            let running =
                ().serve_with_lifecycle(child, lifecycle())
                    .await
                    .map_err(|e| format!("connect: {e}"))?;
            (running, pid)
        }
    };
    let peer = running.peer().clone();
    let window = Window::after(args.warmup, args.measure);
    let callers = client_bench::spawn_callers(
        args.conc,
        window,
        |_| peer.clone(),
        |peer: Peer<RoleClient>, _seq| async move {
            let ok = call(&peer).await;
            (peer, ok)
        },
    );
    let (tally, client_cpu, server_cpu) = client_bench::measure(window, pid, callers).await;
    let _ = tokio::time::timeout(client_bench::DRAIN, running.cancel()).await;
    Ok(client_bench::report(
        args, tally, window, client_cpu, server_cpu,
    ))
}

/// One `tools/call echo` through the public API, the way an application calls a tool.
async fn call(peer: &Peer<RoleClient>) -> bool {
    let params = CallToolRequestParams::new("echo").with_arguments(client_bench::echo_arguments());
    let Ok(result) = peer.call_tool(params).await else {
        return false;
    };
    result.is_error != Some(true)
        && result
            .content
            .iter()
            .any(|block| block.as_text().is_some_and(|t| t.text == ECHO_TEXT))
}
