//! Descriptor types that serialise to exactly the 2026-07-28 wire shapes.
//!
//! The leaf descriptors are the generated schema types themselves (`crate::wire`, typify
//! output of the pinned schema), the very types the client decodes into: [`Icon`],
//! [`ToolAnnotations`], [`Annotations`], [`PromptArgument`], [`Prompt`], [`Role`] and
//! [`CacheScope`].
//! typify derives neither `Default` nor `PartialEq`; both are implemented here, so the
//! authoring API keeps `ToolAnnotations { read_only_hint: Some(false), ..Default::default() }`.
//! They write their members in `schema.json`'s order, which is alphabetical
//! (`{"destructiveHint":…,"readOnlyHint":…,"title":…}`), and keep any member the schema
//! does not name in their flattened `extra` map (empty unless a caller fills it).
//!
//! [`Tool`] is the generated `Tool` too: `build.rs` replaces the generated schema maps
//! (`ToolInputSchema`, `ToolOutputSchema`, which re-parse into maps with keys re-sorted and
//! numbers through serde_json) with exact-text types of the generated layer, so the
//! registered schema bytes are what is published and what the client decodes into, and
//! server and client share one `Tool`. A result's `structuredContent` is the same kind of
//! exact-text type ([`StructuredContent`]) in the generated `CallToolResult`.
//!
//! The structs that stay hand-written do so for exact bytes or shape:
//!
//! - [`CallToolResult`] holds this module's [`ContentBlock`]s; its other members are the
//!   generated ones (exact `structuredContent`, `isError`, `_meta`), in the generated order.
//! - [`ContentBlock`] and [`ResourceContents`] are tagged enums with struct variants
//!   (`ContentBlock::Text { text, .. }`), which the public API matches on; the generated
//!   `ContentBlock` is an untagged enum of structs. Blocks write `type` first
//!   (`{"type":"text","text":…}`), the schema.ts order existing peers' snapshots rely on.
//! - [`Resource`] and [`ResourceTemplate`] keep `size` as `u64` (`i64` there).
//!
//! That these are the schema's shapes, member for member, is checked rather than assumed:
//! `tests/core_descriptor_generated.rs` decodes each fully populated descriptor into its
//! generated type with no member left in `extra`, and decodes a full schema example of each
//! into the descriptor with no member lost.
//!
//! Optional members are omitted when `None`; an explicit `Some(false)` or `Some(0)` stays on
//! the wire. Schemas and structured results are kept as raw JSON text so their
//! bytes (and numbers) never pass through a float.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `_meta` object.
pub type Meta = Map<String, Value>;

/// An icon: the generated `Icon` (`src` and optional `mimeType`, `sizes`, `theme`).
pub use crate::wire::Icon;
/// An icon's `sizes` (the generated newtype over `Vec<String>`).
pub use crate::wire::IconSizes;
/// An icon's `theme`: `light` or `dark`.
pub use crate::wire::IconTheme;

impl Icon {
    /// An icon with only `src`.
    ///
    /// ```
    /// use strict_mcp::core::descriptor::{Icon, IconTheme};
    /// let mut icon = Icon::new("https://example.com/a.png");
    /// icon.theme = Some(IconTheme::Dark);
    /// assert_eq!(serde_json::to_string(&icon).unwrap(),
    ///     r#"{"src":"https://example.com/a.png","theme":"dark"}"#);
    /// ```
    #[must_use]
    pub fn new(src: impl Into<String>) -> Self {
        Icon {
            mime_type: None,
            sizes: None,
            src: src.into(),
            theme: None,
            extra: Map::new(),
        }
    }
}

impl PartialEq for Icon {
    fn eq(&self, other: &Self) -> bool {
        self.src == other.src
            && self.mime_type == other.mime_type
            && self.sizes.as_deref() == other.sizes.as_deref()
            && self.theme == other.theme
            && self.extra == other.extra
    }
}

impl Eq for Icon {}

/// Behavioural hints of a tool: the generated `ToolAnnotations`. Absent stays absent;
/// `false` stays; members in the schema's (alphabetical) order.
///
/// ```
/// use strict_mcp::core::descriptor::ToolAnnotations;
/// let a = ToolAnnotations { read_only_hint: Some(false), ..Default::default() };
/// assert_eq!(serde_json::to_string(&a).unwrap(), r#"{"readOnlyHint":false}"#);
/// ```
pub use crate::wire::ToolAnnotations;

impl Default for ToolAnnotations {
    fn default() -> Self {
        ToolAnnotations {
            destructive_hint: None,
            idempotent_hint: None,
            open_world_hint: None,
            read_only_hint: None,
            title: None,
            extra: Map::new(),
        }
    }
}

