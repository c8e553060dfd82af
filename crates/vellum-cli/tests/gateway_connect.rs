//! `vellum connect URL` driven over stdio by the official TypeScript SDK's stdio client (a
//! desktop host; `tests/interop/gateway/connect-driver.mjs`), against `vellum serve` as real
//! processes: a static bearer header; OAuth with a login in the browser on the first 401
//! and, next time, the token `vellum login`'s store kept; a stream resumed with
//! `Last-Event-ID`; and a server that lost the session (restarted), where the call in
//! flight fails with a clear error and the next one gets a new session. On stdout only
//! protocol messages (the SDK reports anything else, and the driver fails).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use jsonwebtoken::{EncodingKey, Header};
use serde_json::{Value, json};
use vellum_testkit::oauth::{AsOptions, TestAuthServer};
use vellum_testkit::process::{ServerProcess, vellum_bin};

const SECRET: &str = "a test secret of at least thirty-two bytes";
const ISSUER: &str = "http://127.0.0.1:9/as";

fn interop(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/interop/gateway")
        .join(path)
}

/// The TypeScript host, running `vellum connect ARGS`.
struct Host {
    child: Child,
    stdin: ChildStdin,
    out: mpsc::Receiver<Value>,
    err: mpsc::Receiver<String>,
}

impl Host {
    fn start(args: &[&str], token_dir: Option<&Path>) -> Host {
        assert!(
            interop("node_modules/@modelcontextprotocol/sdk/package.json").exists(),
            "\n\nrun `npm ci` in tests/interop/gateway (bash scripts/test.sh does it)\n\n"
        );
        let mut cmd = Command::new("node");
        cmd.arg(interop("connect-driver.mjs"))
            .arg(vellum_bin())
            .args(args)
            .env_remove("RUST_LOG")
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(d) = token_dir {
            cmd.env("VELLUM_TOKEN_DIR", d);
        }
        let mut child = cmd.spawn().expect("node runs");
        let stdin = child.stdin.take().unwrap();
        let (tx, out) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let v: Value = serde_json::from_str(&line).expect("the driver prints JSON");
                assert!(v.get("stdout_error").is_none(), "connect's stdout: {v}");
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        let (tx, err) = mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("[host] {line}");
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Host {
            child,
            stdin,
            out,
            err,
        }
    }

    fn send(&mut self, cmd: Value) {
        writeln!(self.stdin, "{cmd}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn recv(&self) -> Value {
        self.out
            .recv_timeout(Duration::from_secs(60))
            .expect("the host answers within 60 s")
    }

    fn ask(&mut self, cmd: Value) -> Value {
        self.send(cmd);
        self.recv()
    }

    fn call(&mut self, name: &str, arguments: Value) -> Value {
        self.ask(json!({"op": "call", "name": name, "arguments": arguments}))
    }

    /// The next line of connect's stderr holding `needle`.
    fn stderr_with(&self, needle: &str) -> String {
        loop {
            let line = self
                .err
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("no stderr line with {needle:?}"));
            if line.contains(needle) {
                return line;
            }
        }
    }

