//! The initialise era over stdio (feature `legacy`, issue #18): era selection (B23), the
//! legacy lifecycle, the same registry and policy as the modern path (O28), the legacy reply
//! shapes and -32002 on the legacy path only (O34, X6). Exact bytes on the wire.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::json;
use strict_mcp::core::descriptor::{ContentBlock, PromptMessage, ResourceContents, Role};
use strict_mcp::core::{
    Access, Caller, Invocation, LogLevel, Outcome, Policy, PromptDef, PromptReply, ReadReply,
    Registry, RegistryBuilder, ResourceDef, ResourceError, ToolDef,
};
use strict_mcp::server::{Server, ServerOptions};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

mod support;

use std::sync::Arc;
use support::evidence::{Outcome as Seen, Recorder};

const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
const INFO: &str = r#"{"name":"legacy-test","version":"1.0.0"}"#;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoIn {
    /// Text to echo.
    text: String,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct EchoOut {
    /// The same text.
    text: String,
}

/// Set by `mem://wait` once its cancellation token fired (one test uses it).
static WAIT_CANCELLED: AtomicBool = AtomicBool::new(false);

/// O28: `secret` exists for `admin` only.
struct AdminOnly;

impl Policy for AdminOnly {
    fn tool(&self, caller: &Caller, name: &str) -> Access {
        if name == "secret" && caller.principal() != Some("admin") {
            Access::Hidden
        } else {
            Access::Allowed
        }
    }
}

fn registry() -> Registry {
    RegistryBuilder::new()
        .tool(
            ToolDef::typed("echo", |inv: Invocation, i: EchoIn| async move {
                inv.report_progress(1.0, Some(2.0), Some("half"));
                inv.log(LogLevel::Info, Some("echo"), json!({"seen": i.text}));
                inv.log(LogLevel::Debug, Some("echo"), json!("below"));
                Ok(EchoOut { text: i.text })
            })
            .description("Echoes text."),
        )
        .tool(
            ToolDef::typed("secret", |_inv: Invocation, i: EchoIn| async move {
                Ok(EchoOut { text: i.text })
            }),
        )
        .policy(AdminOnly)
        .resource(ResourceDef::new("mem://hello", "hello", |_inv, uri| async move {
            Ok(ReadReply::new(vec![ResourceContents::text(uri, "hello")]))
        }))
        .resource(ResourceDef::new("mem://wait", "wait", |inv: Invocation, _uri| async move {
            // Ends only when cancelled; the flag proves the cancellation reached it.
            inv.cancel_token().cancelled().await;
            WAIT_CANCELLED.store(true, Ordering::SeqCst);
            Err::<ReadReply, _>(ResourceError::Internal { retryable: true })
        }))
        .prompt(PromptDef::new(
            "greet",
            |_inv: Invocation, _args: std::collections::BTreeMap<String, String>| async move {
                Ok(Outcome::Complete(PromptReply {
                    description: None,
                    messages: vec![PromptMessage::new(Role::User, ContentBlock::text("hi"))],
                }))
            },
        ))
        .build()
        .expect("registry builds")
}

struct Peer {
    writer: DuplexStream,
    lines: Lines<BufReader<DuplexStream>>,
    /// Contract evidence (transport `legacy-stdio-server`): [`Peer::exchange`] records a
    /// request whose reply was the next line.
    rec: Option<Arc<Recorder>>,
}

fn start(options: ServerOptions) -> Peer {
    let server = Server::new(registry(), options.server_info("legacy-test", "1.0.0"))
        .expect("server builds");
    let (client_w, server_r) = tokio::io::duplex(1 << 20);
    let (server_w, client_r) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        server
            .run_stdio_on(Caller::new("alice"), server_r, server_w)
            .await
    });
    Peer {
        writer: client_w,
        lines: BufReader::new(client_r).lines(),
        rec: None,
    }
}

fn legacy() -> Peer {
    start(ServerOptions::new().legacy_era(true))
}

impl Peer {
    async fn send(&mut self, line: &str) {
        self.writer.write_all(line.as_bytes()).await.unwrap();
        self.writer.write_all(b"\n").await.unwrap();
    }

    async fn recv(&mut self) -> String {
        tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
            .await
            .expect("a line within 10 s")
            .expect("readable")
            .expect("not EOF")
    }

    /// Records this peer's exchanges on `rec`.
    fn recorded(mut self, rec: &Arc<Recorder>) -> Peer {
        self.rec = Some(Arc::clone(rec));
        self
    }

    /// Sends one line and returns the next line written. With a recorder, a request is
    /// recorded when that line is its reply (the same id, a result or an error).
    async fn exchange(&mut self, line: &str) -> String {
        self.send(line).await;
        let reply = self.recv().await;
        if let Some(rec) = &self.rec {
            let sent: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            let got: serde_json::Value = serde_json::from_str(&reply).expect("a JSON reply");
            let outcome = if got.get("result").is_some() {
                Some(Seen::Result)
            } else if got.get("error").is_some() {
                Some(Seen::Error)
            } else {
                None
            };
            if let (Some(method), Some(outcome)) = (sent["method"].as_str(), outcome) {
                if sent.get("id").is_some() && got["id"] == sent["id"] {
                    rec.observed("legacy-stdio-server", method, outcome);
                }
            }
        }
        reply
    }

