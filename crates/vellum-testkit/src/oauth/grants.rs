//! `/token`: client authentication, DPoP, and each grant.

// A refusal is the reply itself, carried by `?` out of each check; it is built once per
// request, so its size costs nothing worth boxing for.
#![allow(clippy::result_large_err)]

use base64::Engine as _;
use jsonwebtoken::{DecodingKey, Validation};
use serde_json::{Value, json};
use vellum::jose::{DpopCheck, Jwk, sha256_b64url, verify_dpop_proof};

use super::endpoints::vellum_now;
use super::{Issued, Refresh, Reply, Req, Shared, TestClient, json_reply, oauth_error};

const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ID_JAG: &str = "urn:ietf:params:oauth:token-type:id-jag";

pub(crate) fn token(shared: &Shared, r: &Req) -> Reply {
    let grant = r.param("grant_type").unwrap_or_default().to_owned();
    if !shared.opts.grant_types.contains(&grant) {
        return oauth_error(400, "unsupported_grant_type", "grant type not offered");
    }
    let jkt = match dpop(shared, r) {
        Ok(j) => j,
        Err(reply) => return reply,
    };
    let result = match grant.as_str() {
        "authorization_code" => authorization_code(shared, r, jkt),
        "refresh_token" => refresh(shared, r, jkt),
        "client_credentials" => client_credentials(shared, r, jkt),
        JWT_BEARER => jwt_bearer(shared, r, jkt),
        TOKEN_EXCHANGE => token_exchange(shared, r),
        _ => Err(oauth_error(
            400,
            "unsupported_grant_type",
            "unknown grant type",
        )),
    };
    result.unwrap_or_else(|reply| reply)
}

/// The thumbprint of a valid DPoP proof, if one was sent (and DPoP is on).
fn dpop(shared: &Shared, r: &Req) -> Result<Option<String>, Reply> {
    if !shared.opts.dpop {
        return Ok(None);
    }
    let Some(proof) = r.header("dpop") else {
        return Ok(None);
    };
    let url = shared.endpoint("/token");
    let mut check = DpopCheck::new("POST", &url);
    if let Some(n) = &shared.opts.dpop_nonce {
        check = check.nonce(n);
    }
    match verify_dpop_proof(proof, &check) {
        Ok(v) => Ok(Some(v.jkt)),
        Err(e) if e.is_use_nonce() => {
            let mut reply = oauth_error(400, "use_dpop_nonce", "a DPoP nonce is required");
            if let Some(v) = shared
                .opts
                .dpop_nonce
                .as_deref()
                .and_then(|n| http::HeaderValue::from_str(n).ok())
            {
                reply.headers_mut().insert("dpop-nonce", v);
            }
            Err(reply)
        }
        Err(e) => Err(oauth_error(400, "invalid_dpop_proof", &e.to_string())),
    }
}

fn form_decode(s: &str) -> String {
    super::form_pairs(&format!("x={s}"))
        .pop()
        .map(|(_, v)| v)
        .unwrap_or_default()
}

