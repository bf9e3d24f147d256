//! Validates `contracts/mcp-interface.json` (seed-001; O114, O115, O116).
//!
//! Always: the file matches `contracts/mcp-interface.schema.json`, its inventory matches the
//! code's method tables (the server's route table, the client's method set), every target has
//! exactly one record, every cited test exists and every cited requirement id exists.
//!
//! With `CONTRACT_CHECK=1`, after the evidence tests ran in the same target dir
//! (`cargo test --test evidence_server --test evidence_client`), also that every cited test
//! left a record, passed, did not skip, and was observed exercising its target with the
//! cited polarity (`support::evidence::check`). The gate keeps this out of the first
//! `cargo test`, where the evidence tests may run after this one.

#![forbid(unsafe_code)]

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use clap::CommandFactory;
use serde_json::{json, Value};
use strict_mcp::wire::methods;
use strict_mcp::wire::result::Method;
use support::evidence::{
    check, parse_records, requirement_ids, Fault, TestRecord, CLI_SUBCOMMANDS,
};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read_json(path: &str) -> Value {
    let text = std::fs::read_to_string(root().join(path))
        .unwrap_or_else(|e| panic!("{path} is readable: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path} is JSON: {e}"))
}

fn contract() -> Value {
    read_json("contracts/mcp-interface.json")
}

fn requirements() -> BTreeSet<String> {
    let text = std::fs::read_to_string(root().join("../shared/spec/REQUIREMENTS.md"))
        .expect("../shared/spec/REQUIREMENTS.md is readable");
    requirement_ids(&text)
}

/// The server transports serve every request method of the route table; the client
/// transports call every method of the client's method set.
const SERVER_TRANSPORTS: [&str; 2] = ["stdio-server", "http-server"];
const CLIENT_TRANSPORTS: [&str; 3] = ["stdio-client", "http-client", "in-memory-client"];

/// The extensions served beside the core route table (issue #21), each with its request
/// methods, read from the wire modules' own constants: the Tasks extension's `tasks/*`
/// (served only while a task tool is registered) and the Skills extension's (served only
/// while a skill catalogue is). Their operations carry `extension` (the id) and `condition`
/// (O119: served only while active, -32601 otherwise; Tasks: -32021 without the declaration).
const EXTENSIONS: [(&str, &[&str]); 2] = [
    (
        strict_mcp::wire::tasks::TASKS_EXTENSION,
        &strict_mcp::wire::tasks::TASK_METHODS,
    ),
    (
        strict_mcp::wire::skills::EXTENSION_ID,
        &strict_mcp::wire::skills::METHODS,
    ),
];

/// The extension whose method `method` is, if any.
fn extension_of(method: &str) -> Option<&'static str> {
    EXTENSIONS
        .iter()
        .find(|(_, methods)| methods.contains(&method))
        .map(|(id, _)| *id)
}

/// Every extension method, over all extensions.
fn extension_methods() -> impl Iterator<Item = &'static str> {
    EXTENSIONS.iter().flat_map(|(_, m)| m.iter().copied())
}

/// O114: the contract matches its JSON Schema.
#[test]
fn o114_contract_matches_its_schema() {
    let schema = read_json("contracts/mcp-interface.schema.json");
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&schema)
        .expect("the schema compiles");
    let c = contract();
    let errors: Vec<String> = validator
        .iter_errors(&c)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(c["mode"], "product");
    assert_eq!(c["protocol"]["revision"], "2026-07-28");
}

/// O116: the README's compatibility section states what the contract says: the revision,
/// discovery, the unsupported-revision and missing-metadata errors, per-request `_meta`, and
/// every transport of the inventory.
#[test]
fn o116_readme_compatibility_matches_the_contract() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let start = readme
        .find("## Compatibility position")
        .expect("a compatibility section");
    let section = &readme[start..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |e| e + 3)];
    let c = contract();
    let revision = c["protocol"]["revision"].as_str().expect("revision");
    for needle in [
        revision,
        "server/discover",
        "-32022",
        "-32602",
        "io.modelcontextprotocol/protocolVersion",
        "io.modelcontextprotocol/clientCapabilities",
        "contracts/mcp-interface.json",
    ] {
        assert!(
            section.contains(needle),
            "README compatibility lacks {needle}"
        );
    }
    let compat = c["protocol"]["compatibility"]
        .as_str()
        .expect("compatibility");
    for t in c["transports"].as_array().expect("transports") {
        let id = t["id"].as_str().expect("id");
        assert!(
            section.contains(&format!("`{id}`")),
            "README lacks transport {id}"
        );
        // An opt-in transport: both statements say which feature turns it on.
        if let Some(feature) = t["feature"].as_str() {
            assert!(
                section.contains(&format!("feature `{feature}`")),
                "README does not say {id} needs feature {feature}"
            );
            assert!(
                compat.contains(&format!("feature {feature}")) && compat.contains(id),
                "contract compatibility does not name {id} and its feature {feature}"
            );
        }
    }
    for needle in ["-32022", "-32602", "server/discover", revision] {
        assert!(
            compat.contains(needle),
            "contract compatibility lacks {needle}"
        );
    }
}

/// The schema is not vacuous: a contract with a misspelt field or a deferred record without
/// a reason is refused.
#[test]
fn o114_schema_refuses_malformed_contracts() {
    let schema = read_json("contracts/mcp-interface.schema.json");
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&schema)
        .expect("the schema compiles");
    let mut c = contract();
    c["operations"][0]["transportID"] = json!("stdio-server");
    assert!(!validator.is_valid(&c), "unknown operation field accepted");
    let mut c = contract();
    c["evidence"][0] = json!({"target": c["evidence"][0]["target"], "requirements": ["O115"],
                              "status": "deferred"});
    assert!(
        !validator.is_valid(&c),
        "deferred record without reason accepted"
    );
    let mut c = contract();
    c["mode"] = json!("shipping");
    assert!(!validator.is_valid(&c), "unknown mode accepted");
}

