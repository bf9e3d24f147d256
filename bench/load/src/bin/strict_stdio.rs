//! strict-mcp's own stdio host (`Server::run_stdio`) with the `echo` tool from `strict_echo`.
//! Stops when stdin closes.

#[path = "../strict_echo.rs"]
mod strict_echo;

use strict_mcp::core::Caller;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = strict_echo::server()?;
    server.run_stdio(Caller::new("load")).await?;
    Ok(())
}
