//! The one crypto provider of the HTTP clients Vellum builds: rustls with `ring`.
//!
//! reqwest is built without a provider of its own (its default, aws-lc-rs, builds slower and
//! larger), so rustls needs a process-wide default before any reqwest client is built.
//! [`install_crypto_provider`] installs `ring` unless the program installed one first; Vellum
//! calls it before each client it builds (the MCP client's HTTP transport, the auth
//! verifiers' JWKS and introspection clients).
//!
//! Not here: server-side TLS (mount the handler behind your own TLS acceptor).

/// Makes `ring` rustls' process-wide default crypto provider, unless a provider is already
/// installed (yours wins). Idempotent and cheap after the first call.
///
/// Vellum calls it itself before building an HTTP client. Call it before building a
/// `reqwest::Client` of your own in a program that links Vellum's `client` or `auth` feature:
/// those build reqwest without a provider, and reqwest refuses to build a client without one.
///
/// ```
/// vellum::transport::install_crypto_provider();
/// let client = reqwest::Client::new();
/// # drop(client);
/// ```
pub fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Another thread may have installed one between the check and here: then that one is
        // the default, which is all this function promises.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}
