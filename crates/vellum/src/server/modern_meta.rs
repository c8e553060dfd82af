//! Reading a 2026-07-28 request's context from its `_meta`: the one place that decides
//! whether `_meta` is complete and what it says ([`ModernMeta`]).
//!
//! Not here: transport checks (HTTP compares `_meta` with its headers, in the transport).

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use crate::protocol::echo;
use crate::protocol::{
    ClientCapabilities, ErrorObject, Implementation, LoggingLevel, ProtocolVersion,
    ProtocolVersions, RawJson, code, meta_keys,
};

/// What a modern (2026-07-28) request says about its client.
#[derive(Debug, Clone)]
pub(crate) struct ModernMeta {
    pub(crate) version: ProtocolVersion,
    /// The client's capabilities and identity (shared by its requests: see [`client_context`]).
    pub(crate) client: Arc<ClientContext>,
    pub(crate) log_level: Option<LoggingLevel>,
    /// The versions the server accepts (what `server/discover` lists): every one unless
    /// the transport narrowed them.
    pub(crate) accepted: ProtocolVersions,
}

impl ModernMeta {
    /// The context of a modern notification, which carries no required `_meta`.
    pub(crate) fn of_notification() -> Self {
        static NONE: OnceLock<Arc<ClientContext>> = OnceLock::new();
        ModernMeta {
            version: ProtocolVersion::V2026_07_28,
            client: NONE.get_or_init(Arc::default).clone(),
            log_level: None,
            accepted: ProtocolVersions::ALL,
        }
    }
}

/// The capabilities and identity a modern client sends with each request.
#[derive(Debug, Default)]
pub(crate) struct ClientContext {
    pub(crate) capabilities: ClientCapabilities,
    pub(crate) client_info: Option<Implementation>,
}

/// The last client context decoded on this thread, with the text it came from.
struct LastClient {
    capabilities: Box<str>,
    client_info: Option<Box<str>>,
    context: Arc<ClientContext>,
}

thread_local! {
    static LAST_CLIENT: RefCell<Option<LastClient>> = const { RefCell::new(None) };
}

/// The most text (capabilities and client info together) a kept client context may come
/// from: what real clients send is well under it, and a context kept after its request ends
/// must not let a client make the server hold a large one (its decoded form can be many
/// times its text).
const KEPT_CONTEXT_TEXT: usize = 4 * 1024;

/// The client context `_meta`'s capabilities and client info describe. A client repeats the
/// same two members in every request, so the last one decoded on this thread is kept with
/// its text (when under [`KEPT_CONTEXT_TEXT`]): a request that repeats it byte for byte
/// shares it instead of decoding and dropping two structures (one small entry per runtime
/// thread, whatever clients send).
fn client_context(
    capabilities: &RawValue,
    client_info: Option<&RawValue>,
) -> Result<Arc<ClientContext>, ErrorObject> {
    let hit = LAST_CLIENT.with_borrow(|last| {
        last.as_ref()
            .filter(|l| {
                *l.capabilities == *capabilities.get()
                    && l.client_info.as_deref() == client_info.map(RawValue::get)
            })
            .map(|l| l.context.clone())
    });
    if let Some(context) = hit {
        return Ok(context);
    }
    let caps = serde_json::from_str::<ClientCapabilities>(capabilities.get()).map_err(|e| {
        ErrorObject::invalid_params(format!("Invalid params: client capabilities: {e}"))
    })?;
    let info = client_info
        .map(|v| {
            serde_json::from_str::<Implementation>(v.get()).map_err(|e| {
                ErrorObject::invalid_params(format!("Invalid params: client info: {e}"))
            })
        })
        .transpose()?;
    let context = Arc::new(ClientContext {
        capabilities: caps,
        client_info: info,
    });
    let text = capabilities.get().len() + client_info.map_or(0, |v| v.get().len());
    if text > KEPT_CONTEXT_TEXT {
        return Ok(context);
    }
    LAST_CLIENT.set(Some(LastClient {
        capabilities: capabilities.get().into(),
        client_info: client_info.map(|v| v.get().into()),
        context: context.clone(),
    }));
    Ok(context)
}

/// The members of a modern request's `_meta` the server reads, borrowed from the request's
/// bytes: each is decoded only when needed, and nothing is copied to look at the version.
#[derive(Deserialize, Default)]
pub(crate) struct MetaFields<'a> {
    #[serde(
        rename = "io.modelcontextprotocol/protocolVersion",
        borrow,
        default,
        deserialize_with = "present"
    )]
    version: Option<&'a RawValue>,
    #[serde(
        rename = "io.modelcontextprotocol/clientCapabilities",
        borrow,
        default,
        deserialize_with = "present"
    )]
    capabilities: Option<&'a RawValue>,
    #[serde(
        rename = "io.modelcontextprotocol/clientInfo",
        borrow,
        default,
        deserialize_with = "present"
    )]
    client_info: Option<&'a RawValue>,
    #[serde(
        rename = "io.modelcontextprotocol/logLevel",
        borrow,
        default,
        deserialize_with = "present"
    )]
    log_level: Option<&'a RawValue>,
}

/// A member that is present, even as `null` (which `Option` alone would read as absent).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// A JSON string, borrowed unless it has escapes; `None` for any other JSON value.
pub(crate) fn raw_str(raw: &RawValue) -> Option<Cow<'_, str>> {
    match serde_json::from_str::<&str>(raw.get()) {
        Ok(s) => Some(Cow::Borrowed(s)),
        Err(_) => serde_json::from_str::<String>(raw.get())
            .ok()
            .map(Cow::Owned),
    }
}

