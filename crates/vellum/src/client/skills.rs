//! Agent Skills on the client side (the skills extension, SEP-2640): listing a server's
//! skills, loading one, and reading its supporting files, every fetched byte verified
//! against the entry the listing published.
//!
//! Listing fetches entries only: no file of a skill is read before the application loads
//! that skill ([`Client::load_skill`]), the extension's "no retrieval ahead of need" rule.
//! Loading reads its `SKILL.md` and refuses it, with a [`SkillError`], when its
//! size, its sha256 digest or its YAML frontmatter differs from the entry; a supporting
//! file read through the [`LoadedSkill`] is checked the same way (size and digest).
//!
//! Not here: the wire types and the frontmatter parser, which the server shares
//! (`protocol/skills.rs`).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use super::call_options::CallOptions;
use super::engine::to_object;
use super::handle::Client;
use crate::error::Error;
use crate::protocol::{
    GetSkillParams, GetSkillResult, JsonObject, ListSkillsResult, PaginatedParams,
    ResourceContents, SKILL_MD, Skill, SkillError, SkillErrorKind as Kind, SkillResource,
    SkillResources, parse_skill_frontmatter, skill_digest,
};

/// `skills/list`.
const SKILLS_LIST: &str = "skills/list";
/// `skills/get`.
const SKILLS_GET: &str = "skills/get";

/// The call that fetched a skill's file failed.
fn call_failed(e: Error) -> SkillError {
    SkillError::with_source(Kind::Call, e)
}

/// `uri` is not a file of the skill's entry.
fn not_listed(uri: impl Into<String>) -> SkillError {
    Kind::NotListed { uri: uri.into() }.into()
}

impl Client {
    /// One page of `skills/list`: entries only; no file of any skill is read.
    pub async fn list_skills(&self, cursor: Option<String>) -> Result<ListSkillsResult, Error> {
        let params = PaginatedParams { cursor, meta: None };
        self.call(SKILLS_LIST, to_object(&params)?, &CallOptions::default())
            .await
    }

    /// Every skill entry, following `nextCursor` to the end.
    pub async fn list_all_skills(&self) -> Result<Vec<Skill>, Error> {
        let mut out = Vec::new();
        let mut cursor = None;
        loop {
            let page = self.list_skills(cursor).await?;
            out.extend(page.skills);
            match page.next_cursor {
                Some(c) => cursor = Some(c),
                None => return Ok(out),
            }
        }
    }

    /// `skills/get`: the entry of the skill whose `SKILL.md` is at `uri`.
    pub async fn get_skill(&self, uri: &str) -> Result<Skill, Error> {
        let params = GetSkillParams {
            uri: uri.to_owned(),
            meta: None,
        };
        let r: GetSkillResult = self
            .call(SKILLS_GET, to_object(&params)?, &CallOptions::default())
            .await?;
        Ok(r.skill)
    }

    /// Loads a skill: reads its `SKILL.md` (`resources/read`) and verifies it against
    /// `entry` (size, then sha256 digest, unless the entry's files are `"dynamic"`; then the
    /// YAML frontmatter, field by field). Content that fails is refused, never returned.
    pub async fn load_skill(&self, entry: &Skill) -> Result<LoadedSkill, SkillError> {
        let uri = entry.uri.as_str();
        let root = uri
            .strip_suffix(SKILL_MD)
            .and_then(|r| r.strip_suffix('/'))
            .filter(|r| !r.is_empty())
            .ok_or_else(|| not_listed(uri))?
            .to_owned();
        let bytes = self.read_verified(entry, uri).await?;
        let text = String::from_utf8(bytes).map_err(|_| {
            SkillError::from(Kind::Contents {
                uri: uri.to_owned(),
                why: "SKILL.md is not UTF-8",
            })
        })?;
        let served = parse_skill_frontmatter(&text).map_err(|e| e.at(uri))?;
        if let Some(field) = first_difference(&entry.frontmatter, &served) {
            return Err(Kind::FrontmatterMismatch {
                uri: uri.to_owned(),
                field,
            }
            .into());
        }
        Ok(LoadedSkill {
            client: self.clone(),
            entry: entry.clone(),
            root,
            skill_md: text,
        })
    }

