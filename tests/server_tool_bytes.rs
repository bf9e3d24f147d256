//! The exact reply bytes of a typed `tools/call` (issue #23's size work must not change the
//! wire): a large text full of escapes, an integer beyond `u64` and `1.10` kept as exact text,
//! an explicit `null` on an optional argument (read as absent, O13), in both publication
//! modes. The raw reply line is compared byte for byte, never a re-encoded parse.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::sync::{Arc, Mutex};
use strict_mcp::core::{Caller, CancelToken, Invocation, RegistryBuilder, ToolDef};
use strict_mcp::server::{Outbox, Reply, Server, ServerOptions};

const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

/// 2^64 + 1: no `u64` holds it, an `f64` rounds it.
const BEYOND_U64: &str = "18446744073709551617";

#[derive(Deserialize, JsonSchema)]
struct PinIn {
    /// Sent back.
    text: String,
    /// Beyond `u64`: exact only through the argument text.
    big: u128,
    /// Kept as its exact text (`1.10` stays `1.10`).
    #[schemars(with = "serde_json::Value")]
    exact: Box<RawValue>,
    /// A float (written back in serde_json's shortest form).
    ratio: f64,
    /// Optional: an explicit `null` is read as absent.
    note: Option<String>,
}

#[derive(Serialize, JsonSchema)]
struct PinOut {
    /// The text received.
    text: String,
    /// The integer received.
    big: u128,
    /// The exact value received.
    #[schemars(with = "serde_json::Value")]
    exact: Box<RawValue>,
    /// The float received.
    ratio: f64,
    /// Whether a note came.
    noted: bool,
}

fn server(mode: &str) -> Server {
    let registry = RegistryBuilder::new()
        .tool(ToolDef::typed(
            "pin",
            |_inv: Invocation, a: PinIn| async move {
                Ok(PinOut {
                    text: a.text,
                    big: a.big,
                    exact: a.exact,
                    ratio: a.ratio,
                    noted: a.note.is_some(),
                })
            },
        ))
        .build()
        .expect("registry builds");
    Server::new(
        registry,
        ServerOptions::new().server_info("pin", "1").mode(mode),
    )
    .expect("server builds")
}

#[derive(Default)]
struct One(Mutex<Vec<Reply>>);

impl Outbox for One {
    fn notify(&self, _line: String) -> bool {
        true
    }
    fn finish(&self, reply: Reply) {
        self.0.lock().unwrap().push(reply);
    }
}

async fn serve(server: &Server, line: &str) -> String {
    let message = strict_mcp::codec::decode(line.as_bytes(), &server.ingress_limits())
        .expect("a valid request");
    let outbox = Arc::new(One::default());
    server
        .serve(
            Caller::new("alice"),
            message,
            outbox.clone(),
            CancelToken::new(),
        )
        .await;
    let mut replies = outbox.0.lock().unwrap();
    assert_eq!(replies.len(), 1, "exactly one reply");
    replies.pop().expect("one reply").line
}

/// 200 kB of text with every kind of character JSON escapes or keeps: quotes, backslashes,
/// newlines, tabs, control characters, non-ASCII (two, three and four UTF-8 bytes), `/`.
fn big_text() -> String {
    let unit = "plain \"quoted\" back\\slash\nline\ttab \u{1}\u{1f} é € 😀 a/b </x>";
    let mut text = String::with_capacity(210_000);
    while text.len() < 200_000 {
        text.push_str(unit);
    }
    text
}

/// The arguments as sent: the text escaped by serde_json (the reference escaper), the
/// numbers as literal text.
fn arguments(text: &str) -> String {
    let escaped = serde_json::to_string(text).unwrap();
    format!(
        r#"{{"text":{escaped},"big":{BEYOND_U64},"exact":{{"n":1.10,"m":{BEYOND_U64},"z":-0.0}},"ratio":1.10,"note":null}}"#
    )
}

/// The structured value every mode sends, `{"value": …}`, members in the output type's order.
fn envelope(text: &str) -> String {
    let escaped = serde_json::to_string(text).unwrap();
    format!(
        r#"{{"value":{{"text":{escaped},"big":{BEYOND_U64},"exact":{{"n":1.10,"m":{BEYOND_U64},"z":-0.0}},"ratio":1.1,"noted":false}}}}"#
    )
}

