// A Result whose error type cannot be shown to the model.
use vellum::prelude::*;

#[derive(Debug)]
struct Oops;

/// Fails.
#[tool]
async fn fail() -> Result<String, Oops> {
    Err(Oops)
}

fn main() {}