/// The client the request authenticates as; `Ok(None)` when it names none.
fn authenticate(shared: &Shared, r: &Req) -> Result<Option<TestClient>, Reply> {
    let bad = |why: &str| oauth_error(401, "invalid_client", why);
    let (id, used, secret) = if let Some(basic) = r
        .header("authorization")
        .and_then(|h| h.strip_prefix("Basic "))
    {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(basic)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| bad("bad Basic credentials"))?;
        let (id, secret) = decoded
            .split_once(':')
            .ok_or_else(|| bad("Basic credentials need a colon"))?;
        (
            form_decode(id),
            "client_secret_basic",
            Some(form_decode(secret)),
        )
    } else if let Some(secret) = r.param("client_secret") {
        let id = r
            .param("client_id")
            .ok_or_else(|| bad("client_id is required"))?;
        (id.to_owned(), "client_secret_post", Some(secret.to_owned()))
    } else if let Some(assertion) = r.param("client_assertion") {
        let id = r
            .param("client_id")
            .map(str::to_owned)
            .or_else(|| unverified_claim(assertion, "iss"))
            .ok_or_else(|| bad("no client id"))?;
        let client = shared
            .books()
            .clients
            .get(&id)
            .cloned()
            .ok_or_else(|| bad("unknown client"))?;
        let jwk = client
            .jwk
            .clone()
            .ok_or_else(|| bad("the client has no key"))?;
        let claims = verify_jwt(assertion, &jwk)
            .ok_or_else(|| bad("the client assertion does not verify"))?;
        let aud_ok = claims["aud"]
            .as_str()
            .is_some_and(|a| a == shared.issuer || a == shared.endpoint("/token"));
        if claims["iss"] != id.as_str() || claims["sub"] != id.as_str() || !aud_ok {
            return Err(bad("the client assertion is not for this server"));
        }
        if r.param("client_assertion_type")
            != Some("urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
        {
            return Err(bad("wrong client_assertion_type"));
        }
        return if client.method == "private_key_jwt" {
            Ok(Some(client))
        } else {
            Err(bad("wrong authentication method"))
        };
    } else if let Some(id) = r.param("client_id") {
        (id.to_owned(), "none", None)
    } else {
        return Ok(None);
    };
    if shared.opts.cimd && id.starts_with("https://") && used == "none" {
        return Ok(Some(TestClient::public(&id)));
    }
    let client = shared
        .books()
        .clients
        .get(&id)
        .cloned()
        .ok_or_else(|| bad("unknown client"))?;
    if client.method != used || client.secret != secret {
        return Err(bad("wrong client credentials or method"));
    }
    Ok(Some(client))
}

/// The client the request authenticates as, which it must name.
fn authenticated(shared: &Shared, r: &Req) -> Result<TestClient, Reply> {
    authenticate(shared, r)?.ok_or_else(|| oauth_error(401, "invalid_client", "no client named"))
}

fn authorization_code(shared: &Shared, r: &Req, jkt: Option<String>) -> Result<Reply, Reply> {
    let client = authenticated(shared, r)?;
    let grant = |why: &str| oauth_error(400, "invalid_grant", why);
    let code = r.param("code").ok_or_else(|| grant("code is required"))?;
    // Single use: taken out whatever happens next.
    let issued = shared
        .books()
        .codes
        .remove(code)
        .ok_or_else(|| grant("unknown or used code"))?;
    if issued.client_id != client.id {
        return Err(grant("the code belongs to another client"));
    }
    if r.param("redirect_uri") != Some(issued.redirect_uri.as_str()) {
        return Err(grant("redirect_uri differs from the authorization request"));
    }
    let verifier = r
        .param("code_verifier")
        .ok_or_else(|| grant("code_verifier is required"))?;
    if sha256_b64url(verifier.as_bytes()) != issued.challenge {
        return Err(grant("the PKCE verifier does not match"));
    }
    if r.param("resource") != Some(issued.resource.as_str()) {
        return Err(oauth_error(
            400,
            "invalid_target",
            "resource differs from the authorization request",
        ));
    }
    Ok(issue(
        shared,
        &shared.opts.subject,
        Some(&client.id),
        issued.scope,
        issued.resource,
        jkt,
        true,
    ))
}

fn refresh(shared: &Shared, r: &Req, jkt: Option<String>) -> Result<Reply, Reply> {
    let client = authenticated(shared, r)?;
    let grant = |why: &str| oauth_error(400, "invalid_grant", why);
    let token = r
        .param("refresh_token")
        .ok_or_else(|| grant("refresh_token is required"))?;
    let held = shared
        .books()
        .refresh
        .remove(token)
        .ok_or_else(|| grant("unknown, used or revoked refresh token"))?;
    if held.client_id != client.id {
        return Err(grant("the refresh token belongs to another client"));
    }
    if r.param("resource").is_some_and(|res| res != held.resource) {
        return Err(oauth_error(400, "invalid_target", "another resource"));
    }
    if held.jkt.is_some() && held.jkt != jkt {
        return Err(grant("the refresh token is bound to another DPoP key"));
    }
    Ok(issue(
        shared,
        &shared.opts.subject,
        Some(&client.id),
        held.scope,
        held.resource,
        jkt,
        true,
    ))
}

