//! Resources, templates, subscriptions, prompts and completion over loopback HTTP, in both
//! eras.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::json;
use vellum::prelude::*;
use vellum::protocol::{CompleteParams, CompletionReference, ResourceLink, Role};
use vellum_testkit::http::{Legacy, Modern, TestHttpServer};

fn server() -> Server {
    let s = Server::new(
        Implementation::new("res", "1"),
        ServerOptions::default().with_page_size(2),
    );
    for (uri, name) in [("mem://a", "a"), ("mem://b", "b"), ("mem://c", "c")] {
        s.add_resource(
            Resource::new(uri, name).with_mime_type("text/plain"),
            |_ctx: RequestContext, req: ReadResourceRequest| async move {
                let text = format!("contents of {}", req.uri);
                Ok::<_, HandlerError>(ReadResourceResult::text(req.uri, "text/plain", text))
            },
        )
        .unwrap();
    }
    s.add_resource_template(
        ResourceTemplate::new("repo://{owner}/{name}/files{/path*}{?ref}", "files"),
        |_ctx: RequestContext, req: ReadResourceRequest| async move {
            let body = serde_json::to_string(&req.variables).unwrap_or_default();
            Ok::<_, HandlerError>(ReadResourceResult::text(req.uri, "application/json", body))
        },
    )
    .unwrap();
    s.add_prompt(
        Prompt::new("review", "Reviews code")
            .with_argument(PromptArgument::required("language", "The language"))
            .with_argument(PromptArgument::optional("style", "The style guide")),
        |_ctx: RequestContext, req: GetPromptRequest| async move {
            let lang = req.argument("language").unwrap_or_default().to_owned();
            Ok::<_, HandlerError>(
                GetPromptResult::new(vec![
                    PromptMessage::user(format!("Review this {lang} code")),
                    PromptMessage::new(Role::User, ContentBlock::image("AAAA", "image/png")),
                    PromptMessage::new(Role::User, ContentBlock::audio("AAAA", "audio/wav")),
                    PromptMessage::new(
                        Role::User,
                        ContentBlock::resource(ResourceContents::text(
                            "mem://a",
                            Some("text/plain"),
                            "a",
                        )),
                    ),
                    PromptMessage::new(
                        Role::Assistant,
                        ContentBlock::ResourceLink(ResourceLink {
                            uri: "mem://b".into(),
                            name: "b".into(),
                            ..Default::default()
                        }),
                    ),
                ])
                .with_description("A review"),
            )
        },
    )
    .unwrap();
    s.add_completion(
        CompletionReference::prompt("review"),
        "language",
        |_ctx: RequestContext, req: CompleteParams| async move {
            let all = (0..150).map(|i| format!("rust{i}"));
            let typed = req.argument.value.clone();
            Ok::<_, HandlerError>(all.filter(|l| l.starts_with(&typed)).collect())
        },
    );
    s.add_completion(
        CompletionReference::resource("repo://{owner}/{name}/files{/path*}{?ref}"),
        "owner",
        |_ctx: RequestContext, req: CompleteParams| async move {
            let name = req
                .context
                .and_then(|c| c.arguments)
                .and_then(|a| a.get("name").cloned())
                .unwrap_or_default();
            Ok::<_, HandlerError>(vec![format!("owner-of-{name}")])
        },
    );
    s
}

