//! The optional MCP Apps shell (extension `io.modelcontextprotocol/ui`, Apps specification
//! 2026-01-26): one static HTML document the host renders for compact `call_tool` results.
//!
//! Enabled with [`ServerOptions::apps`](super::ServerOptions::apps); off by default and
//! refused together with direct publication. When it is on:
//!
//! - `server/discover` advertises the extension (`capabilities.extensions
//!   ["io.modelcontextprotocol/ui"]: {}`) and the `resources` capability;
//! - compact `call_tool` (and only it) carries `_meta.ui.resourceUri` and an explicit
//!   `visibility: ["model", "app"]`, for every client alike: the hints are inert for hosts
//!   without Apps, and a stateless server has no retained client capability to vary them by
//!   (a recorded deviation from the Apps specification's SHOULD, see the README);
//! - `resources/read` of the configured URI, byte for byte, returns the shell before any
//!   application resource or policy is consulted (the host admitted the caller already);
//!   `resources/list` never shows it;
//! - a handler may pick one configured view for its result with
//!   [`Invocation::show_view`](crate::core::Invocation::show_view). The choice travels on the
//!   result's `_meta` under [`VIEW_META_KEY`] as `{"view": <id>, "data": <exact JSON>}`:
//!   the Apps specification hands the whole `CallToolResult` to the view
//!   (`ui/notifications/tool-result`), leaves result `_meta` to the server, and compact
//!   `structuredContent` is already the `{value}` / `{failure}` envelope, so the selection
//!   cannot live there without changing that contract.

mod csp;

use std::collections::BTreeSet;
use std::fmt;

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::answer::{failure_result, with_identity, Answer, ResultMembers};
use super::encode::encode_result_raw;
use super::publication::{
    compact_tools_text, compact_tools_text_with_call_meta, Publication, ResultParts,
};
use super::Reply;
use crate::codec::EgressLimits;
use crate::core::descriptor::{Resource, ResourceContents, TextResourceContents};
use crate::core::{AppView, FailureCode, Page, ReadReply, MCP_APP_MIME_TYPE};
use crate::wire::jsonrpc::RequestId;

/// Largest shell HTML, in bytes (seed-000: 8 MiB): half the response allowance, so that an
/// ordinary document always leaves room for its JSON escaping and metadata.
pub const MAX_SHELL_HTML_BYTES: usize = 8 * 1024 * 1024;

/// Largest encoded configuration without the HTML ([`Apps::encoded_config_bytes`]), in
/// bytes (seed-000: 64 KiB): the views, CSP lists and metadata are sent on every shell read
/// and must stay small beside the document.
pub const MAX_APPS_CONFIG_BYTES: usize = 64 * 1024;

/// The result `_meta` key under which a selected view travels (see the module
/// documentation): `{"view": <id>, "data": <exact JSON>}`.
pub const VIEW_META_KEY: &str = "strict-mcp/view";

/// The `visibility` compact `call_tool` declares: callable by the model and by the shell.
const VISIBILITY: [&str; 2] = ["model", "app"];

/// The Apps shell configuration ([`ServerOptions::apps`](super::ServerOptions::apps)). The
/// server takes it by value at construction, so nothing the caller keeps can change it.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Apps {
    /// The shell's URI: `ui://` with an authority, without credentials, query or fragment.
    pub uri: String,
    /// The HTML5 document, non-empty, at most [`MAX_SHELL_HTML_BYTES`]. Sent as it is: never
    /// parsed, sanitised or run by this server (keep secrets and hidden names out of it).
    pub html: String,
    /// The view identifiers results may select: non-empty and unique.
    pub views: Vec<String>,
    /// The external origins the shell asks the host to allow.
    pub csp: AppCsp,
    /// The browser permissions the shell asks for (the host may deny any).
    pub permissions: AppPermissions,
    /// `_meta.ui.domain`: a dedicated sandbox origin in the host's own format (non-empty).
    pub domain: Option<String>,
    /// `_meta.ui.prefersBorder`.
    pub prefers_border: Option<bool>,
}

impl fmt::Debug for Apps {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Apps")
            .field("uri", &self.uri)
            .field("html_bytes", &self.html.len())
            .field("views", &self.views)
            .field("csp", &self.csp)
            .field("permissions", &self.permissions)
            .field("domain", &self.domain)
            .field("prefers_border", &self.prefers_border)
            .finish()
    }
}

