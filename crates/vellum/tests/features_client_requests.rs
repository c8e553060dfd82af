//! Asking the client from a tool handler (sampling, elicitation, roots) with one handler for
//! both eras: JSON-RPC requests on the request's stream in a legacy session, multi
//! round-trip requests (`InputRequiredResult`, `inputResponses`, signed `requestState`) in
//! 2026-07-28. Over loopback HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use serde_json::{Value, json};
use vellum::prelude::*;
use vellum::protocol::{
    CreateMessageParams, ElicitFormParams, ElicitParams, ElicitUrlParams, SamplingMessage,
};
use vellum::server::{NoArgs, RequestStateKey};
use vellum_testkit::http::{Legacy, Modern, SseReader, TestHttpServer};

fn form(message: &str) -> ElicitParams {
    let schema = json!({"type": "object",
        "properties": {"name": {"type": "string"}, "lang": {"type": "string", "default": "en"}},
        "required": ["name"]});
    ElicitParams::Form(ElicitFormParams::new(
        message,
        schema.as_object().unwrap().clone(),
    ))
}

/// A tool that asks twice (the user, then the model) and once for roots.
fn server(options: ServerOptions) -> Server {
    let s = Server::new(Implementation::new("asker", "1"), options);
    s.add_tool(
        Tool::new("interview", "Asks the user, then the model, then the roots"),
        |ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            let who = ctx.elicit(form("Who are you?")).await?;
            let content = who.content.unwrap_or_default();
            let reply = ctx
                .create_message(CreateMessageParams {
                    messages: vec![SamplingMessage::user(format!(
                        "Greet {}",
                        content["name"].as_str().unwrap_or("?")
                    ))],
                    max_tokens: 50,
                    ..Default::default()
                })
                .await?;
            let roots = ctx.list_roots().await?;
            let greeting = reply.content.as_slice()[0]
                .as_text()
                .unwrap_or_default()
                .to_owned();
            Ok::<_, HandlerError>(format!(
                "{greeting} ({}, {} roots)",
                content["lang"].as_str().unwrap_or("?"),
                roots.roots.len()
            ))
        },
    )
    .unwrap();
    s.add_tool(
        Tool::new(
            "together",
            "Asks the user, the model and the roots at once, by name",
        ),
        |ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            let (who, model, roots) = (
                ctx.with_input_key("user_name"),
                ctx.with_input_key("greeting"),
                ctx.with_input_key("client_roots"),
            );
            let (who, reply, roots) = tokio::join!(
                who.elicit(form("Who are you?")),
                model.create_message(CreateMessageParams {
                    messages: vec![SamplingMessage::user("Greet")],
                    max_tokens: 50,
                    ..Default::default()
                }),
                roots.list_roots(),
            );
            let (who, reply, roots) = (who?, reply?, roots?);
            Ok::<_, HandlerError>(format!(
                "{} / {} / {} roots",
                who.content.unwrap_or_default()["name"]
                    .as_str()
                    .unwrap_or("?"),
                reply.content.as_slice()[0].as_text().unwrap_or_default(),
                roots.roots.len()
            ))
        },
    )
    .unwrap();
    s.add_tool(
        Tool::new("consent", "Sends the user to a page"),
        |ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            let r = ctx
                .elicit(ElicitParams::Url(ElicitUrlParams {
                    mode: "url".into(),
                    message: "Sign in".into(),
                    url: "https://example.com/login".into(),
                    elicitation_id: Some("e1".into()),
                    meta: None,
                }))
                .await?;
            Ok::<_, HandlerError>(format!("{:?}", r.action))
        },
    )
    .unwrap();
    // A handler that wraps the question's error in its own error type (anyhow, as an
    // application does with `?`) and one that catches it and goes on: in 2026-07-28 the
    // pending question still decides the answer of the round.
    s.add_tool(
        Tool::new("wrapped", "Asks, passing the error on through anyhow"),
        |ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            use anyhow::Context as _;
            let who = ctx
                .elicit(form("Who are you?"))
                .await
                .context("asking who calls")
                .map_err(HandlerError::failed)?;
            Ok::<_, HandlerError>(format!(
                "hello {}",
                who.content.unwrap_or_default()["name"]
                    .as_str()
                    .unwrap_or("?")
            ))
        },
    )
    .unwrap();
    s.add_tool(
        Tool::new("optimist", "Asks, and goes on without an answer"),
        |ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            let who = ctx.elicit(form("Who are you?")).await.ok();
            Ok::<_, HandlerError>(match who.and_then(|w| w.content) {
                Some(c) => format!("hello {}", c["name"].as_str().unwrap_or("?")),
                None => "hello stranger".to_owned(),
            })
        },
    )
    .unwrap();
    s.add_tool(
        Tool::new("impatient", "Asks with a short timeout"),
        |ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            let r = ctx
                .with_timeout(Duration::from_millis(200))
                .elicit(form("Quick!"))
                .await;
            Ok::<_, HandlerError>(match r {
                Ok(_) => "answered".to_owned(),
                Err(e) => format!("gave up: {e}"),
            })
        },
    )
    .unwrap();
    s
}