    async fn initialize(&mut self, version: &str) -> String {
        self.exchange(&format!(
            r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{version}","capabilities":{{"elicitation":{{}}}},"clientInfo":{{"name":"old","version":"1"}}}}}}"#
        ))
        .await
    }
}

fn init_result(version: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":0,"result":{{"capabilities":{{"completions":{{}},"logging":{{}},"prompts":{{"listChanged":true}},"resources":{{"listChanged":true,"subscribe":true}},"tools":{{"listChanged":true}}}},"protocolVersion":"{version}","serverInfo":{INFO}}}}}"#
    )
}

#[tokio::test]
async fn b23_initialize_starts_a_legacy_session_at_each_served_version() {
    let rec = support::evidence::recorder!();
    for version in ["2025-06-18", "2025-11-25"] {
        let mut p = legacy().recorded(&rec);
        assert_eq!(p.initialize(version).await, init_result(version));
        p.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await;
        assert_eq!(
            p.exchange(r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#)
                .await,
            r#"{"jsonrpc":"2.0","id":"p","result":{}}"#
        );
    }
}

#[tokio::test]
async fn b23_an_unserved_version_is_answered_with_the_newest_legacy_one() {
    for asked in ["2025-03-26", "2024-11-05", "1999-01-01"] {
        let mut p = legacy();
        assert_eq!(
            p.initialize(asked).await,
            init_result("2025-11-25"),
            "{asked}"
        );
    }
}

#[tokio::test]
async fn b22_without_the_switch_initialize_keeps_32601_with_the_supported_versions() {
    let mut p = start(ServerOptions::new());
    let reply = p.initialize("2025-11-25").await;
    let reply: serde_json::Value = serde_json::from_str(&reply).unwrap();
    assert_eq!(reply["error"]["code"], -32601);
    assert_eq!(reply["error"]["data"]["supported"], json!(["2026-07-28"]));
}

#[tokio::test]
async fn b23_an_initialize_with_modern_meta_stays_modern_even_with_the_switch() {
    let mut p = legacy();
    let reply = p
        .exchange(&format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"_meta":{META},"protocolVersion":"2025-11-25","capabilities":{{}},"clientInfo":{{"name":"x","version":"1"}}}}}}"#
        ))
        .await;
    let reply: serde_json::Value = serde_json::from_str(&reply).unwrap();
    assert_eq!(reply["error"]["code"], -32601);
    // And no legacy session started: a legacy request is still refused as modern.
    let listed = p
        .exchange(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#)
        .await;
    let listed: serde_json::Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed["error"]["code"], -32602, "{listed}");
}

#[tokio::test]
async fn b23_initialize_params_are_checked_and_a_second_initialize_is_refused() {
    let rec = support::evidence::recorder!();
    let mut p = legacy().recorded(&rec);
    assert_eq!(
        p.exchange(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{},"clientInfo":{}}}"#).await,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"protocolVersion must be a string"}}"#
    );
    assert_eq!(
        p.exchange(r#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25","clientInfo":{}}}"#).await,
        r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"capabilities must be an object"}}"#
    );
    assert_eq!(p.initialize("2025-11-25").await, init_result("2025-11-25"));
    assert_eq!(
        p.initialize("2025-11-25").await,
        r#"{"jsonrpc":"2.0","id":0,"error":{"code":-32600,"message":"The session is already initialized."}}"#
    );
}

#[tokio::test]
async fn o28_tools_list_and_call_come_from_the_same_registry_and_policy() {
    let rec = support::evidence::recorder!();
    let mut p = start(ServerOptions::new().legacy_era(true).mode("direct")).recorded(&rec);
    assert_eq!(p.initialize("2025-11-25").await, init_result("2025-11-25"));
    let listed = p
        .exchange(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
        .await;
    // `secret` is hidden from alice, as on the modern path; no resultType, no serverInfo.
    assert!(
        listed.starts_with(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"#),
        "{listed}"
    );
    assert!(!listed.contains("secret"), "{listed}");
    assert!(!listed.contains("resultType"), "{listed}");
    assert!(!listed.contains("serverInfo"), "{listed}");
    assert!(listed.contains(r#""name":"echo""#), "{listed}");
    let called = p
        .exchange(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#)
        .await;
    assert_eq!(
        called,
        r#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"text":"{\"value\":{\"text\":\"hi\"}}","type":"text"}],"structuredContent":{"value":{"text":"hi"}}}}"#
    );
    let hidden = p
        .exchange(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"secret","arguments":{"text":"x"}}}"#)
        .await;
    // Hidden means unknown, exactly as on the modern path.
    assert!(
        hidden.starts_with(r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"#),
        "{hidden}"
    );
}

#[tokio::test]
async fn l_set_level_and_progress_reach_a_legacy_call_in_the_legacy_shapes() {
    let rec = support::evidence::recorder!();
    let mut p = start(ServerOptions::new().legacy_era(true).mode("direct")).recorded(&rec);
    p.initialize("2025-06-18").await;
    assert_eq!(
        p.exchange(
            r#"{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"info"}}"#
        )
        .await,
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#
    );
    assert_eq!(
        p.exchange(
            r#"{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"loud"}}"#
        )
        .await,
        r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"level must be one of debug, info, notice, warning, error, critical, alert, emergency"}}"#
    );
    p.send(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"_meta":{"progressToken":"t"},"name":"echo","arguments":{"text":"hi"}}}"#).await;
    assert_eq!(
        p.recv().await,
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1.0,"total":2.0,"message":"half"}}"#
    );
    assert_eq!(
        p.recv().await,
        r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"data":{"seen":"hi"},"level":"info","logger":"echo"}}"#
    );
    let reply = p.recv().await;
    assert!(
        reply.starts_with(r#"{"jsonrpc":"2.0","id":3,"result":{"content""#),
        "{reply}"
    );
}

