//! A server with one fixture per client feature, shared by the client tests.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::json;
use vellum::prelude::*;
use vellum::protocol::{
    CompleteResult, Completion, CreateMessageParams, ElicitFormParams, ElicitParams,
    GetPromptResult, LoggingLevel, ReadResourceResult, ResourceContents, SamplingMessage,
};

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct Hello {
    /// Who to greet.
    pub user_name: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct Steps {
    /// How many progress steps.
    pub steps: u32,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct Nothing {}

/// Set when the `hang` tool's future is dropped (the request was cancelled).
#[derive(Clone, Default)]
pub(crate) struct Flags {
    pub hang_dropped: Arc<AtomicBool>,
    pub hang_dropped_event: Arc<tokio::sync::Notify>,
    pub hang_started: Arc<tokio::sync::Notify>,
}

struct DropFlag(Arc<AtomicBool>, Arc<tokio::sync::Notify>);
impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
        self.1.notify_one();
    }
}

pub(crate) fn fixture_server() -> (Server, Flags) {
    let flags = Flags::default();
    let server = Server::new(
        Implementation::new("fixture", "1.2.3"),
        ServerOptions::default().with_instructions("Use the fixtures."),
    );
    server
        .add_tool(
            Tool::new("hello_world", "Greets"),
            |_c: RequestContext, _r: CallToolRequest, i: Hello| async move {
                Ok::<_, HandlerError>(CallToolResult::text(format!(
                    "Hello World, {}",
                    i.user_name
                )))
            },
        )
        .unwrap();
    server
        .add_tool(
            Tool::new("progress", "Reports progress"),
            |c: RequestContext, _r: CallToolRequest, i: Steps| async move {
                for n in 1..=i.steps {
                    c.notify_progress(
                        f64::from(n),
                        Some(f64::from(i.steps)),
                        Some(format!("step {n}")),
                    )
                    .await?;
                }
                Ok::<_, HandlerError>(CallToolResult::text("done"))
            },
        )
        .unwrap();
    server
        .add_tool(
            Tool::new("log", "Logs at info"),
            |c: RequestContext, _r: CallToolRequest, _i: Nothing| async move {
                c.log(LoggingLevel::Info, Some("fixture"), json!("a log line"))
                    .await?;
                c.log(LoggingLevel::Debug, Some("fixture"), json!("a debug line"))
                    .await?;
                Ok::<_, HandlerError>(CallToolResult::text("logged"))
            },
        )
        .unwrap();
    server
        .add_tool(
            Tool::new("ask_name", "Asks the user for a name"),
            |c: RequestContext, _r: CallToolRequest, _i: Nothing| async move {
                let schema = json!({"type":"object","properties":{"name":{"type":"string"}},"required":["name"]});
                let serde_json::Value::Object(schema) = schema else { unreachable!() };
                let r = c
                    .elicit(ElicitParams::Form(ElicitFormParams::new("Your name?", schema)))
                    .await?;
                let name = r
                    .content
                    .and_then(|m| m.get("name").and_then(|v| v.as_str()).map(str::to_owned))
                    .unwrap_or_else(|| format!("{:?}", r.action));
                Ok::<_, HandlerError>(CallToolResult::text(format!("Hello, {name}")))
            },
        )
        .unwrap();
    server
        .add_tool(
            Tool::new("sample", "Asks the client's model"),
            |c: RequestContext, _r: CallToolRequest, _i: Nothing| async move {
                let r = c
                    .create_message(CreateMessageParams {
                        messages: vec![SamplingMessage::user("2+2?")],
                        max_tokens: 10,
                        ..Default::default()
                    })
                    .await?;
                Ok::<_, HandlerError>(CallToolResult::text(format!(
                    "model {} said {}",
                    r.model,
                    serde_json::to_string(&r.content).unwrap_or_default()
                )))
            },
        )
        .unwrap();
    server
        .add_tool(
            Tool::new("roots", "Counts the client's roots"),
            |c: RequestContext, _r: CallToolRequest, _i: Nothing| async move {
                let r = c.list_roots().await?;
                Ok::<_, HandlerError>(CallToolResult::text(format!("{} roots", r.roots.len())))
            },
        )
        .unwrap();
    let f = flags.clone();
    server
        .add_tool(
            Tool::new("hang", "Never answers"),
            move |_c: RequestContext, _r: CallToolRequest, _i: Nothing| {
                let f = f.clone();
                async move {
                    let _flag = DropFlag(f.hang_dropped.clone(), f.hang_dropped_event.clone());
                    f.hang_started.notify_one();
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    Ok::<_, HandlerError>(CallToolResult::text("never"))
                }
            },
        )
        .unwrap();
    server
        .add_resource(
            Resource::new("test://static-text", "static"),
            |_c: RequestContext, r: ReadResourceRequest| async move {
                Ok::<_, HandlerError>(ReadResourceResult {
                    contents: vec![ResourceContents::text(
                        r.uri,
                        Some("text/plain"),
                        "static text",
                    )],
                    meta: None,
                })
            },
        )
        .unwrap();
    server
        .add_resource_template(
            ResourceTemplate {
                uri_template: "test://item/{id}".into(),
                name: "item".into(),
                ..Default::default()
            },
            |_c: RequestContext, r: ReadResourceRequest| async move {
                let id = r.variables.get("id").cloned().unwrap_or_default();
                Ok::<_, HandlerError>(ReadResourceResult {
                    contents: vec![ResourceContents::text(
                        r.uri,
                        Some("text/plain"),
                        format!("item {id}"),
                    )],
                    meta: None,
                })
            },
        )
        .unwrap();
    server
        .add_prompt(
            Prompt {
                name: "greet".into(),
                description: Some("A greeting".into()),
                arguments: Some(vec![PromptArgument {
                    name: "who".into(),
                    required: Some(true),
                    ..Default::default()
                }]),
                ..Default::default()
            },
            |_c: RequestContext, r: GetPromptRequest| async move {
                let who = r.argument("who").unwrap_or("nobody").to_owned();
                Ok::<_, HandlerError>(GetPromptResult {
                    description: None,
                    messages: vec![PromptMessage::user(format!("Say hi to {who}"))],
                    meta: None,
                })
            },
        )
        .unwrap();
    server.set_completion_handler(
        |_c: RequestContext, p: vellum::protocol::CompleteParams| async move {
            let values = ["alice", "bob", "carol"]
                .into_iter()
                .filter(|v| v.starts_with(&p.argument.value))
                .map(str::to_owned)
                .collect();
            Ok::<_, HandlerError>(CompleteResult {
                completion: Completion {
                    values,
                    total: None,
                    has_more: None,
                },
                meta: None,
            })
        },
    );
    (server, flags)
}

