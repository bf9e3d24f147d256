//! `scale::Readiness`, the probe a balancer sends: 200 while the server serves and its store
//! answers within the probe time-out; 503 with a one-word reason while draining, once stopped,
//! or when the store fails or does not answer in time. The time-out bound runs on tokio's paused
//! clock (one millisecond under it and one over); one test stops a real redis-server.

#![forbid(unsafe_code)]

mod scale_support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::BodyExt as _;
use hyper::{Request, StatusCode};
use strict_mcp::core::store::{LedgerStore, MemoryLedgerStore, StoreError, StoreFuture};
use strict_mcp::core::{Invocation, Registry, RegistryBuilder, ToolDef};
use strict_mcp::machine::ledger::{Chain, ChainId};
use strict_mcp::machine::{Epoch, Tick};
use strict_mcp::scale::{
    NotReady, Readiness, RedisLedgerStore, RedisStoreConfig, DEFAULT_PROBE_TIMEOUT,
};
use strict_mcp::server::{Server, ServerOptions};
use tower::ServiceExt as _;

/// The probe time-out of the bound tests.
const PROBE: Duration = Duration::from_millis(100);

/// How the test store answers a load.
#[derive(Clone)]
enum Behaviour {
    Answer,
    Fail(StoreError),
    /// Answers after this long.
    Slow(Duration),
}

struct TestStore {
    inner: MemoryLedgerStore,
    behaviour: Mutex<Behaviour>,
}

impl TestStore {
    fn new(b: Behaviour) -> Arc<TestStore> {
        Arc::new(TestStore {
            inner: MemoryLedgerStore::default(),
            behaviour: Mutex::new(b),
        })
    }
}

impl LedgerStore for TestStore {
    fn load(&self, id: ChainId) -> StoreFuture<'_, Result<Option<Chain>, StoreError>> {
        let b = self.behaviour.lock().unwrap().clone();
        match b {
            Behaviour::Answer => self.inner.load(id),
            Behaviour::Fail(e) => Box::pin(async move { Err(e) }),
            Behaviour::Slow(d) => Box::pin(async move {
                tokio::time::sleep(d).await;
                Ok(None)
            }),
        }
    }

    fn compare_and_swap(
        &self,
        now: Tick,
        expected: Option<Chain>,
        new: Chain,
    ) -> StoreFuture<'_, Result<(), StoreError>> {
        self.inner.compare_and_swap(now, expected, new)
    }

    fn bump_epoch(&self, now: Tick, epoch: Epoch) -> StoreFuture<'_, Result<(), StoreError>> {
        self.inner.bump_epoch(now, epoch)
    }

    fn sweep(&self, now: Tick) -> StoreFuture<'_, Result<usize, StoreError>> {
        self.inner.sweep(now)
    }
}

/// Releases the `hold` tool's blocked call.
type Release = std::sync::mpsc::Sender<()>;

/// One tool, `hold`, whose call blocks its worker thread until released: it cannot observe
/// cancellation, so a shutdown stays draining until the test releases it.
fn registry() -> (Registry, Release) {
    let (release, held) = std::sync::mpsc::channel::<()>();
    let held = Arc::new(Mutex::new(held));
    let registry = RegistryBuilder::new()
        .tool(ToolDef::dynamic(
            "hold",
            r#"{"type":"object"}"#,
            None,
            move |_inv: Invocation, _args: Box<serde_json::value::RawValue>| {
                let held = Arc::clone(&held);
                async move {
                    let _ = held.lock().unwrap().recv();
                    Ok(strict_mcp::core::DynamicOutput {
                        content: vec![],
                        structured: None,
                    })
                }
            },
        ))
        .build()
        .expect("registry builds");
    (registry, release)
}

fn server_with_release(store: Arc<dyn LedgerStore>) -> (Server, Release) {
    let (registry, release) = registry();
    let options = ServerOptions::new().ledger_store(store).mode("direct");
    (
        Server::new(registry, options).expect("server builds"),
        release,
    )
}

fn server(store: Arc<dyn LedgerStore>) -> Server {
    server_with_release(store).0
}

