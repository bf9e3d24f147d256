//! A second stdio reference: the same serde_json line loop as `bare_stdio`, but on tokio's
//! `stdin`/`stdout` (which hand each read and write to the blocking pool) and flushing after
//! every response, as async SDK stdio transports do. Separates what tokio stdio costs from
//! what an MCP stack adds. Stops when stdin closes.

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, BufWriter};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut out = BufWriter::new(tokio::io::stdout());
    while let Some(line) = lines.next_line().await? {
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let text = msg["params"]["arguments"]["text"].as_str().unwrap_or_default();
        let reply = json!({
            "jsonrpc": "2.0",
            "id": msg["id"],
            "result": { "content": [ { "type": "text", "text": text } ] }
        });
        let mut bytes = serde_json::to_vec(&reply).unwrap_or_default();
        bytes.push(b'\n');
        out.write_all(&bytes).await?;
        out.flush().await?;
    }
    out.flush().await
}
