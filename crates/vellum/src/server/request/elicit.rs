//! Form elicitation rules: the schema a server may ask with (a flat object of primitive
//! properties, SEP-1034/SEP-1330 enums included), and what the user's accepted answer must
//! be (defaults filled in, then validated against that schema), as the Go SDK does.
//!
//! Typed forms: a Rust type's schema (schemars) normalised into that subset (`Option`
//! fields as optional properties, `anyOf` with `null` unwrapped, variant docs as titles),
//! refused with the reason when the type does not fit, and cached per type.
//!
//! Not here: asking (`RequestContext::elicit` in `context.rs`).

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use schemars::JsonSchema;
use serde_json::{Map, Value};

use crate::error::{Error, Unsupported, Violation};
use crate::protocol::{ElicitAction, ElicitResult, JsonObject};
use crate::schema::Validator;
use crate::server::registry::derive::schema_for;
use crate::sync::lock;

/// What the user did with a typed form
/// ([`RequestContext::elicit_form`](crate::server::RequestContext::elicit_form)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Elicited<T> {
    /// The user submitted the form: its values, as a `T`.
    Accept(T),
    /// The user explicitly declined.
    Decline,
    /// The user dismissed the form without choosing.
    Cancel,
}

/// The form schema of each type asked for so far, or why it cannot be one.
type FormCache = Mutex<HashMap<TypeId, Result<Arc<JsonObject>, String>>>;

/// The form schema of `T`, made once per type: `Err` ([`Error::is_unsupported`]) names the type
/// and why it is not a flat object of primitive properties.
pub(crate) fn form_schema_of<T: JsonSchema + 'static>() -> Result<Arc<JsonObject>, Error> {
    static CACHE: OnceLock<FormCache> = OnceLock::new();
    let cache = CACHE.get_or_init(FormCache::default);
    let made = {
        let known = lock(cache).get(&TypeId::of::<T>()).cloned();
        match known {
            Some(made) => made,
            None => {
                let made = to_form(schema_for::<T>(true)).map(Arc::new);
                lock(cache).insert(TypeId::of::<T>(), made.clone());
                made
            }
        }
    };
    made.map_err(|why| {
        Error::unsupported(Unsupported::FormType {
            type_name: std::any::type_name::<T>(),
            why,
        })
    })
}

/// A schemars schema made into a form schema, or why it cannot be one.
fn to_form(mut raw: JsonObject) -> Result<JsonObject, String> {
    if raw.get("type") != Some(&Value::String("object".into())) {
        return Err("a form is a struct with named fields (an object at the root)".into());
    }
    let mut properties = Map::new();
    if let Some(props) = raw.remove("properties") {
        let Value::Object(props) = props else {
            return Err("`properties` is not an object".into());
        };
        for (name, p) in props {
            let p = property(&name, p)?;
            properties.insert(name, p);
        }
    }
    let mut form = Map::new();
    form.insert("type".into(), Value::String("object".into()));
    form.insert("properties".into(), Value::Object(properties));
    if let Some(required) = raw.remove("required") {
        form.insert("required".into(), required);
    }
    check_schema(&form).map_err(|e| e.to_string())?;
    Ok(form)
}

/// One property made into a form property: `null` taken out of its type and its choices
/// (an `Option` field is simply not required), then checked to be a primitive or a list of
/// choices.
fn property(name: &str, p: Value) -> Result<Value, String> {
    let Value::Object(mut p) = p else {
        return Err(format!("property {name:?} has no type (a free JSON value)"));
    };
    if p.contains_key("$ref") {
        return Err(format!(
            "property {name:?} refers to another schema (a recursive type): a form is flat"
        ));
    }
    unwrap_nullable(name, &mut p)?;
    if let Some(Value::Array(choices)) = p.remove("oneOf") {
        p.insert("oneOf".into(), Value::Array(titled_choices(name, choices)?));
        p.entry("type")
            .or_insert_with(|| Value::String("string".into()));
    }
    match p.get("type").and_then(Value::as_str) {
        Some("string") => {
            let known = ["email", "uri", "date", "date-time"];
            if p.get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| !known.contains(&f))
            {
                p.remove("format");
            }
        }
        // schemars's `int32`, `uint64`, `double`: Rust widths, not form formats.
        Some("number" | "integer") => {
            p.remove("format");
        }
        Some("boolean") => {}
        Some("array") => list_of_choices(name, &mut p)?,
        Some("object") => {
            return Err(format!(
                "property {name:?} is an object: a form is flat (strings, numbers, integers, \
                 booleans, choices)"
            ));
        }
        _ => {
            return Err(format!(
                "property {name:?} is not a string, number, integer, boolean or choice"
            ));
        }
    }
    Ok(Value::Object(p))
}

