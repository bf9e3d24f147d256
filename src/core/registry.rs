//! The immutable registry: build-time checks, per-request policy, listing with cursors,
//! search, tool calls, resource reads, prompt gets and completion.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures_util::future::{select, Either};
use futures_util::FutureExt as _;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::core::caller::{Caller, Clock, SystemClock};
use crate::core::cursor::{CursorKey, ListKind};
use crate::core::descriptor::ContentBlock;
use crate::core::descriptor::{
    CacheHints, MetaObject, Prompt, Resource, ResourceTemplate, Tool, ToolIcons, ToolInputSchema,
    ToolOutputSchema,
};
use crate::core::error::{BuildError, CoreError, FailureCode, ToolError, ToolFailure};
use crate::core::invocation::{Invocation, Outcome};
use crate::core::policy::{Access, AllowAll, Policy};
use crate::core::prompt::{CompletionReply, PromptDef, PromptReply};
use crate::core::resource::{
    check_uri, match_template, parse_template, timeout_in_range, Part, ReadHandler, ReadReply,
    ResourceDef, ResourceError, TemplateDef,
};
use crate::core::schema::{check_named_payload, check_object_root, CompiledSchema};
use crate::core::search::{self, SearchText};
use crate::core::skills::Skills;
use crate::core::tool::{Arguments, HandlerOutput, SchemaSource, TextCopy, ToolDef, ToolReply};
use crate::wire::headers::{param_headers, ParamHeader};

/// Items per list page (at most 20 tools per page).
pub const DEFAULT_PAGE_SIZE: usize = 20;
/// Search results when no limit is given.
pub const DEFAULT_SEARCH_LIMIT: u32 = 5;
/// Largest accepted search limit.
pub const MAX_SEARCH_LIMIT: u32 = 20;
/// Default cursor lifetime.
pub const DEFAULT_CURSOR_TTL_MS: u64 = 10 * 60 * 1000;
/// Default limit on the encoded `contents` of one read (16 MiB response minus 8 KiB reserve).
pub const DEFAULT_MAX_READ_BYTES: usize = 16 * 1024 * 1024 - 8 * 1024;

struct CompiledTool {
    def: ToolDef,
    input: CompiledSchema,
    output: Option<CompiledSchema>,
    descriptor: Tool,
    /// The input schema's `x-mcp-header` annotations, parsed once at registration so the HTTP
    /// host checks each call without re-reading the schema.
    param_headers: Arc<[ParamHeader]>,
}

struct CompiledTemplate {
    def: TemplateDef,
    parts: Vec<Part>,
}

struct Inner {
    tools: BTreeMap<String, CompiledTool>,
    /// `search_tools`' lower-cased texts, one per tool in `tools`' (name) order.
    search: Vec<SearchText>,
    resources: BTreeMap<String, ResourceDef>,
    templates: Vec<CompiledTemplate>,
    prompts: BTreeMap<String, PromptDef>,
    policy: Arc<dyn Policy>,
    cursor_key: CursorKey,
    clock: Arc<dyn Clock>,
    page_size: usize,
    cursor_ttl_ms: u64,
    max_read_bytes: usize,
    /// The skills catalogue, when one is served.
    skills: Option<Skills>,
    digest: [u8; 32],
}

/// Compiles the tools (schemas included), refusing a repeated name; hashes each by name and
/// schema bytes, in name order.
fn build_tools(
    defs: Vec<ToolDef>,
    hasher: &mut Sha256,
) -> Result<BTreeMap<String, CompiledTool>, BuildError> {
    let mut tools = BTreeMap::new();
    for def in defs {
        let compiled = compile_tool(def)?;
        if tools.contains_key(&compiled.def.name) {
            return Err(BuildError::Duplicate {
                kind: "tool",
                name: compiled.def.name.clone(),
            });
        }
        tools.insert(compiled.def.name.clone(), compiled);
    }
    for (name, t) in &tools {
        hasher.update(b"tool\0");
        hasher.update(name.as_bytes());
        hasher.update(b"\0");
        hasher.update(t.input.raw().get().as_bytes());
        if let Some(o) = &t.output {
            hasher.update(o.raw().get().as_bytes());
        }
    }
    Ok(tools)
}

/// Checks each static resource's URI and time-out, refusing a repeated URI; hashes the URIs
/// in registration order.
fn build_resources(
    defs: Vec<ResourceDef>,
    hasher: &mut Sha256,
) -> Result<BTreeMap<String, ResourceDef>, BuildError> {
    let mut resources = BTreeMap::new();
    for mut def in defs {
        check_uri(def.uri())?;
        check_timeout(def.timeout, "resource", def.uri())?;
        def.check_size()?;
        if resources.contains_key(def.uri()) {
            return Err(BuildError::Duplicate {
                kind: "resource",
                name: def.uri().to_owned(),
            });
        }
        hasher.update(b"resource\0");
        hasher.update(def.uri().as_bytes());
        resources.insert(def.uri().to_owned(), def);
    }
    Ok(resources)
}

/// Parses each template, checks its time-out and that every completer names one of its
/// variables, refusing a repeated template; hashes in registration order, then sorts by
/// template text (the order reads try them in).
fn build_templates(
    defs: Vec<TemplateDef>,
    hasher: &mut Sha256,
) -> Result<Vec<CompiledTemplate>, BuildError> {
    let mut templates: Vec<CompiledTemplate> = Vec::new();
    for def in defs {
        let parts = parse_template(&def.descriptor.uri_template)?;
        check_timeout(
            def.timeout,
            "resource template",
            &def.descriptor.uri_template,
        )?;
        check_completers(&def, &parts)?;
        if templates
            .iter()
            .any(|t| t.def.descriptor.uri_template == def.descriptor.uri_template)
        {
            return Err(BuildError::Duplicate {
                kind: "resource template",
                name: def.descriptor.uri_template.clone(),
            });
        }
        hasher.update(b"template\0");
        hasher.update(def.descriptor.uri_template.as_bytes());
        templates.push(CompiledTemplate { def, parts });
    }
    templates.sort_by(|a, b| {
        a.def
            .descriptor
            .uri_template
            .cmp(&b.def.descriptor.uri_template)
    });
    Ok(templates)
}

/// A completer for a variable the template does not have is a build error.
fn check_completers(def: &TemplateDef, parts: &[Part]) -> Result<(), BuildError> {
    let vars: Vec<&str> = parts
        .iter()
        .filter_map(|p| match p {
            Part::Var(v) => Some(v.as_str()),
            Part::Literal(_) => None,
        })
        .collect();
    match def.completers.keys().find(|k| !vars.contains(&k.as_str())) {
        Some(unknown) => Err(BuildError::Resource {
            uri: def.descriptor.uri_template.clone(),
            reason: format!("completer for unknown variable `{unknown}`"),
        }),
        None => Ok(()),
    }
}

