//! Opening, using and closing one MCP session over a connection.
//!
//! For the `Session` era this is `initialize` (the answer must carry a protocol version and an
//! `Mcp-Session-Id`) followed by `notifications/initialized` (202); the other eras have nothing
//! to open. The same checks as the load itself apply to every answer.

use std::time::Duration;

use anyhow::{Context as _, bail};
use http::{HeaderValue, StatusCode};

use crate::check;
use crate::client::Conn;
use crate::proto::{Era, Proto, SESSION_ID, Session};

/// JSON-RPC id of every `initialize`.
const INIT_ID: u64 = 0;

/// Opens a session on `conn` (nothing to do for stateless eras).
pub(crate) async fn open(
    conn: &mut Conn,
    proto: &Proto,
    timeout: Duration,
) -> anyhow::Result<Session> {
    if proto.era != Era::Session {
        return Ok(proto.sessionless());
    }
    let answer = conn
        .send(proto.initialize(INIT_ID), timeout)
        .await
        .context("initialize")?;
    let version = check::initialize(&answer, INIT_ID).context("initialize")?;
    let id = answer
        .headers
        .get(SESSION_ID)
        .cloned()
        .context("initialize answer has no Mcp-Session-Id")?;
    let session = Session {
        id: Some(id),
        version: HeaderValue::from_str(&version)?,
    };
    let answer = conn
        .send(proto.initialized(&session), timeout)
        .await
        .context("notifications/initialized")?;
    if answer.status != StatusCode::ACCEPTED {
        bail!(
            "notifications/initialized: HTTP {} (202 expected)",
            answer.status.as_u16()
        );
    }
    Ok(session)
}

/// One checked `tools/call` with JSON-RPC id `id`.
pub(crate) async fn call(
    conn: &mut Conn,
    proto: &Proto,
    session: &Session,
    id: u64,
    timeout: Duration,
) -> anyhow::Result<()> {
    let answer = conn.send(proto.call(id, session), timeout).await?;
    check::tool_call(&answer, id)?;
    Ok(())
}

/// DELETE of a session (answers other than 2xx and 405 count as errors).
pub(crate) async fn close(
    conn: &mut Conn,
    proto: &Proto,
    session: &Session,
    timeout: Duration,
) -> anyhow::Result<()> {
    if session.id.is_none() {
        return Ok(());
    }
    let answer = conn
        .send(proto.delete(session), timeout)
        .await
        .context("DELETE")?;
    let s = answer.status;
    if !(s.is_success() || s == StatusCode::METHOD_NOT_ALLOWED) {
        bail!("DELETE: HTTP {}", s.as_u16());
    }
    Ok(())
}
