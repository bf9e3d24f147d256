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

use crate::wire::limits::{MAX_ID_BYTES, MAX_REQUEST_FRAME_BYTES};
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
    extra: Vec<(&'static str, String)>,
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
        Probe {
            extra: vec![("origin", "http://evil.invalid".to_owned())],
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
        let mut req = hyper::Request::post(url.path())
            .header("host", authority)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", p.version_header.as_str())
            .header("mcp-method", p.method_header.as_str());
        for (k, v) in &p.extra {
            req = req.header(*k, v.as_str());
        }
        let req = req
            .body(Full::new(Bytes::from(p.body.clone())))
            .map_err(|e| e.to_string())?;
        let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
        let status = resp.status().as_u16();
        let body = Limited::new(resp.into_body(), MAX_ANSWER_BYTES)
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        let mut answer = read_answer(&body);
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
                let mut line = Vec::new();
                let n = (&mut self.stdout)
                    .take(MAX_ANSWER_BYTES as u64)
                    .read_until(b'\n', &mut line)
                    .await
                    .map_err(|_| "closed")?;
                if n == 0 {
                    return Err("closed");
                }
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

/// Runs every rule that applies to `target`, in order, each within `deadline`.
///
/// # Errors
/// [`CheckError::Spawn`] when the stdio server cannot be started.
pub async fn run(target: &Target, deadline: Duration) -> Result<Vec<Verdict>, CheckError> {
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
    let mut first = true;
    for p in probes() {
        let answer = match (target, &mut child) {
            (Target::Http { url }, _) => http_exchange(url, &p, deadline).await,
            (Target::Stdio { .. }, Some(c)) if !p.http_only => {
                let grace = if first { STARTUP_GRACE } else { Duration::ZERO };
                first = false;
                c.exchange(&p, deadline + grace).await
            }
            _ => continue,
        };
        verdicts.push(Verdict {
            rule: p.rule,
            class: p.class,
            requirement: p.requirement,
            pass: (p.judge)(&answer),
            request: p.describe,
            answer,
        });
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
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

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
