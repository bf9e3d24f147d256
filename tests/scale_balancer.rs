//! Three instances behind a real round-robin balancer (#20): Debian's nginx (installed by
//! `.ci/nginx install`), started by this test on a loopback port with a generated config, stopped
//! by its pid, in front of three `Server`s on their own loopback HTTP listeners, all sharing one
//! Redis (ledger store and listen event bus) and one key ring.
//!
//! - An MRTR chain whose three rounds land on three different instances completes exactly once.
//! - A replay of its state is refused (`already_completed`, nothing run) on every instance.
//! - A listen stream held on one instance sees an update published through another.
//! - `scale::Readiness` is mounted on each instance's real listener at `/ready` and reachable
//!   through nginx per instance. Open-source nginx has passive health checks only: it cannot
//!   probe `/ready` itself. Its health decision here is passive on the same condition `/ready`
//!   reports as `draining`: an instance that shut down answers 503, and nginx
//!   (`proxy_next_upstream … http_503 non_idempotent`, `max_fails=1`) sends the request on to the
//!   next instance and takes the failed one out of rotation. That retry is safe because a 503
//!   from admission means the request never ran.
//! - The shutdown of one instance invalidates the chains that instance issued and no other:
//!   a pending chain issued by another instance still completes through the balancer.
//! - Redis stopped mid-chain: the resume through the balancer is the retryable
//!   `state_unavailable` and runs nothing, `/ready` answers `store-unavailable`, and a listen
//!   stream held through nginx ends with -32603 `bus_unavailable`.

#![forbid(unsafe_code)]

mod scale_support;

use std::convert::Infallible;
use std::net::TcpListener as StdListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Either, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use strict_mcp::core::descriptor::ResourceContents;
use strict_mcp::core::seal::{KeyRing, SealKey};
use strict_mcp::core::store::LedgerStore;
use strict_mcp::core::{
    Invocation, Outcome, ReadReply, Registry, RegistryBuilder, ResourceDef, ToolDef,
};
use strict_mcp::scale::{Readiness, RedisEventBus, RedisLedgerStore, RedisStoreConfig};
use strict_mcp::server::http::{serve, HttpConfig, McpHttp, OnPaths};
use strict_mcp::server::{Server, ServerOptions};

const PV: &str = "2026-07-28";

/// How long nginx may take to listen.
const NGINX_START_TIMEOUT: Duration = Duration::from_secs(10);

/// Bound of every exchange through the balancer (never a hang).
const EXCHANGE_WAIT: Duration = Duration::from_secs(10);

const NAMES: [&str; 3] = ["a", "b", "c"];

/// Concurrent resumes of one final round through the balancer (O53): repeats, and the seed of
/// the jitter that staggers the second request of each pair by 0–2 ms (a reproducible spread
/// of interleavings).
const BALANCED_RACE_REPEATS: usize = 10;
const BALANCED_RACE_SEED: u64 = 20;

/// Tries (100 ms apart) for a new chain once Redis is back: the store's connection repairs
/// itself with backoff (`DEFAULT_BACKOFF_MAX` = 2 s), so 5 s is ample.
const REDIS_BACK_ATTEMPTS: usize = 50;

/// The side effects every instance counts together.
#[derive(Default)]
struct Probes {
    deleted: AtomicUsize,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct DeleteIn {
    /// What to delete.
    item: String,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct DeleteOut {
    /// What was deleted.
    deleted: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct TouchIn {}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct TouchOut {
    /// The instance that published.
    by: String,
}

fn confirm_schema() -> Value {
    json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]})
}

