//! Applying a compiled schema (`lite.rs`) to an instance: a yes/no answer, or the first
//! few violations with their instance paths.
//!
//! One walk serves both: a [`Sink`] with no room answers at the first failure; one with
//! room records each failure and goes on until it is full. Subschemas whose failures are
//! not failures of the instance (`anyOf` branches, `not`, `if`, `contains`) are always
//! walked with no room.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::fmt::Write as _;

use serde_json::{Number, Value};

use super::lite::{Node, Rules, Schema, ty};

/// How many nodes deep one walk may go. A schema recursing through `$ref`s into itself
/// without descending into the instance would otherwise never end.
const MAX_WALK_DEPTH: u32 = 256;
/// Instances are quoted in messages up to this many characters.
const MAX_QUOTE: usize = 80;
/// Arrays longer than this are checked for `uniqueItems` through a hash set, not pairwise.
const PAIRWISE_UNIQUE: usize = 16;

/// Where in the instance a value sits, as a chain on the walk's stack.
#[derive(Clone, Copy)]
enum Path<'a> {
    Root,
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl Path<'_> {
    /// The JSON pointer (`/a/0`; empty for the root).
    fn render(&self) -> String {
        let mut segments = Vec::new();
        let mut at = self;
        loop {
            match at {
                Path::Root => break,
                Path::Key(up, k) => {
                    segments.push(k.replace('~', "~0").replace('/', "~1"));
                    at = up;
                }
                Path::Index(up, i) => {
                    segments.push(i.to_string());
                    at = up;
                }
            }
        }
        segments.iter().rev().fold(String::new(), |mut s, seg| {
            s.push('/');
            s.push_str(seg);
            s
        })
    }
}

/// Where failures go.
struct Sink {
    found: Vec<(String, String)>,
    room: usize,
}

impl Sink {
    fn silent() -> Sink {
        Sink {
            found: Vec::new(),
            room: 0,
        }
    }

    /// Records a failure if there is room; true when the walk should stop.
    fn fail(&mut self, path: &Path<'_>, what: impl FnOnce() -> String) -> bool {
        if self.room == 0 {
            return true;
        }
        self.found.push((path.render(), what()));
        self.room -= 1;
        self.room == 0
    }
}

impl Schema {
    pub(crate) fn is_valid(&self, instance: &Value) -> bool {
        self.check(self.root, instance, &Path::Root, 0, &mut Sink::silent())
    }

    /// Up to `max` violations, as (instance pointer, message).
    pub(crate) fn violations(&self, instance: &Value, max: usize) -> Vec<(String, String)> {
        let mut sink = Sink {
            found: Vec::new(),
            room: max.max(1),
        };
        self.check(self.root, instance, &Path::Root, 0, &mut sink);
        sink.found
    }

    fn passes(&self, node: usize, v: &Value, depth: u32) -> bool {
        self.check(node, v, &Path::Root, depth, &mut Sink::silent())
    }

    fn check(&self, node: usize, v: &Value, path: &Path<'_>, depth: u32, sink: &mut Sink) -> bool {
        if depth > MAX_WALK_DEPTH {
            sink.fail(path, || {
                "the schema recurses too deeply for this instance".into()
            });
            return false;
        }
        match &self.nodes[node] {
            Node::Always(true) => true,
            Node::Always(false) => {
                sink.fail(path, || format!("False schema does not allow {}", quote(v)));
                false
            }
            Node::Rules(r) => self.rules(r, v, path, depth + 1, sink),
        }
    }

