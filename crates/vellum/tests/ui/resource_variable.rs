// A resource template whose function argument is not one of its variables.
use vellum::prelude::*;

/// A note.
#[resource("notes://{id}")]
async fn note(name: String) -> String {
    name
}

fn main() {}
