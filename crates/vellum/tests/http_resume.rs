//! The `event_store` option over real HTTP: event ids, the priming event and `retry`
//! (2025-11-25 only), resumption with GET + `Last-Event-ID` after dropped connections (every
//! missed event exactly once, in order, nothing from other streams), evicted events, bad
//! `Last-Event-ID`s, and a handler ending its stream early (`close_sse_stream`, SEP-1699).

// Test code: a panic is how a test fails (clippy.toml allows it only inside #[test] fns).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use vellum::store::MemoryEventStore;
use vellum::transport::http::StreamableHttpOptions;

use vellum_testkit::fixture::{Fixture, test_server};
use vellum_testkit::http::{
    McpHttp, SseBlock, SseReader, Streamed, TestHttpServer, assert_rejected, message_ids,
    paced_answer, text_of,
};
use vellum_testkit::within;

fn with_store() -> StreamableHttpOptions {
    StreamableHttpOptions::default().event_store(Arc::new(MemoryEventStore::default()))
}

/// A small seeded generator (splitmix64): the drop points are random but reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

// ---- ids, priming, retry ---------------------------------------------------------------------

#[tokio::test]
async fn streaming_answers_carry_ids_and_complete_answers_do_not() {
    for store in [true, false] {
        let what = if store {
            "with a store"
        } else {
            "without a store"
        };
        let f = test_server();
        let o = if store {
            with_store()
        } else {
            StreamableHttpOptions::default()
        };
        let srv = TestHttpServer::start(f.server.clone(), o).await;
        let mut c = srv.client();
        c.connect("2025-06-18").await;
        // Complete at once: written whole, nothing to resume, no ids.
        let a = c
            .post(&c.call_tool("progress", json!({"steps": 3}), Some("t")))
            .await;
        assert_eq!(a.messages.len(), 4, "{what}: {:?}", a.messages);
        assert!(
            a.events.iter().all(|e| e.id.is_none()),
            "{what}: {:?}",
            a.events
        );
        // Still running when its headers go out: every event has an id of one stream.
        let ids = message_ids(&paced_answer(&c, &f.pace, 3).await);
        let stream = ids[0].split_once('-').expect("`<stream>-<seq>` ids").0;
        let expected: Vec<String> = (1..=4).map(|n| format!("{stream}-{n}")).collect();
        assert_eq!(ids, expected, "{what}: ids of one stream, in order");
    }
}

#[tokio::test]
async fn priming_event_and_retry_open_2025_11_25_streams() {
    let retry = Duration::from_millis(1234);
    // (version, store, POST stream primed, GET stream primed)
    let cases = [
        ("2025-03-26", true, false, false),
        ("2025-06-18", true, false, false),
        ("2025-11-25", true, true, true),
        ("2025-11-25", false, true, false),
    ];
    for (version, store, post_primed, get_primed) in cases {
        let f = test_server();
        let mut o = if store {
            with_store()
        } else {
            StreamableHttpOptions::default()
        };
        o.sse_retry = retry;
        let srv = TestHttpServer::start(f.server.clone(), o).await;
        let mut c = srv.client();
        c.connect(version).await;
        let what = format!("{version}, store: {store}");

        let blocks = paced_answer(&c, &f.pace, 1).await;
        let first = &blocks[0];
        if post_primed {
            assert_eq!(first.data.as_deref(), Some(""), "{what}: {first:?}");
            assert_eq!(first.retry, Some(1234), "{what}: {first:?}");
            assert!(
                first.id.as_deref().is_some_and(|i| i.ends_with("-0")),
                "{what}: {first:?}"
            );
        } else {
            assert!(first.is_message(), "{what}: unexpected priming {first:?}");
            assert_eq!(first.retry, None, "{what}");
        }
        // A complete answer is never primed.
        let a = c
            .post(&c.call_tool("progress", json!({"steps": 1}), Some("t")))
            .await;
        assert!(a.text().starts_with("data: "), "{what}: {:?}", a.text());

        let mut g = c.listen().await;
        let first = g.next_block().await.expect("a first block");
        if get_primed {
            assert_eq!(first.retry, Some(1234), "{what} GET: {first:?}");
            assert!(first.id.is_some(), "{what} GET: {first:?}");
        } else {
            assert!(first.is_comment_only(), "{what} GET: {first:?}");
        }
    }
}