/// Checks each prompt, refusing a repeated name; hashes the names in registration order.
fn build_prompts(
    defs: Vec<PromptDef>,
    hasher: &mut Sha256,
) -> Result<BTreeMap<String, PromptDef>, BuildError> {
    let mut prompts = BTreeMap::new();
    for def in defs {
        def.check()?;
        if prompts.contains_key(def.name()) {
            return Err(BuildError::Duplicate {
                kind: "prompt",
                name: def.name().to_owned(),
            });
        }
        hasher.update(b"prompt\0");
        hasher.update(def.name().as_bytes());
        prompts.insert(def.name().to_owned(), def);
    }
    Ok(prompts)
}

/// A fresh cursor key from the operating system's randomness.
fn random_cursor_key() -> Result<CursorKey, BuildError> {
    CursorKey::random().map_err(|_| BuildError::Schema {
        kind: "registry",
        name: "cursor key".to_owned(),
        reason: "no operating-system randomness for the cursor key".to_owned(),
    })
}

/// Runs one resource handler, a panic (while building its future or while polling it) being
/// a retryable internal error; the handler's own errors become the core's.
async fn call_read_handler(
    handler: &ReadHandler,
    inv: Invocation,
    uri: &str,
    vars: BTreeMap<String, String>,
) -> Result<Outcome<ReadReply>, CoreError> {
    let Ok(future) =
        std::panic::catch_unwind(AssertUnwindSafe(|| handler(inv, uri.to_owned(), vars)))
    else {
        tracing::error!(uri, "resource handler panicked");
        return Err(CoreError::Internal { retryable: true });
    };
    match AssertUnwindSafe(future).catch_unwind().await {
        Err(_) => {
            tracing::error!(uri, "resource handler panicked");
            Err(CoreError::Internal { retryable: true })
        }
        Ok(Err(ResourceError::NotFound)) => Err(CoreError::UnknownResource {
            uri: uri.to_owned(),
        }),
        Ok(Err(ResourceError::Internal { retryable })) => Err(CoreError::Internal { retryable }),
        Ok(Err(ResourceError::Protocol(e))) => Err(e),
        Ok(Ok(outcome)) => Ok(outcome),
    }
}

/// One read's route, found once per request (template matching is not free): the handler,
/// the template variables it is called with, and the item's time-out override.
pub(crate) struct ReadRoute<'r> {
    handler: &'r ReadHandler,
    vars: BTreeMap<String, String>,
    timeout: Option<std::time::Duration>,
    /// The `mimeType` the resource or template declares, echoed in contents that carry none.
    mime_type: Option<&'r str>,
}

impl ReadRoute<'_> {
    /// The time-out override of the routed resource or template; `None` means the server's.
    /// Read by the public [`Registry::read_timeout`], so it is built with every feature set.
    pub(crate) fn timeout(&self) -> Option<std::time::Duration> {
        self.timeout
    }
}

/// Collects tools, resources, templates and prompts, then builds an immutable [`Registry`].
pub struct RegistryBuilder {
    tools: Vec<ToolDef>,
    resources: Vec<ResourceDef>,
    templates: Vec<TemplateDef>,
    prompts: Vec<PromptDef>,
    policy: Arc<dyn Policy>,
    cursor_key: Option<CursorKey>,
    clock: Arc<dyn Clock>,
    page_size: usize,
    cursor_ttl_ms: u64,
    max_read_bytes: usize,
    skills: Option<Skills>,
}

impl fmt::Debug for RegistryBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegistryBuilder")
            .field("tools", &self.tools.len())
            .field("resources", &self.resources.len())
            .field("templates", &self.templates.len())
            .field("prompts", &self.prompts.len())
            .finish_non_exhaustive()
    }
}

impl Default for RegistryBuilder {
    fn default() -> Self {
        RegistryBuilder::new()
    }
}

impl RegistryBuilder {
    /// An empty builder with [`AllowAll`], a random cursor key and the [`SystemClock`].
    #[must_use]
    pub fn new() -> Self {
        RegistryBuilder {
            tools: Vec::new(),
            resources: Vec::new(),
            templates: Vec::new(),
            prompts: Vec::new(),
            policy: Arc::new(AllowAll),
            cursor_key: None,
            clock: Arc::new(SystemClock::new()),
            page_size: DEFAULT_PAGE_SIZE,
            cursor_ttl_ms: DEFAULT_CURSOR_TTL_MS,
            max_read_bytes: DEFAULT_MAX_READ_BYTES,
            skills: None,
        }
    }

    /// Serves a skills catalogue (Skills extension, SEP-2640): every file becomes a static
    /// resource (a URI that another resource also uses fails the build as a duplicate), and
    /// the registry answers `skills/list`, `skills/get` and, when the catalogue turns it on,
    /// `resources/directory/read`. The server declares the extension while this registry is
    /// served.
    #[must_use]
    pub fn skills(mut self, skills: Skills) -> Self {
        self.skills = Some(skills);
        self
    }

    /// Adds a tool.
    #[must_use]
    pub fn tool(mut self, tool: ToolDef) -> Self {
        self.tools.push(tool);
        self
    }

    /// Adds a static resource.
    #[must_use]
    pub fn resource(mut self, resource: ResourceDef) -> Self {
        self.resources.push(resource);
        self
    }

    /// Adds a resource template.
    #[must_use]
    pub fn template(mut self, template: TemplateDef) -> Self {
        self.templates.push(template);
        self
    }

    /// Adds a prompt.
    #[must_use]
    pub fn prompt(mut self, prompt: PromptDef) -> Self {
        self.prompts.push(prompt);
        self
    }

    /// Sets the policy consulted on every request.
    #[must_use]
    pub fn policy(mut self, policy: impl Policy) -> Self {
        self.policy = Arc::new(policy);
        self
    }

    /// Sets the cursor key (share it between instances behind one load balancer).
    #[must_use]
    pub fn cursor_key(mut self, key: CursorKey) -> Self {
        self.cursor_key = Some(key);
        self
    }

    /// Sets the clock (tests use a manual one).
    #[must_use]
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Items per list page (1..=20 for tools; clamped to that range).
    #[must_use]
    pub fn page_size(mut self, size: usize) -> Self {
        self.page_size = size.clamp(1, DEFAULT_PAGE_SIZE);
        self
    }

    /// Cursor lifetime in milliseconds.
    #[must_use]
    pub fn cursor_ttl_ms(mut self, ttl: u64) -> Self {
        self.cursor_ttl_ms = ttl;
        self
    }

    /// Limit on the encoded `contents` of one read.
    #[must_use]
    pub fn max_read_bytes(mut self, limit: usize) -> Self {
        self.max_read_bytes = limit;
        self
    }

