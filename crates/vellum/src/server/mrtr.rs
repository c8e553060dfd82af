//! Multi round-trip requests (2026-07-28, SEP-2322): how a handler's questions to the client
//! (`ctx.elicit`, `ctx.create_message`, `ctx.list_roots`) become an `InputRequiredResult`, and
//! how the client's retry finds the answers again, so one handler serves both eras.
//!
//! A handler runs from the start on every retry. A question is keyed by the name the handler
//! gave it (`ctx.with_input_key("user_name")`), else by its number among the attempt's unnamed
//! questions (`"1"`, `"2"`, …). A question without an answer fails with
//! an input-required `Error`; when the handler ends, every question it left unanswered (several
//! when it asked them concurrently, e.g. with `tokio::join!`) goes into one
//! `InputRequiredResult`, with a `requestState` (every round, the first included) that carries
//! the answers the attempt used. The retry brings the new answers in `inputResponses` and the
//! earlier ones back in `requestState`, so a handler that asks twice in a row finishes on its
//! second retry.
//!
//! `requestState` is attacker-controlled input (the client echoes it): it is signed with
//! HMAC-SHA256 under the server's [`RequestStateKey`] and bound to the method, a digest of the
//! request's parameters (without `_meta`, `inputResponses` and `requestState`), the caller
//! (when an auth layer identified one) and an expiry. A state that fails any check is
//! rejected with -32602. Servers that share a key (several instances behind a load balancer)
//! accept each other's states.
//!
//! Not here: legacy sessions, where the same questions are JSON-RPC requests to the client
//! (see `Session::request_client`).

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::config_error::{ConfigError, Kind as ConfigKind};
use crate::protocol::{
    ErrorObject, InputRequest, InputRequests, InputRequiredResult, InputResponses, RawJson,
};

/// The secret that signs `requestState` (HMAC-SHA256).
///
/// By default every [`Server`](super::Server) makes a random one; give the same key to every
/// instance that may receive a retry (`ServerOptions::with_request_state_key`).
#[derive(Clone)]
pub struct RequestStateKey {
    /// The key new states are signed with.
    sign: [u8; 32],
    /// Keys whose states are still accepted (rotation: the previous keys).
    verify_also: Vec<[u8; 32]>,
}

impl std::fmt::Debug for RequestStateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "RequestStateKey(.., {} verify-only)",
            self.verify_also.len()
        )
    }
}

impl RequestStateKey {
    /// A fresh key from the operating system's random source.
    pub fn random() -> Self {
        let mut k = [0u8; 32];
        if getrandom::fill(&mut k).is_err() {
            // No OS randomness: derive something unpredictable enough from time and address
            // rather than fail server construction. The key never leaves the process.
            let seed = format!("{:?}{:p}", SystemTime::now(), &k);
            k = Sha256::digest(seed.as_bytes()).into();
        }
        RequestStateKey {
            sign: k,
            verify_also: Vec::new(),
        }
    }

    /// A key derived from a shared secret (any length; use at least 32 random bytes).
    pub fn from_secret(secret: impl AsRef<[u8]>) -> Self {
        RequestStateKey {
            sign: Sha256::digest(secret.as_ref()).into(),
            verify_also: Vec::new(),
        }
    }

    /// This key, also accepting states signed with `older` (and the keys `older` accepts):
    /// during a rotation every instance signs with the new key and still verifies what the
    /// old one signed, so no retry in flight is refused.
    pub fn also_verifying(mut self, older: &RequestStateKey) -> Self {
        for k in std::iter::once(&older.sign).chain(&older.verify_also) {
            if *k != self.sign && !self.verify_also.contains(k) {
                self.verify_also.push(*k);
            }
        }
        self
    }

    /// The keys of a file with one secret per line (blank lines and lines starting with `#`
    /// skipped, surrounding spaces trimmed): the first signs, all verify. Rotating is then
    /// adding a new first line on every instance (old states still verify), and later
    /// dropping the old line.
    pub fn from_key_file(path: impl AsRef<std::path::Path>) -> Result<Self, ConfigError> {
        let path = path.as_ref();
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| {
            ConfigError::with_source(
                ConfigKind::KeyFileRead {
                    path: shown.clone(),
                },
                source,
            )
        })?;
        Self::from_lines(&text).ok_or_else(|| ConfigKind::KeyFileEmpty { path: shown }.into())
    }

    /// The keys of a key file's text (see [`RequestStateKey::from_key_file`]).
    fn from_lines(text: &str) -> Option<Self> {
        let mut secrets = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'));
        let mut key = Self::from_secret(secrets.next()?);
        for s in secrets {
            key = key.also_verifying(&Self::from_secret(s));
        }
        Some(key)
    }

    /// The signing key's MAC, then each verify-only key's.
    fn macs(&self) -> impl Iterator<Item = Hmac<Sha256>> + '_ {
        std::iter::once(&self.sign)
            .chain(&self.verify_also)
            .map(mac_of)
    }

    fn mac(&self) -> Hmac<Sha256> {
        mac_of(&self.sign)
    }
}

