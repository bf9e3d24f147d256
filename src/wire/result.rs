//! Result decoding by `resultType`.
//!
//! The schema cannot tell result kinds apart (any object with a `resultType` validates as
//! `InputRequiredResult`), so a result is decoded by first reading `resultType` and then
//! deserializing into the one type the request's method allows. Two flavours:
//!
//! * [`decode_strict`] — what our server accepts and always emits: `resultType` is required,
//!   cacheable results carry `ttlMs` and `cacheScope`, input-required results
//!   carry no cache hints and name at least one of `inputRequests`/`requestState`.
//! * [`decode_lenient`] — what our client accepts from other servers: a missing
//!   `resultType` is read as `complete`; a missing or negative `ttlMs` is 0 and a
//!   missing `cacheScope` is `private`, the safe reading of an absent hint.
//!
//! Both reject an unrecognised `resultType` with a typed error.

use serde_json::{Map, Value};

use crate::generated as g;
use crate::wire::content;
use crate::wire::meta::{self, MetaKeyError};

/// A client request method whose result this module decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Method {
    /// `server/discover`
    ServerDiscover,
    /// `tools/list`
    ToolsList,
    /// `tools/call`
    ToolsCall,
    /// `prompts/list`
    PromptsList,
    /// `prompts/get`
    PromptsGet,
    /// `resources/list`
    ResourcesList,
    /// `resources/templates/list`
    ResourcesTemplatesList,
    /// `resources/read`
    ResourcesRead,
    /// `completion/complete`
    CompletionComplete,
    /// `subscriptions/listen`
    SubscriptionsListen,
}

impl Method {
    /// Every method, in the order of the spec.
    pub const ALL: [Method; 10] = [
        Method::ServerDiscover,
        Method::CompletionComplete,
        Method::PromptsGet,
        Method::PromptsList,
        Method::ResourcesList,
        Method::ResourcesTemplatesList,
        Method::ResourcesRead,
        Method::SubscriptionsListen,
        Method::ToolsCall,
        Method::ToolsList,
    ];

    /// The JSON-RPC method name.
    pub const fn name(self) -> &'static str {
        match self {
            Method::ServerDiscover => "server/discover",
            Method::ToolsList => "tools/list",
            Method::ToolsCall => "tools/call",
            Method::PromptsList => "prompts/list",
            Method::PromptsGet => "prompts/get",
            Method::ResourcesList => "resources/list",
            Method::ResourcesTemplatesList => "resources/templates/list",
            Method::ResourcesRead => "resources/read",
            Method::CompletionComplete => "completion/complete",
            Method::SubscriptionsListen => "subscriptions/listen",
        }
    }

    /// The method with this JSON-RPC name, if it is a core client request.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    /// Complete results of these methods carry `ttlMs` and `cacheScope`.
    pub const fn is_cacheable(self) -> bool {
        matches!(
            self,
            Method::ServerDiscover
                | Method::ToolsList
                | Method::PromptsList
                | Method::ResourcesList
                | Method::ResourcesTemplatesList
                | Method::ResourcesRead
        )
    }

    /// Methods that may answer `input_required` (multi round-trip): the schema's
    /// `*ResultResponse` unions include `InputRequiredResult` for exactly these.
    pub const fn allows_input_required(self) -> bool {
        matches!(
            self,
            Method::ToolsCall | Method::PromptsGet | Method::ResourcesRead
        )
    }
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A complete result, typed by the method that produced it. Serializes as the inner result.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum CompleteResult {
    /// `server/discover` (boxed: about twice the size of the other results).
    ServerDiscover(Box<g::DiscoverResult>),
    /// `tools/list`
    ToolsList(g::ListToolsResult),
    /// `tools/call`
    ToolsCall(g::CallToolResult),
    /// `prompts/list`
    PromptsList(g::ListPromptsResult),
    /// `prompts/get`
    PromptsGet(g::GetPromptResult),
    /// `resources/list`
    ResourcesList(g::ListResourcesResult),
    /// `resources/templates/list`
    ResourcesTemplatesList(g::ListResourceTemplatesResult),
    /// `resources/read`
    ResourcesRead(g::ReadResourceResult),
    /// `completion/complete`
    CompletionComplete(g::CompleteResult),
    /// `subscriptions/listen`
    SubscriptionsListen(g::SubscriptionsListenResult),
}

