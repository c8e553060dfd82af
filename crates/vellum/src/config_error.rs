//! [`ConfigError`]: what you configured cannot be built. One type for every setup step of the
//! crate (registering tools, resources, prompts and skills; request-state keys; protocol
//! version lists; Redis; TLS; the HTTP client; a stdio server's command line; OTLP export;
//! URI templates; trusted origins; the resource server's auth configuration), public as
//! `vellum::error::ConfigError`.
//!
//! It sits at the bottom of the layers and imports nothing, so every module that checks a
//! configuration returns it, `jose` and `uri_template` included. Opaque in hyper's style: a
//! private kind with the values as fields, `is_*` predicates for the questions a caller
//! branches on, the cause (an OS error, rustls's, reqwest's, a skill's) through
//! [`std::error::Error::source`]. Its `Display` is the one line the CLI prints on exit.
//!
//! Not here: what fails at run time (`Error`, `TransportError`, `StoreError`, …).

use std::borrow::Cow;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

/// The cause behind an error, shared so the error stays cheap to clone.
pub(crate) type Source = Arc<dyn std::error::Error + Send + Sync>;

/// Why something you configured cannot be built: a tool, resource, prompt or skill that
/// cannot be registered, a key or certificate file, a URL, a command line, a list of
/// versions, an auth setting.
///
/// Ask what it is about with the `is_*` predicates; `Display` says what is wrong in one line,
/// [`source`](std::error::Error::source) why (the OS error, the TLS library's, …).
#[derive(Clone)]
pub struct ConfigError {
    inner: Box<ErrorParts<Kind>>,
}

/// What an opaque error of this crate holds behind its one box (here and in `SkillError`):
/// its private kind, and the cause it reports as its `source`.
#[derive(Clone)]
pub(crate) struct ErrorParts<K> {
    pub(crate) kind: K,
    pub(crate) source: Option<Source>,
}

impl<K: fmt::Debug> ErrorParts<K> {
    /// The parts of an error of `kind`, with its cause if any.
    pub(crate) fn boxed(kind: K, source: Option<Source>) -> Box<Self> {
        Box::new(ErrorParts { kind, source })
    }

    /// The cause, as `std::error::Error::source` returns it.
    pub(crate) fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|s| s as &(dyn std::error::Error + 'static))
    }

    /// `Debug` of the error named `name`: its kind, and its cause if any.
    pub(crate) fn debug(&self, name: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct(name);
        d.field("kind", &self.kind);
        if let Some(source) = &self.source {
            d.field("source", source);
        }
        d.finish()
    }
}