/// `type: [T, "null"]`, `anyOf: [S, {type: null}]` and `enum: [.., null]`, as schemars writes
/// an `Option`, made into `T`, `S` and the choices without `null`.
fn unwrap_nullable(name: &str, p: &mut JsonObject) -> Result<(), String> {
    let is_null = |v: &Value| v.get("type") == Some(&Value::String("null".into()));
    if let Some(Value::Array(types)) = p.get("type") {
        let types: Vec<&Value> = types
            .iter()
            .filter(|t| t.as_str() != Some("null"))
            .collect();
        let [single] = types[..] else {
            return Err(format!("property {name:?} has several types"));
        };
        let single = single.clone();
        p.insert("type".into(), single);
    }
    if let Some(Value::Array(enum_)) = p.get_mut("enum") {
        enum_.retain(|v| !v.is_null());
    }
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(options)) = p.get(key) else {
            continue;
        };
        if !options.iter().any(is_null) {
            continue;
        }
        let rest: Vec<Value> = options.iter().filter(|o| !is_null(o)).cloned().collect();
        p.remove(key);
        match <[Value; 1]>::try_from(rest) {
            Ok([Value::Object(inner)]) => {
                for (k, v) in inner {
                    p.entry(k).or_insert(v);
                }
            }
            Ok([other]) => {
                p.insert(key.into(), Value::Array(vec![other]));
            }
            Err(rest) => {
                p.insert(key.into(), Value::Array(rest));
            }
        }
    }
    if p.contains_key("anyOf") {
        return Err(format!(
            "property {name:?} is one of several shapes (an untagged union): a form property has one"
        ));
    }
    Ok(())
}

/// `oneOf` of string constants (an enum whose variants have docs) as the titled choices of
/// SEP-1330: `{const, title}`, the variant's doc as the title.
fn titled_choices(name: &str, choices: Vec<Value>) -> Result<Vec<Value>, String> {
    choices
        .into_iter()
        .map(|c| {
            let constant = c.get("const").filter(|v| v.is_string()).or_else(|| {
                c.get("enum")
                    .and_then(Value::as_array)
                    .and_then(|e| e.first())
                    .filter(|v| v.is_string())
            });
            let Some(constant) = constant else {
                return Err(format!(
                    "property {name:?} has a choice that is not a string constant (an enum \
                     variant with fields)"
                ));
            };
            let title = c
                .get("title")
                .or_else(|| c.get("description"))
                .unwrap_or(constant);
            let mut out = Map::new();
            out.insert("const".into(), constant.clone());
            out.insert("title".into(), title.clone());
            Ok(Value::Object(out))
        })
        .collect()
}

/// A `Vec` of an enum: a multi-select (its items a plain `enum`, or titled `anyOf`).
fn list_of_choices(name: &str, p: &mut JsonObject) -> Result<(), String> {
    let refusal =
        || format!("property {name:?} is a list of free values: a form list is a list of choices");
    let Some(Value::Object(items)) = p.get_mut("items") else {
        return Err(refusal());
    };
    if let Some(Value::Array(choices)) = items.remove("oneOf") {
        items.insert("anyOf".into(), Value::Array(titled_choices(name, choices)?));
        items.remove("type");
    }
    if items.contains_key("enum") || items.contains_key("anyOf") {
        Ok(())
    } else {
        Err(refusal())
    }
}

