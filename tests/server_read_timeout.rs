//! Read and prompt time-outs enforced by the server (O33, O32, G5): the deadline covers the
//! handler, conversion and the final size check; on expiry the handler's token fires and the
//! client gets -32603 with `data: {"uri", "retryable": true}`. No test measures time: handlers
//! that never finish meet a short time-out, and handlers that finish at once a long one.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake};
use std::time::Duration;

use serde_json::{json, Value};
use std::collections::BTreeMap;

use strict_mcp::core::descriptor::{ContentBlock, PromptMessage, ResourceContents, Role};
use strict_mcp::core::{
    Caller, CancelToken, Invocation, Outcome, PromptDef, PromptReply, ReadReply, Registry,
    RegistryBuilder, ResourceDef, ResourceError, TemplateDef,
};
use strict_mcp::server::{ConfigError, Outbox, Reply, Server, ServerOptions, DEFAULT_READ_TIMEOUT};

/// Short enough to keep the suite fast; only ever met by handlers that never finish.
const SHORT: Duration = Duration::from_millis(20);

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

impl Collect {
    fn only_reply(&self) -> (Value, u16) {
        let replies = self.replies.lock().unwrap();
        assert_eq!(replies.len(), 1, "{:?}", *replies);
        (
            serde_json::from_str(&replies[0].line).unwrap(),
            replies[0].status,
        )
    }
}