    /// Compiles every schema and checks every declaration.
    ///
    /// # Errors
    /// The first problem found, naming the tool, property, prompt or URI; [`BuildError::Empty`]
    /// when nothing was registered.
    pub fn build(mut self) -> Result<Registry, BuildError> {
        if let Some(skills) = &self.skills {
            self.resources.extend(skills.resources());
        }
        if self.tools.is_empty()
            && self.resources.is_empty()
            && self.templates.is_empty()
            && self.prompts.is_empty()
        {
            return Err(BuildError::Empty);
        }
        // The digest covers the catalogue in this order: tools, resources, templates, prompts.
        let mut hasher = Sha256::new();
        let tools = build_tools(self.tools, &mut hasher)?;
        let search = tools
            .values()
            .map(|t| {
                let d = &t.def;
                SearchText::new(
                    &d.name,
                    d.title.as_deref(),
                    d.description.as_deref(),
                    &d.keywords,
                )
            })
            .collect();
        let resources = build_resources(self.resources, &mut hasher)?;
        let templates = build_templates(self.templates, &mut hasher)?;
        let prompts = build_prompts(self.prompts, &mut hasher)?;
        if let Some(skills) = &self.skills {
            hasher.update(b"skills\0");
            hasher.update(skills.digest_input());
        }
        let cursor_key = match self.cursor_key {
            Some(k) => k,
            None => random_cursor_key()?,
        };
        Ok(Registry {
            inner: Arc::new(Inner {
                tools,
                search,
                resources,
                templates,
                prompts,
                policy: self.policy,
                cursor_key,
                clock: self.clock,
                page_size: self.page_size,
                cursor_ttl_ms: self.cursor_ttl_ms,
                max_read_bytes: self.max_read_bytes,
                skills: self.skills,
                digest: hasher.finalize().into(),
            }),
        })
    }
}

/// Gives each of `contents` for the read `uri` that names no `mimeType` the one its resource
/// or template declares, so a client reads the type where it reads the bytes. Contents for
/// other URIs (a directory's members) and contents that name their own type are kept as the
/// handler wrote them.
fn echo_mime_type(
    contents: &mut [crate::core::descriptor::ResourceContents],
    uri: &str,
    declared: &str,
) {
    use crate::core::descriptor::ResourceContents;
    for item in contents {
        let (at, mime_type) = match item {
            ResourceContents::TextResourceContents(c) => (&c.uri, &mut c.mime_type),
            ResourceContents::BlobResourceContents(c) => (&c.uri, &mut c.mime_type),
        };
        if at == uri && mime_type.is_none() {
            *mime_type = Some(declared.to_owned());
        }
    }
}

fn check_timeout(
    timeout: Option<std::time::Duration>,
    kind: &'static str,
    name: &str,
) -> Result<(), BuildError> {
    match timeout {
        Some(t) if !timeout_in_range(t) => Err(BuildError::InvalidTimeout {
            kind,
            name: name.to_owned(),
            timeout: t,
        }),
        _ => Ok(()),
    }
}

fn valid_tool_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

fn compile_source(
    source: &SchemaSource,
    kind: &'static str,
    name: &str,
) -> Result<CompiledSchema, BuildError> {
    let result = match source {
        SchemaSource::Derived(v) => CompiledSchema::compile_value(v),
        SchemaSource::Text(t) => CompiledSchema::compile(t),
    };
    result.map_err(|reason| BuildError::Schema {
        kind,
        name: name.to_owned(),
        reason,
    })
}

fn compile_tool(def: ToolDef) -> Result<CompiledTool, BuildError> {
    let name = def.name.clone();
    if !valid_tool_name(&name) {
        return Err(BuildError::InvalidName { name });
    }
    check_timeout(def.timeout, "tool", &name)?;
    let input = compile_source(&def.input, "tool input", &name)?;
    check_object_root(input.value()).map_err(|reason| BuildError::Schema {
        kind: "tool input",
        name: name.clone(),
        reason,
    })?;
    let param_headers = param_headers(input.value()).map_err(|v| BuildError::McpHeader {
        tool: name.clone(),
        property: v.property,
        reason: v.reason,
    })?;
    let output = match &def.output {
        None => None,
        Some(source) => {
            let compiled = compile_source(source, "tool output", &name)?;
            if def.typed {
                check_named_payload(compiled.value()).map_err(|reason| {
                    BuildError::UnnamedPayload {
                        tool: name.clone(),
                        reason: match def.output_type {
                            Some(ty) => format!("{reason} (output type `{ty}`)"),
                            None => reason,
                        },
                    }
                })?;
            } else if compiled.value().get("type") == Some(&Value::String("array".to_owned())) {
                return Err(BuildError::UnnamedPayload {
                    tool: name.clone(),
                    reason: "root is a bare array".to_owned(),
                });
            }
            Some(compiled)
        }
    };
    let input_schema =
        ToolInputSchema::new(input.raw().to_owned()).map_err(|e| BuildError::Schema {
            kind: "tool input",
            name: name.clone(),
            reason: e.to_string(),
        })?;
    let descriptor = Tool {
        annotations: (!def.annotations.is_empty()).then(|| def.annotations.clone()),
        description: def.description.clone(),
        icons: def.icons.clone().map(ToolIcons::from),
        input_schema,
        meta: def.meta.clone().map(MetaObject::from),
        name: name.clone(),
        output_schema: output
            .as_ref()
            .map(|o| ToolOutputSchema::registered(o.raw().to_owned())),
        title: def.title.clone(),
        extra: serde_json::Map::new(),
    };
    Ok(CompiledTool {
        def,
        input,
        output,
        descriptor,
        param_headers: param_headers.into(),
    })
}

/// One page of a list, with the cursor of the next page and cache hints.
#[derive(Debug, Clone)]
pub struct Page<T> {
    /// The items, in the list's deterministic order.
    pub items: Vec<T>,
    /// Cursor of the next page, if any.
    pub next_cursor: Option<String>,
    /// Cache hints of this page (every page of a list uses the same scope).
    pub cache: CacheHints,
}

impl<T: Serialize> Page<T> {
    /// The exact wire result body: `{<key>: [...], "nextCursor"?, "ttlMs", "cacheScope"}`.
    ///
    /// Serialised directly (never through `serde_json::Value`), so registered schemas keep
    /// their bytes, member order and numbers.
    ///
    /// ```
    /// use strict_mcp::core::{Caller, DynamicOutput, Invocation, RegistryBuilder, ToolDef};
    /// let schema = r#"{"type":"object","properties":{"n":{"type":"integer","maximum":123456789012345678901234567890}}}"#;
    /// let tool = ToolDef::dynamic("t", schema, None, |_i: Invocation, _a| async move {
    ///     Ok(DynamicOutput::default())
    /// });
    /// let registry = RegistryBuilder::new().tool(tool).build().unwrap();
    /// let page = registry.list_tools(&Caller::anonymous(), None).unwrap();
    /// assert_eq!(
    ///     page.to_result("tools").get(),
    ///     format!(r#"{{"tools":[{{"inputSchema":{schema},"name":"t"}}],"ttlMs":0,"cacheScope":"private"}}"#)
    /// );
    /// ```
    ///
    /// # Panics
    /// Never for the descriptor types of this crate (their serialisation cannot fail).
    #[must_use]
    pub fn to_result(&self, key: &str) -> Box<RawValue> {
        struct Body<'a, T>(&'a Page<T>, &'a str);
        impl<T: Serialize> Serialize for Body<'_, T> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeMap as _;
                let page = self.0;
                let mut map = serializer.serialize_map(None)?;
                map.serialize_entry(self.1, &page.items)?;
                if let Some(c) = &page.next_cursor {
                    map.serialize_entry("nextCursor", c)?;
                }
                map.serialize_entry("ttlMs", &page.cache.ttl_ms)?;
                map.serialize_entry("cacheScope", &page.cache.cache_scope)?;
                map.end()
            }
        }
        let text = serde_json::to_string(&Body(self, key)).expect("descriptors serialise");
        RawValue::from_string(text).expect("serde_json output is JSON")
    }
}

