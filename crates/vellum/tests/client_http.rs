//! The client over Streamable HTTP against a Vellum server on loopback: both eras, JSON and
//! SSE answers, sessions (DELETE on close, re-initialisation after a 404), stateless
//! servers, resumption of a stream the server ends mid-call, and the standalone stream open
//! before `connect` returns (bounded by the connect timeout).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use vellum::client::{Client, ProtocolChoice, ServerNotification};
use vellum::prelude::*;
use vellum::store::MemoryEventStore;
use vellum::transport::http::StreamableHttpOptions;
use vellum::transport::http_client::{HttpClientOptions, StreamableHttpClientTransport};
use vellum_testkit::client::{Seen, builder, call_with_progress, exercise};
use vellum_testkit::fixture::test_server;
use vellum_testkit::http::TestHttpServer;

#[tokio::test]
async fn legacy_session_every_call_and_delete_on_close() {
    let server = test_server().server;
    let http = TestHttpServer::start_instrumented(StreamableHttpHandler::for_server(
        server,
        StreamableHttpOptions::default(),
    ))
    .await;
    let seen = Seen::default();
    let transport = StreamableHttpClientTransport::new(&http.url).unwrap();
    let client = builder(ProtocolChoice::Legacy, &seen)
        .connect(transport.clone())
        .await
        .unwrap();
    let sid = transport.session_id().expect("a session id");
    assert_eq!(http.handler.session_count(), 1);
    exercise(&client, &seen, false).await;
    client.close().await;
    assert_eq!(http.handler.session_count(), 0, "DELETE ended the session");
    let requests = http.requests.lock().unwrap().clone();
    assert!(
        requests
            .iter()
            .any(|r| r.method == "DELETE" && r.session.as_deref() == Some(sid.as_str()))
    );
    assert!(
        requests.iter().any(|r| r.method == "GET"),
        "the standalone stream was opened"
    );
}

#[tokio::test]
async fn modern_every_call_json_and_sse() {
    for json_response in [false, true] {
        let server = test_server().server;
        let http = TestHttpServer::start_instrumented(StreamableHttpHandler::for_server(
            server,
            StreamableHttpOptions::default().json_response(json_response),
        ))
        .await;
        let seen = Seen::default();
        let client = builder(ProtocolChoice::Modern, &seen)
            .connect(StreamableHttpClientTransport::new(&http.url).unwrap())
            .await
            .unwrap();
        exercise(&client, &seen, true).await;
        client.close().await;
        assert_eq!(http.handler.session_count(), 0);
        let requests = http.requests.lock().unwrap().clone();
        assert!(
            requests
                .iter()
                .all(|r| r.method == "POST" && r.session.is_none()),
            "{requests:?}"
        );
    }
}

#[tokio::test]
async fn auto_detects_the_era_and_falls_back_to_a_stateless_legacy_server() {
    let server = test_server().server;
    let http = TestHttpServer::start_instrumented(StreamableHttpHandler::for_server(
        server,
        StreamableHttpOptions::default(),
    ))
    .await;
    let client = Client::connect(StreamableHttpClientTransport::new(&http.url).unwrap())
        .await
        .unwrap();
    assert!(client.is_modern());
    client.close().await;

    // A legacy-only endpoint: another server would answer the probe with a plain 4xx; here
    // the client is pinned to legacy against a stateless server (no session id at all).
    let server = test_server().server;
    let http = TestHttpServer::start_instrumented(StreamableHttpHandler::for_server(
        server,
        StreamableHttpOptions::default().stateless(true),
    ))
    .await;
    let transport = StreamableHttpClientTransport::new(&http.url).unwrap();
    let client = Client::builder()
        .protocol(ProtocolChoice::Legacy)
        .connect(transport.clone())
        .await
        .unwrap();
    assert!(transport.session_id().is_none());
    let r = client
        .call_tool("hello_world", json!({"user_name": "Bob"}))
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("Hello World, Bob"));
    client.close().await;
}

