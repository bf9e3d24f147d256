//! `strict-mcp demo serve`: a small server with real typed tools, a resource, a template and
//! a prompt with completion, over stdio or loopback HTTP, so every client subcommand has
//! something to talk to with nothing installed.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::json;
use serde_json::value::RawValue;

use crate::core::descriptor::{
    ContentBlock, PromptMessage, ResourceContents, Role, ToolAnnotations,
};
use crate::core::LogLevel;
use crate::core::{
    AppView, Caller, ElicitAction, FailureCode, Invocation, Outcome, PromptDef, PromptReply,
    ReadReply, Registry, RegistryBuilder, ResourceDef, TemplateDef, ToolDef, ToolError,
    ToolFailure,
};
use crate::server::http::{self, HttpConfig, McpHttp};
use crate::server::{Apps, Server, ServerOptions, ShutdownReport};

/// The most decimal digits `add` accepts per operand.
///
/// Why: the server's schema validation holds a checked number as an `f64`, which cannot hold
/// magnitudes past ~1.8e308; 300 digits stays below that, and every digit is still summed
/// exactly.
pub const MAX_ADD_DIGITS: usize = 300;

/// The most steps `count` runs.
///
/// Why: a demo call must end; 100 steps at the longest delay is under 17 minutes, and the
/// client's deadline ends it sooner.
pub const MAX_COUNT_STEPS: u32 = 100;

/// The longest pause between two `count` steps, in milliseconds.
pub const MAX_COUNT_DELAY_MS: u64 = 10_000;

/// The names `greet` and the greeting template complete.
pub const DEMO_NAMES: [&str; 5] = ["Ada", "Alan", "Barbara", "Grace", "Linus"];

/// An integer kept as its exact decimal text (no `f64` on the way).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExactInt(String);

impl ExactInt {
    /// The exact decimal text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for ExactInt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(d)?;
        let text = raw.get();
        let digits = text.strip_prefix('-').unwrap_or(text);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(serde::de::Error::custom(
                "an integer without fraction or exponent",
            ));
        }
        Ok(ExactInt(text.to_owned()))
    }
}

impl Serialize for ExactInt {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        RawValue::from_string(self.0.clone())
            .map_err(serde::ser::Error::custom)?
            .serialize(s)
    }
}

impl JsonSchema for ExactInt {
    fn schema_name() -> Cow<'static, str> {
        "ExactInt".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "integer"})
    }
}

#[derive(Deserialize, JsonSchema)]
struct AddIn {
    /// The first integer (any size up to 300 digits, summed exactly).
    a: ExactInt,
    /// The second integer.
    b: ExactInt,
}

#[derive(Serialize, JsonSchema)]
struct AddOut {
    /// a + b, exactly.
    sum: ExactInt,
}

#[derive(Deserialize, JsonSchema)]
struct TextIn {
    /// The text to transform.
    text: String,
}

#[derive(Serialize, JsonSchema)]
struct TextOut {
    /// The text in upper case.
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct ConfirmIn {
    /// What to confirm, e.g. "delete the draft" (mirrored into `Mcp-Param-Action` over
    /// HTTP).
    #[schemars(extend("x-mcp-header" = "Action"))]
    action: String,
}

#[derive(Serialize, JsonSchema)]
struct ConfirmOut {
    /// The action asked about.
    action: String,
    /// Whether the user confirmed it.
    confirmed: bool,
    /// The user's note, when they confirmed.
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
struct CountIn {
    /// How many steps (1 to 100).
    steps: u32,
    /// Pause between steps in milliseconds (at most 10000).
    #[serde(default)]
    delay_ms: u64,
}

#[derive(Serialize, JsonSchema)]
struct CountOut {
    /// Steps completed.
    counted: u32,
}

fn invalid(message: impl Into<String>) -> ToolError {
    ToolFailure::new(FailureCode::InvalidArguments, message).into()
}

/// Sums two decimal integers exactly.
fn exact_sum(a: &str, b: &str) -> String {
    let (neg_a, a) = split_sign(a);
    let (neg_b, b) = split_sign(b);
    if neg_a == neg_b {
        return with_sign(neg_a, &add_magnitudes(a, b));
    }
    // Opposite signs: subtract the smaller magnitude from the larger.
    match compare_magnitudes(a, b) {
        std::cmp::Ordering::Equal => "0".to_owned(),
        std::cmp::Ordering::Greater => with_sign(neg_a, &sub_magnitudes(a, b)),
        std::cmp::Ordering::Less => with_sign(neg_b, &sub_magnitudes(b, a)),
    }
}

fn split_sign(s: &str) -> (bool, &str) {
    let (neg, digits) = match s.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, s),
    };
    let digits = digits.trim_start_matches('0');
    if digits.is_empty() {
        (false, "0")
    } else {
        (neg, digits)
    }
}

