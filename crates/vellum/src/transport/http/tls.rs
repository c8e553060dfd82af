//! TLS for the accept loop (feature `tls`): rustls with the `ring` provider, the one crypto
//! provider of the workspace (it builds faster and smaller than aws-lc-rs and needs no C
//! toolchain beyond a compiler).
//!
//! [`TlsConfig`] holds the server's rustls configuration. Built from PEM files
//! ([`TlsConfig::from_pem_files`]), its certificate sits behind a resolver that
//! [`TlsConfig::reload`] swaps: the next handshake presents the new certificate while open
//! connections keep the one they were set up with. On Unix, [`TlsConfig::reload_on_sighup`]
//! reloads on every `SIGHUP`.
//!
//! Not here: the accept loop (`serve.rs`), which runs each handshake in the connection's own
//! task, with a deadline, so a slow or silent client holds up nobody else.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use rustls::ServerConfig;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use crate::config_error::{ConfigError, Kind as ConfigKind};

/// rustls refused the key, the certificate chain or the configuration.
fn refused(e: rustls::Error) -> ConfigError {
    ConfigError::with_source(ConfigKind::Tls, e)
}

/// The provider every TLS configuration of the crate uses.
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The server's TLS configuration, cheap to clone (it is shared).
#[derive(Clone)]
pub struct TlsConfig {
    config: Arc<ServerConfig>,
    cert: Option<Arc<ReloadableCert>>,
}

impl fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConfig")
            .field("alpn", &self.config.alpn_protocols)
            .field(
                "files",
                &self.cert.as_ref().map(|c| (&c.cert_path, &c.key_path)),
            )
            .finish()
    }
}

impl TlsConfig {
    /// The ALPN protocols offered, most preferred first: HTTP/2 (with the feature `http2`),
    /// then HTTP/1.1.
    #[cfg(feature = "http2")]
    pub const ALPN: &[&[u8]] = &[b"h2", b"http/1.1"];
    /// The ALPN protocols offered: HTTP/1.1 (HTTP/2 needs the feature `http2`).
    #[cfg(not(feature = "http2"))]
    pub const ALPN: &[&[u8]] = &[b"http/1.1"];

    /// Loads the certificate chain (`cert`, PEM, leaf first) and its private key (`key`,
    /// PEM: PKCS#8, PKCS#1 or SEC1), checks that they belong together, and offers TLS 1.3
    /// and 1.2 with ALPN [`ALPN`](Self::ALPN).
    pub fn from_pem_files(
        cert: impl AsRef<Path>,
        key: impl AsRef<Path>,
    ) -> Result<Self, ConfigError> {
        let provider = provider();
        let cert = Arc::new(ReloadableCert::load(
            cert.as_ref().to_owned(),
            key.as_ref().to_owned(),
            provider.clone(),
        )?);
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(refused)?
            .with_no_client_auth()
            .with_cert_resolver(cert.clone());
        config.alpn_protocols = Self::ALPN.iter().map(|p| p.to_vec()).collect();
        Ok(TlsConfig {
            config: Arc::new(config),
            cert: Some(cert),
        })
    }

    /// A configuration of your own (client certificates, other resolvers). Offer `h2` in
    /// its `alpn_protocols` for HTTP/2 (feature `http2`); without ALPN, connections speak
    /// HTTP/1.1.
    pub fn from_rustls(config: Arc<ServerConfig>) -> Self {
        TlsConfig { config, cert: None }
    }

    /// The rustls configuration.
    pub fn rustls(&self) -> &Arc<ServerConfig> {
        &self.config
    }

    /// Reads the certificate and key files again and presents them from the next handshake
    /// on; open connections are untouched. On error the current certificate stays.
    pub fn reload(&self) -> Result<(), ConfigError> {
        self.cert
            .as_ref()
            .ok_or_else(|| ConfigError::from(ConfigKind::NotReloadable))?
            .reload()
    }

    /// Reloads on every `SIGHUP` until the returned handle is dropped, telling `reloaded`
    /// how each reload went (a failed reload keeps the current certificate).
    #[cfg(unix)]
    pub fn reload_on_sighup(
        &self,
        reloaded: impl Fn(Result<(), ConfigError>) + Send + 'static,
    ) -> std::io::Result<tokio_util::task::AbortOnDropHandle<()>> {
        use tokio::signal::unix::{SignalKind, signal};
        let mut hup = signal(SignalKind::hangup())?;
        let this = self.clone();
        Ok(tokio_util::task::AbortOnDropHandle::new(tokio::spawn(
            async move {
                while hup.recv().await.is_some() {
                    reloaded(this.reload());
                }
            },
        )))
    }

    /// The acceptor for the accept loop.
    pub(super) fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        tokio_rustls::TlsAcceptor::from(self.config.clone())
    }
}

/// A certificate read from files, swapped whole on reload. A read lock per handshake is
/// far below the cost of the handshake itself.
struct ReloadableCert {
    cert_path: PathBuf,
    key_path: PathBuf,
    provider: Arc<CryptoProvider>,
    current: RwLock<Arc<CertifiedKey>>,
}

impl fmt::Debug for ReloadableCert {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReloadableCert")
            .field("cert_path", &self.cert_path)
            .field("key_path", &self.key_path)
            .finish_non_exhaustive()
    }
}

impl ReloadableCert {
    fn load(
        cert_path: PathBuf,
        key_path: PathBuf,
        provider: Arc<CryptoProvider>,
    ) -> Result<Self, ConfigError> {
        let key = certified_key(&cert_path, &key_path, &provider)?;
        Ok(ReloadableCert {
            cert_path,
            key_path,
            provider,
            current: RwLock::new(Arc::new(key)),
        })
    }

    fn reload(&self) -> Result<(), ConfigError> {
        let key = certified_key(&self.cert_path, &self.key_path, &self.provider)?;
        // A poisoned lock only means a writer panicked between two whole values.
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(key);
        Ok(())
    }
}

impl ResolvesServerCert for ReloadableCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(
            self.current
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        )
    }
}

/// Reads a chain and its key and checks they match (a mismatch would fail every handshake).
fn certified_key(
    cert_path: &Path,
    key_path: &Path,
    provider: &CryptoProvider,
) -> Result<CertifiedKey, ConfigError> {
    let pem_error = |path: &Path, reason: String| {
        ConfigError::from(ConfigKind::Pem {
            path: path.to_owned(),
            reason,
        })
    };
    let chain = CertificateDer::pem_file_iter(cert_path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| pem_error(cert_path, e.to_string()))?;
    if chain.is_empty() {
        return Err(pem_error(cert_path, "no CERTIFICATE block".into()));
    }
    let key = PrivateKeyDer::from_pem_file(key_path)
        .map_err(|e| pem_error(key_path, format!("no usable private key: {e}")))?;
    CertifiedKey::from_der(chain, key, provider).map_err(refused)
}
