//! The host's hook for legacy Streamable HTTP (feature `legacy`): reads the two session
//! headers, asks [`crate::server::legacy::Sessions`] and writes its answer. The session rules
//! themselves live in [`crate::server::legacy::sessions`].

use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::{Response, StatusCode};

use super::response::{json_response, plain};
use super::HttpBody;
use crate::core::Caller;
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

/// A non-POST request with a session id: the session's answer, or `None` for the modern 405.
pub(super) fn other_method(
    server: Option<&Server>,
    head: &hyper::http::request::Parts,
) -> Option<Response<HttpBody>> {
    let server = server?;
    let session_id = text(&head.headers, SESSION_ID_HEADER)?;
    let caller = head
        .extensions
        .get::<Caller>()
        .cloned()
        .unwrap_or_else(Caller::anonymous);
    server
        .legacy_sessions()
        .other_method(server, &caller, head.method.as_str(), session_id)
        .map(response)
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
