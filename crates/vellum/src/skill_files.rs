//! [`SkillFiles`]: one Agent Skill as a server serves it (SEP-2640): its `SKILL.md`, whose
//! YAML frontmatter names it, and its supporting files, each with the digest and size the
//! skill's entry publishes. Built from memory or read from a directory on disk, checked
//! against the extension's rules when it is built.
//!
//! Not here: serving them (`skills/list`, `skills/get`, `resources/read` of the files and
//! `resources/directory/read`: the server core's `registry/skills.rs` and
//! `methods/skills.rs`).

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use crate::protocol::{
    JsonObject, ResourceContents, SKILL_MD, Skill, SkillError, SkillErrorKind as Kind,
    SkillResource, SkillResources, parse_skill_frontmatter, skill_digest,
};

/// The most files a skill may have (`SKILL.md` included), per SEP-2640's limits.
pub const MAX_SKILL_FILES: usize = 512;
/// The most bytes a skill's files may add up to (16 MiB), per SEP-2640's limits.
pub const MAX_SKILL_BYTES: u64 = 16 * 1024 * 1024;

/// One file of a skill.
#[derive(Debug, Clone)]
pub(crate) struct SkillFile {
    pub(crate) bytes: Vec<u8>,
    pub(crate) mime_type: &'static str,
    pub(crate) digest: String,
}

impl SkillFile {
    fn new(bytes: Vec<u8>, mime_type: &'static str) -> Self {
        SkillFile {
            digest: skill_digest(&bytes),
            bytes,
            mime_type,
        }
    }

    /// The file as `resources/read` returns it: text when it is UTF-8 of a textual type,
    /// else Base64.
    pub(crate) fn contents(&self, uri: &str) -> ResourceContents {
        match std::str::from_utf8(&self.bytes) {
            Ok(text) if is_textual(self.mime_type) => {
                ResourceContents::text(uri, Some(self.mime_type), text)
            }
            _ => ResourceContents::blob(uri, Some(self.mime_type), STANDARD.encode(&self.bytes)),
        }
    }
}

/// An Agent Skill: `SKILL.md` and its supporting files, served at
/// `skill://<prefix>/<name>/…` once added with
/// [`Server::add_skill`](crate::server::Server::add_skill).
///
/// ```
/// use vellum::server::SkillFiles;
///
/// let skill = SkillFiles::new(
///     "acme/billing",
///     "---\nname: refunds\ndescription: Process refund requests per policy\n---\n\n# Refunds\n\nSee `examples/email.md`.\n",
/// )?
/// .with_file("examples/email.md", "Dear customer, ...")?;
/// assert_eq!(skill.uri(), "skill://acme/billing/refunds/SKILL.md");
/// # Ok::<(), vellum::protocol::SkillError>(())
/// ```
#[derive(Debug, Clone)]
pub struct SkillFiles {
    /// `<prefix>/<name>`.
    path: String,
    frontmatter: JsonObject,
    /// By path relative to the skill root; `SKILL.md` included.
    pub(crate) files: BTreeMap<String, SkillFile>,
}

impl SkillFiles {
    /// A skill from the text of its `SKILL.md`: the frontmatter's `name` (which must follow
    /// the Agent Skills naming rules: 1 to 64 of `a-z`, `0-9` and `-`, no leading, trailing or
    /// doubled `-`) and `description` are required; every other field is published as
    /// written. `prefix` places the skill in the server's namespace (`""` for none,
    /// `"acme/billing"` for `skill://acme/billing/<name>`).
    pub fn new(prefix: &str, skill_md: impl Into<String>) -> Result<Self, SkillError> {
        let skill_md = skill_md.into();
        let frontmatter = parse_frontmatter(&skill_md)?;
        let name = check_frontmatter(&frontmatter)?;
        let prefix = prefix.trim_matches('/');
        if !prefix.is_empty() {
            check_relative_path(prefix)?;
        }
        let path = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        let mut files = BTreeMap::new();
        files.insert(
            SKILL_MD.to_owned(),
            SkillFile::new(skill_md.into_bytes(), "text/markdown"),
        );
        let skill = SkillFiles {
            path,
            frontmatter,
            files,
        };
        skill.check_limits()?;
        Ok(skill)
    }

    /// Adds a supporting file at `path` (relative to the skill's root, `/`-separated, e.g.
    /// `references/FORMS.md`); its MIME type follows its extension. A file already at that
    /// path is replaced; the root `SKILL.md` cannot be.
    pub fn with_file(
        mut self,
        path: &str,
        content: impl Into<Vec<u8>>,
    ) -> Result<Self, SkillError> {
        check_relative_path(path)?;
        if path == SKILL_MD {
            return Err(Kind::Path {
                path: path.to_owned(),
                why: "the root SKILL.md is the one the skill was made from",
            }
            .into());
        }
        self.files.insert(
            path.to_owned(),
            SkillFile::new(content.into(), mime_type_of(path)),
        );
        self.check_limits()?;
        Ok(self)
    }

