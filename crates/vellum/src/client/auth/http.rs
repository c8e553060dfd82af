//! The one HTTP client of the OAuth flows: JSON documents fetched with a size limit, forms
//! posted, every redirect hop checked like the first URL (https, or http on loopback).

use std::time::Duration;

use reqwest::{StatusCode, Url};
use serde::de::DeserializeOwned;

use super::{AuthError, urls};
use crate::config_error::{ConfigError, Kind as ConfigKind};

/// How long an idle connection to an authorization server is kept: under the 5 s after
/// which common servers close it.
const POOL_IDLE: Duration = Duration::from_secs(4);

/// The largest metadata, registration or token document read.
const MAX_DOCUMENT_BYTES: usize = 256 * 1024;

/// The HTTP client of the OAuth flows.
#[derive(Clone, Debug)]
pub(crate) struct Http {
    client: reqwest::Client,
}

/// A response read in full (up to the document limit).
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) headers: http::HeaderMap,
    pub(crate) body: Vec<u8>,
}

impl Answer {
    /// The body as `T`.
    pub(crate) fn json<T: DeserializeOwned>(&self, what: &'static str) -> Result<T, AuthError> {
        serde_json::from_slice(&self.body).map_err(|e| {
            // serde's message may quote the offending value, which could be a credential:
            // keep only where and what kind of error.
            AuthError::invalid(
                what,
                format!(
                    "not the expected JSON ({:?} at line {} column {})",
                    e.classify(),
                    e.line(),
                    e.column()
                ),
            )
        })
    }
}

impl Http {
    /// A client with `timeout` per request.
    pub(crate) fn new(timeout: Duration) -> Result<Self, AuthError> {
        let policy = reqwest::redirect::Policy::custom(|attempt| {
            if attempt.previous().len() >= 5 {
                attempt.stop()
            } else if urls::checked("redirect", attempt.url().as_str()).is_ok() {
                attempt.follow()
            } else {
                attempt.stop()
            }
        });
        // The workspace's one provider, as `transport::install_crypto_provider` installs it
        // (the client may not import the transports): a no-op when one is installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .redirect(policy)
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            .timeout(timeout)
            // Authorization requests come in bursts minutes apart: a pooled connection the
            // server closed meanwhile (Node closes idle ones after 5 s) would be reset when
            // reused, so idle connections are dropped first.
            .pool_idle_timeout(POOL_IDLE)
            .user_agent(concat!("vellum/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ConfigError::with_source(ConfigKind::HttpClient, e))?;
        Ok(Http { client })
    }

    /// GETs a JSON document: `Ok(None)` when the server has none there (any 4xx or 5xx, so
    /// discovery moves on to the next location), an error when no answer came.
    pub(crate) async fn get_json<T: DeserializeOwned>(
        &self,
        what: &'static str,
        url: &Url,
    ) -> Result<Option<T>, AuthError> {
        let answer = self
            .send(
                what,
                self.client
                    .get(url.clone())
                    .header("accept", "application/json"),
            )
            .await?;
        if !answer.status.is_success() {
            tracing::debug!(%url, status = %answer.status, "{what}: not found here");
            return Ok(None);
        }
        answer.json(what).map(Some)
    }

    /// Sends a request and reads its answer.
    pub(crate) async fn send(
        &self,
        what: &'static str,
        request: reqwest::RequestBuilder,
    ) -> Result<Answer, AuthError> {
        let mut resp = request.send().await.map_err(|e| AuthError::http(what, e))?;
        let status = resp.status();
        let headers = std::mem::take(resp.headers_mut());
        if resp
            .content_length()
            .is_some_and(|n| n > MAX_DOCUMENT_BYTES as u64)
        {
            return Err(AuthError::invalid(what, "the document is too large"));
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| AuthError::http(what, e))? {
            if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
                return Err(AuthError::invalid(what, "the document is too large"));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Answer {
            status,
            headers,
            body,
        })
    }

    /// A request builder for `method` `url`.
    pub(crate) fn request(&self, method: reqwest::Method, url: Url) -> reqwest::RequestBuilder {
        self.client.request(method, url)
    }
}

/// The error of an OAuth endpoint's answer (RFC 6749 §5.2), or its status when it has none.
pub(crate) fn oauth_error(what: &'static str, answer: &Answer) -> AuthError {
    #[derive(serde::Deserialize)]
    struct ErrorBody {
        error: String,
        #[serde(default)]
        error_description: Option<String>,
    }
    match serde_json::from_slice::<ErrorBody>(&answer.body) {
        Ok(e) => AuthError::OAuth {
            what,
            error: e.error,
            description: e.error_description.map(|d| d.chars().take(300).collect()),
        },
        Err(_) => AuthError::Status {
            what,
            status: answer.status.as_u16(),
        },
    }
}
