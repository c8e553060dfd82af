//! Interop check: rmcp's client (the official Rust SDK) against a Vellum server over
//! Streamable HTTP.
//!
//! Usage: rmcp-interop-client URL MODE     (MODE: legacy | auto)
//!
//! Connects (`initialize`, or the `server/discover` probe with fallback), lists the tools,
//! calls `hello_world` with user_name "Alice", prints the text on stdout and the protocol
//! version on stderr. Any mismatch exits 1.

use rmcp::model::{CallToolRequestParams, ClientConfig, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use rmcp::transport::StreamableHttpClientTransport;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(url), Some(mode)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: rmcp-interop-client URL legacy|auto");
        return std::process::ExitCode::from(2);
    };
    let lifecycle = match mode.as_str() {
        "legacy" => ClientLifecycleMode::Initialize,
        _ => ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: None,
        },
    };
    let run = async {
        let transport = StreamableHttpClientTransport::from_uri(url.clone());
        let client = ClientConfig::default()
            .serve_with_lifecycle(transport, lifecycle)
            .await
            .map_err(|e| format!("connect: {e}"))?;
        let version = client
            .peer_info()
            .map(|i| i.protocol_version.to_string())
            .unwrap_or_default();
        let tools = client.list_all_tools().await.map_err(|e| format!("tools/list: {e}"))?;
        if !tools.iter().any(|t| t.name == "hello_world") {
            return Err(format!("hello_world missing from {tools:?}"));
        }
        let mut args = serde_json::Map::new();
        args.insert("user_name".into(), "Alice".into());
        let result = client
            .call_tool(CallToolRequestParams::new("hello_world").with_arguments(args))
            .await
            .map_err(|e| format!("tools/call: {e}"))?;
        let text = result
            .content
            .first()
            .and_then(|c| c.as_text())
            .map(|t| t.text.clone())
            .unwrap_or_default();
        if result.is_error == Some(true) || text != "Hello World, Alice" {
            return Err(format!("unexpected result {result:?}"));
        }
        println!("{text}");
        eprintln!("protocol {version}");
        let _ = client.cancel().await;
        Ok::<_, String>(())
    };
    match tokio::time::timeout(std::time::Duration::from_secs(30), run).await {
        Ok(Ok(())) => std::process::ExitCode::SUCCESS,
        Ok(Err(e)) => {
            eprintln!("MISMATCH {e}");
            std::process::ExitCode::FAILURE
        }
        Err(_) => {
            eprintln!("MISMATCH no result within 30 s");
            std::process::ExitCode::FAILURE
        }
    }
}
