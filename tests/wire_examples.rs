//! Round trip of every official example through the generated wire types (A1–A9, O87,
//! O121–O124): each `examples/<TypeName>/*.json` must deserialize into the generated type of
//! that name and re-serialize to an equal `serde_json::Value` — same members present, same
//! explicit `null`s, `""`, `0`, `{}` and unknown `_meta` keys, nothing added.
//!
//! The examples come from `$(dirname MCP_SCHEMA_PATH)/examples`, default
//! `../shared/schema/2026-07-28/examples`. Missing: the test fails under `CI=true` and prints
//! a skip notice otherwise.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use strict_mcp::wire;

/// What went wrong with one example, so the summary names the cause.
#[derive(Debug)]
enum Failure {
    Decode(String),
    Encode(String),
    Differs { reencoded: Value },
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Decode(e) => write!(f, "does not decode: {e}"),
            Failure::Encode(e) => write!(f, "does not encode: {e}"),
            Failure::Differs { reencoded } => write!(f, "re-encodes differently: {reencoded}"),
        }
    }
}

/// Decodes `value` as `T` and re-encodes it.
fn round_trip<T>(value: &Value) -> Result<Value, Failure>
where
    T: serde::de::DeserializeOwned + serde::Serialize,
{
    let typed: T =
        serde_json::from_value(value.clone()).map_err(|e| Failure::Decode(e.to_string()))?;
    let back = serde_json::to_value(&typed).map_err(|e| Failure::Encode(e.to_string()))?;
    if &back == value {
        Ok(back)
    } else {
        Err(Failure::Differs { reencoded: back })
    }
}

/// The dispatch table: folder name → round trip through the generated type of that name.
/// Folder names pass through typify's name sanitising (`ElicitRequestURLParams` →
/// `ElicitRequestUrlParams`), written as `RustName = "FolderName"`.
macro_rules! dispatch {
    ($($ty:ident $(= $folder:literal)?),* $(,)?) => {
        const TYPE_FOLDERS: &[&str] = &[$(dispatch!(@name $ty $(= $folder)?)),*];
        fn round_trip_as(folder: &str, value: &Value) -> Option<Result<Value, Failure>> {
            $(
                if folder == dispatch!(@name $ty $(= $folder)?) {
                    return Some(round_trip::<wire::$ty>(value));
                }
            )*
            None
        }
    };
    (@name $ty:ident = $folder:literal) => { $folder };
    (@name $ty:ident) => { stringify!($ty) };
}

dispatch! {
    AudioContent, BlobResourceContents, BooleanSchema, CallToolRequest, CallToolRequestParams,
    CallToolResult, CallToolResultResponse, CancelledNotification, CancelledNotificationParams,
    ClientCapabilities, CompleteRequest, CompleteRequestParams, CompleteResult,
    CompleteResultResponse, CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult,
    DiscoverRequest, DiscoverResult, DiscoverResultResponse, ElicitRequest,
    ElicitRequestFormParams, ElicitRequestUrlParams = "ElicitRequestURLParams", ElicitResult,
    EmbeddedResource, GetPromptRequest, GetPromptRequestParams, GetPromptResult,
    GetPromptResultResponse, HeaderMismatchError, ImageContent, InputRequests,
    InputRequiredResult, InputResponses, InternalError, InvalidParamsError, ListPromptsRequest,
    ListPromptsResult, ListPromptsResultResponse, ListResourceTemplatesRequest,
    ListResourceTemplatesResult, ListResourceTemplatesResultResponse, ListResourcesRequest,
    ListResourcesResult, ListResourcesResultResponse, ListRootsRequest, ListRootsResult,
    ListToolsRequest, ListToolsResult, ListToolsResultResponse, LoggingMessageNotification,
    LoggingMessageNotificationParams, MethodNotFoundError, MissingRequiredClientCapabilityError,
    ModelPreferences, NumberSchema, PaginatedRequestParams, ParseError, ProgressNotification,
    ProgressNotificationParams, PromptListChangedNotification, ReadResourceRequest,
    ReadResourceResult, ReadResourceResultResponse, Resource, ResourceLink,
    ResourceListChangedNotification, ResourceUpdatedNotification,
    ResourceUpdatedNotificationParams, Root, SamplingMessage, ServerCapabilities, StringSchema,
    SubscriptionsAcknowledgedNotification, SubscriptionsListenRequest, SubscriptionsListenResult,
    SubscriptionsListenResultResponse, TextContent, TextResourceContents,
    TitledMultiSelectEnumSchema, TitledSingleSelectEnumSchema, Tool, ToolListChangedNotification,
    ToolResultContent, ToolUseContent, UnsupportedProtocolVersionError,
    UntitledMultiSelectEnumSchema, UntitledSingleSelectEnumSchema,
}

