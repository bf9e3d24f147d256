//! The listen event bus across instances (#20, K-section): two `Server`s sharing one Redis
//! (`RedisEventBus`), a change published on one reaching the other's listen stream tagged with
//! that stream's own subscription id, never twice on the publisher, and a bus outage ending the
//! streams with -32603 (`data.reason = "bus_unavailable"`) instead of leaving them silent.

#![forbid(unsafe_code)]

mod scale_support;

use std::sync::Arc;
use std::time::Duration;

use strict_mcp::core::bus::{EventBus, MAX_EVENT_URI_BYTES};
use strict_mcp::core::descriptor::ResourceContents;
use strict_mcp::core::{Caller, ReadReply, Registry, RegistryBuilder, ResourceDef};
use strict_mcp::machine::subscriptions::Change;
use strict_mcp::scale::{BusSettings, RedisEventBus, RedisStoreConfig};
use strict_mcp::server::{Outbox, Reply, Server, ServerOptions};
use tokio::sync::mpsc;

/// How long a test waits for one expected line before failing (never a hang).
const LINE_WAIT: Duration = Duration::from_secs(10);

/// How long a test waits to be sure nothing more arrives.
const QUIET: Duration = Duration::from_millis(300);

const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

fn registry() -> Registry {
    RegistryBuilder::new()
        .resource(ResourceDef::new("mem://a", "a", |_inv, uri| async move {
            Ok(ReadReply::new(vec![ResourceContents::text(uri, "a")]))
        }))
        .build()
        .expect("registry builds")
}

/// Every line a request produced, in order: notifications, then the final reply.
struct Lines {
    tx: mpsc::UnboundedSender<String>,
}

impl Outbox for Lines {
    fn notify(&self, line: String) -> bool {
        self.tx.send(line).is_ok()
    }
    fn finish(&self, reply: Reply) {
        let _ = self.tx.send(reply.line);
    }
}

/// An open listen stream: its lines, and the task serving it.
struct Stream {
    rx: mpsc::UnboundedReceiver<String>,
    task: tokio::task::JoinHandle<()>,
}

impl Stream {
    async fn next(&mut self) -> String {
        tokio::time::timeout(LINE_WAIT, self.rx.recv())
            .await
            .expect("a line within the wait")
            .expect("the stream is open")
    }

    async fn quiet(&mut self) {
        if let Ok(Some(line)) = tokio::time::timeout(QUIET, self.rx.recv()).await {
            panic!("unexpected line {line}");
        }
    }
}

/// Opens `subscriptions/listen` with id `id` for `mem://a` and list changes of tools.
fn listen(server: &Server, id: &str) -> Stream {
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":"{id}","method":"subscriptions/listen","params":{{"notifications":{{"toolsListChanged":true,"resourcesListChanged":true,"resourceSubscriptions":["mem://a"]}},"_meta":{META}}}}}"#
    );
    let message = strict_mcp::codec::decode(line.as_bytes(), &server.ingress_limits())
        .expect("a valid request");
    let (tx, rx) = mpsc::unbounded_channel();
    let server = server.clone();
    let task = tokio::spawn(async move {
        server
            .serve(
                Caller::new("alice"),
                message,
                Arc::new(Lines { tx }),
                Default::default(),
            )
            .await;
    });
    Stream { rx, task }
}

fn ack(id: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{{"notifications":{{"resourceSubscriptions":["mem://a"],"resourcesListChanged":true}},"_meta":{{"io.modelcontextprotocol/subscriptionId":"{id}"}}}}}}"#
    )
}

fn updated(id: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{{"uri":"mem://a","_meta":{{"io.modelcontextprotocol/subscriptionId":"{id}"}}}}}}"#
    )
}

fn list_changed(id: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/resources/list_changed","params":{{"_meta":{{"io.modelcontextprotocol/subscriptionId":"{id}"}}}}}}"#
    )
}

fn bus_lost(id: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":"{id}","error":{{"code":-32603,"message":"The listen event bus is unavailable; listen again.","data":{{"reason":"bus_unavailable","retryable":true}}}}}}"#
    )
}

fn change() -> Change {
    Change::ResourceUpdated {
        uri: "mem://a".into(),
    }
}

async fn redis_bus(url: &str, prefix: &str) -> Arc<RedisEventBus> {
    let mut config = RedisStoreConfig::new(url);
    config.prefix = prefix.to_owned();
    config.op_timeout = Duration::from_millis(500);
    config.connect_timeout = Duration::from_millis(500);
    Arc::new(RedisEventBus::connect(config).await.expect("bus connects"))
}

fn server(bus: Arc<dyn EventBus>) -> Server {
    Server::new(registry(), ServerOptions::new().event_bus(bus)).expect("server builds")
}

