//! OAuth in an existing axum app: the MCP endpoint nested at `/mcp` behind an `AuthLayer`,
//! its Protected Resource Metadata mounted by the app at the well-known path.
//!
//! Nesting strips `/mcp` from the path the layer sees, so:
//! - the metadata path (`/.well-known/oauth-protected-resource/mcp`) never reaches the
//!   layer: the app mounts `auth.metadata_service()` at `auth.metadata_path()`;
//! - the challenges' `resource_metadata` and the DPoP `htu` come from the configured resource
//!   URL (`MCP_RESOURCE`), never from the stripped path: give the URL clients use.
//!
//! Run: `MCP_RESOURCE=http://127.0.0.1:8000/mcp AS_ISSUER=https://as.example.com
//! AS_JWKS=https://as.example.com/.well-known/jwks.json cargo run -p vellum --features auth
//! --example axum_auth`.

use std::sync::Arc;

use axum::Router;
use axum::routing::get;
use vellum::auth::{AuthLayer, JwksCache, JwtVerifier, Principal, TokenVerifier};
use vellum::prelude::*;

/// The app's state, shared by its routes and its tools (a database pool in a real app).
#[derive(Clone)]
pub struct AppState {
    greeting: Arc<str>,
}

#[tools]
impl AppState {
    /// Says who is calling, and their tenant (a custom claim of the access token).
    #[tool]
    async fn whoami(&self, principal: Principal) -> String {
        let tenant = principal.claim::<String>("tenant").unwrap_or_default();
        format!("{} {} of {tenant}", self.greeting, principal.subject)
    }
}

/// The app: `/health`, the metadata at its well-known path, and `/mcp` behind `auth`.
pub fn app(
    state: AppState,
    mcp: StreamableHttpOptions,
    auth: &AuthLayer,
) -> Result<Router, vellum::error::ConfigError> {
    let server = Server::new(
        Implementation::new("axum-auth-app", "1.0.0"),
        ServerOptions::default(),
    );
    state.register(&server)?;
    let handler = StreamableHttpHandler::for_server(server, mcp);
    Ok(Router::new()
        .route("/health", get(|| async { "ok" }))
        // Outside the nested service: nesting would strip the path the layer matches on.
        .route_service(auth.metadata_path(), auth.metadata_service())
        .nest_service("/mcp", tower::Layer::layer(auth, handler)))
}

/// The layer for `resource` (the URL clients reach `/mcp` at, which tokens name as their
/// audience), with the Host/Origin checks of `mcp`.
pub fn auth_layer(
    resource: &str,
    issuer: &str,
    verifier: impl TokenVerifier,
    mcp: &StreamableHttpOptions,
) -> Result<AuthLayer, vellum::error::ConfigError> {
    AuthLayer::builder(resource, verifier)
        .authorization_server(issuer)
        .request_checks_of(mcp)
        .build()
}