/// The one example the schema contradicts: it omits `ttlMs`/`cacheScope`, which
/// `ReadResourceResult` requires (H1). It has its own test below.
const CONTRADICTED: &str = "ReadResourceResultResponse/read-resource-result-response.json";

fn examples_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("MCP_SCHEMA_PATH") {
        Some(schema) => {
            let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join(schema);
            schema.parent().map(|p| p.join("examples"))?
        }
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/schema/2026-07-28/examples"),
    };
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI=true but the examples directory {} is missing",
        dir.display()
    );
    eprintln!(
        "skipped: examples directory {} not found (set MCP_SCHEMA_PATH)",
        dir.display()
    );
    None
}

fn load(dir: &Path, relative: &str) -> Value {
    let text = fs::read_to_string(dir.join(relative)).expect("example readable");
    serde_json::from_str(&text).expect("example is JSON")
}

/// A1–A9, O87, O121: all examples except the documented exception round-trip exactly.
#[test]
fn a1_a9_o87_every_official_example_round_trips_through_its_generated_type() {
    let Some(dir) = examples_dir() else { return };
    let mut folders: Vec<String> = fs::read_dir(&dir)
        .expect("examples dir readable")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    folders.sort();
    let mut listed: Vec<&str> = TYPE_FOLDERS.to_vec();
    listed.sort_unstable();
    assert_eq!(
        folders, listed,
        "the dispatch table lists exactly the example folders"
    );

    let (mut total, mut passed) = (0usize, 0usize);
    let mut failures = Vec::new();
    for folder in &folders {
        let mut files: Vec<PathBuf> = fs::read_dir(dir.join(folder))
            .expect("folder readable")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        for file in files {
            total += 1;
            let relative = format!("{folder}/{}", file.file_name().unwrap().to_string_lossy());
            let value = load(&dir, &relative);
            match round_trip_as(folder, &value).expect("folder is in the table") {
                Ok(_) => passed += 1,
                Err(failure) => failures.push((relative, failure)),
            }
        }
    }
    println!("wire examples: {passed}/{total} round-trip exactly");
    for (name, failure) in &failures {
        println!("  {name}: {failure}");
    }
    assert_eq!(total, 129, "the pinned schema ships 129 examples");
    let unexpected: Vec<String> = failures
        .iter()
        .filter(|(name, _)| name != CONTRADICTED)
        .map(|(name, failure)| format!("{name}: {failure}"))
        .collect();
    assert!(
        unexpected.is_empty(),
        "examples that failed: {unexpected:#?}"
    );
    assert_eq!(
        passed, 128,
        "exactly the contradicted example is expected to fail"
    );
}

/// H1, A8, O124: the example without cache hints is rejected by the strict decoder (what our
/// server accepts and emits) and accepted by the lenient one (what our client accepts),
/// which fills in `ttlMs: 0` and `cacheScope: "private"`.
#[test]
fn h1_a8_o124_read_resource_example_without_cache_hints_strict_rejects_lenient_accepts() {
    let Some(dir) = examples_dir() else { return };
    let response = load(&dir, CONTRADICTED);
    let result = response["result"].clone();
    assert!(result.get("ttlMs").is_none() && result.get("cacheScope").is_none());

    let strict = wire::result::decode_strict(wire::result::Method::ResourcesRead, &result);
    assert_eq!(
        strict.unwrap_err(),
        wire::result::ResultError::MissingCacheHint {
            method: wire::result::Method::ResourcesRead,
            field: "ttlMs",
        }
    );

    let lenient = wire::result::decode_lenient(wire::result::Method::ResourcesRead, &result)
        .expect("lenient decoder accepts a result without cache hints");
    let wire::result::Decoded::Complete(wire::result::CompleteResult::ResourcesRead(read)) =
        lenient
    else {
        panic!("expected a complete resources/read result, got {lenient:?}");
    };
    assert_eq!(read.ttl_ms, 0);
    assert_eq!(
        read.cache_scope,
        wire::ReadResourceResultCacheScope::Private
    );
    assert_eq!(
        read.contents.len(),
        result["contents"].as_array().unwrap().len()
    );
}

/// A1: `jsonrpc` is the one-value enum `"2.0"` (pass 1, const → enum); "1.0" is rejected.
#[test]
fn a1_jsonrpc_version_other_than_2_0_is_rejected() {
    let ok = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
        "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                             "io.modelcontextprotocol/clientCapabilities": {}}}});
    assert!(serde_json::from_value::<wire::ListToolsRequest>(ok.clone()).is_ok());
    let mut bad = ok;
    bad["jsonrpc"] = json!("1.0");
    let err = serde_json::from_value::<wire::ListToolsRequest>(bad).unwrap_err();
    assert!(err.is_data(), "typed serde data error, got {err}");
}