    /// Every rule of one schema object; false (and stops) when the sink says so.
    fn rules(&self, r: &Rules, v: &Value, path: &Path<'_>, depth: u32, sink: &mut Sink) -> bool {
        let mut ok = true;
        // `fail!` records one failure and returns once the sink is full.
        macro_rules! fail {
            ($($what:tt)*) => {{
                ok = false;
                if sink.fail(path, || format!($($what)*)) {
                    return false;
                }
            }};
        }
        // A subschema at `$at`: its failures are the instance's.
        macro_rules! sub {
            ($node:expr, $val:expr, $at:expr) => {{
                let before = sink.room;
                if !self.check($node, $val, $at, depth, sink) {
                    ok = false;
                    if sink.room == 0 || before == 0 {
                        return false;
                    }
                }
            }};
        }
        if r.types != 0 && !has_type(v, r.types) {
            fail!("{} is not of type {}", quote(v), type_names(r.types));
        }
        if let Some(list) = &r.enumeration
            && !list.iter().any(|e| json_eq(e, v))
        {
            fail!(
                "{} is not one of {}",
                quote(v),
                quote(&Value::Array(list.clone()))
            );
        }
        if let Some(c) = &r.constant
            && !json_eq(c, v)
        {
            fail!("{} was expected", quote(c));
        }
        if let Some(target) = r.reference {
            sub!(target, v, path);
        }
        for &s in &r.all_of {
            sub!(s, v, path);
        }
        if !r.any_of.is_empty() && !r.any_of.iter().any(|&s| self.passes(s, v, depth)) {
            fail!(
                "{} is not valid under any of the schemas listed in the 'anyOf' keyword",
                quote(v)
            );
        }
        if !r.one_of.is_empty() {
            match r
                .one_of
                .iter()
                .filter(|&&s| self.passes(s, v, depth))
                .take(2)
                .count()
            {
                1 => {}
                0 => fail!(
                    "{} is not valid under any of the schemas listed in the 'oneOf' keyword",
                    quote(v)
                ),
                _ => fail!(
                    "{} is valid under more than one of the schemas listed in the 'oneOf' keyword",
                    quote(v)
                ),
            }
        }
        if let Some(s) = r.not
            && self.passes(s, v, depth)
        {
            fail!("{} must not be valid under the 'not' schema", quote(v));
        }
        if let Some((cond, then, otherwise)) = r.if_then_else {
            let branch = if self.passes(cond, v, depth) {
                then
            } else {
                otherwise
            };
            if let Some(b) = branch {
                sub!(b, v, path);
            }
        }
        match v {
            Value::Object(map) => {
                for name in &r.required {
                    if !map.contains_key(name) {
                        fail!("{} is a required property", quote_str(name));
                    }
                }
                for (name, needs) in &r.dependent_required {
                    if map.contains_key(name) {
                        for n in needs {
                            if !map.contains_key(n) {
                                fail!("{} is a required property", quote_str(n));
                            }
                        }
                    }
                }
                for (name, s) in &r.dependent_schemas {
                    if map.contains_key(name) {
                        sub!(*s, v, path);
                    }
                }
                if let Some(min) = r.min_properties
                    && (map.len() as u64) < min
                {
                    fail!("{} has less than {min} properties", quote(v));
                }
                if let Some(max) = r.max_properties
                    && (map.len() as u64) > max
                {
                    fail!("{} has more than {max} properties", quote(v));
                }
                let mut unexpected = Vec::new();
                for (key, value) in map {
                    let at = Path::Key(path, key);
                    if let Some(s) = r.property_names {
                        sub!(s, &Value::String(key.clone()), &at);
                    }
                    let mut matched = false;
                    if let Some((_, s)) = r.properties.iter().find(|(n, _)| n == key) {
                        matched = true;
                        sub!(*s, value, &at);
                    }
                    for (re, s) in &r.pattern_properties {
                        if re.is_match(key) {
                            matched = true;
                            sub!(*s, value, &at);
                        }
                    }
                    if !matched && let Some(s) = r.additional_properties {
                        if matches!(self.nodes[s], Node::Always(false)) {
                            unexpected.push(key.as_str());
                        } else {
                            sub!(s, value, &at);
                        }
                    }
                }
                if !unexpected.is_empty() {
                    let list = unexpected
                        .iter()
                        .map(|k| format!("'{k}'"))
                        .collect::<Vec<_>>()
                        .join(", ");
                    let verb = if unexpected.len() == 1 { "was" } else { "were" };
                    fail!("Additional properties are not allowed ({list} {verb} unexpected)");
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    let at = Path::Index(path, i);
                    match r.prefix_items.get(i) {
                        Some(&s) => sub!(s, item, &at),
                        None => {
                            if let Some(s) = r.items {
                                sub!(s, item, &at);
                            }
                        }
                    }
                }
                let n = items.len() as u64;
                if let Some(min) = r.min_items
                    && n < min
                {
                    fail!("{} has less than {min} items", quote(v));
                }
                if let Some(max) = r.max_items
                    && n > max
                {
                    fail!("{} has more than {max} items", quote(v));
                }
                if r.unique_items && !all_unique(items) {
                    fail!("{} has non-unique elements", quote(v));
                }
                if let Some(s) = r.contains {
                    let hits = items.iter().filter(|i| self.passes(s, i, depth)).count() as u64;
                    let min = r.min_contains.unwrap_or(1);
                    if hits < min {
                        fail!(
                            "{} contains {hits} items valid under the 'contains' schema, fewer than {min}",
                            quote(v)
                        );
                    }
                    if let Some(max) = r.max_contains
                        && hits > max
                    {
                        fail!(
                            "{} contains {hits} items valid under the 'contains' schema, more than {max}",
                            quote(v)
                        );
                    }
                }
            }
            Value::String(s) => {
                if r.min_length.is_some() || r.max_length.is_some() {
                    let len = s.chars().count() as u64;
                    if let Some(min) = r.min_length
                        && len < min
                    {
                        fail!("{} is shorter than {min} characters", quote(v));
                    }
                    if let Some(max) = r.max_length
                        && len > max
                    {
                        fail!("{} is longer than {max} characters", quote(v));
                    }
                }
                if let Some((re, source)) = &r.pattern
                    && !re.is_match(s)
                {
                    fail!("{} does not match {}", quote(v), quote_str(source));
                }
                if let Some(f) = r.format
                    && !f.accepts(s)
                {
                    fail!("{} is not a {}", quote(v), quote_str(f.name()));
                }
            }
            Value::Number(n) => {
                if let Some(m) = breaks(n, &r.minimum, |o| o == Ordering::Less) {
                    fail!("{n} is less than the minimum of {m}");
                }
                if let Some(m) = breaks(n, &r.exclusive_minimum, |o| o != Ordering::Greater) {
                    fail!("{n} is less than or equal to the minimum of {m}");
                }
                if let Some(m) = breaks(n, &r.maximum, |o| o == Ordering::Greater) {
                    fail!("{n} is greater than the maximum of {m}");
                }
                if let Some(m) = breaks(n, &r.exclusive_maximum, |o| o != Ordering::Less) {
                    fail!("{n} is greater than or equal to the maximum of {m}");
                }
                if let Some(m) = &r.multiple_of
                    && !is_multiple(n, m)
                {
                    fail!("{n} is not a multiple of {m}");
                }
            }
            _ => {}
        }
        ok
    }
}

