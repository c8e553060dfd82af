//! The user's part of the authorization-code flow: show them the authorization URL and get
//! back what the server sent to the redirect URI. Pluggable ([`RedirectHandler`]):
//!
//! - [`LoopbackRedirect`]: a one-shot HTTP listener on `127.0.0.1` (RFC 8252 §7.3) and a
//!   [`BrowserOpener`] ([`SystemBrowser`], [`PrintUrl`], or a closure: tests and the
//!   conformance client script the browser with an HTTP GET that follows the redirect).
//! - [`PasteRedirect`]: for machines without a browser: print the URL, read back the address
//!   the browser ended on (or the bare code).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;
use tokio::io::{AsyncBufRead, AsyncBufReadExt as _};

use super::{AuthError, Secret};

/// A boxed future of the redirect machinery.
pub type RedirectFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, AuthError>> + Send + 'a>>;

/// What the authorization server sent to the redirect URI (RFC 6749 §4.1.2, RFC 9207).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuthorizationResponse {
    /// The authorization code.
    pub code: Option<Secret>,
    /// The `state` sent with the request, echoed.
    pub state: Option<String>,
    /// The issuer that answered (RFC 9207).
    pub iss: Option<String>,
    /// The error code when the user or server refused.
    pub error: Option<String>,
    /// Its description.
    pub error_description: Option<String>,
    /// Only a bare code was given back (pasted by hand): there is no `state` or `iss` to
    /// check.
    pub bare_code: bool,
}

impl AuthorizationResponse {
    /// The response in a redirect URI's query string.
    pub fn from_query(query: &str) -> Self {
        let mut out = AuthorizationResponse::default();
        for (k, v) in url_form_pairs(query) {
            match k.as_str() {
                "code" => out.code = Some(Secret::new(v)),
                "state" => out.state = Some(v),
                "iss" => out.iss = Some(v),
                "error" => out.error = Some(v),
                "error_description" => out.error_description = Some(v),
                _ => {}
            }
        }
        out
    }

    /// The response in the address the browser was redirected to.
    pub fn from_url(url: &str) -> Result<Self, AuthError> {
        let u = Url::parse(url).map_err(|_| AuthError::redirect_step("not a URL"))?;
        Ok(Self::from_query(u.query().unwrap_or_default()))
    }
}

fn url_form_pairs(query: &str) -> Vec<(String, String)> {
    reqwest::Url::parse(&format!("http://x/?{query}"))
        .map(|u| {
            u.query_pairs()
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect()
        })
        .unwrap_or_default()
}

/// Runs the user's part of an authorization-code flow.
pub trait RedirectHandler: Send + Sync + 'static {
    /// Gets ready for one authorization response. `registered` lists the redirect URIs the
    /// client is registered with at this server, so a handler can reuse one (a listener on
    /// the same port) instead of forcing a new registration.
    fn prepare<'a>(
        &'a self,
        registered: &'a [String],
    ) -> RedirectFuture<'a, Box<dyn PendingRedirect>>;
}

/// A redirect URI ready to receive one response.
pub trait PendingRedirect: Send {
    /// The redirect URI to send in the authorization request.
    fn redirect_uri(&self) -> &str;
    /// Shows the user `authorization_url` and waits for the response.
    fn complete(
        self: Box<Self>,
        authorization_url: Url,
    ) -> RedirectFuture<'static, AuthorizationResponse>;
}

/// Shows the user a URL to open.
pub trait BrowserOpener: Send + Sync + 'static {
    /// Opens (or shows) `url`.
    fn open<'a>(&'a self, url: &'a str) -> RedirectFuture<'a, ()>;
}

impl<F, Fut> BrowserOpener for F
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), AuthError>> + Send + 'static,
{
    fn open<'a>(&'a self, url: &'a str) -> RedirectFuture<'a, ()> {
        Box::pin(self(url.to_owned()))
    }
}

/// Prints the URL on stderr for the user to open.
#[derive(Debug, Clone, Copy, Default)]
pub struct PrintUrl;

impl BrowserOpener for PrintUrl {
    fn open<'a>(&'a self, url: &'a str) -> RedirectFuture<'a, ()> {
        eprintln!("Open this URL in a browser to authorize:\n\n  {url}\n");
        Box::pin(async { Ok(()) })
    }
}

/// Prints the URL on stderr and asks the desktop to open it (`xdg-open`, `open`,
/// `explorer`), without a shell. Failing to start a browser is not an error: the URL is on
/// the screen.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemBrowser;