/// Content union: an unknown `type` matches no variant; a known one picks the right variant
/// (most-specific-first ordering keeps `audio` from being read as `image`).
#[test]
fn content_block_union_rejects_unknown_type_and_keeps_audio_apart_from_image() {
    let audio = json!({"type": "audio", "data": "AAAA", "mimeType": "audio/wav"});
    let decoded: wire::ContentBlock = serde_json::from_value(audio.clone()).unwrap();
    assert!(
        matches!(decoded, wire::ContentBlock::AudioContent(_)),
        "{decoded:?}"
    );
    assert_eq!(serde_json::to_value(&decoded).unwrap(), audio);

    let unknown = json!({"type": "video", "data": "AAAA", "mimeType": "video/mp4"});
    let err = serde_json::from_value::<wire::ContentBlock>(unknown).unwrap_err();
    assert!(err.is_data(), "{err}");
}

/// A7, O124: in `ServerResult`, an unknown `resultType` can only fall into the open base
/// `Result` (for advertised extensions, A6); the typed decoders in `wire::result` reject it.
#[test]
fn a7_unknown_result_type_is_a_typed_error() {
    let value = json!({"resultType": "streaming", "content": []});
    let err = wire::result::decode_lenient(wire::result::Method::ToolsCall, &value).unwrap_err();
    assert_eq!(
        err,
        wire::result::ResultError::UnknownResultType("streaming".into())
    );
    let err = wire::result::decode_strict(wire::result::Method::ToolsCall, &value).unwrap_err();
    assert_eq!(
        err,
        wire::result::ResultError::UnknownResultType("streaming".into())
    );
    let base: wire::ServerResult = serde_json::from_value(value).unwrap();
    assert!(matches!(base, wire::ServerResult::Result(_)), "{base:?}");
}

/// A9, A17: error codes are pinned per error type (pass 1): a `MethodNotFoundError` with code
/// -32602 is rejected; the right code decodes; `data: null` stays an explicit null (pass 9).
#[test]
fn a9_a17_error_code_const_is_enforced() {
    let good = json!({"code": -32601, "message": "Method not found", "data": null});
    assert_eq!(
        round_trip::<wire::MethodNotFoundError>(&good).unwrap(),
        good
    );
    let mut bad = good;
    bad["code"] = json!(-32602);
    assert!(serde_json::from_value::<wire::MethodNotFoundError>(bad)
        .unwrap_err()
        .is_data());

    let header = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32021, "message": "m"}});
    assert!(serde_json::from_value::<wire::HeaderMismatchError>(header)
        .unwrap_err()
        .is_data());
}

/// O121: explicit `null`, integers written without a fraction, and unknown `_meta` keys keep
/// their form through the typed structs (passes 2, 7, 9).
#[test]
fn o121_explicit_null_integer_numbers_and_unknown_meta_keys_survive() {
    let value = json!({"resultType": "complete", "content": [],
        "structuredContent": null,
        "_meta": {"com.example/trace": {"x": 1}}});
    assert_eq!(round_trip::<wire::CallToolResult>(&value).unwrap(), value);

    let progress = json!({"progressToken": "t", "progress": 50, "total": 100.5});
    let back = round_trip::<wire::ProgressNotificationParams>(&progress).unwrap();
    assert_eq!(
        back.to_string(),
        r#"{"progress":50,"progressToken":"t","total":100.5}"#
    );
}

/// B18: a declared capability with no settings (`roots: {}`) is kept, and an absent one stays
/// absent (pass 6, presence-preserving hoisting).
#[test]
fn b18_empty_capability_object_is_kept_and_absent_stays_absent() {
    let declared = json!({"roots": {}});
    assert_eq!(
        round_trip::<wire::ClientCapabilities>(&declared).unwrap(),
        declared
    );
    let absent = json!({});
    assert_eq!(
        round_trip::<wire::ClientCapabilities>(&absent).unwrap(),
        absent
    );
}

/// A2: a request id is a string or an integer, never `null` (nor a float or an object).
#[test]
fn a2_request_id_null_or_ill_typed_is_rejected() {
    let request = |id: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/list",
            "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                 "io.modelcontextprotocol/clientCapabilities": {}}}})
    };
    for id in [json!("abc"), json!(7)] {
        let value = request(id);
        assert_eq!(round_trip::<wire::ListToolsRequest>(&value).unwrap(), value);
    }
    for id in [json!(null), json!(1.5), json!({"n": 1})] {
        let err = serde_json::from_value::<wire::ListToolsRequest>(request(id.clone()));
        assert!(err.is_err(), "id {id} must be rejected");
    }
}