/// The whole reply line: `_meta` with `serverInfo`, the one text block holding the envelope's
/// JSON, `resultType`, `structuredContent`, in key byte order.
fn expected_reply(id: u64, text: &str) -> String {
    let envelope = envelope(text);
    let as_text = serde_json::to_string(&envelope).unwrap();
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"_meta":{{"io.modelcontextprotocol/serverInfo":{{"name":"pin","version":"1"}}}},"content":[{{"text":{as_text},"type":"text"}}],"resultType":"complete","structuredContent":{envelope}}}}}"#
    )
}

#[tokio::test]
async fn o13_o29_direct_typed_call_reply_bytes_are_pinned() {
    let server = server("direct");
    let text = big_text();
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"pin","arguments":{},"_meta":{META}}}}}"#,
        arguments(&text)
    );
    let reply = serve(&server, &line).await;
    let expected = expected_reply(7, &text);
    assert!(
        reply == expected,
        "reply differs at byte {:?}: {}",
        reply
            .bytes()
            .zip(expected.bytes())
            .position(|(a, b)| a != b),
        &reply[..reply.len().min(300)]
    );
    // The same request again (a second parse of the same bytes gives the same line).
    assert_eq!(serve(&server, &line).await, expected);
}

#[tokio::test]
async fn o13_o29_compact_call_tool_reply_bytes_are_pinned() {
    let server = server("compact");
    let text = big_text();
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{{"name":"call_tool","arguments":{{"name":"pin","arguments":{}}},"_meta":{META}}}}}"#,
        arguments(&text)
    );
    let reply = serve(&server, &line).await;
    let expected = expected_reply(8, &text);
    assert!(
        reply == expected,
        "reply differs at byte {:?}: {}",
        reply
            .bytes()
            .zip(expected.bytes())
            .position(|(a, b)| a != b),
        &reply[..reply.len().min(300)]
    );
}

/// A `u128` beyond `u64` and `1.10` in a small call, so a failure prints the whole line.
#[tokio::test]
async fn o29_small_typed_call_keeps_numbers_exact() {
    let server = server("direct");
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{{"name":"pin","arguments":{},"_meta":{META}}}}}"#,
        arguments("x")
    );
    assert_eq!(serve(&server, &line).await, expected_reply(9, "x"));
}

/// C1, #23: a value the tool passes through verbatim (`exact`, a `RawValue`) keeps its own
/// whitespace. With a raw line break in it (valid JSON whitespace, as an HTTP body may carry)
/// the reply line is compacted: one line, the structured value without that whitespace, the
/// text copy holding it escaped (it is the structured text as the tool wrote it). With spaces
/// only, nothing is compacted. The line is no longer scanned for breaks after it is written:
/// the text copy's escape reports them, and these bytes pin that both cases still come out right.
#[tokio::test]
async fn c1_raw_line_breaks_a_tool_passes_through_are_compacted_out() {
    let server = server("direct");
    for (exact, sent) in [
        // (as given in the arguments, as the reply's structured content carries it)
        (
            "{\"n\": 1.10,\n \"m\":[1,\r\n2]}",
            "{\"n\":1.10,\"m\":[1,2]}",
        ),
        ("{\"n\": 1.10, \"m\":[1, 2]}", "{\"n\": 1.10, \"m\":[1, 2]}"),
        ("[\n]", "[]"),
    ] {
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{"name":"pin","arguments":{{"text":"a\nb","big":1,"exact":{exact},"ratio":1,"note":null}},"_meta":{META}}}}}"#
        );
        let as_written = format!(
            r#"{{"value":{{"text":"a\nb","big":1,"exact":{exact},"ratio":1.0,"noted":false}}}}"#
        );
        let structured = as_written.replace(exact, sent);
        let copy = serde_json::to_string(&as_written).unwrap();
        let expected = format!(
            r#"{{"jsonrpc":"2.0","id":5,"result":{{"_meta":{{"io.modelcontextprotocol/serverInfo":{{"name":"pin","version":"1"}}}},"content":[{{"text":{copy},"type":"text"}}],"resultType":"complete","structuredContent":{structured}}}}}"#
        );
        let reply = serve(&server, &line).await;
        assert_eq!(reply, expected, "exact = {exact:?}");
        assert!(!reply.contains(['\n', '\r']), "one line: {reply}");
    }
}
