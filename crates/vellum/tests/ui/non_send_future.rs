// The handler holds an Rc across an await: its future is not Send.
use std::rc::Rc;
use vellum::prelude::*;

async fn tick() {}

/// Counts.
#[tool]
async fn count() -> String {
    let n = Rc::new(1);
    tick().await;
    n.to_string()
}

fn main() {}