/// A decoded result: complete, or a request for more input (MRTR). Serializes as the inner
/// result.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum Decoded {
    /// `resultType: "complete"` (or absent, lenient only).
    Complete(CompleteResult),
    /// `resultType: "input_required"`.
    InputRequired(g::InputRequiredResult),
}

/// Why a result was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResultError {
    /// A JSON-RPC `result` must be an object.
    #[error("result is not a JSON object")]
    NotAnObject,
    /// Strict only: every result names its `resultType`.
    #[error("result has no `resultType`")]
    MissingResultType,
    /// `resultType` is present but not a string.
    #[error("`resultType` is not a string")]
    ResultTypeNotString,
    /// A `resultType` this implementation does not recognise makes the response invalid;
    /// extension values are not accepted until an extension registers them.
    #[error("unrecognised resultType `{0}`")]
    UnknownResultType(String),
    /// `input_required` answered to a method that has no multi round-trip form.
    #[error("`{0}` cannot answer input_required")]
    InputRequiredNotAllowed(Method),
    /// An input-required result must carry `inputRequests` or `requestState`.
    #[error("input_required result has neither `inputRequests` nor `requestState`")]
    InputRequiredEmpty,
    /// Strict only: an input-required result carries no cache hints.
    #[error("input_required result carries cache hint `{0}`")]
    CacheHintOnInputRequired(&'static str),
    /// Strict only: a complete result of a cacheable method lacks a cache hint.
    #[error("complete `{method}` result lacks `{field}`")]
    MissingCacheHint {
        /// The request method.
        method: Method,
        /// `ttlMs` or `cacheScope`.
        field: &'static str,
    },
    /// A key of the result's `_meta` breaks the key syntax.
    #[error(transparent)]
    Meta(#[from] MetaKeyError),
    /// The result does not match the schema type selected by `resultType` and method.
    #[error("`{method}` {result_type} result does not match the schema: {message}")]
    Schema {
        /// The request method.
        method: Method,
        /// The `resultType` the result was decoded as.
        result_type: String,
        /// serde's description of the mismatch (field name and expectation).
        message: String,
    },
}

/// Strict decoding (server side): see the module docs.
pub fn decode_strict(method: Method, result: &Value) -> Result<Decoded, ResultError> {
    let object = result.as_object().ok_or(ResultError::NotAnObject)?;
    check_meta(object)?;
    let result_type = match object.get("resultType") {
        None => return Err(ResultError::MissingResultType),
        Some(Value::String(s)) => s.as_str(),
        Some(_) => return Err(ResultError::ResultTypeNotString),
    };
    match result_type {
        "complete" => {
            if method.is_cacheable() {
                for field in ["ttlMs", "cacheScope"] {
                    if !object.contains_key(field) {
                        return Err(ResultError::MissingCacheHint { method, field });
                    }
                }
            }
            decode_complete(method, result.clone())
        }
        "input_required" => {
            for field in ["ttlMs", "cacheScope"] {
                if object.contains_key(field) {
                    return Err(ResultError::CacheHintOnInputRequired(field));
                }
            }
            decode_input_required(method, result.clone())
        }
        other => Err(ResultError::UnknownResultType(other.to_owned())),
    }
}

/// Lenient decoding (client side): see the module docs.
pub fn decode_lenient(method: Method, result: &Value) -> Result<Decoded, ResultError> {
    decode_lenient_owned(method, result.clone())
}

/// [`decode_lenient`] of a result the caller no longer needs (no copy is made).
pub fn decode_lenient_owned(method: Method, result: Value) -> Result<Decoded, ResultError> {
    let Value::Object(mut object) = result else {
        return Err(ResultError::NotAnObject);
    };
    check_meta(&object)?;
    let complete = match object.get("resultType") {
        None => true,
        Some(Value::String(s)) if s == "complete" => true,
        Some(Value::String(s)) if s == "input_required" => false,
        Some(Value::String(s)) => return Err(ResultError::UnknownResultType(s.clone())),
        Some(_) => return Err(ResultError::ResultTypeNotString),
    };
    if !complete {
        return decode_input_required(method, Value::Object(object));
    }
    object.insert("resultType".into(), Value::from("complete"));
    if method.is_cacheable() {
        default_cache_hints(&mut object);
    }
    decode_complete(method, Value::Object(object))
}

/// The `_meta` key rules bind both sides, so both flavours check the result's `_meta` key syntax. A `_meta`
/// that is not an object is left to the schema decode, which rejects it.
fn check_meta(object: &Map<String, Value>) -> Result<(), ResultError> {
    match object.get("_meta") {
        Some(Value::Object(m)) => Ok(meta::check_meta_keys(m)?),
        _ => Ok(()),
    }
}

/// a missing or negative `ttlMs` means "immediately stale" (0); a missing
/// `cacheScope` is read as `private`, which never shares an entry across credentials.
fn default_cache_hints(object: &mut Map<String, Value>) {
    let negative = object
        .get("ttlMs")
        .and_then(Value::as_number)
        .is_some_and(|n| n.as_f64().is_some_and(|f| f < 0.0));
    if negative || !object.contains_key("ttlMs") {
        object.insert("ttlMs".into(), Value::from(0u64));
    }
    if !object.contains_key("cacheScope") {
        object.insert("cacheScope".into(), Value::from("private"));
    }
}

fn decode_complete(method: Method, value: Value) -> Result<Decoded, ResultError> {
    fn typed<T: serde::de::DeserializeOwned>(
        method: Method,
        value: Value,
    ) -> Result<T, ResultError> {
        serde_json::from_value(value).map_err(|e| ResultError::Schema {
            method,
            result_type: "complete".into(),
            message: e.to_string(),
        })
    }
    let complete = match method {
        Method::ServerDiscover => CompleteResult::ServerDiscover(typed(method, value)?),
        Method::ToolsList => CompleteResult::ToolsList(typed(method, value)?),
        Method::ToolsCall => {
            // The blocks are decoded by their `type` tag (see `wire::content`), the rest of
            // the result by its schema type.
            let mut value = value;
            let blocks = match value.get_mut("content") {
                Some(Value::Array(blocks)) => Some(std::mem::take(blocks)),
                _ => None,
            };
            let mut result: g::CallToolResult = typed(method, value)?;
            if let Some(blocks) = blocks {
                result.content =
                    content::decode_blocks(blocks).map_err(|e| ResultError::Schema {
                        method,
                        result_type: "complete".into(),
                        message: e.to_string(),
                    })?;
            }
            CompleteResult::ToolsCall(result)
        }
        Method::PromptsList => CompleteResult::PromptsList(typed(method, value)?),
        Method::PromptsGet => CompleteResult::PromptsGet(typed(method, value)?),
        Method::ResourcesList => CompleteResult::ResourcesList(typed(method, value)?),
        Method::ResourcesTemplatesList => {
            CompleteResult::ResourcesTemplatesList(typed(method, value)?)
        }
        Method::ResourcesRead => CompleteResult::ResourcesRead(typed(method, value)?),
        Method::CompletionComplete => CompleteResult::CompletionComplete(typed(method, value)?),
        Method::SubscriptionsListen => CompleteResult::SubscriptionsListen(typed(method, value)?),
    };
    Ok(Decoded::Complete(complete))
}

fn decode_input_required(method: Method, value: Value) -> Result<Decoded, ResultError> {
    if !method.allows_input_required() {
        return Err(ResultError::InputRequiredNotAllowed(method));
    }
    let typed: g::InputRequiredResult =
        serde_json::from_value(value).map_err(|e| ResultError::Schema {
            method,
            result_type: "input_required".into(),
            message: e.to_string(),
        })?;
    if typed.input_requests.is_none() && typed.request_state.is_none() {
        return Err(ResultError::InputRequiredEmpty);
    }
    Ok(Decoded::InputRequired(typed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn list_tools(extra: Value) -> Value {
        let mut base = json!({"tools": []});
        base.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        base
    }

    #[test]
    fn method_names_round_trip() {
        for m in Method::ALL {
            assert_eq!(Method::from_name(m.name()), Some(m));
        }
        assert_eq!(Method::from_name("initialize"), None);
    }

    #[test]
    fn a5_strict_requires_result_type_a8_lenient_reads_absent_as_complete() {
        let value = list_tools(json!({"ttlMs": 5, "cacheScope": "public"}));
        assert_eq!(
            decode_strict(Method::ToolsList, &value).unwrap_err(),
            ResultError::MissingResultType
        );
        let Decoded::Complete(CompleteResult::ToolsList(list)) =
            decode_lenient(Method::ToolsList, &value).unwrap()
        else {
            panic!("expected tools/list result");
        };
        assert_eq!(list.ttl_ms, 5);
        assert_eq!(list.cache_scope, g::ListToolsResultCacheScope::Public);
    }

    #[test]
    fn h1_strict_requires_both_cache_hints() {
        let value = list_tools(json!({"resultType": "complete", "cacheScope": "public"}));
        assert_eq!(
            decode_strict(Method::ToolsList, &value).unwrap_err(),
            ResultError::MissingCacheHint {
                method: Method::ToolsList,
                field: "ttlMs"
            }
        );
        let value = list_tools(json!({"resultType": "complete", "ttlMs": 0}));
        assert_eq!(
            decode_strict(Method::ToolsList, &value).unwrap_err(),
            ResultError::MissingCacheHint {
                method: Method::ToolsList,
                field: "cacheScope"
            }
        );
    }

    #[test]
    fn h8_lenient_negative_ttl_is_zero_and_missing_scope_is_private() {
        let value = list_tools(json!({"resultType": "complete", "ttlMs": -30}));
        let Decoded::Complete(CompleteResult::ToolsList(list)) =
            decode_lenient(Method::ToolsList, &value).unwrap()
        else {
            panic!("expected tools/list result");
        };
        assert_eq!(list.ttl_ms, 0);
        assert_eq!(list.cache_scope, g::ListToolsResultCacheScope::Private);
        // Strict keeps the schema's `minimum: 0`: a negative ttlMs is a schema error.
        let value =
            list_tools(json!({"resultType": "complete", "ttlMs": -30, "cacheScope": "private"}));
        assert_eq!(
            decode_strict(Method::ToolsList, &value).unwrap_err(),
            ResultError::Schema {
                method: Method::ToolsList,
                result_type: "complete".into(),
                message: "invalid value: integer `-30`, expected u64".into(),
            }
        );
    }

    #[test]
    fn a7_unknown_result_type_rejected_in_both_flavours() {
        let value = json!({"resultType": "task", "content": []});
        for decode in [decode_strict, decode_lenient] {
            assert_eq!(
                decode(Method::ToolsCall, &value).unwrap_err(),
                ResultError::UnknownResultType("task".into())
            );
        }
        let value = json!({"resultType": 7});
        assert_eq!(
            decode_lenient(Method::ToolsCall, &value).unwrap_err(),
            ResultError::ResultTypeNotString
        );
        assert_eq!(
            decode_strict(Method::ToolsCall, &json!([])).unwrap_err(),
            ResultError::NotAnObject
        );
    }

    #[test]
    fn o124_input_required_only_for_mrtr_methods_and_never_empty() {
        let value = json!({"resultType": "input_required", "requestState": "s1"});
        let Decoded::InputRequired(ir) = decode_strict(Method::ToolsCall, &value).unwrap() else {
            panic!("expected input_required");
        };
        assert_eq!(ir.request_state.as_deref(), Some("s1"));
        assert_eq!(
            decode_lenient(Method::ToolsList, &value).unwrap_err(),
            ResultError::InputRequiredNotAllowed(Method::ToolsList)
        );
        let empty = json!({"resultType": "input_required"});
        assert_eq!(
            decode_lenient(Method::PromptsGet, &empty).unwrap_err(),
            ResultError::InputRequiredEmpty
        );
    }

    #[test]
    fn h2_strict_rejects_cache_hints_on_input_required() {
        let value = json!({"resultType": "input_required", "requestState": "s", "ttlMs": 1});
        assert_eq!(
            decode_strict(Method::ResourcesRead, &value).unwrap_err(),
            ResultError::CacheHintOnInputRequired("ttlMs")
        );
        assert!(matches!(
            decode_lenient(Method::ResourcesRead, &value),
            Ok(Decoded::InputRequired(_))
        ));
    }

    #[test]
    fn b9_result_meta_keys_are_checked_in_both_flavours() {
        let value = json!({"resultType": "complete", "content": [],
            "_meta": {"com.example/ok": 1, "bad key": 2}});
        let expected = ResultError::Meta(MetaKeyError::InvalidName {
            key: "bad key".into(),
            name: "bad key".into(),
        });
        assert_eq!(
            decode_strict(Method::ToolsCall, &value).unwrap_err(),
            expected
        );
        assert_eq!(
            decode_lenient(Method::ToolsCall, &value).unwrap_err(),
            expected
        );
    }

    #[test]
    fn schema_mismatch_names_method_and_result_type() {
        let value = json!({"resultType": "complete"});
        assert_eq!(
            decode_strict(Method::ToolsCall, &value).unwrap_err(),
            ResultError::Schema {
                method: Method::ToolsCall,
                result_type: "complete".into(),
                message: "missing field `content`".into(),
            }
        );
    }
}
