//! The SDK's own [`Client`] set up against the [`fixture`](crate::fixture) server: handlers
//! that answer sampling, elicitation and roots, a record of the logs it is sent, and
//! [`exercise`], one pass over every typed call, checked. The client tests run it over each
//! transport (memory, stdio framing, Streamable HTTP) in each era.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use vellum::client::{CallOptions, Client, ClientBuilder, ProtocolChoice, ServerNotification};
use vellum::protocol::{
    CallToolParams, CallToolResult, CompletionReference, CreateMessageResult, ElicitAction,
    ElicitResult, ListRootsResult, LoggingLevel, OneOrMany, ResourceContents, Role, Root,
    SamplingContent,
};

/// What the client's notification handler saw.
#[derive(Clone, Default)]
pub struct Seen {
    /// `level:data` of every log message, in order.
    pub logs: Arc<Mutex<Vec<String>>>,
}

/// A client builder for `choice` whose handlers answer like a user and a model would: the
/// name `Alice` to elicitation, `four` (model `vellum-test-model`) to sampling, two roots to
/// `roots/list`; log messages go to `seen`.
pub fn builder(choice: ProtocolChoice, seen: &Seen) -> ClientBuilder {
    let logs = seen.logs.clone();
    Client::builder()
        .name("fixture-client", "0.0.1")
        .protocol(choice)
        .request_timeout(Duration::from_secs(30))
        .on_elicitation(|_p| async move {
            let mut content = serde_json::Map::new();
            content.insert("name".into(), json!("Alice"));
            Ok(ElicitResult {
                action: ElicitAction::Accept,
                content: Some(content),
                meta: None,
            })
        })
        .on_sampling(|_p| async move {
            Ok(CreateMessageResult {
                role: Role::Assistant,
                content: OneOrMany::One(SamplingContent::text("four")),
                model: "vellum-test-model".into(),
                stop_reason: Some("endTurn".into()),
                meta: None,
            })
        })
        .on_roots(|| async move {
            let root = |uri: &str| Root {
                uri: uri.into(),
                name: None,
                meta: None,
            };
            Ok(ListRootsResult {
                roots: vec![root("file:///a"), root("file:///b")],
                meta: None,
            })
        })
        .on_notification(move |n| {
            if let ServerNotification::Log(l) = n {
                logs.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(format!("{}:{}", l.level, l.data));
            }
        })
}

/// Calls a tool and returns its result and the progress values its callback saw.
pub async fn call_with_progress(
    client: &Client,
    tool: &str,
    arguments: serde_json::Value,
) -> (CallToolResult, Vec<f64>) {
    let got = Arc::new(Mutex::new(Vec::new()));
    let g = got.clone();
    let r = client
        .call_tool_with(
            CallToolParams {
                name: tool.into(),
                arguments: arguments.as_object().cloned(),
                ..Default::default()
            },
            CallOptions::default()
                .on_progress(move |p| g.lock().unwrap_or_else(|e| e.into_inner()).push(p.progress)),
        )
        .await
        .unwrap();
    let seen = got.lock().unwrap_or_else(|e| e.into_inner()).clone();
    (r, seen)
}

/// Every typed call against the fixture server, checked (`modern`: the era expected).
pub async fn exercise(client: &Client, seen: &Seen, modern: bool) {
    assert_eq!(client.is_modern(), modern, "era");
    let info = client.server_info().expect("server info");
    assert_eq!(info.name, "hello-world");
    assert!(client.server_capabilities().tools.is_some());

    let tools = client.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "hello_world"), "{tools:?}");

    let r = client
        .call_tool("hello_world", json!({"user_name": "Alice"}))
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("Hello World, Alice"));

    // Progress reaches the call's callback, in order.
    let (r, got) = call_with_progress(client, "progress", json!({"steps": 3})).await;
    assert_eq!(r.content[0].as_text(), Some("done"));
    assert_eq!(got, vec![1.0, 2.0, 3.0]);

    // Logs: only at the level asked for.
    client.set_logging_level(LoggingLevel::Info).await.unwrap();
    let r = client
        .call_tool("log", json!({"message": "a log line"}))
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("logged"));
    let r = client
        .call_tool("log", json!({"message": "a debug line", "level": "debug"}))
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("logged"));
    assert_eq!(
        *seen.logs.lock().unwrap_or_else(|e| e.into_inner()),
        vec!["info:\"a log line\"".to_owned()]
    );

    // What the server asks of the client: elicitation, sampling, roots.
    let r = client.call_tool("ask", json!({})).await.unwrap();
    assert_eq!(r.content[0].as_text(), Some("Hello, Alice"));
    let r = client.call_tool("sample", json!({})).await.unwrap();
    let text = r.content[0].as_text().unwrap_or_default().to_owned();
    assert!(text.starts_with("model vellum-test-model said"), "{text}");
    assert!(text.contains("\"four\""), "{text}");
    let r = client.call_tool("roots", json!({})).await.unwrap();
    assert_eq!(r.content[0].as_text(), Some("2 roots"));

    // Resources, templates, prompts, completion, ping.
    let resources = client.list_all_resources().await.unwrap();
    assert_eq!(resources.len(), 1);
    let templates = client.list_all_resource_templates().await.unwrap();
    assert_eq!(templates[0].uri_template, "test://items/{id}");
    let r = client.read_resource("test://items/42").await.unwrap();
    match &r.contents[0] {
        ResourceContents::Text(t) => assert_eq!(t.text, "item 42"),
        other => panic!("{other:?}"),
    }
    let e = client.read_resource("test://nope").await.unwrap_err();
    assert!(e.is_rpc(), "{e:?}");
    let prompts = client.list_all_prompts().await.unwrap();
    assert_eq!(prompts[0].name, "greet");
    let p = client
        .get_prompt("greet", [("name".to_owned(), "Bob".to_owned())])
        .await
        .unwrap();
    assert_eq!(p.messages[0].content.as_text(), Some("Please greet Bob"));
    let c = client
        .complete(
            CompletionReference::Prompt {
                name: "greet".into(),
                title: None,
            },
            "name",
            "B",
        )
        .await
        .unwrap();
    assert_eq!(c.completion.values, vec!["Bob".to_owned()]);
    client.ping().await.unwrap();

    // An unknown tool is the server's error, not a transport failure.
    let e = client
        .call_tool("no_such_tool", json!({}))
        .await
        .unwrap_err();
    assert!(e.rpc_error().is_some_and(|o| o.code == -32602), "{e:?}");
}
