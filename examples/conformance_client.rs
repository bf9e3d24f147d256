//! The client the official MCP conformance suite drives (`conformance client --command …`).
//!
//! ```sh
//! MCP_CONFORMANCE_SCENARIO=tools_call cargo run --example conformance_client -- http://localhost:PORT/mcp
//! ```
//!
//! The suite appends the scenario server's URL as the last argument and names the scenario in
//! `MCP_CONFORMANCE_SCENARIO` (the revision in `MCP_CONFORMANCE_PROTOCOL_VERSION`, scenario
//! data in `MCP_CONFORMANCE_CONTEXT`). Each scenario is performed with the library's public
//! API only, over [`HttpTransport`] to exactly that URL. Exit status: 0 when the scenario ran
//! to its end, 1 with a one-line reason on stderr when a step failed, 2 for a usage error
//! (unknown scenario, no URL, a revision this client does not speak).
//!
//! The `auth/*` scenarios run through `client::auth`: connect, and on the transport's 401
//! discover, register or identify, authorize headlessly (the suite's authorization server
//! approves without a user), then `tools/list` and a call of `test-tool` with the token,
//! stepping up on a 403.
//!
//! The client does only what the library does: it answers `input_required` rounds itself
//! (explicit rounds, as a host would), but header mirroring, dropping tools with invalid
//! annotations and schema handling are the library's, never patched up here.

#![forbid(unsafe_code)]

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};
use strict_mcp::client::auth::{
    ClientCredentials, ClientIdentity, DialingFetcher, DpopKey, Fetcher, Grant, HeadlessUserStep,
    MemoryTokenStore, OAuthClient, OAuthConfig, RegistrationRequest, TokenAuthMethod,
    MAX_AUTHORIZATION_ATTEMPTS,
};
use strict_mcp::client::http::{HttpError, HttpTransport};
use strict_mcp::client::{
    CallOptions, Client, ClientError, ClientOptions, ConnectError, InputRequired, RoundInput,
    ToolOutcome,
};
use strict_mcp::wire::{InputRequiredResult, Tool, PROTOCOL_REVISION};

/// The scenario to perform.
const SCENARIO_ENV: &str = "MCP_CONFORMANCE_SCENARIO";
/// The revision the suite runs at; this client speaks only [`PROTOCOL_REVISION`].
const VERSION_ENV: &str = "MCP_CONFORMANCE_PROTOCOL_VERSION";
/// Scenario data (JSON), for the scenarios that have some.
const CONTEXT_ENV: &str = "MCP_CONFORMANCE_CONTEXT";

/// Per-request deadline: well inside the suite's 30 s scenario budget, so a mock that never
/// answers gives our own one-line reason instead of the suite's kill.
const CALL_DEADLINE: Duration = Duration::from_secs(10);

/// The scenarios, by the suite's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scenario {
    ToolsCall,
    RequestMetadata,
    RequestState,
    StandardHeaders,
    CustomHeaders,
    InvalidToolHeaders,
    RefNoDeref,
    SchemaPreservation,
    /// `sep-2640-client-no-prefetch`: list skills, read no file.
    SkillsNoPrefetch,
    /// `sep-2640-client-verify-{digest,size,frontmatter}`: list, load `pdf-processing`, and
    /// read its supporting file only when the manifest passed verification.
    SkillsVerify,
}

/// The suite's names for [`Scenario`].
const SCENARIOS: [(&str, Scenario); 12] = [
    ("tools_call", Scenario::ToolsCall),
    ("request-metadata", Scenario::RequestMetadata),
    ("sep-2322-client-request-state", Scenario::RequestState),
    ("http-standard-headers", Scenario::StandardHeaders),
    ("http-custom-headers", Scenario::CustomHeaders),
    ("http-invalid-tool-headers", Scenario::InvalidToolHeaders),
    ("json-schema-ref-no-deref", Scenario::RefNoDeref),
    (
        "json-schema-2020-12-preservation",
        Scenario::SchemaPreservation,
    ),
    ("sep-2640-client-no-prefetch", Scenario::SkillsNoPrefetch),
    ("sep-2640-client-verify-digest", Scenario::SkillsVerify),
    ("sep-2640-client-verify-size", Scenario::SkillsVerify),
    ("sep-2640-client-verify-frontmatter", Scenario::SkillsVerify),
];