/// `delete` asks twice (two rounds of input, three requests), then deletes once; `touch`
/// publishes `resources/updated` for `mem://a` from the instance that serves it.
fn registry(probes: &Arc<Probes>, me: &Arc<OnceLock<Server>>, name: &'static str) -> Registry {
    let probes = Arc::clone(probes);
    let me = Arc::clone(me);
    RegistryBuilder::new()
        .tool(ToolDef::typed_interactive(
            "delete",
            move |inv: Invocation, input: DeleteIn| {
                let probes = Arc::clone(&probes);
                async move {
                    if inv.form_answer("confirm", &confirm_schema())?.is_none() {
                        return Ok(Outcome::input(
                            "confirm",
                            inv.elicit_form("Really delete?", confirm_schema())?,
                        ));
                    }
                    if inv.form_answer("again", &confirm_schema())?.is_none() {
                        return Ok(Outcome::input(
                            "again",
                            inv.elicit_form("Really, really?", confirm_schema())?,
                        ));
                    }
                    probes.deleted.fetch_add(1, Ordering::SeqCst);
                    Ok(Outcome::Complete(DeleteOut {
                        deleted: input.item,
                    }))
                }
            },
        ))
        .tool(ToolDef::typed(
            "touch",
            move |_inv: Invocation, _: TouchIn| {
                let me = Arc::clone(&me);
                async move {
                    if let Some(server) = me.get() {
                        server.resource_updated("mem://a");
                    }
                    Ok(TouchOut { by: name.into() })
                }
            },
        ))
        .resource(ResourceDef::new("mem://a", "a", |_inv, uri| async move {
            Ok(ReadReply::new(vec![ResourceContents::text(uri, "a")]))
        }))
        .build()
        .expect("registry builds")
}

fn free_port() -> u16 {
    StdListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

/// nginx started by this test, killed by its pid on drop.
struct Nginx {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
}

/// True when nginx can be run; under `CI=true` its absence fails the test.
fn nginx_available() -> bool {
    let ok = Command::new("nginx")
        .arg("-v")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            !scale_support::ci(),
            "nginx is missing and CI=true: run .ci/nginx install"
        );
        eprintln!("SKIPPED: nginx is not installed (not CI)");
    }
    ok
}

