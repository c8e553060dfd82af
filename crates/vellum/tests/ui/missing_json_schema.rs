// The input struct derives Deserialize but not JsonSchema.
use vellum::prelude::*;

#[derive(serde::Deserialize)]
struct AddInput {
    a: i64,
    b: i64,
}

/// Adds.
#[tool]
async fn add(Json(input): Json<AddInput>) -> String {
    (input.a + input.b).to_string()
}

fn main() {}