fn answer(request: &Value) -> Value {
    match request["method"].as_str().unwrap() {
        "elicitation/create" => json!({"action": "accept", "content": {"name": "Ada"}}),
        "sampling/createMessage" => {
            let prompt = request["params"]["messages"][0]["content"]["text"].clone();
            json!({"role": "assistant", "content": {"type": "text", "text": format!("Hello! [{}]", prompt.as_str().unwrap())},
                "model": "test-model", "stopReason": "endTurn"})
        }
        "roots/list" => json!({"roots": [{"uri": "file:///a"}, {"uri": "file:///b"}]}),
        m => panic!("unexpected request {m}"),
    }
}

#[tokio::test]
async fn legacy_sessions_ask_with_requests_on_the_stream() {
    let srv = TestHttpServer::serve(server(ServerOptions::default())).await;
    let c = Legacy::connect(&srv.url).await;
    let a = c
        .request_answering(
            1,
            "tools/call",
            json!({"name": "interview", "arguments": {}}),
            Some(&answer),
        )
        .await;
    // Defaults of the form were applied to the accepted answer.
    assert_eq!(
        a.result()["content"][0]["text"],
        "Hello! [Greet Ada] (en, 2 roots)"
    );
    let methods: Vec<&str> = a
        .messages
        .iter()
        .map(|m| m["method"].as_str().unwrap())
        .collect();
    assert_eq!(
        methods,
        ["elicitation/create", "sampling/createMessage", "roots/list"]
    );
    let a = c
        .request_answering(
            2,
            "tools/call",
            json!({"name": "consent", "arguments": {}}),
            Some(&|r: &Value| {
                assert_eq!(r["params"]["mode"], "url");
                json!({"action": "decline"})
            }),
        )
        .await;
    assert_eq!(a.result()["content"][0]["text"], "Decline");
}

