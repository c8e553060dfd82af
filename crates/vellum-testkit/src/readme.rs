//! The README's Rust snippets, compiled: they are doc tests of this crate (`cargo test
//! --doc` fails when one breaks), and the quick start must be the seed's example file as
//! it is, so the README can never show a program that differs from the one that runs.

/// Every Rust snippet of the README, as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeSnippets;

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