fn with_sign(neg: bool, magnitude: &str) -> String {
    if neg && magnitude != "0" {
        format!("-{magnitude}")
    } else {
        magnitude.to_owned()
    }
}

fn compare_magnitudes(a: &str, b: &str) -> std::cmp::Ordering {
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

fn add_magnitudes(a: &str, b: &str) -> String {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut out = Vec::with_capacity(a.len().max(b.len()) + 1);
    let mut carry = 0u8;
    for i in 0..a.len().max(b.len()) {
        let da = a.len().checked_sub(i + 1).map_or(0, |j| a[j] - b'0');
        let db = b.len().checked_sub(i + 1).map_or(0, |j| b[j] - b'0');
        let s = da + db + carry;
        out.push(b'0' + s % 10);
        carry = s / 10;
    }
    if carry > 0 {
        out.push(b'0' + carry);
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// `a - b` for magnitudes with `a >= b`.
fn sub_magnitudes(a: &str, b: &str) -> String {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut out = Vec::with_capacity(a.len());
    let mut borrow = 0i8;
    for i in 0..a.len() {
        let da = (a[a.len() - 1 - i] - b'0') as i8;
        let db = b
            .len()
            .checked_sub(i + 1)
            .map_or(0, |j| (b[j] - b'0') as i8);
        let mut d = da - db - borrow;
        borrow = 0;
        if d < 0 {
            d += 10;
            borrow = 1;
        }
        out.push(b'0' + d.unsigned_abs());
    }
    while out.len() > 1 && out.last() == Some(&b'0') {
        out.pop();
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

fn digits(n: &ExactInt) -> usize {
    n.as_str().trim_start_matches('-').len()
}

/// The confirmation form: one boolean, default `false`.
fn confirm_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {"confirm": {"type": "boolean", "title": "Confirm", "default": false}},
        "required": ["confirm"],
    })
}

/// The follow-up form: a short note.
fn note_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {"note": {"type": "string", "title": "Note", "maxLength": 200}},
        "required": ["note"],
    })
}

async fn confirm(inv: Invocation, input: ConfirmIn) -> Result<Outcome<ConfirmOut>, ToolError> {
    let declined = |action: String| {
        Ok(Outcome::Complete(ConfirmOut {
            action,
            confirmed: false,
            note: None,
        }))
    };
    let schema = confirm_schema();
    let Some(answer) = inv.form_answer("confirm", &schema)? else {
        let ask = inv.elicit_form(&format!("Really {}?", input.action), schema)?;
        return Ok(Outcome::input("confirm", ask));
    };
    let yes = answer.action == ElicitAction::Accept
        && answer
            .content
            .as_ref()
            .and_then(|c| c.get("confirm"))
            .and_then(serde_json::Value::as_bool)
            == Some(true);
    if !yes {
        return declined(input.action);
    }
    let schema = note_schema();
    let Some(note) = inv.form_answer("note", &schema)? else {
        let ask = inv.elicit_form("Add a note for the record.", schema)?;
        return Ok(Outcome::input("note", ask));
    };
    let text = note
        .content
        .as_ref()
        .and_then(|c| c.get("note"))
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned);
    Ok(Outcome::Complete(ConfirmOut {
        action: input.action,
        confirmed: true,
        note: text,
    }))
}

async fn count(inv: Invocation, input: CountIn) -> Result<CountOut, ToolError> {
    if input.steps == 0 || input.steps > MAX_COUNT_STEPS {
        return Err(invalid(format!("steps must be 1 to {MAX_COUNT_STEPS}")));
    }
    if input.delay_ms > MAX_COUNT_DELAY_MS {
        return Err(invalid(format!(
            "delay_ms must be at most {MAX_COUNT_DELAY_MS}"
        )));
    }
    let total = f64::from(input.steps);
    for step in 1..=input.steps {
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(input.delay_ms)) => {}
            () = inv.cancelled() => {
                return Err(ToolFailure::new(FailureCode::Cancelled, "cancelled").into());
            }
        }
        inv.report_progress(f64::from(step), Some(total), Some(&format!("step {step}")));
        inv.log(LogLevel::Info, Some("count"), json!({"step": step}));
    }
    Ok(CountOut {
        counted: input.steps,
    })
}

