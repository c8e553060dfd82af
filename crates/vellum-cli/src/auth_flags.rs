//! The `--auth-*` flags of `vellum serve`: when any is given, the server is an OAuth 2.1
//! resource server ([`vellum::auth::AuthLayer`] around the handler).

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use clap::Args;
use vellum::auth::{
    AuthLayer, ClientAuth, DpopMode, IntrospectionVerifier, JwksCache, JwtVerifier,
    RedisReplayCache, TokenVerifier,
};
use vellum::store::RateLimit;
use vellum::store::redis::Redis;
use vellum::transport::http::StreamableHttpOptions;

/// Authorization flags (flattened into `vellum serve`).
#[derive(Debug, Args)]
#[command(next_help_heading = "Authorization (OAuth 2.1 resource server)")]
pub(crate) struct AuthArgs {
    /// Require bearer tokens: JWTs signed by a key of this JWKS (https, or http on loopback).
    #[arg(long, value_name = "URL")]
    auth_jwks: Option<String>,
    /// Require bearer tokens: HS256 JWTs signed with this shared secret (32+ bytes; local
    /// testing only).
    #[arg(
        long,
        value_name = "SECRET",
        env = "VELLUM_AUTH_HS256_SECRET",
        hide_env_values = true
    )]
    auth_hs256_secret: Option<String>,
    /// Require bearer tokens, checked by RFC 7662 introspection at this URL.
    #[arg(long, value_name = "URL")]
    auth_introspection_url: Option<String>,
    /// Client id for the introspection endpoint (HTTP Basic).
    #[arg(long, value_name = "ID", requires = "auth_introspection_url")]
    auth_client_id: Option<String>,
    /// Client secret for the introspection endpoint.
    #[arg(
        long,
        value_name = "SECRET",
        env = "VELLUM_AUTH_CLIENT_SECRET",
        hide_env_values = true,
        requires = "auth_client_id"
    )]
    auth_client_secret: Option<String>,
    /// The trusted token issuer (`iss`), listed under `authorization_servers` in the
    /// protected resource metadata (https, or http on loopback).
    #[arg(long, value_name = "ISSUER")]
    auth_issuer: Option<String>,
    /// The audience tokens must carry (RFC 8707 resource indicator).
    #[arg(long, value_name = "AUDIENCE")]
    auth_audience: Option<String>,
    /// A scope every request needs (403 insufficient_scope without it); repeatable. None by
    /// default.
    #[arg(long, value_name = "SCOPE")]
    auth_scope: Vec<String>,
    /// A scope calls of one tool need, as TOOL=SCOPE (403 insufficient_scope with a step-up
    /// challenge without it, before the tool runs); repeatable, also for more scopes of one
    /// tool.
    #[arg(long, value_name = "TOOL=SCOPE", value_parser = parse_tool_scope)]
    auth_tool_scope: Vec<(String, String)>,
    /// DPoP-bound tokens (RFC 9449): off (refused), allowed (with their proofs, beside
    /// Bearer tokens), required (only DPoP-bound tokens).
    #[arg(long, value_name = "MODE", default_value = "allowed")]
    auth_dpop: DpopMode,
    /// Require server nonces in DPoP proofs, rotating every SECONDS (the previous nonce
    /// stays valid one more period).
    #[arg(long, value_name = "SECONDS")]
    auth_dpop_nonce: Option<u64>,
    /// Where accepted DPoP proofs are remembered (each is accepted once): `memory` (this
    /// process) or a Redis URL (`redis://HOST:PORT`, `redis-cluster://…`,
    /// `redis-sentinel://…/MASTER_NAME`), shared by every instance given the same Redis, so
    /// that a proof replayed to another instance is refused too. Default: `--redis`, else
    /// memory.
    #[arg(
        long,
        value_name = "memory|redis://HOST:PORT|redis-cluster://HOST:PORT[,HOST:PORT...]"
    )]
    auth_dpop_replay: Option<String>,
    /// Remember up to N verified JWT access tokens, so that a repeated token skips the
    /// signature check (expiry, DPoP and scopes are still checked on every request);
    /// 0 turns the cache off.
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    auth_token_cache: usize,
    /// The longest time a verified token is remembered, in seconds (also bounded by its
    /// `exp` and by the next JWKS change).
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    auth_token_cache_ttl: u64,
    /// The failed authentications (401 for an invalid token) one client address may have
    /// per minute, in bursts of as many; past it the address gets 429 with Retry-After before
    /// its token is verified (0 = no limit).
    #[arg(long, value_name = "N", default_value_t = 20)]
    auth_failures_per_minute: u32,
    /// Remember up to N tokens that failed verification, so that the same token again gets
    /// its 401 without a signature check (0 turns it off).
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    auth_failed_token_cache: usize,
    /// How long a failed token is remembered, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    auth_failed_token_ttl: u64,
    /// The canonical URL of this MCP server in the metadata (default
    /// `http://<listen address>/mcp`, or the `--path` given).
    #[arg(long, value_name = "URL")]
    auth_resource: Option<String>,
}

