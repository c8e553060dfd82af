//! The README's Rust snippets and docs/production.md's, compiled: they are doc tests of
//! this crate (`cargo test --doc` fails when one breaks), and the quick start must be the
//! seed's example file as it is, so the README can never show a program that differs from
//! the one that runs.

/// Every Rust snippet of the README, as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeSnippets;

/// Every Rust snippet of the production guide, as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/production.md")]
struct ProductionGuide;

#[cfg(test)]
mod tests {
    const README: &str = include_str!("../../../README.md");
    const EXAMPLE: &str = include_str!("../../vellum-demos/src/hello_world.rs");

    /// The body of the first ```` ```rust ```` block of `text`.
    fn first_rust_block(text: &str) -> &str {
        let start = text.find("```rust").expect("the README has a Rust snippet");
        let body = &text[start..];
        let body = &body[body.find('\n').expect("a fence line") + 1..];
        &body[..body.find("```").expect("the snippet is closed")]
    }

    #[test]
    fn the_quick_start_is_the_hello_world_example() {
        // The example without its `//!` header (and the blank line after it).
        let program: String = EXAMPLE
            .lines()
            .skip_while(|l| l.starts_with("//!"))
            .skip(1)
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(
            first_rust_block(README),
            program,
            "the README's quick start must be crates/vellum-demos/src/hello_world.rs \
             without its //! header"
        );
    }

    /// What the README's first command builds: `cargo tree` at the root resolves the same
    /// packages with the same features (the workspace's default members), so its crates are
    /// the ones compiled.
    #[test]
    fn the_first_command_builds_the_seed_alone() {
        assert!(
            README.starts_with("```sh\ncargo run --example hello_world\n"),
            "the README's first command changed: check what it builds"
        );
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let out = std::process::Command::new(cargo)
            .args([
                "tree",
                "--locked",
                "--offline",
                "-e",
                "normal,build",
                "--prefix",
                "none",
            ])
            .args(["--format", "{p}"])
            .current_dir(root)
            .output()
            .expect("cargo tree runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        let crates: std::collections::BTreeSet<&str> = text
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .collect();
        assert!(crates.contains("vellum-demos"), "{crates:?}");
        // 75 when this was written; the ceiling leaves room, not a second tree.
        assert!(crates.len() <= 130, "{} crates: {crates:?}", crates.len());
        for heavy in [
            "h2",
            "jsonschema",
            "opentelemetry",
            "rsa",
            "serde-saphyr",
            "redis",
        ] {
            assert!(!crates.contains(heavy), "{heavy} is built: {crates:?}");
        }
    }

    #[test]
    fn no_snippet_is_ignored() {
        for fence in ["```rust,ignore", "```rust,no_compile", "```ignore"] {
            assert!(
                !README.contains(fence),
                "a README snippet is not compiled: {fence}"
            );
        }
    }
}
