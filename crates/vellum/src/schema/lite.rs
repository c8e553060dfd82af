//! The built-in JSON Schema validator: compiling a schema into a flat list of nodes, each
//! with the rules its keywords assert; `$ref`s become indices into that list, so a
//! recursive schema compiles once and is never re-read while validating.
//!
//! Not here: applying the rules to an instance (`lite_check.rs`), string formats
//! (`format.rs`).

use std::collections::HashMap;

use regex::Regex;
use serde_json::{Number, Value};

use super::format::Format;
use crate::protocol::JsonObject;

/// How deeply schemas may nest inside one another; deeper is refused at registration.
const MAX_SCHEMA_DEPTH: usize = 64;
/// Past this much compiled regex a `pattern` is refused (the `regex` crate's own default
/// is 10 MiB; a tool schema has no use for more than a fraction of it).
const MAX_REGEX_BYTES: usize = 1 << 20;

/// A compiled schema.
pub(crate) struct Schema {
    pub(super) nodes: Vec<Node>,
    pub(super) root: usize,
}

/// One schema: `true`, `false`, or an object of keywords.
pub(super) enum Node {
    Always(bool),
    Rules(Box<Rules>),
}

/// The JSON types, as bits of [`Rules::types`].
pub(super) mod ty {
    pub(crate) const NULL: u8 = 1;
    pub(crate) const BOOLEAN: u8 = 2;
    pub(crate) const OBJECT: u8 = 4;
    pub(crate) const ARRAY: u8 = 8;
    pub(crate) const NUMBER: u8 = 16;
    pub(crate) const STRING: u8 = 32;
    /// A number with no fractional part (`1.0` included, as the spec says).
    pub(crate) const INTEGER: u8 = 64;
}

/// The assertions of one schema object; an absent keyword asserts nothing.
#[derive(Default)]
pub(super) struct Rules {
    /// Bits of [`ty`]; 0 for no `type` keyword.
    pub(super) types: u8,
    pub(super) enumeration: Option<Vec<Value>>,
    pub(super) constant: Option<Value>,
    // Objects.
    pub(super) properties: Vec<(String, usize)>,
    pub(super) pattern_properties: Vec<(Regex, usize)>,
    pub(super) additional_properties: Option<usize>,
    pub(super) required: Vec<String>,
    pub(super) property_names: Option<usize>,
    pub(super) min_properties: Option<u64>,
    pub(super) max_properties: Option<u64>,
    pub(super) dependent_required: Vec<(String, Vec<String>)>,
    pub(super) dependent_schemas: Vec<(String, usize)>,
    // Arrays.
    pub(super) prefix_items: Vec<usize>,
    /// The schema of every item past `prefix_items`.
    pub(super) items: Option<usize>,
    pub(super) min_items: Option<u64>,
    pub(super) max_items: Option<u64>,
    pub(super) unique_items: bool,
    pub(super) contains: Option<usize>,
    pub(super) min_contains: Option<u64>,
    pub(super) max_contains: Option<u64>,
    // Strings.
    pub(super) min_length: Option<u64>,
    pub(super) max_length: Option<u64>,
    pub(super) pattern: Option<(Regex, String)>,
    pub(super) format: Option<Format>,
    // Numbers.
    pub(super) minimum: Option<Number>,
    pub(super) maximum: Option<Number>,
    pub(super) exclusive_minimum: Option<Number>,
    pub(super) exclusive_maximum: Option<Number>,
    pub(super) multiple_of: Option<Number>,
    // Composition.
    pub(super) all_of: Vec<usize>,
    pub(super) any_of: Vec<usize>,
    pub(super) one_of: Vec<usize>,
    pub(super) not: Option<usize>,
    pub(super) if_then_else: Option<(usize, Option<usize>, Option<usize>)>,
    pub(super) reference: Option<usize>,
}

/// Keywords this validator does not implement: a schema using one is refused rather than
/// validated as if the keyword were absent.
const UNSUPPORTED: &[&str] = &[
    "unevaluatedProperties",
    "unevaluatedItems",
    "$dynamicRef",
    "$recursiveRef",
];

