//! The MCP client the official conformance suite drives (`conformance client --command …`):
//! it reads the scenario from `MCP_CONFORMANCE_SCENARIO` (and its data from
//! `MCP_CONFORMANCE_CONTEXT`), talks to the mock server whose URL is its last argument, and
//! exits non-zero when a call fails.
//!
//! For the `auth/*` scenarios the transport carries an [`OAuth`] client, configured from the
//! scenario's context the way an application would configure it: the authorization-code flow
//! with a loopback redirect whose "browser" is an HTTP GET that follows the mock's 302 (the
//! mock approves at once), pre-registered credentials, client credentials, workload identity
//! or enterprise-managed authorization, DPoP for the DPoP scenarios. Everything else (which
//! metadata, which scopes, which registration, step-up, refusals) is the library's own
//! behaviour, not this program's.
//!
//! Run: `conformance client --command "target/debug/examples/conformance_client" --scenario tools_call`
//! (see `crates/vellum-cli/tests/interop_conformance_client.rs`).

use std::process::ExitCode;

use serde_json::{Value, json};
use vellum::client::auth::{
    AuthError, DpopMode, EnterpriseConfig, Grant, LoopbackRedirect, OAuth, PreregisteredClient,
    Secret,
};
use vellum::client::{Client, ProtocolChoice, form_defaults};
use vellum::jose::{Algorithm, SigningKey};
use vellum::protocol::{ElicitAction, ElicitParams, ElicitResult, Tool};
use vellum::transport::http_client::{HttpClientOptions, StreamableHttpClientTransport};

/// The client id this client offers where the authorization server accepts Client ID
/// Metadata Documents (the suite's mocks never fetch it).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// The scenario's data (`{}` when there is none).
fn context() -> Value {
    std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or_else(|| json!({}))
}

fn text<'a>(ctx: &'a Value, key: &str) -> Option<&'a str> {
    ctx.get(key).and_then(Value::as_str)
}

fn needed<'a>(ctx: &'a Value, key: &str) -> Result<&'a str, AuthError> {
    text(ctx, key).ok_or_else(|| AuthError::InvalidDocument {
        what: "MCP_CONFORMANCE_CONTEXT",
        reason: format!("no {key}"),
    })
}

/// The user's part of the authorization-code flow: open the URL as a browser would. The
/// mock approves at once with a 302 to the loopback listener, which the GET follows.
async fn browse(url: String) -> Result<(), AuthError> {
    vellum::transport::install_crypto_provider();
    reqwest::get(&url)
        .await
        .map(drop)
        .map_err(|e| AuthError::redirect("browser", e))
}

/// The OAuth client of an `auth/*` scenario, from its context.
fn oauth(scenario: &str, ctx: &Value, url: &str) -> Result<OAuth, AuthError> {
    let mut b = OAuth::builder(url)
        .client_name("vellum-conformance-client")
        .client_metadata_url(CLIENT_METADATA_URL)
        .redirect(LoopbackRedirect::new(browse));
    // Pre-registered credentials (pre-registration, client-credentials-basic).
    if let (Some(id), Some(secret)) = (text(ctx, "client_id"), text(ctx, "client_secret"))
        && scenario != "auth/enterprise-managed-authorization"
    {
        b = b.preregistered(PreregisteredClient::new(id).secret(secret.to_owned()));
    }
    b = match scenario {
        "auth/client-credentials-jwt" => {
            let alg = match text(ctx, "signing_algorithm").unwrap_or("ES256") {
                "ES384" => Algorithm::ES384,
                "RS256" => Algorithm::RS256,
                "EdDSA" => Algorithm::EdDSA,
                _ => Algorithm::ES256,
            };
            let key = SigningKey::from_pem(needed(ctx, "private_key_pem")?.as_bytes(), alg)?;
            b.preregistered(PreregisteredClient::new(needed(ctx, "client_id")?).signing_key(key))
                .grant(Grant::ClientCredentials)
        }
        "auth/client-credentials-basic" => b.grant(Grant::ClientCredentials),
        "auth/wif-jwt-bearer" => b
            .preregistered(PreregisteredClient::new(needed(ctx, "client_id")?))
            .grant(Grant::JwtBearer(std::sync::Arc::new(Secret::new(
                needed(ctx, "valid_jwt")?.to_owned(),
            )))),
        "auth/enterprise-managed-authorization" => {
            let mut client = PreregisteredClient::new(needed(ctx, "client_id")?);
            if let Some(s) = text(ctx, "client_secret") {
                client = client.secret(s.to_owned());
            }
            let idp = EnterpriseConfig::new(
                needed(ctx, "idp_token_endpoint")?,
                needed(ctx, "idp_client_id")?,
                Secret::new(needed(ctx, "idp_id_token")?.to_owned()),
            );
            b.preregistered(client)
                .grant(Grant::EnterpriseManaged(std::sync::Arc::new(idp)))
        }
        s if s.starts_with("auth/dpop") => b.dpop(DpopMode::Always),
        _ => b,
    };
    b.build()
}

/// The elicitation answer: accept with the form's defaults (SEP-1034), confirming what asks
/// for a confirmation (the MRTR scenario's `confirm` request).
fn answer(p: &ElicitParams) -> ElicitResult {
    let mut content = match p {
        ElicitParams::Form(f) => form_defaults(&f.requested_schema),
        ElicitParams::Url(_) => Default::default(),
    };
    if let ElicitParams::Form(f) = p {
        let asks_confirmed = serde_json::to_value(&f.requested_schema)
            .ok()
            .is_some_and(|s| s["properties"].get("confirmed").is_some());
        if asks_confirmed {
            content.insert("confirmed".into(), json!(true));
        }
    }
    ElicitResult {
        action: ElicitAction::Accept,
        content: Some(content),
        meta: None,
    }
}

