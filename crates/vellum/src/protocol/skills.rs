//! Skills (extension `io.modelcontextprotocol/skills`, SEP-2640, on 2026-07-28): Agent Skills
//! served as resources, enumerated with `skills/list`, fetched one by one with `skills/get`,
//! and browsed with `resources/directory/read`.

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};

use super::common::{JsonObject, Meta};
use super::resources::Resource;

/// The extension id of skills.
pub const SKILLS_EXTENSION: &str = "io.modelcontextprotocol/skills";

/// The MIME type of a directory resource (`resources/directory/read`).
pub const DIRECTORY_MIME_TYPE: &str = "inode/directory";

/// The file every skill has at its root.
pub const SKILL_MD: &str = "SKILL.md";

/// One file of a skill, with the digest and size of its bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillResource {
    /// The file's resource URI.
    pub uri: String,
    /// `sha256:{64 lowercase hex}` of the file's raw bytes.
    pub digest: String,
    /// The number of bytes the digest covers.
    pub size: u64,
}

/// A skill's files: every one of them, or `"dynamic"` when the content is generated and has
/// no stable digests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SkillResources {
    /// The complete list (`SKILL.md` included).
    Files(Vec<SkillResource>),
    /// Generated content: nothing to verify.
    Dynamic,
}

impl Serialize for SkillResources {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            SkillResources::Files(files) => files.serialize(s),
            SkillResources::Dynamic => s.serialize_str("dynamic"),
        }
    }
}

impl<'de> Deserialize<'de> for SkillResources {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Wire {
            Files(Vec<SkillResource>),
            Word(String),
        }
        match Wire::deserialize(d)? {
            Wire::Files(f) => Ok(SkillResources::Files(f)),
            Wire::Word(w) if w == "dynamic" => Ok(SkillResources::Dynamic),
            Wire::Word(w) => Err(de::Error::custom(format!(
                "resources must be an array or \"dynamic\", not {w:?}"
            ))),
        }
    }
}

/// The entry of one skill, as `skills/list` and `skills/get` carry it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Skill {
    /// The URI of the skill's `SKILL.md`.
    pub uri: String,
    /// The `SKILL.md` frontmatter as JSON (`name` and `description` at least).
    pub frontmatter: JsonObject,
    /// The skill's files.
    pub resources: SkillResources,
}

/// `skills/list` result (paginated; cacheable).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListSkillsResult {
    /// The skills of this page.
    pub skills: Vec<Skill>,
    /// The cursor of the next page, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// `skills/get` parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GetSkillParams {
    /// The URI of the skill's `SKILL.md`.
    pub uri: String,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// `skills/get` result (cacheable).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GetSkillResult {
    /// The skill.
    pub skill: Skill,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// `resources/directory/read` parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReadDirectoryParams {
    /// The directory's URI (no trailing slash).
    pub uri: String,
    /// The page to fetch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// `resources/directory/read` result: the directory's direct children (paginated).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadDirectoryResult {
    /// The children: files with their resource metadata, sub-directories with the MIME type
    /// [`DIRECTORY_MIME_TYPE`].
    pub resources: Vec<Resource>,
    /// The cursor of the next page, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resources_are_a_list_or_dynamic() {
        let files = SkillResources::Files(vec![SkillResource {
            uri: "skill://a/SKILL.md".into(),
            digest: format!("sha256:{}", "0".repeat(64)),
            size: 3,
        }]);
        let v = serde_json::to_value(&files).unwrap();
        assert_eq!(v[0]["size"], 3);
        assert_eq!(serde_json::from_value::<SkillResources>(v).unwrap(), files);
        assert_eq!(
            serde_json::to_value(SkillResources::Dynamic).unwrap(),
            json!("dynamic")
        );
        assert_eq!(
            serde_json::from_value::<SkillResources>(json!("dynamic")).unwrap(),
            SkillResources::Dynamic
        );
        assert!(serde_json::from_value::<SkillResources>(json!("static")).is_err());
        assert!(serde_json::from_value::<SkillResources>(json!(null)).is_err());
    }
}
