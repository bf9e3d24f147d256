//! The Apps shell configuration rules (O60, O64, O65, O67, O68, O69, N7, X19): each rule at its
//! bound and one past it, refused with the typed [`ConfigError`] at construction.

mod support;

use serde_json::{json, Value};
use strict_mcp::core::{Invocation, RegistryBuilder, ToolDef, ToolError};
use strict_mcp::server::apps::{MAX_APPS_CONFIG_BYTES, MAX_SHELL_HTML_BYTES};
use strict_mcp::server::{
    AppCsp, AppPermissions, Apps, AppsError, ConfigError, Server, ServerOptions,
    MAX_RESPONSE_BYTES, MIN_RESPONSE_BYTES,
};
use support::harness::serve_one;

/// The 8 KiB of every response kept for envelope, id and identity.
const RESERVE: usize = 8 * 1024;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoIn {}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct NoOut {
    ok: bool,
}

fn registry() -> strict_mcp::core::Registry {
    RegistryBuilder::new()
        .tool(ToolDef::typed(
            "noop",
            |_i: Invocation, _in: NoIn| async move { Ok::<_, ToolError>(NoOut { ok: true }) },
        ))
        .build()
        .unwrap()
}

fn minimal() -> Apps {
    Apps {
        uri: "ui://a".to_owned(),
        html: "<!doctype html>".to_owned(),
        ..Apps::default()
    }
}

fn build(apps: Apps) -> Result<Server, ConfigError> {
    Server::new(registry(), ServerOptions::new().apps(apps))
}

fn refused(apps: Apps) -> AppsError {
    match build(apps) {
        Err(ConfigError::Apps(e)) => e,
        Err(other) => panic!("not an Apps error: {other:?}"),
        Ok(_) => panic!("accepted"),
    }
}

async fn read_line(server: &Server, uri: &str) -> String {
    let params = json!({"uri": uri, "_meta": serde_json::from_str::<Value>(support::harness::META).unwrap()});
    serve_one(server, "alice", 1, "resources/read", params)
        .await
        .1
        .line
}

#[test]
fn o60_apps_with_direct_mode_fails_in_either_order_and_repeats_fail() {
    let first = ServerOptions::new().apps(minimal()).mode("direct");
    let second = ServerOptions::new().mode("direct").apps(minimal());
    for options in [first, second] {
        assert_eq!(
            Server::new(registry(), options).unwrap_err(),
            ConfigError::AppsWithDirect
        );
    }
    let twice = ServerOptions::new().apps(minimal()).apps(minimal());
    assert_eq!(
        Server::new(registry(), twice).unwrap_err(),
        ConfigError::Repeated("apps")
    );
    // Compact given explicitly is fine.
    assert!(Server::new(
        registry(),
        ServerOptions::new().mode("compact").apps(minimal())
    )
    .is_ok());
}

