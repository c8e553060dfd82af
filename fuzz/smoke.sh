#!/usr/bin/env bash
# Builds every fuzz target and runs each for a few seconds (the CI smoke run; the long run is
# in docs/fuzzing.md). The committed inputs in seeds/<target>/ (hand-written starts and the
# inputs of crashes found and fixed) are replayed first; new inputs go to corpus/ (ignored).
#
# Usage: bash fuzz/smoke.sh [SECONDS_PER_TARGET]   (default 10)
# Needs cargo-fuzz (cargo install cargo-fuzz --locked); uses the installed stable toolchain.
set -euo pipefail
cd "$(dirname "$0")"
SECS=${1:-10}
# cargo-fuzz passes -Z flags; the stable compiler accepts them with RUSTC_BOOTSTRAP. No
# sanitizer (-s none): those need a nightly standard library.
export RUSTC_BOOTSTRAP=1
FLAGS=(-s none --codegen-units 16)
cargo fuzz build "${FLAGS[@]}"
for t in $(cargo fuzz list); do
    mkdir -p "corpus/$t" "seeds/$t"
    echo "--- fuzz $t (${SECS}s)"
    log="$(mktemp)"
    if ! cargo fuzz run "${FLAGS[@]}" "$t" "corpus/$t" "seeds/$t" -- \
        -max_total_time="$SECS" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 >"$log" 2>&1; then
        tail -n 60 "$log"
        echo "fuzz target $t failed: the crashing input is in fuzz/artifacts/$t/" >&2
        exit 1
    fi
    grep -E '^stat::(number_of_executed_units|peak_rss_mb)' "$log" || true
    rm -f "$log"
done