use std::sync::Mutex;
use vellum::client::{CallOptions, Client, ClientBuilder, ProtocolChoice, ServerNotification};
use vellum::protocol::{
    CompletionReference, CreateMessageResult, ElicitAction, ElicitResult, ListRootsResult,
    OneOrMany, Role, Root, SamplingContent,
};

/// What the client's notification handler saw.
#[derive(Clone, Default)]
pub(crate) struct Seen {
    pub logs: Arc<Mutex<Vec<String>>>,
}

/// A client builder with sampling, elicitation and roots handlers, for `choice`.
pub(crate) fn builder(choice: ProtocolChoice, seen: &Seen) -> ClientBuilder {
    let logs = seen.logs.clone();
    Client::builder()
        .name("fixture-client", "0.0.1")
        .protocol(choice)
        .request_timeout(Duration::from_secs(20))
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
                content: OneOrMany::One(SamplingContent::text("4")),
                model: "test-model".into(),
                stop_reason: Some("endTurn".into()),
                meta: None,
            })
        })
        .on_roots(|| async move {
            Ok(ListRootsResult {
                roots: vec![
                    Root {
                        uri: "file:///a".into(),
                        name: None,
                        meta: None,
                    },
                    Root {
                        uri: "file:///b".into(),
                        name: None,
                        meta: None,
                    },
                ],
                meta: None,
            })
        })
        .on_notification(move |n| {
            if let ServerNotification::Log(l) = n {
                logs.lock().unwrap().push(format!("{}:{}", l.level, l.data));
            }
        })
}

/// Calls a tool with no arguments and returns its result and the progress values seen.
pub(crate) async fn call_with_progress(
    client: &Client,
    tool: &str,
    arguments: serde_json::Value,
) -> (vellum::protocol::CallToolResult, Vec<f64>) {
    let got = Arc::new(Mutex::new(Vec::new()));
    let g = got.clone();
    let r = client
        .call_tool_with(
            vellum::protocol::CallToolParams {
                name: tool.into(),
                arguments: arguments.as_object().cloned(),
                ..Default::default()
            },
            CallOptions::default().on_progress(move |p| g.lock().unwrap().push(p.progress)),
        )
        .await
        .unwrap();
    let seen = got.lock().unwrap().clone();
    (r, seen)
}

