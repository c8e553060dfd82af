//! `x-mcp-header` (2026-07-28, SEP-2243): tool arguments a modern HTTP client mirrors into
//! `Mcp-Param-{Name}` headers, read from the tool's `inputSchema`.
//!
//! A tool whose annotations break the rules is dropped from the list (the spec's MUST for
//! HTTP clients); [`param_headers`] finds the annotations of a valid tool and
//! [`mirror_values`] turns a call's arguments into header values.

use serde_json::{Map, Value};

use crate::protocol::Tool;

/// One mirrored argument: the header suffix and the path of `properties` keys to its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ParamHeader {
    /// `{Name}` of `Mcp-Param-{Name}`.
    pub(crate) name: String,
    /// Keys from the arguments object down to the value.
    pub(crate) path: Vec<String>,
}

const KEY: &str = "x-mcp-header";
const LIMIT: i64 = (1 << 53) - 1;

fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// The mirrored arguments of a tool, or why its annotations are invalid.
pub(crate) fn param_headers(tool: &Tool) -> Result<Vec<ParamHeader>, String> {
    let mut found = Vec::new();
    walk(
        &Value::Object(tool.input_schema.clone()),
        &mut Vec::new(),
        true,
        &mut found,
    )?;
    let mut seen = std::collections::HashSet::new();
    for h in &found {
        if !seen.insert(h.name.to_ascii_lowercase()) {
            return Err(format!("two arguments use the header name {:?}", h.name));
        }
    }
    Ok(found)
}

/// Visits a schema. `on_chain` is true while the path from the root is made only of
/// `properties` steps: only there may an annotation stand.
fn walk(
    schema: &Value,
    path: &mut Vec<String>,
    on_chain: bool,
    out: &mut Vec<ParamHeader>,
) -> Result<(), String> {
    match schema {
        Value::Object(map) => {
            if let Some(annotation) = map.get(KEY) {
                if !on_chain || path.is_empty() {
                    return Err(format!("{KEY} may only annotate a property (at {path:?})"));
                }
                let name = annotation
                    .as_str()
                    .ok_or_else(|| format!("{KEY} must be a string"))?;
                if name.is_empty() || !name.chars().all(is_tchar) {
                    return Err(format!("{KEY} {name:?} is not a valid header name"));
                }
                let primitive = matches!(
                    map.get("type").and_then(Value::as_str),
                    Some("string" | "integer" | "boolean")
                );
                if !primitive {
                    return Err(format!(
                        "{KEY} {name:?} annotates a value that is not a string, integer or boolean"
                    ));
                }
                out.push(ParamHeader {
                    name: name.to_owned(),
                    path: path.clone(),
                });
            }
            for (k, v) in map {
                if k == "properties" {
                    if let Value::Object(props) = v {
                        for (name, sub) in props {
                            path.push(name.clone());
                            walk(sub, path, on_chain, out)?;
                            path.pop();
                        }
                    }
                } else if k != KEY {
                    walk(v, path, false, out)?;
                }
            }
            Ok(())
        }
        Value::Array(items) => {
            for v in items {
                walk(v, path, false, out)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The `Mcp-Param-*` header values of a call: `(header name, plain value)` for every mirrored
/// argument that is present and not null.
pub(crate) fn mirror_values(
    headers: &[ParamHeader],
    arguments: Option<&Map<String, Value>>,
) -> Vec<(String, String)> {
    let Some(args) = arguments else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for h in headers {
        let mut cur = args.get(h.path[0].as_str());
        for key in &h.path[1..] {
            cur = cur.and_then(|v| v.get(key.as_str()));
        }
        let text = match cur {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Bool(b)) => b.to_string(),
            Some(Value::Number(n)) => match n.as_i64() {
                Some(i) if (-LIMIT..=LIMIT).contains(&i) => i.to_string(),
                _ => continue,
            },
            _ => continue,
        };
        out.push((format!("Mcp-Param-{}", h.name), text));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(schema: Value) -> Tool {
        let Value::Object(m) = schema else { panic!() };
        Tool::new("t", "d").with_input_schema(m)
    }

    #[test]
    fn finds_and_mirrors() {
        let t = tool(json!({"type":"object","properties":{
            "region":{"type":"string","x-mcp-header":"Region"},
            "opts":{"type":"object","properties":{"n":{"type":"integer","x-mcp-header":"N"}}},
            "plain":{"type":"string"}}}));
        let h = param_headers(&t).unwrap();
        assert_eq!(h.len(), 2);
        let args = json!({"region":"eu","opts":{"n":7},"plain":"x"});
        let mut v = mirror_values(&h, args.as_object());
        v.sort();
        assert_eq!(
            v,
            vec![
                ("Mcp-Param-N".to_owned(), "7".to_owned()),
                ("Mcp-Param-Region".to_owned(), "eu".to_owned())
            ]
        );
        assert!(mirror_values(&h, json!({"region":null}).as_object()).is_empty());
    }

    #[test]
    fn rejects_invalid_annotations() {
        for bad in [
            json!({"type":"object","properties":{"a":{"type":"number","x-mcp-header":"A"}}}),
            json!({"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A B"}}}),
            json!({"type":"object","properties":{"a":{"type":"string","x-mcp-header":""}}}),
            json!({"type":"object","properties":{"a":{"type":"array","items":{"type":"string","x-mcp-header":"A"}}}}),
            json!({"type":"object","oneOf":[{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}]}),
            json!({"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A"},"b":{"type":"string","x-mcp-header":"a"}}}),
        ] {
            assert!(param_headers(&tool(bad.clone())).is_err(), "{bad}");
        }
    }
}
