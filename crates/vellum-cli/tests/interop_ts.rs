//! Interop with the official MCP TypeScript SDK client (`@modelcontextprotocol/sdk`, pinned
//! in `tests/interop/ts/package-lock.json`): `tests/interop/ts/client.mjs` connects over
//! Streamable HTTP, lists the tools, calls `hello_world` with `user_name: "Alice"` and exits
//! non-zero on any mismatch. It runs against `vellum serve` (real process, ephemeral port)
//! and against the seed's example binary on its fixed port 8000.
//!
//! Needs Node 20+ and `npm ci` in `tests/interop/ts` (`bash scripts/test.sh` does both);
//! without them the tests fail with a message saying so.

// Test code: a panic is how a test fails (clippy.toml allows it only inside #[test] fns).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use vellum_testkit::process::{self, ServerProcess};

/// How long the client may take to finish.
const DEADLINE: Duration = Duration::from_secs(60);

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace root exists")
}

fn ts_dir() -> PathBuf {
    workspace_root().join("tests/interop/ts")
}

/// Fails loudly unless node and the pinned SDK are installed.
fn require_node_client() -> PathBuf {
    let dir = ts_dir();
    let node = Command::new("node").arg("--version").output();
    match node {
        Ok(o) if o.status.success() => {}
        _ => panic!(
            "\n\nNODE IS MISSING: the TypeScript SDK interop tests need Node 20+ on PATH \
             (install Node 20, then run `bash scripts/test.sh`).\n\n"
        ),
    }
    let sdk = dir.join("node_modules/@modelcontextprotocol/sdk/package.json");
    if !sdk.is_file() {
        panic!(
            "\n\nTHE TYPESCRIPT SDK IS NOT INSTALLED: {} is missing.\n\
             Run `npm ci` in {} (bash scripts/test.sh does it).\n\n",
            sdk.display(),
            dir.display()
        );
    }
    dir.join("client.mjs")
}

/// What the node client did.
struct ClientRun {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

/// Runs the TypeScript client against `url`, killing it after [`DEADLINE`].
fn run_client(url: &str) -> ClientRun {
    let script = require_node_client();
    let mut child = Command::new("node")
        .arg(&script)
        .arg(url)
        .current_dir(ts_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run node {}: {e}", script.display()));
    let (tx, rx) = mpsc::channel();
    for (which, pipe) in [
        (
            0,
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        ),
        (
            1,
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        ),
    ] {
        let mut pipe = pipe.expect("the pipe is there");
        let tx = tx.clone();
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = pipe.read_to_string(&mut s);
            let _ = tx.send((which, s));
        });
    }
    drop(tx);
    // Both pipes close when the process exits: that is the event waited for.
    let started = Instant::now();
    let mut out = [String::new(), String::new()];
    for _ in 0..2 {
        let left = DEADLINE.saturating_sub(started.elapsed());
        match rx.recv_timeout(left) {
            Ok((which, s)) => out[which] = s,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the TypeScript client did not finish within {DEADLINE:?}");
            }
        }
    }
    let status = child.wait().expect("the client's exit status");
    let [stdout, stderr] = out;
    ClientRun {
        status,
        stdout,
        stderr,
    }
}

fn assert_client_succeeds(url: &str) {
    let run = run_client(url);
    assert!(
        run.status.success(),
        "the TypeScript SDK client failed against {url} ({}):\n--- stdout\n{}\n--- stderr\n{}",
        run.status,
        run.stdout,
        run.stderr
    );
    assert_eq!(
        run.stdout.trim(),
        "Hello World, Alice",
        "stderr:\n{}",
        run.stderr
    );
}

fn vellum_serve(extra: &[&str]) -> ServerProcess {
    let args: Vec<&str> = ["--server", "hello-world"]
        .iter()
        .chain(extra)
        .copied()
        .collect();
    process::vellum_serve(&args)
}

