//! The MCP requests `mcpbench` sends, framed for one of three eras.
//!
//! * `Session`: protocol ≤ 2025-11-25 with `initialize`, `notifications/initialized` and an
//!   `Mcp-Session-Id` on every later request;
//! * `Stateless`: the same protocol against a stateless server: no initialize, no session id;
//! * `Modern`: 2026-07-28 and later: no initialize; every request carries `_meta`
//!   (`io.modelcontextprotocol/protocolVersion`, `clientCapabilities`, `clientInfo`) and the
//!   `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers.
//!
//! Bodies are built from pre-rendered bytes around the request id, so a request costs one
//! buffer and a few header clones.

use std::fmt::Write as _;

use bytes::{BufMut, Bytes, BytesMut};
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HOST};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Uri};
use http_body_util::Full;

/// Header names of the Streamable HTTP transport.
pub(crate) const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
pub(crate) const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");

/// First protocol version of the modern (stateless, `_meta`) era.
const MODERN_FROM: &str = "2026-07-28";

/// The text every `hello_world` answer must contain.
pub(crate) const EXPECTED_TEXT: &str = "Hello World, bench";

/// How requests are framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Era {
    Session,
    Stateless,
    Modern,
}

impl Era {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Era::Session => "session",
            Era::Stateless => "stateless",
            Era::Modern => "modern",
        }
    }
}

/// What a session (or its absence) adds to each request.
#[derive(Clone, Debug)]
pub(crate) struct Session {
    /// `Mcp-Session-Id` from the initialize answer; `None` when stateless.
    pub(crate) id: Option<HeaderValue>,
    /// `MCP-Protocol-Version` to send: the negotiated one, or the configured one.
    pub(crate) version: HeaderValue,
}

/// A pre-rendered `tools/call` (or other request) body around its JSON-RPC id: the body is
/// `CALL_HEAD id mid [id] tail`, where the second id is the progress token when `progress`.
#[derive(Debug, Clone)]
pub(crate) struct CallTemplate {
    method: &'static str,
    /// The `Mcp-Name` header of the modern era (the tool's name), if any.
    name: Option<HeaderValue>,
    mid: Bytes,
    progress: bool,
    tail: Bytes,
}

/// Request templates for one server and era. A request body is a JSON-RPC request whose `id`
/// is spliced into pre-rendered bytes (see [`CallTemplate`]).
#[derive(Debug, Clone)]
pub(crate) struct Proto {
    pub(crate) era: Era,
    pub(crate) version: String,
    version_header: HeaderValue,
    uri: Uri,
    host: HeaderValue,
    /// `Authorization` of every request, if any.
    authorization: Option<HeaderValue>,
    /// The `_meta` members every modern request carries (empty before 2026-07-28), with a
    /// leading comma.
    modern_meta: String,
    hello: CallTemplate,
}

const CALL_HEAD: &[u8] = br#"{"jsonrpc":"2.0","id":"#;
const JSON: HeaderValue = HeaderValue::from_static("application/json");
const ACCEPT_BOTH: HeaderValue = HeaderValue::from_static("application/json, text/event-stream");
const ACCEPT_SSE: HeaderValue = HeaderValue::from_static("text/event-stream");

