//! The one mapping from an error *cause* to its JSON-RPC code and HTTP status, for both roles.
//!
//! The same code can travel with different statuses (an unknown tool is -32602 with HTTP 200,
//! missing `_meta` is -32602 with HTTP 400), so a server asks this table instead of deriving a
//! status from a code, and a client asks it whether the (code, status) pair it received is one
//! the table allows ([`Cause::judge`]). stdio ignores the status. Encoding an error reply is
//! [`crate::codec::egress::encode_error`], the only error encoder.

use crate::wire::jsonrpc::ErrorCode;

/// Why a message was refused (or answered with an error). One variant per row of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Cause {
    /// The frame is not UTF-8 JSON: -32700, 400.
    Parse,
    /// Valid JSON that is not a valid JSON-RPC message, or a bound was exceeded: -32600, 400.
    InvalidRequest,
    /// Unknown, removed or unadvertised method: -32601, 404.
    MethodNotFound,
    /// Required `_meta` (protocolVersion, clientCapabilities) missing or malformed: -32602, 400.
    MissingMeta,
    /// Parameters of a known method are invalid (bad cursor, malformed envelope) (E-section): -32602, 200.
    InvalidParams,
    /// Unknown or hidden tool, prompt or resource; indistinguishable on purpose : -32602, 200.
    UnknownTarget,
    /// The requested protocol revision is not served: -32022, 400.
    UnsupportedVersion,
    /// The request needs a client capability it did not declare: -32021, 400.
    MissingCapability,
    /// An HTTP protocol header is missing, malformed or disagrees with the body: -32020, 400.
    HeaderMismatch,
    /// An unexpected failure inside the server; the private cause is never sent: -32603, 500.
    Internal,
    /// The request body exceeds the ingress bound: -32600, 413.
    BodyTooLarge,
    /// A present `Origin` is not allowed: no code, 403.
    OriginRejected,
    /// The `Host` header is not on the allow-list (DNS rebinding): no code, 403.
    HostRejected,
    /// GET, DELETE or another non-POST method on the endpoint: no code, 405.
    MethodNotAllowed,
    /// `Accept` does not list both `application/json` and `text/event-stream`: -32600, 406.
    NotAcceptable,
    /// The body is not declared as `application/json`: -32600, 415.
    UnsupportedMediaType,
    /// Shutdown has begun and the request was not admitted : -32603, 503.
    ShuttingDown,
    /// The HTTP request body stalled past the host's read time-out: -32600, 408.
    BodyTimeout,
    /// The HTTP host is at its connection limit and refused a new connection: -32603, 503.
    Overloaded,
}

impl Cause {
    /// Every cause, for exhaustive table tests.
    pub const ALL: [Cause; 19] = [
        Cause::Parse,
        Cause::InvalidRequest,
        Cause::MethodNotFound,
        Cause::MissingMeta,
        Cause::InvalidParams,
        Cause::UnknownTarget,
        Cause::UnsupportedVersion,
        Cause::MissingCapability,
        Cause::HeaderMismatch,
        Cause::Internal,
        Cause::BodyTooLarge,
        Cause::OriginRejected,
        Cause::HostRejected,
        Cause::MethodNotAllowed,
        Cause::NotAcceptable,
        Cause::UnsupportedMediaType,
        Cause::ShuttingDown,
        Cause::BodyTimeout,
        Cause::Overloaded,
    ];

    /// The JSON-RPC code this cause is reported with, if it is reported with a JSON-RPC body.
    pub const fn code(self) -> Option<ErrorCode> {
        Some(match self {
            Cause::Parse => ErrorCode::ParseError,
            Cause::InvalidRequest
            | Cause::BodyTooLarge
            | Cause::NotAcceptable
            | Cause::UnsupportedMediaType
            | Cause::BodyTimeout => ErrorCode::InvalidRequest,
            Cause::MethodNotFound => ErrorCode::MethodNotFound,
            Cause::MissingMeta | Cause::InvalidParams | Cause::UnknownTarget => {
                ErrorCode::InvalidParams
            }
            Cause::UnsupportedVersion => ErrorCode::UnsupportedProtocolVersion,
            Cause::MissingCapability => ErrorCode::MissingRequiredClientCapability,
            Cause::HeaderMismatch => ErrorCode::HeaderMismatch,
            Cause::Internal | Cause::ShuttingDown | Cause::Overloaded => ErrorCode::InternalError,
            Cause::OriginRejected | Cause::HostRejected | Cause::MethodNotAllowed => return None,
        })
    }

