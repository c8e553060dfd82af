//! Agent Skills in the registry (the skills extension, SEP-2640): a [`SkillFiles`] becomes
//! `skill://` resources (read with `resources/read`, listed with the other resources) and an
//! entry of `skills/list` / `skills/get`; its directories answer `resources/directory/read`.
//!
//! Not here: building and checking a skill (`crate::skill_files`), `Server::add_skill`
//! (`registration.rs`), and the three methods (`methods/skills.rs`).

use std::sync::Arc;

use super::registry::Registry;
use super::resource::{FnResource, ReadResourceRequest, ResourceEntry};
use crate::protocol::{ReadResourceResult, Resource, SKILL_MD};
use crate::server::HandlerError;
use crate::skill_files::SkillFiles;

impl Registry {
    /// Publishes a skill (replacing one at the same URI): a resource per file, and its entry.
    pub(crate) fn insert_skill(&self, skill: SkillFiles) {
        let skill = Arc::new(skill);
        let uri = skill.uri();
        let mut r = self.write();
        remove_skill(&mut r, &uri);
        for (path, file) in &skill.files {
            let file_uri = skill.file_uri(path);
            let mut resource = Resource::new(file_uri.clone(), path.clone());
            if path == SKILL_MD {
                // The manifest carries the skill's own name and description.
                resource.name = skill.name().to_owned();
                resource.description = Some(skill.description().to_owned());
            }
            resource.mime_type = Some(file.mime_type.to_owned());
            resource.size = Some(file.bytes.len() as u64);
            let (s, p) = (skill.clone(), path.clone());
            let handler = move |_ctx, req: ReadResourceRequest| {
                let contents = s.file(&p).map(|f| f.contents(&req.uri));
                async move {
                    Ok::<_, HandlerError>(ReadResourceResult::new(contents.into_iter().collect()))
                }
            };
            r.resources.insert(
                file_uri,
                Arc::new(ResourceEntry {
                    resource,
                    handler: Arc::new(FnResource(handler)),
                }),
            );
        }
        r.skills.insert(uri, skill);
    }

    /// Withdraws the skill whose `SKILL.md` is at `uri` and its resources; true if it existed.
    pub(crate) fn remove_skill(&self, uri: &str) -> bool {
        remove_skill(&mut self.write(), uri)
    }
}

fn remove_skill(r: &mut super::registry::Entries, uri: &str) -> bool {
    match r.skills.remove(uri) {
        Some(skill) => {
            for path in skill.files.keys() {
                r.resources.remove(&skill.file_uri(path));
            }
            true
        }
        None => false,
    }
}
