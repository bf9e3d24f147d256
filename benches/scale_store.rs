//! The Redis ledger store against the in-memory one (#20), in one run on one machine: ledger
//! operations (create, load, compare-and-swap) and whole MRTR round trips (a `tools/call` that
//! asks, then its resume that completes) through `Server::serve`, with this process's CPU time
//! per round trip. Prints ratios against the in-memory store measured in the same run; nothing
//! asserts absolute numbers (they depend on the machine and whatever else it is doing).
//!
//! Run with `nice -n 10 cargo bench --features redis --bench scale_store`. Redis is
//! `MCP_TEST_REDIS_URL` (e.g. from `.ci/redis start DIR`), else a private `redis-server` this
//! bench starts on a free loopback port and stops by its pid. `SCALE_BENCH_SECONDS` sets the
//! window of each measurement (default 2).

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use strict_mcp::core::seal::{KeyRing, SealKey};
use strict_mcp::core::store::{LedgerStore, MemoryLedgerStore};
use strict_mcp::core::{Caller, Invocation, Outcome, Registry, RegistryBuilder, ToolDef};
use strict_mcp::machine::ledger::{
    Binding, Chain, ChainId, InputMethod, LedgerConfig, LedgerEvent,
};
use strict_mcp::machine::{Digest, Epoch, Tick};
use strict_mcp::scale::{RedisLedgerStore, RedisStoreConfig};
use strict_mcp::server::{Outbox, Reply, Server, ServerOptions};

/// How long a started redis-server may take to answer.
const REDIS_START_TIMEOUT: Duration = Duration::from_secs(10);

fn window() -> Duration {
    let secs = std::env::var("SCALE_BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(2);
    Duration::from_secs(secs.max(1))
}

/// This process's user + system CPU time (Linux `/proc/self/stat`, clock ticks of 10 ms).
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // After the command name: state is field 0, utime 11, stime 12.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

struct Measured {
    per_second: f64,
    cpu_per_op: Duration,
    ops: u64,
}

async fn measure<F, Fut>(mut op: F) -> Measured
where
    F: FnMut(u64) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for i in 0..200 {
        op(u64::MAX - i).await;
    }
    let window = window();
    let (start, cpu) = (Instant::now(), cpu_time());
    let mut ops = 0;
    while start.elapsed() < window {
        op(ops).await;
        ops += 1;
    }
    let elapsed = start.elapsed();
    let cpu = cpu_time().saturating_sub(cpu);
    Measured {
        per_second: ops as f64 / elapsed.as_secs_f64(),
        cpu_per_op: cpu / u32::try_from(ops.max(1)).unwrap_or(u32::MAX),
        ops,
    }
}

fn chain(n: u64) -> Chain {
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&n.to_be_bytes());
    id[8] = 0xbe;
    let binding = Binding {
        principal: Digest([1; 32]),
        method: InputMethod::ToolsCall,
        request: Digest([2; 32]),
    };
    Chain::new(
        ChainId(id),
        binding,
        Epoch(0),
        LedgerConfig::with_ttl(600_000),
    )
}

fn wall_now() -> Tick {
    Tick(
        u64::try_from(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .expect("after 1970")
                .as_millis(),
        )
        .expect("fits"),
    )
}

/// One ledger round as the server runs it: create (swap from absent), load, swap the asked
/// chain over the created one.
async fn ledger_round(store: &dyn LedgerStore, n: u64) {
    let now = wall_now();
    let fresh = chain(n);
    store
        .compare_and_swap(now, None, fresh.clone())
        .await
        .expect("create");
    let loaded = store.load(fresh.id()).await.expect("load").expect("kept");
    let mut asked = loaded.clone();
    let _ = asked.handle(
        now,
        LedgerEvent::HandlerAsked {
            prompt: b"{}".to_vec(),
        },
    );
    store
        .compare_and_swap(now, Some(loaded), asked)
        .await
        .expect("swap");
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct In {
    /// Anything.
    item: String,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Out {
    /// The item.
    done: String,
}

fn confirm() -> Value {
    json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]})
}

fn registry() -> Registry {
    RegistryBuilder::new()
        .tool(ToolDef::typed_interactive(
            "confirm",
            |inv: Invocation, input: In| async move {
                match inv.form_answer("ok", &confirm())? {
                    None => Ok(Outcome::input("ok", inv.elicit_form("Sure?", confirm())?)),
                    Some(_) => Ok(Outcome::Complete(Out { done: input.item })),
                }
            },
        ))
        .build()
        .expect("registry builds")
}

#[derive(Default)]
struct Last(std::sync::Mutex<Option<Reply>>);

