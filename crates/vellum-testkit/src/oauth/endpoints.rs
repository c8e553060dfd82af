//! The authorization server's endpoints other than `/token`: metadata, JWKS, `/authorize`,
//! `/register`, `/revoke`, `/introspect`.

use serde_json::{Value, json};

use super::{
    Code, IssInResponse, MetadataForm, Reply, Req, Shared, TestClient, grants, json_reply,
    oauth_error,
};

pub(crate) async fn route(shared: &Shared, r: &Req) -> Reply {
    let p = shared.opts.prefix.as_str();
    let path = r.path.as_str();
    if r.method == http::Method::GET && Some(path) == metadata_path(shared).as_deref() {
        return json_reply(200, &metadata(shared));
    }
    let Some(rest) = path.strip_prefix(p) else {
        return oauth_error(404, "not_found", "no such endpoint");
    };
    match (r.method.as_str(), rest) {
        ("GET", "/jwks") => json_reply(200, &json!({"keys": [shared.key.public_jwk()]})),
        ("GET", "/authorize") => authorize(shared, r),
        ("POST", "/token") => grants::token(shared, r),
        ("POST", "/register") if shared.opts.dynamic_registration => register(shared, r),
        ("POST", "/revoke") => revoke(shared, r),
        ("POST", "/introspect") => introspect(shared, r),
        _ => oauth_error(404, "not_found", "no such endpoint"),
    }
}

fn metadata_path(shared: &Shared) -> Option<String> {
    let p = &shared.opts.prefix;
    match shared.opts.metadata {
        MetadataForm::OAuth => Some(format!("/.well-known/oauth-authorization-server{p}")),
        MetadataForm::OpenId => Some(format!("/.well-known/openid-configuration{p}")),
        MetadataForm::OpenIdAppended => Some(format!("{p}/.well-known/openid-configuration")),
        MetadataForm::None => None,
    }
}

fn metadata(shared: &Shared) -> Value {
    let o = &shared.opts;
    let mut m = json!({
        "issuer": o.issuer_override.clone().unwrap_or_else(|| shared.issuer.clone()),
        "authorization_endpoint": shared.endpoint("/authorize"),
        "token_endpoint": shared.endpoint("/token"),
        "revocation_endpoint": shared.endpoint("/revoke"),
        "introspection_endpoint": shared.endpoint("/introspect"),
        "jwks_uri": shared.endpoint("/jwks"),
        "response_types_supported": ["code"],
        "grant_types_supported": o.grant_types,
        "token_endpoint_auth_methods_supported": o.auth_methods,
        "token_endpoint_auth_signing_alg_values_supported": ["ES256"],
    });
    let obj = m.as_object_mut().expect("an object");
    if o.dynamic_registration {
        obj.insert(
            "registration_endpoint".into(),
            shared.endpoint("/register").into(),
        );
    }
    if o.advertise_pkce {
        obj.insert("code_challenge_methods_supported".into(), json!(["S256"]));
    }
    if o.advertise_iss {
        obj.insert(
            "authorization_response_iss_parameter_supported".into(),
            true.into(),
        );
    }
    if !o.scopes_supported.is_empty() {
        obj.insert("scopes_supported".into(), json!(o.scopes_supported));
    }
    if o.cimd {
        obj.insert("client_id_metadata_document_supported".into(), true.into());
    }
    if o.dpop {
        obj.insert("dpop_signing_alg_values_supported".into(), json!(["ES256"]));
    }
    m
}

/// True when `given` is `registered`, or both are loopback `http` URIs differing only in
/// the port (RFC 8252 §7.3).
fn redirect_matches(registered: &str, given: &str) -> bool {
    if registered == given {
        return true;
    }
    let (Ok(a), Ok(b)) = (reqwest::Url::parse(registered), reqwest::Url::parse(given)) else {
        return false;
    };
    let loopback = |u: &reqwest::Url| {
        u.scheme() == "http" && matches!(u.host_str(), Some("127.0.0.1" | "localhost" | "[::1]"))
    };
    loopback(&a)
        && loopback(&b)
        && a.host_str() == b.host_str()
        && a.path() == b.path()
        && a.query() == b.query()
}

