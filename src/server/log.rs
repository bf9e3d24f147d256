//! Per-request logging (L-section): the core's [`LogSink`] wired to the request's own outbox.
//!
//! Installed only for a request whose `_meta` carries `logLevel`; messages below that level
//! are dropped, nothing goes out after the reply, and never on a listen stream. At most
//! [`MAX_LOG_NOTIFICATIONS_PER_REQUEST`] messages go out per request (a rate limit).
//!
//! Beside the client's log channel, every request ends with one `tracing` event for the
//! operator, on the target [`COMPLETION_TARGET`].

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::Value;

use super::encode::encode_notification;
use super::Outbox;
use crate::core::{CancelToken, LogLevel, LogSink};

/// The most `notifications/message` one request may emit; later messages are dropped with one
/// tracing warning, so a chatty handler cannot flood the client.
pub const MAX_LOG_NOTIFICATIONS_PER_REQUEST: usize = 100;

/// The `tracing` target of the one completion event each request ends with (an `INFO` event,
/// "request completed"): its fields are `method`, `name` (the tool or prompt name, compact
/// mode's wrapped tool included, or the resource URI; empty for other methods; at most
/// [`MAX_LOGGED_NAME`] bytes), `latency_us` (from arrival to the reply, in microseconds),
/// `outcome` (`result`, `tool_error`, `error`, `cancelled`, `silent` or `panicked`) and
/// `code` (the JSON-RPC error code of an `error` or `panicked` request, else 0).
/// Filter on it as `strict_mcp::request=info`.
pub const COMPLETION_TARGET: &str = "strict_mcp::request";

/// Longest `name` a completion event carries, in bytes: the name comes from the client, so
/// one event stays one short line however long the name it sent (cut at a character
/// boundary).
pub const MAX_LOGGED_NAME: usize = 128;

/// The log channel of one request.
pub(crate) struct RequestLog {
    threshold: LogLevel,
    outbox: Arc<dyn Outbox>,
    /// The request's cancellation: fired when the outbox reports the peer gone.
    gone: CancelToken,
    sent: AtomicUsize,
    closed: AtomicBool,
}

impl RequestLog {
    pub(crate) fn new(
        threshold: LogLevel,
        outbox: Arc<dyn Outbox>,
        gone: CancelToken,
    ) -> Arc<RequestLog> {
        Arc::new(RequestLog {
            threshold,
            outbox,
            gone,
            sent: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
        })
    }

    /// The request is answered or cancelled: nothing more goes out (before the response).
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }
}

impl LogSink for RequestLog {
    fn log(&self, level: LogLevel, logger: Option<&str>, data: &Value) {
        if level < self.threshold || self.closed.load(Ordering::Acquire) {
            return;
        }
        let n = self.sent.fetch_add(1, Ordering::AcqRel);
        if n >= MAX_LOG_NOTIFICATIONS_PER_REQUEST {
            if n == MAX_LOG_NOTIFICATIONS_PER_REQUEST {
                tracing::warn!(
                    limit = MAX_LOG_NOTIFICATIONS_PER_REQUEST,
                    "log notifications for this request dropped past the limit"
                );
            }
            return;
        }
        let params = crate::wire::logging::message_params(level, logger, data);
        match encode_notification(crate::wire::methods::MESSAGE, &params) {
            Some(line) => {
                if !self.outbox.notify(line) {
                    self.gone.cancel();
                }
            }
            None => tracing::warn!("log notification over its bound dropped"),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use serde_json::json;

    use super::*;
    use crate::server::Reply;

    #[derive(Default)]
    struct Collect(Mutex<Vec<String>>);

    impl Outbox for Collect {
        fn notify(&self, line: String) -> bool {
            self.0.lock().unwrap().push(line);
            true
        }
        fn finish(&self, _reply: Reply) {}
    }

    fn channel(threshold: LogLevel) -> (Arc<Collect>, Arc<RequestLog>) {
        let out = Arc::new(Collect::default());
        let log = RequestLog::new(
            threshold,
            Arc::clone(&out) as Arc<dyn Outbox>,
            CancelToken::new(),
        );
        (out, log)
    }

    /// at or above the threshold only, exact payload, `logger` absent when not given.
    #[test]
    fn l2_l4_threshold_and_exact_payload() {
        let (out, log) = channel(LogLevel::Warning);
        log.log(LogLevel::Info, Some("a"), &json!("below"));
        log.log(LogLevel::Warning, None, &json!({"n": 1}));
        log.log(LogLevel::Emergency, Some("b"), &json!(null));
        assert_eq!(
            *out.0.lock().unwrap(),
            vec![
                r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"data":{"n":1},"level":"warning"}}"#,
                r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"data":null,"level":"emergency","logger":"b"}}"#,
            ]
        );
    }

    /// exactly MAX_LOG_NOTIFICATIONS_PER_REQUEST go out; the one past it is dropped.
    #[test]
    fn l6_rate_limit_at_the_bound_and_one_past() {
        let (out, log) = channel(LogLevel::Debug);
        for i in 0..MAX_LOG_NOTIFICATIONS_PER_REQUEST {
            log.log(LogLevel::Debug, None, &json!(i));
        }
        assert_eq!(
            out.0.lock().unwrap().len(),
            MAX_LOG_NOTIFICATIONS_PER_REQUEST
        );
        log.log(LogLevel::Emergency, None, &json!("one past"));
        assert_eq!(
            out.0.lock().unwrap().len(),
            MAX_LOG_NOTIFICATIONS_PER_REQUEST
        );
    }

    /// nothing after the reply.
    #[test]
    fn l2_nothing_after_close() {
        let (out, log) = channel(LogLevel::Debug);
        log.close();
        log.log(LogLevel::Emergency, None, &json!("late"));
        assert!(out.0.lock().unwrap().is_empty());
    }

    /// wire names round-trip and order is RFC 5424 ascending severity.
    #[test]
    fn l4_level_names_and_order() {
        for (i, level) in LogLevel::ALL.into_iter().enumerate() {
            assert_eq!(LogLevel::parse(level.as_str()), Some(level));
            if i > 0 {
                assert!(LogLevel::ALL[i - 1] < level);
            }
        }
        assert_eq!(LogLevel::parse("Info"), None);
        assert_eq!(LogLevel::parse("verbose"), None);
    }
}
