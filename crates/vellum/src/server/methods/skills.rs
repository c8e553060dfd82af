//! The skills extension's methods (SEP-2640): `skills/list` (paginated), `skills/get` (one
//! entry by the URI of its `SKILL.md`) and `resources/directory/read` (the direct children
//! of a skill directory, sub-directories typed `inode/directory`). Both lists are cacheable.
//!
//! Not here: publishing skills (`Server::add_skill`, `registry/skills.rs`).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::protocol::{
    DIRECTORY_MIME_TYPE, ErrorObject, GetSkillParams, GetSkillResult, ListSkillsResult,
    PaginatedParams, ReadDirectoryParams, ReadDirectoryResult, Resource,
};
use crate::server::registry::pagination::page;
use crate::server::request::reply::{Outcome, cacheable, complete};
use crate::server::request::request::RequestShared;
use crate::skill_files::SkillFiles;

/// `skills/list`: whole entries, page by page.
pub(crate) fn list(shared: &RequestShared, p: PaginatedParams) -> Result<Outcome, ErrorObject> {
    let skills = shared.server.registry().read().skills.clone();
    let (items, next) = page(
        &skills,
        p.cursor.as_deref(),
        shared.server.options().page_size,
    )?;
    Ok(cacheable(
        shared,
        ListSkillsResult {
            skills: items.into_iter().map(|s| s.entry()).collect(),
            next_cursor: next,
            meta: None,
        },
    ))
}

/// `skills/get`: one entry; an unknown URI is -32602.
pub(crate) fn get(shared: &RequestShared, p: GetSkillParams) -> Result<Outcome, ErrorObject> {
    let skill = shared
        .server
        .registry()
        .read()
        .skills
        .get(&p.uri)
        .cloned()
        .ok_or_else(|| {
            ErrorObject::invalid_params(format!("Unknown skill: {}", p.uri))
                .with_data(serde_json::json!({ "uri": p.uri }))
        })?;
    Ok(cacheable(
        shared,
        GetSkillResult {
            skill: skill.entry(),
            meta: None,
        },
    ))
}

/// `resources/directory/read`: the children of a skill directory (the skill's root or one
/// of its sub-directories); any other URI is -32602.
pub(crate) fn read_directory(
    shared: &RequestShared,
    p: ReadDirectoryParams,
) -> Result<Outcome, ErrorObject> {
    let uri = p.uri.trim_end_matches('/');
    let not_directory = || {
        ErrorObject::invalid_params(format!("Not a directory: {}", p.uri))
            .with_data(serde_json::json!({ "uri": p.uri }))
    };
    let skills: Vec<Arc<SkillFiles>> = shared
        .server
        .registry()
        .read()
        .skills
        .values()
        .cloned()
        .collect();
    let (skill, dir, children) = skills
        .iter()
        .find_map(|s| {
            let dir = s.relative(uri)?;
            Some((s, dir, s.children(dir)?))
        })
        .ok_or_else(not_directory)?;
    let mut entries: BTreeMap<String, Resource> = BTreeMap::new();
    for (name, is_dir) in children {
        let path = if dir.is_empty() {
            name.clone()
        } else {
            format!("{dir}/{name}")
        };
        let child_uri = skill.file_uri(&path);
        let mut r = Resource::new(child_uri, name.clone());
        if is_dir {
            r.mime_type = Some(DIRECTORY_MIME_TYPE.to_owned());
        } else if let Some(f) = skill.file(&path) {
            r.mime_type = Some(f.mime_type.to_owned());
            r.size = Some(f.bytes.len() as u64);
        }
        entries.insert(name, r);
    }
    let (items, next) = page(
        &entries,
        p.cursor.as_deref(),
        shared.server.options().page_size,
    )?;
    Ok(complete(
        shared,
        ReadDirectoryResult {
            resources: items.into_iter().cloned().collect(),
            next_cursor: next,
            meta: None,
        },
    ))
}