/// One search result: what a model needs to pick a tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SearchHit {
    /// Tool name.
    pub name: String,
    /// Display title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// The result of a search: `{tools, truncated}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SearchReply {
    /// Matching tools, best first (ties by name).
    pub tools: Vec<SearchHit>,
    /// Whether more tools matched than the limit allowed.
    pub truncated: bool,
}

/// What a completion request refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompletionRef {
    /// `ref/prompt`.
    Prompt {
        /// Prompt name.
        name: String,
    },
    /// `ref/resource` (a URI template registered with the registry).
    Resource {
        /// The URI template text.
        uri: String,
    },
}

/// The immutable, shareable registry. Clone it freely (one `Arc`); a server swaps in a new
/// one atomically to change the catalogue.
#[derive(Clone)]
pub struct Registry {
    inner: Arc<Inner>,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("tools", &self.inner.tools.len())
            .field("resources", &self.inner.resources.len())
            .field("templates", &self.inner.templates.len())
            .field("prompts", &self.inner.prompts.len())
            .finish_non_exhaustive()
    }
}

impl Registry {
    /// Whether any tool is registered (the server declares the `tools` capability then).
    #[must_use]
    pub fn has_tools(&self) -> bool {
        !self.inner.tools.is_empty()
    }

    /// Whether any tool may run as a task (the Tasks extension is then served and advertised).
    #[must_use]
    pub fn has_task_tools(&self) -> bool {
        self.inner
            .tools
            .values()
            .any(|t| t.def.task != crate::core::tasks::TaskMode::Never)
    }

    /// The task mode of the tool with this name (`Never` for an unknown one). It asks no
    /// policy: the call path asks it once per request (O28), and a refusal that depends on the
    /// mode checks [`Registry::tool_visible`] first, so it never tells a caller that a hidden
    /// tool exists.
    #[must_use]
    pub fn tool_task_mode(&self, name: &str) -> crate::core::tasks::TaskMode {
        self.inner
            .tools
            .get(name)
            .map_or(crate::core::tasks::TaskMode::Never, |t| t.def.task)
    }

    /// Whether a tool with this name exists and the policy shows it to `caller`.
    #[must_use]
    pub fn tool_visible(&self, caller: &Caller, name: &str) -> bool {
        self.inner.tools.contains_key(name) && self.inner.policy.tool(caller, name).is_visible()
    }

    /// Whether any resource or template is registered.
    #[must_use]
    pub fn has_resources(&self) -> bool {
        !self.inner.resources.is_empty() || !self.inner.templates.is_empty()
    }

    /// Whether any prompt is registered.
    #[must_use]
    pub fn has_prompts(&self) -> bool {
        !self.inner.prompts.is_empty()
    }

    /// The skills catalogue served, if any (the server declares the Skills extension then).
    #[must_use]
    pub fn skills(&self) -> Option<&Skills> {
        self.inner.skills.as_ref()
    }

    /// `skills/list`: the caller's visible skills ([`Policy::skill`]), by `SKILL.md` URI,
    /// paginated like the base lists; an entry is never split across pages.
    ///
    /// # Errors
    /// -32602 for a bad cursor.
    pub fn list_skills(
        &self,
        caller: &Caller,
        cursor: Option<&str>,
    ) -> Result<Page<crate::wire::skills::SkillEntry>, CoreError> {
        let visible = self
            .inner
            .skills
            .iter()
            .flat_map(Skills::entries)
            .filter(|e| self.inner.policy.skill(caller, &e.uri).is_visible());
        self.paginate(ListKind::Skills, caller, cursor, visible)
    }

    /// `skills/get`: the entry of the skill whose `SKILL.md` is `uri`, listed or not.
    ///
    /// # Errors
    /// -32602 naming the URI when no visible skill has it.
    pub fn get_skill(
        &self,
        caller: &Caller,
        uri: &str,
    ) -> Result<crate::wire::skills::SkillEntry, CoreError> {
        self.inner
            .skills
            .as_ref()
            .and_then(|s| s.entry(uri))
            .filter(|e| self.inner.policy.skill(caller, &e.uri).is_visible())
            .cloned()
            .ok_or_else(|| CoreError::InvalidParams {
                message: format!("no skill is served at {uri}"),
            })
    }

    /// `resources/directory/read`: the direct children of the served directory `uri` (a skill
    /// root or a directory below one), by URI, paginated; files the caller may not see
    /// ([`Policy::resource`]) are left out, and a directory of a hidden skill is unknown.
    ///
    /// # Errors
    /// -32602 for a URI that is no served directory, or a bad cursor (also one minted for
    /// another directory).
    pub fn read_directory(
        &self,
        caller: &Caller,
        uri: &str,
        cursor: Option<&str>,
    ) -> Result<Page<Resource>, CoreError> {
        let directory = self
            .inner
            .skills
            .as_ref()
            .and_then(|s| s.directory(uri))
            .filter(|d| self.inner.policy.skill(caller, &d.skill).is_visible())
            .ok_or_else(|| CoreError::InvalidParams {
                message: format!("{uri} is not a directory this server serves"),
            })?;
        let visible = directory.children.iter().filter(|r| {
            r.mime_type.as_deref() == Some(crate::wire::skills::DIRECTORY_MIME_TYPE)
                || self.inner.policy.resource(caller, &r.uri).is_visible()
        });
        let mut hasher = Sha256::new();
        hasher.update(self.inner.digest);
        hasher.update(uri.as_bytes());
        let bound: [u8; 32] = hasher.finalize().into();
        self.paginate_bound(ListKind::Directory, caller, cursor, visible, &bound)
    }

    /// A digest of the catalogue (names and schemas); changes when the registry changes.
    #[must_use]
    pub fn digest(&self) -> [u8; 32] {
        self.inner.digest
    }

