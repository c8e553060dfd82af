// A scope with a space: two scopes are two `scope = "..."` options.
use vellum::prelude::*;

/// Deletes an event.
#[tool(scope = "calendar:read calendar:write")]
async fn delete_event(id: String) -> String {
    id
}

fn main() {}
