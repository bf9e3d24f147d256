//! rmcp 3.11's Streamable HTTP server for the `echo` handler, configured as favourably as the
//! API allows for this load: no legacy sessions (every request served statelessly), JSON
//! responses instead of SSE, no SSE keep-alive/priming, per-request metadata required
//! (the 2026-07-28 rules), loopback `Host` allow-list. Same accept loop as the other servers.

use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use strict_mcp_load::rmcp_echo::Echo;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_sse_retry(None)
        .with_stateless_protocol_metadata_required(true);
    let service = StreamableHttpService::new(
        || Ok(Echo),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    let listener = strict_mcp_load::bind_loopback().await?;
    strict_mcp_load::serve_http(listener, move |req| {
        let service = service.clone();
        async move { Ok(service.handle(req).await) }
    })
    .await
}