    /// One page of the caller's visible items. `visible` is walked lazily (the policy runs
    /// per item as it is reached) and only the page's items are cloned, so a page costs the
    /// policy checks up to its end plus one, not a clone of the whole catalogue: the first
    /// page of a 10 k-tool registry looks at 21 tools (issue #23's registry curve).
    fn paginate<'a, T: Clone + 'a>(
        &self,
        kind: ListKind,
        caller: &Caller,
        cursor: Option<&str>,
        visible: impl Iterator<Item = &'a T>,
    ) -> Result<Page<T>, CoreError> {
        self.paginate_bound(kind, caller, cursor, visible, &self.inner.digest)
    }

    /// [`Registry::paginate`] with cursors bound to `bound` instead of the registry digest
    /// (a directory listing binds them to its URI as well).
    fn paginate_bound<'a, T: Clone + 'a>(
        &self,
        kind: ListKind,
        caller: &Caller,
        cursor: Option<&str>,
        mut visible: impl Iterator<Item = &'a T>,
        bound: &[u8; 32],
    ) -> Result<Page<T>, CoreError> {
        let inner = &self.inner;
        let now = inner.clock.now_ms();
        let start = match cursor {
            None => 0,
            Some(c) => inner.cursor_key.open(kind, caller, bound, c, now)? as usize,
        };
        // A cursor past the end of what this caller sees is refused; one exactly at the end
        // yields an empty last page.
        for _ in 0..start {
            if visible.next().is_none() {
                return Err(CoreError::InvalidCursor);
            }
        }
        let items: Vec<T> = visible.by_ref().take(inner.page_size).cloned().collect();
        let end = start + items.len();
        let next_cursor = visible.next().is_some().then(|| {
            inner.cursor_key.mint(
                kind,
                caller,
                bound,
                u32::try_from(end).unwrap_or(u32::MAX),
                now.saturating_add(inner.cursor_ttl_ms),
            )
        });
        Ok(Page {
            items,
            next_cursor,
            cache: CacheHints::PRIVATE_NO_STORE,
        })
    }

    /// `tools/list`: the caller's visible tools, by name, paginated.
    ///
    /// The cursor carries the last name served (a version-2 cursor) and the next page
    /// seeks to it in the name-ordered index, so a page costs O(log n + page) plus the policy
    /// checks of its candidates (its tools, the hidden ones between them and one more to know
    /// whether a next page exists; O28), wherever it lies in the catalogue (issue #23). A
    /// cursor is bound to the registry digest, so the name it carries is always one of this
    /// registry's (a cursor of a changed registry is refused, -32602). When the policy hides
    /// or shows tools between two pages, the walk resumes after the last name served: a tool
    /// that stays visible is never skipped or repeated; nothing visible after it is an empty
    /// last page.
    ///
    /// # Errors
    /// -32602 for an invalid, foreign or expired cursor.
    pub fn list_tools(
        &self,
        caller: &Caller,
        cursor: Option<&str>,
    ) -> Result<Page<Tool>, CoreError> {
        use std::ops::Bound;
        let inner = &self.inner;
        let now = inner.clock.now_ms();
        let after = match cursor {
            None => None,
            Some(c) => {
                Some(
                    inner
                        .cursor_key
                        .open_after(ListKind::Tools, caller, &inner.digest, c, now)?,
                )
            }
        };
        let start = match &after {
            None => Bound::Unbounded,
            Some(name) => Bound::Excluded(name.as_str()),
        };
        let mut visible = inner
            .tools
            .range::<str, _>((start, Bound::Unbounded))
            .map(|(_, t)| t)
            .filter(|t| inner.policy.tool(caller, &t.def.name).is_visible());
        let items: Vec<Tool> = visible
            .by_ref()
            .take(inner.page_size)
            .map(|t| t.descriptor.clone())
            .collect();
        let next_cursor = match items.last() {
            Some(last) if visible.next().is_some() => Some(
                inner
                    .cursor_key
                    .mint_after(
                        ListKind::Tools,
                        caller,
                        &inner.digest,
                        &last.name,
                        now.saturating_add(inner.cursor_ttl_ms),
                    )
                    .ok_or(CoreError::Internal { retryable: false })?,
            ),
            _ => None,
        };
        Ok(Page {
            items,
            next_cursor,
            cache: CacheHints::PRIVATE_NO_STORE,
        })
    }

    /// One visible tool definition (compact `get_tool_details`, direct pre-dispatch check).
    ///
    /// # Errors
    /// [`CoreError::UnknownTool`] for unknown and hidden tools alike.
    pub fn tool(&self, caller: &Caller, name: &str) -> Result<Tool, CoreError> {
        self.tool_ref(caller, name).cloned()
    }

    /// The `x-mcp-header` annotations of a tool the caller sees, parsed when it was registered
    /// (empty when it has none); what the HTTP host checks a `tools/call`'s headers against.
    ///
    /// # Errors
    /// [`CoreError::UnknownTool`] for an unknown or hidden tool.
    pub fn param_headers(
        &self,
        caller: &Caller,
        name: &str,
    ) -> Result<Arc<[ParamHeader]>, CoreError> {
        self.inner
            .tools
            .get(name)
            .filter(|_| self.inner.policy.tool(caller, name).is_visible())
            .map(|t| t.param_headers.clone())
            .ok_or_else(|| CoreError::UnknownTool {
                name: name.to_owned(),
            })
    }

    /// As [`Registry::tool`], borrowed (the per-call path needs no copy).
    pub(crate) fn tool_ref(&self, caller: &Caller, name: &str) -> Result<&Tool, CoreError> {
        self.inner
            .tools
            .get(name)
            .filter(|_| self.inner.policy.tool(caller, name).is_visible())
            .map(|t| &t.descriptor)
            .ok_or_else(|| CoreError::UnknownTool {
                name: name.to_owned(),
            })
    }

    /// Searches the caller's visible tools by name, title, description and keywords. Never
    /// runs a handler. `limit` defaults to 5 and must be within 1..=20.
    ///
    /// # Errors
    /// -32602 when `limit` is 0 or above 20.
    pub fn search_tools(
        &self,
        caller: &Caller,
        query: &str,
        limit: Option<u32>,
    ) -> Result<SearchReply, CoreError> {
        let limit = limit.unwrap_or(DEFAULT_SEARCH_LIMIT);
        if !(1..=MAX_SEARCH_LIMIT).contains(&limit) {
            return Err(CoreError::InvalidParams {
                message: format!("limit must be between 1 and {MAX_SEARCH_LIMIT}"),
            });
        }
        // The texts were lower-cased at build; the best `limit` are kept in a bounded heap;
        // the policy runs (O28) for each match that changes the answer (`search::top`).
        let tokens = search::query_tokens(query);
        let policy = &self.inner.policy;
        let (kept, truncated) = search::top(
            self.inner.search.iter().zip(self.inner.tools.values()),
            &tokens,
            limit as usize,
            |t: &&CompiledTool| policy.tool(caller, &t.def.name).is_visible(),
        );
        let tools = kept
            .into_iter()
            .map(|t| SearchHit {
                name: t.def.name.clone(),
                title: t.def.title.clone(),
                description: t.def.description.clone(),
            })
            .collect();
        Ok(SearchReply { tools, truncated })
    }