impl Scenario {
    fn from_name(name: &str) -> Option<Scenario> {
        SCENARIOS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, scenario)| *scenario)
    }
}

/// Why a run ended unsuccessfully.
#[derive(Debug, thiserror::Error)]
enum Failure {
    /// The suite's contract was not met (arguments, environment).
    #[error("{0}")]
    Usage(String),
    /// The transport could not be built for the URL.
    #[error("HTTP transport for {url}: {source}")]
    Transport { url: String, source: HttpError },
    /// Discovery refused the server.
    #[error("connect: {0}")]
    Connect(Box<ConnectError>),
    /// A call failed.
    #[error("{step}: {source}")]
    Call {
        step: String,
        source: Box<ClientError>,
    },
    /// The server answered, but not what the scenario needs to go on.
    #[error("{0}")]
    Unexpected(String),
}

impl Failure {
    fn exit_code(&self) -> u8 {
        match self {
            Failure::Usage(_) => 2,
            _ => 1,
        }
    }
}

/// Names the step of a failed call.
fn at(step: impl Into<String>) -> impl FnOnce(ClientError) -> Failure {
    let step = step.into();
    move |source| Failure::Call {
        step,
        source: Box::new(source),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let name = std::env::var(SCENARIO_ENV).unwrap_or_default();
    match run(&name).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            // One line, whatever the nested errors contain.
            let reason = failure.to_string().replace(['\n', '\r'], " ");
            eprintln!("conformance_client: {name}: {reason}");
            ExitCode::from(failure.exit_code())
        }
    }
}

async fn run(name: &str) -> Result<(), Failure> {
    if AUTH_SCENARIOS.contains(&name)
        || MACHINE_AUTH_SCENARIOS.contains(&name)
        || DPOP_SCENARIOS.contains(&name)
    {
        let url = std::env::args()
            .skip(1)
            .last()
            .ok_or_else(|| Failure::Usage("no server URL argument".to_owned()))?;
        let machine = MACHINE_AUTH_SCENARIOS.contains(&name);
        return run_auth(&url, machine).await;
    }
    let scenario = Scenario::from_name(name).ok_or_else(|| {
        Failure::Usage(format!("unknown scenario {name:?} (from {SCENARIO_ENV})"))
    })?;
    if let Ok(version) = std::env::var(VERSION_ENV) {
        if version != PROTOCOL_REVISION {
            return Err(Failure::Usage(format!(
                "{VERSION_ENV}={version}, but this client speaks only {PROTOCOL_REVISION}"
            )));
        }
    }
    let url = std::env::args()
        .skip(1)
        .last()
        .ok_or_else(|| Failure::Usage("no server URL argument".to_owned()))?;
    // Read before connecting: bad scenario data is a usage error, not a server failure.
    let context = match scenario {
        Scenario::CustomHeaders => {
            Some(tool_calls(&std::env::var(CONTEXT_ENV).map_err(|_| {
                Failure::Usage(format!("{CONTEXT_ENV} is not set"))
            })?)?)
        }
        _ => None,
    };
    let client = connect(&url).await?;
    let outcome = perform(&client, scenario, context).await;
    client.close().await;
    outcome
}

/// Connects once: the library itself asks `server/discover` again after a `-32022` that lists
/// [`PROTOCOL_REVISION`] as supported (B15, `client::MAX_VERSION_RETRIES`), and reports a
/// server without it as `ConnectError::UnsupportedVersions`.
async fn connect(url: &str) -> Result<Client, Failure> {
    let transport = HttpTransport::new(url, None).map_err(|source| Failure::Transport {
        url: url.to_owned(),
        source,
    })?;
    let options = ClientOptions {
        client_info: json!({
            "name": "strict-mcp-conformance-client",
            "version": env!("CARGO_PKG_VERSION"),
        }),
        default_deadline: CALL_DEADLINE,
        ..ClientOptions::default()
    };
    Client::connect(Arc::new(transport), options)
        .await
        .map_err(|error| Failure::Connect(Box::new(error)))
}

/// The tool calls a scenario's context asks for, in order: name and arguments.
type ToolCalls = Vec<(String, Map<String, Value>)>;