fn client_credentials(shared: &Shared, r: &Req, jkt: Option<String>) -> Result<Reply, Reply> {
    let client = authenticated(shared, r)?;
    if client.method == "none" {
        return Err(oauth_error(
            401,
            "invalid_client",
            "a public client cannot use client credentials",
        ));
    }
    let resource = r
        .param("resource")
        .ok_or_else(|| oauth_error(400, "invalid_target", "resource is required"))?;
    Ok(issue(
        shared,
        &client.id,
        Some(&client.id),
        r.param("scope").map(str::to_owned),
        resource.into(),
        jkt,
        false,
    ))
}

fn jwt_bearer(shared: &Shared, r: &Req, jkt: Option<String>) -> Result<Reply, Reply> {
    let client = authenticate(shared, r)?;
    let grant = |why: &str| oauth_error(400, "invalid_grant", why);
    let assertion = r
        .param("assertion")
        .ok_or_else(|| grant("assertion is required"))?;
    let claims =
        verify_trusted(shared, assertion).ok_or_else(|| grant("the assertion does not verify"))?;
    if claims["aud"].as_str() != Some(shared.issuer.as_str()) {
        return Err(grant("the assertion is for another audience"));
    }
    if claims["exp"].as_u64().is_none_or(|e| e <= vellum_now()) {
        return Err(grant("the assertion has expired"));
    }
    let resource = r
        .param("resource")
        .map(str::to_owned)
        .or_else(|| claims["resource"].as_str().map(str::to_owned))
        .ok_or_else(|| oauth_error(400, "invalid_target", "resource is required"))?;
    // An identity assertion grant names the client it was issued to and the resource.
    if let Some(jag_client) = claims["client_id"].as_str() {
        if client.as_ref().map(|c| c.id.as_str()) != Some(jag_client) {
            return Err(grant("the ID-JAG was issued to another client"));
        }
        if claims["resource"]
            .as_str()
            .is_some_and(|res| res != resource)
        {
            return Err(grant("the ID-JAG is for another resource"));
        }
    }
    let scope = r
        .param("scope")
        .map(str::to_owned)
        .or_else(|| claims["scope"].as_str().map(str::to_owned));
    let subject = claims["sub"].as_str().unwrap_or_default().to_owned();
    let client_id = client.map(|c| c.id);
    Ok(issue(
        shared,
        &subject,
        client_id.as_deref(),
        scope,
        resource,
        jkt,
        false,
    ))
}

/// The identity provider's side of SEP-990: an ID token becomes an ID-JAG.
fn token_exchange(shared: &Shared, r: &Req) -> Result<Reply, Reply> {
    let client = authenticated(shared, r)?;
    let bad = |why: &str| oauth_error(400, "invalid_request", why);
    if r.param("requested_token_type") != Some(ID_JAG) {
        return Err(bad("only ID-JAGs are issued"));
    }
    if r.param("subject_token_type") != Some("urn:ietf:params:oauth:token-type:id_token") {
        return Err(bad("the subject must be an ID token"));
    }
    let audience = r
        .param("audience")
        .ok_or_else(|| bad("audience is required"))?;
    let subject = r
        .param("subject_token")
        .ok_or_else(|| bad("subject_token is required"))?;
    let claims = verify_trusted(shared, subject)
        .ok_or_else(|| oauth_error(400, "invalid_grant", "the ID token does not verify"))?;
    if claims["aud"].as_str() != Some(client.id.as_str()) {
        return Err(oauth_error(
            400,
            "invalid_grant",
            "the ID token was issued to another client",
        ));
    }
    let now = vellum_now();
    let jag = json!({
        "iss": shared.issuer,
        "sub": claims["sub"],
        "aud": audience,
        "client_id": shared.opts.id_jag_client_id.clone().unwrap_or_else(|| client.id.clone()),
        "resource": r.param("resource"),
        "scope": r.param("scope"),
        "jti": shared.fresh_id("jag"),
        "iat": now,
        "exp": now + 300,
    });
    let mut header = jsonwebtoken::Header::new(shared.key.algorithm());
    header.typ = Some("oauth-id-jag+jwt".into());
    let signed = shared
        .key
        .sign(header, &jag)
        .map_err(|e| oauth_error(500, "server_error", &e.to_string()))?;
    Ok(json_reply(
        200,
        &json!({"access_token": signed, "issued_token_type": ID_JAG, "token_type": "N_A", "expires_in": 300}),
    ))
}