/// The user's answer to a typed form as a `T` (content already checked against the form).
pub(crate) fn typed_answer<T: serde::de::DeserializeOwned>(
    answer: ElicitResult,
) -> Result<Elicited<T>, Error> {
    match answer.action {
        ElicitAction::Decline => Ok(Elicited::Decline),
        ElicitAction::Cancel => Ok(Elicited::Cancel),
        ElicitAction::Accept => {
            let content = Value::Object(answer.content.unwrap_or_default());
            T::deserialize(content).map(Elicited::Accept).map_err(|e| {
                Error::protocol(Violation::FormAnswer {
                    type_name: std::any::type_name::<T>(),
                    why: e.to_string(),
                })
            })
        }
    }
}

/// A checked form schema and its compiled validator.
pub(crate) struct FormSchema {
    schema: JsonObject,
    validator: Validator,
}

fn invalid(why: impl std::fmt::Display) -> Error {
    Error::unsupported(Unsupported::ElicitationSchema {
        why: why.to_string(),
    })
}

/// Checks that a form schema is one the spec allows, and compiles it.
pub(crate) fn check_schema(schema: &JsonObject) -> Result<FormSchema, Error> {
    if schema.get("type") != Some(&Value::String("object".into())) {
        return Err(invalid("the root must be `type: object`"));
    }
    if let Some(props) = schema.get("properties") {
        let props = props
            .as_object()
            .ok_or_else(|| invalid("`properties` must be an object"))?;
        for (name, p) in props {
            let ty = p.get("type").and_then(Value::as_str);
            let ok = match ty {
                Some("string" | "number" | "integer" | "boolean") => true,
                // Multi-select: an array of strings, by `enum` or titled `anyOf`.
                Some("array") => p
                    .get("items")
                    .is_some_and(|i| i.get("enum").is_some() || i.get("anyOf").is_some()),
                _ => false,
            };
            if !ok {
                return Err(invalid(format!(
                    "property {name:?} must be a string, number, integer, boolean or an enum array"
                )));
            }
        }
    }
    // Formats are assertions here: a form asks for an `email` and must get one.
    let validator = Validator::new(schema, true).map_err(invalid)?;
    Ok(FormSchema {
        schema: schema.clone(),
        validator,
    })
}

