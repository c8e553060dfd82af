#!/usr/bin/env bash
# Instructions (callgrind) or heap blocks (dhat) per request of one server, independent of
# the machine's load: the server runs under valgrind twice, for a short and a long load
# window of one scenario, and the figure is the difference of the two totals over the
# difference of the answers counted (so start-up, session set-up and shutdown cancel out).
#
# usage: bench/profile.sh [--tool callgrind|dhat] [--scenario S] [--short SECS] [--long SECS]
#                         [--keep DIR] SERVER [mcpbench run flags...]
#   SERVER       a name from servers.sh (vellum, vellum@2026, null, rmcp, ...); its
#                protocol flags (servers.sh server_flags) are added
#   --tool       callgrind (default: instructions, Ir) or dhat (heap blocks and bytes)
#   --scenario   latency (default: 1 in flight), throughput, stream, ...
#   --short/--long  the two load windows, seconds (default 3 and 8, no warm-up)
#   --keep DIR   keep valgrind's output files and the result lines in DIR
# Prints one line: server, scenario, tool, answers, and the figure per answer (and per
# message, for streaming scenarios). Needs release builds (run.sh builds them) and valgrind.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/servers.sh"

tool=callgrind scenario=latency short=3 long=8 keep=""
while (($#)); do
    case $1 in
        --tool) tool=${2:?}; shift ;;
        --scenario) scenario=${2:?}; shift ;;
        --short) short=${2:?}; shift ;;
        --long) long=${2:?}; shift ;;
        --keep) keep=${2:?}; shift ;;
        -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) echo "profile.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) break ;;
    esac
    shift
done
server=${1:?profile.sh: which server? (see --help)}
shift
command -v valgrind >/dev/null || { echo "profile.sh: valgrind is not installed" >&2; exit 1; }
[[ -x $MCPBENCH ]] || { echo "profile.sh: no $MCPBENCH (build the harness first)" >&2; exit 1; }
why=$(server_missing "$server")
[[ -z $why ]] || { echo "profile.sh: $server cannot run: $why" >&2; exit 1; }
case $tool in callgrind | dhat) ;; *) echo "profile.sh: --tool callgrind|dhat" >&2; exit 2 ;; esac

dir=${keep:-$(mktemp -d)}
mkdir -p "$dir"
[[ -n $keep ]] || trap 'rm -rf "$dir"' EXIT
port=$((20000 + RANDOM % 20000))
jwks_pid=""
if [[ $server == vellum-auth* ]]; then
    # Key, token and JWKS server of the resource-server rows, as run.sh makes them.
    auth_start "$dir/auth" "$dir/jwks.log" 0 || exit 1
    trap '[[ -n $jwks_pid ]] && kill "$jwks_pid"; [[ -n $keep ]] || rm -rf "$dir"' EXIT
fi
read -r -a flags <<<"$(server_flags "$server")"

# one_run SECS: runs the server under valgrind for one window; prints "total answers messages".
one_run() {
    local secs=$1 out=$dir/$tool.$1.out log=$dir/valgrind.$1.log res=$dir/result.$1.jsonl
    shift # the rest are mcpbench run flags
    rm -f "$res"
    "$MCPBENCH" wait-port --free --addr "127.0.0.1:$port" >/dev/null
    # --trace-children: servers.sh execs the server, and valgrind must follow that exec.
    local vg=(valgrind --tool="$tool" --trace-children=yes --log-file="$log")
    case $tool in
        callgrind) vg+=(--callgrind-out-file="$out") ;;
        dhat) vg+=(--dhat-out-file="$out") ;;
    esac
    # servers.sh execs the server: valgrind follows the exec and profiles the server itself.
    "${vg[@]}" bash "$BENCH_DIR/servers.sh" exec "$server" "$port" >"$dir/server.$secs.log" 2>&1 &
    local pid=$!
    "$MCPBENCH" wait-port --addr "127.0.0.1:$port" --pid "$pid" --timeout 120 >/dev/null
    "$MCPBENCH" run --scenario "$scenario" --addr "127.0.0.1:$port" --label "$server" \
        --warmup 0 --duration "$secs" --request-timeout 60 --out "$res" \
        ${flags[@]+"${flags[@]}"} "$@" >/dev/null
    kill -INT "$pid"
    "$MCPBENCH" wait-exit --pid "$pid" --timeout 60 >/dev/null || kill -KILL "$pid"
    wait "$pid" 2>/dev/null || true
    local total
    case $tool in
        callgrind) total=$(awk '/^summary:/ {print $2}' "$out") ;;
        # "==PID== Total:     1,234 bytes in 56 blocks"
        dhat) total=$(sed -n 's/.*Total: *\([0-9,]*\) bytes in \([0-9,]*\) blocks.*/\1 \2/p' "$log" | tr -d , | head -n 1) ;;
    esac
    python3 - "$res" "$total" <<'EOF'
import json, sys
rec = json.loads(open(sys.argv[1]).read().splitlines()[-1])
if rec.get("errors"):
    sys.exit(f"profile.sh: {rec['errors']} errors: {rec.get('error_samples')}")
window = rec.get("window_s") or 1
print(sys.argv[2], rec["ok"], round((rec.get("events_per_s") or 0) * window))
EOF
}

read -r -a a <<<"$(one_run "$short" "$@")"
read -r -a b <<<"$(one_run "$long" "$@")"
python3 - "$server" "$scenario" "$tool" "${a[@]}" "${b[@]}" <<'EOF'
import sys
server, scenario, tool = sys.argv[1:4]
v = sys.argv[4:]
if tool == "callgrind":
    (i1, n1, m1), (i2, n2, m2) = map(float, v[0:3]), map(float, v[3:6])
    d = n2 - n1
    if d <= 0:
        sys.exit("profile.sh: the long window answered no more than the short one")
    line = f"{server} {scenario} callgrind: {int(d)} answers, {(i2 - i1) / d:,.0f} instructions per answer"
    if m2 - m1 > d:
        line += f", {(i2 - i1) / (m2 - m1):,.0f} per message"
else:
    (b1, k1, n1, m1), (b2, k2, n2, m2) = map(float, v[0:4]), map(float, v[4:8])
    d = n2 - n1
    if d <= 0:
        sys.exit("profile.sh: the long window answered no more than the short one")
    line = f"{server} {scenario} dhat: {int(d)} answers, {(k2 - k1) / d:.1f} heap blocks and {(b2 - b1) / d:,.0f} bytes per answer"
print(line)
EOF
