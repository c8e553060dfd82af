//! The conformance fixtures of `vellum_demos::everything`, driven by a 2026-07-28 client
//! over loopback HTTP: no handshake, per-request `_meta`, MRTR instead of requests to the client,
//! `ttlMs`/`cacheScope` on cacheable results, -32602 for unknown resources. (The legacy era
//! of the same fixtures is what the official suite checks: scripts/conformance.sh.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};
use vellum_testkit::http::{Modern, TestHttpServer};

async fn client() -> (TestHttpServer, Modern) {
    let server =
        TestHttpServer::serve(vellum_demos::everything::everything_server().unwrap()).await;
    let c = Modern::new(&server.url);
    (server, c)
}

fn assert_cacheable(result: &Value) {
    assert_eq!(result["resultType"], "complete");
    assert!(
        result["ttlMs"].as_u64().is_some(),
        "ttlMs missing: {result}"
    );
    assert!(
        matches!(result["cacheScope"].as_str(), Some("public" | "private")),
        "cacheScope missing: {result}"
    );
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "vellum-everything"
    );
}

#[tokio::test]
async fn discover_and_lists_carry_cache_hints() {
    let (_s, c) = client().await;
    let d = c.request(1, "server/discover", json!({})).await;
    let r = d.result();
    assert_cacheable(r);
    assert!(
        r["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28"))
    );
    let caps = &r["capabilities"];
    for k in ["tools", "resources", "prompts", "completions", "logging"] {
        assert!(caps.get(k).is_some(), "capability {k} missing: {caps}");
    }
    for (i, m) in [
        "tools/list",
        "resources/list",
        "resources/templates/list",
        "prompts/list",
    ]
    .into_iter()
    .enumerate()
    {
        let a = c.request(10 + i as i64, m, json!({})).await;
        assert_cacheable(a.result());
    }
    let tools = c.request(20, "tools/list", json!({})).await;
    let tools = tools.result()["tools"].as_array().unwrap().clone();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "tools are listed in a deterministic order");
    for t in &tools {
        assert!(t["description"].is_string(), "{t}");
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
    }
    for n in [
        "hello_world",
        "test_simple_text",
        "test_sampling",
        "test_elicitation",
        "test_reconnection",
        "json_schema_2020_12_tool",
    ] {
        assert!(names.contains(&n), "{n} not listed");
    }
    let raw = tools
        .iter()
        .find(|t| t["name"] == "json_schema_2020_12_tool")
        .unwrap();
    assert_eq!(
        raw["inputSchema"]["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(
        raw["inputSchema"]["properties"]["address"]["$ref"],
        "#/$defs/address"
    );
    assert_eq!(raw["inputSchema"]["additionalProperties"], false);
}