/// The limit, when `n` compared with it gives an ordering that `bad` refuses.
fn breaks<'a>(
    n: &Number,
    limit: &'a Option<Number>,
    bad: fn(Ordering) -> bool,
) -> Option<&'a Number> {
    limit.as_ref().filter(|l| bad(cmp_num(n, l)))
}

fn has_type(v: &Value, types: u8) -> bool {
    let bit = match v {
        Value::Null => ty::NULL,
        Value::Bool(_) => ty::BOOLEAN,
        Value::Object(_) => ty::OBJECT,
        Value::Array(_) => ty::ARRAY,
        Value::String(_) => ty::STRING,
        Value::Number(n) => {
            if types & ty::NUMBER != 0 {
                return true;
            }
            return types & ty::INTEGER != 0 && is_integer(n);
        }
    };
    types & bit != 0
}

fn type_names(types: u8) -> String {
    let names = [
        (ty::NULL, "null"),
        (ty::BOOLEAN, "boolean"),
        (ty::OBJECT, "object"),
        (ty::ARRAY, "array"),
        (ty::NUMBER, "number"),
        (ty::STRING, "string"),
        (ty::INTEGER, "integer"),
    ];
    let list: Vec<String> = names
        .iter()
        .filter(|(b, _)| types & b != 0)
        .map(|(_, n)| format!("{n:?}"))
        .collect();
    if list.len() == 1 {
        list.join("")
    } else {
        format!("any of {}", list.join(", "))
    }
}

