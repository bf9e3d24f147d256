//! Quick start: a strict-mcp server and a hand-written client talking over stdio framing.
//!
//! The server is the conformance fixture server (`examples/conformance/`), run in this
//! process on an in-memory pipe with exactly the stdio host a real deployment uses
//! (`Server::run_stdio_on`). The client side writes two raw JSON-RPC lines — `server/discover`
//! and `tools/call` — each with the per-request `_meta` envelope every 2026-07-28 request
//! carries, then decodes the replies with the codec and the lenient client-side result
//! decoder and prints both results.
//!
//! ```sh
//! cargo run --example quickstart
//! ```

#![forbid(unsafe_code)]

#[path = "conformance/fixtures.rs"]
mod fixtures;

use serde_json::{json, Value};
use strict_mcp::codec::{self, IngressLimits};
use strict_mcp::core::Caller;
use strict_mcp::server::{Server, ServerOptions};
use strict_mcp::wire::jsonrpc::{Message, Response};
use strict_mcp::wire::result::{decode_lenient, Decoded, Method};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// The `_meta` envelope of every request (B1, B2).
fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "quickstart", "version": env!("CARGO_PKG_VERSION")},
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::new(
        fixtures::registry(),
        ServerOptions::new()
            .server_info("strict-mcp-quickstart", env!("CARGO_PKG_VERSION"))
            .mode("direct"),
    )?;

    // Two pipes: what the client writes is the server's stdin, and the other way round.
    let (client_out, server_in) = tokio::io::duplex(64 * 1024);
    let (server_out, client_in) = tokio::io::duplex(64 * 1024);
    let host = tokio::spawn(async move {
        server
            .run_stdio_on(Caller::new("quickstart-user"), server_in, server_out)
            .await
    });

    let requests = [
        (
            Method::ServerDiscover,
            json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                   "params": {"_meta": meta()}}),
        ),
        (
            Method::ToolsCall,
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "test_simple_text", "arguments": {}, "_meta": meta()}}),
        ),
    ];

    let mut writer = client_out;
    let mut lines = BufReader::new(client_in).lines();
    for (method, request) in requests {
        let line = serde_json::to_string(&request)?;
        println!("--> {line}");
        writer.write_all(line.as_bytes()).await?;
        writer.write_all(b"\n").await?;
        writer.flush().await?;

        let reply = lines
            .next_line()
            .await?
            .ok_or("the server closed its output early")?;
        println!("<-- {reply}");
        match codec::decode(reply.as_bytes(), &IngressLimits::CLIENT)? {
            Message::Response(Response::Success(ok)) => {
                let result: Value = serde_json::from_str(ok.result.get())?;
                match decode_lenient(method, &result)? {
                    Decoded::Complete(complete) => println!(
                        "{method} result:\n{}\n",
                        serde_json::to_string_pretty(&complete)?
                    ),
                    Decoded::InputRequired(more) => println!(
                        "{method} needs input first:\n{}\n",
                        serde_json::to_string_pretty(&more)?
                    ),
                    other => println!("{method}: {other:?}"),
                }
            }
            Message::Response(Response::Error(err)) => {
                return Err(format!("{method} failed: {err:?}").into())
            }
            other => return Err(format!("unexpected message: {other:?}").into()),
        }
    }

    // Closing the client's side is end-of-file for the server, which then shuts down.
    drop(writer);
    host.await??;
    Ok(())
}
