//! TLS on the library's own accept loop (feature `tls`), over real sockets with a CA made in
//! the test: calls (HTTP/2 by ALPN, HTTP/1.1 for clients that offer only it), an SSE stream resumed after a dropped connection, a certificate reload
//! that the next handshake sees while an open stream stays up on the old certificate, a
//! reload that fails and keeps the old certificate, and a silent client that holds up no
//! other handshake; and TLS over a Unix socket.

// Test code: a panic is how a test fails (clippy.toml allows it only inside #[test] fns).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::sync::Arc;

use reqwest::StatusCode;
use serde_json::json;
use tokio::sync::oneshot;
use vellum::store::MemoryEventStore;
use vellum::transport::http::{StreamableHttpHandler, StreamableHttpOptions, TlsConfig, serve};
use vellum_testkit::fixture::{Fixture, test_server};
use vellum_testkit::http::{McpHttp, SseReader, Streamed};
use vellum_testkit::tls::{Leaf, TestCa, peer_certificate};
use vellum_testkit::within;

/// The fixture served over TLS on `127.0.0.1:0` until dropped.
struct TlsServer {
    addr: SocketAddr,
    tls: TlsConfig,
    _stop: oneshot::Sender<()>,
}

impl TlsServer {
    async fn start(f: &Fixture, leaf: &Leaf, options: StreamableHttpOptions) -> TlsServer {
        let tls = TlsConfig::from_pem_files(&leaf.cert, &leaf.key).expect("the leaf loads");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let handler = StreamableHttpHandler::for_server(f.server.clone(), options);
        let (stop, stopped) = oneshot::channel::<()>();
        let served = tls.clone();
        tokio::spawn(
            serve(listener, handler)
                .tls(served)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .into_future(),
        );
        TlsServer {
            addr,
            tls,
            _stop: stop,
        }
    }

    fn url(&self) -> String {
        format!("https://{}/mcp", self.addr)
    }

    fn client(&self, http: reqwest::Client) -> McpHttp {
        McpHttp::with_client(&self.url(), http)
    }
}

fn with_store() -> StreamableHttpOptions {
    StreamableHttpOptions::default().event_store(Arc::new(MemoryEventStore::default()))
}

#[tokio::test]
async fn a_session_and_a_call_over_tls() {
    let ca = TestCa::new();
    let f = test_server();
    let srv = TlsServer::start(&f, &ca.issue("server"), StreamableHttpOptions::default()).await;
    let mut c = srv.client(ca.client());
    c.connect("2025-11-25").await;
    assert!(c.greet().await.contains("Alice"));
    // The 2026 era too: no session, headers and `_meta` per request.
    let a = c.modern("tools/list", json!({})).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text());

    // A client that does not trust the CA gets no answer at all.
    let other = TestCa::new();
    let refused = other
        .client()
        .post(srv.url())
        .body("{}")
        .send()
        .await
        .expect_err("an untrusted certificate fails the handshake");
    assert!(refused.is_connect(), "{refused:?}");
    // Plain HTTP on the TLS port gets no HTTP answer either.
    vellum::transport::install_crypto_provider();
    let plain = reqwest::Client::builder().no_proxy().build().unwrap();
    let r = plain
        .post(format!("http://{}/mcp", srv.addr))
        .body("{}")
        .send()
        .await;
    assert!(r.is_err(), "plain HTTP was answered: {r:?}");
}

#[cfg(feature = "http2")]
#[tokio::test]
async fn alpn_picks_h2_and_http1_still_works() {
    let ca = TestCa::new();
    let f = test_server();
    let srv = TlsServer::start(&f, &ca.issue("server"), with_store()).await;
    for (http, version) in [
        (ca.client_h2(), reqwest::Version::HTTP_2),
        (ca.client(), reqwest::Version::HTTP_11),
    ] {
        let mut c = srv.client(http);
        c.connect("2025-11-25").await;
        assert!(c.greet().await.contains("Alice"));
        let r = c.get(None).send().await.unwrap();
        assert_eq!(r.version(), version);
        assert_eq!(r.status(), StatusCode::OK);
        let mut stream = SseReader::new(r);
        let priming = within("the priming event", stream.next_block()).await;
        assert!(priming.is_some_and(|b| b.id.is_some()), "{version:?}");
    }
}

/// Resumes after `last_id` (never refused: the resume takes the stream over from the
/// dropped connection, whether or not the server saw the drop yet).
async fn resume(c: &McpHttp, last_id: &str) -> SseReader {
    match c.get_stream(Some(last_id)).await {
        Streamed::Stream(s) => s,
        Streamed::Whole(a) => panic!("resuming after {last_id}: {} {}", a.status, a.text()),
    }
}

#[tokio::test]
async fn an_sse_answer_resumes_over_tls_after_its_connection_drops() {
    let ca = TestCa::new();
    let f = test_server();
    let srv = TlsServer::start(&f, &ca.issue("server"), with_store()).await;
    let mut c = srv.client(ca.client());
    c.connect("2025-11-25").await;
    let call = c.call_tool("paced", json!({"steps": 3}), Some("p"));
    let mut s = c.post_stream(&call).await.expect_stream("a paced call");
    f.pace.allow(1);
    let first = s.next_message().await.expect("progress 1");
    assert_eq!(first.json()["params"]["progress"], 1.0);
    let last = first.id.clone().expect("an event id");
    drop(s);
    // Produced while nobody listens; delivered on resumption, in order, once.
    f.pace.allow(2);
    let mut r = resume(&c, &last).await;
    let rest = r.rest_messages().await;
    assert_eq!(rest.len(), 3, "{rest:?}");
    assert_eq!(rest[0]["params"]["progress"], 2.0);
    assert_eq!(rest[1]["params"]["progress"], 3.0);
    assert_eq!(rest[2]["id"], call["id"], "{rest:?}");
}