#[tokio::test]
async fn o60_configuration_is_copied_at_creation() {
    let mut apps = minimal();
    let server = build(apps.clone()).unwrap();
    apps.html.push_str("<p>changed");
    apps.uri.push_str("/changed");
    let line = read_line(&server, "ui://a").await;
    assert!(line.contains(r#""text":"<!doctype html>""#), "{line}");
}

#[test]
fn o64_uri_rules() {
    for ok in [
        "ui://a",
        "ui://shell.example/app",
        "ui://a:1/x/y",
        "ui://é/vue",
    ] {
        let apps = Apps {
            uri: ok.to_owned(),
            ..minimal()
        };
        assert!(build(apps).is_ok(), "{ok}");
    }
    for (bad, why) in [
        ("", AppsError::UriScheme),
        ("http://a", AppsError::UriScheme),
        ("UI://a", AppsError::UriScheme),
        ("ui:/a", AppsError::UriScheme),
        ("ui://", AppsError::UriScheme),
        ("ui:///path", AppsError::UriScheme),
        ("ui://user@a", AppsError::UriForm),
        ("ui://user:pw@a/x", AppsError::UriForm),
        ("ui://a?x=1", AppsError::UriForm),
        ("ui://a/b#f", AppsError::UriForm),
        ("ui://a b", AppsError::UriForm),
        ("ui://a/\n", AppsError::UriForm),
    ] {
        let apps = Apps {
            uri: bad.to_owned(),
            ..minimal()
        };
        assert_eq!(refused(apps), why, "{bad:?}");
    }
}

#[test]
fn o65_html_non_empty_and_at_most_8_mib() {
    assert_eq!(MAX_SHELL_HTML_BYTES, 8 * 1024 * 1024);
    let html = |n: usize| Apps {
        html: "a".repeat(n),
        ..minimal()
    };
    assert_eq!(refused(html(0)), AppsError::EmptyHtml);
    assert!(build(html(1)).is_ok());
    assert!(build(html(MAX_SHELL_HTML_BYTES)).is_ok());
    assert_eq!(
        refused(html(MAX_SHELL_HTML_BYTES + 1)),
        AppsError::HtmlTooLarge(MAX_SHELL_HTML_BYTES + 1)
    );
}

#[test]
fn o65_encoded_configuration_without_html_at_most_64_kib() {
    assert_eq!(MAX_APPS_CONFIG_BYTES, 64 * 1024);
    // The measure: `{"ui":<_meta.ui>,"uri":…,"views":[…]}` as JSON text, the HTML left out.
    let small = Apps {
        views: vec!["v".to_owned()],
        domain: Some("d".to_owned()),
        ..minimal()
    };
    let text = r#"{"ui":{"csp":{"baseUriDomains":[],"connectDomains":[],"frameDomains":[],"resourceDomains":[]},"domain":"d"},"uri":"ui://a","views":["v"]}"#;
    assert_eq!(small.encoded_config_bytes(), text.len());
    let with_domain = |n: usize| Apps {
        domain: Some("d".repeat(n)),
        ..small.clone()
    };
    let at = MAX_APPS_CONFIG_BYTES - (text.len() - 1);
    assert_eq!(
        with_domain(at).encoded_config_bytes(),
        MAX_APPS_CONFIG_BYTES
    );
    assert!(build(with_domain(at)).is_ok());
    assert_eq!(
        refused(with_domain(at + 1)),
        AppsError::ConfigTooLarge(MAX_APPS_CONFIG_BYTES + 1)
    );
    // Views count towards it too (escaping included: `"` is two bytes encoded).
    let views = Apps {
        views: vec!["\"".repeat(MAX_APPS_CONFIG_BYTES / 2)],
        ..minimal()
    };
    assert!(matches!(refused(views), AppsError::ConfigTooLarge(_)));
}

/// The shell's `resources/read` result as the bound measures it, the `result` object as sent
/// (identity and `resultType` included; the 8 KiB reserve is for the envelope and id), for
/// the minimal configuration.
fn minimal_body(html_json: &str) -> String {
    format!(
        r#"{{"_meta":{{"io.modelcontextprotocol/serverInfo":{{"name":"mcp","version":"unreleased"}}}},"cacheScope":"private","contents":[{{"_meta":{{"ui":{{"csp":{{"baseUriDomains":[],"connectDomains":[],"frameDomains":[],"resourceDomains":[]}}}}}},"mimeType":"text/html;profile=mcp-app","text":{html_json},"uri":"ui://a"}}],"resultType":"complete","ttlMs":0}}"#
    )
}

#[tokio::test]
async fn o65_encoded_shell_response_fits_the_allowance_minus_the_reserve() {
    let max = MAX_RESPONSE_BYTES - RESERVE;
    let overhead = minimal_body("\"\"").len();
    // `N` quotes and `k` letters: raw N + k = 8 MiB (under the raw ceiling), encoded
    // 2N + k + overhead. JSON escaping alone decides.
    let html = |quotes: usize, letters: usize| Apps {
        html: format!("{}{}", "\"".repeat(quotes), "a".repeat(letters)),
        ..minimal()
    };
    let quotes = max - overhead - MAX_SHELL_HTML_BYTES;
    let letters = MAX_SHELL_HTML_BYTES - quotes;
    let at = html(quotes, letters);
    assert_eq!(at.html.len(), MAX_SHELL_HTML_BYTES);
    assert_eq!(
        minimal_body(&serde_json::to_string(&at.html).unwrap()).len(),
        max
    );
    let server = build(at.clone()).unwrap();
    // The shell read at the bound is sent whole.
    let line = read_line(&server, "ui://a").await;
    assert!(line.len() <= MAX_RESPONSE_BYTES, "{}", line.len());
    let result = format!(
        r#""result":{}}}"#,
        minimal_body(&serde_json::to_string(&at.html).unwrap())
    );
    assert!(
        line.ends_with(&result),
        "the read is not the measured result"
    );
    let reply: Value = serde_json::from_str(&line).unwrap();
    assert!(
        reply.get("error").is_none(),
        "{}",
        &line[..line.len().min(300)]
    );
    assert_eq!(
        reply["result"]["contents"][0]["text"].as_str().unwrap(),
        at.html
    );
    // One byte past, still 8 MiB raw: refused.
    assert_eq!(
        refused(html(quotes + 1, letters - 1)),
        AppsError::ShellTooLarge {
            bytes: max + 1,
            max
        }
    );
    // A configured smaller allowance is the bound then.
    let small = Apps {
        html: "a".repeat(MIN_RESPONSE_BYTES),
        ..minimal()
    };
    let options = ServerOptions::new()
        .max_response_bytes(MIN_RESPONSE_BYTES)
        .apps(small);
    assert!(matches!(
        Server::new(registry(), options),
        Err(ConfigError::Apps(AppsError::ShellTooLarge { max, .. })) if max == MIN_RESPONSE_BYTES - RESERVE
    ));
}

#[test]
fn o67_csp_entries() {
    let csp = |list: usize, entry: &str| {
        let mut csp = AppCsp::default();
        let entries = vec![entry.to_owned()];
        match list {
            0 => csp.connect_domains = entries,
            1 => csp.resource_domains = entries,
            2 => csp.frame_domains = entries,
            _ => csp.base_uri_domains = entries,
        }
        Apps { csp, ..minimal() }
    };
    let lists = [
        "connectDomains",
        "resourceDomains",
        "frameDomains",
        "baseUriDomains",
    ];
    for (i, list) in lists.iter().enumerate() {
        for ok in [
            "https://api.example.com",
            "http://localhost:3000",
            "https://*.example.com",
            "http://127.0.0.1:65535",
            "https://[::1]:8443",
        ] {
            assert!(build(csp(i, ok)).is_ok(), "{list} {ok}");
        }
        for bad in [
            "*",
            "https://*",
            "https://example.com/path",
            "https://example.com/",
            "https://user:pw@example.com",
            "https://example.com:0",
            "https://example.com:65536",
            "https://exa mple.com",
            "https://bad_host.com",
            "'self'",
            "https://example.com 'unsafe-inline'",
            "https://example.com;",
            "data:",
            "example.com",
            "ftp://example.com",
        ] {
            match refused(csp(i, bad)) {
                AppsError::Csp { list: l, entry, .. } => {
                    assert_eq!((l, entry.as_str()), (*list, bad));
                }
                other => panic!("{list} {bad}: {other:?}"),
            }
        }
        // WebSockets only for connections.
        let ws = build(csp(i, "wss://rt.example.com"));
        assert_eq!(ws.is_ok(), i == 0, "{list}");
        assert_eq!(build(csp(i, "ws://localhost:1")).is_ok(), i == 0, "{list}");
    }
}

#[tokio::test]
async fn o68_x19_permissions_on_the_wire_and_empty_lists() {
    let all = Apps {
        permissions: AppPermissions {
            camera: true,
            microphone: true,
            geolocation: true,
            clipboard_write: true,
        },
        prefers_border: Some(true),
        ..minimal()
    };
    let line = read_line(&build(all).unwrap(), "ui://a").await;
    assert!(
        line.contains(r#""_meta":{"ui":{"csp":{"baseUriDomains":[],"connectDomains":[],"frameDomains":[],"resourceDomains":[]},"permissions":{"camera":{},"clipboardWrite":{},"geolocation":{},"microphone":{}},"prefersBorder":true}}"#),
        "{line}"
    );
    // None enabled: no `permissions` member at all; no domain, no border preference.
    let line = read_line(&build(minimal()).unwrap(), "ui://a").await;
    assert!(
        line.contains(r#""_meta":{"ui":{"csp":{"baseUriDomains":[],"connectDomains":[],"frameDomains":[],"resourceDomains":[]}}}"#),
        "{line}"
    );
}

#[test]
fn o69_views_non_empty_and_unique() {
    let views = |v: &[&str]| Apps {
        views: v.iter().map(|s| (*s).to_owned()).collect(),
        ..minimal()
    };
    assert!(build(views(&[])).is_ok());
    assert!(build(views(&["chart", "table", "vue-é", "a"])).is_ok());
    assert_eq!(refused(views(&["chart", ""])), AppsError::EmptyView);
    assert_eq!(
        refused(views(&["chart", "table", "chart"])),
        AppsError::DuplicateView("chart".to_owned())
    );
}

#[test]
fn n7_domain_must_not_be_empty() {
    let apps = Apps {
        domain: Some(String::new()),
        ..minimal()
    };
    assert_eq!(refused(apps), AppsError::EmptyDomain);
}