    /// `tools/call`: policy, recovery check, argument validation, the handler (panics caught,
    /// cancellation observed), then output validation.
    ///
    /// `arguments` are the exact bytes from the request (`None` means `{}`).
    ///
    /// # Errors
    /// [`CoreError::UnknownTool`] for unknown and hidden tools (byte-identical); protocol
    /// errors a handler returns (e.g. -32021). Everything else is a [`ToolReply::Failure`].
    pub async fn call_tool(
        &self,
        inv: Invocation,
        name: &str,
        arguments: Option<&RawValue>,
    ) -> Result<ToolReply, CoreError> {
        let tool = self.visible_tool(inv.caller(), name)?;
        self.call_visible(inv, tool, arguments, TextCopy::Include)
            .await
    }

    /// [`Registry::call_tool`] with the typed text fallback as `text_copy` says: the server's
    /// wire result asks for none ([`TextCopy`]).
    #[cfg(feature = "server")]
    pub(crate) async fn call_tool_as(
        &self,
        inv: Invocation,
        name: &str,
        arguments: Option<&RawValue>,
        text_copy: TextCopy,
    ) -> Result<ToolReply, CoreError> {
        let tool = self.visible_tool(inv.caller(), name)?;
        self.call_visible(inv, tool, arguments, text_copy).await
    }

