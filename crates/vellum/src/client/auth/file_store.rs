//! [`FileTokenStore`]: one JSON file per issuer and MCP server in a directory only the user
//! can read.
//!
//! ```text
//! <dir>/                                       (0700)
//!   127.0.0.1_8000_mcp--auth.example.com--3f9a1c0d2b7e.json   (0600)
//!   <server>--<issuer>--<hash of both>.json
//! ```
//!
//! The name is readable (server, then issuer, each as host, port and path with anything but
//! letters, digits, `.` and `-` turned into `_`) and made unique by the first 12 hex digits
//! of the SHA-256 of the issuer and the server; the file holds an
//! [`AuthRecord`](super::AuthRecord) with both URLs in full. A write goes to a temporary file
//! (0600) that replaces the old one, so a reader never sees half a record.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest as _, Sha256};

use super::store::{AuthRecord, StoreFuture, StoreKey, TokenStore};
use crate::store::StoreError;

/// Records in files under one directory.
#[derive(Debug, Clone)]
pub struct FileTokenStore {
    dir: PathBuf,
}

impl FileTokenStore {
    /// A store in `dir` (created, 0700, at the first write).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        FileTokenStore { dir: dir.into() }
    }

    /// The directory the `vellum` command uses: `$XDG_CONFIG_HOME/vellum/oauth`, else
    /// `~/.config/vellum/oauth` (`%APPDATA%\vellum\oauth` on Windows). `None` when there is
    /// no home directory.
    pub fn default_dir() -> Option<PathBuf> {
        let base = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                if cfg!(windows) {
                    std::env::var_os("APPDATA").map(PathBuf::from)
                } else {
                    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config"))
                }
            })?;
        Some(base.join("vellum").join("oauth"))
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of `key`.
    pub fn path_of(&self, key: &StoreKey) -> PathBuf {
        let digest = Sha256::digest(format!("{}\n{}", key.issuer, key.server));
        let hex: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!(
            "{}--{}--{hex}.json",
            slug(&key.server),
            slug(&key.issuer)
        ))
    }

    fn io(path: &Path, e: std::io::Error) -> StoreError {
        StoreError::Io {
            path: path.to_owned(),
            source: Arc::new(e),
        }
    }

    fn read(path: &Path) -> Result<Option<AuthRecord>, StoreError> {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Self::io(path, e)),
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| StoreError::Format {
                path: path.to_owned(),
                // serde's message may quote a value (a token): only the position and kind.
                detail: format!(
                    "{:?} at line {} column {}",
                    e.classify(),
                    e.line(),
                    e.column()
                ),
            })
    }

    fn write(&self, record: &AuthRecord) -> Result<(), StoreError> {
        create_private_dir(&self.dir).map_err(|e| Self::io(&self.dir, e))?;
        let path = self.path_of(&record.key());
        let json = serde_json::to_vec_pretty(record)
            .map_err(|e| StoreError::backend(format!("encoding a record: {:?}", e.classify())))?;
        // A name of its own per write: two writers never share a temporary file.
        let unique = crate::jose::random_b64url(9).map_err(StoreError::backend)?;
        let tmp = self.dir.join(format!(
            ".{}.{unique}.tmp",
            path.file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("record"),
        ));
        let mut file = private_file(&tmp).map_err(|e| Self::io(&tmp, e))?;
        file.write_all(&json)
            .and_then(|()| file.sync_all())
            .map_err(|e| Self::io(&tmp, e))?;
        drop(file);
        std::fs::rename(&tmp, &path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            Self::io(&path, e)
        })
    }

    fn scan(&self, server: &str) -> Result<Vec<AuthRecord>, StoreError> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Self::io(&self.dir, e)),
        };
        let mut found = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') || !name.ends_with(".json") {
                continue;
            }
            match Self::read(&path) {
                Ok(Some(r)) if r.server == server => found.push(r),
                Ok(_) => {}
                // One damaged file does not hide the others.
                Err(e) => tracing::warn!("skipping {}: {e}", path.display()),
            }
        }
        found.sort_by_key(|r| std::cmp::Reverse(r.updated_at));
        Ok(found)
    }
}