#[test]
fn typescript_client_talks_to_vellum_serve() {
    require_node_client();
    let server = vellum_serve(&[]);
    assert!(
        server.url.starts_with("http://127.0.0.1:"),
        "{}",
        server.url
    );
    assert_client_succeeds(&server.url);
}

#[test]
fn typescript_client_talks_to_vellum_serve_with_json_responses() {
    require_node_client();
    let server = vellum_serve(&["--json-response"]);
    assert_client_succeeds(&server.url);
}

#[test]
fn typescript_client_talks_to_vellum_serve_with_http_caching() {
    require_node_client();
    let server = vellum_serve(&["--json-response", "--list-ttl", "30s", "--read-ttl", "5s"]);
    assert_client_succeeds(&server.url);
}

/// Serves, in this process, a server whose `hello_world` answers the wrong greeting.
fn wrong_greeting_server() -> (String, tokio::sync::oneshot::Sender<()>) {
    use vellum::prelude::*;

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Input {
        /// 调用方用户名
        #[allow(dead_code)]
        user_name: String,
    }

    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let (ready, url) = mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        rt.block_on(async move {
            let server = Server::new(
                Implementation::new("hello-world", "0.1.0"),
                ServerOptions::default(),
            );
            server
                .add_tool(
                    Tool::new("hello_world", "根据 user_name 返回问候语"),
                    |_ctx: RequestContext, _req: CallToolRequest, _input: Input| async move {
                        Ok::<_, HandlerError>(CallToolResult::text("Goodbye"))
                    },
                )
                .expect("the tool registers");
            let handler =
                StreamableHttpHandler::for_server(server, StreamableHttpOptions::default());
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind 127.0.0.1:0");
            let addr = listener.local_addr().expect("an address");
            let _ = ready.send(format!("http://{addr}/mcp"));
            let _ = vellum::transport::http::serve(listener, handler)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
    });
    let url = url
        .recv_timeout(DEADLINE)
        .expect("the in-process server started");
    (url, stop)
}

#[test]
fn the_typescript_client_fails_on_a_mismatch() {
    // The client must be able to fail: a wrong greeting makes it exit non-zero and say why.
    require_node_client();
    let (url, stop) = wrong_greeting_server();
    let run = run_client(&url);
    let _ = stop.send(());
    assert!(!run.status.success(), "stdout: {}", run.stdout);
    assert!(
        run.stderr.contains("MISMATCH content"),
        "the client should name the mismatch:\n{}",
        run.stderr
    );

    // And a refused connection fails too.
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("an address");
    drop(listener);
    let run = run_client(&format!("http://{addr}/mcp"));
    assert!(!run.status.success(), "stdout: {}", run.stdout);
}

/// The seed's example listens on the fixed port 8000.
const EXAMPLE_PORT: u16 = 8000;

/// Waits until something accepts connections on `addr`. The example prints its start line
/// before it binds, so the line alone does not mean it is listening yet.
fn wait_listening(addr: SocketAddr) {
    let started = Instant::now();
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        assert!(
            started.elapsed() < DEADLINE,
            "nothing listens on {addr} after {DEADLINE:?}"
        );
        std::thread::yield_now();
    }
}

#[test]
fn typescript_client_talks_to_the_example_on_port_8000() {
    require_node_client();
    let exe = process::example_bin("hello_world");
    let addr = SocketAddr::from(([127, 0, 0, 1], EXAMPLE_PORT));
    match TcpListener::bind(addr) {
        Ok(l) => drop(l),
        Err(e) => panic!(
            "\n\nPORT {EXAMPLE_PORT} IS BUSY ({e}): the seed's example only listens on \
             127.0.0.1:{EXAMPLE_PORT}. Stop whatever uses it (another `cargo run --example \
             hello_world`?) and run the tests again.\n\n"
        ),
    }
    let server = ServerProcess::spawn(Command::new(&exe));
    assert_eq!(server.url, format!("http://127.0.0.1:{EXAMPLE_PORT}"));
    wait_listening(addr);
    assert_client_succeeds(&server.url);
    assert_client_succeeds(&format!("{}/mcp", server.url));
}