impl Schema {
    /// Compiles a schema; `formats` makes `format` an assertion.
    pub(crate) fn compile(schema: &JsonObject, formats: bool) -> Result<Schema, String> {
        let root = Value::Object(schema.clone());
        let mut c = Compiler {
            root: &root,
            nodes: Vec::new(),
            refs: HashMap::new(),
            formats,
        };
        let root_index = c.node(&root, 0)?;
        Ok(Schema {
            nodes: c.nodes,
            root: root_index,
        })
    }
}

struct Compiler<'a> {
    root: &'a Value,
    nodes: Vec<Node>,
    /// `$ref` targets already compiled (or being compiled), by their JSON pointer.
    refs: HashMap<String, usize>,
    formats: bool,
}

fn bad(keyword: &str, why: &str) -> String {
    format!("`{keyword}` {why}")
}

fn count(keyword: &str, v: &Value) -> Result<u64, String> {
    // `2.0` is a valid count in the drafts that allow any integer-valued number.
    match (v.as_u64(), v.as_f64()) {
        (Some(n), _) => Ok(n),
        (None, Some(f)) if f >= 0.0 && f.fract() == 0.0 && f < u64::MAX as f64 => Ok(f as u64),
        _ => Err(bad(keyword, "must be a non-negative integer")),
    }
}

fn number(keyword: &str, v: &Value) -> Result<Number, String> {
    match v {
        Value::Number(n) => Ok(n.clone()),
        _ => Err(bad(keyword, "must be a number")),
    }
}

