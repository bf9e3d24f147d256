//! A handler's choice of an MCP Apps view for its result ([`AppView`]), recorded on the
//! invocation ([`Invocation::show_view`](crate::core::Invocation::show_view)).
//!
//! Not to be confused with [`Presentation`](crate::core::Presentation), which says what the
//! *client* declared it can render. An `AppView` is what the *server's* handler asks the
//! Apps shell to show. The server decides whether it reaches the wire: only when Apps is
//! enabled, only on a successful compact `call_tool` result, and only when the view is one of
//! the configured views (otherwise the result becomes a safe `invalid_result`).

use std::sync::Mutex;

use serde::Serialize;
use serde_json::value::RawValue;

/// One configured view of the Apps shell, selected for a result, with the data it shows.
/// The data is kept as exact JSON text (numbers are never re-encoded through a float).
///
/// ```
/// use strict_mcp::core::AppView;
/// let view = AppView::new("chart", &serde_json::json!({"points": [1, 2]})).unwrap();
/// assert_eq!(view.view(), "chart");
/// assert_eq!(view.data().get(), r#"{"points":[1,2]}"#);
/// let exact = AppView::from_json("chart", "{\"id\":12345678901234567890123}").unwrap();
/// assert_eq!(exact.data().get(), "{\"id\":12345678901234567890123}");
/// ```
#[derive(Debug, Clone)]
pub struct AppView {
    view: String,
    data: Box<RawValue>,
}

impl AppView {
    /// `view` with `data` serialised as JSON.
    ///
    /// # Errors
    /// When `data` does not serialise (a map with non-string keys, for example).
    pub fn new(view: impl Into<String>, data: &impl Serialize) -> Result<Self, serde_json::Error> {
        Ok(AppView {
            view: view.into(),
            data: serde_json::value::to_raw_value(data)?,
        })
    }

    /// `view` with `data` given as JSON text, kept byte-exact.
    ///
    /// # Errors
    /// When `data` is not one JSON value.
    pub fn from_json(view: impl Into<String>, data: &str) -> Result<Self, serde_json::Error> {
        Ok(AppView {
            view: view.into(),
            data: RawValue::from_string(data.to_owned())?,
        })
    }

    /// The selected view's identifier.
    #[must_use]
    pub fn view(&self) -> &str {
        &self.view
    }

    /// The data, exact JSON text.
    #[must_use]
    pub fn data(&self) -> &RawValue {
        &self.data
    }
}

/// Where an invocation records its view selection; shared by the invocation's clones, read
/// once by the server when the result is complete.
#[derive(Debug, Default)]
pub(crate) struct ViewSlot(Mutex<Option<AppView>>);

impl ViewSlot {
    pub(crate) fn set(&self, view: AppView) {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(view);
    }

    /// The selected view, once (only the server reads it).
    #[cfg(feature = "server")]
    pub(crate) fn take(&self) -> Option<AppView> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }
}