    /// A tool the caller may see, with the policy's answer for this request: the policy runs
    /// once per request, and every later stage (the publication's wrapper, the call) reads
    /// the answer from here.
    ///
    /// # Errors
    /// [`CoreError::UnknownTool`] for unknown and hidden tools alike.
    pub(crate) fn visible_tool(
        &self,
        caller: &Caller,
        name: &str,
    ) -> Result<VisibleTool<'_>, CoreError> {
        self.visible_tool_as(caller, name, None)
    }

    /// As [`Registry::visible_tool`], with the policy's answer for this request when someone
    /// already asked for it ([`Registry::tool_decision`]), so the policy runs once per request.
    pub(crate) fn visible_tool_as(
        &self,
        caller: &Caller,
        name: &str,
        decided: Option<Access>,
    ) -> Result<VisibleTool<'_>, CoreError> {
        let unknown = || CoreError::UnknownTool {
            name: name.to_owned(),
        };
        let tool = self.inner.tools.get(name).ok_or_else(unknown)?;
        match decided.unwrap_or_else(|| self.inner.policy.tool(caller, name)) {
            Access::Hidden => Err(unknown()),
            access => Ok(VisibleTool { tool, access }),
        }
    }

    /// The policy's one answer for the registered tool `name`, with its `x-mcp-header`
    /// annotations when the caller may see it: what the HTTP host checks a direct
    /// `tools/call`'s headers against, and what [`Registry::visible_tool_as`] then
    /// reuses. `None` for an unknown tool (the policy is not asked).
    #[cfg(feature = "server")]
    pub(crate) fn tool_decision(
        &self,
        caller: &Caller,
        name: &str,
    ) -> Option<(Access, Option<Arc<[ParamHeader]>>)> {
        let tool = self.inner.tools.get(name)?;
        let access = self.inner.policy.tool(caller, name);
        let headers = access.is_visible().then(|| tool.param_headers.clone());
        Some((access, headers))
    }

    /// As [`Registry::call_tool`], for a tool the policy already answered for this request.
    pub(crate) async fn call_visible(
        &self,
        inv: Invocation,
        visible: VisibleTool<'_>,
        arguments: Option<&RawValue>,
        text_copy: TextCopy,
    ) -> Result<ToolReply, CoreError> {
        let tool = visible.tool;
        if visible.access == Access::ListOnly {
            return Ok(ToolReply::Failure(ToolFailure::new(
                FailureCode::UnavailableTool,
                "This tool is not available to the caller.",
            )));
        }
        if inv.is_recovery() && !tool.def.recovery_safe {
            return Ok(ToolReply::Failure(ToolFailure::new(
                FailureCode::AlreadyCompleted,
                "The operation already completed; it is not run again.",
            )));
        }
        if inv.is_cancelled() {
            return Ok(ToolReply::Failure(cancelled()));
        }
        let empty: Box<RawValue>;
        let raw: &RawValue = match arguments {
            Some(raw) => raw,
            None => {
                empty = RawValue::from_string("{}".to_owned())
                    .map_err(|_| CoreError::Internal { retryable: false })?;
                &empty
            }
        };
        // An explicit null on an optional property is read as absent (see validate_arguments).
        // The text stays borrowed from the request unless that rewrote it; the value the
        // schema checked goes to the handler (a typed one reads it instead of parsing again).
        let args = match tool.input.validate_arguments_value(raw.get()) {
            Ok((Cow::Borrowed(_), value)) => Arguments {
                text: Cow::Borrowed(raw),
                value,
            },
            Ok((Cow::Owned(text), value)) => Arguments {
                text: Cow::Owned(
                    RawValue::from_string(text)
                        .map_err(|_| CoreError::Internal { retryable: false })?,
                ),
                value,
            },
            Err(diagnostics) => {
                return Ok(ToolReply::Failure(
                    ToolFailure::new(
                        FailureCode::InvalidArguments,
                        "The arguments do not match the tool's input schema.",
                    )
                    .with_diagnostics(diagnostics),
                ))
            }
        };
        let outcome = match run_handler(tool, inv, args).await {
            Ok(outcome) => outcome,
            Err(reply) => return reply,
        };
        Ok(match outcome {
            Outcome::InputRequired { requests } => ToolReply::InputRequired { requests },
            Outcome::Complete(out) => checked_output(tool, out, text_copy),
        })
    }

    /// `resources/list`: the caller's visible static resources, by URI, paginated.
    ///
    /// # Errors
    /// -32602 for a bad cursor.
    pub fn list_resources(
        &self,
        caller: &Caller,
        cursor: Option<&str>,
    ) -> Result<Page<Resource>, CoreError> {
        let visible = self
            .inner
            .resources
            .values()
            .filter(|r| self.inner.policy.resource(caller, r.uri()).is_visible())
            .map(|r| &r.descriptor);
        self.paginate(ListKind::Resources, caller, cursor, visible)
    }

    /// `resources/templates/list`: visible templates, by template text, paginated.
    ///
    /// # Errors
    /// -32602 for a bad cursor.
    pub fn list_resource_templates(
        &self,
        caller: &Caller,
        cursor: Option<&str>,
    ) -> Result<Page<ResourceTemplate>, CoreError> {
        let visible = self
            .inner
            .templates
            .iter()
            .filter(|t| {
                self.inner
                    .policy
                    .resource(caller, &t.def.descriptor.uri_template)
                    .is_visible()
            })
            .map(|t| &t.def.descriptor);
        self.paginate(ListKind::Templates, caller, cursor, visible)
    }

    /// `resources/read`: a static resource, else the first template (by template text) that
    /// matches. Unknown, hidden and empty reads are -32602 with `data.uri` (never -32002).
    ///
    /// The handler's [`Invocation`] carries the request's cancellation token
    /// ([`Invocation::cancelled`]); a read requested with an already cancelled token ends with
    /// [`CoreError::Cancelled`] without running the handler. Unlike a tool call, a running
    /// read is not abandoned when the token fires: the handler decides how to stop, and the
    /// server's time-out bounds one that does not.
    ///
    /// # Errors
    /// -32602 (unknown/hidden/not found/denied), -32603 (internal, too large or cancelled),
    /// -32021.
    pub async fn read_resource(
        &self,
        inv: Invocation,
        uri: &str,
    ) -> Result<Outcome<ReadReply>, CoreError> {
        self.read_routed(inv, uri, self.route_read(uri).as_ref())
            .await
    }

    /// [`Registry::read_resource`] with the route already found: the server routes a read
    /// once and takes both the time-out and the handler from that one route.
    pub(crate) async fn read_routed(
        &self,
        inv: Invocation,
        uri: &str,
        route: Option<&ReadRoute<'_>>,
    ) -> Result<Outcome<ReadReply>, CoreError> {
        let not_found = || CoreError::UnknownResource {
            uri: uri.to_owned(),
        };
        let route = route.ok_or_else(not_found)?;
        let (handler, vars) = (route.handler, route.vars.clone());
        match self.inner.policy.resource(inv.caller(), uri) {
            Access::Hidden => return Err(not_found()),
            Access::ListOnly => {
                return Err(CoreError::InvalidParams {
                    message: "Resource access denied".to_owned(),
                })
            }
            Access::Allowed => {}
        }
        if inv.is_cancelled() {
            return Err(CoreError::Cancelled);
        }
        let mut reply = match call_read_handler(handler, inv, uri, vars).await? {
            Outcome::InputRequired { requests } => return Ok(Outcome::InputRequired { requests }),
            Outcome::Complete(reply) => reply,
        };
        if let Some(declared) = route.mime_type {
            echo_mime_type(&mut reply.contents, uri, declared);
        }
        if reply.contents.is_empty() {
            return Err(not_found());
        }
        let size = serde_json::to_vec(&reply.contents)
            .map_err(|_| CoreError::Internal { retryable: false })?
            .len();
        if size > self.inner.max_read_bytes {
            return Err(CoreError::ResourceTooLarge {
                uri: uri.to_owned(),
            });
        }
        Ok(Outcome::Complete(ReadReply {
            cache: CacheHints::PRIVATE_NO_STORE,
            ..reply
        }))
    }

    /// Where a read of `uri` goes: the static resource, else the first template (by template
    /// text) that matches. Policy is not consulted here; [`Registry::read_routed`] does.
    pub(crate) fn route_read(&self, uri: &str) -> Option<ReadRoute<'_>> {
        if let Some(r) = self.inner.resources.get(uri) {
            return Some(ReadRoute {
                handler: &r.handler,
                vars: BTreeMap::new(),
                timeout: r.timeout,
                mime_type: r.descriptor.mime_type.as_deref(),
            });
        }
        self.inner.templates.iter().find_map(|t| {
            match_template(&t.parts, uri).map(|vars| ReadRoute {
                handler: &t.def.handler,
                vars,
                timeout: t.def.timeout,
                mime_type: t.def.descriptor.mime_type.as_deref(),
            })
        })
    }

    /// The time-out override of the resource or template a read of `uri` would run
    /// ([`ResourceDef::timeout`], [`TemplateDef::timeout`]); `None` means the server's
    /// default. Policy is not consulted: the answer never reaches the client.
    ///
    /// ```
    /// use std::time::Duration;
    /// use strict_mcp::core::{Invocation, ReadReply, RegistryBuilder, TemplateDef};
    /// use strict_mcp::core::descriptor::ResourceContents;
    /// let notes = TemplateDef::new("mem://notes/{id}", "notes", |_i: Invocation, uri: String, _v| async move {
    ///     Ok(ReadReply::new(vec![ResourceContents::text(uri, "note")]))
    /// }).timeout(Duration::from_millis(500));
    /// let registry = RegistryBuilder::new().template(notes).build().unwrap();
    /// assert_eq!(registry.read_timeout("mem://notes/7"), Some(Duration::from_millis(500)));
    /// assert_eq!(registry.read_timeout("mem://other"), None);
    /// ```
    #[must_use]
    pub fn read_timeout(&self, uri: &str) -> Option<std::time::Duration> {
        self.route_read(uri).and_then(|route| route.timeout())
    }

    /// The time-out override of the prompt `name` ([`PromptDef::timeout`]); `None` means the
    /// server's default. Policy is not consulted: the answer never reaches the client.
    #[must_use]
    pub fn prompt_timeout(&self, name: &str) -> Option<std::time::Duration> {
        self.inner.prompts.get(name).and_then(|p| p.timeout)
    }

    /// The `tools/call` time-out override of the tool `name`
    /// ([`ToolDef::timeout`](crate::core::ToolDef::timeout)); `None` for a tool without one
    /// (and for no such tool), which the server bounds by its default. Policy is not
    /// consulted: the answer never reaches the client.
    #[must_use]
    pub fn tool_timeout(&self, name: &str) -> Option<std::time::Duration> {
        self.inner.tools.get(name).and_then(|t| t.def.timeout)
    }

    /// `prompts/list`: visible prompts, by name, paginated.
    ///
    /// # Errors
    /// -32602 for a bad cursor.
    pub fn list_prompts(
        &self,
        caller: &Caller,
        cursor: Option<&str>,
    ) -> Result<Page<Prompt>, CoreError> {
        let visible = self
            .inner
            .prompts
            .values()
            .filter(|p| self.inner.policy.prompt(caller, p.name()).is_visible())
            .map(|p| &p.descriptor);
        self.paginate(ListKind::Prompts, caller, cursor, visible)
    }

    fn visible_prompt(&self, caller: &Caller, name: &str) -> Result<&PromptDef, CoreError> {
        self.inner
            .prompts
            .get(name)
            .filter(|_| self.inner.policy.prompt(caller, name).is_visible())
            .ok_or_else(|| CoreError::UnknownPrompt {
                name: name.to_owned(),
            })
    }

    /// `prompts/get`: checks the arguments against the declaration (unknown or missing
    /// required → -32602), then runs the handler. Cancellation as for
    /// [`Registry::read_resource`].
    ///
    /// # Errors
    /// -32602, -32603 (internal or cancelled) or a handler's protocol error.
    pub async fn get_prompt(
        &self,
        inv: Invocation,
        name: &str,
        arguments: BTreeMap<String, String>,
    ) -> Result<Outcome<PromptReply>, CoreError> {
        let prompt = self.visible_prompt(inv.caller(), name)?;
        if self.inner.policy.prompt(inv.caller(), name) == Access::ListOnly {
            return Err(CoreError::InvalidParams {
                message: "Prompt access denied".to_owned(),
            });
        }
        let declared = prompt
            .descriptor
            .arguments
            .as_ref()
            .map_or(&[][..], |a| a.as_slice());
        if let Some(unknown) = arguments
            .keys()
            .find(|k| !declared.iter().any(|a| &a.name == *k))
        {
            return Err(CoreError::InvalidParams {
                message: format!("unknown argument `{unknown}`"),
            });
        }
        if let Some(missing) = declared
            .iter()
            .find(|a| a.required == Some(true) && !arguments.contains_key(&a.name))
        {
            return Err(CoreError::InvalidParams {
                message: format!("missing required argument `{}`", missing.name),
            });
        }
        if inv.is_cancelled() {
            return Err(CoreError::Cancelled);
        }
        let Ok(future) =
            std::panic::catch_unwind(AssertUnwindSafe(|| (prompt.handler)(inv, arguments)))
        else {
            tracing::error!(prompt = name, "prompt handler panicked");
            return Err(CoreError::Internal { retryable: true });
        };
        match AssertUnwindSafe(future).catch_unwind().await {
            Err(_) => {
                tracing::error!(prompt = name, "prompt handler panicked");
                Err(CoreError::Internal { retryable: true })
            }
            Ok(result) => result.map_err(CoreError::from),
        }
    }

    /// `completion/complete` for a prompt argument or a template variable. At most 100
    /// values; `total`/`hasMore` set when more exist. No completer → no values.
    ///
    /// # Errors
    /// -32602 for an unknown/hidden prompt or template, or an undeclared argument.
    pub fn complete(
        &self,
        caller: &Caller,
        reference: &CompletionRef,
        argument: &str,
        value: &str,
        context: &BTreeMap<String, String>,
    ) -> Result<CompletionReply, CoreError> {
        let completer = match reference {
            CompletionRef::Prompt { name } => {
                let prompt = self.visible_prompt(caller, name)?;
                let declared = prompt
                    .descriptor
                    .arguments
                    .iter()
                    .flat_map(|a| a.iter())
                    .any(|a| a.name == argument);
                if !declared {
                    return Err(CoreError::InvalidParams {
                        message: format!("unknown argument `{argument}`"),
                    });
                }
                prompt.completers.get(argument)
            }
            CompletionRef::Resource { uri } => {
                let template = self
                    .inner
                    .templates
                    .iter()
                    .find(|t| &t.def.descriptor.uri_template == uri)
                    .filter(|_| self.inner.policy.resource(caller, uri).is_visible())
                    .ok_or_else(|| CoreError::UnknownResource { uri: uri.clone() })?;
                let declared = template
                    .parts
                    .iter()
                    .any(|p| matches!(p, Part::Var(v) if v == argument));
                if !declared {
                    return Err(CoreError::InvalidParams {
                        message: format!("unknown template variable `{argument}`"),
                    });
                }
                template.def.completers.get(argument)
            }
        };
        let values = completer
            .map(|c| c(caller, value, context))
            .unwrap_or_default();
        Ok(CompletionReply::from_values(values))
    }
}

