//! docs/deploy.md stays true to `vellum serve`: every `--flag` the guide names (in its
//! prose, its shell lines and its Kubernetes `args`) is a flag `vellum serve --help` lists,
//! so a renamed or removed flag fails here instead of in an operator's rollout.

// Test code: a panic is how a test fails (clippy.toml allows it only inside #[test] fns).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::process::Command;

use vellum_testkit::process::vellum_bin;

/// Flags of other programs the guide shows (curl).
const NOT_OURS: &[&str] = &["--http2-prior-knowledge"];

fn flags_named_in(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(at) = text[i..].find("--") {
        let start = i + at;
        let mut end = start + 2;
        while end < bytes.len()
            && (bytes[end].is_ascii_lowercase()
                || bytes[end].is_ascii_digit()
                || bytes[end] == b'-')
        {
            end += 1;
        }
        // `--tls-*` names a family: kept as `--tls-*`, matched as a prefix below.
        let family = bytes.get(end) == Some(&b'*');
        let flag = if family {
            format!("{}*", &text[start..end])
        } else {
            text[start..end].trim_end_matches('-').to_owned()
        };
        let flag = flag.as_str();
        let word_start = start == 0 || !bytes[start - 1].is_ascii_alphanumeric();
        if word_start && flag.len() > 3 && !NOT_OURS.contains(&flag) {
            out.insert(flag.to_owned());
        }
        i = end.max(start + 2);
    }
    out
}

#[test]
fn every_flag_the_deploy_guide_names_exists() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/deploy.md");
    let doc = std::fs::read_to_string(path).unwrap();
    let named = flags_named_in(&doc);
    assert!(
        named.contains("--drain-grace") && named.contains("--metrics-addr"),
        "the scan found too little: {named:?}"
    );
    let help = Command::new(vellum_bin())
        .args(["serve", "--help"])
        .output()
        .unwrap();
    assert!(help.status.success());
    let help = String::from_utf8(help.stdout).unwrap();
    let known = flags_named_in(&help);
    let unknown: Vec<_> = named
        .iter()
        .filter(|f| match f.strip_suffix('*') {
            Some(prefix) => !known.iter().any(|k| k.starts_with(prefix)),
            None => !known.contains(*f),
        })
        .collect();
    assert!(
        unknown.is_empty(),
        "docs/deploy.md names flags `vellum serve` does not have: {unknown:?}"
    );
}
