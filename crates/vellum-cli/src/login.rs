//! `vellum login URL` and `vellum logout URL`, and the OAuth client every other command
//! uses: tokens live in a [`FileTokenStore`] (one 0600 file per authorization server and MCP
//! server), so a login serves every later command, which refreshes them as they expire.
//!
//! Only `login` talks to the user (a loopback listener on 127.0.0.1 receives the redirect;
//! the browser opens when there is a desktop, else the URL is printed). The other commands
//! never start an interactive flow: a server that needs a login they cannot do by refreshing
//! makes them stop with one line naming the command to run.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use vellum::client::auth::{
    AuthError, FileTokenStore, LoopbackRedirect, OAuth, OAuthBuilder, PreregisteredClient,
    PrintUrl, SystemBrowser,
};

/// Where tokens are kept and which client the commands are at the authorization server
/// (shared by `login`, `logout` and every client command).
#[derive(Debug, Args, Clone, Default)]
pub(crate) struct OAuthArgs {
    /// The directory tokens are kept in (default: $XDG_CONFIG_HOME/vellum/oauth, else
    /// ~/.config/vellum/oauth).
    #[arg(long, env = "VELLUM_TOKEN_DIR", value_name = "DIR")]
    token_dir: Option<PathBuf>,
    /// A client id registered with the authorization server in advance (default: the
    /// client registers itself where the server offers it).
    #[arg(long, env = "VELLUM_CLIENT_ID", value_name = "ID")]
    client_id: Option<String>,
    /// The secret of --client-id (confidential clients).
    #[arg(
        long,
        env = "VELLUM_CLIENT_SECRET",
        hide_env_values = true,
        value_name = "SECRET",
        requires = "client_id"
    )]
    client_secret: Option<String>,
}

impl OAuthArgs {
    /// The token store the commands share.
    fn store(&self) -> anyhow::Result<FileTokenStore> {
        let dir = match &self.token_dir {
            Some(d) => d.clone(),
            None => FileTokenStore::default_dir()
                .context("no home directory for the token store: give --token-dir")?,
        };
        Ok(FileTokenStore::new(dir))
    }

    /// An OAuth client for `url` without a redirect handler: it uses and refreshes stored
    /// tokens but never starts a login.
    pub(crate) fn builder(&self, url: &str) -> anyhow::Result<OAuthBuilder> {
        let mut b = OAuth::builder(url)
            .client_name("vellum CLI")
            .store(self.store()?);
        if let Some(id) = &self.client_id {
            let mut client = PreregisteredClient::new(id);
            if let Some(s) = &self.client_secret {
                client = client.secret(s.clone());
            }
            b = b.preregistered(client);
        }
        Ok(b)
    }

    /// The OAuth client of a command that is not `login`.
    pub(crate) fn client(&self, url: &str) -> anyhow::Result<OAuth> {
        self.builder(url)?
            .build()
            .with_context(|| format!("OAuth for {url}"))
    }
}

/// `vellum login URL`.
#[derive(Debug, Args)]
pub(crate) struct LoginArgs {
    /// The MCP server's Streamable HTTP endpoint.
    url: String,
    /// Ask for these scopes (repeatable; default: what the server names).
    #[arg(long = "scope", value_name = "SCOPE")]
    scopes: Vec<String>,
    /// Print the authorization URL instead of opening a browser.
    #[arg(long)]
    no_browser: bool,
    /// The loopback port the redirect comes back to (default: any free port).
    #[arg(long, value_name = "PORT", default_value_t = 0)]
    port: u16,
    #[command(flatten)]
    oauth: OAuthArgs,
}

/// `vellum logout URL`.
#[derive(Debug, Args)]
pub(crate) struct LogoutArgs {
    /// The MCP server's Streamable HTTP endpoint.
    url: String,
    #[command(flatten)]
    oauth: OAuthArgs,
}

/// True when a browser can be opened here: a desktop session on Linux and the BSDs, always
/// on macOS and Windows.
pub(crate) fn has_desktop() -> bool {
    if cfg!(any(target_os = "macos", windows)) {
        return true;
    }
    ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()))
}

/// Authorizes the CLI at `url`'s authorization server and keeps the tokens.
pub(crate) async fn login(args: LoginArgs) -> anyhow::Result<()> {
    let redirect = if args.no_browser || !has_desktop() {
        LoopbackRedirect::new(PrintUrl)
    } else {
        LoopbackRedirect::new(SystemBrowser)
    }
    .port(args.port);
    let mut b = args.oauth.builder(&args.url)?.redirect(redirect);
    if !args.scopes.is_empty() {
        b = b.scopes(args.scopes.iter().cloned());
    }
    let oauth = b
        .build()
        .with_context(|| format!("OAuth for {}", args.url))?;
    let status = oauth
        .login()
        .await
        .with_context(|| format!("cannot log in to {}", args.url))?;
    let scopes = if status.scopes.is_empty() {
        String::new()
    } else {
        format!(" (scopes: {})", status.scopes.join(" "))
    };
    let refresh = if status.refreshable {
        ", refreshed as it expires"
    } else {
        ""
    };
    println!(
        "Logged in to {} through {}{scopes}{refresh}.",
        args.url, status.issuer
    );
    Ok(())
}

/// Forgets (and revokes where offered) what is held for `url`.
pub(crate) async fn logout(args: LogoutArgs) -> anyhow::Result<()> {
    let oauth = args.oauth.client(&args.url)?;
    let n = oauth
        .logout()
        .await
        .with_context(|| format!("cannot log out of {}", args.url))?;
    if n == 0 {
        println!("Not logged in to {}.", args.url);
    } else {
        println!("Logged out of {}.", args.url);
    }
    Ok(())
}

/// The one line a command prints when `url` needs a login it cannot do itself, if `err`
/// says so.
pub(crate) fn login_hint(err: &anyhow::Error, url: &str) -> Option<String> {
    let auth = err.chain().find_map(AuthError::find_in)?;
    match auth {
        AuthError::LoginRequired { .. } => Some(format!(
            "{url} needs OAuth authorization: run `vellum login {url}` first"
        )),
        other => Some(format!("authorization for {url} failed: {other}")),
    }
}