#[tokio::test]
async fn resources_and_templates_in_both_eras() {
    let srv = TestHttpServer::serve(server()).await;
    let legacy = Legacy::connect(&srv.url).await;
    let modern = Modern::new(&srv.url);

    // Paginated listing.
    let first = legacy.request(1, "resources/list", json!({})).await;
    let page = first.result()["resources"].as_array().unwrap();
    assert_eq!(page.len(), 2);
    let cursor = first.result()["nextCursor"].as_str().unwrap();
    let second = legacy
        .request(2, "resources/list", json!({"cursor": cursor}))
        .await;
    assert_eq!(second.result()["resources"][0]["uri"], "mem://c");
    assert!(second.result().get("nextCursor").is_none());
    let templates = modern
        .request(3, "resources/templates/list", json!({}))
        .await;
    assert_eq!(
        templates.result()["resourceTemplates"][0]["uriTemplate"],
        "repo://{owner}/{name}/files{/path*}{?ref}"
    );

    for (i, a) in [
        legacy
            .request(4, "resources/read", json!({"uri": "mem://b"}))
            .await,
        modern
            .request(4, "resources/read", json!({"uri": "mem://b"}))
            .await,
    ]
    .iter()
    .enumerate()
    {
        assert_eq!(a.result()["contents"][0]["text"], "contents of mem://b");
        assert_eq!(a.result().get("ttlMs").is_some(), i == 1);
    }
    // A level-4 template: path segments and an optional query parameter.
    let uri = "repo://octo/hello/files/src/main.rs?ref=v1%2E0";
    let a = modern
        .request(5, "resources/read", json!({"uri": uri}))
        .await;
    let vars: serde_json::Value =
        serde_json::from_str(a.result()["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        vars,
        json!({"owner": "octo", "name": "hello", "path": "src,main.rs", "ref": "v1.0"})
    );
    // Unknown resources: -32002 before 2026-07-28, -32602 from then on.
    let missing = json!({"uri": "mem://zzz"});
    let l = legacy.request(6, "resources/read", missing.clone()).await;
    assert_eq!(l.error_code(), -32002);
    assert_eq!(l.response["error"]["data"]["uri"], "mem://zzz");
    let m = modern.request(6, "resources/read", missing).await;
    assert_eq!(m.error_code(), -32602);
}

#[tokio::test]
async fn subscriptions_in_both_eras() {
    let s = server();
    let srv = TestHttpServer::serve(s.clone()).await;
    let legacy = Legacy::connect(&srv.url).await;
    let mut get = legacy.listen().await;
    let sub = legacy
        .request(1, "resources/subscribe", json!({"uri": "mem://a"}))
        .await;
    assert_eq!(sub.result(), &json!({}));
    let modern = Modern::new(&srv.url);
    let mut listen = modern
        .listen(
            41,
            json!({"resourceSubscriptions": ["mem://b"], "resourcesListChanged": true}),
        )
        .await;
    let ack = listen.next_json().await.unwrap();
    assert_eq!(
        ack["params"]["notifications"]["resourceSubscriptions"],
        json!(["mem://b"])
    );
    // The modern era has no resources/subscribe.
    let a = modern
        .request(2, "resources/subscribe", json!({"uri": "mem://a"}))
        .await;
    assert_eq!(a.error_code(), -32601);

    s.notify_resource_updated("mem://b"); // only the listen stream
    s.notify_resource_updated("mem://a"); // only the legacy session
    let n = get.next_json().await.unwrap();
    assert_eq!(n["method"], "notifications/resources/updated");
    assert_eq!(n["params"]["uri"], "mem://a");
    let n = listen.next_json().await.unwrap();
    assert_eq!(n["method"], "notifications/resources/updated");
    assert_eq!(n["params"]["uri"], "mem://b");
    assert_eq!(
        n["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        41
    );

    // After unsubscribing, updates stop; list changes still reach both.
    let un = legacy
        .request(3, "resources/unsubscribe", json!({"uri": "mem://a"}))
        .await;
    assert_eq!(un.result(), &json!({}));
    s.notify_resource_updated("mem://a");
    assert!(s.remove_resource("mem://c"));
    assert_eq!(
        get.next_json().await.unwrap()["method"],
        "notifications/resources/list_changed",
        "the update of mem://a was not sent after unsubscribing"
    );
    assert_eq!(
        listen.next_json().await.unwrap()["method"],
        "notifications/resources/list_changed"
    );
}

#[tokio::test]
async fn prompts_and_completion_in_both_eras() {
    let srv = TestHttpServer::serve(server()).await;
    let legacy = Legacy::connect(&srv.url).await;
    let modern = Modern::new(&srv.url);
    let list = modern.request(1, "prompts/list", json!({})).await;
    let p = &list.result()["prompts"][0];
    assert_eq!(p["description"], "Reviews code");
    assert_eq!(p["arguments"][0]["required"], true);
    assert_eq!(p["arguments"][1]["required"], false);

    let get = json!({"name": "review", "arguments": {"language": "Rust"}});
    for a in [
        legacy.request(2, "prompts/get", get.clone()).await,
        modern.request(2, "prompts/get", get.clone()).await,
    ] {
        let r = a.result();
        assert_eq!(r["description"], "A review");
        let kinds: Vec<&str> = r["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["content"]["type"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            ["text", "image", "audio", "resource", "resource_link"]
        );
        assert_eq!(r["messages"][4]["role"], "assistant");
    }
    // A missing required argument and an unknown prompt are invalid params.
    let a = legacy
        .request(3, "prompts/get", json!({"name": "review"}))
        .await;
    assert_eq!(a.error_code(), -32602);
    let a = modern
        .request(3, "prompts/get", json!({"name": "nope"}))
        .await;
    assert_eq!(a.error_code(), -32602);

    // Completion: capped at 100 with total and hasMore; template variables with context.
    let c = json!({"ref": {"type": "ref/prompt", "name": "review"},
        "argument": {"name": "language", "value": "rust"}});
    for a in [
        legacy.request(4, "completion/complete", c.clone()).await,
        modern.request(4, "completion/complete", c.clone()).await,
    ] {
        let comp = &a.result()["completion"];
        assert_eq!(comp["values"].as_array().unwrap().len(), 100);
        assert_eq!(comp["total"], 150);
        assert_eq!(comp["hasMore"], true);
    }
    let t = json!({"ref": {"type": "ref/resource", "uri": "repo://{owner}/{name}/files{/path*}{?ref}"},
        "argument": {"name": "owner", "value": ""},
        "context": {"arguments": {"name": "hello"}}});
    let a = modern.request(5, "completion/complete", t).await;
    assert_eq!(
        a.result()["completion"]["values"],
        json!(["owner-of-hello"])
    );
    // An argument nobody completes gets no suggestions; an unknown one is invalid.
    let none = json!({"ref": {"type": "ref/prompt", "name": "review"},
        "argument": {"name": "style", "value": "x"}});
    let a = legacy.request(6, "completion/complete", none).await;
    assert_eq!(a.result()["completion"]["values"], json!([]));
    let bad = json!({"ref": {"type": "ref/prompt", "name": "review"},
        "argument": {"name": "nope", "value": "x"}});
    assert_eq!(
        legacy
            .request(7, "completion/complete", bad)
            .await
            .error_code(),
        -32602
    );
}
