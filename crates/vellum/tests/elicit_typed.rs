//! Typed elicitation (`ctx.elicit_form::<T>()`) over real loopback HTTP, answered by the
//! crate's own client in both eras: a form made from a struct with `Option` fields (not
//! required) accepted with and without them, declined and cancelled; a type that is not a
//! flat form refused with a message naming the property, before anything is asked.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use vellum::client::{Client, ProtocolChoice};
use vellum::prelude::*;
use vellum::protocol::{ElicitAction, ElicitParams, ElicitResult, JsonObject};
use vellum::server::Elicited;
use vellum::transport::http_client::StreamableHttpClientTransport;
use vellum_testkit::http::TestHttpServer;

#[derive(serde::Deserialize, schemars::JsonSchema)]
enum Seating {
    /// Inside, by the window.
    Inside,
    /// On the terrace.
    Terrace,
}

/// A table booking.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Booking {
    /// How many guests.
    guests: u32,
    /// Where to sit.
    seating: Seating,
    /// Anything we should know.
    note: Option<String>,
    /// Vegan menu?
    vegan: Option<bool>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Address {
    #[allow(dead_code)]
    city: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Delivery {
    #[allow(dead_code)]
    address: Address,
}

fn server() -> Server {
    let server = Server::new(
        Implementation::new("typed", "1.0"),
        ServerOptions::default(),
    );
    server
        .add_raw_tool(
            Tool::new("book", "Books a table"),
            |ctx: RequestContext, _r: CallToolRequest| async move {
                let text = match ctx.elicit_form::<Booking>("Book a table").await? {
                    Elicited::Accept(b) => {
                        let seating = match b.seating {
                            Seating::Inside => "inside",
                            Seating::Terrace => "terrace",
                        };
                        format!("{} {seating} {:?} {:?}", b.guests, b.note, b.vegan)
                    }
                    Elicited::Decline => "declined".to_owned(),
                    Elicited::Cancel => "cancelled".to_owned(),
                };
                Ok::<_, HandlerError>(CallToolResult::text(text))
            },
        )
        .unwrap()
        .add_raw_tool(
            Tool::new("deliver", "Asks for a nested form"),
            |ctx: RequestContext, _r: CallToolRequest| async move {
                ctx.elicit_form::<Delivery>("Where to?").await?;
                Ok::<_, HandlerError>(CallToolResult::text("delivered"))
            },
        )
        .unwrap();
    server
}

/// What the client answers, and the schemas it was asked with.
#[derive(Clone, Default)]
struct User {
    answer: Arc<Mutex<Option<ElicitResult>>>,
    asked: Arc<Mutex<Vec<JsonObject>>>,
}

impl User {
    fn will(&self, action: ElicitAction, content: Option<Value>) {
        *self.answer.lock().unwrap() = Some(ElicitResult {
            action,
            content: content.and_then(|c| c.as_object().cloned()),
            meta: None,
        });
    }
}

async fn connect(url: &str, era: ProtocolChoice, user: &User) -> Client {
    let u = user.clone();
    Client::builder()
        .protocol(era)
        .on_elicitation(move |params| {
            let u = u.clone();
            async move {
                let ElicitParams::Form(form) = params else {
                    panic!("a form was expected");
                };
                u.asked.lock().unwrap().push(form.requested_schema);
                Ok(u.answer.lock().unwrap().clone().expect("an answer is set"))
            }
        })
        .connect(StreamableHttpClientTransport::new(url).unwrap())
        .await
        .unwrap()
}

async fn book(client: &Client) -> String {
    let r = client.call_tool("book", json!({})).await.unwrap();
    assert_ne!(r.is_error, Some(true), "{r:?}");
    r.content[0].as_text().unwrap().to_owned()
}

#[tokio::test]
async fn a_typed_form_is_answered_accepted_declined_and_cancelled_in_both_eras() {
    let http = TestHttpServer::start(server(), StreamableHttpOptions::default()).await;
    for era in [ProtocolChoice::Legacy, ProtocolChoice::Modern] {
        let user = User::default();
        let client = connect(&http.url, era, &user).await;
        assert_eq!(client.is_modern(), era == ProtocolChoice::Modern);

        user.will(
            ElicitAction::Accept,
            Some(json!({"guests": 4, "seating": "Terrace", "note": "a birthday", "vegan": true})),
        );
        assert_eq!(
            book(&client).await,
            "4 terrace Some(\"a birthday\") Some(true)",
            "{era:?}"
        );
        // The optional fields may be left out.
        user.will(
            ElicitAction::Accept,
            Some(json!({"guests": 2, "seating": "Inside"})),
        );
        assert_eq!(book(&client).await, "2 inside None None", "{era:?}");
        user.will(ElicitAction::Decline, None);
        assert_eq!(book(&client).await, "declined", "{era:?}");
        user.will(ElicitAction::Cancel, None);
        assert_eq!(book(&client).await, "cancelled", "{era:?}");

        // What the client was asked: the flat form, `Option` fields not required, the
        // variants' docs as titles.
        let schema = user.asked.lock().unwrap()[0].clone();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["required"], json!(["guests", "seating"]), "{era:?}");
        let props = &schema["properties"];
        assert_eq!(props["guests"]["type"], "integer");
        assert_eq!(props["guests"]["description"], "How many guests.");
        assert_eq!(props["note"]["type"], "string");
        assert_eq!(props["vegan"]["type"], "boolean");
        assert_eq!(
            props["seating"]["oneOf"],
            json!([{"const": "Inside", "title": "Inside, by the window."},
                   {"const": "Terrace", "title": "On the terrace."}])
        );

        // An answer that is not a `Booking` never reaches the handler.
        user.will(
            ElicitAction::Accept,
            Some(json!({"guests": "many", "seating": "Inside"})),
        );
        let r = client.call_tool("book", json!({})).await.unwrap();
        assert_eq!(r.is_error, Some(true), "{era:?}: {r:?}");
        let text = r.content[0].as_text().unwrap();
        assert!(
            text.contains("does not match the requested schema: /guests"),
            "{era:?}: {text}"
        );
        client.close().await;
    }
}

#[tokio::test]
async fn a_type_that_is_not_a_flat_form_is_refused_before_asking() {
    let http = TestHttpServer::start(server(), StreamableHttpOptions::default()).await;
    for era in [ProtocolChoice::Legacy, ProtocolChoice::Modern] {
        let user = User::default();
        user.will(ElicitAction::Cancel, None);
        let client = connect(&http.url, era, &user).await;
        let r = client.call_tool("deliver", json!({})).await.unwrap();
        assert_eq!(r.is_error, Some(true), "{era:?}: {r:?}");
        let text = r.content[0].as_text().unwrap();
        assert!(
            text.contains("Delivery cannot be an elicitation form")
                && text.contains("property \"address\" is an object"),
            "{era:?}: {text}"
        );
        assert!(user.asked.lock().unwrap().is_empty(), "nothing was asked");
        client.close().await;
    }
}
