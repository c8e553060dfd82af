//! [`ListKind`]: the three lists whose changes are announced (`notifications/*/list_changed`),
//! to legacy sessions and to 2026-07-28 listen streams alike.
//!
//! Not here: sending the announcements (`Server::changed`, `listeners.rs`).

use crate::protocol::methods;

/// The three lists that announce changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListKind {
    Tools,
    Resources,
    Prompts,
}

impl ListKind {
    /// Every list.
    pub(crate) const ALL: [ListKind; 3] = [ListKind::Tools, ListKind::Resources, ListKind::Prompts];

    pub(crate) fn method(self) -> &'static str {
        match self {
            ListKind::Tools => methods::TOOLS_LIST_CHANGED,
            ListKind::Resources => methods::RESOURCES_LIST_CHANGED,
            ListKind::Prompts => methods::PROMPTS_LIST_CHANGED,
        }
    }
    /// The list's name on the bus between instances.
    pub(crate) fn name(self) -> &'static str {
        match self {
            ListKind::Tools => "tools",
            ListKind::Resources => "resources",
            ListKind::Prompts => "prompts",
        }
    }

    /// The kind a bus name names.
    pub(crate) fn from_name(name: &str) -> Option<ListKind> {
        ListKind::ALL.into_iter().find(|k| k.name() == name)
    }

    pub(crate) fn index(self) -> usize {
        match self {
            ListKind::Tools => 0,
            ListKind::Resources => 1,
            ListKind::Prompts => 2,
        }
    }
}