fn complete_names(prefix: &str) -> Vec<String> {
    DEMO_NAMES
        .iter()
        .filter(|n| n.to_lowercase().starts_with(&prefix.to_lowercase()))
        .map(|n| (*n).to_owned())
        .collect()
}

/// The most list entries one demo page holds (`--page-size`): the library's own default,
/// so the demo paginates only when asked to.
pub const DEFAULT_PAGE_SIZE: usize = 20;

/// The demo app's URI (`demo serve --app`).
pub const DEMO_APP_URI: &str = "ui://strict-mcp-demo/app";

/// The demo app: one HTML document with its script inline (no external access, so its CSP
/// lists stay empty), showing each tool result the host passes in.
pub const DEMO_APP_HTML: &str = include_str!("demo_app.html");

/// The view `add` selects for its result, shown by the demo app as an equation.
pub const SUM_VIEW: &str = "sum";

/// Most digits of an integer sent to the demo app as a JSON number: every integer of at most 15
/// digits is exact in a JavaScript number (below 2^53); a longer one travels as a string so
/// the app shows it exactly.
pub const MAX_VIEW_NUMBER_DIGITS: usize = 15;

/// The demo app's shell configuration.
#[must_use]
pub fn demo_app() -> Apps {
    Apps {
        uri: DEMO_APP_URI.to_owned(),
        html: DEMO_APP_HTML.to_owned(),
        views: vec![SUM_VIEW.to_owned()],
        ..Apps::default()
    }
}

/// One integer of the `sum` view's data: its exact text as a JSON number up to
/// [`MAX_VIEW_NUMBER_DIGITS`] digits, as a JSON string past it.
fn view_number(n: &ExactInt) -> String {
    if digits(n) <= MAX_VIEW_NUMBER_DIGITS {
        n.as_str().to_owned()
    } else {
        format!("\"{}\"", n.as_str())
    }
}

/// The `sum` view with the operands and the sum, exact JSON text.
fn sum_view(a: &ExactInt, b: &ExactInt, sum: &ExactInt) -> Result<AppView, serde_json::Error> {
    AppView::from_json(
        SUM_VIEW,
        &format!(
            "{{\"a\":{},\"b\":{},\"sum\":{}}}",
            view_number(a),
            view_number(b),
            view_number(sum)
        ),
    )
}

/// The demo registry, `page_size` entries per list page.
///
/// # Errors
/// Only if a definition is refused by the registry (a bug in this file) or `page_size` is
/// out of the registry's range.
pub fn registry(page_size: usize) -> Result<Registry, crate::core::BuildError> {
    RegistryBuilder::new()
        .page_size(page_size)
        .tool(
            ToolDef::typed("add", |inv: Invocation, i: AddIn| async move {
                if digits(&i.a) > MAX_ADD_DIGITS || digits(&i.b) > MAX_ADD_DIGITS {
                    return Err(invalid(format!(
                        "operands are limited to {MAX_ADD_DIGITS} digits"
                    )));
                }
                let sum = ExactInt(exact_sum(i.a.as_str(), i.b.as_str()));
                // Shown by the demo app (`--app`); ignored by the server without Apps.
                if let Ok(view) = sum_view(&i.a, &i.b, &sum) {
                    inv.show_view(view);
                }
                Ok(AddOut { sum })
            })
            .title("Add")
            .description("Adds two integers exactly, whatever their size."),
        )
        .tool(
            ToolDef::typed("upper", |_inv: Invocation, i: TextIn| async move {
                Ok(TextOut {
                    text: i.text.to_uppercase(),
                })
            })
            .title("Upper case")
            .description("Returns the text in upper case."),
        )
        .tool(
            ToolDef::typed_interactive("confirm", confirm)
                .title("Confirm")
                // It only asks and reports the answers; `check` may call it on its own.
                .annotations(ToolAnnotations {
                    read_only_hint: Some(true),
                    ..ToolAnnotations::default()
                })
                .description(
                    "Asks the user to confirm an action, then for a note (two input rounds).",
                ),
        )
        .tool(
            ToolDef::typed("count", count)
                .title("Count")
                .description("Counts to `steps`, reporting progress after each step."),
        )
        .resource(
            ResourceDef::new("demo://readme", "readme", |_inv, uri| async move {
                Ok(ReadReply::new(vec![ResourceContents::text(
                    uri,
                    "The strict-mcp demo server: tools add, upper, confirm and count.",
                )]))
            })
            .mime_type("text/plain"),
        )
        .template(
            TemplateDef::new(
                "demo://greeting/{name}",
                "greeting",
                |_inv, uri, vars| async move {
                    let name = vars.get("name").cloned().unwrap_or_default();
                    Ok(ReadReply::new(vec![ResourceContents::text(
                        uri,
                        format!("Hello, {name}!"),
                    )]))
                },
            )
            .description("A greeting for anyone.")
            .mime_type("text/plain")
            .complete("name", |_caller, prefix, _ctx| complete_names(prefix)),
        )
        .prompt(
            PromptDef::new("greet", |_inv, args: BTreeMap<String, String>| async move {
                let name = args.get("name").cloned().unwrap_or_default();
                Ok(Outcome::Complete(PromptReply {
                    description: None,
                    messages: vec![PromptMessage::new(
                        Role::User,
                        ContentBlock::text(format!("Say hello to {name}.")),
                    )],
                }))
            })
            .description("Asks the model to greet someone.")
            .argument("name", "Whom to greet.", true)
            .complete("name", |_caller, prefix, _ctx| complete_names(prefix)),
        )
        .build()
}

