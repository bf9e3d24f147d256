//! Builds a `server/discover` result (B16) from the generated wire types, checks it with the
//! strict result decoder our server uses (O124, H1), and prints it as JSON.
//!
//! Run with `cargo run --example discover`.

use serde_json::Map;
use strict_mcp::wire::{
    self, DiscoverResult, DiscoverResultCacheScope, DiscoverResultResultType, Implementation,
    ResultMetaObject, ServerCapabilities, ServerCapabilitiesTools,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let result = DiscoverResult {
        result_type: DiscoverResultResultType::Complete,
        supported_versions: vec!["2026-07-28".to_owned()],
        capabilities: ServerCapabilities {
            tools: Some(ServerCapabilitiesTools {
                list_changed: Some(true),
                extra: Map::new(),
            }),
            completions: None,
            experimental: None,
            extensions: None,
            logging: None,
            prompts: None,
            resources: None,
            extra: Map::new(),
        },
        instructions: Some("Call tools/list to see what this server offers.".to_owned()),
        meta: Some(ResultMetaObject {
            io_modelcontextprotocol_server_info: Some(Implementation {
                name: "strict-mcp-example".to_owned(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
                title: None,
                description: None,
                icons: None,
                website_url: None,
                extra: Map::new(),
            }),
            extra: Map::new(),
        }),
        // Discovery answers depend on configuration, not on the caller: public, one minute.
        ttl_ms: 60_000,
        cache_scope: DiscoverResultCacheScope::Public,
        extra: Map::new(),
    };

    let json = serde_json::to_value(&result)?;
    // What we emit must pass what we would accept from ourselves.
    wire::result::decode_strict(wire::result::Method::ServerDiscover, &json)?;
    println!("{}", serde_json::to_string_pretty(&json)?);
    Ok(())
}