fn mac_of(key: &[u8; 32]) -> Hmac<Sha256> {
    // HMAC takes keys of any length; 32 bytes never fails.
    match <Hmac<Sha256> as KeyInit>::new_from_slice(key) {
        Ok(m) => m,
        Err(_) => unreachable_mac(),
    }
}

#[cold]
fn unreachable_mac() -> Hmac<Sha256> {
    // `new_from_slice` only fails for fixed-size keys of another length; HMAC has none.
    <Hmac<Sha256> as KeyInit>::new(&Default::default())
}

/// One answer carried from an earlier round.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Answer {
    /// The method of the question it answers (a handler that asks something else under the
    /// same key gets asked again rather than handed the wrong answer).
    m: String,
    /// The client's answer.
    r: Value,
}

/// The signed contents of a `requestState`.
#[derive(Serialize, Deserialize)]
struct StatePayload {
    /// Format version.
    v: u8,
    /// The request's method.
    m: String,
    /// Digest of the request's parameters.
    d: String,
    /// Expiry, seconds since the Unix epoch.
    e: u64,
    /// Digest of the caller's identity, when one is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    p: Option<String>,
    /// Answers by key.
    a: BTreeMap<String, Answer>,
}

/// What a request's state must match: the same method, parameters and caller.
pub(crate) struct Binding {
    pub(crate) method: String,
    pub(crate) params: Option<RawJson>,
    pub(crate) principal: Option<String>,
}

impl Binding {
    fn digest(&self) -> String {
        params_digest(self.params.as_ref())
    }
}

/// The MRTR bookkeeping of one attempt of a modern request.
#[derive(Default)]
pub(crate) struct Attempt {
    /// What the state is bound to; `None` until the dispatcher started an MRTR-capable method.
    binding: Option<Binding>,
    /// The client's answers sent with this attempt.
    responses: InputResponses,
    /// Verified answers of earlier rounds.
    earlier: BTreeMap<String, Answer>,
    /// Answers handed to the handler in this attempt, carried into the next state.
    used: BTreeMap<String, Answer>,
    /// Unnamed questions asked so far in this attempt (their keys are their numbers).
    asked: u32,
    /// The questions of this attempt still without an answer.
    pending: InputRequests,
    /// The first answer of the client that did not fit its question: the client's error,
    /// which decides the attempt's answer.
    invalid_answer: Option<ErrorObject>,
}

/// What the handler's next question gets.
pub(crate) enum NextAnswer {
    /// The client already answered it.
    Answered(Value),
    /// It must be asked, under this key (it is now pending).
    Ask(String),
}

impl Attempt {
    /// Starts an attempt: verifies the echoed state (if any) and keeps the new answers.
    pub(crate) fn begin(
        &mut self,
        key: &RequestStateKey,
        binding: Binding,
        responses: Option<InputResponses>,
        state: Option<&str>,
    ) -> Result<(), ErrorObject> {
        if let Some(token) = state {
            self.earlier = verify(key, token, &binding, now()).map_err(|why| {
                ErrorObject::invalid_params(format!("Invalid requestState: {why}"))
            })?;
        }
        self.responses = responses.unwrap_or_default();
        self.binding = Some(binding);
        Ok(())
    }

    /// Whether a question of this attempt is still without an answer.
    pub(crate) fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Records an answer of the wrong shape (the first one is kept).
    pub(crate) fn refuse_answer(&mut self, error: ErrorObject) {
        self.invalid_answer.get_or_insert(error);
    }

    /// The client's error of this attempt, if one of its answers did not fit.
    pub(crate) fn invalid_answer(&self) -> Option<ErrorObject> {
        self.invalid_answer.clone()
    }

    /// The answers handed to the handler in this attempt.
    pub(crate) fn used_answers(&self) -> InputResponses {
        self.used
            .iter()
            .map(|(k, a)| (k.clone(), a.r.clone()))
            .collect()
    }

