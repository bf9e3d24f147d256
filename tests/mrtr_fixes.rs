//! Continuation and gating fixes, driven through `Server::serve` with raw JSON-RPC lines:
//! answers without a state are not answers (X5), a rejected state on a direct-mode
//! `tools/call` is a JSON-RPC error (X21) while compact `call_tool` keeps its tool failure
//! (O50), valid replays keep O53, and sampling asks only for what the request declared (M3).

#![forbid(unsafe_code)]

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use strict_mcp::core::descriptor::{ContentBlock, PromptMessage, ResourceContents, Role};
use strict_mcp::core::seal::{KeyRing, SealKey};
use strict_mcp::core::store::{LedgerStore, MemoryLedgerStore};
use strict_mcp::core::{
    Caller, ClientCapabilities, CoreError, DynamicOutput, ElicitAction, Invocation, Outcome,
    PromptDef, PromptReply, ReadReply, Registry, RegistryBuilder, ResourceDef, ToolDef,
};
use strict_mcp::server::{Server, ServerOptions, ShutdownReport};
use support::harness::{confirm_schema, serve_one, with_clock, DeleteIn, DeleteOut, ManualClock};

/// Capabilities of a client that can answer a form.
const FORM: &str = r#"{"elicitation":{}}"#;

/// The exact error object of a rejected state (X21; the same on every method).
fn state_rejected_error() -> Value {
    json!({"code": -32602, "message": "The requestState was rejected.",
           "data": {"reason": "state_rejected", "retryable": false}})
}

/// The exact failure envelope of a rejected state inside compact `call_tool` (O50).
fn state_rejected_failure() -> Value {
    json!({"failure": {"code": "state_rejected", "message": "The requestState was rejected.",
                       "retryable": false}})
}

#[derive(Default)]
struct Probes {
    /// Completed deletions (the side effect a confirmation guards).
    deleted: AtomicUsize,
    /// Completed runs of the confirming prompt.
    prompted: AtomicUsize,
}

/// Whether the answer under `confirm` is an accepted `{ok: true}`; `None` when absent.
fn confirmed(inv: &Invocation) -> Option<bool> {
    let answer = inv
        .form_answer("confirm", &confirm_schema())
        .expect("well-formed answer")?;
    Some(
        answer.action == ElicitAction::Accept
            && answer.content.and_then(|c| c.get("ok").cloned()) == Some(json!(true)),
    )
}

fn registry(probes: &Arc<Probes>) -> Registry {
    let (p1, p2) = (Arc::clone(probes), Arc::clone(probes));
    RegistryBuilder::new()
        .tool(ToolDef::typed_interactive(
            "delete",
            move |inv: Invocation, input: DeleteIn| {
                let probes = Arc::clone(&p1);
                async move {
                    match confirmed(&inv) {
                        None => Ok(Outcome::input(
                            "confirm",
                            inv.elicit_form("Really delete?", confirm_schema())?,
                        )),
                        Some(true) => {
                            probes.deleted.fetch_add(1, Ordering::SeqCst);
                            Ok(Outcome::Complete(DeleteOut {
                                deleted: input.item,
                            }))
                        }
                        Some(false) => Ok(Outcome::Complete(DeleteOut {
                            deleted: String::new(),
                        })),
                    }
                }
            },
        ))
        .tool(ToolDef::dynamic_interactive(
            "sample",
            r#"{"type":"object"}"#,
            None,
            |inv: Invocation, args: Box<serde_json::value::RawValue>| async move {
                let params: Value = serde_json::from_str(args.get()).expect("object arguments");
                if inv.input_response("s").is_some() {
                    return Ok(Outcome::Complete(DynamicOutput {
                        content: vec![ContentBlock::text("sampled")],
                        structured: None,
                    }));
                }
                Ok(Outcome::input("s", inv.sample(params)?))
            },
        ))
        .resource(ResourceDef::new(
            "mem://answers",
            "answers",
            |inv: Invocation, uri: String| async move {
                let seen = if inv.input_response("confirm").is_some() {
                    "saw an answer"
                } else {
                    "no answers"
                };
                Ok(ReadReply::new(vec![ResourceContents::text(uri, seen)]))
            },
        ))
        .prompt(
            PromptDef::new("confirm", move |inv: Invocation, _args| {
                let probes = Arc::clone(&p2);
                async move {
                    match confirmed(&inv) {
                        None => Ok(Outcome::input(
                            "confirm",
                            inv.elicit_form("Go ahead?", confirm_schema())?,
                        )),
                        Some(ok) => {
                            probes.prompted.fetch_add(1, Ordering::SeqCst);
                            Ok(Outcome::Complete(PromptReply {
                                description: None,
                                messages: vec![PromptMessage::new(
                                    Role::User,
                                    ContentBlock::text(format!("confirmed: {ok}")),
                                )],
                            }))
                        }
                    }
                }
            })
            .argument("topic", "What to confirm.", false),
        )
        .build()
        .expect("registry builds")
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Direct,
    Compact,
}

