//! Time-outs on the injected monotonic clock (reads O33, the shutdown budget O5): each
//! deadline is taken from `ServerOptions::monotonic_clock` and waited for on it, so these
//! tests move a virtual clock by hand and never sleep (the deterministic harness,
//! `tests/support/harness.rs`).

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use strict_mcp::core::descriptor::ResourceContents;
use strict_mcp::core::{
    Invocation, MonotonicClock as _, ReadReply, RegistryBuilder, ResourceDef, ResourceError,
};
use strict_mcp::server::{Server, ServerOptions};
use support::harness::{with_clock, InMemory, ManualClock};

/// The server's read time-out in these tests, in virtual milliseconds.
const LIMIT_MS: u64 = 5_000;

/// A read whose handler takes `took_ms` of virtual time (it moves the clock itself).
fn mover(uri: &str, clock: &Arc<ManualClock>, took_ms: u64) -> ResourceDef {
    let clock = Arc::clone(clock);
    ResourceDef::new(uri, "mover", move |_i: Invocation, uri: String| {
        let clock = Arc::clone(&clock);
        async move {
            clock.advance(took_ms);
            Ok(ReadReply::new(vec![ResourceContents::text(uri, "late")]))
        }
    })
}

/// A read that only ends when its token fires.
fn stuck(uri: &str, saw_cancel: &Arc<AtomicBool>) -> ResourceDef {
    let saw_cancel = Arc::clone(saw_cancel);
    ResourceDef::new(uri, "stuck", move |inv: Invocation, _uri: String| {
        let saw_cancel = Arc::clone(&saw_cancel);
        async move {
            inv.cancelled().await;
            saw_cancel.store(true, Ordering::SeqCst);
            Err(ResourceError::Internal { retryable: false })
        }
    })
}

fn server(clock: &Arc<ManualClock>, builder: RegistryBuilder) -> InMemory {
    let options = ServerOptions::new().read_timeout(Duration::from_millis(LIMIT_MS));
    let server = Server::new(builder.build().unwrap(), with_clock(options, clock)).unwrap();
    InMemory::new(server)
}

fn timed_out(uri: &str) -> Value {
    json!({"code":-32603,"message":"Resource read timed out","data":{"uri":uri,"retryable":true}})
}

/// O33 at the bound on the injected clock: done one virtual millisecond before the limit is
/// answered; done exactly at it has expired (the clock, not tokio or the thread, decides).
#[tokio::test]
async fn o33_the_read_time_out_at_the_bound_and_one_past_on_the_injected_clock() {
    let clock = ManualClock::at(0);
    let h = server(
        &clock,
        RegistryBuilder::new()
            .resource(mover("mem://in-time", &clock, LIMIT_MS - 1))
            .resource(mover("mem://on-the-tick", &clock, LIMIT_MS)),
    );
    let (reply, status) = h
        .request("alice", "resources/read", json!({"uri": "mem://in-time"}))
        .await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(
        reply["result"]["contents"],
        json!([{"uri":"mem://in-time","text":"late"}])
    );
    let (reply, _status) = h
        .request(
            "alice",
            "resources/read",
            json!({"uri": "mem://on-the-tick"}),
        )
        .await;
    assert_eq!(reply["error"], timed_out("mem://on-the-tick"), "{reply}");
    assert_eq!(clock.elapsed_ms(), 2 * LIMIT_MS - 1);
}

/// O33: a read that never finishes expires exactly when the injected clock reaches the
/// deadline (not one virtual millisecond earlier), its token fires, and the reply is the
/// retryable -32603. Nothing sleeps: the test moves the clock.
#[tokio::test]
async fn o33_a_stuck_read_expires_when_the_injected_clock_reaches_the_deadline() {
    let clock = ManualClock::at(100);
    let saw_cancel = Arc::new(AtomicBool::new(false));
    let h = Arc::new(server(
        &clock,
        RegistryBuilder::new().resource(stuck("mem://stuck", &saw_cancel)),
    ));
    let served = tokio::spawn({
        let h = Arc::clone(&h);
        async move {
            h.request("alice", "resources/read", json!({"uri": "mem://stuck"}))
                .await
        }
    });
    // Let the request reach its timer (the current-thread runtime runs it on each yield).
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    clock.advance(LIMIT_MS - 1);
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    assert!(!served.is_finished(), "expired before the deadline");
    assert!(!saw_cancel.load(Ordering::SeqCst));
    clock.advance(1);
    let (reply, _status) = served.await.unwrap();
    assert_eq!(reply["error"], timed_out("mem://stuck"), "{reply}");
    assert!(
        saw_cancel.load(Ordering::SeqCst),
        "the handler's token fired"
    );
    assert_eq!(clock.elapsed_ms(), 100 + LIMIT_MS);
}

/// O5: the shutdown budget passes on the injected clock too. A read that ignores its
/// cancellation keeps the server draining until the clock reaches the budget, not one
/// virtual millisecond earlier; then the shutdown reports `cleanup_failed` with that call.
#[tokio::test]
async fn o5_the_shutdown_budget_passes_on_the_injected_clock() {
    use strict_mcp::server::ShutdownReport;
    let clock = ManualClock::at(0);
    let deaf = ResourceDef::new(
        "mem://deaf",
        "deaf",
        |_inv: Invocation, _uri: String| async move {
            std::future::pending::<Result<ReadReply, ResourceError>>().await
        },
    );
    let h = Arc::new(server(&clock, RegistryBuilder::new().resource(deaf)));
    let call = tokio::spawn({
        let h = Arc::clone(&h);
        async move {
            h.request("alice", "resources/read", json!({"uri": "mem://deaf"}))
                .await
        }
    });
    while h.server.status().active_calls == 0 {
        tokio::task::yield_now().await;
    }
    let shutdown = tokio::spawn({
        let server = h.server.clone();
        async move { server.shutdown(Duration::from_millis(1_000)).await }
    });
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    clock.advance(999);
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    assert!(!shutdown.is_finished(), "the budget ended early");
    clock.advance(1);
    assert_eq!(
        shutdown.await.unwrap(),
        ShutdownReport::CleanupFailed { unfinished: 1 }
    );
    call.abort();
}
