//! Testing a server the way its clients use it, in memory (feature `testing`): a
//! [`TestClient`] is the crate's own [`Client`] over an in-memory connection to your
//! [`Server`], in the era you pick, with the caller or principal of the test's choosing
//! (what an authentication layer would have verified), and [`ToolResultExt`] reads what a
//! tool answered.
//!
//! ```
//! use vellum::prelude::*;
//! use vellum::server::Caller;
//! use vellum::testing::{TestClient, ToolResultExt as _};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = Server::new(Implementation::new("notes", "1"), ServerOptions::default());
//! server.add_raw_tool(
//!     Tool::new("whoami", "Who calls"),
//!     |ctx: RequestContext, _req: CallToolRequest| async move {
//!         let who = ctx.caller().map(|c| c.subject.clone()).unwrap_or_default();
//!         Ok::<_, HandlerError>(CallToolResult::text(who))
//!     },
//! )?;
//!
//! let client = TestClient::new(server)
//!     .caller(Caller::new("https://login.example", "ada"))
//!     .connect()
//!     .await?;
//! let result = client.call_tool("whoami", serde_json::json!({})).await?;
//! assert_eq!(result.text(), "ada");
//! assert!(!result.failed());
//! # Ok(()) }
//! ```
//!
//! Not here: HTTP. A test of what HTTP adds (headers, sessions over the wire, the security
//! layer) serves the handler on a loopback port instead.

use std::time::Duration;

use serde::de::DeserializeOwned;

use crate::client::{Client, ClientBuilder, ProtocolChoice};
use crate::error::Error;
use crate::protocol::CallToolResult;
use crate::server::{Caller, Server};
use crate::transport::memory::MemoryTransport;

/// A [`Client`] for a [`Server`] in this process, set up for a test. See the
/// [module docs](self).
#[derive(Debug)]
pub struct TestClient {
    server: Server,
    extensions: http::Extensions,
    builder: ClientBuilder,
}

impl TestClient {
    /// A client for `server`: the newest era the server speaks, no caller, a 10 s request
    /// timeout (a test that hangs fails instead).
    pub fn new(server: Server) -> TestClient {
        TestClient {
            server,
            extensions: http::Extensions::new(),
            builder: Client::builder()
                .name("vellum-test-client", env!("CARGO_PKG_VERSION"))
                .request_timeout(Duration::from_secs(10)),
        }
    }

    /// Every request comes from `caller` (its scopes included), as if an authentication
    /// layer had verified it: `ctx.caller()`, the `Caller` extractor, tools that require
    /// scopes and everything bound to the caller (sessions, tasks) see it.
    #[must_use]
    pub fn caller(mut self, caller: Caller) -> TestClient {
        self.extensions.insert(caller);
        self
    }

    /// Every request comes from `principal`, as the OAuth layer would have verified it: the
    /// `Principal` extractor and `ctx.extension::<Principal>()` see it, and its caller
    /// (issuer, subject, scopes) as with [`caller`](Self::caller).
    #[cfg(feature = "auth")]
    #[must_use]
    pub fn principal(mut self, principal: crate::auth::Principal) -> TestClient {
        self.extensions.insert(principal.caller());
        self.extensions.insert(principal);
        self
    }

    /// Every request carries `value` in its extensions (what `Extension<T>` and
    /// `ctx.extension::<T>()` read), as a layer of your own would put it there.
    #[must_use]
    pub fn extension<T: Clone + Send + Sync + 'static>(mut self, value: T) -> TestClient {
        self.extensions.insert(value);
        self
    }

    /// Speaks this era: [`ProtocolChoice::Legacy`] (a 2025-11-25 session) or
    /// [`ProtocolChoice::Modern`] (2026-07-28). Test a tool in both when it asks the client
    /// anything: the eras ask differently.
    #[must_use]
    pub fn protocol(mut self, choice: ProtocolChoice) -> TestClient {
        self.builder = self.builder.protocol(choice);
        self
    }

    /// Sets up the client itself (its handlers for sampling, elicitation and roots, its
    /// timeouts): `f` gets the builder and returns it.
    #[must_use]
    pub fn client(mut self, f: impl FnOnce(ClientBuilder) -> ClientBuilder) -> TestClient {
        self.builder = f(self.builder);
        self
    }

    /// Connects: the handshake of the era, over an in-memory connection to the server.
    pub async fn connect(self) -> Result<Client, Error> {
        let transport = MemoryTransport::with_extensions(self.server, self.extensions);
        self.builder.connect(transport).await
    }
}

/// What a test reads of a tool's result.
pub trait ToolResultExt {
    /// Every text block of the content, joined by newlines.
    fn text(&self) -> String;
    /// True when the tool failed (`isError: true`: the failure the model reads).
    fn failed(&self) -> bool;
    /// The structured content as a `T`; `None` when there is none or it is not a `T`.
    fn structured<T: DeserializeOwned>(&self) -> Option<T>;
}

impl ToolResultExt for CallToolResult {
    fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|c| c.as_text())
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn failed(&self) -> bool {
        self.is_error == Some(true)
    }

    fn structured<T: DeserializeOwned>(&self) -> Option<T> {
        T::deserialize(self.structured_content.as_ref()?).ok()
    }
}
