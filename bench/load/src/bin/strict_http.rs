//! strict-mcp's own Streamable HTTP host (`strict_mcp::server::http::McpHttp`) over the same
//! accept loop as the other servers, with the `echo` tool from `strict_echo`.

#[path = "../strict_echo.rs"]
mod strict_echo;

use strict_mcp::server::http::{HttpConfig, McpHttp};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = strict_echo::server()?;
    let service = McpHttp::new(server, HttpConfig::default());
    let listener = strict_mcp_load::bind_loopback().await?;
    strict_mcp_load::serve_http(listener, move |req| {
        let service = service.clone();
        async move { Ok::<_, std::convert::Infallible>(service.handle(req).await) }
    })
    .await?;
    Ok(())
}