// ---- resumption -------------------------------------------------------------------------------

/// Resumes after `last_id`. Never refused: the connection the client dropped may still look
/// alive to the server (it notices a closed connection only when it next writes), and a
/// resume takes the stream over from it, GET or POST response alike.
async fn resume(c: &McpHttp, last_id: &str) -> SseReader {
    match c.get_stream(Some(last_id)).await {
        Streamed::Stream(s) => {
            assert_eq!(s.status, StatusCode::OK);
            s
        }
        Streamed::Whole(a) => panic!("resuming after {last_id}: {} {}", a.status, a.text()),
    }
}

/// What one paced call delivered over its connections.
#[derive(Default)]
struct Delivered {
    progress: Vec<f64>,
    result: Option<Value>,
    last_id: Option<String>,
    drops: u32,
}

impl Delivered {
    /// Reads blocks until `n` messages came (or the result).
    async fn read(&mut self, s: &mut SseReader, n: u64, token: &str, call_id: &Value) {
        let mut read = 0;
        while read < n && self.result.is_none() {
            let b: SseBlock = s.next_block().await.unwrap_or_else(|| {
                panic!(
                    "the stream ended after {:?} without the result (last id {:?})",
                    self.progress, self.last_id
                )
            });
            if let Some(id) = &b.id {
                self.last_id = Some(id.clone());
            }
            if !b.is_message() {
                continue;
            }
            assert!(b.id.is_some(), "a message without an id: {b:?}");
            let m = b.json();
            read += 1;
            if m["method"] == "notifications/progress" {
                assert_eq!(
                    m["params"]["progressToken"], token,
                    "a foreign message: {m}"
                );
                self.progress
                    .push(m["params"]["progress"].as_f64().expect("a number"));
            } else {
                assert_eq!(&m["id"], call_id, "a foreign message: {m}");
                self.result = Some(m);
            }
        }
    }
}

/// One paced call of `steps` progress notifications, its connection dropped at random
/// points and resumed, events released at random points (while connected or not).
async fn resumed_round(
    f: &Fixture,
    c: &McpHttp,
    rng: &mut Rng,
    steps: u32,
    token: &str,
) -> Delivered {
    let call = c.call_tool("paced", json!({"steps": steps}), Some(token));
    let mut s = c.post_stream(&call).await.expect_stream("paced");
    let mut d = Delivered::default();
    let mut allowed = 0;
    let allow = |rng: &mut Rng, allowed: &mut u32, most: u64| {
        if *allowed < steps {
            let k = (1 + rng.below(most) as u32).min(steps - *allowed);
            f.pace.allow(k as usize);
            *allowed += k;
        }
    };
    // Another call on the same session, on its own stream, while this one runs.
    let other = c
        .post(&c.call_tool("progress", json!({"steps": 3}), Some("other")))
        .await;
    assert_eq!(other.messages.len(), 4);
    while d.result.is_none() {
        if rng.below(3) != 0 {
            allow(rng, &mut allowed, 8);
        }
        let pending = (allowed as usize - d.progress.len()) as u64 + u64::from(allowed == steps);
        let n = rng.below(pending + 1);
        d.read(&mut s, n, token, &call["id"]).await;
        if d.result.is_none() && d.last_id.is_some() && rng.below(2) == 0 {
            drop(s);
            d.drops += 1;
            // Events produced while nobody listens, or (a burst) while the client resumes:
            // the replay and the live events then overlap, and each must come once.
            match rng.below(3) {
                0 => allow(rng, &mut allowed, 8),
                1 => allow(rng, &mut allowed, 40),
                _ => {}
            }
            let last = d.last_id.clone().expect("checked");
            s = resume(c, &last).await;
        }
    }
    // The stream is complete: the (resumed) response ends.
    let rest = within("the end of a finished stream", s.rest()).await;
    assert!(
        rest.iter().all(|b| !b.is_message()),
        "after the result: {rest:?}"
    );
    d
}

