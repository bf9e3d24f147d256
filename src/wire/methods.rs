//! The method table of revision 2026-07-28, for both roles: which requests exist,
//! which server capability each needs, which were removed, and which may answer
//! `input_required` (I-section). A server answers a method it does not serve with -32601; a
//! client never sends one the server's discovery does not advertise.

/// `server/discover`.
pub const DISCOVER: &str = "server/discover";
/// `tools/list`.
pub const TOOLS_LIST: &str = "tools/list";
/// `tools/call`.
pub const TOOLS_CALL: &str = "tools/call";
/// `resources/list`.
pub const RESOURCES_LIST: &str = "resources/list";
/// `resources/templates/list`.
pub const RESOURCE_TEMPLATES_LIST: &str = "resources/templates/list";
/// `resources/read`.
pub const RESOURCES_READ: &str = "resources/read";
/// `prompts/list`.
pub const PROMPTS_LIST: &str = "prompts/list";
/// `prompts/get`.
pub const PROMPTS_GET: &str = "prompts/get";
/// `completion/complete`.
pub const COMPLETE: &str = "completion/complete";
/// `subscriptions/listen` (K-section).
pub const LISTEN: &str = crate::wire::listen::LISTEN;
/// `notifications/cancelled` (J-section).
pub const CANCELLED: &str = "notifications/cancelled";
/// `notifications/progress` (J-section).
pub const PROGRESS: &str = "notifications/progress";
/// `notifications/message` (L-section).
pub const MESSAGE: &str = "notifications/message";

/// Methods this revision removed; a server answers them like unknown methods (-32601),
/// with the supported versions in `data` so an initialise-era client learns why.
pub const REMOVED: [&str; 5] = [
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// Every request method of this revision.
pub const REQUESTS: [&str; 10] = [
    DISCOVER,
    TOOLS_LIST,
    TOOLS_CALL,
    RESOURCES_LIST,
    RESOURCE_TEMPLATES_LIST,
    RESOURCES_READ,
    PROMPTS_LIST,
    PROMPTS_GET,
    COMPLETE,
    LISTEN,
];

/// The server capability a request method needs (a method behind a capability the server
/// does not advertise does not exist).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Needs {
    /// Always served (`server/discover`, `subscriptions/listen`).
    Nothing,
    /// `capabilities.tools`.
    Tools,
    /// `capabilities.resources`.
    Resources,
    /// `capabilities.prompts`.
    Prompts,
    /// `capabilities.completions`.
    Completions,
}

/// What `method` needs, or `None` for a method this revision does not define (removed ones
/// included).
#[must_use]
pub fn needs(method: &str) -> Option<Needs> {
    Some(match method {
        DISCOVER | LISTEN => Needs::Nothing,
        TOOLS_LIST | TOOLS_CALL => Needs::Tools,
        RESOURCES_LIST | RESOURCE_TEMPLATES_LIST | RESOURCES_READ => Needs::Resources,
        PROMPTS_LIST | PROMPTS_GET => Needs::Prompts,
        COMPLETE => Needs::Completions,
        _ => return None,
    })
}

/// Whether `method` was removed by this revision.
#[must_use]
pub fn is_removed(method: &str) -> bool {
    REMOVED.contains(&method)
}

/// Whether a result of `method` may be `input_required` (only these three, I-section; a
/// client treats it from any other method as an invalid result).
#[must_use]
pub fn may_require_input(method: &str) -> bool {
    matches!(method, TOOLS_CALL | RESOURCES_READ | PROMPTS_GET)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a14_every_request_method_has_a_capability_and_removed_ones_have_none() {
        for method in REQUESTS {
            assert!(needs(method).is_some(), "{method}");
            assert!(!is_removed(method), "{method}");
        }
        for method in REMOVED {
            assert_eq!(needs(method), None, "{method}");
            assert!(is_removed(method));
        }
        assert_eq!(needs("tools/unknown"), None);
        assert_eq!(needs(COMPLETE), Some(Needs::Completions));
    }

    #[test]
    fn i_input_required_only_from_three_methods() {
        let allowed: Vec<&str> = REQUESTS
            .into_iter()
            .filter(|m| may_require_input(m))
            .collect();
        assert_eq!(allowed, vec![TOOLS_CALL, RESOURCES_READ, PROMPTS_GET]);
    }
}