impl BrowserOpener for SystemBrowser {
    fn open<'a>(&'a self, url: &'a str) -> RedirectFuture<'a, ()> {
        Box::pin(async move {
            // Only web URLs go to the desktop's opener (never file:, javascript:, …).
            let parsed = Url::parse(url).map_err(|_| AuthError::redirect_step("not a URL"))?;
            if !matches!(parsed.scheme(), "https" | "http") {
                return Err(AuthError::InsecureUrl {
                    what: "authorization URL",
                    url: url.to_owned(),
                });
            }
            eprintln!(
                "Opening your browser to authorize. If it does not open, visit:\n\n  {url}\n"
            );
            let program = if cfg!(target_os = "macos") {
                "open"
            } else if cfg!(windows) {
                "explorer"
            } else {
                "xdg-open"
            };
            let started = tokio::process::Command::new(program)
                .arg(parsed.as_str())
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .await;
            if let Err(e) = started {
                tracing::debug!("could not start {program}: {e}");
            }
            Ok(())
        })
    }
}

/// A one-shot HTTP listener on `127.0.0.1` that receives the redirect (RFC 8252 §7.3).
#[derive(Clone)]
pub struct LoopbackRedirect {
    port: u16,
    path: String,
    timeout: Duration,
    opener: Arc<dyn BrowserOpener>,
}

impl std::fmt::Debug for LoopbackRedirect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopbackRedirect")
            .field("port", &self.port)
            .field("path", &self.path)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl LoopbackRedirect {
    /// A listener on a free port (or the port of a redirect URI already registered), path
    /// `/callback`, that shows the authorization URL with `opener` and waits up to 5 minutes.
    pub fn new(opener: impl BrowserOpener) -> Self {
        LoopbackRedirect {
            port: 0,
            path: "/callback".into(),
            timeout: Duration::from_secs(300),
            opener: Arc::new(opener),
        }
    }

    /// Listens on this port (0: any free one). Default 0.
    #[must_use]
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// The callback path. Default `/callback`.
    #[must_use]
    pub fn path(mut self, path: impl Into<String>) -> Self {
        let p = path.into();
        self.path = if p.starts_with('/') {
            p
        } else {
            format!("/{p}")
        };
        self
    }

    /// How long to wait for the user. Default 5 minutes.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The port of a registered `http://127.0.0.1:PORT<path>` URI.
    fn registered_port(&self, registered: &[String]) -> Option<u16> {
        registered.iter().find_map(|u| {
            let u = Url::parse(u).ok()?;
            (u.scheme() == "http" && u.host_str() == Some("127.0.0.1") && u.path() == self.path)
                .then(|| u.port())
                .flatten()
        })
    }
}

impl RedirectHandler for LoopbackRedirect {
    fn prepare<'a>(
        &'a self,
        registered: &'a [String],
    ) -> RedirectFuture<'a, Box<dyn PendingRedirect>> {
        Box::pin(async move {
            let bind = |port: u16| tokio::net::TcpListener::bind(("127.0.0.1", port));
            let listener = match (self.port, self.registered_port(registered)) {
                (0, Some(p)) => match bind(p).await {
                    Ok(l) => l,
                    Err(_) => bind(0)
                        .await
                        .map_err(|e| AuthError::redirect("listen", e))?,
                },
                (p, _) => bind(p).await.map_err(|e| {
                    AuthError::redirect("listen on the configured loopback port", e)
                })?,
            };
            let port = listener
                .local_addr()
                .map_err(|e| AuthError::redirect("listen", e))?
                .port();
            let pending: Box<dyn PendingRedirect> = Box::new(PendingLoopback {
                redirect_uri: format!("http://127.0.0.1:{port}{}", self.path),
                listener,
                path: self.path.clone(),
                timeout: self.timeout,
                opener: self.opener.clone(),
            });
            Ok(pending)
        })
    }
}

struct PendingLoopback {
    redirect_uri: String,
    listener: tokio::net::TcpListener,
    path: String,
    timeout: Duration,
    opener: Arc<dyn BrowserOpener>,
}

const DONE_PAGE: &str = "<!doctype html><meta charset=utf-8><title>Authorized</title>\
<p>Authorization complete. You can close this window and return to the application.</p>";
const REFUSED_PAGE: &str = "<!doctype html><meta charset=utf-8><title>Not authorized</title>\
<p>Authorization did not complete. Return to the application for details.</p>";

