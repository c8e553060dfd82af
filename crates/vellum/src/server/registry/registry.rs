//! [`Registry`]: what a server offers, as registration changes it and the dispatcher reads
//! it: the entries (tools, resources, templates, prompts, completers, skills) behind one
//! lock, and the encoded pages of the lists. Every change goes through a method here, which
//! keeps the page cache in step; announcing the change is the caller's (`Server::changed`).
//!
//! Not here: the public registration methods (`registration.rs`), the skills' entries
//! (`skills.rs`), and serving the list methods (`methods/lists.rs`).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use bytes::Bytes;

use super::prompt::{DynCompletionHandler, PromptEntry};
use super::resource::{ResourceEntry, TemplateEntry};
use super::tool::ToolEntry;
#[cfg(feature = "skills")]
use crate::skill_files::SkillFiles;
use crate::sync::{read, write};

/// A server's registry.
#[derive(Default)]
pub(crate) struct Registry {
    entries: RwLock<Entries>,
    /// The encoded pages of `tools/list`.
    pub(crate) cache: ListCache,
}

/// What a server offers, by name (sorted, so list pages are stable).
#[derive(Default)]
pub(crate) struct Entries {
    pub(crate) tools: BTreeMap<String, Arc<ToolEntry>>,
    pub(crate) resources: BTreeMap<String, Arc<ResourceEntry>>,
    pub(crate) templates: BTreeMap<String, Arc<TemplateEntry>>,
    pub(crate) prompts: BTreeMap<String, Arc<PromptEntry>>,
    pub(crate) completion: Option<Arc<dyn DynCompletionHandler>>,
    /// Completers of single arguments, by (prompt or template, argument).
    pub(crate) completers: HashMap<(String, String), Arc<dyn DynCompletionHandler>>,
    /// Agent Skills (the skills extension), by the URI of their `SKILL.md`.
    #[cfg(feature = "skills")]
    pub(crate) skills: BTreeMap<String, Arc<SkillFiles>>,
}

impl Entries {
    /// Whether any Agent Skill is published (never, without the feature `skills`).
    pub(crate) fn has_skills(&self) -> bool {
        #[cfg(feature = "skills")]
        return !self.skills.is_empty();
        #[cfg(not(feature = "skills"))]
        false
    }
}

impl Registry {
    /// The entries now (a read lock: hold it briefly).
    pub(crate) fn read(&self) -> RwLockReadGuard<'_, Entries> {
        read(&self.entries)
    }

    /// The entries to change (see `skills.rs`).
    pub(super) fn write(&self) -> RwLockWriteGuard<'_, Entries> {
        write(&self.entries)
    }

    /// The tool called `name`.
    pub(crate) fn tool(&self, name: &str) -> Option<Arc<ToolEntry>> {
        self.read().tools.get(name).cloned()
    }

    /// Adds a tool, replacing one of the same name.
    pub(crate) fn insert_tool(&self, entry: ToolEntry) {
        let mut entries = self.write();
        entries
            .tools
            .insert(entry.tool.name.clone(), Arc::new(entry));
        self.cache.tools_changed();
    }

    /// Removes a tool; true if it existed.
    pub(crate) fn remove_tool(&self, name: &str) -> bool {
        let mut entries = self.write();
        let removed = entries.tools.remove(name).is_some();
        if removed {
            self.cache.tools_changed();
        }
        removed
    }

    /// Adds a resource, replacing one at the same URI.
    pub(crate) fn insert_resource(&self, entry: ResourceEntry) {
        let uri = entry.resource.uri.clone();
        self.write().resources.insert(uri, Arc::new(entry));
    }

    /// Adds a resource template, replacing one with the same template text.
    pub(crate) fn insert_template(&self, entry: TemplateEntry) {
        let key = entry.template.uri_template.clone();
        self.write().templates.insert(key, Arc::new(entry));
    }

    /// Removes a resource (by URI) or template (by template text); true if it existed.
    pub(crate) fn remove_resource(&self, uri_or_template: &str) -> bool {
        let mut entries = self.write();
        entries.resources.remove(uri_or_template).is_some()
            || entries.templates.remove(uri_or_template).is_some()
    }

    /// Adds a prompt, replacing one of the same name.
    pub(crate) fn insert_prompt(&self, entry: PromptEntry) {
        let name = entry.prompt.name.clone();
        self.write().prompts.insert(name, Arc::new(entry));
    }

    /// Removes a prompt; true if it existed.
    pub(crate) fn remove_prompt(&self, name: &str) -> bool {
        self.write().prompts.remove(name).is_some()
    }

    /// Sets the handler of `completion/complete`.
    pub(crate) fn set_completion(&self, handler: Arc<dyn DynCompletionHandler>) {
        self.write().completion = Some(handler);
    }

    /// Adds the completer of one argument (`key`: the prompt or template, the argument).
    pub(crate) fn add_completer(&self, key: (String, String), f: Arc<dyn DynCompletionHandler>) {
        self.write().completers.insert(key, f);
    }

    /// Every scope some tool requires, each once.
    pub(crate) fn declared_scopes(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for entry in self.read().tools.values() {
            for s in &entry.tool.required_scopes {
                if !out.contains(s) {
                    out.push(s.clone());
                }
            }
        }
        out
    }
}