const MODES: [Mode; 2] = [Mode::Direct, Mode::Compact];

struct Harness {
    server: Server,
    probes: Arc<Probes>,
    mode: Mode,
    next_id: AtomicUsize,
}

impl Harness {
    fn new(mode: Mode) -> Harness {
        Harness::with(mode, ServerOptions::new())
    }

    fn with(mode: Mode, options: ServerOptions) -> Harness {
        let probes = Arc::new(Probes::default());
        let mode_name = match mode {
            Mode::Direct => "direct",
            Mode::Compact => "compact",
        };
        let server =
            Server::new(registry(&probes), options.mode(mode_name)).expect("server builds");
        Harness {
            server,
            probes,
            mode,
            next_id: AtomicUsize::new(1),
        }
    }

    /// One request as `caller`; the reply as JSON and its HTTP status.
    async fn request_as(&self, caller: &str, method: &str, params: Value) -> (Value, u16) {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let (value, reply) = serve_one(&self.server, caller, id, method, params).await;
        (value, reply.status)
    }

    async fn request(&self, method: &str, params: Value) -> (Value, u16) {
        self.request_as("alice", method, params).await
    }

    /// `tools/call` of an application tool in this harness's mode: direct by name, compact
    /// through `call_tool`. `extra` members (`inputResponses`, `requestState`) are outer params
    /// in both modes.
    fn tool_params(&self, name: &str, arguments: Value, caps: &str, extra: Value) -> Value {
        let mut params = match self.mode {
            Mode::Direct => json!({"name": name, "arguments": arguments}),
            Mode::Compact => {
                json!({"name": "call_tool", "arguments": {"name": name, "arguments": arguments}})
            }
        };
        params["_meta"] = meta(caps);
        merge(&mut params, extra);
        params
    }

    async fn delete(&self, item: &str, extra: Value) -> (Value, u16) {
        self.delete_as("alice", item, extra).await
    }

    async fn delete_as(&self, caller: &str, item: &str, extra: Value) -> (Value, u16) {
        let params = self.tool_params("delete", json!({"item": item}), FORM, extra);
        self.request_as(caller, "tools/call", params).await
    }

    fn deleted(&self) -> usize {
        self.probes.deleted.load(Ordering::SeqCst)
    }
}

fn meta(caps: &str) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": serde_json::from_str::<Value>(caps).unwrap(),
    })
}

fn merge(params: &mut Value, extra: Value) {
    if let Value::Object(extra) = extra {
        for (k, v) in extra {
            params[k] = v;
        }
    }
}

fn accept_ok() -> Value {
    json!({"confirm": {"action": "accept", "content": {"ok": true}}})
}

/// Asserts an `input_required` result asking for the confirmation; returns its state.
fn expect_confirmation(reply: &Value, status: u16) -> String {
    assert_eq!(status, 200, "{reply}");
    let result = &reply["result"];
    assert_eq!(result["resultType"], "input_required", "{reply}");
    let requests = result["inputRequests"].as_object().expect("inputRequests");
    assert_eq!(
        requests.keys().collect::<Vec<_>>(),
        ["confirm"],
        "exactly the confirmation: {reply}"
    );
    assert_eq!(requests["confirm"]["method"], "elicitation/create");
    assert!(result.get("content").is_none() && result.get("structuredContent").is_none());
    result["requestState"]
        .as_str()
        .filter(|s| !s.is_empty())
        .expect("a sealed requestState")
        .to_owned()
}