/// The shell's CSP request (`_meta.ui.csp`). Each entry is one origin: `http(s)://host`
/// with an optional `:port`, the host possibly a leading `*.` wildcard subdomain
/// (`https://*.example.com`); connections may also be `ws(s)://`. Empty lists ask for no
/// external access.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AppCsp {
    /// `connectDomains` (fetch, XHR, WebSocket).
    pub connect_domains: Vec<String>,
    /// `resourceDomains` (scripts, images, styles, fonts, media).
    pub resource_domains: Vec<String>,
    /// `frameDomains` (nested frames).
    pub frame_domains: Vec<String>,
    /// `baseUriDomains` (the document's `base-uri`).
    pub base_uri_domains: Vec<String>,
}

/// The browser permissions the shell asks for (`_meta.ui.permissions`); each enabled one is
/// sent as the empty permission object under its Apps wire key.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AppPermissions {
    /// `camera`.
    pub camera: bool,
    /// `microphone`.
    pub microphone: bool,
    /// `geolocation`.
    pub geolocation: bool,
    /// `clipboardWrite` (the `clipboard-write` permission).
    pub clipboard_write: bool,
}

/// Why an Apps configuration was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AppsError {
    /// The URI is not `ui://` followed by an authority.
    #[error("the shell URI must be ui:// with an authority")]
    UriScheme,
    /// The URI has credentials, a query, a fragment, or whitespace or control characters.
    #[error("the shell URI must not carry credentials, a query, a fragment or whitespace")]
    UriForm,
    /// The HTML is empty.
    #[error("the shell HTML is empty")]
    EmptyHtml,
    /// The HTML exceeds [`MAX_SHELL_HTML_BYTES`].
    #[error("the shell HTML is {0} bytes, over 8 MiB")]
    HtmlTooLarge(usize),
    /// A view identifier is empty.
    #[error("a view identifier is empty")]
    EmptyView,
    /// A view identifier is listed twice.
    #[error("view `{0}` is listed twice")]
    DuplicateView(String),
    /// `domain` is given but empty.
    #[error("the shell domain is empty")]
    EmptyDomain,
    /// A CSP entry is not an origin of its list.
    #[error("CSP `{list}` entry `{entry}` is refused: {reason}")]
    Csp {
        /// The wire name of the list.
        list: &'static str,
        /// The refused entry.
        entry: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The encoded configuration without the HTML exceeds [`MAX_APPS_CONFIG_BYTES`].
    #[error("the encoded Apps configuration is {0} bytes, over 64 KiB")]
    ConfigTooLarge(usize),
    /// The encoded shell read result exceeds the response allowance minus its reserve.
    #[error("the encoded shell response is {bytes} bytes, over {max}")]
    ShellTooLarge {
        /// The encoded result (the `result` object as sent: contents, cache hints,
        /// `resultType` and `_meta` with the server identity).
        bytes: usize,
        /// The largest allowed.
        max: usize,
    },
}

impl Apps {
    /// The `_meta.ui` object of the shell's resource contents.
    fn ui_meta(&self) -> Value {
        let mut ui = Map::new();
        let csp = &self.csp;
        ui.insert(
            "csp".into(),
            json!({
                "connectDomains": csp.connect_domains,
                "resourceDomains": csp.resource_domains,
                "frameDomains": csp.frame_domains,
                "baseUriDomains": csp.base_uri_domains,
            }),
        );
        let p = self.permissions;
        let mut permissions = Map::new();
        for (on, key) in [
            (p.camera, "camera"),
            (p.microphone, "microphone"),
            (p.geolocation, "geolocation"),
            (p.clipboard_write, "clipboardWrite"),
        ] {
            if on {
                permissions.insert(key.into(), json!({}));
            }
        }
        if !permissions.is_empty() {
            ui.insert("permissions".into(), Value::Object(permissions));
        }
        if let Some(domain) = &self.domain {
            ui.insert("domain".into(), Value::String(domain.clone()));
        }
        if let Some(border) = self.prefers_border {
            ui.insert("prefersBorder".into(), Value::Bool(border));
        }
        Value::Object(ui)
    }

