//! RFC 6570 URI templates (level 4), for resource templates: parsed and checked at
//! registration, matched against a concrete URI at `resources/read` to recover the variables.
//!
//! Every operator is understood: `{var}` (one value of unreserved characters), `{+var}` and
//! `{#var}` (reserved characters allowed, so `/` too), `{.var}`, `{/var}`, `{;var}`,
//! `{?a,b}` and `{&c}` (query parameters, matched in any order and each optional), with the
//! `:N` prefix and `*` explode modifiers. Matching is the inverse of expansion: for any
//! values, matching the expanded URI gives values that expand to the same URI (tests check it
//! against the `iri-string` crate's expander). Values come back percent-decoded; a list
//! (explode, or several query parameters of one name) comes back joined with `,`.
//!
//! `{var}` and `{+var}` must match a non-empty value (a URI that leaves them empty is not one
//! of the template's resources); the other operators' variables may be absent. Templates
//! whose matches could be split more than one way (two expressions in a row where the first
//! one's values may contain what starts the second, like `{a}{b}` or `{+path}{/x}`) are
//! rejected at registration.
//!
//! Matching runs in time linear in the URI's length, whatever the template: the template
//! compiles to one anchored regular expression (one group per expression, each as wide as the
//! characters its expansion may hold) that splits the URI, then each group is decoded on its
//! own. A backtracking matcher took exponential time on a hostile `resources/read` URI.
//!
//! Not here: which resource a URI reads (`methods/input.rs`).

use std::collections::BTreeMap;

use regex::Regex;

use crate::config_error::{ConfigError, Kind as ConfigKind};

/// A parsed template.
#[derive(Debug, Clone)]
pub struct UriTemplate {
    source: String,
    parts: Vec<Part>,
    /// `^lit(expr)lit(expr)…$`: group `n` is the `n`-th expression's stretch of the URI.
    splitter: Regex,
}

impl PartialEq for UriTemplate {
    fn eq(&self, other: &Self) -> bool {
        // The parts and the splitter are functions of the source.
        self.source == other.source
    }
}

impl Eq for UriTemplate {}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Expr(Expr),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Simple,
    Reserved,
    Fragment,
    Label,
    Path,
    Param,
    Query,
    Continuation,
}

