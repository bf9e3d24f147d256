//! Descriptor structs that serialise to exactly the 2026-07-28 wire shapes.
//!
//! Where the generated schema type (`crate::wire`, typify output of the pinned schema) has the
//! same bytes, it is used directly: [`Role`] and [`CacheScope`] are the generated enums. The
//! structs stay hand-written, for three reasons that each hold for every one of them:
//!
//! - **Member order.** typify emits members in `schema.json`'s order, which is alphabetical;
//!   these write the schema.ts order (`{"type":"text","text":…}`), which the pinned test bytes,
//!   the conformance fixtures and existing peers' snapshots rely on. Re-serialising through
//!   the generated structs would reorder every result.
//! - **Exact bytes and ranges.** `Tool` keeps its schemas and `CallToolResult` its structured
//!   content as the registered raw JSON text; the generated `ToolInputSchema` and
//!   `structuredContent` re-parse into maps (keys re-sorted, numbers through serde_json).
//!   `size` is `u64` here, `i64` there.
//! - **Ergonomics the public API promises.** `PartialEq`, `Default` on the optional-only
//!   structs, and struct variants on `ContentBlock`; the generated structs carry a flattened
//!   `extra` map and derive neither.
//!
//! That these are the schema's shapes, member for member, is checked rather than assumed:
//! `tests/core_descriptor_generated.rs` decodes each fully populated descriptor into its
//! generated type (the type the client decodes into) with no member left in `extra`, and
//! decodes a full schema example of each into the descriptor with no member lost.
//!
//! Optional members are omitted when `None`; an explicit `Some(false)` or `Some(0)` stays on
//! the wire. Schemas and structured results are kept as raw JSON text so their
//! bytes (and numbers) never pass through a float.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Number, Value};

/// `_meta` object.
pub type Meta = Map<String, Value>;

/// An icon (`Icon`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    /// URI of the icon.
    pub src: String,
    /// MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Sizes such as `48x48`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<String>>,
    /// `light` or `dark`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<String>,
}

/// Behavioural hints of a tool (`ToolAnnotations`). Absent stays absent; `false` stays.
///
/// ```
/// use strict_mcp::core::descriptor::ToolAnnotations;
/// let a = ToolAnnotations { read_only_hint: Some(false), ..Default::default() };
/// assert_eq!(serde_json::to_string(&a).unwrap(), r#"{"readOnlyHint":false}"#);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may perform destructive updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Repeating the call with the same arguments has no additional effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool interacts with an open world of external entities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl ToolAnnotations {
    /// Whether no hint is set (then `annotations` is omitted from the tool).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        *self == ToolAnnotations::default()
    }
}

/// A tool definition as listed (`Tool`). Schemas are the exact registered bytes.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// Unique, case-sensitive name.
    pub name: String,
    /// Display title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description for the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Icons.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Input schema (root `type: object`).
    pub input_schema: Box<RawValue>,
    /// Output schema, when declared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Box<RawValue>>,
    /// Behavioural hints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// Audience role: the generated `Role` (`"user"` or `"assistant"`, same bytes).
pub use crate::wire::Role;

/// Content annotations (`Annotations`); `priority: 0` survives.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// Intended audience.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// Importance from 0 to 1, as a JSON number (`0` stays `0`, never `0.0`; decimal digits
    /// follow serde_json's shortest form, e.g. `0.50` is written `0.5`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<Number>,
    /// ISO 8601 timestamp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

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

/// A prompt argument (`PromptArgument`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptArgument {
    /// Argument name.
    pub name: String,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the argument must be given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
}

/// A prompt as listed (`Prompt`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Prompt {
    /// Name.
    pub name: String,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Vec<PromptArgument>>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
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

/// A completed `tools/call` result (`CallToolResult`, without `resultType`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// Content blocks.
    pub content: Vec<ContentBlock>,
    /// Structured result, exact bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Box<RawValue>>,
    /// `true` for tool failures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
}
