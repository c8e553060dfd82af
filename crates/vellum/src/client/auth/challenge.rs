//! Reading `WWW-Authenticate` (RFC 9110 §11.6.1): the challenges of a 401 or 403, of the
//! `Bearer` (RFC 6750) and `DPoP` (RFC 9449) schemes, with the parameters MCP uses
//! (`resource_metadata` of RFC 9728, `scope`, `error`).

/// One challenge of a `WWW-Authenticate` header.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuthChallenge {
    /// The scheme as sent (`Bearer`, `DPoP`, …); compare without case.
    pub scheme: String,
    /// Its parameters, names lowercased, values unquoted, in order.
    pub params: Vec<(String, String)>,
}

impl AuthChallenge {
    /// A parameter's value (names compare without case).
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The URL of the protected-resource metadata (RFC 9728 §5.1).
    pub fn resource_metadata(&self) -> Option<&str> {
        self.param("resource_metadata")
    }

    /// The scopes the operation needs, split on spaces.
    pub fn scopes(&self) -> Vec<String> {
        self.param("scope")
            .map(|s| s.split_ascii_whitespace().map(str::to_owned).collect())
            .unwrap_or_default()
    }

    /// The `error` code (`invalid_token`, `insufficient_scope`, `use_dpop_nonce`, …).
    pub fn error(&self) -> Option<&str> {
        self.param("error")
    }

    /// True for the `Bearer` scheme.
    pub fn is_bearer(&self) -> bool {
        self.scheme.eq_ignore_ascii_case("bearer")
    }

    /// True for the `DPoP` scheme.
    pub fn is_dpop(&self) -> bool {
        self.scheme.eq_ignore_ascii_case("dpop")
    }
}

/// Every challenge of the `WWW-Authenticate` values of a response (a header may be sent
/// several times, each with several challenges). Unreadable parts are skipped.
pub fn parse_challenges<'a>(values: impl IntoIterator<Item = &'a str>) -> Vec<AuthChallenge> {
    let mut out = Vec::new();
    for v in values {
        Parser {
            s: v.as_bytes(),
            i: 0,
        }
        .challenges(&mut out);
    }
    out
}

