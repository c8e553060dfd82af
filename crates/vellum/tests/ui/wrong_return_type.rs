// A tool returning a type that is not a tool result.
use vellum::prelude::*;

/// Answers.
#[tool]
async fn answer() -> i32 {
    42
}

fn main() {}
