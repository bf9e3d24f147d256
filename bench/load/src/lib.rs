//! Shared pieces of the load harness: the request every client sends, the accept loop every
//! HTTP server under test runs (so connection handling is identical), and the `/proc` CPU probe.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;

use hyper::body::Incoming;
use hyper::Request;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;

/// The protocol revision every request declares.
pub const PROTOCOL_VERSION: &str = "2026-07-28";

/// The text the `echo` tool is asked to send back.
pub const ECHO_TEXT: &str = "hello, load";

/// One valid 2026-07-28 `tools/call` request for `echo`, as a single JSON line (no newline).
pub fn echo_request(id: u64) -> String {
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {
            "name": "echo",
            "arguments": { "text": ECHO_TEXT },
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
                "io.modelcontextprotocol/clientInfo": { "name": "strict-mcp-loadgen", "version": "0" },
                "io.modelcontextprotocol/clientCapabilities": {}
            }
        }
    })
    .to_string()
}

/// The JSON-RPC method the bare servers answer with [`discover_result`] instead of an echo.
pub const DISCOVER: &str = "server/discover";

/// A minimal valid 2026-07-28 `server/discover` result (the bare servers' answer, so that the
/// MCP clients, which discover first, can be driven against them).
pub fn discover_result() -> serde_json::Value {
    serde_json::json!({
        "resultType": "complete",
        "supportedVersions": [PROTOCOL_VERSION],
        "capabilities": { "tools": {} },
        "ttlMs": 0,
        "cacheScope": "public",
        "_meta": { "io.modelcontextprotocol/serverInfo": { "name": "bare", "version": "0" } }
    })
}

/// Whether `body` (one JSON-RPC message) is a successful `echo` result for request `id`.
pub fn is_echo_success(body: &[u8], id: u64) -> bool {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) else {
        return false;
    };
    is_echo_value(&v, id)
}

/// [`is_echo_success`] of an already parsed message.
pub fn is_echo_value(v: &serde_json::Value, id: u64) -> bool {
    if v.get("id").and_then(serde_json::Value::as_u64) != Some(id) {
        return false;
    }
    let Some(result) = v.get("result") else {
        return false;
    };
    if result.get("isError").and_then(serde_json::Value::as_bool) == Some(true) {
        return false;
    }
    // The echoed text must come back somewhere in the result (content or structured content).
    result.to_string().contains(ECHO_TEXT)
}

/// The JSON-RPC id of one response line, if it has a numeric one.
pub fn response_id(body: &[u8]) -> Option<u64> {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()?
        .get("id")?
        .as_u64()
}

/// The last `data:` payload of a `text/event-stream` body (the final response of the stream).
pub fn last_sse_data(body: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(body).ok()?;
    let mut last = None;
    for event in text.split("\n\n") {
        let data: Vec<&str> = event
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        if !data.is_empty() {
            last = Some(data.join("\n").into_bytes());
        }
    }
    last
}

/// Binds 127.0.0.1 on `PORT` (default 0 = any free port) and prints `LISTENING <addr>` on
/// stdout so the runner can find it.
pub async fn bind_loopback() -> std::io::Result<tokio::net::TcpListener> {
    let port: u16 = std::env::var("PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("LISTENING {}", listener.local_addr()?);
    Ok(listener)
}

/// The accept loop shared by every HTTP server under test: TCP_NODELAY, hyper-util's auto
/// (HTTP/1.1 + HTTP/2) connection builder, one task per connection. Runs until the process is
/// killed or `MAX_SECONDS` pass.
pub async fn serve_http<S, F, B>(
    listener: tokio::net::TcpListener,
    service: S,
) -> std::io::Result<()>
where
    S: Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Result<hyper::Response<B>, Infallible>> + Send + 'static,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let stop = lifetime_over();
    tokio::pin!(stop);
    loop {
        let (stream, _peer): (tokio::net::TcpStream, SocketAddr) = tokio::select! {
            () = &mut stop => return Ok(()),
            accepted = listener.accept() => accepted?,
        };
        stream.set_nodelay(true)?;
        let service = service.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(service);
            let _ = Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
    }
}

/// Resolves after `MAX_SECONDS` (default 900 s), so a server whose runner died stops by itself.
pub async fn lifetime_over() {
    let secs: u64 = std::env::var("MAX_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(900);
    tokio::time::sleep(std::time::Duration::from_secs(secs)).await;
}

/// User + system CPU time of process `pid` so far, in microseconds (from `/proc/<pid>/stat`).
pub fn process_cpu_us(pid: u32) -> std::io::Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, r)| r)
        .ok_or_else(|| std::io::Error::other("malformed /proc stat"))?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let parse = |i: usize| -> std::io::Result<u64> {
        fields
            .get(i)
            .and_then(|f| f.parse().ok())
            .ok_or_else(|| std::io::Error::other("malformed /proc stat field"))
    };
    let ticks = parse(11)? + parse(12)?;
    Ok(ticks * 1_000_000 / clock_ticks_per_second())
}

fn clock_ticks_per_second() -> u64 {
    static TICKS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .filter(|&t| t > 0)
            .unwrap_or(100)
    })
}

pub mod client_bench;
pub mod rmcp_echo;

#[cfg(test)]
mod tests {
    use super::*;

    /// The bare servers' discovery answer must be one both MCP clients accept, or their rows
    /// could not run at all.
    #[test]
    fn discover_result_decodes_in_rmcp() {
        let typed: rmcp::model::DiscoverResult =
            serde_json::from_value(discover_result()).expect("rmcp decodes it");
        assert_eq!(
            typed.supported_versions,
            vec![rmcp::model::ProtocolVersion::V_2026_07_28]
        );
        assert_eq!(typed.ttl_ms, 0);
    }

    #[cfg(feature = "strict-client")]
    #[test]
    fn discover_result_decodes_in_strict_mcp() {
        use strict_mcp::wire::result::{decode_lenient, decode_strict, Decoded, Method};
        let strict = decode_strict(Method::ServerDiscover, &discover_result());
        assert!(matches!(strict, Ok(Decoded::Complete(_))), "{strict:?}");
        assert!(decode_lenient(Method::ServerDiscover, &discover_result()).is_ok());
    }

    #[test]
    fn echo_value_checks_id_error_flag_and_text() {
        let ok = serde_json::json!({"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":ECHO_TEXT}]}});
        assert!(is_echo_value(&ok, 7));
        assert!(!is_echo_value(&ok, 8));
        let failed = serde_json::json!({"jsonrpc":"2.0","id":7,"result":{"isError":true,"content":[{"type":"text","text":ECHO_TEXT}]}});
        assert!(!is_echo_value(&failed, 7));
        let other = serde_json::json!({"jsonrpc":"2.0","id":7,"result":{"content":[]}});
        assert!(!is_echo_value(&other, 7));
    }
}
