//! The `echo` server written against strict-mcp's public API (a typed tool), shared by
//! `strict_http` and `strict_stdio`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strict_mcp::core::{Invocation, RegistryBuilder, ToolDef};
use strict_mcp::server::{Server, ServerOptions};

#[derive(Deserialize, JsonSchema)]
struct EchoInput {
    /// The text to send back.
    text: String,
}

#[derive(Serialize, JsonSchema)]
struct EchoOutput {
    /// The text that was sent.
    text: String,
}

/// A server with the one tool `echo`.
pub fn server() -> Result<Server, Box<dyn std::error::Error>> {
    let registry = RegistryBuilder::new()
        .tool(
            ToolDef::typed("echo", |_inv: Invocation, input: EchoInput| async move {
                Ok(EchoOutput { text: input.text })
            })
            .description("Sends the given text back."),
        )
        .build()?;
    Ok(Server::new(
        registry,
        // Direct publication: `echo` is a native tool, as in the other servers (the default,
        // compact, publishes three discovery tools instead).
        ServerOptions::new()
            .server_info("strict-mcp-load", "0")
            .mode("direct"),
    )?)
}