#[tokio::test]
async fn resumption_after_random_drops_delivers_every_event_exactly_once_in_order() {
    const STEPS: u32 = 100;
    let f = test_server();
    let srv = TestHttpServer::start(f.server.clone(), with_store()).await;
    let mut rng = Rng(0x5EED_0003);
    let mut drops = 0;
    for version in ["2025-11-25", "2025-06-18", "2025-03-26"] {
        for session in 0..2 {
            let mut c = srv.client();
            c.connect(version).await;
            for round in 0..2 {
                let token = format!("{version}-{session}-{round}");
                let d = resumed_round(&f, &c, &mut rng, STEPS, &token).await;
                let expected: Vec<f64> = (1..=STEPS).map(f64::from).collect();
                assert_eq!(d.progress, expected, "{token}: lost, repeated or reordered");
                assert_eq!(text_of(d.result.as_ref().expect("a result")), "paced done");
                drops += d.drops;
            }
        }
    }
    assert!(drops >= 20, "the seed dropped only {drops} connections");
    eprintln!("{drops} drops resumed");
}

/// The connection a client gave up can look alive to the server for as long as its stream is
/// idle (nothing is written that could fail), and for ever behind a proxy that keeps its
/// upstream connection open. A resume takes the stream over from such a POST response: the
/// GET gets the stream at once (no 409), the old response ends, and the GET carries on from
/// `Last-Event-ID`, with or without an event store.
#[tokio::test]
async fn a_resume_takes_the_stream_over_from_a_post_response_still_open() {
    for store in [true, false] {
        let f = test_server();
        let o = if store {
            with_store()
        } else {
            StreamableHttpOptions::default()
        };
        let srv = TestHttpServer::start(f.server.clone(), o).await;
        let mut c = srv.client();
        c.connect("2025-11-25").await;
        let call = c.call_tool("paced", json!({"steps": 3}), Some("t"));
        let mut post = c.post_stream(&call).await.expect_stream("paced");
        let mut d = Delivered::default();
        f.pace.allow(1);
        d.read(&mut post, 1, "t", &call["id"]).await;
        let last = d.last_id.clone().expect("an event id");
        // `post` stays open: to the server its reader is alive.
        let mut get = resume(&c, &last).await;
        let rest = within("the end of the superseded POST response", post.rest()).await;
        assert!(
            rest.iter().all(|b| !b.is_message()),
            "store: {store}: the old response carried on after the takeover: {rest:?}"
        );
        f.pace.allow(2);
        d.read(&mut get, 3, "t", &call["id"]).await;
        assert_eq!(d.progress, [1.0, 2.0, 3.0], "store: {store}");
        assert_eq!(text_of(d.result.as_ref().expect("a result")), "paced done");
    }
}

#[tokio::test]
async fn the_standalone_stream_resumes_too() {
    let f = test_server();
    let srv = TestHttpServer::start(f.server.clone(), with_store()).await;
    let mut c = srv.client();
    c.connect("2025-11-25").await;
    let mut g = c.listen().await;
    let priming = g.next_block().await.expect("the priming event");
    let mut last = priming.id.expect("a priming id");
    let add = |name: &str| {
        f.server
            .add_tool(
                vellum::prelude::Tool::new(name, "added at run time"),
                |_ctx: vellum::prelude::RequestContext,
                 _req: vellum::prelude::CallToolRequest,
                 _in: vellum::server::NoArgs| async move {
                    Ok::<_, vellum::prelude::HandlerError>(vellum::prelude::CallToolResult::text(
                        "new",
                    ))
                },
            )
            .expect("the tool registers");
    };
    add("late_1");
    let b = g.next_message().await.expect("list_changed");
    assert_eq!(b.json()["method"], "notifications/tools/list_changed");
    last = b.id.clone().unwrap_or(last);
    drop(g);
    // Announced while nobody listens: delivered on resumption, once.
    add("late_2");
    let mut g = resume(&c, &last).await;
    let b = g.next_message().await.expect("the missed list_changed");
    assert_eq!(b.json()["method"], "notifications/tools/list_changed");
    assert_ne!(b.id.as_deref(), Some(last.as_str()));
    let more = g.next_block_within(Duration::from_millis(100)).await;
    assert!(
        !matches!(&more, Ok(Some(b)) if b.is_message()),
        "a duplicate: {more:?}"
    );
}

