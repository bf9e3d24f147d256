//! The OAuth client's pluggable pieces for real deployments: the `0600` file token store and
//! the loopback-listener user step (RFC 8252 §7.3). Loopback only; every wait is bounded.
#![forbid(unsafe_code)]
#![cfg(all(feature = "client-auth", unix))]

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use strict_mcp::client::auth::{
    AuthError, FileTokenStore, LoopbackUserStep, Secret, TokenFileError, TokenKey, TokenStore,
    Tokens, UserStep, CALLBACK_READ_TIMEOUT, MAX_CALLBACK_REQUEST_BYTES, MAX_CALLBACK_WAIT,
    MAX_TOKEN_FILE_BYTES,
};

// ---------------------------------------------------------------------------------------------
// The file token store

/// A fresh directory under the system's temporary directory, removed on drop.
struct TempDir(PathBuf);
impl TempDir {
    fn new(tag: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir =
            std::env::temp_dir().join(format!("strict-mcp-{tag}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
    fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn key(resource: &str) -> TokenKey {
    TokenKey {
        issuer: "http://127.0.0.1:9000".into(),
        resource: resource.into(),
    }
}

fn tokens(access: &str) -> Tokens {
    Tokens {
        access_token: Secret::new(access),
        refresh_token: Some(Secret::new(format!("{access}-refresh"))),
        expires_at: Some(Instant::now() + Duration::from_secs(3600)),
        scope: Some("mcp:use".into()),
        dpop_jkt: None,
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn document(access: &str) -> String {
    format!(
        r#"{{"version":1,"tokens":[{{"issuer":"http://127.0.0.1:9000","resource":"http://127.0.0.1:8123/mcp","access_token":"{access}"}}]}}"#
    )
}

#[test]
fn file_store_creates_a_0600_file_in_a_0700_directory_and_round_trips() {
    let dir = TempDir::new("store");
    let path = dir.join("config/strict-mcp/tokens.json");
    let store = FileTokenStore::open(&path).unwrap();
    assert!(!path.exists(), "nothing is written before the first save");
    store.save(&key("http://127.0.0.1:8123/mcp"), tokens("tok-a"));
    assert_eq!(store.last_error(), None);
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(path.parent().unwrap()), 0o700);
    // Keyed by issuer and resource: another resource is its own entry.
    store.save(&key("http://127.0.0.1:8124/mcp"), tokens("tok-b"));

    let reopened = FileTokenStore::open(&path).unwrap();
    let a = reopened.load(&key("http://127.0.0.1:8123/mcp")).unwrap();
    assert_eq!(a.access_token.expose(), "tok-a");
    assert_eq!(
        a.refresh_token.as_ref().map(Secret::expose),
        Some("tok-a-refresh")
    );
    assert_eq!(a.scope.as_deref(), Some("mcp:use"));
    let left = a.expires_at.unwrap().duration_since(Instant::now());
    assert!(
        left > Duration::from_secs(3590) && left <= Duration::from_secs(3600),
        "{left:?}"
    );
    assert_eq!(
        reopened
            .load(&key("http://127.0.0.1:8124/mcp"))
            .unwrap()
            .access_token
            .expose(),
        "tok-b"
    );
    let other_issuer = TokenKey {
        issuer: "http://127.0.0.1:9001".into(),
        resource: "http://127.0.0.1:8123/mcp".into(),
    };
    assert!(reopened.load(&other_issuer).is_none());
    reopened.remove(&key("http://127.0.0.1:8124/mcp"));
    let again = FileTokenStore::open(&path).unwrap();
    assert!(again.load(&key("http://127.0.0.1:8124/mcp")).is_none());
    assert!(again.load(&key("http://127.0.0.1:8123/mcp")).is_some());
    // No token in Debug; no temporary file left behind.
    let shown = format!("{again:?}");
    assert!(!shown.contains("tok-"), "{shown}");
    let names: Vec<String> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["tokens.json"]);
}

#[test]
fn file_store_refuses_a_file_others_can_access() {
    let dir = TempDir::new("mode");
    let path = dir.join("tokens.json");
    std::fs::write(&path, document("t")).unwrap();
    for (bits, refused) in [
        (0o600, false),
        (0o400, false),
        (0o640, true),
        (0o604, true),
        (0o610, true),
        (0o601, true),
        (0o666, true),
    ] {
        chmod(&path, bits);
        let result = FileTokenStore::open(&path);
        if refused {
            assert_eq!(
                result.err(),
                Some(TokenFileError::Permissions {
                    path: path.clone(),
                    mode: bits
                }),
                "{bits:o}"
            );
        } else {
            assert!(result.is_ok(), "{bits:o}");
        }
    }
}

#[test]
fn file_store_never_writes_over_a_file_widened_after_it_was_opened() {
    let dir = TempDir::new("widened");
    let path = dir.join("tokens.json");
    std::fs::write(&path, document("old")).unwrap();
    chmod(&path, 0o600);
    let store = FileTokenStore::open(&path).unwrap();
    chmod(&path, 0o644);
    store.save(&key("http://127.0.0.1:8123/mcp"), tokens("new"));
    assert_eq!(
        store.last_error(),
        Some(TokenFileError::Permissions {
            path: path.clone(),
            mode: 0o644
        })
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), document("old"));
    // The token is still usable for this run, and the error text carries no token.
    assert!(store.load(&key("http://127.0.0.1:8123/mcp")).is_some());
    assert!(!store.last_error().unwrap().to_string().contains("new"));
}

#[test]
fn file_store_refuses_links_directories_and_malformed_documents() {
    let dir = TempDir::new("shape");
    let target = dir.join("real.json");
    std::fs::write(&target, document("t")).unwrap();
    chmod(&target, 0o600);
    let link = dir.join("link.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    assert_eq!(
        FileTokenStore::open(&link).err(),
        Some(TokenFileError::NotAFile { path: link.clone() })
    );
    let sub = dir.join("sub");
    std::fs::create_dir(&sub).unwrap();
    assert_eq!(
        FileTokenStore::open(&sub).err(),
        Some(TokenFileError::NotAFile { path: sub.clone() })
    );
    let duplicate = r#"{"version":1,"tokens":[
        {"issuer":"i","resource":"r","access_token":"a"},
        {"issuer":"i","resource":"r","access_token":"b"}]}"#;
    for bad in [
        "not json",
        r#"{"version":2,"tokens":[]}"#,
        r#"{"version":1,"tokens":[],"extra":1}"#,
        r#"{"version":1,"tokens":[{"issuer":"i","resource":"r"}]}"#,
        duplicate,
    ] {
        let path = dir.join("bad.json");
        std::fs::write(&path, bad).unwrap();
        chmod(&path, 0o600);
        assert_eq!(
            FileTokenStore::open(&path).err(),
            Some(TokenFileError::Malformed { path }),
            "{bad}"
        );
    }
}

#[test]
fn file_store_size_bound_at_and_one_past_max_token_file_bytes() {
    let dir = TempDir::new("size");
    let path = dir.join("tokens.json");
    let body = document("t");
    let padded = |len: u64| {
        let mut text = body.clone();
        text.push_str(&" ".repeat(usize::try_from(len).unwrap() - body.len()));
        text
    };
    std::fs::write(&path, padded(MAX_TOKEN_FILE_BYTES)).unwrap();
    chmod(&path, 0o600);
    let store = FileTokenStore::open(&path).unwrap();
    assert_eq!(
        store
            .load(&key("http://127.0.0.1:8123/mcp"))
            .unwrap()
            .access_token
            .expose(),
        "t"
    );
    std::fs::write(&path, padded(MAX_TOKEN_FILE_BYTES + 1)).unwrap();
    assert_eq!(
        FileTokenStore::open(&path).err(),
        Some(TokenFileError::TooLarge { path: path.clone() })
    );
    // A store that would grow past the bound is not written.
    let fresh = dir.join("big.json");
    let store = FileTokenStore::open(&fresh).unwrap();
    let huge = "x".repeat(usize::try_from(MAX_TOKEN_FILE_BYTES).unwrap());
    store.save(&key("http://127.0.0.1:8123/mcp"), tokens(&huge));
    assert_eq!(
        store.last_error(),
        Some(TokenFileError::TooLarge {
            path: fresh.clone()
        })
    );
    assert!(!fresh.exists());
}

// ---------------------------------------------------------------------------------------------
// The loopback user step

/// Sends raw bytes to the listener and returns the status code of its answer.
async fn send_raw(port: u16, request: &[u8]) -> u16 {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    stream.write_all(request).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut answer))
        .await
        .expect("the listener answers")
        .unwrap();
    let text = String::from_utf8_lossy(&answer);
    text.split(' ').nth(1).unwrap_or("0").parse().unwrap()
}

