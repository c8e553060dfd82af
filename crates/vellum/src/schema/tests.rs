//! The built-in validator on a corpus of schemas and instances, each with the verdict the
//! spec gives; with the `json-schema` feature the same corpus also runs through the
//! `jsonschema` crate, so the two engines are held to one answer.

use serde_json::{Value, json};

use super::lite::Schema;
use crate::protocol::JsonObject;

fn obj(v: Value) -> JsonObject {
    match v {
        Value::Object(o) => o,
        _ => JsonObject::new(),
    }
}

/// A schema, whether formats are asserted, and instances with their verdicts.
type Case = (Value, bool, Vec<(Value, bool)>);

fn corpus() -> Vec<Case> {
    vec![
        // What `#[derive(JsonSchema)]` writes for the seed's input.
        (
            json!({"type": "object", "properties": {"user_name": {"type": "string"}},
                   "required": ["user_name"]}),
            false,
            vec![
                (json!({"user_name": "a"}), true),
                (json!({}), false),
                (json!({"user_name": 7}), false),
                (json!({"user_name": "a", "other": 1}), true),
                (json!([]), false),
            ],
        ),
        (
            json!({"type": "object", "additionalProperties": false,
                   "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 255,
                                        "format": "uint8"}}}),
            false,
            vec![
                (json!({"a": 3}), true),
                (json!({"a": 3.0}), true),
                (json!({"a": 3.5}), false),
                (json!({"a": 256}), false),
                (json!({"a": -1}), false),
                (json!({"b": 1}), false),
                (json!({}), true),
            ],
        ),
        // Nested types through `$defs`, nullable options, const-`oneOf` enums.
        (
            json!({"type": "object",
                   "properties": {
                       "p": {"$ref": "#/$defs/Point"},
                       "n": {"type": ["integer", "null"]},
                       "k": {"oneOf": [{"const": "a"}, {"const": "b"}]},
                       "e": {"type": "string", "enum": ["x", "y"]},
                       "o": {"anyOf": [{"$ref": "#/$defs/Point"}, {"type": "null"}]}},
                   "required": ["p"],
                   "$defs": {"Point": {"type": "object",
                       "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                       "required": ["x", "y"]}}}),
            false,
            vec![
                (json!({"p": {"x": 1, "y": 2.5}}), true),
                (json!({"p": {"x": 1}}), false),
                (
                    json!({"p": {"x": 1, "y": 2}, "n": null, "k": "b", "e": "y", "o": null}),
                    true,
                ),
                (json!({"p": {"x": 1, "y": 2}, "n": 1.5}), false),
                (json!({"p": {"x": 1, "y": 2}, "k": "c"}), false),
                (json!({"p": {"x": 1, "y": 2}, "e": "z"}), false),
                (json!({"p": {"x": 1, "y": 2}, "o": {"x": 1}}), false),
            ],
        ),
        // A recursive schema.
        (
            json!({"$ref": "#/$defs/Tree",
                   "$defs": {"Tree": {"type": "object",
                       "properties": {"children": {"type": "array",
                                                   "items": {"$ref": "#/$defs/Tree"}}}}}}),
            false,
            vec![
                (json!({"children": [{"children": []}, {}]}), true),
                (json!({"children": [{"children": [1]}]}), false),
            ],
        ),
        // Strings.
        (
            json!({"type": "string", "minLength": 2, "maxLength": 3, "pattern": "^[a-zé]+$"}),
            false,
            vec![
                (json!("ab"), true),
                (json!("éé"), true),
                (json!("a"), false),
                (json!("abcd"), false),
                (json!("A1"), false),
            ],
        ),
        // Arrays.
        (
            json!({"type": "array", "prefixItems": [{"type": "string"}],
                   "items": {"type": "integer"}, "minItems": 1, "maxItems": 3,
                   "uniqueItems": true, "contains": {"const": 5}}),
            false,
            vec![
                (json!(["a", 5]), true),
                (json!(["a", 5, 5]), false),
                (json!(["a", 1]), false),
                (json!([1, 5]), false),
                (json!([]), false),
                (json!(["a", 5, 6, 7]), false),
            ],
        ),
        (
            json!({"type": "array", "uniqueItems": true}),
            false,
            vec![
                (json!([1, 1.0]), false),
                (json!([{"a": 1, "b": 2}, {"b": 2, "a": 1.0}]), false),
                (json!((0..40).collect::<Vec<_>>()), true),
                (json!((0..40).map(|i| i % 39).collect::<Vec<_>>()), false),
                (json!([[1, 2], [2, 1]]), true),
            ],
        ),
        // Numbers.
        (
            json!({"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1,
                   "multipleOf": 0.01}),
            false,
            vec![
                (json!(0.5), true),
                (json!(0.99), true),
                (json!(0), false),
                (json!(1), false),
                (json!(0.555), false),
            ],
        ),
        (
            json!({"type": "integer", "multipleOf": 3}),
            false,
            vec![
                (json!(9), true),
                (json!(10), false),
                (json!(u64::MAX), true),
            ],
        ),
        // Composition.
        (
            json!({"allOf": [{"type": "object"}, {"required": ["a"]}],
                   "not": {"required": ["b"]},
                   "if": {"properties": {"a": {"const": 1}}},
                   "then": {"required": ["c"]}, "else": {"required": ["d"]}}),
            false,
            vec![
                (json!({"a": 1, "c": 0}), true),
                (json!({"a": 1}), false),
                (json!({"a": 2, "d": 0}), true),
                (json!({"a": 2, "c": 0}), false),
                (json!({"a": 1, "c": 0, "b": 0}), false),
            ],
        ),
        (
            json!({"oneOf": [{"type": "integer"}, {"type": "number"}]}),
            false,
            vec![(json!(1.5), true), (json!(1), false), (json!("x"), false)],
        ),
        // Object keywords.
        (
            json!({"type": "object", "patternProperties": {"^x-": {"type": "string"}},
                   "additionalProperties": {"type": "boolean"},
                   "propertyNames": {"maxLength": 4}, "minProperties": 1, "maxProperties": 2,
                   "dependentRequired": {"a": ["b"]}}),
            false,
            vec![
                (json!({"x-a": "s"}), true),
                (json!({"x-a": 1}), false),
                (json!({"a": true, "b": false}), true),
                (json!({"a": true}), false),
                (json!({"toolong": true}), false),
                (json!({}), false),
                (json!({"a": true, "b": true, "c": true}), false),
                (json!({"c": 1}), false),
            ],
        ),
        // Draft 7 spellings.
        (
            json!({"$schema": "http://json-schema.org/draft-07/schema#",
                   "type": "array", "items": [{"type": "string"}],
                   "additionalItems": false}),
            false,
            vec![
                (json!(["a"]), true),
                (json!(["a", "b"]), false),
                (json!([1]), false),
            ],
        ),
        (
            json!({"$schema": "http://json-schema.org/draft-07/schema#",
                   "properties": {"a": {"$ref": "#/definitions/A"}},
                   "definitions": {"A": {"type": "string"}},
                   "dependencies": {"a": ["b"], "c": {"required": ["d"]}}}),
            false,
            vec![
                (json!({"a": "x", "b": 0}), true),
                (json!({"a": 1, "b": 0}), false),
                (json!({"a": "x"}), false),
                (json!({"c": 0}), false),
                (json!({"c": 0, "d": 0}), true),
            ],
        ),
        // Boolean schemas.
        (
            json!({"properties": {"yes": true, "no": false}}),
            false,
            vec![(json!({"yes": 1}), true), (json!({"no": 1}), false)],
        ),
        // Formats: asserted for elicitation, annotations for tools.
        (
            json!({"type": "object", "properties": {
                "email": {"type": "string", "format": "email"},
                "uri": {"type": "string", "format": "uri"},
                "date": {"type": "string", "format": "date"},
                "when": {"type": "string", "format": "date-time"}}}),
            true,
            vec![
                (
                    json!({"email": "a.b@example.com", "uri": "https://example.com/a?b#c",
                           "date": "2024-02-29", "when": "2024-02-29T23:59:60.5Z"}),
                    true,
                ),
                (json!({"when": "2024-03-01T00:59:60+01:00"}), true),
                (json!({"when": "2024-03-01T10:59:60+01:00"}), false),
                (json!({"email": "not an email"}), false),
                (json!({"email": "a@@b"}), false),
                (json!({"uri": "no scheme here"}), false),
                (json!({"uri": "/relative/path"}), false),
                (json!({"date": "2023-02-29"}), false),
                (json!({"date": "2024-13-01"}), false),
                (json!({"when": "2024-01-01 10:00:00Z"}), false),
                (json!({"when": "2024-01-01T25:00:00Z"}), false),
                (json!({"when": "2024-01-01T10:00:00"}), false),
                (json!({"when": "2024-01-01t10:00:00z"}), true),
            ],
        ),
        (
            json!({"type": "string", "format": "email"}),
            false,
            vec![(json!("not an email"), true)],
        ),
    ]
}

#[test]
fn the_built_in_validator_gives_the_specs_verdicts() {
    for (schema, formats, cases) in corpus() {
        let compiled = match Schema::compile(&obj(schema.clone()), formats) {
            Ok(c) => c,
            Err(e) => panic!("{schema} did not compile: {e}"),
        };
        for (instance, valid) in cases {
            assert_eq!(
                compiled.is_valid(&instance),
                valid,
                "{instance} against {schema}"
            );
            // The collecting walk agrees with the yes/no one.
            assert_eq!(
                compiled.violations(&instance, 8).is_empty(),
                valid,
                "{instance} against {schema} (violations)"
            );
        }
    }
}

#[cfg(feature = "json-schema")]
#[test]
fn the_jsonschema_crate_gives_the_same_verdicts() {
    for (schema, formats, cases) in corpus() {
        let full = match jsonschema::options()
            .should_validate_formats(formats)
            .build(&schema)
        {
            Ok(v) => v,
            Err(e) => panic!("{schema}: {e}"),
        };
        for (instance, valid) in cases {
            assert_eq!(
                full.is_valid(&instance),
                valid,
                "{instance} against {schema}"
            );
        }
    }
}

#[test]
fn violations_name_the_path_and_the_problem() {
    let schema = Schema::compile(
        &obj(json!({"type": "object", "additionalProperties": false,
            "properties": {"user_name": {"type": "string"},
                           "list": {"type": "array", "items": {"type": "integer"}}},
            "required": ["user_name"]})),
        false,
    )
    .unwrap();
    let found = schema.violations(&json!({"list": [1, "x", 2.5], "extra": 1, "more": 2}), 8);
    let text: Vec<String> = found.iter().map(|(p, m)| format!("{p}: {m}")).collect();
    assert!(
        text.contains(&"/list/1: \"x\" is not of type \"integer\"".to_owned()),
        "{text:?}"
    );
    assert!(
        text.contains(&"/list/2: 2.5 is not of type \"integer\"".to_owned()),
        "{text:?}"
    );
    assert!(
        text.contains(&": \"user_name\" is a required property".to_owned()),
        "{text:?}"
    );
    assert!(
        text.iter()
            .any(|t| t.contains("'extra', 'more' were unexpected")),
        "{text:?}"
    );
    // The cap holds.
    assert_eq!(
        schema
            .violations(&json!({"list": [1, "x", 2.5], "extra": 1}), 2)
            .len(),
        2
    );
}

#[test]
fn what_it_cannot_check_is_refused_not_skipped() {
    for (schema, needle) in [
        (json!({"unevaluatedProperties": false}), "json-schema"),
        (json!({"items": {"unevaluatedItems": false}}), "json-schema"),
        (
            json!({"$ref": "https://example.com/s.json"}),
            "never fetched",
        ),
        (json!({"$ref": "#anchor"}), "anchor"),
        (json!({"$ref": "#/$defs/missing"}), "points at nothing"),
        (json!({"pattern": "(?=a)"}), "json-schema"),
        (json!({"type": "text"}), "not a JSON Schema type"),
        (json!({"minLength": -1}), "non-negative"),
        (json!({"multipleOf": 0}), "greater than 0"),
    ] {
        match Schema::compile(&obj(schema.clone()), false) {
            Ok(_) => panic!("{schema} compiled"),
            Err(e) => assert!(e.contains(needle), "{schema}: {e}"),
        }
    }
    let mut deep = json!({"type": "string"});
    for _ in 0..80 {
        deep = json!({"items": deep});
    }
    assert!(Schema::compile(&obj(deep), false).is_err());
}

#[test]
fn a_schema_recursing_into_itself_ends() {
    let schema = Schema::compile(
        &obj(json!({"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a"}}})),
        false,
    )
    .unwrap();
    assert!(!schema.is_valid(&json!(1)));
    let v = schema.violations(&json!(1), 8);
    assert!(v[0].1.contains("recurses"), "{v:?}");
}

#[test]
fn a_long_array_is_checked_for_uniqueness_in_linear_time() {
    let schema = Schema::compile(&obj(json!({"uniqueItems": true})), false).unwrap();
    let long: Vec<u32> = (0..200_000).collect();
    let started = std::time::Instant::now();
    assert!(schema.is_valid(&json!(long)));
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}
