//! What a server offers, as the dispatcher reads it: the registries of tools, resources,
//! templates, prompts and completers, and the encoded first pages of the lists.
//!
//! Not here: registering (see `registration.rs`) and serving the list methods (see
//! `methods/lists.rs`).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;

use bytes::Bytes;

use super::prompt::{DynCompletionHandler, PromptEntry};
use super::resource::{ResourceEntry, TemplateEntry};
use super::tool::ToolEntry;

/// What a server offers, by name (sorted, so list pages are stable).
#[derive(Default)]
pub(crate) struct Registry {
    pub(crate) tools: BTreeMap<String, Arc<ToolEntry>>,
    pub(crate) resources: BTreeMap<String, Arc<ResourceEntry>>,
    pub(crate) templates: BTreeMap<String, Arc<TemplateEntry>>,
    pub(crate) prompts: BTreeMap<String, Arc<PromptEntry>>,
    pub(crate) completion: Option<Arc<dyn DynCompletionHandler>>,
    /// Completers of single arguments, by (prompt or template, argument).
    pub(crate) completers: HashMap<(String, String), Arc<dyn DynCompletionHandler>>,
}

/// Encoded first pages of the lists, rebuilt after a change (most clients only ever fetch
/// the first page, so this makes `tools/list` a copy of bytes).
#[derive(Default)]
pub(crate) struct ListCache {
    /// The first page of `tools/list` as result JSON, `[legacy, modern]`, each with the
    /// generation of the tool registry it was computed from.
    pub(crate) tools: Mutex<[Option<(u64, Bytes)>; 2]>,
    /// Bumped (under the registry's write lock) on every change of the tools: a page computed
    /// from an older generation is never served or cached as current.
    pub(crate) tools_generation: AtomicU64,
}