impl<'a> MetaFields<'a> {
    /// The protocol version it names, if any (a string).
    pub(crate) fn version(&self) -> Option<Cow<'a, str>> {
        self.version.and_then(raw_str)
    }
}

/// The `_meta` of a request's params, if it has one (without decoding the rest).
pub(crate) fn request_meta(
    params: Option<&RawJson>,
) -> Result<Option<MetaFields<'_>>, ErrorObject> {
    #[derive(Deserialize)]
    struct MetaOnly<'a> {
        #[serde(rename = "_meta", borrow, default)]
        meta: Option<MetaFields<'a>>,
    }
    match params {
        None => Ok(None),
        Some(p) => serde_json::from_slice::<MetaOnly<'_>>(p.as_bytes())
            .map(|m| m.meta)
            .map_err(|e| {
                ErrorObject::invalid_params(format!("Invalid params: {}", echo(&e.to_string())))
            }),
    }
}

/// The error for a version this server does not accept in the modern era (`supported`: the
/// ones it does).
pub(crate) fn unsupported_version(requested: &str, supported: ProtocolVersions) -> ErrorObject {
    let supported = supported.wire_names();
    ErrorObject::new(
        code::UNSUPPORTED_PROTOCOL_VERSION,
        format!("Unsupported protocol version: {requested}"),
    )
    .with_data(serde_json::json!({ "supported": supported, "requested": requested }))
}

/// Checks a modern request's `_meta` and returns the client context it describes.
pub(crate) fn parse_meta(meta: Option<&MetaFields<'_>>) -> Result<ModernMeta, ErrorObject> {
    let Some(meta) = meta else {
        return Err(ErrorObject::invalid_params(
            "Invalid params: _meta is required",
        ));
    };
    let Some(requested) = meta.version() else {
        return Err(ErrorObject::invalid_params(format!(
            "Invalid params: _meta[{:?}] is required",
            meta_keys::PROTOCOL_VERSION
        )));
    };
    let Some(version) = ProtocolVersion::parse(&requested).filter(|v| v.is_modern()) else {
        return Err(unsupported_version(&requested, ProtocolVersions::ALL));
    };
    let Some(capabilities) = meta.capabilities else {
        return Err(ErrorObject::invalid_params(format!(
            "Invalid params: _meta[{:?}] is required",
            meta_keys::CLIENT_CAPABILITIES
        )));
    };
    let client = client_context(capabilities, meta.client_info)?;
    let log_level = meta
        .log_level
        .map(|v| {
            serde_json::from_str::<LoggingLevel>(v.get())
                .map_err(|_| ErrorObject::invalid_params("Invalid params: unknown log level"))
        })
        .transpose()?;
    Ok(ModernMeta {
        version,
        client,
        log_level,
        accepted: ProtocolVersions::ALL,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// Checks `_meta` (as JSON) the way a request's would be.
    fn parse(meta: &Value) -> Result<ModernMeta, ErrorObject> {
        let text = meta.to_string();
        let fields: MetaFields<'_> = serde_json::from_str(&text).unwrap();
        parse_meta(Some(&fields))
    }

    #[test]
    fn meta_rules() {
        assert_eq!(parse_meta(None).unwrap_err().code, code::INVALID_PARAMS);
        let no_caps = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
        assert_eq!(parse(&no_caps).unwrap_err().code, code::INVALID_PARAMS);
        let future = json!({"io.modelcontextprotocol/protocolVersion": "2099-01-01", "io.modelcontextprotocol/clientCapabilities": {}});
        let e = parse(&future).unwrap_err();
        assert_eq!(e.code, code::UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(e.data.unwrap()["requested"], "2099-01-01");
        let ok = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
            "io.modelcontextprotocol/logLevel": "info"
        });
        let meta = parse(&ok).unwrap();
        assert!(meta.client.capabilities.supports_form_elicitation());
        // The client context kept from the last request is used only for the same text.
        let again = parse(&ok).unwrap();
        assert!(Arc::ptr_eq(&meta.client, &again.client));
        let other = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "other", "version": "2"}
        });
        let other = parse(&other).unwrap();
        assert!(!other.client.capabilities.supports_form_elicitation());
        assert_eq!(other.client.client_info.as_ref().unwrap().name, "other");
        let back = parse(&ok).unwrap();
        assert!(back.client.capabilities.supports_form_elicitation());
        assert!(back.client.client_info.is_none());
        // A large context is decoded for its request and not kept.
        let large = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"experimental": {"x": "y".repeat(KEPT_CONTEXT_TEXT)}}
        });
        let first = parse(&large).unwrap();
        let second = parse(&large).unwrap();
        assert!(!Arc::ptr_eq(&first.client, &second.client));
        assert!(LAST_CLIENT.with_borrow(|l| {
            l.as_ref()
                .is_some_and(|l| l.capabilities.len() < KEPT_CONTEXT_TEXT)
        }));
        assert_eq!(meta.log_level, Some(LoggingLevel::Info));
        let bad_level = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/logLevel": "loud"
        });
        assert!(parse(&bad_level).is_err());
        // `null` capabilities are present and wrong (not missing); an escaped version is
        // still read.
        let null_caps = r#"{
            "io.modelcontextprotocol/protocolVersion": "2026\u002d07-28",
            "io.modelcontextprotocol/clientCapabilities": null
        }"#;
        let fields: MetaFields<'_> = serde_json::from_str(null_caps).unwrap();
        assert_eq!(fields.version().as_deref(), Some("2026-07-28"));
        let e = parse_meta(Some(&fields)).unwrap_err();
        assert!(e.message.contains("client capabilities"), "{}", e.message);
    }
}
