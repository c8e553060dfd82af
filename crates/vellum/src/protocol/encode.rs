//! The JSON-RPC encoder every transport uses: responses, errors, requests and notifications
//! written straight into one buffer (no intermediate `Value`).
//!
//! Not here: decoding and the message types (`jsonrpc.rs`).

use std::io::Write as _;

use bytes::{BufMut, Bytes, BytesMut};
use serde::Serialize;

use super::jsonrpc::{ErrorObject, RequestId};

const HEAD: &[u8] = br#"{"jsonrpc":"2.0","#;

fn write_id(buf: &mut Vec<u8>, id: &RequestId) {
    buf.extend_from_slice(br#""id":"#);
    match id {
        RequestId::Number(n) => {
            // Writing into a Vec cannot fail.
            let _ = write!(buf, "{n}");
        }
        RequestId::String(s) => {
            // Strings are escaped by serde_json; this cannot fail for a &str.
            let _ = serde_json::to_writer(&mut *buf, &**s);
        }
    }
}

/// Encodes a success response `{"jsonrpc":"2.0","id":…,"result":…}`.
pub fn encode_response<T: Serialize + ?Sized>(
    id: &RequestId,
    result: &T,
) -> Result<Bytes, serde_json::Error> {
    encode_response_with(id, |buf| serde_json::to_writer(buf, result))
}

/// Encodes a success response whose result `write` serializes straight into the buffer.
pub(crate) fn encode_response_with(
    id: &RequestId,
    write: impl FnOnce(&mut Vec<u8>) -> Result<(), serde_json::Error>,
) -> Result<Bytes, serde_json::Error> {
    let mut buf = Vec::with_capacity(256);
    buf.extend_from_slice(HEAD);
    write_id(&mut buf, id);
    buf.extend_from_slice(br#","result":"#);
    write(&mut buf)?;
    buf.push(b'}');
    Ok(Bytes::from(buf))
}

/// Encodes a success response around a result that is already JSON text.
pub fn encode_response_raw(id: &RequestId, result_json: &[u8]) -> Bytes {
    let mut buf = Vec::with_capacity(32 + result_json.len());
    buf.extend_from_slice(HEAD);
    write_id(&mut buf, id);
    buf.extend_from_slice(br#","result":"#);
    buf.extend_from_slice(result_json);
    buf.push(b'}');
    Bytes::from(buf)
}

/// Encodes an error response; `id` is `None` only when the request's id was unreadable, and
/// then the response has no `id` member: the MCP schema (2025-11-25 on) makes it optional
/// and never `null`, and the TypeScript SDK rejects an error response whose id is `null`.
pub fn encode_error(id: Option<&RequestId>, error: &ErrorObject) -> Bytes {
    let mut buf = Vec::with_capacity(96 + error.message.len());
    buf.extend_from_slice(HEAD);
    if let Some(id) = id {
        write_id(&mut buf, id);
        buf.push(b',');
    }
    buf.extend_from_slice(br#""error":"#);
    let mark = buf.len();
    if serde_json::to_writer(&mut buf, error).is_err() {
        // `data` failed to serialize (a non-string map key, say): send the error without it.
        let plain = ErrorObject::new(error.code, error.message.clone());
        buf.truncate(mark);
        let _ = serde_json::to_writer(&mut buf, &plain);
    }
    buf.push(b'}');
    Bytes::from(buf)
}

/// Encodes a request `{"jsonrpc":"2.0","id":…,"method":…,"params":…}`.
pub fn encode_request<P: Serialize + ?Sized>(
    id: &RequestId,
    method: &str,
    params: Option<&P>,
) -> Result<Bytes, serde_json::Error> {
    let mut buf = Vec::with_capacity(128);
    buf.extend_from_slice(HEAD);
    write_id(&mut buf, id);
    buf.extend_from_slice(br#","method":"#);
    serde_json::to_writer(&mut buf, method)?;
    if let Some(p) = params {
        buf.extend_from_slice(br#","params":"#);
        serde_json::to_writer(&mut buf, p)?;
    }
    buf.push(b'}');
    Ok(Bytes::from(buf))
}

/// Encodes a notification `{"jsonrpc":"2.0","method":…,"params":…}`.
pub fn encode_notification<P: Serialize + ?Sized>(
    method: &str,
    params: Option<&P>,
) -> Result<Bytes, serde_json::Error> {
    let mut buf = BytesMut::with_capacity(128).writer();
    {
        let b = buf.get_mut();
        b.extend_from_slice(br#"{"jsonrpc":"2.0","method":"#);
    }
    serde_json::to_writer(&mut buf, method)?;
    if let Some(p) = params {
        buf.get_mut().extend_from_slice(br#","params":"#);
        serde_json::to_writer(&mut buf, p)?;
    }
    buf.get_mut().put_u8(b'}');
    Ok(buf.into_inner().freeze())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn encodes() {
        let r = encode_response(&RequestId::from("x\"y"), &serde_json::json!({})).unwrap();
        assert_eq!(&r[..], br#"{"jsonrpc":"2.0","id":"x\"y","result":{}}"#);
        let e = encode_error(None, &ErrorObject::parse_error("bad"));
        assert_eq!(
            &e[..],
            br#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"bad"}}"#
        );
        let n = encode_notification::<()>("notifications/initialized", None).unwrap();
        assert_eq!(
            &n[..],
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
        );
    }
}