    /// Reads a skill directory: `dir/SKILL.md` and every file below `dir` (sub-directories
    /// included; symbolic links and hidden entries, whose names start with `.`, are left
    /// out). The directory's own name is not used: the frontmatter's `name` is.
    pub fn from_dir(prefix: &str, dir: impl AsRef<Path>) -> Result<Self, SkillError> {
        let dir = dir.as_ref();
        let read = |p: &Path| std::fs::read(p).map_err(|e| io_error(p, e));
        let md = read(&dir.join(SKILL_MD))?;
        let md = String::from_utf8(md).map_err(|_| {
            SkillError::from(Kind::Frontmatter {
                uri: None,
                reason: "SKILL.md is not UTF-8".into(),
            })
        })?;
        let mut skill = SkillFiles::new(prefix, md)?;
        let mut pending = vec![(dir.to_path_buf(), String::new())];
        while let Some((at, rel)) = pending.pop() {
            let entries = std::fs::read_dir(&at).map_err(|e| io_error(&at, e))?;
            for entry in entries {
                let entry = entry.map_err(|e| io_error(&at, e))?;
                let name = entry.file_name().to_string_lossy().into_owned();
                let kind = entry.file_type().map_err(|e| io_error(&entry.path(), e))?;
                if name.starts_with('.') || kind.is_symlink() {
                    continue;
                }
                let child = if rel.is_empty() {
                    name
                } else {
                    format!("{rel}/{name}")
                };
                if kind.is_dir() {
                    pending.push((entry.path(), child));
                } else if child != SKILL_MD {
                    skill = skill.with_file(&child, read(&entry.path())?)?;
                }
            }
        }
        Ok(skill)
    }

    /// The skill's name (its frontmatter's `name`, the last segment of its path).
    pub fn name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }

    /// The frontmatter's `description`.
    pub fn description(&self) -> &str {
        self.frontmatter
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// The `SKILL.md` frontmatter, as JSON.
    pub fn frontmatter(&self) -> &JsonObject {
        &self.frontmatter
    }

    /// The skill's root directory URI, `skill://<prefix>/<name>`.
    pub fn root_uri(&self) -> String {
        format!("skill://{}", self.path)
    }

    /// The URI of its `SKILL.md`, which names the skill in `skills/get`.
    pub fn uri(&self) -> String {
        self.file_uri(SKILL_MD)
    }

    /// The URI of the file at `path` (relative to the skill's root).
    pub fn file_uri(&self, path: &str) -> String {
        format!("skill://{}/{path}", self.path)
    }

    /// The skill's entry, as `skills/list` and `skills/get` publish it.
    pub fn entry(&self) -> Skill {
        Skill {
            uri: self.uri(),
            frontmatter: self.frontmatter.clone(),
            resources: SkillResources::Files(
                self.files
                    .iter()
                    .map(|(path, f)| SkillResource {
                        uri: self.file_uri(path),
                        digest: f.digest.clone(),
                        size: f.bytes.len() as u64,
                    })
                    .collect(),
            ),
        }
    }

    /// The file at a path relative to the skill's root.
    pub(crate) fn file(&self, path: &str) -> Option<&SkillFile> {
        self.files.get(path)
    }

    /// `skill://<path>` relative: the part of `uri` inside this skill (`""` for the root
    /// directory), if it is one.
    pub(crate) fn relative<'a>(&self, uri: &'a str) -> Option<&'a str> {
        let rest = uri
            .strip_prefix("skill://")?
            .strip_prefix(self.path.as_str())?;
        match rest {
            "" => Some(""),
            r => r.strip_prefix('/').filter(|r| !r.is_empty()),
        }
    }

    /// The direct children of the directory at `dir` (relative; `""` for the root):
    /// `(name, is_directory)`, sorted by name; `None` when `dir` is not a directory of this
    /// skill.
    pub(crate) fn children(&self, dir: &str) -> Option<Vec<(String, bool)>> {
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        let mut out: BTreeMap<String, bool> = BTreeMap::new();
        for path in self.files.keys() {
            let Some(rest) = path.strip_prefix(prefix.as_str()) else {
                continue;
            };
            match rest.split_once('/') {
                Some((sub, _)) => out.insert(sub.to_owned(), true),
                None => out.insert(rest.to_owned(), false),
            };
        }
        (!out.is_empty()).then(|| out.into_iter().collect())
    }

    fn check_limits(&self) -> Result<(), SkillError> {
        let total: u64 = self.files.values().map(|f| f.bytes.len() as u64).sum();
        if self.files.len() > MAX_SKILL_FILES {
            return Err(Kind::TooLarge {
                skill: self.uri(),
                reason: format!("{} files (at most {MAX_SKILL_FILES})", self.files.len()),
            }
            .into());
        }
        if total > MAX_SKILL_BYTES {
            return Err(Kind::TooLarge {
                skill: self.uri(),
                reason: format!("{total} bytes (at most {MAX_SKILL_BYTES})"),
            }
            .into());
        }
        Ok(())
    }
}

