//! The client's floor without any I/O (issue #23's regression check): strict-mcp's
//! `Client::call("echo", …)` over a transport that answers in the caller's own task with the
//! bare server's reply, many times on a current-thread runtime. The transport encodes each
//! request (`codec::encode`, what every real transport does before writing) and decodes the
//! canned reply (`codec::decode` with the client's limits, what every real transport does
//! after reading), so only the network is missing. Prints the process CPU per call;
//! `bench/callgrind-check` counts its instructions. `strict_client_inproc [CALLS]`.

use std::future::pending;
use std::sync::Arc;
use std::time::Instant;

use strict_mcp::client::{
    BoxFuture, CallOptions, Client, ClientOptions, Inbound, Transport, TransportError,
};
use strict_mcp::codec::{decode, encode, EgressLimits, IngressLimits};
use strict_mcp::wire::jsonrpc::Message;
use strict_mcp::wire::ContentBlock;
use strict_mcp_load::{client_bench, discover_result, process_cpu_us, DISCOVER, ECHO_TEXT};

/// Answers every request at once with what `bare_http` / `bare_stdio` would send back.
struct Canned;

impl Canned {
    fn answer(message: &Message) -> Result<Option<Inbound>, TransportError> {
        let bytes = encode(message, &EgressLimits::CLIENT).map_err(TransportError::failed)?;
        let Message::Request(request) = message else {
            // Notifications get no answer (HTTP 202).
            return Ok(None);
        };
        let result = if request.method == DISCOVER {
            discover_result()
        } else {
            serde_json::json!({ "content": [ { "type": "text", "text": ECHO_TEXT } ] })
        };
        std::hint::black_box(bytes);
        let reply = format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{}}}"#,
            request.id.token(),
            result
        );
        match decode(reply.as_bytes(), &IngressLimits::CLIENT) {
            Ok(message) => Ok(Some(Inbound::Message(message))),
            Err(rejection) => Ok(Some(Inbound::Rejected(rejection))),
        }
    }
}

impl Transport for Canned {
    fn send<'a>(&'a self, message: &'a Message) -> BoxFuture<'a, Result<(), TransportError>> {
        Box::pin(async move { Canned::answer(message).map(|_| ()) })
    }

    fn send_request<'a>(
        &'a self,
        message: &'a Message,
    ) -> BoxFuture<'a, Result<Option<Inbound>, TransportError>> {
        Box::pin(async move { Canned::answer(message) })
    }

    fn recv(&self) -> BoxFuture<'_, Result<Inbound, TransportError>> {
        Box::pin(pending())
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let pid = std::process::id();
    runtime.block_on(async {
        let transport: Arc<dyn Transport> = Arc::new(Canned);
        let client = Client::connect(transport, ClientOptions::default()).await?;
        let arguments = client_bench::echo_arguments();
        let options = CallOptions::default();
        let cpu0 = process_cpu_us(pid)?;
        let start = Instant::now();
        for _ in 0..n {
            let result = client
                .call("echo", Some(arguments.clone()), &options)
                .await?;
            assert!(result
                .content
                .iter()
                .any(|b| matches!(b, ContentBlock::TextContent(t) if t.text == ECHO_TEXT)));
        }
        let wall = start.elapsed();
        let cpu = process_cpu_us(pid)? - cpu0;
        println!(
            "{n} calls: {:.1} µs CPU/call, {:.1} µs wall/call",
            cpu as f64 / n as f64,
            wall.as_secs_f64() * 1e6 / n as f64
        );
        client.close().await;
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;
    Ok(())
}
