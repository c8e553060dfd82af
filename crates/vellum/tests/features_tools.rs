//! Tools over loopback HTTP, in both eras: typed input and output, validation, structured
//! output framing, metadata, ordering and pagination, run-time changes and their
//! notifications.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use vellum::prelude::*;
use vellum::protocol::{Icon, ListCapability, ServerCapabilities, TaskSupport, ToolAnnotations};
use vellum::server::NoArgs;
use vellum_testkit::http::{Legacy, Modern, TestHttpServer};

#[derive(Deserialize, JsonSchema)]
struct AddInput {
    /// First addend.
    a: i64,
    /// Second addend.
    b: i64,
}

#[derive(Serialize, JsonSchema)]
struct Sum {
    sum: i64,
}

fn server(page_size: usize) -> Server {
    let s = Server::new(
        Implementation::new("tools-test", "1"),
        ServerOptions::default().with_page_size(page_size),
    );
    s.add_tool(
        Tool::new("add", "Adds two integers")
            .with_title("Add")
            .with_annotations(ToolAnnotations {
                read_only_hint: Some(true),
                ..Default::default()
            })
            .with_icons(vec![Icon {
                src: "https://example.com/add.png".into(),
                mime_type: Some("image/png".into()),
                ..Default::default()
            }])
            .with_task_support(TaskSupport::Optional),
        |_ctx: RequestContext, _req: CallToolRequest, i: AddInput| async move {
            Ok::<_, HandlerError>(Structured(Sum { sum: i.a + i.b }))
        },
    )
    .unwrap();
    s.add_tool(
        Tool::new("squares", "Lists squares"),
        |_ctx: RequestContext, _req: CallToolRequest, _: NoArgs| async move {
            Ok::<_, HandlerError>(Structured(vec![1, 4, 9]))
        },
    )
    .unwrap();
    s.add_tool(
        Tool::new("echo", "Echoes"),
        |_ctx: RequestContext, req: CallToolRequest, _: Value| async move {
            Ok::<_, HandlerError>(req.arguments.to_string())
        },
    )
    .unwrap();
    s
}

#[tokio::test]
async fn typed_tools_in_both_eras() {
    let srv = TestHttpServer::serve(server(100)).await;
    let legacy = Legacy::connect(&srv.url).await;
    let modern = Modern::new(&srv.url);

    for (era, list) in [
        ("legacy", legacy.request(1, "tools/list", json!({})).await),
        ("modern", modern.request(1, "tools/list", json!({})).await),
    ] {
        let tools = list.result()["tools"].as_array().unwrap().clone();
        let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            ["add", "echo", "squares"],
            "{era}: deterministic order"
        );
        let add = &tools[0];
        assert_eq!(add["title"], "Add");
        assert_eq!(add["annotations"]["readOnlyHint"], true);
        assert_eq!(add["icons"][0]["src"], "https://example.com/add.png");
        assert_eq!(add["execution"]["taskSupport"], "optional");
        assert_eq!(add["inputSchema"]["required"], json!(["a", "b"]));
        assert_eq!(
            add["inputSchema"]["properties"]["a"]["description"],
            "First addend."
        );
        assert_eq!(add["outputSchema"]["properties"]["sum"]["type"], "integer");
        let squares = &tools[2];
        // An array output schema exists only from 2026-07-28 on.
        assert_eq!(
            squares.get("outputSchema").is_some(),
            era == "modern",
            "{era}"
        );
    }

    let call = json!({"name": "add", "arguments": {"a": 2, "b": 3}});
    let l = legacy.request(2, "tools/call", call.clone()).await;
    let m = modern.request(2, "tools/call", call).await;
    for r in [l.result(), m.result()] {
        assert_eq!(r["structuredContent"], json!({"sum": 5}));
        // The text fallback carries the same JSON for clients that read only content.
        let text: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text, json!({"sum": 5}));
    }

    // Non-object output: structured in 2026-07-28, text only before.
    let call = json!({"name": "squares", "arguments": {}});
    let l = legacy.request(3, "tools/call", call.clone()).await;
    let m = modern.request(3, "tools/call", call).await;
    assert!(l.result().get("structuredContent").is_none());
    assert_eq!(l.result()["content"][0]["text"], "[1,4,9]");
    assert_eq!(m.result()["structuredContent"], json!([1, 4, 9]));

    // Invalid arguments are a tool error the model can read, not a protocol error.
    let bad = json!({"name": "add", "arguments": {"a": "two"}});
    for r in [
        legacy.request(4, "tools/call", bad.clone()).await,
        modern.request(4, "tools/call", bad).await,
    ] {
        assert_eq!(r.result()["isError"], true);
        assert!(
            r.result()["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("invalid arguments")
        );
    }
    // Unknown tools are a protocol error.
    let unknown = json!({"name": "nope", "arguments": {}});
    assert_eq!(
        legacy
            .request(5, "tools/call", unknown.clone())
            .await
            .error_code(),
        -32602
    );
    assert_eq!(
        modern.request(5, "tools/call", unknown).await.error_code(),
        -32602
    );
}