#[tokio::test]
async fn a_resume_takes_the_stream_over_from_a_get_the_server_still_holds() {
    // A client whose connection silently died (the server has not noticed) resumes at once:
    // the new GET gets the stream, the old response ends, and events go to the new one.
    let f = test_server();
    let srv = TestHttpServer::start(f.server.clone(), with_store()).await;
    let mut c = srv.client();
    c.connect("2025-11-25").await;
    let mut old = c.listen().await;
    let priming = old.next_block().await.expect("the priming event");
    let last = priming.id.expect("a priming id");
    let mut new = match c.get_stream(Some(&last)).await {
        Streamed::Stream(s) => s,
        Streamed::Whole(a) => panic!("the resume was refused: {} {}", a.status, a.text()),
    };
    assert_eq!(new.status, StatusCode::OK);
    let rest = old.rest().await;
    assert!(
        rest.iter().all(|b| !b.is_message()),
        "the replaced GET got messages: {rest:?}"
    );
    f.server
        .add_tool(
            vellum::prelude::Tool::new("late", "added at run time"),
            |_ctx: vellum::prelude::RequestContext,
             _req: vellum::prelude::CallToolRequest,
             _in: vellum::server::NoArgs| async move {
                Ok::<_, vellum::prelude::HandlerError>(vellum::prelude::CallToolResult::text("new"))
            },
        )
        .expect("the tool registers");
    let b = new
        .next_message()
        .await
        .expect("list_changed on the new GET");
    assert_eq!(b.json()["method"], "notifications/tools/list_changed");
    // A plain second GET (no Last-Event-ID) still may not steal it.
    let second = c.get_stream(None).await.expect_whole("a second GET");
    assert_eq!(second.status, StatusCode::CONFLICT);
}

#[tokio::test]
async fn evicted_events_give_a_clear_error_not_an_empty_stream() {
    let f = test_server();
    let store = Arc::new(MemoryEventStore::new(600));
    let srv = TestHttpServer::start(
        f.server.clone(),
        StreamableHttpOptions::default().event_store(store.clone()),
    )
    .await;
    let mut c = srv.client();
    c.connect("2025-11-25").await;
    let ids = message_ids(&paced_answer(&c, &f.pace, 30).await);
    assert_eq!(ids.len(), 31);
    assert!(
        store.bytes() <= 600,
        "the store exceeds its bound: {}",
        store.bytes()
    );
    let stream = ids[0].split_once('-').expect("an id").0;
    for after in [format!("{stream}-0"), ids[0].clone()] {
        let r = within("an answer to an evicted replay", c.get_stream(Some(&after)))
            .await
            .expect_whole("a replay of evicted events");
        assert_rejected(&r, StatusCode::BAD_REQUEST, -32600);
        assert!(r.text().contains("evicted"), "unclear: {}", r.text());
    }
    // What is still stored resumes.
    let mut g = resume(&c, &ids[ids.len() - 2]).await;
    let msgs = g.rest_messages().await;
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert_eq!(text_of(&msgs[0]), "paced done");
}

