//! Descriptor types that serialise to exactly the 2026-07-28 wire shapes.
//!
//! Most descriptors are the generated schema types themselves (`crate::wire`, typify output
//! of the pinned schema), the very types the client decodes into:
//!
//! - leaf descriptors: [`Icon`], [`ToolAnnotations`], [`Annotations`], [`PromptArgument`],
//!   [`Prompt`], [`Role`] and [`CacheScope`];
//! - content: [`ContentBlock`], the untagged union of [`TextContent`], [`ImageContent`],
//!   [`AudioContent`], [`ResourceLink`] and [`EmbeddedResource`] (matched as
//!   `ContentBlock::TextContent(t)`, built with [`ContentBlock::text`], [`ContentBlock::image`],
//!   [`ContentBlock::audio`], [`ContentBlock::resource_link`], [`ContentBlock::embedded`]);
//! - resources: [`ResourceContents`] (the generated union of [`TextResourceContents`] and
//!   [`BlobResourceContents`], both as read and as embedded), [`Resource`] and
//!   [`ResourceTemplate`];
//! - [`PromptMessage`].
//!
//! `build.rs` has typify derive `PartialEq` on every generated type (every member compared,
//! a member a new schema adds included; schemas and structured content by their exact text);
//! typify derives no `Default`, which is implemented here, with small constructors (`Icon::new`, `Resource::new`, `TextContent::new`, …),
//! so struct-update authoring keeps working. They write their members in `schema.json`'s
//! order, which is alphabetical (`{"text":"hi","type":"text"}`: `type` comes last; JSON
//! objects are unordered and the schema is the spec's shape), and keep any member the schema
//! does not name in their flattened `extra` map (empty unless a caller or a peer fills it,
//! written back as received). To decode a block from a peer use
//! [`crate::wire::content::decode_block`], which reads the `type` tag first instead of trying
//! the union's variants in turn.
//!
//! The generated [`Resource`] holds `size` as `i64`; the authoring API
//! ([`ResourceDef::size`](crate::core::ResourceDef::size)) takes a `u64` and the registry
//! refuses one past [`MAX_RESOURCE_SIZE`](crate::core::MAX_RESOURCE_SIZE) with a typed
//! [`BuildError::Resource`](crate::core::BuildError::Resource) rather than wrapping it.
//!
//! [`Tool`] is the generated `Tool` too: `build.rs` replaces the generated schema maps
//! (`ToolInputSchema`, `ToolOutputSchema`, which re-parse into maps with keys re-sorted and
//! numbers through serde_json) with exact-text types of the generated layer, so the
//! registered schema bytes are what is published and what the client decodes into, and
//! server and client share one `Tool`. A result's `structuredContent` is the same kind of
//! exact-text type ([`StructuredContent`]) in the generated `CallToolResult`.
//!
//! [`CallToolResult`] stays this module's struct: its members are the generated ones
//! (`content` of the generated [`ContentBlock`]s, exact `structuredContent`, `isError`,
//! `_meta`), written in the generated order.
//!
//! That these are the schema's shapes, member for member, is checked rather than assumed:
//! `tests/core_descriptor_generated.rs` decodes each fully populated descriptor into its
//! generated type with no member left in `extra`, decodes a full schema example of each
//! into the descriptor with no member lost, and shows an unknown member of every generated
//! type surviving in its `extra`.
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

impl Eq for Annotations {}

/// A binary resource's contents: the generated `BlobResourceContents` (`uri`, base64 `blob`,
/// optional `mimeType`, `_meta`). An empty `blob` keeps its member.
pub use crate::wire::BlobResourceContents;
/// A text resource's contents: the generated `TextResourceContents` (`uri`, `text`, optional
/// `mimeType`, `_meta`). An empty `text` keeps its member.
pub use crate::wire::TextResourceContents;

/// Contents of a resource, as read and as embedded: the generated union
/// (`EmbeddedResourceResource`) of [`TextResourceContents`] and [`BlobResourceContents`].
/// Empty bodies keep their member; members in the schema's (alphabetical) order.
///
/// ```
/// use strict_mcp::core::descriptor::ResourceContents;
/// let c = ResourceContents::text("mem://a", "");
/// assert_eq!(serde_json::to_string(&c).unwrap(), r#"{"text":"","uri":"mem://a"}"#);
/// let ResourceContents::TextResourceContents(t) = &c else { panic!("text") };
/// assert_eq!(t.text, "");
/// ```
pub use crate::wire::EmbeddedResourceResource as ResourceContents;

