//! Demo MCP servers built with [Vellum](https://docs.rs/vellum)'s public API only: the ones
//! `vellum serve --server NAME` serves, the repository's examples and the fixtures its tests
//! and the official conformance suite run against.
//!
//! | demo | module | what it serves |
//! |---|---|---|
//! | `hello-world` | [`hello_world`] | the seed: one typed tool, `hello_world` (`#[tool]`) |
//! | | [`hello_world_builder`] | the same tool with the closure API (an example only) |
//! | `everything` | `everything` (with `everything_stateless`, `everything_mrtr`, `everything_tasks`, `everything_skills`; feature `everything`) | every fixture of the official conformance suite, plus `hello_world` |
//! | `bench` | [`bench`](mod@bench) (with `bench_wait`, feature `bench-wait`) | the benchmark's fixtures: `hello_world`, `stream`, `blob`, `touch` (bench/README.md), and `hello_wait` |
//!
//! Each module is also a complete program: the same file is the example of that name
//! (`cargo run --example hello_world`), so what the example shows is what the CLI serves.
//! Its `main` is the example's entry point and has no use in the library.
//!
//! Adding a demo: a module `src/NAME.rs` with a function that builds its [`Server`] (and a
//! `main` plus an `[[example]]` entry in `Cargo.toml` if it should run on its own), then one
//! entry in [`DEMOS`]; `vellum serve --server` offers it from then on.

// The modules name this crate by its name, as they must when compiled as examples.
extern crate self as vellum_demos;

use vellum::error::ConfigError;
use vellum::server::Server;

// `main` is the example's entry point: the bench server on the library's default features.
#[allow(dead_code)]
pub mod bench;
#[cfg(feature = "bench-wait")]
pub mod bench_wait;
// Each module's `main` is its example's entry point (see the crate docs).
#[cfg(feature = "everything")]
#[allow(dead_code)]
pub mod everything;
#[cfg(feature = "everything")]
pub mod everything_mrtr;
#[cfg(feature = "everything")]
pub mod everything_skills;
#[cfg(feature = "everything")]
pub mod everything_stateless;
#[cfg(feature = "everything")]
pub mod everything_tasks;
#[allow(dead_code)]
pub mod hello_world;
#[allow(dead_code)]
pub mod hello_world_builder;

/// A demo server, as `vellum serve --server` offers it.
#[derive(Debug, Clone, Copy)]
pub struct Demo {
    /// Its name on the command line (`hello-world`).
    pub name: &'static str,
    /// One line on what it serves (`vellum serve --help` shows it).
    pub about: &'static str,
    /// Builds a fresh server.
    pub build: fn() -> Result<Server, ConfigError>,
}

/// Every demo server, in the order `vellum serve --help` lists them.
pub const DEMOS: &[Demo] = &[
    Demo {
        name: "hello-world",
        about: "The seed: one `hello_world` tool",
        build: hello_world::hello_world_server,
    },
    #[cfg(feature = "everything")]
    Demo {
        name: "everything",
        about: "Every fixture of the official conformance suite, plus `hello_world`",
        build: everything::everything_server,
    },
    Demo {
        name: "bench",
        about: "The benchmark's fixtures: `hello_world`, `stream`, `blob`, `touch` (bench/README.md)",
        build: bench::bench_server,
    },
];

/// The demo called `name`.
pub fn demo(name: &str) -> Option<&'static Demo> {
    DEMOS.iter().find(|d| d.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_demo_builds_and_names_are_unique() {
        for (i, d) in DEMOS.iter().enumerate() {
            let server = (d.build)().unwrap_or_else(|e| panic!("{}: {e}", d.name));
            assert!(!server.info().name.is_empty(), "{}", d.name);
            assert!(
                DEMOS[..i].iter().all(|o| o.name != d.name),
                "{} twice",
                d.name
            );
            assert_eq!(demo(d.name).map(|f| f.name), Some(d.name));
        }
        assert!(demo("no-such-demo").is_none());
    }
}
