//! Every argument and return type a handler may use compiles together, and registers.
#![cfg(feature = "macros")]
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use vellum::auth::Principal;
use vellum::prelude::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {
    a: i64,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Out {
    b: i64,
}

#[derive(Clone)]
struct Tenant;

/// Everything.
#[tool]
async fn everything(
    ctx: &RequestContext,
    State(_n): State<Arc<u64>>,
    Json(input): Json<Input>,
    _caller: Option<Principal>,
    _who: Option<vellum::server::Caller>,
    _req: CallToolRequest,
    Extension(_t): Extension<Tenant>,
) -> Result<Json<Out>, vellum::Error> {
    let _ = ctx;
    Ok(Json(Out { b: input.a }))
}

/// Sync.
#[tool]
fn sync(x: Option<String>) -> anyhow_like::Result<String> {
    Ok(x.unwrap_or_default())
}

mod anyhow_like {
    pub(crate) type Result<T> = std::result::Result<T, String>;
}

struct S;

#[tools]
impl S {
    /// A.
    #[tool]
    async fn a(&self) -> CallToolResult {
        CallToolResult::text("a")
    }
    /// B.
    #[prompt]
    fn b(&self, x: String) -> String {
        x
    }
    /// C.
    #[resource("c://{x}")]
    async fn c(&self, x: u8) -> Vec<u8> {
        vec![x]
    }
    /// Helper, not a tool.
    fn helper(&self) {}
}

#[test]
fn every_extractor_and_result_type_registers() {
    let server = Server::new(Implementation::new("x", "1"), ServerOptions::default());
    (everything_tool(Arc::new(1)), sync_tool(), S)
        .register(&server)
        .unwrap();
    S.helper();
}
