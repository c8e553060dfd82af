//! What a server offers: the [`Registry`](registry::Registry) of tools, resources,
//! templates, prompts, completers and skills, with the encoded pages of its lists; the
//! erased handler types behind its entries (typed tools and their validation in `tool.rs`,
//! `resource.rs`, `prompt.rs`); registering them (`registration.rs`: `impl Server { add_tool,
//! … }`); and what the lists need (`pagination.rs`, `list_kind.rs`, `cache_hints.rs`).
//!
//! Not here: serving the methods that read the registry (`methods/`), and the general
//! libraries the entries use (`crate::uri_template`, `crate::schema`, `crate::skill_files`).

pub(super) mod cache_hints;
pub(super) mod derive;
pub(super) mod list_kind;
pub(super) mod pagination;
pub(super) mod prompt;
mod registration;
#[allow(clippy::module_inception)]
pub(super) mod registry;
pub(super) mod resource;
#[cfg(feature = "skills")]
mod skills;
pub(super) mod tool;
