//! The plain list methods (`tools/list`, `resources/list`, `resources/templates/list`,
//! `prompts/list`), served by one generic path, [`serve`]: a page of the registry's sorted
//! map, each entry as the request's era shows it, with cache hints for 2026-07-28. A list
//! may keep its encoded first page ([`Listing::cache`]): `tools/list` does, so most calls
//! copy bytes.
//!
//! Not here: `tasks/list`, whose items belong to their owner (`tasks.rs`), and the cursor
//! format (`pagination.rs`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;

use super::super::pagination::page;
use super::super::prompt::PromptEntry;
use super::super::registry::Registry;
use super::super::reply::{HasMeta, Outcome, cacheable, write_result};
use super::super::request::RequestShared;
use super::super::resource::{ResourceEntry, TemplateEntry};
use super::super::server::ServerInner;
use super::super::tool::ToolEntry;
use crate::protocol::{
    CacheHint, ErrorObject, JsonObject, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedParams, Prompt, Resource, ResourceTemplate,
    ResultType, Tool, encode_response_raw,
};

/// One list method: which registry map it pages and how its result is built.
pub(super) trait Listing {
    /// A registry entry.
    type Entry;
    /// An item of the result.
    type Item;
    /// The method's result.
    type Result: Serialize + HasMeta;

    /// The registry map listed.
    fn map(registry: &Registry) -> &BTreeMap<String, Arc<Self::Entry>>;
    /// An entry as the request's era lists it.
    fn item(entry: &Self::Entry, modern: bool) -> Self::Item;
    /// The result of one page.
    fn result(items: Vec<Self::Item>, next_cursor: Option<String>) -> Self::Result;
    /// The cache of the encoded first page, when this list keeps one.
    fn cache(_server: &ServerInner) -> Option<FirstPage<'_>> {
        None
    }
}

/// A list's cached first page: the encoded result per era (`[legacy, modern]`), each with
/// the registry generation it was computed from.
pub(super) struct FirstPage<'a> {
    pages: &'a Mutex<[Option<(u64, Bytes)>; 2]>,
    generation: &'a AtomicU64,
}

/// Serves one page of a list.
pub(super) fn serve<L: Listing>(
    shared: &RequestShared,
    p: PaginatedParams,
) -> Result<Outcome, ErrorObject> {
    shared.set_meta(p.meta);
    let server = &shared.server;
    let modern = shared.is_modern();
    let slot = usize::from(modern);
    let cache = L::cache(&server.inner).filter(|_| p.cursor.is_none());
    if let Some(c) = &cache {
        let current = c.generation.load(Ordering::Acquire);
        let cached = c
            .pages
            .lock()
            .ok()
            .and_then(|pages| pages[slot].clone())
            .filter(|(generation, _)| *generation == current);
        if let Some((_, bytes)) = cached {
            return Ok(Outcome::Reply(encode_response_raw(&shared.id, &bytes)));
        }
    }
    let (result, generation) = {
        let reg = server.registry();
        // Read under the registry lock: writers bump it under the write lock, so it is the
        // generation of exactly this map.
        let generation = cache.as_ref().map(|c| c.generation.load(Ordering::Acquire));
        let (entries, next) = page(
            L::map(&reg),
            p.cursor.as_deref(),
            server.options().page_size,
        )?;
        let items = entries.into_iter().map(|e| L::item(e, modern)).collect();
        (L::result(items, next), generation)
    };
    let (Some(c), Some(generation)) = (cache, generation) else {
        return Ok(cacheable(shared, result));
    };
    let mut body = Vec::with_capacity(1024);
    write_result(
        shared,
        result,
        ResultType::Complete,
        Some(CacheHint::default()),
        &mut body,
    )
    .map_err(|e| ErrorObject::internal(format!("the list could not be encoded: {e}")))?;
    let body = Bytes::from(body);
    if let Ok(mut pages) = c.pages.lock()
        && pages[slot].as_ref().is_none_or(|(g, _)| *g < generation)
    {
        pages[slot] = Some((generation, body.clone()));
    }
    Ok(Outcome::Reply(encode_response_raw(&shared.id, &body)))
}

/// `tools/list`, with its first page cached.
pub(super) struct Tools;

impl Listing for Tools {
    type Entry = ToolEntry;
    type Item = Tool;
    type Result = ListToolsResult;

    fn map(registry: &Registry) -> &BTreeMap<String, Arc<ToolEntry>> {
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

    fn cache(server: &ServerInner) -> Option<FirstPage<'_>> {
        Some(FirstPage {
            pages: &server.cache.tools,
            generation: &server.cache.tools_generation,
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

    fn map(registry: &Registry) -> &BTreeMap<String, Arc<ResourceEntry>> {
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

    fn map(registry: &Registry) -> &BTreeMap<String, Arc<TemplateEntry>> {
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

    fn map(registry: &Registry) -> &BTreeMap<String, Arc<PromptEntry>> {
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