/// `host[_port][_path]` of a URL, made of letters, digits, `.`, `-` and `_`, at most 48
/// characters.
fn slug(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let mut out: String = rest
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    while out.ends_with('_') {
        out.pop();
    }
    out.truncate(48);
    out
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    // A directory made by someone else (or before) is tightened too.
    let mode = std::fs::metadata(dir)?.permissions().mode();
    if mode & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

#[cfg(unix)]
fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let _ = std::fs::remove_file(path);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

#[cfg(not(unix))]
fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    let _ = std::fs::remove_file(path);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
}

/// Runs blocking file work off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| StoreError::backend(format!("file store task: {e}")))?
}

impl TokenStore for FileTokenStore {
    fn load<'a>(&'a self, key: &'a StoreKey) -> StoreFuture<'a, Option<AuthRecord>> {
        let path = self.path_of(key);
        let key = key.clone();
        Box::pin(blocking(move || {
            // The hash could collide in theory: the record's own key decides.
            Ok(Self::read(&path)?.filter(|r| r.key() == key))
        }))
    }

    fn save<'a>(&'a self, record: &'a AuthRecord) -> StoreFuture<'a, ()> {
        let this = self.clone();
        let record = record.clone();
        Box::pin(blocking(move || this.write(&record)))
    }

    fn remove<'a>(&'a self, key: &'a StoreKey) -> StoreFuture<'a, ()> {
        let path = self.path_of(key);
        Box::pin(blocking(move || match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Self::io(&path, e)),
        }))
    }

    fn for_server<'a>(&'a self, server: &'a str) -> StoreFuture<'a, Vec<AuthRecord>> {
        let this = self.clone();
        let server = server.to_owned();
        Box::pin(blocking(move || this.scan(&server)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::auth::{Secret, TokenSet, TokenType};

    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("vellum-file-store-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn slugs_and_names() {
        assert_eq!(slug("http://127.0.0.1:8000/mcp"), "127.0.0.1_8000_mcp");
        assert_eq!(slug("https://auth.example.com/"), "auth.example.com");
        let store = FileTokenStore::new("/d");
        let k = StoreKey {
            issuer: "https://as".into(),
            server: "https://mcp/x".into(),
        };
        let name = store
            .path_of(&k)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(
            name.starts_with("mcp_x--as--") && name.ends_with(".json"),
            "{name}"
        );
        let other = StoreKey {
            issuer: "https://as2".into(),
            ..k.clone()
        };
        assert_ne!(store.path_of(&k), store.path_of(&other));
    }

    #[tokio::test]
    async fn files_are_private_and_round_trip() {
        let dir = temp_dir("rt");
        let store = FileTokenStore::new(dir.join("nested"));
        let mut r = AuthRecord::new(
            "https://as",
            "http://127.0.0.1:1/mcp",
            "http://127.0.0.1:1/mcp",
        );
        r.tokens = Some(TokenSet {
            access_token: Secret::new("at-1"),
            token_type: TokenType::Bearer,
            expires_at: Some(5),
            refresh_token: Some(Secret::new("rt-1")),
            scope: Some("a".into()),
        });
        r.updated_at = 7;
        store.save(&r).await.unwrap();
        assert_eq!(store.load(&r.key()).await.unwrap(), Some(r.clone()));
        assert_eq!(store.for_server(&r.server).await.unwrap(), [r.clone()]);
        assert!(store.for_server("https://nope").await.unwrap().is_empty());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let file_mode = std::fs::metadata(store.path_of(&r.key()))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(file_mode & 0o777, 0o600);
            let dir_mode = std::fs::metadata(store.dir()).unwrap().permissions().mode();
            assert_eq!(dir_mode & 0o777, 0o700);
        }
        // A damaged file is an error for its key, and skipped when scanning.
        std::fs::write(store.path_of(&r.key()), b"{\"issuer\": \"secret-value").unwrap();
        let err = store.load(&r.key()).await.unwrap_err().to_string();
        assert!(!err.contains("secret-value"), "{err}");
        assert!(store.for_server(&r.server).await.unwrap().is_empty());
        store.remove(&r.key()).await.unwrap();
        store.remove(&r.key()).await.unwrap();
        assert_eq!(store.load(&r.key()).await.unwrap(), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