/// Flips one character of a sealed token in the middle.
fn tamper(state: &str) -> String {
    let mut bytes = state.as_bytes().to_vec();
    let i = bytes.len() / 2;
    bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
    String::from_utf8(bytes).unwrap()
}

// ---------------------------------------------------------------------------------------------
// 1. Answers without a state (X5)
// ---------------------------------------------------------------------------------------------

/// The user's view: a client that sends "accept" up front, with no `requestState`, must not
/// get the delete; it gets the confirmation prompt with a fresh sealed state instead.
#[tokio::test]
async fn x5_an_upfront_accept_without_state_does_not_delete_and_asks_again() {
    for mode in MODES {
        let h = Harness::new(mode);
        let (reply, status) = h
            .delete("prod-db", json!({"inputResponses": accept_ok()}))
            .await;
        let state = expect_confirmation(&reply, status);
        assert_eq!(
            h.deleted(),
            0,
            "{mode:?}: the delete ran without a confirmation"
        );
        // The prompt it issued is a real one: answering it under its state deletes once.
        let (done, status) = h
            .delete(
                "prod-db",
                json!({"inputResponses": accept_ok(), "requestState": state}),
            )
            .await;
        assert_eq!(status, 200);
        assert_eq!(
            done["result"]["structuredContent"],
            json!({"value": {"deleted": "prod-db"}}),
            "{mode:?}: {done}"
        );
        assert_eq!(h.deleted(), 1, "{mode:?}");
    }
}

/// X5: the stateless answers are unrecognised entries, so the first invocation is exactly the
/// one a call without them would get (same prompt).
#[tokio::test]
async fn x5_tools_call_answers_without_state_give_the_same_prompt_as_no_answers() {
    for mode in MODES {
        let h = Harness::new(mode);
        let (plain, status) = h.delete("a", json!({})).await;
        expect_confirmation(&plain, status);
        let (with, status) = h.delete("a", json!({"inputResponses": accept_ok()})).await;
        expect_confirmation(&with, status);
        assert_eq!(
            with["result"]["inputRequests"], plain["result"]["inputRequests"],
            "{mode:?}"
        );
        assert_ne!(
            with["result"]["requestState"], plain["result"]["requestState"],
            "{mode:?}: every prompt gets its own fresh state"
        );
        assert_eq!(h.deleted(), 0);
    }
}

/// I13 still holds: unparseable `inputResponses` are a protocol error even without a state.
#[tokio::test]
async fn i13_malformed_input_responses_without_state_are_still_32602() {
    for mode in MODES {
        let h = Harness::new(mode);
        let (reply, status) = h.delete("a", json!({"inputResponses": [1]})).await;
        assert_eq!(reply["error"]["code"], -32602, "{mode:?}: {reply}");
        assert_eq!(status, 200);
        assert_eq!(h.deleted(), 0);
    }
}

#[tokio::test]
async fn x5_prompts_get_answers_without_state_ask_again() {
    for mode in MODES {
        let h = Harness::new(mode);
        let params = |extra: Value| {
            let mut p = json!({"name": "confirm", "arguments": {}, "_meta": meta(FORM)});
            merge(&mut p, extra);
            p
        };
        let (reply, status) = h
            .request(
                "prompts/get",
                params(json!({"inputResponses": accept_ok()})),
            )
            .await;
        let state = expect_confirmation(&reply, status);
        assert_eq!(h.probes.prompted.load(Ordering::SeqCst), 0, "{mode:?}");
        let (done, _) = h
            .request(
                "prompts/get",
                params(json!({"inputResponses": accept_ok(), "requestState": state})),
            )
            .await;
        assert_eq!(
            done["result"]["messages"][0]["content"]["text"], "confirmed: true",
            "{mode:?}: {done}"
        );
        assert_eq!(h.probes.prompted.load(Ordering::SeqCst), 1);
    }
}

