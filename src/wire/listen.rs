//! `subscriptions/listen` on the wire (K-section), for both roles: the request's filter, the
//! acknowledgement, the change notifications and the closing result, each written and read in
//! one place. The stream's state machine (what may go out when) is
//! [`crate::machine::subscriptions`]; this module only knows the shapes.
//!
//! ```
//! use strict_mcp::wire::listen::{Change, Filter};
//! let filter = Filter::read(r#"{"toolsListChanged":true,"resourceSubscriptions":["a://x"]}"#).unwrap();
//! assert!(filter.admits(&Change::ToolsListChanged));
//! assert!(!filter.admits(&Change::PromptsListChanged));
//! assert_eq!(filter.to_json(), r#"{"resourceSubscriptions":["a://x"],"toolsListChanged":true}"#);
//! ```

use std::collections::BTreeSet;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::meta::{SERVER_INFO, SUBSCRIPTION_ID};

/// The listen request's method.
pub const LISTEN: &str = "subscriptions/listen";
/// The stream's first message.
pub const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
/// `tools/list_changed`.
pub const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
/// `prompts/list_changed`.
pub const PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
/// `resources/list_changed`.
pub const RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
/// `resources/updated` for one subscribed URI.
pub const RESOURCE_UPDATED: &str = "notifications/resources/updated";

/// The listen request's JSON-RPC id, as its exact JSON text (`"abc"` or `42`), so that the
/// `subscriptionId` echoes it with the same JSON type.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SubscriptionId(pub String);

/// A `notifications` filter. `resource_subscriptions` keeps presence: `None` means the member
/// was omitted (not subscribed).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Filter {
    /// `toolsListChanged: true`
    pub tools_list_changed: bool,
    /// `promptsListChanged: true`
    pub prompts_list_changed: bool,
    /// `resourcesListChanged: true`
    pub resources_list_changed: bool,
    /// `resourceSubscriptions: [uri…]`
    pub resource_subscriptions: Option<BTreeSet<String>>,
}

impl Filter {
    /// True when `change` falls inside this filter.
    #[must_use]
    pub fn admits(&self, change: &Change) -> bool {
        match change {
            Change::ToolsListChanged => self.tools_list_changed,
            Change::PromptsListChanged => self.prompts_list_changed,
            Change::ResourcesListChanged => self.resources_list_changed,
            Change::ResourceUpdated { uri } => self
                .resource_subscriptions
                .as_ref()
                .is_some_and(|uris| uris.contains(uri)),
        }
    }
}

/// A change that may be announced on listen streams.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Change {
    /// `notifications/tools/list_changed`
    ToolsListChanged,
    /// `notifications/prompts/list_changed`
    PromptsListChanged,
    /// `notifications/resources/list_changed`
    ResourcesListChanged,
    /// `notifications/resources/updated` for this URI (exact string match).
    ResourceUpdated {
        /// The resource URI.
        uri: String,
    },
}

/// Why a listen request's `notifications` filter is refused (-32602).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FilterError {
    /// `params.notifications` is absent (the filter is required).
    #[error("notifications filter is required")]
    Missing,
    /// `notifications` is not a JSON object.
    #[error("notifications must be an object")]
    NotAnObject,
    /// A `…ListChanged` flag is not a boolean.
    #[error("notification flags must be booleans")]
    FlagNotBoolean,
    /// `resourceSubscriptions` is not an array of strings.
    #[error("resourceSubscriptions must be an array of strings")]
    Subscriptions,
}

impl Filter {
    /// Reads a request's `notifications` member (its exact JSON text). Unknown members are
    /// ignored (a newer client may ask for more than this revision defines); `false` flags and
    /// absent flags mean the same.
    ///
    /// # Errors
    /// [`FilterError`] for a member of the wrong type.
    pub fn read(text: &str) -> Result<Filter, FilterError> {
        let requested: Map<String, Value> =
            serde_json::from_str(text).map_err(|_| FilterError::NotAnObject)?;
        let flag = |k: &str| match requested.get(k) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(FilterError::FlagNotBoolean),
        };
        let resource_subscriptions = match requested.get("resourceSubscriptions") {
            None => None,
            Some(v) => Some(
                serde_json::from_value::<BTreeSet<String>>(v.clone())
                    .map_err(|_| FilterError::Subscriptions)?,
            ),
        };
        Ok(Filter {
            tools_list_changed: flag("toolsListChanged")?,
            prompts_list_changed: flag("promptsListChanged")?,
            resources_list_changed: flag("resourcesListChanged")?,
            resource_subscriptions,
        })
    }

    /// The filter as the `notifications` object: only `true` flags, subscriptions when present.
    #[must_use]
    pub fn to_json(&self) -> String {
        let mut map = Map::new();
        if self.tools_list_changed {
            map.insert("toolsListChanged".into(), true.into());
        }
        if self.prompts_list_changed {
            map.insert("promptsListChanged".into(), true.into());
        }
        if self.resources_list_changed {
            map.insert("resourcesListChanged".into(), true.into());
        }
        if let Some(uris) = &self.resource_subscriptions {
            map.insert(
                "resourceSubscriptions".into(),
                uris.iter().cloned().collect::<Vec<_>>().into(),
            );
        }
        Value::Object(map).to_string()
    }
}

