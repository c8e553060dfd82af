//! `vellum::testing`: a user's tests of their own server, in memory: the caller, the
//! principal and extensions of the test's choosing reach the tools in both eras, scopes are
//! checked against them, and a tool that asks the user is answered by the test client.
#![cfg(all(feature = "testing", feature = "auth"))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::json;
use vellum::auth::Principal;
use vellum::client::ProtocolChoice;
use vellum::prelude::*;
use vellum::protocol::{ElicitAction, ElicitFormParams, ElicitParams, ElicitResult};
use vellum::server::Caller;
use vellum::testing::{TestClient, ToolResultExt as _};

#[derive(Clone)]
struct Tenant(&'static str);

fn server() -> Server {
    let s = Server::new(Implementation::new("app", "1"), ServerOptions::default());
    s.add_raw_tool(
        Tool::new(
            "whoami",
            "The caller, its tenant claim and the app's tenant",
        ),
        |ctx: RequestContext, _req: CallToolRequest| async move {
            let who = ctx
                .caller()
                .map(|c| c.subject.clone())
                .unwrap_or("nobody".into());
            let claim = ctx
                .extension::<Principal>()
                .and_then(|p| p.claim::<String>("tenant"))
                .unwrap_or_default();
            let tenant = ctx.extension::<Tenant>().map(|t| t.0).unwrap_or("-");
            Ok::<_, HandlerError>(CallToolResult::text(format!("{who}|{claim}|{tenant}")))
        },
    )
    .unwrap();
    s.add_raw_tool(
        Tool::new("purge", "Needs a scope").requires_scope("files:delete"),
        |_ctx: RequestContext, _req: CallToolRequest| async move {
            Ok::<_, HandlerError>(CallToolResult::text("purged"))
        },
    )
    .unwrap();
    s.add_raw_tool(
        Tool::new("confirm", "Asks the user"),
        |ctx: RequestContext, _req: CallToolRequest| async move {
            let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
            let form = ElicitFormParams::new("Sure?", schema.as_object().unwrap().clone());
            let answer = ctx.elicit(ElicitParams::Form(form)).await?;
            Ok::<_, HandlerError>(CallToolResult::text(format!("{:?}", answer.action)))
        },
    )
    .unwrap();
    s
}

#[tokio::test]
async fn a_callers_identity_scopes_and_extensions_reach_the_tools_in_both_eras() {
    for era in [ProtocolChoice::Legacy, ProtocolChoice::Modern] {
        let anonymous = TestClient::new(server())
            .protocol(era)
            .connect()
            .await
            .unwrap();
        let r = anonymous.call_tool("whoami", json!({})).await.unwrap();
        assert_eq!(r.text(), "nobody||-", "{era:?}");
        let refused = anonymous.call_tool("purge", json!({})).await;
        assert!(
            refused.is_err(),
            "{era:?}: a call without the scope: {refused:?}"
        );

        let claims = json!({"tenant": "acme"});
        let principal = Principal::new("https://as.example", "ada")
            .with_scopes(["files:delete"])
            .with_claims(claims.as_object().unwrap().clone());
        let ada = TestClient::new(server())
            .protocol(era)
            .principal(principal)
            .extension(Tenant("blue"))
            .connect()
            .await
            .unwrap();
        assert_eq!(ada.is_modern(), era == ProtocolChoice::Modern);
        let r = ada.call_tool("whoami", json!({})).await.unwrap();
        assert_eq!(r.text(), "ada|acme|blue", "{era:?}");
        let r = ada.call_tool("purge", json!({})).await.unwrap();
        assert_eq!(r.text(), "purged", "{era:?}");
        assert!(!r.failed());

        let bob = TestClient::new(server())
            .protocol(era)
            .caller(Caller::new("https://as.example", "bob"))
            .connect()
            .await
            .unwrap();
        assert_eq!(
            bob.call_tool("whoami", json!({})).await.unwrap().text(),
            "bob||-"
        );
        assert!(
            bob.call_tool("purge", json!({})).await.is_err(),
            "{era:?}: bob has no scope"
        );
    }
}

#[tokio::test]
async fn a_tool_that_asks_is_answered_by_the_test_client_in_both_eras() {
    for era in [ProtocolChoice::Legacy, ProtocolChoice::Modern] {
        let client = TestClient::new(server())
            .protocol(era)
            .client(|b| {
                b.on_elicitation(|_params| async move {
                    Ok(ElicitResult {
                        action: ElicitAction::Accept,
                        content: json!({"ok": true}).as_object().cloned(),
                        meta: None,
                    })
                })
            })
            .connect()
            .await
            .unwrap();
        let r = client.call_tool("confirm", json!({})).await.unwrap();
        assert_eq!(r.text(), "Accept", "{era:?}");
    }
}
