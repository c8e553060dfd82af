//! HTTP header mirrors of request values (2026-07-28, SEP-2243), one definition for client and
//! server: the value encoding of the `Mcp-*` headers (plain, or `=?base64?…?=`), and the
//! `x-mcp-header` annotation that mirrors a tool argument into an `Mcp-Param-{Name}` header.
//!
//! The client reads a tool's annotations with [`ParamHeader::of_schema`] and sends
//! [`ParamHeader::mirror_text`] of each argument, encoded with [`encode_header_value`]; the
//! server reads the same annotations when the tool is registered and checks each header
//! against the body with [`ParamHeader::verify`] before the handler runs.
//!
//! Not here: which headers a transport sends or requires (`transport::http`).

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value};

use super::jsonrpc::{DecodeError, HeaderMismatch};
use crate::config_error::{ConfigError, Kind as ConfigKind};

/// The schema keyword that mirrors a property into a header.
pub const X_MCP_HEADER: &str = "x-mcp-header";

/// The prefix of a mirrored argument's header name.
pub const PARAM_HEADER_PREFIX: &str = "Mcp-Param-";

/// The largest integer a header mirrors (JSON's exact integers, ±(2^53 − 1)).
const INTEGER_LIMIT: i64 = (1 << 53) - 1;

/// The markers of an encoded header value.
const SENTINEL_START: &str = "=?base64?";
const SENTINEL_END: &str = "?=";

/// A header value as the wire carries it: the value itself when it is printable ASCII without
/// surrounding whitespace, else `=?base64?{standard Base64 of its UTF-8}?=` (also when the
/// plain value would read as that form).
pub fn encode_header_value(value: &str) -> Cow<'_, str> {
    let looks_encoded = value.starts_with(SENTINEL_START) && value.ends_with(SENTINEL_END);
    let plain = is_header_text(value.as_bytes())
        && !value.starts_with([' ', '\t'])
        && !value.ends_with([' ', '\t'])
        && !looks_encoded;
    if plain {
        Cow::Borrowed(value)
    } else {
        Cow::Owned(format!(
            "{SENTINEL_START}{}{SENTINEL_END}",
            STANDARD.encode(value)
        ))
    }
}

/// Visible ASCII, spaces and tabs: what a header value may hold as is.
fn is_header_text(bytes: &[u8]) -> bool {
    bytes
        .iter()
        .all(|&b| b == b' ' || b == b'\t' || (0x21..=0x7e).contains(&b))
}

/// The value a header carries: surrounding whitespace dropped (RFC 9110 §5.5), then a
/// `=?base64?…?=` value decoded (strict standard Base64: padding and alphabet checked, the
/// bytes UTF-8). `None` when the encoded form does not decode.
pub fn decode_header_value(raw: &str) -> Option<Cow<'_, str>> {
    let v = raw.trim_matches([' ', '\t']);
    match v
        .strip_prefix(SENTINEL_START)
        .and_then(|r| r.strip_suffix(SENTINEL_END))
    {
        Some(b64) => STANDARD
            .decode(b64)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .map(Cow::Owned),
        None => Some(Cow::Borrowed(v)),
    }
}

/// An `x-mcp-header` annotation that breaks SEP-2243's rules, for `reason` (the server
/// refuses to register the tool; a client drops it from the list).
fn invalid(reason: String) -> ConfigError {
    ConfigKind::ParamHeader { tool: None, reason }.into()
}

/// A tool argument mirrored into an `Mcp-Param-{name}` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamHeader {
    name: String,
    header: String,
    path: Vec<String>,
    kind: Kind,
}

/// The primitive type of a mirrored argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    String,
    Integer,
    Boolean,
}

fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

impl ParamHeader {
    /// The mirrored arguments of a tool's `inputSchema` (in the order of its keys); an error when an
    /// annotation breaks SEP-2243's rules: a non-empty header token, unique regardless of
    /// case, on a `string`, `integer` or `boolean` property reached from the root through
    /// `properties` only (no `items`, `anyOf`, `$ref`, …).
    pub fn of_schema(schema: &Map<String, Value>) -> Result<Vec<ParamHeader>, ConfigError> {
        let mut found = Vec::new();
        walk(schema, &mut Vec::new(), true, &mut found)?;
        let mut seen = std::collections::HashSet::new();
        for h in &found {
            if !seen.insert(h.name.to_ascii_lowercase()) {
                return Err(invalid(format!(
                    "two arguments use the header name {:?}",
                    h.name
                )));
            }
        }
        Ok(found)
    }

    /// `{Name}` of `Mcp-Param-{Name}`, as the annotation spells it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The header's full name, `Mcp-Param-{Name}` (header names compare regardless of case).
    pub fn header_name(&self) -> &str {
        &self.header
    }

