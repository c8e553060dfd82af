//! The public API, checked: every public item of each published crate is listed in
//! `docs/public-api/<crate>.txt`, and this test regenerates the lists and compares them, so any
//! change to the public surface shows in review as a change of those files.
//!
//! The lists come from rustdoc's JSON output, read by the `public-api` crate (the library of
//! cargo-public-api). Rustdoc JSON is an unstable output, but the stable toolchain emits it when
//! `RUSTC_BOOTSTRAP` names the crate being documented (and only that crate: no dependency's
//! build script sees a nightly compiler). Its format changes between toolchains, so the format
//! is pinned: [`FORMAT`] is what the project's toolchain (rust-version, 1.95) writes, and
//! `public-api` 0.52 is the release that reads exactly that format.
//!
//! Cost: one `cargo rustdoc` per crate, in a target directory of its own (`target/public-api`,
//! because the `cargo test` that runs this holds the main one's lock). The first run checks the
//! dependencies there once; later runs only re-document the crates.
//!
//! After a deliberate API change: `UPDATE_PUBLIC_API=1 cargo test -p vellum --test public_api`,
//! then review and commit the lists.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The rustdoc JSON format that rust 1.95 writes and `public-api` 0.52 reads (rustdoc-types
/// 0.57).
const FORMAT: u64 = 57;

/// The published crates and the features their lists cover.
const CRATES: &[(&str, &[&str])] = &[
    ("vellum", &["--all-features"]),
    ("vellum-macros", &[]),
    ("vellum-demos", &["--all-features"]),
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Rustdoc JSON of `krate`, written by the toolchain that runs the tests.
fn rustdoc_json(krate: &str, features: &[&str]) -> PathBuf {
    let root = workspace();
    let target = root.join("target/public-api");
    let lib_name = krate.replace('-', "_");
    // The cargo that runs this test, so the toolchain is the one the project is tested with.
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args(["rustdoc", "--quiet", "--locked", "--lib", "-p", krate])
        .args(features)
        .arg("--target-dir")
        .arg(&target)
        .args(["--", "-Z", "unstable-options", "--output-format", "json"])
        .current_dir(&root)
        // Unstable options for this crate alone: build scripts that probe for a nightly
        // compiler (proc-macro2, anyhow, ...) still see a stable one.
        .env("RUSTC_BOOTSTRAP", &lib_name)
        .env_remove("RUSTDOCFLAGS")
        .output()
        .expect("cargo rustdoc runs");
    assert!(
        out.status.success(),
        "cargo rustdoc -p {krate} --output-format json failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    target.join("doc").join(format!("{lib_name}.json"))
}

fn listing(json: &Path) -> String {
    let raw: serde_json::Value =
        serde_json::from_slice(&std::fs::read(json).expect("the rustdoc JSON file")).unwrap();
    let format = raw["format_version"].as_u64().unwrap_or(0);
    assert_eq!(
        format,
        FORMAT,
        "{}: rustdoc JSON format {format}, but public-api 0.52 reads format {FORMAT}: the \
         toolchain changed; pin the public-api release that reads format {format} (its \
         changelog names the format) and update FORMAT",
        json.display()
    );
    // Blanket impls (`impl<T> Into<U> for T`, and every blanket impl of every dependency) are
    // left out: they say nothing about this crate and change with the dependencies. Auto
    // traits stay: a type that stops being `Send` or `Sync` breaks its users.
    let api = public_api::Builder::from_rustdoc_json(json)
        .omit_blanket_impls(true)
        .build()
        .expect("public-api reads the rustdoc JSON");
    let mut out = String::new();
    for item in api.items() {
        out.push_str(&item.to_string());
        out.push('\n');
    }
    out
}

#[test]
fn the_public_api_is_the_committed_list() {
    let update = std::env::var_os("UPDATE_PUBLIC_API").is_some();
    let dir = workspace().join("docs/public-api");
    let mut changed = Vec::new();
    for (krate, features) in CRATES {
        let now = listing(&rustdoc_json(krate, features));
        let path = dir.join(format!("{krate}.txt"));
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if now == committed {
            continue;
        }
        if update {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &now).unwrap();
            eprintln!("updated {}", path.display());
            continue;
        }
        let old: std::collections::BTreeSet<&str> = committed.lines().collect();
        let new: std::collections::BTreeSet<&str> = now.lines().collect();
        let mut diff = String::new();
        for gone in old.difference(&new) {
            diff.push_str(&format!("  - {gone}\n"));
        }
        for added in new.difference(&old) {
            diff.push_str(&format!("  + {added}\n"));
        }
        if diff.is_empty() {
            diff.push_str("  (same items, in another order)\n");
        }
        changed.push(format!("{}:\n{diff}", path.display()));
    }
    assert!(
        changed.is_empty(),
        "the public API changed; if that is meant, run `UPDATE_PUBLIC_API=1 cargo test -p vellum \
         --test public_api` and commit the lists:\n{}",
        changed.join("\n")
    );
}