    /// The HTTP status this cause is answered with on Streamable HTTP.
    pub const fn http_status(self) -> u16 {
        match self {
            Cause::Parse | Cause::InvalidRequest => 400,
            Cause::MethodNotFound => 404,
            Cause::MissingMeta
            | Cause::UnsupportedVersion
            | Cause::MissingCapability
            | Cause::HeaderMismatch => 400,
            Cause::InvalidParams | Cause::UnknownTarget => 200,
            Cause::Internal => 500,
            Cause::BodyTooLarge => 413,
            Cause::OriginRejected | Cause::HostRejected => 403,
            Cause::MethodNotAllowed => 405,
            Cause::NotAcceptable => 406,
            Cause::UnsupportedMediaType => 415,
            Cause::ShuttingDown | Cause::Overloaded => 503,
            Cause::BodyTimeout => 408,
        }
    }

    /// How a client reads a JSON-RPC error it received over HTTP with `status`: the causes
    /// whose row has this code and this status. Empty means the pair breaks the table (for
    /// example -32020 with 200), which a strict client reports as a diagnostic; a code the
    /// table does not define (an application code, retired -32002) gives no cause either.
    pub fn judge(code: i64, status: u16) -> Vec<Cause> {
        Cause::ALL
            .into_iter()
            .filter(|c| c.code().map(ErrorCode::code) == Some(code) && c.http_status() == status)
            .collect()
    }

    /// The cause a codec-level error code stands for when nothing more specific is known.
    pub const fn from_code(code: ErrorCode) -> Cause {
        match code {
            ErrorCode::ParseError => Cause::Parse,
            ErrorCode::InvalidRequest => Cause::InvalidRequest,
            ErrorCode::MethodNotFound => Cause::MethodNotFound,
            ErrorCode::InvalidParams => Cause::InvalidParams,
            ErrorCode::InternalError => Cause::Internal,
            ErrorCode::HeaderMismatch => Cause::HeaderMismatch,
            ErrorCode::MissingRequiredClientCapability => Cause::MissingCapability,
            ErrorCode::UnsupportedProtocolVersion => Cause::UnsupportedVersion,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row of the table, written out once (interfaces.md "Errors and HTTP status").
    #[test]
    fn cause_table_every_row() {
        let rows: [(Cause, Option<i64>, u16); 19] = [
            (Cause::Parse, Some(-32700), 400),
            (Cause::InvalidRequest, Some(-32600), 400),
            (Cause::MethodNotFound, Some(-32601), 404),
            (Cause::MissingMeta, Some(-32602), 400),
            (Cause::InvalidParams, Some(-32602), 200),
            (Cause::UnknownTarget, Some(-32602), 200),
            (Cause::UnsupportedVersion, Some(-32022), 400),
            (Cause::MissingCapability, Some(-32021), 400),
            (Cause::HeaderMismatch, Some(-32020), 400),
            (Cause::Internal, Some(-32603), 500),
            (Cause::BodyTooLarge, Some(-32600), 413),
            (Cause::OriginRejected, None, 403),
            (Cause::HostRejected, None, 403),
            (Cause::MethodNotAllowed, None, 405),
            (Cause::NotAcceptable, Some(-32600), 406),
            (Cause::UnsupportedMediaType, Some(-32600), 415),
            (Cause::ShuttingDown, Some(-32603), 503),
            (Cause::BodyTimeout, Some(-32600), 408),
            (Cause::Overloaded, Some(-32603), 503),
        ];
        assert_eq!(rows.len(), Cause::ALL.len());
        for (cause, code, status) in rows {
            assert_eq!(cause.code().map(|c| c.code()), code, "{cause:?}");
            assert_eq!(cause.http_status(), status, "{cause:?}");
        }
    }

    #[test]
    fn d32_client_judges_received_code_status_pairs() {
        assert_eq!(Cause::judge(-32020, 400), vec![Cause::HeaderMismatch]);
        assert_eq!(Cause::judge(-32020, 200), vec![]);
        assert_eq!(
            Cause::judge(-32602, 200),
            vec![Cause::InvalidParams, Cause::UnknownTarget]
        );
        assert_eq!(Cause::judge(-32602, 400), vec![Cause::MissingMeta]);
        assert_eq!(Cause::judge(-32600, 413), vec![Cause::BodyTooLarge]);
        assert_eq!(Cause::judge(-32002, 200), vec![]);
    }

    #[test]
    fn every_code_maps_back_to_a_cause_with_that_code() {
        for code in ErrorCode::ALL {
            assert_eq!(Cause::from_code(code).code(), Some(code));
        }
    }
}
