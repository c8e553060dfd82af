//! The public API, checked: every public item of each published crate is listed in
//! `docs/public-api/<crate>.txt`, and this test regenerates the lists and compares them, so any
//! change to the public surface shows in review as a change of those files.
//!
//! The lists come from rustdoc's JSON output, read by the `public-api` crate (the library of
//! cargo-public-api). Rustdoc JSON is a nightly-only output whose format changes between
//! nightlies: the project uses the installed `nightly` toolchain (rustdoc JSON format
//! [`FORMAT`]) and `public-api` 0.52, which reads exactly that format.
//!
//! - After a deliberate API change: `UPDATE_PUBLIC_API=1 cargo test -p vellum --test
//!   public_api`, then review and commit the lists.
//! - Without a nightly toolchain the test says it was skipped and why; with `CI=true` that is
//!   a failure instead.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The rustdoc JSON format `public-api` 0.52 reads (rustdoc-types 0.57).
const FORMAT: u64 = 57;

/// The published crates and the features their lists cover.
const CRATES: &[(&str, &[&str])] = &[
    ("vellum", &["--all-features"]),
    ("vellum-macros", &[]),
    ("vellum-demos", &[]),
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn nightly_available() -> Result<(), String> {
    let out = Command::new("rustup")
        .args(["run", "nightly", "rustdoc", "--version"])
        .output()
        .map_err(|e| format!("rustup cannot be run: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "no nightly toolchain ({})",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Rustdoc JSON of `krate`, built by the nightly toolchain in a target directory of its own
/// (its artifacts must not mix with the stable builds').
fn rustdoc_json(krate: &str, features: &[&str]) -> PathBuf {
    let root = workspace();
    let target = root.join("target/public-api");
    let status = Command::new("rustup")
        .args([
            "run", "nightly", "cargo", "rustdoc", "--quiet", "--lib", "-p", krate,
        ])
        .args(features)
        .arg("--target-dir")
        .arg(&target)
        .args(["--", "-Z", "unstable-options", "--output-format", "json"])
        .current_dir(&root)
        // The nightly must not read the stable toolchain's choice of rustdoc or rustc.
        .env_remove("RUSTDOC")
        .env_remove("RUSTC")
        .env_remove("RUSTC_WRAPPER")
        .env_remove("RUSTDOCFLAGS")
        .status()
        .expect("cargo rustdoc runs");
    assert!(status.success(), "cargo +nightly rustdoc -p {krate} failed");
    target
        .join("doc")
        .join(format!("{}.json", krate.replace('-', "_")))
}

fn listing(json: &Path) -> String {
    let raw: serde_json::Value =
        serde_json::from_slice(&std::fs::read(json).expect("the rustdoc JSON file")).unwrap();
    let format = raw["format_version"].as_u64().unwrap_or(0);
    assert_eq!(
        format,
        FORMAT,
        "{}: rustdoc JSON format {format}, but public-api 0.52 reads format {FORMAT}: pin the \
         public-api version that reads {format} (its changelog names the format) and update FORMAT",
        json.display()
    );
    let api = public_api::Builder::from_rustdoc_json(json)
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
#[ignore = "the lists in docs/public-api/ are not committed yet: generate them with UPDATE_PUBLIC_API=1 cargo test -p vellum --test public_api -- --ignored, commit them, then drop this line"]
fn the_public_api_is_the_committed_list() {
    if let Err(why) = nightly_available() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true: the public-API check must run, but {why}"
        );
        eprintln!(
            "SKIPPED: the public-API check needs the nightly toolchain's rustdoc JSON: {why}"
        );
        return;
    }
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
        changed.push(format!("{}:\n{diff}", path.display()));
    }
    assert!(
        changed.is_empty(),
        "the public API changed; if that is meant, run `UPDATE_PUBLIC_API=1 cargo test -p vellum \
         --test public_api` and commit the lists:\n{}",
        changed.join("\n")
    );
}
