//! `strict-mcp check`: a black-box strictness audit of a 2026-07-28 server. Each rule sends
//! one hand-built request (raw bytes, so malformed input can be sent on purpose) and judges
//! the answer; the verdict keeps the evidence (what was sent, the HTTP status, the JSON-RPC
//! code). Rules are classed as spec MUST, spec SHOULD or strict-mcp policy (the 2 MiB and
//! 256-byte bounds are this project's policy, not the specification's).

use std::net::IpAddr;
use std::process::Stdio;
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use serde::Serialize;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use crate::wire::headers::{param_headers, required_headers, ParamHeader};
use crate::wire::limits::{MAX_ID_BYTES, MAX_METHOD_BYTES, MAX_REQUEST_FRAME_BYTES};
use crate::wire::PROTOCOL_REVISION;

/// The most bytes of one answer the audit reads: a valid answer to any probe is small; the
/// bound keeps a hostile server from growing the auditor's memory.
pub const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// The most non-response lines (notifications) skipped while waiting for one answer on stdio.
pub const MAX_SKIPPED_LINES: usize = 64;

/// How a rule is classed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    /// A specification MUST: a failure fails the run.
    Must,
    /// A specification SHOULD: reported; fails the run with `--strict`.
    Should,
    /// strict-mcp's own policy: reported; fails the run with `--strict`.
    Policy,
}

/// One answer as the auditor saw it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Answer {
    /// HTTP status (HTTP only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The JSON-RPC error code, when the answer was an error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<i64>,
    /// Whether the answer carried a result.
    pub result: bool,
    /// No JSON-RPC answer: why (closed, timed out, unreadable).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub none: Option<String>,
    /// What the rule found wrong in an answer that came (a rule of several requests).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The parsed message (not serialised; judged by the rules).
    #[serde(skip)]
    pub message: Option<Value>,
}

/// One rule's verdict with its evidence.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    /// Stable rule name.
    pub rule: &'static str,
    /// Its class.
    pub class: Class,
    /// The requirement id it checks (REQUIREMENTS.md).
    pub requirement: &'static str,
    /// Whether it holds.
    pub pass: bool,
    /// What was sent.
    pub request: String,
    /// What came back.
    pub answer: Answer,
}

/// The target of the audit.
#[derive(Debug)]
pub enum Target {
    /// A child process spoken to over stdio.
    Stdio {
        /// Program and arguments.
        words: Vec<String>,
        /// Extra environment.
        env: Vec<(String, String)>,
        /// Working directory.
        cwd: Option<std::path::PathBuf>,
    },
    /// A Streamable HTTP endpoint.
    Http {
        /// The endpoint URL.
        url: hyper::Uri,
    },
}

/// Why the audit could not run (as opposed to a rule failing).
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The URL is not `http://host[:port]/path`.
    #[error("--url: {0}")]
    BadUrl(String),
    /// The host is not a loopback address and `--allow-remote` was not given.
    #[error("--url: {0} is not a loopback host; pass --allow-remote to audit it")]
    Remote(String),
    /// The child could not be started.
    #[error("cannot start the server: {0}")]
    Spawn(String),
}

