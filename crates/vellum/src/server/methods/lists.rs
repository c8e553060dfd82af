//! The plain list methods (`tools/list`, `resources/list`, `resources/templates/list`,
//! `prompts/list`), served by one generic path, [`serve`]: a page of the registry's sorted
//! map, each entry as the request's era shows it, with cache hints for 2026-07-28. A list
//! may keep its encoded pages ([`Listing::cache`]): `tools/list` does, so a walk of any
//! length copies bytes.
//!
//! Not here: `tasks/list`, whose items belong to their owner (`tasks/legacy.rs`), and the cursor
//! format (`pagination.rs`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;

use crate::protocol::{
    ErrorObject, JsonObject, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedParams, Prompt, Resource, ResourceTemplate, ResultType, Tool,
    encode_response_raw,
};
use crate::server::registry::cache_hints::Cached;
use crate::server::registry::pagination::{decode_cursor, page_after, page_numbers};
use crate::server::registry::prompt::PromptEntry;
use crate::server::registry::registry::{Entries, PageCache, Registry};
use crate::server::registry::resource::{ResourceEntry, TemplateEntry};
use crate::server::registry::tool::ToolEntry;
use crate::server::request::reply::{HasMeta, Outcome, cacheable_with, write_result};
use crate::server::request::request::RequestShared;

/// One list method: which registry map it pages and how its result is built.
pub(super) trait Listing {
    /// A registry entry.
    type Entry;
    /// An item of the result.
    type Item;
    /// The method's result.
    type Result: Serialize + HasMeta;
    /// Whose cache hints the result carries.
    const CACHED: Cached;

    /// The registry map listed.
    fn map(registry: &Entries) -> &BTreeMap<String, Arc<Self::Entry>>;
    /// An entry as the request's era lists it.
    fn item(entry: &Self::Entry, modern: bool) -> Self::Item;
    /// The result of one page.
    fn result(items: Vec<Self::Item>, next_cursor: Option<String>) -> Self::Result;
    /// The cache of the encoded pages, when this list keeps one.
    fn cache(_registry: &Registry) -> Option<Pages<'_>> {
        None
    }
}

/// A list's cached pages (see [`PageCache`]) and the generation of the registry map they
/// follow.
pub(super) struct Pages<'a> {
    pages: &'a Mutex<PageCache>,
    generation: &'a AtomicU64,
}

/// The era's slot in a [`PageCache`].
fn era_slot(modern: bool) -> usize {
    usize::from(modern)
}

/// Serves one page of a list: from the cache when the list keeps one and the page is there,
/// else computed (O(log n + page size)) and, when it is a page of a walk from the first
/// page, kept.
pub(super) fn serve<L: Listing>(
    shared: &RequestShared,
    p: PaginatedParams,
) -> Result<Outcome, ErrorObject> {
    shared.set_meta(p.meta);
    let server = &shared.server;
    let modern = shared.is_modern();
    let slot = era_slot(modern);
    let after = decode_cursor(p.cursor.as_deref())?;
    let cache = L::cache(server.registry());
    if let Some(c) = &cache {
        let current = c.generation.load(Ordering::Acquire);
        let cached = c
            .pages
            .lock()
            .ok()
            .and_then(|pages| pages.get(current, after.as_deref(), slot));
        if let Some(bytes) = cached {
            return Ok(Outcome::Reply(encode_response_raw(&shared.id, &bytes)));
        }
    }
    let size = server.options().page_size;
    let (result, keep) = {
        let reg = server.registry().read();
        let map = L::map(&reg);
        // Read under the registry lock: writers bump it under the write lock, so it is the
        // generation of exactly this map.
        let keep = cache.as_ref().map(|c| {
            let generation = c.generation.load(Ordering::Acquire);
            let known = c.pages.lock().ok().and_then(|pages| {
                (!pages.needs_numbers(generation))
                    .then(|| pages.number(generation, after.as_deref()))
            });
            match known {
                Some(number) => (generation, None, number),
                None => {
                    // Once per generation: O(n) over the keys, a key kept per page.
                    let numbers = page_numbers(map, size);
                    let number = match after.as_deref() {
                        None => Some(0),
                        Some(k) => numbers.get(k).copied(),
                    };
                    (generation, Some(numbers), number)
                }
            }
        });
        let (entries, next) = page_after(map, after.as_deref(), size);
        let items = entries.into_iter().map(|e| L::item(e, modern)).collect();
        (L::result(items, next), keep)
    };
    // Read after the generation: setting a hint writes it, then bumps the generation, so a
    // page kept with an older hint belongs to a generation that is no longer current.
    let hint = server.cache_hint(L::CACHED);
    let (Some(c), Some((generation, numbers, number))) = (cache, keep) else {
        return Ok(cacheable_with(shared, result, hint));
    };
    let mut body = Vec::with_capacity(1024);
    write_result(shared, result, ResultType::Complete, Some(hint), &mut body)
        .map_err(|e| ErrorObject::internal(format!("the list could not be encoded: {e}")))?;
    let body = Bytes::from(body);
    if let Ok(mut pages) = c.pages.lock() {
        pages.put(generation, numbers, number, slot, body.clone());
    }
    Ok(Outcome::Reply(encode_response_raw(&shared.id, &body)))
}

