//! Evidence that a cited test exercised its target (O115, issue 17).
//!
//! An evidence test creates a [`Recorder`] with [`recorder!`] as its first statement; the
//! recorder is named after the test (`tests/<file>.rs::<function>`, the form the contract
//! cites), truncates that test's record file and writes one JSON line per observed exchange:
//! the transport, the method the test *sent* and whether the reply was a `result` or an
//! `error`. The lines are written by the observing code ([`RecordingTransport`] wraps a client
//! transport; the server tests' raw helpers call [`Recorder::observed`] with the method parsed
//! from the bytes they sent and the reply they read), never by a claim of the test. A skip is
//! recorded explicitly; the last line says whether the test ended without panicking.
//!
//! [`check`] compares a contract with the records of a finished run and returns every
//! [`Fault`]; `tests/contract.rs` runs it after the suite when `CONTRACT_CHECK` is set.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{json, Value};
use strict_mcp::client::{BoxFuture, Inbound, Transport, TransportError};
use strict_mcp::wire::jsonrpc::{Message, Response};

/// Where this run's evidence lines go: `<target dir>/evidence`, next to the test binaries, so
/// each target dir (each engineer, each CI job) has its own.
pub fn evidence_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent()
        .and_then(Path::parent)
        .and_then(Path::parent)
        .expect("<target>/<profile>/deps/<test>")
        .join("evidence")
}

/// The record file of the test cited as `reference` (`tests/x.rs::f`).
fn record_file(dir: &Path, reference: &str) -> PathBuf {
    let name: String = reference
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    dir.join(format!("{name}.jsonl"))
}

/// How a reply ended, as the observer saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A JSON-RPC `result` (for `subscriptions/listen`: its acknowledgement; for an HTTP
    /// endpoint that is not JSON-RPC: a 2xx answer).
    Result,
    /// A JSON-RPC `error`, or the HTTP server's refusal before dispatch (401, 403, 405).
    Error,
}

impl Outcome {
    fn as_str(self) -> &'static str {
        match self {
            Outcome::Result => "result",
            Outcome::Error => "error",
        }
    }
}

/// Writes one test's evidence lines; created first in the test, finished on drop.
#[derive(Debug)]
pub struct Recorder {
    reference: String,
    file: Mutex<std::fs::File>,
}

/// A recorder named after the enclosing test function, cited as `tests/<file>.rs::<fn>`.
#[allow(unused_macros)]
macro_rules! recorder {
    () => {{
        fn here() {}
        let path = std::any::type_name_of_val(&here);
        let function = path
            .split("::")
            .filter(|s| !s.starts_with('{') && *s != "here")
            .last()
            .expect("a test function name");
        std::sync::Arc::new(crate::support::evidence::Recorder::new(&format!(
            "{}::{}",
            file!(),
            function
        )))
    }};
}
#[allow(unused_imports)]
pub(crate) use recorder;

impl Recorder {
    /// Starts (and truncates) the record of the test cited as `reference`.
    pub fn new(reference: &str) -> Recorder {
        let dir = evidence_dir();
        std::fs::create_dir_all(&dir).expect("create the evidence dir");
        let file = std::fs::File::create(record_file(&dir, reference)).expect("evidence file");
        let recorder = Recorder {
            reference: reference.to_owned(),
            file: Mutex::new(file),
        };
        recorder.line(&json!({"event": "start"}));
        recorder
    }

    /// The reference this recorder writes for.
    pub fn reference(&self) -> &str {
        &self.reference
    }

    fn line(&self, value: &Value) {
        let mut line = value.clone();
        line["test"] = Value::String(self.reference.clone());
        let mut file = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        writeln!(file, "{line}").expect("write evidence");
        file.flush().expect("flush evidence");
    }

    /// One exchange the observer saw: `method` sent over `transport`, answered by `outcome`.
    pub fn observed(&self, transport: &str, method: &str, outcome: Outcome) {
        self.line(&json!({
            "event": "exchange",
            "transport": transport,
            "operation": method,
            "outcome": outcome.as_str(),
        }));
    }