/// Encoded pages of the lists, rebuilt after a change, so that `tools/list` is a copy of
/// bytes for every page of a walk, whatever the number of tools.
#[derive(Default)]
pub(crate) struct ListCache {
    /// The pages of `tools/list` of one generation of the tool registry.
    pub(crate) tools: Mutex<PageCache>,
    /// Bumped (under the registry's write lock) on every change of the tools: a page computed
    /// from an older generation is never served or cached as current.
    pub(crate) tools_generation: AtomicU64,
}

impl ListCache {
    /// The tools or what their pages show changed: every cached page is stale.
    pub(crate) fn tools_changed(&self) {
        self.tools_generation.fetch_add(1, Ordering::AcqRel);
    }
}

/// The encoded result of each page of a list, per era, for one generation of the list.
///
/// Only the pages of a walk from the first page (following `nextCursor`) are kept, so the
/// cache holds at most the encoded list once per era; a cursor naming some other key is
/// answered without the cache.
#[derive(Default)]
pub(crate) struct PageCache {
    /// The generation the pages belong to.
    generation: u64,
    /// The page numbers by the key their cursor names (see `pagination::page_numbers`);
    /// `None` until a page of this generation was computed.
    numbers: Option<HashMap<String, usize>>,
    /// Each page's encoded result, `[legacy, modern]`.
    pages: Vec<[Option<Bytes>; 2]>,
}

impl PageCache {
    /// The page a cursor (the key it names, `None` for the first page) starts, when this is
    /// the cache of `generation` and knows it.
    pub(crate) fn number(&self, generation: u64, after: Option<&str>) -> Option<usize> {
        if self.generation != generation {
            return None;
        }
        match after {
            None => Some(0),
            Some(k) => self.numbers.as_ref()?.get(k).copied(),
        }
    }

    /// The cached page `number` for the era `slot`, if it is of `generation`.
    pub(crate) fn get(&self, generation: u64, after: Option<&str>, slot: usize) -> Option<Bytes> {
        let n = self.number(generation, after)?;
        self.pages.get(n)?[slot].clone()
    }

    /// Whether the page numbers of `generation` are still to be computed.
    pub(crate) fn needs_numbers(&self, generation: u64) -> bool {
        self.generation != generation || self.numbers.is_none()
    }

    /// Keeps the page `number` of `generation` for the era `slot`; `numbers` are the page
    /// numbers of that generation when the caller computed them. A page of an older
    /// generation than the cache's is dropped.
    pub(crate) fn put(
        &mut self,
        generation: u64,
        numbers: Option<HashMap<String, usize>>,
        number: Option<usize>,
        slot: usize,
        page: Bytes,
    ) {
        if generation < self.generation {
            return;
        }
        if generation > self.generation {
            *self = PageCache {
                generation,
                numbers: None,
                pages: Vec::new(),
            };
        }
        if self.numbers.is_none() {
            self.numbers = numbers;
        }
        let Some(n) = number else { return };
        if self.pages.len() <= n {
            self.pages.resize_with(n + 1, Default::default);
        }
        self.pages[n][slot] = Some(page);
    }
}
