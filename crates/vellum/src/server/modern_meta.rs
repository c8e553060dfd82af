//! Reading a 2026-07-28 request's context from its `_meta`: the one place that decides
//! whether `_meta` is complete and what it says ([`ModernMeta`]).
//!
//! Not here: transport checks (HTTP compares `_meta` with its headers, in the transport).

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::protocol::{
    ClientCapabilities, ErrorObject, Implementation, LoggingLevel, ProtocolVersion, RawJson, code,
    meta_keys,
};

/// What a modern (2026-07-28) request says about its client.
#[derive(Debug, Clone)]
pub(crate) struct ModernMeta {
    pub(crate) version: ProtocolVersion,
    pub(crate) capabilities: ClientCapabilities,
    pub(crate) client_info: Option<Implementation>,
    pub(crate) log_level: Option<LoggingLevel>,
}

impl ModernMeta {
    /// The context of a modern notification, which carries no required `_meta`.
    pub(crate) fn of_notification() -> Self {
        ModernMeta {
            version: ProtocolVersion::V2026_07_28,
            capabilities: ClientCapabilities::default(),
            client_info: None,
            log_level: None,
        }
    }
}

/// The `_meta` of a request's params, if it has one (without decoding the rest).
pub(crate) fn request_meta(
    params: Option<&RawJson>,
) -> Result<Option<Map<String, Value>>, ErrorObject> {
    #[derive(Deserialize)]
    struct MetaOnly {
        #[serde(rename = "_meta", default)]
        meta: Option<Map<String, Value>>,
    }
    match params {
        None => Ok(None),
        Some(p) => p
            .parse::<MetaOnly>()
            .map(|m| m.meta)
            .map_err(|e| ErrorObject::invalid_params(format!("Invalid params: {e}"))),
    }
}

/// The protocol version a `_meta` names, if any.
pub(crate) fn meta_version(meta: &Map<String, Value>) -> Option<&str> {
    meta.get(meta_keys::PROTOCOL_VERSION)
        .and_then(Value::as_str)
}

/// The error for a version this server does not speak in the modern era.
pub(crate) fn unsupported_version(requested: &str) -> ErrorObject {
    let supported: Vec<&str> = ProtocolVersion::ALL.iter().map(|v| v.as_str()).collect();
    ErrorObject::new(
        code::UNSUPPORTED_PROTOCOL_VERSION,
        format!("Unsupported protocol version: {requested}"),
    )
    .with_data(serde_json::json!({ "supported": supported, "requested": requested }))
}

/// Checks a modern request's `_meta` and returns the client context it describes.
pub(crate) fn parse_meta(meta: Option<&Map<String, Value>>) -> Result<ModernMeta, ErrorObject> {
    let Some(meta) = meta else {
        return Err(ErrorObject::invalid_params(
            "Invalid params: _meta is required",
        ));
    };
    let Some(requested) = meta_version(meta) else {
        return Err(ErrorObject::invalid_params(format!(
            "Invalid params: _meta[{:?}] is required",
            meta_keys::PROTOCOL_VERSION
        )));
    };
    let Some(version) = ProtocolVersion::parse(requested).filter(|v| v.is_modern()) else {
        return Err(unsupported_version(requested));
    };
    let capabilities = match meta.get(meta_keys::CLIENT_CAPABILITIES) {
        None => {
            return Err(ErrorObject::invalid_params(format!(
                "Invalid params: _meta[{:?}] is required",
                meta_keys::CLIENT_CAPABILITIES
            )));
        }
        Some(v) => ClientCapabilities::deserialize(v).map_err(|e| {
            ErrorObject::invalid_params(format!("Invalid params: client capabilities: {e}"))
        })?,
    };
    let client_info = meta
        .get(meta_keys::CLIENT_INFO)
        .map(|v| {
            Implementation::deserialize(v).map_err(|e| {
                ErrorObject::invalid_params(format!("Invalid params: client info: {e}"))
            })
        })
        .transpose()?;
    let log_level = meta
        .get(meta_keys::LOG_LEVEL)
        .map(|v| {
            LoggingLevel::deserialize(v)
                .map_err(|_| ErrorObject::invalid_params("Invalid params: unknown log level"))
        })
        .transpose()?;
    Ok(ModernMeta {
        version,
        capabilities,
        client_info,
        log_level,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn m(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn meta_rules() {
        assert_eq!(parse_meta(None).unwrap_err().code, code::INVALID_PARAMS);
        let no_caps = m(json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"}));
        assert_eq!(
            parse_meta(Some(&no_caps)).unwrap_err().code,
            code::INVALID_PARAMS
        );
        let future = m(
            json!({"io.modelcontextprotocol/protocolVersion": "2099-01-01", "io.modelcontextprotocol/clientCapabilities": {}}),
        );
        let e = parse_meta(Some(&future)).unwrap_err();
        assert_eq!(e.code, code::UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(e.data.unwrap()["requested"], "2099-01-01");
        let ok = m(json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
            "io.modelcontextprotocol/logLevel": "info"
        }));
        let meta = parse_meta(Some(&ok)).unwrap();
        assert!(meta.capabilities.supports_form_elicitation());
        assert_eq!(meta.log_level, Some(LoggingLevel::Info));
        let bad_level = m(json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/logLevel": "loud"
        }));
        assert!(parse_meta(Some(&bad_level)).is_err());
    }
}
