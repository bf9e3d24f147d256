//! A redis-server for the scale tests: the one `.ci/redis` started (`MCP_TEST_REDIS_URL`), or a
//! private one this process starts on a free loopback port and kills when dropped. A missing
//! `redis-server` fails the test under `CI=true` and skips it (loudly) elsewhere.

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a started redis-server may take to answer.
pub const REDIS_START_TIMEOUT: Duration = Duration::from_secs(10);

/// A redis-server child process, killed on drop.
pub struct RedisProc {
    child: Option<Child>,
    /// Its loopback port.
    pub port: u16,
    dir: PathBuf,
    extra: Vec<String>,
}

/// Whether a missing peer must fail instead of skipping.
pub fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// True when `redis-server` can be run; under `CI=true` its absence panics.
pub fn redis_available() -> bool {
    let ok = Command::new("redis-server")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            !ci(),
            "redis-server is missing and CI=true: run .ci/redis or install it"
        );
        eprintln!("SKIPPED: redis-server is not installed (not CI)");
    }
    ok
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

impl RedisProc {
    /// Starts a private server; `extra` are further `redis-server` arguments.
    pub fn start(extra: &[&str]) -> RedisProc {
        let dir = std::env::temp_dir().join(format!(
            "strict-mcp-redis-{}-{}",
            std::process::id(),
            free_port()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let mut p = RedisProc {
            child: None,
            port: free_port(),
            dir,
            extra: extra.iter().map(|s| (*s).to_owned()).collect(),
        };
        p.restart();
        p
    }

    /// `redis://127.0.0.1:PORT/`
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Kills the server (by its pid) and waits for it.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the server again on the same port (an empty one: nothing is persisted).
    pub fn restart(&mut self) {
        self.stop();
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        self.child = Some(child);
        let start = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                start.elapsed() < REDIS_START_TIMEOUT,
                "redis-server did not listen on {}",
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for RedisProc {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The shared server: `MCP_TEST_REDIS_URL`, else a private one (kept alive by the guard).
pub fn shared_redis() -> Option<(String, Option<RedisProc>)> {
    if let Ok(url) = std::env::var("MCP_TEST_REDIS_URL") {
        if !url.is_empty() {
            return Some((url, None));
        }
    }
    if !redis_available() {
        return None;
    }
    let p = RedisProc::start(&[]);
    Some((p.url(), Some(p)))
}

/// A key prefix of its own per test, so tests can share one server.
pub fn unique_prefix(test: &str) -> String {
    let mut r = [0u8; 6];
    getrandom::getrandom(&mut r).expect("entropy");
    let hex: String = r.iter().map(|b| format!("{b:02x}")).collect();
    format!("t:{test}:{hex}:")
}