impl Outbox for Last {
    fn notify(&self, _line: String) -> bool {
        true
    }
    fn finish(&self, reply: Reply) {
        *self.0.lock().expect("lock") = Some(reply);
    }
}

async fn call(server: &Server, params: Value) -> Value {
    let line = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let message = strict_mcp::codec::decode(line.to_string().as_bytes(), &server.ingress_limits())
        .expect("a valid request");
    let outbox = Arc::new(Last::default());
    server
        .serve(
            Caller::new("bench"),
            message,
            outbox.clone(),
            Default::default(),
        )
        .await;
    let reply = outbox.0.lock().expect("lock").take().expect("a reply");
    serde_json::from_str(&reply.line).expect("JSON")
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    })
}

/// A whole MRTR round trip: the call asks, the resume completes.
async fn round_trip(server: &Server) {
    let asked = call(
        server,
        json!({"name": "confirm", "arguments": {"item": "x"}, "_meta": meta()}),
    )
    .await;
    let state = asked["result"]["requestState"]
        .as_str()
        .expect("a requestState")
        .to_owned();
    let done = call(
        server,
        json!({"name": "confirm", "arguments": {"item": "x"}, "_meta": meta(),
               "inputResponses": {"ok": {"action": "accept", "content": {"ok": true}}},
               "requestState": state}),
    )
    .await;
    assert_eq!(
        done["result"]["structuredContent"],
        json!({"value": {"done": "x"}}),
        "{done}"
    );
}

fn server(store: Arc<dyn LedgerStore>) -> Server {
    let options = ServerOptions::new()
        .key_ring(KeyRing::new(SealKey::new(1, [3; 32])))
        .ledger_store(store)
        .mode("direct");
    Server::new(registry(), options).expect("server builds")
}

/// A private redis-server, killed by its pid on drop.
struct RedisChild(Child);

impl Drop for RedisChild {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn redis() -> (String, Option<RedisChild>) {
    if let Ok(url) = std::env::var("MCP_TEST_REDIS_URL") {
        if !url.is_empty() {
            return (url, None);
        }
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("redis-server starts (install it or set MCP_TEST_REDIS_URL)");
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < REDIS_START_TIMEOUT,
            "redis-server did not listen"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    (
        format!("redis://127.0.0.1:{port}/"),
        Some(RedisChild(child)),
    )
}

fn row(label: &str, store: &str, m: &Measured, base: &Measured) {
    println!(
        "{label:<22} {store:<7} {:>10.0} /s  {:>9.1} µs CPU/op  {:>6.3}× memory's rate  {:>6.2}× memory's CPU  ({} ops)",
        m.per_second,
        m.cpu_per_op.as_secs_f64() * 1e6,
        m.per_second / base.per_second,
        m.cpu_per_op.as_secs_f64() / base.cpu_per_op.as_secs_f64().max(1e-9),
        m.ops
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let (url, _child) = redis();
    let mut config = RedisStoreConfig::new(url);
    let mut tag = [0u8; 6];
    getrandom::getrandom(&mut tag).expect("entropy");
    config.prefix = format!(
        "bench:{}:",
        tag.iter().map(|b| format!("{b:02x}")).collect::<String>()
    );
    let redis: Arc<dyn LedgerStore> = Arc::new(
        RedisLedgerStore::connect(config)
            .await
            .expect("redis store connects"),
    );
    // Large enough that the measured window never fills it (a full store would evict).
    let memory: Arc<dyn LedgerStore> = Arc::new(MemoryLedgerStore::new(10_000_000));

    println!(
        "scale_store bench: window {:?} per row; one process, current-thread runtime",
        window()
    );
    let mem_ledger = measure(|n| {
        let s = Arc::clone(&memory);
        async move { ledger_round(s.as_ref(), n).await }
    })
    .await;
    let redis_ledger = measure(|n| {
        let s = Arc::clone(&redis);
        async move { ledger_round(s.as_ref(), n).await }
    })
    .await;
    let mem_server = server(Arc::clone(&memory));
    let redis_server = server(Arc::clone(&redis));
    let mem_mrtr = measure(|_| {
        let s = mem_server.clone();
        async move { round_trip(&s).await }
    })
    .await;
    let redis_mrtr = measure(|_| {
        let s = redis_server.clone();
        async move { round_trip(&s).await }
    })
    .await;
    row("ledger create+load+cas", "memory", &mem_ledger, &mem_ledger);
    row(
        "ledger create+load+cas",
        "redis",
        &redis_ledger,
        &mem_ledger,
    );
    row("mrtr round trip", "memory", &mem_mrtr, &mem_mrtr);
    row("mrtr round trip", "redis", &redis_mrtr, &mem_mrtr);
}
