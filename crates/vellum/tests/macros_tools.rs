//! The handler macros over loopback HTTP: a three-tool server with shared state written with
//! `#[tools]` lists exactly the schemas of the same server written with the closure API, and
//! serves the same answers; free `#[tool]`s take extractors in any order and return any
//! result type; `#[prompt]` and `#[resource]` serve what they declare.
#![cfg(feature = "macros")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use vellum::prelude::*;
use vellum::protocol::{Icon, TaskSupport, ToolAnnotations};
use vellum_testkit::http::{Legacy, Modern, TestHttpServer};

/// What `recall` answers.
#[derive(Serialize, JsonSchema)]
struct Recalled {
    /// The key asked for.
    key: String,
    /// Its value, if one was remembered.
    value: Option<String>,
}

/// The shared state: notes by key.
#[derive(Default)]
struct Memo {
    notes: Mutex<BTreeMap<String, String>>,
}

impl Memo {
    fn notes(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, String>> {
        self.notes.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[tools]
impl Memo {
    /// Remembers a value under a key.
    #[tool(task_support = "optional")]
    async fn remember(
        &self,
        /** The key. */
        key: String,
        /** The value. */
        value: String,
    ) -> String {
        self.notes().insert(key.clone(), value);
        format!("remembered {key}")
    }

    /// Recalls the value of a key.
    #[tool(annotations(read_only, open_world = false))]
    async fn recall(
        &self,
        /** The key. */
        key: String,
    ) -> Json<Recalled> {
        Json(Recalled {
            value: self.notes().get(&key).cloned(),
            key,
        })
    }

    /// Forgets a key; fails when it was never remembered.
    #[tool(
        annotations(destructive, idempotent),
        icons("https://example.com/forget.png")
    )]
    async fn forget(
        &self,
        /** The key. */
        key: String,
        /** Forget silently. */
        quiet: Option<bool>,
    ) -> Result<String, String> {
        match self.notes().remove(&key) {
            Some(_) if quiet == Some(true) => Ok(String::new()),
            Some(_) => Ok(format!("forgot {key}")),
            None => Err(format!("no note {key}")),
        }
    }
}

/// The same three tools with the closure API.
fn memo_by_closures() -> Server {
    #[derive(Deserialize, JsonSchema)]
    struct RememberInput {
        /// The key.
        key: String,
        /// The value.
        value: String,
    }
    #[derive(Deserialize, JsonSchema)]
    struct RecallInput {
        /// The key.
        key: String,
    }
    #[derive(Deserialize, JsonSchema)]
    struct ForgetInput {
        /// The key.
        key: String,
        /// Forget silently.
        quiet: Option<bool>,
    }
    let memo = Arc::new(Memo::default());
    let server = Server::new(Implementation::new("memo", "1"), ServerOptions::default());
    let m = memo.clone();
    server
        .add_tool(
            Tool::new("remember", "Remembers a value under a key.")
                .with_task_support(TaskSupport::Optional),
            move |_: RequestContext, _: CallToolRequest, i: RememberInput| {
                let m = m.clone();
                async move {
                    m.notes().insert(i.key.clone(), i.value);
                    Ok::<_, HandlerError>(format!("remembered {}", i.key))
                }
            },
        )
        .unwrap();
    let m = memo.clone();
    server
        .add_tool(
            Tool::new("recall", "Recalls the value of a key.").with_annotations(ToolAnnotations {
                read_only_hint: Some(true),
                open_world_hint: Some(false),
                ..Default::default()
            }),
            move |_: RequestContext, _: CallToolRequest, i: RecallInput| {
                let m = m.clone();
                async move {
                    let value = m.notes().get(&i.key).cloned();
                    Ok::<_, HandlerError>(Structured(Recalled { key: i.key, value }))
                }
            },
        )
        .unwrap();
    let m = memo;
    server
        .add_tool(
            Tool::new(
                "forget",
                "Forgets a key; fails when it was never remembered.",
            )
            .with_annotations(ToolAnnotations {
                destructive_hint: Some(true),
                idempotent_hint: Some(true),
                ..Default::default()
            })
            .with_icons(vec![Icon {
                src: "https://example.com/forget.png".into(),
                mime_type: None,
                sizes: None,
                theme: None,
            }]),
            move |_: RequestContext, _: CallToolRequest, i: ForgetInput| {
                let m = m.clone();
                async move {
                    match m.notes().remove(&i.key) {
                        Some(_) if i.quiet == Some(true) => Ok(String::new()),
                        Some(_) => Ok(format!("forgot {}", i.key)),
                        None => Err(HandlerError::failed(format!("no note {}", i.key))),
                    }
                }
            },
        )
        .unwrap();
    server
}

fn memo_by_macros() -> Server {
    let server = Server::new(Implementation::new("memo", "1"), ServerOptions::default());
    Memo::default().register(&server).unwrap();
    server
}

/// Every answer of a short conversation with the memo server, in one era.
async fn conversation(server: Server) -> Vec<Value> {
    let srv = TestHttpServer::serve(server).await;
    let legacy = Legacy::connect(&srv.url).await;
    let modern = Modern::new(&srv.url);
    let mut answers = Vec::new();
    for (i, (method, params)) in [
        ("tools/list", json!({})),
        (
            "tools/call",
            json!({"name": "recall", "arguments": {"key": "k"}}),
        ),
        (
            "tools/call",
            json!({"name": "remember", "arguments": {"key": "k", "value": "v"}}),
        ),
        (
            "tools/call",
            json!({"name": "recall", "arguments": {"key": "k"}}),
        ),
        (
            "tools/call",
            json!({"name": "forget", "arguments": {"key": "k"}}),
        ),
        (
            "tools/call",
            json!({"name": "forget", "arguments": {"key": "k", "quiet": true}}),
        ),
        (
            "tools/call",
            json!({"name": "remember", "arguments": {"key": 1}}),
        ),
    ]
    .into_iter()
    .enumerate()
    {
        answers.push(
            legacy
                .request(i as i64 + 1, method, params.clone())
                .await
                .result()
                .clone(),
        );
        answers.push(
            modern
                .request(i as i64 + 1, method, params)
                .await
                .result()
                .clone(),
        );
    }
    answers
}

#[tokio::test]
async fn macro_server_lists_and_answers_exactly_as_the_closure_server() {
    let by_macros = conversation(memo_by_macros()).await;
    let by_closures = conversation(memo_by_closures()).await;
    assert_eq!(by_macros.len(), by_closures.len());
    for (m, c) in by_macros.iter().zip(&by_closures) {
        assert_eq!(m, c, "macros:\n{m:#}\nclosures:\n{c:#}");
    }
    // And what they agree on is what was meant.
    let list = &by_macros[0]["tools"];
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["forget", "recall", "remember"]);
    // The options of #[tool]: hints, icons, task support.
    assert_eq!(
        list[0]["annotations"],
        json!({"destructiveHint": true, "idempotentHint": true})
    );
    assert_eq!(
        list[0]["icons"],
        json!([{"src": "https://example.com/forget.png"}])
    );
    assert_eq!(
        list[1]["annotations"],
        json!({"readOnlyHint": true, "openWorldHint": false})
    );
    assert_eq!(list[2]["execution"], json!({"taskSupport": "optional"}));
    assert_eq!(
        list[0]["description"],
        "Forgets a key; fails when it was never remembered."
    );
    assert_eq!(list[0]["inputSchema"]["required"], json!(["key"]));
    assert_eq!(
        list[0]["inputSchema"]["properties"]["quiet"]["description"],
        "Forget silently."
    );
    assert_eq!(
        list[1]["outputSchema"]["properties"]["value"]["description"],
        "Its value, if one was remembered."
    );
    assert_eq!(
        by_macros[2]["structuredContent"],
        json!({"key": "k", "value": null})
    );
    assert_eq!(
        by_macros[6]["structuredContent"],
        json!({"key": "k", "value": "v"})
    );
    assert_eq!(by_macros[8]["content"][0]["text"], "forgot k");
    // The second forget fails: a tool error the model reads, not a protocol error.
    assert_eq!(by_macros[10]["isError"], true);
    assert_eq!(by_macros[10]["content"][0]["text"], "no note k");
    // Arguments that break the schema never reach the handler.
    assert_eq!(by_macros[12]["isError"], true);
}

