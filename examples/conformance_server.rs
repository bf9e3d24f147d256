//! The conformance fixture server: every fixture the public MCP conformance suite drives
//! (`examples/conformance/`), published directly (one native tool per fixture) over stdio.
//!
//! ```sh
//! cargo run --example conformance_server            # serve on stdin/stdout
//! ```
//!
//! stdout carries protocol lines only; diagnostics go to stderr (`RUST_LOG` filters them,
//! default `warn`).

#![forbid(unsafe_code)]

#[path = "conformance/fixtures.rs"]
mod fixtures;
#[path = "conformance/triggers.rs"]
mod triggers;

use std::sync::Arc;

use strict_mcp::core::Caller;
use strict_mcp::server::{Server, ServerOptions};
use tracing_subscriber::EnvFilter;

fn usage() -> ! {
    eprintln!("usage: conformance_server [--stdio]");
    std::process::exit(2);
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn")),
        )
        .init();
    for arg in std::env::args().skip(1) {
        if arg != "--stdio" {
            usage();
        }
    }

    let catalogue = Arc::new(triggers::Catalogue::default());
    let registry = triggers::registry(&catalogue, fixtures::builder);
    let server = Server::new(
        registry,
        ServerOptions::new()
            .server_info("strict-mcp-conformance", env!("CARGO_PKG_VERSION"))
            .mode("direct"),
    )?;
    catalogue.attach(server.clone());
    // stdio serves one local user; credentials would come from the environment (C16).
    server.run_stdio(Caller::new("local-user")).await?;
    Ok(())
}
