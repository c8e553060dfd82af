#!/usr/bin/env bash
# Builds the peer servers of the benchmark from their registries (nothing vendored):
#   rmcp  crates.io, bench/peers/rmcp/Cargo.lock  -> peers/rmcp/target/release/rmcp-peer
#   ts    npm, bench/peers/ts/package-lock.json   -> peers/ts/node_modules
#   supergateway  npm, bench/peers/supergateway/package-lock.json -> peers/supergateway/node_modules
#   py    PyPI, bench/peers/py/requirements.txt   -> peers/py/.venv
#   go    the official Go SDK from a repository snapshot, with Go and the SDK's module
#         dependencies from Debian packages, by the shared go-peer/build-go.sh (its README
#         says what it needs); then bench/peers/go/main.go is built with the same toolchain
#         and modules (go/*.go: main.go, redis.go)  -> peers/go/.build/go/bench-go
#         (GO_PEER_SCRIPT overrides where build-go.sh is; PEERS_DIR where it builds)
# Idempotent: skips what is already built from the same lock file.
# usage: bench/peers/build.sh [rmcp] [ts] [py] [go] [supergateway]      (default: all five)
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

build_supergateway() {
    if [[ -f supergateway/node_modules/.package-lock.json && supergateway/node_modules/.package-lock.json -nt supergateway/package-lock.json ]]; then
        return
    fi
    (cd supergateway && nice -n 15 npm ci --no-audit --no-fund --loglevel=error)
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

build_go() {
    local script=${GO_PEER_SCRIPT:-$(cd ../.. && pwd)/../shared/tools/go-peer/build-go.sh}
    export PEERS_DIR=${PEERS_DIR:-$PWD/go/.build}
    local w=$PEERS_DIR/go
    if [[ -x $w/bench-go && $w/bench-go -nt go/main.go && $w/bench-go -nt go/redis.go && -f $w/BUILD-INFO ]]; then
        return
    fi
    [[ -f $script ]] || { echo "peers/build.sh: no $script (the shared Go peer builder)" >&2; return 1; }
    # The shared script brings the toolchain, the SDK and its modules, and builds its own
    # hello_world peer; ours is built next to it with the same go.mod (its replace lines).
    nice -n 15 bash "$script" >&2
    local b=$w/bench-build
    rm -rf "$b" && mkdir -p "$b"
    cp go/*.go "$b/" && cp "$w/build/go.mod" "$b/"
    local v
    v=$(ls -d "$w"/root/usr/lib/go-* | head -n 1)
    (cd "$b" && GOROOT=$v PATH=$v/bin:$PATH GOPROXY=off GOFLAGS=-mod=mod GOTOOLCHAIN=local \
        GOSUMDB=off GOWORK=off GOENV=off GOPATH=$w/gopath GOCACHE=$w/gocache \
        XDG_CONFIG_HOME=$w/config CGO_ENABLED=0 nice -n 15 go build -trimpath -o "$w/bench-go" .)
}

for peer in "${@:-rmcp ts py go supergateway}"; do
    for p in $peer; do
        case $p in
            rmcp | ts | py | go | supergateway) echo "peers/build.sh: $p" >&2; "build_$p" ;;
            *) echo "peers/build.sh: unknown peer '$p' (rmcp, ts, py, go, supergateway)" >&2; exit 2 ;;
        esac
    done
done
