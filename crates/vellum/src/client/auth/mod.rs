//! The OAuth 2.1 client of MCP's authorization spec (feature `client-auth`): everything a
//! client needs to talk to an MCP server that wants tokens.
//!
//! ```text
//! request ─► 401 WWW-Authenticate: Bearer resource_metadata=…, scope=…
//!   discovery   protected-resource metadata (header URL, path-inserted, root) ─► resource check
//!               authorization-server metadata (RFC 8414 / OpenID, spec order) ─► issuer check
//!               (2025-03-26: metadata or default endpoints at the server's origin)
//!   identity    pre-registered ─► Client ID Metadata Document ─► dynamic registration
//!   grant       authorization code + PKCE S256 + state + RFC 9207 iss + RFC 8707 resource
//!               | client credentials (secret or private_key_jwt) | JWT bearer (workload)
//!               | enterprise token exchange (ID-JAG) ; DPoP proofs with server nonces
//!   store       TokenStore keyed by (issuer, server): memory or files (0600)
//! request again with Authorization (+ DPoP) ─► refresh before expiry, step up on 403
//! ```
//!
//! [`OAuth`] is the client of one MCP server; build it with [`OAuth::builder`]. A transport
//! calls [`OAuth::headers`] before each request and [`OAuth::on_response`] after a 401 or
//! 403; [`OAuth::login`] authorizes up front. The user's part of the authorization-code
//! flow is a [`RedirectHandler`]: [`LoopbackRedirect`] (a listener on 127.0.0.1 plus a
//! [`BrowserOpener`]) or [`PasteRedirect`] for machines without a browser.
//!
//! What goes where: the access token only to the MCP server it was issued for (and only to
//! that server's origin); client credentials, codes, verifiers and refresh tokens only to
//! the token endpoint of the issuer they belong to; nothing of one issuer to another. No
//! credential appears in a log line, a `Debug` output or an error ([`Secret`]).
//!
//! Not here: the resource-server side (see [`crate::auth`]) and the JOSE primitives (see
//! [`crate::jose`]).

mod challenge;
mod config;
mod discovery;
mod error;
mod file_store;
mod flow;
mod http;
mod oauth;
mod redirect;
mod registration;
mod secret;
mod store;
mod token;
mod urls;

pub use challenge::{AuthChallenge, parse_challenges};
pub use config::{AssertionSource, DpopMode, EnterpriseConfig, Grant, OAuthBuilder};
pub use discovery::{AuthorizationServerMetadata, Discovery};
pub use error::AuthError;
pub use file_store::FileTokenStore;
pub use oauth::{AuthAttempt, AuthStatus, OAuth};
pub use redirect::{
    AuthorizationResponse, BrowserOpener, LoopbackRedirect, PasteRedirect, PendingRedirect,
    PrintUrl, RedirectFuture, RedirectHandler, SystemBrowser,
};
pub use registration::{
    ClientRegistration, ClientSource, PreregisteredClient, TokenEndpointAuth,
    client_metadata_document,
};
pub use secret::Secret;
pub use store::{AuthRecord, MemoryTokenStore, StoreFuture, StoreKey, TokenStore};
pub use token::{TokenSet, TokenType};
pub use urls::canonical_resource;