impl Change {
    /// The notification method announcing this change.
    #[must_use]
    pub const fn method(&self) -> &'static str {
        match self {
            Change::ToolsListChanged => TOOLS_LIST_CHANGED,
            Change::PromptsListChanged => PROMPTS_LIST_CHANGED,
            Change::ResourcesListChanged => RESOURCES_LIST_CHANGED,
            Change::ResourceUpdated { .. } => RESOURCE_UPDATED,
        }
    }

    /// The notification's params, tagged with the stream's subscription id.
    #[must_use]
    pub fn params(&self, id: &SubscriptionId) -> String {
        let meta = format!(r#""_meta":{{"{SUBSCRIPTION_ID}":{}}}"#, id.0);
        match self {
            Change::ResourceUpdated { uri } => {
                format!(r#"{{"uri":{},{meta}}}"#, Value::String(uri.clone()))
            }
            _ => format!("{{{meta}}}"),
        }
    }
}

/// The acknowledgement's params: the effective filter and the subscription id.
#[must_use]
pub fn acknowledged_params(id: &SubscriptionId, filter: &Filter) -> String {
    format!(
        r#"{{"notifications":{},"_meta":{{"{SUBSCRIPTION_ID}":{}}}}}"#,
        filter.to_json(),
        id.0
    )
}

/// The listen request's closing result at shutdown, with the server's identity.
#[must_use]
pub fn closing_result(id: &SubscriptionId, server_info: &RawValue) -> String {
    format!(
        r#"{{"resultType":"complete","_meta":{{"{SUBSCRIPTION_ID}":{},"{SERVER_INFO}":{}}}}}"#,
        id.0,
        server_info.get()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k1_filter_members_of_the_wrong_type_are_typed_errors() {
        assert_eq!(Filter::read("[]"), Err(FilterError::NotAnObject));
        assert_eq!(
            Filter::read(r#"{"toolsListChanged":1}"#),
            Err(FilterError::FlagNotBoolean)
        );
        assert_eq!(
            Filter::read(r#"{"resourceSubscriptions":[1]}"#),
            Err(FilterError::Subscriptions)
        );
        let f = Filter::read(r#"{"toolsListChanged":false,"future":{}}"#).unwrap();
        assert_eq!(f, Filter::default());
        assert_eq!(f.to_json(), "{}");
    }

    #[test]
    fn k3_k4_k10_bodies_carry_the_subscription_id_with_its_json_type() {
        let id = SubscriptionId("\"s-1\"".to_owned());
        let filter = Filter {
            resources_list_changed: true,
            resource_subscriptions: Some(BTreeSet::new()),
            ..Filter::default()
        };
        assert_eq!(
            acknowledged_params(&id, &filter),
            r#"{"notifications":{"resourceSubscriptions":[],"resourcesListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":"s-1"}}"#
        );
        let n = SubscriptionId("7".to_owned());
        let change = Change::ResourceUpdated {
            uri: "a://\"q\"".to_owned(),
        };
        assert_eq!(change.method(), "notifications/resources/updated");
        assert_eq!(
            change.params(&n),
            r#"{"uri":"a://\"q\"","_meta":{"io.modelcontextprotocol/subscriptionId":7}}"#
        );
        assert_eq!(
            Change::ToolsListChanged.params(&n),
            r#"{"_meta":{"io.modelcontextprotocol/subscriptionId":7}}"#
        );
        let info = RawValue::from_string(r#"{"name":"s","version":"1"}"#.to_owned()).unwrap();
        assert_eq!(
            closing_result(&n, &info),
            r#"{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":7,"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}"#
        );
    }
}