impl Op {
    fn from_char(c: char) -> Option<Op> {
        Some(match c {
            '+' => Op::Reserved,
            '#' => Op::Fragment,
            '.' => Op::Label,
            '/' => Op::Path,
            ';' => Op::Param,
            '?' => Op::Query,
            '&' => Op::Continuation,
            _ => return None,
        })
    }
    /// What the expansion starts with.
    fn first(self) -> Option<char> {
        match self {
            Op::Simple | Op::Reserved => None,
            Op::Fragment => Some('#'),
            Op::Label => Some('.'),
            Op::Path => Some('/'),
            Op::Param => Some(';'),
            Op::Query => Some('?'),
            Op::Continuation => Some('&'),
        }
    }
    /// What separates values.
    fn sep(self) -> char {
        match self {
            Op::Simple | Op::Reserved | Op::Fragment => ',',
            Op::Label => '.',
            Op::Path => '/',
            Op::Param => ';',
            Op::Query | Op::Continuation => '&',
        }
    }
    fn named(self) -> bool {
        matches!(self, Op::Param | Op::Query | Op::Continuation)
    }
    /// Values may hold reserved characters unencoded.
    fn reserved(self) -> bool {
        matches!(self, Op::Reserved | Op::Fragment)
    }
    /// The variable must match a non-empty value.
    fn required(self) -> bool {
        matches!(self, Op::Simple | Op::Reserved)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct VarSpec {
    name: String,
    explode: bool,
    prefix: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Expr {
    op: Op,
    vars: Vec<VarSpec>,
}

fn is_unreserved(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~')
}

/// RFC 3986 `reserved` (gen-delims and sub-delims).
const RESERVED: [char; 18] = [
    ':', '/', '?', '#', '[', ']', '@', '!', '$', '&', '\'', '(', ')', '*', '+', ',', ';', '=',
];

fn is_reserved(c: char) -> bool {
    RESERVED.contains(&c)
}

impl Expr {
    /// The regex of this expression's stretch of a URI: the shape of its expansion (the
    /// operator's first character, values of the characters the operator lets through,
    /// separators, and for query-like operators `name=` pairs of this expression's names), so
    /// that the split the regex picks is one the values then decode from.
    fn pattern(&self) -> String {
        const UNRESERVED: &str = r"[A-Za-z0-9\-._~]|%[0-9A-Fa-f]{2}";
        const ANY_RESERVED: &str =
            r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2}|[^\x00-\x7F]";
        let esc = |c: char| regex::escape(c.encode_utf8(&mut [0; 4]));
        let value = if self.op.reserved() {
            format!("(?:{ANY_RESERVED})")
        } else {
            // `,` joins a non-exploded list's values.
            format!("(?:{UNRESERVED}|,)")
        };
        let body = if self.op.named() {
            let names: Vec<String> = self.vars.iter().map(|v| regex::escape(&v.name)).collect();
            let pair = if self.op == Op::Param {
                "(?:={value}*)?"
            } else {
                "={value}*"
            }
            .replace("{value}", &value);
            let item = format!("(?:{}){pair}", names.join("|"));
            format!("{item}(?:{}{item})*", esc(self.op.sep()))
        } else {
            format!("(?:{value}|{})*", esc(self.op.sep()))
        };
        match self.op.first() {
            Some(f) => format!("((?:{}{body})?)", esc(f)),
            None => format!("({body})"),
        }
    }

    /// True if the values of this expression may contain `c` (what decides ambiguity).
    fn values_may_contain(&self, c: char) -> bool {
        if self.op.reserved() {
            return is_reserved(c) || is_unreserved(c);
        }
        if self.vars.iter().any(|v| v.explode) && c == self.op.sep() {
            return true;
        }
        is_unreserved(c)
    }
}

impl UriTemplate {
    /// Parses and checks a template.
    pub fn parse(template: &str) -> Result<Self, ConfigError> {
        let err = |reason: &str| {
            ConfigError::from(ConfigKind::Template {
                template: template.to_owned(),
                reason: reason.to_owned(),
            })
        };
        let mut parts: Vec<Part> = Vec::new();
        let mut rest = template;
        while !rest.is_empty() {
            let start = rest.find('{').unwrap_or(rest.len());
            let literal = &rest[..start];
            if literal.contains('}') {
                return Err(err("unbalanced '}'"));
            }
            if literal
                .chars()
                .any(|c| c.is_whitespace() || c == '"' || c == '<' || c == '>')
            {
                return Err(err(
                    "literals must not contain spaces, quotes or angle brackets",
                ));
            }
            if !literal.is_empty() {
                parts.push(Part::Literal(literal.to_owned()));
            }
            if start == rest.len() {
                break;
            }
            let Some(end) = rest[start..].find('}') else {
                return Err(err("unclosed '{'"));
            };
            let body = &rest[start + 1..start + end];
            let expr = parse_expr(body).map_err(|r| err(&r))?;
            if let Some(Part::Expr(prev)) = parts.last() {
                let ambiguous = match expr.op.first() {
                    None => true,
                    Some(c) => prev.values_may_contain(c),
                };
                if ambiguous {
                    return Err(err(
                        "two expressions in a row whose values cannot be told apart",
                    ));
                }
            }
            parts.push(Part::Expr(expr));
            rest = &rest[start + end + 1..];
        }
        let mut pattern = String::from("^");
        for part in &parts {
            match part {
                Part::Literal(l) => pattern.push_str(&regex::escape(l)),
                Part::Expr(e) => pattern.push_str(&e.pattern()),
            }
        }
        pattern.push('$');
        let splitter = Regex::new(&pattern).map_err(|e| err(&format!("too complex: {e}")))?;
        Ok(UriTemplate {
            source: template.to_owned(),
            parts,
            splitter,
        })
    }

    /// The template text.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The variable names, in order of appearance.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().flat_map(|p| match p {
            Part::Expr(e) => e.vars.iter().map(|v| v.name.as_str()).collect::<Vec<_>>(),
            Part::Literal(_) => Vec::new(),
        })
    }

    /// Matches a URI, returning the (percent-decoded) variables, or `None` if the URI is not
    /// an expansion of this template.
    pub fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        // The split is the one a longest-first backtracking search would try first; a
        // stretch that then fails to decode fails the match.
        let groups = self.splitter.captures(uri)?;
        let exprs = self.parts.iter().filter_map(|p| match p {
            Part::Expr(e) => Some(e),
            Part::Literal(_) => None,
        });
        let mut vars = BTreeMap::new();
        for (e, stretch) in exprs.zip(groups.iter().skip(1)) {
            if !match_expr(e, stretch.map_or("", |m| m.as_str()), &mut vars) {
                return None;
            }
        }
        Some(vars)
    }
}

