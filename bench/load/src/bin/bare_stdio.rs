//! The stdio floor: a synchronous serde_json line loop (no async runtime). Reads one JSON-RPC
//! request per line and writes the minimal `tools/call` result line; output is flushed whenever
//! no further input is already buffered, so no answer waits on more input. Stops at end of input.
//! For the client drivers it also answers `server/discover` with a minimal result and does not
//! answer notifications (no `id`); `tools/call` is answered as before.

use std::io::{BufRead, BufReader, BufWriter, Write};

use serde_json::{json, Value};

fn main() -> std::io::Result<()> {
    let mut input = BufReader::with_capacity(64 * 1024, std::io::stdin().lock());
    let mut out = BufWriter::new(std::io::stdout().lock());
    let mut line = String::new();
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 {
            break;
        }
        if let Ok(msg) = serde_json::from_str::<Value>(&line) {
            let reply = if msg["method"].as_str() == Some(strict_mcp_load::DISCOVER) {
                Some(json!({
                    "jsonrpc": "2.0",
                    "id": msg["id"],
                    "result": strict_mcp_load::discover_result()
                }))
            } else if msg.get("id").is_none() {
                None
            } else {
                let text = msg["params"]["arguments"]["text"]
                    .as_str()
                    .unwrap_or_default();
                Some(json!({
                    "jsonrpc": "2.0",
                    "id": msg["id"],
                    "result": { "content": [ { "type": "text", "text": text } ] }
                }))
            };
            if let Some(reply) = reply {
                serde_json::to_writer(&mut out, &reply)?;
                out.write_all(b"\n")?;
            }
        }
        if input.buffer().is_empty() {
            out.flush()?;
        }
    }
    out.flush()
}
