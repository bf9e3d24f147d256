//! The per-request tracing span of the HTTP host follows the OpenTelemetry MCP conventions and
//! carries the W3C trace context from `_meta`.
#![forbid(unsafe_code)]
#![cfg(all(feature = "http", feature = "cli"))]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::Request;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strict_mcp::core::{Invocation, RegistryBuilder, ToolDef};
use strict_mcp::server::http::{HttpConfig, McpHttp};
use strict_mcp::server::{Server, ServerOptions};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::Layer;

type Spans = Arc<Mutex<BTreeMap<u64, (String, BTreeMap<String, String>)>>>;

/// Records every span's name and fields.
struct Capture(Spans);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl<S: tracing::Subscriber> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        self.0
            .lock()
            .unwrap()
            .insert(id.into_u64(), (attrs.metadata().name().to_owned(), fields));
    }
    fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        if let Some((_, fields)) = self.0.lock().unwrap().get_mut(&id.into_u64()) {
            values.record(&mut Fields(fields));
        }
    }
}

#[derive(Deserialize, JsonSchema)]
struct EchoIn {
    /// Text.
    text: String,
}

#[derive(Serialize, JsonSchema)]
struct EchoOut {
    /// Text.
    text: String,
}

#[test]
fn request_span_has_otel_mcp_name_attributes_and_trace_context() {
    let spans: Spans = Arc::default();
    let subscriber = tracing_subscriber::registry().with(Capture(spans.clone()));
    tracing::subscriber::with_default(subscriber, || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let registry = RegistryBuilder::new()
                .tool(ToolDef::typed("echo", |_i: Invocation, i: EchoIn| async move {
                    Ok(EchoOut { text: i.text })
                }))
                .build()
                .unwrap();
            let server = Server::new(registry, ServerOptions::new().mode("direct")).unwrap();
            let service = McpHttp::new(server, HttpConfig::default());
            let body = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"t"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","tracestate":"congo=t61rcWkgMzE"}}}"#;
            let req = Request::post("http://127.0.0.1/mcp")
                .header("host", "127.0.0.1")
                .header("accept", "application/json, text/event-stream")
                .header("content-type", "application/json")
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/call")
                .header("mcp-name", "echo")
                .body(Full::new(Bytes::from_static(body.as_bytes())))
                .unwrap();
            let res = service.handle(req).await;
            assert_eq!(res.status(), 200);
            let text = res.into_body().collect().await.unwrap().to_bytes();
            assert!(
                std::str::from_utf8(&text).unwrap().contains(r#""id":7"#),
                "{text:?}"
            );
        });
    });
    let spans = spans.lock().unwrap();
    let (_, fields) = spans
        .values()
        .find(|(name, _)| name == "mcp.server.request")
        .expect("request span");
    let expect = [
        ("otel.name", "tools/call echo"),
        ("otel.kind", "server"),
        ("mcp.method.name", "tools/call"),
        ("mcp.request.id", "7"),
        ("mcp.protocol.version", "2026-07-28"),
        ("gen_ai.tool.name", "echo"),
        (
            "traceparent",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        ),
        ("tracestate", "congo=t61rcWkgMzE"),
    ];
    for (k, v) in expect {
        assert_eq!(
            fields.get(k).map(String::as_str),
            Some(v),
            "{k} in {fields:?}"
        );
    }
}
