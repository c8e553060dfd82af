// `map_tool` given something that is not a `FnOnce(Tool) -> Tool`.
use vellum::prelude::*;

#[tool(map_tool = "title")]
async fn add(a: i64, b: i64) -> String {
    (a + b).to_string()
}

fn main() {}
