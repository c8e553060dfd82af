// A #[tools] method taking &mut self (calls run concurrently).
use vellum::prelude::*;

struct Counter(u64);

#[tools]
impl Counter {
    /// Bumps.
    #[tool]
    async fn bump(&mut self) -> String {
        self.0 += 1;
        self.0.to_string()
    }
}

fn main() {}
