//! Serving Agent Skills (the skills extension, SEP-2640): [`Server::add_skill`] publishes a
//! [`SkillFiles`] as `skill://` resources (read with `resources/read`, listed with the other
//! resources) and as an entry of `skills/list` / `skills/get`; its directories answer
//! `resources/directory/read`.
//!
//! Not here: building and checking a skill (`skill_files.rs`), and the three methods
//! (`methods/skills.rs`).

use std::sync::Arc;

use super::list_kind::ListKind;
use super::resource::{FnResource, ReadResourceRequest, ResourceEntry};
use super::tool::RegistrationError;
use crate::protocol::{ReadResourceResult, Resource, SKILL_MD};
use crate::server::server::Server;
use crate::skill_files::SkillFiles;
use crate::sync::write;

impl Server {
    /// Publishes an Agent Skill: its `SKILL.md` and every supporting file become resources
    /// at `skill://<prefix>/<name>/<path>`, it is listed by `skills/list` and fetched by
    /// `skills/get` under the URI of its `SKILL.md`, and its directories are browsable with
    /// `resources/directory/read`. The server then declares the extension
    /// `io.modelcontextprotocol/skills` (with `directoryRead`) and the resources capability.
    /// A skill at the same URI is replaced.
    ///
    /// ```
    /// use vellum::prelude::*;
    /// use vellum::server::SkillFiles;
    ///
    /// let server = Server::new(Implementation::new("docs", "1"), ServerOptions::default());
    /// let skill = SkillFiles::new(
    ///     "",
    ///     "---\nname: refunds\ndescription: Process refund requests per policy\n---\n# Refunds\n",
    /// )?;
    /// server.add_skill(skill)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn add_skill(&self, skill: SkillFiles) -> Result<&Self, RegistrationError> {
        let skill = Arc::new(skill);
        let uri = skill.uri();
        self.remove_skill(&uri);
        {
            let mut r = write(&self.inner.registry);
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
                        Ok::<_, crate::server::HandlerError>(ReadResourceResult::new(
                            contents.into_iter().collect(),
                        ))
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
        self.changed(ListKind::Resources);
        Ok(self)
    }

    /// Withdraws the skill whose `SKILL.md` is at `uri` and its resources; true if it existed.
    pub fn remove_skill(&self, uri: &str) -> bool {
        let removed = {
            let mut r = write(&self.inner.registry);
            match r.skills.remove(uri) {
                Some(skill) => {
                    for path in skill.files.keys() {
                        r.resources.remove(&skill.file_uri(path));
                    }
                    true
                }
                None => false,
            }
        };
        if removed {
            self.changed(ListKind::Resources);
        }
        removed
    }
}
