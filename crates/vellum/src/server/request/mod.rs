//! One request's life in the core, in the order it happens: a transport starts it
//! (`exchange.rs`: `Session::begin`, or `Exchange::sessionless` for a 2026-07-28 request
//! over HTTP) with the request's shared state (`request.rs`), the request middleware wrap
//! it (`middleware.rs`, with the message observers of `observe.rs`), the method table serves
//! it, the handler talks back through its [`RequestContext`](context::RequestContext)
//! (`context.rs`, with the form rules of `elicit.rs`) into the request's outbox
//! (`outbox.rs`), and its result is framed for its era (`reply.rs`).
//!
//! Not here: the method table and the methods (`methods/`), and what a request is served
//! from (`registry/`, the session in `session.rs`).

pub(super) mod context;
pub(super) mod elicit;
pub(super) mod exchange;
pub mod middleware;
pub(super) mod observe;
pub(super) mod outbox;
pub(super) mod reply;
#[allow(clippy::module_inception)]
pub(super) mod request;