impl TextResourceContents {
    /// Text contents without MIME type.
    #[must_use]
    pub fn new(uri: impl Into<String>, text: impl Into<String>) -> Self {
        TextResourceContents {
            meta: None,
            mime_type: None,
            text: text.into(),
            uri: uri.into(),
            extra: Map::new(),
        }
    }
}

impl Eq for TextResourceContents {}

impl BlobResourceContents {
    /// Blob contents without MIME type; `data` is base64-encoded here.
    #[must_use]
    pub fn new(uri: impl Into<String>, data: &[u8]) -> Self {
        use base64::Engine as _;
        BlobResourceContents {
            blob: base64::engine::general_purpose::STANDARD.encode(data),
            meta: None,
            mime_type: None,
            uri: uri.into(),
            extra: Map::new(),
        }
    }
}

impl Eq for BlobResourceContents {}

impl ResourceContents {
    /// Text contents without MIME type.
    #[must_use]
    pub fn text(uri: impl Into<String>, text: impl Into<String>) -> Self {
        ResourceContents::TextResourceContents(TextResourceContents::new(uri, text))
    }

    /// Blob contents; `data` is base64-encoded here.
    ///
    /// ```
    /// use strict_mcp::core::descriptor::ResourceContents;
    /// let c = ResourceContents::blob("mem://b", b"hi").with_mime_type("application/octet-stream");
    /// assert_eq!(serde_json::to_string(&c).unwrap(),
    ///     r#"{"blob":"aGk=","mimeType":"application/octet-stream","uri":"mem://b"}"#);
    /// ```
    #[must_use]
    pub fn blob(uri: impl Into<String>, data: &[u8]) -> Self {
        ResourceContents::BlobResourceContents(BlobResourceContents::new(uri, data))
    }

    /// Sets the MIME type.
    #[must_use]
    pub fn with_mime_type(mut self, mime: impl Into<String>) -> Self {
        *self.mime_type_mut() = Some(mime.into());
        self
    }

    /// The URI.
    #[must_use]
    pub fn uri(&self) -> &str {
        match self {
            ResourceContents::TextResourceContents(c) => &c.uri,
            ResourceContents::BlobResourceContents(c) => &c.uri,
        }
    }

    /// The MIME type, if set.
    #[must_use]
    pub fn mime_type(&self) -> Option<&str> {
        match self {
            ResourceContents::TextResourceContents(c) => c.mime_type.as_deref(),
            ResourceContents::BlobResourceContents(c) => c.mime_type.as_deref(),
        }
    }

    /// The MIME type, to set or clear.
    pub fn mime_type_mut(&mut self) -> &mut Option<String> {
        match self {
            ResourceContents::TextResourceContents(c) => &mut c.mime_type,
            ResourceContents::BlobResourceContents(c) => &mut c.mime_type,
        }
    }
}

impl Eq for ResourceContents {}

/// An audio block: the generated `AudioContent` (base64 `data`, required `mimeType`).
pub use crate::wire::AudioContent;
/// `AudioContent`'s `type` tag (`"audio"`).
pub use crate::wire::AudioContentType;
/// An embedded resource block: the generated `EmbeddedResource` (its [`ResourceContents`]).
pub use crate::wire::EmbeddedResource;
/// `EmbeddedResource`'s `type` tag (`"resource"`).
pub use crate::wire::EmbeddedResourceType;
/// An image block: the generated `ImageContent` (base64 `data`, required `mimeType`).
pub use crate::wire::ImageContent;
/// `ImageContent`'s `type` tag (`"image"`).
pub use crate::wire::ImageContentType;
/// A link to a resource: the generated `ResourceLink` (a [`Resource`]'s members and `type`).
pub use crate::wire::ResourceLink;
/// The `icons` of a [`ResourceLink`] (the generated newtype over `Vec<Icon>`).
pub use crate::wire::ResourceLinkIcons;
/// `ResourceLink`'s `type` tag (`"resource_link"`).
pub use crate::wire::ResourceLinkType;
/// A text block: the generated `TextContent`.
pub use crate::wire::TextContent;
/// `TextContent`'s `type` tag (`"text"`).
pub use crate::wire::TextContentType;