    /// The test skipped (a peer or platform is missing): never evidence.
    pub fn skip(&self, reason: &str) {
        self.line(&json!({"event": "skip", "reason": reason}));
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        let passed = !std::thread::panicking();
        self.line(&json!({"event": "end", "passed": passed}));
    }
}

/// A client transport that records, per request id, the method sent and how its reply ended.
pub struct RecordingTransport {
    inner: Arc<dyn Transport>,
    transport: String,
    recorder: Arc<Recorder>,
    pending: Mutex<HashMap<String, String>>,
}

impl std::fmt::Debug for RecordingTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordingTransport")
            .field("transport", &self.transport)
            .finish_non_exhaustive()
    }
}

impl RecordingTransport {
    /// Wraps `inner`, recording under the contract transport id `transport`.
    pub fn new(inner: Arc<dyn Transport>, transport: &str, recorder: Arc<Recorder>) -> Self {
        RecordingTransport {
            inner,
            transport: transport.to_owned(),
            recorder,
            pending: Mutex::new(HashMap::new()),
        }
    }

    fn answered(&self, id: &str, outcome: Outcome) {
        let method = self
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
        if let Some(method) = method {
            self.recorder.observed(&self.transport, &method, outcome);
        }
    }
}

impl Transport for RecordingTransport {
    fn send<'a>(&'a self, message: &'a Message) -> BoxFuture<'a, Result<(), TransportError>> {
        Box::pin(async move {
            // Registered before the bytes leave: the reply may be read before `send` returns.
            if let Message::Request(r) = message {
                self.pending
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(r.id.token().to_owned(), r.method.clone());
            }
            let sent = self.inner.send(message).await;
            if let (Err(_), Message::Request(r)) = (&sent, message) {
                self.pending
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(r.id.token());
            }
            sent
        })
    }

