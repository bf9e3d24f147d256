//! The request decorator: auth or trace headers added to each POST, never the protocol
//! headers, the target or the body's framing.
#![forbid(unsafe_code)]

use std::sync::Arc;

use hyper::header::{HeaderName, HeaderValue};

use crate::wire::headers;

pub use crate::client::http_error::DecoratorError;

/// Header names a [`Decorator`] may never set, besides every `mcp-*` name: the
/// transport owns the target, the body's framing and what it accepts.
pub const RESERVED_HEADERS: &[&str] = &[
    "host",
    "accept",
    "content-type",
    "content-length",
    "content-encoding",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
    "expect",
    "last-event-id",
];

/// The headers a [`Decorator`] adds to one POST; protocol and transport names are refused.
#[derive(Debug, Default)]
pub struct Decorations {
    added: Vec<(HeaderName, HeaderValue)>,
}

impl Decorations {
    /// Adds one header. `Authorization`, `Cookie` and `Proxy-Authorization` are marked
    /// sensitive so they never appear in debug output.
    ///
    /// # Errors
    /// [`DecoratorError::Reserved`] for `mcp-*` and [`RESERVED_HEADERS`] names;
    /// [`DecoratorError::InvalidName`] / [`DecoratorError::InvalidValue`] for bad syntax.
    pub fn insert(&mut self, name: &str, value: &str) -> Result<(), DecoratorError> {
        let name =
            HeaderName::from_bytes(name.as_bytes()).map_err(|_| DecoratorError::InvalidName)?;
        let lower = name.as_str();
        if lower.starts_with(headers::PROTOCOL_HEADER_PREFIX) || RESERVED_HEADERS.contains(&lower) {
            return Err(DecoratorError::Reserved(lower.to_owned()));
        }
        let mut value = HeaderValue::from_str(value)
            .map_err(|_| DecoratorError::InvalidValue(lower.to_owned()))?;
        if matches!(lower, "authorization" | "cookie" | "proxy-authorization") {
            value.set_sensitive(true);
        }
        self.added.push((name, value));
        Ok(())
    }

    /// The headers added, in order, for the transport to append.
    pub(crate) fn into_headers(self) -> Vec<(HeaderName, HeaderValue)> {
        self.added
    }

    /// The headers added so far, in order.
    #[must_use]
    pub fn headers(&self) -> &[(HeaderName, HeaderValue)] {
        &self.added
    }
}

/// Adds auth or trace headers to each POST; called with the JSON-RPC method of the message.
pub type Decorator =
    Arc<dyn Fn(&str, &mut Decorations) -> Result<(), DecoratorError> + Send + Sync + 'static>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn d46_decorator_cannot_set_protocol_or_transport_headers() {
        let mut d = Decorations::default();
        for name in [
            "Mcp-Method",
            "mcp-name",
            "MCP-Protocol-Version",
            "Mcp-Param-Region",
            "Host",
        ] {
            assert_eq!(
                d.insert(name, "x"),
                Err(DecoratorError::Reserved(name.to_ascii_lowercase()))
            );
        }
        for name in RESERVED_HEADERS {
            assert!(matches!(
                d.insert(name, "x"),
                Err(DecoratorError::Reserved(_))
            ));
        }
        assert_eq!(
            d.insert("authorization", "Bearer s3cret\n"),
            Err(DecoratorError::InvalidValue("authorization".into()))
        );
        assert!(!DecoratorError::InvalidValue("authorization".into())
            .to_string()
            .contains("s3cret"));
        d.insert("Authorization", "Bearer s3cret").expect("auth");
        d.insert("traceparent", "00-abc-def-01").expect("trace");
        assert_eq!(d.headers().len(), 2);
        assert!(d.headers()[0].1.is_sensitive());
        assert!(!format!("{d:?}").contains("s3cret"));
    }
}
