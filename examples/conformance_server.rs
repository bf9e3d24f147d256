//! The conformance fixture server: every fixture the public MCP conformance suite drives
//! (`examples/conformance/`), published directly (one native tool per fixture) over stdio.
//!
//! ```sh
//! cargo run --example conformance_server                          # stdio (also `--stdio`)
//! cargo run --example conformance_server --features legacy        # also the 2025 eras
//! cargo run --example conformance_server -- --http 127.0.0.1:0    # Streamable HTTP on /mcp
//! cargo run --example conformance_server -- --tasks --http 127.0.0.1:0  # plus the Tasks fixtures
//! ```
//!
//! `--tasks` adds the Tasks extension's fixtures (`examples/conformance/tasks.rs`), which the
//! `tasks-*` scenarios need; without it the fixture list is the one the interop and
//! equivalence tests pin (task tools would change the first `tools/list` page).
//!
//! With `--http ADDR` the server binds ADDR (a loopback address; port 0 picks a free one),
//! prints `{"listening":"http://ADDR/mcp"}` as its only stdout line and serves until Ctrl-C.
//! On stdio, stdout carries protocol lines only. Diagnostics always go to stderr (`RUST_LOG`
//! filters them, default `warn`).

#![forbid(unsafe_code)]

#[path = "conformance/fixtures.rs"]
mod fixtures;
#[cfg(feature = "legacy")]
#[path = "conformance/legacy.rs"]
mod legacy;
#[path = "conformance/tasks.rs"]
mod tasks;
#[path = "conformance/triggers.rs"]
mod triggers;

use std::net::SocketAddr;
use std::sync::Arc;

use strict_mcp::core::Caller;
use strict_mcp::server::http::{self, HttpConfig, McpHttp};
use strict_mcp::server::{Server, ServerOptions, ShutdownReport};
use tracing_subscriber::EnvFilter;

fn usage() -> ! {
    eprintln!("usage: conformance_server [--tasks] [--stdio | --http 127.0.0.1:PORT]");
    std::process::exit(2);
}

enum Transport {
    Stdio,
    Http(SocketAddr),
}

/// The transport, and whether `--tasks` was given.
fn transport() -> (Transport, bool) {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let tasks = match args.first().map(String::as_str) {
        Some("--tasks") => {
            args.remove(0);
            true
        }
        _ => false,
    };
    let transport = match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        [] | ["--stdio"] => Transport::Stdio,
        ["--http", addr] => match addr.parse::<SocketAddr>() {
            Ok(addr) if addr.ip().is_loopback() => Transport::Http(addr),
            Ok(_) => {
                eprintln!("conformance_server: --http binds loopback addresses only");
                std::process::exit(2);
            }
            Err(_) => usage(),
        },
        _ => usage(),
    };
    (transport, tasks)
}

/// A `--features legacy` build also serves the initialise era (2025-06-18, 2025-11-25): the
/// 2026-07-28 scenarios stay modern, their requests carry modern `_meta`.
fn options() -> ServerOptions {
    #[cfg(feature = "legacy")]
    return ServerOptions::new().legacy_era(true);
    #[cfg(not(feature = "legacy"))]
    ServerOptions::new()
}

/// Every fixture the suite drives but the Tasks extension's; a `--features legacy` build adds the ones only the
/// 2025-11-25 scenarios call (`examples/conformance/legacy.rs`).
fn base() -> strict_mcp::core::RegistryBuilder {
    #[cfg(feature = "legacy")]
    return legacy::with_legacy_fixtures(fixtures::builder());
    #[cfg(not(feature = "legacy"))]
    fixtures::builder()
}

/// [`base`] plus the Tasks extension's fixtures (`--tasks`).
fn base_with_tasks() -> strict_mcp::core::RegistryBuilder {
    let mut builder = base();
    for tool in tasks::tools() {
        builder = builder.tool(tool);
    }
    builder
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn")),
        )
        .init();
    let (transport, with_tasks) = transport();

    let catalogue = Arc::new(triggers::Catalogue::default());
    let registry = triggers::registry(&catalogue, if with_tasks { base_with_tasks } else { base });
    let server = Server::new(
        registry,
        options()
            .server_info("strict-mcp-conformance", env!("CARGO_PKG_VERSION"))
            .mode("direct"),
    )?;
    catalogue.attach(server.clone());
    #[cfg(feature = "legacy")]
    legacy::attach(server.clone());

    match transport {
        // stdio serves one local user; credentials would come from the environment (C16).
        Transport::Stdio => {
            let report = server.run_stdio(Caller::new("local-user")).await?;
            exit_on_cleanup_failure(report);
        }
        Transport::Http(addr) => {
            let listener = tokio::net::TcpListener::bind(addr).await?;
            let url = format!("http://{}/mcp", listener.local_addr()?);
            let config = HttpConfig {
                path: Some("/mcp".to_owned()),
                ..HttpConfig::default()
            };
            let service = McpHttp::new(server.clone(), config);
            println!("{}", serde_json::json!({ "listening": url }));
            let budget = server.shutdown_budget();
            // Ctrl-C: end the protocol server first (closes listen streams), then the
            // accept loop, which lets in-flight responses finish.
            let stop = async move {
                if tokio::signal::ctrl_c().await.is_err() {
                    std::future::pending::<()>().await;
                }
                server.shutdown(budget).await;
            };
            http::serve(listener, service, stop).await?;
        }
    }
    Ok(())
}

/// O5: a shutdown that left calls running is reported on stderr and in the exit status (3),
/// so a supervisor can tell a clean stop from an abandoned one.
fn exit_on_cleanup_failure(report: ShutdownReport) {
    if report != ShutdownReport::Stopped {
        eprintln!("shutdown: {report}");
        std::process::exit(report.exit_code());
    }
}