#[tokio::test]
async fn a_forgotten_session_is_reinitialized_transparently() {
    let server = test_server().server;
    let http = TestHttpServer::start_instrumented(StreamableHttpHandler::for_server(
        server,
        StreamableHttpOptions::default(),
    ))
    .await;
    let transport = StreamableHttpClientTransport::new(&http.url).unwrap();
    let client = Client::builder()
        .protocol(ProtocolChoice::Legacy)
        .connect(transport.clone())
        .await
        .unwrap();
    let first = transport.session_id().unwrap();
    // The server ends the session behind the client's back.
    vellum::transport::install_crypto_provider();
    let status = reqwest::Client::new()
        .delete(&http.url)
        .header("mcp-session-id", &first)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status.as_u16(), 204);
    let r = client
        .call_tool("hello_world", json!({"user_name": "Carol"}))
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("Hello World, Carol"));
    let second = transport.session_id().unwrap();
    assert_ne!(first, second, "a new session was initialized");
    let inits = http
        .requests
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.method == "POST" && r.session.is_none())
        .count();
    assert_eq!(
        inits, 2,
        "initialize was sent again, without the old session id"
    );
    client.close().await;
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nothing {}

/// A tool that reports progress 1 and 2, ends its SSE stream (the server "drops" it), then
/// reports 3 and 4 and answers: the client must resume and see 1..4 once each.
fn resumable_server() -> Server {
    let server = Server::new(Implementation::new("resume", "1"), ServerOptions::default());
    server
        .add_tool(
            Tool::new("resumable", "Ends its stream mid-call"),
            |c: RequestContext, _r: CallToolRequest, _i: Nothing| async move {
                c.notify_progress(1.0, Some(4.0), None).await?;
                c.notify_progress(2.0, Some(4.0), None).await?;
                c.close_sse_stream(Duration::from_millis(50));
                // Let the stream's end reach the client before the next events exist.
                tokio::time::sleep(Duration::from_millis(100)).await;
                c.notify_progress(3.0, Some(4.0), None).await?;
                c.notify_progress(4.0, Some(4.0), None).await?;
                Ok::<_, HandlerError>(CallToolResult::text("resumed"))
            },
        )
        .unwrap();
    server
}

#[tokio::test]
async fn a_stream_ended_mid_call_is_resumed_without_loss_or_duplicates() {
    let options = StreamableHttpOptions::default().event_store(Arc::new(MemoryEventStore::new(
        MemoryEventStore::DEFAULT_MAX_BYTES,
    )));
    let http = TestHttpServer::start_instrumented(StreamableHttpHandler::for_server(
        resumable_server(),
        options,
    ))
    .await;
    let mut client_options = HttpClientOptions::default();
    client_options.standalone_stream = false;
    let transport = StreamableHttpClientTransport::with_options(&http.url, client_options).unwrap();
    let client = Client::builder()
        .protocol(ProtocolChoice::Legacy)
        .connect(transport)
        .await
        .unwrap();
    let (r, progress) = call_with_progress(&client, "resumable", json!({})).await;
    assert_eq!(r.content[0].as_text(), Some("resumed"));
    assert_eq!(progress, vec![1.0, 2.0, 3.0, 4.0]);
    let resumes: Vec<_> = http
        .requests
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.method == "GET")
        .cloned()
        .collect();
    assert_eq!(resumes.len(), 1, "one resumption: {resumes:?}");
    assert!(
        resumes[0].last_event_id.is_some(),
        "resumed with Last-Event-ID"
    );
    client.close().await;
}

/// A TCP proxy that cuts the first connection whose answer contains `mark` (right after
/// forwarding those bytes), then passes everything through.
async fn cutting_proxy(
    upstream: std::net::SocketAddr,
    mark: &'static [u8],
    cut: Arc<tokio::sync::Notify>,
) -> std::net::SocketAddr {
    use std::sync::atomic::{AtomicBool, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let done = Arc::new(AtomicBool::new(false));
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let Ok(server) = tokio::net::TcpStream::connect(upstream).await else {
                continue;
            };
            let (mut cr, mut cw) = client.into_split();
            let (mut sr, mut sw) = server.into_split();
            let up = tokio::spawn(async move {
                let _ = tokio::io::copy(&mut cr, &mut sw).await;
            });
            let (done, cut) = (done.clone(), cut.clone());
            tokio::spawn(async move {
                let mut seen = Vec::new();
                let mut buf = vec![0u8; 16 * 1024];
                loop {
                    let n = match sr.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    if cw.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                    if !done.load(Ordering::SeqCst) {
                        seen.extend_from_slice(&buf[..n]);
                        if seen.windows(mark.len()).any(|w| w == mark) {
                            done.store(true, Ordering::SeqCst);
                            // Drop both directions: the client sees the stream break.
                            up.abort();
                            cut.notify_one();
                            return;
                        }
                    }
                }
            });
        }
    });
    addr
}

