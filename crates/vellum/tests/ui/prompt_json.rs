// A prompt taking a tool's Json<T> input.
use vellum::prelude::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Input {
    code: String,
}

/// Reviews.
#[prompt]
async fn review(Json(input): Json<Input>) -> String {
    input.code
}

fn main() {}