/// What is wrong: crate-private, so kinds can be added and reworded without a break. The
/// kinds of a feature that is off are never built (with every feature on, a kind nobody
/// builds is still reported).
#[derive(Debug, Clone)]
#[cfg_attr(
    not(all(
        feature = "skills",
        feature = "redis",
        feature = "client",
        feature = "auth",
        feature = "tls",
        feature = "otel"
    )),
    allow(dead_code)
)]
pub(crate) enum Kind {
    /// A tool name that breaks the naming rules (1-128 of `A-Za-z0-9_.-`).
    ToolName { name: String },
    /// A tool's input schema whose root is not `type: object`.
    InputNotObject { tool: String },
    /// A tool's schema that does not compile.
    Schema {
        tool: String,
        /// `input` or `output`.
        which: &'static str,
        /// The validator's complaint.
        message: String,
    },
    /// A malformed resource URI or template.
    Resource { uri: String, reason: String },
    /// An Agent Skill that cannot be built (the skill's error is the source).
    Skill,
    /// An `x-mcp-header` annotation that breaks SEP-2243's rules; `tool` once known.
    ParamHeader {
        tool: Option<String>,
        reason: String,
    },
    /// A request-state key file that cannot be read (the OS error is the source).
    KeyFileRead { path: String },
    /// A request-state key file without a key.
    KeyFileEmpty { path: String },
    /// A protocol version this SDK does not speak; `known` lists the ones it does.
    UnknownVersion { version: String, known: String },
    /// An empty list of protocol versions.
    NoVersions,
    /// A URL that is not a Redis URL.
    RedisUrl { url: String, reason: String },
    /// Redis did not answer.
    RedisUnreachable { url: String, reason: String },
    /// A PEM file that cannot be read or holds nothing usable.
    Pem { path: PathBuf, reason: String },
    /// rustls refused the key, the chain or the configuration (its error is the source).
    Tls,
    /// A reload of a TLS configuration not built from files.
    NotReloadable,
    /// An MCP endpoint URL that does not parse or is not `http`/`https`: only its redacted
    /// form is kept (its query and credentials may be secrets).
    EndpointUrl { shown: String, reason: String },
    /// The HTTP client could not be built (reqwest's error is the source).
    HttpClient,
    /// A command line that cannot be split.
    CommandLine { line: String, reason: String },
    /// An empty command line.
    EmptyCommand,
    /// A program that cannot be started (the OS error is the source).
    Spawn { program: String },
    /// No tokio runtime for the OTLP exporter.
    NoRuntime,
    /// An OTLP endpoint that is not an `http://` or `https://` URL.
    OtlpEndpoint {
        endpoint: String,
        reason: &'static str,
    },
    /// The OTLP exporter could not be built (its error is the source).
    OtlpExporter,
    /// An invalid RFC 6570 URI template.
    Template { template: String, reason: String },
    /// An origin that is not `scheme://host[:port]`.
    Origin { origin: String },
    /// A URL that is not absolute `https://` (or `http://` on a loopback host).
    InsecureUrl { what: &'static str, url: String },
    /// A resource identifier with a query or fragment, or no host.
    ResourceId { resource: String },
    /// A scope with characters RFC 6749 does not allow.
    Scope { scope: String },
    /// A token verifier without an audience.
    NoAudience,
    /// No JWT crypto backend.
    NoCryptoProvider,
    /// A verification key that cannot be used.
    Key { reason: Cow<'static, str> },
    /// The auth layer's HTTP client could not be built (its error is the source).
    AuthHttpClient,
    /// No DPoP algorithm, or a symmetric one.
    DpopAlgorithms,
    /// No random bytes (for the DPoP nonce secret).
    Random,
}

impl From<Kind> for ConfigError {
    fn from(kind: Kind) -> Self {
        ConfigError {
            inner: ErrorParts::boxed(kind, None),
        }
    }
}

impl ConfigError {
    /// A configuration error of `kind` caused by `source`.
    pub(crate) fn with_source(
        kind: Kind,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        ConfigError {
            inner: ErrorParts::boxed(kind, Some(Arc::new(source))),
        }
    }

    /// This error with the tool it is about, when the check did not know it (an
    /// `x-mcp-header` annotation checked while registering `tool`).
    pub(crate) fn for_tool(mut self, tool: &str) -> Self {
        if let Kind::ParamHeader { tool: t, .. } = &mut self.inner.kind {
            *t = Some(tool.to_owned());
        }
        self
    }

    /// A tool, resource, prompt or skill could not be registered (its name, its schemas, its
    /// `x-mcp-header` annotations, its URI or template, the skill's files).
    pub fn is_registration(&self) -> bool {
        matches!(
            self.inner.kind,
            Kind::ToolName { .. }
                | Kind::InputNotObject { .. }
                | Kind::Schema { .. }
                | Kind::Resource { .. }
                | Kind::Skill
                | Kind::ParamHeader { .. }
        )
    }

    /// A tool's `x-mcp-header` annotations break SEP-2243's rules (a client drops such a
    /// tool; a server refuses to register it).
    pub fn is_param_header(&self) -> bool {
        matches!(self.inner.kind, Kind::ParamHeader { .. })
    }

    /// A file the configuration names (a key file, a certificate or key PEM) could not be
    /// read or holds nothing usable.
    pub fn is_file(&self) -> bool {
        matches!(
            self.inner.kind,
            Kind::KeyFileRead { .. } | Kind::KeyFileEmpty { .. } | Kind::Pem { .. }
        )
    }

    /// TLS could not be set up: a PEM file, or rustls refused the key, the chain or the
    /// configuration.
    pub fn is_tls(&self) -> bool {
        matches!(self.inner.kind, Kind::Pem { .. } | Kind::Tls)
    }

    /// [`TlsConfig::reload`](crate::transport::http::TlsConfig::reload) on a configuration not
    /// built from certificate files.
    pub fn is_not_reloadable(&self) -> bool {
        matches!(self.inner.kind, Kind::NotReloadable)
    }

    /// A URL that cannot be used: it does not parse, has the wrong scheme, or is not
    /// `https://` where it must be (plain `http://` only on a loopback host).
    pub fn is_url(&self) -> bool {
        matches!(
            self.inner.kind,
            Kind::RedisUrl { .. }
                | Kind::EndpointUrl { .. }
                | Kind::OtlpEndpoint { .. }
                | Kind::InsecureUrl { .. }
                | Kind::ResourceId { .. }
                | Kind::Origin { .. }
        )
    }

    /// A service the configuration names did not answer while being set up (Redis): worth
    /// retrying later, unlike every other kind.
    pub fn is_unreachable(&self) -> bool {
        matches!(self.inner.kind, Kind::RedisUnreachable { .. })
    }

    /// A process could not be started from the command line given (it did not split, was
    /// empty, or the program could not be spawned).
    pub fn is_command(&self) -> bool {
        matches!(
            self.inner.kind,
            Kind::CommandLine { .. } | Kind::EmptyCommand | Kind::Spawn { .. }
        )
    }

    /// A list of protocol versions names an unknown version or none.
    pub fn is_protocol_versions(&self) -> bool {
        matches!(
            self.inner.kind,
            Kind::UnknownVersion { .. } | Kind::NoVersions
        )
    }

    /// The resource server's auth configuration cannot be used (a URL, the resource, a scope,
    /// an audience, a key, DPoP algorithms).
    pub fn is_auth(&self) -> bool {
        matches!(
            self.inner.kind,
            Kind::InsecureUrl { .. }
                | Kind::ResourceId { .. }
                | Kind::Scope { .. }
                | Kind::NoAudience
                | Kind::NoCryptoProvider
                | Kind::Key { .. }
                | Kind::AuthHttpClient
                | Kind::DpopAlgorithms
                | Kind::Random
        )
    }

    /// The name of the tool this error is about, when it is about one.
    pub fn tool(&self) -> Option<&str> {
        match &self.inner.kind {
            Kind::ToolName { name } => Some(name),
            Kind::InputNotObject { tool } | Kind::Schema { tool, .. } => Some(tool),
            Kind::ParamHeader { tool, .. } => tool.as_deref(),
            _ => None,
        }
    }

    /// The file this error is about, when it is about one.
    pub fn path(&self) -> Option<&std::path::Path> {
        match &self.inner.kind {
            Kind::KeyFileRead { path } | Kind::KeyFileEmpty { path } => {
                Some(std::path::Path::new(path))
            }
            Kind::Pem { path, .. } => Some(path),
            _ => None,
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let source = self.inner.source.as_deref();
        match &self.inner.kind {
            Kind::ToolName { name } => write!(
                f,
                "invalid tool name {name:?}: use 1 to 128 of A-Z a-z 0-9 _ - ."
            ),
            Kind::InputNotObject { tool } => write!(
                f,
                "the input schema of tool {tool:?} must have `type: object` at its root"
            ),
            Kind::Schema {
                tool,
                which,
                message,
            } => write!(
                f,
                "the {which} schema of tool {tool:?} is invalid: {message}"
            ),
            Kind::Resource { uri, reason } => write!(f, "invalid resource {uri:?}: {reason}"),
            // The skill's own error says it all (it was transparent before).
            Kind::Skill => match source {
                Some(s) => write!(f, "{s}"),
                None => f.write_str("invalid skill"),
            },
            Kind::ParamHeader { tool, reason } => {
                if let Some(tool) = tool {
                    write!(f, "tool {tool:?}: ")?;
                }
                write!(f, "invalid x-mcp-header annotation: {reason}")
            }
            Kind::KeyFileRead { path } => {
                write!(f, "cannot read the request-state key file {path}")?;
                with_source(f, source)
            }
            Kind::KeyFileEmpty { path } => write!(
                f,
                "the request-state key file {path} has no key (one secret per line)"
            ),
            Kind::UnknownVersion { version, known } => {
                write!(f, "unknown protocol version {version:?} (known: {known})")
            }
            Kind::NoVersions => f.write_str("the list of protocol versions is empty"),
            Kind::RedisUrl { url, reason } => write!(f, "invalid Redis URL {url:?}: {reason}"),
            Kind::RedisUnreachable { url, reason } => {
                write!(f, "cannot reach Redis at {url}: {reason}")
            }
            Kind::Pem { path, reason } => write!(f, "{}: {reason}", path.display()),
            Kind::Tls => {
                f.write_str("TLS")?;
                with_source(f, source)
            }
            Kind::NotReloadable => f.write_str(
                "this TLS configuration was not built from certificate files, so it cannot reload",
            ),
            Kind::EndpointUrl { shown, reason } => {
                write!(f, "invalid MCP endpoint URL {shown:?}: {reason}")
            }
            Kind::HttpClient => f.write_str("cannot build the HTTP client"),
            Kind::CommandLine { line, reason } => {
                write!(f, "cannot parse the command line {line:?}: {reason}")
            }
            Kind::EmptyCommand => f.write_str("the command line is empty"),
            Kind::Spawn { program } => write!(f, "cannot start {program:?}"),
            Kind::NoRuntime => {
                f.write_str("OpenTelemetry export needs a tokio runtime: set it up from within one")
            }
            Kind::OtlpEndpoint { endpoint, reason } => {
                write!(f, "OTLP endpoint {endpoint:?}: {reason}")
            }
            Kind::OtlpExporter => {
                f.write_str("OTLP exporter")?;
                with_source(f, source)
            }
            Kind::Template { template, reason } => {
                write!(f, "invalid URI template {template:?}: {reason}")
            }
            Kind::Origin { origin } => write!(
                f,
                "invalid origin {origin:?}: expected scheme://host[:port]"
            ),
            Kind::InsecureUrl { what, url } => write!(
                f,
                "{what} {url:?}: expected an absolute https:// URL (http:// only for a loopback host)"
            ),
            Kind::ResourceId { resource } => write!(
                f,
                "resource {resource:?}: expected scheme://host[:port][/path], without query or fragment"
            ),
            Kind::Scope { scope } => write!(
                f,
                "scope {scope:?}: scopes are non-empty and made of visible ASCII except '\"' and '\\'"
            ),
            Kind::NoAudience => f.write_str("at least one audience is required"),
            Kind::NoCryptoProvider => f.write_str("no JWT crypto provider is available"),
            Kind::Key { reason } => write!(f, "key: {reason}"),
            Kind::AuthHttpClient => {
                f.write_str("HTTP client")?;
                with_source(f, source)
            }
            Kind::DpopAlgorithms => {
                f.write_str("DPoP algorithms: at least one, and only asymmetric ones")
            }
            Kind::Random => f.write_str("no random bytes available for the DPoP nonce secret"),
        }
    }
}

/// `: {source}` after a message whose one line names its cause (as the CLI prints it).
fn with_source(
    f: &mut fmt::Formatter<'_>,
    source: Option<&(dyn std::error::Error + Send + Sync)>,
) -> fmt::Result {
    match source {
        Some(s) => write!(f, ": {s}"),
        None => Ok(()),
    }
}

impl fmt::Debug for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.debug("ConfigError", f)
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner.source()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_word_and_the_cause_is_the_source() {
        assert_eq!(
            std::mem::size_of::<ConfigError>(),
            std::mem::size_of::<usize>()
        );
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "gone");
        let e = ConfigError::with_source(Kind::KeyFileRead { path: "k".into() }, io);
        assert!(e.is_file() && !e.is_tls());
        assert_eq!(
            e.to_string(),
            "cannot read the request-state key file k: gone"
        );
        let source = std::error::Error::source(&e).map(ToString::to_string);
        assert_eq!(source.as_deref(), Some("gone"));
    }

    #[test]
    fn a_param_header_error_learns_its_tool() {
        let e = ConfigError::from(Kind::ParamHeader {
            tool: None,
            reason: "x".into(),
        });
        assert_eq!(e.tool(), None);
        let e = e.for_tool("t");
        assert!(e.is_registration() && e.is_param_header());
        assert_eq!(
            e.to_string(),
            "tool \"t\": invalid x-mcp-header annotation: x"
        );
    }
}