async fn get(port: u16, target: &str) -> u16 {
    send_raw(
        port,
        format!("GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n").as_bytes(),
    )
    .await
}

const AUTHORIZE: &str =
    "http://127.0.0.1:9000/authorize?response_type=code&client_id=c&state=s-123&resource=r";

/// A step with a capturing URL callback; returns it, its port and what it was handed.
fn step(wait: Duration) -> (Arc<LoopbackUserStep>, u16, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let step = LoopbackUserStep::bind()
        .unwrap()
        .wait(wait)
        .on_url(move |url| sink.lock().unwrap().push(url.to_owned()));
    let port: u16 = step
        .redirect_uri()
        .strip_prefix("http://127.0.0.1:")
        .and_then(|rest| rest.strip_suffix("/callback"))
        .unwrap()
        .parse()
        .unwrap();
    (Arc::new(step), port, seen)
}

fn start(step: &Arc<LoopbackUserStep>) -> tokio::task::JoinHandle<Result<String, AuthError>> {
    let step = step.clone();
    tokio::spawn(async move {
        let redirect = step.redirect_uri();
        step.authorize(AUTHORIZE, &redirect).await
    })
}

#[tokio::test]
async fn loopback_redirect_uri_is_the_bound_loopback_port() {
    let (step, port, _) = step(Duration::from_secs(1));
    assert_ne!(port, 0);
    assert_eq!(
        step.redirect_uri(),
        format!("http://127.0.0.1:{port}/callback")
    );
    // Something is listening there, on 127.0.0.1 only.
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
}

