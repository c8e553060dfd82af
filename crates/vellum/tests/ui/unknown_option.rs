// A misspelt option.
use vellum::prelude::*;

#[tool(desc = "Adds")]
async fn add(a: i64, b: i64) -> String {
    (a + b).to_string()
}

fn main() {}