    /// Reads one file of `entry` and checks it against the entry's record of it.
    async fn read_verified(&self, entry: &Skill, uri: &str) -> Result<Vec<u8>, SkillError> {
        let listed = match &entry.resources {
            SkillResources::Files(files) => Some(
                files
                    .iter()
                    .find(|f| f.uri == uri)
                    .ok_or_else(|| not_listed(uri))?,
            ),
            SkillResources::Dynamic => None,
        };
        let result = self.read_resource(uri).await.map_err(call_failed)?;
        let contents = result
            .contents
            .iter()
            .find(|c| c.uri() == uri)
            .or(result.contents.first())
            .ok_or_else(|| {
                SkillError::from(Kind::Contents {
                    uri: uri.to_owned(),
                    why: "resources/read returned no contents",
                })
            })?;
        let bytes = match contents {
            ResourceContents::Text(t) => t.text.clone().into_bytes(),
            ResourceContents::Blob(b) => STANDARD.decode(&b.blob).map_err(|_| {
                SkillError::from(Kind::Contents {
                    uri: uri.to_owned(),
                    why: "the blob is not Base64",
                })
            })?,
        };
        if let Some(listed) = listed {
            verify(listed, &bytes)?;
        }
        Ok(bytes)
    }
}

/// Checks bytes against their entry: the size first (a mismatch needs no hashing), then the
/// digest.
fn verify(listed: &SkillResource, bytes: &[u8]) -> Result<(), SkillError> {
    let actual = bytes.len() as u64;
    if actual != listed.size {
        return Err(Kind::SizeMismatch {
            uri: listed.uri.clone(),
            expected: listed.size,
            actual,
        }
        .into());
    }
    if !listed
        .digest
        .get(..7)
        .is_some_and(|p| p.eq_ignore_ascii_case("sha256:"))
    {
        return Err(Kind::UnsupportedDigest {
            uri: listed.uri.clone(),
            digest: listed.digest.clone(),
        }
        .into());
    }
    let digest = skill_digest(bytes);
    if !digest.eq_ignore_ascii_case(&listed.digest) {
        return Err(Kind::DigestMismatch {
            uri: listed.uri.clone(),
            expected: listed.digest.clone(),
            actual: digest,
        }
        .into());
    }
    Ok(())
}

/// The first field (by name) present in one frontmatter and not the other, or different.
fn first_difference(entry: &JsonObject, served: &JsonObject) -> Option<String> {
    let mut names: Vec<&String> = entry.keys().chain(served.keys()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .find(|k| match (entry.get(*k), served.get(*k)) {
            (Some(a), Some(b)) => !same(a, b),
            _ => true,
        })
        .cloned()
}

/// JSON equality where numbers compare by value: `1` and `1.0` are the same field to a
/// server whose JSON has one number type.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => first_difference(x, y).is_none(),
        _ => a == b,
    }
}

/// A skill whose `SKILL.md` was fetched and verified against its entry; its supporting
/// files are read (and verified) on demand.
#[derive(Debug, Clone)]
pub struct LoadedSkill {
    client: Client,
    entry: Skill,
    /// The skill's directory URI, without a trailing `/`.
    root: String,
    skill_md: String,
}

impl LoadedSkill {
    /// The entry the skill was verified against.
    pub fn entry(&self) -> &Skill {
        &self.entry
    }

    /// The verified `SKILL.md`.
    pub fn skill_md(&self) -> &str {
        &self.skill_md
    }

    /// The verified frontmatter (the entry's, which the `SKILL.md` matched).
    pub fn frontmatter(&self) -> &JsonObject {
        &self.entry.frontmatter
    }

