//! The strict client over a real stdio child: our `conformance_server` example (discovery, a
//! list walk, calls, an MRTR chain, close), and shell scripts standing in for a legacy server
//! and for a server that dies mid-call.

#![cfg(unix)]
#![forbid(unsafe_code)]

mod support;
use std::sync::Arc;
use std::time::Instant;
use support::example_binary;

use serde_json::{json, Map, Value};
use strict_mcp::client::stdio::{CommandSpec, StdioTransport, TransportError as StdioError};
use strict_mcp::client::{
    CallOptions, Client, ClientError, ClientOptions, ConnectError, RoundInput, ToolOutcome,
    TransportError, DEFAULT_DEADLINE,
};

async fn conformance_client() -> (Client, Arc<StdioTransport>) {
    let spec = CommandSpec::new(example_binary("conformance_server"));
    let transport = Arc::new(StdioTransport::spawn(&spec).expect("spawn"));
    let client = Client::connect(transport.clone(), ClientOptions::default())
        .await
        .expect("connect over stdio");
    (client, transport)
}

fn sh(script: &str) -> Arc<StdioTransport> {
    Arc::new(StdioTransport::spawn(&CommandSpec::new("sh").arg("-c").arg(script)).expect("spawn"))
}

const DISCOVER_OK: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"private"}}"#;

#[tokio::test]
async fn o72_o85_stdio_child_discovery_lists_calls_and_closes() {
    let (client, transport) = conformance_client().await;
    let info = client.discovery().server_info.clone().expect("serverInfo");
    assert_eq!(info.name, "strict-mcp-conformance");
    assert_eq!(
        client.discovery().result.supported_versions,
        vec!["2026-07-28"]
    );
    let none = CallOptions::default();
    let tools = client.list_tools(&none).await.unwrap();
    assert!(tools.iter().any(|t| t.name == "test_simple_text"));
    let r = client.call("test_simple_text", None, &none).await.unwrap();
    assert_eq!(
        serde_json::to_value(&r.content).unwrap(),
        json!([{"type": "text", "text": "This is a simple text response for testing."}])
    );
    match client.call("test_error_handling", None, &none).await {
        Err(ClientError::ToolFailed(f)) => assert_eq!(f.result.is_error, Some(true)),
        other => panic!("{other:?}"),
    }
    client.close().await;
    let report = transport.close().await;
    assert!(report.status.is_some(), "{report:?}");
    match client.list_tools(&none).await {
        Err(ClientError::Transport(TransportError::Closed)) => {}
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn o78_stdio_child_mrtr_chain_driven_explicitly() {
    let (client, _transport) = conformance_client().await;
    let options = CallOptions::default().capabilities(json!({"elicitation": {"form": {}}}));
    let tool = "test_input_required_result_request_state";
    let first = match client
        .call_tool(tool, None, RoundInput::first(), &options)
        .await
        .unwrap()
    {
        ToolOutcome::InputRequired(i) => i.result,
        other => panic!("{other:?}"),
    };
    let answers: Map<String, Value> =
        serde_json::from_value(json!({"confirm": {"action": "accept", "content": {"ok": false}}}))
            .unwrap();
    match client
        .call_tool(tool, None, RoundInput::answer(&first, answers), &options)
        .await
        .unwrap()
    {
        ToolOutcome::Success(r) => assert_eq!(
            serde_json::to_value(&r.content).unwrap(),
            json!([{"type": "text", "text": "state-ok: confirmed=false"}])
        ),
        other => panic!("{other:?}"),
    }
    client.close().await;
}

#[tokio::test]
async fn b26_stdio_legacy_server_gets_the_actionable_message() {
    let transport = sh(
        r#"read line; printf '%s\n' '{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}'; read more; exit 0"#,
    );
    let e = Client::connect(transport.clone(), ClientOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(e, ConnectError::LegacyServer), "{e:?}");
    let _ = transport.close().await;
}

#[tokio::test]
async fn o83_stdio_child_dying_mid_call_is_a_typed_error_with_its_exit_status_then_fast() {
    let transport = sh(&format!(
        "read line; printf '%s\\n' '{DISCOVER_OK}'; read call; exit 3"
    ));
    let client = Client::connect(transport.clone(), ClientOptions::default())
        .await
        .expect("connect");
    let none = CallOptions::default();
    let e = client.call("t", None, &none).await.unwrap_err();
    let ClientError::Transport(TransportError::Failed { cause }) = &e else {
        panic!("{e:?}");
    };
    let stdio = cause
        .downcast_ref::<StdioError>()
        .expect("the stdio transport's own error");
    assert_eq!(
        stdio.exit_status().and_then(|s| s.code()),
        Some(3),
        "{stdio:?}"
    );
    let started = Instant::now();
    let again = client.list_tools(&none).await.unwrap_err();
    assert!(matches!(
        again,
        ClientError::Transport(TransportError::Failed { .. })
    ));
    // "Fast": not left waiting for an answer from the dead child until the call's deadline
    // (DEFAULT_DEADLINE, 30 s). That deadline is the bound, not a guess at the machine's speed
    // (the old 1 s could be overslept on a loaded machine).
    assert!(started.elapsed() < DEFAULT_DEADLINE, "fails fast");
    let _ = transport.close().await;
}

#[tokio::test]
async fn l2_o75_stdio_child_log_messages_reach_the_call_that_asked_at_its_level() {
    use std::sync::Mutex;
    use strict_mcp::client::{LogMessage, LogMessageSink};
    use strict_mcp::wire::logging::LogLevel;
    let (client, _transport) = conformance_client().await;
    let seen: Arc<Mutex<Vec<LogMessage>>> = Arc::default();
    let kept = Arc::clone(&seen);
    let sink = LogMessageSink(Arc::new(move |m| kept.lock().unwrap().push(m)));
    let info = CallOptions::default().logs(LogLevel::Info, sink.clone());
    client.call("test_logging_tool", None, &info).await.unwrap();
    let got: Vec<(LogLevel, Value)> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|m| (m.level, m.data.clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            (LogLevel::Info, json!("Tool execution started")),
            (LogLevel::Info, json!("Tool execution processing data")),
            (LogLevel::Info, json!("Tool execution completed")),
        ]
    );
    // At `error` the server sends none of its info messages; without a level, none either.
    seen.lock().unwrap().clear();
    let error = CallOptions::default().logs(LogLevel::Error, sink.clone());
    client
        .call("test_logging_tool", None, &error)
        .await
        .unwrap();
    let unasked = CallOptions {
        on_log: Some(sink),
        ..CallOptions::default()
    };
    client
        .call("test_logging_tool", None, &unasked)
        .await
        .unwrap();
    assert!(seen.lock().unwrap().is_empty());
    assert_eq!(client.dropped_log_messages(), 0);
}
