#!/usr/bin/env bash
# Runs every test of the project. Installs what the tests need first (node packages for the
# interop tests, ...). Usage: bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

# The official JSON Schemas of each protocol version (read-only, beside the clone).
export VELLUM_SPEC_SCHEMA_DIR="${VELLUM_SPEC_SCHEMA_DIR:-$ROOT/../shared/spec-schema}"

step() { printf '\n=== %s\n' "$*"; }

step "format and lints"
cargo fmt --all -- --check
cargo clippy --all-targets --all-features -- -D warnings

step "build (release binary and examples, used by the interop tests)"
cargo build --release --workspace --examples --bins

step "unit and integration tests"
cargo test --workspace --all-features

echo
echo "all tests passed"
