//! Raw HTTP/1.1 pieces for scripted fake servers, shared by `tests/client_http.rs` and
//! `tests/client_http_edge.rs` (each says `#[path = "support/fake_http.rs"] mod fake_http;`):
//! reading one request off a socket, writing a canned answer, the request both send, and the
//! typed cause of a refused message. Nothing here listens or dials; the servers that use these
//! bind 127.0.0.1 only.
#![allow(dead_code)]

use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncReadExt};

use strict_mcp::client::http::HttpError;
use strict_mcp::client::{Refusal, TransportError};
use strict_mcp::wire::jsonrpc::{Message, Request, RequestId};

/// Reads one request: its head (through the blank line) and its `content-length` body.
/// `None` when the peer closes or fails first.
pub async fn read_request<S: AsyncRead + Unpin>(socket: &mut S) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..end]).to_string();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    while buf.len() < end + length {
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let body = buf[end..end + length].to_vec();
    Some((head, body))
}

/// A whole `connection: close` answer with this status, content type and body.
pub fn http(status: &str, content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

/// A `tools/call` of tool `x` under integer id `id`, carrying only the protocol version.
pub fn call_request(id: i64) -> Message {
    let params = r#"{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#;
    Message::Request(Request {
        id: RequestId::integer(id),
        method: "tools/call".into(),
        params: Some(RawValue::from_string(params.into()).expect("raw")),
    })
}

/// The typed HTTP cause of a refused message.
pub fn refused(err: TransportError) -> HttpError {
    match err {
        TransportError::Refused(Refusal::Http(e)) => e,
        other => panic!("expected a refused message, got {other:?}"),
    }
}
