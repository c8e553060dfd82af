// A typed argument whose type is neither an input property (Deserialize + JsonSchema) nor an
// extractor.
use vellum::prelude::*;

struct Connection;

/// Uses a connection.
#[tool]
async fn query(conn: Connection, sql: String) -> String {
    let _ = conn;
    sql
}

fn main() {}
