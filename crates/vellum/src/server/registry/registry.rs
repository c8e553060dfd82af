//! What a server offers, as the dispatcher reads it: the registries of tools, resources,
//! templates, prompts and completers, and the encoded pages of the lists.
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
#[cfg(feature = "skills")]
use crate::skill_files::SkillFiles;

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
    /// Agent Skills (the skills extension), by the URI of their `SKILL.md`.
    #[cfg(feature = "skills")]
    pub(crate) skills: BTreeMap<String, Arc<SkillFiles>>,
}

impl Registry {
    /// Whether any Agent Skill is published (never, without the feature `skills`).
    pub(crate) fn has_skills(&self) -> bool {
        #[cfg(feature = "skills")]
        return !self.skills.is_empty();
        #[cfg(not(feature = "skills"))]
        false
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