/// Parses and vets an audit URL: loopback hosts only unless `allow_remote` (never resolved
/// here: a name other than `localhost` counts as remote).
///
/// # Errors
/// [`CheckError::BadUrl`], [`CheckError::Remote`].
pub fn http_target(url: &str, allow_remote: bool) -> Result<Target, CheckError> {
    let uri: hyper::Uri = url
        .parse()
        .map_err(|_| CheckError::BadUrl(url.to_owned()))?;
    if uri.scheme_str() != Some("http") {
        return Err(CheckError::BadUrl("only http:// URLs".to_owned()));
    }
    let host = uri
        .host()
        .ok_or_else(|| CheckError::BadUrl(url.to_owned()))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let loopback = host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
    if !loopback && !allow_remote {
        return Err(CheckError::Remote(host));
    }
    Ok(Target::Http { url: uri })
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": PROTOCOL_REVISION,
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

fn request(id: Value, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// One probe: a name, what to send (body, the `Mcp-Method` header, extra headers) and how
/// to judge the answer.
struct Probe {
    rule: &'static str,
    class: Class,
    requirement: &'static str,
    body: String,
    method_header: String,
    /// The `MCP-Protocol-Version` header: always the body's version, so only the rule's
    /// own fault is probed.
    version_header: String,
    extra: Vec<(String, String)>,
    http_only: bool,
    judge: fn(&Answer) -> bool,
    /// A short description of the request (the body itself may be megabytes).
    describe: String,
}

fn is_error(a: &Answer, code: i64) -> bool {
    a.code == Some(code)
}

/// Refused as a malformed or invalid frame: -32700 / -32600, or an HTTP 4xx without a result
/// (another error, say -32601, is an answer to something else and proves nothing here).
fn refused_frame(a: &Answer) -> bool {
    !a.result
        && (matches!(a.code, Some(-32700 | -32600))
            || (a.code.is_none() && a.status.is_some_and(|s| (400..500).contains(&s))))
}

fn probes() -> Vec<Probe> {
    let discover = request(json!(1), "server/discover", json!({"_meta": meta()}));
    let mut old = meta();
    old["io.modelcontextprotocol/protocolVersion"] = json!("1999-01-01");
    let long_id = "i".repeat(MAX_ID_BYTES + 1);
    let long_method = format!("strict-mcp/{}", "m".repeat(MAX_METHOD_BYTES + 1 - 11));
    let mut padded = request(
        json!(9),
        "server/discover",
        json!({"_meta": meta(), "pad": ""}),
    );
    let pad = MAX_REQUEST_FRAME_BYTES + 1 - padded.len();
    padded = padded.replace(r#""pad":"""#, &format!(r#""pad":"{}""#, "x".repeat(pad)));
    let probe =
        |rule, class, requirement, body: String, method: &str, judge, describe: &str| Probe {
            rule,
            class,
            requirement,
            body,
            method_header: method.to_owned(),
            version_header: PROTOCOL_REVISION.to_owned(),
            extra: Vec::new(),
            http_only: false,
            judge,
            describe: describe.to_owned(),
        };
    vec![
        probe(
            "discover-offers-2026-07-28",
            Class::Must,
            "B16",
            discover.clone(),
            "server/discover",
            |a| {
                a.message.as_ref().is_some_and(|m| {
                    m["result"]["resultType"] == "complete"
                        && m["result"]["supportedVersions"]
                            .as_array()
                            .is_some_and(|v| v.iter().any(|s| s == PROTOCOL_REVISION))
                })
            },
            "server/discover with valid _meta",
        ),
        Probe {
            version_header: "1999-01-01".to_owned(),
            ..probe(
                "unsupported-version-is-32022",
                Class::Must,
                "B14",
                request(json!(2), "server/discover", json!({"_meta": old})),
                "server/discover",
                |a| {
                    is_error(a, -32022)
                        && a.message.as_ref().is_some_and(|m| {
                            m["error"]["data"]["supported"].is_array()
                                && m["error"]["data"]["requested"] == "1999-01-01"
                        })
                },
                "server/discover with protocolVersion 1999-01-01",
            )
        },
        probe(
            "unknown-method-is-32601",
            Class::Must,
            "A14",
            request(
                json!(5),
                "strict-mcp/no-such-method",
                json!({"_meta": meta()}),
            ),
            "strict-mcp/no-such-method",
            |a| is_error(a, -32601) && a.status.is_none_or(|s| s == 404),
            "an unknown method",
        ),
        probe(
            "batch-rejected",
            Class::Must,
            "A21",
            format!("[{discover}]"),
            "server/discover",
            refused_frame,
            "a batch (array) of one server/discover",
        ),
        probe(
            "duplicate-keys-rejected",
            Class::Policy,
            "O36",
            discover.replacen(r#""id":1"#, r#""id":6,"id":7"#, 1),
            "server/discover",
            refused_frame,
            "server/discover with the member id twice",
        ),
        probe(
            "id-over-256-bytes-rejected",
            Class::Policy,
            "O37",
            request(json!(long_id), "server/discover", json!({"_meta": meta()})),
            "server/discover",
            refused_frame,
            "server/discover with a 257-byte string id",
        ),
        probe(
            "method-over-256-bytes-rejected",
            Class::Policy,
            "O37",
            request(json!(10), &long_method, json!({"_meta": meta()})),
            &long_method,
            refused_frame,
            "a 257-byte method name",
        ),
        Probe {
            extra: vec![("host".to_owned(), "evil.invalid".to_owned())],
            http_only: true,
            ..probe(
                "foreign-host-refused",
                Class::Policy,
                "D35",
                discover.clone(),
                "server/discover",
                |a| !a.result && a.status.is_some_and(|s| (400..500).contains(&s)),
                "server/discover with Host: evil.invalid",
            )
        },
        Probe {
            extra: vec![("origin".to_owned(), "http://evil.invalid".to_owned())],
            http_only: true,
            ..probe(
                "foreign-origin-is-403",
                Class::Must,
                "D34",
                discover.clone(),
                "server/discover",
                |a| a.status == Some(403),
                "server/discover with Origin: http://evil.invalid",
            )
        },
        Probe {
            http_only: true,
            ..probe(
                "method-header-mismatch-is-32020",
                Class::Must,
                "D26",
                discover.clone(),
                "tools/list",
                |a| is_error(a, -32020) && a.status == Some(400),
                "server/discover with Mcp-Method: tools/list",
            )
        },
        // Late: a dual-era stdio server reads a request without `_meta` as 2025-era, and
        // switches eras after `initialize`.
        probe(
            "missing-meta-is-32602",
            Class::Must,
            "B3",
            request(json!(3), "server/discover", json!({})),
            "server/discover",
            |a| is_error(a, -32602) && a.status.is_none_or(|s| s == 400),
            "server/discover without _meta",
        ),
        // Then `initialize` itself.
        probe(
            "initialize-is-unknown",
            Class::Must,
            "A14",
            request(
                json!(4),
                "initialize",
                json!({"_meta": meta(), "protocolVersion": "2025-11-25",
                       "capabilities": {}, "clientInfo": {"name": "check", "version": "0"}}),
            ),
            "initialize",
            |a| is_error(a, -32601) && a.status.is_none_or(|s| s == 404),
            "initialize (removed in 2026-07-28)",
        ),
        // Last: a server may rightly close the connection after it.
        probe(
            "frame-over-2-mib-rejected",
            Class::Policy,
            "O36",
            padded,
            "server/discover",
            |a| refused_frame(a) || (!a.result && a.none.as_deref() == Some("closed")),
            "server/discover padded to 2 MiB + 1 byte",
        ),
    ]
}

fn read_answer(bytes: &[u8]) -> Answer {
    let text = String::from_utf8_lossy(bytes);
    // An SSE answer: the last `data:` event that is a response.
    let candidates: Vec<String> = if text.trim_start().starts_with('{') {
        vec![text.into_owned()]
    } else {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:").map(|d| d.trim().to_owned()))
            .collect()
    };
    for c in candidates.iter().rev() {
        if let Ok(m) = serde_json::from_str::<Value>(c) {
            if m.get("result").is_some() || m.get("error").is_some() {
                return Answer {
                    code: m["error"]["code"].as_i64(),
                    result: m.get("result").is_some(),
                    message: Some(m),
                    ..Answer::default()
                };
            }
        }
    }
    Answer {
        none: Some("no JSON-RPC response in the body".to_owned()),
        ..Answer::default()
    }
}

/// Why an answer was not read: it is longer than [`MAX_ANSWER_BYTES`].
const TOO_LARGE: &str = "answer over the audit's 4 MiB read bound";

/// Reads one HTTP body of at most `limit` bytes.
async fn read_body<B>(body: B, limit: usize) -> Result<Bytes, &'static str>
where
    B: hyper::body::Body,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    match Limited::new(body, limit).collect().await {
        Ok(b) => Ok(b.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(TOO_LARGE),
        Err(_) => Err("closed"),
    }
}

/// Reads one line of at most `limit` bytes, its newline not counted (nor kept).
async fn read_line<R>(reader: &mut R, limit: usize) -> Result<Vec<u8>, &'static str>
where
    R: tokio::io::AsyncBufRead + Unpin,
{
    let mut line = Vec::new();
    let n = (&mut *reader)
        .take(limit as u64 + 1)
        .read_until(b'\n', &mut line)
        .await
        .map_err(|_| "closed")?;
    if n == 0 {
        return Err("closed");
    }
    if line.last() == Some(&b'\n') {
        line.pop();
    } else if line.len() > limit {
        return Err(TOO_LARGE);
    }
    Ok(line)
}

async fn http_exchange(url: &hyper::Uri, p: &Probe, deadline: Duration) -> Answer {
    let attempt = async {
        let host = url
            .host()
            .unwrap_or_default()
            .trim_start_matches('[')
            .trim_end_matches(']');
        let port = url.port_u16().unwrap_or(80);
        let stream = tokio::net::TcpStream::connect((host, port))
            .await
            .map_err(|e| e.to_string())?;
        let (mut sender, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .map_err(|e| e.to_string())?;
        tokio::spawn(conn);
        let authority = url
            .authority()
            .map(|a| a.as_str().to_owned())
            .unwrap_or_default();
        let mut req = hyper::Request::post(url.path());
        if !p.extra.iter().any(|(k, _)| k == "host") {
            req = req.header("host", authority);
        }
        req = req
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", p.version_header.as_str())
            .header("mcp-method", p.method_header.as_str());
        for (k, v) in &p.extra {
            req = req.header(k.as_str(), v.as_str());
        }
        let req = req
            .body(Full::new(Bytes::from(p.body.clone())))
            .map_err(|e| e.to_string())?;
        let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
        let status = resp.status().as_u16();
        let mut answer = match read_body(resp.into_body(), MAX_ANSWER_BYTES).await {
            Ok(body) => read_answer(&body),
            Err(e) => Answer {
                none: Some(e.to_owned()),
                ..Answer::default()
            },
        };
        answer.status = Some(status);
        Ok::<Answer, String>(answer)
    };
    match tokio::time::timeout(deadline, attempt).await {
        Ok(Ok(a)) => a,
        Ok(Err(e)) => Answer {
            none: Some(if e.contains("closed") {
                "closed".to_owned()
            } else {
                e
            }),
            ..Answer::default()
        },
        Err(_) => Answer {
            none: Some("timed out".to_owned()),
            ..Answer::default()
        },
    }
}

/// The id a probe's answer must carry: the request's (the last one when it is named twice;
/// the first element's for a batch); `null` when none can be read.
fn expected_id(body: &str) -> Value {
    match serde_json::from_str::<Value>(body) {
        Ok(Value::Array(items)) => items.first().map(|m| m["id"].clone()).unwrap_or_default(),
        Ok(m) => m["id"].clone(),
        // The oversize probe parses; anything else answers with a null id.
        Err(_) => Value::Null,
    }
}

/// Extra time the first stdio probe gets: the child is still starting (an interpreter
/// loading its SDK can take seconds), which is not the server's answer time.
pub const STARTUP_GRACE: Duration = Duration::from_secs(10);

/// A stdio child for the audit: raw lines in, lines out, stdin closed and the child killed
/// at the end.
struct Child {
    child: tokio::process::Child,
    stdin: Option<tokio::process::ChildStdin>,
    stdout: BufReader<tokio::process::ChildStdout>,
}

impl Child {
    async fn exchange(&mut self, p: &Probe, deadline: Duration) -> Answer {
        let expected = expected_id(&p.body);
        let attempt = async {
            let stdin = self.stdin.as_mut().ok_or("closed")?;
            stdin
                .write_all(p.body.as_bytes())
                .await
                .map_err(|_| "closed")?;
            stdin.write_all(b"\n").await.map_err(|_| "closed")?;
            stdin.flush().await.map_err(|_| "closed")?;
            for _ in 0..MAX_SKIPPED_LINES {
                let line = match read_line(&mut self.stdout, MAX_ANSWER_BYTES).await {
                    Ok(line) => line,
                    Err(e) => {
                        if e == TOO_LARGE {
                            // The rest of the line is still in the pipe: no later answer
                            // could be told apart from it, so the child is done with.
                            self.stdin = None;
                        }
                        return Err(e);
                    }
                };
                let a = read_answer(&line);
                // A late answer to an earlier probe is skipped, never judged as this one's.
                let id = a.message.as_ref().map(|m| &m["id"]);
                if a.none.is_none() && id.is_none_or(|id| id.is_null() || *id == expected) {
                    return Ok(a);
                }
            }
            Err("no response among the lines read")
        };
        match tokio::time::timeout(deadline, attempt).await {
            Ok(Ok(a)) => a,
            Ok(Err(e)) => Answer {
                none: Some(e.to_owned()),
                ..Answer::default()
            },
            Err(_) => Answer {
                none: Some("timed out".to_owned()),
                ..Answer::default()
            },
        }
    }

    async fn shut_down(mut self) {
        drop(self.stdin.take());
        if tokio::time::timeout(Duration::from_secs(2), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}

/// The tool the MRTR state-integrity rule calls: named with `check --mrtr-tool NAME
/// --mrtr-args JSON`, or picked from `tools/list` by [`mrtr_candidates`].
#[derive(Debug, Clone)]
pub struct MrtrTool {
    /// The tool's name.
    pub name: String,
    /// Its arguments (a JSON object).
    pub arguments: Value,
}

/// The most listed tools the MRTR rule tries, in list order, when no `--mrtr-tool` is named.
///
/// Why: each try is a real call of a tool the server claims is read-only; a server whose
/// candidates never ask for input must not turn the audit into a sweep of its tools, and the
/// audit stays bounded in requests.
pub const MAX_MRTR_CANDIDATES: usize = 3;

/// A value for one required property, from its schema: `default`, `const`, the first `enum`
/// value, else a least value of its type (`x` repeated `minLength` times, at least once and
/// at most 64; `minimum` or 0; `false`). `None` for a type that cannot be filled this way (object, array, no type).
fn fill(schema: &Value) -> Option<Value> {
    if let Some(v) = schema.get("default").or_else(|| schema.get("const")) {
        return Some(v.clone());
    }
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return Some(first.clone());
    }
    match schema.get("type").and_then(Value::as_str)? {
        "string" => {
            let min = schema.get("minLength").and_then(Value::as_u64).unwrap_or(1);
            Some(Value::String(
                "x".repeat(usize::try_from(min.clamp(1, 64)).ok()?),
            ))
        }
        "integer" | "number" => Some(schema.get("minimum").cloned().unwrap_or(json!(0))),
        "boolean" => Some(Value::Bool(false)),
        _ => None,
    }
}

/// The tools the MRTR rule may call when none is named, in list order, at most
/// [`MAX_MRTR_CANDIDATES`]: those annotated `readOnlyHint: true` (the server's own claim
/// that calling them changes nothing; no other tool is ever called on a guess) whose
/// required arguments [`fill`] can supply. Every input request is then answered with
/// `decline`, so even a tool that asks does nothing on the retry.
#[must_use]
pub fn mrtr_candidates(tools: &[Value]) -> Vec<MrtrTool> {
    tools
        .iter()
        .filter(|t| t["annotations"]["readOnlyHint"] == true)
        .filter_map(|t| {
            let schema = &t["inputSchema"];
            let mut arguments = serde_json::Map::new();
            for name in schema["required"].as_array().into_iter().flatten() {
                let name = name.as_str()?;
                arguments.insert(name.to_owned(), fill(&schema["properties"][name])?);
            }
            Some(MrtrTool {
                name: t["name"].as_str()?.to_owned(),
                arguments: Value::Object(arguments),
            })
        })
        .take(MAX_MRTR_CANDIDATES)
        .collect()
}

/// The `x-mcp-header` annotations of `name` among the listed tools (none when it is not
/// listed or its annotations are invalid: the call is then sent without them).
fn annotations_of(tools: &[Value], name: &str) -> Vec<ParamHeader> {
    tools
        .iter()
        .find(|t| t["name"] == name)
        .and_then(|t| param_headers(&t["inputSchema"]).ok())
        .unwrap_or_default()
}

/// The most `tools/list` pages the pagination rules walk: the audit stays bounded in
/// requests, and a pager that has not ended by then is reported as not ending.
pub const MAX_PAGES: usize = 50;

/// The 2020-12 dialect URI: the dialect every client must support (a missing `$schema`
/// means it too).
const DIALECT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// The target as one connection, for rules that take several requests.
enum Peer<'a> {
    Http(&'a hyper::Uri),
    Stdio(&'a mut Child),
}

impl Peer<'_> {
    async fn send(&mut self, p: &Probe, deadline: Duration) -> Answer {
        match self {
            Peer::Http(url) => http_exchange(url, p, deadline).await,
            Peer::Stdio(c) => c.exchange(p, deadline).await,
        }
    }
}

/// A well-formed request as a probe (its judge is the rule's own code).
fn plain(body: Value, describe: String) -> Probe {
    let method = body["method"].as_str().unwrap_or_default().to_owned();
    let mut extra = Vec::new();
    if let Some(name) = body["params"]["name"].as_str() {
        extra.push(("mcp-name".to_owned(), name.to_owned()));
    }
    Probe {
        rule: "",
        class: Class::Must,
        requirement: "",
        body: body.to_string(),
        method_header: method,
        version_header: PROTOCOL_REVISION.to_owned(),
        extra,
        http_only: false,
        judge: |_| false,
        describe,
    }
}

fn verdict(
    rule: &'static str,
    class: Class,
    requirement: &'static str,
    request: String,
    answer: Answer,
    finding: Option<String>,
) -> Verdict {
    Verdict {
        rule,
        class,
        requirement,
        pass: finding.is_none(),
        request,
        answer: Answer {
            note: finding,
            ..answer
        },
    }
}

fn tools_list(id: i64, cursor: Option<&str>) -> Value {
    let mut params = json!({"_meta": meta()});
    if let Some(c) = cursor {
        params["cursor"] = json!(c);
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params})
}

/// The first fault of a page's cache hints, given the scope of the first page.
fn hint_fault(result: &Value, scope: Option<&Value>) -> Option<String> {
    let ttl = &result["ttlMs"];
    if !ttl.as_f64().is_some_and(|t| t >= 0.0) {
        return Some(format!("ttlMs is {ttl}, not a number >= 0"));
    }
    let s = &result["cacheScope"];
    if s != "public" && s != "private" {
        return Some(format!("cacheScope is {s}, not \"public\" or \"private\""));
    }
    match scope {
        Some(first) if first != s => Some(format!(
            "cacheScope {s} differs from the first page's {first}"
        )),
        _ => None,
    }
}

/// The first tool of a page whose `inputSchema` is not an object schema, and the first
/// published schema that declares a dialect other than 2020-12.
fn schema_faults(result: &Value) -> (Option<String>, Option<String>) {
    let mut shape = None;
    let mut dialect = None;
    for tool in result["tools"].as_array().into_iter().flatten() {
        let name = tool["name"].as_str().unwrap_or("?");
        let input = &tool["inputSchema"];
        if shape.is_none() && !(input.is_object() && input["type"] == "object") {
            shape = Some(format!(
                "tool {name}: inputSchema is not an object schema with type \"object\""
            ));
        }
        for key in ["inputSchema", "outputSchema"] {
            let declared = &tool[key]["$schema"];
            if dialect.is_none() && !declared.is_null() && declared != DIALECT_2020_12 {
                dialect = Some(format!("tool {name}: {key} declares $schema {declared}"));
            }
        }
    }
    (shape, dialect)
}

/// Pagination, cache hints and schemas of `tools/list`, then an
/// invalid cursor; nothing when the server offers no tools. Also returns the tools listed.
async fn list_rules(peer: &mut Peer<'_>, deadline: Duration) -> (Vec<Verdict>, Vec<Value>) {
    let mut pages: Vec<Answer> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    let mut chain = None;
    let mut cursor: Option<String> = None;
    loop {
        let id = 100 + i64::try_from(pages.len()).unwrap_or(0);
        let a = peer
            .send(
                &plain(tools_list(id, cursor.as_deref()), String::new()),
                deadline,
            )
            .await;
        if pages.is_empty() && a.code == Some(-32601) {
            return (Vec::new(), Vec::new());
        }
        let result = a
            .message
            .as_ref()
            .map(|m| m["result"].clone())
            .unwrap_or_default();
        let next = result["nextCursor"].as_str().map(str::to_owned);
        pages.push(a);
        if result["resultType"] != "complete" || !result["tools"].is_array() {
            chain = Some(format!(
                "page {} is not a complete list of tools",
                pages.len()
            ));
            break;
        }
        let Some(next) = next else { break };
        if seen.contains(&next) {
            chain = Some(format!("page {} repeats an earlier cursor", pages.len()));
            break;
        }
        if pages.len() == MAX_PAGES {
            chain = Some(format!("no last page within {MAX_PAGES} pages"));
            break;
        }
        seen.push(next.clone());
        cursor = Some(next);
    }
    let walked = format!("tools/list, following nextCursor ({} page(s))", pages.len());
    let mut hints = None;
    let mut shape = None;
    let mut dialect = None;
    let mut scope = None;
    for (n, page) in pages.iter().enumerate() {
        let result = page
            .message
            .as_ref()
            .map(|m| m["result"].clone())
            .unwrap_or_default();
        if hints.is_none() {
            hints = hint_fault(&result, scope.as_ref()).map(|f| format!("page {}: {f}", n + 1));
        }
        scope.get_or_insert_with(|| result["cacheScope"].clone());
        let (s, d) = schema_faults(&result);
        shape = shape.or(s);
        dialect = dialect.or(d);
    }
    let last = pages.last().cloned().unwrap_or_default();
    let invalid = peer
        .send(
            &plain(
                tools_list(190, Some("strict-mcp-check:not-a-cursor")),
                String::new(),
            ),
            deadline,
        )
        .await;
    let refused = is_error(&invalid, -32602) && !invalid.result;
    let tools: Vec<Value> = pages
        .iter()
        .filter_map(|p| p.message.as_ref())
        .flat_map(|m| m["result"]["tools"].as_array().cloned().unwrap_or_default())
        .collect();
    let verdicts = vec![
        verdict(
            "pages-chain",
            Class::Must,
            "E4",
            walked.clone(),
            last.clone(),
            chain,
        ),
        verdict(
            "list-cache-hints",
            Class::Must,
            "H1",
            walked.clone(),
            last.clone(),
            hints,
        ),
        verdict(
            "input-schema-is-object",
            Class::Must,
            "E5",
            walked.clone(),
            last.clone(),
            shape,
        ),
        verdict(
            "schema-dialect-2020-12",
            Class::Policy,
            "E19",
            walked,
            last,
            dialect,
        ),
        verdict(
            "invalid-cursor-is-32602",
            Class::Should,
            "E4",
            "tools/list with an invalid cursor".to_owned(),
            invalid,
            (!refused).then(|| "not refused with -32602".to_owned()),
        ),
    ];
    (verdicts, tools)
}

/// `requestState` with one character changed (to another of the base64 alphabets).
fn tamper(state: &str) -> String {
    let mut chars: Vec<char> = state.chars().collect();
    if let Some(c) = chars.get_mut(state.chars().count() / 2) {
        *c = if *c == 'A' { 'B' } else { 'A' };
    }
    chars.into_iter().collect()
}

/// A `tools/call` probe; over HTTP it carries the `Mcp-Param-*` headers the tool's
/// `x-mcp-header` annotations require, computed by the client's own
/// [`required_headers`].
fn tool_call(id: i64, params: &Value, annotations: &[ParamHeader]) -> Probe {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    let mut probe = plain(body, String::new());
    let raw = serde_json::value::to_raw_value(params).ok();
    if let Ok(headers) = required_headers("tools/call", raw.as_deref(), annotations) {
        probe.extra.extend(
            headers
                .into_iter()
                .filter(|(name, _)| name.starts_with("Mcp-Param-")),
        );
    }
    probe
}

/// MRTR state integrity: the tool's first round asks for input; the retry with a
/// tampered `requestState` must be refused with a JSON-RPC error. `Err` when the first
/// round did not ask (the rule could not be shown with this tool).
async fn mrtr_rule(
    peer: &mut Peer<'_>,
    tool: &MrtrTool,
    annotations: &[ParamHeader],
    picked: bool,
    deadline: Duration,
) -> Result<Verdict, Verdict> {
    let mut m = meta();
    m["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {"form": {}}});
    let mut params = json!({"_meta": m, "name": tool.name, "arguments": tool.arguments});
    let how = if picked {
        format!(
            " (picked from tools/list: readOnlyHint, arguments {})",
            tool.arguments
        )
    } else {
        String::new()
    };
    let first = peer
        .send(&tool_call(200, &params, annotations), deadline)
        .await;
    let result = first
        .message
        .as_ref()
        .map(|m| m["result"].clone())
        .unwrap_or_default();
    let (Some(state), true) = (
        result["requestState"].as_str(),
        result["resultType"] == "input_required",
    ) else {
        return Err(verdict(
            "tampered-state-refused",
            Class::Must,
            "X21",
            format!("tools/call {} (first round){how}", tool.name),
            first,
            Some("the tool did not answer input_required with a requestState".to_owned()),
        ));
    };
    let mut answers = serde_json::Map::new();
    for key in result["inputRequests"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, _)| k)
    {
        answers.insert(key.clone(), json!({"action": "decline"}));
    }
    params["inputResponses"] = Value::Object(answers);
    params["requestState"] = json!(tamper(state));
    let retry = peer
        .send(&tool_call(201, &params, annotations), deadline)
        .await;
    let refused = retry.code.is_some() && !retry.result;
    Ok(verdict(
        "tampered-state-refused",
        Class::Must,
        "X21",
        format!(
            "tools/call {} retried with a tampered requestState{how}",
            tool.name
        ),
        retry,
        (!refused).then(|| "a tampered requestState was not refused".to_owned()),
    ))
}

/// The MRTR rule with the named tool, or else with the first of [`mrtr_candidates`] that
/// asks for input; `None` (and a line on stderr) when no listed tool can drive it.
async fn mrtr_rules(
    peer: &mut Peer<'_>,
    named: Option<&MrtrTool>,
    tools: &[Value],
    deadline: Duration,
) -> Option<Verdict> {
    if let Some(tool) = named {
        let annotations = annotations_of(tools, &tool.name);
        let (Ok(v) | Err(v)) = mrtr_rule(peer, tool, &annotations, false, deadline).await;
        return Some(v);
    }
    for tool in mrtr_candidates(tools) {
        let annotations = annotations_of(tools, &tool.name);
        if let Ok(v) = mrtr_rule(peer, &tool, &annotations, true, deadline).await {
            return Some(v);
        }
    }
    eprintln!(
        "check: tampered-state-refused (X21) not run: no listed tool annotated readOnlyHint: \
         true asked for input (at most {MAX_MRTR_CANDIDATES} tried); name one with --mrtr-tool"
    );
    None
}

/// One single-request probe's verdict, when it applies to the target; the first stdio probe
/// gets [`STARTUP_GRACE`] on top of `deadline`.
async fn single(
    target: &Target,
    child: Option<&mut Child>,
    p: Probe,
    deadline: Duration,
    first: bool,
) -> Option<Verdict> {
    let answer = match (target, child) {
        (Target::Http { url }, _) => http_exchange(url, &p, deadline).await,
        (Target::Stdio { .. }, Some(c)) if !p.http_only => {
            let grace = if first { STARTUP_GRACE } else { Duration::ZERO };
            c.exchange(&p, deadline + grace).await
        }
        _ => return None,
    };
    Some(Verdict {
        rule: p.rule,
        class: p.class,
        requirement: p.requirement,
        pass: (p.judge)(&answer),
        request: p.describe,
        answer,
    })
}

/// Runs every rule that applies to `target`, in order, each request within `deadline`; the
/// MRTR rule with the tool `mrtr` names, else with one picked from the listed tools
/// ([`mrtr_candidates`]) when one can drive it.
///
/// # Errors
/// [`CheckError::Spawn`] when the stdio server cannot be started.
pub async fn run(
    target: &Target,
    deadline: Duration,
    mrtr: Option<&MrtrTool>,
) -> Result<Vec<Verdict>, CheckError> {
    let mut child = match target {
        Target::Stdio { words, env, cwd } => {
            let mut cmd = tokio::process::Command::new(&words[0]);
            cmd.args(&words[1..])
                .envs(env.iter().cloned())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .kill_on_drop(true);
            if let Some(dir) = cwd {
                cmd.current_dir(dir);
            }
            let mut c = cmd.spawn().map_err(|e| CheckError::Spawn(e.to_string()))?;
            let stdin = c.stdin.take();
            let stdout = c
                .stdout
                .take()
                .ok_or_else(|| CheckError::Spawn("no stdout".into()))?;
            Some(Child {
                child: c,
                stdin,
                stdout: BufReader::new(stdout),
            })
        }
        Target::Http { .. } => None,
    };
    let mut verdicts = Vec::new();
    let mut probes = probes();
    // The rules of several requests run before the late probes (which may switch a dual-era
    // server's era or close the connection).
    let at = probes
        .iter()
        .position(|p| p.rule == "missing-meta-is-32602")
        .unwrap_or(probes.len());
    let late = probes.split_off(at);
    for p in probes {
        verdicts.extend(single(target, child.as_mut(), p, deadline, verdicts.is_empty()).await);
    }
    let mut peer = match (target, child.as_mut()) {
        (Target::Http { url }, _) => Some(Peer::Http(url)),
        (_, Some(c)) => Some(Peer::Stdio(c)),
        _ => None,
    };
    if let Some(peer) = peer.as_mut() {
        let (list, tools) = list_rules(peer, deadline).await;
        verdicts.extend(list);
        verdicts.extend(mrtr_rules(peer, mrtr, &tools, deadline).await);
    }
    for p in late {
        verdicts.extend(single(target, child.as_mut(), p, deadline, false).await);
    }
    if let Some(c) = child {
        c.shut_down().await;
    }
    Ok(verdicts)
}

/// Whether the run passes: every MUST holds, and with `strict` every rule.
#[must_use]
pub fn passed(verdicts: &[Verdict], strict: bool) -> bool {
    verdicts
        .iter()
        .all(|v| v.pass || (!strict && v.class != Class::Must))
}

/// The evidence column of the table.
#[must_use]
pub fn evidence(a: &Answer) -> String {
    let mut parts = Vec::new();
    if let Some(s) = a.status {
        parts.push(format!("HTTP {s}"));
    }
    if let Some(c) = a.code {
        parts.push(format!("error {c}"));
    }
    if a.result {
        parts.push("result".to_owned());
    }
    if let Some(n) = &a.none {
        parts.push(n.clone());
    }
    if let Some(n) = &a.note {
        parts.push(n.clone());
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, read_only: Option<bool>, schema: Value) -> Value {
        let mut t = json!({"name": name, "inputSchema": schema});
        if let Some(r) = read_only {
            t["annotations"] = json!({"readOnlyHint": r});
        }
        t
    }

    #[test]
    fn x21_candidates_are_read_only_tools_with_fillable_arguments() {
        let schema = json!({"type": "object", "properties": {
            "s": {"type": "string", "minLength": 3},
            "n": {"type": "integer", "minimum": 5},
            "b": {"type": "boolean"},
            "e": {"type": "string", "enum": ["red", "blue"]},
            "d": {"type": "number", "default": 1.5},
            "optional": {"type": "object"}
        }, "required": ["s", "n", "b", "e", "d"]});
        let tools = [
            tool("writes", Some(false), json!({"type": "object"})),
            tool("unannotated", None, json!({"type": "object"})),
            tool("filled", Some(true), schema),
            tool(
                "needs-object",
                Some(true),
                json!({"type": "object", "properties": {"o": {"type": "object"}}, "required": ["o"]}),
            ),
            tool("empty", Some(true), json!({"type": "object"})),
        ];
        let picked = mrtr_candidates(&tools);
        let names: Vec<&str> = picked.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["filled", "empty"]);
        assert_eq!(
            picked[0].arguments,
            json!({"s": "xxx", "n": 5, "b": false, "e": "red", "d": 1.5})
        );
        assert_eq!(picked[1].arguments, json!({}));
    }

    #[test]
    fn x21_candidates_bound_at_and_one_past() {
        let many = |n: usize| -> Vec<Value> {
            (0..n)
                .map(|i| tool(&format!("t{i}"), Some(true), json!({"type": "object"})))
                .collect()
        };
        assert_eq!(
            mrtr_candidates(&many(MAX_MRTR_CANDIDATES)).len(),
            MAX_MRTR_CANDIDATES
        );
        let past = mrtr_candidates(&many(MAX_MRTR_CANDIDATES + 1));
        assert_eq!(past.len(), MAX_MRTR_CANDIDATES);
        assert_eq!(past.last().map(|t| t.name.as_str()), Some("t2"));
    }

    #[test]
    fn d19_the_tool_call_probe_carries_the_param_headers() {
        let tools = [
            json!({"name": "t", "inputSchema": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "N"},
            "plain": {"type": "string"}}}}),
        ];
        let annotations = annotations_of(&tools, "t");
        let params = json!({"_meta": meta(), "name": "t",
            "arguments": {"region": "eu west", "n": 7, "plain": "p"}});
        let probe = tool_call(200, &params, &annotations);
        assert_eq!(
            probe.extra,
            [
                ("mcp-name".to_owned(), "t".to_owned()),
                ("Mcp-Param-N".to_owned(), "7".to_owned()),
                ("Mcp-Param-Region".to_owned(), "eu west".to_owned()),
            ]
        );
        // A tool that is not listed: no annotations, only Mcp-Name.
        let probe = tool_call(200, &params, &annotations_of(&tools, "other"));
        assert_eq!(probe.extra, [("mcp-name".to_owned(), "t".to_owned())]);
    }

    #[test]
    fn remote_targets_refused_without_dialing() {
        assert!(matches!(
            http_target("http://example.invalid/mcp", false),
            Err(CheckError::Remote(_))
        ));
        assert!(http_target("http://example.invalid/mcp", true).is_ok());
        assert!(http_target("http://127.0.0.1:1/mcp", false).is_ok());
        assert!(http_target("http://[::1]:1/mcp", false).is_ok());
        assert!(http_target("http://localhost:1/mcp", false).is_ok());
        assert!(matches!(
            http_target("https://127.0.0.1/mcp", false),
            Err(CheckError::BadUrl(_))
        ));
    }

    #[test]
    fn oversize_probe_is_one_byte_past_the_bound_and_long_id_one_past() {
        let p = probes();
        let big = p
            .iter()
            .find(|p| p.rule == "frame-over-2-mib-rejected")
            .unwrap();
        assert_eq!(big.body.len(), MAX_REQUEST_FRAME_BYTES + 1);
        let id = p
            .iter()
            .find(|p| p.rule == "id-over-256-bytes-rejected")
            .unwrap();
        let v: Value = serde_json::from_str(&id.body).unwrap();
        assert_eq!(v["id"].as_str().unwrap().len(), MAX_ID_BYTES + 1);
    }

    /// A stdio answer line of exactly the bound is read; one byte more is refused, typed.
    #[tokio::test]
    async fn stdio_answer_at_max_answer_bytes_is_read_one_past_is_refused() {
        let at = format!("{}\n", "x".repeat(MAX_ANSWER_BYTES));
        let mut reader = at.as_bytes();
        assert_eq!(
            read_line(&mut reader, MAX_ANSWER_BYTES)
                .await
                .unwrap()
                .len(),
            MAX_ANSWER_BYTES
        );
        let past = format!("{}\n", "x".repeat(MAX_ANSWER_BYTES + 1));
        let mut reader = past.as_bytes();
        assert_eq!(
            read_line(&mut reader, MAX_ANSWER_BYTES).await,
            Err(TOO_LARGE)
        );
        assert!(TOO_LARGE.contains(&format!("{} MiB", MAX_ANSWER_BYTES >> 20)));
        let mut eof: &[u8] = b"";
        assert_eq!(read_line(&mut eof, MAX_ANSWER_BYTES).await, Err("closed"));
    }

    /// The same bound on an HTTP body.
    #[tokio::test]
    async fn http_answer_at_max_answer_bytes_is_read_one_past_is_refused() {
        let at = Full::new(Bytes::from(vec![b'x'; MAX_ANSWER_BYTES]));
        assert_eq!(
            read_body(at, MAX_ANSWER_BYTES).await.unwrap().len(),
            MAX_ANSWER_BYTES
        );
        let past = Full::new(Bytes::from(vec![b'x'; MAX_ANSWER_BYTES + 1]));
        assert_eq!(read_body(past, MAX_ANSWER_BYTES).await, Err(TOO_LARGE));
    }

    #[test]
    fn must_failures_fail_the_run_others_only_with_strict() {
        let v = |class, pass| Verdict {
            rule: "r",
            class,
            requirement: "X",
            pass,
            request: String::new(),
            answer: Answer::default(),
        };
        assert!(passed(
            &[v(Class::Must, true), v(Class::Should, false)],
            false
        ));
        assert!(!passed(
            &[v(Class::Must, true), v(Class::Policy, false)],
            true
        ));
        assert!(!passed(&[v(Class::Must, false)], false));
    }
}