/// The YAML frontmatter of a `SKILL.md` as a JSON object (the protocol's parser, which the
/// client uses to verify what it fetches).
fn parse_frontmatter(md: &str) -> Result<JsonObject, SkillError> {
    parse_skill_frontmatter(md)
}

/// A file or directory of a skill directory could not be read.
fn io_error(path: &Path, e: std::io::Error) -> SkillError {
    SkillError::with_source(
        Kind::Io {
            path: path.display().to_string(),
        },
        e,
    )
}

/// The frontmatter's `name` or `description` breaks the rules, for `reason`.
fn bad_name(reason: impl Into<String>) -> SkillError {
    Kind::Name {
        reason: reason.into(),
    }
    .into()
}

/// Checks `name` and `description`; returns the name.
fn check_frontmatter(fm: &JsonObject) -> Result<String, SkillError> {
    let name = match fm.get("name") {
        Some(Value::String(n)) => n.clone(),
        _ => return Err(bad_name("`name` must be a string")),
    };
    if !is_valid_skill_name(&name) {
        return Err(bad_name(format!(
            "name {name:?} must be 1 to 64 of a-z, 0-9 and -, without leading, trailing or doubled -"
        )));
    }
    match fm.get("description") {
        Some(Value::String(d)) if !d.trim().is_empty() => Ok(name),
        _ => Err(bad_name("`description` must be a non-empty string")),
    }
}

/// The Agent Skills naming rules.
pub(crate) fn is_valid_skill_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// A relative `/` path of plain segments (unreserved URI characters, no `.` or `..`).
fn check_relative_path(path: &str) -> Result<(), SkillError> {
    let bad = |why| {
        Err(Kind::Path {
            path: path.to_owned(),
            why,
        }
        .into())
    };
    if path.is_empty() {
        return bad("it is empty");
    }
    for segment in path.split('/') {
        if segment.is_empty() {
            return bad("it has an empty segment (a leading, trailing or doubled /)");
        }
        if segment == "." || segment == ".." {
            return bad("it has a . or .. segment");
        }
        if !segment
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
        {
            return bad("a segment has a character other than A-Z a-z 0-9 - . _ ~");
        }
    }
    Ok(())
}

/// The MIME type of a file, by its extension.
fn mime_type_of(path: &str) -> &'static str {
    let ext = path
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "md" | "markdown" => "text/markdown",
        "txt" => "text/plain",
        "py" => "text/x-python",
        "sh" => "text/x-shellscript",
        "js" | "mjs" => "text/javascript",
        "ts" => "text/x-typescript",
        "rs" => "text/x-rust",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "csv" => "text/csv",
        "xml" => "application/xml",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "toml" => "application/toml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "svg" => "image/svg+xml",
        "pdf" => "application/pdf",
        _ => "application/octet-stream",
    }
}