fn request(method: &str, params: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{{{params},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
    )
}

/// Serves one request and returns what the outbox got.
async fn serve(server: &Server, line: &str) -> Arc<Collect> {
    let outbox = Arc::new(Collect::default());
    let message = strict_mcp::codec::decode(line.as_bytes(), &server.ingress_limits()).unwrap();
    server
        .serve(
            Caller::anonymous(),
            message,
            outbox.clone(),
            CancelToken::new(),
        )
        .await;
    outbox
}

/// A read handler that never finishes on its own; it records that it saw its cancellation.
fn stuck(uri: &str, saw_cancel: Arc<AtomicBool>) -> ResourceDef {
    ResourceDef::new(uri, "stuck", move |inv: Invocation, _uri: String| {
        let saw_cancel = Arc::clone(&saw_cancel);
        async move {
            inv.cancelled().await;
            saw_cancel.store(true, Ordering::SeqCst);
            Err(ResourceError::Internal { retryable: false })
        }
    })
}

fn quick(uri: &str) -> ResourceDef {
    ResourceDef::new(uri, "quick", |_i: Invocation, uri: String| async move {
        Ok(ReadReply::new(vec![ResourceContents::text(uri, "fine")]))
    })
}

fn timed_out(uri: &str) -> Value {
    json!({"jsonrpc":"2.0","id":1,"error":{
        "code":-32603,"message":"Resource read timed out","data":{"uri":uri,"retryable":true}}})
}

// Virtual time (tokio paused): the short time-out elapses without real waiting.
#[tokio::test(start_paused = true)]
async fn o33_a_read_past_the_server_time_out_is_32603_with_uri_and_retryable() {
    let saw_cancel = Arc::new(AtomicBool::new(false));
    let registry = RegistryBuilder::new()
        .resource(stuck("mem://stuck", Arc::clone(&saw_cancel)))
        .build()
        .unwrap();
    let server = Server::new(registry, ServerOptions::new().read_timeout(SHORT)).unwrap();
    let out = serve(
        &server,
        &request("resources/read", r#""uri":"mem://stuck""#),
    )
    .await;
    let (reply, status) = out.only_reply();
    assert_eq!(reply, timed_out("mem://stuck"));
    assert_eq!(status, 500);
    // The handler's token fired and the handler saw it (its own answer is not sent).
    assert!(saw_cancel.load(Ordering::SeqCst));
    assert!(out.notes.lock().unwrap().is_empty());
    assert_eq!(server.status().active_calls, 0);
}

// Virtual time (tokio paused): the short time-out elapses without real waiting.
#[tokio::test(start_paused = true)]
async fn o33_per_resource_and_template_overrides_beat_the_server_default() {
    let registry = RegistryBuilder::new()
        .resource(stuck("mem://stuck", Arc::default()).timeout(SHORT))
        .template(
            TemplateDef::new("mem://t/{id}", "t", |_i: Invocation, _u: String, _v| {
                std::future::pending::<Result<ReadReply, ResourceError>>()
            })
            .timeout(SHORT),
        )
        .resource(quick("mem://quick").timeout(SHORT))
        .build()
        .unwrap();
    // The server default (30 s) is never reached: only the overrides can end these reads.
    let server = Server::new(registry, ServerOptions::new()).unwrap();
    assert_eq!(server.read_timeout(), DEFAULT_READ_TIMEOUT);
    assert_eq!(DEFAULT_READ_TIMEOUT, Duration::from_secs(30));
    let out = serve(
        &server,
        &request("resources/read", r#""uri":"mem://stuck""#),
    )
    .await;
    assert_eq!(out.only_reply().0, timed_out("mem://stuck"));
    let out = serve(&server, &request("resources/read", r#""uri":"mem://t/9""#)).await;
    assert_eq!(out.only_reply().0, timed_out("mem://t/9"));
    // A read that finishes in time is answered normally.
    let out = serve(
        &server,
        &request("resources/read", r#""uri":"mem://quick""#),
    )
    .await;
    let (reply, status) = out.only_reply();
    assert_eq!(status, 200);
    assert_eq!(
        reply["result"]["contents"],
        json!([{"uri":"mem://quick","text":"fine"}])
    );
}

// Virtual time (tokio paused): the short time-out elapses without real waiting.
#[tokio::test(start_paused = true)]
async fn g5_a_prompt_past_its_time_out_is_32603_with_name_and_retryable() {
    let saw_cancel = Arc::new(AtomicBool::new(false));
    let seen = Arc::clone(&saw_cancel);
    let registry = RegistryBuilder::new()
        .prompt(
            PromptDef::new("slow", move |inv: Invocation, _a| {
                let seen = Arc::clone(&seen);
                async move {
                    inv.cancelled().await;
                    seen.store(true, Ordering::SeqCst);
                    Ok(Outcome::Complete(PromptReply {
                        description: None,
                        messages: Vec::new(),
                    }))
                }
            })
            .timeout(SHORT),
        )
        .build()
        .unwrap();
    let server = Server::new(registry, ServerOptions::new()).unwrap();
    let out = serve(&server, &request("prompts/get", r#""name":"slow""#)).await;
    assert_eq!(
        out.only_reply().0,
        json!({"jsonrpc":"2.0","id":1,"error":{
            "code":-32603,"message":"Prompt timed out","data":{"name":"slow","retryable":true}}})
    );
    assert!(saw_cancel.load(Ordering::SeqCst));
}

fn stuck_registry() -> Registry {
    RegistryBuilder::new()
        .resource(stuck("mem://stuck", Arc::default()))
        .build()
        .unwrap()
}

struct ThreadWaker(std::thread::Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// A minimal executor: no tokio runtime is current while it runs the future.
fn block_on<F: Future>(future: F) -> F::Output {
    let waker = Arc::new(ThreadWaker(std::thread::current())).into();
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}

#[test]
fn o33_without_a_tokio_runtime_the_time_out_still_holds() {
    assert!(tokio::runtime::Handle::try_current().is_err());
    let server = Server::new(stuck_registry(), ServerOptions::new().read_timeout(SHORT)).unwrap();
    let out = block_on(serve(
        &server,
        &request("resources/read", r#""uri":"mem://stuck""#),
    ));
    assert_eq!(out.only_reply().0, timed_out("mem://stuck"));
}

#[test]
fn o33_a_runtime_without_timers_falls_back_instead_of_panicking() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let server = Server::new(stuck_registry(), ServerOptions::new().read_timeout(SHORT)).unwrap();
    let out = runtime.block_on(serve(
        &server,
        &request("resources/read", r#""uri":"mem://stuck""#),
    ));
    assert_eq!(out.only_reply().0, timed_out("mem://stuck"));
}

#[test]
fn o7_read_timeout_option_is_checked() {
    let build = |options: ServerOptions| Server::new(stuck_registry(), options).map(|_| ());
    let cases = [
        (
            ServerOptions::new().read_timeout(Duration::ZERO),
            "option `read_timeout`: 0ns is outside 1 ms ..= 1 h",
        ),
        (
            ServerOptions::new().read_timeout(Duration::from_secs(3601)),
            "option `read_timeout`: 3601s is outside 1 ms ..= 1 h",
        ),
        (
            ServerOptions::new().read_timeout(Duration::MAX),
            "option `read_timeout`: 18446744073709551615.999999999s is outside 1 ms ..= 1 h",
        ),
        (
            ServerOptions::new().read_timeout(SHORT).read_timeout(SHORT),
            "option `read_timeout` was given more than once",
        ),
    ];
    for (options, message) in cases {
        let err = build(options).unwrap_err();
        assert_eq!(err.to_string(), message);
    }
    assert_eq!(
        build(ServerOptions::new().read_timeout(Duration::ZERO)).unwrap_err(),
        ConfigError::InvalidTimeout {
            option: "read_timeout",
            value: Duration::ZERO
        }
    );
    build(ServerOptions::new().read_timeout(Duration::from_millis(1))).unwrap();
    build(ServerOptions::new().read_timeout(Duration::from_secs(3600))).unwrap();
}

#[tokio::test]
async fn o32_o33_a_read_over_the_response_bound_fails_like_one_over_the_contents_limit() {
    // The contents limit is lifted, so only the final encoding of the whole response can
    // notice the size (16 MiB, O39).
    let registry = RegistryBuilder::new()
        .resource(ResourceDef::new(
            "mem://huge",
            "huge",
            |_i: Invocation, uri: String| async move {
                let text = "a".repeat(16 * 1024 * 1024);
                Ok(ReadReply::new(vec![ResourceContents::text(uri, text)]))
            },
        ))
        .max_read_bytes(usize::MAX)
        .build()
        .unwrap();
    let server = Server::new(registry, ServerOptions::new()).unwrap();
    let out = serve(&server, &request("resources/read", r#""uri":"mem://huge""#)).await;
    let (reply, status) = out.only_reply();
    assert_eq!(
        reply,
        json!({"jsonrpc":"2.0","id":1,"error":{
            "code":-32603,"message":"Resource too large","data":{"uri":"mem://huge","retryable":false}}})
    );
    assert_eq!(status, 500);
}

#[tokio::test]
async fn o39_a_prompt_over_the_response_bound_is_32603_with_retryable_false() {
    // Any non-tool result over the 16 MiB response bound: a safe error that tells the client
    // a retry would fail the same way.
    let registry = RegistryBuilder::new()
        .prompt(PromptDef::new(
            "huge",
            |_i: Invocation, _args: BTreeMap<String, String>| async move {
                Ok(Outcome::Complete(PromptReply {
                    description: None,
                    messages: vec![PromptMessage::new(
                        Role::User,
                        ContentBlock::text("a".repeat(16 * 1024 * 1024)),
                    )],
                }))
            },
        ))
        .build()
        .unwrap();
    let server = Server::new(registry, ServerOptions::new()).unwrap();
    let out = serve(&server, &request("prompts/get", r#""name":"huge""#)).await;
    let (reply, status) = out.only_reply();
    assert_eq!(
        reply,
        json!({"jsonrpc":"2.0","id":1,"error":{
            "code":-32603,"message":"The result is too large.","data":{"retryable":false}}})
    );
    assert_eq!(status, 500);
}

/// A read whose handler takes `took` of virtual time.
fn sleeper(uri: &str, took: Duration) -> ResourceDef {
    ResourceDef::new(
        uri,
        "sleeper",
        move |_i: Invocation, uri: String| async move {
            tokio::time::sleep(took).await;
            Ok(ReadReply::new(vec![ResourceContents::text(uri, "late")]))
        },
    )
}

/// O33 at the bound, on virtual time (no sleeping): a handler done one millisecond before the
/// time-out is answered; one done exactly at it has expired (the deadline is not extended for
/// work that finishes on the tick).
#[tokio::test(start_paused = true)]
async fn o33_the_read_time_out_at_the_bound_and_one_past_on_virtual_time() {
    const LIMIT: Duration = Duration::from_secs(5);
    let registry = RegistryBuilder::new()
        .resource(sleeper("mem://in-time", LIMIT - Duration::from_millis(1)))
        .resource(sleeper("mem://on-the-tick", LIMIT))
        .build()
        .unwrap();
    let server = Server::new(registry, ServerOptions::new().read_timeout(LIMIT)).unwrap();
    let started = tokio::time::Instant::now();
    let out = serve(
        &server,
        &request("resources/read", r#""uri":"mem://in-time""#),
    )
    .await;
    let (reply, status) = out.only_reply();
    assert_eq!(status, 200, "{reply}");
    assert_eq!(
        reply["result"]["contents"],
        json!([{"uri":"mem://in-time","text":"late"}])
    );
    let out = serve(
        &server,
        &request("resources/read", r#""uri":"mem://on-the-tick""#),
    )
    .await;
    assert_eq!(out.only_reply().0, timed_out("mem://on-the-tick"));
    // Both ran on the virtual clock: exactly the two handlers' time passed.
    assert_eq!(started.elapsed(), LIMIT * 2 - Duration::from_millis(1));
}