/// Every typed call against [`fixture_server`], checked.
pub(crate) async fn exercise(client: &Client, seen: &Seen, modern: bool) {
    assert_eq!(client.is_modern(), modern, "era");
    let info = client.server_info().expect("server info");
    assert_eq!(info.name, "fixture");
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
    let r = client.call_tool("log", json!({})).await.unwrap();
    assert_eq!(r.content[0].as_text(), Some("logged"));
    assert_eq!(
        *seen.logs.lock().unwrap(),
        vec!["info:\"a log line\"".to_owned()]
    );

    // What the server asks of the client: elicitation, sampling, roots.
    let r = client.call_tool("ask_name", json!({})).await.unwrap();
    assert_eq!(r.content[0].as_text(), Some("Hello, Alice"));
    let r = client.call_tool("sample", json!({})).await.unwrap();
    let text = r.content[0].as_text().unwrap_or_default().to_owned();
    assert!(text.starts_with("model test-model said"), "{text}");
    assert!(text.contains("\"4\""), "{text}");
    let r = client.call_tool("roots", json!({})).await.unwrap();
    assert_eq!(r.content[0].as_text(), Some("2 roots"));

    // Resources, templates, prompts, completion, ping.
    let resources = client.list_all_resources().await.unwrap();
    assert_eq!(resources.len(), 1);
    let templates = client.list_all_resource_templates().await.unwrap();
    assert_eq!(templates[0].uri_template, "test://item/{id}");
    let r = client.read_resource("test://item/42").await.unwrap();
    match &r.contents[0] {
        ResourceContents::Text(t) => assert_eq!(t.text, "item 42"),
        other => panic!("{other:?}"),
    }
    let e = client.read_resource("test://nope").await.unwrap_err();
    assert!(matches!(e, vellum::Error::Remote(_)), "{e:?}");
    let prompts = client.list_all_prompts().await.unwrap();
    assert_eq!(prompts[0].name, "greet");
    let p = client
        .get_prompt("greet", [("who".to_owned(), "Bob".to_owned())])
        .await
        .unwrap();
    assert_eq!(p.messages[0].content.as_text(), Some("Say hi to Bob"));
    let c = client
        .complete(
            CompletionReference::Prompt {
                name: "greet".into(),
                title: None,
            },
            "who",
            "b",
        )
        .await
        .unwrap();
    assert_eq!(c.completion.values, vec!["bob".to_owned()]);
    client.ping().await.unwrap();

    // An unknown tool is the server's error, not a transport failure.
    let e = client
        .call_tool("no_such_tool", json!({}))
        .await
        .unwrap_err();
    assert!(
        matches!(e, vellum::Error::Remote(ref o) if o.code == -32602),
        "{e:?}"
    );
}

/// A request the test HTTP server saw: method, `Last-Event-ID`, session id.
#[derive(Clone, Debug)]
pub(crate) struct SeenRequest {
    pub(crate) method: String,
    pub(crate) last_event_id: Option<String>,
    pub(crate) session: Option<String>,
}

/// A Streamable HTTP server on an ephemeral loopback port, recording each HTTP request.
pub(crate) struct TestHttp {
    pub(crate) url: String,
    pub(crate) handler: vellum::transport::http::StreamableHttpHandler,
    pub(crate) requests: Arc<Mutex<Vec<SeenRequest>>>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

pub(crate) async fn serve_http(
    server: Server,
    options: vellum::transport::http::StreamableHttpOptions,
) -> TestHttp {
    use hyper_util::rt::{TokioExecutor, TokioIo};
    let handler = vellum::transport::http::StreamableHttpHandler::for_server(server, options);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let requests: Arc<Mutex<Vec<SeenRequest>>> = Arc::default();
    let (stop_tx, mut stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (h, log) = (handler.clone(), requests.clone());
    tokio::spawn(async move {
        loop {
            let (stream, _) = tokio::select! {
                r = listener.accept() => match r { Ok(x) => x, Err(_) => continue },
                _ = &mut stop_rx => return,
            };
            let _ = stream.set_nodelay(true);
            let (h, log) = (h.clone(), log.clone());
            tokio::spawn(async move {
                let svc =
                    hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                        let h = h.clone();
                        let header = |n: &str| {
                            req.headers()
                                .get(n)
                                .and_then(|v| v.to_str().ok())
                                .map(str::to_owned)
                        };
                        log.lock().unwrap().push(SeenRequest {
                            method: req.method().to_string(),
                            last_event_id: header("last-event-id"),
                            session: header("mcp-session-id"),
                        });
                        async move { Ok::<_, std::convert::Infallible>(h.handle(req).await) }
                    });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    TestHttp {
        url: format!("http://{addr}/mcp"),
        handler,
        requests,
        _stop: stop_tx,
    }
}