    /// The skill's directory URI (`skill://…/<name>`).
    pub fn root_uri(&self) -> &str {
        &self.root
    }

    /// The skill's files as its entry lists them (`SKILL.md` included); empty for a
    /// `"dynamic"` skill.
    pub fn files(&self) -> &[SkillResource] {
        match &self.entry.resources {
            SkillResources::Files(f) => f,
            SkillResources::Dynamic => &[],
        }
    }

    /// Reads a supporting file, named by its path relative to the skill's directory
    /// (`references/FORMS.md`) or by its full URI, verified against the entry (size and
    /// digest). A file the entry does not list is refused; a `"dynamic"` skill's files are
    /// read unverified, but only inside the skill's directory.
    pub async fn read_file(&self, path: &str) -> Result<Vec<u8>, SkillError> {
        let uri = if path.contains("://") {
            path.to_owned()
        } else {
            format!("{}/{}", self.root, path.trim_start_matches('/'))
        };
        let inside = uri
            .strip_prefix(self.root.as_str())
            .is_some_and(|rest| rest.starts_with('/') && !rest.split('/').any(|s| s == ".."));
        if !inside {
            return Err(not_listed(uri));
        }
        self.client.read_verified(&self.entry, &uri).await
    }

    /// [`read_file`](Self::read_file) for a text file.
    pub async fn read_text(&self, path: &str) -> Result<String, SkillError> {
        let bytes = self.read_file(path).await?;
        String::from_utf8(bytes).map_err(|e| {
            SkillError::from(Kind::Contents {
                uri: path.to_owned(),
                why: if e.utf8_error().valid_up_to() == 0 {
                    "the file is not UTF-8 text"
                } else {
                    "the file is not valid UTF-8 throughout"
                },
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> JsonObject {
        match v {
            Value::Object(m) => m,
            _ => JsonObject::new(),
        }
    }

    #[test]
    fn frontmatter_differences_are_named() {
        let entry = obj(json!({"name": "a", "description": "d", "metadata": {"v": 1}}));
        assert_eq!(first_difference(&entry, &entry.clone()), None);
        let changed = obj(json!({"name": "a", "description": "x", "metadata": {"v": 1}}));
        assert_eq!(
            first_difference(&entry, &changed).as_deref(),
            Some("description")
        );
        let extra = obj(json!({"name": "a", "description": "d", "metadata": {"v": 1}, "z": 0}));
        assert_eq!(first_difference(&entry, &extra).as_deref(), Some("z"));
        let missing = obj(json!({"name": "a", "metadata": {"v": 1}}));
        assert_eq!(
            first_difference(&entry, &missing).as_deref(),
            Some("description")
        );
        let float = obj(json!({"name": "a", "description": "d", "metadata": {"v": 1.0}}));
        assert_eq!(first_difference(&entry, &float), None);
    }

    #[test]
    fn size_is_checked_before_the_digest() {
        let listed = SkillResource {
            uri: "skill://a/SKILL.md".into(),
            digest: skill_digest(b"abc"),
            size: 3,
        };
        assert!(verify(&listed, b"abc").is_ok());
        let size = verify(&listed, b"abcd").map_err(|e| e.to_string());
        assert_eq!(
            size,
            Err("skill://a/SKILL.md: 4 bytes, the skill entry says 3".into())
        );
        let digest = verify(&listed, b"abd").map_err(|e| e.to_string());
        assert!(digest.is_err_and(|e| e.contains(": digest sha256:")));
        let upper = SkillResource {
            digest: listed.digest.to_ascii_uppercase(),
            ..listed.clone()
        };
        assert!(verify(&upper, b"abc").is_ok());
        let md5 = SkillResource {
            digest: "md5:900150983cd24fb0d6963f7d28e17f72".into(),
            ..listed
        };
        let md5 = verify(&md5, b"abc").map_err(|e| e.to_string());
        assert!(md5.is_err_and(|e| e.contains("unsupported digest")));
    }
}