#[tokio::test]
async fn pagination_with_opaque_cursors() {
    let s = server(2);
    let srv = TestHttpServer::serve(s).await;
    let legacy = Legacy::connect(&srv.url).await;
    let modern = Modern::new(&srv.url);
    for era in ["legacy", "modern"] {
        let mut names = Vec::new();
        let mut cursor: Option<String> = None;
        for i in 0..5 {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let a = if era == "legacy" {
                legacy.request(10 + i, "tools/list", params).await
            } else {
                modern.request(10 + i, "tools/list", params).await
            };
            let r = a.result();
            let page = r["tools"].as_array().unwrap();
            assert!(page.len() <= 2);
            names.extend(page.iter().map(|t| t["name"].as_str().unwrap().to_owned()));
            match r["nextCursor"].as_str() {
                Some(c) => cursor = Some(c.to_owned()),
                None => break,
            }
        }
        assert_eq!(names, ["add", "echo", "squares"], "{era}");
    }
    let bad = legacy
        .request(20, "tools/list", json!({"cursor": "!!not-a-cursor"}))
        .await;
    assert_eq!(bad.error_code(), -32602);
}

#[tokio::test]
async fn tools_added_and_removed_at_run_time_are_announced() {
    let s = server(100);
    let srv = TestHttpServer::serve(s.clone()).await;
    let legacy = Legacy::connect(&srv.url).await;
    let modern = Modern::new(&srv.url);
    let mut get = legacy.listen().await;
    let mut listen = modern
        .listen(
            7,
            json!({"toolsListChanged": true, "promptsListChanged": true}),
        )
        .await;
    let ack = listen.next_json().await.unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        7
    );
    // Prompts were asked for, but this server has none: only tools are granted.
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true})
    );

    // Fill the tools/list cache of both eras, then change the tools.
    legacy.request(1, "tools/list", json!({})).await;
    modern.request(1, "tools/list", json!({})).await;
    for name in ["late1", "late2", "late3"] {
        s.add_raw_tool(
            Tool::new(name, "added late"),
            |_c: RequestContext, _r| async move { Ok::<_, HandlerError>("late") },
        )
        .unwrap();
    }
    let n = get.next_json().await.unwrap();
    assert_eq!(n["method"], "notifications/tools/list_changed");
    let n = listen.next_json().await.unwrap();
    assert_eq!(n["method"], "notifications/tools/list_changed");
    assert_eq!(
        n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        7
    );
    for r in [
        legacy.request(2, "tools/list", json!({})).await,
        modern.request(2, "tools/list", json!({})).await,
    ] {
        assert_eq!(
            r.result()["tools"].as_array().unwrap().len(),
            6,
            "no stale cache"
        );
    }
    assert!(s.remove_tool("late2"));
    assert!(!s.remove_tool("late2"));
    assert_eq!(
        get.next_json().await.unwrap()["method"],
        "notifications/tools/list_changed"
    );
    assert_eq!(
        listen.next_json().await.unwrap()["method"],
        "notifications/tools/list_changed"
    );
    let r = legacy.request(3, "tools/list", json!({})).await;
    assert_eq!(r.result()["tools"].as_array().unwrap().len(), 5);
}

#[tokio::test]
async fn changes_are_not_announced_where_the_capabilities_say_list_changed_false() {
    let mut options = ServerOptions::default();
    options.capabilities = Some(ServerCapabilities {
        tools: Some(ListCapability {
            list_changed: Some(false),
        }),
        prompts: Some(ListCapability {
            list_changed: Some(true),
        }),
        ..Default::default()
    });
    let s = Server::new(Implementation::new("quiet-tools", "1"), options);
    let srv = TestHttpServer::serve(s.clone()).await;
    let legacy = Legacy::connect(&srv.url).await;
    let mut get = legacy.listen().await;
    s.add_raw_tool(
        Tool::new("late", "added late"),
        |_c: RequestContext, _r| async move { Ok::<_, HandlerError>("late") },
    )
    .unwrap();
    // A prompt change afterwards is announced; the tool change before it must not be.
    s.add_prompt(
        Prompt::new("late", "added late"),
        |_c: RequestContext, _r: GetPromptRequest| async move {
            Ok::<_, HandlerError>(GetPromptResult::new(vec![PromptMessage::user("hi")]))
        },
    )
    .unwrap();
    assert_eq!(
        get.next_json().await.unwrap()["method"],
        "notifications/prompts/list_changed"
    );
}

#[tokio::test]
async fn raw_schemas_are_listed_verbatim_and_enforced() {
    let s = Server::new(Implementation::new("raw", "1"), ServerOptions::default());
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}},
        "properties": {"at": {"$ref": "#/$defs/point"}},
        "required": ["at"],
        "additionalProperties": false
    });
    s.add_raw_tool(
        Tool::new("where", "Takes a point").with_input_schema(schema.as_object().unwrap().clone()),
        |_c: RequestContext, r: CallToolRequest| async move {
            Ok::<_, HandlerError>(r.arguments["at"]["x"].to_string())
        },
    )
    .unwrap();
    let srv = TestHttpServer::serve(s).await;
    let modern = Modern::new(&srv.url);
    let list = modern.request(1, "tools/list", json!({})).await;
    assert_eq!(list.result()["tools"][0]["inputSchema"], schema);
    let ok = modern
        .request(
            2,
            "tools/call",
            json!({"name": "where", "arguments": {"at": {"x": 1.5}}}),
        )
        .await;
    assert_eq!(ok.result()["content"][0]["text"], "1.5");
    let bad = modern
        .request(
            3,
            "tools/call",
            json!({"name": "where", "arguments": {"at": {"y": 1}}}),
        )
        .await;
    assert_eq!(
        bad.result()["isError"],
        true,
        "the $ref'd definition is enforced"
    );
}
