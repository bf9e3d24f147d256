//! The host's hook for legacy Streamable HTTP (feature `legacy`): reads the two session
//! headers, asks [`crate::server::legacy::Sessions`] and writes its answer. The session rules
//! themselves live in [`crate::server::legacy::sessions`].

use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::{Response, StatusCode};

use std::sync::Arc;

use super::response::{json_response, plain, CancelGuard, Shared, SseBody};
use super::HttpBody;
use crate::core::Caller;
use crate::core::CancelToken;
use crate::server::legacy::notify::SessionStream;
use crate::server::legacy::sessions::Answer;
pub(super) use crate::server::legacy::sessions::Post;
use crate::server::Server;
use crate::wire::jsonrpc::Message;

/// The session header of the 2025 transports.
pub const SESSION_ID_HEADER: &str = "mcp-session-id";

fn text<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    // An unreadable value is passed on as one that matches no session.
    headers
        .get(name)
        .map(|v| v.to_str().unwrap_or("\u{0}unreadable"))
}

/// The legacy decision for one decoded POST (`server` is `None` without the switch).
pub(super) fn post(
    server: Option<&Server>,
    headers: &HeaderMap,
    caller: &Caller,
    message: Message,
) -> Post {
    let Some(server) = server else {
        return Post::Modern(message);
    };
    server.legacy_sessions().post(
        server,
        caller,
        text(headers, SESSION_ID_HEADER),
        text(headers, super::PROTOCOL_VERSION_HEADER),
        message,
    )
}

/// A body the codec refused: a legacy session's response to a request the server sent is
/// answered here (202, or the session's refusal); `None` leaves the rejection to the host.
pub(super) fn client_response(
    server: Option<&Server>,
    headers: &HeaderMap,
    caller: &Caller,
    body: &[u8],
    rejection: &crate::codec::Rejection,
    limits: &crate::codec::IngressLimits,
) -> Option<Response<HttpBody>> {
    let server = server?;
    server
        .legacy_sessions()
        .client_response(
            server,
            caller,
            text(headers, SESSION_ID_HEADER),
            body,
            rejection,
            limits,
        )
        .map(response)
}

/// A non-POST request with a session id: the session's answer (GET: its standalone SSE
/// stream), or `None` for the modern 405.
pub(super) fn other_method(
    server: Option<&Server>,
    head: &hyper::http::request::Parts,
    config: &super::HttpConfig,
) -> Option<Response<HttpBody>> {
    let server = server?;
    let session_id = text(&head.headers, SESSION_ID_HEADER)?;
    let caller = head
        .extensions
        .get::<Caller>()
        .cloned()
        .unwrap_or_else(Caller::anonymous);
    if head.method == hyper::Method::GET && !server.legacy_sessions().config().stateless {
        return Some(standalone(server, &caller, session_id, head, config));
    }
    server
        .legacy_sessions()
        .other_method(server, &caller, head.method.as_str(), session_id)
        .map(response)
}

/// A session's standalone stream: an SSE body with keep-alives and no reply, fed by the
/// session's notifications until the client leaves or the session ends.
fn standalone(
    server: &Server,
    caller: &Caller,
    session_id: &str,
    head: &hyper::http::request::Parts,
    config: &super::HttpConfig,
) -> Response<HttpBody> {
    let accepts_sse = head
        .headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("text/event-stream"));
    if !accepts_sse {
        return super::response::refusal(
            crate::wire::errors::Cause::NotAcceptable,
            None,
            "Accept must list text/event-stream",
        );
    }
    let shared = Arc::new(Shared::new(
        CancelToken::new(),
        config.max_queued_notifications.max(1),
    ));
    let stream = Arc::new(Standalone(Arc::clone(&shared)));
    if let Err(answer) = server
        .legacy_sessions()
        .open_stream(server, caller, session_id, stream)
    {
        return response(answer);
    }
    super::service::sse_response(SseBody {
        shared: Arc::clone(&shared),
        guard: CancelGuard {
            shared,
            armed: true,
        },
        orphan_line: String::new(),
        keep_alive: tokio::time::interval_at(
            tokio::time::Instant::now() + config.keep_alive,
            config.keep_alive,
        ),
        done: false,
    })
}

/// The standalone stream as a session stream.
struct Standalone(Arc<Shared>);

impl SessionStream for Standalone {
    fn send(&self, line: String) -> bool {
        crate::server::Outbox::notify(&*self.0, line)
    }
    fn is_open(&self) -> bool {
        !self.0.is_gone()
    }
    fn close(&self) {
        self.0.close();
    }
}

/// The HTTP response for an [`Answer`].
pub(super) fn response(answer: Answer) -> Response<HttpBody> {
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut r = match answer.body {
        Some(line) => json_response(answer.status, line),
        None => plain(status),
    };
    if let Some(id) = answer
        .session_id
        .and_then(|s| HeaderValue::from_str(&s).ok())
    {
        r.headers_mut()
            .insert(HeaderName::from_static(SESSION_ID_HEADER), id);
    }
    if let Some(allow) = answer.allow {
        r.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static(allow));
    }
    r
}