fn strings(keyword: &str, v: &Value) -> Result<Vec<String>, String> {
    v.as_array()
        .and_then(|a| {
            a.iter()
                .map(|s| s.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
        })
        .ok_or_else(|| bad(keyword, "must be an array of strings"))
}

fn regex(keyword: &str, pattern: &str) -> Result<Regex, String> {
    regex::RegexBuilder::new(pattern)
        .size_limit(MAX_REGEX_BYTES)
        .build()
        .map_err(|e| {
            format!(
                "`{keyword}` {pattern:?} is not a regular expression this build reads ({e}); \
                 ECMA-262 syntax such as lookaround needs vellum's `json-schema` feature"
            )
        })
}

fn type_bit(name: &str) -> Result<u8, String> {
    Ok(match name {
        "null" => ty::NULL,
        "boolean" => ty::BOOLEAN,
        "object" => ty::OBJECT,
        "array" => ty::ARRAY,
        "number" => ty::NUMBER,
        "string" => ty::STRING,
        "integer" => ty::INTEGER,
        other => return Err(format!("`type` {other:?} is not a JSON Schema type")),
    })
}

impl<'a> Compiler<'a> {
    /// Compiles one schema into a new node and returns its index.
    fn node(&mut self, schema: &'a Value, depth: usize) -> Result<usize, String> {
        let node = self.build(schema, depth)?;
        self.nodes.push(node);
        Ok(self.nodes.len() - 1)
    }

    fn nodes(&mut self, keyword: &str, v: &'a Value, depth: usize) -> Result<Vec<usize>, String> {
        let list = v
            .as_array()
            .filter(|a| !a.is_empty())
            .ok_or_else(|| bad(keyword, "must be a non-empty array of schemas"))?;
        list.iter().map(|s| self.node(s, depth)).collect()
    }

    fn node_map(
        &mut self,
        keyword: &str,
        v: &'a Value,
        depth: usize,
    ) -> Result<Vec<(String, usize)>, String> {
        let map = v
            .as_object()
            .ok_or_else(|| bad(keyword, "must be an object of schemas"))?;
        map.iter()
            .map(|(k, s)| Ok((k.clone(), self.node(s, depth)?)))
            .collect()
    }

    /// The node a `$ref` names: compiled the first time, shared afterwards (which is also
    /// what lets a schema refer to itself).
    fn reference(&mut self, r: &str, depth: usize) -> Result<usize, String> {
        if let Some(&i) = self.refs.get(r) {
            return Ok(i);
        }
        let Some(pointer) = r.strip_prefix('#') else {
            return Err(format!(
                "`$ref` {r:?} is not local to the schema (remote schemas are never fetched)"
            ));
        };
        let decoded = percent_decode(pointer);
        if !decoded.is_empty() && !decoded.starts_with('/') {
            return Err(format!(
                "`$ref` {r:?} names an anchor; only JSON-pointer refs (`#/$defs/...`) are \
                 read without vellum's `json-schema` feature"
            ));
        }
        let target = self
            .root
            .pointer(&decoded)
            .ok_or_else(|| format!("`$ref` {r:?} points at nothing in the schema"))?;
        // Reserve the slot first: a ref inside the target that names it again finds it.
        self.nodes.push(Node::Always(true));
        let index = self.nodes.len() - 1;
        self.refs.insert(r.to_owned(), index);
        self.nodes[index] = self.build(target, depth)?;
        Ok(index)
    }

    fn build(&mut self, schema: &'a Value, depth: usize) -> Result<Node, String> {
        if depth > MAX_SCHEMA_DEPTH {
            return Err(format!(
                "the schema nests more than {MAX_SCHEMA_DEPTH} levels deep"
            ));
        }
        let obj = match schema {
            Value::Bool(b) => return Ok(Node::Always(*b)),
            Value::Object(o) => o,
            _ => return Err("a schema must be an object or a boolean".into()),
        };
        for k in UNSUPPORTED {
            if obj.contains_key(*k) {
                return Err(format!(
                    "`{k}` needs vellum's `json-schema` feature (the built-in validator \
                     does not implement it)"
                ));
            }
        }
        let d = depth + 1;
        let mut r = Rules::default();
        for (k, v) in obj {
            match k.as_str() {
                "type" => {
                    r.types = match v {
                        Value::String(s) => type_bit(s)?,
                        Value::Array(a) if !a.is_empty() => {
                            let mut bits = 0;
                            for t in a {
                                let name =
                                    t.as_str().ok_or_else(|| bad("type", "must name types"))?;
                                bits |= type_bit(name)?;
                            }
                            bits
                        }
                        _ => return Err(bad("type", "must be a type name or an array of them")),
                    }
                }
                "enum" => {
                    let a = v
                        .as_array()
                        .ok_or_else(|| bad("enum", "must be an array"))?;
                    r.enumeration = Some(a.clone());
                }
                "const" => r.constant = Some(v.clone()),
                "properties" => r.properties = self.node_map(k, v, d)?,
                "patternProperties" => {
                    for (p, s) in self.node_map(k, v, d)? {
                        r.pattern_properties.push((regex(k, &p)?, s));
                    }
                }
                "additionalProperties" => r.additional_properties = Some(self.node(v, d)?),
                "required" => r.required = strings(k, v)?,
                "propertyNames" => r.property_names = Some(self.node(v, d)?),
                "minProperties" => r.min_properties = Some(count(k, v)?),
                "maxProperties" => r.max_properties = Some(count(k, v)?),
                "dependentRequired" => {
                    let map = v
                        .as_object()
                        .ok_or_else(|| bad(k, "must be an object of string arrays"))?;
                    for (name, list) in map {
                        r.dependent_required.push((name.clone(), strings(k, list)?));
                    }
                }
                "dependentSchemas" => r.dependent_schemas = self.node_map(k, v, d)?,
                // Drafts 6 and 7: `dependentRequired` and `dependentSchemas` in one keyword.
                "dependencies" => {
                    let map = v.as_object().ok_or_else(|| bad(k, "must be an object"))?;
                    for (name, dep) in map {
                        if dep.is_array() {
                            r.dependent_required.push((name.clone(), strings(k, dep)?));
                        } else {
                            r.dependent_schemas.push((name.clone(), self.node(dep, d)?));
                        }
                    }
                }
                "prefixItems" => r.prefix_items = self.nodes(k, v, d)?,
                "items" => match v {
                    // Drafts before 2020-12: an array of schemas is the tuple form, and
                    // `additionalItems` covers the rest.
                    Value::Array(list) => {
                        r.prefix_items = list
                            .iter()
                            .map(|s| self.node(s, d))
                            .collect::<Result<_, _>>()?;
                        if let Some(rest) = obj.get("additionalItems") {
                            r.items = Some(self.node(rest, d)?);
                        }
                    }
                    _ => r.items = Some(self.node(v, d)?),
                },
                "minItems" => r.min_items = Some(count(k, v)?),
                "maxItems" => r.max_items = Some(count(k, v)?),
                "uniqueItems" => {
                    r.unique_items = v.as_bool().ok_or_else(|| bad(k, "must be a boolean"))?
                }
                "contains" => r.contains = Some(self.node(v, d)?),
                "minContains" => r.min_contains = Some(count(k, v)?),
                "maxContains" => r.max_contains = Some(count(k, v)?),
                "minLength" => r.min_length = Some(count(k, v)?),
                "maxLength" => r.max_length = Some(count(k, v)?),
                "pattern" => {
                    let p = v.as_str().ok_or_else(|| bad(k, "must be a string"))?;
                    r.pattern = Some((regex(k, p)?, p.to_owned()));
                }
                "format" if self.formats => {
                    let name = v.as_str().ok_or_else(|| bad(k, "must be a string"))?;
                    // Formats it does not know are annotations, as in every draft.
                    r.format = Format::named(name);
                }
                "minimum" => r.minimum = Some(number(k, v)?),
                "maximum" => r.maximum = Some(number(k, v)?),
                // Draft 4 spelled these as booleans modifying `minimum`/`maximum`.
                "exclusiveMinimum" => match v {
                    Value::Bool(_) => {}
                    _ => r.exclusive_minimum = Some(number(k, v)?),
                },
                "exclusiveMaximum" => match v {
                    Value::Bool(_) => {}
                    _ => r.exclusive_maximum = Some(number(k, v)?),
                },
                "multipleOf" => {
                    let n = number(k, v)?;
                    if n.as_f64().is_none_or(|f| f <= 0.0) {
                        return Err(bad(k, "must be greater than 0"));
                    }
                    r.multiple_of = Some(n);
                }
                "allOf" => r.all_of = self.nodes(k, v, d)?,
                "anyOf" => r.any_of = self.nodes(k, v, d)?,
                "oneOf" => r.one_of = self.nodes(k, v, d)?,
                "not" => r.not = Some(self.node(v, d)?),
                "if" => {
                    let cond = self.node(v, d)?;
                    let then = obj.get("then").map(|s| self.node(s, d)).transpose()?;
                    let otherwise = obj.get("else").map(|s| self.node(s, d)).transpose()?;
                    r.if_then_else = Some((cond, then, otherwise));
                }
                "$ref" => {
                    let target = v.as_str().ok_or_else(|| bad(k, "must be a string"))?;
                    r.reference = Some(self.reference(target, d)?);
                }
                // Annotations, the containers of subschemas reached by `$ref`, keywords read
                // with another (`additionalItems`, `then`, `else`), and unknown keywords,
                // which every draft ignores.
                _ => {}
            }
        }
        if obj.get("exclusiveMinimum") == Some(&Value::Bool(true)) {
            r.exclusive_minimum = r.minimum.take();
        }
        if obj.get("exclusiveMaximum") == Some(&Value::Bool(true)) {
            r.exclusive_maximum = r.maximum.take();
        }
        Ok(Node::Rules(Box::new(r)))
    }
}

/// `%XX` escapes of a `$ref` fragment decoded (a JSON pointer inside a URI fragment may
/// carry them); invalid escapes stay as written.
fn percent_decode(s: &str) -> String {
    if !s.contains('%') {
        return s.to_owned();
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(h), Some(l)) = (
                bytes.get(i + 1).and_then(|b| hex(*b)),
                bytes.get(i + 2).and_then(|b| hex(*b)),
            )
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