    fn recv(&self) -> BoxFuture<'_, Result<Inbound, TransportError>> {
        Box::pin(async move {
            let got = self.inner.recv().await;
            // Wherever it arrived: over HTTP a listen stream's acknowledgement comes on the
            // request's own stream (`Inbound::OnStream`).
            if let Some(message) = got.as_ref().ok().and_then(Inbound::message) {
                match message {
                    Message::Response(Response::Success(r)) => {
                        self.answered(r.id.token(), Outcome::Result);
                    }
                    Message::Response(Response::Error(r)) => {
                        if let Some(id) = &r.id {
                            self.answered(id.token(), Outcome::Error);
                        }
                    }
                    // A listen stream's acknowledgement is its reply (K-section): it names
                    // the stream by the request id.
                    Message::Notification(n)
                        if n.method == strict_mcp::wire::listen::ACKNOWLEDGED =>
                    {
                        if let Some(id) = notification_request_id(n.params.as_deref()) {
                            self.answered(&id, Outcome::Result);
                        }
                    }
                    _ => {}
                }
            }
            got
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        self.inner.close()
    }

    fn announces_cancellation(&self) -> bool {
        self.inner.announces_cancellation()
    }
}

/// The request id an acknowledgement names (`_meta` subscription id), as its JSON token.
fn notification_request_id(params: Option<&serde_json::value::RawValue>) -> Option<String> {
    let params: Value = serde_json::from_str(params?.get()).ok()?;
    match &params["_meta"][strict_mcp::wire::meta::SUBSCRIPTION_ID] {
        Value::Null => None,
        id => Some(id.to_string()),
    }
}

/// The CLI's subcommands (as `strict-mcp <words>` names them) and the protocol methods each
/// sends, in order. Every client subcommand discovers first (O94) and `tools call` fetches the
/// tool's definition first (O103). `check` sends hand-built probes (mostly `server/discover`,
/// one deliberately unknown method, and a `tools/call` round with `--mrtr-tool` or a listed
/// tool annotated `readOnlyHint: true`); `bench`
/// lists the tools and calls one in a closed loop; `completions` and `demo serve` send
/// nothing. `tests/contract.rs` fails when the binary has a subcommand this table lacks,
/// or a method here has no `cli` operation; `tests/evidence_cli.rs` fails when a run sends
/// other methods than its row says.
pub const CLI_SUBCOMMANDS: &[(&str, &[&str])] = &[
    ("discover", &["server/discover"]),
    ("tools list", &["server/discover", "tools/list"]),
    (
        "tools call",
        &["server/discover", "tools/list", "tools/call"],
    ),
    ("resources list", &["server/discover", "resources/list"]),
    (
        "resources templates",
        &["server/discover", "resources/templates/list"],
    ),
    ("resources read", &["server/discover", "resources/read"]),
    ("prompts list", &["server/discover", "prompts/list"]),
    ("prompts get", &["server/discover", "prompts/get"]),
    ("complete", &["server/discover", "completion/complete"]),
    ("listen", &["server/discover", "subscriptions/listen"]),
    ("check", &["server/discover", "tools/list", "tools/call"]),
    ("bench", &["server/discover", "tools/list", "tools/call"]),
    ("completions", &[]),
    ("demo serve", &[]),
    // The Tasks extension (issue #21): its methods sit outside the core method table.
    (
        "tasks call",
        &["server/discover", "tools/list", "tools/call", "tasks/get"],
    ),
    ("tasks get", &["server/discover", "tasks/get"]),
    ("tasks wait", &["server/discover", "tasks/get"]),
    (
        "tasks update",
        &["server/discover", "tasks/get", "tasks/update"],
    ),
    ("tasks cancel", &["server/discover", "tasks/cancel"]),
    ("skills list", &["server/discover", "skills/list"]),
    ("skills get", &["server/discover", "skills/get"]),
    (
        "skills load",
        &["server/discover", "skills/get", "resources/read"],
    ),
];

// ---------------------------------------------------------------------------------------------
// The check

/// One reason the contract is not backed by this run's evidence.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fault {
    /// An evidence record names a target the inventory does not declare.
    Phantom { target: String },
    /// A declared target has no evidence record.
    Omitted { target: String },
    /// Two evidence records for one target.
    Duplicate { target: String },
    /// A record is not proven (product mode forbids deferral).
    Deferred { target: String },
    /// A polarity has no integration or end-to-end proof.
    NoProof { target: String, polarity: String },
    /// A cited requirement id is not in REQUIREMENTS.md.
    UnknownRequirement { target: String, id: String },
    /// A cited test left no record (it did not run, or is not an evidence test).
    NoRecord { target: String, test: String },
    /// A cited test recorded a skip.
    Skipped { target: String, test: String },
    /// A cited test did not end, or ended panicking.
    NotPassed { target: String, test: String },
    /// A cited test ran but never saw its target answered with the cited polarity.
    NotExercised {
        target: String,
        test: String,
        polarity: String,
    },
}

/// What one test recorded.
#[derive(Debug, Default, Clone)]
pub struct TestRecord {
    /// `(transport, operation, outcome)` triples observed.
    pub exchanges: BTreeSet<(String, String, String)>,
    /// A skip was recorded.
    pub skipped: bool,
    /// The end line said the test passed.
    pub passed: bool,
}

/// Parses evidence lines (any number of tests, in any order) into records per test.
pub fn parse_records(lines: &str) -> BTreeMap<String, TestRecord> {
    let mut out: BTreeMap<String, TestRecord> = BTreeMap::new();
    for line in lines.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).expect("an evidence line is JSON");
        let test = v["test"]
            .as_str()
            .expect("evidence names its test")
            .to_owned();
        let rec = out.entry(test).or_default();
        match v["event"].as_str() {
            Some("exchange") => {
                let s = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
                rec.exchanges
                    .insert((s("transport"), s("operation"), s("outcome")));
            }
            Some("skip") => rec.skipped = true,
            Some("end") => rec.passed = v["passed"] == true,
            _ => {}
        }
    }
    out
}

/// Reads every record file of `dir`.
pub fn load_records(dir: &Path) -> BTreeMap<String, TestRecord> {
    let mut all = String::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.path().extension().is_some_and(|e| e == "jsonl") {
                all.push_str(&std::fs::read_to_string(entry.path()).expect("read evidence"));
                all.push('\n');
            }
        }
    }
    parse_records(&all)
}

