//! What went wrong is a typed error a caller can match on: a port nobody listens on, an
//! HTTP error status, a stdio server that exits. Real loopback sockets and real child
//! processes; no secret reaches an error's text.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use http::{HeaderValue, StatusCode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use vellum::client::{Client, ProtocolChoice, TransportError};
use vellum::transport::http_client::StreamableHttpClientTransport;
use vellum::transport::stdio::ChildProcessTransport;

const SECRET: &str = "s3cret-token-value";

/// Every cause of an error on one line, as a log would print it.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), f)
        .await
        .expect("the client answered within 30 s")
}

#[tokio::test]
async fn a_closed_port_is_a_connect_error_without_the_url_or_token() {
    // A port that was just free: bind, note it, and let it go.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}/mcp?key={SECRET}");
    let transport = StreamableHttpClientTransport::new(&url)
        .unwrap()
        .with_header(
            http::header::AUTHORIZATION,
            HeaderValue::from_str(&format!("Bearer {SECRET}")).unwrap(),
        );
    assert!(!format!("{transport:?}").contains(SECRET));
    let e = within(
        Client::builder()
            .protocol(ProtocolChoice::Legacy)
            .connect(transport),
    )
    .await
    .unwrap_err();
    assert!(e.is_connect(), "{e:?}");
    assert!(
        matches!(e.transport(), Some(TransportError::Connect(_))),
        "{e:?}"
    );
    let text = format!("{} / {e:?}", chain(&e));
    assert!(!text.contains(SECRET), "{text}");
    assert!(text.contains("cannot reach the server"), "{text}");
}

/// A one-shot HTTP server on loopback that answers every request with `status` and `body`.
async fn answering(status: u16, body: &'static str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                let mut seen = Vec::new();
                // Read up to the end of the headers (and whatever body came with them).
                while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                }
                let reply = format!(
                    "HTTP/1.1 {status} X\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(reply.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    format!("http://{addr}/mcp")
}

#[tokio::test]
async fn an_error_status_carries_its_code_and_detail() {
    let url = answering(401, "token expired").await;
    let transport = StreamableHttpClientTransport::new(&url)
        .unwrap()
        .with_header(
            http::header::AUTHORIZATION,
            HeaderValue::from_str(&format!("Bearer {SECRET}")).unwrap(),
        );
    let e = within(
        Client::builder()
            .protocol(ProtocolChoice::Modern)
            .connect(transport),
    )
    .await
    .unwrap_err();
    assert_eq!(e.status(), Some(StatusCode::UNAUTHORIZED));
    match e.transport() {
        Some(t @ TransportError::HttpStatus { status, detail }) => {
            assert_eq!(*status, StatusCode::UNAUTHORIZED);
            assert_eq!(detail, "token expired");
            assert_eq!(t.status(), Some(StatusCode::UNAUTHORIZED));
        }
        other => panic!("expected an HTTP status error, got {other:?}"),
    }
    assert_eq!(
        e.to_string(),
        "the server answered HTTP 401 Unauthorized: token expired"
    );
    assert!(!format!("{e:?}").contains(SECRET));
}

#[tokio::test]
async fn a_stdio_server_that_exits_fails_the_handshake_with_its_exit_status() {
    let transport = ChildProcessTransport::from_command_line("sh -c 'exit 3'").unwrap();
    let e = within(Client::connect(transport)).await.unwrap_err();
    match e.transport() {
        Some(TransportError::ProcessExited { status: Some(s) }) => {
            assert_eq!(s.code(), Some(3));
        }
        other => panic!("expected the exit of the server process, got {other:?}"),
    }
}

#[tokio::test]
async fn a_stdio_server_that_exits_mid_session_fails_that_call_and_every_later_one() {
    // A server that completes the legacy handshake, then exits with 7 when asked anything.
    let script = r#"read -r _init
printf '%s\n' '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"brief","version":"1"}}}'
read -r _initialized
read -r _call
exit 7"#;
    let mut command = tokio::process::Command::new("sh");
    command.arg("-c").arg(script);
    let transport = ChildProcessTransport::spawn(command).unwrap();
    let client = within(
        Client::builder()
            .protocol(ProtocolChoice::Legacy)
            .connect(transport),
    )
    .await
    .unwrap();
    assert_eq!(client.server_info().unwrap().name, "brief");
    for attempt in ["the call the server exits on", "a later call"] {
        let e = within(client.list_tools(None)).await.unwrap_err();
        match e.transport() {
            Some(TransportError::ProcessExited { status: Some(s) }) => {
                assert_eq!(s.code(), Some(7), "{attempt}");
            }
            other => panic!("{attempt}: expected the exit of the server process, got {other:?}"),
        }
    }
    within(client.close()).await;
}