/// `MCP_CONFORMANCE_CONTEXT` of `http-custom-headers`: `{"toolCalls":[{name, arguments}]}`.
fn tool_calls(text: &str) -> Result<ToolCalls, Failure> {
    let bad = |why: &str| Failure::Usage(format!("{CONTEXT_ENV}: {why}"));
    let value: Value = serde_json::from_str(text).map_err(|e| bad(&e.to_string()))?;
    let calls = value
        .get("toolCalls")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("no toolCalls array"))?;
    calls
        .iter()
        .map(|call| {
            let name = call
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| bad("a tool call without a name"))?;
            let arguments = match call.get("arguments") {
                None => Map::new(),
                Some(Value::Object(map)) => map.clone(),
                Some(_) => return Err(bad("arguments that are not an object")),
            };
            Ok((name.to_owned(), arguments))
        })
        .collect()
}

async fn perform(
    client: &Client,
    scenario: Scenario,
    context: Option<ToolCalls>,
) -> Result<(), Failure> {
    let plain = CallOptions::default();
    match scenario {
        Scenario::ToolsCall => {
            let tools = client.list_tools(&plain).await.map_err(at("tools/list"))?;
            find(&tools, "add_numbers")?;
            let arguments = object(json!({"a": 5, "b": 3}));
            client
                .call("add_numbers", Some(arguments), &plain)
                .await
                .map_err(at("tools/call add_numbers"))?;
        }
        // Discovery (with the version retry) did the work; one more request shows the
        // headers and `_meta` on a request after the retry.
        Scenario::RequestMetadata => {
            client.list_tools(&plain).await.map_err(at("tools/list"))?;
        }
        Scenario::RequestState => request_state(client).await?,
        Scenario::StandardHeaders => standard_headers(client).await?,
        Scenario::CustomHeaders => {
            let tools = client.list_tools(&plain).await.map_err(at("tools/list"))?;
            for (name, arguments) in context.unwrap_or_default() {
                find(&tools, &name)?;
                client
                    .call(&name, Some(arguments), &plain)
                    .await
                    .map_err(at(format!("tools/call {name}")))?;
            }
        }
        // The library drops tools whose `x-mcp-header` annotations are invalid (D23): call
        // every tool it kept.
        Scenario::InvalidToolHeaders => {
            let tools = client.list_tools(&plain).await.map_err(at("tools/list"))?;
            if tools.is_empty() {
                return Err(Failure::Unexpected("tools/list kept no tool".to_owned()));
            }
            for tool in &tools {
                let arguments = sample_arguments(&tool_schema(tool)?);
                client
                    .call(&tool.name, Some(arguments), &plain)
                    .await
                    .map_err(at(format!("tools/call {}", tool.name)))?;
            }
        }
        // Listing is the whole step: nothing may fetch the schema's network `$ref`.
        Scenario::RefNoDeref => {
            client.list_tools(&plain).await.map_err(at("tools/list"))?;
        }
        Scenario::SchemaPreservation => {
            let tools = client.list_tools(&plain).await.map_err(at("tools/list"))?;
            let focal = find(&tools, "json_schema_2020_12_tool")?;
            find(&tools, "json_schema_echo")?;
            let arguments = object(json!({ "schema": tool_schema(focal)? }));
            client
                .call("json_schema_echo", Some(arguments), &plain)
                .await
                .map_err(at("tools/call json_schema_echo"))?;
        }
        // The registry is built from the entries alone (N28): listing reads no file.
        Scenario::SkillsNoPrefetch => {
            client
                .list_skills(&plain)
                .await
                .map_err(at("skills/list"))?;
        }
        Scenario::SkillsVerify => skills_verify(client).await?,
    }
    Ok(())
}

