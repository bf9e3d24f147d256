//! `RedisTaskStore` against a real redis-server (feature `redis`; see tests/scale_support for
//! how Redis is found, `.ci/redis` in CI): the compare-and-swap contract `MemoryTaskStore` has
//! (create only when absent, a stale expectation loses: cancel racing completion), the record
//! surviving the round trip, expiry at `purge_at_ms`, and a server serving tasks from it.

#![forbid(unsafe_code)]
#![cfg(feature = "redis")]

mod scale_support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use scale_support::{shared_redis, unique_prefix};
use strict_mcp::core::store::StoreError;
use strict_mcp::core::tasks::{MemoryTaskStore, TaskRecord, TaskStore};
use strict_mcp::scale::{RedisStoreConfig, RedisTaskStore};
use strict_mcp::wire::tasks::TaskDetail;

fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_millis() as u64
}

fn record(id: &str, purge_at_ms: u64) -> TaskRecord {
    TaskRecord {
        id: id.into(),
        owner: "principal:alice".into(),
        created_ms: 1,
        updated_ms: 1,
        ttl_ms: 60_000,
        purge_at_ms,
        detail: TaskDetail::Working,
        status_message: None,
        responses: BTreeMap::new(),
        round: 0,
    }
}

async fn redis_store(url: &str, prefix: &str) -> RedisTaskStore {
    let mut config = RedisStoreConfig::new(url);
    config.prefix = prefix.to_owned();
    config.grace_ms = 0;
    RedisTaskStore::connect(config)
        .await
        .expect("redis connects")
}

/// The behaviour both stores share.
async fn contract(store: &dyn TaskStore, far: u64) {
    let a = record("a", far);
    store.compare_and_swap(None, a.clone()).await.unwrap();
    assert_eq!(store.load("a").await.unwrap(), Some(a.clone()));
    // Creation only when absent.
    assert_eq!(
        store.compare_and_swap(None, a.clone()).await,
        Err(StoreError::Conflict)
    );
    // Cancel wins; the worker's completion, written against the stale record, loses.
    let mut cancelled = a.clone();
    cancelled.detail = TaskDetail::Cancelled;
    store
        .compare_and_swap(Some(a.clone()), cancelled.clone())
        .await
        .unwrap();
    let mut completed = a.clone();
    completed.detail = TaskDetail::Completed {
        result: serde_json::from_str(r#"{"content":[]}"#).unwrap(),
    };
    assert_eq!(
        store.compare_and_swap(Some(a), completed).await,
        Err(StoreError::Conflict)
    );
    assert_eq!(store.load("a").await.unwrap(), Some(cancelled));
    assert_eq!(store.load("missing").await.unwrap(), None);
}

#[tokio::test]
async fn n40_n43_memory_and_redis_task_stores_share_the_compare_and_swap_contract() {
    let far = wall_ms() + 60_000;
    contract(&MemoryTaskStore::new(8), far).await;
    let Some((url, _guard)) = shared_redis() else {
        return;
    };
    let store = redis_store(&url, &unique_prefix("tasks")).await;
    contract(&store, far).await;
    assert!(store.key("abc").ends_with("task:{abc}"));
}

#[tokio::test]
async fn n44_redis_drops_a_task_record_at_its_purge_deadline() {
    let Some((url, _guard)) = shared_redis() else {
        return;
    };
    let store = redis_store(&url, &unique_prefix("tasks-expiry")).await;
    let soon = wall_ms() + 300;
    store
        .compare_and_swap(None, record("e", soon))
        .await
        .unwrap();
    // No fixed sleep: Redis expires the key on access by the same wall clock, so a load that
    // began by the deadline finds it and one that ended after it does not; poll until gone (a
    // generous bound, never an upper bound on the time taken).
    let bound = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let before = wall_ms();
        let found = store.load("e").await.unwrap();
        let after = wall_ms();
        match found {
            Some(_) => assert!(before <= soon, "still kept at {before}, past {soon}"),
            None => {
                assert!(after > soon, "gone at {after}, before {soon}");
                break;
            }
        }
        assert!(std::time::Instant::now() < bound, "never expired");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    // Sweep has nothing to report: Redis dropped the record itself.
    assert!(store.sweep(wall_ms()).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_server_serves_tasks_from_the_redis_store() {
    use serde_json::json;
    use strict_mcp::core::descriptor::ContentBlock;
    use strict_mcp::core::tasks::TaskMode;
    use strict_mcp::core::{DynamicOutput, RegistryBuilder, ToolDef};
    use strict_mcp::server::{Server, ServerOptions};
    let Some((url, _guard)) = shared_redis() else {
        return;
    };
    let store = redis_store(&url, &unique_prefix("tasks-server")).await;
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let g = Arc::clone(&gate);
    let tool = ToolDef::dynamic(
        "slow",
        r#"{"type":"object","properties":{},"additionalProperties":false}"#,
        None,
        move |_inv, _args| {
            let g = Arc::clone(&g);
            async move {
                g.acquire().await.expect("gate").forget();
                Ok(DynamicOutput {
                    content: vec![ContentBlock::text("done")],
                    structured: None,
                })
            }
        },
    )
    .task(TaskMode::Optional);
    let registry = RegistryBuilder::new().tool(tool).build().unwrap();
    let server = Server::new(
        registry,
        ServerOptions::new()
            .mode("direct")
            .task_store(Arc::new(store)),
    )
    .unwrap();
    let h = scale_support_harness(server);
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}});
    let (created, _) = h
        .request(
            "alice",
            "tools/call",
            json!({"name": "slow", "arguments": {}, "_meta": meta}),
        )
        .await;
    let id = created["result"]["taskId"]
        .as_str()
        .expect("a task")
        .to_owned();
    gate.add_permits(1);
    for _ in 0..500 {
        let (got, _) = h
            .request("alice", "tasks/get", json!({"taskId": id, "_meta": meta}))
            .await;
        if got["result"]["status"] == json!("completed") {
            assert_eq!(got["result"]["result"]["content"][0]["text"], json!("done"));
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the task never completed");
}

#[path = "support/harness.rs"]
#[allow(dead_code)]
mod harness;

fn scale_support_harness(server: strict_mcp::server::Server) -> harness::InMemory {
    harness::InMemory::new(server)
}