/// Tools adjusted past what the options say, with `map_tool`: the one way for `#[tools]`
/// methods, whose route builders are hidden and registered together.
struct Greeter {
    prefix: String,
}

#[tools]
impl Greeter {
    /// Says hello.
    #[tool(map_tool = Self::with_ui)]
    async fn hello(
        &self,
        /** Who to greet. */
        name: String,
    ) -> String {
        format!("{}{name}", self.prefix)
    }

    /// Says goodbye.
    #[tool(
        annotations(read_only),
        map_tool = |t: Tool| Tool { title: Some("Goodbye".into()), ..t }
    )]
    async fn bye(&self) -> String {
        "bye".to_owned()
    }
}

impl Greeter {
    /// A UI for the tool (`_meta`) and a bound on its argument, which no option says.
    fn with_ui(mut tool: Tool) -> Tool {
        let mut meta = vellum::protocol::Meta::default();
        meta.insert("ui/resourceUri", "ui://hello");
        tool.meta = Some(meta);
        if let Some(name) = tool
            .input_schema
            .get_mut("properties")
            .and_then(|p| p.get_mut("name"))
            .and_then(Value::as_object_mut)
        {
            name.insert("maxLength".into(), json!(40));
        }
        tool
    }
}

/// A free tool takes `map_tool` too (as its route's `.map_tool(..)` would).
#[tool(map_tool = loud)]
async fn shout(
    /** What to shout. */
    text: String,
) -> String {
    text.to_uppercase()
}