fn parse_expr(body: &str) -> Result<Expr, String> {
    let mut chars = body.chars();
    let (op, list) = match chars.next().and_then(Op::from_char) {
        Some(op) => (op, chars.as_str()),
        None => (Op::Simple, body),
    };
    if matches!(body.chars().next(), Some('=' | ',' | '!' | '@' | '|')) {
        return Err("this operator is reserved by RFC 6570".into());
    }
    if list.is_empty() {
        return Err("an expression needs a variable".into());
    }
    let mut vars = Vec::new();
    for spec in list.split(',') {
        let (name, explode, prefix) = if let Some(n) = spec.strip_suffix('*') {
            (n, true, None)
        } else if let Some((n, len)) = spec.split_once(':') {
            let len: usize = len
                .parse()
                .ok()
                .filter(|l| (1..10000).contains(l))
                .ok_or("a prefix length is 1 to 9999")?;
            (n, false, Some(len))
        } else {
            (spec, false, None)
        };
        let valid = !name.is_empty()
            && !name.starts_with('.')
            && !name.ends_with('.')
            && !name.contains("..")
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'%');
        if !valid {
            return Err(format!("invalid variable name {name:?}"));
        }
        vars.push(VarSpec {
            name: name.to_owned(),
            explode,
            prefix,
        });
    }
    Ok(Expr { op, vars })
}

/// Records a variable's value; a name that appears twice must match the same value.
fn bind(vars: &mut BTreeMap<String, String>, name: &str, value: String) -> bool {
    match vars.get(name) {
        Some(v) => *v == value,
        None => {
            vars.insert(name.to_owned(), value);
            true
        }
    }
}

/// Decodes one value, checking that it only holds what this operator lets through.
fn decode_value(op: Op, raw: &str, prefix: Option<usize>) -> Option<String> {
    let ok = raw.chars().all(|c| {
        is_unreserved(c) || c == '%' || (op.reserved() && (is_reserved(c) || !c.is_ascii()))
    });
    if !ok {
        return None;
    }
    let v = percent_decode(raw)?;
    if prefix.is_some_and(|n| v.chars().count() > n) {
        return None;
    }
    Some(v)
}

fn match_expr(e: &Expr, s: &str, vars: &mut BTreeMap<String, String>) -> bool {
    if s.is_empty() {
        // Every variable undefined.
        return !e.op.required();
    }
    let body = match e.op.first() {
        Some(f) => match s.strip_prefix(f) {
            Some(b) => b,
            None => return false,
        },
        None => s,
    };
    if e.op.named() {
        return match_named(e, body, vars);
    }
    let items: Vec<&str> = body.split(e.op.sep()).collect();
    if e.vars.len() == 1 {
        let v = &e.vars[0];
        // One variable takes it all: a list (explode or not) comes back joined with ','.
        let values: Option<Vec<String>> = if v.explode {
            items.iter().map(|i| decode_value(e.op, i, None)).collect()
        } else {
            // Not exploded: the whole body is the value (a list in it is joined with ',').
            decode_value(e.op, body, v.prefix).map(|x| vec![x])
        };
        return match values {
            Some(vals) if !(e.op.required() && vals.concat().is_empty()) => {
                bind(vars, &v.name, vals.join(","))
            }
            _ => false,
        };
    }
    // Several variables: the items in order; an exploded one takes what the others leave.
    let mut i = 0;
    for (n, v) in e.vars.iter().enumerate() {
        let left_after = e.vars[n + 1..].iter().filter(|x| !x.explode).count();
        let take = if v.explode {
            items.len().saturating_sub(i + left_after)
        } else {
            usize::from(i < items.len())
        };
        let mut vals = Vec::new();
        for item in &items[i..i + take] {
            match decode_value(e.op, item, v.prefix) {
                Some(x) => vals.push(x),
                None => return false,
            }
        }
        i += take;
        if !vals.is_empty() && !bind(vars, &v.name, vals.join(",")) {
            return false;
        }
    }
    i == items.len()
}