/// A content block: the generated `ContentBlock`, an untagged union of [`TextContent`],
/// [`ImageContent`], [`AudioContent`], [`ResourceLink`] and [`EmbeddedResource`], each of
/// which carries its own constant `type`. It writes the schema's (alphabetical) member order,
/// so `type` comes last. To decode a block received from a peer, use
/// [`crate::wire::content::decode_block`], which reads the tag first (serde's untagged decode
/// tries every variant in turn) and names the refused block.
///
/// ```
/// use strict_mcp::core::descriptor::ContentBlock;
/// let block = ContentBlock::text("hi");
/// assert_eq!(serde_json::to_string(&block).unwrap(), r#"{"text":"hi","type":"text"}"#);
/// assert_eq!(block.as_text(), Some("hi"));
/// let ContentBlock::TextContent(t) = &block else { panic!("text") };
/// assert_eq!(t.text, "hi");
/// ```
pub use crate::wire::ContentBlock;

impl TextContent {
    /// A text block with no annotations or metadata.
    #[must_use]
    pub fn new(text: impl Into<String>) -> Self {
        TextContent {
            annotations: None,
            meta: None,
            text: text.into(),
            type_: TextContentType::Text,
            extra: Map::new(),
        }
    }
}

impl Eq for TextContent {}

impl ImageContent {
    /// An image block; `data` is the base64 text of the image.
    #[must_use]
    pub fn new(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ImageContent {
            annotations: None,
            data: data.into(),
            meta: None,
            mime_type: mime_type.into(),
            type_: ImageContentType::Image,
            extra: Map::new(),
        }
    }
}

impl Eq for ImageContent {}

impl AudioContent {
    /// An audio block; `data` is the base64 text of the audio.
    #[must_use]
    pub fn new(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        AudioContent {
            annotations: None,
            data: data.into(),
            meta: None,
            mime_type: mime_type.into(),
            type_: AudioContentType::Audio,
            extra: Map::new(),
        }
    }
}

impl Eq for AudioContent {}

/// A link carries every member of the resource it names; nothing is dropped.
impl From<Resource> for ResourceLink {
    fn from(resource: Resource) -> Self {
        let Resource {
            annotations,
            description,
            icons,
            meta,
            mime_type,
            name,
            size,
            title,
            uri,
            extra,
        } = resource;
        ResourceLink {
            annotations,
            description,
            icons: icons.map(|i| ResourceLinkIcons(i.0)),
            meta,
            mime_type,
            name,
            size,
            title,
            type_: ResourceLinkType::ResourceLink,
            uri,
            extra,
        }
    }
}

impl Eq for ResourceLink {}

impl EmbeddedResource {
    /// An embedded resource block with no annotations or metadata.
    #[must_use]
    pub fn new(resource: ResourceContents) -> Self {
        EmbeddedResource {
            annotations: None,
            meta: None,
            resource,
            type_: EmbeddedResourceType::Resource,
            extra: Map::new(),
        }
    }
}

impl Eq for EmbeddedResource {}

impl ContentBlock {
    /// A plain text block.
    #[must_use]
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::TextContent(TextContent::new(text))
    }

    /// An image block; `data` is the base64 text of the image.
    ///
    /// ```
    /// use strict_mcp::core::descriptor::ContentBlock;
    /// assert_eq!(serde_json::to_string(&ContentBlock::image("AAA=", "image/png")).unwrap(),
    ///     r#"{"data":"AAA=","mimeType":"image/png","type":"image"}"#);
    /// ```
    #[must_use]
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ContentBlock::ImageContent(ImageContent::new(data, mime_type))
    }

    /// An audio block; `data` is the base64 text of the audio.
    #[must_use]
    pub fn audio(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ContentBlock::AudioContent(AudioContent::new(data, mime_type))
    }

    /// A `resource_link` block naming `resource` (all of its members).
    ///
    /// ```
    /// use strict_mcp::core::descriptor::{ContentBlock, Resource};
    /// let link = ContentBlock::resource_link(Resource::new("file:///a.txt", "a"));
    /// assert_eq!(serde_json::to_string(&link).unwrap(),
    ///     r#"{"name":"a","type":"resource_link","uri":"file:///a.txt"}"#);
    /// ```
    #[must_use]
    pub fn resource_link(resource: Resource) -> Self {
        ContentBlock::ResourceLink(resource.into())
    }

    /// An embedded resource block.
    ///
    /// ```
    /// use strict_mcp::core::descriptor::{ContentBlock, ResourceContents};
    /// let block = ContentBlock::embedded(ResourceContents::text("mem://a", "x"));
    /// assert_eq!(serde_json::to_string(&block).unwrap(),
    ///     r#"{"resource":{"text":"x","uri":"mem://a"},"type":"resource"}"#);
    /// ```
    #[must_use]
    pub fn embedded(resource: ResourceContents) -> Self {
        ContentBlock::EmbeddedResource(EmbeddedResource::new(resource))
    }

    /// The text of a text block (`None` for every other kind).
    #[must_use]
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::TextContent(t) => Some(&t.text),
            _ => None,
        }
    }
}

