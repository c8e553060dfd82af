//! Form elicitation rules: the schema a server may ask with (a flat object of primitive
//! properties, SEP-1034/SEP-1330 enums included), and what the user's accepted answer must
//! be (defaults filled in, then validated against that schema), as the Go SDK does.
//!
//! Not here: asking (`RequestContext::elicit` in `context.rs`).

use serde_json::Value;

use crate::error::{Error, Unsupported, Violation};
use crate::protocol::{ElicitAction, ElicitResult, JsonObject};
use crate::schema::Validator;

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
}