/// Status, body and the two headers of one probe through the tower service.
async fn probe(r: &Readiness) -> (StatusCode, String, String, String) {
    let response = r
        .clone()
        .oneshot(Request::get("/ready").body(()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let header = |n: &str| {
        response
            .headers()
            .get(n)
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default()
    };
    let (ct, cc) = (header("content-type"), header("cache-control"));
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(body.to_vec()).unwrap(), ct, cc)
}

#[tokio::test]
async fn serving_with_an_answering_store_is_200_ready() {
    let store = TestStore::new(Behaviour::Answer);
    let r = Readiness::new(server(store.clone()), store);
    assert_eq!(
        probe(&r).await,
        (
            StatusCode::OK,
            "ready\n".to_owned(),
            "text/plain; charset=utf-8".to_owned(),
            "no-store".to_owned()
        )
    );
    assert_eq!(r.check().await, Ok(()));
    assert_eq!(DEFAULT_PROBE_TIMEOUT, Duration::from_secs(1));
}

#[tokio::test]
async fn a_failing_store_is_503_with_its_reason() {
    for (e, reason, why) in [
        (
            StoreError::Unavailable("refused".into()),
            "store-unavailable\n",
            NotReady::StoreUnavailable,
        ),
        (
            StoreError::Timeout(Duration::from_secs(2)),
            "store-timeout\n",
            NotReady::StoreTimeout,
        ),
    ] {
        let store = TestStore::new(Behaviour::Fail(e));
        let r = Readiness::new(server(store.clone()), store.clone());
        let (status, body, _, cc) = probe(&r).await;
        assert_eq!(
            (status, body.as_str()),
            (StatusCode::SERVICE_UNAVAILABLE, reason)
        );
        assert_eq!(cc, "no-store");
        assert_eq!(r.check().await, Err(why));
        // The store answers again: so does the probe.
        *store.behaviour.lock().unwrap() = Behaviour::Answer;
        assert_eq!(probe(&r).await.0, StatusCode::OK);
    }
}

/// The probe time-out, at the bound: a store answering 1 ms inside it is ready, 1 ms past it
/// is not, and the probe answers at the time-out instead of waiting for the store.
#[tokio::test(start_paused = true)]
async fn store_probe_is_bounded_by_the_probe_time_out() {
    let store = TestStore::new(Behaviour::Slow(PROBE - Duration::from_millis(1)));
    let r = Readiness::new(server(store.clone()), store.clone()).probe_timeout(PROBE);
    assert_eq!(probe(&r).await.0, StatusCode::OK);

    *store.behaviour.lock().unwrap() = Behaviour::Slow(PROBE + Duration::from_millis(1));
    let started = tokio::time::Instant::now();
    let (status, body, _, _) = probe(&r).await;
    assert_eq!(
        (status, body.as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, "store-timeout\n")
    );
    assert_eq!(started.elapsed(), PROBE);

    *store.behaviour.lock().unwrap() = Behaviour::Slow(Duration::from_secs(3600));
    assert_eq!(r.check().await, Err(NotReady::StoreTimeout));
}

/// Draining (a call still running after shutdown began) is 503 `draining` even with a healthy
/// store; once stopped, 503 `stopped`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn draining_and_stopped_servers_are_not_ready() {
    let store = TestStore::new(Behaviour::Answer);
    let (s, release) = server_with_release(store.clone());
    let r = Readiness::new(s.clone(), store);
    assert_eq!(probe(&r).await.0, StatusCode::OK);

    // A call that cannot observe its cancellation keeps the server draining until released.
    let line = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "hold", "arguments": {},
                   "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                             "io.modelcontextprotocol/clientCapabilities": {}}}});
    let message = strict_mcp::codec::decode(line.to_string().as_bytes(), &s.ingress_limits())
        .expect("a valid request");
    let sink = Arc::new(Sink::default());
    let call = {
        let (s, sink) = (s.clone(), sink.clone());
        tokio::spawn(async move {
            s.serve(
                strict_mcp::core::Caller::new("alice"),
                message,
                sink,
                Default::default(),
            )
            .await;
        })
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while s.status().active_calls == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the call never started: {:?}",
            sink.0.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let shutdown = {
        let s = s.clone();
        tokio::spawn(async move { s.shutdown(Duration::from_secs(30)).await })
    };
    while s.status().phase == strict_mcp::server::ServerPhase::Serving {
        assert!(std::time::Instant::now() < deadline, "shutdown never began");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let (status, body, _, _) = probe(&r).await;
    assert_eq!(
        (status, body.as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, "draining\n")
    );

    release.send(()).unwrap();
    let _report = shutdown.await.unwrap();
    let (status, body, _, _) = probe(&r).await;
    assert_eq!(
        (status, body.as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, "stopped\n")
    );
    call.abort();
}

/// Keeps the reply, so a call that never started says why.
#[derive(Default)]
struct Sink(Mutex<Option<String>>);

impl strict_mcp::server::Outbox for Sink {
    fn notify(&self, _line: String) -> bool {
        true
    }
    fn finish(&self, reply: strict_mcp::server::Reply) {
        *self.0.lock().unwrap() = Some(reply.line);
    }
}

/// A real redis-server stopped: 503 `store-unavailable` (or `store-timeout`); restarted: 200.
#[tokio::test]
async fn redis_stopped_is_not_ready_and_back_is_ready() {
    if !scale_support::redis_available() {
        return;
    }
    let mut redis = scale_support::RedisProc::start(&[]);
    let mut cfg = RedisStoreConfig::new(redis.url());
    cfg.prefix = scale_support::unique_prefix("ready");
    cfg.op_timeout = Duration::from_millis(500);
    cfg.connect_timeout = Duration::from_millis(200);
    cfg.backoff_max = Duration::from_millis(100);
    let store: Arc<dyn LedgerStore> =
        Arc::new(RedisLedgerStore::connect(cfg).await.expect("redis store"));
    let r = Readiness::new(server(store.clone()), store);
    assert_eq!(probe(&r).await.0, StatusCode::OK);
    redis.stop();
    let (status, body, _, _) = probe(&r).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        body == "store-unavailable\n" || body == "store-timeout\n",
        "{body}"
    );
    redis.restart();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while probe(&r).await.0 != StatusCode::OK {
        assert!(std::time::Instant::now() < deadline, "never ready again");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