fn is_integer(n: &Number) -> bool {
    n.is_i64()
        || n.is_u64()
        || n.as_f64()
            .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
}

/// An integer-valued number as an `i128` (exact for every integer serde_json holds).
fn exact(n: &Number) -> Option<i128> {
    n.as_i64()
        .map(i128::from)
        .or_else(|| n.as_u64().map(i128::from))
}

fn cmp_num(a: &Number, b: &Number) -> Ordering {
    match (exact(a), exact(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        _ => {
            let (x, y) = (
                a.as_f64().unwrap_or(f64::NAN),
                b.as_f64().unwrap_or(f64::NAN),
            );
            x.partial_cmp(&y).unwrap_or(Ordering::Equal)
        }
    }
}

fn is_multiple(n: &Number, m: &Number) -> bool {
    if let (Some(x), Some(y)) = (exact(n), exact(m)) {
        return y != 0 && x % y == 0;
    }
    let (Some(x), Some(y)) = (n.as_f64(), m.as_f64()) else {
        return false;
    };
    let q = x / y;
    if !q.is_finite() {
        return false;
    }
    // Decimal steps (`0.01`) are not exact in binary: allow the rounding a division makes.
    (q - q.round()).abs() <= 1e-9 * q.abs().max(1.0)
}

/// Equality as JSON Schema defines it: `1` and `1.0` are the same number.
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => cmp_num(x, y) == Ordering::Equal,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, a)| y.get(k).is_some_and(|b| json_eq(a, b)))
        }
        _ => a == b,
    }
}

fn all_unique(items: &[Value]) -> bool {
    if items.len() <= PAIRWISE_UNIQUE {
        return items
            .iter()
            .enumerate()
            .all(|(i, a)| items[i + 1..].iter().all(|b| !json_eq(a, b)));
    }
    // A canonical text per item (sorted keys, one spelling per number value), so equal
    // values collide and the check stays linear for a long hostile array.
    let mut seen = HashSet::with_capacity(items.len());
    items.iter().all(|v| {
        let mut key = String::new();
        canonical(v, &mut key);
        seen.insert(key)
    })
}

fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Number(n) => match exact(n) {
            Some(i) => {
                let _ = write!(out, "{i}");
            }
            None => {
                let f = n.as_f64().unwrap_or(f64::NAN);
                if f.fract() == 0.0 && f.abs() < 1e38 {
                    let _ = write!(out, "{}", f as i128);
                } else {
                    let _ = write!(out, "{f:e}");
                }
            }
        },
        Value::Array(a) => {
            out.push('[');
            for item in a {
                canonical(item, out);
                out.push(',');
            }
            out.push(']');
        }
        Value::Object(o) => {
            let mut keys: Vec<&String> = o.keys().collect();
            keys.sort();
            out.push('{');
            for k in keys {
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                if let Some(item) = o.get(k) {
                    canonical(item, out);
                }
                out.push(',');
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// An instance in a message: its JSON, cut to [`MAX_QUOTE`] characters.
fn quote(v: &Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(MAX_QUOTE) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

fn quote_str(s: &str) -> String {
    quote(&Value::String(s.to_owned()))
}
