// A #[tool] method whose impl block lacks #[tools].
use vellum::prelude::*;

struct Calc;

impl Calc {
    /// Adds.
    #[tool]
    async fn add(&self, a: i64, b: i64) -> String {
        (a + b).to_string()
    }
}

fn main() {}