/// `(transport, kind)` pairs of the contract's operations.
fn exposures(c: &Value) -> BTreeSet<(String, String)> {
    c["operations"]
        .as_array()
        .expect("operations")
        .iter()
        .map(|op| {
            (
                op["transportId"].as_str().unwrap_or_default().to_owned(),
                op["kind"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// The CLI's contract transport: it exposes every method `CLI_SUBCOMMANDS` lists.
const CLI_TRANSPORT: &str = "cli";

/// The HTTP endpoints that are not JSON-RPC, served by the HTTP server transport: the
/// protected resource metadata of `server::auth` (RFC 9728), as `GET <well-known path>`.
fn http_endpoints() -> BTreeSet<String> {
    [format!(
        "GET {}",
        strict_mcp::server::auth::WELL_KNOWN_PREFIX
    )]
    .into()
}

/// The `(transport, method)` pairs the code serves or calls: the server's route table on
/// both server transports (and the HTTP endpoints on the HTTP one), the client's method set
/// on the three client transports, and the methods the CLI's subcommands send
/// (`cli_methods`) on the CLI transport.
fn wanted(cli_methods: &BTreeSet<&str>) -> BTreeSet<(String, String)> {
    let served: BTreeSet<&str> = methods::REQUESTS
        .iter()
        .copied()
        .filter(|m| methods::needs(m).is_some())
        .chain(extension_methods())
        .collect();
    let called: BTreeSet<&str> = Method::ALL
        .iter()
        .map(|m| m.name())
        .chain(extension_methods())
        .collect();
    let mut want = BTreeSet::new();
    for (transports, set) in [
        (&SERVER_TRANSPORTS[..], &served),
        (&CLIENT_TRANSPORTS[..], &called),
        (&[CLI_TRANSPORT][..], cli_methods),
    ] {
        for t in transports {
            for m in set {
                want.insert(((*t).to_owned(), (*m).to_owned()));
            }
        }
    }
    for endpoint in http_endpoints() {
        want.insert(("http-server".to_owned(), endpoint));
    }
    for m in legacy_routes() {
        want.insert((LEGACY_TRANSPORT.to_owned(), m));
    }
    for m in legacy_http_routes() {
        want.insert((LEGACY_HTTP_TRANSPORT.to_owned(), m));
    }
    want
}

/// The legacy-era stdio server (feature `legacy`): the stdio server with
/// `ServerOptions::legacy_era(true)`, serving both eras on one connection.
const LEGACY_TRANSPORT: &str = "legacy-stdio-server";

/// The methods the legacy-era transport serves. With `legacy` they are probed from the code
/// ([`legacy::probe`]); without the feature the code has no legacy route to probe, so the
/// contract's own legacy operations stand in (the `--features legacy` run of `.ci/run`'s
/// contract step checks them).
fn legacy_routes() -> BTreeSet<String> {
    #[cfg(feature = "legacy")]
    {
        legacy::probe()
    }
    #[cfg(not(feature = "legacy"))]
    {
        exposures(&contract())
            .into_iter()
            .filter(|(t, _)| t == LEGACY_TRANSPORT)
            .map(|(_, m)| m)
            .collect()
    }
}

/// Legacy Streamable HTTP (feature `legacy`): the HTTP server with
/// `ServerOptions::legacy_era(true)`, `Mcp-Session-Id` sessions beside the modern endpoint.
const LEGACY_HTTP_TRANSPORT: &str = "legacy-http-server";

/// What legacy Streamable HTTP serves: probed from its session table with `legacy`
/// ([`legacy::http_probe`]); without the feature the contract's own operations stand in, as
/// for [`legacy_routes`].
fn legacy_http_routes() -> BTreeSet<String> {
    #[cfg(feature = "legacy")]
    {
        legacy::http_probe()
    }
    #[cfg(not(feature = "legacy"))]
    {
        exposures(&contract())
            .into_iter()
            .filter(|(t, _)| t == LEGACY_HTTP_TRANSPORT)
            .map(|(_, m)| m)
            .collect()
    }
}

/// The legacy route set, read from the code (feature `legacy`).
#[cfg(feature = "legacy")]
mod legacy {
    use std::collections::BTreeSet;
    use std::sync::Arc;

    use strict_mcp::codec::{decode, IngressLimits};
    use strict_mcp::core::Caller;
    use strict_mcp::server::http::DEFAULT_PATH;
    use strict_mcp::server::legacy::sessions::Post;
    use strict_mcp::server::legacy::{LegacyLink, Route};
    use strict_mcp::server::{Outbox, Reply, Server, ServerOptions};
    use strict_mcp::wire::jsonrpc::{Message, Notification, Request};
    use strict_mcp::wire::methods;

    /// What a client of the initialise-era revisions may send: the request methods of the
    /// 2025-06-18 and 2025-11-25 schemas' `ClientRequest` (2025-11-25 adds the `tasks/*`
    /// ones). A method outside this list cannot reach the legacy route from a legacy client.
    pub const CLIENT_REQUESTS: [&str; 17] = [
        "initialize",
        "ping",
        "logging/setLevel",
        "completion/complete",
        "prompts/list",
        "prompts/get",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "tools/list",
        "tools/call",
        "tasks/get",
        "tasks/result",
        "tasks/list",
        "tasks/cancel",
    ];

    /// The notification methods of the same schemas' `ClientNotification`.
    pub const CLIENT_NOTIFICATIONS: [&str; 5] = [
        "notifications/initialized",
        "notifications/cancelled",
        "notifications/progress",
        "notifications/roots/list_changed",
        "notifications/tasks/status",
    ];

    /// Replies of the probe go nowhere: only the routing decision is read.
    struct Discard;

    impl Outbox for Discard {
        fn notify(&self, _line: String) -> bool {
            true
        }
        fn finish(&self, _reply: Reply) {}
    }

    fn request(id: u64, method: &str, params: &str) -> Request {
        let line =
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#);
        match decode(line.as_bytes(), &IngressLimits::SERVER) {
            Ok(Message::Request(r)) => r,
            other => panic!("{line} is a request: {other:?}"),
        }
    }

    /// Routing does not depend on the catalogue; the demo's serves every capability.
    fn server() -> Server {
        let registry = strict_mcp::cli::demo::registry(strict_mcp::cli::demo::DEFAULT_PAGE_SIZE)
            .expect("the demo registry");
        Server::new(registry, ServerOptions::new().legacy_era(true)).expect("server")
    }

    /// A link with a live legacy session (2025-11-25).
    fn session(server: &Server, outbox: &Arc<dyn Outbox>) -> LegacyLink {
        let mut link = LegacyLink::default();
        let init = request(
            1,
            "initialize",
            r#"{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"probe","version":"0"}}"#,
        );
        match link.route(server, init, outbox) {
            Route::Answered(reply) => assert!(reply.line.contains(r#""result""#), "{reply:?}"),
            Route::Serve(..) | Route::Legacy(..) => {
                panic!("initialize was not answered by the legacy lifecycle")
            }
        }
        assert!(link.session().is_some());
        link
    }

    /// Whether a request of `method`, sent in a live legacy session, is served: answered by
    /// the lifecycle with anything but -32601, or handed to the dispatcher for a method its
    /// route table has.
    pub fn session_serves(method: &str) -> bool {
        let server = server();
        let outbox: Arc<dyn Outbox> = Arc::new(Discard);
        let mut link = session(&server, &outbox);
        match link.route(&server, request(2, method, "{}"), &outbox) {
            Route::Answered(reply) => !reply.line.contains(r#""code":-32601"#),
            Route::Serve(r, _) | Route::Legacy(r, _) => methods::needs(&r.method).is_some(),
        }
    }

    /// Whether notification `method` changes a live legacy session (completes its
    /// handshake); cancellation is the stdio host's, the same in both eras.
    pub fn session_takes(method: &str) -> bool {
        let server = server();
        let outbox: Arc<dyn Outbox> = Arc::new(Discard);
        let mut link = session(&server, &outbox);
        let n = Notification {
            method: method.to_owned(),
            params: None,
        };
        link.notification(&server, &n);
        link.session().is_some_and(|s| s.initialized())
    }

    /// Every method the legacy-era stdio server serves on one connection: the legacy
    /// session's requests and notifications (probed through `LegacyLink`, the route the
    /// stdio loop takes), and every 2026-07-28 request of the route table (a request
    /// carrying modern `_meta` stays modern).
    pub fn probe() -> BTreeSet<String> {
        let mut served: BTreeSet<String> = CLIENT_REQUESTS
            .iter()
            .filter(|m| session_serves(m))
            .chain(CLIENT_NOTIFICATIONS.iter().filter(|m| session_takes(m)))
            .map(|m| (*m).to_owned())
            .collect();
        served.extend(
            methods::REQUESTS
                .iter()
                .filter(|m| methods::needs(m).is_some())
                .map(|m| (*m).to_owned()),
        );
        served
    }

    /// The version the HTTP probe's session is opened at and names in its
    /// `MCP-Protocol-Version` header.
    const HTTP_PROBE_VERSION: &str = "2025-11-25";

    /// The HTTP methods a 2025 Streamable HTTP client sends besides POST: the standalone
    /// stream's GET and the session's DELETE.
    pub const SESSION_HTTP_METHODS: [&str; 2] = ["GET", "DELETE"];

    /// A live legacy HTTP session of `caller` in `server`'s session table: its id.
    fn http_session(server: &Server, caller: &Caller) -> String {
        let init = request(
            1,
            "initialize",
            r#"{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"probe","version":"0"}}"#,
        );
        match server
            .legacy_sessions()
            .post(server, caller, None, None, Message::Request(init))
        {
            Post::Answer(a) => {
                assert!(
                    a.body.as_deref().is_some_and(|b| b.contains(r#""result""#)),
                    "{a:?}"
                );
                a.session_id
                    .expect("an initialize result carries a session id")
            }
            other => panic!("initialize was not answered by the session table: {other:?}"),
        }
    }

    /// Whether a request of `method`, POSTed with a live session's id and a legacy version
    /// header, is served: answered by the session with anything but -32601, or handed to the
    /// dispatcher for a method its route table has (the decision `Sessions::post` gives the
    /// HTTP host).
    pub fn http_session_serves(method: &str) -> bool {
        let server = server();
        let caller = Caller::new("probe");
        let id = http_session(&server, &caller);
        let post = server.legacy_sessions().post(
            &server,
            &caller,
            Some(&id),
            Some(HTTP_PROBE_VERSION),
            Message::Request(request(2, method, "{}")),
        );
        match post {
            Post::Answer(a) => a
                .body
                .as_deref()
                .is_some_and(|b| !b.contains(r#""code":-32601"#)),
            Post::Serve(r, _) => methods::needs(&r.method).is_some(),
            Post::Modern(_) => false,
        }
    }

    /// Whether notification `method`, POSTed with a live session's id, is served: accepted
    /// (202) by the session table, which hands it to the session's `LegacyLink`, and taken
    /// by that link (it completes the handshake; [`session_takes`]).
    pub fn http_session_takes(method: &str) -> bool {
        let server = server();
        let caller = Caller::new("probe");
        let id = http_session(&server, &caller);
        let n = Notification {
            method: method.to_owned(),
            params: None,
        };
        let post = server.legacy_sessions().post(
            &server,
            &caller,
            Some(&id),
            Some(HTTP_PROBE_VERSION),
            Message::Notification(n),
        );
        matches!(post, Post::Answer(ref a) if a.status == 202 && a.body.is_none())
            && session_takes(method)
    }

    /// A standalone stream the probe attaches: it takes nothing and stays open.
    struct ProbeStream;

    impl strict_mcp::server::legacy::notify::SessionStream for ProbeStream {
        fn send(&self, _line: String) -> bool {
            true
        }
        fn is_open(&self) -> bool {
            true
        }
        fn close(&self) {}
    }

    /// Whether HTTP method `http_method` with a live session's id is served, as the
    /// operation kind `<METHOD> <path>`: GET when the session table attaches a standalone
    /// stream to the session (`Sessions::open_stream`, what the HTTP host asks for a GET),
    /// any other method when it is answered with anything but 405.
    pub fn http_endpoint_serves(http_method: &str) -> bool {
        let server = server();
        let caller = Caller::new("probe");
        let id = http_session(&server, &caller);
        if http_method == "GET" {
            return server
                .legacy_sessions()
                .open_stream(&server, &caller, &id, Arc::new(ProbeStream))
                .is_ok();
        }
        server
            .legacy_sessions()
            .other_method(&server, &caller, http_method, &id)
            .is_some_and(|a| a.status != 405)
    }

    /// Every method legacy Streamable HTTP serves on one endpoint: the session's requests
    /// and notifications (probed through `Sessions`, the decision the HTTP host takes), the
    /// session's HTTP methods besides POST (as `DELETE /mcp`), and every 2026-07-28 request
    /// of the route table (a modern header or `_meta` stays modern).
    pub fn http_probe() -> BTreeSet<String> {
        let mut served: BTreeSet<String> = CLIENT_REQUESTS
            .iter()
            .filter(|m| http_session_serves(m))
            .chain(
                CLIENT_NOTIFICATIONS
                    .iter()
                    .filter(|m| http_session_takes(m)),
            )
            .map(|m| (*m).to_owned())
            .collect();
        served.extend(
            SESSION_HTTP_METHODS
                .iter()
                .filter(|m| http_endpoint_serves(m))
                .map(|m| format!("{m} {DEFAULT_PATH}")),
        );
        served.extend(
            methods::REQUESTS
                .iter()
                .filter(|m| methods::needs(m).is_some())
                .map(|m| (*m).to_owned()),
        );
        served
    }
}

/// What the inventory lacks or has too much, one line per `(transport, method)`, worded so
/// the engineer who added a method knows exactly what to add.
fn inventory_faults(
    have: &BTreeSet<(String, String)>,
    want: &BTreeSet<(String, String)>,
) -> Vec<String> {
    let mut out: Vec<String> = want
        .difference(have)
        .map(|(t, m)| {
            format!(
                "({t}, {m}): the code exposes {m} on {t} but contracts/mcp-interface.json has no \
                 operation for it; add an operation with transportId \"{t}\" and kind \"{m}\", \
                 and its evidence record"
            )
        })
        .collect();
    out.extend(have.difference(want).map(|(t, m)| {
        format!("({t}, {m}): an operation the code does not expose on {t}; remove it")
    }));
    out
}

/// The binary's leaf subcommands, as the words that run them (`tools call`).
fn cli_leaves(cmd: &clap::Command, prefix: &str, out: &mut Vec<String>) {
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let words = if prefix.is_empty() {
            sub.get_name().to_owned()
        } else {
            format!("{prefix} {}", sub.get_name())
        };
        if sub.has_subcommands() {
            cli_leaves(sub, &words, out);
        } else {
            out.push(words);
        }
    }
}

/// What `CLI_SUBCOMMANDS` and the binary's subcommand set disagree on, one line per
/// subcommand or method.
fn cli_table_faults(leaves: &[String], table: &[(&str, &[&str])]) -> Vec<String> {
    let mut out = Vec::new();
    for leaf in leaves {
        if !table.iter().any(|(s, _)| s == leaf) {
            out.push(format!(
                "CLI subcommand `{leaf}` is not in CLI_SUBCOMMANDS (tests/support/evidence.rs): \
                 list the methods it sends, then add a `cli` operation and evidence for each new one"
            ));
        }
    }
    for (sub, sent) in table {
        if !leaves.iter().any(|l| l == sub) {
            out.push(format!(
                "CLI_SUBCOMMANDS names `{sub}`, which the binary does not have"
            ));
        }
        for m in *sent {
            // Extension methods are routed beside the core table while their extension is
            // served, not in it ([`EXTENSIONS`]).
            if methods::needs(m).is_none() && extension_of(m).is_none() {
                out.push(format!(
                    "CLI subcommand `{sub}` sends `{m}`, which the server does not route"
                ));
            }
        }
    }
    out
}

fn real_cli_leaves() -> Vec<String> {
    let mut leaves = Vec::new();
    cli_leaves(&strict_mcp::cli::Cli::command(), "", &mut leaves);
    leaves
}

/// Every method some CLI subcommand of `table` sends, the extension methods included.
fn cli_methods<'a>(table: &[(&'a str, &'a [&'a str])]) -> BTreeSet<&'a str> {
    table.iter().flat_map(|(_, m)| m.iter().copied()).collect()
}

/// O114: every method the server routes has an operation on every server transport, every
/// method the client calls has one on every client transport, every method a CLI subcommand
/// sends has one on the CLI transport, and no operation names a method the code does not
/// have. A method added to the route table, the client or the CLI fails here until the
/// contract exposes it (and `contract_check` until its evidence exists).
#[test]
fn o114_inventory_matches_the_code() {
    let c = contract();
    assert_eq!(
        methods::REQUESTS
            .iter()
            .filter(|m| methods::needs(m).is_none())
            .collect::<Vec<_>>(),
        Vec::<&&str>::new(),
        "a request the server does not route"
    );
    for removed in methods::REMOVED {
        assert!(methods::needs(removed).is_none(), "{removed} is routed");
    }
    let table = cli_table_faults(&real_cli_leaves(), CLI_SUBCOMMANDS);
    assert!(table.is_empty(), "{table:#?}");
    let faults = inventory_faults(&exposures(&c), &wanted(&cli_methods(CLI_SUBCOMMANDS)));
    assert!(faults.is_empty(), "{faults:#?}");
    let transports: BTreeSet<&str> = c["transports"]
        .as_array()
        .expect("transports")
        .iter()
        .filter_map(|t| t["id"].as_str())
        .collect();
    let declared: BTreeSet<&str> = SERVER_TRANSPORTS
        .iter()
        .chain(CLIENT_TRANSPORTS.iter())
        .chain([CLI_TRANSPORT, LEGACY_TRANSPORT, LEGACY_HTTP_TRANSPORT].iter())
        .copied()
        .collect();
    assert_eq!(transports, declared);
    let ids: Vec<&str> = c["operations"]
        .as_array()
        .expect("operations")
        .iter()
        .filter_map(|op| op["id"].as_str())
        .collect();
    let unique: BTreeSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "duplicate operation ids");
}

/// What the operations say wrong about extensions, one line per operation: an operation of
/// an extension method must name that extension (`extension`) and when it is served
/// (`condition`: O119, -32601 while inactive, and for Tasks -32021 without the request's
/// declaration); a core operation names neither.
fn extension_faults(c: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for op in c["operations"].as_array().into_iter().flatten() {
        let id = op["id"].as_str().unwrap_or_default();
        let kind = op["kind"].as_str().unwrap_or_default();
        let condition = op["condition"].as_str().unwrap_or_default();
        match extension_of(kind) {
            Some(ext) => {
                if op["extension"] != ext {
                    out.push(format!("{id}: {kind} needs \"extension\": \"{ext}\""));
                }
                let mut needles = vec!["O119", "-32601"];
                if ext == strict_mcp::wire::tasks::TASKS_EXTENSION {
                    needles.push("-32021");
                }
                for needle in needles {
                    if !condition.contains(needle) {
                        out.push(format!("{id}: its condition does not state {needle}"));
                    }
                }
            }
            None => {
                if op.get("extension").is_some() || op.get("condition").is_some() {
                    out.push(format!("{id}: {kind} is a core method, not an extension's"));
                }
            }
        }
    }
    out
}

/// O114, O119, issue #21: every extension operation is marked with its extension and the
/// condition it is served under; no core operation is.
#[test]
fn o114_extension_operations_name_their_extension_and_condition() {
    let c = contract();
    let faults = extension_faults(&c);
    assert!(faults.is_empty(), "{faults:#?}");
    let marked = c["operations"]
        .as_array()
        .expect("operations")
        .iter()
        .filter(|op| op.get("extension").is_some())
        .count();
    // Six methods on the two server and three client transports, and the CLI's five (it
    // sends no `resources/directory/read`).
    assert_eq!(marked, 6 * 5 + 5);
    assert_eq!(
        extension_methods().collect::<Vec<_>>(),
        [
            "tasks/get",
            "tasks/update",
            "tasks/cancel",
            "skills/list",
            "skills/get",
            "resources/directory/read"
        ]
    );
}

/// O114: an extension operation that lost its marks, or a core one that gained them, is
/// named; so is an extension method missing from a transport.
#[test]
fn o115_fault_extension_operation_unmarked() {
    let mut c = contract();
    let ops = c["operations"].as_array_mut().expect("operations");
    let i = ops
        .iter()
        .position(|op| op["id"] == "http-server.tasks-get")
        .expect("http-server.tasks-get");
    ops[i].as_object_mut().unwrap().remove("extension");
    ops[i]["condition"] = json!("served while a task tool is (O119, -32601)");
    ops[0]["extension"] = json!("io.modelcontextprotocol/skills");
    let faults = extension_faults(&c);
    assert_eq!(
        faults,
        vec![
            "stdio-server.server-discover: server/discover is a core method, not an extension's"
                .to_owned(),
            "http-server.tasks-get: tasks/get needs \"extension\": \"io.modelcontextprotocol/tasks\""
                .to_owned(),
            "http-server.tasks-get: its condition does not state -32021".to_owned(),
        ]
    );
    let mut have = exposures(&contract());
    assert!(have.remove(&(
        "in-memory-client".to_owned(),
        "resources/directory/read".to_owned()
    )));
    let faults = inventory_faults(&have, &wanted(&cli_methods(CLI_SUBCOMMANDS)));
    assert_eq!(faults.len(), 1, "{faults:#?}");
    assert!(
        faults[0].starts_with("(in-memory-client, resources/directory/read): the code exposes"),
        "{}",
        faults[0]
    );
}

/// O114: a CLI method without an operation fails the inventory, and the message names the
/// `(transport, method)` pair.
#[test]
fn o115_fault_cli_method_without_operation() {
    let c = contract();
    let mut have = exposures(&c);
    assert!(have.remove(&("cli".to_owned(), "tools/call".to_owned())));
    let faults = inventory_faults(&have, &wanted(&cli_methods(CLI_SUBCOMMANDS)));
    assert_eq!(faults.len(), 1, "{faults:#?}");
    assert!(
        faults[0].starts_with("(cli, tools/call): the code exposes tools/call on cli"),
        "{}",
        faults[0]
    );
    // A subcommand that starts sending a method the CLI did not send before.
    let mut methods = cli_methods(CLI_SUBCOMMANDS);
    methods.remove("completion/complete");
    let faults = inventory_faults(&exposures(&c), &wanted(&methods));
    assert_eq!(
        faults,
        vec![
            "(cli, completion/complete): an operation the code does not expose on cli; remove it"
                .to_owned()
        ]
    );
}

/// O114: the HTTP server's metadata endpoint is in the inventory; without its operation the
/// failure names the pair.
#[test]
fn o115_fault_http_endpoint_without_operation() {
    let c = contract();
    let mut have = exposures(&c);
    let pair = (
        "http-server".to_owned(),
        "GET /.well-known/oauth-protected-resource".to_owned(),
    );
    assert!(have.remove(&pair));
    let faults = inventory_faults(&have, &wanted(&cli_methods(CLI_SUBCOMMANDS)));
    assert_eq!(faults.len(), 1, "{faults:#?}");
    assert!(
        faults[0].starts_with(
            "(http-server, GET /.well-known/oauth-protected-resource): the code exposes"
        ),
        "{}",
        faults[0]
    );
}

/// B23, O114: the probe reads the legacy route set from the code: the lifecycle's methods,
/// the translated ones the dispatcher routes, the handshake notification, the session's
/// subscriptions and the 2026-07-28 requests; not the 2025 methods served by neither era
/// (the `tasks/*` ones) nor `notifications/initialized` sent as a request.
#[cfg(feature = "legacy")]
#[test]
fn o114_legacy_probe_reads_the_route_set() {
    let served = legacy::probe();
    let want: BTreeSet<String> = [
        "initialize",
        "notifications/initialized",
        "ping",
        "logging/setLevel",
        "tools/list",
        "tools/call",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "server/discover",
        "subscriptions/listen",
    ]
    .iter()
    .map(|m| (*m).to_owned())
    .collect();
    assert_eq!(served, want);
    assert!(legacy::session_serves("resources/subscribe"));
    assert!(!legacy::session_serves("tasks/get"));
    assert!(!legacy::session_serves("notifications/initialized"));
    assert!(!legacy::session_serves("server/discover"));
    assert!(legacy::session_serves("logging/setLevel"));
    assert!(!legacy::session_takes("notifications/cancelled"));
}

/// O114: a legacy method without an operation fails the inventory, naming the pair; so does
/// a method the legacy route starts to serve (here `tasks/get`).
#[cfg(feature = "legacy")]
#[test]
fn o115_fault_legacy_method_without_operation() {
    let c = contract();
    let mut have = exposures(&c);
    assert!(have.remove(&(LEGACY_TRANSPORT.to_owned(), "ping".to_owned())));
    let want = wanted(&cli_methods(CLI_SUBCOMMANDS));
    let faults = inventory_faults(&have, &want);
    assert_eq!(faults.len(), 1, "{faults:#?}");
    assert!(
        faults[0].starts_with("(legacy-stdio-server, ping): the code exposes ping on"),
        "{}",
        faults[0]
    );
    let mut want = want;
    want.insert((LEGACY_TRANSPORT.to_owned(), "tasks/get".to_owned()));
    let faults = inventory_faults(&exposures(&c), &want);
    assert_eq!(faults.len(), 1, "{faults:#?}");
    assert!(
        faults[0].starts_with("(legacy-stdio-server, tasks/get): the code exposes"),
        "{}",
        faults[0]
    );
}

/// B23, D37, D38, O114: the HTTP probe reads legacy Streamable HTTP's route set from its
/// session table: the same session methods as stdio, the session's DELETE (GET is 405: no
/// standalone stream), and the 2026-07-28 requests.
#[cfg(feature = "legacy")]
#[test]
fn o114_legacy_http_probe_reads_the_route_set() {
    let mut want = legacy::probe();
    want.insert("DELETE /mcp".to_owned());
    want.insert("GET /mcp".to_owned());
    assert_eq!(legacy::http_probe(), want);
    assert!(legacy::http_endpoint_serves("DELETE"));
    assert!(legacy::http_endpoint_serves("GET"));
    assert!(!legacy::http_endpoint_serves("PUT"));
    assert!(legacy::http_session_serves("resources/subscribe"));
    assert!(!legacy::http_session_serves("tasks/get"));
    assert!(!legacy::http_session_serves("notifications/initialized"));
    assert!(!legacy::http_session_serves("server/discover"));
    assert!(legacy::http_session_serves("logging/setLevel"));
    assert!(legacy::http_session_takes("notifications/initialized"));
    assert!(!legacy::http_session_takes("notifications/cancelled"));
}

/// O114: a legacy HTTP method without an operation fails the inventory, naming the pair; so
/// do the session's DELETE or GET without one and a method the HTTP session starts to serve
/// (here a hypothetical `PUT /mcp`).
#[cfg(feature = "legacy")]
#[test]
fn o115_fault_legacy_http_method_without_operation() {
    let c = contract();
    let want = wanted(&cli_methods(CLI_SUBCOMMANDS));
    for method in ["ping", "DELETE /mcp", "GET /mcp"] {
        let mut have = exposures(&c);
        assert!(have.remove(&(LEGACY_HTTP_TRANSPORT.to_owned(), method.to_owned())));
        let faults = inventory_faults(&have, &want);
        assert_eq!(faults.len(), 1, "{faults:#?}");
        assert!(
            faults[0].starts_with(&format!(
                "(legacy-http-server, {method}): the code exposes {method} on legacy-http-server"
            )),
            "{}",
            faults[0]
        );
    }
    let mut want = want;
    want.insert((LEGACY_HTTP_TRANSPORT.to_owned(), "PUT /mcp".to_owned()));
    let faults = inventory_faults(&exposures(&c), &want);
    assert_eq!(faults.len(), 1, "{faults:#?}");
    assert!(
        faults[0].starts_with("(legacy-http-server, PUT /mcp): the code exposes"),
        "{}",
        faults[0]
    );
}

/// O114: a subcommand the table does not know, a table row the binary lacks, and a method
/// the server does not route are each named.
#[test]
fn o115_fault_cli_subcommand_not_in_the_table() {
    let mut leaves = real_cli_leaves();
    assert_eq!(
        cli_table_faults(&leaves, CLI_SUBCOMMANDS),
        Vec::<String>::new()
    );
    leaves.push("replay".to_owned());
    let faults = cli_table_faults(&leaves, CLI_SUBCOMMANDS);
    assert_eq!(faults.len(), 1, "{faults:#?}");
    assert!(faults[0].starts_with("CLI subcommand `replay` is not in CLI_SUBCOMMANDS"));
    let mut table = CLI_SUBCOMMANDS.to_vec();
    table.push(("tools watch", &["tools/watch"]));
    let faults = cli_table_faults(&real_cli_leaves(), &table);
    assert_eq!(
        faults,
        vec![
            "CLI_SUBCOMMANDS names `tools watch`, which the binary does not have".to_owned(),
            "CLI subcommand `tools watch` sends `tools/watch`, which the server does not route"
                .to_owned(),
        ]
    );
}

/// O115: the static checks (no phantom, omitted, duplicate or deferred record, both
/// polarities proven, requirement ids that exist) find nothing.
#[test]
fn o115_static_check_is_clean() {
    let faults = check(&contract(), &requirements(), None);
    assert!(faults.is_empty(), "{faults:#?}");
}

/// Every cited proof is `path::function` and that test function exists in that file.
#[test]
fn o115_every_cited_test_exists() {
    let c = contract();
    let mut checked = 0;
    let mut cited = 0;
    for rec in c["evidence"].as_array().expect("evidence") {
        for polarity in ["positive", "negative"] {
            let proofs = rec[polarity].as_array().expect("both polarities are cited");
            assert!(!proofs.is_empty(), "{}: no {polarity} proof", rec["target"]);
            cited += proofs.len();
            for proof in proofs {
                let r = proof["ref"].as_str().expect("ref");
                let (file, func) = r.split_once("::").expect("ref is path::function");
                let text = std::fs::read_to_string(root().join(file))
                    .unwrap_or_else(|_| panic!("{r}: {file} does not exist"));
                assert!(
                    text.contains(&format!("fn {func}(")),
                    "{r}: no such test function"
                );
                checked += 1;
            }
        }
    }
    assert_eq!(checked, cited);
    assert!(checked >= 2 * c["evidence"].as_array().map_or(0, Vec::len));
}

/// O115: after the evidence tests ran, every cited test was observed exercising its target.
/// Gated by `CONTRACT_CHECK` (see the module doc); with the gate set, a missing record fails.
#[test]
fn contract_check() {
    if std::env::var_os("CONTRACT_CHECK").is_none() {
        eprintln!("contract_check: CONTRACT_CHECK unset, run after the evidence tests");
        return;
    }
    // Without `legacy` the legacy-stdio-server records and route set would be missing.
    #[cfg(not(feature = "legacy"))]
    panic!(
        "CONTRACT_CHECK=1 needs --features legacy: the {LEGACY_TRANSPORT} records come from \
         tests/evidence_legacy.rs, tests/legacy_stdio.rs and tests/legacy_interop.rs, the \
         {LEGACY_HTTP_TRANSPORT} records from tests/evidence_legacy.rs, and their \
         inventories are probed from the legacy routes"
    );
    #[cfg(feature = "legacy")]
    {
        let records = support::evidence::load_records(&support::evidence::evidence_dir());
        let faults = check(&contract(), &requirements(), Some(&records));
        assert!(faults.is_empty(), "{faults:#?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Planted faults: the check over small in-test contracts and records

const T_TRANSPORT: &str = "contract-item/mcp_interface/transport/pipe";
const T_LIST: &str = "contract-item/mcp_interface/operation/pipe.tools-list";
const POS: &str = "tests/x.rs::pos";
const NEG: &str = "tests/x.rs::neg";

fn record(target: &str) -> Value {
    json!({
        "target": target,
        "requirements": ["O115"],
        "status": "proven",
        "positive": [{"kind": "integration-test", "ref": POS}],
        "negative": [{"kind": "integration-test", "ref": NEG}],
    })
}

fn small() -> Value {
    json!({
        "transports": [{"id": "pipe"}],
        "operations": [{"id": "pipe.tools-list", "kind": "tools/list", "transportId": "pipe"}],
        "evidence": [record(T_TRANSPORT), record(T_LIST)],
    })
}

fn reqs() -> BTreeSet<String> {
    ["O115".to_owned()].into()
}

fn line(test: &str, event: Value) -> String {
    let mut v = event;
    v["test"] = json!(test);
    v.to_string()
}

fn exchange(test: &str, transport: &str, op: &str, outcome: &str) -> String {
    line(
        test,
        json!({"event": "exchange", "transport": transport, "operation": op, "outcome": outcome}),
    )
}

fn good_lines() -> Vec<String> {
    vec![
        line(POS, json!({"event": "start"})),
        exchange(POS, "pipe", "tools/list", "result"),
        line(POS, json!({"event": "end", "passed": true})),
        line(NEG, json!({"event": "start"})),
        exchange(NEG, "pipe", "tools/list", "error"),
        line(NEG, json!({"event": "end", "passed": true})),
    ]
}

fn records(lines: &[String]) -> BTreeMap<String, TestRecord> {
    parse_records(&lines.join("\n"))
}

fn faults(c: &Value, lines: &[String]) -> Vec<Fault> {
    check(c, &reqs(), Some(&records(lines)))
}

#[test]
fn o115_fault_free_small_contract_passes() {
    assert_eq!(faults(&small(), &good_lines()), vec![]);
}

#[test]
fn o115_fault_phantom_target() {
    let mut c = small();
    c["evidence"]
        .as_array_mut()
        .unwrap()
        .push(record("contract-item/mcp_interface/operation/pipe.ghost"));
    assert_eq!(
        faults(&c, &good_lines()),
        vec![Fault::Phantom {
            target: "contract-item/mcp_interface/operation/pipe.ghost".into()
        }]
    );
}

#[test]
fn o115_fault_omitted_target_and_duplicate_record() {
    let mut c = small();
    c["evidence"].as_array_mut().unwrap().remove(1);
    assert_eq!(
        faults(&c, &good_lines()),
        vec![Fault::Omitted {
            target: T_LIST.into()
        }]
    );
    let mut c = small();
    c["evidence"].as_array_mut().unwrap().push(record(T_LIST));
    assert_eq!(
        faults(&c, &good_lines()),
        vec![Fault::Duplicate {
            target: T_LIST.into()
        }]
    );
}

#[test]
fn o115_fault_deferred_proof() {
    let mut c = small();
    c["evidence"][1] = json!({"target": T_LIST, "requirements": ["O115"],
                              "status": "deferred", "reason": "later"});
    assert_eq!(
        faults(&c, &good_lines()),
        vec![Fault::Deferred {
            target: T_LIST.into()
        }]
    );
}

#[test]
fn o115_fault_unit_only_proof() {
    let mut c = small();
    c["evidence"][1]["negative"][0]["kind"] = json!("unit-test");
    assert_eq!(
        check(&c, &reqs(), None),
        vec![Fault::NoProof {
            target: T_LIST.into(),
            polarity: "negative".into()
        }]
    );
}

#[test]
fn o115_fault_unknown_requirement_id() {
    let mut c = small();
    c["evidence"][0]["requirements"] = json!(["O115", "Z999"]);
    assert_eq!(
        faults(&c, &good_lines()),
        vec![Fault::UnknownRequirement {
            target: T_TRANSPORT.into(),
            id: "Z999".into()
        }]
    );
}

/// The review's finding: a cited test that runs another operation is not evidence.
#[test]
fn o115_fault_proof_exercises_another_operation() {
    let mut lines = good_lines();
    lines[1] = exchange(POS, "pipe", "prompts/get", "result");
    assert_eq!(
        faults(&small(), &lines),
        vec![Fault::NotExercised {
            target: T_LIST.into(),
            test: POS.into(),
            polarity: "positive".into()
        }]
    );
}

/// A positive proof whose only exchange ended in an error does not prove the positive.
#[test]
fn o115_fault_proof_has_the_wrong_polarity_or_transport() {
    let mut lines = good_lines();
    lines[4] = exchange(NEG, "other", "tools/list", "error");
    let got = faults(&small(), &lines);
    assert_eq!(
        got,
        vec![
            Fault::NotExercised {
                target: T_TRANSPORT.into(),
                test: NEG.into(),
                polarity: "negative".into()
            },
            Fault::NotExercised {
                target: T_LIST.into(),
                test: NEG.into(),
                polarity: "negative".into()
            },
        ]
    );
    let mut lines = good_lines();
    lines[1] = exchange(POS, "pipe", "tools/list", "error");
    assert_eq!(
        faults(&small(), &lines).len(),
        2,
        "an error is not a positive"
    );
}

#[test]
fn o115_fault_skipped_proof() {
    let mut lines = good_lines();
    lines.insert(
        2,
        line(POS, json!({"event": "skip", "reason": "peer missing"})),
    );
    let got = faults(&small(), &lines);
    assert_eq!(
        got,
        vec![
            Fault::Skipped {
                target: T_TRANSPORT.into(),
                test: POS.into()
            },
            Fault::Skipped {
                target: T_LIST.into(),
                test: POS.into()
            },
        ]
    );
}

#[test]
fn o115_fault_cited_test_left_no_record_or_failed() {
    let lines: Vec<String> = good_lines().into_iter().skip(3).collect();
    let got = faults(&small(), &lines);
    assert!(got.contains(&Fault::NoRecord {
        target: T_LIST.into(),
        test: POS.into()
    }));
    assert_eq!(got.len(), 2, "{got:?}");
    let mut lines = good_lines();
    lines[5] = line(NEG, json!({"event": "end", "passed": false}));
    assert!(faults(&small(), &lines).contains(&Fault::NotPassed {
        target: T_LIST.into(),
        test: NEG.into()
    }));
    // A test that panicked before its recorder's end line never passes either.
    let lines: Vec<String> = good_lines().into_iter().take(5).collect();
    assert!(faults(&small(), &lines).contains(&Fault::NotPassed {
        target: T_LIST.into(),
        test: NEG.into()
    }));
}

/// The id extraction reads the bold ids of REQUIREMENTS.md and nothing else.
#[test]
fn o115_requirement_ids_are_the_bold_ids() {
    let ids = requirement_ids(
        "- **A1** MUST x\n- **O115** MUST **not** y **B**\n- **X6 — error code.**\n\
         - **Y8 x — z**\n",
    );
    assert_eq!(
        ids,
        ["A1".to_owned(), "O115".to_owned(), "X6".to_owned()].into()
    );
    let real = requirements();
    assert!(real.contains("O115") && real.contains("A1") && real.contains("O127"));
    assert!(real.contains("X6") && real.contains("X22") && !real.contains("X99"));
    assert!(!real.contains("O128"));
}
