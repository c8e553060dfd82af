//! The handshake: the `server/discover` probe of the 2026-07-28 era, the legacy `initialize`
//! fallback (the spec's era detection), and the new legacy session started when the server
//! forgot ours.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use serde_json::{Map, Value};

use super::call_options::CallOptions;
use super::config::ProtocolChoice;
use super::engine::{Era, to_object};
use super::handle::{Client, SessionState};
use super::input_rounds::complete_result;
use crate::error::{Error, Violation};
use crate::protocol::{
    DiscoverResult, ErrorObject, Implementation, InitializeParams, InitializeResult,
    ProtocolVersion, SetLevelParams, code, meta_keys, methods,
};
use crate::sync::read;

impl Client {
    /// Establishes the session in the era the configuration asks for.
    pub(super) async fn handshake(&self) -> Result<(), Error> {
        match self.inner.config.protocol {
            ProtocolChoice::Legacy => self.initialize().await,
            ProtocolChoice::Modern => self.discover(ProtocolVersion::LATEST.as_str()).await,
            ProtocolChoice::Auto => match self.discover(ProtocolVersion::LATEST.as_str()).await {
                Ok(()) => Ok(()),
                Err(err) if err.rpc_error().is_some_and(is_modern_error) => {
                    // A modern server that wants another version: take the newest both speak.
                    let Some(v) = err.rpc_error().and_then(pick_version) else {
                        return Err(err);
                    };
                    if ProtocolVersion::parse(&v).is_some_and(|v| v.is_modern()) {
                        self.discover(&v).await
                    } else {
                        self.initialize().await
                    }
                }
                Err(e) => {
                    tracing::debug!(
                        "server/discover failed ({}); trying the legacy handshake",
                        crate::error::chain(&e)
                    );
                    self.initialize().await
                }
            },
        }
    }

    /// The modern handshake: `server/discover`.
    async fn discover(&self, version: &str) -> Result<(), Error> {
        let opts = CallOptions {
            timeout: Some(self.inner.config.probe_timeout),
            ..Default::default()
        };
        let era = Era::Handshake {
            modern: true,
            version,
        };
        let raw = self
            .call_once(methods::DISCOVER, &Map::new(), &opts, era, None)
            .await?;
        let result: DiscoverResult = complete_result(&raw)?;
        if !result.supported_versions.iter().any(|v| v == version) {
            return Err(Error::protocol(Violation::DiscoverWithout {
                version: version.to_owned(),
                listed: result.supported_versions,
            }));
        }
        let server_info = result
            .meta
            .as_ref()
            .and_then(|m| m.get_as::<Implementation>(meta_keys::SERVER_INFO))
            .and_then(Result::ok);
        self.set_state(SessionState {
            modern: true,
            version: version.to_owned(),
            server_info,
            capabilities: result.capabilities,
            instructions: result.instructions,
            supported_versions: result.supported_versions,
            tool_headers: HashMap::new(),
        });
        Ok(())
    }

    /// The legacy handshake: `initialize`, then `notifications/initialized`.
    async fn initialize(&self) -> Result<(), Error> {
        let config = &self.inner.config;
        let asked = config
            .initialize_version
            .clone()
            .unwrap_or_else(|| ProtocolVersion::LATEST_LEGACY.as_str().to_owned());
        let params = InitializeParams {
            capabilities: config.capabilities(ProtocolVersion::parse(&asked)),
            protocol_version: asked,
            client_info: config.info.clone(),
            meta: None,
        };
        let opts = CallOptions::default();
        let era = Era::Handshake {
            modern: false,
            version: "",
        };
        let raw = self
            .call_once(methods::INITIALIZE, &to_object(&params)?, &opts, era, None)
            .await?;
        let result: InitializeResult = raw.parse()?;
        let version = result.protocol_version;
        let known = ProtocolVersion::parse(&version).is_some_and(|v| !v.is_modern())
            || version == "2024-11-05";
        if !known {
            return Err(Error::protocol(Violation::UnknownVersion { version }));
        }
        self.set_state(SessionState {
            modern: false,
            version: version.clone(),
            server_info: Some(result.server_info),
            capabilities: result.capabilities,
            instructions: result.instructions,
            supported_versions: Vec::new(),
            tool_headers: HashMap::new(),
        });
        self.notify(methods::INITIALIZED, None).await?;
        self.inner.transport.session_started(&version).await;
        let level = *read(&self.inner.log_level);
        if let Some(level) = level
            && self.server_capabilities().logging.is_some()
        {
            // Straight to one attempt: a failure here must not start another handshake.
            let params = SetLevelParams { level, meta: None };
            self.call_once(
                methods::LOGGING_SET_LEVEL,
                &to_object(&params)?,
                &CallOptions::default(),
                Era::Session,
                None,
            )
            .await?;
        }
        Ok(())
    }

    /// Starts a new legacy session after the server forgot ours (HTTP 404), once for all the
    /// calls that noticed it at the same time.
    pub(super) fn reinitialize(
        &self,
        seen_generation: u64,
    ) -> futures_util::future::BoxFuture<'_, Result<(), Error>> {
        // Boxed: the handshake's own calls go through the engine that called us.
        Box::pin(async move {
            let _one = self.inner.reinit.lock().await;
            if self.inner.generation.load(Ordering::Acquire) != seen_generation {
                return Ok(()); // Another call already did it.
            }
            tracing::debug!("the server ended the session; initializing a new one");
            self.inner.transport.session_reset();
            self.initialize().await
        })
    }
}

/// True for the errors only a modern server sends (the spec's era-detection markers).
fn is_modern_error(e: &ErrorObject) -> bool {
    matches!(
        e.code,
        code::UNSUPPORTED_PROTOCOL_VERSION
            | code::MISSING_REQUIRED_CLIENT_CAPABILITY
            | code::HEADER_MISMATCH
    )
}

/// The newest version in an `UnsupportedProtocolVersion` error's `supported` list that this
/// client speaks.
fn pick_version(e: &ErrorObject) -> Option<String> {
    let supported = e.data.as_ref()?.get("supported")?.as_array()?;
    let mut ours: Vec<ProtocolVersion> = supported
        .iter()
        .filter_map(Value::as_str)
        .filter_map(ProtocolVersion::parse)
        .collect();
    ours.sort();
    ours.last().map(|v| v.as_str().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn picks_the_newest_supported_version() {
        let e = ErrorObject::new(code::UNSUPPORTED_PROTOCOL_VERSION, "no").with_data(
            json!({"supported": ["2025-06-18", "2026-07-28", "2099-01-01"], "requested": "x"}),
        );
        assert_eq!(pick_version(&e).as_deref(), Some("2026-07-28"));
        let e = ErrorObject::new(code::UNSUPPORTED_PROTOCOL_VERSION, "no")
            .with_data(json!({"supported": ["2099-01-01"]}));
        assert_eq!(pick_version(&e), None);
        assert!(is_modern_error(&ErrorObject::new(
            code::HEADER_MISMATCH,
            "x"
        )));
        assert!(!is_modern_error(&ErrorObject::invalid_params("x")));
    }
}