/// Closes the invocation's progress reporting when the call returns (by any path).
struct EndProgress(Arc<crate::core::invocation::ProgressGate>);

impl Drop for EndProgress {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// A tool the caller may see and the policy's answer for this request
/// ([`Registry::visible_tool`]); never [`Access::Hidden`].
pub(crate) struct VisibleTool<'r> {
    tool: &'r CompiledTool,
    access: Access,
}

impl VisibleTool<'_> {
    /// The tool's definition as registered (read only by the server's publication).
    #[cfg(feature = "server")]
    pub(crate) fn descriptor(&self) -> &Tool {
        &self.tool.descriptor
    }
}

/// Runs a tool's handler with panics caught and cancellation observed: its outcome, or the
/// reply that ends the call (a failure, or a protocol error the handler returned).
async fn run_handler(
    tool: &CompiledTool,
    inv: Invocation,
    args: Arguments<'_>,
) -> Result<Outcome<HandlerOutput>, Result<ToolReply, CoreError>> {
    let name = tool.descriptor.name.as_str();
    let token = inv.cancel_token().clone();
    let gate = inv.progress_gate();
    let _end_progress = EndProgress(gate);
    // A handler may panic while creating its future, or while it runs: both are caught.
    let Ok(handler) = std::panic::catch_unwind(AssertUnwindSafe(|| (tool.def.handler)(inv, args)))
    else {
        tracing::error!(tool = name, "tool handler panicked");
        return Err(Ok(ToolReply::Failure(ToolFailure::internal())));
    };
    let guarded = AssertUnwindSafe(handler).catch_unwind();
    let cancelled_fut = Box::pin(token.cancelled());
    let outcome = match select(guarded, cancelled_fut).await {
        Either::Left((result, _)) => result,
        Either::Right(((), _)) => return Err(Ok(ToolReply::Failure(cancelled()))),
    };
    match outcome {
        Err(_panic) => {
            tracing::error!(tool = name, "tool handler panicked");
            Err(Ok(ToolReply::Failure(ToolFailure::internal())))
        }
        Ok(Err(ToolError::Failure(f))) => Err(Ok(ToolReply::Failure(f))),
        Ok(Err(ToolError::Protocol(e))) => Err(Err(e)),
        Ok(Ok(o)) => Ok(o),
    }
}

/// A complete result checked against the tool's output schema.
/// A typed tool's result is checked as the value serialised from its typed output (no parse
/// of the text just written) where it has one; otherwise its text is parsed.
fn checked_output(tool: &CompiledTool, out: HandlerOutput, text_copy: TextCopy) -> ToolReply {
    let HandlerOutput {
        output: mut out,
        value,
        text_copy: owed,
    } = out;
    let name = tool.descriptor.name.as_str();
    if let Some(schema) = &tool.output {
        let Some(structured) = &out.structured else {
            tracing::warn!(tool = name, "structured result missing");
            return ToolReply::Failure(invalid_result());
        };
        let checked = match &value {
            Some(value) => schema.validate_instance(value),
            None => schema.validate_bytes(structured.get()).map(drop),
        };
        if let Err(diags) = checked {
            tracing::warn!(
                tool = name,
                ?diags,
                "structured result breaks the output schema"
            );
            return ToolReply::Failure(invalid_result());
        }
    }
    if owed && text_copy == TextCopy::Include {
        if let Some(structured) = &out.structured {
            out.content.push(ContentBlock::text(structured.get()));
        }
    }
    ToolReply::Success {
        content: out.content,
        structured: out.structured,
    }
}

fn cancelled() -> ToolFailure {
    ToolFailure::new(FailureCode::Cancelled, "The call was cancelled.")
}

fn invalid_result() -> ToolFailure {
    ToolFailure::new(
        FailureCode::InvalidResult,
        "The tool produced a result that does not match its output schema.",
    )
}
