//! Proxy environment variables are refused on purpose (D47): with every proxy variable set
//! to a loopback listener, the HTTP transport still dials the endpoint itself, and the
//! "proxy" never sees a connection. One test in its own binary, since it sets process-wide
//! environment variables.
#![forbid(unsafe_code)]
#![cfg(all(feature = "http", feature = "client", feature = "server"))]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::net::TcpListener;

use strict_mcp::client::http::HttpTransport;
use strict_mcp::client::{CallOptions, Client, ClientOptions};
use strict_mcp::core::{Invocation, RegistryBuilder, ToolDef};
use strict_mcp::server::http::{serve, HttpConfig, McpHttp};
use strict_mcp::server::{Server, ServerOptions};

/// Every proxy variable a proxy-honouring HTTP client would read, in both cases.
const PROXY_VARIABLES: &[&str] = &[
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
];

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoInput {}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct NoOutput {
    /// The text.
    text: String,
}

#[tokio::test]
async fn d47_proxy_environment_variables_are_never_honoured() {
    let proxy = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
    let proxy_url = format!("http://{}", proxy.local_addr().expect("addr"));
    let proxied = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&proxied);
    tokio::spawn(async move {
        while proxy.accept().await.is_ok() {
            seen.fetch_add(1, Ordering::SeqCst);
        }
    });
    for name in PROXY_VARIABLES {
        std::env::set_var(name, &proxy_url);
    }
    std::env::remove_var("NO_PROXY");
    std::env::remove_var("no_proxy");

    let registry = RegistryBuilder::new()
        .tool(ToolDef::typed(
            "noop",
            |_: Invocation, _: NoInput| async move {
                Ok(NoOutput {
                    text: String::new(),
                })
            },
        ))
        .build()
        .expect("registry");
    let server = Server::new(registry, ServerOptions::new().mode("direct")).expect("server");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(serve(
        listener,
        McpHttp::new(server, HttpConfig::default()),
        std::future::pending(),
    ));
    let transport =
        Arc::new(HttpTransport::new(&format!("http://{addr}/mcp"), None).expect("transport"));
    let client = Client::connect(transport, ClientOptions::default())
        .await
        .expect("discover, directly");
    let tools = client
        .list_tools(&CallOptions::default())
        .await
        .expect("list, directly");
    assert_eq!(tools.len(), 1);
    // Give a stray proxy connection time to be accepted before asserting there was none.
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert_eq!(proxied.load(Ordering::SeqCst), 0, "a proxy was dialed");
    for name in PROXY_VARIABLES {
        assert_eq!(std::env::var(name).as_deref(), Ok(proxy_url.as_str()));
    }
}
