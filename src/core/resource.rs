//! Static resources and URI templates with read handlers.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::json;

use crate::core::caller::Caller;
use crate::core::descriptor::{CacheHints, Meta, Resource, ResourceContents, ResourceTemplate};
use crate::core::error::{BuildError, CoreError};
use crate::core::invocation::{Invocation, Outcome};
use crate::core::tool::BoxFuture;

/// Shortest time-out a read or prompt handler may be given.
pub const MIN_TIMEOUT: Duration = Duration::from_millis(1);
/// Longest time-out a read or prompt handler may be given: anything longer is a
/// configuration mistake (a client would have given up long before).
pub const MAX_TIMEOUT: Duration = Duration::from_secs(60 * 60);

/// Whether a time-out lies within [`MIN_TIMEOUT`]`..=`[`MAX_TIMEOUT`].
#[must_use]
pub fn timeout_in_range(timeout: Duration) -> bool {
    (MIN_TIMEOUT..=MAX_TIMEOUT).contains(&timeout)
}

/// Largest `size` a resource may declare: the schema's `size` is a JSON integer that the
/// generated `Resource` (the type the client decodes into) holds as `i64`, so a larger
/// `u64` could not be read back. [`ResourceDef::size`] past it is refused when the registry
/// is built, never wrapped.
pub const MAX_RESOURCE_SIZE: u64 = i64::MAX.unsigned_abs();

/// The `_meta` key under which a partial bundle's report travels.
pub const PARTIAL_META_KEY: &str = "dev.strict-mcp/partial";

/// A successful read: one or more contents, optionally marked as a partial bundle.
/// Serialises to the wire `ReadResourceResult` body (without `resultType`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadReply {
    /// The contents (never empty on the wire: an empty read is reported as not found).
    pub contents: Vec<ResourceContents>,
    /// Cache hints (set by the registry).
    #[serde(flatten)]
    pub cache: CacheHints,
    /// Metadata, including the partial-bundle report.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl ReadReply {
    /// A complete read.
    #[must_use]
    pub fn new(contents: Vec<ResourceContents>) -> Self {
        ReadReply {
            contents,
            cache: CacheHints::PRIVATE_NO_STORE,
            meta: None,
        }
    }

    /// Marks the read as a partial bundle: it stays a successful read and keeps its warning
    /// and the URIs that were left out.
    #[must_use]
    pub fn partial(mut self, warning: impl Into<String>, omitted: Vec<String>) -> Self {
        let meta = self.meta.get_or_insert_with(Meta::new);
        meta.insert(
            PARTIAL_META_KEY.to_owned(),
            json!({ "warning": warning.into(), "omitted": omitted }),
        );
        self
    }
}

/// Why a read handler failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ResourceError {
    /// No such resource: reported exactly like an unknown URI (-32602 with `data.uri`).
    #[error("not found")]
    NotFound,
    /// An internal failure (-32603 with `data.retryable`); the cause is never serialised.
    #[error("internal failure")]
    Internal {
        /// Whether a retry could succeed.
        retryable: bool,
    },
    /// Any other protocol error (e.g. -32021 from an input request).
    #[error(transparent)]
    Protocol(#[from] CoreError),
}

impl From<crate::core::invocation::AnswerError> for ResourceError {
    fn from(e: crate::core::invocation::AnswerError) -> Self {
        ResourceError::Protocol(e.into())
    }
}

pub(crate) type ReadHandler = Arc<
    dyn Fn(
            Invocation,
            String,
            BTreeMap<String, String>,
        ) -> BoxFuture<Result<Outcome<ReadReply>, ResourceError>>
        + Send
        + Sync,
>;

/// Suggests values for a prompt argument or template variable: given the caller, the partial
/// value and the other arguments already known, returns values ranked by relevance.
pub type Completer =
    Arc<dyn Fn(&Caller, &str, &BTreeMap<String, String>) -> Vec<String> + Send + Sync>;

/// A static resource with its read handler.
#[derive(Clone)]
pub struct ResourceDef {
    pub(crate) descriptor: Resource,
    pub(crate) handler: ReadHandler,
    pub(crate) timeout: Option<Duration>,
    /// The declared size as given; checked against [`MAX_RESOURCE_SIZE`] and written into
    /// the descriptor when the registry is built.
    pub(crate) size: Option<u64>,
}

impl fmt::Debug for ResourceDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceDef")
            .field("uri", &self.descriptor.uri)
            .finish_non_exhaustive()
    }
}