impl Proto {
    /// Templates for `version` on `addr` + `path`; `stateless` selects `Era::Stateless` for
    /// protocol versions before 2026-07-28.
    pub(crate) fn new(
        addr: std::net::SocketAddr,
        path: &str,
        version: &str,
        stateless: bool,
    ) -> anyhow::Result<Self> {
        let era = if version >= MODERN_FROM {
            Era::Modern
        } else if stateless {
            Era::Stateless
        } else {
            Era::Session
        };
        let uri: Uri = path.parse()?;
        let host = HeaderValue::from_str(&addr.to_string())?;
        let version_header = HeaderValue::from_str(version)?;
        let modern_meta = if era == Era::Modern {
            format!(
                r#","io.modelcontextprotocol/protocolVersion":{},"io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/clientInfo":{{"name":"mcpbench","version":"{}"}}"#,
                serde_json::to_string(version)?,
                env!("CARGO_PKG_VERSION"),
            )
        } else {
            String::new()
        };
        let mut proto = Proto {
            era,
            version: version.to_owned(),
            version_header,
            uri,
            host,
            authorization: None,
            modern_meta,
            hello: CallTemplate {
                method: "tools/call",
                name: None,
                mid: Bytes::new(),
                progress: false,
                tail: Bytes::new(),
            },
        };
        proto.hello = proto.tool("hello_world", r#"{"user_name":"bench"}"#, false)?;
        Ok(proto)
    }

    /// Requests go to the absolute URI `http://ADDR/PATH` (h2 needs `:scheme` and
    /// `:authority`, which hyper takes from the URI; HTTP/1.1 keeps the origin form).
    pub(crate) fn absolute(mut self, addr: std::net::SocketAddr) -> anyhow::Result<Self> {
        self.uri = format!("http://{addr}{}", self.uri).parse()?;
        Ok(self)
    }

    /// Every request carries `Authorization: Bearer token`.
    pub(crate) fn bearer(mut self, token: &str) -> anyhow::Result<Self> {
        self.authorization = Some(HeaderValue::from_str(&format!("Bearer {token}"))?);
        Ok(self)
    }

    /// A `tools/call` of tool `name` with the JSON object `arguments`; with `progress`, the
    /// request's id is also its `_meta.progressToken`.
    pub(crate) fn tool(
        &self,
        name: &str,
        arguments: &str,
        progress: bool,
    ) -> anyhow::Result<CallTemplate> {
        let name_json = serde_json::to_string(name)?;
        let params = format!(r#"{{"name":{name_json},"arguments":{arguments}"#);
        let (mid, tail) = if progress {
            (
                format!(r#","method":"tools/call","params":{params},"_meta":{{"progressToken":"#),
                format!("{}}}}}}}", self.modern_meta),
            )
        } else {
            (
                format!(
                    r#","method":"tools/call","params":{params}{}}}}}"#,
                    self.meta_member()
                ),
                String::new(),
            )
        };
        Ok(CallTemplate {
            method: "tools/call",
            name: Some(HeaderValue::from_str(name)?),
            mid: Bytes::from(mid),
            progress,
            tail: Bytes::from(tail),
        })
    }

    /// `tools/list`, from `cursor` (the first page when `None`).
    pub(crate) fn list_tools(
        &self,
        id: u64,
        session: &Session,
        cursor: Option<&str>,
    ) -> anyhow::Result<Request<Full<Bytes>>> {
        let cursor = match cursor {
            Some(c) => format!(r#""cursor":{}"#, serde_json::to_string(c)?),
            None => String::new(),
        };
        let meta = match (cursor.is_empty(), self.modern_meta.is_empty()) {
            (_, true) => String::new(),
            (true, false) => format!(r#""_meta":{{{}}}"#, &self.modern_meta[1..]),
            (false, false) => format!(r#","_meta":{{{}}}"#, &self.modern_meta[1..]),
        };
        let t = CallTemplate {
            method: "tools/list",
            name: None,
            mid: Bytes::from(format!(
                r#","method":"tools/list","params":{{{cursor}{meta}}}}}"#
            )),
            progress: false,
            tail: Bytes::new(),
        };
        Ok(self.request(&t, id, session))
    }

    /// `subscriptions/listen` for tool list changes (2026-07-28).
    pub(crate) fn listen_tools(&self, id: u64) -> Request<Full<Bytes>> {
        let t = CallTemplate {
            method: "subscriptions/listen",
            name: None,
            mid: Bytes::from(format!(
                r#","method":"subscriptions/listen","params":{{"notifications":{{"toolsListChanged":true}}{}}}}}"#,
                self.meta_member()
            )),
            progress: false,
            tail: Bytes::new(),
        };
        self.request(&t, id, &self.sessionless())
    }

    /// `,"_meta":{…}` with the modern members, or nothing before 2026-07-28.
    fn meta_member(&self) -> String {
        if self.modern_meta.is_empty() {
            String::new()
        } else {
            format!(r#","_meta":{{{}}}"#, &self.modern_meta[1..])
        }
    }

    /// The session-less context of `Stateless` and `Modern` requests.
    pub(crate) fn sessionless(&self) -> Session {
        Session {
            id: None,
            version: self.version_header.clone(),
        }
    }

    fn post(&self, body: Bytes, session: Option<&Session>) -> Request<Full<Bytes>> {
        let mut req = Request::new(Full::new(body));
        *req.method_mut() = Method::POST;
        *req.uri_mut() = self.uri.clone();
        let h = req.headers_mut();
        h.insert(HOST, self.host.clone());
        if let Some(a) = &self.authorization {
            h.insert(AUTHORIZATION, a.clone());
        }
        h.insert(CONTENT_TYPE, JSON);
        h.insert(ACCEPT, ACCEPT_BOTH);
        if let Some(s) = session {
            add_session(h, s);
        }
        req
    }

    /// `tools/call hello_world {"user_name":"bench"}` with JSON-RPC id `id`.
    pub(crate) fn call(&self, id: u64, session: &Session) -> Request<Full<Bytes>> {
        self.request(&self.hello, id, session)
    }

    /// The request of template `t` with JSON-RPC id `id`.
    pub(crate) fn request(
        &self,
        t: &CallTemplate,
        id: u64,
        session: &Session,
    ) -> Request<Full<Bytes>> {
        let mut req = self.post(body(t, id), Some(session));
        if self.era == Era::Modern {
            let h = req.headers_mut();
            h.insert(MCP_METHOD, HeaderValue::from_static(t.method));
            if let Some(n) = &t.name {
                h.insert(MCP_NAME, n.clone());
            }
        }
        req
    }

    #[cfg(test)]
    fn call_body(&self, id: u64) -> Bytes {
        body(&self.hello, id)
    }

    /// `initialize` offering `self.version` (sent without `MCP-Protocol-Version`).
    pub(crate) fn initialize(&self, id: u64) -> Request<Full<Bytes>> {
        self.post(self.initialize_body(id), None)
    }

    fn initialize_body(&self, id: u64) -> Bytes {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"initialize","params":{{"protocolVersion":{},"capabilities":{{}},"clientInfo":{{"name":"mcpbench","version":"{}"}}}}}}"#,
            serde_json::Value::String(self.version.clone()),
            env!("CARGO_PKG_VERSION"),
        );
        Bytes::from(body)
    }

    /// `notifications/initialized` for a new session.
    pub(crate) fn initialized(&self, session: &Session) -> Request<Full<Bytes>> {
        let body = Bytes::from_static(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        self.post(body, Some(session))
    }

    /// The standalone GET SSE stream of a session.
    pub(crate) fn get_stream(&self, session: &Session) -> Request<Full<Bytes>> {
        self.bodiless(Method::GET, session, Some(ACCEPT_SSE))
    }

    /// DELETE of a session.
    pub(crate) fn delete(&self, session: &Session) -> Request<Full<Bytes>> {
        self.bodiless(Method::DELETE, session, None)
    }

    fn bodiless(
        &self,
        method: Method,
        session: &Session,
        accept: Option<HeaderValue>,
    ) -> Request<Full<Bytes>> {
        let mut req = Request::new(Full::new(Bytes::new()));
        *req.method_mut() = method;
        *req.uri_mut() = self.uri.clone();
        let h = req.headers_mut();
        h.insert(HOST, self.host.clone());
        if let Some(a) = &self.authorization {
            h.insert(AUTHORIZATION, a.clone());
        }
        if let Some(a) = accept {
            h.insert(ACCEPT, a);
        }
        add_session(h, session);
        req
    }
}

/// The body of template `t` for JSON-RPC id `id`.
fn body(t: &CallTemplate, id: u64) -> Bytes {
    let mut buf = BytesMut::with_capacity(CALL_HEAD.len() + 40 + t.mid.len() + t.tail.len());
    buf.put_slice(CALL_HEAD);
    // Writing into a BytesMut cannot fail.
    let _ = write!(buf, "{id}");
    buf.put_slice(&t.mid);
    if t.progress {
        let _ = write!(buf, "{id}");
        buf.put_slice(&t.tail);
    }
    buf.freeze()
}

fn add_session(h: &mut HeaderMap, s: &Session) {
    if let Some(id) = &s.id {
        h.insert(SESSION_ID, id.clone());
    }
    h.insert(PROTOCOL_VERSION, s.version.clone());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr() -> std::net::SocketAddr {
        std::net::SocketAddr::from(([127, 0, 0, 1], 9))
    }

    fn json(b: Bytes) -> serde_json::Value {
        serde_json::from_slice(&b).unwrap_or(serde_json::Value::Null)
    }

    #[test]
    fn legacy_call_is_plain_json_rpc() -> anyhow::Result<()> {
        let p = Proto::new(addr(), "/mcp", "2025-11-25", false)?;
        assert_eq!(p.era, Era::Session);
        let s = Session {
            id: Some(HeaderValue::from_static("abc")),
            ..p.sessionless()
        };
        let req = p.call(7, &s);
        assert_eq!(req.headers()[SESSION_ID], "abc");
        assert_eq!(req.headers()[PROTOCOL_VERSION], "2025-11-25");
        assert!(req.headers().get(MCP_METHOD).is_none());
        let v = json(p.call_body(7));
        assert_eq!(v["id"], 7);
        assert_eq!(v["params"]["arguments"]["user_name"], "bench");
        assert!(v["params"].get("_meta").is_none());
        Ok(())
    }

    #[test]
    fn modern_call_carries_meta_and_headers() -> anyhow::Result<()> {
        let p = Proto::new(addr(), "/mcp", "2026-07-28", false)?;
        assert_eq!(p.era, Era::Modern);
        let req = p.call(1, &p.sessionless());
        assert_eq!(req.headers()[MCP_METHOD], "tools/call");
        assert_eq!(req.headers()[MCP_NAME], "hello_world");
        assert_eq!(req.headers()[PROTOCOL_VERSION], "2026-07-28");
        assert!(req.headers().get(SESSION_ID).is_none());
        let v = json(p.call_body(1));
        let meta = &v["params"]["_meta"];
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        assert_eq!(
            meta["io.modelcontextprotocol/clientCapabilities"],
            serde_json::json!({})
        );
        assert_eq!(
            meta["io.modelcontextprotocol/clientInfo"]["name"],
            "mcpbench"
        );
        Ok(())
    }

    #[test]
    fn progress_calls_carry_the_id_as_token() -> anyhow::Result<()> {
        for version in ["2025-11-25", "2026-07-28"] {
            let p = Proto::new(addr(), "/mcp", version, false)?;
            let t = p.tool("stream", r#"{"count":10}"#, true)?;
            let v = json(body(&t, 42));
            assert_eq!(v["id"], 42);
            assert_eq!(v["params"]["name"], "stream");
            assert_eq!(v["params"]["arguments"]["count"], 10);
            assert_eq!(v["params"]["_meta"]["progressToken"], 42);
            let modern = v["params"]["_meta"]
                .get("io.modelcontextprotocol/protocolVersion")
                .is_some();
            assert_eq!(modern, version == "2026-07-28");
            let req = p.request(&t, 42, &p.sessionless());
            assert_eq!(req.headers().get(MCP_NAME).is_some(), modern);
        }
        Ok(())
    }

    #[test]
    fn list_and_listen_bodies_are_valid() -> anyhow::Result<()> {
        for version in ["2025-11-25", "2026-07-28"] {
            let p = Proto::new(addr(), "/mcp", version, false)?;
            for cursor in [None, Some("abc")] {
                let v = json(body_bytes(p.list_tools(3, &p.sessionless(), cursor)?));
                assert_eq!(v["method"], "tools/list", "{version} {cursor:?}");
                assert_eq!(v["params"]["cursor"].as_str(), cursor);
            }
            let v = json(body_bytes(p.listen_tools(9)));
            assert_eq!(v["params"]["notifications"]["toolsListChanged"], true);
        }
        Ok(())
    }

    /// The bytes of a request's `Full` body.
    fn body_bytes(req: Request<Full<Bytes>>) -> Bytes {
        let collect = http_body_util::BodyExt::collect(req.into_body());
        match tokio::runtime::Builder::new_current_thread().build() {
            Ok(rt) => rt
                .block_on(collect)
                .map(|c| c.to_bytes())
                .unwrap_or_default(),
            Err(_) => Bytes::new(),
        }
    }

    #[test]
    fn bearer_rides_on_every_request_and_h2_uris_are_absolute() -> anyhow::Result<()> {
        let p = Proto::new(addr(), "/mcp", "2025-11-25", false)?;
        let s = p.sessionless();
        assert!(p.call(1, &s).headers().get(AUTHORIZATION).is_none());
        assert_eq!(p.call(1, &s).uri(), "/mcp");
        let p = p.bearer("tok.en")?.absolute(addr())?;
        for req in [
            p.initialize(0),
            p.initialized(&s),
            p.call(1, &s),
            p.get_stream(&s),
            p.delete(&s),
        ] {
            assert_eq!(
                req.headers()[AUTHORIZATION],
                "Bearer tok.en",
                "{}",
                req.method()
            );
            assert_eq!(req.uri(), "http://127.0.0.1:9/mcp", "{}", req.method());
        }
        Ok(())
    }

    #[test]
    fn initialize_offers_the_version() -> anyhow::Result<()> {
        let p = Proto::new(addr(), "/mcp", "2025-11-25", false)?;
        let v = json(p.initialize_body(0));
        assert_eq!(v["method"], "initialize");
        assert_eq!(v["params"]["protocolVersion"], "2025-11-25");
        Ok(())
    }
}