#[tokio::test]
async fn a_connection_cut_mid_call_is_resumed_without_loss_or_duplicates() {
    let gate = Arc::new(tokio::sync::Notify::new());
    let server = Server::new(Implementation::new("cut", "1"), ServerOptions::default());
    let g = gate.clone();
    server
        .add_tool(
            Tool::new("long", "Reports progress around a pause"),
            move |c: RequestContext, _r: CallToolRequest, _i: Nothing| {
                let g = g.clone();
                async move {
                    c.notify_progress(1.0, Some(4.0), None).await?;
                    c.notify_progress(2.0, Some(4.0), None).await?;
                    // Held until the proxy has cut the connection.
                    g.notified().await;
                    c.notify_progress(3.0, Some(4.0), None).await?;
                    c.notify_progress(4.0, Some(4.0), None).await?;
                    Ok::<_, HandlerError>(CallToolResult::text("survived"))
                }
            },
        )
        .unwrap();
    let options = StreamableHttpOptions::default().event_store(Arc::new(MemoryEventStore::new(
        MemoryEventStore::DEFAULT_MAX_BYTES,
    )));
    let http =
        TestHttpServer::start_instrumented(StreamableHttpHandler::for_server(server, options))
            .await;
    let upstream: std::net::SocketAddr = http
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .parse()
        .unwrap();
    let cut = Arc::new(tokio::sync::Notify::new());
    let proxy = cutting_proxy(upstream, b"\"progress\":2", cut.clone()).await;
    let (cut2, gate2) = (cut.clone(), gate.clone());
    tokio::spawn(async move {
        cut2.notified().await;
        gate2.notify_one();
    });
    let mut client_options = HttpClientOptions::default();
    client_options.standalone_stream = false;
    let transport =
        StreamableHttpClientTransport::with_options(&format!("http://{proxy}/mcp"), client_options)
            .unwrap();
    let client = Client::builder()
        .protocol(ProtocolChoice::Legacy)
        .connect(transport)
        .await
        .unwrap();
    let (r, progress) = call_with_progress(&client, "long", json!({})).await;
    assert_eq!(r.content[0].as_text(), Some("survived"));
    assert_eq!(progress, vec![1.0, 2.0, 3.0, 4.0]);
    let resumed = http
        .requests
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.method == "GET" && r.last_event_id.is_some())
        .count();
    assert_eq!(resumed, 1, "resumed once with Last-Event-ID");
    client.close().await;
}

/// Adds the tool `late` to a running server: a tools list change for its clients.
fn add_late_tool(server: &Server, description: &str) {
    server
        .add_raw_tool(
            Tool::new("late", description),
            |_c: RequestContext, _r| async move { Ok::<_, HandlerError>("late") },
        )
        .unwrap();
}

#[tokio::test]
async fn listen_delivers_only_the_asked_list_changes() {
    let server = test_server().server;
    let http = TestHttpServer::start_instrumented(StreamableHttpHandler::for_server(
        server.clone(),
        StreamableHttpOptions::default(),
    ))
    .await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let client = Client::builder()
        .protocol(ProtocolChoice::Modern)
        .on_notification(move |n| {
            let _ = tx.send(n);
        })
        .connect(StreamableHttpClientTransport::new(&http.url).unwrap())
        .await
        .unwrap();
    let filter = vellum::protocol::SubscriptionFilter {
        tools_list_changed: Some(true),
        ..Default::default()
    };
    let listen = client.listen(filter.clone()).await.unwrap();
    assert_eq!(listen.honoured(), &filter);

    // A prompt change first (not asked for: must not arrive), then a tool change.
    server
        .add_prompt(
            Prompt::new("late", "added while listening"),
            |_c: RequestContext, _r: GetPromptRequest| async move {
                Ok::<_, HandlerError>(GetPromptResult::new(vec![PromptMessage::user("hi")]))
            },
        )
        .unwrap();
    add_late_tool(&server, "added while listening");
    let first_change = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match rx.recv().await {
                Some(
                    n @ (ServerNotification::ToolsListChanged
                    | ServerNotification::PromptsListChanged
                    | ServerNotification::ResourcesListChanged),
                ) => return Some(n),
                Some(_) => continue,
                None => return None,
            }
        }
    })
    .await
    .expect("a list change within 10 s");
    assert!(
        matches!(first_change, Some(ServerNotification::ToolsListChanged)),
        "{first_change:?}"
    );
    let names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert!(names.iter().any(|n| n == "late"), "{names:?}");
    listen.close();
    client.close().await;
}

