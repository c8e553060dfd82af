#!/usr/bin/env bash
# The crates as their users get them: every feature of `vellum` builds on its own, nothing
# pulls a second crypto provider, the docs build without a warning, and every publishable
# crate packages and builds from its packaged sources. scripts/test.sh runs it; the public-API
# snapshot is a test (crates/vellum/tests/public_api.rs) and runs with the others.
#
#   bash scripts/release-checks.sh            all of it
#   bash scripts/release-checks.sh features   one part: features | crypto | docs | publish
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n=== %s\n' "$*"; }
want=${1:-all}
run() { [[ $want == all || $want == "$1" ]]; }

if run features; then
  step "vellum with no default features, and with each feature alone (clippy -D warnings: a build adds nothing)"
  # Clippy, not check: code only one feature uses must be gated with it, or the others warn.
  # The default (macros) and --all-features are built by the tests and the lint step.
  cargo clippy --quiet --locked -p vellum --no-default-features -- -D warnings
  for feature in macros client client-auth auth redis skills http2 tls metrics otel json-schema testing; do
    echo "vellum --features $feature"
    cargo clippy --quiet --locked -p vellum --no-default-features --features "$feature" -- -D warnings
  done
fi

if run crypto; then
  step "one crypto provider: rustls with ring; nothing may pull aws-lc-rs"
  if cargo tree --quiet --locked --workspace --all-features --target all -i aws-lc-rs 2>/dev/null; then
    echo "aws-lc-rs is in the dependency tree (above: who pulls it); the workspace uses ring only" >&2
    exit 1
  fi
  echo "aws-lc-rs: not in the tree"
fi

if run docs; then
  step "docs: every crate, every feature, warnings are errors (RUSTDOCFLAGS=-D warnings)"
  RUSTDOCFLAGS="-D warnings" cargo doc --quiet --locked --workspace --all-features --no-deps
fi

if run publish; then
  step "cargo publish --dry-run of every publishable crate (vellum-testkit is publish = false)"
  # --workspace packages the crates together, so a crate that needs another one of the
  # workspace (vellum-demos needs vellum) builds against its packaged sources, not crates.io.
  # Cargo extracts the packaged crates into its registry cache and reuses an earlier dry run's
  # extraction while the version is unchanged: drop those so the sources built are today's.
  rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/vellum*-[0-9]*
  # The verify builds share the workspace's target dir, where cargo knows a registry crate by
  # name and version only: an earlier dry run's vellum 0.1.0 build would be linked as is.
  # Drop the builds whose sources were such an extraction (their dep-info names them).
  deps=${CARGO_TARGET_DIR:-target}/debug/deps
  for d in "$deps"/vellum*.d; do
    [[ -e $d ]] && head -n 1 "$d" | grep -q '/registry/src/-' || continue
    stem=$(basename "$d" .d)
    rm -rf "$deps/$stem".* "$deps/lib$stem".* "${deps%/deps}/.fingerprint/${stem//_/-}"
  done
  cargo publish --dry-run --locked --workspace --exclude vellum-testkit --allow-dirty
fi
