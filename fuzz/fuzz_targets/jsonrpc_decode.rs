//! JSON-RPC / MCP message decoding: `jsonrpc::decode` on arbitrary bytes, then the typed
//! params of every request and notification it accepts. A decoded value must survive
//! serialize → parse → serialize unchanged (the protocol types round-trip).
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use serde::Serialize;
use serde::de::DeserializeOwned;
use vellum::protocol::{self as p, Message, Payload, RawJson};

/// Parses `raw` as `T`; when it parses, checks that re-serializing is stable.
fn typed<T: DeserializeOwned + Serialize>(raw: &RawJson) {
    let Ok(v) = raw.parse::<T>() else { return };
    let first = serde_json::to_value(&v).expect("a parsed value serializes");
    let again: T = serde_json::from_value(first.clone()).expect("a serialized value parses");
    let second = serde_json::to_value(&again).expect("a parsed value serializes");
    assert_eq!(
        first, second,
        "serialize → parse → serialize changed the value"
    );
}

fn params(method: &str, raw: &RawJson) {
    match method {
        "initialize" => typed::<p::InitializeParams>(raw),
        "tools/call" => typed::<p::CallToolParams>(raw),
        "resources/read" => typed::<p::ReadResourceParams>(raw),
        "resources/subscribe" | "resources/unsubscribe" => typed::<p::SubscribeParams>(raw),
        "prompts/get" => typed::<p::GetPromptParams>(raw),
        "completion/complete" => typed::<p::CompleteParams>(raw),
        "logging/setLevel" => typed::<p::SetLevelParams>(raw),
        "sampling/createMessage" => typed::<p::CreateMessageParams>(raw),
        "elicitation/create" => typed::<p::ElicitParams>(raw),
        "notifications/progress" => typed::<p::ProgressParams>(raw),
        "notifications/cancelled" => typed::<p::CancelledParams>(raw),
        "notifications/message" => typed::<p::LoggingMessageParams>(raw),
        "subscriptions/listen" => typed::<p::SubscriptionsListenParams>(raw),
        "tasks/get" | "tasks/cancel" | "tasks/result" => typed::<p::TaskIdParams>(raw),
        _ => typed::<p::PaginatedParams>(raw),
    }
}

fn message(m: &Message) {
    match m {
        Message::Request(r) => {
            if let Some(raw) = &r.params {
                params(&r.method, raw);
            }
        }
        Message::Notification(n) => {
            if let Some(raw) = &n.params {
                params(&n.method, raw);
            }
        }
        Message::Response(r) => {
            // Results the server reads from clients.
            if let Ok(raw) = &r.outcome {
                typed::<p::CreateMessageResult>(raw);
                typed::<p::ElicitResult>(raw);
                typed::<p::ListRootsResult>(raw);
                typed::<p::CallToolResult>(raw);
                typed::<p::InitializeResult>(raw);
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let bytes = Bytes::copy_from_slice(data);
    match p::decode(&bytes) {
        Ok(Payload::Single(m)) => message(&m),
        Ok(Payload::Batch(v)) => v.iter().for_each(message),
        Err(e) => {
            // Every refusal maps to a JSON-RPC error object.
            let _ = p::encode_error(e.id(), &e.to_error_object());
        }
    }
    let _ = p::decode_message(&bytes);
});