    /// The `properties` keys from the arguments object down to the value.
    pub fn path(&self) -> &[String] {
        &self.path
    }

    /// The argument in a call's arguments, if present and not null.
    pub fn value_in<'a>(&self, arguments: &'a Map<String, Value>) -> Option<&'a Value> {
        let (first, rest) = self.path.split_first()?;
        let mut cur = arguments.get(first.as_str())?;
        for key in rest {
            cur = cur.get(key.as_str())?;
        }
        (!cur.is_null()).then_some(cur)
    }

    /// The header's plain value for a call: the argument as text (a string as is, an integer
    /// in decimal, a boolean as `true`/`false`); `None` when the argument is absent, null or
    /// of another type (nothing is mirrored). Encode it with [`encode_header_value`].
    pub fn mirror_text(&self, arguments: &Map<String, Value>) -> Option<String> {
        match (self.kind, self.value_in(arguments)?) {
            (Kind::String, Value::String(s)) => Some(s.clone()),
            (Kind::Boolean, Value::Bool(b)) => Some(b.to_string()),
            (Kind::Integer, Value::Number(n)) => n
                .as_i64()
                .filter(|i| (-INTEGER_LIMIT..=INTEGER_LIMIT).contains(i))
                .map(|i| i.to_string()),
            _ => None,
        }
    }

    /// Checks the header a request carried against its body: `values` are every value of
    /// the header (none when it is absent). Absent or null in the body means the header must
    /// be absent; otherwise it must be there once, decode, and equal the argument (integers
    /// compare as numbers). An argument of the wrong type is left to the schema validation.
    pub fn verify(
        &self,
        arguments: &Map<String, Value>,
        values: &[&[u8]],
    ) -> Result<(), DecodeError> {
        let mismatch = |how| DecodeError::param_header(self.header.clone(), how);
        let body = self.value_in(arguments);
        let raw = match values {
            [] => {
                return match body {
                    Some(_) => Err(mismatch(HeaderMismatch::Missing)),
                    None => Ok(()),
                };
            }
            [one] => *one,
            _ => return Err(mismatch(HeaderMismatch::Invalid)),
        };
        // A header value is visible ASCII, spaces and tabs; anything else is refused before
        // it is compared (a client encodes such values).
        let text = std::str::from_utf8(raw)
            .ok()
            .filter(|t| is_header_text(t.as_bytes()))
            .and_then(decode_header_value)
            .ok_or_else(|| mismatch(HeaderMismatch::Invalid))?;
        let Some(body) = body else {
            return Err(mismatch(HeaderMismatch::Unexpected));
        };
        let same = match (self.kind, body) {
            (Kind::String, Value::String(s)) => *s == text,
            (Kind::Boolean, Value::Bool(b)) => text == if *b { "true" } else { "false" },
            (Kind::Integer, Value::Number(n)) => {
                n.as_i64().is_some() && text.parse::<i64>().ok() == n.as_i64()
            }
            // The schema validation refuses an argument of another type.
            _ => true,
        };
        if same {
            Ok(())
        } else {
            Err(mismatch(HeaderMismatch::Differs))
        }
    }
}

/// Visits a schema. `on_chain` is true while the path from the root is made only of
/// `properties` steps: only there may an annotation stand.
fn walk(
    schema: &Map<String, Value>,
    path: &mut Vec<String>,
    on_chain: bool,
    out: &mut Vec<ParamHeader>,
) -> Result<(), ConfigError> {
    if let Some(annotation) = schema.get(X_MCP_HEADER) {
        if !on_chain || path.is_empty() {
            return Err(invalid(format!(
                "{X_MCP_HEADER} may only annotate a property reached through `properties` (at {path:?})"
            )));
        }
        let name = annotation
            .as_str()
            .ok_or_else(|| invalid(format!("{X_MCP_HEADER} must be a string")))?;
        if name.is_empty() || !name.chars().all(is_tchar) {
            return Err(invalid(format!("{name:?} is not a valid header name")));
        }
        let kind = match primitive_type(schema.get("type")) {
            Some("string") => Kind::String,
            Some("integer") => Kind::Integer,
            Some("boolean") => Kind::Boolean,
            _ => {
                return Err(invalid(format!(
                    "{name:?} annotates a value that is not a string, integer or boolean"
                )));
            }
        };
        out.push(ParamHeader {
            name: name.to_owned(),
            header: format!("{PARAM_HEADER_PREFIX}{name}"),
            path: path.clone(),
            kind,
        });
    }
    for (k, v) in schema {
        match (k.as_str(), v) {
            (X_MCP_HEADER, _) => {}
            ("properties", Value::Object(props)) => {
                for (name, sub) in props {
                    if let Value::Object(sub) = sub {
                        path.push(name.clone());
                        walk(sub, path, on_chain, out)?;
                        path.pop();
                    }
                }
            }
            (_, v) => walk_off_chain(v, path, out)?,
        }
    }
    Ok(())
}