#[tokio::test]
async fn loopback_accepts_exactly_one_callback_with_the_right_state() {
    let (step, port, seen) = step(Duration::from_secs(20));
    let waiting = start(&step);
    // The URL is handed over, never opened by the step (polled for at least 20 s: only a
    // hang stopper; 100 polls, about 1 s, could be used up on a loaded machine).
    for _ in 0..2000 {
        if !seen.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(*seen.lock().unwrap(), [AUTHORIZE]);
    // Tampered, missing or repeated state, another path, another method: refused, still
    // waiting.
    assert_eq!(get(port, "/callback?code=c&state=s-124").await, 400);
    assert_eq!(get(port, "/callback?code=c").await, 400);
    assert_eq!(
        get(port, "/callback?code=c&state=s-123&state=s-123").await,
        400
    );
    assert_eq!(get(port, "/favicon.ico").await, 404);
    assert_eq!(
        send_raw(port, b"POST /callback?state=s-123 HTTP/1.1\r\n\r\n").await,
        405
    );
    assert!(!waiting.is_finished());
    assert_eq!(get(port, "/callback?code=the-code&state=s-123").await, 200);
    let url = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(
        url,
        format!("http://127.0.0.1:{port}/callback?code=the-code&state=s-123")
    );
}

#[tokio::test]
async fn loopback_times_out_at_the_bound() {
    // 2 s: the wrong callback sent 100 ms in (and the right one of the second round) must
    // land inside the wait on a loaded machine too (it was 400 ms, a 300 ms margin).
    let wait = Duration::from_secs(2);
    let (step, port, _) = step(wait);
    let begun = Instant::now();
    let waiting = start(&step);
    // A wrong callback does not end the wait (the outcome is still the time-out).
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(get(port, "/callback?state=nope").await, 400);
    // Only a hang stopper: the wait ends by itself after `wait`.
    let outcome = tokio::time::timeout(Duration::from_secs(30), waiting)
        .await
        .unwrap()
        .unwrap();
    let took = begun.elapsed();
    assert_eq!(
        outcome.err(),
        Some(AuthError::CallbackTimeout { waited_ms: 2000 })
    );
    assert!(took >= wait, "{took:?}");
    // The same step serves the next authorization; inside the bound the callback wins.
    let waiting = start(&step);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(get(port, "/callback?state=s-123&code=c").await, 200);
    assert!(waiting.await.unwrap().is_ok());
    // A wait past the maximum is clamped to it.
    let clamped = LoopbackUserStep::bind()
        .unwrap()
        .wait(MAX_CALLBACK_WAIT + Duration::from_secs(1));
    assert!(
        format!("{clamped:?}").contains(&format!("wait: {MAX_CALLBACK_WAIT:?}")),
        "{clamped:?}"
    );
}

/// A request head of exactly `len` bytes whose target carries the right state.
fn head_of(port: u16, len: usize) -> Vec<u8> {
    let start =
        format!("GET /callback?state=s-123&code=c HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Pad: ");
    let end = "\r\n\r\n";
    let pad = len - start.len() - end.len();
    format!("{start}{}{end}", "a".repeat(pad)).into_bytes()
}

#[tokio::test]
async fn loopback_request_size_bound_at_and_one_past() {
    let (step, port, _) = step(Duration::from_secs(20));
    let waiting = start(&step);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        send_raw(port, &head_of(port, MAX_CALLBACK_REQUEST_BYTES + 1)).await,
        431
    );
    assert!(!waiting.is_finished());
    assert_eq!(
        send_raw(port, &head_of(port, MAX_CALLBACK_REQUEST_BYTES)).await,
        200
    );
    assert!(waiting.await.unwrap().is_ok());
}

#[tokio::test]
async fn loopback_an_idle_connection_does_not_hold_the_listener() {
    let (step, port, _) = step(Duration::from_secs(20));
    let waiting = start(&step);
    tokio::time::sleep(Duration::from_millis(50)).await;
    // A pre-connection that never sends a byte.
    let _idle = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let begun = Instant::now();
    assert_eq!(get(port, "/callback?state=s-123&code=c").await, 200);
    assert!(waiting.await.unwrap().is_ok());
    assert!(
        begun.elapsed() < CALLBACK_READ_TIMEOUT,
        "served concurrently"
    );
}

#[tokio::test]
async fn loopback_refuses_a_foreign_redirect_uri_or_an_authorization_url_without_state() {
    let (step, port, seen) = step(Duration::from_secs(1));
    assert_eq!(
        step.authorize(
            AUTHORIZE,
            &format!("http://127.0.0.1:{}/callback", port.wrapping_add(1))
        )
        .await
        .err(),
        Some(AuthError::RedirectUriMismatch)
    );
    assert_eq!(
        step.authorize(
            "http://127.0.0.1:9000/authorize?client_id=c",
            &step.redirect_uri()
        )
        .await
        .err(),
        Some(AuthError::StateMismatch)
    );
    assert!(seen.lock().unwrap().is_empty(), "nothing was handed out");
}
