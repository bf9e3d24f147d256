//! Panics in the HTTP host's own code (outside the dispatcher) become exactly one -32603 reply
//! with status 500, and the connection keeps serving. Needs the `fault-injection` feature,
//! which the crate's self dev-dependency turns on for tests. Points are armed process-wide, so
//! the test holds `fault::exclusive()` for its run.
#![forbid(unsafe_code)]
#![cfg(all(feature = "http", feature = "fault-injection"))]

mod support;
use std::time::Duration;
use support::{EchoIn, EchoOut};

use serde_json::json;
use strict_mcp::core::{Invocation, RegistryBuilder, ToolDef};
use strict_mcp::server::fault;
use strict_mcp::server::http::{fault_points, serve, HttpConfig, McpHttp};
use strict_mcp::server::{Server, ServerOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

fn call_request() -> Vec<u8> {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "echo", "arguments": {"text": "hi"},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
        }
    }})
    .to_string();
    let mut out = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: tools/call\r\nMcp-Name: echo\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

/// Reads one `Content-Length` framed response: (status, body).
async fn read_answer(s: &mut TcpStream) -> (u16, String) {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        assert_eq!(
            s.read(&mut byte).await.unwrap(),
            1,
            "connection ended early"
        );
        buf.push(byte[0]);
    }
    let head = String::from_utf8(buf).unwrap();
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().unwrap())
        })
        .unwrap();
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).await.unwrap();
    (
        head[9..12].parse().unwrap(),
        String::from_utf8(body).unwrap(),
    )
}

#[test]
fn host_panics_become_one_internal_error_and_the_connection_keeps_serving() {
    let _exclusive = fault::exclusive();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let registry = RegistryBuilder::new()
            .tool(ToolDef::typed(
                "echo",
                |_i: Invocation, i: EchoIn| async move { Ok(EchoOut { text: i.text }) },
            ))
            .build()
            .unwrap();
        let server = Server::new(registry, ServerOptions::new().mode("direct")).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let run = tokio::spawn(serve(
            listener,
            McpHttp::new(server.clone(), HttpConfig::default()),
            async {
                let _ = stopped.await;
            },
        ));
        let mut s = TcpStream::connect(addr).await.unwrap();
        for point in [
            fault_points::HTTP_CALL,
            fault_points::HTTP_BODY,
            fault_points::HTTP_HEADERS,
        ] {
            fault::arm(point);
            s.write_all(&call_request()).await.unwrap();
            assert_eq!(
                read_answer(&mut s).await,
                (
                    500,
                    r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}"#
                        .to_owned()
                ),
                "{point}"
            );
            // Disarmed, the same connection serves the next request, and its answer is the
            // very next bytes (exactly one reply before it).
            fault::disarm();
            s.write_all(&call_request()).await.unwrap();
            let (status, body) = read_answer(&mut s).await;
            assert_eq!(status, 200, "{point}: {body}");
            assert!(body.starts_with(r#"{"jsonrpc":"2.0","id":7,"result":"#), "{point}: {body}");
        }
        server.shutdown(Duration::from_secs(2)).await;
        let _ = stop.send(());
        run.await.unwrap().unwrap();
    });
}
