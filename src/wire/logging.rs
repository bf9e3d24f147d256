//! Per-request logging on the wire (L-section), for both roles: the severities a request's
//! `_meta` may ask for and the `notifications/message` params a server sends at or above them.

use serde_json::{Map, Value};

/// RFC 5424 severities in ascending order, as sent in `_meta` `logLevel` and in
/// `notifications/message`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// `debug`
    Debug,
    /// `info`
    Info,
    /// `notice`
    Notice,
    /// `warning`
    Warning,
    /// `error`
    Error,
    /// `critical`
    Critical,
    /// `alert`
    Alert,
    /// `emergency`
    Emergency,
}

impl LogLevel {
    /// Every level, least severe first.
    pub const ALL: [LogLevel; 8] = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Notice,
        LogLevel::Warning,
        LogLevel::Error,
        LogLevel::Critical,
        LogLevel::Alert,
        LogLevel::Emergency,
    ];

    /// The wire name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }

    /// Parses a wire name; anything else is `None` (the server answers -32602).
    #[must_use]
    pub fn parse(name: &str) -> Option<LogLevel> {
        LogLevel::ALL.into_iter().find(|l| l.as_str() == name)
    }
}

/// The params of one `notifications/message`: `level`, optional `logger`, any JSON `data`.
#[must_use]
pub fn message_params(level: LogLevel, logger: Option<&str>, data: &Value) -> String {
    let mut params = Map::new();
    params.insert("level".into(), Value::String(level.as_str().to_owned()));
    if let Some(logger) = logger {
        params.insert("logger".into(), Value::String(logger.to_owned()));
    }
    params.insert("data".into(), data.clone());
    Value::Object(params).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn l4_levels_are_ordered_and_round_trip_their_wire_names() {
        for pair in LogLevel::ALL.windows(2) {
            assert!(pair[0] < pair[1]);
        }
        for level in LogLevel::ALL {
            assert_eq!(LogLevel::parse(level.as_str()), Some(level));
        }
        assert_eq!(LogLevel::parse("Debug"), None);
        assert_eq!(LogLevel::parse("warn"), None);
    }

    #[test]
    fn l5_message_params_keep_logger_absent_when_not_given() {
        assert_eq!(
            message_params(LogLevel::Warning, None, &serde_json::json!({"n": 1})),
            r#"{"data":{"n":1},"level":"warning"}"#
        );
        assert_eq!(
            message_params(LogLevel::Info, Some("db"), &Value::Null),
            r#"{"data":null,"level":"info","logger":"db"}"#
        );
    }
}