/// Resource handlers cannot ask for input, but they can read answers: stateless answers never
/// reach them.
#[tokio::test]
async fn x5_resources_read_answers_without_state_do_not_reach_the_handler() {
    for mode in MODES {
        let h = Harness::new(mode);
        let (reply, status) = h
            .request(
                "resources/read",
                json!({"uri": "mem://answers", "inputResponses": accept_ok(), "_meta": meta(FORM)}),
            )
            .await;
        assert_eq!(status, 200);
        assert_eq!(
            reply["result"]["contents"],
            json!([{"uri": "mem://answers", "text": "no answers"}]),
            "{mode:?}: {reply}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 2. Rejected states (X21, O50) and valid replays (O53)
// ---------------------------------------------------------------------------------------------

/// How one rejected state was produced.
struct Rejected {
    what: &'static str,
    reply: Value,
    status: u16,
}

/// Every way a state fails to open or to verify on `tools/call`, for one harness.
async fn rejected_states(h: &Harness) -> Vec<Rejected> {
    let mut out = Vec::new();
    let (first, status) = h.delete("a", json!({})).await;
    let state = expect_confirmation(&first, status);
    let retry = |state: &str| json!({"inputResponses": accept_ok(), "requestState": state});
    for (what, token) in [
        ("tampered", tamper(&state)),
        ("not a token", "abc".to_owned()),
        ("empty", String::new()),
        ("truncated", state[..state.len() - 1].to_owned()),
    ] {
        let (reply, status) = h.delete("a", retry(&token)).await;
        out.push(Rejected {
            what,
            reply,
            status,
        });
    }
    let (reply, status) = h.delete_as("mallory", "a", retry(&state)).await;
    out.push(Rejected {
        what: "foreign principal",
        reply,
        status,
    });
    let (reply, status) = h.delete("b", retry(&state)).await;
    out.push(Rejected {
        what: "other arguments",
        reply,
        status,
    });
    let params = h.tool_params("sample", json!({}), FORM, retry(&state));
    let (reply, status) = h.request("tools/call", params).await;
    out.push(Rejected {
        what: "other tool",
        reply,
        status,
    });
    // The untouched state still completes: nothing above consumed it.
    let (done, _) = h.delete("a", retry(&state)).await;
    assert_eq!(
        done["result"]["structuredContent"],
        json!({"value": {"deleted": "a"}}),
        "{done}"
    );
    out
}

#[tokio::test]
async fn x21_direct_tools_call_rejected_state_is_32602_with_reason() {
    let h = Harness::new(Mode::Direct);
    for r in rejected_states(&h).await {
        assert_eq!(r.status, 200, "{}: {}", r.what, r.reply);
        assert!(r.reply.get("result").is_none(), "{}: {}", r.what, r.reply);
        assert_eq!(r.reply["error"], state_rejected_error(), "{}", r.what);
    }
    assert_eq!(h.deleted(), 1);
}

#[tokio::test]
async fn o50_compact_call_tool_rejected_state_stays_a_tool_failure() {
    let h = Harness::new(Mode::Compact);
    for r in rejected_states(&h).await {
        assert_eq!(r.status, 200, "{}: {}", r.what, r.reply);
        assert!(r.reply.get("error").is_none(), "{}: {}", r.what, r.reply);
        assert_eq!(r.reply["result"]["isError"], true, "{}", r.what);
        assert_eq!(
            r.reply["result"]["structuredContent"],
            state_rejected_failure(),
            "{}",
            r.what
        );
    }
    assert_eq!(h.deleted(), 1);
}

/// An expired state: the ledger refuses it like a tampered one.
#[tokio::test]
async fn x21_expired_state_direct_is_32602_compact_is_tool_failure() {
    for mode in MODES {
        let clock = ManualClock::at(0);
        let h = Harness::with(
            mode,
            with_clock(ServerOptions::new().state_ttl_ms(1), &clock),
        );
        let (first, status) = h.delete("a", json!({})).await;
        let state = expect_confirmation(&first, status);
        clock.advance(30);
        let (reply, status) = h
            .delete(
                "a",
                json!({"inputResponses": accept_ok(), "requestState": state}),
            )
            .await;
        assert_eq!(status, 200);
        match mode {
            Mode::Direct => assert_eq!(reply["error"], state_rejected_error(), "{reply}"),
            Mode::Compact => assert_eq!(
                reply["result"]["structuredContent"],
                state_rejected_failure(),
                "{reply}"
            ),
        }
        assert_eq!(h.deleted(), 0);
    }
}

/// I7: a state's expiry is read from the injected wall clock (no sleeping): one millisecond
/// before its lifetime ends it still answers, at the end it is rejected like a tampered one.
#[tokio::test]
async fn i7_state_expiry_follows_the_injected_wall_clock_at_the_bound() {
    const TTL_MS: u64 = 60_000;
    for mode in MODES {
        let clock = ManualClock::at(1_000_000);
        let h = Harness::with(
            mode,
            with_clock(ServerOptions::new().state_ttl_ms(TTL_MS), &clock),
        );
        let answer = |state: String| json!({"inputResponses": accept_ok(), "requestState": state});

        let (first, status) = h.delete("a", json!({})).await;
        let state = expect_confirmation(&first, status);
        clock.advance(TTL_MS - 1);
        let (reply, status) = h.delete("a", answer(state)).await;
        assert_eq!(status, 200);
        assert_eq!(reply["result"]["resultType"], json!("complete"), "{reply}");
        assert_eq!(h.deleted(), 1, "answered one millisecond before expiry");

        let (first, status) = h.delete("b", json!({})).await;
        let state = expect_confirmation(&first, status);
        clock.advance(TTL_MS);
        let (reply, status) = h.delete("b", answer(state)).await;
        assert_eq!(status, 200);
        match mode {
            Mode::Direct => assert_eq!(reply["error"], state_rejected_error(), "{reply}"),
            Mode::Compact => assert_eq!(
                reply["result"]["structuredContent"],
                state_rejected_failure(),
                "{reply}"
            ),
        }
        assert_eq!(h.deleted(), 1, "an expired state runs nothing");
    }
}

/// Old epoch and unknown chain: a second server with the same key. Sharing the store, the
/// first server's shutdown invalidated the chain (old epoch); with its own store, the second
/// server has never heard of the chain.
#[tokio::test]
async fn x21_old_epoch_and_unknown_chain_states_are_rejected_per_mode() {
    for mode in MODES {
        for shared in [true, false] {
            let ring = KeyRing::new(SealKey::new(7, [9; 32]));
            let store: Arc<dyn LedgerStore> = Arc::new(MemoryLedgerStore::default());
            let options = |store: Arc<dyn LedgerStore>| {
                ServerOptions::new()
                    .key_ring(ring.clone())
                    .ledger_store(store)
            };
            let first = Harness::with(mode, options(Arc::clone(&store)));
            let (reply, status) = first.delete("a", json!({})).await;
            let state = expect_confirmation(&reply, status);
            assert_eq!(
                first.server.shutdown(Duration::from_millis(100)).await,
                ShutdownReport::Stopped
            );
            let second_store = if shared {
                store
            } else {
                Arc::new(MemoryLedgerStore::default())
            };
            let second = Harness::with(mode, options(second_store));
            let (reply, status) = second
                .delete(
                    "a",
                    json!({"inputResponses": accept_ok(), "requestState": state}),
                )
                .await;
            assert_eq!(status, 200, "{reply}");
            match mode {
                Mode::Direct => {
                    assert_eq!(reply["error"], state_rejected_error(), "shared={shared}")
                }
                Mode::Compact => assert_eq!(
                    reply["result"]["structuredContent"],
                    state_rejected_failure(),
                    "shared={shared}"
                ),
            }
            assert_eq!(second.deleted(), 0);
        }
    }
}

/// The other two methods answer a rejected state with the same error in both modes.
#[tokio::test]
async fn x21_prompts_get_tampered_state_is_the_same_error_in_both_modes() {
    for mode in MODES {
        let h = Harness::new(mode);
        let params = |extra: Value| {
            let mut p = json!({"name": "confirm", "arguments": {}, "_meta": meta(FORM)});
            merge(&mut p, extra);
            p
        };
        let (first, status) = h.request("prompts/get", params(json!({}))).await;
        let state = expect_confirmation(&first, status);
        let (reply, status) = h
            .request(
                "prompts/get",
                params(json!({"inputResponses": accept_ok(), "requestState": tamper(&state)})),
            )
            .await;
        assert_eq!(status, 200);
        assert_eq!(reply["error"], state_rejected_error(), "{mode:?}");
    }
}

#[tokio::test]
async fn x21_resources_read_tampered_state_is_the_same_error_in_both_modes() {
    for mode in MODES {
        let h = Harness::new(mode);
        let (first, status) = h.delete("a", json!({})).await;
        let state = expect_confirmation(&first, status);
        let (reply, status) = h
            .request(
                "resources/read",
                json!({"uri": "mem://answers", "inputResponses": accept_ok(),
                       "requestState": tamper(&state), "_meta": meta(FORM)}),
            )
            .await;
        assert_eq!(status, 200);
        assert_eq!(reply["error"], state_rejected_error(), "{mode:?}");
    }
}

/// O53 in direct mode: a replay of a still-pending state returns the same prompt, a replay of
/// a completed chain is the `already_completed` tool failure; neither deletes again.
#[tokio::test]
async fn o53_valid_replays_keep_their_answers_in_direct_mode() {
    let h = Harness::new(Mode::Direct);
    let (first, status) = h.delete("a", json!({})).await;
    let state = expect_confirmation(&first, status);
    // Pending: no answer under the asked key, twice.
    for _ in 0..2 {
        let (again, status) = h
            .delete(
                "a",
                json!({"inputResponses": {"other": {"action": "cancel"}}, "requestState": state}),
            )
            .await;
        expect_confirmation(&again, status);
        assert_eq!(
            again["result"]["inputRequests"],
            first["result"]["inputRequests"]
        );
    }
    let retry = json!({"inputResponses": accept_ok(), "requestState": state});
    let (done, _) = h.delete("a", retry.clone()).await;
    assert_eq!(
        done["result"]["structuredContent"],
        json!({"value": {"deleted": "a"}})
    );
    let (replay, status) = h.delete("a", retry).await;
    assert_eq!(status, 200);
    assert!(replay.get("error").is_none(), "{replay}");
    assert_eq!(replay["result"]["isError"], true, "{replay}");
    assert_eq!(
        replay["result"]["structuredContent"]["failure"]["code"],
        "already_completed"
    );
    assert_eq!(h.deleted(), 1, "never run twice");
}

// ---------------------------------------------------------------------------------------------
// 3. Sampling gating (M3)
// ---------------------------------------------------------------------------------------------

fn sampling_inv(caps: Value) -> Invocation {
    Invocation::new(Caller::anonymous()).with_capabilities(ClientCapabilities::from_value(caps))
}

fn base_sampling() -> Value {
    json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
           "maxTokens": 16})
}

fn with(extra: Value) -> Value {
    let mut params = base_sampling();
    merge(&mut params, extra);
    params
}

fn required(err: &CoreError) -> Value {
    assert_eq!(err.code(), -32021, "{err:?}");
    err.data().expect("data")
}

#[test]
fn m3_capability_flags_read_only_object_declarations() {
    let caps = ClientCapabilities::from_value(json!({"sampling": {"tools": {}, "context": {}}}));
    assert!(caps.sampling() && caps.sampling_tools() && caps.sampling_context());
    let caps = ClientCapabilities::from_value(json!({"sampling": {}}));
    assert!(caps.sampling() && !caps.sampling_tools() && !caps.sampling_context());
    let caps = ClientCapabilities::from_value(json!({"sampling": {"tools": true, "context": 1}}));
    assert!(caps.sampling() && !caps.sampling_tools() && !caps.sampling_context());
    let caps = ClientCapabilities::from_value(json!({"tools": {}, "context": {}}));
    assert!(!caps.sampling() && !caps.sampling_tools() && !caps.sampling_context());
}

#[test]
fn m3_tools_and_tool_choice_need_sampling_tools() {
    let tools = json!({"tools": [{"name": "t", "inputSchema": {"type": "object"}}]});
    let choice = json!({"toolChoice": {"mode": "auto"}});
    for extra in [tools.clone(), choice.clone()] {
        let err = sampling_inv(json!({"sampling": {}}))
            .sample(with(extra.clone()))
            .unwrap_err();
        assert_eq!(
            required(&err),
            json!({"requiredCapabilities": {"sampling": {"tools": {}}}}),
            "{extra}"
        );
        // Declared: goes through unchanged.
        let request = sampling_inv(json!({"sampling": {"tools": {}}}))
            .sample(with(extra.clone()))
            .unwrap();
        assert_eq!(request.method(), "sampling/createMessage");
        assert_eq!(request.params(), Some(&with(extra)));
    }
}

#[test]
fn m3_include_context_other_than_none_needs_sampling_context() {
    for value in ["thisServer", "allServers"] {
        let extra = json!({"includeContext": value});
        let err = sampling_inv(json!({"sampling": {"tools": {}}}))
            .sample(with(extra.clone()))
            .unwrap_err();
        assert_eq!(
            required(&err),
            json!({"requiredCapabilities": {"sampling": {"context": {}}}}),
            "{value}"
        );
        let request = sampling_inv(json!({"sampling": {"context": {}}}))
            .sample(with(extra.clone()))
            .unwrap();
        assert_eq!(request.params(), Some(&with(extra)));
    }
    // `none` needs nothing beyond `sampling`.
    let extra = json!({"includeContext": "none"});
    let request = sampling_inv(json!({"sampling": {}}))
        .sample(with(extra.clone()))
        .unwrap();
    assert_eq!(request.params(), Some(&with(extra)));
}

#[test]
fn m3_every_missing_capability_is_named_at_once() {
    let extra = json!({"tools": [], "includeContext": "thisServer"});
    let err = sampling_inv(json!({"sampling": {}}))
        .sample(with(extra.clone()))
        .unwrap_err();
    assert_eq!(
        required(&err),
        json!({"requiredCapabilities": {"sampling": {"tools": {}, "context": {}}}})
    );
    // Without `sampling` at all: the whole capability, with its sub-capabilities when used.
    let err = sampling_inv(json!({})).sample(base_sampling()).unwrap_err();
    assert_eq!(
        required(&err),
        json!({"requiredCapabilities": {"sampling": {}}})
    );
    let err = sampling_inv(json!({}))
        .sample(with(json!({"toolChoice": {"mode": "none"}})))
        .unwrap_err();
    assert_eq!(
        required(&err),
        json!({"requiredCapabilities": {"sampling": {"tools": {}}}})
    );
    let all = json!({"sampling": {"tools": {}, "context": {}}});
    assert!(sampling_inv(all).sample(with(extra)).is_ok());
}

/// Through the server: refused with -32021 (HTTP 400) and the exact data; declared, the same
/// call is `input_required` carrying the params as given.
#[tokio::test]
async fn m3_sampling_gating_through_tools_call() {
    let cases = [
        (
            json!({"tools": []}),
            r#"{"sampling":{}}"#,
            r#"{"sampling":{"tools":{}}}"#,
            json!({"sampling": {"tools": {}}}),
        ),
        (
            json!({"includeContext": "allServers"}),
            r#"{"sampling":{"tools":{}}}"#,
            r#"{"sampling":{"context":{}}}"#,
            json!({"sampling": {"context": {}}}),
        ),
    ];
    for mode in MODES {
        let h = Harness::new(mode);
        for (extra, refused_caps, declared_caps, needed) in &cases {
            let args = with(extra.clone());
            let params = h.tool_params("sample", args.clone(), refused_caps, json!({}));
            let (reply, status) = h.request("tools/call", params).await;
            assert_eq!(status, 400, "{mode:?}: {reply}");
            assert_eq!(
                reply["error"],
                json!({"code": -32021, "message": "Missing required client capability",
                       "data": {"requiredCapabilities": needed}}),
                "{mode:?}"
            );
            let params = h.tool_params("sample", args.clone(), declared_caps, json!({}));
            let (reply, status) = h.request("tools/call", params).await;
            assert_eq!(status, 200, "{reply}");
            assert_eq!(reply["result"]["resultType"], "input_required", "{reply}");
            assert_eq!(
                reply["result"]["inputRequests"],
                json!({"s": {"method": "sampling/createMessage", "params": args}}),
                "{mode:?}"
            );
        }
    }
}
