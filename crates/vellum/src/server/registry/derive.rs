//! JSON Schemas derived from Rust types (schemars), as tools' inputs and outputs and typed
//! elicitation forms use them.
//!
//! Not here: what a schema is checked against (`crate::schema`).

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

use crate::protocol::JsonObject;

/// Derives a JSON Schema (2020-12) for a Rust type: doc comments become `description`,
/// non-`Option` fields are `required`, subschemas are inlined (clients handle `$defs`
/// poorly), and the root's `$schema` and `title` (and, for inputs, `description`) are
/// dropped.
pub fn schema_for<T: JsonSchema>(for_input: bool) -> JsonObject {
    let settings = SchemaSettings::draft2020_12().with(|s| s.inline_subschemas = true);
    let settings = if for_input {
        settings.for_deserialize()
    } else {
        settings.for_serialize()
    };
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut obj = match schema.to_value() {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    obj.remove("$schema");
    obj.remove("title");
    if for_input {
        // The tool's own description says what it does; the Rust type's doc is for Rust.
        obj.remove("description");
    }
    if for_input && !obj.contains_key("type") {
        obj.insert("type".into(), Value::String("object".into()));
    }
    if for_input
        && obj.get("type") == Some(&Value::String("object".into()))
        && !obj.contains_key("properties")
    {
        obj.insert("properties".into(), Value::Object(Map::new()));
    }
    obj
}