#[tokio::test]
async fn a_bad_last_event_id_is_refused_at_once() {
    let f = test_server();
    let srv = TestHttpServer::start(f.server.clone(), with_store()).await;
    let mut c = srv.client();
    c.connect("2025-11-25").await;
    let id = message_ids(&paced_answer(&c, &f.pace, 2).await).remove(0);
    let stream = id.split_once('-').expect("an id").0.to_owned();
    // Another session's streams are not ours, even with the same numbers.
    let mut other = srv.client();
    other.connect("2025-11-25").await;
    let bad = [
        "garbage".to_owned(),
        "1_2".to_owned(),
        "-1".to_owned(),
        "1-".to_owned(),
        "1-2-3".to_owned(),
        "99999999999999999999999-1".to_owned(),
        format!("{}-1", 1000),
        format!("{stream}-999"),
    ];
    for last in &bad {
        let r = within(
            "the answer to a bad Last-Event-ID",
            c.get_stream(Some(last)),
        )
        .await
        .expect_whole(last);
        assert_rejected(&r, StatusCode::BAD_REQUEST, -32600);
    }
    let r = within("another session's id", other.get_stream(Some(&id)))
        .await
        .expect_whole("another session's event id");
    assert_rejected(&r, StatusCode::BAD_REQUEST, -32600);

    // Without a store, only a stream this instance still holds can be resumed.
    let f = test_server();
    let plain = TestHttpServer::start(f.server.clone(), StreamableHttpOptions::default()).await;
    let mut p = plain.client();
    p.connect("2025-11-25").await;
    let finished = message_ids(&paced_answer(&p, &f.pace, 2).await).remove(0);
    for last in [finished.as_str(), "7-1", "garbage"] {
        let r = within("the answer without a store", p.get_stream(Some(last)))
            .await
            .expect_whole(last);
        assert_rejected(&r, StatusCode::BAD_REQUEST, -32600);
    }
}

#[tokio::test]
async fn without_a_store_the_standalone_stream_cannot_be_resumed() {
    let f = test_server();
    let srv = TestHttpServer::start(f.server, StreamableHttpOptions::default()).await;
    let mut c = srv.client();
    c.connect("2025-11-25").await;
    for last in ["0-0", "0-5"] {
        let r = within("the answer", c.get_stream(Some(last)))
            .await
            .expect_whole(last);
        assert_rejected(&r, StatusCode::BAD_REQUEST, -32600);
    }
}

// ---- SEP-1699: the handler ends its stream --------------------------------------------------

/// A `close_stream` call on `c`: the POST answer ends with the handler's `retry` after
/// progress 1; the resumed GET delivers progress 2 and the result, then ends.
async fn close_and_resume(f: &Fixture, c: &McpHttp) {
    let call = c.call_tool("close_stream", json!({"retry_ms": 250}), Some("t"));
    let mut s = c.post_stream(&call).await.expect_stream("close_stream");
    let blocks = s.rest().await;
    let messages: Vec<Value> = blocks
        .iter()
        .filter(|b| b.is_message())
        .map(SseBlock::json)
        .collect();
    assert_eq!(messages.len(), 1, "{blocks:?}");
    assert_eq!(messages[0]["params"]["progress"], 1.0);
    let last = blocks.last().expect("blocks");
    assert_eq!(
        last.retry,
        Some(250),
        "the stream must end with the handler's retry: {blocks:?}"
    );
    let last_id = blocks
        .iter()
        .rev()
        .find_map(|b| b.id.clone())
        .expect("an event id to resume from");

    f.resume.entered().await;
    let mut g = resume(c, &last_id).await;
    f.resume.release();
    let msgs = g.rest_messages().await;
    assert_eq!(msgs.len(), 2, "{msgs:?}");
    assert_eq!(msgs[0]["params"]["progress"], 2.0);
    assert_eq!(msgs[1]["id"], call["id"]);
    assert_eq!(text_of(&msgs[1]), "resumed");
}

#[tokio::test]
async fn a_handler_closing_its_stream_has_its_result_delivered_on_the_resumed_get() {
    let cases = [
        ("an event store", with_store()),
        (
            "no event store (resumed on this instance)",
            StreamableHttpOptions::default(),
        ),
        (
            "JSON answers (upgraded to SSE)",
            with_store().json_response(true),
        ),
        (
            "JSON answers, no store",
            StreamableHttpOptions::default().json_response(true),
        ),
    ];
    for (what, o) in cases {
        let f = test_server();
        let srv = TestHttpServer::start(f.server.clone(), o).await;
        let mut c = srv.client();
        c.connect("2025-11-25").await;
        eprintln!("{what}");
        close_and_resume(&f, &c).await;
    }
}
