// A tool name with a space.
use vellum::prelude::*;

/// Adds.
#[tool(name = "add numbers")]
async fn add(a: i64, b: i64) -> String {
    (a + b).to_string()
}

fn main() {}