#[tokio::test]
async fn content_tools() {
    let (_s, c) = client().await;
    let call = |id, name: &str| {
        let body = json!({"name": name, "arguments": {}});
        let c = &c;
        async move { c.request(id, "tools/call", body).await }
    };
    let a = call(1, "test_simple_text").await;
    assert_eq!(a.result()["resultType"], "complete");
    assert_eq!(
        a.result()["content"][0]["text"],
        "This is a simple text response for testing."
    );
    let a = call(2, "test_image_content").await;
    assert_eq!(a.result()["content"][0]["mimeType"], "image/png");
    let a = call(3, "test_audio_content").await;
    assert_eq!(a.result()["content"][0]["mimeType"], "audio/wav");
    let a = call(4, "test_embedded_resource").await;
    assert_eq!(
        a.result()["content"][0]["resource"]["uri"],
        "test://embedded-resource"
    );
    let a = call(5, "test_multiple_content_types").await;
    let kinds: Vec<&str> = a.result()["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["text", "image", "resource"]);
    let a = call(6, "test_error_handling").await;
    assert_eq!(a.result()["isError"], true);
    let a = c
        .request(
            7,
            "tools/call",
            json!({"name": "hello_world", "arguments": {"user_name": "Ada"}}),
        )
        .await;
    assert_eq!(a.result()["content"][0]["text"], "Hello World, Ada");
}

#[tokio::test]
async fn logging_needs_a_level_and_progress_a_token() {
    let (_s, mut c) = client().await;
    let body = json!({"name": "test_tool_with_logging", "arguments": {}});
    let quiet = c.request(1, "tools/call", body.clone()).await;
    assert!(quiet.notifications("notifications/message").is_empty());
    c.log_level = Some("debug");
    let loud = c.request(2, "tools/call", body).await;
    let logs = loud.notifications("notifications/message");
    assert_eq!(logs.len(), 3, "{:?}", loud.messages);
    assert_eq!(logs[0]["params"]["data"], "Tool execution started");

    let body = json!({"name": "test_tool_with_progress", "arguments": {}});
    let none = c.request(3, "tools/call", body.clone()).await;
    assert!(none.notifications("notifications/progress").is_empty());
    let mut with_token = body;
    with_token["_meta"] = json!({"progressToken": "p-1"});
    let a = c.request(4, "tools/call", with_token).await;
    let p = a.notifications("notifications/progress");
    let values: Vec<f64> = p
        .iter()
        .map(|n| n["params"]["progress"].as_f64().unwrap())
        .collect();
    assert_eq!(values, [0.0, 50.0, 100.0]);
    assert!(p.iter().all(|n| n["params"]["progressToken"] == "p-1"));
}

#[tokio::test]
async fn sampling_and_elicitation_go_through_mrtr() {
    let (_s, c) = client().await;
    let first = c
        .request(
            1,
            "tools/call",
            json!({"name": "test_sampling", "arguments": {"prompt": "Say hi"}}),
        )
        .await;
    let r = first.result();
    assert_eq!(r["resultType"], "input_required");
    let (key, ask) = r["inputRequests"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .unwrap();
    assert_eq!(ask["method"], "sampling/createMessage");
    assert_eq!(ask["params"]["messages"][0]["content"]["text"], "Say hi");
    assert!(
        r.get("ttlMs").is_none(),
        "input_required results are not cacheable"
    );
    let retry = c
        .request(
            2,
            "tools/call",
            json!({"name": "test_sampling", "arguments": {"prompt": "Say hi"},
                "inputResponses": {key.clone(): {"role": "assistant",
                    "content": {"type": "text", "text": "hi!"}, "model": "m", "stopReason": "endTurn"}}}),
        )
        .await;
    assert_eq!(retry.result()["resultType"], "complete");
    assert_eq!(retry.result()["content"][0]["text"], "LLM response: hi!");

    let args = json!({"message": "Who are you?"});
    let first = c
        .request(
            3,
            "tools/call",
            json!({"name": "test_elicitation", "arguments": args}),
        )
        .await;
    let asks = first.result()["inputRequests"].as_object().unwrap().clone();
    let (key, ask) = asks.iter().next().unwrap();
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(
        ask["params"]["requestedSchema"]["required"],
        json!(["username", "email"])
    );
    let retry = c
        .request(
            4,
            "tools/call",
            json!({"name": "test_elicitation", "arguments": args,
                "inputResponses": {key.clone(): {"action": "accept",
                    "content": {"username": "ada", "email": "ada@example.com"}}}}),
        )
        .await;
    let text = retry.result()["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(text.starts_with("User response: action=accept"), "{text}");
    assert!(text.contains("ada@example.com"), "{text}");
}

#[tokio::test]
async fn resources_prompts_and_completion() {
    let (_s, c) = client().await;
    let a = c
        .request(1, "resources/read", json!({"uri": "test://static-text"}))
        .await;
    assert_cacheable(a.result());
    assert_eq!(
        a.result()["contents"][0]["text"],
        "This is the content of the static text resource."
    );
    let a = c
        .request(2, "resources/read", json!({"uri": "test://static-binary"}))
        .await;
    assert!(a.result()["contents"][0]["blob"].is_string());
    let a = c
        .request(
            3,
            "resources/read",
            json!({"uri": "test://template/123/data"}),
        )
        .await;
    let body: Value =
        serde_json::from_str(a.result()["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(body["id"], "123");
    let missing = c
        .request(4, "resources/read", json!({"uri": "test://nope"}))
        .await;
    assert_eq!(missing.error_code(), -32602, "2026-07-28 uses -32602");

    let a = c
        .request(
            5,
            "prompts/get",
            json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "x", "arg2": "y"}}),
        )
        .await;
    assert_eq!(
        a.result()["messages"][0]["content"]["text"],
        "Prompt with arguments: arg1='x', arg2='y'"
    );
    let a = c
        .request(
            6,
            "prompts/get",
            json!({"name": "test_prompt_with_embedded_resource", "arguments": {"resourceUri": "test://r"}}),
        )
        .await;
    assert_eq!(a.result()["messages"][0]["content"]["type"], "resource");
    let a = c
        .request(7, "prompts/get", json!({"name": "test_prompt_with_image"}))
        .await;
    assert_eq!(a.result()["messages"][0]["content"]["type"], "image");
    let a = c
        .request(
            8,
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                "argument": {"name": "arg1", "value": "tes"}}),
        )
        .await;
    assert_eq!(
        a.result()["completion"]["values"],
        json!(["test", "testing", "tested"])
    );
}