/// How the demo publishes its tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DemoMode {
    /// Every tool by its own name (the demo's default).
    Direct,
    /// The library's default: `search_tools`, `get_tool_details`, `call_tool`.
    Compact,
}

/// Why the demo server stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// The registry or server configuration was refused.
    #[error("demo server configuration: {0}")]
    Config(String),
    /// `--http` was not a loopback address.
    #[error("the demo serves loopback addresses only, not {0}")]
    NotLoopback(SocketAddr),
    /// I/O on stdio or the listener failed.
    #[error("demo server I/O: {0}")]
    Io(#[from] std::io::Error),
    /// Shutdown left calls unfinished.
    #[error("shutdown: {0}")]
    Shutdown(String),
}

/// How `demo serve` runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoOptions {
    /// Serve Streamable HTTP on this loopback address instead of stdio.
    pub http: Option<SocketAddr>,
    /// How tools are published; `None` is direct, or compact with [`DemoOptions::app`].
    pub mode: Option<DemoMode>,
    /// Entries per list page.
    pub page_size: usize,
    /// Serve the demo app ([`demo_app`]); needs compact publication.
    pub app: bool,
    /// Browser origins answered with CORS over HTTP ([`HttpConfig::cors_origins`]).
    pub cors_origins: Vec<String>,
}

/// The demo server as `options` configure it (the transport aside).
///
/// # Errors
/// [`DemoError::Config`]: the app with direct publication, or a refused configuration.
pub fn server(options: &DemoOptions) -> Result<Server, DemoError> {
    let registry = registry(options.page_size).map_err(|e| DemoError::Config(e.to_string()))?;
    let mode = match (options.mode, options.app) {
        (Some(DemoMode::Direct), true) => {
            return Err(DemoError::Config(
                "--app needs --mode compact: the Apps shell rides on compact call_tool".into(),
            ))
        }
        (Some(DemoMode::Compact), _) | (None, true) => "compact",
        (Some(DemoMode::Direct), false) | (None, false) => "direct",
    };
    let mut server_options = ServerOptions::new()
        .server_info("strict-mcp-demo", env!("CARGO_PKG_VERSION"))
        .instructions("A demo server: try `tools call add --args '{\"a\":2,\"b\":3}'`.")
        .mode(mode);
    if options.app {
        server_options = server_options.apps(demo_app());
    }
    Server::new(registry, server_options).map_err(|e| DemoError::Config(e.to_string()))
}