fn first_text(r: &vellum::protocol::CallToolResult) -> Option<&str> {
    r.content.first().and_then(|c| c.as_text())
}

async fn run(scenario: &str, url: &str) -> Result<(), Box<dyn std::error::Error>> {
    let ctx = context();
    let mut options = HttpClientOptions::default();
    // The suite's Node mocks close keep-alive connections idle for 5 s; on a loaded machine
    // a request written into one being closed is reset, so idle ones are dropped sooner.
    vellum::transport::install_crypto_provider();
    options.client = Some(
        reqwest::Client::builder()
            .connect_timeout(options.connect_timeout)
            .read_timeout(options.read_timeout)
            .pool_idle_timeout(std::time::Duration::from_secs(4))
            .build()?,
    );
    if scenario.starts_with("auth/") {
        options.auth = Some(oauth(scenario, &ctx, url)?);
    }
    let transport = StreamableHttpClientTransport::with_options(url, options)?;
    // The suite says which wire the scenario runs at. A legacy wire needs no probe; at the
    // 2026-07-28 wire the probe also settles the version (a -32022 names the ones offered).
    let protocol = match std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").as_deref() {
        Ok(v) if v.starts_with("2024-") || v.starts_with("2025-") => ProtocolChoice::Legacy,
        _ => ProtocolChoice::Auto,
    };
    let client = Client::builder()
        .name("vellum-conformance-client", env!("CARGO_PKG_VERSION"))
        .protocol(protocol)
        // The suite runs every scenario at once: on a small machine the first answer (and
        // an authorization flow inside the probe) can take longer than the default 10 s.
        .probe_timeout(std::time::Duration::from_secs(25))
        .on_elicitation(|p| async move { Ok(answer(&p)) })
        .connect(transport)
        .await?;
    let tools = client.list_all_tools().await?;
    eprintln!(
        "tools: {:?}",
        tools.iter().map(|t| &t.name).collect::<Vec<_>>()
    );
    let call = |name: String, args: Value| {
        let client = client.clone();
        async move {
            let r = client.call_tool(&name, args).await?;
            eprintln!("{name}: {:?}", first_text(&r));
            Ok::<_, vellum::Error>(r)
        }
    };
    match scenario {
        "tools_call" => {
            call("add_numbers".into(), json!({"a": 2, "b": 3})).await?;
        }
        "elicitation-sep1034-client-defaults" => {
            call("test_client_elicitation_defaults".into(), json!({})).await?;
        }
        "sse-retry" => {
            call("test_reconnection".into(), json!({})).await?;
        }
        "sep-2322-client-request-state" => {
            for name in [
                "test_mrtr_echo_state",
                "test_mrtr_unrelated",
                "test_mrtr_no_state",
                "test_mrtr_no_result_type",
            ] {
                call(name.into(), json!({})).await?;
            }
        }
        "http-custom-headers" => {
            let calls = ctx["toolCalls"].as_array().cloned().unwrap_or_default();
            for c in calls {
                let name = c["name"].as_str().unwrap_or_default().to_owned();
                call(name, c["arguments"].clone()).await?;
            }
        }
        "http-invalid-tool-headers" => {
            // The client has already dropped the tools whose header declarations are invalid.
            for t in &tools {
                call(t.name.clone(), json!({"region": "us-west1"})).await?;
            }
        }
        "json-schema-2020-12-preservation" => {
            let schema = tools
                .iter()
                .find(|t| t.name == "json_schema_2020_12_tool")
                .map(|t: &Tool| serde_json::to_value(&t.input_schema))
                .transpose()?
                .unwrap_or(Value::Null);
            call("json_schema_echo".into(), json!({"schema": schema})).await?;
        }
        // Skills: listing reads no file; a skill is loaded (its SKILL.md read and verified)
        // only when it is used, and its references only once it verified.
        "sep-2640-client-no-prefetch" => {
            let skills = client.list_all_skills().await?;
            eprintln!(
                "skills: {:?}",
                skills.iter().map(|s| &s.uri).collect::<Vec<_>>()
            );
        }
        s if s.starts_with("sep-2640-client-verify-") => {
            for entry in client.list_all_skills().await? {
                match client.load_skill(&entry).await {
                    Ok(skill) => {
                        for f in skill.files() {
                            if f.uri != entry.uri {
                                let bytes = skill.read_file(&f.uri).await?;
                                eprintln!("{}: {} verified bytes", f.uri, bytes.len());
                            }
                        }
                    }
                    Err(refused) => eprintln!("skill refused: {refused}"),
                }
            }
        }
        s if s.starts_with("auth/") => {
            // Authorized calls: the listing above, then a tool (step-up scenarios need it).
            if let Some(t) = tools.first() {
                call(t.name.clone(), json!({})).await?;
            }
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
            let mut line = e.to_string();
            let mut source = e.source();
            while let Some(s) = source {
                line += &format!(": {s}");
                source = s.source();
            }
            eprintln!("conformance client ({scenario}): {line}");
            ExitCode::FAILURE
        }
    }
}
