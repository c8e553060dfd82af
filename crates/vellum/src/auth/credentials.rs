//! The credentials of a request: its `Authorization` header read as a `Bearer` or `DPoP`
//! access token (RFC 6750 §2.1, RFC 9449 §7.1), with the malformed forms refused.
//!
//! Not here: verifying the token (`verifier.rs`) or the DPoP proof (`dpop.rs`).

use http::{Request, header};

/// The longest access token accepted.
const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// The `Authorization` scheme a request used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scheme {
    /// `Authorization: Bearer <token>`.
    Bearer,
    /// `Authorization: DPoP <token>`, with a `DPoP` proof header.
    Dpop,
}

/// The access token of a request and its scheme (`Bearer`, or `DPoP` when `dpop` is on):
/// `Ok(None)` without credentials for these schemes, `Err` for a malformed request (token in
/// the query, two Authorization headers, bad syntax).
pub(crate) fn credentials<B>(
    req: &Request<B>,
    dpop: bool,
) -> Result<Option<(Scheme, String)>, &'static str> {
    if req.uri().query().is_some_and(|q| {
        q.split('&')
            .any(|kv| kv.split('=').next() == Some("access_token"))
    }) {
        return Err("Access tokens are accepted only in the Authorization header");
    }
    let mut values = req.headers().get_all(header::AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err("More than one Authorization header");
    }
    let Ok(value) = value.to_str() else {
        return Err("The Authorization header is not ASCII");
    };
    let Some((scheme, token)) = value.split_once(' ') else {
        return Ok(None);
    };
    let scheme = if scheme.eq_ignore_ascii_case("bearer") {
        Scheme::Bearer
    } else if dpop && scheme.eq_ignore_ascii_case("dpop") {
        Scheme::Dpop
    } else {
        return Ok(None);
    };
    let token = token.trim_matches(' ');
    // RFC 6750 b64token: 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
    let body = token.trim_end_matches('=');
    let valid = !body.is_empty()
        && token.len() <= MAX_TOKEN_BYTES
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b));
    if !valid {
        return Err("The access token is malformed");
    }
    Ok(Some((scheme, token.to_owned())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(auth: &[&str], uri: &str) -> Request<()> {
        let mut b = Request::builder().uri(uri);
        for a in auth {
            b = b.header(header::AUTHORIZATION, *a);
        }
        b.body(()).unwrap()
    }

    #[test]
    fn bearer_tokens() {
        let b = |a: &[&str], uri: &str| credentials(&req(a, uri), true);
        let bearer = |t: &str| Ok(Some((Scheme::Bearer, t.to_owned())));
        assert_eq!(b(&[], "/mcp"), Ok(None));
        assert_eq!(
            b(&["Bearer abc.def-_~+/=="], "/mcp"),
            bearer("abc.def-_~+/==")
        );
        assert_eq!(b(&["bearer abc"], "/mcp"), bearer("abc"));
        assert_eq!(b(&["Basic dXNlcjpwdw=="], "/mcp"), Ok(None));
        assert!(b(&["Bearer a b"], "/mcp").is_err());
        assert!(b(&["Bearer "], "/mcp").is_err());
        assert!(b(&["Bearer a", "Bearer b"], "/mcp").is_err());
        assert!(b(&[], "/mcp?access_token=abc").is_err());
        assert_eq!(b(&[], "/mcp?x=access_token"), Ok(None));
        assert_eq!(
            b(&["DPoP abc"], "/mcp"),
            Ok(Some((Scheme::Dpop, "abc".to_owned())))
        );
        // With DPoP off the scheme is not ours: no credentials.
        assert_eq!(credentials(&req(&["DPoP abc"], "/mcp"), false), Ok(None));
    }
}
