//! [`TokenStore`]: where authorizations are kept between runs, keyed by issuer and MCP server
//! ([`StoreKey`]). A record holds the client's registration at that issuer, the tokens it
//! issued for that server and the DPoP key they are bound to; nothing of one issuer is ever
//! read for another. [`MemoryTokenStore`] keeps them for the life of the process,
//! [`FileTokenStore`](super::FileTokenStore) on disk.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::Secret;
use super::registration::ClientRegistration;
use super::token::TokenSet;
use crate::store::StoreError;

/// A boxed future of a [`TokenStore`].
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Which authorization a record is: the issuer that granted it and the MCP server it is for.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct StoreKey {
    /// The authorization server's issuer identifier.
    pub issuer: String,
    /// The MCP server's canonical URL.
    pub server: String,
}

/// One authorization: what one issuer granted this client for one MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AuthRecord {
    /// The issuer.
    pub issuer: String,
    /// The MCP server's canonical URL.
    pub server: String,
    /// The resource indicator the tokens were requested for (RFC 8707).
    pub resource: String,
    /// The client's registration at the issuer (dynamic or metadata document; pre-registered
    /// credentials stay in the configuration and are not written here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientRegistration>,
    /// The tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<TokenSet>,
    /// The PKCS#8 key (base64url) DPoP-bound tokens are bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_key: Option<Secret>,
    /// Every scope requested so far: a re-authorization asks for these and the new ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// When the record was last written (seconds since the Unix epoch).
    #[serde(default)]
    pub updated_at: u64,
}

impl AuthRecord {
    /// An empty record for `issuer` and `server`.
    pub fn new(
        issuer: impl Into<String>,
        server: impl Into<String>,
        resource: impl Into<String>,
    ) -> Self {
        AuthRecord {
            issuer: issuer.into(),
            server: server.into(),
            resource: resource.into(),
            client: None,
            tokens: None,
            dpop_key: None,
            scopes: Vec::new(),
            updated_at: 0,
        }
    }

    /// Its key.
    pub fn key(&self) -> StoreKey {
        StoreKey {
            issuer: self.issuer.clone(),
            server: self.server.clone(),
        }
    }
}

/// Keeps authorizations.
///
/// Implementations keep records exactly as given; [`OAuth`](super::OAuth) decides what goes
/// in them. Every method may be called concurrently.
pub trait TokenStore: Send + Sync + 'static {
    /// The record for `key`, if any.
    fn load<'a>(&'a self, key: &'a StoreKey) -> StoreFuture<'a, Option<AuthRecord>>;
    /// Writes `record` under its key, replacing what was there.
    fn save<'a>(&'a self, record: &'a AuthRecord) -> StoreFuture<'a, ()>;
    /// Removes the record for `key` (nothing when there is none).
    fn remove<'a>(&'a self, key: &'a StoreKey) -> StoreFuture<'a, ()>;
    /// Every record for the MCP server `server` (any issuer), most recently written first.
    fn for_server<'a>(&'a self, server: &'a str) -> StoreFuture<'a, Vec<AuthRecord>>;
}

impl<T: TokenStore + ?Sized> TokenStore for Arc<T> {
    fn load<'a>(&'a self, key: &'a StoreKey) -> StoreFuture<'a, Option<AuthRecord>> {
        (**self).load(key)
    }
    fn save<'a>(&'a self, record: &'a AuthRecord) -> StoreFuture<'a, ()> {
        (**self).save(record)
    }
    fn remove<'a>(&'a self, key: &'a StoreKey) -> StoreFuture<'a, ()> {
        (**self).remove(key)
    }
    fn for_server<'a>(&'a self, server: &'a str) -> StoreFuture<'a, Vec<AuthRecord>> {
        (**self).for_server(server)
    }
}

/// Records kept in memory for the life of the process (the default store).
#[derive(Debug, Clone, Default)]
pub struct MemoryTokenStore {
    records: Arc<Mutex<HashMap<StoreKey, AuthRecord>>>,
}

impl MemoryTokenStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl TokenStore for MemoryTokenStore {
    fn load<'a>(&'a self, key: &'a StoreKey) -> StoreFuture<'a, Option<AuthRecord>> {
        let found = crate::sync::lock(&self.records).get(key).cloned();
        Box::pin(async move { Ok(found) })
    }

    fn save<'a>(&'a self, record: &'a AuthRecord) -> StoreFuture<'a, ()> {
        crate::sync::lock(&self.records).insert(record.key(), record.clone());
        Box::pin(async { Ok(()) })
    }

    fn remove<'a>(&'a self, key: &'a StoreKey) -> StoreFuture<'a, ()> {
        crate::sync::lock(&self.records).remove(key);
        Box::pin(async { Ok(()) })
    }

    fn for_server<'a>(&'a self, server: &'a str) -> StoreFuture<'a, Vec<AuthRecord>> {
        let mut found: Vec<AuthRecord> = crate::sync::lock(&self.records)
            .values()
            .filter(|r| r.server == server)
            .cloned()
            .collect();
        found.sort_by_key(|r| std::cmp::Reverse(r.updated_at));
        Box::pin(async move { Ok(found) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn memory_store_keys_by_issuer_and_server() {
        let store = MemoryTokenStore::new();
        let mut a = AuthRecord::new("https://as1", "https://mcp/x", "https://mcp/x");
        a.updated_at = 1;
        let mut b = AuthRecord::new("https://as2", "https://mcp/x", "https://mcp/x");
        b.updated_at = 2;
        let c = AuthRecord::new("https://as1", "https://other", "https://other");
        for r in [&a, &b, &c] {
            store.save(r).await.unwrap();
        }
        assert_eq!(store.load(&a.key()).await.unwrap(), Some(a.clone()));
        let for_x = store.for_server("https://mcp/x").await.unwrap();
        assert_eq!(
            for_x.iter().map(|r| r.issuer.as_str()).collect::<Vec<_>>(),
            ["https://as2", "https://as1"]
        );
        store.remove(&b.key()).await.unwrap();
        assert_eq!(store.for_server("https://mcp/x").await.unwrap(), [a]);
    }
}