/// Loads `pdf-processing` from its listed entry and, only if its `SKILL.md` passes
/// verification (size, digest, frontmatter: N29, N30), reads the supporting file it
/// references. A skill that fails verification is declined, which is this host's correct
/// behaviour, not a failed run.
async fn skills_verify(client: &Client) -> Result<(), Failure> {
    let plain = CallOptions::default();
    let skills = client
        .list_skills(&plain)
        .await
        .map_err(at("skills/list"))?;
    let entry = skills
        .iter()
        .find(|s| s.name() == Some("pdf-processing"))
        .ok_or_else(|| Failure::Unexpected("skills/list has no pdf-processing".to_owned()))?;
    let loaded = match client.load_skill(entry, &plain).await {
        Ok(loaded) => loaded,
        Err(ClientError::Skill(declined)) => {
            eprintln!(
                "conformance_client: declined skill {}: {declined}",
                entry.uri
            );
            return Ok(());
        }
        Err(e) => return Err(at(format!("load {}", entry.uri))(e)),
    };
    let forms = loaded
        .resolve("references/FORMS.md")
        .ok_or_else(|| Failure::Unexpected("references/FORMS.md does not resolve".to_owned()))?;
    match client.read_skill_file(&loaded, &forms, &plain).await {
        Ok(_) => Ok(()),
        Err(ClientError::Skill(declined)) => {
            eprintln!("conformance_client: declined file {forms}: {declined}");
            Ok(())
        }
        Err(e) => Err(at(format!("read {forms}"))(e)),
    }
}

/// `sep-2322-client-request-state`: explicit MRTR rounds, each a new request.
async fn request_state(client: &Client) -> Result<(), Failure> {
    let plain = CallOptions::default();
    // The host answers form elicitations on these calls, so it declares that for them.
    let answering = CallOptions::default().capabilities(json!({"elicitation": {"form": {}}}));
    let tools = client.list_tools(&plain).await.map_err(at("tools/list"))?;
    for name in [
        "test_mrtr_echo_state",
        "test_mrtr_no_state",
        "test_mrtr_unrelated",
        "test_mrtr_no_result_type",
    ] {
        find(&tools, name)?;
    }

    // Round 1 of the echo tool; an unrelated call runs while its answer is pending, carrying
    // neither of its fields.
    let echo = expect_input(client, "test_mrtr_echo_state", &answering).await?;
    expect_complete(client, "test_mrtr_unrelated", RoundInput::first(), &plain).await?;
    let round = RoundInput::answer(&echo.result, answer_all(&echo.result)?);
    expect_complete(client, "test_mrtr_echo_state", round, &answering).await?;

    // No requestState in round 1: none in round 2 (RoundInput::answer copies it as absent).
    let no_state = expect_input(client, "test_mrtr_no_state", &answering).await?;
    let round = RoundInput::answer(&no_state.result, answer_all(&no_state.result)?);
    expect_complete(client, "test_mrtr_no_state", round, &answering).await?;

    // A result without resultType is complete: nothing to retry.
    expect_complete(
        client,
        "test_mrtr_no_result_type",
        RoundInput::first(),
        &plain,
    )
    .await
}

async fn expect_input(
    client: &Client,
    name: &str,
    options: &CallOptions,
) -> Result<InputRequired, Failure> {
    match client
        .call_tool(name, None, RoundInput::first(), options)
        .await
        .map_err(at(format!("tools/call {name}")))?
    {
        ToolOutcome::InputRequired(input) => Ok(input),
        other => Err(Failure::Unexpected(format!(
            "tools/call {name}: expected input_required, got {}",
            outcome_kind(&other)
        ))),
    }
}

async fn expect_complete(
    client: &Client,
    name: &str,
    round: RoundInput,
    options: &CallOptions,
) -> Result<(), Failure> {
    match client
        .call_tool(name, None, round, options)
        .await
        .map_err(at(format!("tools/call {name}")))?
    {
        ToolOutcome::Success(_) => Ok(()),
        other => Err(Failure::Unexpected(format!(
            "tools/call {name}: expected a complete result, got {}",
            outcome_kind(&other)
        ))),
    }
}

fn outcome_kind(outcome: &ToolOutcome) -> &'static str {
    match outcome {
        ToolOutcome::Success(_) => "a complete result",
        ToolOutcome::Failed(_) => "a tool error (isError)",
        ToolOutcome::InputRequired(_) => "input_required",
    }
}

