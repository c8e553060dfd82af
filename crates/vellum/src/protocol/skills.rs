//! Skills (extension `io.modelcontextprotocol/skills`, SEP-2640, on 2026-07-28): Agent Skills
//! served as resources, enumerated with `skills/list`, fetched one by one with `skills/get`,
//! and browsed with `resources/directory/read`.

use serde::de::{self, Deserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
#[cfg(feature = "skills")]
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::common::{JsonObject, Meta};
use super::resources::Resource;
#[cfg(feature = "skills")]
use super::skill_error::{Kind as SkillKind, SkillError};

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
    #[serde(
        rename = "_meta",
        default,
        deserialize_with = "super::common::request_meta",
        skip_serializing_if = "Option::is_none"
    )]
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
    #[serde(
        rename = "_meta",
        default,
        deserialize_with = "super::common::request_meta",
        skip_serializing_if = "Option::is_none"
    )]
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

/// The most bytes of YAML frontmatter read (a budget against pathological documents).
#[cfg(feature = "skills")]
pub const MAX_FRONTMATTER_BYTES: usize = 64 * 1024;

/// `sha256:{64 lowercase hex}` of some bytes: the digest a skill entry publishes for a file.
pub fn skill_digest(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let hash = Sha256::digest(bytes);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in hash {
        let _ = write!(out, "{b:02x}"); // writing to a String cannot fail
    }
    out
}

/// The YAML frontmatter of a `SKILL.md` (after an optional BOM: a `---` line, the YAML, a
/// `---` line), as a JSON object. Servers build a skill's entry with it; clients compare a
/// fetched `SKILL.md` against the entry they hold with it, so both read YAML the same way.
#[cfg(feature = "skills")]
pub fn parse_skill_frontmatter(md: &str) -> Result<JsonObject, SkillError> {
    let text = md.strip_prefix('\u{feff}').unwrap_or(md);
    let bad = |why: &str| {
        SkillError::from(SkillKind::Frontmatter {
            uri: None,
            reason: why.to_owned(),
        })
    };
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().ok_or_else(|| bad("SKILL.md is empty"))?;
    if first.trim_end_matches(['\r', '\n']) != "---" {
        return Err(bad("SKILL.md must begin with a --- line"));
    }
    let mut yaml = String::new();
    let mut closed = false;
    for line in lines {
        if line
            .trim_end_matches(['\r', '\n'])
            .trim_end_matches([' ', '\t'])
            == "---"
        {
            closed = true;
            break;
        }
        yaml.push_str(line);
        if yaml.len() > MAX_FRONTMATTER_BYTES {
            return Err(bad("the frontmatter is larger than 64 KiB"));
        }
    }
    if !closed {
        return Err(bad("the frontmatter has no closing --- line"));
    }
    let value: Value = serde_saphyr::from_str(&yaml).map_err(|e| bad(&e.to_string()))?;
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(bad("the frontmatter is not a mapping")),
    }
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
