//! A small MCP server on stdin/stdout: one typed tool, one resource and one prompt.
//!
//! Run with `cargo run --example stdio_server`, then type JSON-RPC lines, e.g.
//! `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`.
//! Diagnostics go to stderr only; stdout carries protocol lines (C1, C4).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strict_mcp::core::descriptor::{ContentBlock, PromptMessage, ResourceContents, Role};
use strict_mcp::core::{
    Caller, Invocation, Outcome, PromptDef, PromptReply, ReadReply, RegistryBuilder, ResourceDef,
    ToolDef,
};
use strict_mcp::server::{Server, ServerOptions, ShutdownReport};

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

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = RegistryBuilder::new()
        .tool(
            ToolDef::typed("echo", |_inv: Invocation, input: EchoInput| async move {
                Ok(EchoOutput { text: input.text })
            })
            .description("Sends the given text back."),
        )
        .resource(
            ResourceDef::new("mem://readme", "readme", |_inv, uri| async move {
                Ok(ReadReply::new(vec![ResourceContents::text(
                    uri,
                    "This server echoes text.",
                )]))
            })
            .mime_type("text/plain"),
        )
        .prompt(
            PromptDef::new("greet", |_inv, args| async move {
                let name = args.get("name").cloned().unwrap_or_default();
                Ok(Outcome::Complete(PromptReply {
                    description: None,
                    messages: vec![PromptMessage::new(
                        Role::User,
                        ContentBlock::text(format!("Say hello to {name}.")),
                    )],
                }))
            })
            .argument("name", "Whom to greet.", true),
        )
        .build()?;
    let server = Server::new(
        registry,
        ServerOptions::new().server_info("strict-mcp-example", env!("CARGO_PKG_VERSION")),
    )?;
    // stdio credentials come from the environment (C16); this example serves one local user.
    let report = server.run_stdio(Caller::new("local-user")).await?;
    if report != ShutdownReport::Stopped {
        // O5: an abandoned shutdown shows in the exit status, never on stdout.
        eprintln!("shutdown: {report}");
        std::process::exit(report.exit_code());
    }
    Ok(())
}
