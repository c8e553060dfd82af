#!/usr/bin/env bash
# Runs every test of the project. Installs what the tests need first (node packages for the
# interop tests, ...). Usage: bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

# The official JSON Schemas of each protocol version (read-only, beside the clone).
export VELLUM_SPEC_SCHEMA_DIR="${VELLUM_SPEC_SCHEMA_DIR:-$ROOT/../shared/spec-schema}"

step() { printf '\n=== %s\n' "$*"; }

step "system packages the tests need"
need=()
command -v redis-server >/dev/null || need+=(redis-server)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}"
fi

step "format and lints"
cargo fmt --all -- --check
cargo clippy --all-targets --all-features -- -D warnings

step "build (release binary and examples, used by the interop tests)"
cargo build --release --workspace --examples --bins

step "unit and integration tests"
cargo test --workspace --all-features

echo
echo "all tests passed"