impl ResourceDef {
    /// A resource at `uri`; the handler receives the invocation and the URI.
    ///
    /// ```
    /// use strict_mcp::core::{Invocation, ReadReply, ResourceDef};
    /// use strict_mcp::core::descriptor::ResourceContents;
    /// let r = ResourceDef::new("mem://readme", "readme", |_inv: Invocation, uri: String| async move {
    ///     Ok(ReadReply::new(vec![ResourceContents::text(uri, "hello")]))
    /// }).mime_type("text/plain");
    /// assert_eq!(r.uri(), "mem://readme");
    /// ```
    pub fn new<F, Fut>(uri: impl Into<String>, name: impl Into<String>, handler: F) -> Self
    where
        F: Fn(Invocation, String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ReadReply, ResourceError>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        ResourceDef {
            descriptor: Resource::new(uri, name),
            handler: Arc::new(move |inv, uri, _vars| {
                let fut = handler(inv, uri);
                Box::pin(async move { fut.await.map(Outcome::Complete) })
            }),
            timeout: None,
            size: None,
        }
    }

    /// A resource whose handler shares `state` with other handlers (as
    /// [`ToolDef::typed_with`](crate::core::ToolDef::typed_with)): each read gets its own
    /// clone of the `Arc`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use strict_mcp::core::{Invocation, ReadReply, ResourceDef};
    /// use strict_mcp::core::descriptor::ResourceContents;
    /// let motd = Arc::new(String::from("hello"));
    /// let r = ResourceDef::new_with("mem://motd", "motd", &motd, |motd, _inv: Invocation, uri| async move {
    ///     Ok(ReadReply::new(vec![ResourceContents::text(uri, motd.as_str())]))
    /// });
    /// assert_eq!(r.uri(), "mem://motd");
    /// ```
    pub fn new_with<S, F, Fut>(
        uri: impl Into<String>,
        name: impl Into<String>,
        state: &Arc<S>,
        handler: F,
    ) -> Self
    where
        S: Send + Sync + 'static,
        F: Fn(Arc<S>, Invocation, String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ReadReply, ResourceError>> + Send + 'static,
    {
        let state = Arc::clone(state);
        Self::new(uri, name, move |inv, uri| {
            handler(Arc::clone(&state), inv, uri)
        })
    }

    /// Overrides the server's read time-out for this resource. The time-out covers the
    /// handler, the conversion of its contents and the final size check; when it expires the
    /// handler's cancellation token fires and the client gets -32603 with
    /// `data: {"uri", "retryable": true}`. The core only records it (it has no timer); the
    /// server enforces it. Must lie within [`MIN_TIMEOUT`]`..=`[`MAX_TIMEOUT`], checked when
    /// the registry is built.
    ///
    /// ```
    /// use std::time::Duration;
    /// use strict_mcp::core::{Invocation, ReadReply, ResourceDef};
    /// use strict_mcp::core::descriptor::ResourceContents;
    /// let r = ResourceDef::new("mem://slow", "slow", |_inv: Invocation, uri: String| async move {
    ///     Ok(ReadReply::new(vec![ResourceContents::text(uri, "eventually")]))
    /// }).timeout(Duration::from_secs(2));
    /// assert_eq!(r.timeout_override(), Some(Duration::from_secs(2)));
    /// ```
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The read time-out override, if any.
    #[must_use]
    pub fn timeout_override(&self) -> Option<Duration> {
        self.timeout
    }

    /// The URI.
    #[must_use]
    pub fn uri(&self) -> &str {
        &self.descriptor.uri
    }

    /// Display title.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.descriptor.title = Some(title.into());
        self
    }

    /// Description.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.descriptor.description = Some(description.into());
        self
    }

    /// MIME type.
    #[must_use]
    pub fn mime_type(mut self, mime: impl Into<String>) -> Self {
        self.descriptor.mime_type = Some(mime.into());
        self
    }

    /// Raw size in bytes, at most [`MAX_RESOURCE_SIZE`] (a larger one makes
    /// [`RegistryBuilder::build`](crate::core::RegistryBuilder::build) fail with
    /// [`BuildError::Resource`]).
    #[must_use]
    pub fn size(mut self, size: u64) -> Self {
        self.size = Some(size);
        self
    }

    /// Writes the declared size into the descriptor, refusing one past [`MAX_RESOURCE_SIZE`].
    pub(crate) fn check_size(&mut self) -> Result<(), BuildError> {
        let Some(size) = self.size else {
            return Ok(());
        };
        let size = i64::try_from(size).map_err(|_| BuildError::Resource {
            uri: self.descriptor.uri.clone(),
            reason: format!("size {size} is past {MAX_RESOURCE_SIZE} (the schema's integer)"),
        })?;
        self.descriptor.size = Some(size);
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Part {
    Literal(String),
    Var(String),
}

/// A URI template (simple `{var}` expressions) with its read handler and completers.
#[derive(Clone)]
pub struct TemplateDef {
    pub(crate) descriptor: ResourceTemplate,
    pub(crate) handler: ReadHandler,
    pub(crate) completers: BTreeMap<String, Completer>,
    pub(crate) timeout: Option<Duration>,
}

impl fmt::Debug for TemplateDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TemplateDef")
            .field("uri_template", &self.descriptor.uri_template)
            .finish_non_exhaustive()
    }
}