fn is_textual(mime: &str) -> bool {
    mime.starts_with("text/")
        || matches!(
            mime,
            "application/json"
                | "application/xml"
                | "application/yaml"
                | "application/toml"
                | "image/svg+xml"
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const MD: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\nlicense: Apache-2.0\nmetadata:\n  version: \"2.1\"\n  tags: [pdf, forms]\n---\n\n# PDF processing\n";

    #[test]
    fn builds_an_entry_with_digests() {
        let s = SkillFiles::new("", MD)
            .unwrap()
            .with_file("references/FORMS.md", "forms")
            .unwrap()
            .with_file("scripts/extract.py", "print(1)")
            .unwrap();
        assert_eq!(s.name(), "pdf-processing");
        assert_eq!(s.uri(), "skill://pdf-processing/SKILL.md");
        assert_eq!(s.root_uri(), "skill://pdf-processing");
        let e = serde_json::to_value(s.entry()).unwrap();
        assert_eq!(
            e["frontmatter"],
            json!({"name": "pdf-processing",
                "description": "Extract, fill, and assemble PDF documents",
                "license": "Apache-2.0",
                "metadata": {"version": "2.1", "tags": ["pdf", "forms"]}})
        );
        let files = e["resources"].as_array().unwrap();
        assert_eq!(files.len(), 3);
        let md = files
            .iter()
            .find(|f| f["uri"] == "skill://pdf-processing/SKILL.md")
            .unwrap();
        assert_eq!(md["size"], MD.len());
        // A well-known SHA-256 vector.
        let abc = SkillFiles::new("", MD)
            .unwrap()
            .with_file("abc.txt", "abc")
            .unwrap()
            .entry();
        let SkillResources::Files(abc) = abc.resources else {
            panic!("static files")
        };
        let abc = abc.iter().find(|f| f.uri.ends_with("abc.txt")).unwrap();
        assert_eq!(abc.size, 3);
        assert_eq!(
            abc.digest,
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        // Directory tree.
        assert_eq!(
            s.children(""),
            Some(vec![
                ("SKILL.md".into(), false),
                ("references".into(), true),
                ("scripts".into(), true)
            ])
        );
        assert_eq!(
            s.children("references"),
            Some(vec![("FORMS.md".into(), false)])
        );
        assert_eq!(s.children("nowhere"), None);
        assert_eq!(s.relative("skill://pdf-processing"), Some(""));
        assert_eq!(
            s.relative("skill://pdf-processing/references/FORMS.md"),
            Some("references/FORMS.md")
        );
        assert_eq!(s.relative("skill://pdf-processing-2/SKILL.md"), None);
        assert_eq!(s.relative("skill://pdf-processing/"), None);
        // Text stays text, bytes become Base64.
        let text = serde_json::to_value(s.file("SKILL.md").unwrap().contents("u")).unwrap();
        assert_eq!(text["mimeType"], "text/markdown");
        assert_eq!(text["text"], MD);
        let bin = SkillFile::new(vec![0xff, 0], "image/png").contents("u");
        assert_eq!(serde_json::to_value(bin).unwrap()["blob"], "/wA=");
    }

    #[test]
    fn prefixes_nest_the_skill() {
        let md = "---\nname: refunds\ndescription: Refunds\n---\n";
        let s = SkillFiles::new("/acme/billing/", md).unwrap();
        assert_eq!(s.uri(), "skill://acme/billing/refunds/SKILL.md");
        assert_eq!(s.name(), "refunds");
        assert_eq!(s.description(), "Refunds");
        // A BOM and CRLF line ends are fine.
        let crlf = "\u{feff}---\r\nname: refunds\r\ndescription: Refunds\r\n---\r\nbody";
        assert_eq!(SkillFiles::new("", crlf).unwrap().name(), "refunds");
    }

    #[test]
    fn bad_skills_are_refused() {
        for md in [
            "no frontmatter",
            "---\nname: a\ndescription: b\n",
            "---\n- a list\n---\n",
            "---\nname: [oops\n---\n",
            "---\ndescription: no name\n---\n",
            "---\nname: Upper\ndescription: d\n---\n",
            "---\nname: a--b\ndescription: d\n---\n",
            "---\nname: -a\ndescription: d\n---\n",
            "---\nname: a\n---\n",
            "---\nname: a\ndescription: \"  \"\n---\n",
        ] {
            assert!(SkillFiles::new("", md).is_err(), "{md:?}");
        }
        let ok = SkillFiles::new("", "---\nname: a\ndescription: d\n---\n").unwrap();
        for path in [
            "", "/abs", "a//b", "../up", "a/./b", "sp ace", "SKILL.md", "a/",
        ] {
            assert!(ok.clone().with_file(path, "x").is_err(), "{path:?}");
        }
        assert!(SkillFiles::new("a b", "---\nname: a\ndescription: d\n---\n").is_err());
        // A nested SKILL.md is an ordinary supporting file.
        assert!(ok.clone().with_file("nested/SKILL.md", "x").is_ok());
        let too_big = ok
            .clone()
            .with_file("big.bin", vec![0u8; MAX_SKILL_BYTES as usize]);
        assert!(too_big.is_err_and(|e| e.is_too_large()));
        let mut many = ok;
        for i in 0..MAX_SKILL_FILES - 1 {
            many = many.with_file(&format!("f{i}.txt"), "x").unwrap();
        }
        let one_more = many.with_file("one-more.txt", "x");
        assert!(one_more.is_err_and(|e| e.is_too_large()));
    }

    #[test]
    fn reads_a_skill_directory() {
        let dir = std::env::temp_dir().join(format!("vellum-skill-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("templates/regional")).unwrap();
        std::fs::write(dir.join("SKILL.md"), MD).unwrap();
        std::fs::write(dir.join("templates/invoice.md"), "invoice").unwrap();
        std::fs::write(dir.join("templates/regional/eu.md"), "eu").unwrap();
        std::fs::write(dir.join(".hidden"), "no").unwrap();
        let s = SkillFiles::from_dir("docs", &dir).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(s.uri(), "skill://docs/pdf-processing/SKILL.md");
        let paths: Vec<&str> = s.files.keys().map(String::as_str).collect();
        assert_eq!(
            paths,
            [
                "SKILL.md",
                "templates/invoice.md",
                "templates/regional/eu.md"
            ]
        );
        assert!(SkillFiles::from_dir("", "/nonexistent/skill").is_err());
    }
}