impl Eq for ContentBlock {}

/// A resource as listed: the generated `Resource` (`uri`, `name`, optional `title`,
/// `description`, `mimeType`, `size`, `icons`, `annotations`, `_meta`), members in the
/// schema's (alphabetical) order. Its `size` is the generated `i64`: the authoring API
/// ([`ResourceDef::size`](crate::core::ResourceDef::size)) takes a `u64` and refuses one past
/// [`MAX_RESOURCE_SIZE`](crate::core::MAX_RESOURCE_SIZE) when the registry is built.
///
/// ```
/// use strict_mcp::core::descriptor::Resource;
/// let mut r = Resource::new("file:///a.txt", "a");
/// r.size = Some(0);
/// assert_eq!(serde_json::to_string(&r).unwrap(),
///     r#"{"name":"a","size":0,"uri":"file:///a.txt"}"#);
/// ```
pub use crate::wire::Resource;
/// The `icons` of a [`Resource`] (the generated newtype over `Vec<Icon>`).
pub use crate::wire::ResourceIcons;

impl Resource {
    /// A resource with only `uri` and `name`.
    #[must_use]
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Resource {
            annotations: None,
            description: None,
            icons: None,
            meta: None,
            mime_type: None,
            name: name.into(),
            size: None,
            title: None,
            uri: uri.into(),
            extra: Map::new(),
        }
    }
}

impl Eq for Resource {}

/// A resource template: the generated `ResourceTemplate` (`uriTemplate`, `name`, optional
/// `title`, `description`, `mimeType`, `icons`, `annotations`, `_meta`), members in the
/// schema's (alphabetical) order.
pub use crate::wire::ResourceTemplate;
/// The `icons` of a [`ResourceTemplate`] (the generated newtype over `Vec<Icon>`).
pub use crate::wire::ResourceTemplateIcons;

impl ResourceTemplate {
    /// A template with only `uriTemplate` and `name`.
    #[must_use]
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceTemplate {
            annotations: None,
            description: None,
            icons: None,
            meta: None,
            mime_type: None,
            name: name.into(),
            title: None,
            uri_template: uri_template.into(),
            extra: Map::new(),
        }
    }
}

impl Eq for ResourceTemplate {}

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

/// One message of a prompt: the generated `PromptMessage` (`content`, `role`), members in the
/// schema's (alphabetical) order.
///
/// ```
/// use strict_mcp::core::descriptor::PromptMessage;
/// assert_eq!(serde_json::to_string(&PromptMessage::user("Hi")).unwrap(),
///     r#"{"content":{"text":"Hi","type":"text"},"role":"user"}"#);
/// ```
pub use crate::wire::PromptMessage;

impl PromptMessage {
    /// A message from `role`.
    #[must_use]
    pub fn new(role: Role, content: ContentBlock) -> Self {
        PromptMessage {
            content,
            role,
            extra: Map::new(),
        }
    }

    /// A text message from the user.
    #[must_use]
    pub fn user(text: impl Into<String>) -> Self {
        PromptMessage::new(Role::User, ContentBlock::text(text))
    }

    /// A text message from the assistant.
    #[must_use]
    pub fn assistant(text: impl Into<String>) -> Self {
        PromptMessage::new(Role::Assistant, ContentBlock::text(text))
    }
}

impl Eq for PromptMessage {}

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
///     r#"{"content":[{"text":"null","type":"text"}],"structuredContent":null}"#);
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
