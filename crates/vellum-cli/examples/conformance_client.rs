//! The MCP client the official conformance suite drives (`conformance client --command …`):
//! it reads the scenario from `MCP_CONFORMANCE_SCENARIO`, talks to the mock server whose URL
//! is its last argument, and exits non-zero when a call fails.
//!
//! Run: `conformance client --command "target/debug/examples/conformance_client" --scenario tools_call`
//! (see `crates/vellum-cli/tests/interop_conformance_client.rs`).

use std::process::ExitCode;

use serde_json::json;
use vellum::client::{Client, form_defaults};
use vellum::protocol::{ElicitAction, ElicitParams, ElicitResult};
use vellum::transport::http_client::StreamableHttpClientTransport;

async fn run(scenario: &str, url: &str) -> Result<(), vellum::Error> {
    let transport = StreamableHttpClientTransport::new(url)?;
    let client = Client::builder()
        .name("vellum-conformance-client", env!("CARGO_PKG_VERSION"))
        // Accept forms with the defaults their schema gives (SEP-1034).
        .on_elicitation(|p| async move {
            let content = match &p {
                ElicitParams::Form(f) => form_defaults(&f.requested_schema),
                ElicitParams::Url(_) => Default::default(),
            };
            Ok(ElicitResult {
                action: ElicitAction::Accept,
                content: Some(content),
                meta: None,
            })
        })
        .connect(transport)
        .await?;
    let tools = client.list_all_tools().await?;
    eprintln!(
        "tools: {:?}",
        tools.iter().map(|t| &t.name).collect::<Vec<_>>()
    );
    match scenario {
        "tools_call" => {
            let r = client
                .call_tool("add_numbers", json!({"a": 2, "b": 3}))
                .await?;
            eprintln!(
                "add_numbers: {:?}",
                r.content.first().and_then(|c| c.as_text())
            );
        }
        "elicitation-sep1034-client-defaults" => {
            let r = client
                .call_tool("test_client_elicitation_defaults", json!({}))
                .await?;
            eprintln!(
                "elicitation: {:?}",
                r.content.first().and_then(|c| c.as_text())
            );
        }
        "sse-retry" => {
            let r = client.call_tool("test_reconnection", json!({})).await?;
            eprintln!(
                "reconnection: {:?}",
                r.content.first().and_then(|c| c.as_text())
            );
        }
        _ => {}
    }
    client.close().await;
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    // The suite appends the mock server's URL as the last argument.
    let Some(url) = std::env::args().skip(1).next_back() else {
        eprintln!("usage: conformance_client URL (scenario in MCP_CONFORMANCE_SCENARIO)");
        return ExitCode::from(2);
    };
    match run(&scenario, &url).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conformance client ({scenario}): {e}");
            ExitCode::FAILURE
        }
    }
}
