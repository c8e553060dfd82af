//! Canned answers and the little byte scanning that picks one.
//!
//! No JSON parser: the null server finds `"method"` and `"id"` by scanning the request bytes and
//! copies the id's raw bytes into the answer, which is all `mcpbench`'s checks need.

/// What a request body asks for, as far as the null server cares.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Kind<'a> {
    /// No `id`: answer 202 Accepted with no body.
    Notification,
    /// `initialize`: a canned result, plus a session id header.
    Initialize { id: &'a [u8] },
    /// Anything else with an id: the canned `hello_world` result.
    Call { id: &'a [u8] },
}

/// Classifies a request body by scanning for `"id"` and `"method":"initialize"`.
pub(crate) fn classify(body: &[u8]) -> Kind<'_> {
    let Some(id) = raw_value_after(body, b"\"id\"") else {
        return Kind::Notification;
    };
    let is_init = raw_value_after(body, b"\"method\"").is_some_and(|m| m == b"\"initialize\"");
    if is_init {
        Kind::Initialize { id }
    } else {
        Kind::Call { id }
    }
}

/// The raw bytes of the scalar value following the first occurrence of `key` and a colon.
fn raw_value_after<'a>(body: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let start = body.windows(key.len()).position(|w| w == key)? + key.len();
    let rest = &body[start..];
    let colon = rest.iter().position(|&b| !b.is_ascii_whitespace())?;
    if rest[colon] != b':' {
        return None;
    }
    let rest = &rest[colon + 1..];
    let begin = rest.iter().position(|&b| !b.is_ascii_whitespace())?;
    let rest = &rest[begin..];
    let len = if rest.first() == Some(&b'"') {
        // A string: up to the closing quote (ids and method names carry no escapes here).
        rest[1..].iter().position(|&b| b == b'"')? + 2
    } else {
        rest.iter()
            .position(|&b| b == b',' || b == b'}' || b.is_ascii_whitespace())
            .unwrap_or(rest.len())
    };
    Some(&rest[..len])
}

/// The canned `initialize` result.
pub(crate) fn initialize(id: &[u8]) -> Vec<u8> {
    wrap(
        id,
        br#"{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"nullserver","version":"0.1.0"}}"#,
    )
}

/// The canned `tools/call` result of `hello_world` for `user_name = "bench"`.
pub(crate) fn tool_result(id: &[u8]) -> Vec<u8> {
    wrap(
        id,
        br#"{"content":[{"type":"text","text":"Hello World, bench"}],"isError":false}"#,
    )
}

fn wrap(id: &[u8], result: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(40 + id.len() + result.len());
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    out.extend_from_slice(id);
    out.extend_from_slice(br#","result":"#);
    out.extend_from_slice(result);
    out.push(b'}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_requests() {
        let init = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#;
        assert_eq!(classify(init), Kind::Initialize { id: b"0" });
        let call = br#"{"jsonrpc":"2.0","id": "a-7" ,"method":"tools/call"}"#;
        assert_eq!(classify(call), Kind::Call { id: b"\"a-7\"" });
        let note = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        assert_eq!(classify(note), Kind::Notification);
    }

    #[test]
    fn echoes_the_id() {
        let out = tool_result(b"42");
        assert!(out.starts_with(br#"{"jsonrpc":"2.0","id":42,"result":"#));
    }
}