/// Answers every input request: form elicitations are accepted with a value for each
/// requested property; anything else is a step this host does not take.
fn answer_all(result: &InputRequiredResult) -> Result<Map<String, Value>, Failure> {
    let mut answers = Map::new();
    for (key, request) in result.input_requests.iter().flat_map(|r| r.iter()) {
        let request = serde_json::to_value(request)
            .map_err(|e| Failure::Unexpected(format!("input request {key}: {e}")))?;
        answers.insert(key.clone(), answer(key, &request)?);
    }
    if answers.is_empty() {
        return Err(Failure::Unexpected(
            "input_required without any input request".to_owned(),
        ));
    }
    Ok(answers)
}

fn answer(key: &str, request: &Value) -> Result<Value, Failure> {
    let method = request.get("method").and_then(Value::as_str).unwrap_or("");
    let params = request.get("params");
    let mode = params
        .and_then(|p| p.get("mode"))
        .and_then(Value::as_str)
        .unwrap_or("form");
    if method != "elicitation/create" || mode != "form" {
        return Err(Failure::Unexpected(format!(
            "input request {key}: {method} ({mode}) is not answered by this client"
        )));
    }
    let schema = params
        .and_then(|p| p.get("requestedSchema"))
        .cloned()
        .unwrap_or(Value::Null);
    Ok(json!({"action": "accept", "content": sample_arguments(&schema)}))
}

/// `http-standard-headers`: every method that carries `Mcp-Method` and `Mcp-Name`.
async fn standard_headers(client: &Client) -> Result<(), Failure> {
    let plain = CallOptions::default();
    let tools = client.list_tools(&plain).await.map_err(at("tools/list"))?;
    for tool in &tools {
        let arguments = sample_arguments(&tool_schema(tool)?);
        client
            .call(&tool.name, Some(arguments), &plain)
            .await
            .map_err(at(format!("tools/call {}", tool.name)))?;
    }
    let resources = client
        .list_resources(&plain)
        .await
        .map_err(at("resources/list"))?;
    for resource in &resources {
        client
            .read_resource(&resource.uri, &plain)
            .await
            .map_err(at(format!("resources/read {}", resource.uri)))?;
    }
    let prompts = client
        .list_prompts(&plain)
        .await
        .map_err(at("prompts/list"))?;
    for prompt in &prompts {
        client
            .get_prompt(&prompt.name, None, &plain)
            .await
            .map_err(at(format!("prompts/get {}", prompt.name)))?;
    }
    if tools.is_empty() || resources.is_empty() || prompts.is_empty() {
        return Err(Failure::Unexpected(format!(
            "nothing to exercise: {} tools, {} resources, {} prompts",
            tools.len(),
            resources.len(),
            prompts.len()
        )));
    }
    Ok(())
}

fn find<'a>(tools: &'a [Tool], name: &str) -> Result<&'a Tool, Failure> {
    tools
        .iter()
        .find(|t| t.name == name)
        .ok_or_else(|| Failure::Unexpected(format!("tools/list has no tool {name:?}")))
}

/// A tool's `inputSchema` as JSON, exactly as the library kept it.
fn tool_schema(tool: &Tool) -> Result<Value, Failure> {
    serde_json::to_value(&tool.input_schema)
        .map_err(|e| Failure::Unexpected(format!("inputSchema of {}: {e}", tool.name)))
}