/// A layer that holds every GET until `gate` gives a permit, announcing each on `arrived`.
fn holding_gets(
    gate: Arc<tokio::sync::Semaphore>,
    arrived: Arc<tokio::sync::Notify>,
) -> impl tower::Layer<
    StreamableHttpHandler,
    Service = tower::util::BoxCloneSyncService<
        http::Request<hyper::body::Incoming>,
        http::Response<vellum::transport::http::ResponseBody>,
        std::convert::Infallible,
    >,
> + Send
+ 'static {
    use tower::ServiceExt;
    tower::layer::layer_fn(move |inner: StreamableHttpHandler| {
        let (gate, arrived) = (gate.clone(), arrived.clone());
        tower::util::BoxCloneSyncService::new(tower::service_fn(
            move |req: http::Request<hyper::body::Incoming>| {
                let (inner, gate, arrived) = (inner.clone(), gate.clone(), arrived.clone());
                async move {
                    if req.method() == http::Method::GET {
                        arrived.notify_one();
                        if let Ok(p) = gate.acquire().await {
                            p.forget();
                        }
                    }
                    inner.oneshot(req).await
                }
            },
        ))
    })
}

#[tokio::test]
async fn connect_returns_once_the_standalone_stream_is_open() {
    // Without an event store, a notification sent before the GET is open would be lost:
    // connect must not return before the server has answered the GET.
    let server = test_server().server;
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let arrived = Arc::new(tokio::sync::Notify::new());
    let layer = holding_gets(gate.clone(), arrived.clone());
    let http = TestHttpServer::start_with_layer(
        StreamableHttpHandler::for_server(server.clone(), StreamableHttpOptions::default()),
        |_| layer,
    )
    .await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let connecting = tokio::spawn(
        Client::builder()
            .protocol(ProtocolChoice::Legacy)
            .on_notification(move |n| {
                let _ = tx.send(n);
            })
            .connect(StreamableHttpClientTransport::new(&http.url).unwrap()),
    );
    vellum_testkit::within("the standalone GET", arrived.notified()).await;
    assert!(
        !connecting.is_finished(),
        "connect returned while the standalone GET was unanswered"
    );
    gate.add_permits(1);
    let client = vellum_testkit::within("connect", connecting)
        .await
        .unwrap()
        .unwrap();
    add_late_tool(&server, "added right after connect");
    vellum_testkit::within("the list change on the standalone stream", async {
        while let Some(n) = rx.recv().await {
            if matches!(n, ServerNotification::ToolsListChanged) {
                return;
            }
        }
        panic!("the notification channel closed");
    })
    .await;
    client.close().await;
}

#[tokio::test]
async fn a_standalone_get_left_unanswered_does_not_hold_connect() {
    let server = test_server().server;
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let arrived = Arc::new(tokio::sync::Notify::new());
    let layer = holding_gets(gate, arrived.clone());
    let http = TestHttpServer::start_with_layer(
        StreamableHttpHandler::for_server(server, StreamableHttpOptions::default()),
        |_| layer,
    )
    .await;
    let mut options = HttpClientOptions::default();
    options.connect_timeout = Duration::from_millis(300);
    let transport = StreamableHttpClientTransport::with_options(&http.url, options).unwrap();
    let client = vellum_testkit::within(
        "connect, with the GET never answered",
        Client::builder()
            .protocol(ProtocolChoice::Legacy)
            .connect(transport),
    )
    .await
    .unwrap();
    vellum_testkit::within("the standalone GET", arrived.notified()).await;
    client.ping().await.unwrap();
    client.close().await;
}
