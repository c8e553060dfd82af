//! The user's side, scripted: [`ScriptedBrowser`] opens an authorization URL the way a
//! browser would (GET, follow the redirect to the client's loopback listener), and
//! [`send_authorized`] sends a JSON-RPC request the way a transport does with an
//! [`OAuth`] client (headers, then the 401/403 dance).

use std::sync::{Arc, Mutex};

use vellum::client::auth::{AuthError, BrowserOpener, OAuth, RedirectFuture};

/// A browser that follows the authorization server's redirect back to the client, and
/// remembers every URL it was asked to open.
#[derive(Clone, Default)]
pub struct ScriptedBrowser {
    opened: Arc<Mutex<Vec<String>>>,
}

impl ScriptedBrowser {
    /// A browser that has opened nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The authorization URLs opened so far.
    pub fn opened(&self) -> Vec<String> {
        self.opened
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl BrowserOpener for ScriptedBrowser {
    fn open<'a>(&'a self, url: &'a str) -> RedirectFuture<'a, ()> {
        self.opened
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(url.to_owned());
        Box::pin(async move {
            // Follows the 302 to 127.0.0.1 like a browser; the listener answers the page.
            vellum::transport::install_crypto_provider();
            reqwest::get(url)
                .await
                .map_err(|e| AuthError::redirect("scripted browser", e))?;
            Ok(())
        })
    }
}

/// POSTs `body` to `url` with `oauth`'s headers, lets it handle 401 and 403, and retries as
/// it says; returns the final status and JSON body.
pub async fn send_authorized(
    oauth: &OAuth,
    url: &str,
    body: &serde_json::Value,
) -> Result<(u16, serde_json::Value), AuthError> {
    vellum::transport::install_crypto_provider();
    let client = reqwest::Client::new();
    let mut attempt = oauth.attempt();
    loop {
        let headers = oauth
            .headers(&mut attempt, &http::Method::POST, url)
            .await?;
        let resp = client
            .post(url)
            .headers(headers)
            .json(body)
            .send()
            .await
            .expect("the resource server answers");
        let status = resp.status();
        let resp_headers = resp.headers().clone();
        let json = resp.json::<serde_json::Value>().await.unwrap_or_default();
        if oauth
            .on_response(&mut attempt, url, status, &resp_headers)
            .await?
        {
            continue;
        }
        return Ok((status.as_u16(), json));
    }
}

/// An authorization server started with `a`, and a resource server started with `r` that
/// trusts it.
pub async fn start_pair(
    a: super::AsOptions,
    r: super::RsOptions,
) -> (super::TestAuthServer, super::TestResourceServer) {
    let auth = super::TestAuthServer::start(a).await;
    let rs = super::TestResourceServer::start(r, &[&auth]).await;
    (auth, rs)
}

/// A JSON-RPC `tools/list` request.
pub fn tools_list() -> serde_json::Value {
    serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
}

/// Seconds since the Unix epoch.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
