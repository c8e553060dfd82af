// A tool mixing a whole-input Json<T> with typed arguments.
use vellum::prelude::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {
    a: i64,
}

/// Adds.
#[tool]
async fn add(Json(input): Json<Input>, b: i64) -> String {
    (input.a + b).to_string()
}

fn main() {}