/// The challenge that governs an OAuth client: a `DPoP` one when the client uses DPoP and
/// the server offers it, else the `Bearer` one, else a `DPoP` one.
pub(crate) fn governing(challenges: &[AuthChallenge], dpop: bool) -> Option<&AuthChallenge> {
    let dpop_one = challenges.iter().find(|c| c.is_dpop());
    let bearer = challenges.iter().find(|c| c.is_bearer());
    if dpop {
        dpop_one.or(bearer)
    } else {
        bearer.or(dpop_one)
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn is_token68(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~+/".contains(&b)
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.i += 1;
        }
    }

    fn token(&mut self) -> Option<String> {
        let start = self.i;
        while self.peek().is_some_and(is_tchar) {
            self.i += 1;
        }
        (self.i > start).then(|| String::from_utf8_lossy(&self.s[start..self.i]).into_owned())
    }

    fn quoted(&mut self) -> Option<String> {
        // At the opening quote.
        self.i += 1;
        let mut out = Vec::new();
        while let Some(b) = self.peek() {
            self.i += 1;
            match b {
                b'"' => return Some(String::from_utf8_lossy(&out).into_owned()),
                b'\\' => {
                    if let Some(n) = self.peek() {
                        out.push(n);
                        self.i += 1;
                    }
                }
                _ => out.push(b),
            }
        }
        None // unterminated
    }

    fn challenges(&mut self, out: &mut Vec<AuthChallenge>) {
        loop {
            while matches!(self.peek(), Some(b' ' | b'\t' | b',')) {
                self.i += 1;
            }
            let Some(scheme) = self.token() else { return };
            let mut challenge = AuthChallenge {
                scheme,
                params: Vec::new(),
            };
            self.skip_ws();
            self.params(&mut challenge);
            out.push(challenge);
            if self.peek().is_none() {
                return;
            }
        }
    }

    /// Reads the parameters of one challenge; stops before the next challenge's scheme.
    fn params(&mut self, c: &mut AuthChallenge) {
        let mut first = true;
        loop {
            let item_start = self.i;
            self.skip_ws();
            let Some(name) = self.token() else {
                if first {
                    self.skip_token68();
                }
                return;
            };
            self.skip_ws();
            if self.peek() != Some(b'=') {
                // A bare token: the next challenge's scheme (or a token68 of this one).
                if first && matches!(self.peek(), None | Some(b',')) && name.bytes().all(is_token68)
                {
                    return;
                }
                self.i = item_start;
                return;
            }
            self.i += 1;
            self.skip_ws();
            let value = match self.peek() {
                Some(b'"') => match self.quoted() {
                    Some(v) => v,
                    None => return,
                },
                // `name=` followed by `=` or the end is a token68 with padding.
                None | Some(b'=' | b',') => {
                    while self.peek() == Some(b'=') {
                        self.i += 1;
                    }
                    if first {
                        return;
                    }
                    String::new()
                }
                Some(_) => self.token().unwrap_or_default(),
            };
            c.params.push((name.to_ascii_lowercase(), value));
            first = false;
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                _ => return,
            }
        }
    }

    fn skip_token68(&mut self) {
        while self.peek().is_some_and(|b| is_token68(b) || b == b'=') {
            self.i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(v: &str) -> Vec<AuthChallenge> {
        parse_challenges([v])
    }

    #[test]
    fn bearer_with_everything_mcp_sends() {
        let c = one(
            r#"Bearer error="insufficient_scope", scope="mcp:read mcp:write", resource_metadata="https://h/.well-known/oauth-protected-resource/mcp", error_description="needs \"more\"""#,
        );
        assert_eq!(c.len(), 1);
        assert!(c[0].is_bearer());
        assert_eq!(c[0].error(), Some("insufficient_scope"));
        assert_eq!(c[0].scopes(), ["mcp:read", "mcp:write"]);
        assert_eq!(
            c[0].resource_metadata(),
            Some("https://h/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(c[0].param("ERROR_DESCRIPTION"), Some("needs \"more\""));
    }

    #[test]
    fn several_challenges_and_schemes() {
        let c = one(
            r#"DPoP algs="ES256 PS256", error=use_dpop_nonce, Bearer realm="x", scope="a",Basic realm="b""#,
        );
        let schemes: Vec<_> = c.iter().map(|c| c.scheme.as_str()).collect();
        assert_eq!(schemes, ["DPoP", "Bearer", "Basic"]);
        assert_eq!(c[0].param("algs"), Some("ES256 PS256"));
        assert_eq!(c[0].error(), Some("use_dpop_nonce"));
        assert_eq!(c[1].scopes(), ["a"]);
        assert_eq!(governing(&c, true).map(|c| c.scheme.as_str()), Some("DPoP"));
        assert_eq!(
            governing(&c, false).map(|c| c.scheme.as_str()),
            Some("Bearer")
        );
        // Two header values.
        let c = parse_challenges(["Bearer", "DPoP resource_metadata=\"u\""]);
        assert_eq!(c.len(), 2);
        assert_eq!(c[1].resource_metadata(), Some("u"));
    }

    #[test]
    fn token68_and_junk() {
        let c = one("Negotiate abc123==, Bearer scope=\"s\"");
        assert_eq!(c.len(), 2);
        assert!(c[0].params.is_empty());
        assert_eq!(c[1].scopes(), ["s"]);
        assert_eq!(one("Bearer").len(), 1);
        assert!(one("").is_empty());
        assert!(one(" , ,").is_empty());
        // An unterminated quote ends the parse without panicking.
        let c = one("Bearer scope=\"abc");
        assert_eq!(c.len(), 1);
        assert!(c[0].params.is_empty());
        for junk in ["=", "\"", "Bearer ,,=,", "Bearer a=b=c", "\u{1F600} x=1"] {
            let _ = one(junk);
        }
    }
}