/// A13: the client-request union knows only the core methods: `initialize` (removed) and an
/// invented method match no variant; `tools/list` decodes as `ListToolsRequest`.
#[test]
fn a13_client_request_union_rejects_unknown_methods() {
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}});
    let known =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}});
    let decoded: wire::ClientRequest = serde_json::from_value(known.clone()).unwrap();
    assert!(
        matches!(decoded, wire::ClientRequest::ListToolsRequest(_)),
        "{decoded:?}"
    );
    assert_eq!(serde_json::to_value(&decoded).unwrap(), known);
    for method in ["initialize", "tools/lists"] {
        let mut unknown = known.clone();
        unknown["method"] = json!(method);
        let err = serde_json::from_value::<wire::ClientRequest>(unknown).unwrap_err();
        assert!(err.is_data(), "{method}: {err}");
    }
}

/// Resource-contents union: text and blob stay apart, and contents with neither are refused.
#[test]
fn resource_contents_union_keeps_text_and_blob_apart_and_refuses_neither() {
    let text = json!({"type": "resource", "resource": {"uri": "file:///a", "text": "hi"}});
    let blob = json!({"type": "resource", "resource": {"uri": "file:///a", "blob": "AA=="}});
    for value in [&text, &blob] {
        assert_eq!(&round_trip::<wire::EmbeddedResource>(value).unwrap(), value);
    }
    let decoded: wire::EmbeddedResource = serde_json::from_value(blob).unwrap();
    assert!(
        matches!(
            decoded.resource,
            wire::EmbeddedResourceResource::BlobResourceContents(_)
        ),
        "{decoded:?}"
    );
    let neither = json!({"type": "resource", "resource": {"uri": "file:///a"}});
    assert!(serde_json::from_value::<wire::EmbeddedResource>(neither)
        .unwrap_err()
        .is_data());
}

/// O124, A5, H1: every official result example decodes with the strict decoder (server side)
/// and the lenient one (client side) for its method, and re-encodes unchanged. Folders
/// `<X>Result` hold bare results, `<X>ResultResponse` full responses; input-required examples
/// are decoded as answers to `tools/call`. The contradicted example is covered above.
#[test]
fn o124_a5_h1_every_official_result_example_decodes_strict_and_lenient() {
    use wire::result::{decode_lenient, decode_strict, Decoded, Method};
    let Some(dir) = examples_dir() else { return };
    let methods = [
        ("DiscoverResult", Method::ServerDiscover),
        ("ListToolsResult", Method::ToolsList),
        ("CallToolResult", Method::ToolsCall),
        ("ListPromptsResult", Method::PromptsList),
        ("GetPromptResult", Method::PromptsGet),
        ("ListResourcesResult", Method::ResourcesList),
        (
            "ListResourceTemplatesResult",
            Method::ResourcesTemplatesList,
        ),
        ("ReadResourceResult", Method::ResourcesRead),
        ("CompleteResult", Method::CompletionComplete),
        ("SubscriptionsListenResult", Method::SubscriptionsListen),
        ("InputRequiredResult", Method::ToolsCall),
    ];
    let mut checked = 0;
    for (stem, method) in methods {
        for (folder, is_response) in [(stem.to_owned(), false), (format!("{stem}Response"), true)] {
            let Ok(entries) = fs::read_dir(dir.join(&folder)) else {
                continue;
            };
            let mut files: Vec<String> = entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            files.sort();
            for file in files {
                let relative = format!("{folder}/{file}");
                if relative == CONTRADICTED {
                    continue;
                }
                let example = load(&dir, &relative);
                let result = if is_response {
                    example["result"].clone()
                } else {
                    example
                };
                for (flavour, decode) in [
                    ("strict", decode_strict as fn(Method, &Value) -> _),
                    ("lenient", decode_lenient),
                ] {
                    let decoded: Decoded = decode(method, &result)
                        .unwrap_or_else(|e| panic!("{relative} ({flavour}): {e}"));
                    let expect_input = stem == "InputRequiredResult";
                    assert_eq!(
                        matches!(decoded, Decoded::InputRequired(_)),
                        expect_input,
                        "{relative} ({flavour}): {decoded:?}"
                    );
                    assert_eq!(
                        serde_json::to_value(&decoded).unwrap(),
                        result,
                        "{relative} ({flavour}) re-encodes unchanged"
                    );
                }
                checked += 1;
            }
        }
    }
    println!("result examples decoded strict and lenient: {checked}");
    assert_eq!(
        checked, 26,
        "27 official result examples minus the contradicted one"
    );
}