/// The requirement ids REQUIREMENTS.md defines: anything shaped `[A-Z]\d+` that appears in
/// bold (`**O115**`), or that opens a bold title before an em dash (the disagreements of
/// section X: `**X6 — error code -32002.**`).
pub fn requirement_ids(text: &str) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    for piece in text.split("**").skip(1).step_by(2) {
        let piece = piece.split_once(" — ").map_or(piece, |(id, _)| id).trim();
        let mut chars = piece.chars();
        if chars.next().is_some_and(|c| c.is_ascii_uppercase())
            && piece.len() > 1
            && piece[1..].chars().all(|c| c.is_ascii_digit())
        {
            ids.insert(piece.to_owned());
        }
    }
    ids
}

const TRANSPORT_PREFIX: &str = "contract-item/mcp_interface/transport/";
const OPERATION_PREFIX: &str = "contract-item/mcp_interface/operation/";

/// Every fault of `contract` against `requirements` and, when given, a run's `records`
/// (`None`: the static checks only).
pub fn check(
    contract: &Value,
    requirements: &BTreeSet<String>,
    records: Option<&BTreeMap<String, TestRecord>>,
) -> Vec<Fault> {
    let mut faults = Vec::new();
    // target -> (transport, operation kind or None for a transport target)
    let mut declared: BTreeMap<String, (String, Option<String>)> = BTreeMap::new();
    for t in contract["transports"].as_array().into_iter().flatten() {
        let id = t["id"].as_str().unwrap_or_default();
        declared.insert(format!("{TRANSPORT_PREFIX}{id}"), (id.to_owned(), None));
    }
    for op in contract["operations"].as_array().into_iter().flatten() {
        let id = op["id"].as_str().unwrap_or_default();
        declared.insert(
            format!("{OPERATION_PREFIX}{id}"),
            (
                op["transportId"].as_str().unwrap_or_default().to_owned(),
                op["kind"].as_str().map(str::to_owned),
            ),
        );
    }
    let mut seen = BTreeSet::new();
    for rec in contract["evidence"].as_array().into_iter().flatten() {
        let target = rec["target"].as_str().unwrap_or_default().to_owned();
        let Some((transport, kind)) = declared.get(&target) else {
            faults.push(Fault::Phantom { target });
            continue;
        };
        if !seen.insert(target.clone()) {
            faults.push(Fault::Duplicate { target });
            continue;
        }
        for id in rec["requirements"].as_array().into_iter().flatten() {
            let id = id.as_str().unwrap_or_default();
            if !requirements.contains(id) {
                faults.push(Fault::UnknownRequirement {
                    target: target.clone(),
                    id: id.to_owned(),
                });
            }
        }
        if rec["status"] != "proven" {
            faults.push(Fault::Deferred {
                target: target.clone(),
            });
            continue;
        }
        for (polarity, outcome) in [("positive", "result"), ("negative", "error")] {
            let proofs: Vec<&str> = rec[polarity]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|p| p["kind"] == "integration-test" || p["kind"] == "end-to-end-test")
                .filter_map(|p| p["ref"].as_str())
                .collect();
            if proofs.is_empty() {
                faults.push(Fault::NoProof {
                    target: target.clone(),
                    polarity: polarity.to_owned(),
                });
            }
            let Some(records) = records else { continue };
            for test in proofs {
                let Some(r) = records.get(test) else {
                    faults.push(Fault::NoRecord {
                        target: target.clone(),
                        test: test.to_owned(),
                    });
                    continue;
                };
                if r.skipped {
                    faults.push(Fault::Skipped {
                        target: target.clone(),
                        test: test.to_owned(),
                    });
                }
                if !r.passed {
                    faults.push(Fault::NotPassed {
                        target: target.clone(),
                        test: test.to_owned(),
                    });
                }
                let hit = r.exchanges.iter().any(|(t, op, o)| {
                    t == transport && o == outcome && kind.as_ref().is_none_or(|k| k == op)
                });
                if !hit {
                    faults.push(Fault::NotExercised {
                        target: target.clone(),
                        test: test.to_owned(),
                        polarity: polarity.to_owned(),
                    });
                }
            }
        }
    }
    for target in declared.keys() {
        if !seen.contains(target) {
            faults.push(Fault::Omitted {
                target: target.clone(),
            });
        }
    }
    faults
}
