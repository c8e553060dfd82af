//! `vellum serve --metrics-addr`: the Prometheus text format over a real socket, with the
//! names and labels of the OpenTelemetry semantic conventions for MCP
//! (`mcp_server_operation_duration_seconds` by `mcp_method_name` and `gen_ai_tool_name`),
//! and gauges and counters that follow what clients do.

// Test code: a panic is how a test fails (clippy.toml allows it only inside #[test] fns).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use reqwest::StatusCode;
use serde_json::json;
use vellum_testkit::http::McpHttp;
use vellum_testkit::process::{ServerProcess, vellum_serve};

fn http() -> reqwest::Client {
    vellum::transport::install_crypto_provider();
    reqwest::Client::builder().no_proxy().build().unwrap()
}

fn metrics_url(s: &ServerProcess) -> String {
    s.before
        .iter()
        .find_map(|l| l.strip_prefix("metrics: "))
        .unwrap_or_else(|| panic!("no metrics line before the start line: {:?}", s.before))
        .trim()
        .to_owned()
}

async fn scrape(url: &str) -> String {
    let r = http().get(url).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4"),
        "{:?}",
        r.headers()
    );
    r.text().await.unwrap()
}

/// The value of the sample whose line starts with `name` and holds every label of `labels`.
fn sample(text: &str, name: &str, labels: &[&str]) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| {
            l.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with(['{', ' ']))
        })
        .find(|l| labels.iter().all(|x| l.contains(x)))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

#[tokio::test]
async fn metrics_follow_requests_sessions_streams_and_refusals() {
    let s = vellum_serve(&[
        "--server",
        "everything",
        "--metrics-addr",
        "127.0.0.1:0",
        "--event-store",
        "memory",
    ]);
    let url = metrics_url(&s);
    let mut c = McpHttp::new(&s.mcp_url());
    c.connect("2025-11-25").await;
    let r = c
        .request(
            "tools/call",
            json!({"name": "test_simple_text", "arguments": {}}),
        )
        .await;
    assert!(r.get("result").is_some(), "{r}");
    // Progress first: a streamed answer, its events kept in the event store.
    let events = c
        .post_stream(&c.call_tool("test_tool_with_progress", json!({}), Some("p1")))
        .await
        .expect_stream("progress")
        .rest()
        .await;
    assert!(events.len() >= 3, "{events:?}");
    // An unknown tool: its name must not become a label.
    let r = c
        .request(
            "tools/call",
            json!({"name": "no_such_tool_x1", "arguments": {}}),
        )
        .await;
    assert!(
        r.get("error").is_some() || r["result"]["isError"] == true,
        "{r}"
    );
    let stream = c.get(None).send().await.unwrap();
    assert_eq!(stream.status(), StatusCode::OK);
    // A refusal: a request without a session.
    let bare = McpHttp::new(&s.mcp_url());
    let a = bare
        .post(&bare.call_tool("test_simple_text", json!({}), None))
        .await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST, "{}", a.text());

    let text = scrape(&url).await;
    let op = "mcp_server_operation_duration_seconds_count";
    assert_eq!(
        sample(
            &text,
            op,
            &[
                "mcp_method_name=\"tools/call\"",
                "gen_ai_tool_name=\"test_simple_text\""
            ]
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        // The version the initialize negotiated, not the one assumed before it.
        sample(
            &text,
            op,
            &[
                "mcp_method_name=\"initialize\"",
                "mcp_protocol_version=\"2025-11-25\""
            ]
        ),
        Some(1.0),
        "{text}"
    );
    assert!(
        text.contains("mcp_server_operation_duration_seconds_bucket{"),
        "no histogram buckets: {text}"
    );
    assert!(
        !text.contains("no_such_tool_x1"),
        "a client's tool name became a label: {text}"
    );
    assert_eq!(
        sample(&text, "mcp_server_session_active", &[]),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "mcp_server_stream_active", &[]),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            "mcp_server_refusals",
            &[
                "http_response_status_code=\"400\"",
                "reason=\"missing_session\""
            ]
        ),
        Some(1.0),
        "{text}"
    );
    assert!(
        sample(&text, "mcp_server_event_store_appends", &[]).is_some_and(|n| n >= 1.0),
        "{text}"
    );
    assert!(
        text.contains("# HELP mcp_server_operation_duration "),
        "{text}"
    );

    // The stream and the session go: the gauges follow.
    drop(stream);
    assert_eq!(c.delete().await, StatusCode::NO_CONTENT);
    let text = vellum_testkit::within("the gauges to fall", async {
        loop {
            let t = scrape(&url).await;
            if sample(&t, "mcp_server_session_active", &[]) == Some(0.0)
                && sample(&t, "mcp_server_stream_active", &[]) == Some(0.0)
            {
                break t;
            }
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert_eq!(
        sample(&text, "mcp_server_session_duration_seconds_count", &[]),
        Some(1.0),
        "{text}"
    );
    // Anything else on that listener is not found.
    let r = http()
        .get(url.replace("/metrics", "/other"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
}
