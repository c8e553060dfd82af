//! A certificate authority made in the test: leaf certificates for `localhost`, `127.0.0.1`
//! and `::1` written as PEM files a server loads, and reqwest clients (HTTP/1.1 or HTTP/2)
//! that trust this CA and nothing else. The CA's PEM file is what the official clients get
//! through their environment (`NODE_EXTRA_CA_CERTS`, `SSL_CERT_FILE`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};

/// A throwaway CA with a directory of its own (removed on drop).
pub struct TestCa {
    issuer: Issuer<'static, KeyPair>,
    ca_pem: String,
    dir: PathBuf,
}

/// A leaf certificate the CA issued.
pub struct Leaf {
    /// The certificate chain file (PEM, the leaf only).
    pub cert: PathBuf,
    /// The private key file (PEM, PKCS#8).
    pub key: PathBuf,
    /// The leaf in DER, to compare with what a handshake presented.
    pub der: Vec<u8>,
}

impl TestCa {
    /// A new CA (ECDSA P-256), its certificate written to [`TestCa::ca_file`].
    pub fn new() -> TestCa {
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "vellum-test-ca-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("a directory for the test CA");
        let key = KeyPair::generate().expect("a CA key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "vellum test CA");
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let cert = params.self_signed(&key).expect("the CA certificate");
        let ca_pem = cert.pem();
        std::fs::write(dir.join("ca.pem"), &ca_pem).expect("the CA file is written");
        TestCa {
            issuer: Issuer::new(params, key),
            ca_pem,
            dir,
        }
    }

    /// The CA certificate's PEM file.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    /// A leaf for the loopback names with common name `name`, written to `NAME.pem` and
    /// `NAME.key` in the CA's directory (overwriting them: a renewed certificate).
    pub fn issue(&self, name: &str) -> Leaf {
        self.issue_to(
            name,
            &self.dir.join(format!("{name}.pem")),
            &self.dir.join(format!("{name}.key")),
        )
    }

    /// A leaf as [`TestCa::issue`], written to `cert` and `key`.
    pub fn issue_to(&self, name: &str, cert: &Path, key: &Path) -> Leaf {
        let leaf_key = KeyPair::generate().expect("a leaf key");
        let mut params = CertificateParams::new(vec![
            "localhost".to_owned(),
            "127.0.0.1".to_owned(),
            "::1".to_owned(),
        ])
        .expect("leaf params");
        params.distinguished_name.push(DnType::CommonName, name);
        let leaf = params
            .signed_by(&leaf_key, &self.issuer)
            .expect("the CA signs the leaf");
        // Written to a temporary name and renamed: a reload never reads half a file.
        for (path, text) in [(cert, leaf.pem()), (key, leaf_key.serialize_pem())] {
            let tmp = path.with_extension("tmp");
            std::fs::write(&tmp, text).expect("a PEM file is written");
            std::fs::rename(&tmp, path).expect("a PEM file is renamed into place");
        }
        Leaf {
            cert: cert.to_owned(),
            key: key.to_owned(),
            der: leaf.der().to_vec(),
        }
    }

    /// A reqwest builder that trusts this CA only and uses no proxy (loopback stays
    /// loopback), with `tls_info` on so a response tells which certificate it came over.
    pub fn client_builder(&self) -> reqwest::ClientBuilder {
        // reqwest may be built without a provider of its own; the workspace's is ring.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let ca = reqwest::Certificate::from_pem(self.ca_pem.as_bytes()).expect("the CA parses");
        reqwest::Client::builder()
            .no_proxy()
            .tls_certs_only([ca])
            .tls_info(true)
    }

    /// A TLS connection to `addr` over `std::net` that trusts this CA, its handshake
    /// completed (reads time out after 5 s) and HTTP/1.1 agreed by ALPN: for tests that
    /// write every byte themselves (or none: a client that goes silent after the handshake).
    pub fn connect_raw(
        &self,
        addr: std::net::SocketAddr,
    ) -> std::io::Result<rustls::StreamOwned<rustls::ClientConnection, std::net::TcpStream>> {
        use rustls::pki_types::pem::PemObject;
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        let ca = rustls::pki_types::CertificateDer::from_pem_slice(self.ca_pem.as_bytes())
            .expect("the CA parses");
        roots.add(ca).expect("the CA is a root");
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let name = rustls::pki_types::ServerName::IpAddress(addr.ip().into());
        let mut conn = rustls::ClientConnection::new(std::sync::Arc::new(config), name)
            .map_err(std::io::Error::other)?;
        let mut tcp =
            std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(5))?;
        tcp.set_read_timeout(Some(std::time::Duration::from_secs(5)))?;
        tcp.set_nodelay(true)?;
        while conn.is_handshaking() {
            conn.complete_io(&mut tcp)?;
        }
        Ok(rustls::StreamOwned::new(conn, tcp))
    }

    /// An HTTP/1.1 client that trusts this CA.
    pub fn client(&self) -> reqwest::Client {
        self.client_builder()
            .http1_only()
            .build()
            .expect("a reqwest client")
    }

    /// A client that trusts this CA and speaks HTTP/2 when the server offers it by ALPN.
    pub fn client_h2(&self) -> reqwest::Client {
        self.client_builder().build().expect("a reqwest client")
    }
}

impl Default for TestCa {
    fn default() -> Self {
        TestCa::new()
    }
}

impl Drop for TestCa {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The leaf certificate (DER) a response came over, when the client had `tls_info` on.
pub fn peer_certificate(response: &reqwest::Response) -> Option<Vec<u8>> {
    response
        .extensions()
        .get::<reqwest::tls::TlsInfo>()
        .and_then(|i| i.peer_certificate())
        .map(<[u8]>::to_vec)
}
