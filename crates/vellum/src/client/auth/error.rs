//! [`AuthError`]: why the client could not get (or keep) authorization. No variant carries a
//! credential: tokens, secrets, codes and verifiers never appear in the fields or the text.

use std::sync::Arc;

use crate::config_error::ConfigError;
use crate::jose::JoseError;
use crate::store::StoreError;

/// Why authorization failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// The server needs an interactive login and this client cannot run one (no redirect
    /// handler is configured): log in first (`vellum login URL`, or
    /// [`OAuth::login`](super::OAuth::login) with a redirect handler).
    #[error("{server} needs authorization: log in first")]
    LoginRequired {
        /// The MCP server.
        server: String,
    },
    /// A URL that may not be used: not absolute `https://` (or `http://` on a loopback
    /// host), or with credentials in it.
    #[error("{what} {url:?}: expected an https:// URL (http:// only on a loopback host)")]
    InsecureUrl {
        /// What the URL is for.
        what: &'static str,
        /// The URL.
        url: String,
    },
    /// An HTTP request failed before an answer arrived.
    #[error("{what}: the request failed")]
    Http {
        /// Which request.
        what: &'static str,
        /// Why.
        #[source]
        source: Arc<reqwest::Error>,
    },
    /// A document (metadata, registration answer, token answer) was answered with an
    /// unexpected status.
    #[error("{what}: HTTP {status}")]
    Status {
        /// Which document.
        what: &'static str,
        /// The status.
        status: u16,
    },
    /// A document is not what the specification says it must be.
    #[error("{what}: {reason}")]
    InvalidDocument {
        /// Which document.
        what: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// The protected-resource metadata names another resource than the server (RFC 9728
    /// §3.3): a token obtained for it could be replayed elsewhere, so the client stops.
    #[error("the protected resource metadata is for {found:?}, not for {expected:?}")]
    ResourceMismatch {
        /// The MCP server's URL.
        expected: String,
        /// The metadata's `resource`.
        found: String,
    },
    /// The authorization-server metadata names another issuer than the one it was fetched
    /// for (RFC 8414 §3.3).
    #[error("the authorization server metadata is for issuer {found:?}, not {expected:?}")]
    IssuerMismatch {
        /// The issuer the metadata URL was built from.
        expected: String,
        /// The metadata's `issuer`.
        found: String,
    },
    /// No authorization server could be found for the server (no metadata at any of the
    /// well-known locations).
    #[error("no authorization server metadata found for {server}")]
    NoAuthorizationServer {
        /// The MCP server.
        server: String,
    },
    /// The authorization server does not advertise PKCE with S256, which MCP requires.
    #[error("authorization server {issuer} does not support PKCE (S256)")]
    PkceUnsupported {
        /// The issuer.
        issuer: String,
    },
    /// No client identity can be used with this authorization server: no pre-registered
    /// credentials for it, no client metadata document it accepts, no registration endpoint.
    #[error("no way to identify this client to authorization server {issuer}")]
    NoClientIdentity {
        /// The issuer.
        issuer: String,
    },
    /// The flow needs something the configuration or the held tokens do not give: `what`
    /// (a refresh token, a client secret, a private key, …), of the client `client_id`
    /// when it is about a registered client's credentials.
    #[error("{}", missing_text(.what, .client_id))]
    Missing {
        /// What is missing.
        what: &'static str,
        /// The client whose credentials lack it, if it is about them.
        client_id: Option<String>,
    },
    /// The client's credentials cannot be sent (they are not valid HTTP header text).
    #[error("client credentials are not valid header text")]
    CredentialsNotHeaderText,
    /// The OAuth client could not be set up (its HTTP client could not be built).
    #[error(transparent)]
    Setup(#[from] ConfigError),
    /// The redirect (browser, loopback listener, pasted answer) failed at step `what`.
    #[error("authorization redirect: {what}{}", source_suffix(.source))]
    Redirect {
        /// Which step failed (`listen`, `not a URL`, `browser`, …).
        what: &'static str,
        /// Why, when an error says it (the OS error, the browser's).
        #[source]
        source: Option<Arc<dyn std::error::Error + Send + Sync>>,
    },
    /// No redirect arrived within the time allowed.
    #[error("authorization redirect: no answer within {after:?}")]
    RedirectTimeout {
        /// How long the client waited.
        after: std::time::Duration,
    },
    /// The authorization response's `state` is not the one sent: the response belongs to
    /// another request (CSRF), and is ignored.
    #[error("the authorization response does not match the request (state)")]
    StateMismatch,
    /// The authorization response's `iss` is missing (the server promised it) or names
    /// another issuer (RFC 9207): a mix-up attack, the response is ignored.
    #[error("the authorization response is from issuer {found:?}, expected {expected:?}")]
    IssuerResponseMismatch {
        /// The issuer the request went to.
        expected: String,
        /// The `iss` of the response (`None`: absent).
        found: Option<String>,
    },
    /// An OAuth endpoint answered with an error (`invalid_grant`, `access_denied`, …).
    #[error("{what}: {error}{}", description_suffix(.description))]
    OAuth {
        /// Which endpoint.
        what: &'static str,
        /// The `error` code.
        error: String,
        /// The `error_description`, when given.
        description: Option<String>,
    },
    /// The server asked for authorization again and again for one request (repeated 401 or
    /// 403 `insufficient_scope`): the client stops after this many authorizations.
    #[error("the server still refuses after {attempts} authorizations")]
    TooManyAttempts {
        /// How many authorizations were made for the request.
        attempts: u32,
    },
    /// The token store failed (the crate's one [`StoreError`]).
    #[error("token store: {0}")]
    Store(#[from] StoreError),
    /// A key or signature could not be made.
    #[error("JOSE: {0}")]
    Jose(#[from] JoseError),
}

fn missing_text(what: &str, client_id: &Option<String>) -> String {
    match client_id {
        Some(id) => format!("client {id} has no {what}"),
        None => format!("no {what}"),
    }
}

fn source_suffix(source: &Option<Arc<dyn std::error::Error + Send + Sync>>) -> String {
    source
        .as_ref()
        .map_or_else(String::new, |s| format!(": {s}"))
}

fn description_suffix(d: &Option<String>) -> String {
    match d {
        Some(d) if !d.is_empty() => format!(" ({d})"),
        _ => String::new(),
    }
}

impl AuthError {
    /// The authorization failure behind `err` (a [`crate::Error`], a transport error, or
    /// anything wrapping them), if that is why it failed: e.g. [`AuthError::LoginRequired`]
    /// to tell the user to log in.
    pub fn find_in<'a>(err: &'a (dyn std::error::Error + 'static)) -> Option<&'a AuthError> {
        let mut next = Some(err);
        while let Some(e) = next {
            if let Some(a) = e.downcast_ref::<AuthError>() {
                return Some(a);
            }
            // A shared source (`Arc<dyn Error>`) is an error of its own type: look inside.
            if let Some(a) = e
                .downcast_ref::<Arc<dyn std::error::Error + Send + Sync>>()
                .and_then(|inner| inner.downcast_ref::<AuthError>())
            {
                return Some(a);
            }
            next = e.source();
        }
        None
    }

    /// A [`Redirect`](Self::Redirect) failure at step `what`, caused by `source` (for a
    /// [`BrowserOpener`](super::BrowserOpener) or redirect handler of your own).
    pub fn redirect(
        what: &'static str,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        AuthError::Redirect {
            what,
            source: Some(Arc::new(source)),
        }
    }

    /// A [`Redirect`](Self::Redirect) failure at step `what`, with no error behind it.
    pub(crate) fn redirect_step(what: &'static str) -> Self {
        AuthError::Redirect { what, source: None }
    }

    /// A [`Missing`](Self::Missing) `what`, not about a client's credentials.
    pub(crate) fn missing(what: &'static str) -> Self {
        AuthError::Missing {
            what,
            client_id: None,
        }
    }

    pub(crate) fn http(what: &'static str, e: reqwest::Error) -> Self {
        AuthError::Http {
            what,
            source: Arc::new(e.without_url()),
        }
    }

    pub(crate) fn invalid(what: &'static str, reason: impl Into<String>) -> Self {
        AuthError::InvalidDocument {
            what,
            reason: reason.into(),
        }
    }
}