    /// Answers collected outside the retry protocol (a task's `tasks/update`).
    pub(crate) fn set_answers(&mut self, answers: InputResponses) {
        self.responses = answers;
    }

    /// The answer to the handler's question `request` (named `name`, else numbered), or
    /// its key once it is pending.
    pub(crate) fn next(&mut self, name: Option<&str>, request: &InputRequest) -> NextAnswer {
        let method = request_method(request);
        let k = match name {
            Some(n) => n.to_owned(),
            None => {
                self.asked += 1;
                self.asked.to_string()
            }
        };
        let answer = match self.responses.remove(&k) {
            Some(r) => Some(r),
            None => self
                .earlier
                .remove(&k)
                .filter(|a| a.m == method)
                .map(|a| a.r),
        };
        if let Some(r) = answer {
            self.used.insert(
                k,
                Answer {
                    m: method.to_owned(),
                    r: r.clone(),
                },
            );
            return NextAnswer::Answered(r);
        }
        self.pending.insert(k.clone(), request.clone());
        NextAnswer::Ask(k)
    }

    /// The `InputRequiredResult` of an attempt whose handler ended asking: every question left
    /// pending (beside any the handler put in `r` itself) and, for a request that can be
    /// retried, a state signed over the answers used so far.
    pub(crate) fn finish(
        &mut self,
        key: &RequestStateKey,
        ttl: Duration,
        mut r: InputRequiredResult,
    ) -> InputRequiredResult {
        if !self.pending.is_empty() {
            r.input_requests
                .get_or_insert_with(Default::default)
                .append(&mut self.pending);
        }
        if r.request_state.is_none()
            && let Some(b) = &self.binding
        {
            r.request_state = Some(sign(
                key,
                &StatePayload {
                    v: 1,
                    m: b.method.clone(),
                    d: b.digest(),
                    e: now().saturating_add(ttl.as_secs()),
                    p: b.principal.clone(),
                    a: self.used.clone(),
                },
            ));
        }
        r
    }
}

/// The method a question is a request of.
fn request_method(r: &InputRequest) -> &'static str {
    use crate::protocol::methods;
    match r {
        InputRequest::Elicit(_) => methods::ELICITATION_CREATE,
        InputRequest::CreateMessage(_) => methods::SAMPLING_CREATE_MESSAGE,
        InputRequest::ListRoots => methods::ROOTS_LIST,
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn sign(key: &RequestStateKey, payload: &StatePayload) -> String {
    let body = serde_json::to_vec(payload).unwrap_or_default();
    let mut mac = key.mac();
    mac.update(&body);
    let tag = mac.finalize().into_bytes();
    format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(&body),
        URL_SAFE_NO_PAD.encode(tag)
    )
}

fn verify(
    key: &RequestStateKey,
    token: &str,
    binding: &Binding,
    now: u64,
) -> Result<BTreeMap<String, Answer>, &'static str> {
    let (body, tag) = token.split_once('.').ok_or("malformed")?;
    let body = URL_SAFE_NO_PAD.decode(body).map_err(|_| "malformed")?;
    let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| "malformed")?;
    // Constant-time comparison, under each accepted key (the signing one first).
    if !key.macs().any(|mut mac| {
        mac.update(&body);
        mac.verify_slice(&tag).is_ok()
    }) {
        return Err("bad signature");
    }
    let payload: StatePayload = serde_json::from_slice(&body).map_err(|_| "malformed")?;
    if payload.v != 1 {
        return Err("unknown format");
    }
    if payload.e < now {
        return Err("expired");
    }
    if payload.m != binding.method || payload.d != binding.digest() {
        return Err("issued for another request");
    }
    if payload.p != binding.principal {
        return Err("issued to another caller");
    }
    Ok(payload.a)
}

/// The parameters' digest: SHA-256 of their canonical JSON (keys sorted), leaving out what
/// legitimately changes between retries (`_meta`, `inputResponses`, `requestState`).
fn params_digest(params: Option<&RawJson>) -> String {
    let mut value = params
        .and_then(|p| p.parse::<Value>().ok())
        .unwrap_or(Value::Null);
    if let Value::Object(m) = &mut value {
        m.remove("_meta");
        m.remove("inputResponses");
        m.remove("requestState");
    }
    let mut canonical = Vec::new();
    write_canonical(&value, &mut canonical);
    URL_SAFE_NO_PAD.encode(Sha256::digest(&canonical))
}