/// Runs the demo server until stdin ends (stdio) or Ctrl-C (HTTP).
///
/// # Errors
/// [`DemoError`].
pub async fn serve(options: DemoOptions) -> Result<(), DemoError> {
    let server = server(&options)?;
    let http_addr = options.http;
    if http_addr.is_none() && !options.cors_origins.is_empty() {
        return Err(DemoError::Config("--cors-origin needs --http".into()));
    }
    let cors = HttpConfig {
        cors_origins: options.cors_origins.clone(),
        ..HttpConfig::default()
    };
    if let Some(origin) = cors.cors_conflicts().first() {
        return Err(DemoError::Config(format!(
            "--cors-origin {origin}: the demo admits loopback browser origins only"
        )));
    }
    match http_addr {
        None => {
            let report = server
                .run_stdio(Caller::new("local-user"))
                .await
                .map_err(|e| DemoError::Io(std::io::Error::other(e.to_string())))?;
            if report != ShutdownReport::Stopped {
                return Err(DemoError::Shutdown(report.to_string()));
            }
        }
        Some(addr) => {
            if !addr.ip().is_loopback() {
                return Err(DemoError::NotLoopback(addr));
            }
            let listener = tokio::net::TcpListener::bind(addr).await?;
            let url = format!("http://{}/mcp", listener.local_addr()?);
            let config = HttpConfig {
                path: Some("/mcp".to_owned()),
                ..cors
            };
            let service = McpHttp::new(server.clone(), config);
            println!("{}", json!({ "listening": url }));
            let budget = server.shutdown_budget();
            let stop = async move {
                if tokio::signal::ctrl_c().await.is_err() {
                    std::future::pending::<()>().await;
                }
                server.shutdown(budget).await;
            };
            http::serve(listener, service, stop).await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_sum_covers_signs_and_carries() {
        assert_eq!(exact_sum("2", "3"), "5");
        assert_eq!(exact_sum("999", "1"), "1000");
        assert_eq!(exact_sum("-5", "3"), "-2");
        assert_eq!(exact_sum("5", "-5"), "0");
        assert_eq!(exact_sum("-0", "0"), "0");
        assert_eq!(exact_sum("1000", "-1"), "999");
        assert_eq!(exact_sum("-7", "-8"), "-15");
        assert_eq!(
            exact_sum("18446744073709551616", "18446744073709551616"),
            "36893488147419103232"
        );
    }

    #[test]
    fn demo_registry_builds() {
        assert!(registry(DEFAULT_PAGE_SIZE).is_ok());
    }

    fn options(mode: Option<DemoMode>, app: bool) -> DemoOptions {
        DemoOptions {
            http: None,
            mode,
            page_size: DEFAULT_PAGE_SIZE,
            app,
            cors_origins: Vec::new(),
        }
    }

    /// O60: the app rides on compact `call_tool`, so `--app` picks compact mode and refuses an
    /// explicit direct mode; without the app nothing changes.
    #[test]
    fn o60_demo_app_needs_compact_mode() {
        assert!(server(&options(None, true)).is_ok());
        assert!(server(&options(Some(DemoMode::Compact), true)).is_ok());
        assert!(server(&options(None, false)).is_ok());
        match server(&options(Some(DemoMode::Direct), true)) {
            Err(DemoError::Config(m)) => assert!(m.contains("--mode compact"), "{m}"),
            other => panic!("expected a configuration error, got {other:?}"),
        }
        assert_eq!(demo_app().uri, "ui://strict-mcp-demo/app");
        assert_eq!(demo_app().views, ["sum"]);
        assert!(DEMO_APP_HTML.starts_with("<!doctype html>"));
    }

    /// O70: the `sum` view keeps exact JSON numbers up to 15 digits and sends longer integers
    /// as strings, so the app (JavaScript numbers) never shows a rounded value.
    #[test]
    fn o70_sum_view_is_exact_numbers_then_strings_past_fifteen_digits() {
        let n = |s: &str| ExactInt(s.to_owned());
        let at = "9".repeat(MAX_VIEW_NUMBER_DIGITS);
        let past = format!("1{}", "0".repeat(MAX_VIEW_NUMBER_DIGITS));
        let view = sum_view(&n(&at), &n("1"), &n(&past)).unwrap();
        assert_eq!(view.view(), "sum");
        assert_eq!(
            view.data().get(),
            format!("{{\"a\":{at},\"b\":1,\"sum\":\"{past}\"}}")
        );
        let view = sum_view(&n("-2"), &n("-0"), &n("-2")).unwrap();
        assert_eq!(view.data().get(), r#"{"a":-2,"b":-0,"sum":-2}"#);
    }
}
