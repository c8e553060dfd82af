#!/usr/bin/env bash
# CI smoke of the benchmark harness, so it never rots: builds the harness and Vellum (debug),
# runs one short window of every scenario against Vellum and the null server (`wait` starts a
# redis-server and the 1 ms HTTP stub: redis-server must be installed) (and a few against
# the h2, metrics, auth and gateway rows), and fails on any error, on a run that measured nothing, or on
# a server with no results. About a minute, mostly building. Its figures mean nothing (debug
# builds, 1 s windows); bench/run.sh makes the real ones.
#
# usage: bench/smoke.sh [--only LIST]     (default: vellum,null)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
only=vellum,null
case ${1:-} in
    --only) only=${2:?--only needs a list} ;;
    --only=*) only=${1#--only=} ;;
    "") ;;
    *) echo "smoke.sh: unknown option $1" >&2; exit 2 ;;
esac
out=$(mktemp -d "${TMPDIR:-/tmp}/vellum-bench-smoke.XXXXXX")
"$here/run.sh" --smoke --debug --only "$only" --out "$out"
"$here/target/debug/mcpbench" check "$out/results.jsonl" --expect "$only"
rm -rf "$out"
# The harness's own unit tests (the report's tables, the before/after pairing), and the
# --compare plumbing: twins labelled base:NAME, run from VELLUM_BASE_BIN (here the same debug
# build, so nothing else is built), and a table with a row for each.
cargo test --quiet --manifest-path "$here/Cargo.toml"
VELLUM_BASE_BIN=${VELLUM_BIN:-$here/../target/debug/vellum} \
    "$here/run.sh" --smoke --debug --no-build --compare HEAD --only vellum --scenarios latency --out "$out"
grep -q '^| vellum | latency | req/s |' "$out/compare.md" ||
    { echo "smoke.sh: --compare wrote no row for vellum:" >&2; cat "$out/compare.md" >&2; exit 1; }
rm -rf "$out"
# One cheap pass over the rows added later (h2c, the metrics recorder, the resource server),
# a few seconds: the scenarios where each differs from `vellum`, on the binaries just built.
if [[ $only == vellum,null ]]; then
    extra=vellum-h2,vellum-metrics
    # The resource-server row mints its token with Python's cryptography package: the Python
    # SDK's test venv has it (scripts/test.sh makes it first). In CI its absence is a failure.
    venv=$here/../tests/interop/python/.venv/bin/python
    [[ -x $venv ]] && export BENCH_PYTHON=${BENCH_PYTHON:-$venv}
    if "${BENCH_PYTHON:-python3}" -c "import cryptography" 2>/dev/null; then
        extra+=,vellum-auth-dpop-allowed
    elif [[ ${CI:-} == true ]]; then
        echo "smoke.sh: no Python with cryptography, so no vellum-auth-dpop-allowed pass (CI needs it)" >&2
        exit 1
    else
        echo "smoke.sh: no Python with cryptography, so no vellum-auth-dpop-allowed pass (skipped)" >&2
    fi
    "$here/run.sh" --smoke --debug --no-build --only "$extra" --scenarios throughput,streams --out "$out"
    "$here/target/debug/mcpbench" check "$out/results.jsonl" --expect "$extra"
    rm -rf "$out"
    # The gateway rows (issue 28): the child called directly (the `stdio` scenario) and
    # vellum proxy --stdio in front of it, both eras; supergateway needs npm (bench only).
    gateways=vellum-stdio,vellum-proxy,vellum-proxy@2026
    "$here/run.sh" --smoke --debug --no-build --only "$gateways" --scenarios stdio,latency,stream --out "$out"
    "$here/target/debug/mcpbench" check "$out/results.jsonl" --expect "$gateways"
    rm -rf "$out"
fi
