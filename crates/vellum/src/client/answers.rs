//! Answering the server's questions with the client's callbacks, in either era: a legacy
//! server's JSON-RPC requests (`ping`, sampling, elicitation, roots) and a modern server's
//! MRTR input requests lead to the same callback.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::config::Config;
use crate::protocol::{ElicitParams, ErrorObject, InputRequest, Request, methods};

/// The answer to a legacy server's request.
pub(super) async fn answer_request(config: &Config, r: &Request) -> Result<Value, ErrorObject> {
    fn params<T: DeserializeOwned>(r: &Request) -> Result<T, ErrorObject> {
        let raw = r
            .params
            .as_ref()
            .ok_or_else(|| ErrorObject::invalid_params("Invalid params: missing params"))?;
        raw.parse()
            .map_err(|e| ErrorObject::invalid_params(format!("Invalid params: {e}")))
    }
    let request = match r.method.as_str() {
        methods::PING => return Ok(json!({})),
        methods::SAMPLING_CREATE_MESSAGE => InputRequest::CreateMessage(params(r)?),
        methods::ELICITATION_CREATE => InputRequest::Elicit(params(r)?),
        methods::ROOTS_LIST => InputRequest::ListRoots,
        other => return Err(ErrorObject::method_not_found(other)),
    };
    answer_input(config, request).await
}

/// Runs the callback for one question of the server (either era).
pub(super) async fn answer_input(
    config: &Config,
    request: InputRequest,
) -> Result<Value, ErrorObject> {
    fn encode<T: Serialize>(v: T) -> Result<Value, ErrorObject> {
        serde_json::to_value(v).map_err(|e| ErrorObject::internal(e.to_string()))
    }
    match request {
        InputRequest::CreateMessage(p) => match &config.sampling {
            Some(f) => encode(f(p).await?),
            None => Err(ErrorObject::method_not_found(
                methods::SAMPLING_CREATE_MESSAGE,
            )),
        },
        InputRequest::Elicit(p) => match (&config.elicitation, &p) {
            (None, _) => Err(ErrorObject::method_not_found(methods::ELICITATION_CREATE)),
            (Some(_), ElicitParams::Url(_)) if !config.elicitation_url => {
                Err(ErrorObject::invalid_params(
                    "Invalid params: this client does not support URL elicitation",
                ))
            }
            (Some(f), _) => encode(f(p).await?),
        },
        InputRequest::ListRoots => match &config.roots {
            Some(f) => encode(f().await?),
            None => Err(ErrorObject::method_not_found(methods::ROOTS_LIST)),
        },
    }
}
