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
            reqwest::get(url)
                .await
                .map_err(|e| AuthError::Redirect(format!("scripted browser: {e}")))?;
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
