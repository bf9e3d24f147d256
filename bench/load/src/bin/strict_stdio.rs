//! strict-mcp's own stdio host (`Server::run_stdio`) with the `echo` tool from `strict_echo`.
//! Stops when stdin closes.
//!
//! A current-thread runtime, as `Server::run_stdio` documents for a host whose handlers do
//! not block: stdin and stdout have their own threads and a request that completes in its
//! first poll is served on the stdin thread, so worker threads would only be started, never
//! used (issue #23, time to the first reply: two thread starts fewer).

#[path = "../strict_echo.rs"]
mod strict_echo;

use strict_mcp::core::Caller;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = strict_echo::server()?;
    server.run_stdio(Caller::new("load")).await?;
    Ok(())
}