/// A value for every `required` property of an object schema (every property when none is
/// required), by its `type`: enough to make a call the schema accepts.
fn sample_arguments(schema: &Value) -> Map<String, Value> {
    let properties = schema.get("properties").and_then(Value::as_object);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = Map::new();
    for (name, property) in properties.into_iter().flatten() {
        if !required.is_empty() && !required.contains(&name.as_str()) {
            continue;
        }
        let value = match property.get("type").and_then(Value::as_str) {
            Some("boolean") => json!(true),
            Some("integer") => json!(1),
            Some("number") => json!(1.5),
            Some("array") => json!([]),
            Some("object") => json!({}),
            _ => json!("example"),
        };
        out.insert(name.clone(), value);
    }
    out
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scenario_name_maps_and_unknown_does_not() {
        assert_eq!(SCENARIOS.len(), 8);
        for (name, scenario) in SCENARIOS {
            assert_eq!(Scenario::from_name(name), Some(scenario));
        }
        assert_eq!(Scenario::from_name("tools-call"), None);
        assert_eq!(Scenario::from_name(""), None);
    }

    #[test]
    fn custom_header_context_is_read_in_order_and_bad_context_is_typed() {
        let calls = tool_calls(
            r#"{"name":"http-custom-headers","toolCalls":[{"name":"a","arguments":{"x":null}},{"name":"b"}]}"#,
        )
        .expect("context");
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].0, "a");
        assert_eq!(calls[0].1.get("x"), Some(&Value::Null));
        assert_eq!(calls[1], ("b".to_owned(), Map::new()));
        for bad in [
            "",
            "{}",
            r#"{"toolCalls":[{}]}"#,
            r#"{"toolCalls":[{"name":"a","arguments":1}]}"#,
        ] {
            assert!(matches!(tool_calls(bad), Err(Failure::Usage(_))), "{bad}");
        }
    }

    #[test]
    fn form_elicitation_is_accepted_with_typed_values_and_others_refused() {
        let request = json!({"method": "elicitation/create", "params": {
            "message": "Please confirm",
            "requestedSchema": {"type": "object", "properties": {"confirmed": {"type": "boolean"}}},
        }});
        assert_eq!(
            answer("confirm", &request).expect("answer"),
            json!({"action": "accept", "content": {"confirmed": true}})
        );
        let url = json!({"method": "elicitation/create", "params": {"mode": "url"}});
        assert!(matches!(answer("u", &url), Err(Failure::Unexpected(_))));
        let sampling = json!({"method": "sampling/createMessage", "params": {}});
        assert!(matches!(
            answer("s", &sampling),
            Err(Failure::Unexpected(_))
        ));
    }

    #[test]
    fn sample_arguments_fill_required_properties_only() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string"}, "n": {"type": "integer"}, "opt": {"type": "number"},
        }, "required": ["region", "n"]});
        assert_eq!(
            Value::Object(sample_arguments(&schema)),
            json!({"region": "example", "n": 1})
        );
        assert_eq!(sample_arguments(&json!({"type": "object"})), Map::new());
    }
}

/// The suite's `auth/*` client scenarios this client runs through [`run_auth`].
const AUTH_SCENARIOS: [&str; 25] = [
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/authorization-server-migration",
    "auth/iss-supported",
    "auth/iss-not-advertised",
    "auth/iss-supported-missing",
    "auth/iss-wrong-issuer",
    "auth/iss-unexpected",
    "auth/iss-normalized",
    "auth/metadata-issuer-mismatch",
];

/// The extension scenarios (`io.modelcontextprotocol/oauth-client-credentials`, run with
/// `--force`) this client runs through [`run_auth`] with the client credentials grant and the
/// scenario context's pre-registered secret.
const MACHINE_AUTH_SCENARIOS: [&str; 2] = [
    "auth/client-credentials-basic",
    "auth/client-credentials-jwt",
];

/// The DPoP extension scenarios (`io.modelcontextprotocol/auth/dpop`, run with `--force`):
/// the code flow as above, with the DPoP key every [`run_auth`] client holds (the suite's
/// authorization server there lists `ES256` in `dpop_signing_alg_values_supported`).
const DPOP_SCENARIOS: [&str; 2] = ["auth/dpop", "auth/dpop-nonce"];

/// This client's Client ID Metadata Document URL, the one the suite expects.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// Where the headless user step "returns"; never listened on (the redirect is read, not
/// followed).
const REDIRECT_URI: &str = "http://127.0.0.1:3999/callback";

fn auth_failure(error: strict_mcp::client::auth::AuthError) -> Failure {
    Failure::Unexpected(format!("authorization: {error}"))
}

