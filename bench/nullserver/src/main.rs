//! `nullserver`: the floor of this machine and load generator.
//!
//! It speaks just enough Streamable HTTP for `mcpbench` to accept its answers, with no MCP
//! logic at all: a canned `initialize` result with an `Mcp-Session-Id`, 202 for notifications,
//! a canned `tools/call` result echoing the request id (JSON, or one SSE event with `--sse`),
//! an SSE stream that stays open for GET, and 200 for DELETE. Every figure of a real server is
//! read against this one: what it costs above the null server is MCP work.
//!
//! It is not an MCP server: it never looks at the method beyond telling `initialize` and
//! notifications apart, and answers every other request as if it were the benchmark's tool call.

mod answer;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use anyhow::Context as _;
use bytes::Bytes;
use clap::Parser;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

/// Command line of the null server.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// Address to listen on (loopback only in the benchmark).
    #[arg(long, default_value = "127.0.0.1:8000")]
    addr: SocketAddr,
    /// Answer requests with one SSE event instead of a JSON body.
    #[arg(long)]
    sse: bool,
}

/// Response body: one buffer, or a stream that never yields (a held GET stream).
enum NullBody {
    Full(Option<Bytes>),
    Never,
}

impl Body for NullBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            NullBody::Full(data) => Poll::Ready(data.take().map(|d| Ok(Frame::data(d)))),
            NullBody::Never => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, NullBody::Full(None))
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        match self {
            NullBody::Full(Some(d)) => hyper::body::SizeHint::with_exact(d.len() as u64),
            NullBody::Full(None) => hyper::body::SizeHint::with_exact(0),
            NullBody::Never => hyper::body::SizeHint::default(),
        }
    }
}

static SESSIONS: AtomicU64 = AtomicU64::new(0);

fn respond(
    status: StatusCode,
    content_type: Option<&'static str>,
    body: NullBody,
) -> Response<NullBody> {
    let mut resp = Response::new(body);
    *resp.status_mut() = status;
    if let Some(ct) = content_type {
        resp.headers_mut()
            .insert(header::CONTENT_TYPE, http::HeaderValue::from_static(ct));
    }
    resp
}

async fn handle(req: Request<Incoming>, sse: bool) -> Result<Response<NullBody>, Infallible> {
    match *req.method() {
        Method::GET => Ok(respond(
            StatusCode::OK,
            Some("text/event-stream"),
            NullBody::Never,
        )),
        Method::DELETE => Ok(respond(StatusCode::OK, None, NullBody::Full(None))),
        Method::POST => {
            let body = match req.into_body().collect().await {
                Ok(b) => b.to_bytes(),
                Err(_) => return Ok(respond(StatusCode::BAD_REQUEST, None, NullBody::Full(None))),
            };
            Ok(match answer::classify(&body) {
                answer::Kind::Notification => {
                    respond(StatusCode::ACCEPTED, None, NullBody::Full(None))
                }
                answer::Kind::Initialize { id } => {
                    let n = SESSIONS.fetch_add(1, Ordering::Relaxed);
                    let mut resp = framed(answer::initialize(id), sse);
                    if let Ok(v) = http::HeaderValue::from_str(&format!("null-session-{n}")) {
                        resp.headers_mut().insert("mcp-session-id", v);
                    }
                    resp
                }
                answer::Kind::Call { id } => framed(answer::tool_result(id), sse),
            })
        }
        _ => Ok(respond(
            StatusCode::METHOD_NOT_ALLOWED,
            None,
            NullBody::Full(None),
        )),
    }
}

/// Wraps a JSON-RPC message as a JSON body or as one SSE event.
fn framed(json: Vec<u8>, sse: bool) -> Response<NullBody> {
    if sse {
        let mut event = Vec::with_capacity(json.len() + 24);
        event.extend_from_slice(b"event: message\ndata: ");
        event.extend_from_slice(&json);
        event.extend_from_slice(b"\n\n");
        respond(
            StatusCode::OK,
            Some("text/event-stream"),
            NullBody::Full(Some(event.into())),
        )
    } else {
        respond(
            StatusCode::OK,
            Some("application/json"),
            NullBody::Full(Some(json.into())),
        )
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("building the tokio runtime")?;
    rt.block_on(serve(args))
}

async fn serve(args: Args) -> anyhow::Result<()> {
    let listener = TcpListener::bind(args.addr)
        .await
        .with_context(|| format!("binding {}", args.addr))?;
    let sse = args.sse;
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(s) => s,
            // Out of file descriptors and the like: keep serving the connections we have.
            Err(e) => {
                eprintln!("nullserver: accept: {e}");
                tokio::task::yield_now().await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let service = service_fn(move |req| handle(req, sse));
            let _ = http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
