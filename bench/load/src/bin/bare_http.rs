//! The floor: hyper + serde_json. Parses the JSON-RPC body, answers a minimal `tools/call`
//! result with the echoed text. No MCP validation beyond what answering needs. For the client
//! drivers it also answers `server/discover` with a minimal result and acknowledges a
//! notification (no `id`) with `202`; `tools/call` is answered as before.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response, StatusCode};
use serde_json::{json, Value};

async fn handle(req: Request<hyper::body::Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let body = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => return Ok(status(StatusCode::BAD_REQUEST)),
    };
    let Ok(msg) = serde_json::from_slice::<Value>(&body) else {
        return Ok(status(StatusCode::BAD_REQUEST));
    };
    let reply = if msg["method"].as_str() == Some(strict_mcp_load::DISCOVER) {
        json!({ "jsonrpc": "2.0", "id": msg["id"], "result": strict_mcp_load::discover_result() })
    } else if msg.get("id").is_none() {
        return Ok(status(StatusCode::ACCEPTED));
    } else {
        let text = msg["params"]["arguments"]["text"]
            .as_str()
            .unwrap_or_default();
        json!({
            "jsonrpc": "2.0",
            "id": msg["id"],
            "result": { "content": [ { "type": "text", "text": text } ] }
        })
    };
    let bytes = serde_json::to_vec(&reply).unwrap_or_default();
    Ok(Response::builder()
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(bytes)))
        .unwrap_or_else(|_| status(StatusCode::INTERNAL_SERVER_ERROR)))
}

fn status(code: StatusCode) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::new()));
    *r.status_mut() = code;
    r
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let listener = strict_mcp_load::bind_loopback().await?;
    strict_mcp_load::serve_http(listener, handle).await
}
