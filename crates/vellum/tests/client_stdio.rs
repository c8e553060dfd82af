//! The stdio framing both ways, in memory: `serve_stdio(…).over(…)` on one end of a duplex pipe and
//! `LineTransport` on the other, in both eras.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use vellum::client::ProtocolChoice;
use vellum::transport::stdio::{LineTransport, serve_stdio};
use vellum_testkit::client::{Seen, builder, exercise};
use vellum_testkit::fixture::test_server;

async fn run(choice: ProtocolChoice, modern: bool) {
    let server = test_server().server;
    let (client_end, server_end) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server_end);
    let served = tokio::spawn(
        serve_stdio(server)
            .over(server_read, server_write)
            .into_future(),
    );
    let (client_read, client_write) = tokio::io::split(client_end);
    let seen = Seen::default();
    let client = builder(choice, &seen)
        .connect(LineTransport::new(client_read, client_write))
        .await
        .unwrap();
    exercise(&client, &seen, modern).await;
    client.close().await;
    // Closing the client's writer ends the server's input: it returns cleanly.
    served.await.unwrap().unwrap();
}

#[tokio::test]
async fn legacy_over_lines() {
    run(ProtocolChoice::Legacy, false).await;
}

#[tokio::test]
async fn modern_over_lines() {
    run(ProtocolChoice::Modern, true).await;
}

#[tokio::test]
async fn auto_over_lines_is_modern() {
    run(ProtocolChoice::Auto, true).await;
}