/// `;a=1;b`, `?a=1&b=2`, `&c=3`: pairs in any order; each name must be one of the variables.
fn match_named(e: &Expr, body: &str, vars: &mut BTreeMap<String, String>) -> bool {
    let mut found: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for item in body.split(e.op.sep()) {
        let (name, raw) = match item.split_once('=') {
            Some((n, v)) => (n, v),
            None if e.op == Op::Param => (item, ""),
            None => return false,
        };
        let Some(spec) = e.vars.iter().find(|v| v.name == name) else {
            return false;
        };
        let Some(value) = decode_value(e.op, raw, spec.prefix) else {
            return false;
        };
        let entry = found.entry(spec.name.as_str()).or_default();
        if !entry.is_empty() && !spec.explode {
            // A non-exploded list is one `name=a,b` pair; a repeated name is an explode.
            return false;
        }
        entry.push(value);
    }
    found
        .into_iter()
        .all(|(name, values)| bind(vars, name, values.join(",")))
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

    fn m(t: &str, uri: &str) -> Option<BTreeMap<String, String>> {
        UriTemplate::parse(t).unwrap().matches(uri)
    }

    #[test]
    fn every_operator() {
        assert_eq!(
            m("test://template/{id}/data", "test://template/123/data").unwrap()["id"],
            "123"
        );
        assert!(m("test://template/{id}/data", "test://template/1/2/data").is_none());
        assert!(m("test://template/{id}/data", "test://template//data").is_none());
        assert_eq!(
            m("file:///{+path}", "file:///a/b%20c.txt").unwrap()["path"],
            "a/b c.txt"
        );
        assert_eq!(
            m("doc://x{#frag}", "doc://x#sec/1").unwrap()["frag"],
            "sec/1"
        );
        assert!(m("doc://x{#frag}", "doc://x").unwrap().is_empty());
        assert_eq!(
            m("f://report{.ext}", "f://report.pdf").unwrap()["ext"],
            "pdf"
        );
        let p = m("repo://r{/owner,name}", "repo://r/octo/hello").unwrap();
        assert_eq!((p["owner"].as_str(), p["name"].as_str()), ("octo", "hello"));
        assert_eq!(
            m("fs://root{/seg*}", "fs://root/a/b/c").unwrap()["seg"],
            "a,b,c"
        );
        assert_eq!(m("m://x{;v,w}", "m://x;v=1;w").unwrap()["w"], "");
        // Query parameters: in any order, each optional, unknown ones refused.
        let q = m(
            "search://items{?q,lang}",
            "search://items?lang=en&q=rust%20mcp",
        )
        .unwrap();
        assert_eq!((q["q"].as_str(), q["lang"].as_str()), ("rust mcp", "en"));
        assert_eq!(
            m("search://items{?q,lang}", "search://items?q=x")
                .unwrap()
                .len(),
            1
        );
        assert!(
            m("search://items{?q,lang}", "search://items")
                .unwrap()
                .is_empty()
        );
        assert!(m("search://items{?q,lang}", "search://items?other=1").is_none());
        let c = m("s://i?fixed=1{&page}", "s://i?fixed=1&page=2").unwrap();
        assert_eq!(c["page"], "2");
        let both = m("s://i{?q}{&page}", "s://i?q=a&page=2").unwrap();
        assert_eq!((both["q"].as_str(), both["page"].as_str()), ("a", "2"));
        assert_eq!(
            m("s://i{?tag*}", "s://i?tag=a&tag=b").unwrap()["tag"],
            "a,b"
        );
        assert_eq!(m("p://{code:3}", "p://abc").unwrap()["code"], "abc");
        assert!(m("p://{code:3}", "p://abcd").is_none());
        assert_eq!(m("x://{a}/{a}", "x://1/1").unwrap()["a"], "1");
        assert_eq!(m("x://{a}", "x://%C3%A9t%C3%A9").unwrap()["a"], "été");
        assert!(m("x://{a}", "x://%C3").is_none(), "not UTF-8");
        assert!(
            m("x://{a}", "x://a b").is_none(),
            "spaces are encoded in URIs"
        );
        assert!(m("x://{a}/{a}", "x://1/2").is_none());
    }

    #[test]
    fn hostile_uris_match_in_linear_time() {
        // Found by the fuzzer: a backtracking matcher tried every split of every `-`.
        let t = UriTemplate::parse("x:{a}-{b}-{c}-{d}-{e}-{f}-{g}-{h}!").unwrap();
        let uri = format!("x:{}a", "a-".repeat(20_000));
        assert!(t.matches(&uri).is_none());
        let ok = t.matches(&format!("{uri}!")).unwrap();
        assert_eq!(ok["h"], "a");
    }
}