#[tokio::test]
async fn o34_x6_unknown_resource_is_32002_on_the_legacy_path_and_32602_on_the_modern() {
    let rec = support::evidence::recorder!();
    let mut p = legacy().recorded(&rec);
    p.initialize("2025-11-25").await;
    assert_eq!(
        p.exchange(
            r#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"mem://nope"}}"#
        )
        .await,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"Resource not found","data":{"uri":"mem://nope"}}}"#
    );
    assert_eq!(
        p.exchange(
            r#"{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"mem://hello"}}"#
        )
        .await,
        r#"{"jsonrpc":"2.0","id":2,"result":{"contents":[{"text":"hello","uri":"mem://hello"}]}}"#
    );
    // The same session, a modern request: modern answer, modern code.
    let modern = p
        .exchange(&format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{{"_meta":{META},"uri":"mem://nope"}}}}"#
        ))
        .await;
    assert_eq!(
        modern,
        r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Resource not found","data":{"uri":"mem://nope"}}}"#
    );
}

#[tokio::test]
async fn o28_resources_prompts_and_completion_list_in_the_legacy_shape() {
    let rec = support::evidence::recorder!();
    let mut p = legacy().recorded(&rec);
    p.initialize("2025-11-25").await;
    assert_eq!(
        p.exchange(r#"{"jsonrpc":"2.0","id":1,"method":"resources/list","params":{}}"#)
            .await,
        r#"{"jsonrpc":"2.0","id":1,"result":{"resources":[{"name":"hello","uri":"mem://hello"},{"name":"wait","uri":"mem://wait"}]}}"#
    );
    assert_eq!(
        p.exchange(r#"{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"greet"}}"#)
            .await,
        r#"{"jsonrpc":"2.0","id":2,"result":{"messages":[{"content":{"text":"hi","type":"text"},"role":"user"}]}}"#
    );
    let listed = p
        .exchange(r#"{"jsonrpc":"2.0","id":3,"method":"prompts/list"}"#)
        .await;
    assert!(
        listed.starts_with(r#"{"jsonrpc":"2.0","id":3,"result":{"prompts":[{"#),
        "{listed}"
    );
}

#[tokio::test]
async fn o127_modern_only_methods_and_continuation_members_are_refused_to_a_legacy_session() {
    let rec = support::evidence::recorder!();
    let mut p = legacy().recorded(&rec);
    p.initialize("2025-11-25").await;
    assert_eq!(
        p.exchange(r#"{"jsonrpc":"2.0","id":1,"method":"server/discover"}"#)
            .await,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}"#
    );
    assert_eq!(
        p.exchange(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{},"requestState":"x"}}"#).await,
        r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"requestState and inputResponses are not part of this protocol revision"}}"#
    );
}

#[tokio::test]
async fn c9_legacy_cancellation_stops_the_call_and_no_reply_follows() {
    let mut p = legacy();
    p.initialize("2025-11-25").await;
    p.send(r#"{"jsonrpc":"2.0","id":"w","method":"resources/read","params":{"uri":"mem://wait"}}"#)
        .await;
    // Cancelling an id that is not in flight changes nothing.
    p.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9,"reason":"x"}}"#).await;
    p.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w","reason":"user"}}"#).await;
    // The next line is the ping's: the cancelled read is never answered.
    assert_eq!(
        p.exchange(r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#)
            .await,
        r#"{"jsonrpc":"2.0","id":4,"result":{}}"#
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !WAIT_CANCELLED.load(Ordering::SeqCst) {
        assert!(
            std::time::Instant::now() < deadline,
            "the handler never saw the cancellation"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        p.exchange(r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#)
            .await,
        r#"{"jsonrpc":"2.0","id":5,"result":{}}"#
    );
}
