//! RFC 6570 URI templates, for resource templates: parsing at registration, matching a
//! concrete URI back to its variables at `resources/read`.
//!
//! Supported expressions: `{var}` (one path segment), `{+var}` and `{#var}` (greedy,
//! reserved characters allowed). Several variables per expression and the other operators
//! are rejected at registration with a clear error rather than matched wrongly.

use std::collections::BTreeMap;

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    source: String,
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    /// One segment: stops at `/`, `?`, `#`.
    Simple(String),
    /// Anything, including `/`.
    Reserved(String),
}

/// Why a template cannot be parsed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("invalid URI template {template:?}: {reason}")]
pub struct TemplateError {
    template: String,
    reason: String,
}

impl UriTemplate {
    /// Parses a template.
    pub fn parse(template: &str) -> Result<Self, TemplateError> {
        let err = |reason: &str| TemplateError {
            template: template.to_owned(),
            reason: reason.to_owned(),
        };
        let mut parts = Vec::new();
        let mut rest = template;
        while !rest.is_empty() {
            match rest.find('{') {
                None => {
                    if rest.contains('}') {
                        return Err(err("unbalanced '}'"));
                    }
                    parts.push(Part::Literal(rest.to_owned()));
                    break;
                }
                Some(start) => {
                    if start > 0 {
                        let lit = &rest[..start];
                        if lit.contains('}') {
                            return Err(err("unbalanced '}'"));
                        }
                        parts.push(Part::Literal(lit.to_owned()));
                    }
                    let Some(end) = rest[start..].find('}') else {
                        return Err(err("unclosed '{'"));
                    };
                    let expr = &rest[start + 1..start + end];
                    let (op, name) = match expr.chars().next() {
                        Some(c @ ('+' | '#')) => (Some(c), &expr[1..]),
                        Some('/' | '.' | ';' | '?' | '&' | '=' | ',' | '!' | '@' | '|') => {
                            return Err(err("this operator is not supported"));
                        }
                        _ => (None, expr),
                    };
                    if name.is_empty()
                        || !name
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
                    {
                        return Err(err("variable names are letters, digits, '_' and '.'"));
                    }
                    if matches!(parts.last(), Some(Part::Simple(_) | Part::Reserved(_))) {
                        return Err(err("two variables in a row cannot be told apart"));
                    }
                    match op {
                        None => parts.push(Part::Simple(name.to_owned())),
                        Some('#') => {
                            parts.push(Part::Literal("#".into()));
                            parts.push(Part::Reserved(name.to_owned()));
                        }
                        Some(_) => parts.push(Part::Reserved(name.to_owned())),
                    }
                    rest = &rest[start + end + 1..];
                }
            }
        }
        Ok(UriTemplate {
            source: template.to_owned(),
            parts,
        })
    }

    /// The template text.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The variable names, in order.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Simple(n) | Part::Reserved(n) => Some(n.as_str()),
            Part::Literal(_) => None,
        })
    }

    /// Matches a URI, returning the (percent-decoded) variables.
    pub fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let mut vars = BTreeMap::new();
        if match_parts(&self.parts, uri, &mut vars) {
            Some(vars)
        } else {
            None
        }
    }
}

fn match_parts(parts: &[Part], input: &str, vars: &mut BTreeMap<String, String>) -> bool {
    let Some((first, rest)) = parts.split_first() else {
        return input.is_empty();
    };
    match first {
        Part::Literal(l) => input
            .strip_prefix(l.as_str())
            .is_some_and(|tail| match_parts(rest, tail, vars)),
        Part::Simple(name) | Part::Reserved(name) => {
            let reserved = matches!(first, Part::Reserved(_));
            let limit = if reserved {
                input.len()
            } else {
                input.find(['/', '?', '#']).unwrap_or(input.len())
            };
            // Try the longest value first, then shorter ones (values are non-empty).
            let mut ends: Vec<usize> = (1..=limit).filter(|i| input.is_char_boundary(*i)).collect();
            ends.reverse();
            for end in ends {
                let Some(value) = percent_decode(&input[..end]) else {
                    continue;
                };
                if match_parts(rest, &input[end..], vars) {
                    vars.insert(name.clone(), value);
                    return true;
                }
            }
            false
        }
    }
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_and_reserved() {
        let t = UriTemplate::parse("test://template/{id}/data").unwrap();
        assert_eq!(t.matches("test://template/123/data").unwrap()["id"], "123");
        assert!(t.matches("test://template/1/2/data").is_none());
        assert!(t.matches("test://template//data").is_none());
        let t = UriTemplate::parse("file:///{+path}").unwrap();
        assert_eq!(
            t.matches("file:///a/b%20c.txt").unwrap()["path"],
            "a/b c.txt"
        );
        assert!(UriTemplate::parse("x/{a}{b}").is_err());
        assert!(UriTemplate::parse("x/{?q}").is_err());
        assert!(UriTemplate::parse("x/{a").is_err());
    }
}
