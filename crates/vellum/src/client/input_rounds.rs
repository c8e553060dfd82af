//! Multi round-trip requests (MRTR, 2026-07-28) on the client side: a modern server that
//! needs input answers with an `InputRequiredResult`; the client runs its callbacks for the
//! questions and retries the request with `inputResponses` (and the server's
//! `requestState`), up to the configured number of rounds.
//!
//! Every typed call goes through [`Client::call`], so legacy results (which never ask for
//! input) take the same path with one round.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::answers::answer_input;
use super::call_options::CallOptions;
use super::handle::Client;
use crate::error::{Error, Unsupported, Violation};
use crate::protocol::{InputRequests, RawJson, ResultType};

impl Client {
    /// Sends a request and decodes its complete result (`resultType` checked), running the
    /// MRTR rounds of a modern server that needs input.
    pub(super) async fn call<R: DeserializeOwned>(
        &self,
        method: &str,
        params: Map<String, Value>,
        opts: &CallOptions,
    ) -> Result<R, Error> {
        Ok(self
            .call_rounds(method, params, opts, false)
            .await?
            .parse()?)
    }

    /// Sends a request and returns its complete result as it came (`resultType` checked),
    /// after the MRTR rounds of a modern server that needs input; with `accept_task`, a
    /// task the server made of the request is a result too.
    pub(super) async fn call_rounds(
        &self,
        method: &str,
        mut params: Map<String, Value>,
        opts: &CallOptions,
        accept_task: bool,
    ) -> Result<RawJson, Error> {
        let rounds = self.inner.config.max_input_rounds;
        for _ in 0..=rounds {
            let raw = self.call_raw(method, &params, opts).await?;
            let head: ResultHead = raw.parse()?;
            match head.result_type.unwrap_or_default() {
                ResultType::Complete => return Ok(raw),
                ResultType::InputRequired => {
                    let requests = head.input_requests.unwrap_or_default();
                    let responses = match &opts.input_round {
                        Some(f) => f(requests).await?,
                        None => self.answer_inputs(requests).await?,
                    };
                    if responses.is_empty() {
                        params.remove("inputResponses");
                    } else {
                        params.insert("inputResponses".to_owned(), Value::Object(responses));
                    }
                    match head.request_state {
                        Some(s) => params.insert("requestState".to_owned(), Value::String(s)),
                        None => params.remove("requestState"),
                    };
                }
                ResultType::Task if accept_task => return Ok(raw),
                ResultType::Task => {
                    return Err(Error::unsupported(Unsupported::UnrequestedTask));
                }
                ResultType::Other(t) => {
                    return Err(Error::protocol(Violation::UnknownResultType {
                        result_type: t,
                    }));
                }
            }
        }
        Err(Error::protocol(Violation::InputRounds { rounds }))
    }

    /// Answers a modern server's input requests with the client's callbacks.
    async fn answer_inputs(&self, requests: InputRequests) -> Result<Map<String, Value>, Error> {
        let mut out = Map::new();
        for (key, request) in requests {
            let answer = answer_input(&self.inner.config, request)
                .await
                .map_err(Error::rpc)?;
            out.insert(key, answer);
        }
        Ok(out)
    }
}

/// The parts of any result the client checks before decoding it.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResultHead {
    #[serde(default)]
    result_type: Option<ResultType>,
    #[serde(default)]
    input_requests: Option<InputRequests>,
    #[serde(default)]
    request_state: Option<String>,
}

/// Decodes a result that must be complete (a handshake's): any other `resultType` is a
/// protocol error.
pub(super) fn complete_result<R: DeserializeOwned>(raw: &RawJson) -> Result<R, Error> {
    let head: ResultHead = raw.parse()?;
    match head.result_type.unwrap_or_default() {
        ResultType::Complete => Ok(raw.parse()?),
        other => Err(Error::protocol(Violation::NotComplete {
            result_type: other.as_str().to_owned(),
        })),
    }
}
