//! `mcpbench stub`: the slow HTTP service of the `wait` scenario. Every request, whatever its
//! method and path, is answered `200 ok` after `--delay-ms` (default 1 ms), as a fast internal
//! API would be; the tool under test calls it once per `tools/call`.
//!
//! HTTP/1.1 with keep-alive, TCP_NODELAY on every accepted socket, one task per connection on
//! the current thread (the runner pins it beside the load generator, off the server's core).

use std::convert::Infallible;
use std::time::Duration;

use anyhow::Context as _;
use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;

use crate::cli::StubArgs;

/// Serves until killed.
pub(crate) async fn run(args: &StubArgs) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .with_context(|| format!("binding {}", args.addr))?;
    let delay = Duration::from_millis(args.delay_ms);
    eprintln!(
        "mcpbench stub: http://{} answers after {} ms",
        args.addr, args.delay_ms
    );
    loop {
        let (tcp, _) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                // Out of descriptors, say: the callers see refused or slow connections.
                eprintln!("mcpbench stub: accept: {e}");
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        tokio::spawn(async move {
            let answer = service_fn(move |_req| async move {
                tokio::time::sleep(delay).await;
                Ok::<_, Infallible>(http::Response::new(Full::new(Bytes::from_static(b"ok"))))
            });
            // A caller that goes away ends its connection; nothing to report.
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(tcp), answer)
                .await;
        });
    }
}
