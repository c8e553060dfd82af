// A reference to a type that is not an extractor.
use vellum::prelude::*;

struct Config;

/// Reads the config.
#[tool]
async fn read(config: &Config) -> String {
    let _ = config;
    String::new()
}

fn main() {}