impl Nginx {
    fn start(upstreams: &[(&str, u16)]) -> Nginx {
        let port = free_port();
        let dir =
            std::env::temp_dir().join(format!("strict-mcp-nginx-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let d = dir.display();
        let servers: String = upstreams
            .iter()
            .map(|(_, p)| format!("    server 127.0.0.1:{p} max_fails=1 fail_timeout=30s;\n"))
            .collect();
        let ready: String = upstreams
            .iter()
            .map(|(n, p)| {
                format!("    location = /ready/{n} {{ proxy_pass http://127.0.0.1:{p}/ready; }}\n")
            })
            .collect();
        // One process (no master, no daemon) so the child's pid is nginx itself.
        let conf = format!(
            "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\n\
             error_log {d}/error.log warn;\nevents {{ worker_connections 256; }}\nhttp {{\n\
             access_log {d}/access.log;\nclient_body_temp_path {d}/body;\nproxy_temp_path {d}/proxy;\n\
             fastcgi_temp_path {d}/fastcgi;\nuwsgi_temp_path {d}/uwsgi;\nscgi_temp_path {d}/scgi;\n\
             upstream fleet {{\n{servers}}}\nserver {{\n    listen 127.0.0.1:{port};\n\
             location = /mcp {{\n        proxy_pass http://fleet;\n        proxy_http_version 1.1;\n\
             proxy_set_header Connection \"\";\n        proxy_set_header Host $http_host;\n\
             proxy_buffering off;\n        proxy_read_timeout 30s;\n\
             proxy_next_upstream error timeout http_503 non_idempotent;\n    }}\n{ready}}}\n}}\n"
        );
        std::fs::write(dir.join("nginx.conf"), conf).expect("nginx.conf");
        let child = Command::new("nginx")
            .arg("-p")
            .arg(&dir)
            .arg("-e")
            .arg(dir.join("error.log"))
            .arg("-c")
            .arg(dir.join("nginx.conf"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nginx starts");
        let nginx = Nginx {
            child: Some(child),
            port,
            dir,
        };
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                start.elapsed() < NGINX_START_TIMEOUT,
                "nginx did not listen on {port}: {}",
                std::fs::read_to_string(nginx.dir.join("error.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        nginx
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

type Body = Either<Full<Bytes>, strict_mcp::server::http::HttpBody>;

/// Serves one instance: `/mcp` and `/ready` on a loopback listener; returns its port.
async fn serve_instance(server: Server, store: Arc<dyn LedgerStore>) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let mcp = McpHttp::new(server.clone(), HttpConfig::default());
    let ready = Readiness::new(server, store);
    let service = tower::service_fn(move |request: Request<Incoming>| {
        let mcp = mcp.clone();
        let ready = ready.clone();
        async move {
            Ok::<Response<Body>, Infallible>(if request.uri().path() == "/ready" {
                ready.respond().await.map(Either::Left)
            } else {
                mcp.handle(request).await.map(Either::Right)
            })
        }
    });
    tokio::spawn(serve(
        listener,
        OnPaths::new(["/mcp", "/ready"], service),
        std::future::pending(),
    ));
    port
}

struct Fleet {
    servers: Vec<Server>,
    probes: Arc<Probes>,
    nginx: Nginx,
    client: Client<HttpConnector, Full<Bytes>>,
    /// A private Redis: the test stops it at the end.
    redis: scale_support::RedisProc,
}

async fn fleet() -> Option<Fleet> {
    if !nginx_available() {
        return None;
    }
    if !scale_support::redis_available() {
        return None;
    }
    let redis = scale_support::RedisProc::start(&[]);
    let url = redis.url();
    let prefix = scale_support::unique_prefix("balancer");
    let ring = KeyRing::new(SealKey::new(9, [0x5a; 32]));
    let probes = Arc::new(Probes::default());
    let mut servers = Vec::new();
    let mut upstreams = Vec::new();
    for name in NAMES {
        let mut config = RedisStoreConfig::new(url.clone());
        config.prefix = prefix.clone();
        let store: Arc<dyn LedgerStore> = Arc::new(
            RedisLedgerStore::connect(config.clone())
                .await
                .expect("store"),
        );
        let bus = Arc::new(RedisEventBus::connect(config).await.expect("bus"));
        let me = Arc::new(OnceLock::new());
        let options = ServerOptions::new()
            .server_info(name, "1")
            .key_ring(ring.clone())
            .ledger_store(Arc::clone(&store))
            .event_bus(bus)
            .mode("direct");
        let server = Server::new(registry(&probes, &me, name), options).expect("server");
        let _ = me.set(server.clone());
        upstreams.push((name, serve_instance(server.clone(), store).await));
        servers.push(server);
    }
    let nginx = Nginx::start(&upstreams);
    Some(Fleet {
        servers,
        probes,
        nginx,
        client: Client::builder(TokioExecutor::new()).build_http(),
        redis,
    })
}

fn body(id: u32, method: &str, params: Value) -> String {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": PV,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

impl Fleet {
    fn request(&self, method: &str, name: Option<&str>, body: String) -> Request<Full<Bytes>> {
        let mut r = Request::post(format!("http://127.0.0.1:{}/mcp", self.nginx.port))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", PV)
            .header("mcp-method", method);
        if let Some(name) = name {
            r = r.header("mcp-name", name);
        }
        r.body(Full::new(Bytes::from(body))).expect("request")
    }

    /// One `tools/call` through nginx; the reply and the name of the instance that answered.
    async fn call(&self, id: u32, tool: &str, params: Value) -> (Value, String) {
        let mut params = params;
        params["name"] = json!(tool);
        let request = self.request("tools/call", Some(tool), body(id, "tools/call", params));
        let response = tokio::time::timeout(EXCHANGE_WAIT, self.client.request(request))
            .await
            .expect("answered in time")
            .expect("answered");
        let bytes = tokio::time::timeout(EXCHANGE_WAIT, response.into_body().collect())
            .await
            .expect("body in time")
            .expect("body")
            .to_bytes();
        let reply: Value = serde_json::from_slice(&bytes).expect("a JSON reply");
        // A JSON-RPC error names no instance.
        let by = reply["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        (reply, by)
    }

    async fn ready(&self, name: &str) -> (StatusCode, String) {
        let request = Request::get(format!("http://127.0.0.1:{}/ready/{name}", self.nginx.port))
            .body(Full::new(Bytes::new()))
            .expect("request");
        let response = tokio::time::timeout(EXCHANGE_WAIT, self.client.request(request))
            .await
            .expect("answered in time")
            .expect("answered");
        let status = response.status();
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        (status, String::from_utf8_lossy(&bytes).into_owned())
    }

    fn deleted(&self) -> usize {
        self.probes.deleted.load(Ordering::SeqCst)
    }
}

/// Reads the stream until `needle` was seen (within [`EXCHANGE_WAIT`]).
async fn read_until(stream: &mut Incoming, seen: &mut String, needle: &str) {
    let deadline = Instant::now() + EXCHANGE_WAIT;
    while !seen.contains(needle) {
        let left = deadline.saturating_duration_since(Instant::now());
        let frame = tokio::time::timeout(left, stream.frame())
            .await
            .unwrap_or_else(|_| panic!("{needle} not seen in {seen}"))
            .expect("the stream stays open")
            .expect("a frame");
        if let Ok(data) = frame.into_data() {
            seen.push_str(&String::from_utf8_lossy(&data));
        }
    }
}

fn delete() -> Value {
    json!({"arguments": {"item": "x"}})
}

fn answer(state: &str, key: &str) -> Value {
    let mut responses = json!({"confirm": {"action": "accept", "content": {"ok": true}}});
    if key == "again" {
        responses["again"] = json!({"action": "accept", "content": {"ok": true}});
    }
    json!({"arguments": {"item": "x"}, "inputResponses": responses, "requestState": state})
}

fn state_of(reply: &Value) -> String {
    assert_eq!(reply["result"]["resultType"], "input_required", "{reply}");
    reply["result"]["requestState"]
        .as_str()
        .expect("a sealed requestState")
        .to_owned()
}

fn already_completed() -> Value {
    json!({"failure": {"code": "already_completed",
                       "message": "The operation already completed; it is not run again.",
                       "retryable": false}})
}

/// #20, O53, K2: rounds on three instances, replays refused on each, a listen on one instance
/// sees a publish through another, readiness through the balancer, and one instance's shutdown
/// affects its own chains only while nginx routes around it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_instances_behind_nginx_round_robin() {
    let Some(mut f) = fleet().await else {
        return;
    };
    for name in NAMES {
        assert_eq!(f.ready(name).await, (StatusCode::OK, "ready\n".into()));
    }

    // One chain, three rounds, three instances (nginx round-robin over sequential requests).
    let (first, on1) = f.call(1, "delete", delete()).await;
    assert!(!on1.is_empty(), "{first}");
    let (second, on2) = f
        .call(2, "delete", answer(&state_of(&first), "confirm"))
        .await;
    let last_state = state_of(&second);
    let (done, on3) = f.call(3, "delete", answer(&last_state, "again")).await;
    assert_eq!(
        done["result"]["structuredContent"],
        json!({"value": {"deleted": "x"}}),
        "{done}"
    );
    let mut rounds = vec![on1.clone(), on2, on3];
    rounds.sort();
    assert_eq!(rounds, NAMES, "each round on another instance");
    assert_eq!(f.deleted(), 1);

    // The completed chain's state replayed through the balancer lands on every instance; none
    // runs the operation again (O53: recovery-only dispatch answers already_completed).
    let mut replayed_on = Vec::new();
    for id in 4..7 {
        let (reply, by) = f.call(id, "delete", answer(&last_state, "again")).await;
        assert_eq!(
            reply["result"]["structuredContent"],
            already_completed(),
            "{reply}"
        );
        assert_eq!(reply["result"]["isError"], true);
        replayed_on.push(by);
    }
    replayed_on.sort();
    assert_eq!(replayed_on, NAMES, "the replay reached every instance");
    assert_eq!(f.deleted(), 1);

    // The same final round resumed concurrently through the balancer (round-robin sends the
    // pair to two instances): the operation runs once per chain; the other request is refused
    // (in flight) or answered as a replay (already completed), never run.
    let mut rng = BALANCED_RACE_SEED;
    let mut id = 100;
    for repeat in 0..BALANCED_RACE_REPEATS {
        let (first, _) = f.call(id, "delete", delete()).await;
        let (second, _) = f
            .call(id + 1, "delete", answer(&state_of(&first), "confirm"))
            .await;
        let state = state_of(&second);
        rng = rng
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let jitter = Duration::from_micros((rng >> 33) % 2_000);
        let before = f.deleted();
        let one = f.call(id + 2, "delete", answer(&state, "again"));
        let two = async {
            tokio::time::sleep(jitter).await;
            f.call(id + 3, "delete", answer(&state, "again")).await
        };
        let ((r1, _), (r2, _)) = tokio::join!(one, two);
        assert_eq!(f.deleted(), before + 1, "repeat {repeat}: dispatched once");
        let done = json!({"value": {"deleted": "x"}});
        let completed = [&r1, &r2]
            .iter()
            .filter(|r| r["result"]["structuredContent"] == done)
            .count();
        assert_eq!(completed, 1, "repeat {repeat}: {r1} / {r2}");
        for r in [&r1, &r2] {
            let ok = r["result"]["structuredContent"] == done
                || r["result"]["structuredContent"] == already_completed()
                || r["error"]["data"]["reason"] == "state_rejected";
            assert!(ok, "repeat {repeat}: {r}");
        }
        id += 4;
    }
    let chains = 1 + BALANCED_RACE_REPEATS;
    assert_eq!(f.deleted(), chains);

    // A listen stream held by one instance sees an update published through another.
    let listen = f.request(
        "subscriptions/listen",
        None,
        body(
            7,
            "subscriptions/listen",
            json!({"notifications": {"resourceSubscriptions": ["mem://a"]}}),
        ),
    );
    let response = tokio::time::timeout(EXCHANGE_WAIT, f.client.request(listen))
        .await
        .expect("answered in time")
        .expect("answered");
    assert_eq!(response.status(), StatusCode::OK);
    let mut stream = response.into_body();
    let mut seen = String::new();
    read_until(
        &mut stream,
        &mut seen,
        "notifications/subscriptions/acknowledged",
    )
    .await;
    let holder: Vec<&str> = NAMES
        .iter()
        .zip(&f.servers)
        .filter(|(_, s)| s.status().listen_streams == 1)
        .map(|(n, _)| *n)
        .collect();
    assert_eq!(holder.len(), 1, "one instance holds the stream");
    let (touched, by) = f.call(id, "touch", json!({"arguments": {}})).await;
    id += 1;
    assert_eq!(touched["result"]["structuredContent"]["value"]["by"], by);
    assert_ne!(by, holder[0], "published through another instance");
    read_until(
        &mut stream,
        &mut seen,
        r#""method":"notifications/resources/updated","params":{"uri":"mem://a""#,
    )
    .await;
    drop(stream);

    // A chain pending on `a` and one pending on `c`, then `c` shuts down.
    let mut pending = std::collections::BTreeMap::new();
    while pending.len() < NAMES.len() {
        let (reply, by) = f.call(id, "delete", delete()).await;
        pending.insert(by, state_of(&reply));
        id += 1;
    }
    let c = &f.servers[2];
    c.shutdown(Duration::from_secs(1)).await;
    let (status, why) = f.ready("c").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(why == "stopped\n" || why == "draining\n", "{why}");
    // nginx routes around `c` (its 503 is retried on the next instance): every call succeeds
    // and none is served by `c`.
    for _ in 0..4 {
        let (reply, by) = f.call(id, "touch", json!({"arguments": {}})).await;
        assert!(reply.get("result").is_some(), "{reply}");
        assert_ne!(by, "c");
        id += 1;
    }
    // The documented effect: the chains `c` issued are invalidated, wherever they resume...
    let (refused, _) = f.call(id, "delete", answer(&pending["c"], "confirm")).await;
    assert_eq!(
        refused["error"]["data"],
        json!({"reason": "state_rejected", "retryable": false}),
        "{refused}"
    );
    id += 1;
    // ...and no other: `a`'s and `b`'s pending chains still run to completion.
    for name in ["a", "b"] {
        let (next, _) = f
            .call(id, "delete", answer(&pending[name], "confirm"))
            .await;
        let (done, _) = f
            .call(id + 1, "delete", answer(&state_of(&next), "again"))
            .await;
        assert_eq!(
            done["result"]["structuredContent"],
            json!({"value": {"deleted": "x"}}),
            "{name}: {done}"
        );
        id += 2;
    }
    assert_eq!(f.deleted(), chains + 2);
    assert_eq!(f.ready("a").await, (StatusCode::OK, "ready\n".into()));

    // Redis stopped mid-chain, seen through the balancer: the resume is the typed retryable
    // failure and runs nothing, /ready says why, and a held listen stream ends with -32603
    // `bus_unavailable` on its own id (an SSE event), never silently.
    let (asked, _) = f.call(id, "delete", delete()).await;
    let state = state_of(&asked);
    id += 1;
    let listen = f.request(
        "subscriptions/listen",
        None,
        body(
            id,
            "subscriptions/listen",
            json!({"notifications": {"resourceSubscriptions": ["mem://a"]}}),
        ),
    );
    let response = tokio::time::timeout(EXCHANGE_WAIT, f.client.request(listen))
        .await
        .expect("answered in time")
        .expect("answered");
    let mut stream = response.into_body();
    let mut seen = String::new();
    read_until(
        &mut stream,
        &mut seen,
        "notifications/subscriptions/acknowledged",
    )
    .await;
    f.redis.stop();
    read_until(
        &mut stream,
        &mut seen,
        &format!(
            r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32603,"message":"The listen event bus is unavailable; listen again.","data":{{"reason":"bus_unavailable","retryable":true}}}}}}"#
        ),
    )
    .await;
    id += 1;
    let (refused, _) = f.call(id, "delete", answer(&state, "confirm")).await;
    assert_eq!(
        refused["error"],
        json!({"code": -32603,
               "message": "The request state could not be checked right now; retry the call.",
               "data": {"reason": "state_unavailable", "retryable": true}}),
        "{refused}"
    );
    assert_eq!(f.deleted(), chains + 2, "nothing ran");
    let (status, why) = f.ready("a").await;
    assert_eq!(
        (status, why.as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, "store-unavailable\n")
    );
    // Redis back (empty: nothing persisted): once the connections are repaired, new chains
    // work again through the balancer; the old state's chain is gone, so it stays refused.
    f.redis.restart();
    let mut started = None;
    for _ in 0..REDIS_BACK_ATTEMPTS {
        id += 1;
        let (reply, _) = f.call(id, "delete", delete()).await;
        if reply["result"]["resultType"] == "input_required" {
            started = Some(state_of(&reply));
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let fresh = started.expect("new chains work once Redis is back");
    let (next, _) = f.call(id + 1, "delete", answer(&fresh, "confirm")).await;
    let (done, _) = f
        .call(id + 2, "delete", answer(&state_of(&next), "again"))
        .await;
    assert_eq!(
        done["result"]["structuredContent"],
        json!({"value": {"deleted": "x"}}),
        "{done}"
    );
    assert_eq!(f.deleted(), chains + 3);
    let (stale, _) = f.call(id + 3, "delete", answer(&state, "confirm")).await;
    assert_eq!(
        stale["error"]["data"]["reason"], "state_rejected",
        "{stale}"
    );
    assert_eq!(f.deleted(), chains + 3);
}
