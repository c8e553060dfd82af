// A hint `annotations(...)` does not have, and a task support that does not exist.
use vellum::prelude::*;

#[tool(annotations(read_only, fast))]
async fn add(a: i64, b: i64) -> String {
    (a + b).to_string()
}

#[tool(task_support = "sometimes")]
async fn sub(a: i64, b: i64) -> String {
    (a - b).to_string()
}

fn main() {}