    /// The size the [`MAX_APPS_CONFIG_BYTES`] bound applies to: the JSON text of
    /// `{"ui": <_meta.ui>, "uri": …, "views": […]}`, everything but the HTML.
    #[must_use]
    pub fn encoded_config_bytes(&self) -> usize {
        json!({ "ui": self.ui_meta(), "uri": self.uri, "views": self.views })
            .to_string()
            .len()
    }

    fn check(&self) -> Result<(), AppsError> {
        check_uri(&self.uri)?;
        if self.html.is_empty() {
            return Err(AppsError::EmptyHtml);
        }
        if self.html.len() > MAX_SHELL_HTML_BYTES {
            return Err(AppsError::HtmlTooLarge(self.html.len()));
        }
        let mut seen = BTreeSet::new();
        for view in &self.views {
            if view.is_empty() {
                return Err(AppsError::EmptyView);
            }
            if !seen.insert(view.as_str()) {
                return Err(AppsError::DuplicateView(view.clone()));
            }
        }
        if self.domain.as_deref() == Some("") {
            return Err(AppsError::EmptyDomain);
        }
        let csp = &self.csp;
        for (list, entries, schemes) in [
            ("connectDomains", &csp.connect_domains, csp::CONNECT_SCHEMES),
            ("resourceDomains", &csp.resource_domains, csp::WEB_SCHEMES),
            ("frameDomains", &csp.frame_domains, csp::WEB_SCHEMES),
            ("baseUriDomains", &csp.base_uri_domains, csp::WEB_SCHEMES),
        ] {
            for entry in entries {
                csp::check_origin(entry, schemes).map_err(|reason| AppsError::Csp {
                    list,
                    entry: entry.clone(),
                    reason,
                })?;
            }
        }
        let config = self.encoded_config_bytes();
        if config > MAX_APPS_CONFIG_BYTES {
            return Err(AppsError::ConfigTooLarge(config));
        }
        Ok(())
    }
}

/// `ui://` + a non-empty authority; no userinfo, query, fragment, whitespace or controls.
fn check_uri(uri: &str) -> Result<(), AppsError> {
    let rest = uri.strip_prefix("ui://").ok_or(AppsError::UriScheme)?;
    let authority = rest.split('/').next().unwrap_or_default();
    if authority.is_empty() {
        return Err(AppsError::UriScheme);
    }
    if authority.contains('@')
        || uri.contains(['?', '#'])
        || uri.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(AppsError::UriForm);
    }
    Ok(())
}

/// A checked, fixed shell: what the server answers with.
pub(crate) struct Shell {
    uri: String,
    views: BTreeSet<String>,
    /// The whole `resources/read` result as sent (contents, cache hints, `resultType`,
    /// `_meta` with the identity), encoded once.
    read: Box<RawValue>,
    /// The compact `tools/list` body with `_meta.ui` on `call_tool`, built once.
    tools: String,
}

impl fmt::Debug for Shell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shell")
            .field("uri", &self.uri)
            .field("views", &self.views)
            .finish_non_exhaustive()
    }
}

impl Shell {
    /// Checks `apps` and encodes its read result once, with the server's identity `info`:
    /// the result as sent must fit `egress`'s payload bound (the response allowance minus
    /// the 8 KiB reserve for the envelope and id), the bound every response is sent under.
    pub(crate) fn new(
        apps: Apps,
        info: &RawValue,
        egress: &EgressLimits,
    ) -> Result<Shell, AppsError> {
        apps.check()?;
        let mut meta = Map::new();
        meta.insert("ui".into(), apps.ui_meta());
        let mut contents = TextResourceContents::new(apps.uri.clone(), apps.html);
        contents.mime_type = Some(MCP_APP_MIME_TYPE.to_owned());
        contents.meta = Some(meta.into());
        let reply = ReadReply::new(vec![ResourceContents::TextResourceContents(contents)]);
        // Serialising strings and maps cannot fail; the bound below is the real check.
        let body = serde_json::to_string(&reply).unwrap_or_default();
        drop(reply);
        let max = egress.max_payload_bytes();
        let too_large = |bytes| AppsError::ShellTooLarge { bytes, max };
        // A body over the bound stays over it once the identity is added: refused unparsed.
        if body.len() > max {
            return Err(too_large(body.len()));
        }
        let members: ResultMembers =
            serde_json::from_str(&body).map_err(|_| too_large(body.len()))?;
        drop(body);
        let read = with_identity(members, "complete", info);
        if read.get().len() > max {
            return Err(too_large(read.get().len()));
        }
        let mut hint = Map::new();
        hint.insert(
            "ui".into(),
            json!({ "resourceUri": apps.uri, "visibility": VISIBILITY }),
        );
        let tools = compact_tools_text_with_call_meta(hint);
        Ok(Shell {
            uri: apps.uri,
            views: apps.views.into_iter().collect(),
            read,
            tools,
        })
    }