impl PendingRedirect for PendingLoopback {
    fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }

    fn complete(
        self: Box<Self>,
        authorization_url: Url,
    ) -> RedirectFuture<'static, AuthorizationResponse> {
        Box::pin(async move {
            let (tx, mut rx) = tokio::sync::mpsc::channel::<AuthorizationResponse>(1);
            let PendingLoopback {
                listener,
                path,
                timeout,
                opener,
                ..
            } = *self;
            let serve = async {
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        continue;
                    };
                    let tx = tx.clone();
                    let path = path.clone();
                    tokio::spawn(async move {
                        let service = hyper::service::service_fn(
                            move |req: http::Request<hyper::body::Incoming>| {
                                let tx = tx.clone();
                                let path = path.clone();
                                async move {
                                    Ok::<_, std::convert::Infallible>(
                                        callback(req, &path, &tx).await,
                                    )
                                }
                            },
                        );
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                            .await;
                    });
                }
            };
            let wait = async {
                let opened = opener.open(authorization_url.as_str());
                // The browser may deliver the redirect before the opener returns (a scripted
                // one does): wait for both.
                let (opened, got) = tokio::join!(opened, rx.recv());
                opened?;
                got.ok_or_else(|| AuthError::redirect_step("the listener stopped"))
            };
            tokio::select! {
                r = tokio::time::timeout(timeout, wait) => r.map_err(|_| AuthError::RedirectTimeout { after: timeout })?,
                () = serve => Err(AuthError::redirect_step("the listener stopped")),
            }
        })
    }
}

async fn callback(
    req: http::Request<hyper::body::Incoming>,
    path: &str,
    tx: &tokio::sync::mpsc::Sender<AuthorizationResponse>,
) -> http::Response<http_body_util::Full<bytes::Bytes>> {
    let page = |status: http::StatusCode, body: &'static str| {
        let mut r = http::Response::new(http_body_util::Full::new(bytes::Bytes::from_static(
            body.as_bytes(),
        )));
        *r.status_mut() = status;
        r.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("text/html; charset=utf-8"),
        );
        r.headers_mut().insert(
            http::header::CACHE_CONTROL,
            http::HeaderValue::from_static("no-store"),
        );
        r
    };
    if req.method() != http::Method::GET || req.uri().path() != path {
        return page(
            http::StatusCode::NOT_FOUND,
            "<!doctype html><title>Not found</title>",
        );
    }
    let response = AuthorizationResponse::from_query(req.uri().query().unwrap_or_default());
    let ok = response.code.is_some() && response.error.is_none();
    // Only the first answer counts; later ones find the channel full or closed.
    let _ = tx.try_send(response);
    if ok {
        page(http::StatusCode::OK, DONE_PAGE)
    } else {
        page(http::StatusCode::BAD_REQUEST, REFUSED_PAGE)
    }
}

/// Prints the authorization URL and reads back, from stdin (or another reader), the address
/// the browser was sent to after authorizing, or just the code.
///
/// The redirect URI needs no listener: the browser shows an error page whose address holds
/// the answer. A bare code carries no `state` or `iss` to check, so a server that promises
/// `iss` (RFC 9207) needs the whole address.
#[derive(Clone)]
pub struct PasteRedirect {
    redirect_uri: String,
    input: Arc<tokio::sync::Mutex<Box<dyn AsyncBufRead + Send + Unpin>>>,
}

impl std::fmt::Debug for PasteRedirect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PasteRedirect")
            .field("redirect_uri", &self.redirect_uri)
            .finish_non_exhaustive()
    }
}

impl PasteRedirect {
    /// Reads the answer from stdin; `redirect_uri` is where the server sends the browser
    /// (e.g. `http://127.0.0.1:8976/callback`, registered or accepted by the server).
    pub fn new(redirect_uri: impl Into<String>) -> Self {
        Self::with_input(redirect_uri, tokio::io::BufReader::new(tokio::io::stdin()))
    }

    /// Reads the answer from `input`.
    pub fn with_input(
        redirect_uri: impl Into<String>,
        input: impl AsyncBufRead + Send + Unpin + 'static,
    ) -> Self {
        PasteRedirect {
            redirect_uri: redirect_uri.into(),
            input: Arc::new(tokio::sync::Mutex::new(Box::new(input))),
        }
    }
}

impl RedirectHandler for PasteRedirect {
    fn prepare<'a>(
        &'a self,
        _registered: &'a [String],
    ) -> RedirectFuture<'a, Box<dyn PendingRedirect>> {
        let pending: Box<dyn PendingRedirect> = Box::new(self.clone());
        Box::pin(async move { Ok(pending) })
    }
}