impl PartialEq for ToolAnnotations {
    fn eq(&self, other: &Self) -> bool {
        self.title == other.title
            && self.read_only_hint == other.read_only_hint
            && self.destructive_hint == other.destructive_hint
            && self.idempotent_hint == other.idempotent_hint
            && self.open_world_hint == other.open_world_hint
            && self.extra == other.extra
    }
}

impl Eq for ToolAnnotations {}

impl ToolAnnotations {
    /// Whether no hint is set (then `annotations` is omitted from the tool).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        *self == ToolAnnotations::default()
    }
}

/// A tool definition as listed: the generated `Tool`, the type the client decodes
/// `tools/list` into. Its schemas are the exact-text [`ToolInputSchema`] and
/// [`ToolOutputSchema`] (`build.rs` puts them in place of the generated schema maps), so the
/// registered bytes are published as they were registered. Members are written in the
/// schema's (alphabetical) order: `annotations`, `description`, `icons`, `inputSchema`,
/// `_meta`, `name`, `outputSchema`, `title`, then `extra`.
///
/// ```
/// use serde_json::value::RawValue;
/// use strict_mcp::core::descriptor::{Tool, ToolInputSchema};
/// let schema = RawValue::from_string(r#"{"type":"object","properties":{}}"#.into()).unwrap();
/// let mut tool = Tool::new("echo", ToolInputSchema::new(schema).unwrap());
/// tool.title = Some("Echo".into());
/// assert_eq!(serde_json::to_string(&tool).unwrap(),
///     r#"{"inputSchema":{"type":"object","properties":{}},"name":"echo","title":"Echo"}"#);
/// ```
pub use crate::wire::Tool;
/// A tool's `icons` (the generated newtype over `Vec<Icon>`).
pub use crate::wire::ToolIcons;
/// Exact-text schema and result members (see `crate::generated::exact`).
pub use crate::wire::{SchemaShapeError, StructuredContent, ToolInputSchema, ToolOutputSchema};

impl Tool {
    /// A tool with only `name` and `inputSchema`.
    #[must_use]
    pub fn new(name: impl Into<String>, input_schema: ToolInputSchema) -> Self {
        Tool {
            annotations: None,
            description: None,
            icons: None,
            input_schema,
            meta: None,
            name: name.into(),
            output_schema: None,
            title: None,
            extra: Map::new(),
        }
    }
}

/// Schemas compare by their exact text; every member counts (the destructuring below makes
/// a new generated member a compile error here until it is compared too).
impl PartialEq for Tool {
    fn eq(&self, other: &Self) -> bool {
        let Tool {
            annotations,
            description,
            icons,
            input_schema,
            meta,
            name,
            output_schema,
            title,
            extra,
        } = self;
        *name == other.name
            && *title == other.title
            && *description == other.description
            && icons.as_deref() == other.icons.as_deref()
            && *input_schema == other.input_schema
            && *output_schema == other.output_schema
            && *annotations == other.annotations
            && meta.as_deref() == other.meta.as_deref()
            && *extra == other.extra
    }
}

impl Eq for Tool {}

/// Audience role: the generated `Role` (`"user"` or `"assistant"`, same bytes).
pub use crate::wire::Role;

/// Content annotations: the generated `Annotations`; `priority: 0` survives. `priority` is a
/// JSON number (`0` stays `0`, never `0.0`; decimal digits follow serde_json's shortest form,
/// e.g. `0.50` is written `0.5`).
///
/// ```
/// use strict_mcp::core::descriptor::{Annotations, Role};
/// let a = Annotations {
///     audience: Some(vec![Role::User].into()),
///     priority: Some(0.into()),
///     ..Default::default()
/// };
/// assert_eq!(serde_json::to_string(&a).unwrap(), r#"{"audience":["user"],"priority":0}"#);
/// ```
pub use crate::wire::Annotations;
/// The `audience` of [`Annotations`] (the generated newtype over `Vec<Role>`).
pub use crate::wire::AnnotationsAudience;

impl Default for Annotations {
    fn default() -> Self {
        Annotations {
            audience: None,
            last_modified: None,
            priority: None,
            extra: Map::new(),
        }
    }
}

impl PartialEq for Annotations {
    fn eq(&self, other: &Self) -> bool {
        self.audience.as_deref() == other.audience.as_deref()
            && self.priority == other.priority
            && self.last_modified == other.last_modified
            && self.extra == other.extra
    }
}

impl Eq for Annotations {}