fn loud(tool: Tool) -> Tool {
    Tool {
        title: Some("SHOUT".into()),
        ..tool
    }
}

#[tokio::test]
async fn map_tool_adjusts_methods_and_free_tools_over_http() {
    let server = Server::new(
        Implementation::new("greeter", "1"),
        ServerOptions::default(),
    );
    (
        Greeter {
            prefix: "Hello, ".into(),
        },
        shout_tool(),
    )
        .register(&server)
        .unwrap();
    let srv = TestHttpServer::serve(server).await;
    let legacy = Legacy::connect(&srv.url).await;
    let list = legacy.request(1, "tools/list", json!({})).await;
    let tools = list.result()["tools"].as_array().unwrap().clone();
    let tool = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {tools:?}"))
            .clone()
    };
    let hello = tool("hello");
    assert_eq!(hello["_meta"], json!({"ui/resourceUri": "ui://hello"}));
    assert_eq!(hello["inputSchema"]["properties"]["name"]["maxLength"], 40);
    assert_eq!(
        hello["inputSchema"]["properties"]["name"]["description"],
        "Who to greet."
    );
    let bye = tool("bye");
    assert_eq!(bye["title"], "Goodbye");
    assert_eq!(bye["annotations"], json!({"readOnlyHint": true}));
    assert_eq!(tool("shout")["title"], "SHOUT");

    // The adjusted schema is the one calls are checked against; the handlers are unchanged.
    let long = "x".repeat(41);
    let r = legacy
        .request(
            2,
            "tools/call",
            json!({"name": "hello", "arguments": {"name": long}}),
        )
        .await;
    assert_eq!(r.result()["isError"], true, "{:?}", r.result());
    let r = legacy
        .request(
            3,
            "tools/call",
            json!({"name": "hello", "arguments": {"name": "Ada"}}),
        )
        .await;
    assert_eq!(r.result()["content"][0]["text"], "Hello, Ada");
    let r = legacy
        .request(
            4,
            "tools/call",
            json!({"name": "shout", "arguments": {"text": "hi"}}),
        )
        .await;
    assert_eq!(r.result()["content"][0]["text"], "HI");
}