/// The identity from the scenario context (pre-registered `client_id` / `client_secret`),
/// else the metadata document URL, else dynamic registration.
fn auth_identity() -> Result<ClientIdentity, Failure> {
    let registered = match std::env::var(CONTEXT_ENV) {
        Ok(text) => {
            let context: Value = serde_json::from_str(&text)
                .map_err(|_| Failure::Usage(format!("{CONTEXT_ENV} is not JSON")))?;
            match (
                context.get("client_id").and_then(Value::as_str),
                context.get("client_secret").and_then(Value::as_str),
            ) {
                (Some(id), None) if context.get("private_key_pem").is_some() => {
                    let pem = context
                        .get("private_key_pem")
                        .and_then(Value::as_str)
                        .ok_or_else(|| Failure::Usage("private_key_pem is not a string".into()))?;
                    Some(ClientCredentials::private_key_jwt(id, pem))
                }
                (Some(id), Some(secret)) => Some(ClientCredentials::confidential(
                    id,
                    secret,
                    TokenAuthMethod::ClientSecretBasic,
                )),
                (Some(id), None) => Some(ClientCredentials::public(id)),
                _ => None,
            }
        }
        Err(_) => None,
    };
    Ok(ClientIdentity {
        registered,
        metadata_document: Some(CLIENT_METADATA_URL.to_owned()),
        dynamic_registration: Some(RegistrationRequest {
            client_name: "strict-mcp-conformance-client".to_owned(),
            redirect_uris: vec![REDIRECT_URI.to_owned()],
            application_type: "native".to_owned(),
        }),
    })
}

/// One `auth/*` scenario: connect, list and call; a step the transport reports refused
/// (401/403, `HttpError::Unauthorized`) is handled by [`OAuthClient::recover`] and the whole
/// sequence retried, at most [`MAX_AUTHORIZATION_ATTEMPTS`] times (the library bounds the
/// grants as well).
async fn run_auth(url: &str, machine: bool) -> Result<(), Failure> {
    // The SSRF-safe fetcher below both roles (HTTPS included), its policy fixed from the
    // server URL: the suite's loopback servers are reachable because that URL names localhost.
    let fetcher: Arc<dyn Fetcher> = Arc::new(
        DialingFetcher::for_server(url)
            .map_err(|e| Failure::Usage(format!("the server URL is not usable for OAuth: {e}")))?,
    );
    let grant = if machine {
        Grant::ClientCredentials
    } else {
        Grant::AuthorizationCode {
            redirect_uri: REDIRECT_URI.to_owned(),
            user_step: Arc::new(HeadlessUserStep::new(Arc::clone(&fetcher))),
        }
    };
    let config = OAuthConfig {
        identity: auth_identity()?,
        grant,
        store: Arc::new(MemoryTokenStore::default()),
    };
    // DPoP (RFC 9449) wherever the authorization server offers it; bearer tokens elsewhere.
    let oauth = OAuthClient::new(fetcher, url, config)
        .map_err(auth_failure)?
        .with_dpop(DpopKey::generate().map_err(auth_failure)?);
    let plain = CallOptions::default();
    let mut attempt = 0;
    loop {
        attempt += 1;
        let transport = HttpTransport::new(url, Some(oauth.decorator())).map_err(|source| {
            Failure::Transport {
                url: url.to_owned(),
                source,
            }
        })?;
        let options = ClientOptions {
            client_info: json!({
                "name": "strict-mcp-conformance-client",
                "version": env!("CARGO_PKG_VERSION"),
            }),
            default_deadline: CALL_DEADLINE,
            ..ClientOptions::default()
        };
        // The transport reports a 401/403 with its status and challenges
        // (`HttpError::Unauthorized`); that report is what the OAuth client acts on.
        let (error, refused) = match Client::connect(Arc::new(transport), options).await {
            Err(ConnectError::Discover(inner)) => {
                let error = (*inner).clone();
                (
                    error,
                    Failure::Connect(Box::new(ConnectError::Discover(inner))),
                )
            }
            Err(error) => return Err(Failure::Connect(Box::new(error))),
            Ok(client) => {
                let outcome = async {
                    client
                        .list_tools(&plain)
                        .await
                        .map_err(|e| ("tools/list", e))?;
                    client
                        .call("test-tool", Some(Map::new()), &plain)
                        .await
                        .map_err(|e| ("tools/call", e))?;
                    Ok::<(), (&str, ClientError)>(())
                }
                .await;
                client.close().await;
                match outcome {
                    Ok(()) => {
                        oauth.succeeded().await;
                        return Ok(());
                    }
                    Err((step, error)) => (
                        error.clone(),
                        Failure::Call {
                            step: step.to_owned(),
                            source: Box::new(error),
                        },
                    ),
                }
            }
        };
        if attempt > MAX_AUTHORIZATION_ATTEMPTS as usize {
            return Err(refused);
        }
        if !oauth.recover(&error).await.map_err(auth_failure)? {
            return Err(refused);
        }
    }
}