    fn close(mut self) {
        assert_eq!(self.ask(json!({"op": "close"}))["ok"], true);
        let _ = self.child.wait();
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn hs256_token(audience: &str) -> String {
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 600;
    let claims = json!({"iss": ISSUER, "sub": "desktop-user", "aud": audience, "exp": exp});
    let key = EncodingKey::from_secret(SECRET.as_bytes()).unwrap();
    jsonwebtoken::encode(&Header::default(), &claims, &key).unwrap()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn serve_on(port: u16, args: &[&str], env: &[(&str, &str)]) -> ServerProcess {
    let mut cmd = Command::new(vellum_bin());
    cmd.args(["serve", "--addr", &format!("127.0.0.1:{port}")])
        .args(args)
        .envs(env.iter().copied())
        .env_remove("RUST_LOG");
    ServerProcess::spawn(cmd)
}

#[test]
fn a_bearer_header_reaches_a_protected_server() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let _server = serve_on(
        port,
        &["--auth-issuer", ISSUER, "--auth-audience", &url],
        &[("VELLUM_AUTH_HS256_SECRET", SECRET)],
    );
    let header = format!("Authorization: Bearer {}", hs256_token(&url));
    let mut host = Host::start(&[&url, "--header", &header], None);
    let connected = host.ask(json!({"op": "connect"}));
    assert_eq!(connected["ok"], true, "{connected}");
    assert_eq!(connected["server"], "hello-world");
    let tools = host.ask(json!({"op": "list"}));
    assert!(
        tools["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("hello_world")),
        "{tools}"
    );
    let r = host.call("hello_world", json!({"user_name": "Alice"}));
    assert_eq!(r["text"], "Hello World, Alice", "{r}");
    host.close();

    // Without a credential, and told never to log in: a clear error to the host.
    let mut host = Host::start(&[&url, "--no-login"], Some(&token_dir("none")));
    let refused = host.ask(json!({"op": "connect"}));
    assert_eq!(refused["ok"], false, "{refused}");
    let error = refused["error"].as_str().unwrap_or_default();
    assert!(error.contains("authorization"), "{refused}");
}

fn token_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vellum-connect-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_on_the_first_401_then_the_stored_token() {
    let auth = TestAuthServer::start(AsOptions::default()).await;
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let _server = serve_on(
        port,
        &[
            "--auth-jwks",
            &auth.jwks_url(),
            "--auth-issuer",
            &auth.issuer,
            "--auth-audience",
            &url,
        ],
        &[],
    );
    let dir = token_dir("login");

    // Nothing stored: the first 401 starts the login; the user opens the URL it prints.
    let mut host = Host::start(&[&url, "--no-browser"], Some(&dir));
    host.send(json!({"op": "connect"}));
    let line = host.stderr_with("http://");
    let at = line.find("http://").unwrap();
    let auth_url = line[at..].trim().to_owned();
    vellum::transport::install_crypto_provider();
    let page = reqwest::get(&auth_url).await.expect("the browser step");
    assert!(page.status().is_success(), "{page:?}");
    let connected = tokio::task::block_in_place(|| host.recv());
    assert_eq!(connected["ok"], true, "{connected}");
    let r = tokio::task::block_in_place(|| host.call("hello_world", json!({"user_name": "Bo"})));
    assert_eq!(r["text"], "Hello World, Bo", "{r}");
    tokio::task::block_in_place(|| host.close());
    assert_eq!(auth.token_requests("authorization_code").len(), 1);

    // Next time the store has the token: no login.
    let mut host = Host::start(&[&url, "--no-login"], Some(&dir));
    let r = tokio::task::block_in_place(|| {
        assert_eq!(host.ask(json!({"op": "connect"}))["ok"], true);
        host.call("hello_world", json!({"user_name": "Cy"}))
    });
    assert_eq!(r["text"], "Hello World, Cy", "{r}");
    assert_eq!(
        auth.token_requests("authorization_code").len(),
        1,
        "no second login"
    );
    tokio::task::block_in_place(|| host.close());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn streams_resume_and_a_lost_session_is_replaced() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let args = ["--server", "everything", "--event-store", "memory"];
    let mut server = serve_on(port, &args, &[]);
    let mut host = Host::start(&[&url, "--protocol", "legacy"], None);
    assert_eq!(host.ask(json!({"op": "connect"}))["ok"], true);

    // The server ends the call's stream early; connect resumes it with Last-Event-ID.
    let r = host.call("test_reconnection", json!({}));
    assert_eq!(r["text"], "Reconnection test completed", "{r}");

    // The server restarts (every session lost) while a call runs: that call fails, saying
    // so; the next one runs in a new session.
    // (A question the host does not answer holds the call in flight.)
    host.send(json!({"op": "call", "name": "test_elicitation", "arguments": {"message": "?"}, "tag": "held"}));
    assert_eq!(host.recv()["asked"], "elicitation/create");
    server.kill();
    let _restarted = serve_on(port, &args, &[]);
    let lost = host.recv();
    assert_eq!(lost["tag"], "held");
    assert_eq!(lost["ok"], false, "{lost}");
    assert!(
        lost["error"].as_str().unwrap_or_default().contains("lost"),
        "{lost}"
    );
    eprintln!("the call in flight failed with: {}", lost["error"]);
    let r = host.call("test_simple_text", json!({}));
    assert_eq!(r["ok"], true, "{r}");
    host.close();
}