impl TemplateDef {
    /// A template such as `mem://notes/{id}`; the handler receives the URI and the variables.
    /// Only simple `{name}` expressions are supported (a variable matches one or more
    /// characters other than `/`); other RFC 6570 operators are refused at build time.
    pub fn new<F, Fut>(uri_template: impl Into<String>, name: impl Into<String>, handler: F) -> Self
    where
        F: Fn(Invocation, String, BTreeMap<String, String>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ReadReply, ResourceError>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        TemplateDef {
            descriptor: ResourceTemplate::new(uri_template, name),
            handler: Arc::new(move |inv, uri, vars| {
                let fut = handler(inv, uri, vars);
                Box::pin(async move { fut.await.map(Outcome::Complete) })
            }),
            completers: BTreeMap::new(),
            timeout: None,
        }
    }

    /// Overrides the server's read time-out for every URI this template matches; see
    /// [`ResourceDef::timeout`].
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The read time-out override, if any.
    #[must_use]
    pub fn timeout_override(&self) -> Option<Duration> {
        self.timeout
    }

    /// Description.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.descriptor.description = Some(description.into());
        self
    }

    /// MIME type of matching resources.
    #[must_use]
    pub fn mime_type(mut self, mime: impl Into<String>) -> Self {
        self.descriptor.mime_type = Some(mime.into());
        self
    }

    /// Registers a completer for one variable (`completion/complete` with `ref/resource`).
    #[must_use]
    pub fn complete<F>(mut self, variable: impl Into<String>, completer: F) -> Self
    where
        F: Fn(&Caller, &str, &BTreeMap<String, String>) -> Vec<String> + Send + Sync + 'static,
    {
        self.completers.insert(variable.into(), Arc::new(completer));
        self
    }
}

/// Parses a template into literal and variable parts.
pub(crate) fn parse_template(template: &str) -> Result<Vec<Part>, BuildError> {
    let fail = |reason: &str| BuildError::Resource {
        uri: template.to_owned(),
        reason: reason.to_owned(),
    };
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        if open > 0 {
            parts.push(Part::Literal(rest[..open].to_owned()));
        }
        let close = rest[open..].find('}').ok_or_else(|| fail("unclosed `{`"))? + open;
        let name = &rest[open + 1..close];
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(fail(
                "only simple `{name}` expressions (letters, digits, `_`) are supported",
            ));
        }
        if matches!(parts.last(), Some(Part::Var(_))) {
            return Err(fail("two variables must be separated by a literal"));
        }
        parts.push(Part::Var(name.to_owned()));
        rest = &rest[close + 1..];
    }
    if rest.contains('}') {
        return Err(fail("unmatched `}`"));
    }
    if !rest.is_empty() {
        parts.push(Part::Literal(rest.to_owned()));
    }
    if !parts.iter().any(|p| matches!(p, Part::Var(_))) {
        return Err(fail("a template needs at least one variable"));
    }
    Ok(parts)
}

/// Matches a URI against parsed template parts, returning the variables.
pub(crate) fn match_template(parts: &[Part], uri: &str) -> Option<BTreeMap<String, String>> {
    let mut vars = BTreeMap::new();
    let mut rest = uri;
    let mut i = 0;
    while i < parts.len() {
        match &parts[i] {
            Part::Literal(lit) => rest = rest.strip_prefix(lit.as_str())?,
            Part::Var(name) => {
                let end = match parts.get(i + 1) {
                    Some(Part::Literal(next)) => rest.find(next.as_str())?,
                    _ => rest.len(),
                };
                let value = &rest[..end];
                if value.is_empty() || value.contains('/') {
                    return None;
                }
                vars.insert(name.clone(), value.to_owned());
                rest = &rest[end..];
            }
        }
        i += 1;
    }
    rest.is_empty().then_some(vars)
}

/// Checks a static resource URI: non-empty, a scheme, no whitespace or control characters.
pub(crate) fn check_uri(uri: &str) -> Result<(), BuildError> {
    let fail = |reason: &str| BuildError::Resource {
        uri: uri.to_owned(),
        reason: reason.to_owned(),
    };
    let scheme_end = uri.find(':').ok_or_else(|| fail("missing URI scheme"))?;
    let scheme = &uri[..scheme_end];
    let valid_scheme = scheme
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic())
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    if !valid_scheme {
        return Err(fail("invalid URI scheme (RFC 3986)"));
    }
    if uri.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(fail("whitespace or control characters in URI"));
    }
    Ok(())
}
