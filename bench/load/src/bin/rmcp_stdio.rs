//! rmcp 3.11's stdio server for the `echo` handler. Requests carry the 2026-07-28 inline
//! metadata, so no `initialize` handshake is sent. Stops when stdin closes.

use rmcp::ServiceExt;
use strict_mcp_load::rmcp_echo::Echo;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let running = Echo.serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}