impl PendingRedirect for PasteRedirect {
    fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }

    fn complete(
        self: Box<Self>,
        authorization_url: Url,
    ) -> RedirectFuture<'static, AuthorizationResponse> {
        Box::pin(async move {
            // One prompt and one answer at a time, should two flows run at once.
            let mut input = self.input.lock().await;
            eprintln!(
                "Open this URL in a browser to authorize:\n\n  {authorization_url}\n\n\
                 Then paste the address the browser ends on (it may show an error page):"
            );
            let mut line = String::new();
            input
                .read_line(&mut line)
                .await
                .map_err(|e| AuthError::redirect("reading the answer", e))?;
            parse_pasted(line.trim())
        })
    }
}

fn parse_pasted(text: &str) -> Result<AuthorizationResponse, AuthError> {
    if text.is_empty() {
        return Err(AuthError::redirect_step("no answer was pasted"));
    }
    if text.contains("://") {
        return AuthorizationResponse::from_url(text);
    }
    if text.contains('=') {
        return Ok(AuthorizationResponse::from_query(
            text.trim_start_matches('?'),
        ));
    }
    Ok(AuthorizationResponse {
        code: Some(Secret::new(text)),
        bare_code: true,
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_parse() {
        let r = AuthorizationResponse::from_url(
            "http://127.0.0.1:1/cb?code=a%2Bb&state=s1&iss=https%3A%2F%2Fas",
        )
        .unwrap();
        assert_eq!(r.code.as_ref().map(Secret::expose), Some("a+b"));
        assert_eq!(r.state.as_deref(), Some("s1"));
        assert_eq!(r.iss.as_deref(), Some("https://as"));
        assert!(!format!("{r:?}").contains("a+b"));
        let e =
            AuthorizationResponse::from_query("error=access_denied&error_description=no&state=s");
        assert_eq!(e.error.as_deref(), Some("access_denied"));
        assert!(e.code.is_none());
        let bare = parse_pasted("abc").unwrap();
        assert!(bare.bare_code && bare.code.is_some());
        let q = parse_pasted("?code=c&state=s").unwrap();
        assert!(!q.bare_code && q.state.as_deref() == Some("s"));
        assert!(parse_pasted("").is_err());
    }

    #[tokio::test]
    async fn paste_reads_the_address() {
        let input: &'static [u8] = b"http://127.0.0.1:9/callback?code=xyz&state=st\n";
        let paste = PasteRedirect::with_input("http://127.0.0.1:9/callback", input);
        let pending = paste.prepare(&[]).await.unwrap();
        assert_eq!(pending.redirect_uri(), "http://127.0.0.1:9/callback");
        let r = pending
            .complete(Url::parse("https://as/authorize?x=1").unwrap())
            .await
            .unwrap();
        assert_eq!(
            r.code.map(|c| c.expose().to_owned()).as_deref(),
            Some("xyz")
        );
        assert_eq!(r.state.as_deref(), Some("st"));
    }

    #[tokio::test]
    async fn loopback_receives_the_redirect_and_ignores_other_paths() {
        let opener = |url: String| async move {
            // A scripted browser: the authorization server would redirect here.
            let u = Url::parse(&url).unwrap();
            let back = u
                .query_pairs()
                .find(|(k, _)| k == "back")
                .unwrap()
                .1
                .into_owned();
            // The workspace's one provider, as `transport::install_crypto_provider` installs it
            // (the client may not import the transports): a no-op when one is installed.
            let _ = rustls::crypto::ring::default_provider().install_default();
            let client = reqwest::Client::new();
            let base = Url::parse(&back).unwrap();
            let miss = client
                .get(base.join("/favicon.ico").unwrap())
                .send()
                .await
                .unwrap();
            assert_eq!(miss.status(), 404);
            let hit = client
                .get(format!("{back}?code=c1&state=s1"))
                .send()
                .await
                .unwrap();
            assert_eq!(hit.status(), 200);
            Ok(())
        };
        let redirect = LoopbackRedirect::new(opener).timeout(Duration::from_secs(10));
        let pending = redirect.prepare(&[]).await.unwrap();
        let uri = pending.redirect_uri().to_owned();
        assert!(
            uri.starts_with("http://127.0.0.1:") && uri.ends_with("/callback"),
            "{uri}"
        );
        let mut auth = Url::parse("https://as/authorize").unwrap();
        auth.query_pairs_mut().append_pair("back", &uri);
        let r = pending.complete(auth).await.unwrap();
        assert_eq!(r.state.as_deref(), Some("s1"));
        // A registered redirect URI's port is reused when free.
        let port: u16 = Url::parse(&uri).unwrap().port().unwrap();
        let again = LoopbackRedirect::new(PrintUrl)
            .prepare(std::slice::from_ref(&uri))
            .await
            .unwrap();
        assert_eq!(Url::parse(again.redirect_uri()).unwrap().port(), Some(port));
    }
}
