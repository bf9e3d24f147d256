//! Cancellation reaches resource reads and prompt gets through `Server::serve` (C9, J9): the
//! handler's token fires, the handler observes it, and no reply (nor anything else) is sent.
//! Shutdown ends a cooperative read with the handler's own answer (O5). Presentation hints
//! come from each request's own capabilities (B4). Every wait is bounded.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use strict_mcp::core::descriptor::ResourceContents;
use strict_mcp::core::{
    Caller, CancelToken, Invocation, Outcome, PromptDef, PromptReply, ReadReply, Registry,
    RegistryBuilder, ResourceDef, ResourceError,
};
use strict_mcp::server::{Outbox, Reply, Server, ServerOptions, ShutdownReport};
use tokio::sync::Notify;

/// Upper bound of every wait in this file; reached only when the code under test is broken.
const BOUND: Duration = Duration::from_secs(10);

#[derive(Default)]
struct Collect {
    notes: Mutex<Vec<String>>,
    replies: Mutex<Vec<Reply>>,
}

impl Outbox for Collect {
    fn notify(&self, line: String) -> bool {
        self.notes.lock().unwrap().push(line);
        true
    }
    fn finish(&self, reply: Reply) {
        self.replies.lock().unwrap().push(reply);
    }
}

/// What a waiting handler reports: it started, and it saw its cancellation.
#[derive(Default)]
struct Probe {
    started: Notify,
    saw_cancel: AtomicBool,
}

fn registry(probe: &Arc<Probe>) -> Registry {
    let read_probe = Arc::clone(probe);
    let prompt_probe = Arc::clone(probe);
    RegistryBuilder::new()
        .resource(ResourceDef::new(
            "mem://wait",
            "wait",
            move |inv: Invocation, _uri: String| {
                let probe = Arc::clone(&read_probe);
                async move {
                    probe.started.notify_one();
                    inv.cancelled().await;
                    probe.saw_cancel.store(true, Ordering::SeqCst);
                    Err::<ReadReply, _>(ResourceError::Internal { retryable: true })
                }
            },
        ))
        .resource(ResourceDef::new(
            "mem://ui",
            "ui",
            |inv: Invocation, uri: String| async move {
                let declared = inv.presentation().ui_mime_types().join(",");
                Ok(ReadReply::new(vec![ResourceContents::text(uri, declared)]))
            },
        ))
        .prompt(PromptDef::new("wait", move |inv: Invocation, _a| {
            let probe = Arc::clone(&prompt_probe);
            async move {
                probe.started.notify_one();
                inv.cancelled().await;
                probe.saw_cancel.store(true, Ordering::SeqCst);
                Ok(Outcome::Complete(PromptReply {
                    description: None,
                    messages: Vec::new(),
                }))
            }
        }))
        .build()
        .unwrap()
}

fn line(method: &str, params: &str, caps: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"{method}","params":{{{params},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{caps}}}}}}}"#
    )
}

/// Starts serving one request on its own task.
fn spawn(
    server: &Server,
    request: &str,
    outbox: Arc<Collect>,
    cancel: CancelToken,
) -> tokio::task::JoinHandle<()> {
    let message = strict_mcp::codec::decode(request.as_bytes(), &server.ingress_limits()).unwrap();
    let server = server.clone();
    tokio::spawn(async move {
        server
            .serve(Caller::anonymous(), message, outbox, cancel)
            .await;
    })
}

async fn client_cancel_reaches_the_handler(method: &str, params: &str) {
    let probe = Arc::new(Probe::default());
    // A long time-out: only the cancellation can end the handler.
    let server = Server::new(registry(&probe), ServerOptions::new()).unwrap();
    let outbox = Arc::new(Collect::default());
    let cancel = CancelToken::new();
    let task = spawn(
        &server,
        &line(method, params, "{}"),
        outbox.clone(),
        cancel.clone(),
    );
    tokio::time::timeout(BOUND, probe.started.notified())
        .await
        .expect("the handler started");
    assert!(!probe.saw_cancel.load(Ordering::SeqCst));
    cancel.cancel();
    tokio::time::timeout(BOUND, task)
        .await
        .expect("serve returns once cancelled")
        .unwrap();
    assert!(
        probe.saw_cancel.load(Ordering::SeqCst),
        "{method}: the handler observed its token"
    );
    assert!(
        outbox.replies.lock().unwrap().is_empty(),
        "{method}: no reply"
    );
    assert!(outbox.notes.lock().unwrap().is_empty(), "{method}: nothing");
    assert_eq!(server.status().active_calls, 0);
}

#[tokio::test]
async fn c9_j9_a_cancelled_read_handler_observes_it_and_no_reply_is_sent() {
    client_cancel_reaches_the_handler("resources/read", r#""uri":"mem://wait""#).await;
}

#[tokio::test]
async fn c9_j9_a_cancelled_prompt_handler_observes_it_and_no_reply_is_sent() {
    client_cancel_reaches_the_handler("prompts/get", r#""name":"wait""#).await;
}

#[tokio::test]
async fn o5_shutdown_reaches_a_waiting_read_which_answers_itself() {
    let probe = Arc::new(Probe::default());
    let server = Server::new(registry(&probe), ServerOptions::new()).unwrap();
    let outbox = Arc::new(Collect::default());
    let task = spawn(
        &server,
        &line("resources/read", r#""uri":"mem://wait""#, "{}"),
        outbox.clone(),
        CancelToken::new(),
    );
    tokio::time::timeout(BOUND, probe.started.notified())
        .await
        .expect("the handler started");
    assert_eq!(server.shutdown(BOUND).await, ShutdownReport::Stopped);
    tokio::time::timeout(BOUND, task).await.unwrap().unwrap();
    assert!(probe.saw_cancel.load(Ordering::SeqCst));
    let replies = outbox.replies.lock().unwrap();
    assert_eq!(replies.len(), 1);
    let reply: Value = serde_json::from_str(&replies[0].line).unwrap();
    assert_eq!(
        reply,
        json!({"jsonrpc":"2.0","id":5,"error":{
            "code":-32603,"message":"Internal error","data":{"retryable":true}}})
    );
}

#[tokio::test]
async fn b4_presentation_hints_come_from_each_request_only() {
    let probe = Arc::new(Probe::default());
    let server = Server::new(registry(&probe), ServerOptions::new()).unwrap();
    let ui = r#"{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}}"#;
    for (caps, expected) in [("{}", ""), (ui, "text/html;profile=mcp-app"), ("{}", "")] {
        let outbox = Arc::new(Collect::default());
        let task = spawn(
            &server,
            &line("resources/read", r#""uri":"mem://ui""#, caps),
            outbox.clone(),
            CancelToken::new(),
        );
        tokio::time::timeout(BOUND, task).await.unwrap().unwrap();
        let replies = outbox.replies.lock().unwrap();
        let reply: Value = serde_json::from_str(&replies[0].line).unwrap();
        assert_eq!(
            reply["result"]["contents"],
            json!([{"uri":"mem://ui","text":expected}]),
            "{caps}"
        );
    }
}