/// K2, #20: an update published on B reaches A's stream (tagged with A's subscription id) and
/// B's own stream exactly once (not again through the bus); a resources list change published
/// on A reaches both; a change no filter admits (tools list, not advertised) reaches nobody; a
/// URI over the bus bound is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k2_an_update_published_on_b_reaches_a_listener_on_a_once() {
    let Some((url, _guard)) = scale_support::shared_redis() else {
        return;
    };
    let prefix = scale_support::unique_prefix("bus");
    let a = server(redis_bus(&url, &prefix).await);
    let b = server(redis_bus(&url, &prefix).await);
    let mut on_a = listen(&a, "LA");
    assert_eq!(on_a.next().await, ack("LA"));
    let mut on_b = listen(&b, "LB");
    assert_eq!(on_b.next().await, ack("LB"));
    b.publish_change(change()).await.expect("published");
    assert_eq!(on_a.next().await, updated("LA"));
    assert_eq!(on_b.next().await, updated("LB"));
    // The fire-and-forget form travels the same way, in call order.
    b.resource_updated("mem://a");
    assert_eq!(on_a.next().await, updated("LA"));
    assert_eq!(on_b.next().await, updated("LB"));
    // A list change travels too, to every stream whose filter admits it.
    a.publish_change(Change::ResourcesListChanged)
        .await
        .expect("published");
    assert_eq!(on_a.next().await, list_changed("LA"));
    assert_eq!(on_b.next().await, list_changed("LB"));
    a.publish_change(Change::ToolsListChanged)
        .await
        .expect("published");
    let long = Change::ResourceUpdated {
        uri: "u".repeat(MAX_EVENT_URI_BYTES + 1),
    };
    assert!(matches!(
        a.publish_change(long).await,
        Err(strict_mcp::core::bus::BusError::TooLarge(n)) if n == MAX_EVENT_URI_BYTES + 1
    ));
    on_a.quiet().await;
    on_b.quiet().await;
    assert_eq!(a.status().listen_streams, 1);
    on_a.task.abort();
    on_b.task.abort();
}

/// #20: Redis stopped ends every listen stream with -32603 on its own id (reason
/// `bus_unavailable`, retryable), never a silent stream; a listen while Redis is down gets the
/// same error as its reply; once Redis is back a new listen works and sees changes again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bus_outage_ends_listen_streams_with_32603_and_recovers() {
    if !scale_support::redis_available() {
        return;
    }
    let mut redis = scale_support::RedisProc::start(&[]);
    let prefix = scale_support::unique_prefix("bus-outage");
    let a = server(redis_bus(&redis.url(), &prefix).await);
    let b = server(redis_bus(&redis.url(), &prefix).await);
    let mut first = listen(&a, "L1");
    assert_eq!(first.next().await, ack("L1"));
    let mut second = listen(&a, "L2");
    assert_eq!(second.next().await, ack("L2"));
    redis.stop();
    assert_eq!(first.next().await, bus_lost("L1"));
    assert_eq!(second.next().await, bus_lost("L2"));
    // The streams ended: their requests returned and left the hub.
    tokio::time::timeout(LINE_WAIT, first.task)
        .await
        .expect("ends")
        .expect("no panic");
    tokio::time::timeout(LINE_WAIT, second.task)
        .await
        .expect("ends")
        .expect("no panic");
    assert_eq!(a.status().listen_streams, 0);
    // Down: a new listen is refused with the same typed error, and publishing says so.
    let mut refused = listen(&a, "L3");
    assert_eq!(refused.next().await, bus_lost("L3"));
    assert!(b.publish_change(change()).await.is_err());
    // Back: listening and publishing work again (the publisher's connection reconnects).
    redis.restart();
    let mut again = None;
    for _ in 0..50 {
        let mut s = listen(&a, "L4");
        let line = s.next().await;
        if line == ack("L4") {
            again = Some(s);
            break;
        }
        assert_eq!(line, bus_lost("L4"));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut again = again.expect("listening works once Redis is back");
    let mut published = false;
    for _ in 0..50 {
        if b.publish_change(change()).await.is_ok() {
            published = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(published, "publishing works once Redis is back");
    assert_eq!(again.next().await, updated("L4"));
    again.task.abort();
}

/// Heartbeat of the bus in the pause test, and how long Redis stays paused (well past the
/// heartbeat plus the operation time-out of [`redis_bus`], 500 ms).
const PAUSE_HEARTBEAT: Duration = Duration::from_millis(200);
const PAUSE_MS: u64 = 3_000;

/// #20: a Redis that stops answering without closing the connection (`CLIENT PAUSE`) is caught
/// by the heartbeat: the listen stream ends with the same -32603 within heartbeat + time-out,
/// not silently and not only after the pause.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_bus_is_caught_by_the_heartbeat() {
    if !scale_support::redis_available() {
        return;
    }
    let redis = scale_support::RedisProc::start(&[]);
    let mut config = RedisStoreConfig::new(redis.url());
    config.prefix = scale_support::unique_prefix("bus-pause");
    config.op_timeout = Duration::from_millis(500);
    let settings = BusSettings {
        heartbeat: PAUSE_HEARTBEAT,
        ..BusSettings::default()
    };
    let bus = RedisEventBus::connect_with(config, settings)
        .await
        .expect("bus connects");
    let a = server(Arc::new(bus));
    let mut stream = listen(&a, "LP");
    assert_eq!(stream.next().await, ack("LP"));
    let out = std::process::Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &redis.port.to_string()])
        .args(["CLIENT", "PAUSE", &PAUSE_MS.to_string(), "ALL"])
        .output()
        .expect("redis-cli runs");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "OK");
    let paused = std::time::Instant::now();
    assert_eq!(stream.next().await, bus_lost("LP"));
    assert!(
        paused.elapsed() < Duration::from_millis(PAUSE_MS),
        "caught during the pause, after {:?}",
        paused.elapsed()
    );
}

/// The in-memory bus shared by two servers in one process behaves like the Redis one.
#[tokio::test]
async fn k2_a_shared_memory_bus_carries_changes_between_servers() {
    let bus = Arc::new(strict_mcp::core::bus::MemoryEventBus::new());
    let a = server(bus.clone());
    let b = server(bus.clone());
    let mut on_a = listen(&a, "LA");
    assert_eq!(on_a.next().await, ack("LA"));
    b.resource_updated("mem://a");
    assert_eq!(on_a.next().await, updated("LA"));
    assert_eq!(bus.attached(), 1, "only A listens, so only A attached");
    on_a.quiet().await;
    on_a.task.abort();
}