/// Contents of a resource: text or base64 blob. Empty bodies keep their field.
///
/// ```
/// use strict_mcp::core::descriptor::ResourceContents;
/// let c = ResourceContents::text("mem://a", "");
/// assert_eq!(serde_json::to_string(&c).unwrap(), r#"{"uri":"mem://a","text":""}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ResourceContents {
    /// `TextResourceContents`.
    Text {
        /// Resource URI.
        uri: String,
        /// MIME type.
        #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// The text (may be empty).
        text: String,
        /// Metadata.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Meta>,
    },
    /// `BlobResourceContents`.
    Blob {
        /// Resource URI.
        uri: String,
        /// MIME type.
        #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// Base64 data (may be empty).
        blob: String,
        /// Metadata.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Meta>,
    },
}

impl ResourceContents {
    /// Text contents without MIME type.
    #[must_use]
    pub fn text(uri: impl Into<String>, text: impl Into<String>) -> Self {
        ResourceContents::Text {
            uri: uri.into(),
            mime_type: None,
            text: text.into(),
            meta: None,
        }
    }

    /// Blob contents; `data` is base64-encoded here.
    #[must_use]
    pub fn blob(uri: impl Into<String>, data: &[u8]) -> Self {
        use base64::Engine as _;
        ResourceContents::Blob {
            uri: uri.into(),
            mime_type: None,
            blob: base64::engine::general_purpose::STANDARD.encode(data),
            meta: None,
        }
    }

    /// Sets the MIME type.
    #[must_use]
    pub fn with_mime_type(mut self, mime: impl Into<String>) -> Self {
        match &mut self {
            ResourceContents::Text { mime_type, .. } | ResourceContents::Blob { mime_type, .. } => {
                *mime_type = Some(mime.into());
            }
        }
        self
    }

    /// The URI.
    #[must_use]
    pub fn uri(&self) -> &str {
        match self {
            ResourceContents::Text { uri, .. } | ResourceContents::Blob { uri, .. } => uri,
        }
    }
}

/// A content block (`ContentBlock`).
///
/// ```
/// use strict_mcp::core::descriptor::ContentBlock;
/// assert_eq!(serde_json::to_string(&ContentBlock::text("hi")).unwrap(),
///     r#"{"type":"text","text":"hi"}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// `TextContent`.
    Text {
        /// The text.
        text: String,
        /// Annotations.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
        /// Metadata.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Meta>,
    },
    /// `ImageContent`.
    Image {
        /// Base64 data.
        data: String,
        /// MIME type (required).
        #[serde(rename = "mimeType")]
        mime_type: String,
        /// Annotations.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
        /// Metadata.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Meta>,
    },
    /// `AudioContent`.
    Audio {
        /// Base64 data.
        data: String,
        /// MIME type (required).
        #[serde(rename = "mimeType")]
        mime_type: String,
        /// Annotations.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
        /// Metadata.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Meta>,
    },
    /// `ResourceLink`.
    ResourceLink(Box<Resource>),
    /// `EmbeddedResource`.
    Resource {
        /// The embedded contents.
        resource: ResourceContents,
        /// Annotations.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
        /// Metadata.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Meta>,
    },
}

impl ContentBlock {
    /// A plain text block.
    #[must_use]
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text {
            text: text.into(),
            annotations: None,
            meta: None,
        }
    }
}

/// A resource as listed (`Resource`), also the body of a `resource_link` block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// URI.
    pub uri: String,
    /// Programmatic name.
    pub name: String,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Raw size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl Resource {
    /// A resource with only `uri` and `name`.
    #[must_use]
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Resource {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            icons: None,
            annotations: None,
            meta: None,
        }
    }
}

/// A resource template (`ResourceTemplate`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate {
    /// RFC 6570 template.
    pub uri_template: String,
    /// Programmatic name.
    pub name: String,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// MIME type of matching resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// A prompt argument: the generated `PromptArgument` (`name`, optional `title`,
/// `description`, `required`), members in the schema's (alphabetical) order.
pub use crate::wire::PromptArgument;

impl PromptArgument {
    /// An argument with only `name`.
    #[must_use]
    pub fn new(name: impl Into<String>) -> Self {
        PromptArgument {
            description: None,
            name: name.into(),
            required: None,
            title: None,
            extra: Map::new(),
        }
    }
}

impl PartialEq for PromptArgument {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.title == other.title
            && self.description == other.description
            && self.required == other.required
            && self.extra == other.extra
    }
}

impl Eq for PromptArgument {}

