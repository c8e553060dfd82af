//! `vellum login` end to end: our own `vellum serve --auth-jwks` (a child process) as the
//! MCP server, the test kit's authorization server, the CLI's loopback redirect, and the
//! browser step scripted (the test opens the URL the CLI prints, as a user would). Then
//! every command uses the stored tokens, refreshes them when they have expired, and says in
//! one line what to run when there are none.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use vellum_testkit::oauth::{AsOptions, TestAuthServer};
use vellum_testkit::process::{ServerProcess, vellum_bin};

/// A fresh token directory for one test.
fn token_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vellum-cli-login-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// `vellum serve` on a free loopback port, taking tokens of `issuer` for its own URL.
fn serve_protected(auth: &TestAuthServer) -> ServerProcess {
    // The audience names the server's URL, so the port is chosen before it starts.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let mut cmd = Command::new(vellum_bin());
    cmd.args(["serve", "--addr", &format!("127.0.0.1:{port}")])
        .args(["--auth-jwks", &auth.jwks_url()])
        .args(["--auth-issuer", &auth.issuer])
        .args(["--auth-audience", &resource])
        .env_remove("RUST_LOG");
    ServerProcess::spawn(cmd)
}

/// Runs `vellum ARGS` with the token directory `dir`, bounded by coreutils `timeout`.
fn vellum(dir: &Path, args: &[&str]) -> Output {
    Command::new("timeout")
        .args(["-k", "5", "60"])
        .arg(vellum_bin())
        .args(args)
        .env("VELLUM_TOKEN_DIR", dir)
        .env_remove("RUST_LOG")
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .stdin(Stdio::null())
        .output()
        .expect("vellum runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `vellum login URL`, with the user's part done by the test: read the authorization URL
/// the CLI prints, open it like a browser (the authorization server approves and redirects
/// to the CLI's listener on 127.0.0.1).
async fn login(dir: &Path, url: &str) -> Output {
    let mut child = Command::new(vellum_bin())
        .args(["login", url, "--no-browser"])
        .env("VELLUM_TOKEN_DIR", dir)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("vellum login starts");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let reader = std::thread::spawn(move || {
        let mut tx = Some(tx);
        let mut seen = Vec::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(u) = line.trim().strip_prefix("http")
                && let Some(tx) = tx.take()
            {
                let _ = tx.send(format!("http{u}"));
            }
            seen.push(line);
        }
        seen
    });
    let auth_url = tokio::time::timeout(Duration::from_secs(30), rx)
        .await
        .expect("vellum login prints the authorization URL within 30 s")
        .expect("vellum login prints the authorization URL");
    vellum::transport::install_crypto_provider();
    let page = reqwest::get(&auth_url).await.expect("the browser step");
    assert!(page.status().is_success(), "the redirect page: {page:?}");
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stderr_lines = reader.join().unwrap();
    Output {
        status: out.status,
        stdout: out.stdout,
        stderr: stderr_lines.join("\n").into_bytes(),
    }
}

/// The one record file in `dir`.
fn record_file(dir: &Path) -> PathBuf {
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    assert_eq!(files.len(), 1, "one record: {files:?}");
    files[0].clone()
}

#[cfg(unix)]
fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_then_every_command_uses_and_refreshes_the_stored_tokens() {
    let auth = TestAuthServer::start(AsOptions::default()).await;
    let server = serve_protected(&auth);
    let url = server.mcp_url();
    let dir = token_dir("flow");

    // No login yet: one line that names the command to run.
    let out = tokio::task::block_in_place(|| vellum(&dir, &["tools", "list", &url]));
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(
        err.contains(&format!("run `vellum login {url}`")),
        "names the command: {err}"
    );

    // Login: dynamic registration, authorization code with PKCE, tokens on disk.
    let out = login(&dir, &url).await;
    assert!(out.status.success(), "login: {}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains(&format!("Logged in to {url} through {}", auth.issuer)),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(auth.token_requests("authorization_code").len(), 1);
    let file = record_file(&dir);
    #[cfg(unix)]
    {
        assert_eq!(mode(&file), 0o600, "the record is the user's only");
        assert_eq!(mode(&dir), 0o700, "so is the directory");
    }
    let record: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let first_token = record["tokens"]["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(record["tokens"]["refresh_token"].is_string());

    // A command uses them.
    let out = tokio::task::block_in_place(|| vellum(&dir, &["tools", "list", &url]));
    assert!(out.status.success(), "tools list: {}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("hello_world"),
        "{}",
        text(&out.stdout)
    );
    assert!(
        !text(&out.stderr).contains(&first_token) && !text(&out.stdout).contains(&first_token),
        "the token is never printed"
    );
    assert_eq!(auth.token_requests("refresh_token").len(), 0);

    // The access token has expired (as far as the client knows): the next command refreshes
    // it before sending, and keeps the new tokens.
    let mut record = record;
    record["tokens"]["expires_at"] = serde_json::json!(1);
    std::fs::write(&file, serde_json::to_vec(&record).unwrap()).unwrap();
    let out = tokio::task::block_in_place(|| vellum(&dir, &["tools", "list", &url]));
    assert!(out.status.success(), "after expiry: {}", text(&out.stderr));
    assert_eq!(
        auth.token_requests("refresh_token").len(),
        1,
        "refreshed once"
    );
    let record: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let refreshed = record["tokens"]["access_token"].as_str().unwrap();
    assert_ne!(refreshed, first_token, "the new token is stored");
    assert!(record["tokens"]["expires_at"].as_u64().unwrap() > 1);

    // Logout revokes and forgets; the commands are back to asking for a login.
    let out = tokio::task::block_in_place(|| vellum(&dir, &["logout", &url]));
    assert!(out.status.success(), "logout: {}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("Logged out"),
        "{}",
        text(&out.stdout)
    );
    assert!(
        !auth.requests_to("/revoke").is_empty(),
        "revoked at the server"
    );
    assert!(!file.exists(), "the record is gone");
    let out = tokio::task::block_in_place(|| vellum(&dir, &["ping", &url]));
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("vellum login"),
        "{}",
        text(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