/// `tools/list`, with its pages cached.
pub(super) struct Tools;

impl Listing for Tools {
    type Entry = ToolEntry;
    type Item = Tool;
    type Result = ListToolsResult;
    const CACHED: Cached = Cached::ToolsList;

    fn map(registry: &Entries) -> &BTreeMap<String, Arc<ToolEntry>> {
        &registry.tools
    }

    fn item(entry: &ToolEntry, modern: bool) -> Tool {
        let mut t = entry.tool.clone();
        // Before 2026-07-28 an output schema describes an object; others are not listed to
        // legacy clients (they get the text fallback instead).
        if !modern
            && t.output_schema
                .as_ref()
                .is_some_and(|s| !is_object_schema(s))
        {
            t.output_schema = None;
        }
        t
    }

    fn result(tools: Vec<Tool>, next_cursor: Option<String>) -> ListToolsResult {
        ListToolsResult {
            tools,
            next_cursor,
            meta: None,
        }
    }

    fn cache(registry: &Registry) -> Option<Pages<'_>> {
        Some(Pages {
            pages: &registry.cache.tools,
            generation: &registry.cache.tools_generation,
        })
    }
}

/// True for a schema whose root describes an object.
fn is_object_schema(schema: &JsonObject) -> bool {
    schema.get("type") == Some(&Value::String("object".into()))
}

/// `resources/list`.
pub(super) struct Resources;

impl Listing for Resources {
    type Entry = ResourceEntry;
    type Item = Resource;
    type Result = ListResourcesResult;
    const CACHED: Cached = Cached::ResourcesList;

    fn map(registry: &Entries) -> &BTreeMap<String, Arc<ResourceEntry>> {
        &registry.resources
    }

    fn item(entry: &ResourceEntry, _modern: bool) -> Resource {
        entry.resource.clone()
    }

    fn result(resources: Vec<Resource>, next_cursor: Option<String>) -> ListResourcesResult {
        ListResourcesResult {
            resources,
            next_cursor,
            meta: None,
        }
    }
}

/// `resources/templates/list`.
pub(super) struct Templates;

impl Listing for Templates {
    type Entry = TemplateEntry;
    type Item = ResourceTemplate;
    type Result = ListResourceTemplatesResult;
    const CACHED: Cached = Cached::ResourceTemplatesList;

    fn map(registry: &Entries) -> &BTreeMap<String, Arc<TemplateEntry>> {
        &registry.templates
    }

    fn item(entry: &TemplateEntry, _modern: bool) -> ResourceTemplate {
        entry.template.clone()
    }

    fn result(
        resource_templates: Vec<ResourceTemplate>,
        next_cursor: Option<String>,
    ) -> ListResourceTemplatesResult {
        ListResourceTemplatesResult {
            resource_templates,
            next_cursor,
            meta: None,
        }
    }
}

/// `prompts/list`.
pub(super) struct Prompts;

impl Listing for Prompts {
    type Entry = PromptEntry;
    type Item = Prompt;
    type Result = ListPromptsResult;
    const CACHED: Cached = Cached::PromptsList;

    fn map(registry: &Entries) -> &BTreeMap<String, Arc<PromptEntry>> {
        &registry.prompts
    }

    fn item(entry: &PromptEntry, _modern: bool) -> Prompt {
        entry.prompt.clone()
    }

    fn result(prompts: Vec<Prompt>, next_cursor: Option<String>) -> ListPromptsResult {
        ListPromptsResult {
            prompts,
            next_cursor,
            meta: None,
        }
    }
}