    /// Whether `uri` is the shell's, byte for byte.
    pub(crate) fn mounts(&self, uri: &str) -> bool {
        uri == self.uri
    }

    /// The `resources/read` answer of the shell to request `id`.
    pub(crate) fn read(&self, id: &RequestId, egress: &EgressLimits) -> Answer {
        match encode_result_raw(id, &self.read, egress) {
            Ok(line) => Answer::Encoded(Reply { line, status: 200 }),
            // The id is bounded by ingress and the result was checked at construction.
            Err(_) => Answer::internal_retryable(),
        }
    }

    /// A completed compact `call_tool` result under Apps: a success with no ordinary content
    /// or selecting a view that is not configured becomes the failure `invalid_result`
    /// (neither the view nor its data is sent); an approved view is attached.
    /// Failures are sent as they are, without a view.
    pub(crate) fn finish(
        &self,
        publication: &Publication,
        mut parts: ResultParts,
        view: Option<AppView>,
    ) -> ResultParts {
        if parts.is_error {
            return parts;
        }
        if parts.content == "[]" {
            tracing::warn!("an Apps call_tool result has no ordinary content");
            return failure_result(
                publication,
                FailureCode::InvalidResult,
                "The tool returned no content for clients without Apps.",
            );
        }
        let Some(view) = view else {
            return parts;
        };
        if !self.views.contains(view.view()) {
            tracing::warn!(view = view.view(), "a result selected an unconfigured view");
            return failure_result(
                publication,
                FailureCode::InvalidResult,
                "The tool selected a view that is not configured.",
            );
        }
        parts.meta_member = Some(view_member(&view));
        parts
    }
}

/// The compact `tools/list` body with the Apps hints on `call_tool`; without a shell, or for
/// any other text, the body as it is.
pub(crate) fn compact_tools(shell: Option<&Shell>, text: String) -> String {
    match shell {
        Some(shell) if text == compact_tools_text() => shell.tools.clone(),
        _ => text,
    }
}

/// A resource page without the shell's URI (an application resource at that URI is
/// shadowed by the mount, so it is not listed either).
pub(crate) fn omit(shell: Option<&Shell>, mut page: Page<Resource>) -> Page<Resource> {
    if let Some(shell) = shell {
        page.items.retain(|resource| resource.uri != shell.uri);
    }
    page
}

/// `"strict-mcp/view":{"data": <exact>, "view": <id>}` (members in key order, as every
/// `_meta` is written; the key sorts after `io.modelcontextprotocol/serverInfo`).
fn view_member(view: &AppView) -> String {
    let id = serde_json::to_string(view.view()).unwrap_or_default();
    let data: &RawValue = view.data();
    format!(
        "\"{VIEW_META_KEY}\":{{\"data\":{},\"view\":{id}}}",
        data.get()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn o62_the_hint_goes_on_call_tool_wherever_it_is_listed() {
        let mut ui = Map::new();
        ui.insert("ui".into(), json!({}));
        let base = compact_tools_text();
        let hinted = compact_tools_text_with_call_meta(ui);
        // Exactly one insertion, on call_tool, where the generated `Tool` writes `_meta`
        // (after `inputSchema`, before `name`); every other byte is the plain body's.
        let m = r#""_meta":{"ui":{}},"#;
        assert_eq!(hinted.len(), base.len() + m.len());
        assert_eq!(hinted.matches(m).count(), 1);
        assert!(
            hinted.contains(&format!(r#"{m}"name":"call_tool""#)),
            "{hinted}"
        );
        assert_eq!(hinted.replacen(m, "", 1), base);
    }
}