fn write_canonical(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push(b'{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(Value::String(k.clone()).to_string().as_bytes());
                out.push(b':');
                if let Some(x) = m.get(k) {
                    write_canonical(x, out);
                }
            }
            out.push(b'}');
        }
        Value::Array(a) => {
            out.push(b'[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(x, out);
            }
            out.push(b']');
        }
        other => out.extend_from_slice(other.to_string().as_bytes()),
    }
}

/// A caller identity as bound into states: a digest, so states reveal nothing about it.
pub(crate) fn principal_digest(issuer: &str, subject: &str) -> String {
    let mut h = Sha256::new();
    h.update(issuer.as_bytes());
    h.update([0]);
    h.update(subject.as_bytes());
    URL_SAFE_NO_PAD.encode(h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn binding(params: Value) -> Binding {
        Binding {
            method: "tools/call".into(),
            params: Some(RawJson::from_value(&params).unwrap()),
            principal: None,
        }
    }

    fn answers() -> BTreeMap<String, Answer> {
        let mut a = BTreeMap::new();
        a.insert(
            "1".into(),
            Answer {
                m: "elicitation/create".into(),
                r: json!({"action": "accept"}),
            },
        );
        a
    }

    fn token(key: &RequestStateKey, b: &Binding, e: u64) -> String {
        sign(
            key,
            &StatePayload {
                v: 1,
                m: b.method.clone(),
                d: b.digest(),
                e,
                p: b.principal.clone(),
                a: answers(),
            },
        )
    }

    #[test]
    fn state_round_trips_and_binds() {
        let key = RequestStateKey::random();
        let b = binding(json!({"name": "t", "arguments": {"x": 1, "y": [1, 2]}}));
        let t = token(&key, &b, now() + 60);
        assert_eq!(verify(&key, &t, &b, now()).unwrap().len(), 1);
        // Same params in another key order, with _meta and responses: same request.
        let b2 = binding(json!({"arguments": {"y": [1, 2], "x": 1}, "name": "t",
            "_meta": {"progressToken": 3}, "inputResponses": {}}));
        assert!(verify(&key, &t, &b2, now()).is_ok());
        // Other arguments, another method, another caller, another key, expired, tampered.
        assert!(
            verify(
                &key,
                &t,
                &binding(json!({"name": "t", "arguments": {"x": 2, "y": [1, 2]}})),
                now()
            )
            .is_err()
        );
        let mut other_method = binding(json!({"name": "t", "arguments": {"x": 1, "y": [1, 2]}}));
        other_method.method = "prompts/get".into();
        assert!(verify(&key, &t, &other_method, now()).is_err());
        let mut other_caller = binding(json!({"name": "t", "arguments": {"x": 1, "y": [1, 2]}}));
        other_caller.principal = Some(principal_digest("iss", "mallory"));
        assert!(verify(&key, &t, &other_caller, now()).is_err());
        assert!(verify(&RequestStateKey::random(), &t, &b, now()).is_err());
        assert_eq!(
            verify(&key, &token(&key, &b, now() - 1), &b, now()).unwrap_err(),
            "expired"
        );
        let (body, tag) = t.split_once('.').unwrap();
        let mut raw = URL_SAFE_NO_PAD.decode(body).unwrap();
        let last = raw.len() - 2;
        raw[last] ^= 1;
        let forged = format!("{}.{tag}", URL_SAFE_NO_PAD.encode(&raw));
        assert_eq!(
            verify(&key, &forged, &b, now()).unwrap_err(),
            "bad signature"
        );
        assert!(verify(&key, "garbage", &b, now()).is_err());
        // A shared secret gives every instance the same key.
        let k1 = RequestStateKey::from_secret("s3cret");
        let k2 = RequestStateKey::from_secret("s3cret");
        assert!(verify(&k2, &token(&k1, &b, now() + 60), &b, now()).is_ok());
    }

    #[test]
    fn key_files_rotate_without_refusing_states_in_flight() {
        let b = binding(serde_json::json!({"x": 1}));
        let old = RequestStateKey::from_lines("old-secret\n").unwrap();
        let minted_old = token(&old, &b, now() + 60);
        // Step 1: every instance gets the new key first, the old one still verifying.
        let rotating =
            RequestStateKey::from_lines("# rotated\n new-secret \n\nold-secret\n").unwrap();
        assert!(verify(&rotating, &minted_old, &b, now()).is_ok());
        let minted_new = token(&rotating, &b, now() + 60);
        // New states are signed with the first key: an instance still on the old file
        // refuses them, one with the new key alone accepts them.
        assert_eq!(
            verify(&old, &minted_new, &b, now()).unwrap_err(),
            "bad signature"
        );
        let new_only = RequestStateKey::from_lines("new-secret").unwrap();
        assert!(verify(&new_only, &minted_new, &b, now()).is_ok());
        // Step 2: the old key dropped: its states are refused.
        assert_eq!(
            verify(&new_only, &minted_old, &b, now()).unwrap_err(),
            "bad signature"
        );
        assert!(RequestStateKey::from_lines("# nothing\n\n").is_none());
    }

    fn elicit() -> InputRequest {
        InputRequest::Elicit(
            serde_json::from_value(json!({
                "message": "name?",
                "requestedSchema": {"type": "object", "properties": {}}
            }))
            .unwrap(),
        )
    }

    fn sample() -> InputRequest {
        InputRequest::CreateMessage(
            serde_json::from_value(json!({
                "messages": [], "maxTokens": 1
            }))
            .unwrap(),
        )
    }

    fn finish(a: &mut Attempt, key: &RequestStateKey) -> InputRequiredResult {
        a.finish(key, Duration::from_secs(60), InputRequiredResult::default())
    }

    #[test]
    fn attempts_collect_answers_round_by_round() {
        let key = RequestStateKey::random();
        let params = json!({"name": "t"});
        // Round 1: the first question is asked, with a state already (over no answers).
        let mut a = Attempt::default();
        a.begin(&key, binding(params.clone()), None, None).unwrap();
        let NextAnswer::Ask(k1) = a.next(None, &elicit()) else {
            panic!("expected a question");
        };
        assert_eq!(k1, "1");
        let r1 = finish(&mut a, &key);
        assert_eq!(r1.input_requests.as_ref().unwrap().len(), 1);
        let state1 = r1.request_state.expect("a state in round 1");
        // Round 2: answer 1 arrives; question 2 is asked with a state carrying answer 1.
        let mut a = Attempt::default();
        let mut r = InputResponses::new();
        r.insert("1".into(), json!({"action": "accept", "content": {"n": 1}}));
        a.begin(&key, binding(params.clone()), Some(r), Some(&state1))
            .unwrap();
        assert!(matches!(a.next(None, &elicit()), NextAnswer::Answered(_)));
        let NextAnswer::Ask(k2) = a.next(None, &sample()) else {
            panic!("expected a second question");
        };
        assert_eq!(k2, "2");
        let state = finish(&mut a, &key).request_state.unwrap();
        assert_ne!(state, state1, "every round has its own state");
        // Round 3: answer 2 arrives with the state; both questions are answered.
        let mut a = Attempt::default();
        let mut r = InputResponses::new();
        r.insert("2".into(), json!({"model": "m"}));
        a.begin(&key, binding(params.clone()), Some(r), Some(&state))
            .unwrap();
        let NextAnswer::Answered(first) = a.next(None, &elicit()) else {
            panic!("answer 1 lost");
        };
        assert_eq!(first["content"]["n"], 1);
        assert!(matches!(a.next(None, &sample()), NextAnswer::Answered(_)));
        // The state of round 3 does not fit another request.
        let mut a = Attempt::default();
        assert!(
            a.begin(&key, binding(json!({"name": "u"})), None, Some(&state))
                .is_err()
        );
    }

    #[test]
    fn named_questions_and_several_at_once() {
        let key = RequestStateKey::random();
        let params = json!({"name": "t"});
        let mut a = Attempt::default();
        a.begin(&key, binding(params.clone()), None, None).unwrap();
        // Two questions left open in one attempt: one result asks both.
        assert!(
            matches!(a.next(Some("user_name"), &elicit()), NextAnswer::Ask(k) if k == "user_name")
        );
        assert!(matches!(a.next(None, &sample()), NextAnswer::Ask(k) if k == "1"));
        let r = finish(&mut a, &key);
        let asked: Vec<_> = r.input_requests.unwrap().into_keys().collect();
        assert_eq!(asked, ["1", "user_name"]);
        // A named answer counts without any state, whatever else the client sent.
        let mut a = Attempt::default();
        let mut r = InputResponses::new();
        r.insert("user_name".into(), json!({"action": "accept"}));
        r.insert("unknown_extra_key".into(), json!(1));
        a.begin(&key, binding(params), Some(r), None).unwrap();
        assert!(matches!(
            a.next(Some("user_name"), &elicit()),
            NextAnswer::Answered(_)
        ));
    }
}