/// The one primitive type a `type` keyword names: `"T"`, or `["T", "null"]` (an optional
/// argument as typed Rust inputs derive it; null means "not mirrored").
fn primitive_type(t: Option<&Value>) -> Option<&str> {
    match t? {
        Value::String(s) => Some(s),
        Value::Array(items) => {
            let mut named = items
                .iter()
                .filter_map(Value::as_str)
                .filter(|t| *t != "null");
            match (named.next(), named.next()) {
                (Some(t), None) if items.len() <= 2 && items.iter().all(Value::is_string) => {
                    Some(t)
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// Any other keyword's subschemas: an annotation there is an error.
fn walk_off_chain(
    v: &Value,
    path: &mut Vec<String>,
    out: &mut Vec<ParamHeader>,
) -> Result<(), ConfigError> {
    match v {
        Value::Object(m) => walk(m, path, false, out),
        Value::Array(items) => items
            .iter()
            .try_for_each(|item| walk_off_chain(item, path, out)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    fn args(v: Value) -> Map<String, Value> {
        schema(v)
    }

    #[test]
    fn values_encode_and_decode() {
        assert_eq!(encode_header_value("plain"), "plain");
        assert_eq!(encode_header_value("élé"), "=?base64?w6lsw6k=?=");
        assert_eq!(encode_header_value(" x"), "=?base64?IHg=?=");
        assert_eq!(encode_header_value("a\nb"), "=?base64?YQpi?=");
        assert_eq!(
            encode_header_value("=?base64?abc?="),
            "=?base64?PT9iYXNlNjQ/YWJjPz0=?="
        );
        for v in ["plain", "élé", " x", "a\nb", "=?base64?abc?=", "tab\there"] {
            assert_eq!(
                decode_header_value(&encode_header_value(v)).as_deref(),
                Some(v)
            );
        }
        assert_eq!(
            decode_header_value("  spaced \t").as_deref(),
            Some("spaced")
        );
        // Literal forms: no prefix, or no suffix.
        assert_eq!(decode_header_value("SGVsbG8=").as_deref(), Some("SGVsbG8="));
        assert_eq!(
            decode_header_value("=?base64?SGVsbG8=").as_deref(),
            Some("=?base64?SGVsbG8=")
        );
        // Strict Base64: padding, alphabet, UTF-8.
        assert_eq!(
            decode_header_value("=?base64?SGVsbG8=?=").as_deref(),
            Some("Hello")
        );
        assert_eq!(decode_header_value("=?base64?SGVsbG8?="), None);
        assert_eq!(decode_header_value("=?base64?SGVs!!!bG8=?="), None);
        assert_eq!(decode_header_value("=?base64?/w==?="), None);
    }

    #[test]
    fn annotations_are_found_on_property_chains() {
        let s = schema(json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "opts": {"type": "object", "properties": {
                "n": {"type": "integer", "x-mcp-header": "N"},
                "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"}
            }},
            "plain": {"type": "string"}
        }}));
        let found = ParamHeader::of_schema(&s).unwrap();
        let got: Vec<(&str, &str, Vec<&str>)> = found
            .iter()
            .map(|h| {
                (
                    h.name(),
                    h.header_name(),
                    h.path().iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("Dry-Run", "Mcp-Param-Dry-Run", vec!["opts", "dry"]),
                ("N", "Mcp-Param-N", vec!["opts", "n"]),
                ("Region", "Mcp-Param-Region", vec!["region"]),
            ]
        );
        let a = args(json!({"region": "eu", "opts": {"n": 42, "dry": true}}));
        let texts: Vec<Option<String>> = found.iter().map(|h| h.mirror_text(&a)).collect();
        assert_eq!(
            texts,
            vec![Some("true".into()), Some("42".into()), Some("eu".into())]
        );
        // Absent, null and out-of-range values are not mirrored.
        let a = args(json!({"region": null, "opts": {"n": 9007199254740993_i64}}));
        assert!(found.iter().all(|h| h.mirror_text(&a).is_none()));
        assert!(
            ParamHeader::of_schema(&schema(json!({"type": "object"})))
                .unwrap()
                .is_empty()
        );
        // An optional argument (`Option<T>` derives `[T, "null"]`) may be mirrored.
        let optional = schema(json!({"type": "object", "properties": {
            "p": {"type": ["integer", "null"], "x-mcp-header": "P"}
        }}));
        let p = ParamHeader::of_schema(&optional).unwrap();
        assert_eq!(
            p[0].mirror_text(&args(json!({"p": 3}))).as_deref(),
            Some("3")
        );
        assert_eq!(p[0].mirror_text(&args(json!({"p": null}))), None);
    }

    #[test]
    fn invalid_annotations_are_refused() {
        for bad in [
            json!({"type":"object","properties":{"a":{"type":"number","x-mcp-header":"A"}}}),
            json!({"type":"object","properties":{"a":{"type":["integer","string"],"x-mcp-header":"A"}}}),
            json!({"type":"object","properties":{"a":{"type":["number","null"],"x-mcp-header":"A"}}}),
            json!({"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A B"}}}),
            json!({"type":"object","properties":{"a":{"type":"string","x-mcp-header":""}}}),
            json!({"type":"object","properties":{"a":{"type":"string","x-mcp-header":7}}}),
            json!({"type":"object","properties":{"a":{"type":"array","items":{"type":"string","x-mcp-header":"A"}}}}),
            json!({"type":"object","oneOf":[{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}]}),
            json!({"type":"object","$defs":{"d":{"type":"string","x-mcp-header":"A"}}}),
            json!({"type":"object","x-mcp-header":"Root"}),
            json!({"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A"},"b":{"type":"string","x-mcp-header":"a"}}}),
        ] {
            assert!(
                ParamHeader::of_schema(&schema(bad.clone())).is_err(),
                "{bad}"
            );
        }
    }

    fn one(name: &str, kind: &str) -> ParamHeader {
        let s = schema(json!({"type": "object", "properties": {
            "v": {"type": kind, "x-mcp-header": name}
        }}));
        ParamHeader::of_schema(&s).unwrap().remove(0)
    }

    #[test]
    fn headers_are_checked_against_the_body() {
        let h = one("Region", "string");
        let body = args(json!({"v": "Hello"}));
        let ok = |v: &str| h.verify(&body, &[v.as_bytes()]);
        assert_eq!(ok("Hello"), Ok(()));
        assert_eq!(ok("  Hello  "), Ok(()));
        assert_eq!(ok("=?base64?SGVsbG8=?="), Ok(()));
        assert!(matches!(
            ok("=?base64?SGVsbG8?="),
            Err(e) if e.header_mismatch() == Some(HeaderMismatch::Invalid)
        ));
        assert!(matches!(
            ok("=?base64?SGVs!!!bG8=?="),
            Err(e) if e.header_mismatch() == Some(HeaderMismatch::Invalid)
        ));
        assert!(
            matches!(ok("hello"), Err(e) if e.header_mismatch() == Some(HeaderMismatch::Differs))
        );
        assert!(matches!(
            h.verify(&body, &[b"Hel\xfflo"]),
            Err(e) if e.header_mismatch() == Some(HeaderMismatch::Invalid)
        ));
        assert!(matches!(
            h.verify(&body, &[b"Hello", b"Hello"]),
            Err(e) if e.header_mismatch() == Some(HeaderMismatch::Invalid)
        ));
        assert!(matches!(
            h.verify(&body, &[]),
            Err(e) if e.header_mismatch() == Some(HeaderMismatch::Missing)
        ));
        // Absent or null in the body: no header expected, none allowed.
        for empty in [json!({}), json!({"v": null})] {
            assert_eq!(h.verify(&args(empty.clone()), &[]), Ok(()));
            assert!(matches!(
                h.verify(&args(empty), &[b"x"]),
                Err(e) if e.header_mismatch() == Some(HeaderMismatch::Unexpected)
            ));
        }
        // A literal that looks like the encoded form without its end is compared as is.
        let b64 = args(json!({"v": "=?base64?SGVsbG8="}));
        assert_eq!(h.verify(&b64, &[b"=?base64?SGVsbG8="]), Ok(()));

        let n = one("N", "integer");
        assert_eq!(n.verify(&args(json!({"v": 42})), &[b"42"]), Ok(()));
        assert_eq!(n.verify(&args(json!({"v": 42})), &[b"042"]), Ok(()));
        assert_eq!(n.verify(&args(json!({"v": -7})), &[b"-7"]), Ok(()));
        assert!(n.verify(&args(json!({"v": 42})), &[b"43"]).is_err());
        assert!(n.verify(&args(json!({"v": 42})), &[b"4x"]).is_err());

        let b = one("B", "boolean");
        assert_eq!(b.verify(&args(json!({"v": false})), &[b"false"]), Ok(()));
        assert!(b.verify(&args(json!({"v": false})), &[b"False"]).is_err());
        assert!(b.verify(&args(json!({"v": true})), &[b"1"]).is_err());
        assert_eq!(
            DecodeError::param_header("Mcp-Param-B".into(), HeaderMismatch::Missing).to_string(),
            "Header mismatch: Mcp-Param-B is required (the argument is present)"
        );
    }
}