/// A descriptor's `_meta` object (the generated newtype over [`Meta`]).
pub use crate::wire::MetaObject;
/// A prompt as listed: the generated `Prompt` (`name`, optional `title`, `description`,
/// `icons`, `arguments`, `_meta`), members in the schema's (alphabetical) order.
///
/// ```
/// use strict_mcp::core::descriptor::{Prompt, PromptArgument};
/// let mut p = Prompt::new("greet");
/// p.arguments = Some(vec![PromptArgument::new("who")].into());
/// assert_eq!(serde_json::to_string(&p).unwrap(),
///     r#"{"arguments":[{"name":"who"}],"name":"greet"}"#);
/// ```
pub use crate::wire::Prompt;
/// The `arguments` of a [`Prompt`] (the generated newtype over `Vec<PromptArgument>`).
pub use crate::wire::PromptArguments;
/// The `icons` of a [`Prompt`] (the generated newtype over `Vec<Icon>`).
pub use crate::wire::PromptIcons;

impl Prompt {
    /// A prompt with only `name`.
    #[must_use]
    pub fn new(name: impl Into<String>) -> Self {
        Prompt {
            arguments: None,
            description: None,
            icons: None,
            meta: None,
            name: name.into(),
            title: None,
            extra: Map::new(),
        }
    }
}

impl PartialEq for Prompt {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.title == other.title
            && self.description == other.description
            && self.icons.as_deref() == other.icons.as_deref()
            && self.arguments.as_deref() == other.arguments.as_deref()
            && self.meta.as_deref() == other.meta.as_deref()
            && self.extra == other.extra
    }
}

/// One message of a prompt (`PromptMessage`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptMessage {
    /// Who speaks.
    pub role: Role,
    /// What is said.
    pub content: ContentBlock,
}

impl PromptMessage {
    /// A text message from the user.
    ///
    /// ```
    /// use strict_mcp::core::descriptor::PromptMessage;
    /// assert_eq!(serde_json::to_string(&PromptMessage::user("Hi")).unwrap(),
    ///     r#"{"role":"user","content":{"type":"text","text":"Hi"}}"#);
    /// ```
    #[must_use]
    pub fn user(text: impl Into<String>) -> Self {
        PromptMessage {
            role: Role::User,
            content: ContentBlock::text(text),
        }
    }

    /// A text message from the assistant.
    #[must_use]
    pub fn assistant(text: impl Into<String>) -> Self {
        PromptMessage {
            role: Role::Assistant,
            content: ContentBlock::text(text),
        }
    }
}

/// `cacheScope` of a cacheable result: the generated enum (`"public"` or `"private"`).
pub use crate::wire::CacheableResultCacheScope as CacheScope;

/// Cache hints `ttlMs` and `cacheScope` (H-section).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheHints {
    /// Freshness in milliseconds (0 = immediately stale).
    pub ttl_ms: u64,
    /// Who may reuse the result.
    pub cache_scope: CacheScope,
}

impl CacheHints {
    /// `ttlMs: 0`, `cacheScope: "private"` — the adapter default for every list and read.
    pub const PRIVATE_NO_STORE: CacheHints = CacheHints {
        ttl_ms: 0,
        cache_scope: CacheScope::Private,
    };
}

/// The `_meta` of a result (the generated `ResultMetaObject`: `serverInfo` and any other key).
pub use crate::wire::ResultMetaObject;

/// A completed `tools/call` result: the generated `CallToolResult`'s members but
/// `resultType` (the server's envelope writes it) and `extra`, in its (alphabetical) order.
/// `content` is this module's [`ContentBlock`]; `structuredContent` is the generated
/// exact-text [`StructuredContent`] (an explicit `null` is `Some`, written as `null`; `None`
/// is absent). `tests/core_descriptor_generated.rs` decodes a full one into the generated
/// type with nothing left over.
///
/// ```
/// use serde_json::value::RawValue;
/// use strict_mcp::core::descriptor::{CallToolResult, ContentBlock};
/// let result = CallToolResult {
///     content: vec![ContentBlock::text("null")],
///     is_error: None,
///     meta: None,
///     structured_content: Some(RawValue::from_string("null".into()).unwrap().into()),
/// };
/// assert_eq!(serde_json::to_string(&result).unwrap(),
///     r#"{"content":[{"type":"text","text":"null"}],"structuredContent":null}"#);
/// ```
#[derive(Debug, Clone, Serialize)]
pub struct CallToolResult {
    /// Content blocks.
    pub content: Vec<ContentBlock>,
    /// `true` for tool failures.
    #[serde(rename = "isError", skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Result metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMetaObject>,
    /// Structured result, exact bytes.
    #[serde(rename = "structuredContent", skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<StructuredContent>,
}
