//! [`LoopbackUserStep`]: the user step for command-line and desktop clients (RFC 8252 §7.3).
//!
//! It binds `127.0.0.1` on a port the system picks, so the redirect URI is
//! `http://127.0.0.1:<port>/callback` (an IP literal, never `localhost`, which a hosts file
//! could point elsewhere). For each authorization it hands the URL to a callback (by default
//! printed to standard error; it never starts a browser itself) and waits, at most
//! [`DEFAULT_CALLBACK_WAIT`] (configurable up to [`MAX_CALLBACK_WAIT`]), for the browser to
//! come back. It accepts exactly one callback: a `GET` of the callback path whose single
//! `state` equals the one in the authorization URL. Anything else (another path, another
//! method, a missing, repeated or wrong `state`: a stray tab or a forged request) is answered
//! with an error page and the wait goes on. Each request head is read under
//! [`MAX_CALLBACK_REQUEST_BYTES`] and [`CALLBACK_READ_TIMEOUT`], with at most
//! [`MAX_CALLBACK_CONNECTIONS`] connections open at once, so an idle or flooding local
//! process cannot hold the listener or the memory.

use std::fmt;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::task::JoinSet;

use super::fetch::BoxFuture;
use super::flow::UserStep;
use super::AuthError;

/// Default time the listener waits for the browser to return: long enough to sign in and
/// approve, short enough that an abandoned run ends.
pub const DEFAULT_CALLBACK_WAIT: Duration = Duration::from_secs(300);

/// Longest wait a configuration may ask for ([`LoopbackUserStep::wait`] clamps to it): a
/// listening port should not outlive the user's attention by hours.
pub const MAX_CALLBACK_WAIT: Duration = Duration::from_secs(3600);

/// Largest request head (request line and headers) read from one connection; a browser's
/// callback is well under 4 KiB.
pub const MAX_CALLBACK_REQUEST_BYTES: usize = 8 * 1024;

/// Longest time one connection may take to send its request head (a browser's speculative
/// pre-connection sends nothing; it must not keep a slot forever).
pub const CALLBACK_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Most connections handled at once; more wait to be accepted.
pub const MAX_CALLBACK_CONNECTIONS: usize = 8;

/// The redirect URI's path.
pub const CALLBACK_PATH: &str = "/callback";

type OnUrl = Arc<dyn Fn(&str) + Send + Sync>;

/// A user step that listens on loopback for the authorization server's redirect; see the
/// module docs.
pub struct LoopbackUserStep {
    listener: std::net::TcpListener,
    port: u16,
    wait: Duration,
    on_url: OnUrl,
    /// One authorization at a time: two waits on one port would race for the callback.
    busy: tokio::sync::Mutex<()>,
}

impl fmt::Debug for LoopbackUserStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoopbackUserStep")
            .field("redirect_uri", &self.redirect_uri())
            .field("wait", &self.wait)
            .finish_non_exhaustive()
    }
}

impl LoopbackUserStep {
    /// Binds `127.0.0.1:0`.
    ///
    /// # Errors
    /// [`AuthError::CallbackListener`] when the port cannot be bound.
    pub fn bind() -> Result<Self, AuthError> {
        let listener = std::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .map_err(listener_error)?;
        let port = listener.local_addr().map_err(listener_error)?.port();
        Ok(LoopbackUserStep {
            listener,
            port,
            wait: DEFAULT_CALLBACK_WAIT,
            on_url: Arc::new(|url| eprintln!("Open this URL in a browser to authorize:\n{url}")),
            busy: tokio::sync::Mutex::new(()),
        })
    }

    /// The redirect URI to register and send: `http://127.0.0.1:<port>/callback`.
    #[must_use]
    pub fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{CALLBACK_PATH}", self.port)
    }

    /// How long one authorization waits for the callback (default
    /// [`DEFAULT_CALLBACK_WAIT`], at most [`MAX_CALLBACK_WAIT`]).
    #[must_use]
    pub fn wait(mut self, wait: Duration) -> Self {
        self.wait = wait.min(MAX_CALLBACK_WAIT);
        self
    }

    /// What to do with the authorization URL (default: print it to standard error). A
    /// desktop application opens the browser here; the step itself never does.
    #[must_use]
    pub fn on_url(mut self, on_url: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.on_url = Arc::new(on_url);
        self
    }

    async fn run(&self, url: &str, redirect_uri: &str) -> Result<String, AuthError> {
        if redirect_uri != self.redirect_uri() {
            return Err(AuthError::RedirectUriMismatch);
        }
        let state = single_param(query_of(url), "state")
            .ok_or(AuthError::StateMismatch)?
            .into_owned();
        let _one = self.busy.lock().await;
        let listener = self
            .listener
            .try_clone()
            .and_then(tokio::net::TcpListener::from_std)
            .map_err(listener_error)?;
        (self.on_url)(url);
        let deadline = tokio::time::Instant::now() + self.wait;
        let state: Arc<str> = Arc::from(state);
        let mut open = JoinSet::new();
        loop {
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => {
                    return Err(AuthError::CallbackTimeout {
                        waited_ms: u64::try_from(self.wait.as_millis()).unwrap_or(u64::MAX),
                    });
                }
                accepted = listener.accept(), if open.len() < MAX_CALLBACK_CONNECTIONS => {
                    // A failed accept (e.g. the peer reset first) is that connection's end.
                    if let Ok((stream, _)) = accepted {
                        open.spawn(serve_one(stream, state.clone()));
                    }
                }
                Some(done) = open.join_next(), if !open.is_empty() => {
                    if let Ok(Some(target)) = done {
                        return Ok(format!("http://127.0.0.1:{}{target}", self.port));
                    }
                }
            }
        }
    }
}

