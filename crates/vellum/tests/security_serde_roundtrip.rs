//! Property tests: the JSON-RPC framing and the MCP protocol types round-trip.
//!
//! - Framing: whatever id, method, params, result or error the encoders are given, the
//!   decoder gives back (through bytes, as on the wire).
//! - Types: a valid document parsed into its type and serialized again is the same
//!   document (nothing is lost: `_meta` keys, annotations, structured content, unknown
//!   capability maps), and serialize → parse → serialize is stable.

// Test helpers outside #[test] functions fail loudly too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bytes::Bytes;
use proptest::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use vellum::protocol::{
    CallToolResult, ContentBlock, ErrorObject, InitializeParams, Message, Payload, RequestId, Tool,
};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 96,
        ..ProptestConfig::default()
    }
}

fn text() -> impl Strategy<Value = String> {
    // Any characters, control characters and quotes included.
    proptest::string::string_regex("(?s).{0,16}").unwrap()
}

/// A method name: anything but empty (the decoder refuses an empty method).
fn method() -> impl Strategy<Value = String> {
    proptest::string::string_regex("(?s).{1,16}").unwrap()
}

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        // Finite floats (JSON has no NaN or infinities).
        (-1e15f64..1e15f64).prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number(),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(text(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn object() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map(text(), json_value(), 0..4).prop_map(|m| m.into_iter().collect())
}

fn request_id() -> impl Strategy<Value = RequestId> {
    prop_oneof![
        any::<i64>().prop_map(RequestId::Number),
        text().prop_map(|s| RequestId::String(s.into())),
    ]
}

fn meta() -> impl Strategy<Value = Option<Value>> {
    prop::option::of(object().prop_map(Value::Object))
}

fn annotations() -> impl Strategy<Value = Option<Value>> {
    prop::option::of(
        (
            prop::option::of(prop::sample::subsequence(vec!["user", "assistant"], 0..=2)),
            prop::option::of(0.0f64..=1.0),
            prop::option::of(text()),
        )
            .prop_map(|(audience, priority, modified)| {
                let mut m = Map::new();
                if let Some(a) = audience {
                    m.insert("audience".into(), json!(a));
                }
                if let Some(p) = priority {
                    m.insert("priority".into(), json!(p));
                }
                if let Some(l) = modified {
                    m.insert("lastModified".into(), json!(l));
                }
                Value::Object(m)
            }),
    )
}

/// Inserts optional members into an object document.
fn with(mut doc: Value, members: &[(&str, Option<Value>)]) -> Value {
    for (k, v) in members {
        if let Some(v) = v {
            doc[*k] = v.clone();
        }
    }
    doc
}

fn content_block() -> impl Strategy<Value = Value> {
    let kind = prop_oneof![
        text().prop_map(|t| json!({"type": "text", "text": t})),
        (text(), text()).prop_map(|(d, m)| json!({"type": "image", "data": d, "mimeType": m})),
        (text(), text()).prop_map(|(d, m)| json!({"type": "audio", "data": d, "mimeType": m})),
        (text(), text(), text()).prop_map(|(u, t, x)| {
            json!({"type": "resource", "resource": {"uri": u, "mimeType": t, "text": x}})
        }),
        (text(), text())
            .prop_map(|(u, b)| { json!({"type": "resource", "resource": {"uri": u, "blob": b}}) }),
    ];
    (kind, annotations(), meta()).prop_map(|(k, a, m)| with(k, &[("annotations", a), ("_meta", m)]))
}

/// `to_value(from_value(doc)) == doc`, and serialize → parse → serialize is stable.
fn lossless<T: DeserializeOwned + Serialize>(doc: &Value) -> Result<(), TestCaseError> {
    let parsed: T = serde_json::from_value(doc.clone())
        .map_err(|e| TestCaseError::fail(format!("{e}: {doc}")))?;
    let out = serde_json::to_value(&parsed).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(&out, doc);
    // Through text too, as on the wire.
    let bytes = serde_json::to_vec(&parsed).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let again: T =
        serde_json::from_slice(&bytes).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let out2 = serde_json::to_value(&again).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(&out2, doc);
    Ok(())
}

fn decode_one(bytes: &Bytes) -> Message {
    match vellum::protocol::decode(bytes) {
        Ok(Payload::Single(m)) => m,
        other => panic!("expected one message, got {other:?}"),
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn requests_round_trip(id in request_id(), method in method(), params in prop::option::of(object())) {
        let bytes = vellum::protocol::encode_request(&id, &method, params.as_ref()).unwrap();
        let Message::Request(r) = decode_one(&bytes) else { panic!("not a request") };
        prop_assert_eq!(&r.id, &id);
        prop_assert_eq!(&r.method, &method);
        let got: Option<Value> = r.params.map(|p| p.parse().unwrap());
        prop_assert_eq!(got, params.map(Value::Object));
    }

    #[test]
    fn notifications_round_trip(method in method(), params in prop::option::of(object())) {
        let bytes = vellum::protocol::encode_notification(&method, params.as_ref()).unwrap();
        let Message::Notification(n) = decode_one(&bytes) else { panic!("not a notification") };
        prop_assert_eq!(&n.method, &method);
        let got: Option<Value> = n.params.map(|p| p.parse().unwrap());
        prop_assert_eq!(got, params.map(Value::Object));
    }

    #[test]
    fn results_and_errors_round_trip(
        id in request_id(),
        result in object(),
        code in any::<i64>(),
        message in text(),
        // `"data": null` reads back as no data (serde's Option), which JSON-RPC treats alike.
        data in prop::option::of(json_value().prop_filter("not null", |v| !v.is_null())),
    ) {
        let bytes = vellum::protocol::encode_response(&id, &result).unwrap();
        let Message::Response(r) = decode_one(&bytes) else { panic!("not a response") };
        prop_assert_eq!(r.id.as_ref(), Some(&id));
        let got: Value = r.outcome.unwrap().parse().unwrap();
        prop_assert_eq!(got, Value::Object(result));

        let mut error = ErrorObject::new(code, message);
        error.data = data;
        let bytes = vellum::protocol::encode_error(Some(&id), &error);
        let Message::Response(r) = decode_one(&bytes) else { panic!("not a response") };
        prop_assert_eq!(r.id.as_ref(), Some(&id));
        prop_assert_eq!(r.outcome.unwrap_err(), error);
    }

    #[test]
    fn content_blocks_are_lossless(doc in content_block()) {
        lossless::<ContentBlock>(&doc)?;
    }

    #[test]
    fn tool_results_are_lossless(
        content in prop::collection::vec(content_block(), 0..4),
        structured in prop::option::of(object().prop_map(Value::Object)),
        is_error in prop::option::of(any::<bool>()),
        m in meta(),
    ) {
        let doc = with(json!({"content": content}), &[
            ("structuredContent", structured),
            ("isError", is_error.map(Value::Bool)),
            ("_meta", m),
        ]);
        lossless::<CallToolResult>(&doc)?;
    }

    #[test]
    fn initialize_params_are_lossless(
        version in text(),
        name in text(),
        client_version in text(),
        title in prop::option::of(text()),
        experimental in prop::option::of(object().prop_map(Value::Object)),
        roots in prop::option::of(any::<bool>()),
        m in meta(),
    ) {
        let mut capabilities = json!({});
        if let Some(e) = experimental {
            capabilities["experimental"] = e;
        }
        if let Some(list_changed) = roots {
            capabilities["roots"] = json!({"listChanged": list_changed});
        }
        let client_info = with(json!({"name": name, "version": client_version}), &[("title", title.map(Value::String))]);
        let doc = with(json!({
            "protocolVersion": version,
            "capabilities": capabilities,
            "clientInfo": client_info,
        }), &[("_meta", m)]);
        lossless::<InitializeParams>(&doc)?;
    }

    #[test]
    fn tools_are_lossless(
        name in text(),
        description in prop::option::of(text()),
        props in prop::collection::btree_map(text(), Just(json!({"type": "string"})), 0..4),
        read_only in prop::option::of(any::<bool>()),
        m in meta(),
    ) {
        let schema = json!({"type": "object", "properties": props});
        let annotations = read_only.map(|r| json!({"readOnlyHint": r}));
        let doc = with(json!({"name": name, "inputSchema": schema}), &[
            ("description", description.map(Value::String)),
            ("annotations", annotations),
            ("_meta", m),
        ]);
        lossless::<Tool>(&doc)?;
    }
}