/// Fills in defaults and validates an accepted answer.
pub(crate) fn accept_content(form: &FormSchema, answer: &mut ElicitResult) -> Result<(), Error> {
    if answer.action != ElicitAction::Accept {
        return Ok(());
    }
    let content = answer.content.get_or_insert_with(Default::default);
    if let Some(props) = form.schema.get("properties").and_then(Value::as_object) {
        for (name, p) in props {
            if let Some(d) = p.get("default")
                && !content.contains_key(name)
            {
                content.insert(name.clone(), d.clone());
            }
        }
    }
    let value = Value::Object(content.clone());
    if let Some(e) = form.validator.violations(&value, 1).first() {
        return Err(Error::protocol(Violation::ElicitationContent {
            why: e.to_string(),
        }));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> JsonObject {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn schemas_and_answers() {
        assert!(check_schema(&obj(json!({"type": "array"}))).is_err());
        assert!(
            check_schema(&obj(
                json!({"type": "object", "properties": {"n": {"type": "object"}}})
            ))
            .is_err()
        );
        let form = check_schema(&obj(json!({"type": "object",
            "properties": {"name": {"type": "string", "default": "Ann"},
                "age": {"type": "integer", "minimum": 0},
                "tags": {"type": "array", "items": {"enum": ["a", "b"]}}},
            "required": ["age"]})))
        .unwrap();
        let mut ok = ElicitResult {
            action: ElicitAction::Accept,
            content: Some(obj(json!({"age": 3}))),
            meta: None,
        };
        accept_content(&form, &mut ok).unwrap();
        assert_eq!(ok.content.unwrap()["name"], "Ann");
        let mut bad = ElicitResult {
            action: ElicitAction::Accept,
            content: Some(obj(json!({"age": -1}))),
            meta: None,
        };
        assert!(accept_content(&form, &mut bad).is_err());
        let mut declined = ElicitResult {
            action: ElicitAction::Decline,
            content: None,
            meta: None,
        };
        accept_content(&form, &mut declined).unwrap();
        assert!(declined.content.is_none());
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    enum Size {
        /// Small cup.
        Small,
        /// Large cup.
        Large,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    enum Topping {
        Milk,
        Sugar,
    }

    /// Every shape a form allows, optional ones included.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Order {
        /// Who it is for.
        name: String,
        email: Option<String>,
        cups: u32,
        strength: Option<f64>,
        to_go: Option<bool>,
        size: Size,
        maybe_size: Option<Size>,
        toppings: Vec<Topping>,
    }

    #[test]
    fn a_struct_with_options_and_enums_is_a_form() {
        let form = form_schema_of::<Order>().unwrap();
        let props = form["properties"].as_object().unwrap();
        assert_eq!(
            form["required"],
            json!(["name", "cups", "size", "toppings"])
        );
        assert_eq!(props["name"]["type"], "string");
        assert_eq!(props["name"]["description"], "Who it is for.");
        assert_eq!(props["email"]["type"], "string");
        assert_eq!(props["cups"]["type"], "integer");
        assert!(props["cups"].get("format").is_none());
        assert_eq!(props["strength"]["type"], "number");
        assert_eq!(props["to_go"]["type"], "boolean");
        for size in ["size", "maybe_size"] {
            assert_eq!(props[size]["type"], "string", "{size}");
            assert_eq!(
                props[size]["oneOf"],
                json!([{"const": "Small", "title": "Small cup."},
                       {"const": "Large", "title": "Large cup."}]),
                "{size}"
            );
        }
        assert_eq!(props["toppings"]["type"], "array");
        assert_eq!(props["toppings"]["items"]["enum"], json!(["Milk", "Sugar"]));
        // The same schema, from the cache.
        assert!(Arc::ptr_eq(&form, &form_schema_of::<Order>().unwrap()));
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Address {
        city: String,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Nested {
        address: Address,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct FreeList {
        tags: Vec<String>,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Free {
        anything: serde_json::Value,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Recursive {
        name: String,
        next: Option<Box<Recursive>>,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[serde(untagged)]
    #[allow(dead_code)]
    enum NumberOrText {
        Number(u32),
        Text(String),
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Union {
        value: NumberOrText,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    enum Shape {
        Circle { radius: f64 },
        Point,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct WithShape {
        shape: Shape,
    }

    /// The refusal of `T`, which must name the type and say `why`.
    fn refusal<T: JsonSchema + 'static>(why: &str) {
        let Err(e) = form_schema_of::<T>() else {
            panic!("{} was accepted", std::any::type_name::<T>());
        };
        let text = e.to_string();
        assert!(e.is_unsupported(), "{text}");
        assert!(text.contains(std::any::type_name::<T>()), "{text}");
        assert!(text.contains(why), "{text}");
    }

    #[test]
    fn types_that_are_not_flat_forms_are_refused_saying_why() {
        refusal::<u32>("a struct with named fields");
        refusal::<Nested>("property \"address\" is an object");
        refusal::<FreeList>("property \"tags\" is a list of free values");
        refusal::<Free>("property \"anything\"");
        refusal::<Recursive>("property \"next\"");
        refusal::<Union>("property \"value\"");
        refusal::<WithShape>("property \"shape\"");
    }

    #[test]
    fn answers_become_the_type() {
        #[derive(serde::Deserialize, schemars::JsonSchema, Debug, PartialEq)]
        struct Small {
            n: u8,
            note: Option<String>,
        }
        let accept = ElicitResult {
            action: ElicitAction::Accept,
            content: Some(obj(json!({"n": 3}))),
            meta: None,
        };
        assert_eq!(
            typed_answer::<Small>(accept).unwrap(),
            Elicited::Accept(Small { n: 3, note: None })
        );
        for (action, expected) in [
            (ElicitAction::Decline, Elicited::Decline),
            (ElicitAction::Cancel, Elicited::Cancel),
        ] {
            let r = ElicitResult {
                action,
                content: None,
                meta: None,
            };
            assert_eq!(typed_answer::<Small>(r).unwrap(), expected);
        }
    }
}
