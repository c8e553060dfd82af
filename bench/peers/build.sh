#!/usr/bin/env bash
# Builds the peer servers of the benchmark from their registries (nothing vendored):
#   rmcp  crates.io, bench/peers/rmcp/Cargo.lock  -> peers/rmcp/target/release/rmcp-peer
#   ts    npm, bench/peers/ts/package-lock.json   -> peers/ts/node_modules
#   py    PyPI, bench/peers/py/requirements.txt   -> peers/py/.venv
# Idempotent: skips what is already built from the same lock file.
# usage: bench/peers/build.sh [rmcp] [ts] [py]      (default: all three)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

build_rmcp() {
    # cargo itself skips an up-to-date build.
    (cd rmcp && nice -n 15 cargo build --release --locked --quiet)
}

build_ts() {
    # npm ci writes node_modules/.package-lock.json; reinstall when the lock file is newer.
    if [[ -f ts/node_modules/.package-lock.json && ts/node_modules/.package-lock.json -nt ts/package-lock.json ]]; then
        return
    fi
    (cd ts && nice -n 15 npm ci --no-audit --no-fund --loglevel=error)
}

build_py() {
    local stamp=py/.venv/.installed-requirements.txt
    if [[ -x py/.venv/bin/python && -f $stamp ]] && cmp -s "$stamp" py/requirements.txt; then
        return
    fi
    rm -rf py/.venv
    python3 -m venv py/.venv
    nice -n 15 py/.venv/bin/pip install --quiet --disable-pip-version-check -r py/requirements.txt
    cp py/requirements.txt "$stamp"
}

for peer in "${@:-rmcp ts py}"; do
    for p in $peer; do
        case $p in
            rmcp | ts | py) echo "peers/build.sh: $p" >&2; "build_$p" ;;
            *) echo "peers/build.sh: unknown peer '$p' (rmcp, ts, py)" >&2; exit 2 ;;
        esac
    done
done