fn env(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let bind = env("BIND", "127.0.0.1:8000");
    let resource = env("MCP_RESOURCE", "http://127.0.0.1:8000/mcp");
    let issuer = env("AS_ISSUER", "https://as.example.com");
    let jwks = Arc::new(JwksCache::new(env(
        "AS_JWKS",
        "https://as.example.com/.well-known/jwks.json",
    ))?);
    let listener = tokio::net::TcpListener::bind(&bind).await?;
    let mcp = StreamableHttpOptions::default().local_address(listener.local_addr()?);
    let verifier = JwtVerifier::new(jwks, issuer.as_str(), resource.as_str())?;
    let auth = auth_layer(&resource, &issuer, verifier, &mcp)?;
    let state = AppState {
        greeting: Arc::from("Hello"),
    };
    let app = app(state, mcp, &auth)?;
    eprintln!("MCP at {resource}, metadata at {}", auth.metadata_url());
    axum::serve(listener, app).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use jsonwebtoken::{Algorithm, EncodingKey, Header};
    use serde_json::{Value, json};
    use vellum::jose::{SigningKey, dpop_proof};

    const ISSUER: &str = "http://127.0.0.1:1/issuer";
    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef-axum";

    /// The app on an ephemeral loopback port: its base URL and the resource URL.
    async fn start() -> (String, String, tokio::task::JoinHandle<()>) {
        vellum::transport::install_crypto_provider();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let resource = format!("{base}/mcp");
        let mcp = StreamableHttpOptions::default()
            .local_address(listener.local_addr().unwrap())
            .stateless(true)
            .json_response(true);
        let verifier = JwtVerifier::hs256(SECRET, ISSUER, resource.as_str()).unwrap();
        let auth = auth_layer(&resource, ISSUER, verifier, &mcp).unwrap();
        let state = AppState {
            greeting: Arc::from("Hello"),
        };
        let app = app(state, mcp, &auth).unwrap();
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        (base, resource, task)
    }

    fn now() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
    }

    /// An access token for `resource`, bound to the key `jkt` when given.
    fn token(resource: &str, jkt: Option<&str>) -> String {
        let mut claims = json!({"iss": ISSUER, "sub": "ada", "aud": resource,
            "exp": now() + 600, "iat": now(), "tenant": "acme"});
        if let Some(j) = jkt {
            claims["cnf"] = json!({ "jkt": j });
        }
        let key = EncodingKey::from_secret(SECRET).unwrap();
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &key).unwrap()
    }

    /// An Ed25519 DPoP key from a fixed seed (PKCS#8 v1, RFC 8410).
    fn dpop_key() -> SigningKey {
        let mut der = vec![
            0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22,
            0x04, 0x20,
        ];
        der.extend_from_slice(&[7; 32]);
        SigningKey::from_pkcs8_der(&der, Algorithm::EdDSA).unwrap()
    }

    /// A `whoami` call to `/mcp` with these headers.
    async fn call(base: &str, headers: &[(&str, String)]) -> reqwest::Response {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "whoami", "arguments": {}}});
        let mut b = reqwest::Client::new()
            .post(format!("{base}/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .body(body.to_string());
        for (name, value) in headers {
            b = b.header(*name, value);
        }
        b.send().await.unwrap()
    }

    async fn answer_text(r: reqwest::Response) -> String {
        assert_eq!(r.status(), 200);
        let v: Value = r.json().await.unwrap();
        v["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    #[tokio::test]
    async fn metadata_at_the_well_known_path_and_named_by_the_challenge() {
        let (base, resource, task) = start().await;
        let r = call(&base, &[]).await;
        assert_eq!(r.status(), 401);
        let challenge = r.headers()["www-authenticate"].to_str().unwrap().to_owned();
        let metadata_url = format!("{base}/.well-known/oauth-protected-resource/mcp");
        assert!(
            challenge.contains(&format!("resource_metadata=\"{metadata_url}\"")),
            "{challenge}"
        );
        let r = reqwest::get(&metadata_url).await.unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["content-type"], "application/json");
        let metadata: Value = r.json().await.unwrap();
        assert_eq!(metadata["resource"], resource.as_str());
        assert_eq!(metadata["authorization_servers"], json!([ISSUER]));
        task.abort();
    }

    #[tokio::test]
    async fn bearer_and_dpop_bound_tokens_are_served_under_the_nested_route() {
        let (base, resource, task) = start().await;
        let bearer = format!("Bearer {}", token(&resource, None));
        let text = answer_text(call(&base, &[("authorization", bearer)]).await).await;
        assert_eq!(text, "Hello ada of acme");

        // The client signs the URL it sends to, `…/mcp`; the layer sees `/` and still
        // checks the proof against the resource URL.
        let key = dpop_key();
        let bound = token(&resource, Some(key.thumbprint()));
        let proof = dpop_proof(&key, "POST", &resource, Some(&bound), None).unwrap();
        let headers = [("authorization", format!("DPoP {bound}")), ("dpop", proof)];
        assert_eq!(
            answer_text(call(&base, &headers).await).await,
            "Hello ada of acme"
        );

        // A proof for the path the layer sees after nesting is not one for this resource.
        let stripped = format!("{base}/");
        let proof = dpop_proof(&key, "POST", &stripped, Some(&bound), None).unwrap();
        let headers = [("authorization", format!("DPoP {bound}")), ("dpop", proof)];
        let r = call(&base, &headers).await;
        assert_eq!(r.status(), 401);
        let challenges: Vec<_> = r.headers().get_all("www-authenticate").iter().collect();
        assert!(
            challenges
                .iter()
                .any(|c| c.to_str().unwrap().contains("invalid_dpop_proof")),
            "{challenges:?}"
        );
        task.abort();
    }
}