#[tokio::test]
async fn legacy_questions_time_out_and_invalid_answers_are_refused() {
    let srv = TestHttpServer::serve(server(ServerOptions::default())).await;
    let c = Legacy::connect(&srv.url).await;
    // Never answer: the question is cancelled on the client's side and the call goes on.
    let resp = c
        .post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "impatient", "arguments": {}}}))
        .await;
    let mut reader = SseReader::new(resp);
    let mut seen = Vec::new();
    let result = loop {
        let m = reader.next_json().await.expect("stream ended");
        if m["id"] == 1 && m.get("method").is_none() {
            break m;
        }
        seen.push(m["method"].as_str().unwrap_or("").to_owned());
    };
    assert_eq!(seen, ["elicitation/create", "notifications/cancelled"]);
    assert!(
        result["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("gave up: no answer within")
    );
    // An accepted answer that breaks the requested schema never reaches the handler.
    let a = c
        .request_answering(
            2,
            "tools/call",
            json!({"name": "interview", "arguments": {}}),
            Some(&|_r: &Value| json!({"action": "accept", "content": {"name": 42}})),
        )
        .await;
    assert_eq!(a.result()["isError"], true);
    assert!(
        a.result()["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("does not match the requested schema")
    );
}

#[tokio::test]
async fn missing_capabilities_are_refused_before_asking() {
    let srv = TestHttpServer::serve(server(ServerOptions::default())).await;
    let c = Legacy::connect_with(&srv.url, "2025-06-18", json!({})).await;
    let a = c
        .request(
            1,
            "tools/call",
            json!({"name": "interview", "arguments": {}}),
        )
        .await;
    assert_eq!(a.result()["isError"], true);
    assert!(a.messages.is_empty(), "nothing was asked");
    // 2026-07-28: the request fails with -32021 (HTTP 400), naming the capability.
    let mut m = Modern::new(&srv.url);
    m.capabilities = json!({});
    let a = m
        .request(
            1,
            "tools/call",
            json!({"name": "interview", "arguments": {}}),
        )
        .await;
    assert_eq!(a.status, 400);
    assert_eq!(a.error_code(), -32021);
    // Each way of asking checks its own capability: sampling, then roots, once the earlier
    // questions are answered.
    let elicited = json!({"action": "accept", "content": {"name": "Ada"}});
    let sampled = json!({"role": "assistant", "content": {"type": "text", "text": "Hi"},
        "model": "m", "stopReason": "endTurn"});
    for (caps, responses, missing) in [
        (
            json!({"elicitation": {}}),
            json!({"1": elicited}),
            "sampling",
        ),
        (
            json!({"elicitation": {}, "sampling": {}}),
            json!({"1": elicited, "2": sampled}),
            "roots",
        ),
    ] {
        m.capabilities = caps;
        let a = m
            .request(
                2,
                "tools/call",
                json!({"name": "interview", "arguments": {}, "inputResponses": responses}),
            )
            .await;
        assert_eq!((a.status, a.error_code()), (400, -32021), "{missing}");
        assert!(
            a.response["error"]["data"]["requiredCapabilities"][missing].is_object(),
            "{}",
            a.response
        );
    }
}

/// Drives the interview through MRTR rounds, answering whatever is asked.
async fn mrtr_rounds(c: &Modern, first_id: i64) -> (Value, usize) {
    let mut params = json!({"name": "interview", "arguments": {}});
    for round in 0..10 {
        let a = c
            .request(first_id + round as i64, "tools/call", params.clone())
            .await;
        let r = a.result().clone();
        if r["resultType"] == "complete" {
            return (r, round);
        }
        assert_eq!(r["resultType"], "input_required");
        let asks = r["inputRequests"].as_object().unwrap();
        assert_eq!(asks.len(), 1, "one question per round");
        let (key, ask) = asks.iter().next().unwrap();
        let mut responses = serde_json::Map::new();
        responses.insert(key.clone(), answer(ask));
        params["inputResponses"] = Value::Object(responses);
        match r.get("requestState") {
            Some(s) => params["requestState"] = s.clone(),
            None => {
                params.as_object_mut().unwrap().remove("requestState");
            }
        }
    }
    panic!("no result after 10 rounds");
}

#[tokio::test]
async fn modern_handlers_ask_through_retries() {
    let srv = TestHttpServer::serve(server(ServerOptions::default())).await;
    let c = Modern::new(&srv.url);
    let (result, rounds) = mrtr_rounds(&c, 1).await;
    assert_eq!(rounds, 3, "three questions, three retries");
    assert_eq!(
        result["content"][0]["text"],
        "Hello! [Greet Ada] (en, 2 roots)"
    );
}

/// Whatever a 2026-07-28 handler makes of the error its question returned (wrapped in
/// anyhow, or caught), the round answers with the question; the retry with the answer
/// completes. A legacy session asks on the stream and gets the same result.
#[tokio::test]
async fn a_pending_question_decides_the_round_whatever_the_handler_returns() {
    let srv = TestHttpServer::serve(server(ServerOptions::default())).await;
    let c = Modern::new(&srv.url);
    for (i, tool) in ["wrapped", "optimist"].into_iter().enumerate() {
        let id = 10 * (i as i64 + 1);
        let call = json!({"name": tool, "arguments": {}});
        let first = c.request(id, "tools/call", call.clone()).await;
        let r = first.result();
        assert_eq!(r["resultType"], "input_required", "{tool}: {r}");
        let asks = r["inputRequests"].as_object().unwrap();
        assert_eq!(asks.len(), 1, "{tool}: {r}");
        let (key, ask) = asks.iter().next().unwrap();
        assert_eq!(ask["method"], "elicitation/create");
        let mut retry = call.clone();
        retry["inputResponses"] = json!({ key.clone(): answer(ask) });
        retry["requestState"] = r["requestState"].clone();
        let done = c.request(id + 1, "tools/call", retry).await;
        assert_eq!(
            done.result()["resultType"],
            "complete",
            "{tool}: {}",
            done.result()
        );
        assert_eq!(done.result()["content"][0]["text"], "hello Ada", "{tool}");
        assert_ne!(done.result()["isError"], true, "{tool}");
        let l = Legacy::connect(&srv.url).await;
        let a = l
            .request_answering(1, "tools/call", call, Some(&answer))
            .await;
        assert_eq!(
            a.result()["content"][0]["text"],
            "hello Ada",
            "{tool} (legacy)"
        );
    }
}

/// Named questions asked concurrently: one round asks them all, under the handler's keys,
/// with a signed state from the first round on; answers under those keys need no state.
#[tokio::test]
async fn concurrent_named_questions_go_in_one_round() {
    let srv = TestHttpServer::serve(server(ServerOptions::default())).await;
    let c = Modern::new(&srv.url);
    let call = json!({"name": "together", "arguments": {}});
    let first = c.request(1, "tools/call", call.clone()).await;
    let r = first.result();
    assert_eq!(r["resultType"], "input_required", "{r}");
    let asks = r["inputRequests"].as_object().unwrap();
    let keys: Vec<&str> = asks.keys().map(String::as_str).collect();
    assert_eq!(keys, ["client_roots", "greeting", "user_name"], "{r}");
    assert_eq!(asks["user_name"]["method"], "elicitation/create");
    assert_eq!(asks["greeting"]["method"], "sampling/createMessage");
    assert_eq!(asks["client_roots"]["method"], "roots/list");
    let state = r["requestState"].as_str().expect("a state in round 1");
    let mut responses = serde_json::Map::new();
    for (k, ask) in asks {
        responses.insert(k.clone(), answer(ask));
    }
    let mut retry = call.clone();
    retry["inputResponses"] = Value::Object(responses.clone());
    retry["requestState"] = json!(state);
    let done = c.request(2, "tools/call", retry).await;
    assert_eq!(done.result()["resultType"], "complete", "{}", done.result());
    assert_eq!(
        done.result()["content"][0]["text"],
        "Ada / Hello! [Greet] / 2 roots"
    );
    // The same answers with extra keys and no state: complete as well.
    responses.insert("unknown_extra_key".into(), json!({"x": 1}));
    let mut again = call.clone();
    again["inputResponses"] = Value::Object(responses);
    let done = c.request(3, "tools/call", again).await;
    assert_eq!(done.result()["resultType"], "complete", "{}", done.result());
    // An answer of the wrong shape is the client's error (-32602), not a tool failure.
    let mut bad = call.clone();
    bad["inputResponses"] = json!({"user_name": 12345});
    let refused = c.request(4, "tools/call", bad).await;
    assert_eq!(refused.error_code(), -32602);
    assert_eq!(refused.status, 400);
    // A legacy session: the same handler asks its three questions as requests.
    let l = Legacy::connect(&srv.url).await;
    let a = l
        .request_answering(1, "tools/call", call, Some(&answer))
        .await;
    assert_eq!(
        a.result()["content"][0]["text"],
        "Ada / Hello! [Greet] / 2 roots"
    );
    assert_eq!(a.messages.len(), 3);
}

#[tokio::test]
async fn request_state_is_signed_and_bound() {
    let srv = TestHttpServer::serve(server(ServerOptions::default())).await;
    let c = Modern::new(&srv.url);
    // Round 1 and 2, to get a state that carries the first answer.
    let first = c
        .request(
            1,
            "tools/call",
            json!({"name": "interview", "arguments": {}}),
        )
        .await;
    let key = first.result()["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    let second = c
        .request(
            2,
            "tools/call",
            json!({"name": "interview", "arguments": {},
                "inputResponses": {key: {"action": "accept", "content": {"name": "Ada"}}}}),
        )
        .await;
    let state = second.result()["requestState"].as_str().unwrap().to_owned();
    // Tampered: refused.
    let mut forged = state.clone();
    forged.insert(
        3,
        if forged.as_bytes()[3] == b'A' {
            'B'
        } else {
            'A'
        },
    );
    let bad = c
        .request(
            3,
            "tools/call",
            json!({"name": "interview", "arguments": {}, "requestState": forged}),
        )
        .await;
    assert_eq!(bad.error_code(), -32602);
    // Replayed on another request (other arguments): refused.
    let other = c
        .request(
            4,
            "tools/call",
            json!({"name": "interview", "arguments": {"x": 1}, "requestState": state}),
        )
        .await;
    assert_eq!(other.error_code(), -32602);
    // Another server with its own key does not accept it ...
    let other_srv = TestHttpServer::serve(server(ServerOptions::default())).await;
    let other_client = Modern::new(&other_srv.url);
    let r = other_client
        .request(
            5,
            "tools/call",
            json!({"name": "interview", "arguments": {}, "requestState": state}),
        )
        .await;
    assert_eq!(r.error_code(), -32602);
}

#[tokio::test]
async fn instances_sharing_a_key_accept_each_others_states() {
    let key = RequestStateKey::from_secret("a shared secret for the whole deployment");
    let a = TestHttpServer::serve(server(
        ServerOptions::default().with_request_state_key(key.clone()),
    ))
    .await;
    let b =
        TestHttpServer::serve(server(ServerOptions::default().with_request_state_key(key))).await;
    let ca = Modern::new(&a.url);
    let cb = Modern::new(&b.url);
    // Round 1 on A, round 2 on A (state issued), round 3 on B.
    let r1 = ca
        .request(
            1,
            "tools/call",
            json!({"name": "interview", "arguments": {}}),
        )
        .await;
    let k1 = r1.result()["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    let r2 = ca
        .request(
            2,
            "tools/call",
            json!({"name": "interview", "arguments": {},
                "inputResponses": {k1: {"action": "accept", "content": {"name": "Ada"}}}}),
        )
        .await;
    let state = r2.result()["requestState"].clone();
    let asks = r2.result()["inputRequests"].as_object().unwrap().clone();
    let (k2, ask2) = asks.iter().next().unwrap();
    let r3 = cb
        .request(
            3,
            "tools/call",
            json!({"name": "interview", "arguments": {}, "requestState": state,
                "inputResponses": {k2.clone(): answer(ask2)}}),
        )
        .await;
    assert_eq!(r3.result()["resultType"], "input_required");
    assert_eq!(
        r3.result()["inputRequests"]
            .as_object()
            .unwrap()
            .values()
            .next()
            .unwrap()["method"],
        "roots/list",
        "B continued where A left off"
    );
}
