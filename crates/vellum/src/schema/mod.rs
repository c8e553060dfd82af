//! JSON Schema validation of what a server checks against a schema: tool arguments, tool
//! output (`structuredContent`) and accepted elicitation answers.
//!
//! Two engines behind one type, chosen by the `json-schema` feature:
//! - without it, the built-in validator ([`lite`]): draft 2020-12 (and drafts 6, 7 and
//!   2019-09 as schemas written for them use them: tuple `items`, `additionalItems`,
//!   `dependencies`, `definitions`), every assertion keyword except `unevaluatedProperties`,
//!   `unevaluatedItems` and dynamic or recursive refs, local `$ref`s, `pattern` in the syntax
//!   of the `regex` crate, and the four string formats elicitation allows (`email`, `uri`,
//!   `date`, `date-time`). A schema that needs more is refused when it is registered, with
//!   an error that names the feature: nothing is ever checked by half.
//! - with it, the `jsonschema` crate: every draft, ECMA-262 regexes, every format. It is a
//!   large dependency (about a quarter of a small server's binary and a third of its cold
//!   build), hence the feature.
//!
//! Neither fetches a remote `$ref` (the spec forbids it): such a schema is refused.
//!
//! Not here: when each check runs (the server core's `registry/tool.rs` and
//! `request/elicit.rs`).

use serde_json::Value;

use crate::protocol::JsonObject;

#[cfg_attr(feature = "json-schema", allow(dead_code))]
mod format;
#[cfg_attr(feature = "json-schema", allow(dead_code))]
pub(crate) mod lite;
#[cfg_attr(feature = "json-schema", allow(dead_code))]
mod lite_check;
#[cfg(test)]
mod suite;
#[cfg(test)]
mod tests;

/// A compiled schema.
pub(crate) struct Validator {
    #[cfg(feature = "json-schema")]
    inner: jsonschema::Validator,
    #[cfg(not(feature = "json-schema"))]
    inner: lite::Schema,
}

impl Validator {
    /// Compiles `schema`; `formats` turns `format` into an assertion (elicitation) rather
    /// than an annotation (tools, as the spec's default dialect has it).
    pub(crate) fn new(schema: &JsonObject, formats: bool) -> Result<Self, String> {
        #[cfg(feature = "json-schema")]
        let inner = jsonschema::options()
            .should_validate_formats(formats)
            .build(&Value::Object(schema.clone()))
            .map_err(|e| e.to_string())?;
        #[cfg(not(feature = "json-schema"))]
        let inner = lite::Schema::compile(schema, formats)?;
        Ok(Validator { inner })
    }

    /// Whether `instance` is valid.
    pub(crate) fn is_valid(&self, instance: &Value) -> bool {
        self.inner.is_valid(instance)
    }

    /// Up to `max` violations, each `"{instance path}: {what}"`, the root's path being
    /// `(root)`.
    pub(crate) fn violations(&self, instance: &Value, max: usize) -> Vec<String> {
        #[cfg(feature = "json-schema")]
        let found = self
            .inner
            .iter_errors(instance)
            .take(max)
            .map(|e| (e.instance_path().to_string(), e.to_string()))
            .collect::<Vec<_>>();
        #[cfg(not(feature = "json-schema"))]
        let found = self.inner.violations(instance, max);
        found
            .into_iter()
            .map(|(path, what)| {
                let at = if path.is_empty() { "(root)" } else { &path };
                format!("{at}: {what}")
            })
            .collect()
    }
}
