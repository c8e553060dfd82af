//! [`SkillError`]: why an Agent Skill (SEP-2640) could not be built, loaded or verified. One
//! type for both sides: a server building `SkillFiles` (frontmatter, names, paths, limits,
//! files on disk) and a client loading a skill (the call, a file the entry does not list,
//! contents that differ from the entry). It sits here, at the bottom of the skill code, so
//! that `parse_skill_frontmatter`, the server's `SkillFiles` and the client's `load_skill`
//! all return it.

use std::fmt;
use std::sync::Arc;

use crate::config_error::{ConfigError, ErrorParts, Kind as ConfigKind};

/// Why a skill cannot be built (server side), or was refused while loading (client side).
///
/// Ask what happened with the `is_*` predicates; `Display` says what is wrong in one line,
/// [`source`](std::error::Error::source) why (the OS error, the call's error).
#[derive(Clone)]
pub struct SkillError {
    inner: Box<ErrorParts<Kind>>,
}

/// What is wrong: crate-private, so kinds can be added and reworded without a break. The
/// client's kinds are never built without the feature `client`.
#[derive(Debug, Clone)]
#[cfg_attr(not(feature = "client"), allow(dead_code))]
pub(crate) enum Kind {
    /// `SKILL.md` has no `---` delimited YAML mapping; `uri` when it was fetched.
    Frontmatter { uri: Option<String>, reason: String },
    /// The frontmatter's `name` or `description` is missing or breaks the naming rules.
    Name { reason: String },
    /// A path that is not a clean relative `/` path.
    Path { path: String, why: &'static str },
    /// More files or bytes than SEP-2640 lets every host load.
    TooLarge { skill: String, reason: String },
    /// A file of a skill directory could not be read (the OS error is the source).
    Io { path: String },
    /// The request failed (the crate's `Error` is the source, and says it all).
    Call,
    /// A file the skill's entry does not list (or outside the skill's directory).
    NotListed { uri: String },
    /// `resources/read` without contents for the file, a blob that is not Base64, text that
    /// is not UTF-8.
    Contents { uri: String, why: &'static str },
    /// The file's byte length differs from the entry's `size`.
    SizeMismatch {
        uri: String,
        expected: u64,
        actual: u64,
    },
    /// The file's sha256 digest differs from the entry's.
    DigestMismatch {
        uri: String,
        expected: String,
        actual: String,
    },
    /// The entry's digest is not `sha256:…`.
    UnsupportedDigest { uri: String, digest: String },
    /// The fetched `SKILL.md`'s frontmatter differs from the entry's at `field`.
    FrontmatterMismatch { uri: String, field: String },
}

impl From<Kind> for SkillError {
    fn from(kind: Kind) -> Self {
        SkillError {
            inner: ErrorParts::boxed(kind, None),
        }
    }
}

impl SkillError {
    /// A skill error of `kind` caused by `source`.
    pub(crate) fn with_source(
        kind: Kind,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        SkillError {
            inner: ErrorParts::boxed(kind, Some(Arc::new(source))),
        }
    }

    /// This frontmatter error, about the `SKILL.md` fetched from `uri`.
    #[cfg(feature = "client")]
    pub(crate) fn at(mut self, uri: &str) -> Self {
        if let Kind::Frontmatter { uri: u, .. } = &mut self.inner.kind {
            *u = Some(uri.to_owned());
        }
        self
    }

    /// The call that fetched the skill failed (transport, or the server's JSON-RPC error):
    /// the crate's `Error` is the [`source`](std::error::Error::source).
    pub fn is_call(&self) -> bool {
        matches!(self.inner.kind, Kind::Call)
    }

    /// `SKILL.md` has no valid YAML frontmatter, or its `name` or `description` is missing
    /// or breaks the naming rules.
    pub fn is_frontmatter(&self) -> bool {
        matches!(
            self.inner.kind,
            Kind::Frontmatter { .. } | Kind::Name { .. }
        )
    }

    /// A file of a skill directory could not be read (the OS error is the source).
    pub fn is_io(&self) -> bool {
        matches!(self.inner.kind, Kind::Io { .. })
    }

    /// The skill has more files or bytes than SEP-2640 lets every host load.
    pub fn is_too_large(&self) -> bool {
        matches!(self.inner.kind, Kind::TooLarge { .. })
    }

    /// The file is not one the skill's entry lists (or lies outside the skill's directory),
    /// so there is nothing to verify it against: it was not fetched.
    pub fn is_not_listed(&self) -> bool {
        matches!(self.inner.kind, Kind::NotListed { .. })
    }

    /// The served file differs from the skill's entry (its size, its digest, or the
    /// frontmatter of its `SKILL.md`): tampered, or the entry is stale. It is refused.
    pub fn is_mismatch(&self) -> bool {
        matches!(
            self.inner.kind,
            Kind::SizeMismatch { .. }
                | Kind::DigestMismatch { .. }
                | Kind::FrontmatterMismatch { .. }
        )
    }

    /// The URI of the file this error is about, when it is about a fetched file.
    pub fn uri(&self) -> Option<&str> {
        match &self.inner.kind {
            Kind::Frontmatter { uri, .. } => uri.as_deref(),
            Kind::NotListed { uri }
            | Kind::Contents { uri, .. }
            | Kind::SizeMismatch { uri, .. }
            | Kind::DigestMismatch { uri, .. }
            | Kind::UnsupportedDigest { uri, .. }
            | Kind::FrontmatterMismatch { uri, .. } => Some(uri),
            _ => None,
        }
    }

    /// The first frontmatter field (in name order) that differs from the entry's, is
    /// missing or is extra, for a frontmatter [mismatch](Self::is_mismatch).
    pub fn field(&self) -> Option<&str> {
        match &self.inner.kind {
            Kind::FrontmatterMismatch { field, .. } => Some(field),
            _ => None,
        }
    }
}

impl fmt::Display for SkillError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner.kind {
            Kind::Frontmatter { uri, reason } => {
                if let Some(uri) = uri {
                    write!(f, "{uri}: ")?;
                }
                write!(f, "SKILL.md has no valid YAML frontmatter: {reason}")
            }
            Kind::Name { reason } => write!(f, "SKILL.md frontmatter: {reason}"),
            Kind::Path { path, why } => write!(f, "invalid skill path {path:?}: {why}"),
            Kind::TooLarge { skill, reason } => write!(f, "skill {skill} is too large: {reason}"),
            Kind::Io { path } => match &self.inner.source {
                Some(s) => write!(f, "reading {path}: {s}"),
                None => write!(f, "reading {path}"),
            },
            // The call's error says it all (it was transparent before).
            Kind::Call => match &self.inner.source {
                Some(s) => write!(f, "{s}"),
                None => f.write_str("the call failed"),
            },
            Kind::NotListed { uri } => write!(f, "{uri} is not a file of this skill's entry"),
            Kind::Contents { uri, why } => write!(f, "{uri}: {why}"),
            Kind::SizeMismatch {
                uri,
                expected,
                actual,
            } => write!(f, "{uri}: {actual} bytes, the skill entry says {expected}"),
            Kind::DigestMismatch {
                uri,
                expected,
                actual,
            } => write!(f, "{uri}: digest {actual}, the skill entry says {expected}"),
            Kind::UnsupportedDigest { uri, digest } => {
                write!(f, "{uri}: unsupported digest {digest:?}")
            }
            Kind::FrontmatterMismatch { uri, field } => write!(
                f,
                "{uri}: frontmatter field {field:?} differs from the skill entry"
            ),
        }
    }
}

impl fmt::Debug for SkillError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.debug("SkillError", f)
    }
}

impl std::error::Error for SkillError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner.source()
    }
}

/// A skill that cannot be built cannot be registered: `?` in a registration function.
impl From<SkillError> for ConfigError {
    fn from(e: SkillError) -> Self {
        ConfigError::with_source(ConfigKind::Skill, e)
    }
}