#[tokio::test]
async fn a_reload_reaches_the_next_handshake_while_an_open_stream_stays_up() {
    let ca = TestCa::new();
    let f = test_server();
    let first = ca.issue("first");
    let srv = TlsServer::start(&f, &first, StreamableHttpOptions::default()).await;

    // A session with its standalone stream open, on a connection set up with `first`.
    let mut a = srv.client(ca.client());
    a.connect("2025-11-25").await;
    let resp = a.get(None).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(peer_certificate(&resp).as_deref(), Some(&first.der[..]));
    let mut stream = SseReader::new(resp);

    // Renewed in place (same paths), then reloaded.
    let second = ca.issue_to("second", &first.cert, &first.key);
    srv.tls.reload().expect("the renewed certificate loads");

    // A new connection sees the new certificate.
    let fresh = ca.client();
    let r = fresh
        .post(srv.url())
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"}}})
            .to_string(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(peer_certificate(&r).as_deref(), Some(&second.der[..]));

    // The open stream still delivers: a tool added now is announced on it.
    f.server
        .add_tool(
            vellum::prelude::Tool::new("late", "added after the reload"),
            |_ctx: vellum::prelude::RequestContext,
             _req: vellum::prelude::CallToolRequest,
             _in: vellum::server::NoArgs| async move {
                Ok::<_, vellum::prelude::HandlerError>(vellum::prelude::CallToolResult::text("x"))
            },
        )
        .unwrap();
    let b = within("list_changed on the old connection", stream.next_message())
        .await
        .expect("the stream is still open");
    assert_eq!(b.json()["method"], "notifications/tools/list_changed");
    // And its session still answers calls over the pooled connection.
    assert!(a.greet().await.contains("Alice"));
}

#[tokio::test]
async fn a_failed_reload_keeps_the_current_certificate() {
    let ca = TestCa::new();
    let f = test_server();
    let leaf = ca.issue("server");
    let srv = TlsServer::start(&f, &leaf, StreamableHttpOptions::default()).await;
    // A key that does not belong to the certificate.
    let other = ca.issue("other");
    std::fs::copy(&other.key, &leaf.key).unwrap();
    let err = srv.tls.reload().expect_err("a mismatched key is refused");
    // rustls refused the pair (the files themselves read fine).
    assert!(err.is_tls() && !err.is_file(), "{err:?}");
    std::fs::write(&leaf.cert, "not PEM").unwrap();
    let err = srv.tls.reload().expect_err("a file without a certificate");
    assert!(err.is_tls() && err.is_file(), "{err:?}");
    assert_eq!(err.path(), Some(leaf.cert.as_ref()), "{err:?}");

    let mut c = srv.client(ca.client());
    c.connect("2025-11-25").await;
    let r = c.get(None).send().await.unwrap();
    assert_eq!(peer_certificate(&r).as_deref(), Some(&leaf.der[..]));

    let own = TlsConfig::from_rustls(srv.tls.rustls().clone());
    assert!(own.reload().is_err_and(|e| e.is_not_reloadable()));
}

#[tokio::test]
async fn a_silent_client_holds_up_no_other_handshake() {
    let ca = TestCa::new();
    let f = test_server();
    let srv = TlsServer::start(&f, &ca.issue("server"), StreamableHttpOptions::default()).await;
    // Connected, never says hello.
    let _silent: Vec<_> = (0..8)
        .map(|_| std::net::TcpStream::connect(srv.addr).unwrap())
        .collect();
    let mut c = srv.client(ca.client());
    within(
        "a session while silent clients wait",
        c.connect("2025-11-25"),
    )
    .await;
    assert!(c.greet().await.contains("Alice"));
}

#[cfg(unix)]
#[tokio::test]
async fn tls_over_a_unix_socket() {
    let ca = TestCa::new();
    let leaf = ca.issue("server");
    let tls = TlsConfig::from_pem_files(&leaf.cert, &leaf.key).expect("the leaf loads");
    let dir = std::env::temp_dir().join(format!("vellum-tls-unix-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("mcp.sock");
    let _ = std::fs::remove_file(&path);
    let listener = tokio::net::UnixListener::bind(&path).unwrap();
    let f = test_server();
    let handler =
        StreamableHttpHandler::for_server(f.server.clone(), StreamableHttpOptions::default());
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(
        serve(listener, handler)
            .tls(tls)
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .into_future(),
    );
    let http = ca
        .client_builder()
        .http1_only()
        .unix_socket(path.clone())
        .build()
        .unwrap();
    let mut c = McpHttp::with_client("https://localhost/mcp", http.clone());
    c.connect("2025-11-25").await;
    assert!(c.greet().await.contains("Alice"));
    let r = c.get(None).send().await.unwrap();
    assert_eq!(peer_certificate(&r).as_deref(), Some(&leaf.der[..]));
    // Plain HTTP on the socket gets no HTTP answer.
    let plain = reqwest::Client::builder()
        .unix_socket(path.clone())
        .build()
        .unwrap();
    assert!(
        plain
            .post("http://localhost/mcp")
            .body("{}")
            .send()
            .await
            .is_err()
    );
    let _ = stop.send(());
    within("serving to stop", task)
        .await
        .expect("no panic")
        .expect("serving ended cleanly");
    let _ = std::fs::remove_dir_all(&dir);
}
