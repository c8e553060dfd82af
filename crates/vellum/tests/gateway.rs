//! The embeddable gateway (`vellum::gateway::Gateway`), in process: a server over stdio
//! framing (an in-memory pipe, as `vellum connect` serves a desktop host) whose requests go
//! to the test kit's fixture server over real Streamable HTTP on loopback. The SDK's client
//! runs every typed call through it (`vellum_testkit::client::exercise`) in both eras: tools,
//! progress, logs at the level asked, the server's questions (sampling, elicitation, roots),
//! resources, templates, prompts, completion, ping, errors.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use vellum::client::{ProtocolChoice, Transport};
use vellum::gateway::{Backend, Gateway, GatewayOptions};
use vellum::protocol::Implementation;
use vellum::server::ServerOptions;
use vellum::transport::http_client::HttpClientOptions;
use vellum::transport::stdio::{LineTransport, serve_stdio};
use vellum_testkit::client::{Seen, builder, exercise};
use vellum_testkit::fixture::test_server;
use vellum_testkit::http::TestHttpServer;

/// A gateway to `url` served on one end of an in-memory pipe; the client transport of the
/// other end.
fn front(url: &str) -> (Gateway, impl Transport) {
    let gateway = Gateway::new(
        Backend::Http {
            url: url.to_owned(),
            options: HttpClientOptions::default(),
        },
        GatewayOptions::default(),
    );
    let server = gateway.server(Implementation::new("gw", "1"), ServerOptions::default());
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(theirs);
    tokio::spawn(async move {
        let _ = serve_stdio(server).over(read, write).await;
    });
    let (read, write) = tokio::io::split(ours);
    (gateway, LineTransport::new(read, write))
}

#[tokio::test]
async fn every_typed_call_goes_through_in_both_eras() {
    let f = test_server();
    let upstream = TestHttpServer::serve(f.server.clone()).await;
    for (choice, modern) in [
        (ProtocolChoice::Legacy, false),
        (ProtocolChoice::Modern, true),
    ] {
        let (gateway, transport) = front(&upstream.url);
        let seen = Seen::default();
        let client = builder(choice, &seen).connect(transport).await.unwrap();
        exercise(&client, &seen, modern).await;
        client.close().await;
        gateway.shutdown().await;
        assert_eq!(gateway.open_backends(), 0, "every backend closed");
    }
}
