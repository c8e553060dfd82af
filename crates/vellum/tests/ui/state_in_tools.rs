// State<T> in a #[tools] impl, whose state is self.
use vellum::prelude::*;

struct Db;

#[tools]
impl Db {
    /// Counts.
    #[tool]
    async fn count(&self, State(n): State<u64>) -> String {
        n.to_string()
    }
}

fn main() {}