impl AuthArgs {
    /// True when any flag asks for authorization.
    pub(crate) fn enabled(&self) -> bool {
        self.auth_jwks.is_some()
            || self.auth_hs256_secret.is_some()
            || self.auth_introspection_url.is_some()
    }

    /// `--auth-dpop-replay` as given (the store flags resolve it with `--redis`).
    pub(crate) fn dpop_replay(&self) -> Option<&str> {
        self.auth_dpop_replay.as_deref()
    }

    /// The layer, for a server listening on `addr`; `dpop_replay`: the Redis that remembers
    /// DPoP proofs (this process's memory without).
    pub(crate) async fn layer(
        &self,
        addr: SocketAddr,
        options: &StreamableHttpOptions,
        dpop_replay: Option<Redis>,
    ) -> anyhow::Result<AuthLayer> {
        let (Some(issuer), Some(audience)) = (&self.auth_issuer, &self.auth_audience) else {
            bail!("--auth-issuer and --auth-audience are required with --auth-*");
        };
        let (cache, ttl) = (
            self.auth_token_cache,
            std::time::Duration::from_secs(self.auth_token_cache_ttl),
        );
        let verifier: Arc<dyn TokenVerifier> = match (
            &self.auth_jwks,
            &self.auth_hs256_secret,
            &self.auth_introspection_url,
        ) {
            (Some(url), None, None) => {
                let jwks = Arc::new(JwksCache::new(url.as_str()).context("--auth-jwks")?);
                Arc::new(JwtVerifier::new(jwks, issuer, audience)?.token_cache(cache, ttl))
            }
            (None, Some(secret), None) => Arc::new(
                JwtVerifier::hs256(secret.as_bytes(), issuer, audience)
                    .context("--auth-hs256-secret")?
                    .token_cache(cache, ttl),
            ),
            (None, None, Some(url)) => {
                let auth = match &self.auth_client_id {
                    Some(id) => ClientAuth::Basic {
                        client_id: id.clone(),
                        client_secret: self.auth_client_secret.clone().unwrap_or_default(),
                    },
                    None => ClientAuth::None,
                };
                Arc::new(
                    IntrospectionVerifier::new(url.as_str(), auth, issuer, audience)
                        .context("--auth-introspection-url")?,
                )
            }
            _ => bail!(
                "give exactly one of --auth-jwks, --auth-hs256-secret, --auth-introspection-url"
            ),
        };
        let resource = self.auth_resource.clone().unwrap_or_else(|| {
            format!("http://{addr}{}", options.path.as_deref().unwrap_or("/mcp"))
        });
        let mut b = AuthLayer::builder(resource, verifier)
            .authorization_server(issuer)
            .request_checks_of(options);
        for s in &self.auth_scope {
            b = b.require_scope(s);
        }
        for (tool, scope) in &self.auth_tool_scope {
            b = b.tool_scope(tool, scope);
        }
        b = b.dpop(self.auth_dpop);
        let per_minute = self.auth_failures_per_minute;
        b = b
            .failed_auth_limit(
                (per_minute > 0).then(|| RateLimit::new(f64::from(per_minute) / 60.0, per_minute)),
            )
            .failed_token_cache(
                self.auth_failed_token_cache,
                std::time::Duration::from_secs(self.auth_failed_token_ttl),
            );
        if let Some(secs) = self.auth_dpop_nonce {
            b = b.dpop_nonce(std::time::Duration::from_secs(secs));
        }
        if let Some(redis) = &dpop_replay {
            b = b.dpop_replay_cache(Arc::new(RedisReplayCache::on(redis, "vellum")));
        }
        b.build().context("authorization")
    }
}

/// `TOOL=SCOPE` of `--auth-tool-scope`.
fn parse_tool_scope(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((tool, scope)) if !tool.is_empty() && !scope.is_empty() => {
            Ok((tool.to_owned(), scope.to_owned()))
        }
        _ => Err(format!("expected TOOL=SCOPE, got {s:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_scopes_parse() {
        assert_eq!(
            parse_tool_scope("delete=calendar:write"),
            Ok(("delete".into(), "calendar:write".into()))
        );
        assert!(parse_tool_scope("delete").is_err());
        assert!(parse_tool_scope("=x").is_err());
    }
}