fn issue(
    shared: &Shared,
    subject: &str,
    client_id: Option<&str>,
    scope: Option<String>,
    resource: String,
    jkt: Option<String>,
    with_refresh: bool,
) -> Reply {
    let now = vellum_now();
    let ttl = shared.opts.access_token_ttl;
    let jti = shared.fresh_id("at");
    let mut claims = json!({
        "iss": shared.issuer,
        "sub": subject,
        "aud": resource,
        "iat": now,
        "exp": now + ttl,
        "jti": jti,
    });
    let obj = claims.as_object_mut().expect("an object");
    if let Some(s) = &scope {
        obj.insert("scope".into(), s.clone().into());
    }
    if let Some(c) = client_id {
        obj.insert("client_id".into(), c.into());
    }
    if let Some(j) = &jkt {
        obj.insert("cnf".into(), json!({"jkt": j}));
    }
    let mut header = jsonwebtoken::Header::new(shared.key.algorithm());
    header.typ = Some("at+jwt".into());
    let access = match shared.key.sign(header, &claims) {
        Ok(t) => t,
        Err(e) => return oauth_error(500, "server_error", &e.to_string()),
    };
    let mut books = shared.books();
    books.access.insert(
        jti,
        Issued {
            active: true,
            client_id: client_id.map(str::to_owned),
            scope: scope.clone(),
            resource: resource.clone(),
            exp: now + ttl,
        },
    );
    let mut answer = json!({
        "access_token": access,
        "token_type": if jkt.is_some() { "DPoP" } else { "Bearer" },
        "expires_in": ttl,
    });
    let out = answer.as_object_mut().expect("an object");
    if let Some(s) = &scope {
        out.insert("scope".into(), s.clone().into());
    }
    if with_refresh
        && shared.opts.refresh_tokens
        && let Some(c) = client_id
    {
        books.next += 1;
        let rt = format!(
            "rt-{}-{}",
            books.next,
            sha256_b64url(format!("{}{}", books.next, shared.base).as_bytes())
                .get(..16)
                .unwrap_or("")
        );
        books.refresh.insert(
            rt.clone(),
            Refresh {
                client_id: c.into(),
                scope,
                resource,
                jkt,
            },
        );
        out.insert("refresh_token".into(), rt.into());
    }
    json_reply(200, &answer)
}

fn unverified_claim(jwt: &str, name: &str) -> Option<String> {
    let payload = jwt.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .ok()?;
    let v: Value = serde_json::from_slice(&bytes).ok()?;
    v.get(name)?.as_str().map(str::to_owned)
}

/// The claims of `jwt` when `jwk` signed it (no claim checks: the caller makes them).
fn verify_jwt(jwt: &str, jwk: &Jwk) -> Option<Value> {
    let header = jsonwebtoken::decode_header(jwt).ok()?;
    let key = DecodingKey::from_jwk(jwk).ok()?;
    let mut v = Validation::new(header.alg);
    v.required_spec_claims.clear();
    v.validate_exp = false;
    v.validate_aud = false;
    jsonwebtoken::decode::<Value>(jwt, &key, &v)
        .ok()
        .map(|d| d.claims)
}

/// The claims of a JWT signed by this server or by an issuer it trusts.
fn verify_trusted(shared: &Shared, jwt: &str) -> Option<Value> {
    let iss = unverified_claim(jwt, "iss")?;
    let own = (iss == shared.issuer).then(|| shared.key.public_jwk().clone());
    let key = own.or_else(|| {
        shared
            .books()
            .trusted
            .iter()
            .find(|(i, _)| *i == iss)
            .map(|(_, k)| k.clone())
    })?;
    verify_jwt(jwt, &key)
}

/// The `jti` of an access token this server signed.
pub(crate) fn jti_of(shared: &Shared, token: &str) -> Option<String> {
    verify_jwt(token, shared.key.public_jwk())?
        .get("jti")?
        .as_str()
        .map(str::to_owned)
}