fn authorize(shared: &Shared, r: &Req) -> Reply {
    let Some(client_id) = r.param("client_id") else {
        return oauth_error(400, "invalid_request", "client_id is required");
    };
    let Some(redirect_uri) = r.param("redirect_uri") else {
        return oauth_error(400, "invalid_request", "redirect_uri is required");
    };
    let known = shared.books().clients.get(client_id).cloned();
    let redirect_ok = match &known {
        Some(c) => c
            .redirect_uris
            .iter()
            .any(|u| redirect_matches(u, redirect_uri)),
        // A client id metadata document the server would fetch; its redirect URIs are taken
        // on trust here (loopback or https).
        None if shared.opts.cimd && client_id.starts_with("https://") => {
            reqwest::Url::parse(redirect_uri).is_ok_and(|u| {
                u.scheme() == "https" || (u.scheme() == "http" && u.host_str() == Some("127.0.0.1"))
            })
        }
        None => return oauth_error(400, "invalid_client", "unknown client"),
    };
    if !redirect_ok {
        return oauth_error(400, "invalid_request", "redirect_uri is not registered");
    }
    let state = r.param("state");
    let back = |params: &[(&str, &str)]| -> Reply {
        let mut to = match reqwest::Url::parse(redirect_uri) {
            Ok(u) => u,
            Err(_) => return oauth_error(400, "invalid_request", "bad redirect_uri"),
        };
        {
            let mut q = to.query_pairs_mut();
            for (k, v) in params {
                q.append_pair(k, v);
            }
            if let Some(s) = state {
                q.append_pair("state", s);
            }
            match shared.opts.iss {
                IssInResponse::Correct => {
                    q.append_pair("iss", &shared.issuer);
                }
                IssInResponse::Wrong => {
                    q.append_pair("iss", "https://evil.example.com");
                }
                IssInResponse::Omit => {}
            }
        }
        let mut reply = json_reply(302, &json!({}));
        if let Ok(v) = http::HeaderValue::from_str(to.as_str()) {
            reply.headers_mut().insert(http::header::LOCATION, v);
        }
        reply
    };
    if r.param("response_type") != Some("code") {
        return back(&[("error", "unsupported_response_type")]);
    }
    let (Some(challenge), Some("S256")) =
        (r.param("code_challenge"), r.param("code_challenge_method"))
    else {
        return back(&[
            ("error", "invalid_request"),
            ("error_description", "PKCE S256 is required"),
        ]);
    };
    let Some(resource) = r.param("resource") else {
        return back(&[
            ("error", "invalid_target"),
            ("error_description", "resource is required"),
        ]);
    };
    let scope = r.param("scope").map(str::to_owned);
    if let Some(s) = &scope
        && !shared.opts.scopes_supported.is_empty()
        && s.split(' ')
            .any(|one| !shared.opts.scopes_supported.iter().any(|x| x == one))
    {
        return back(&[("error", "invalid_scope")]);
    }
    if shared.opts.deny {
        return back(&[
            ("error", "access_denied"),
            ("error_description", "the user said no"),
        ]);
    }
    let scope = match &shared.opts.grant_only {
        Some(only) => scope
            .map(|s| {
                s.split(' ')
                    .filter(|x| only.iter().any(|o| o == x))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .filter(|s| !s.is_empty()),
        None => scope,
    };
    let code = shared.fresh_id("code");
    shared.books().codes.insert(
        code.clone(),
        Code {
            client_id: client_id.into(),
            redirect_uri: redirect_uri.into(),
            challenge: challenge.into(),
            scope,
            resource: resource.into(),
        },
    );
    back(&[("code", &code)])
}

fn register(shared: &Shared, r: &Req) -> Reply {
    let Some(body) = r.json.as_ref().and_then(Value::as_object) else {
        return oauth_error(400, "invalid_client_metadata", "a JSON object is required");
    };
    let strings = |k: &str| -> Vec<String> {
        body.get(k)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let method = body
        .get("token_endpoint_auth_method")
        .and_then(Value::as_str)
        .unwrap_or("client_secret_basic")
        .to_owned();
    if !shared.opts.auth_methods.contains(&method) {
        return oauth_error(
            400,
            "invalid_client_metadata",
            "unsupported token_endpoint_auth_method",
        );
    }
    let grants = strings("grant_types");
    let redirect_uris = strings("redirect_uris");
    let wants_code = grants.is_empty() || grants.iter().any(|g| g == "authorization_code");
    if wants_code && redirect_uris.is_empty() {
        return oauth_error(400, "invalid_redirect_uri", "redirect_uris are required");
    }
    let id = shared.fresh_id("client");
    let secret = matches!(
        method.as_str(),
        "client_secret_basic" | "client_secret_post"
    )
    .then(|| shared.fresh_id("secret"));
    shared.books().clients.insert(
        id.clone(),
        TestClient {
            id: id.clone(),
            secret: secret.clone(),
            method: method.clone(),
            redirect_uris: redirect_uris.clone(),
            jwk: None,
        },
    );
    let mut answer = json!({
        "client_id": id,
        "client_id_issued_at": vellum_now(),
        "token_endpoint_auth_method": method,
        "redirect_uris": redirect_uris,
        "grant_types": grants,
        "client_name": body.get("client_name").cloned().unwrap_or(Value::Null),
    });
    if let (Some(s), Some(o)) = (secret, answer.as_object_mut()) {
        o.insert("client_secret".into(), s.into());
        o.insert("client_secret_expires_at".into(), 0.into());
    }
    json_reply(201, &answer)
}

fn revoke(shared: &Shared, r: &Req) -> Reply {
    if let Some(token) = r.param("token") {
        let mut books = shared.books();
        books.refresh.remove(token);
        if let Some(jti) = grants::jti_of(shared, token)
            && let Some(issued) = books.access.get_mut(&jti)
        {
            issued.active = false;
        }
    }
    json_reply(200, &json!({}))
}

fn introspect(shared: &Shared, r: &Req) -> Reply {
    let inactive = json_reply(200, &json!({"active": false}));
    let Some(token) = r.param("token") else {
        return inactive;
    };
    let Some(jti) = grants::jti_of(shared, token) else {
        return inactive;
    };
    let books = shared.books();
    let Some(issued) = books.access.get(&jti) else {
        return inactive;
    };
    if !issued.active || issued.exp <= vellum_now() {
        return inactive;
    }
    json_reply(
        200,
        &json!({
            "active": true,
            "iss": shared.issuer,
            "sub": shared.opts.subject,
            "aud": issued.resource,
            "exp": issued.exp,
            "scope": issued.scope,
            "client_id": issued.client_id,
        }),
    )
}

pub(crate) fn vellum_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