impl UserStep for LoopbackUserStep {
    fn authorize<'a>(
        &'a self,
        url: &'a str,
        redirect_uri: &'a str,
    ) -> BoxFuture<'a, Result<String, AuthError>> {
        Box::pin(self.run(url, redirect_uri))
    }
}

fn listener_error(e: std::io::Error) -> AuthError {
    AuthError::CallbackListener { kind: e.kind() }
}

fn query_of(url: &str) -> &str {
    let url = url.split('#').next().unwrap_or_default();
    url.split_once('?').map_or("", |(_, q)| q)
}

/// The value of `name` when the query has it exactly once.
fn single_param<'q>(query: &'q str, name: &str) -> Option<std::borrow::Cow<'q, str>> {
    let mut found = None;
    for (n, v) in form_urlencoded::parse(query.as_bytes()) {
        if n == name {
            if found.is_some() {
                return None;
            }
            found = Some(v);
        }
    }
    found
}

/// What one connection asked for, judged.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    /// The callback: its request target.
    Accept(String),
    /// Refused with this status and page; the wait goes on.
    Refuse(u16, &'static str),
}

/// Judges a complete request head.
fn judge(head: &[u8], state: &str) -> Verdict {
    let line = head.split(|&b| b == b'\r').next().unwrap_or_default();
    let Ok(line) = std::str::from_utf8(line) else {
        return Verdict::Refuse(400, "Bad request.");
    };
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(_version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Verdict::Refuse(400, "Bad request.");
    };
    if method != "GET" {
        return Verdict::Refuse(405, "Only GET is accepted here.");
    }
    let path = target.split('?').next().unwrap_or_default();
    if path != CALLBACK_PATH {
        return Verdict::Refuse(404, "Not found.");
    }
    match single_param(query_of(target), "state") {
        Some(got) if got == state => Verdict::Accept(target.to_owned()),
        _ => Verdict::Refuse(
            400,
            "This authorization response does not belong to the waiting request.",
        ),
    }
}

/// Reads one request head under the bounds, answers it, and returns the target when it is
/// the callback.
async fn serve_one(mut stream: tokio::net::TcpStream, state: Arc<str>) -> Option<String> {
    let mut head = Vec::with_capacity(1024);
    let read = tokio::time::timeout(CALLBACK_READ_TIMEOUT, async {
        let mut chunk = [0u8; 1024];
        loop {
            if let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
                return Some(end + 4);
            }
            if head.len() >= MAX_CALLBACK_REQUEST_BYTES {
                return Some(usize::MAX);
            }
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return None,
                Ok(n) => head.extend_from_slice(&chunk[..n]),
            }
        }
    })
    .await;
    let verdict = match read {
        Ok(Some(end)) if end <= MAX_CALLBACK_REQUEST_BYTES => judge(&head[..end], &state),
        Ok(Some(_)) => Verdict::Refuse(431, "Request header fields too large."),
        // Timed out or closed early: nothing to answer.
        Ok(None) | Err(_) => return None,
    };
    let (status, text, accepted) = match verdict {
        Verdict::Accept(target) => (
            200,
            "Authorization complete. You may close this window.",
            Some(target),
        ),
        Verdict::Refuse(status, text) => (status, text, None),
    };
    let reason = match status {
        200 => "OK",
        404 => "Not Found",
        405 => "Method Not Allowed",
        431 => "Request Header Fields Too Large",
        _ => "Bad Request",
    };
    let body = format!("<!doctype html><title>{reason}</title><p>{text}</p>\n");
    let response = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\n\
         Content-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let oversized = status == 431;
    let _ = tokio::time::timeout(CALLBACK_READ_TIMEOUT, async {
        let _ = stream.write_all(response.as_bytes()).await;
        let _ = stream.shutdown().await;
        if oversized {
            // Read (and drop) what is still in flight, within the same bounds, so closing
            // with unread bytes does not reset the connection before the answer is read.
            let mut chunk = [0u8; 1024];
            let mut drained = 0;
            while drained < MAX_CALLBACK_REQUEST_BYTES {
                match stream.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => drained += n,
                }
            }
        }
    })
    .await;
    accepted
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(line: &str) -> Vec<u8> {
        format!("{line}\r\nHost: 127.0.0.1\r\n\r\n").into_bytes()
    }

    #[test]
    fn only_a_get_of_the_callback_with_the_one_right_state_is_accepted() {
        let ok = "GET /callback?code=c&state=s1 HTTP/1.1";
        assert_eq!(
            judge(&head(ok), "s1"),
            Verdict::Accept("/callback?code=c&state=s1".into())
        );
        for (line, status) in [
            ("GET /callback?code=c&state=s2 HTTP/1.1", 400),
            ("GET /callback?code=c HTTP/1.1", 400),
            ("GET /callback?state=s1&state=s1 HTTP/1.1", 400),
            ("GET /callback?state=s HTTP/1.1", 400),
            ("POST /callback?state=s1 HTTP/1.1", 405),
            ("GET /favicon.ico HTTP/1.1", 404),
            ("GET /callbackx?state=s1 HTTP/1.1", 404),
            ("GET /callback?state=s1", 400),
            ("garbage", 400),
        ] {
            assert!(
                matches!(judge(&head(line), "s1"), Verdict::Refuse(s, _) if s == status),
                "{line}"
            );
        }
    }
}
