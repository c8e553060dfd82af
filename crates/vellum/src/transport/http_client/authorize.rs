//! Sending a request, with the credentials of an [`OAuth`](crate::client::auth::OAuth)
//! client when the transport has one (feature `client-auth`): each try gets its own
//! `Authorization` (and `DPoP`) headers just before it leaves, so a token refreshed meanwhile
//! or a new DPoP proof is always what is sent; a 401 or a 403 `insufficient_scope` is shown to
//! the OAuth client, which refreshes, re-discovers, steps up or asks for a login, and says
//! whether to send again. Its budget per request bounds the tries.
//!
//! Without an OAuth client the request is sent as built (a 401 is then an
//! [`HttpStatus`](TransportError::HttpStatus) like any other).

use super::response::connect_error;
use super::shared::Shared;
use crate::error::TransportError;

/// Sends `request` (built by the shared state: POST, GET or DELETE) and returns the first
/// answer that is not about authorization.
pub(super) async fn send_request(
    shared: &Shared,
    request: reqwest::RequestBuilder,
) -> Result<reqwest::Response, TransportError> {
    #[cfg(feature = "client-auth")]
    if let Some(oauth) = &shared.options.auth {
        return authorized(&shared.http, oauth, request).await;
    }
    let _ = shared;
    request.send().await.map_err(connect_error)
}

#[cfg(feature = "client-auth")]
async fn authorized(
    http: &reqwest::Client,
    oauth: &crate::client::auth::OAuth,
    request: reqwest::RequestBuilder,
) -> Result<reqwest::Response, TransportError> {
    let unauthorized = |e| TransportError::Unauthorized(std::sync::Arc::new(e));
    let request = request.build().map_err(connect_error)?;
    let url = request.url().as_str().to_owned();
    let mut attempt = oauth.attempt();
    loop {
        // Bodies here are bytes, so a request can always be copied for another try.
        let Some(mut req) = request.try_clone() else {
            return Err(TransportError::Protocol {
                detail: "a streaming request body cannot be sent again with new credentials".into(),
            });
        };
        let headers = oauth
            .headers(&mut attempt, req.method(), &url)
            .await
            .map_err(unauthorized)?;
        req.headers_mut().extend(headers);
        let resp = http.execute(req).await.map_err(connect_error)?;
        let again = oauth
            .on_response(&mut attempt, &url, resp.status(), resp.headers())
            .await
            .map_err(unauthorized)?;
        if !again {
            return Ok(resp);
        }
        tracing::debug!(status = %resp.status(), "sending the request again with new credentials");
    }
}
