//! Visibility and authorisation, decided per request.

use crate::core::caller::Caller;

/// What a caller may do with one tool, resource or prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Invisible: indistinguishable from an item that does not exist.
    Hidden,
    /// Listed, but invoking/reading/getting it is refused.
    ListOnly,
    /// Listed and usable.
    Allowed,
}

impl Access {
    /// Whether the item appears in lists and search.
    #[must_use]
    pub fn is_visible(self) -> bool {
        !matches!(self, Access::Hidden)
    }
}

/// Decides visibility and authorisation. Called on every request; the registry never caches
/// a decision and offers no unfiltered catalogue.
///
/// ```
/// use strict_mcp::core::{Access, Caller, Policy};
/// struct AdminOnly;
/// impl Policy for AdminOnly {
///     fn tool(&self, caller: &Caller, name: &str) -> Access {
///         if name.starts_with("admin.") && caller.principal() != Some("admin") {
///             Access::Hidden
///         } else {
///             Access::Allowed
///         }
///     }
/// }
/// assert_eq!(AdminOnly.tool(&Caller::anonymous(), "admin.reset"), Access::Hidden);
/// assert_eq!(AdminOnly.resource(&Caller::anonymous(), "mem://x"), Access::Allowed);
/// ```
pub trait Policy: Send + Sync + 'static {
    /// Access to the tool `name`.
    fn tool(&self, caller: &Caller, name: &str) -> Access {
        let _ = (caller, name);
        Access::Allowed
    }

    /// Access to the resource `uri` (for templates, the concrete URI when reading and the
    /// template text when listing templates).
    fn resource(&self, caller: &Caller, uri: &str) -> Access {
        let _ = (caller, uri);
        Access::Allowed
    }

    /// Access to the prompt `name`.
    fn prompt(&self, caller: &Caller, name: &str) -> Access {
        let _ = (caller, name);
        Access::Allowed
    }

    /// Access to the skill whose `SKILL.md` is `uri` (Skills extension): a hidden skill is
    /// absent from `skills/list`, unknown to `skills/get` and its directories unknown to
    /// `resources/directory/read`; any other answer lists and gets it. Its files stay
    /// governed by [`Policy::resource`]. By default the `SKILL.md` resource's access.
    fn skill(&self, caller: &Caller, uri: &str) -> Access {
        self.resource(caller, uri)
    }
}

/// Everything visible and allowed.
#[derive(Debug, Clone, Copy, Default)]
pub struct AllowAll;

impl Policy for AllowAll {}
