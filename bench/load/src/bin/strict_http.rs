//! strict-mcp's own Streamable HTTP host (`strict_mcp::server::http::McpHttp`) with the `echo`
//! tool from `strict_echo`, served by the product's own accept loop
//! (`strict_mcp::server::http::serve_with`, what users run) unless told otherwise.
//!
//! How it is hosted is chosen by the environment, so one binary measures every host
//! configuration of issue #23 (session 10, `bench/README.md`):
//!
//! - `STRICT_ACCEPT=product` (default) | `bench`: the product's `serve_with` (connection and
//!   in-flight caps, time-outs, path check) or the bench's `serve_http` (hyper-util's auto
//!   builder and nothing else; what this binary ran until session 9).
//! - `STRICT_RUNTIME=current` (default) | `multi`: a current-thread tokio runtime (one thread,
//!   like `lean_http`) or a multi-thread one (`#[tokio::main]`'s default until session 9).
//! - `STRICT_WORKERS=N`: worker threads of the multi-thread runtime (default: one per core).
//! - `STRICT_HTTP2=0` | `1` (default 1): `ServeConfig::http2` of the product's loop (`0`:
//!   HTTP/1.1 only, no version sniffing). Ignored with `STRICT_ACCEPT=bench`.
//!
//! Exits after `MAX_SECONDS` like the other servers.

#[path = "../strict_echo.rs"]
mod strict_echo;

use strict_mcp::server::http::{serve_with, HttpConfig, McpHttp, ServeConfig};

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = match env("STRICT_RUNTIME").as_deref() {
        None | Some("current") => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?,
        Some("multi") => {
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            if let Some(n) = env("STRICT_WORKERS") {
                builder.worker_threads(n.parse()?);
            }
            builder.enable_all().build()?
        }
        Some(other) => return Err(format!("STRICT_RUNTIME={other}: current or multi").into()),
    };
    runtime.block_on(run())
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let server = strict_echo::server()?;
    let service = McpHttp::new(server, HttpConfig::default());
    let listener = strict_mcp_load::bind_loopback().await?;
    match env("STRICT_ACCEPT").as_deref() {
        None | Some("product") => {
            let config = ServeConfig {
                http2: env("STRICT_HTTP2").as_deref() != Some("0"),
                ..ServeConfig::default()
            };
            serve_with(listener, service, config, strict_mcp_load::lifetime_over()).await?;
        }
        Some("bench") => {
            strict_mcp_load::serve_http(listener, move |req| {
                let service = service.clone();
                async move { Ok::<_, std::convert::Infallible>(service.handle(req).await) }
            })
            .await?;
        }
        Some(other) => return Err(format!("STRICT_ACCEPT={other}: product or bench").into()),
    }
    Ok(())
}
